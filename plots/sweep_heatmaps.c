/* sweep_heatmaps.c: rp_add_sweep and rp_sweep_axes, the report of a sweep
 * folder from its summary.csv, read by column name: the grid axes (every
 * column that is not an outcome), heatmaps of three outcomes over two axes
 * (the others averaged over), and the summary itself as a table.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csv.h"
#include "report_internal.h"

/* summary.csv's outcome columns (experiments/sweep.h SW_SUMMARY_HEADER); every other column is
 * a grid axis.  Spelled out here: plots/ does not include upward. */
static const char *const sweep_outcomes[] = {
    "final_loss",       "test_accuracy", "skipped_steps", "final_scale", "mean_underflow_frac",
    "lost_update_frac", "wall_seconds",  "status",        "reason"};
#define SWEEP_OUTCOMES (sizeof sweep_outcomes / sizeof sweep_outcomes[0])

static bool is_outcome(const char *col)
{
    for (size_t i = 0; i < SWEEP_OUTCOMES; i++)
        if (strcmp(col, sweep_outcomes[i]) == 0) return true;
    return false;
}

/* Reads sweep_dir/summary.csv; AN_OK, or an error with why naming the file. */
static int read_summary(const char *sweep_dir, csv_table *c, char *why, size_t why_len)
{
    char *path = rp_join_path(sweep_dir, "summary.csv");
    if (!path) {
        snprintf(why, why_len, "%s/summary.csv: out of memory", sweep_dir);
        return -1;
    }
    const int rc = csv_table_read(path, path, c, why, why_len);
    free(path);
    return rc;
}

int rp_sweep_axes(const char *sweep_dir, char *axes, size_t len, char *msg, size_t msg_len)
{
    if (!sweep_dir || !axes || !len)
        return ut_fail(msg, msg_len, RP_EINVAL, "rp_sweep_axes: no folder");
    axes[0] = '\0';
    csv_table c;
    char why[WHY_MAX];
    if (read_summary(sweep_dir, &c, why, sizeof why) != 0)
        return ut_fail(msg, msg_len, RP_EPARTIAL, "%s", why);
    for (size_t k = 0; k < c.cols; k++) {
        if (is_outcome(c.fields[k])) continue;
        const size_t used = strlen(axes);
        snprintf(axes + used, len - used, "%s%s", used ? "," : "", c.fields[k]);
    }
    csv_table_free(&c);
    if (!axes[0])
        return ut_fail(msg, msg_len, RP_EPARTIAL, "%s/summary.csv: no grid axis column", sweep_dir);
    if (msg && msg_len) msg[0] = '\0';
    return RP_OK;
}

/* The distinct values of column col (rows 1..), in order of first appearance. */
static size_t distinct_values(const csv_table *c, int col, const char **out)
{
    size_t n = 0;
    for (size_t i = 1; col >= 0 && i < c->rows; i++) {
        const char *v = c->fields[i * c->cols + (size_t)col];
        bool seen = false;
        for (size_t k = 0; k < n && !seen; k++)
            seen = strcmp(out[k], v) == 0;
        if (!seen) out[n++] = v;
    }
    return n;
}

/* A finite number, or false (an empty field is a value that was not measured). */
static bool field_number(const char *s, double *v)
{
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    return *s && *end == '\0' && errno == 0 && isfinite(*v);
}

