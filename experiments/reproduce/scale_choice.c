/* scale_choice.c: study 6, choosing a dynamic scaler's scale_window and
 * scale_factor for one net: the grid replayed over its fp32 gradient trace
 * and its recommendation (analyze/recommend.h), then real O2 fp16 runs at
 * grid points against the replay's prediction of their skipped steps.  For
 * the MLP (scalers.c) and for the deep MLP, the net where underflow bites
 * (its trace from the loss-scaling study's fp32 seed-1 run). */
#include "reproduce_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "record.h"
#include "recommend.h"
#include "replay.h"
#include "report.h"

/* the runs' initial scale and the agreement asked of the replay */
static const char init_scale[] = "65536";
static const double tolerance = 0.2;

/* prefix + name (+ ".csv" when csv) in buf. */
static const char *named(char *buf, size_t len, const repro_scale_net *n, const char *name,
                         bool csv)
{
    snprintf(buf, len, "%s%s%s", n->prefix, name, csv ? ".csv" : "");
    return buf;
}

/* The grid's heatmaps and table. */
static void grid_figures(repro_study *s, const repro_scale_net *n, const an_recommendation *rec)
{
    char f1[128], f2[128], c1[128], c2[128], grid[128];
    repro_csv hm1 = {.ok = false}, hm2 = {.ok = false};
    if (repro_csv_open(s, &hm1, named(c1, sizeof c1, n, "grid_underflow", true), "x,y,value") &&
        repro_csv_open(s, &hm2, named(c2, sizeof c2, n, "grid_skips", true), "x,y,value")) {
        for (size_t i = 0; i < rec->n; i++) {
            repro_csv_row(&hm1, "%d,%g,%.4f", (int)rec->points[i].window, rec->points[i].factor,
                          100 * rec->points[i].r.mean_underflow_frac);
            repro_csv_row(&hm2, "%d,%g,%.3f", (int)rec->points[i].window, rec->points[i].factor,
                          100 * rec->points[i].r.skip_frac);
        }
    }
    const bool hm_ok = repro_csv_close(s, &hm1);
    if (!repro_csv_close(s, &hm2) || !hm_ok) {
        repro_section_failed(s, "the grid heatmaps' CSV");
        return;
    }
    const char *h1[] = {"title=Mean underflow (% of nonzero gradients flushed) at the scale held",
                        "xlabel=scale_window", "ylabel=scale_factor", "cblabel=%", NULL};
    rp_figure(s->rep, "heatmap.gp", named(f1, sizeof f1, n, "grid_underflow", false),
              "Underflow over the grid", h1);
    const char *h2[] = {"title=Skipped steps (% of steps)", "xlabel=scale_window",
                        "ylabel=scale_factor", "cblabel=%", NULL};
    rp_figure(s->rep, "heatmap.gp", named(f2, sizeof f2, n, "grid_skips", false),
              "Skipped steps over the grid", h2);
    rp_table_csv(s->rep, "The grid (chosen = 1)",
                 named(grid, sizeof grid, n, "recommend_grid", true));
}

/* Trains runs/<net>-O2-f<F>-w<W>: net, O2 fp16 with dynamic scaling from
 * init_scale, then the net's options, no statistics. */
static int train_point(repro_study *s, const repro_scale_net *n, const repro_scale_points *pt,
                       const char *name)
{
    const char *pairs[REPRO_MAX_PAIRS * 2 + 1];
    const char *head[] = {"net",          n->net,       "mode",         "O2",         "dtype",
                          "fp16",         "loss-scale", "dynamic",      "init-scale", init_scale,
                          "scale-factor", pt->factor,   "scale-window", pt->window};
    const char *tail[] = {"stats-every", "0", "hist-every", "0", "trace-every", "0", "seed", "1"};
    size_t k = 0;
    for (size_t i = 0; i < sizeof head / sizeof *head; i++)
        pairs[k++] = head[i];
    for (size_t i = 0; n->train[i] && k + 2 + 8 <= REPRO_MAX_PAIRS * 2; i += 2) {
        pairs[k++] = n->train[i];
        pairs[k++] = n->train[i + 1];
    }
    for (size_t i = 0; i < sizeof tail / sizeof *tail; i++)
        pairs[k++] = tail[i];
    pairs[k] = NULL;
    return repro_train_pairs(s, name, NULL, pairs);
}

