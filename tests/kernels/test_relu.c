/* test_relu: ak_relu and ak_relu_backward on the cpu backend, against the
 * selection written here, for every pairing of dtypes; the backward pass
 * against central finite differences; bad arguments; guard regions. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "kt.h"
#include "kt_fd.h"

/* relu, and its gradient's mask, written directly: x > 0 passes, NaN passes. */
static bool relu_passes(ak_dtype dt, uint32_t x)
{
    return kt_is_nan(dt, x) || kt_value(dt, x) > 0.0;
}

/* ---- relu --------------------------------------------------------------------------- */
START_TEST(relu_selects_exactly)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 2);
    const size_t n = 1001;
    uint32_t *x = kt_bits_alloc(n), *got = kt_bits_alloc(n), *want = kt_bits_alloc(n);
    for (int iy = 0; iy < 3; iy++) {
        for (int ix = 0; ix < 3; ix++) {
            const ak_dtype dy = kt_dtypes[iy], dx = kt_dtypes[ix];
            kt_fill_bits(&r, dx, x, n);
            kt_buf tx = kt_buf_alloc(b, n, dx), ty = kt_buf_alloc(b, n, dy);
            kt_buf_put(&tx, x);
            ck_assert_int_eq(ak_relu(b, ty.t, tx.t), AK_OK);
            kt_buf_get(&ty, got);
            for (size_t i = 0; i < n; i++)
                want[i] = relu_passes(dx, x[i]) ? kt_convert(dx, dy, x[i]) : 0;
            ck_assert_msg(kt_bits_mismatches("relu", dy, got, want, n) == 0, "y %s x %s",
                          ak_dtype_name(dy), ak_dtype_name(dx));
            if (dx == dy) { /* in place */
                ck_assert_int_eq(ak_relu(b, tx.t, tx.t), AK_OK);
                kt_buf_get(&tx, got);
                ck_assert_uint_eq(kt_bits_mismatches("relu in place", dy, got, want, n), 0);
            }
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

START_TEST(relu_special_values)
{
    ak_backend *b = kt_open_cpu();
    /* -0 -> +0; -inf -> +0; +inf kept; NaNs of both signs kept bit for bit, a
     * signaling one too; the smallest subnormals either side of 0 */
    const uint32_t x[8] = {0x80000000u, 0xFF800000u, 0x7F800000u, 0xFFC01234u,
                           0x7F800001u, 0x00000001u, 0x80000001u, 0x3F800000u};
    const uint32_t want[8] = {0, 0, 0x7F800000u, 0xFFC01234u, 0x7F800001u, 1, 0, 0x3F800000u};
    kt_buf t = kt_buf_alloc(b, 8, AK_F32);
    kt_buf_put(&t, x);
    ck_assert_int_eq(ak_relu(b, t.t, t.t), AK_OK);
    uint32_t got[8];
    kt_buf_get(&t, got);
    ck_assert_uint_eq(kt_bits_mismatches("relu", AK_F32, got, want, 8), 0);
    /* into fp16 the kept values are rounded: 1 + 2^-12 + 2^-15 (below the
     * tie) to 1, 1e5 overflows, a signaling NaN is quieted */
    const uint32_t x2[3] = {0x3F800900u, 0x47C35000u, 0x7F800001u};
    const uint32_t want2[3] = {0x3C00, 0x7C00, 0x7E00};
    kt_buf t32 = kt_buf_alloc(b, 3, AK_F32), t16 = kt_buf_alloc(b, 3, AK_F16);
    kt_buf_put(&t32, x2);
    ck_assert_int_eq(ak_relu(b, t16.t, t32.t), AK_OK);
    kt_buf_get(&t16, got);
    ck_assert_uint_eq(kt_bits_mismatches("relu to fp16", AK_F16, got, want2, 3), 0);
    ck_assert(kt_buf_guards_ok(&t) && kt_buf_guards_ok(&t16));
    kt_buf_free(&t);
    kt_buf_free(&t32);
    kt_buf_free(&t16);
    ak_close(b);
}
END_TEST

START_TEST(relu_backward_selects_exactly)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 3);
    const size_t n = 517;
    uint32_t *x = kt_bits_alloc(n), *g = kt_bits_alloc(n), *got = kt_bits_alloc(n),
             *want = kt_bits_alloc(n);
    for (int c = 0; c < 27; c++) {
        const ak_dtype ddx = kt_dtypes[c / 9], ddy = kt_dtypes[c / 3 % 3], dx = kt_dtypes[c % 3];
        kt_fill_bits(&r, dx, x, n);
        kt_fill_bits(&r, ddy, g, n);
        kt_buf tdx = kt_buf_alloc(b, n, ddx), tdy = kt_buf_alloc(b, n, ddy),
               tx = kt_buf_alloc(b, n, dx);
        kt_buf_put(&tx, x);
        kt_buf_put(&tdy, g);
        ck_assert_int_eq(ak_relu_backward(b, tdx.t, tdy.t, tx.t), AK_OK);
        kt_buf_get(&tdx, got);
        for (size_t i = 0; i < n; i++)
            want[i] = relu_passes(dx, x[i]) ? kt_convert(ddy, ddx, g[i]) : 0;
        ck_assert_msg(kt_bits_mismatches("relu_backward", ddx, got, want, n) == 0,
                      "dx %s dy %s x %s", ak_dtype_name(ddx), ak_dtype_name(ddy),
                      ak_dtype_name(dx));
        if (ddx == ddy) { /* in place: dx is dy */
            ck_assert_int_eq(ak_relu_backward(b, tdy.t, tdy.t, tx.t), AK_OK);
            kt_buf_get(&tdy, got);
            ck_assert_uint_eq(kt_bits_mismatches("relu_backward in place", ddx, got, want, n), 0);
        }
        ck_assert(kt_buf_guards_ok(&tdx) && kt_buf_guards_ok(&tdy) && kt_buf_guards_ok(&tx));
        kt_buf_free(&tdx);
        kt_buf_free(&tdy);
        kt_buf_free(&tx);
    }
    free(x);
    free(g);
    free(got);
    free(want);
    ak_close(b);
}
END_TEST

