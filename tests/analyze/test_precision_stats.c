/* test_precision_stats: histogram fractions at a scale for fp16, bf16 and
 * fp32, the overflow test of a cast, the best power-of-two scale, merges
 * and quantiles.  Every expected count is worked out by hand from the
 * format facts (fp16: p 11, emin -14, emax 15; bf16: 8, -126, 127; fp32:
 * 24, -126, 127), in the comments beside it. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "atomic_file.h"
#include "check_main.h"
#include "precision_stats.h"

#define BIN(e) AK_HIST_BIN(e)

static void clear(uint64_t h[AK_HIST_BINS]) { memset(h, 0, AK_HIST_BINS * sizeof h[0]); }

/* fp16 class edges of a scaled binade e: e <= -26 flushes (everything in
 * [2^-26, 2^-25) is at most half the smallest subnormal 2^-24), -25 to -15
 * are subnormal, -14 to 15 normal, 16 and up overflow. */

/* MindSpore's case: 68% zeros and about 4% of the values in [2^-32,
 * 2^-20].  100 values: 68 zeros; one each in the binades -32, -28, -24,
 * -21; 26 in binade -8; 2 in binade 1 (in [2, 4)). */
static void mindspore_hist(uint64_t h[AK_HIST_BINS])
{
    clear(h);
    h[AK_HIST_ZERO] = 68;
    h[BIN(-32)] = 1;
    h[BIN(-28)] = 1;
    h[BIN(-24)] = 1;
    h[BIN(-21)] = 1;
    h[BIN(-8)] = 26;
    h[BIN(1)] = 2;
}

START_TEST(mindspore_case_fp16)
{
    uint64_t h[AK_HIST_BINS];
    mindspore_hist(h);
    an_fractions f;

    /* scale 1: -32 and -28 flush; -24 and -21 are subnormal; the rest normal */
    ck_assert_int_eq(an_hist_fractions(h, FPE_FMT_F16, 1.0, &f), AN_OK);
    ck_assert_uint_eq(f.count, 100);
    ck_assert_uint_eq(f.zero, 68);
    ck_assert_uint_eq(f.nonzero, 32);
    ck_assert_uint_eq(f.nonfinite, 0);
    ck_assert(f.flushed == 2 && f.subnormal == 2 && f.overflowed == 0);
    ck_assert(f.zero_frac_of_all == 0.68);
    ck_assert(f.flushed_frac_of_nonzero == 2.0 / 32); /* 0.0625 */
    ck_assert(f.subnormal_frac_of_nonzero == 2.0 / 32);
    ck_assert(f.overflow_frac_of_nonzero == 0);
    ck_assert(f.zero_after_cast_frac_of_all == 0.70); /* (68 + 2) / 100 */
    ck_assert(f.exact);
    ck_assert(f.scale == 1.0 && f.target == FPE_FMT_F16);

    /* scale 1024 = 2^10: -32 -> -22 and -28 -> -18 subnormal; -24 -> -14 and
     * -21 -> -11 normal; -8 -> 2; 1 -> 11: nothing flushes */
    ck_assert_int_eq(an_hist_fractions(h, FPE_FMT_F16, 1024.0, &f), AN_OK);
    ck_assert(f.flushed == 0 && f.subnormal == 2 && f.overflowed == 0);
    ck_assert(f.zero_after_cast_frac_of_all == 0.68);

    /* 2^15: -32 -> -17 subnormal, -28 -> -13 normal; 1 -> 16 overflows */
    ck_assert_int_eq(an_hist_fractions(h, FPE_FMT_F16, 32768.0, &f), AN_OK);
    ck_assert(f.flushed == 0 && f.subnormal == 1 && f.overflowed == 2);
    ck_assert(f.overflow_frac_of_nonzero == 2.0 / 32);

    /* 2^-8: -21 -> -29, -24 -> -32 ... all four small ones flush; -8 -> -16
     * is subnormal (26); 1 -> -7 normal */
    ck_assert_int_eq(an_hist_fractions(h, FPE_FMT_F16, 0x1p-8, &f), AN_OK);
    ck_assert(f.flushed == 4 && f.subnormal == 26 && f.overflowed == 0);
    ck_assert(f.zero_after_cast_frac_of_all == 0.72);
}
END_TEST