int rp_add_sweep(rp_report *r, const char *sweep_dir, const char *axis_x, const char *axis_y)
{
    if (!r) return RP_EINVAL;
    if (!sweep_dir || !*sweep_dir) {
        rp_missing(r, "the sweep", "rp_add_sweep: no sweep folder");
        return RP_EINVAL;
    }
    r->n_sweeps++;
    char prefix[32];
    if (r->n_sweeps == 1)
        snprintf(prefix, sizeof prefix, "sweep");
    else
        snprintf(prefix, sizeof prefix, "sweep%zu", r->n_sweeps);
    char title[512];
    snprintf(title, sizeof title, "Sweep %s", sweep_dir);
    rp_section(r, prefix, title);
    rp_progress(r, "reading %s/summary.csv", sweep_dir);
    csv_table c;
    char why[WHY_MAX];
    if (read_summary(sweep_dir, &c, why, sizeof why) != 0) {
        rp_missing(r, "the sweep's figures and table", why);
        return RP_EPARTIAL;
    }
    /* the axes: every column that is not an outcome, in the header's (the grid's) order */
    size_t n_axes = 0;
    int axis_col[64];
    for (size_t k = 0; k < c.cols && n_axes < 64; k++)
        if (!is_outcome(c.fields[k])) axis_col[n_axes++] = (int)k;
    int rc = RP_OK;
    char what[256];
    snprintf(what, sizeof what, "the heatmaps of sweep %s", sweep_dir);
    if (!axis_x && n_axes >= 1) axis_x = c.fields[axis_col[0]];
    if (!axis_y && n_axes >= 2 && strcmp(axis_x, c.fields[axis_col[1]]) != 0)
        axis_y = c.fields[axis_col[1]];
    if (!axis_y && n_axes >= 2 && strcmp(axis_x, c.fields[axis_col[1]]) == 0)
        axis_y = c.fields[axis_col[0]];
    const int cx = axis_x ? csv_table_column(&c, axis_x) : -1;
    const int cy = axis_y ? csv_table_column(&c, axis_y) : -1;
    const int cs = csv_table_column(&c, "status");
    bool draw = true;
    if (n_axes == 0) {
        rp_missingf(r, what, "%s/summary.csv: no grid axis column (only outcome columns)",
                    sweep_dir);
        rc = RP_EPARTIAL;
        draw = false;
    } else if (cx < 0 || is_outcome(axis_x) || (axis_y && (cy < 0 || is_outcome(axis_y)))) {
        const char *bad = cx < 0 || is_outcome(axis_x) ? axis_x : axis_y;
        rp_missingf(r, what, "rp_add_sweep: '%s' is not a grid axis of %s/summary.csv", bad,
                    sweep_dir);
        rc = RP_EINVAL;
        draw = false;
    } else if (axis_y && cx == cy) {
        rp_missingf(r, what, "rp_add_sweep: the same axis '%s' twice", axis_x);
        rc = RP_EINVAL;
        draw = false;
    } else if (cs < 0) {
        rp_missingf(r, what, "%s/summary.csv: no column 'status'", sweep_dir);
        rc = RP_EPARTIAL;
        draw = false;
    }

    const char **xs = calloc(c.rows + 1, sizeof *xs), **ys = calloc(c.rows + 1, sizeof *ys);
    if (draw && (!xs || !ys)) {
        rp_missing(r, what, "out of memory");
        rc = RP_EIO;
        draw = false;
    }
    static const struct {
        const char *column, *name, *title, *fmt;
    } metrics[3] = {
        {"test_accuracy", "accuracy", "final test accuracy", "%.3g"},
        {"skipped_steps", "skips", "skipped steps", "%.4g"},
        {"mean_underflow_frac", "underflow", "mean underflow fraction", "%.2g"},
    };
    if (draw) {
        const size_t nx = distinct_values(&c, cx, xs);
        size_t ny = 1;
        if (axis_y) ny = distinct_values(&c, cy, ys);
        /* the other axes averaged over, for the captions */
        char others[512] = "";
        for (size_t a = 0; a < n_axes; a++) {
            if (axis_col[a] == cx || axis_col[a] == cy) continue;
            const char *v[2];
            size_t nv = 0;
            for (size_t i = 1; i < c.rows && nv < 2; i++) {
                const char *f = c.fields[i * c.cols + (size_t)axis_col[a]];
                if (nv == 0 || strcmp(v[0], f) != 0) v[nv++] = f;
            }
            if (nv < 2) continue; /* a constant column averages nothing */
            const size_t used = strlen(others);
            snprintf(others + used, sizeof others - used, "%s%s", used ? ", " : "",
                     c.fields[axis_col[a]]);
        }
        for (int m = 0; m < 3; m++) {
            char fig[64], csv_name[80];
            snprintf(fig, sizeof fig, "%s_%s", prefix, metrics[m].name);
            snprintf(csv_name, sizeof csv_name, "%s.csv", fig);
            const int cv = csv_table_column(&c, metrics[m].column);
            if (cv < 0) {
                char w[256];
                snprintf(w, sizeof w, "figure %s", fig);
                rp_missingf(r, w, "%s/summary.csv: no column '%s'", sweep_dir, metrics[m].column);
                rc = rp_worse(rc, RP_EPARTIAL);
                continue;
            }
            sbuf t = {0};
            sb_add(&t, "x,y,value,runs\n");
            bool any = false;
            for (size_t iy = 0; iy < ny; iy++)
                for (size_t ix = 0; ix < nx; ix++) {
                    double sum = 0;
                    size_t k = 0;
                    for (size_t i = 1; i < c.rows; i++) {
                        char *const *row = c.fields + i * c.cols;
                        double v;
                        if (strcmp(row[cx], xs[ix]) != 0 ||
                            (axis_y && strcmp(row[cy], ys[iy]) != 0))
                            continue;
                        if (strcmp(row[cs], "ok") != 0 && strcmp(row[cs], "diverged") != 0)
                            continue;
                        if (!field_number(row[cv], &v)) continue;
                        sum += v;
                        k++;
                    }
                    sb_printf(&t, "%s,%s,", xs[ix], axis_y ? ys[iy] : "all");
                    if (k) sb_num(&t, sum / (double)k, 9);
                    sb_printf(&t, ",%zu\n", k);
                    any = any || k;
                }
            char caption[1024];
            snprintf(caption, sizeof caption,
                     "The %s (summary.csv: %s) of the runs that ended ok or diverged, over %s "
                     "(x)%s%s%s; a blank cell has no such run.%s%s%s",
                     metrics[m].title, metrics[m].column, axis_x, axis_y ? " and " : "",
                     axis_y ? axis_y : " in one row (no second axis)", axis_y ? " (y)" : "",
                     others[0] ? " Each cell is the mean over " : "", others,
                     others[0] ? " (the runs column of the CSV counts them)." : "");
            char tv[160], xl[96], yl[96], cb[96], fv[32];
            snprintf(tv, sizeof tv, "title=%s", metrics[m].title);
            snprintf(xl, sizeof xl, "xlabel=%s", axis_x);
            snprintf(yl, sizeof yl, "ylabel=%s", axis_y ? axis_y : "");
            snprintf(cb, sizeof cb, "cblabel=%s", metrics[m].column);
            snprintf(fv, sizeof fv, "fmt=%s", metrics[m].fmt);
            const char *v[] = {tv, xl, yl, cb, fv, NULL};
            if (!any) {
                /* the CSV is still written, so the blank grid can be seen */
                rp_write_csv(r, csv_name, &t, caption);
                char w[256];
                snprintf(w, sizeof w, "figure %s", fig);
                rp_missingf(r, w, "%s/summary.csv: no run that ended ok or diverged has a %s",
                            sweep_dir, metrics[m].column);
                rc = rp_worse(rc, RP_EPARTIAL);
            } else {
                rc = rp_worse(rc, rp_figure_from(r, &t, true, "heatmap.gp", fig, caption, v));
            }
            sb_free(&t);
        }
    }
    free(xs);
    free(ys);

    /* the summary itself, as the sweep wrote it */
    sbuf t = {0};
    for (size_t i = 0; i < c.rows; i++)
        for (size_t k = 0; k < c.cols; k++) {
            sb_add(&t, c.fields[i * c.cols + k]);
            sb_add(&t, k + 1 < c.cols ? "," : "\n");
        }
    char table[80];
    snprintf(table, sizeof table, "%s_summary.csv", prefix);
    int trc = rp_write_csv(r, table, &t, "the sweep's table of runs");
    sb_free(&t);
    if (trc == RP_OK)
        trc = rp_table_csv(r,
                           "The sweep's runs (summary.csv): the grid axes, then each run's "
                           "outcome as `ampscope sweep` measured it from the run's record.",
                           table);
    csv_table_free(&c);
    return rp_worse(rc, trc);
}
