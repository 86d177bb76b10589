/* test_replay: traces loaded from run directories (normalized to true
 * units), and every framework preset replayed over a small hand-made trace
 * whose scale trajectory, skips, overflows, steps below the best scale and
 * underflow are worked out by hand in the comments.
 *
 * Target fp16 throughout: x S overflows when x S >= 65520, so with
 * S = 2^k an amax of 2^a overflows exactly when a + k >= 16, and the best
 * power-of-two scale of amax 2^a is 2^(15 - a).  A scaled binade flushes
 * when it is <= -26. */
#define _XOPEN_SOURCE 700 /* mkdtemp */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "loss_scale.h"
#include "record.h"
#include "replay.h"
#include "scratch.h"

#define BIN(e) AK_HIST_BIN(e)
#define ASSERT_MSG(msg, part)                                                                      \
    ck_assert_msg(strstr((msg), (part)) != NULL, "'%s' lacks '%s'", (msg), (part))

/* ---- hand-made traces ---------------------------------------------------------------------- */
/* Step i of n: recorded at scale 1, amax[i] (a power of two or +inf), and a
 * histogram of 6 values: 2 zeros, 1 in binade `tiny` (the one whose
 * flushing the scale decides), 2 in binade -20 and 1 in amax's binade (a
 * non-finite value for +inf).  Nonzero: 4, so a flushed tiny value is an
 * underflow of 1/4. */
static an_trace make_trace(size_t n, const double *amax, int tiny)
{
    an_trace t = {calloc(n, sizeof(an_trace_step)), n};
    ck_assert_ptr_nonnull(t.steps);
    for (size_t i = 0; i < n; i++) {
        an_trace_step *s = &t.steps[i];
        s->step = (int64_t)i;
        s->recorded_scale = 1.0;
        s->amax = amax[i];
        s->count = 6;
        s->zero = 2;
        s->hist[AK_HIST_ZERO] = 2;
        s->hist[BIN(tiny)] += 1;
        s->hist[BIN(-20)] += 2;
        if (isinf(amax[i])) {
            s->hist[AK_HIST_NONFINITE] = 1;
            s->nonfinite = 1;
            s->recorded_found_inf = true;
        } else {
            s->hist[BIN(ilogb(amax[i]))] += 1;
        }
    }
    return t;
}

typedef struct expected {
    const int *held_log2; /* the scale held at each step, as log2 */
    const uint8_t *skip;  /* 1 where the step is skipped */
    int64_t overflow_steps, skipped_steps, steps_below_best;
    double mean_log2_below_best, mean_underflow_frac;
} expected;

static void check_replay(const ak_scaler_config *cfg, const an_trace *t, const expected *e)
{
    double scales[32];
    uint8_t skipped[32];
    an_replay_result r;
    char msg[512] = "";
    ck_assert(t->n <= 32);
    ck_assert_msg(an_replay(t, cfg, FPE_FMT_F16, &r, scales, skipped, msg, sizeof msg) == AN_OK,
                  "%s", msg);
    int64_t skips = 0;
    int lo = 1000, hi = -1000;
    for (size_t i = 0; i < t->n; i++) {
        ck_assert_msg(scales[i] == ldexp(1.0, e->held_log2[i]), "step %zu: held %g, expected 2^%d",
                      i, scales[i], e->held_log2[i]);
        ck_assert_msg(skipped[i] == e->skip[i], "step %zu: skipped %d, expected %d", i, skipped[i],
                      e->skip[i]);
        skips += e->skip[i];
        if (e->held_log2[i] < lo) lo = e->held_log2[i];
        if (e->held_log2[i] > hi) hi = e->held_log2[i];
    }
    ck_assert_int_eq(skips, e->skipped_steps); /* the expectation agrees with itself */
    ck_assert_int_eq(r.steps, (int64_t)t->n);
    ck_assert_int_eq(r.overflow_steps, e->overflow_steps);
    ck_assert_int_eq(r.skipped_steps, e->skipped_steps);
    ck_assert_double_eq_tol(r.skip_frac, (double)e->skipped_steps / (double)t->n, 1e-15);
    ck_assert_int_eq(r.steps_below_best, e->steps_below_best);
    ck_assert_double_eq_tol(r.mean_log2_below_best, e->mean_log2_below_best, 1e-12);
    ck_assert_double_eq_tol(r.mean_underflow_frac, e->mean_underflow_frac, 1e-12);
    ck_assert(r.final_scale == ldexp(1.0, e->held_log2[t->n - 1]));
    ck_assert(r.min_scale == ldexp(1.0, lo));
    ck_assert(r.max_scale == ldexp(1.0, hi));
}

static ak_scaler_config preset(const char *name)
{
    ak_scaler_config cfg;
    char msg[256];
    ck_assert_msg(ak_scaler_preset(name, &cfg, msg, sizeof msg) == 0, "%s", msg);
    return cfg;
}