/* One value in each binade next to an fp16 class edge. */
START_TEST(edge_binades_fp16)
{
    uint64_t h[AK_HIST_BINS];
    clear(h);
    const int bins[] = {-26, -25, -15, -14, 15, 16};
    for (size_t i = 0; i < 6; i++)
        h[BIN(bins[i])] = 1;
    h[AK_HIST_NONFINITE] = 3; /* counted, but in no class of the nonzero */
    an_fractions f;
    ck_assert_int_eq(an_hist_fractions(h, FPE_FMT_F16, 1.0, &f), AN_OK);
    /* -26 flushes; -25, -15 subnormal; -14, 15 normal; 16 overflows */
    ck_assert(f.flushed == 1 && f.subnormal == 2 && f.overflowed == 1);
    ck_assert_uint_eq(f.count, 9);
    ck_assert_uint_eq(f.nonzero, 6);
    ck_assert_uint_eq(f.nonfinite, 3);
    ck_assert(f.zero_frac_of_all == 0);
    ck_assert(f.zero_after_cast_frac_of_all == 1.0 / 9);
    /* at 2: -26 -> -25 subnormal, -15 -> -14 normal, 15 -> 16 overflows */
    ck_assert_int_eq(an_hist_fractions(h, FPE_FMT_F16, 2.0, &f), AN_OK);
    ck_assert(f.flushed == 0 && f.subnormal == 2 && f.overflowed == 2);
    /* at 0.5: -25 -> -26 flushes, -14 -> -15 subnormal, 16 -> 15 normal */
    ck_assert_int_eq(an_hist_fractions(h, FPE_FMT_F16, 0.5, &f), AN_OK);
    ck_assert(f.flushed == 2 && f.subnormal == 2 && f.overflowed == 0);
    ck_assert(f.exact);
}
END_TEST

/* bf16: flushes at binade <= -135 (2^-134 is half its smallest subnormal
 * 2^-133), subnormal -134 to -127, normal -126 to 127; fp32: subnormal down
 * to binade -150, flushed below. */
START_TEST(edge_binades_bf16_fp32)
{
    uint64_t h[AK_HIST_BINS];
    clear(h);
    h[BIN(-135)] = 1;
    h[BIN(-134)] = 2;
    h[BIN(-127)] = 4;
    h[BIN(-126)] = 8;
    h[BIN(127)] = 16;
    h[AK_HIST_ZERO] = 1;
    an_fractions f;
    ck_assert_int_eq(an_hist_fractions(h, FPE_FMT_BF16, 1.0, &f), AN_OK);
    ck_assert(f.flushed == 1 && f.subnormal == 6 && f.overflowed == 0);
    ck_assert_uint_eq(f.nonzero, 31);
    ck_assert(f.zero_after_cast_frac_of_all == 2.0 / 32);
    /* at 2: -135 -> -134 subnormal, -127 -> -126 normal, 127 -> 128 overflows */
    ck_assert_int_eq(an_hist_fractions(h, FPE_FMT_BF16, 2.0, &f), AN_OK);
    ck_assert(f.flushed == 0 && f.subnormal == 3 && f.overflowed == 16);
    /* fp32 at 1: -135 to -127 subnormal (flush edge -150), nothing else */
    ck_assert_int_eq(an_hist_fractions(h, FPE_FMT_F32, 1.0, &f), AN_OK);
    ck_assert(f.flushed == 0 && f.subnormal == 7 && f.overflowed == 0);
    /* fp32 at 2^-15: -135 -> -150 is still subnormal (only 2^-150 itself
     * ties to 0), -134 -> -149; -127 -> -142; -126 -> -141 subnormal too */
    ck_assert_int_eq(an_hist_fractions(h, FPE_FMT_F32, 0x1p-15, &f), AN_OK);
    ck_assert(f.flushed == 0 && f.subnormal == 15 && f.overflowed == 0);
    /* fp32 at 2^-16: -135 -> -151 flushes */
    ck_assert_int_eq(an_hist_fractions(h, FPE_FMT_F32, 0x1p-16, &f), AN_OK);
    ck_assert(f.flushed == 1 && f.subnormal == 14);
    /* the smallest fp32 subnormal, binade -149, at 1/2 and 1/4 */
    clear(h);
    h[BIN(-149)] = 5;
    ck_assert_int_eq(an_hist_fractions(h, FPE_FMT_F32, 0.5, &f), AN_OK);
    ck_assert(f.flushed == 0 && f.subnormal == 5);
    ck_assert_int_eq(an_hist_fractions(h, FPE_FMT_F32, 0.25, &f), AN_OK);
    ck_assert(f.flushed == 5 && f.subnormal == 0);
    ck_assert(f.flushed_frac_of_nonzero == 1.0);
}
END_TEST

