/* runs.c: rp_add_runs, the report of run directories: each run's run.json
 * and logs read through record.h (a table that cannot be read becomes a
 * note naming the file and, for a header that differs, the column), the
 * runs' labels, the table of runs, then the figures of run_figures.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csv.h"
#include "report_internal.h"

/* One table of a run into run->t[tab], or why it could not be read. */
static void read_table(run_data *run, rec_table tab)
{
    run_table *t = &run->t[tab];
    char *path = rp_join_path(run->dir, rec_table_file(tab));
    if (!path) {
        t->rc = ut_fail(t->why, sizeof t->why, AN_ENOMEM, "out of memory");
        return;
    }
    switch (tab) {
    case REC_STEPS:
        t->rc = rec_read_steps(path, (rec_step_row **)&t->rows, &t->n, t->why, sizeof t->why);
        break;
    case REC_TENSORS:
        t->rc = rec_read_tensors(path, (rec_tensor_row **)&t->rows, &t->n, t->why, sizeof t->why);
        break;
    case REC_UPDATES:
        t->rc = rec_read_updates(path, (rec_update_row **)&t->rows, &t->n, t->why, sizeof t->why);
        break;
    case REC_HIST:
        t->rc = rec_read_hist(path, (rec_hist_row **)&t->rows, &t->n, t->why, sizeof t->why);
        break;
    case REC_EVAL:
        t->rc = rec_read_eval(path, (rec_eval_row **)&t->rows, &t->n, t->why, sizeof t->why);
        break;
    default: t->rc = ut_fail(t->why, sizeof t->why, AN_EINVAL, "not read by the report"); break;
    }
    /* A header that differs is most often a column missing: say which. */
    if (t->rc == AN_EFORMAT && strstr(t->why, ": header is '")) {
        char shown[2048], cols[512];
        char *fields[128];
        csv_reader in;
        if (csv_open(&in, path) == AN_OK && csv_next(&in)) {
            /* its first 2047 bytes: a header that long is not the record's anyway */
            if (in.len > 2047) in.line[2047] = '\0';
            in.line[strcspn(in.line, "\r")] = '\0';
            snprintf(shown, sizeof shown, "%s", in.line);
            size_t nf = csv_split(in.line, fields, 128);
            if (nf > 128) nf = 128;
            csv_missing_columns(fields, nf, rec_table_header(tab), cols, sizeof cols);
            if (cols[0])
                snprintf(t->why, sizeof t->why, "%s: no column %s (the header is '%.300s')", path,
                         cols, shown);
        }
        csv_close(&in);
    }
    if (t->rc == AN_OK && t->n == 0)
        t->rc = ut_fail(t->why, sizeof t->why, AN_EFORMAT, "%s: no rows under the header", path);
    free(path);
}