/* ---- one trace per preset --------------------------------------------------------------- */
/* pytorch (init 2^16, x2 / x0.5, no hysteresis), window 3; tiny binade -41
 * (flushes at k <= 15).  amax 1 overflows at k >= 16, 0.5 at k >= 17,
 * 0.25 at k >= 18.
 *   step amax held  what happens                       best  below
 *   0    1    16    overflow: backoff to 15, skip       15    -
 *   1    .5   15    clean, good 1                       16    1
 *   2    .5   15    clean, good 2                       16    1
 *   3    .5   15    clean, good 3 = window: grow to 16  16    1
 *   4    .5   16    clean, good 1                       16    -
 *   5    .25  16    clean, good 2                       17    1
 *   6    .25  16    clean, grow to 17                   17    1
 *   7    .5   17    overflow: backoff to 16, skip       16    -
 * Overflows 2 (0, 7), skipped 2, below 5, mean log2 below 5/8.
 * Underflow over the 6 clean steps: 1/4 at k = 15 (steps 1-3), 0 at 16:
 * 3/4 / 6 = 0.125. */
START_TEST(replay_pytorch)
{
    ak_scaler_config cfg = preset("pytorch");
    cfg.window = 3;
    const double amax[] = {1, .5, .5, .5, .5, .25, .25, .5};
    an_trace t = make_trace(8, amax, -41);
    const int held[] = {16, 15, 15, 15, 16, 16, 16, 17};
    const uint8_t skip[] = {1, 0, 0, 0, 0, 0, 0, 1};
    const expected e = {held, skip, 2, 2, 5, 5.0 / 8, 0.125};
    check_replay(&cfg, &t, &e);
    an_trace_free(&t);
}
END_TEST

/* apex (init 2^16, max 2^24, growth unchecked), window 1: every clean step
 * grows, up to the cap; tiny binade -45 (flushes at k <= 19).  amax 2^-20
 * never overflows here (needs k >= 36; best 2^35); 2^-8 overflows at
 * k >= 24 (best 2^23).
 *   steps 0-8: held 16..24, each clean step doubles (the last to 2^24, the cap)
 *   step 9:  held 24, clean: 2^25 capped to 2^24
 *   step 10: held 24, amax 2^-8: overflow, backoff to 23, skip
 *   step 11: held 23, clean: grow to 24
 * below best (35) at every step but 10 (24 > 23): 11 steps, log2 below
 * 19+18+...+11 (steps 0-8: 135) + 11 (step 9) + 12 (step 11) = 158,
 * mean 158/12.  Underflow over the 11 clean steps: 1/4 at k = 16..19
 * (steps 0-3): 1/11. */
START_TEST(replay_apex)
{
    ak_scaler_config cfg = preset("apex");
    cfg.window = 1;
    double amax[12];
    for (int i = 0; i < 12; i++)
        amax[i] = 0x1p-20;
    amax[10] = 0x1p-8;
    an_trace t = make_trace(12, amax, -45);
    const int held[] = {16, 17, 18, 19, 20, 21, 22, 23, 24, 24, 24, 23};
    const uint8_t skip[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0};
    const expected e = {held, skip, 1, 1, 11, 158.0 / 12, 1.0 / 11};
    check_replay(&cfg, &t, &e);
    an_trace_free(&t);
}
END_TEST

/* mindspore-manager (floor at 1), init 4, window 3; tiny binade -26
 * (flushes at k <= 0).  amax 2^20 overflows at any k >= -4, so at every
 * scale held here; 2^-10 never (best 2^25).
 *   0: held 2, overflow -> 1     1: held 1, overflow -> 0
 *   2: held 0, overflow, 0.5 floored to 1 (k 0)     3: the same
 *   4, 5: held 0, clean (good 1, 2)     6: held 0, clean, grow to 1
 *   7: held 1, clean
 * Skips 0-3.  Below best only for 2^-10 (2^20's best 2^-5 is below every
 * held scale): steps 4-7 by 25, 25, 25, 24: 99/8.  Underflow over steps
 * 4-7: 1/4 at k = 0 (4, 5, 6), 0 at k = 1: 0.75/4 = 0.1875. */
START_TEST(replay_mindspore_manager)
{
    ak_scaler_config cfg = preset("mindspore-manager");
    cfg.window = 3;
    cfg.init_scale = 4.0f;
    const double amax[] = {0x1p20, 0x1p20, 0x1p20, 0x1p20, 0x1p-10, 0x1p-10, 0x1p-10, 0x1p-10};
    an_trace t = make_trace(8, amax, -26);
    const int held[] = {2, 1, 0, 0, 0, 0, 0, 1};
    const uint8_t skip[] = {1, 1, 1, 1, 0, 0, 0, 0};
    const expected e = {held, skip, 4, 4, 4, 99.0 / 8, 0.1875};
    check_replay(&cfg, &t, &e);
    an_trace_free(&t);
}
END_TEST

