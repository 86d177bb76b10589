/* test_sum_squares: ak_sum_squares on the cpu backend.  The reference: the
 * squares (exact in double) summed in long double in order
 * (kt_tlist_sum_squares), and a case built so that an uncompensated in-order
 * double sum is off by thousands of ulps. */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "kt.h"
#include "kt_tlist.h"

static bool is_nonfinite(ak_dtype dt, uint32_t bits)
{
    switch (dt) {
    case AK_F16: return (bits & 0x7C00u) == 0x7C00u;
    case AK_BF16: return (bits & 0x7F80u) == 0x7F80u;
    default: return (bits & 0x7F800000u) == 0x7F800000u;
    }
}

/* The same element made finite (the exponent's top bit cleared). */
static uint32_t finite_of(ak_dtype dt, uint32_t bits)
{
    if (!is_nonfinite(dt, bits)) return bits;
    return dt == AK_F32 ? bits & 0xBFFFFFFFu : bits & 0xBFFFu;
}

/* ---- sum of squares ------------------------------------------------------------------ */
/* Random lists (every pattern class made finite, or ordinary values of
 * spread magnitudes) against the long double sum, to 1e-13 relative. */
START_TEST(sum_squares_matches_reference)
{
    static const size_t sizes[6] = {1000, 0, 77777, 1, 4097, 65536};
    static const ak_dtype dts[6] = {AK_F32, AK_F16, AK_BF16, AK_F16, AK_F32, AK_F16};
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 30);
    double *sumsq = kt_sumsq_alloc(b, 0.0);
    for (int pass = 0; pass < 2; pass++) {
        kt_tlist l = kt_tlist_make(b, 6, sizes, dts);
        for (size_t i = 0; i < 6; i++) {
            if (pass == 0) {
                kt_fill_bits(&r, dts[i], l.x[i], sizes[i]);
                for (size_t j = 0; j < sizes[i]; j++)
                    l.x[i][j] = finite_of(dts[i], l.x[i][j]);
            } else {
                kt_fill_values(&r, dts[i], l.x[i], sizes[i], ldexp(1.0, (int)i * 3 - 8));
            }
        }
        kt_tlist_upload(&l);
        const double zero = 0.0;
        kt_dev_put(b, sumsq, &zero, sizeof zero);
        ck_assert_msg(ak_sum_squares(b, l.t, 6, sumsq) == AK_OK, "%s", ak_error(b));
        const double got = kt_sumsq_get(b, sumsq), want = (double)kt_tlist_sum_squares(&l);
        ck_assert_msg(isfinite(want) && want > 0, "pass %d: reference %g", pass, want);
        ck_assert_msg(kt_agree_within(got, want, 1e-13 * want), "pass %d: got %.17g expected %.17g",
                      pass, got, want);
        kt_tlist_free(&l);
    }
    kt_dev_free(b, sumsq);
    ak_close(b);
}
END_TEST

/* 2^20 (the square of 2^10) followed by 100000 squares t of 2^-17 (1 +
 * 2^-11): each t is below half an ulp of 2^20, so an in-order double sum
 * without its rounding errors stays at 2^20, 25000 ulps off.  The exact sum
 * 2^20 + 100000 t rounds once in double (100000 t is exact). */
START_TEST(sum_squares_carries_rounding_errors)
{
    enum { N = 100000 };
    ak_backend *b = kt_open_cpu();
    const size_t sizes[2] = {1, N};
    const ak_dtype dts[2] = {AK_F32, AK_F32};
    kt_tlist l = kt_tlist_make(b, 2, sizes, dts);
    const float small = ldexpf(1.0f + ldexpf(1.0f, -11), -17);
    l.x[0][0] = kt_f32_bits(1024.0f);
    for (size_t j = 0; j < N; j++)
        l.x[1][j] = kt_f32_bits(small);
    kt_tlist_upload(&l);
    double *sumsq = kt_sumsq_alloc(b, 0.0);
    ck_assert_int_eq(ak_sum_squares(b, l.t, 2, sumsq), AK_OK);
    const double t = (double)small * (double)small;
    const double want = 0x1p20 + (double)N * t;
    const double got = kt_sumsq_get(b, sumsq);
    ck_assert_msg(fabs(got - want) <= 2 * 0x1p-32, "got %.17g expected %.17g (plain sum: %.17g)",
                  got, want, 0x1p20);
    kt_tlist_free(&l);
    kt_dev_free(b, sumsq);
    ak_close(b);
}
END_TEST

