/* test_recommend: the grid (default, parsing and its errors), the choice
 * over a hand-made trace whose right answer is worked out by hand, the
 * fallback when no point meets the skip limit, ties, and the CSV. */
#define _XOPEN_SOURCE 700 /* mkdtemp */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic_file.h"
#include "check_main.h"
#include "loss_scale.h"
#include "recommend.h"
#include "scratch.h"

#define BIN(e) AK_HIST_BIN(e)
#define ASSERT_MSG(msg, part)                                                                      \
    ck_assert_msg(strstr((msg), (part)) != NULL, "'%s' lacks '%s'", (msg), (part))

/* ---- the grid ---------------------------------------------------------------------------- */
START_TEST(grid_default)
{
    const an_grid g = an_grid_default();
    ck_assert_uint_eq(g.n_factors, 3);
    ck_assert(g.factors[0] == 2 && g.factors[1] == 4 && g.factors[2] == 8);
    ck_assert_uint_eq(g.n_windows, 8);
    const int32_t w[8] = {10, 20, 50, 100, 200, 500, 1000, 2000};
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(g.windows[i], w[i]);
    ck_assert(g.max_skip_frac == 0.01);
}
END_TEST

START_TEST(grid_parse)
{
    char msg[512];
    an_grid g = an_grid_default();
    ck_assert_int_eq(
        an_grid_parse("factors=2,4,8;windows=100,1000;max-skip=0.02", &g, msg, sizeof msg), AN_OK);
    ck_assert_uint_eq(g.n_factors, 3);
    ck_assert_uint_eq(g.n_windows, 2);
    ck_assert(g.windows[0] == 100 && g.windows[1] == 1000);
    ck_assert(g.max_skip_frac == 0.02);
    /* any subset, any order: the rest stays */
    ck_assert_int_eq(an_grid_parse("max-skip=0;windows=7", &g, msg, sizeof msg), AN_OK);
    ck_assert(g.max_skip_frac == 0 && g.n_windows == 1 && g.windows[0] == 7);
    ck_assert_uint_eq(g.n_factors, 3);
    ck_assert_int_eq(an_grid_parse("factors=1.5", &g, msg, sizeof msg), AN_OK);
    ck_assert(g.n_factors == 1 && g.factors[0] == 1.5);
    ck_assert_int_eq(an_grid_parse("", &g, msg, sizeof msg), AN_OK);
    ck_assert(g.n_factors == 1 && g.n_windows == 1);
    ck_assert_int_eq(an_grid_parse("max-skip=1", &g, msg, sizeof msg), AN_OK);
}
END_TEST

static void expect_parse_error(const char *spec, const char *part)
{
    char msg[512] = "";
    an_grid g = an_grid_default();
    const an_grid before = g;
    ck_assert_int_eq(an_grid_parse(spec, &g, msg, sizeof msg), AN_EINVAL);
    ASSERT_MSG(msg, part);
    ck_assert_int_eq(memcmp(&g, &before, sizeof g), 0); /* untouched */
}