START_TEST(relu_backward_at_zero_and_nan)
{
    ak_backend *b = kt_open_cpu();
    /* x = +0, -0: gradient 0; x NaN: dy passes (PyTorch); x < 0 blocks a NaN dy */
    const float x[5] = {0.0f, -0.0f, NAN, -NAN, -1.0f};
    const float dy[5] = {3.0f, 3.0f, 5.0f, -7.0f, NAN};
    const uint32_t want[5] = {0, 0, 0x40A00000u, 0xC0E00000u, 0};
    kt_buf tx = kt_buf_alloc(b, 5, AK_F32), tdy = kt_buf_alloc(b, 5, AK_F32),
           tdx = kt_buf_alloc(b, 5, AK_F32);
    kt_buf_upload(&tx, x);
    kt_buf_upload(&tdy, dy);
    ck_assert_int_eq(ak_relu_backward(b, tdx.t, tdy.t, tx.t), AK_OK);
    uint32_t got[5];
    kt_buf_get(&tdx, got);
    ck_assert_uint_eq(kt_bits_mismatches("relu_backward", AK_F32, got, want, 5), 0);
    kt_buf_free(&tx);
    kt_buf_free(&tdy);
    kt_buf_free(&tdx);
    ak_close(b);
}
END_TEST

/* ---- against central finite differences --------------------------------------------- */
static void relu_forward(ak_backend *b, kt_buf *y, kt_buf *x, const void *ctx)
{
    (void)ctx;
    ck_assert_int_eq(ak_relu(b, y->t, x->t), AK_OK);
}

/* dL/dx = relu_backward(dy = r) */
START_TEST(relu_gradient_matches_finite_differences)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    const double h = 0x1p-10;
    enum { N = 48, ROWS = 5, COLS = 7 };
    float x[N], rv[N], grad[N];
    kt_fd_points(&r, ts_seed() + 6, x, rv, N);
    kt_buf tx = kt_buf_alloc(b, N, AK_F32), tr = kt_buf_alloc(b, N, AK_F32),
           tg = kt_buf_alloc(b, N, AK_F32);
    kt_buf_upload(&tx, x);
    kt_buf_upload(&tr, rv);
    ck_assert_int_eq(ak_relu_backward(b, tg.t, tr.t, tx.t), AK_OK);
    kt_buf_download(&tg, grad);
    kt_fd_check(b, relu_forward, NULL, N, N, x, rv, grad, h);
    kt_buf_free(&tx);
    kt_buf_free(&tr);
    kt_buf_free(&tg);
    ak_close(b);
}
END_TEST

/* ---- arguments ----------------------------------------------------------------------------- */
START_TEST(relu_bad_arguments_named)
{
    ak_backend *b = kt_open_cpu();
    kt_buf f12 = kt_buf_alloc(b, 12, AK_F32), f4 = kt_buf_alloc(b, 4, AK_F32),
           h3 = kt_buf_alloc(b, 3, AK_F16);
    const ak_tensor none = ak_tensor_none();
    ak_tensor odd = ak_tensor_of((char *)f12.t.data + 2, 4, AK_F32);
    ak_tensor null8 = ak_tensor_of(NULL, 8, AK_F16);

    KT_EXPECT_ERROR(b, ak_relu(b, f4.t, f12.t), AK_EINVAL, NULL,
                    "ak_relu: y has 4 elements, expected 12");
    KT_EXPECT_ERROR(b, ak_relu(b, f4.t, odd), AK_EINVAL, NULL, "ak_relu: x (");
    ck_assert_msg(strstr(ak_error(b), "not aligned") != NULL, "%s", ak_error(b));
    KT_EXPECT_ERROR(b, ak_relu(b, null8, null8), AK_EINVAL, NULL,
                    "ak_relu: x is NULL with 8 elements");
    KT_EXPECT_ERROR(b, ak_relu_backward(b, f4.t, f4.t, f12.t), AK_EINVAL, NULL,
                    "ak_relu_backward: dy has 4 elements, expected 12");
    KT_EXPECT_ERROR(b, ak_relu_backward(b, h3.t, f12.t, f12.t), AK_EINVAL, NULL,
                    "ak_relu_backward: dx has 3 elements");

    /* empty work succeeds */
    ck_assert_int_eq(ak_relu(b, none, none), AK_OK);
    ck_assert_int_eq(ak_relu_backward(b, none, none, none), AK_OK);
    ck_assert(kt_buf_guards_ok(&f12) && kt_buf_guards_ok(&f4) && kt_buf_guards_ok(&h3));
    kt_buf_free(&f12);
    kt_buf_free(&f4);
    kt_buf_free(&h3);
    ak_close(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_relu");
    TCase *tc = tcase_create("relu");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, relu_selects_exactly);
    tcase_add_test(tc, relu_special_values);
    tcase_add_test(tc, relu_backward_selects_exactly);
    tcase_add_test(tc, relu_backward_at_zero_and_nan);
    tcase_add_test(tc, relu_gradient_matches_finite_differences);
    tcase_add_test(tc, relu_bad_arguments_named);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
