/* counts.c: what the new nets' sections read from a run's record: its
 * summary, the steps that found an overflow or lost the loss, the
 * non-finite values and flushed gradients over the recorded steps
 * (tensors.csv), and the loss curves of several runs as one long CSV for
 * lines.gp. */
#include "reproduce_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"

int repro_count_run(repro_study *s, const char *run, const char *layer, repro_counts *c)
{
    memset(c, 0, sizeof *c);
    if (repro_summarize(s, run, &c->sum) != 0) return -1;
    char p[4096];
    repro_run_file(s, p, sizeof p, run, REC_STEPS_CSV);
    rec_step_row *st = NULL;
    size_t n = 0;
    if (rec_read_steps(p, &st, &n, s->msg, sizeof s->msg) != 0) return -1;
    for (size_t i = 0; i < n; i++) {
        c->found_inf += st[i].found_inf;
        c->nonfinite_loss += !isfinite(st[i].loss);
    }
    free(st);
    repro_run_file(s, p, sizeof p, run, REC_TENSORS_CSV);
    rec_tensor_row *t = NULL;
    if (rec_read_tensors(p, &t, &n, s->msg, sizeof s->msg) != 0) return -1;
    for (size_t i = 0; i < n; i++) {
        if (layer && strcmp(t[i].layer, layer) != 0) continue;
        c->nonfinite += t[i].nonfinite;
        if (t[i].kind == REC_WEIGHT_GRAD || t[i].kind == REC_ACTIVATION_GRAD) {
            c->grad_nonzero += t[i].nonzero;
            c->grad_flushed += t[i].flushed;
            if (t[i].amax > c->grad_amax) c->grad_amax = t[i].amax;
        }
    }
    free(t);
    c->flushed_frac = c->grad_nonzero ? (double)c->grad_flushed / (double)c->grad_nonzero : NAN;
    return 0;
}

double repro_round4(double d) { return fabs(d) < 5e-5 ? 0 : d; }

int repro_loss_curves(repro_study *s, const char *csv_name, const char *const *runs, size_t n)
{
    repro_csv c = {.ok = false};
    if (!repro_csv_open(s, &c, csv_name, "x,y,series")) return -1;
    for (size_t r = 0; r < n; r++) {
        char p[4096];
        repro_run_file(s, p, sizeof p, runs[r], REC_STEPS_CSV);
        rec_step_row *st = NULL;
        size_t k = 0;
        if (rec_read_steps(p, &st, &k, s->msg, sizeof s->msg) != 0) {
            repro_csv_abort(&c);
            return -1;
        }
        for (size_t i = 0; i < k; i++) /* a non-finite loss is left empty: gnuplot skips it */
            if (isfinite(st[i].loss))
                repro_csv_row(&c, "%lld,%.6g,%s", (long long)st[i].step, st[i].loss, runs[r]);
            else
                repro_csv_row(&c, "%lld,,%s", (long long)st[i].step, runs[r]);
        free(st);
    }
    return repro_csv_close(s, &c) ? 0 : -1;
}