/* A scale that is not a power of two cuts binades at the class edges,
 * split by log2 width.  S = 3: log2 3 = 1.5849625007211562.
 *   binade -27 -> [-25.415, -24.415): flush edge -25 inside; flushed share
 *     -25 - (-27 + log2 3) = 2 - log2 3 = 0.41503749927884376;
 *   binade -16 -> [-14.415, -13.415): normal edge -14: subnormal share
 *     2 - log2 3;
 *   binade 14 -> [15.585, 16.585): overflow edge 16: overflow share
 *     log2 3 - 1 = 0.5849625007211562;
 *   binade -10 -> [-8.415, -7.415): normal, whole. */
START_TEST(non_pow2_scale_splits)
{
    uint64_t h[AK_HIST_BINS];
    clear(h);
    h[BIN(-27)] = 4;
    h[BIN(-16)] = 2;
    h[BIN(14)] = 10;
    h[BIN(-10)] = 4;
    an_fractions f;
    ck_assert_int_eq(an_hist_fractions(h, FPE_FMT_F16, 3.0, &f), AN_OK);
    const double a = 0.41503749927884376, b = 0.5849625007211562;
    ck_assert_double_eq_tol(f.flushed, 4 * a, 1e-12);
    /* subnormal: the rest of -27 (4 b) and the share of -16 (2 a) */
    ck_assert_double_eq_tol(f.subnormal, 4 * b + 2 * a, 1e-12);
    ck_assert_double_eq_tol(f.overflowed, 10 * b, 1e-12);
    ck_assert_double_eq_tol(f.flushed_frac_of_nonzero, 4 * a / 20, 1e-12);
    ck_assert(!f.exact);

    /* 1.5 cuts no class edge for binades in the middle of the range:
     * -10 -> [-9.415, -8.415) and 14 -> [14.585, 15.585) are normal */
    clear(h);
    h[BIN(-10)] = 3;
    h[BIN(14)] = 1;
    ck_assert_int_eq(an_hist_fractions(h, FPE_FMT_F16, 1.5, &f), AN_OK);
    ck_assert(f.flushed == 0 && f.subnormal == 0 && f.overflowed == 0);
    ck_assert(f.exact);
    /* ... but 2.5 moves 14 to [15.32, 16.32): 0.32 of it overflows */
    ck_assert_int_eq(an_hist_fractions(h, FPE_FMT_F16, 2.5, &f), AN_OK);
    ck_assert_double_eq_tol(f.overflowed, log2(2.5) - 1, 1e-12);
    ck_assert(!f.exact);
}
END_TEST

START_TEST(fractions_empty_and_bad_args)
{
    uint64_t h[AK_HIST_BINS];
    clear(h);
    an_fractions f;
    /* nothing at all: every fraction 0, not NaN */
    ck_assert_int_eq(an_hist_fractions(h, FPE_FMT_BF16, 8.0, &f), AN_OK);
    ck_assert(f.count == 0 && f.zero_frac_of_all == 0 && f.flushed_frac_of_nonzero == 0 &&
              f.zero_after_cast_frac_of_all == 0);
    /* only zeros */
    h[AK_HIST_ZERO] = 7;
    ck_assert_int_eq(an_hist_fractions(h, FPE_FMT_F16, 1.0, &f), AN_OK);
    ck_assert(f.zero_frac_of_all == 1 && f.flushed_frac_of_nonzero == 0);

    ck_assert_int_eq(an_hist_fractions(NULL, FPE_FMT_F16, 1.0, &f), AN_EINVAL);
    ck_assert_int_eq(an_hist_fractions(h, FPE_FMT_F16, 1.0, NULL), AN_EINVAL);
    ck_assert_int_eq(an_hist_fractions(h, FPE_FMT_F16, 0.0, &f), AN_EINVAL);
    ck_assert_int_eq(an_hist_fractions(h, FPE_FMT_F16, -2.0, &f), AN_EINVAL);
    ck_assert_int_eq(an_hist_fractions(h, FPE_FMT_F16, NAN, &f), AN_EINVAL);
    ck_assert_int_eq(an_hist_fractions(h, FPE_FMT_F16, INFINITY, &f), AN_EINVAL);
    ck_assert_int_eq(an_hist_fractions(h, (fpe_format_id)3, 1.0, &f), AN_EINVAL);
    ck_assert_int_eq(an_hist_fractions(h, (fpe_format_id)-1, 1.0, &f), AN_EINVAL);
}
END_TEST

