/* test_avgpool: ak_avgpool_forward and ak_avgpool_backward on the cpu
 * backend: the fp32 sum in index order written here, hand examples (an
 * order-dependent sum, specials, fp16 outputs), every dtype pairing, the
 * backward against finite differences, bad arguments, guard regions. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "kt.h"
#include "kt_fd.h"

/* The mean of a plane as specified: fp32 sum in index order, / hw in fp32. */
static uint32_t mean_f32(ak_dtype dx, const uint32_t *x, size_t hw)
{
    float s = 0.0f;
    for (size_t i = 0; i < hw; i++)
        s += kt_f32_of(kt_to_f32(dx, x[i]));
    const float m = s / (float)hw;
    return m != m ? kt_default_nan(AK_F32) : kt_f32_bits(m);
}

START_TEST(forward_every_dtype)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 50);
    const size_t planes = 37, hw = 49, n = planes * hw;
    uint32_t *x = kt_bits_alloc(n), *got = kt_bits_alloc(planes), *want = kt_bits_alloc(planes);
    for (int c = 0; c < 9; c++) {
        const ak_dtype dy = kt_dtypes[c / 3], dx = kt_dtypes[c % 3];
        for (int v = 0; v < 2; v++) {
            if (v)
                kt_fill_values(&r, dx, x, n, 8.0);
            else
                kt_fill_bits(&r, dx, x, n);
            kt_buf tx = kt_buf_alloc(b, n, dx), ty = kt_buf_alloc(b, planes, dy);
            kt_buf_put(&tx, x);
            ck_assert_int_eq(ak_avgpool_forward(b, planes, hw, ty.t, tx.t), AK_OK);
            kt_buf_get(&ty, got);
            for (size_t p = 0; p < planes; p++) {
                want[p] = kt_convert(AK_F32, dy, mean_f32(dx, x + p * hw, hw));
                if (v) { /* ordinary values: within the fp32 sum's bound of the double mean */
                    double exact = 0, abs_sum = 0;
                    for (size_t i = 0; i < hw; i++) {
                        exact += kt_value(dx, x[p * hw + i]);
                        abs_sum += fabs(kt_value(dx, x[p * hw + i]));
                    }
                    exact /= (double)hw;
                    const double bound = (double)(hw - 1) * 0x1p-24 * abs_sum / (double)hw +
                                         kt_ulp(AK_F32, exact) + kt_ulp(dy, exact);
                    ck_assert(fabs(kt_value(dy, got[p]) - exact) <= bound);
                }
            }
            ck_assert_msg(kt_bits_mismatches("avgpool", dy, got, want, planes) == 0, "y %s x %s",
                          ak_dtype_name(dy), ak_dtype_name(dx));
            ck_assert(kt_buf_guards_ok(&tx) && kt_buf_guards_ok(&ty));
            kt_buf_free(&tx);
            kt_buf_free(&ty);
        }
    }
    free(x);
    free(got);
    free(want);
    ak_close(b);
}
END_TEST