START_TEST(grid_parse_errors)
{
    expect_parse_error("factor=2", "grid 'factor=2': unknown key 'factor' (expected factors, "
                                   "windows or max-skip)");
    expect_parse_error("factors", "grid 'factors': 'factors' is not KEY=VALUES");
    expect_parse_error("windows=5;", "'' is not KEY=VALUES");
    expect_parse_error("factors=1", "factors: '1' is not a number > 1");
    expect_parse_error("factors=2,x,4", "factors: 'x' is not a number > 1");
    expect_parse_error("factors=0.5", "'0.5' is not a number > 1");
    expect_parse_error("factors=inf", "'inf' is not a number > 1");
    expect_parse_error("factors=1e39", "'1e39' is not a number > 1 (finite as an fp32)");
    expect_parse_error("factors=1.00000001", "'1.00000001' is not"); /* 1 as an fp32 */
    expect_parse_error("factors= 2", "' 2' is not");
    expect_parse_error("factors=", "factors has no values");
    expect_parse_error("factors=2,,4", "factors: an empty value");
    expect_parse_error("factors=2,", "an empty value");
    expect_parse_error("factors=2,4,2", "factors: '2' appears twice");
    expect_parse_error("windows=0", "windows: '0' is not an integer in [1, 2147483647]");
    expect_parse_error("windows=1.5", "'1.5' is not an integer");
    expect_parse_error("windows=-3", "'-3' is not an integer");
    expect_parse_error("windows=2147483648", "'2147483648' is not an integer");
    expect_parse_error("windows=10,10", "windows: '10' appears twice");
    expect_parse_error("max-skip=2", "max-skip: '2' is not a fraction in [0, 1]");
    expect_parse_error("max-skip=nan", "'nan' is not a fraction");
    expect_parse_error("max-skip=", "'' is not a fraction");
    expect_parse_error("factors=2;windows=5;factors=4", "factors given twice");
    /* at most AN_GRID_MAX values */
    char spec[1024] = "windows=1";
    for (int w = 2; w <= AN_GRID_MAX + 1; w++)
        snprintf(spec + strlen(spec), sizeof spec - strlen(spec), ",%d", w);
    expect_parse_error(spec, "windows has more than 64 values");
    spec[strlen(spec) - 3] = '\0'; /* drop ",65": 64 values */
    an_grid g = an_grid_default();
    char msg[256];
    ck_assert_int_eq(an_grid_parse(spec, &g, msg, sizeof msg), AN_OK);
    ck_assert_uint_eq(g.n_windows, 64);
    ck_assert_int_eq(an_grid_parse(NULL, &g, msg, sizeof msg), AN_EINVAL);
    ck_assert_int_eq(an_grid_parse("", NULL, msg, sizeof msg), AN_EINVAL);
}
END_TEST

/* ---- the choice -------------------------------------------------------------------------- */
/* 100 steps of steady gradients: amax 0.5 (fp16: overflows at k >= 17, so
 * the best scale is 2^16 at every step) and one value in each of the
 * binades -41, -38, -35, -30 (flushed at k <= 15, 12, 9, 4) plus one in -1:
 * 5 nonzero.  Underflow at the scale 2^k: 2/5 for k = 10..12 (-41, -38),
 * 1/5 for k = 13..15, 0 at 16. */
static an_trace steady_trace(void)
{
    an_trace t = {calloc(100, sizeof(an_trace_step)), 100};
    ck_assert_ptr_nonnull(t.steps);
    for (int i = 0; i < 100; i++) {
        an_trace_step *s = &t.steps[i];
        s->step = i;
        s->recorded_scale = 1.0;
        s->amax = 0.5;
        s->count = 6;
        s->zero = 1;
        s->hist[AK_HIST_ZERO] = 1;
        s->hist[BIN(-41)] = s->hist[BIN(-38)] = s->hist[BIN(-35)] = s->hist[BIN(-30)] = 1;
        s->hist[BIN(-1)] = 1;
    }
    return t;
}

/* PyTorch's rule from 2^10.  Per grid point (k = log2 of the scale held):
 *   F 2, W 5:  k = 10 + i/5 to step 34 (16 at 30-34); 17 at 35: overflow,
 *              back to 16; then every 6th step overflows: 35, 41, ..., 95:
 *              11 skips.  Underflow: 15 steps x 2/5 + 15 x 1/5 = 9 over 89
 *              clean steps.  Below 16: 30 steps.
 *   F 2, W 10: k = 10 + i/10 to step 69; overflows at 70, 81, 92: 3 skips.
 *              Underflow (30 x 2/5 + 30 x 1/5) / 97 = 18/97.  Below: 60.
 *   F 2, W 20: k = 10 .. 14, 20 steps each: no overflow.  Underflow
 *              (60 x 2/5 + 40 x 1/5) / 100 = 0.32.  Below: 100.
 *   F 4, W 5:  k = 10, 12, 14, 16 (5 steps each), 18 at 20: overflow, back
 *              to 16; every 6th step: 20, 26, ..., 98: 14 skips.  Underflow
 *              (5 x 2/5 + 5 x 2/5 + 5 x 1/5) / 86 = 5/86.  Below: 15.
 *   F 4, W 10: 10, 12, 14, 16 (10 each); overflows 40, 51, 62, 73, 84, 95:
 *              6.  Underflow (10 x 2/5 x 2 + 10 x 1/5) / 94 = 10/94.
 *              Below: 30.
 *   F 4, W 20: 10, 12, 14, 16 (20 each); one overflow at 80.  Underflow
 *              (20 x 2/5 x 2 + 20 x 1/5) / 99 = 20/99.  Below: 60.
 * With at most 5% skips, (2, 10), (2, 20) and (4, 20) remain; (2, 10)
 * flushes the least: the short window 5 would flush less but wastes
 * 11-14% of the steps; the long window 20 holds too low a scale. */
