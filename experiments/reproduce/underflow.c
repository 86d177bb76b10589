/* underflow.c: study 2, which gradients fp16 and bf16 lose: histograms of
 * the fp32 runs, the fractions per loss scale, and LeNet-5 per layer. */
#include "reproduce_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "precision_stats.h"
#include "record.h"
#include "report.h"

int repro_merged_hist(repro_study *s, const char *run, rec_kind k, bool all_steps,
                      uint64_t hist[AK_HIST_BINS])
{
    char p[4096];
    repro_run_file(s, p, sizeof p, run, REC_HIST_CSV);
    rec_hist_row *rows = NULL;
    size_t n = 0;
    memset(hist, 0, AK_HIST_BINS * sizeof *hist);
    if (rec_read_hist(p, &rows, &n, s->msg, sizeof s->msg) != 0) return -1;
    int64_t last = -1;
    for (size_t i = 0; i < n; i++)
        if (rows[i].step > last) last = rows[i].step;
    for (size_t i = 0; i < n; i++)
        if (rows[i].kind == k && (all_steps || rows[i].step == last))
            hist[rows[i].bin] += rows[i].count;
    free(rows);
    if (last < 0) {
        snprintf(s->msg, sizeof s->msg, "%.900s has no rows", p);
        return -1;
    }
    return 0;
}

/* The literature's fractions: Micikevicius et al. 2018, Fig. 3 (SSD), and
 * the MindSpore AMP article's one layer; the text quotes and compares
 * these. */
static const double ssd_zero = 0.67, ssd_flushed = 0.31, ms_zero = 0.68, ms_band = 0.04;

static const char *kind_label(rec_kind k)
{
    return k == REC_ACTIVATION_GRAD ? "activation gradients" : "weight gradients";
}