/* *sumsq accumulates: a starting value plus two calls. */
START_TEST(sum_squares_accumulates)
{
    static const size_t sa[3] = {300, 5000, 17}, sb[2] = {40000, 2};
    static const ak_dtype da[3] = {AK_BF16, AK_F32, AK_F16}, db[2] = {AK_F16, AK_F32};
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 31);
    kt_tlist la = kt_tlist_make(b, 3, sa, da), lb = kt_tlist_make(b, 2, sb, db);
    for (size_t i = 0; i < 3; i++)
        kt_fill_values(&r, da[i], la.x[i], sa[i], 3.0);
    for (size_t i = 0; i < 2; i++)
        kt_fill_values(&r, db[i], lb.x[i], sb[i], 0.25);
    kt_tlist_upload(&la);
    kt_tlist_upload(&lb);
    double *sumsq = kt_sumsq_alloc(b, 3.5);
    ck_assert_int_eq(ak_sum_squares(b, la.t, 3, sumsq), AK_OK);
    const double after_a = kt_sumsq_get(b, sumsq);
    const long double ra = kt_tlist_sum_squares(&la), rb = kt_tlist_sum_squares(&lb);
    const double want_a = (double)(3.5L + ra), want = (double)(3.5L + ra + rb);
    ck_assert_msg(kt_agree_within(after_a, want_a, 1e-13 * want_a), "got %.17g expected %.17g",
                  after_a, want_a);
    ck_assert_int_eq(ak_sum_squares(b, lb.t, 2, sumsq), AK_OK);
    const double got = kt_sumsq_get(b, sumsq);
    ck_assert_msg(kt_agree_within(got, want, 1e-13 * want), "got %.17g expected %.17g", got, want);
    kt_tlist_free(&la);
    kt_tlist_free(&lb);
    kt_dev_free(b, sumsq);
    ak_close(b);
}
END_TEST

/* Sum of squares of a two-tensor list: a fp32 tensor {1, e32} and an fp16
 * tensor {0.5, e16}, starting from start. */
static double sum_squares_of(ak_backend *b, uint32_t e32, uint32_t e16, double start)
{
    const size_t sizes[2] = {2, 2};
    const ak_dtype dts[2] = {AK_F32, AK_F16};
    kt_tlist l = kt_tlist_make(b, 2, sizes, dts);
    l.x[0][0] = 0x3F800000u;
    l.x[0][1] = e32;
    l.x[1][0] = 0x3800;
    l.x[1][1] = e16;
    kt_tlist_upload(&l);
    double *sumsq = kt_sumsq_alloc(b, start);
    ck_assert_msg(ak_sum_squares(b, l.t, 2, sumsq) == AK_OK, "%s", ak_error(b));
    const double v = kt_sumsq_get(b, sumsq);
    kt_tlist_free(&l);
    kt_dev_free(b, sumsq);
    return v;
}

/* Infinities give +inf, NaNs (quiet or signaling, any sign) NaN, both NaN;
 * the largest fp32 squares without overflow; an empty list or a list of
 * empty tensors leaves *sumsq alone. */