/* mindspore-amp (its own counter: grow when good == window - 1, good =
 * (good + 1) mod window), window 3, init 2^16; tiny -41.
 *   0: held 16, .25 clean: good 0 -> 1     1: clean: good 1 -> 2
 *   2: held 16, amax 1: overflow, good 0, backoff to 15, skip
 *   3, 4: held 15 clean (good 1, 2)   5: held 15, good == 2: grow to 16
 *   6, 7: held 16 clean
 * best: .25 -> 17, 1 -> 15.  Below: 0, 1 (by 1), 3, 4, 5 (by 2), 6, 7 (by
 * 1): 7 steps, 10/8.  Underflow: clean steps 0,1,3-7 (7); 1/4 at k = 15
 * (3, 4, 5): 0.75/7. */
START_TEST(replay_mindspore_amp)
{
    ak_scaler_config cfg = preset("mindspore-amp");
    cfg.window = 3;
    const double amax[] = {.25, .25, 1, .25, .25, .25, .25, .25};
    an_trace t = make_trace(8, amax, -41);
    const int held[] = {16, 16, 16, 15, 15, 15, 16, 16};
    const uint8_t skip[] = {0, 0, 1, 0, 0, 0, 0, 0};
    const expected e = {held, skip, 1, 1, 7, 10.0 / 8, 0.75 / 7};
    check_replay(&cfg, &t, &e);
    an_trace_free(&t);
}
END_TEST

/* paddle, window 3, hysteresis 2 (decr_every_n_nan_or_inf 2: two overflows
 * in a row back off; a clean step refills); tiny -41.
 *   0: held 16, amax 1 overflow: hysteresis 2 -> 1, kept, skip
 *   1: held 16, .25 clean: refill to 2, good 1
 *   2: held 16, overflow: 2 -> 1, kept, skip
 *   3: held 16, overflow: 1: backoff to 15, refill 2, skip
 *   4, 5: held 15 clean   6: held 15 clean, good 3: grow to 16
 *   7: held 16 clean
 * best: 1 -> 15, .25 -> 17.  Below: 1 (1), 4, 5, 6 (2 each), 7 (1): 5
 * steps, 8/8.  Underflow: clean 1, 4-7 (5); 1/4 at k = 15 (4, 5, 6):
 * 0.75/5 = 0.15. */
START_TEST(replay_paddle)
{
    ak_scaler_config cfg = preset("paddle");
    cfg.window = 3;
    cfg.hysteresis = 2;
    const double amax[] = {1, .25, 1, 1, .25, .25, .25, .25};
    an_trace t = make_trace(8, amax, -41);
    const int held[] = {16, 16, 16, 16, 15, 15, 15, 16};
    const uint8_t skip[] = {1, 0, 1, 1, 0, 0, 0, 0};
    const expected e = {held, skip, 3, 3, 5, 1.0, 0.15};
    check_replay(&cfg, &t, &e);
    an_trace_free(&t);
}
END_TEST

/* deepspeed (hysteresis 2, not consecutive: a clean step does not refill;
 * good counts steps since the last overflow, not reset at growth; grow when
 * good is a multiple of the window), window 3; tiny -41.
 *   0: held 16, amax 1 overflow: hysteresis 2 -> 1, kept, skip
 *   1: held 16, .25 clean: good 1 (no refill)
 *   2: held 16, overflow: hysteresis 1: backoff to 15, skip
 *   3, 4: held 15 clean (good 1, 2)   5: good 3: grow to 16 (refill 2)
 *   6, 7: held 16 (good 4, 5)   8: good 6: grow to 17
 *   9: held 17, .25 x 2^17 = 32768: clean
 * (Paddle's rule would have refilled at step 1 and kept 16 at step 2.)
 * best: 1 -> 15, .25 -> 17.  Below: 1 (1), 3-5 (2 each), 6-8 (1 each): 7
 * steps, 10/10.  Underflow: clean 1, 3-9 (8); 1/4 at k = 15 (3, 4, 5):
 * 0.75/8. */
START_TEST(replay_deepspeed)
{
    ak_scaler_config cfg = preset("deepspeed");
    cfg.window = 3;
    const double amax[] = {1, .25, 1, .25, .25, .25, .25, .25, .25, .25};
    an_trace t = make_trace(10, amax, -41);
    const int held[] = {16, 16, 16, 15, 15, 15, 16, 16, 16, 17};
    const uint8_t skip[] = {1, 0, 1, 0, 0, 0, 0, 0, 0, 0};
    const expected e = {held, skip, 2, 2, 7, 1.0, 0.75 / 8};
    check_replay(&cfg, &t, &e);
    an_trace_free(&t);
}
END_TEST