void repro_study_underflow(repro_study *s)
{
    const repro_plan *p = s->plan;
    rp_section(s->rep, "underflow", "Underflow: which gradients fp16 and bf16 lose");
    if (repro_train_lenet5_o0(s) != 0 || repro_train_mlp_o0(s) != 0 ||
        repro_train(s, "simplenet-o0", NULL, "net", "simplenet", "width", p->sn_width, "batch",
                    p->sn_batch, "mode", "O0", "steps", p->sn_steps, "stats-every", "0",
                    "hist-every", "10", "trace-every", "0", NULL) != 0) {
        repro_section_failed(s, "the O0 runs of the underflow study");
        return;
    }
    /* the histograms at the last recorded step */
    repro_csv c = {.ok = false};
    if (!repro_csv_open(s, &c, "underflow_hist.csv", "bin,count,series")) {
        repro_section_failed(s, "underflow_hist.csv");
        return;
    }
    const char *runs[] = {"lenet5-o0", "mlp-o0", "simplenet-o0"};
    const rec_kind kinds[] = {REC_ACTIVATION_GRAD, REC_WEIGHT_GRAD};
    uint64_t h[AK_HIST_BINS];
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 2; k++) {
            if (repro_merged_hist(s, runs[r], kinds[k], false, h) != 0) {
                repro_csv_abort(&c);
                break;
            }
            for (int e = AK_HIST_EMIN; e <= AK_HIST_EMAX; e++)
                if (h[AK_HIST_BIN(e)])
                    repro_csv_row(&c, "%d,%llu,%s %s", e, (unsigned long long)h[AK_HIST_BIN(e)],
                                  runs[r], kind_label(kinds[k]));
        }
    if (!repro_csv_close(s, &c)) {
        repro_section_failed(s, "underflow_hist.csv");
        return;
    }
    char literature[512];
    snprintf(literature, sizeof literature,
             "Micikevicius et al. 2018, Fig. 3 (Multibox SSD): about %.0f%% of activation "
             "gradients are zero, and a plain fp16 cast zeroes about %.0f%% more; scaling by 8 "
             "restored fp32 accuracy. The MindSpore AMP article: in one layer %.0f%% are zero and "
             "about %.0f%% lie in [2^-32, 2^-20].",
             100 * ssd_zero, 100 * ssd_flushed, 100 * ms_zero, 100 * ms_band);
    rp_claim(s->rep,
             "Many activation gradients are small enough that a plain fp16 cast flushes them to "
             "zero; scaling the loss moves them into fp16's range.",
             literature,
             "The histograms and the table below: LeNet-5 and the MLP on Fashion-MNIST and "
             "SimpleNet on synthetic data, trained in fp32 (O0), gradients at the last recorded "
             "step (histograms) and over all recorded steps (table).",
             "Our networks are small classifiers with ReLU on 28x28 images, not a detection "
             "network: their zero fraction comes from ReLU and max-pooling. How much fewer or "
             "more values a plain fp16 cast flushes than in SSD is measured below.");
    const char *hv[] = {"title=log2 |gradient| at the last recorded step (fp32 training)", NULL};
    rp_figure(s->rep, "hist.gp", "underflow_hist",
              "Gradient magnitudes with fp16's and bf16's subnormal and normal ranges", hv);

    /* the table per loss scale, over all recorded steps */
    static const double scales[] = {1, 8, 128, 1024, 32768};
    if (!repro_csv_open(
            s, &c, "underflow_table.csv",
            "run,gradients,target,loss_scale,count,zero_frac_of_all,"
            "flushed_frac_of_nonzero,subnormal_frac_of_nonzero,overflow_frac_of_nonzero,"
            "zero_after_cast_frac_of_all")) {
        repro_section_failed(s, "underflow_table.csv");
        return;
    }
    double lenet_zero = NAN, lenet_flush1 = NAN;
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 2; k++) {
            if (repro_merged_hist(s, runs[r], kinds[k], true, h) != 0) {
                repro_csv_abort(&c);
                break;
            }
            for (int t = 0; t < 2; t++)
                for (int i = 0; i < 5; i++) {
                    an_fractions f;
                    const fpe_format_id target = t == 0 ? FPE_FMT_F16 : FPE_FMT_BF16;
                    if (an_hist_fractions(h, target, scales[i], &f) != AN_OK) continue;
                    if (r == 0 && k == 0 && t == 0 && i == 0) {
                        lenet_zero = f.zero_frac_of_all;
                        lenet_flush1 = f.zero_after_cast_frac_of_all - f.zero_frac_of_all;
                    }
                    repro_csv_row(&c, "%s,%s,%s,%g,%llu,%.6f,%.6f,%.6f,%.6f,%.6f", runs[r],
                                  kind_label(kinds[k]), t == 0 ? "fp16" : "bf16", scales[i],
                                  (unsigned long long)f.count, f.zero_frac_of_all,
                                  f.flushed_frac_of_nonzero, f.subnormal_frac_of_nonzero,
                                  f.overflow_frac_of_nonzero, f.zero_after_cast_frac_of_all);
                }
        }
    if (!repro_csv_close(s, &c)) {
        repro_section_failed(s, "underflow_table.csv");
        return;
    }
    rp_paragraphf(s->rep,
                  "LeNet-5's activation gradients: %.1f%% are exactly zero in fp32 (SSD: %.0f%%), "
                  "and a plain fp16 cast at scale 1 zeroes a further %.2f%% of all values (SSD: "
                  "%.0f%%): %s. Fractions of the nonzero values are named so in the column "
                  "headers.",
                  100 * lenet_zero, 100 * ssd_zero, 100 * lenet_flush1, 100 * ssd_flushed,
                  isnan(lenet_flush1)          ? "not measured"
                  : lenet_flush1 < ssd_flushed ? "fewer than in SSD"
                  : lenet_flush1 > ssd_flushed ? "more than in SSD"
                                               : "as many as in SSD");
    rp_table_csv(s->rep,
                 "Per loss scale: zeros in fp32, and what the cast flushes, makes subnormal "
                 "or overflows (classes decided per binade: precision_stats.h)",
                 "underflow_table.csv");

    /* the MindSpore observation: per layer */
    char f[4096];
    repro_run_file(s, f, sizeof f, "lenet5-o0", REC_HIST_CSV);
    rec_hist_row *rows = NULL;
    size_t n = 0;
    c.ok = false;
    if (rec_read_hist(f, &rows, &n, s->msg, sizeof s->msg) != 0 ||
        !repro_csv_open(s, &c, "layer_zero.csv",
                        "layer,count,zero_frac_of_all,frac_of_all_in_2^-32_to_2^-20")) {
        free(rows);
        repro_section_failed(s, "layer_zero.csv");
        return;
    }
    const char *layers[] = {"conv1", "conv2", "fc1", "fc2", "fc3"};
    for (int l = 0; l < 5; l++) {
        uint64_t total = 0, zero = 0, band = 0;
        for (size_t i = 0; i < n; i++) {
            if (rows[i].kind != REC_ACTIVATION_GRAD || strcmp(rows[i].layer, layers[l]) != 0)
                continue;
            total += rows[i].count;
            if (rows[i].bin == AK_HIST_ZERO) zero += rows[i].count;
            if (rows[i].bin >= AK_HIST_BIN(-32) && rows[i].bin < AK_HIST_BIN(-20))
                band += rows[i].count;
        }
        if (total)
            repro_csv_row(&c, "%s,%llu,%.4f,%.4f", layers[l], (unsigned long long)total,
                          (double)zero / (double)total, (double)band / (double)total);
    }
    free(rows);
    if (!repro_csv_close(s, &c)) {
        repro_section_failed(s, "layer_zero.csv");
        return;
    }
    rp_paragraphf(s->rep,
                  "The MindSpore article's per-layer view (%.0f%% zeros, about %.0f%% in "
                  "[2^-32, 2^-20]) for LeNet-5's activation gradients, the network of that "
                  "article, over all recorded steps:",
                  100 * ms_zero, 100 * ms_band);
    rp_table_csv(s->rep, "Per layer: zeros and the [2^-32, 2^-20) band", "layer_zero.csv");
}
