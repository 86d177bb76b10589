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
    /* tensors.csv's flushed column of a low-precision run is 0 by construction
     * (its gradients are already in the format); what it lost to zero shows
     * as fewer nonzero gradients than O0 at the same recorded steps */
    char loss[N][32], diff[N][32], lost[N][32];
    long long lost_n[N];
    for (int i = 0; i < N; i++) {
        snprintf(loss[i], sizeof loss[i], "%.4f", c[i].sum.final_loss);
        snprintf(diff[i], sizeof diff[i], "%+.4f",
                 repro_round4(c[i].sum.final_loss - c[0].sum.final_loss));
        lost_n[i] = (long long)c[0].grad_nonzero - (long long)c[i].grad_nonzero;
        snprintf(lost[i], sizeof lost[i], "%.3g",
                 c[0].grad_nonzero ? (double)lost_n[i] / (double)c[0].grad_nonzero : NAN);
    }
    char cast[32];
    snprintf(cast, sizeof cast, "%.3g", c[0].flushed_frac);
    repro_csv f = {.ok = false};
    if (!repro_csv_open(s, &f, "bf16.csv",
                        "run,dtype,loss_scale,final_loss,loss_minus_O0,skipped_steps,"
                        "nonzero_gradients,zero_more_than_O0,zero_more_frac_of_O0_nonzero"))
        goto fail;
    for (int i = 0; i < N; i++)
        repro_csv_row(&f, "%s,%s,%s,%s,%s,%lld,%llu,%lld,%s", runs[i].run,
                      i ? runs[i].dtype : "fp32", runs[i].scale, loss[i], diff[i],
                      (long long)c[i].sum.skipped, (unsigned long long)c[i].grad_nonzero, lost_n[i],
                      lost[i]);
    if (!repro_csv_close(s, &f)) goto fail;
    const char *const names[] = {runs[0].run, runs[1].run, runs[2].run, runs[3].run};
    if (repro_loss_curves(s, "bf16_loss.csv", names, N) != 0) goto fail;

    char ours[512], difference[1024];
    snprintf(ours, sizeof ours,
             "The transformer (width %s, context %s, %lld steps, seed 1) in O2: bf16 without "
             "scaling, fp16 without and with PyTorch's dynamic scale, and O0. Gradients lost "
             "to zero: how many fewer nonzero weight and activation gradients a run has than "
             "O0 over the same recorded steps (tensors.csv, every %s steps); the runs' weights "
             "drift apart, so this counts approximately.",
             repro_net_plans[s->o->level].tf_width, repro_net_plans[s->o->level].tf_context,
             (long long)c[0].sum.steps, repro_net_plans[s->o->level].stats_every);
    snprintf(difference, sizeof difference,
             "bf16 without scaling ends at %s (%s from O0), skipped %lld step(s) and has %s of "
             "O0's nonzero gradients fewer; fp16 without scaling ends at %s (%s) with %s fewer "
             "(O0's own record predicts an fp16 cast at scale 1 flushes %s of them); fp16 with "
             "the dynamic scale ends at %s (%s), skipped %lld, with %s fewer. %s",
             loss[1], diff[1], (long long)c[1].sum.skipped, lost[1], loss[2], diff[2], lost[2],
             cast, loss[3], diff[3], (long long)c[3].sum.skipped, lost[3],
             lost_n[1] <= lost_n[2]
                 ? "bf16's exponent range (that of fp32) loses no more gradients than fp16 at "
                   "scale 1, as the claim says."
                 : "Here bf16 lost more gradients than fp16 at scale 1.");
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