/* Real O2 fp16 runs at the net's points against the replay's prediction. */
static void validate(repro_study *s, const an_trace *t, const ak_scaler_config *base,
                     const repro_scale_net *n)
{
    char csv[128], fig[128];
    repro_csv v = {.ok = false};
    if (!repro_csv_open(s, &v, named(csv, sizeof csv, n, "validation", true),
                        "predicted,measured,label,factor,window,within_20pct")) {
        repro_section_failed(s, csv);
        return;
    }
    int within = 0, total = 0;
    for (size_t i = 0; i < n->n_points; i++) {
        const repro_scale_points *pt = &n->points[i];
        char name[64];
        snprintf(name, sizeof name, "%s-O2-f%s-w%s", n->net, pt->factor, pt->window);
        rec_run_summary r;
        if (train_point(s, n, pt, name) != 0 || repro_summarize(s, name, &r) != 0) {
            repro_csv_abort(&v);
            break;
        }
        ak_scaler_config cfg = *base;
        cfg.init_scale = (float)atof(init_scale);
        cfg.growth_factor = (float)atof(pt->factor);
        cfg.backoff_factor = 1.0f / cfg.growth_factor;
        cfg.window = atoi(pt->window);
        an_replay_result res;
        if (an_replay(t, &cfg, FPE_FMT_F16, &res, NULL, NULL, s->msg, sizeof s->msg) != AN_OK) {
            repro_csv_abort(&v);
            break;
        }
        const double pred = (double)res.skipped_steps, meas = (double)r.skipped;
        const bool agrees = meas == 0 ? pred == 0 : fabs(pred - meas) <= tolerance * meas;
        within += agrees;
        total++;
        repro_csv_row(&v, "%g,%g,f%s w%s,%s,%s,%d", pred, meas, pt->factor, pt->window, pt->factor,
                      pt->window, agrees);
    }
    if (!repro_csv_close(s, &v)) {
        repro_section_failed(s, csv);
        return;
    }
    rp_paragraphf(s->rep,
                  "Validation: real O2 fp16 runs of %s at %d grid points (initial scale %s), their "
                  "skipped steps against the replay's prediction from the fp32 trace: %d of %d "
                  "within +-%.0f%%.",
                  n->label, total, init_scale, within, total, 100 * tolerance);
    const char *vv[] = {"title=Skipped steps: replay prediction against O2 training", NULL};
    rp_figure(s->rep, "scatter.gp", named(fig, sizeof fig, n, "validation", false),
              "Predicted against measured skips", vv);
    rp_table_csv(s->rep, "Validation runs", csv);
    if (within < total)
        rp_paragraphf(s->rep,
                      "NOT REPRODUCED: %d of %d grid points fall outside +-%.0f%% (see the "
                      "table); the replay's assumption that fp16 training sees the fp32 "
                      "run's gradients does not hold closely enough there.",
                      total - within, total, 100 * tolerance);
}

void repro_scale_choice(repro_study *s, const an_trace *t, const repro_scale_net *n)
{
    rp_section(s->rep, n->id, n->title);
    char why[512], grid[128], path[4096];
    ak_scaler_config base;
    ak_scaler_preset("pytorch", &base, why, sizeof why);
    an_grid g = an_grid_default();
    an_recommendation rec;
    repro_path(s, path, sizeof path, named(grid, sizeof grid, n, "recommend_grid", true), NULL);
    if (an_recommend(t, &base, FPE_FMT_F16, &g, &rec, s->msg, sizeof s->msg) != AN_OK ||
        an_recommendation_write_csv(&rec, path, s->msg, sizeof s->msg) != AN_OK) {
        repro_section_failed(s, grid);
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
    grid_figures(s, n, &rec);
    validate(s, t, &base, n);
    an_recommendation_free(&rec);
}

/* The deep MLP: its fp32 seed-1 run's trace, validated by runs of the
 * loss-scaling study's sizes. */
void repro_study_deep_scale_choice(repro_study *s)
{
    const repro_plan *p = s->plan;
    static const repro_scale_points points[] = {{"2", "10"}, {"2", "50"}, {"4", "20"}};
    const char *const train[] = {"optimizer", REPRO_DEEP_OPTIMIZER, "lr",    REPRO_DEEP_LR,
                                 "batch",     REPRO_DEEP_BATCH,     "steps", p->deep_steps,
                                 "subset",    p->deep_subset,       NULL};
    const repro_scale_net deep = {
        .id = "choose-deepmlp",
        .title = "Choosing scale_window and scale_factor where underflow bites: the deep MLP",
        .label = "the deep MLP",
        .net = "deepmlp",
        .prefix = "deepmlp_",
        .train = train,
        .points = points,
        .n_points = sizeof points / sizeof *points,
    };
    char run[64], dir[4096];
    repro_deep_run_name(run, sizeof run, 0, 1);
    repro_path(s, dir, sizeof dir, "runs", run);
    an_trace t;
    if (repro_train_deep(s, 0, 1) != 0 || an_trace_load(dir, &t, s->msg, sizeof s->msg) != AN_OK) {
        rp_section(s->rep, deep.id, deep.title);
        repro_section_failed(s, "the deep MLP's gradient trace");
        return;
    }
    repro_scale_choice(s, &t, &deep);
    an_trace_free(&t);
}
