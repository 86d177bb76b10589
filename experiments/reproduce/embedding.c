/* embedding.c: the embedding's gradient sums: the transformer in O2 fp16
 * with the rows' sums in fp32 (PyTorch's CUDA kernel) against the sums in
 * fp16 (--embedding-accumulation low): wte's updates (updates.csv), its
 * weight gradients (tensors.csv) and the final loss. */
#include "reproduce_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data.h"
#include "record.h"
#include "report.h"

/* wte's rows of updates.csv summed: lost updates, nonzero updates, and the
 * mean of rel_update_error over the steps. */
static int wte_updates(repro_study *s, const char *run, uint64_t *lost, uint64_t *nonzero,
                       double *rel)
{
    char p[4096];
    repro_run_file(s, p, sizeof p, run, REC_UPDATES_CSV);
    rec_update_row *u = NULL;
    size_t n = 0, k = 0;
    if (rec_read_updates(p, &u, &n, s->msg, sizeof s->msg) != 0) return -1;
    *lost = *nonzero = 0;
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(u[i].layer, "wte") == 0) {
            *lost += u[i].lost;
            *nonzero += u[i].nonzero_updates;
            if (isfinite(u[i].rel_update_error)) {
                sum += u[i].rel_update_error;
                k++;
            }
        }
    free(u);
    *rel = k ? sum / (double)k : NAN;
    return 0;
}

