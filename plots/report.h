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

/* A note that something was left out, and why (makes rp_close return
 * RP_EPARTIAL). */
void rp_missing(rp_report *r, const char *what, const char *why);

/* The standard figures and tables for run directories (the record of
 * `ampscope train`, analyze/record.h): one section per kind of figure,
 * every run overlaid where the figure allows it.  A run missing a file or
 * column loses that figure only. */
int rp_add_runs(rp_report *r, const char *const *run_dirs, size_t n);

/* Writes index.html (atomically) and frees r.  RP_OK, RP_EPARTIAL,
 * RP_ENOGNUPLOT or RP_EIO, with a message for anything but RP_OK. */
int rp_close(rp_report *r, char *msg, size_t msg_len);

#endif