typedef struct point_expect {
    double factor;
    int32_t window;
    int64_t skips, below;
    double underflow, log2_below, final_scale;
} point_expect;

static const point_expect steady[6] = {
    {2, 5, 11, 30, 9.0 / 89, 105.0 / 100, 0x1p16},  {2, 10, 3, 60, 18.0 / 97, 210.0 / 100, 0x1p16},
    {2, 20, 0, 100, 0.32, 400.0 / 100, 0x1p14},     {4, 5, 14, 15, 5.0 / 86, 60.0 / 100, 0x1p16},
    {4, 10, 6, 30, 10.0 / 94, 120.0 / 100, 0x1p16}, {4, 20, 1, 60, 20.0 / 99, 240.0 / 100, 0x1p16},
};
/* log2 below: F 2: (6+5+4+3+2+1) x (W steps at each k) / 100: W 5: 105, W 10: 210;
 * W 20: (6+5+4+3+2) x 20 = 400.  F 4: (6+4+2) x W: 60, 120, 240. */

static ak_scaler_config base_policy(void)
{
    ak_scaler_config cfg;
    ck_assert_int_eq(ak_scaler_preset("pytorch", &cfg, NULL, 0), 0);
    cfg.init_scale = 1024.0f;
    return cfg;
}

static an_grid small_grid(double max_skip)
{
    an_grid g = an_grid_default();
    g.n_factors = 2;
    g.factors[0] = 2;
    g.factors[1] = 4;
    g.n_windows = 3;
    g.windows[0] = 5;
    g.windows[1] = 10;
    g.windows[2] = 20;
    g.max_skip_frac = max_skip;
    return g;
}

START_TEST(recommend_steady)
{
    an_trace t = steady_trace();
    const ak_scaler_config policy = base_policy();
    const an_grid g = small_grid(0.05);
    an_recommendation rec;
    char msg[512];
    ck_assert_msg(an_recommend(&t, &policy, FPE_FMT_F16, &g, &rec, msg, sizeof msg) == AN_OK, "%s",
                  msg);
    ck_assert_uint_eq(rec.n, 6);
    for (size_t i = 0; i < 6; i++) {
        const an_grid_point *p = &rec.points[i];
        const point_expect *e = &steady[i];
        ck_assert_msg(p->factor == e->factor && p->window == e->window, "point %zu order", i);
        ck_assert_int_eq(p->r.steps, 100);
        ck_assert_msg(p->r.skipped_steps == e->skips, "point %zu: %lld skips", i,
                      (long long)p->r.skipped_steps);
        ck_assert_int_eq(p->r.overflow_steps, e->skips);
        ck_assert_int_eq(p->r.steps_below_best, e->below);
        ck_assert_double_eq_tol(p->r.mean_underflow_frac, e->underflow, 1e-12);
        ck_assert_double_eq_tol(p->r.mean_log2_below_best, e->log2_below, 1e-12);
        ck_assert(p->r.final_scale == e->final_scale);
    }
    ck_assert_uint_eq(rec.best, 1);
    ck_assert_str_eq(rec.reason,
                     "factor 2, window 10: 3 of 100 steps skipped (3%, within the 5% allowed); "
                     "mean underflow 18.6% of nonzero gradients at the scale held; 60 steps "
                     "below the best power-of-two scale. Of the 3 of 6 grid points within the "
                     "skip limit it has the lowest underflow (next: factor 4, window 20 at "
                     "20.2%).");
    an_recommendation_free(&rec);
    an_recommendation_free(&rec); /* harmless twice */

    /* at most 2% skips: (2, 20) and (4, 20) remain, and (4, 20) flushes less */
    const an_grid g2 = small_grid(0.02);
    ck_assert_int_eq(an_recommend(&t, &policy, FPE_FMT_F16, &g2, &rec, msg, sizeof msg), AN_OK);
    ck_assert_uint_eq(rec.best, 5);
    ASSERT_MSG(rec.reason, "(next: factor 2, window 20 at 32%)");
    an_recommendation_free(&rec);

    /* no skips at all: (2, 20) is the only one */
    const an_grid g0 = small_grid(0.0);
    ck_assert_int_eq(an_recommend(&t, &policy, FPE_FMT_F16, &g0, &rec, msg, sizeof msg), AN_OK);
    ck_assert_uint_eq(rec.best, 2);
    ASSERT_MSG(rec.reason, "It is the only one of the 6 grid points within the skip limit.");
    an_recommendation_free(&rec);
    an_trace_free(&t);
}
END_TEST