/* megatron (init 2^32, hysteresis 2 refilled only at growth), window 3;
 * tiny -57 (flushes at k <= 31).  a = 2^-16 overflows at k >= 32 (best
 * 2^31), b = 2^-18 at k >= 34 (best 2^33).
 *   0: held 32, a: overflow, hysteresis 2 -> 1, kept, skip
 *   1: held 32, b clean (good 1, no refill)
 *   2: held 32, a: overflow, hysteresis 1: backoff to 31, skip
 *   3, 4: held 31 clean   5: good 3: grow to 32, refill
 *   6: held 32, b clean
 * Below: 1 (1), 3, 4, 5 (2 each), 6 (1): 5 steps, 8/7.  Underflow: clean
 * 1, 3-6 (5); 1/4 at k = 31 (3, 4, 5): 0.75/5 = 0.15. */
START_TEST(replay_megatron)
{
    ak_scaler_config cfg = preset("megatron");
    cfg.window = 3;
    const double a = 0x1p-16, b = 0x1p-18;
    const double amax[] = {a, b, a, b, b, b, b};
    an_trace t = make_trace(7, amax, -57);
    const int held[] = {32, 32, 32, 31, 31, 31, 32};
    const uint8_t skip[] = {1, 0, 1, 0, 0, 0, 0};
    const expected e = {held, skip, 2, 2, 5, 8.0 / 7, 0.15};
    check_replay(&cfg, &t, &e);
    an_trace_free(&t);
}
END_TEST

/* keras (init 2^15), window 4; tiny -41.  amax .5 overflows at k >= 17
 * (best 2^16).
 *   0-3: held 15 clean, step 3 grows to 16
 *   4-7: held 16 clean (.5 x 2^16 = 32768), step 7 grows to 17
 *   8: held 17, overflow: backoff to 16, skip
 *   9: held 16 clean
 * Below: 0-3 (1 each): 4 steps, 4/10.  Underflow: 9 clean steps, 1/4 at
 * k = 15 (0-3): 1/9. */
START_TEST(replay_keras)
{
    ak_scaler_config cfg = preset("keras");
    cfg.window = 4;
    double amax[10];
    for (int i = 0; i < 10; i++)
        amax[i] = 0.5;
    an_trace t = make_trace(10, amax, -41);
    const int held[] = {15, 15, 15, 15, 16, 16, 16, 16, 17, 16};
    const uint8_t skip[] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 0};
    const expected e = {held, skip, 1, 1, 4, 0.4, 1.0 / 9};
    check_replay(&cfg, &t, &e);
    an_trace_free(&t);
}
END_TEST

/* fixed (128 = 2^7, drops overflowing updates) and none (1, keeps them):
 * the scale never moves; amax 2^9 overflows at k >= 7 only.
 *   fixed: steps 0 and 2 (amax 2^9) overflow and are skipped; best for 2^9
 *     is 2^6 (held 7 is above it), for 2^-4 2^19 (12 below);
 *   none: nothing overflows at 2^0 ... 2^9 x 1 = 512; both amax below best
 *     (2^6: by 6; 2^19: by 19); no step is skipped.
 * Underflow (tiny -30): fixed: -30 + 7 = -23 subnormal: 0; none: flushed,
 * 1/4 on every step. */
START_TEST(replay_fixed_and_none)
{
    const double amax[] = {0x1p9, 0x1p-4, 0x1p9, 0x1p-4};
    an_trace t = make_trace(4, amax, -30);
    ak_scaler_config cfg = preset("fixed");
    const int held7[] = {7, 7, 7, 7};
    const uint8_t skip_fixed[] = {1, 0, 1, 0};
    const expected ef = {held7, skip_fixed, 2, 2, 2, 24.0 / 4, 0.0};
    check_replay(&cfg, &t, &ef);

    cfg = preset("none");
    const int held0[] = {0, 0, 0, 0};
    const uint8_t skip_none[] = {0, 0, 0, 0};
    const expected en = {held0, skip_none, 0, 0, 4, 50.0 / 4, 0.25};
    check_replay(&cfg, &t, &en);

    /* a policy that keeps overflowing updates counts them, skips none */
    cfg = preset("pytorch");
    cfg.window = 100;
    cfg.init_scale = 128.0f;
    cfg.drop_overflow_update = false;
    an_replay_result r;
    /* step 0 overflows at 2^7 and backs off; step 2 at 2^6 gives 2^15 = 32768: clean */
    ck_assert_int_eq(an_replay(&t, &cfg, FPE_FMT_F16, &r, NULL, NULL, NULL, 0), AN_OK);
    ck_assert_int_eq(r.overflow_steps, 1);
    ck_assert_int_eq(r.skipped_steps, 0);
    ck_assert(r.skip_frac == 0 && r.final_scale == 64.0);
    an_trace_free(&t);
}
END_TEST

