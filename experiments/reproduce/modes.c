/* modes.c: study 4, the MLP in every precision mode O0-O3: accuracy, skipped
 * steps and time per step. */
#include "reproduce_internal.h"

#include <math.h>
#include <stdio.h>

#include "record.h"
#include "report.h"

void repro_study_modes(repro_study *s)
{
    const repro_plan *p = s->plan;
    rp_section(s->rep, "modes", "Precision modes O0-O3");
    static const struct {
        const char *name, *mode, *dtype, *scale;
    } modes[] = {
        {"mlp-O0", "O0", "fp16", "none"},      {"mlp-O1-fp16", "O1", "fp16", "pytorch"},
        {"mlp-O1-bf16", "O1", "bf16", "none"}, {"mlp-O2-fp16", "O2", "fp16", "pytorch"},
        {"mlp-O2-bf16", "O2", "bf16", "none"}, {"mlp-O3-fp16", "O3", "fp16", "pytorch"},
        {"mlp-O3-bf16", "O3", "bf16", "none"},
    };
    double t0 = NAN, ratio[7];
    repro_csv c = {.ok = false};
    if (!repro_csv_open(s, &c, "modes.csv",
                        "mode,dtype,loss_scale,steps,final_loss,test_accuracy,skipped,"
                        "seconds_per_step,speedup_vs_O0"))
        goto fail;
    for (int i = 0; i < 7; i++) {
        double sec;
        rec_run_summary r;
        if (repro_train(s, modes[i].name, &sec, "net", "mlp", "mode", modes[i].mode, "dtype",
                        modes[i].dtype, "loss-scale", modes[i].scale, "steps", p->mlp_steps,
                        "subset", p->mlp_subset, "stats-every", "0", "hist-every", "0",
                        "trace-every", "0", "seed", "1", NULL) != 0 ||
            repro_summarize(s, modes[i].name, &r) != 0) {
            repro_csv_abort(&c);
            goto fail;
        }
        const double per_step = sec / (double)r.steps;
        if (i == 0) t0 = per_step;
        ratio[i] = per_step / t0;
        repro_csv_row(&c, "%s,%s,%s,%lld,%.5f,%.4f,%lld,%.6f,%.3f", modes[i].mode,
                      i == 0 ? "fp32" : modes[i].dtype, modes[i].scale, (long long)r.steps,
                      r.final_loss, r.test_accuracy, (long long)r.skipped, per_step, t0 / per_step);
    }
    if (!repro_csv_close(s, &c)) goto fail;
    /* the tutorial's times (REFERENCES.md) and their speedups, and ours
     * (modes[3], [5]: O2 and O3 fp16), each ratio computed */
    static const double paddle_fp32 = 2.926, paddle_o1 = 1.294, paddle_o2 = 0.890;
    char literature[256], difference[512];
    snprintf(literature, sizeof literature,
             "The PaddlePaddle AMP tutorial (3 x Linear 4096, batch 512, 250 steps, V100): fp32 "
             "%.3f s, O1 %.3f s (%.2fx), O2 %.3f s (%.2fx).",
             paddle_fp32, paddle_o1, paddle_fp32 / paddle_o1, paddle_o2, paddle_fp32 / paddle_o2);
    snprintf(difference, sizeof difference,
             "Here O2 fp16 took %.2fx and O3 fp16 %.2fx the O0 time per step (speedup_vs_O0 is "
             "the inverse). %s",
             ratio[3], ratio[5],
             ratio[3] >= 1 ? "Low precision cost time here instead of saving it: on the cpu "
                             "backend it is emulated bit for bit in software "
                             "(docs/PERFORMANCE.md); the tutorial's speedups need a GPU "
                             "(--backend cuda)."
                           : "O2 saved time here, as in the tutorial.");
    rp_claim(s->rep,
             "Mixed precision keeps the fp32 result; on hardware with fp16 tensor cores it is "
             "also faster.",
             literature,
             "The table: the MLP on Fashion-MNIST in every mode, same seed and data order; time "
             "per step (including the test-set evaluation) on this report's backend.",
             difference);
    rp_table_csv(s->rep, "Modes: accuracy, skipped steps, time per step", "modes.csv");
    return;
fail:
    repro_section_failed(s, "modes.csv");
}