/* No window of {5, 10} keeps skips at 0: the fewest skips win, (2, 10)
 * with 3 (then (4, 10) 6, (2, 5) 11, (4, 5) 14). */
START_TEST(recommend_fallback)
{
    an_trace t = steady_trace();
    const ak_scaler_config policy = base_policy();
    an_grid g = small_grid(0.0);
    g.n_windows = 2;
    an_recommendation rec;
    char msg[512];
    ck_assert_int_eq(an_recommend(&t, &policy, FPE_FMT_F16, &g, &rec, msg, sizeof msg), AN_OK);
    ck_assert_uint_eq(rec.n, 4);
    ck_assert_uint_eq(rec.best, 1);
    ck_assert(rec.points[1].factor == 2 && rec.points[1].window == 10);
    ck_assert_str_eq(rec.reason,
                     "No grid point kept skips within 0% of the steps. The fewest: factor 2, "
                     "window 10, 3 of 100 steps skipped (3%); mean underflow 18.6% of nonzero "
                     "gradients at the scale held; 60 steps below the best power-of-two scale. "
                     "Try longer windows, or allow more skips.");
    an_recommendation_free(&rec);
    an_trace_free(&t);
}
END_TEST

/* Gradients that are all zero: every point ties on every measure; the
 * larger window, then the smaller factor, decide. */
START_TEST(recommend_ties)
{
    an_trace t = {calloc(10, sizeof(an_trace_step)), 10};
    for (int i = 0; i < 10; i++) {
        t.steps[i].step = i;
        t.steps[i].recorded_scale = 1;
        t.steps[i].count = t.steps[i].zero = t.steps[i].hist[AK_HIST_ZERO] = 3;
    }
    const ak_scaler_config policy = base_policy();
    an_grid g = small_grid(0.01);
    g.factors[0] = 4;
    g.factors[1] = 2;
    g.n_windows = 2;
    g.windows[0] = 10;
    g.windows[1] = 20;
    an_recommendation rec;
    char msg[512];
    ck_assert_int_eq(an_recommend(&t, &policy, FPE_FMT_F16, &g, &rec, msg, sizeof msg), AN_OK);
    ck_assert_uint_eq(rec.best, 3); /* (4,10) (4,20) (2,10) (2,20) */
    ASSERT_MSG(rec.reason, "it ties on every measure with factor 4, window 20; the larger window, "
                           "then the smaller factor, decides.");
    ck_assert(rec.points[3].r.mean_underflow_frac == 0);
    an_recommendation_free(&rec);
    an_trace_free(&t);
}
END_TEST