/* The thresholds: fp16 65520 = 65504 + 16 (half its ulp 32), a tie that
 * rounds to the even infinity; bf16 2^128 - 2^119; fp32 2^128 - 2^103. */
START_TEST(overflow_test)
{
    ck_assert(!an_overflows(65504.0, 1.0, FPE_FMT_F16));
    ck_assert(!an_overflows(65519.99609375, 1.0, FPE_FMT_F16));
    ck_assert(an_overflows(65520.0, 1.0, FPE_FMT_F16));
    ck_assert(an_overflows(32760.0, 2.0, FPE_FMT_F16));
    ck_assert(!an_overflows(32759.5, 2.0, FPE_FMT_F16));
    ck_assert(an_overflows(1.0, 65536.0, FPE_FMT_F16));
    ck_assert(!an_overflows(0.5, 65536.0, FPE_FMT_F16));
    ck_assert(an_overflows(21840.0, 3.0, FPE_FMT_F16)); /* 3 x 21840 = 65520 */
    ck_assert(an_overflows(INFINITY, 1.0, FPE_FMT_F16));
    ck_assert(!an_overflows(NAN, 1.0, FPE_FMT_F16));
    ck_assert(!an_overflows(0.0, 1e300, FPE_FMT_F16));
    ck_assert(an_overflows(1e300, 1e300, FPE_FMT_F16)); /* inf in double too */
    ck_assert(!an_overflows(1.0, 1.0, (fpe_format_id)7));

    /* Products a double rounds onto 65520 exactly, decided by the exact
     * product's side:
     *   (65520 - 4095 2^-37)(1 + 2^-41) = 65520 - 4095 2^-78 < 65520: no;
     *   (65520 + 2^-26)(1 - 2^-42) = 65520 + 2^-26 - 65520 2^-42 - 2^-68
     *     = 65520 + 2^-38 - 2^-68 > 65520: yes (65520 2^-42 = 4095 2^-38). */
    const double below = 65520.0 - 4095 * 0x1p-37, s_below = 1 + 0x1p-41;
    const double above = 65520.0 + 0x1p-26, s_above = 1 - 0x1p-42;
    ck_assert(below * s_below == 65520.0); /* the double products do land on it */
    ck_assert(above * s_above == 65520.0);
    ck_assert(!an_overflows(below, s_below, FPE_FMT_F16));
    ck_assert(an_overflows(above, s_above, FPE_FMT_F16));

    const double bf16_t = 0x1p128 - 0x1p119, fp32_t = 0x1p128 - 0x1p103;
    ck_assert(!an_overflows(0x1p128 - 0x1p120, 1.0, FPE_FMT_BF16)); /* bf16 max */
    ck_assert(an_overflows(bf16_t, 1.0, FPE_FMT_BF16));
    ck_assert(!an_overflows(bf16_t - 0x1p75, 1.0, FPE_FMT_BF16));
    ck_assert(an_overflows(1.0, 0x1p128, FPE_FMT_BF16));
    ck_assert(!an_overflows(fp32_t - 0x1p75, 1.0, FPE_FMT_F32));
    ck_assert(an_overflows(fp32_t, 1.0, FPE_FMT_F32));
    ck_assert(!an_overflows(0x1.fffffep127, 1.0, FPE_FMT_F32)); /* fp32 max */
    /* what fp16 overflows bf16 holds */
    ck_assert(!an_overflows(65520.0, 1.0, FPE_FMT_BF16));
}
END_TEST