START_TEST(forward_by_hand)
{
    ak_backend *b = kt_open_cpu();
    /* [1 2 3 4] -> 2.5; [1, 2^24, -2^24] -> (1 + 2^24 rounds to 2^24) - 2^24 =
     * 0, / 3 = 0 (fp32 in index order; the exact mean is 1/3); [+inf, -inf]
     * -> NaN; [NaN, 1] -> the default NaN; [1, 1, 1] -> 1 */
    const float x[14] = {1,        2,         3,   4, 1, 16777216.0f, -16777216.0f,
                         INFINITY, -INFINITY, NAN, 1, 1, 1,           1};
    kt_buf t4 = kt_buf_alloc(b, 4, AK_F32), y = kt_buf_alloc(b, 1, AK_F32);
    kt_buf_upload(&t4, x);
    ck_assert_int_eq(ak_avgpool_forward(b, 1, 4, y.t, t4.t), AK_OK);
    ck_assert_float_eq(kt_buf_get_f32(&y), 2.5f);
    kt_buf t6 = kt_buf_alloc(b, 6, AK_F32), y2 = kt_buf_alloc(b, 2, AK_F32);
    kt_buf_upload(&t6, x + 4);
    ck_assert_int_eq(ak_avgpool_forward(b, 2, 3, y2.t, t6.t), AK_OK);
    uint32_t got[2];
    kt_buf_get(&y2, got);
    ck_assert_uint_eq(got[0], 0);
    ck_assert_uint_eq(got[1], kt_default_nan(AK_F32)); /* (-inf + NaN...) : inf - inf */
    kt_buf t2 = kt_buf_alloc(b, 2, AK_F32), y1 = kt_buf_alloc(b, 1, AK_F32);
    kt_buf_upload(&t2, x + 9);
    ck_assert_int_eq(ak_avgpool_forward(b, 1, 2, y1.t, t2.t), AK_OK);
    kt_buf_get(&y1, got);
    ck_assert_uint_eq(got[0], kt_default_nan(AK_F32));
    /* fp16 in and out: 65504 + 65504 = 131008 overflows fp16 but not the
     * fp32 sum: the mean 65504 (0x7BFF) */
    const uint32_t h[2] = {0x7BFF, 0x7BFF};
    kt_buf th = kt_buf_alloc(b, 2, AK_F16), yh = kt_buf_alloc(b, 1, AK_F16);
    kt_buf_put(&th, h);
    ck_assert_int_eq(ak_avgpool_forward(b, 1, 2, yh.t, th.t), AK_OK);
    kt_buf_get(&yh, got);
    ck_assert_uint_eq(got[0], 0x7BFF);
    ck_assert(kt_buf_guards_ok(&t4) && kt_buf_guards_ok(&y) && kt_buf_guards_ok(&t6) &&
              kt_buf_guards_ok(&y2) && kt_buf_guards_ok(&th) && kt_buf_guards_ok(&yh));
    kt_buf_free(&t4);
    kt_buf_free(&y);
    kt_buf_free(&t6);
    kt_buf_free(&y2);
    kt_buf_free(&t2);
    kt_buf_free(&y1);
    kt_buf_free(&th);
    kt_buf_free(&yh);
    ak_close(b);
}
END_TEST

START_TEST(backward_by_hand_and_dtypes)
{
    ak_backend *b = kt_open_cpu();
    /* dy = 1, hw = 3: 1/3 in fp32 is 0x3EAAAAAB, in fp16 (from it) 0x3555;
     * dy = 6: 2 everywhere */
    const float dy[2] = {1.0f, 6.0f};
    kt_buf tdy = kt_buf_alloc(b, 2, AK_F32), t32 = kt_buf_alloc(b, 6, AK_F32),
           t16 = kt_buf_alloc(b, 6, AK_F16);
    kt_buf_upload(&tdy, dy);
    ck_assert_int_eq(ak_avgpool_backward(b, 2, 3, t32.t, tdy.t), AK_OK);
    ck_assert_int_eq(ak_avgpool_backward(b, 2, 3, t16.t, tdy.t), AK_OK);
    uint32_t got[6];
    const uint32_t want32[6] = {0x3EAAAAABu, 0x3EAAAAABu, 0x3EAAAAABu,
                                0x40000000u, 0x40000000u, 0x40000000u};
    const uint32_t want16[6] = {0x3555, 0x3555, 0x3555, 0x4000, 0x4000, 0x4000};
    kt_buf_get(&t32, got);
    ck_assert_uint_eq(kt_bits_mismatches("avgpool_backward", AK_F32, got, want32, 6), 0);
    kt_buf_get(&t16, got);
    ck_assert_uint_eq(kt_bits_mismatches("avgpool_backward fp16", AK_F16, got, want16, 6), 0);
    ck_assert(kt_buf_guards_ok(&tdy) && kt_buf_guards_ok(&t32) && kt_buf_guards_ok(&t16));
    kt_buf_free(&tdy);
    kt_buf_free(&t32);
    kt_buf_free(&t16);
    ak_close(b);
}
END_TEST

