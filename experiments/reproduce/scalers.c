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

    /* 6. the grid and the recommendation */
    rp_section(s->rep, "choose", "Choosing scale_window and scale_factor");
    ak_scaler_config base;
    ak_scaler_preset("pytorch", &base, why, sizeof why);
    an_grid g = an_grid_default();
    an_recommendation rec;
    char path[4096];
    repro_path(s, path, sizeof path, "recommend_grid.csv", NULL);
    if (an_recommend(&t, &base, FPE_FMT_F16, &g, &rec, s->msg, sizeof s->msg) != AN_OK ||
        an_recommendation_write_csv(&rec, path, s->msg, sizeof s->msg) != AN_OK) {
        an_trace_free(&t);
        repro_section_failed(s, "recommend_grid.csv");
        return;
    }
    rp_claim(s->rep,
             "A scaler should hold the largest scale that does not overflow, and skip few steps: "
             "a short window retries growth often and pays in skipped steps, a long one holds a "
             "lower scale than it could and pays in underflow.",
             "Micikevicius et al. 2018: choose S with S max|g| < 65504 and skip the steps that "
             "overflow; the frameworks default to factor 2 and windows of 1000-2000.",
             rec.reason,
             "The recommendation is for this network and trace; `ampscope recommend RUN_DIR` "
             "gives one for any run recorded with a trace.");
    repro_csv hm1 = {.ok = false}, hm2 = {.ok = false};
    if (repro_csv_open(s, &hm1, "grid_underflow.csv", "x,y,value") &&
        repro_csv_open(s, &hm2, "grid_skips.csv", "x,y,value")) {
        for (size_t i = 0; i < rec.n; i++) {
            repro_csv_row(&hm1, "%d,%g,%.4f", (int)rec.points[i].window, rec.points[i].factor,
                          100 * rec.points[i].r.mean_underflow_frac);
            repro_csv_row(&hm2, "%d,%g,%.3f", (int)rec.points[i].window, rec.points[i].factor,
                          100 * rec.points[i].r.skip_frac);
        }
    }
    const bool hm_ok = repro_csv_close(s, &hm1);
    if (!repro_csv_close(s, &hm2) || !hm_ok) {
        repro_section_failed(s, "the grid heatmaps' CSV");
    } else {
        const char *h1[] = {
            "title=Mean underflow (% of nonzero gradients flushed) at the scale held",
            "xlabel=scale_window", "ylabel=scale_factor", "cblabel=%", NULL};
        rp_figure(s->rep, "heatmap.gp", "grid_underflow", "Underflow over the grid", h1);
        const char *h2[] = {"title=Skipped steps (% of steps)", "xlabel=scale_window",
                            "ylabel=scale_factor", "cblabel=%", NULL};
        rp_figure(s->rep, "heatmap.gp", "grid_skips", "Skipped steps over the grid", h2);
        rp_table_csv(s->rep, "The grid (chosen = 1)", "recommend_grid.csv");
    }

    /* validation: real O2 fp16 runs at grid points against the replay's prediction */
    static const struct {
        const char *factor, *window;
    } pts[] = {{"2", "10"}, {"2", "50"}, {"4", "20"}, {"8", "100"}};
    repro_csv v = {.ok = false};
    if (!repro_csv_open(s, &v, "validation.csv",
                        "predicted,measured,label,factor,window,within_20pct")) {
        an_recommendation_free(&rec);
        an_trace_free(&t);
        repro_section_failed(s, "validation.csv");
        return;
    }
    /* the runs' initial scale and the agreement asked of the replay */
    static const char init_scale[] = "65536";
    static const double tolerance = 0.2;
    int within = 0, total = 0;
    for (int i = 0; i < 4; i++) {
        char name[64];
        snprintf(name, sizeof name, "mlp-O2-f%s-w%s", pts[i].factor, pts[i].window);
        rec_run_summary r;
        if (repro_train(s, name, NULL, "net", "mlp", "mode", "O2", "dtype", "fp16", "loss-scale",
                        "dynamic", "init-scale", init_scale, "scale-factor", pts[i].factor,
                        "scale-window", pts[i].window, "steps", p->mlp_steps, "subset",
                        p->mlp_subset, "stats-every", "0", "hist-every", "0", "trace-every", "0",
                        "seed", "1", NULL) != 0 ||
            repro_summarize(s, name, &r) != 0) {
            repro_csv_abort(&v);
            break;
        }
        ak_scaler_config cfg = base;
        cfg.init_scale = (float)atof(init_scale);
        cfg.growth_factor = (float)atof(pts[i].factor);
        cfg.backoff_factor = 1.0f / cfg.growth_factor;
        cfg.window = atoi(pts[i].window);
        an_replay_result res;
        if (an_replay(&t, &cfg, FPE_FMT_F16, &res, NULL, NULL, s->msg, sizeof s->msg) != AN_OK) {
            repro_csv_abort(&v);
            break;
        }
        const double pred = (double)res.skipped_steps, meas = (double)r.skipped;
        const bool agrees = meas == 0 ? pred == 0 : fabs(pred - meas) <= tolerance * meas;
        within += agrees;
        total++;
        repro_csv_row(&v, "%g,%g,f%s w%s,%s,%s,%d", pred, meas, pts[i].factor, pts[i].window,
                      pts[i].factor, pts[i].window, agrees);
    }
    if (!repro_csv_close(s, &v)) {
        repro_section_failed(s, "validation.csv");
    } else {
        rp_paragraphf(s->rep,
                      "Validation: real O2 fp16 runs of the MLP at %d grid points (initial scale "
                      "%s), their skipped steps against the replay's prediction from the fp32 "
                      "trace: %d of %d within +-%.0f%%.",
                      total, init_scale, within, total, 100 * tolerance);
        const char *vv[] = {"title=Skipped steps: replay prediction against O2 training", NULL};
        rp_figure(s->rep, "scatter.gp", "validation", "Predicted against measured skips", vv);
        rp_table_csv(s->rep, "Validation runs", "validation.csv");
        if (within < total)
            rp_paragraphf(s->rep,
                          "NOT REPRODUCED: %d of %d grid points fall outside +-%.0f%% (see the "
                          "table); the replay's assumption that fp16 training sees the fp32 "
                          "run's gradients does not hold closely enough there.",
                          total - within, total, 100 * tolerance);
    }
    an_recommendation_free(&rec);
    an_trace_free(&t);
}