START_TEST(best_pow2_scale)
{
    /* fp16: 1 x 2^16 = 65536 overflows, 2^15 does not */
    ck_assert(an_best_pow2_scale(1.0, FPE_FMT_F16) == 0x1p15);
    ck_assert(an_best_pow2_scale(0.5, FPE_FMT_F16) == 0x1p16);
    ck_assert(an_best_pow2_scale(0.75, FPE_FMT_F16) == 0x1p16); /* 49152 */
    /* 65520 / 65536 x 2^16 = 65520 overflows; the next double below does not */
    ck_assert(an_best_pow2_scale(65520.0 / 65536.0, FPE_FMT_F16) == 0x1p15);
    ck_assert(an_best_pow2_scale(nextafter(65520.0 / 65536.0, 0), FPE_FMT_F16) == 0x1p16);
    ck_assert(an_best_pow2_scale(65504.0, FPE_FMT_F16) == 1.0);
    ck_assert(an_best_pow2_scale(65520.0, FPE_FMT_F16) == 0.5);
    ck_assert(an_best_pow2_scale(1e10, FPE_FMT_F16) == 0x1p-18); /* 1e10 ~ 2^33.2 */
    ck_assert(an_best_pow2_scale(0x1p-30, FPE_FMT_F16) == 0x1p45);
    ck_assert(an_best_pow2_scale(0x1p-200, FPE_FMT_F16) == 0x1p127); /* capped */
    ck_assert(an_best_pow2_scale(0x1p-1074, FPE_FMT_F32) == 0x1p127);
    /* bf16: the threshold 2^128 - 2^119; 2 - 2^-7 (its max mantissa) x 2^127
     * = 2^128 - 2^120 fits, 2 - 2^-8 lands on the threshold */
    ck_assert(an_best_pow2_scale(1.0, FPE_FMT_BF16) == 0x1p127);
    ck_assert(an_best_pow2_scale(2 - 0x1p-7, FPE_FMT_BF16) == 0x1p127);
    ck_assert(an_best_pow2_scale(2 - 0x1p-8, FPE_FMT_BF16) == 0x1p126);
    ck_assert(an_best_pow2_scale(2.0, FPE_FMT_BF16) == 0x1p126);
    ck_assert(an_best_pow2_scale(65536.0, FPE_FMT_BF16) == 0x1p111);
    /* fp32: 2 - 2^-23 (its max mantissa) fits at 2^127, 2 - 2^-24 does not */
    ck_assert(an_best_pow2_scale(2 - 0x1p-23, FPE_FMT_F32) == 0x1p127);
    ck_assert(an_best_pow2_scale(2 - 0x1p-24, FPE_FMT_F32) == 0x1p126);
    /* no scale is defined */
    ck_assert(an_best_pow2_scale(0.0, FPE_FMT_F16) == 0);
    ck_assert(an_best_pow2_scale(-1.0, FPE_FMT_F16) == 0);
    ck_assert(an_best_pow2_scale(INFINITY, FPE_FMT_F16) == 0);
    ck_assert(an_best_pow2_scale(NAN, FPE_FMT_F16) == 0);
    ck_assert(an_best_pow2_scale(1.0, (fpe_format_id)3) == 0);
}
END_TEST

START_TEST(merge)
{
    uint64_t a[AK_HIST_BINS], b[AK_HIST_BINS];
    clear(a);
    clear(b);
    a[AK_HIST_ZERO] = 3;
    a[BIN(-5)] = 2;
    b[BIN(-5)] = 5;
    b[BIN(AK_HIST_EMAX)] = 1;
    b[AK_HIST_NONFINITE] = 4;
    an_hist_merge(a, b);
    ck_assert_uint_eq(a[AK_HIST_ZERO], 3);
    ck_assert_uint_eq(a[BIN(-5)], 7);
    ck_assert_uint_eq(a[BIN(AK_HIST_EMAX)], 1);
    ck_assert_uint_eq(a[AK_HIST_NONFINITE], 4);
    ck_assert_uint_eq(b[BIN(-5)], 5); /* src untouched */
    uint64_t total = 0;
    for (int i = 0; i < AK_HIST_BINS; i++)
        total += a[i];
    ck_assert_uint_eq(total, 15);
    an_hist_merge(a, NULL); /* harmless */
    an_hist_merge(NULL, b);
    ck_assert_uint_eq(a[BIN(-5)], 7);
}
END_TEST

/* Quantiles of log2|x|: the cumulative share reaches q inside a binade and
 * is interpolated linearly across it. */
