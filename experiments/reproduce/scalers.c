/* scalers.c: studies 5 and 6, the frameworks' loss scalers replayed on the
 * MLP's fp32 trace, the factor x window grid and its recommendation, and
 * the validation against real O2 fp16 runs. */
#include "reproduce_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "record.h"
#include "recommend.h"
#include "replay.h"
#include "report.h"

/* The MLP's scale choice: its grid over the trace above, validated by O2
 * runs of the study's MLP sizes. */
static const repro_scale_points mlp_points[] = {
    {"2", "10"}, {"2", "50"}, {"4", "20"}, {"8", "100"}};

static const char *const presets[] = {"pytorch", "apex",      "mindspore-manager", "mindspore-amp",
                                      "paddle",  "deepspeed", "megatron",          "keras"};

void repro_study_scalers(repro_study *s)
{
    const repro_plan *p = s->plan;
    rp_section(s->rep, "scalers", "Loss scalers of seven frameworks on one trace");
    char dir[4096], why[512];
    repro_path(s, dir, sizeof dir, "runs", "mlp-o0");
    an_trace t;
    if (repro_train_mlp_o0(s) != 0 || an_trace_load(dir, &t, s->msg, sizeof s->msg) != AN_OK) {
        repro_section_failed(s, "the MLP's gradient trace");
        return;
    }
    rp_claim(s->rep,
             "The frameworks' dynamic loss scalers differ in their start, window and hysteresis, "
             "so on the same gradients they hold different scales and skip different steps.",
             "Each framework's rule from its source (REFERENCES.md): PyTorch, Apex, Paddle and "
             "Keras start at 2^16 or 2^15 with windows of 2000; MindSpore's manager at 2^24; "
             "DeepSpeed and Megatron use hysteresis 2 and windows of 1000 (Megatron starts at "
             "2^32).",
             "Every preset replayed (analyze/replay.h, the training rule itself) over the MLP's "
             "fp32 gradient trace, for fp16.",
             "A replay predicts overflow from max |g| times the scale, assuming fp16 training "
             "would see the fp32 run's gradients; the validation below checks that assumption.");
    repro_csv c = {.ok = false}, tab = {.ok = false};
    double *scales = malloc(t.n * sizeof *scales);
    uint8_t *skipped = malloc(t.n);
    if (!scales || !skipped || !repro_csv_open(s, &c, "scalers.csv", "step,scale,skipped,series") ||
        !repro_csv_open(s, &tab, "scalers_table.csv",
                        "preset,init_scale,window,hysteresis,overflow_steps,skipped_steps,"
                        "mean_underflow_frac,steps_below_best,final_scale")) {
        free(scales);
        free(skipped);
        repro_csv_abort(&c);
        an_trace_free(&t);
        repro_section_failed(s, "scalers.csv");
        return;
    }
    for (size_t k = 0; k < sizeof presets / sizeof *presets; k++) {
        ak_scaler_config cfg;
        an_replay_result res;
        if (ak_scaler_preset(presets[k], &cfg, why, sizeof why) != 0 ||
            an_replay(&t, &cfg, FPE_FMT_F16, &res, scales, skipped, s->msg, sizeof s->msg) != AN_OK)
            continue;
        for (size_t i = 0; i < t.n; i++)
            repro_csv_row(&c, "%lld,%.9g,%d,%s", (long long)t.steps[i].step, scales[i], skipped[i],
                          presets[k]);
        repro_csv_row(&tab, "%s,%g,%d,%d,%lld,%lld,%.6f,%lld,%g", presets[k], cfg.init_scale,
                      (int)cfg.window, (int)cfg.hysteresis, (long long)res.overflow_steps,
                      (long long)res.skipped_steps, res.mean_underflow_frac,
                      (long long)res.steps_below_best, res.final_scale);
    }
    free(scales);
    free(skipped);
    const bool ok1 = repro_csv_close(s, &c), ok = repro_csv_close(s, &tab) && ok1;
    if (!ok) {
        an_trace_free(&t);
        repro_section_failed(s, "scalers.csv");
        return;
    }
    const char *sv[] = {"title=Loss scale held by each preset (replayed), skips marked", NULL};
    rp_figure(s->rep, "scale.gp", "scalers", "Scale trajectories of the presets on one trace", sv);
    rp_table_csv(s->rep, "Per preset, over the trace", "scalers_table.csv");

    /* 6. the grid, its recommendation and the validation against real runs */
    const char *const train[] = {"steps", p->mlp_steps, "subset", p->mlp_subset, NULL};
    const repro_scale_net mlp = {.id = "choose",
                                 .title = "Choosing scale_window and scale_factor",
                                 .label = "the MLP",
                                 .net = "mlp",
                                 .prefix = "",
                                 .train = train,
                                 .points = mlp_points,
                                 .n_points = sizeof mlp_points / sizeof *mlp_points};
    repro_scale_choice(s, &t, &mlp);
    an_trace_free(&t);
}