void repro_study_embedding(repro_study *s)
{
    rp_section(s->rep, "embedding", "Embedding gradients: many tokens summed into one row");
    static const char *const runs[] = {"tf-O0", "tf-O2-fp16", "tf-O2-fp16-embedlow"};
    static const char *const what[] = {"fp32 (O0)", "O2 fp16: sums in fp32",
                                       "O2 fp16: sums in fp16"};
    repro_counts c[3];
    uint64_t lost[3], nonzero[3];
    double rel[3];
    for (int i = 0; i < 3; i++)
        if (repro_train_tf(s, runs[i], i ? "O2" : "O0", "fp16", i ? "pytorch" : "none",
                           i == 2 ? "embedding-accumulation" : NULL, "low") != 0 ||
            repro_count_run(s, runs[i], "wte", &c[i]) != 0 ||
            wte_updates(s, runs[i], &lost[i], &nonzero[i], &rel[i]) != 0) {
            repro_section_failed(s, "embedding.csv");
            return;
        }
    repro_embed_probe pr;
    if (repro_embedding_probe(s, runs[1], c[1].sum.final_scale, &pr) != 0) {
        repro_section_failed(s, "embedding.csv");
        return;
    }
    char loss[3][32], diff[3][32], relt[3][32];
    for (int i = 0; i < 3; i++) {
        snprintf(loss[i], sizeof loss[i], "%.4f", c[i].sum.final_loss);
        snprintf(diff[i], sizeof diff[i], "%+.4f",
                 repro_round4(c[i].sum.final_loss - c[1].sum.final_loss));
        snprintf(relt[i], sizeof relt[i], "%.3g", rel[i]);
    }
    repro_csv f = {.ok = false};
    if (!repro_csv_open(s, &f, "embedding.csv",
                        "run,accumulation,final_loss,loss_minus_fp32_sums,wte_lost_updates,"
                        "wte_nonzero_updates,wte_mean_rel_update_error,wte_grad_nonzero,"
                        "wte_max_abs_gradient"))
        goto fail;
    for (int i = 0; i < 3; i++)
        repro_csv_row(&f, "%s,%s,%s,%s,%llu,%llu,%s,%llu,%.6g", runs[i], what[i], loss[i], diff[i],
                      (unsigned long long)lost[i], (unsigned long long)nonzero[i], relt[i],
                      (unsigned long long)c[i].grad_nonzero, c[i].grad_amax);
    if (!repro_csv_close(s, &f) || repro_loss_curves(s, "embedding_loss.csv", runs, 3) != 0)
        goto fail;
    /* the probe: each number formatted once, for the CSV and the sentence */
    char scale[32], frac[32], rel_all[32], rel_top[32];
    snprintf(scale, sizeof scale, "%.9g", c[1].sum.final_scale);
    snprintf(frac, sizeof frac, "%.4g", pr.nonzero ? (double)pr.differ / (double)pr.nonzero : NAN);
    snprintf(rel_all, sizeof rel_all, "%.3g", pr.rel_l2);
    snprintf(rel_top, sizeof rel_top, "%.3g", pr.top_rel_l2);
    const int top_byte = ds_text_byte(pr.top_token);
    if (!repro_csv_open(s, &f, "embedding_probe.csv",
                        "run,loss_scale,windows,tokens,wte_rows_touched,top_token_byte,"
                        "top_token_count,wte_grad_nonzero,wte_grad_differ,differ_frac_of_nonzero,"
                        "wte_rel_l2_error,top_row_rel_l2_error"))
        goto fail;
    repro_csv_row(&f, "%s,%s,%zu,%zu,%zu,%d,%zu,%llu,%llu,%s,%s,%s", runs[1], scale, pr.batch,
                  pr.tokens, pr.rows_touched, top_byte, pr.top_count,
                  (unsigned long long)pr.nonzero, (unsigned long long)pr.differ, frac, rel_all,
                  rel_top);
    if (!repro_csv_close(s, &f)) goto fail;

    const fpe_format *h = &fpe_formats[FPE_FMT_F16];
    char literature[512], ours[512], difference[1024];
    snprintf(literature, sizeof literature,
             "No paper gives a number. PyTorch's CUDA embedding backward sums in fp32 "
             "(EmbeddingBackwardKernel.cu, acc_type float) for this reason. The arithmetic: an "
             "fp16 sum keeps %d significant bits, so a token's gradient below 2^-%d of its row's "
             "running sum (half an ulp) is lost entirely.",
             h->p, h->p + 1);
    snprintf(ours, sizeof ours,
             "The transformer (width %s, context %s, %lld steps, character vocabulary, batch x "
             "context tokens a step), O2 fp16 with PyTorch's dynamic scale; only "
             "--embedding-accumulation differs. wte's rows of updates.csv and tensors.csv.",
             repro_net_plans[s->o->level].tf_width, repro_net_plans[s->o->level].tf_context,
             (long long)c[1].sum.steps);
    char probe[768];
    snprintf(probe, sizeof probe,
             "Measured directly (embedding_probe.csv): at the end of %s, at its final scale %s, "
             "one batch of %zu windows (%zu tokens) sums into %zu rows of wte, the most "
             "frequent token (byte %d) %zu times. Summed in fp16, %llu of the %llu nonzero "
             "gradient elements of wte differ from the fp32 sums (%s of them); the relative "
             "error is %s over wte and %s over that token's row.",
             runs[1], scale, pr.batch, pr.tokens, pr.rows_touched, top_byte, pr.top_count,
             (unsigned long long)pr.differ, (unsigned long long)pr.nonzero, frac, rel_all, rel_top);
    snprintf(difference, sizeof difference,
             "With the sums in fp16 the final loss is %s against %s with fp32 sums: %s. wte lost "
             "%llu of %llu nonzero master-weight updates with fp16 sums and %llu of %llu with "
             "fp32 sums (mean relative update error %s against %s). %s",
             loss[2], loss[1], diff[2], (unsigned long long)lost[2], (unsigned long long)nonzero[2],
             (unsigned long long)lost[1], (unsigned long long)nonzero[1], relt[2], relt[1],
             "updates.csv compares the update applied with the update intended from the "
             "gradient as summed, so it counts the master weights' rounding, not the sums'; "
             "two runs drift apart, so their final losses differ by chance as well. The probe "
             "below measures the sums themselves.");
    rp_claim(s->rep,
             "When many tokens accumulate into one embedding row in fp16, the small gradients of "
             "frequent tokens are lost.",
             literature, ours, difference);
    rp_paragraph(s->rep, probe);
    rp_table_csv(s->rep, "Embedding sums in fp32 or fp16: wte's updates and the loss",
                 "embedding.csv");
    rp_table_csv(s->rep, "The embedding's fp16 sums against fp32 sums on one batch",
                 "embedding_probe.csv");
    const char *v[] = {"title=Training loss: the embedding's sums in fp32 or fp16", "xlabel=step",
                       "ylabel=loss", NULL};
    rp_figure(s->rep, "lines.gp", "embedding_loss", "Training loss of the three runs", v);
    return;
fail:
    repro_section_failed(s, "embedding.csv");
}