START_TEST(quantiles)
{
    uint64_t h[AK_HIST_BINS];
    clear(h);
    h[BIN(-3)] = 1;
    h[BIN(-2)] = 1;
    h[AK_HIST_ZERO] = 100; /* zeros and non-finite values are not counted */
    h[AK_HIST_NONFINITE] = 5;
    /* GSL normalizes by the mean count, so the cumulative shares carry a
     * rounding: compare to 1e-9 */
    double v;
    ck_assert_int_eq(an_hist_quantile(h, 0.0, &v), AN_OK);
    ck_assert_double_eq_tol(v, -3.0, 1e-9);
    ck_assert_int_eq(an_hist_quantile(h, 0.25, &v), AN_OK);
    ck_assert_double_eq_tol(v, -2.5, 1e-9);
    ck_assert_int_eq(an_hist_quantile(h, 0.5, &v), AN_OK);
    ck_assert_double_eq_tol(v, -2.0, 1e-9);
    ck_assert_int_eq(an_hist_quantile(h, 0.75, &v), AN_OK);
    ck_assert_double_eq_tol(v, -1.5, 1e-9);
    ck_assert_int_eq(an_hist_quantile(h, 1.0, &v), AN_OK);
    ck_assert(v == -1.0); /* the top edge, not GSL's wrap to the bottom */

    /* empty binades between count nothing: the first quarter lies in -10,
     * the last in -5 */
    clear(h);
    h[BIN(-10)] = 2;
    h[BIN(-5)] = 2;
    ck_assert_int_eq(an_hist_quantile(h, 0.25, &v), AN_OK);
    ck_assert_double_eq_tol(v, -9.5, 1e-9);
    ck_assert_int_eq(an_hist_quantile(h, 0.75, &v), AN_OK);
    ck_assert_double_eq_tol(v, -4.5, 1e-9);

    /* 3 in binade 0, 1 in binade 1: the median lies 0.5 / 0.75 into binade 0 */
    clear(h);
    h[BIN(0)] = 3;
    h[BIN(1)] = 1;
    ck_assert_int_eq(an_hist_quantile(h, 0.5, &v), AN_OK);
    ck_assert_double_eq_tol(v, 2.0 / 3.0, 1e-9);
    ck_assert_int_eq(an_hist_quantile(h, 0.875, &v), AN_OK);
    ck_assert_double_eq_tol(v, 1.5, 1e-9);

    /* the extreme binades */
    clear(h);
    h[BIN(AK_HIST_EMIN)] = 1;
    h[BIN(AK_HIST_EMAX)] = 1;
    ck_assert_int_eq(an_hist_quantile(h, 0.0, &v), AN_OK);
    ck_assert_double_eq_tol(v, AK_HIST_EMIN, 1e-9);
    ck_assert_int_eq(an_hist_quantile(h, 1.0, &v), AN_OK);
    ck_assert(v == AK_HIST_EMAX + 1);
    /* a value just below 1 lands in the top binade, near its top */
    ck_assert_int_eq(an_hist_quantile(h, 0.999999, &v), AN_OK);
    ck_assert_double_eq_tol(v, AK_HIST_EMAX + 1 - 2e-6, 1e-8);

    /* bad arguments, and no finite nonzero value */
    ck_assert_int_eq(an_hist_quantile(h, -0.1, &v), AN_EINVAL);
    ck_assert_int_eq(an_hist_quantile(h, 1.1, &v), AN_EINVAL);
    ck_assert_int_eq(an_hist_quantile(h, NAN, &v), AN_EINVAL);
    ck_assert_int_eq(an_hist_quantile(NULL, 0.5, &v), AN_EINVAL);
    ck_assert_int_eq(an_hist_quantile(h, 0.5, NULL), AN_EINVAL);
    clear(h);
    h[AK_HIST_ZERO] = 4;
    h[AK_HIST_NONFINITE] = 1;
    ck_assert_int_eq(an_hist_quantile(h, 0.5, &v), AN_EINVAL);
}
END_TEST

static Suite *precision_stats_suite(void)
{
    Suite *s = suite_create("analyze_precision_stats");
    TCase *tc = tcase_create("precision_stats");
    tcase_add_test(tc, mindspore_case_fp16);
    tcase_add_test(tc, edge_binades_fp16);
    tcase_add_test(tc, edge_binades_bf16_fp32);
    tcase_add_test(tc, non_pow2_scale_splits);
    tcase_add_test(tc, fractions_empty_and_bad_args);
    tcase_add_test(tc, overflow_test);
    tcase_add_test(tc, best_pow2_scale);
    tcase_add_test(tc, merge);
    tcase_add_test(tc, quantiles);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return ts_run_suite(precision_stats_suite()); }
