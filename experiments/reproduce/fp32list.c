/* fp32list.c: the fp32 list: the transformer in O2 fp16 with softmax
 * (attention's included), LayerNorm and the loss kept in fp32, as every
 * framework's list keeps them, against the same run with softmax and
 * LayerNorm in fp16 (--black-list -softmax,-layernorm), with the loss in
 * fp16 (--white-list loss), and O0: overflowing steps, non-finite values,
 * final loss.  Every number on the page is the one its CSV row holds. */
#include "reproduce_internal.h"

#include <math.h>
#include <stdio.h>

#include "report.h"

void repro_study_fp32list(repro_study *s)
{
    rp_section(s->rep, "fp32list", "The fp32 list: softmax and LayerNorm in fp16");
    static const struct {
        const char *run, *what, *key, *value;
    } runs[] = {
        {"tf-O0", "fp32 (O0)", NULL, NULL},
        {"tf-O2-fp16", "O2 fp16: softmax and LayerNorm fp32", NULL, NULL},
        {"tf-O2-fp16-lowlist", "O2 fp16: softmax and LayerNorm fp16", "black-list",
         "-softmax,-layernorm"},
        {"tf-O2-fp16-lowloss", "O2 fp16: the loss in fp16", "white-list", "loss"},
    };
    enum { RUNS = 4 };
    repro_counts c[RUNS];
    for (int i = 0; i < RUNS; i++)
        if (repro_train_tf(s, runs[i].run, i ? "O2" : "O0", "fp16", i ? "pytorch" : "none",
                           runs[i].key, runs[i].value) != 0 ||
            repro_count_run(s, runs[i].run, NULL, &c[i]) != 0) {
            repro_section_failed(s, "fp32list.csv");
            return;
        }
    /* each number formatted once: the CSV and the sentences say the same */
    char loss[RUNS][32], diff[RUNS][32];
    for (int i = 0; i < RUNS; i++) {
        snprintf(loss[i], sizeof loss[i], "%.4f", c[i].sum.final_loss);
        snprintf(diff[i], sizeof diff[i], "%+.4f",
                 repro_round4(c[i].sum.final_loss - c[0].sum.final_loss));
    }
    repro_csv f = {.ok = false};
    if (!repro_csv_open(s, &f, "fp32list.csv",
                        "run,precision,steps,final_loss,loss_minus_O0,found_inf_steps,"
                        "skipped_steps,nonfinite_loss_steps,nonfinite_values,max_abs_gradient"))
        goto fail;
    for (int i = 0; i < RUNS; i++)
        repro_csv_row(&f, "%s,%s,%lld,%s,%s,%lld,%lld,%lld,%llu,%.6g", runs[i].run, runs[i].what,
                      (long long)c[i].sum.steps, loss[i], diff[i], (long long)c[i].found_inf,
                      (long long)c[i].sum.skipped, (long long)c[i].nonfinite_loss,
                      (unsigned long long)c[i].nonfinite, c[i].grad_amax);
    if (!repro_csv_close(s, &f)) goto fail;
    const char *const names[] = {runs[0].run, runs[1].run, runs[2].run, runs[3].run};
    if (repro_loss_curves(s, "fp32list_loss.csv", names, RUNS) != 0) goto fail;

    const double fp16_max = repro_fp_value(FPE_FMT_F16, repro_fp_max_bits(FPE_FMT_F16));
    char literature[512], ours[512], difference[1024];
    snprintf(literature, sizeof literature,
             "PyTorch's autocast, Apex's O1 and Paddle's black list keep softmax, log_softmax, "
             "layer_norm and the losses in fp32 (their sources, cited in amp_lists_data.c); "
             "they give no measured number. The limit they guard: fp16's exp overflows for "
             "inputs above ln(%g) = %.4f, and a sum of squares once it passes %g.",
             fp16_max, log(fp16_max), fp16_max);
    snprintf(ours, sizeof ours,
             "The GPT-style transformer on the fortunes text (width %s, %s block(s), context "
             "%s, %lld steps, seed 1), O2 fp16 with PyTorch's dynamic loss scale (initial "
             "2^16), the lists as kept, softmax and LayerNorm in fp16, the loss in fp16, "
             "against O0.",
             repro_net_plans[s->o->level].tf_width, repro_net_plans[s->o->level].tf_depth,
             repro_net_plans[s->o->level].tf_context, (long long)c[0].sum.steps);
    const bool bites = c[2].found_inf > c[1].found_inf || c[2].nonfinite > c[1].nonfinite;
    const bool loss_bites = c[3].found_inf > c[1].found_inf;
    char loss_text[768];
    snprintf(loss_text, sizeof loss_text,
             "With the loss in fp16 (log-softmax and nll_loss on the fp16 logits, as "
             "F.cross_entropy on a half tensor) the run found %lld overflowing step(s) and "
             "skipped %lld, against %lld and %lld with the loss in fp32; final loss %s (%s from "
             "O0). %s",
             (long long)c[3].found_inf, (long long)c[3].sum.skipped, (long long)c[1].found_inf,
             (long long)c[1].sum.skipped, loss[3], diff[3],
             loss_bites ? "The loss in fp16 cost overflows: the gradient autograd hands an "
                          "fp16 loss is the scale cast to fp16, and 2^16 rounds to inf "
                          "(fp16's largest finite value is 65504), so the scaler must back "
                          "off below 2^16 first, and again after each growth to 2^16."
                        : "The loss in fp16 cost no overflow here.");
    snprintf(difference, sizeof difference,
             "With softmax and LayerNorm in fp16 the run found %lld overflowing step(s), "
             "skipped %lld and recorded %llu non-finite value(s); with them in fp32 %lld, %lld "
             "and %llu. Final loss %s against %s (O0 %s): %s and %s from O0. %s",
             (long long)c[2].found_inf, (long long)c[2].sum.skipped,
             (unsigned long long)c[2].nonfinite, (long long)c[1].found_inf,
             (long long)c[1].sum.skipped, (unsigned long long)c[1].nonfinite, loss[2], loss[1],
             loss[0], diff[2], diff[1],
             bites ? "Moving them to fp16 cost overflows here."
                   : "At this size the fp16 list cost no overflow: the max-subtracted softmax "
                     "never exceeds 1, LayerNorm's variance of a narrow row stays far below "
                     "fp16's limit, and the largest recorded (scaled) gradient is in the "
                     "max_abs_gradient column; overflow needs wider rows or larger logits.");
    rp_claim(s->rep,
             "Softmax, LayerNorm and the loss must stay in fp32: in fp16 their exponentials and "
             "sums of squares overflow and the loss is lost.",
             literature, ours, difference);
    rp_paragraph(s->rep, loss_text);
    rp_table_csv(s->rep, "The fp32 list against fp16: overflows and final loss", "fp32list.csv");
    const char *v[] = {"title=Training loss: softmax, LayerNorm and the loss in fp32 or fp16",
                       "xlabel=step", "ylabel=loss", NULL};
    rp_figure(s->rep, "lines.gp", "fp32list_loss", "Training loss of the four runs", v);
    return;
fail:
    repro_section_failed(s, "fp32list.csv");
}
