/* report.h: the report writer.  Figures are drawn by gnuplot from CSV
 * files (PNG and SVG, each beside its CSV), and index.html ties them
 * together with tables and text.
 *
 * The gnuplot scripts are plots/<name>.gp in the source tree, built into the
 * program; rp_figure writes the script it uses to OUT/plots/<script> and
 * runs `gnuplot -e 'var=value;...' OUT/plots/<script>` in OUT, so every
 * figure can be redrawn by hand from the files in OUT (plots/README.md).
 *
 * Any figure or table that cannot be made (gnuplot missing or failing, a
 * missing or truncated CSV, a column a figure needs is absent) is left
 * out with a note on the page naming the file and column; the rest of the
 * report is still written, and rp_close reports it (RP_EPARTIAL or
 * RP_ENOGNUPLOT) so the command exits non-zero.
 */
#ifndef AMPSCOPE_PLOTS_REPORT_H
#define AMPSCOPE_PLOTS_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RP_OK         0
#define RP_EINVAL     (-1) /* bad argument */
#define RP_EIO        (-2) /* a file could not be written */
#define RP_EPARTIAL   (-3) /* the report was written, but something was left out */
#define RP_ENOGNUPLOT (-4) /* gnuplot is not on PATH: no figures; CSV and tables written */

typedef struct rp_report rp_report;

/* Opens a report in out_dir (created, with parents, if missing) titled
 * title.  NULL with a message on failure. */
rp_report *rp_open(const char *out_dir, const char *title, char *msg, size_t msg_len);
/* The report's folder. */
const char *rp_dir(const rp_report *r);
/* Whether `gnuplot` runs (looked up once at rp_open). */
bool rp_have_gnuplot(const rp_report *r);
/* Optional: fn(ctx, "drawing loss.png") is called before each slow step
 * (reading a run, running gnuplot), so a command can show progress; the
 * library itself never prints.  fn NULL turns it off. */
typedef void rp_progress_fn(void *ctx, const char *what);
void rp_set_progress(rp_report *r, rp_progress_fn *fn, void *ctx);

/* Page structure; text is plain text (HTML-escaped by the writer). */
void rp_section(rp_report *r, const char *id, const char *title);
/* The claim a section reproduces: the claim, the literature's number, ours,
 * and the difference explained (any may be NULL). */
void rp_claim(rp_report *r, const char *claim, const char *literature, const char *ours,
              const char *difference);
void rp_paragraph(rp_report *r, const char *text);
/* printf-style paragraph. */
void rp_paragraphf(rp_report *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* A table from csv_name (a file in the report folder; first row the
 * header), rendered in the page and linked.  RP_OK, or RP_EPARTIAL after
 * noting what was wrong on the page. */
int rp_table_csv(rp_report *r, const char *caption, const char *csv_name);

/* A figure: the built-in script `script` (e.g. "lines.gp") draws name.png
 * and name.svg in the report folder; vars are "key=value" strings (values
 * are passed to gnuplot as strings, quoted by the writer), NULL-terminated;
 * every script takes at least `in` (its CSV, relative to the report folder;
 * name.csv unless vars set it) and `out` (the output name without
 * extension, set by the writer).  The
 * CSV files the script reads must exist and hold the columns it needs
 * (checked first: a missing file or column becomes a note).  RP_OK, or
 * RP_EPARTIAL / RP_ENOGNUPLOT after noting it on the page. */
int rp_figure(rp_report *r, const char *script, const char *name, const char *caption,
              const char *const *vars);

/* A log2-histogram figure (hist.gp: fp16's ranges shaded, bf16's marked)
 * of n series: series[i] named by its text (no comma or newline), with
 * the histogram hists[i] in analyze/inspect.h's wide layout (AN_BINS bins:
 * zero, the binades, nonfinite; zeros and nonfinite values count in a
 * series' total but are not drawn).  Writes name.csv (bin,count,series);
 * vars as rp_figure's, title set here.  RP_OK, or as rp_figure (a figure
 * with no value at all is a note, RP_EPARTIAL). */
int rp_hist_figure(rp_report *r, const char *name, const char *caption, const char *title,
                   const char *const *series, const uint64_t *const *hists, size_t n,
                   const char *const *more_vars);

/* A note that something was left out, and why (makes rp_close return
 * RP_EPARTIAL). */
void rp_missing(rp_report *r, const char *what, const char *why);

/* The standard figures and tables for run directories (the record of
 * `ampscope train`, analyze/record.h): one section per kind of figure,
 * every run overlaid where the figure allows it.  A run missing a file or
 * column loses that figure only. */
int rp_add_runs(rp_report *r, const char *const *run_dirs, size_t n);

/* A sweep folder (`ampscope sweep --out DIR`), from DIR/summary.csv, read
 * by its header: the columns final_loss, test_accuracy, skipped_steps,
 * final_scale, mean_underflow_frac, lost_update_frac, wall_seconds, status
 * and reason are outcomes, every other column a grid axis (in the header's
 * order, which is the grid's).  One section: heatmaps over axis_x (x) and
 * axis_y (y) of test_accuracy, skipped_steps and mean_underflow_frac
 * (files sweep_accuracy, sweep_skips, sweep_underflow; columns x,y,value,
 * runs), each cell the mean over the runs with those two values whose
 * status is ok or diverged and whose value is a number (the other axes are
 * averaged over, and the caption names them; runs counts them; a cell with
 * none is empty, drawn blank), then the summary as a table
 * (sweep_summary.csv).  A second sweep in one report writes sweep2_*, and
 * so on.  axis_x NULL: the first axis; axis_y NULL: the next axis, or, for
 * a grid of one axis, a one-row heatmap (y "all").  An axis that is not a
 * grid column, or the same axis twice: a note and RP_EINVAL (nothing
 * drawn; the table is still written).  An unreadable or malformed
 * summary.csv, or a missing outcome column, is a note naming the file and
 * column (RP_EPARTIAL); a missing metric column loses its heatmap only. */
int rp_add_sweep(rp_report *r, const char *sweep_dir, const char *axis_x, const char *axis_y);

/* The grid axes of sweep_dir/summary.csv (its non-outcome columns, as
 * above), comma-separated in axes, so that a command can check the axes
 * it was given before it writes anything.  RP_OK; RP_EPARTIAL with a
 * message naming the file when it cannot be read or has no axis column;
 * RP_EINVAL for bad arguments. */
int rp_sweep_axes(const char *sweep_dir, char *axes, size_t len, char *msg, size_t msg_len);

/* Writes index.html (atomically) and frees r.  RP_OK, RP_EPARTIAL,
 * RP_ENOGNUPLOT or RP_EIO, with a message for anything but RP_OK. */
int rp_close(rp_report *r, char *msg, size_t msg_len);

#endif