START_TEST(recommend_rejects)
{
    an_trace t = steady_trace();
    ak_scaler_config policy = base_policy();
    an_grid g = small_grid(0.05);
    an_recommendation rec;
    char msg[512];
    ck_assert_int_eq(an_recommend(&t, &policy, FPE_FMT_F16, &g, NULL, msg, sizeof msg), AN_EINVAL);
    ck_assert_int_eq(an_recommend(NULL, &policy, FPE_FMT_F16, &g, &rec, msg, sizeof msg),
                     AN_EINVAL);
    ASSERT_MSG(msg, "trace, policy or grid is NULL");
    ck_assert_ptr_null(rec.points);
    ck_assert_int_eq(an_recommend(&t, &policy, FPE_FMT_F16, NULL, &rec, msg, sizeof msg),
                     AN_EINVAL);
    ck_assert_int_eq(ak_scaler_preset("fixed", &policy, NULL, 0), 0);
    ck_assert_int_eq(an_recommend(&t, &policy, FPE_FMT_F16, &g, &rec, msg, sizeof msg), AN_EINVAL);
    ASSERT_MSG(msg, "the base policy is fixed, not dynamic");
    policy = base_policy();
    g.n_factors = 0;
    ck_assert_int_eq(an_recommend(&t, &policy, FPE_FMT_F16, &g, &rec, msg, sizeof msg), AN_EINVAL);
    ASSERT_MSG(msg, "the grid has 0 factors and 3 windows");
    g = small_grid(0.05);
    g.factors[1] = 1.0;
    ck_assert_int_eq(an_recommend(&t, &policy, FPE_FMT_F16, &g, &rec, msg, sizeof msg), AN_EINVAL);
    ASSERT_MSG(msg, "factor 1 is not > 1");
    g = small_grid(0.05);
    g.windows[2] = 0;
    ck_assert_int_eq(an_recommend(&t, &policy, FPE_FMT_F16, &g, &rec, msg, sizeof msg), AN_EINVAL);
    ASSERT_MSG(msg, "window 0 is not >= 1");
    g = small_grid(NAN);
    ck_assert_int_eq(an_recommend(&t, &policy, FPE_FMT_F16, &g, &rec, msg, sizeof msg), AN_EINVAL);
    ASSERT_MSG(msg, "max_skip_frac nan");
    /* a replay that fails names the point */
    g = small_grid(0.05);
    policy.hysteresis = 2;
    ck_assert_int_eq(an_recommend(&t, &policy, FPE_FMT_F16, &g, &rec, msg, sizeof msg), AN_EINVAL);
    ASSERT_MSG(msg, "an_recommend: factor 2, window 5: an_replay: --hysteresis 2");
    ck_assert_ptr_null(rec.points);
    policy = base_policy();
    ck_assert_int_eq(an_recommend(&t, &policy, (fpe_format_id)9, &g, &rec, msg, sizeof msg),
                     AN_EINVAL);
    ASSERT_MSG(msg, "target format 9");
    an_trace_free(&t);
}
END_TEST

/* ---- the CSV ------------------------------------------------------------------------------- */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = calloc(1, 1 << 16);
    fread(buf, 1, (1 << 16) - 1, f);
    fclose(f);
    return buf;
}

