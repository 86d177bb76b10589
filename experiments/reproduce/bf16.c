/* bf16.c: bf16 needs no loss scale (Kalamkar et al. 2019): the transformer
 * in O2 bf16 without scaling against O2 fp16 without and with PyTorch's
 * dynamic scale, and O0: final loss, skipped steps, flushed gradients. */
#include "reproduce_internal.h"

#include <math.h>
#include <stdio.h>

#include "report.h"

void repro_study_bf16(repro_study *s)
{
    rp_section(s->rep, "bf16", "bf16 needs no loss scale");
    static const struct {
        const char *run, *mode, *dtype, *scale;
    } runs[] = {
        {"tf-O0", "O0", "fp16", "none"},
        {"tf-O2-bf16-noscale", "O2", "bf16", "none"},
        {"tf-O2-fp16-noscale", "O2", "fp16", "none"},
        {"tf-O2-fp16", "O2", "fp16", "pytorch"},
    };
    enum { N = 4 };
    repro_counts c[N];
    for (int i = 0; i < N; i++)
        if (repro_train_tf(s, runs[i].run, runs[i].mode, runs[i].dtype, runs[i].scale, NULL,
                           NULL) != 0 ||
            repro_count_run(s, runs[i].run, NULL, &c[i]) != 0) {
            repro_section_failed(s, "bf16.csv");
            return;
        }
    char loss[N][32], diff[N][32], flushed[N][32];
    for (int i = 0; i < N; i++) {
        snprintf(loss[i], sizeof loss[i], "%.4f", c[i].sum.final_loss);
        snprintf(diff[i], sizeof diff[i], "%+.4f", c[i].sum.final_loss - c[0].sum.final_loss);
        snprintf(flushed[i], sizeof flushed[i], "%.3g", c[i].flushed_frac);
    }
    repro_csv f = {.ok = false};
    if (!repro_csv_open(s, &f, "bf16.csv",
                        "run,dtype,loss_scale,final_loss,loss_minus_O0,skipped_steps,"
                        "flushed_gradients,nonzero_gradients,flushed_frac_of_nonzero"))
        goto fail;
    for (int i = 0; i < N; i++)
        repro_csv_row(&f, "%s,%s,%s,%s,%s,%lld,%llu,%llu,%s", runs[i].run,
                      i ? runs[i].dtype : "fp32", runs[i].scale, loss[i], diff[i],
                      (long long)c[i].sum.skipped, (unsigned long long)c[i].grad_flushed,
                      (unsigned long long)c[i].grad_nonzero, flushed[i]);
    if (!repro_csv_close(s, &f)) goto fail;
    const char *const names[] = {runs[0].run, runs[1].run, runs[2].run, runs[3].run};
    if (repro_loss_curves(s, "bf16_loss.csv", names, N) != 0) goto fail;

    char ours[512], difference[1024];
    snprintf(ours, sizeof ours,
             "The transformer (width %s, context %s, %lld steps, seed 1) in O2: bf16 without "
             "scaling, fp16 without and with PyTorch's dynamic scale, and O0. Flushed: the "
             "nonzero weight and activation gradients the run's format makes zero, over the "
             "recorded steps (tensors.csv, every %s steps).",
             repro_net_plans[s->o->level].tf_width, repro_net_plans[s->o->level].tf_context,
             (long long)c[0].sum.steps, repro_net_plans[s->o->level].stats_every);
    snprintf(difference, sizeof difference,
             "bf16 without scaling ends at %s (%s from O0), skipped %lld step(s) and flushed %s "
             "of its nonzero gradients; fp16 without scaling ends at %s (%s) and flushed %s; "
             "fp16 with the dynamic scale ends at %s (%s), skipped %lld and flushed %s. %s",
             loss[1], diff[1], (long long)c[1].sum.skipped, flushed[1], loss[2], diff[2],
             flushed[2], loss[3], diff[3], (long long)c[3].sum.skipped, flushed[3],
             c[1].flushed_frac <= c[2].flushed_frac
                 ? "bf16's exponent range (that of fp32) flushes no more than fp16 at scale 1, "
                   "as the claim says."
                 : "Here bf16 flushed more than fp16 at scale 1.");
    rp_claim(s->rep,
             "bf16 trains to fp32's result with no loss scaling: its exponent range is fp32's, "
             "so gradients do not underflow.",
             "Kalamkar et al. 2019: bf16 matches fp32 accuracy with no loss scaling and no "
             "hyperparameter changes (REFERENCES.md quotes no single figure: the result is "
             "'the same as fp32').",
             ours, difference);
    rp_table_csv(s->rep, "bf16 and fp16, with and without a loss scale", "bf16.csv");
    const char *v[] = {"title=Training loss: bf16 and fp16, with and without a loss scale",
                       "xlabel=step", "ylabel=loss", NULL};
    rp_figure(s->rep, "lines.gp", "bf16_loss", "Training loss of the four runs", v);
    return;
fail:
    repro_section_failed(s, "bf16.csv");
}
