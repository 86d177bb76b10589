/* report_internal.h: what the files of the report writer share, private to
 * plots/.  The report (report.h) is built by:
 *   report.c          the page: open, sections, text, notes, index.html
 *   gnuplot.c         finding gnuplot and running it
 *   figure.c          rp_figure: its checks, its script files, the figure on the page
 *   table.c           the CSV files the report writes, and tables of them
 *   runs.c            rp_add_runs: reading run directories, the table of runs
 *   run_figures.c     the figures of rp_add_runs
 *   sweep_heatmaps.c  rp_add_sweep, rp_sweep_axes
 * with sbuf.h, the string they build in.
 */
#ifndef AMPSCOPE_PLOTS_REPORT_INTERNAL_H
#define AMPSCOPE_PLOTS_REPORT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "record.h"
#include "report.h"
#include "sbuf.h"

#define WHY_MAX         1024 /* a note's reason */
#define RP_SCRIPT_SLOTS 16   /* at least the built-in scripts (figure.c checks) */

struct rp_report {
    char *dir, *title;
    char *gnuplot;           /* the gnuplot that runs, NULL when none */
    char gnuplot_about[256]; /* its version, or why there is none */
    sbuf toc, body, notes;   /* the contents, the page, the list of what was left out */
    size_t n_notes;          /* things left out */
    size_t n_undrawn;        /* figures not drawn for want of gnuplot */
    bool scripts_written[RP_SCRIPT_SLOTS];
    rp_progress_fn *progress;
    void *progress_ctx;
    size_t n_sweeps;         /* rp_add_sweep calls: the second sweep's files are sweep2_* */
    char io_failed[WHY_MAX]; /* the first file that could not be written, and why; "" if none */
};

/* ---- report.c ---- */
/* Tells the caller's progress function, if any. */
void rp_progress(rp_report *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* rp_missing with a printf-style reason. */
void rp_missingf(rp_report *r, const char *what, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Keeps why (naming a file and the reason) when it is the report's first
 * file that could not be written: rp_close then fails with it (RP_EIO). */
void rp_io_failed(rp_report *r, const char *why);
/* dir/name, malloc'ed (NULL when out of memory); "run/" gives "run/name". */
char *rp_join_path(const char *dir, const char *name);
/* Creates dir and its missing parents. */
int rp_make_dirs(const char *dir, char *msg, size_t msg_len);
/* The worse of two statuses: RP_EIO > RP_EINVAL > RP_ENOGNUPLOT > RP_EPARTIAL > RP_OK. */
int rp_worse(int a, int b);

/* ---- gnuplot.c ---- */
/* Looks for a `gnuplot` on PATH that runs: r->gnuplot, or NULL with
 * r->gnuplot_about saying why; else its version in r->gnuplot_about. */
void rp_find_gnuplot(rp_report *r);
/* Runs path with argv in cwd (NULL: here), stdin from /dev/null, stdout
 * and stderr together into out (its last out_len - 1 bytes, where an error
 * message is).  0 with the wait status in *status, or -1 with why. */
int rp_run_program(const char *path, char *const argv[], const char *cwd, char *out, size_t out_len,
                   int *status, char *why, size_t why_len);
/* The last non-empty line of text, copied into line. */
void rp_last_line(const char *text, char *line, size_t len);
/* "exited with status 1", "was killed by signal 9" */
void rp_describe_status(int status, char *buf, size_t len);

/* ---- figure.c ---- */
/* Writes text as name.csv and draws it with script; a note instead when
 * no run had rows (any false). */
int rp_figure_from(rp_report *r, sbuf *text, bool any, const char *script, const char *name,
                   const char *caption, const char *const *more_vars);

/* ---- table.c ---- */
/* Writes the CSV text to name in the report folder; a note on failure
 * (for figure, what is lost). */
int rp_write_csv(rp_report *r, const char *name, sbuf *text, const char *figure);

/* ---- runs.c and run_figures.c ---- */
/* One table of one run, read through record.h. */
typedef struct run_table {
    void *rows;
    size_t n;
    int rc; /* AN_OK, or why holds the reason */
    char why[WHY_MAX];
} run_table;

typedef struct run_data {
    const char *dir;
    char label[80]; /* the run's name in figures: its folder's name, made a word */
    rec_run *info;
    char info_why[WHY_MAX];
    run_table t[REC_TABLES];
} run_data;

#define ROWS(run, tab, type) ((const type *)(run)->t[tab].rows)

/* Notes, for a figure, each run whose table could not be read. */
void rp_note_unread(rp_report *r, run_data *runs, size_t n, rec_table tab, const char *figure);
/* The sections of rp_add_runs after the table of runs, each returning the
 * worst status of its figures. */
int rp_training_figures(rp_report *r, run_data *runs, size_t n);
int rp_hist_figures(rp_report *r, run_data *runs, size_t n);
int rp_flushed_figures(rp_report *r, run_data *runs, size_t n);
int rp_update_figures(rp_report *r, run_data *runs, size_t n);

#endif