START_TEST(csv_content)
{
    char dir[128], path[256], msg[512];
    new_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/recommend.csv", dir);
    an_trace t = steady_trace();
    const ak_scaler_config policy = base_policy();
    const an_grid g = small_grid(0.05);
    an_recommendation rec;
    ck_assert_int_eq(an_recommend(&t, &policy, FPE_FMT_F16, &g, &rec, msg, sizeof msg), AN_OK);
    ck_assert_int_eq(an_recommendation_write_csv(&rec, path, msg, sizeof msg), AN_OK);
    an_recommendation_free(&rec);
    char *text = slurp(path);
    ck_assert_ptr_nonnull(text);
    const char *header = "factor,window,steps,overflow_steps,skipped_steps,skip_frac,"
                         "mean_underflow_frac,steps_below_best,mean_log2_below_best,final_scale,"
                         "chosen\n";
    ck_assert_int_eq(strncmp(text, header, strlen(header)), 0);
    const char *line = text + strlen(header);
    for (int i = 0; i < 6; i++) {
        double factor, skip_frac, underflow, log2_below, final_scale;
        int window, chosen, used;
        long long steps, overflows, skips, below;
        ck_assert_int_eq(sscanf(line, "%lf,%d,%lld,%lld,%lld,%lf,%lf,%lld,%lf,%lf,%d\n%n", &factor,
                                &window, &steps, &overflows, &skips, &skip_frac, &underflow, &below,
                                &log2_below, &final_scale, &chosen, &used),
                         11);
        const point_expect *e = &steady[i];
        ck_assert(factor == e->factor && window == e->window && steps == 100);
        ck_assert(overflows == e->skips && skips == e->skips && below == e->below);
        ck_assert(skip_frac == (double)e->skips / 100);
        ck_assert_double_eq_tol(underflow, e->underflow, 1e-12);
        ck_assert_double_eq_tol(log2_below, e->log2_below, 1e-12);
        ck_assert(final_scale == e->final_scale);
        ck_assert_int_eq(chosen, i == 1);
        line += used;
    }
    ck_assert_str_eq(line, "");
    ck_assert_ptr_nonnull(strstr(text, "\n2,5,100,11,11,0.11,")); /* %.17g drops the zeros */
    free(text);

    /* every step overflowing: the underflow is undefined, an empty field;
     * pytorch from 2^10 backs off each step (held 2^10, 2^9, 2^8) */
    an_trace inf = {calloc(3, sizeof(an_trace_step)), 3};
    for (int i = 0; i < 3; i++) {
        inf.steps[i].step = i;
        inf.steps[i].recorded_scale = 1;
        inf.steps[i].amax = INFINITY;
        inf.steps[i].count = inf.steps[i].nonfinite = inf.steps[i].hist[AK_HIST_NONFINITE] = 1;
    }
    an_grid one = small_grid(0.01);
    one.n_factors = 1;
    one.n_windows = 1;
    ck_assert_int_eq(an_recommend(&inf, &policy, FPE_FMT_F16, &one, &rec, msg, sizeof msg), AN_OK);
    ASSERT_MSG(rec.reason, "(100%); no underflow to measure (every step overflowed); 0 steps");
    ck_assert_int_eq(an_recommendation_write_csv(&rec, path, msg, sizeof msg), AN_OK);
    text = slurp(path);
    ck_assert_str_eq(text + strlen(header), "2,5,3,3,3,1,,0,0,256,1\n");
    free(text);

    /* failures: nothing to write, a directory that is not there */
    snprintf(path, sizeof path, "%s/missing/recommend.csv", dir);
    ck_assert_int_eq(an_recommendation_write_csv(&rec, path, msg, sizeof msg), AN_EIO);
    ASSERT_MSG(msg, path);
    ck_assert_int_eq(an_recommendation_write_csv(&rec, "", msg, sizeof msg), AN_EINVAL);
    an_recommendation_free(&rec);
    ck_assert_int_eq(an_recommendation_write_csv(&rec, path, msg, sizeof msg), AN_EINVAL);
    ASSERT_MSG(msg, "no recommendation to write");
    ck_assert_int_eq(an_recommendation_write_csv(NULL, path, msg, sizeof msg), AN_EINVAL);
    an_trace_free(&inf);
    an_trace_free(&t);
}
END_TEST

static Suite *recommend_suite(void)
{
    Suite *s = suite_create("analyze_recommend");
    TCase *tc = tcase_create("recommend");
    tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
    tcase_add_test(tc, grid_default);
    tcase_add_test(tc, grid_parse);
    tcase_add_test(tc, grid_parse_errors);
    tcase_add_test(tc, recommend_steady);
    tcase_add_test(tc, recommend_fallback);
    tcase_add_test(tc, recommend_ties);
    tcase_add_test(tc, recommend_rejects);
    tcase_add_test(tc, csv_content);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return ts_run_suite(recommend_suite()); }