/* Steps whose recorded gradients overflowed (amax +inf) overflow at every
 * scale at or above the recorded one and are clean below it.  pytorch,
 * window 3, both steps recorded at 2^16:
 *   0: held 16 >= 16: overflow, backoff to 15, skip
 *   1: held 15 <  16: clean; its histogram's underflow counts (tiny -41
 *      flushes at 15; the non-finite value is not among the 3 nonzero:
 *      1/3); best scale undefined: not below.
 *   2: amax .5 held 15: clean, below best 16 by 1; underflow 1/4.
 * Mean underflow (1/3 + 1/4) / 2 = 7/24. */
START_TEST(replay_infinite_amax)
{
    const double amax[] = {INFINITY, INFINITY, 0.5};
    an_trace t = make_trace(3, amax, -41);
    t.steps[0].recorded_scale = 65536.0;
    t.steps[1].recorded_scale = 65536.0;
    ak_scaler_config cfg = preset("pytorch");
    cfg.window = 3;
    const int held[] = {16, 15, 15};
    const uint8_t skip[] = {1, 0, 0};
    const expected e = {held, skip, 1, 1, 1, 1.0 / 3, 7.0 / 24};
    check_replay(&cfg, &t, &e);

    /* recorded at a lower scale, the same step overflows at 2^15 too */
    t.steps[1].recorded_scale = 1024.0;
    an_replay_result r;
    ck_assert_int_eq(an_replay(&t, &cfg, FPE_FMT_F16, &r, NULL, NULL, NULL, 0), AN_OK);
    ck_assert_int_eq(r.overflow_steps, 2);
    /* every step overflowing: no underflow to average */
    t.steps[2].amax = INFINITY;
    t.steps[2].recorded_scale = 1.0;
    ck_assert_int_eq(an_replay(&t, &cfg, FPE_FMT_F16, &r, NULL, NULL, NULL, 0), AN_OK);
    ck_assert_int_eq(r.overflow_steps, 3);
    ck_assert(isnan(r.mean_underflow_frac));
    ck_assert_int_eq(r.steps_below_best, 0);
    an_trace_free(&t);
}
END_TEST

START_TEST(replay_bad_arguments)
{
    const double amax[] = {0.5};
    an_trace t = make_trace(1, amax, -41);
    ak_scaler_config cfg = preset("pytorch");
    an_replay_result r;
    char msg[512];
    ck_assert_int_eq(an_replay(NULL, &cfg, FPE_FMT_F16, &r, NULL, NULL, msg, sizeof msg),
                     AN_EINVAL);
    ASSERT_MSG(msg, "the trace is NULL or empty");
    an_trace empty = {NULL, 0};
    ck_assert_int_eq(an_replay(&empty, &cfg, FPE_FMT_F16, &r, NULL, NULL, msg, sizeof msg),
                     AN_EINVAL);
    ck_assert_int_eq(an_replay(&t, &cfg, FPE_FMT_F16, NULL, NULL, NULL, msg, sizeof msg),
                     AN_EINVAL);
    ASSERT_MSG(msg, "result is NULL");
    ck_assert_int_eq(an_replay(&t, NULL, FPE_FMT_F16, &r, NULL, NULL, msg, sizeof msg), AN_EINVAL);
    ASSERT_MSG(msg, "the policy is NULL");
    ck_assert_int_eq(an_replay(&t, &cfg, (fpe_format_id)5, &r, NULL, NULL, msg, sizeof msg),
                     AN_EINVAL);
    ASSERT_MSG(msg, "target format 5");
    cfg.window = 0;
    ck_assert_int_eq(an_replay(&t, &cfg, FPE_FMT_F16, &r, NULL, NULL, msg, sizeof msg), AN_EINVAL);
    ASSERT_MSG(msg, "--scale-window 0: must be >= 1");
    cfg = preset("pytorch");
    cfg.hysteresis = 2;
    ck_assert_int_eq(an_replay(&t, &cfg, FPE_FMT_F16, &r, NULL, NULL, msg, sizeof msg), AN_EINVAL);
    ASSERT_MSG(msg, "--hysteresis 2");
    an_trace_free(&t);
    an_trace_free(&t); /* harmless twice */
    an_trace_free(NULL);
}
END_TEST