static void avgpool_fd_forward(ak_backend *b, kt_buf *y, kt_buf *x, const void *ctx)
{
    (void)ctx;
    ck_assert_int_eq(ak_avgpool_forward(b, y->t.n, 4, y->t, x->t), AK_OK);
}

/* dL/dx = avgpool_backward(dy = r); hw = 4 keeps the means exact. */
START_TEST(gradient_matches_finite_differences)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    enum { PLANES = 6, N = PLANES * 4 };
    float x[N], rv[N], grad[N];
    kt_fd_points(&r, ts_seed() + 51, x, rv, N);
    kt_buf tr = kt_buf_alloc(b, PLANES, AK_F32), tg = kt_buf_alloc(b, N, AK_F32);
    kt_buf_upload(&tr, rv);
    ck_assert_int_eq(ak_avgpool_backward(b, PLANES, 4, tg.t, tr.t), AK_OK);
    kt_buf_download(&tg, grad);
    kt_fd_check(b, avgpool_fd_forward, NULL, N, PLANES, x, rv, grad, 0x1p-10);
    kt_buf_free(&tr);
    kt_buf_free(&tg);
    ak_close(b);
}
END_TEST

START_TEST(bad_arguments_named)
{
    ak_backend *b = kt_open_cpu();
    kt_buf f12 = kt_buf_alloc(b, 12, AK_F32), f4 = kt_buf_alloc(b, 4, AK_F32);
    KT_EXPECT_ERROR(b, ak_avgpool_forward(b, 4, 0, f4.t, f12.t), AK_EINVAL, NULL,
                    "ak_avgpool_forward: hw is 0");
    KT_EXPECT_ERROR(b, ak_avgpool_forward(b, 4, 4, f4.t, f12.t), AK_EINVAL, NULL,
                    "ak_avgpool_forward: x has 12 elements, expected 16");
    KT_EXPECT_ERROR(b, ak_avgpool_forward(b, 3, 4, f4.t, f12.t), AK_EINVAL, NULL,
                    "ak_avgpool_forward: y has 4 elements, expected 3");
    KT_EXPECT_ERROR(b, ak_avgpool_forward(b, 1, (size_t)1 << 25, f4.t, f12.t), AK_EINVAL, NULL,
                    "ak_avgpool_forward: hw (33554432) exceeds 2^24");
    const ak_tensor head = ak_tensor_of(f12.t.data, 3, AK_F32);
    KT_EXPECT_ERROR(b, ak_avgpool_forward(b, 3, 4, head, f12.t), AK_EINVAL, NULL,
                    "ak_avgpool_forward: y overlaps x");
    KT_EXPECT_ERROR(b, ak_avgpool_backward(b, 3, 4, f12.t, head), AK_EINVAL, NULL,
                    "ak_avgpool_backward: dx overlaps dy");
    KT_EXPECT_ERROR(b, ak_avgpool_backward(b, 3, 4, f4.t, f4.t), AK_EINVAL, NULL,
                    "ak_avgpool_backward: dy has 4 elements, expected 3");
    ck_assert_int_eq(ak_avgpool_forward(b, 0, 4, ak_tensor_none(), ak_tensor_none()), AK_OK);
    ck_assert_int_eq(ak_avgpool_backward(b, 0, 4, ak_tensor_none(), ak_tensor_none()), AK_OK);
    ck_assert(kt_buf_guards_ok(&f12) && kt_buf_guards_ok(&f4));
    kt_buf_free(&f12);
    kt_buf_free(&f4);
    ak_close(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_avgpool");
    TCase *tc = tcase_create("avgpool");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, forward_every_dtype);
    tcase_add_test(tc, forward_by_hand);
    tcase_add_test(tc, backward_by_hand_and_dtypes);
    tcase_add_test(tc, gradient_matches_finite_differences);
    tcase_add_test(tc, bad_arguments_named);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