/* The run's folder name as a gnuplot word: [A-Za-z0-9_.+-], the rest '_'. */
static void run_label(run_data *runs, size_t i)
{
    const char *d = runs[i].dir;
    size_t end = strlen(d);
    while (end > 1 && d[end - 1] == '/')
        end--;
    size_t start = end;
    while (start > 0 && d[start - 1] != '/')
        start--;
    char base[64];
    size_t n = 0;
    for (size_t k = start; k < end && n + 1 < sizeof base; k++) {
        const unsigned char c = (unsigned char)d[k];
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || strchr("_.+-", c);
        base[n++] = ok ? (char)c : '_';
    }
    base[n] = '\0';
    if (!n || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
        snprintf(base, sizeof base, "run%zu", i + 1);
    /* two runs in folders of one name stay apart */
    snprintf(runs[i].label, sizeof runs[i].label, "%s", base);
    for (int k = 2;; k++) {
        bool taken = false;
        for (size_t j = 0; j < i; j++)
            taken = taken || strcmp(runs[j].label, runs[i].label) == 0;
        if (!taken) break;
        snprintf(runs[i].label, sizeof runs[i].label, "%s-%d", base, k);
    }
}

/* Notes, for a figure, each run whose table could not be read. */
void rp_note_unread(rp_report *r, run_data *runs, size_t n, rec_table tab, const char *figure)
{
    for (size_t i = 0; i < n; i++)
        if (runs[i].t[tab].rc != AN_OK) {
            char what[512];
            snprintf(what, sizeof what, "run %s in %s", runs[i].label, figure);
            rp_missing(r, what, runs[i].t[tab].why);
        }
}

/* ---- the summary table ---- */
static void option_text(const rec_run *info, const char *key, char *buf, size_t len)
{
    rec_option o;
    buf[0] = '\0';
    if (!info || !rec_run_option(info, key, &o)) return;
    if (o.type == REC_OPT_STRING)
        snprintf(buf, len, "%s", o.string);
    else if (o.type == REC_OPT_INT)
        snprintf(buf, len, "%lld", (long long)o.integer);
    else
        snprintf(buf, len, "%.9g", o.real);
    /* the table is a CSV without quoting */
    for (char *p = buf; *p; p++)
        if (*p == ',' || *p == '\n' || *p == '\r') *p = ';';
}

static int summary_table(rp_report *r, run_data *runs, size_t n)
{
    rp_section(r, "runs", "Runs");
    sbuf t = {0};
    sb_add(&t, "run,net,mode,dtype,loss_scale,backend,steps,final_loss,final_test_accuracy,"
               "skipped_steps,final_scale\n");
    for (size_t i = 0; i < n; i++) {
        const run_data *run = &runs[i];
        char v[5][128];
        const char *keys[4] = {"net", "mode", "dtype", "loss-scale"};
        for (int k = 0; k < 4; k++)
            option_text(run->info, keys[k], v[k], sizeof v[k]);
        /* train records loss-scale only when it is given; its default is none */
        if (run->info && !v[3][0]) snprintf(v[3], sizeof v[3], "none");
        snprintf(v[4], sizeof v[4], "%s", run->info ? rec_run_backend(run->info) : "");
        for (char *p = v[4]; *p; p++)
            if (*p == ',') *p = ';';
        sb_printf(&t, "%s,%s,%s,%s,%s,%s,", run->label, v[0], v[1], v[2], v[3], v[4]);
        if (run->t[REC_STEPS].rc == AN_OK) {
            const rec_step_row *s = ROWS(run, REC_STEPS, rec_step_row);
            const size_t ns = run->t[REC_STEPS].n;
            size_t skipped = 0;
            for (size_t k = 0; k < ns; k++)
                skipped += s[k].skipped;
            sb_printf(&t, "%zu,", ns);
            sb_num(&t, s[ns - 1].loss, 9);
            sb_add(&t, ",");
            if (run->t[REC_EVAL].rc == AN_OK)
                sb_num(&t, ROWS(run, REC_EVAL, rec_eval_row)[run->t[REC_EVAL].n - 1].test_accuracy,
                       9);
            sb_printf(&t, ",%zu,", skipped);
            sb_num(&t, s[ns - 1].loss_scale, 9);
            sb_add(&t, "\n");
        } else {
            sb_add(&t, ",,");
            if (run->t[REC_EVAL].rc == AN_OK)
                sb_num(&t, ROWS(run, REC_EVAL, rec_eval_row)[run->t[REC_EVAL].n - 1].test_accuracy,
                       9);
            sb_add(&t, ",,\n");
        }
    }
    for (size_t i = 0; i < n; i++) {
        char what[256];
        snprintf(what, sizeof what, "run %s in the table of runs", runs[i].label);
        if (!runs[i].info) rp_missing(r, what, runs[i].info_why);
    }
    rp_note_unread(r, runs, n, REC_STEPS, "the table of runs (steps, final loss, skips, scale)");
    rp_note_unread(r, runs, n, REC_EVAL, "the table of runs (final test accuracy)");
    int rc = rp_write_csv(r, "runs.csv", &t, "the table of runs");
    sb_free(&t);
    if (rc == RP_OK)
        rc = rp_table_csv(r,
                          "The runs: options from run.json; the last step's loss and scale, "
                          "the steps whose update was skipped (steps.csv), the last evaluation "
                          "(eval.csv).",
                          "runs.csv");
    return rc;
}

int rp_add_runs(rp_report *r, const char *const *run_dirs, size_t n)
{
    if (!r) return RP_EINVAL;
    if (!run_dirs || n == 0) {
        rp_missing(r, "the run figures", "rp_add_runs: no run directories");
        return RP_EINVAL;
    }
    run_data *runs = calloc(n, sizeof *runs);
    if (!runs) {
        rp_missing(r, "the run figures", "out of memory");
        return RP_EIO;
    }
    const size_t notes_before = r->n_notes;
    static const rec_table used[] = {REC_STEPS, REC_EVAL, REC_TENSORS, REC_UPDATES, REC_HIST};
    for (size_t i = 0; i < n; i++) {
        runs[i].dir = run_dirs[i] ? run_dirs[i] : "";
        run_label(runs, i);
        rp_progress(r, "reading %s", runs[i].dir);
        char *json = rp_join_path(runs[i].dir, REC_RUN_JSON);
        runs[i].info = json ? rec_run_read(json, runs[i].info_why, sizeof runs[i].info_why) : NULL;
        if (!json) snprintf(runs[i].info_why, sizeof runs[i].info_why, "out of memory");
        free(json);
        for (size_t k = 0; k < sizeof used / sizeof used[0]; k++)
            read_table(&runs[i], used[k]);
    }
    int rc = summary_table(r, runs, n);
    rc = rp_worse(rc, rp_training_figures(r, runs, n));
    rc = rp_worse(rc, rp_hist_figures(r, runs, n));
    rc = rp_worse(rc, rp_flushed_figures(r, runs, n));
    rc = rp_worse(rc, rp_update_figures(r, runs, n));
    /* a run left out of a figure that was still drawn is a note, not a figure's status */
    if (r->n_notes > notes_before) rc = rp_worse(rc, RP_EPARTIAL);
    for (size_t i = 0; i < n; i++) {
        rec_run_free(runs[i].info);
        for (int k = 0; k < REC_TABLES; k++)
            free(runs[i].t[k].rows);
    }
    free(runs);
    return rc;
}