START_TEST(sum_squares_special_values)
{
    ak_backend *b = kt_open_cpu();
    const double one_quarter = 1.0 + 0.25;
    ck_assert(sum_squares_of(b, 0x00000000u, 0x0000, 0.0) == one_quarter);
    ck_assert(sum_squares_of(b, 0xFF800000u, 0x0000, 0.0) == INFINITY);
    ck_assert(sum_squares_of(b, 0x00000000u, 0x7C00, 0.0) == INFINITY);
    ck_assert(sum_squares_of(b, 0x00000000u, 0xFC00, 2.0) == INFINITY);
    ck_assert(isnan(sum_squares_of(b, 0x7FC00000u, 0x0000, 0.0)));
    ck_assert(isnan(sum_squares_of(b, 0xFF800001u, 0x0000, 0.0))); /* signaling */
    ck_assert(isnan(sum_squares_of(b, 0x00000000u, 0xFE00, 0.0)));
    ck_assert(isnan(sum_squares_of(b, 0xFF800000u, 0x7D00, 0.0))); /* inf and NaN */
    ck_assert(isnan(sum_squares_of(b, 0x00000000u, 0x0000, NAN)));
    ck_assert(sum_squares_of(b, 0x00000000u, 0x0000, INFINITY) == INFINITY);
    /* FLT_MAX^2 ~ 2^256 and the least subnormals' squares are exact in double */
    const double m = (double)FLT_MAX;
    ck_assert(sum_squares_of(b, 0x7F7FFFFFu, 0x0000, 0.0) == m * m + one_quarter);
    ck_assert(sum_squares_of(b, 0x00000001u, 0x0001, 0.0) == one_quarter + 0x1p-48 + 0x1p-298);
    /* nothing to do */
    double *sumsq = kt_sumsq_alloc(b, 0.75);
    ck_assert_int_eq(ak_sum_squares(b, NULL, 0, sumsq), AK_OK);
    const ak_tensor empty[2] = {ak_tensor_none(), ak_tensor_of(NULL, 0, AK_F16)};
    ck_assert_int_eq(ak_sum_squares(b, empty, 2, sumsq), AK_OK);
    ck_assert(kt_sumsq_get(b, sumsq) == 0.75);
    ck_assert_str_eq(ak_error(b), "");
    kt_dev_free(b, sumsq);
    ak_close(b);
}
END_TEST

/* ---- bad arguments ----------------------------------------------------------------------- */
START_TEST(sum_squares_bad_arguments_named)
{
    ak_backend *b = kt_open_cpu();
    kt_buf x = kt_buf_alloc(b, 10, AK_F32), y = kt_buf_alloc(b, 10, AK_F32);
    double *sumsq = kt_sumsq_alloc(b, 0.0);
    char *xd = x.t.data;

    /* ak_sum_squares */
    ak_tensor xs[5] = {x.t, y.t, ak_tensor_none(), ak_tensor_of(NULL, 10, AK_BF16), x.t};
    ck_assert_int_eq(ak_sum_squares(NULL, xs, 2, sumsq), AK_EINVAL);
    KT_EXPECT_ERROR(b, ak_sum_squares(b, NULL, 3, sumsq), AK_EINVAL, NULL,
                    "ak_sum_squares: xs is NULL with 3 tensors");
    KT_EXPECT_ERROR(b, ak_sum_squares(b, xs, 2, NULL), AK_EINVAL, NULL,
                    "ak_sum_squares: sumsq is NULL");
    KT_EXPECT_ERROR(b, ak_sum_squares(b, xs, 2, (double *)(void *)((char *)sumsq + 4)), AK_EINVAL,
                    NULL, "ak_sum_squares: sumsq");
    ck_assert_msg(strstr(ak_error(b), "not aligned to 8 bytes"), "%s", ak_error(b));
    KT_EXPECT_ERROR(b, ak_sum_squares(b, xs, 5, sumsq), AK_EINVAL, NULL,
                    "ak_sum_squares: xs[3] is NULL with 10 elements");
    xs[3] = ak_tensor_of(xd, 2, (ak_dtype)-3);
    KT_EXPECT_ERROR(b, ak_sum_squares(b, xs, 5, sumsq), AK_EINVAL, NULL,
                    "ak_sum_squares: xs[3] has an invalid dtype (-3)");
    KT_EXPECT_ERROR(b, ak_sum_squares(b, xs, 2, (double *)(void *)(xd + 8)), AK_EINVAL,
                    "ak_sum_squares: sumsq (", "overlaps xs[0]");
    /* nothing to do */
    ck_assert_int_eq(ak_sum_squares(b, NULL, 0, sumsq), AK_OK);
    ck_assert_str_eq(ak_error(b), "");

    ck_assert(kt_buf_guards_ok(&x) && kt_buf_guards_ok(&y));
    kt_buf_free(&x);
    kt_buf_free(&y);
    kt_dev_free(b, sumsq);
    ak_close(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_sum_squares");
    TCase *tc = tcase_create("sum_squares");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, sum_squares_matches_reference);
    tcase_add_test(tc, sum_squares_carries_rounding_errors);
    tcase_add_test(tc, sum_squares_accumulates);
    tcase_add_test(tc, sum_squares_special_values);
    tcase_add_test(tc, sum_squares_bad_arguments_named);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