/* ---- loading traces from run directories ---------------------------------------------- */
static void put_file(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static void clear_stats(ak_stats *s) { memset(s, 0, sizeof *s); }

/* A trace written with the record writers, normalized by the scale held:
 *   step 0, scale 2^16: amax 2^15 -> 0.5; binade 14 -> -2; -10 -> -26;
 *     -149 -> -165, kept in the lowest binade -149; 1 zero.
 *   step 1, scale 2^16, an inf among the gradients: amax -> +inf; binade
 *     5 -> -11; the non-finite value stays non-finite.
 *   step 2, scale 3: binade 2 ([4, 8)) -> lower edge 4/3, binade 0;
 *     -149 -> [2^-149 / 3, ...) below the range: -149; amax 6 -> 2.
 *   step 3, scale 0.5: binade 127 -> 128, kept in 127; amax 2^127 -> 2^128.
 *   step 4, scale 1, found_inf set with no non-finite value counted: its
 *     magnitudes are unknown all the same: amax +inf. */
START_TEST(load_normalizes)
{
    char dir[128], msg[512];
    new_dir(dir, sizeof dir);
    rec_log *trace = rec_log_open_table(dir, REC_TRACE, -1, msg, sizeof msg);
    rec_log *hist = rec_log_open_table(dir, REC_TRACE_HIST, -1, msg, sizeof msg);
    ck_assert(trace && hist);
    ak_stats s;
    clear_stats(&s);
    s.count = 5;
    s.zero = 1;
    s.nonzero = 4;
    s.amax = 32768.0;
    s.hist[AK_HIST_ZERO] = 1;
    s.hist[BIN(14)] = 1;
    s.hist[BIN(-10)] = 2;
    s.hist[BIN(-149)] = 1;
    ck_assert_int_eq(rec_write_trace_stats(trace, hist, 0, 65536.0, false, &s), AN_OK);
    clear_stats(&s);
    s.count = 3;
    s.nonzero = 2;
    s.nonfinite = 1;
    s.amax = 100.0;
    s.hist[BIN(5)] = 2;
    s.hist[AK_HIST_NONFINITE] = 1;
    ck_assert_int_eq(rec_write_trace_stats(trace, hist, 1, 65536.0, true, &s), AN_OK);
    clear_stats(&s);
    s.count = 2;
    s.nonzero = 2;
    s.amax = 6.0;
    s.hist[BIN(2)] = 1;
    s.hist[BIN(-149)] = 1;
    ck_assert_int_eq(rec_write_trace_stats(trace, hist, 2, 3.0, false, &s), AN_OK);
    clear_stats(&s);
    s.count = 1;
    s.nonzero = 1;
    s.amax = 0x1p127;
    s.hist[BIN(127)] = 1;
    ck_assert_int_eq(rec_write_trace_stats(trace, hist, 3, 0.5, false, &s), AN_OK);
    clear_stats(&s);
    s.count = 1;
    s.nonzero = 1;
    s.amax = 2.0;
    s.hist[BIN(1)] = 1;
    ck_assert_int_eq(rec_write_trace_stats(trace, hist, 4, 1.0, true, &s), AN_OK);
    ck_assert_int_eq(rec_log_close(trace, msg, sizeof msg), AN_OK);
    ck_assert_int_eq(rec_log_close(hist, msg, sizeof msg), AN_OK);

    an_trace t;
    ck_assert_msg(an_trace_load(dir, &t, msg, sizeof msg) == AN_OK, "%s", msg);
    ck_assert_uint_eq(t.n, 5);
    const an_trace_step *st = t.steps;
    ck_assert(st[0].step == 0 && st[0].recorded_scale == 65536.0 && !st[0].recorded_found_inf);
    ck_assert(st[0].amax == 0.5);
    ck_assert(st[0].count == 5 && st[0].zero == 1 && st[0].nonfinite == 0);
    ck_assert_uint_eq(st[0].hist[AK_HIST_ZERO], 1);
    ck_assert_uint_eq(st[0].hist[BIN(-2)], 1);
    ck_assert_uint_eq(st[0].hist[BIN(-26)], 2);
    ck_assert_uint_eq(st[0].hist[BIN(-149)], 1);
    ck_assert_uint_eq(st[0].hist[BIN(14)], 0);
    ck_assert_uint_eq(st[0].hist[BIN(-10)], 0);

    ck_assert(st[1].recorded_found_inf && isinf(st[1].amax) && st[1].amax > 0);
    ck_assert_uint_eq(st[1].hist[BIN(-11)], 2);
    ck_assert_uint_eq(st[1].hist[AK_HIST_NONFINITE], 1);

    ck_assert(st[2].recorded_scale == 3.0 && st[2].amax == 2.0);
    ck_assert_uint_eq(st[2].hist[BIN(0)], 1);
    ck_assert_uint_eq(st[2].hist[BIN(-149)], 1);

    ck_assert(st[3].amax == 0x1p128);
    ck_assert_uint_eq(st[3].hist[BIN(127)], 1);
    ck_assert(isinf(st[4].amax));
    ck_assert_uint_eq(st[4].hist[BIN(1)], 1);
    for (size_t i = 0; i < t.n; i++) {
        uint64_t total = 0;
        for (int b = 0; b < AK_HIST_BINS; b++)
            total += st[i].hist[b];
        ck_assert_uint_eq(total, st[i].count); /* nothing lost on the way */
    }

    /* replayed with pytorch (2^16, window 2000) in fp16:
     *   0: amax .5 x 2^16 = 32768: clean         (best 2^16: not below)
     *   1: +inf recorded at 2^16, held 2^16: overflow -> 2^15
     *   2: amax 2 x 2^15 = 65536: overflow -> 2^14 (best 2^14)
     *   3: amax 2^128 x 2^14: overflow -> 2^13 (best 2^-113)
     *   4: +inf recorded at 1, held 2^13 >= 1: overflow -> 2^12 */
    ak_scaler_config cfg = preset("pytorch");
    double scales[5];
    an_replay_result r;
    ck_assert_int_eq(an_replay(&t, &cfg, FPE_FMT_F16, &r, scales, NULL, msg, sizeof msg), AN_OK);
    ck_assert(scales[0] == 0x1p16 && scales[1] == 0x1p16 && scales[2] == 0x1p15 &&
              scales[3] == 0x1p14 && scales[4] == 0x1p13);
    ck_assert_int_eq(r.overflow_steps, 4);
    ck_assert_int_eq(r.skipped_steps, 4);
    ck_assert_int_eq(r.steps_below_best, 0);
    /* step 0 alone is clean: -26 + 16 = -10, nothing flushes ... except the
     * clamped -149 + 16 = -133: 1 of 4 nonzero */
    ck_assert_double_eq_tol(r.mean_underflow_frac, 0.25, 1e-15);
    an_trace_free(&t);
}
END_TEST

static void expect_load_error(const char *dir, int status, const char *part)
{
    an_trace t = {(an_trace_step *)1, 99};
    char msg[1024] = "";
    ck_assert_int_eq(an_trace_load(dir, &t, msg, sizeof msg), status);
    ck_assert_ptr_null(t.steps);
    ck_assert_uint_eq(t.n, 0);
    ASSERT_MSG(msg, part);
}

#define TRACE_H REC_TRACE_HEADER "\n"
#define HIST_H  REC_TRACE_HIST_HEADER "\n"

START_TEST(load_rejects)
{
    char dir[128], msg[512];
    new_dir(dir, sizeof dir);
    /* no files */
    expect_load_error(dir, AN_EIO, "trace.csv: cannot open");
    put_file(dir, "trace.csv", TRACE_H "0,1,0,2,1,0,0.5\n");
    expect_load_error(dir, AN_EIO, "trace_hist.csv: cannot open");

    /* the steps' histograms do not match */
    put_file(dir, "trace_hist.csv", HIST_H "0,zero,1\n0,-1,1\n1,-3,1\n");
    put_file(dir, "trace.csv", TRACE_H "0,1,0,2,1,0,0.5\n2,1,0,1,0,0,0.5\n");
    expect_load_error(dir, AN_EFORMAT, "trace_hist.csv: step 1 has histogram rows but no row in");
    put_file(dir, "trace_hist.csv", HIST_H "0,zero,1\n2,-1,1\n");
    put_file(dir, "trace.csv", TRACE_H "0,1,0,2,1,0,0.5\n2,1,0,1,0,0,0.5\n");
    expect_load_error(dir, AN_EFORMAT,
                      "trace_hist.csv: step 0: the histogram holds 1 values (1 zero, 0 "
                      "non-finite) but");
    put_file(dir, "trace_hist.csv", HIST_H "0,zero,1\n0,-1,1\n2,-1,1\n");
    put_file(dir, "trace.csv", TRACE_H "0,1,0,2,0,0,0.5\n2,1,0,1,0,0,0.5\n");
    expect_load_error(dir, AN_EFORMAT, "trace.csv says count 2 (0 zero, 0 non-finite)");
    /* a step with values and no histogram rows at all */
    put_file(dir, "trace_hist.csv", HIST_H "2,-1,1\n");
    put_file(dir, "trace.csv", TRACE_H "0,1,0,2,1,0,0.5\n2,1,0,1,0,0,0.5\n");
    expect_load_error(dir, AN_EFORMAT, "step 0: the histogram holds 0 values");
    put_file(dir, "trace_hist.csv", HIST_H "0,zero,1\n0,-1,1\n0,-1,1\n1,0,1\n");
    put_file(dir, "trace.csv", TRACE_H "0,1,0,3,1,0,0.5\n1,1,0,1,0,0,1\n");
    expect_load_error(dir, AN_EFORMAT, "trace_hist.csv: step 0: bin -1 appears twice");

    /* steps out of order, repeated, a scale that cannot be divided out */
    put_file(dir, "trace_hist.csv", HIST_H);
    put_file(dir, "trace.csv", TRACE_H "3,1,0,0,0,0,0\n2,1,0,0,0,0,0\n");
    expect_load_error(dir, AN_EFORMAT, "trace.csv: step 2 follows step 3");
    put_file(dir, "trace.csv", TRACE_H "3,1,0,0,0,0,0\n3,1,0,0,0,0,0\n");
    expect_load_error(dir, AN_EFORMAT, "step 3 follows step 3");
    put_file(dir, "trace.csv", TRACE_H "3,0,0,0,0,0,0\n4,1,0,0,0,0,0\n");
    expect_load_error(dir, AN_EFORMAT, "trace.csv: step 3: loss_scale 0 cannot be divided out");
    put_file(dir, "trace.csv", TRACE_H "3,1,0,0,0,0,0\n4,inf,0,0,0,0,0\n");
    expect_load_error(dir, AN_EFORMAT, "step 4: loss_scale inf cannot be divided out");

    /* malformed rows, through the readers */
    put_file(dir, "trace.csv", TRACE_H "0,1,0,2,1,0\n");
    expect_load_error(dir, AN_EFORMAT, "trace.csv:2: expected 7 fields, got 6");
    put_file(dir, "trace.csv", TRACE_H "0,1,0,0,0,0,0\n");
    put_file(dir, "trace_hist.csv", HIST_H "0,two,1\n");
    expect_load_error(dir, AN_EFORMAT, "trace_hist.csv:2: column 'bin': 'two'");

    /* nothing recorded yet */
    put_file(dir, "trace.csv", TRACE_H);
    put_file(dir, "trace_hist.csv", HIST_H);
    expect_load_error(dir, AN_EINVAL, "trace.csv has no steps");

    an_trace t;
    ck_assert_int_eq(an_trace_load(NULL, &t, msg, sizeof msg), AN_EINVAL);
    ck_assert_int_eq(an_trace_load("", &t, msg, sizeof msg), AN_EINVAL);
    ck_assert_int_eq(an_trace_load(dir, NULL, msg, sizeof msg), AN_EINVAL);
}
END_TEST

/* A run killed between writing a step's two files: its last step is
 * dropped, wherever it is missing. */
START_TEST(load_killed_run)
{
    char dir[128];
    new_dir(dir, sizeof dir);
    an_trace t;
    char msg[512];
    /* step 2's histogram is cut short (1 of 3 values) */
    put_file(dir, "trace.csv", TRACE_H "0,1,0,1,0,0,1\n1,1,0,1,0,0,1\n2,1,0,3,1,0,1\n");
    put_file(dir, "trace_hist.csv", HIST_H "0,0,1\n1,0,1\n2,zero,1\n2,0,1\n2,-");
    ck_assert_msg(an_trace_load(dir, &t, msg, sizeof msg) == AN_OK, "%s", msg);
    ck_assert_uint_eq(t.n, 2);
    ck_assert_int_eq(t.steps[1].step, 1);
    an_trace_free(&t);
    /* step 2's histogram is there, its trace row is not */
    put_file(dir, "trace.csv", TRACE_H "0,1,0,1,0,0,1\n1,1,0,1,0,0,1\n2,1,0,");
    put_file(dir, "trace_hist.csv", HIST_H "0,0,1\n1,0,1\n2,0,1\n");
    ck_assert_msg(an_trace_load(dir, &t, msg, sizeof msg) == AN_OK, "%s", msg);
    ck_assert_uint_eq(t.n, 2);
    an_trace_free(&t);
    /* step 2's trace row is there, no histogram row */
    put_file(dir, "trace.csv", TRACE_H "0,1,0,1,0,0,1\n1,1,0,1,0,0,1\n2,1,0,1,0,0,1\n");
    put_file(dir, "trace_hist.csv", HIST_H "0,0,1\n1,0,1\n");
    ck_assert_msg(an_trace_load(dir, &t, msg, sizeof msg) == AN_OK, "%s", msg);
    ck_assert_uint_eq(t.n, 2);
    an_trace_free(&t);
    /* ... but a step of no values has no histogram rows and is complete */
    put_file(dir, "trace.csv", TRACE_H "0,1,0,1,0,0,1\n1,1,0,1,0,0,1\n2,1,0,0,0,0,0\n");
    ck_assert_msg(an_trace_load(dir, &t, msg, sizeof msg) == AN_OK, "%s", msg);
    ck_assert_uint_eq(t.n, 3);
    an_trace_free(&t);
    /* only the one step, incomplete: nothing to replay */
    put_file(dir, "trace.csv", TRACE_H "0,1,0,2,0,0,1\n");
    put_file(dir, "trace_hist.csv", HIST_H "0,0,1\n");
    expect_load_error(dir, AN_EINVAL, "has no steps");
}
END_TEST

static Suite *replay_suite(void)
{
    Suite *s = suite_create("analyze_replay");
    TCase *tc = tcase_create("replay");
    tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
    tcase_add_test(tc, replay_pytorch);
    tcase_add_test(tc, replay_apex);
    tcase_add_test(tc, replay_mindspore_manager);
    tcase_add_test(tc, replay_mindspore_amp);
    tcase_add_test(tc, replay_paddle);
    tcase_add_test(tc, replay_deepspeed);
    tcase_add_test(tc, replay_megatron);
    tcase_add_test(tc, replay_keras);
    tcase_add_test(tc, replay_fixed_and_none);
    tcase_add_test(tc, replay_infinite_amax);
    tcase_add_test(tc, replay_bad_arguments);
    tcase_add_test(tc, load_normalizes);
    tcase_add_test(tc, load_rejects);
    tcase_add_test(tc, load_killed_run);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return ts_run_suite(replay_suite()); }
