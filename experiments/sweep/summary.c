/* summary.c: rank 0's table of runs and summary.csv (sweep_internal.h):
 * a run's end recorded with the metrics read from its record, the progress
 * line, and the whole table rewritten atomically. */
#define _POSIX_C_SOURCE 200809L /* access */

#include "sweep_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atomic_file.h"
#include "record.h"

/* ---- the record of a finished run ------------------------------------------------------------ */
static int read_metrics(const sw_sweep *s, size_t run, sw_metrics *m, char *msg, size_t len)
{
    char p[4400];
    sw_path_in(s, p, sizeof p, run, NULL);
    rec_run_summary sum;
    if (rec_summarize_run(p, &sum, msg, len) != AN_OK) return -1;
    m->skipped = sum.skipped;
    m->final_loss = sum.final_loss;
    m->final_scale = sum.final_scale;
    m->test_accuracy = sum.test_accuracy;
    size_t n = 0;

    /* undefined fractions (no nonzero gradient in a row) do not count */
    m->underflow = NAN;
    sw_path_in(s, p, sizeof p, run, REC_TENSORS_CSV);
    if (access(p, F_OK) == 0) {
        rec_tensor_row *t = NULL;
        if (rec_read_tensors(p, &t, &n, msg, len) != 0) return -1;
        double total = 0;
        size_t rows = 0;
        for (size_t i = 0; i < n; i++)
            if (t[i].kind == REC_ACTIVATION_GRAD && !isnan(t[i].flushed_frac_of_nonzero)) {
                total += t[i].flushed_frac_of_nonzero;
                rows++;
            }
        free(t);
        if (rows) m->underflow = total / (double)rows;
    }

    m->lost = NAN;
    sw_path_in(s, p, sizeof p, run, REC_UPDATES_CSV);
    if (access(p, F_OK) == 0) {
        rec_update_row *u = NULL;
        if (rec_read_updates(p, &u, &n, msg, len) != 0) return -1;
        double lost = 0, nonzero = 0;
        for (size_t i = 0; i < n; i++) {
            lost += (double)u[i].lost;
            nonzero += (double)u[i].nonzero_updates;
        }
        free(u);
        if (nonzero > 0) m->lost = lost / nonzero;
    }
    return 0;
}

/* ---- summary.csv ----------------------------------------------------------------------------- */
static void put_real(FILE *f, double v, bool empty_if_nan)
{
    if (!(empty_if_nan && isnan(v))) fprintf(f, "%.9g", v);
    fputc(',', f);
}

/* The reason of a run in flight that no result came for. */
const char *sw_interrupted(const sw_sweep *s, int rank)
{
    static char text[128];
    if (s->size > 1)
        snprintf(text, sizeof text, "interrupted on rank %d (the sweep was stopped or a rank died)",
                 rank);
    else
        snprintf(text, sizeof text, "interrupted (the sweep was stopped)");
    return text;
}

int sw_write_summary(sw_sweep *s)
{
    char path[4200];
    char *msg = s->summary_error;
    const size_t msg_len = sizeof s->summary_error;
    snprintf(path, sizeof path, "%s/summary.csv", s->o->out_dir);
    af_file f;
    if (af_begin(&f, path, msg, msg_len) != 0) return -1;
    const sw_grid *g = &s->o->grid;
    for (size_t a = 0; a < g->n_axes; a++)
        fprintf(f.fp, "%s,", g->axes[a].name);
    fprintf(f.fp, "%s\n", SW_SUMMARY_HEADER);
    for (size_t k = 0; k < s->n; k++) {
        const sw_row *r = &s->rows[k];
        for (size_t a = 0; a < g->n_axes; a++)
            fprintf(f.fp, "%s,", g->axes[a].values[sw_grid_value(g, k, a)]);
        if (r->have_metrics) {
            put_real(f.fp, r->m.final_loss, false);
            put_real(f.fp, r->m.test_accuracy, true);
            fprintf(f.fp, "%lld,", (long long)r->m.skipped);
            put_real(f.fp, r->m.final_scale, false);
            put_real(f.fp, r->m.underflow, true);
            put_real(f.fp, r->m.lost, true);
        } else {
            fputs(",,,,,,", f.fp);
        }
        if (r->state == RS_OK || r->state == RS_DIVERGED || r->state == RS_FAILED)
            fprintf(f.fp, "%.3f", r->wall);
        if (r->state == RS_RUNNING && s->stopping)
            /* mpirun kills a job a second after one of its ranks died: say
             * now what becomes of the runs in flight if no result comes */
            fprintf(f.fp, ",failed,%s\n", sw_interrupted(s, r->rank));
        else if (r->state == RS_RUNNING && s->size > 1)
            fprintf(f.fp, ",pending,running on rank %d\n", r->rank);
        else if (r->state == RS_RUNNING)
            fprintf(f.fp, ",pending,running\n");
        else
            fprintf(f.fp, ",%s,%s\n", sw_state_name(r->state), r->reason);
    }
    if (af_commit(&f, msg, msg_len) != 0) return -1;
    msg[0] = '\0';
    return 0;
}

/* Rank 0: a run ended (or, RS_PENDING, came back unstarted). */
void sw_record(sw_sweep *s, const sw_result *res, int rank, bool reused)
{
    sw_row *r = &s->rows[res->run];
    r->state = (sw_run_state)res->state;
    r->rank = rank;
    r->wall = res->wall;
    snprintf(r->reason, sizeof r->reason, "%s", res->reason);
    sw_one_line(r->reason);
    r->have_metrics = false;
    if (r->state == RS_PENDING) {
        s->queue[(s->q_head + s->q_len++) % s->n] = (size_t)res->run;
        sw_write_summary(s);
        return;
    }
    if (r->state == RS_OK || r->state == RS_DIVERGED) {
        char msg[512];
        if (read_metrics(s, (size_t)res->run, &r->m, msg, sizeof msg) == 0) {
            r->have_metrics = true;
        } else {
            r->state = RS_FAILED;
            snprintf(r->reason, sizeof r->reason, "its record cannot be read: %.380s", msg);
            sw_one_line(r->reason);
        }
    }
    s->finished++;
    if (!reused) sw_write_summary(s); /* the caller writes it once after the reused ones */
    if (!s->o->progress) return;
    char where[32] = "";
    if (s->size > 1) snprintf(where, sizeof where, " on rank %d", rank);
    if (reused)
        fprintf(stderr, "sweep: [%zu/%zu] %s: %s (done before, reused)\n", s->finished, s->n,
                s->names[res->run], sw_state_name(r->state));
    else
        fprintf(stderr, "sweep: [%zu/%zu] %s: %s in %.1f s%s%s%s\n", s->finished, s->n,
                s->names[res->run], sw_state_name(r->state), res->wall, where,
                r->reason[0] ? ": " : "", r->reason);
}
