/* test_bias: ak_bias_add and ak_bias_grad on the cpu backend, against the
 * emulator's public functions and loops written here, for every pairing of
 * dtypes; the gradient against central finite differences; bad arguments;
 * guard regions. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "kt.h"
#include "kt_fd.h"

/* y + b rounded once to y's dtype: fpe_<fmt>_add when the dtypes agree;
 * else the double sum when TwoSum says it is exact; else an fp32 add
 * rounded to odd and then to y's dtype, which rounds as the exact sum
 * would (24 >= p + 2 bits, Boldo & Melquiond), NaNs and infinities
 * included; for an fp32 y, the fp32 add itself. */
static uint32_t ref_bias_add(ak_dtype dy, ak_dtype db, uint32_t y, uint32_t b)
{
    fpe_env env = fpe_env_default();
    if (dy == db) {
        switch (dy) {
        case AK_F16: return fpe_f16_add(&env, (uint16_t)y, (uint16_t)b);
        case AK_BF16: return fpe_bf16_add(&env, (uint16_t)y, (uint16_t)b);
        default: return fpe_f32_add(&env, y, b);
        }
    }
    const double u = kt_value(dy, y), v = kt_value(db, b);
    if (isfinite(u) && isfinite(v)) {
        const double s = u + v, bv = s - u, av = s - bv;
        if ((u - av) + (v - bv) == 0.0) return kt_from_f64(dy, s);
    }
    if (dy == AK_F32) return fpe_f32_add(&env, y, kt_to_f32(db, b));
    env.round = FPE_RO;
    const uint32_t odd = fpe_f32_add(&env, kt_to_f32(dy, y), kt_to_f32(db, b));
    env.round = FPE_RNE;
    return kt_from_f32(&env, dy, odd);
}

/* ---- bias add ------------------------------------------------------------------ */
START_TEST(bias_add_matches_emulator)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed());
    const size_t rows = 23, cols = 37, n = rows * cols;
    uint32_t *y = kt_bits_alloc(n), *bias = kt_bits_alloc(cols), *got = kt_bits_alloc(n),
             *want = kt_bits_alloc(n);
    for (int iy = 0; iy < 3; iy++) {
        for (int ib = 0; ib < 3; ib++) {
            const ak_dtype dy = kt_dtypes[iy], db = kt_dtypes[ib];
            for (int pass = 0; pass < 2; pass++) {
                /* pass 0: every kind of pattern; pass 1: ordinary values of mixed magnitude */
                if (pass == 0) {
                    kt_fill_bits(&r, dy, y, n);
                    kt_fill_bits(&r, db, bias, cols);
                } else {
                    kt_fill_values(&r, dy, y, n, 4.0);
                    kt_fill_values(&r, db, bias, cols, ldexp(1.0, (int)ts_below(&r, 12) - 6));
                }
                kt_buf ty = kt_buf_alloc(b, n, dy), tb = kt_buf_alloc(b, cols, db);
                kt_buf_put(&ty, y);
                kt_buf_put(&tb, bias);
                ck_assert_int_eq(ak_bias_add(b, ty.t, tb.t, rows, cols), AK_OK);
                kt_buf_get(&ty, got);
                for (size_t i = 0; i < n; i++)
                    want[i] = ref_bias_add(dy, db, y[i], bias[i % cols]);
                ck_assert_msg(kt_bits_mismatches("bias_add y", dy, got, want, n) == 0,
                              "y %s, bias %s, pass %d", ak_dtype_name(dy), ak_dtype_name(db), pass);
                ck_assert(kt_buf_guards_ok(&ty) && kt_buf_guards_ok(&tb));
                kt_buf_free(&ty);
                kt_buf_free(&tb);
            }
        }
    }
    free(y);
    free(bias);
    free(got);
    free(want);
    ak_close(b);
}
END_TEST

/* Hand-picked sums: ties, overflow, inf - inf, NaN order. */
START_TEST(bias_add_special_cases)
{
    ak_backend *b = kt_open_cpu();
    /* fp16 y + fp32 bias: y = 1, bias = 2^-11 is a tie (to even: 1), bias =
     * 2^-11 + 2^-24 rounds up; 65504 + 16 = 65520 overflows to inf; inf + -inf
     * is the default NaN; a NaN y wins over a NaN bias and is quieted. */
    const uint32_t y[6] = {0x3C00, 0x3C00, 0x7BFF, 0x7C00, 0x7D01, 0x3C00};
    const float bias_v[6] = {0x1p-11f, 0x1p-11f + 0x1p-24f, 16.0f, -INFINITY, NAN, -0.0f};
    const uint32_t want[6] = {0x3C00, 0x3C01, 0x7C00, 0xFE00, 0x7F01, 0x3C00};
    kt_buf ty = kt_buf_alloc(b, 6, AK_F16), tb = kt_buf_alloc(b, 6, AK_F32);
    kt_buf_put(&ty, y);
    kt_buf_upload(&tb, bias_v);
    ck_assert_int_eq(ak_bias_add(b, ty.t, tb.t, 1, 6), AK_OK);
    uint32_t got[6];
    kt_buf_get(&ty, got);
    ck_assert_uint_eq(kt_bits_mismatches("bias_add", AK_F16, got, want, 6), 0);
    /* -0 + -0 = -0, -0 + +0 = +0 (fp32, nearest even) */
    kt_buf y32 = kt_buf_alloc(b, 2, AK_F32), b32 = kt_buf_alloc(b, 2, AK_F32);
    const float yz[2] = {-0.0f, -0.0f}, bz[2] = {-0.0f, 0.0f};
    kt_buf_upload(&y32, yz);
    kt_buf_upload(&b32, bz);
    ck_assert_int_eq(ak_bias_add(b, y32.t, b32.t, 1, 2), AK_OK);
    kt_buf_get(&y32, got);
    ck_assert_uint_eq(got[0], 0x80000000u);
    ck_assert_uint_eq(got[1], 0);
    ck_assert(kt_buf_guards_ok(&ty) && kt_buf_guards_ok(&tb) && kt_buf_guards_ok(&y32));
    kt_buf_free(&ty);
    kt_buf_free(&tb);
    kt_buf_free(&y32);
    kt_buf_free(&b32);
    ak_close(b);
}
END_TEST

/* ---- bias gradient ---------------------------------------------------------------- */
START_TEST(bias_grad_matches_double_sum)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 1);
    /* 1100 columns cross the implementation's 512-column blocks */
    static const size_t shapes[][2] = {{50, 70}, {1, 9}, {3, 1100}, {0, 5}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const size_t rows = shapes[s][0], cols = shapes[s][1], n = rows * cols;
        uint32_t *dy = kt_bits_alloc(n), *got = kt_bits_alloc(cols), *want = kt_bits_alloc(cols),
                 *junk = kt_bits_alloc(cols);
        for (int id = 0; id < 3; id++) {
            for (int iy = 0; iy < 3; iy++) {
                const ak_dtype dd = kt_dtypes[id], dt = kt_dtypes[iy];
                for (int pass = 0; pass < 2; pass++) {
                    if (pass == 0)
                        kt_fill_bits(&r, dt, dy, n);
                    else
                        kt_fill_values(&r, dt, dy, n, 100.0);
                    kt_buf tdb = kt_buf_alloc(b, cols, dd), tdy = kt_buf_alloc(b, n, dt);
                    kt_buf_put(&tdy, dy);
                    for (size_t c = 0; c < cols; c++)
                        junk[c] = 0x7777;
                    kt_buf_put(&tdb, junk); /* overwritten, never accumulated */
                    ck_assert_int_eq(ak_bias_grad(b, tdb.t, tdy.t, rows, cols), AK_OK);
                    kt_buf_get(&tdb, got);
                    for (size_t c = 0; c < cols; c++) {
                        double sum = 0.0;
                        for (size_t i = 0; i < rows; i++)
                            sum += kt_value(dt, dy[i * cols + c]);
                        want[c] = kt_from_f64(dd, sum); /* a NaN sum: the default NaN */
                    }
                    ck_assert_msg(kt_bits_mismatches("bias_grad", dd, got, want, cols) == 0,
                                  "dbias %s dy %s rows %zu cols %zu", ak_dtype_name(dd),
                                  ak_dtype_name(dt), rows, cols);
                    ck_assert(kt_buf_guards_ok(&tdb) && kt_buf_guards_ok(&tdy));
                    kt_buf_free(&tdb);
                    kt_buf_free(&tdy);
                }
            }
        }
        free(dy);
        free(got);
        free(want);
        free(junk);
    }
    ak_close(b);
}
END_TEST

/* ---- against central finite differences --------------------------------------------- */
typedef struct bias_ctx {
    size_t rows, cols;
    const float *y0;
} bias_ctx;

/* Here "x" is the bias and y = y0 + bias. */
static void bias_forward(ak_backend *b, kt_buf *y, kt_buf *x, const void *ctx)
{
    const bias_ctx *c = ctx;
    kt_buf_upload(y, c->y0);
    ck_assert_int_eq(ak_bias_add(b, y->t, x->t, c->rows, c->cols), AK_OK);
}

/* y = y0 + bias, dL/dbias = bias_grad(dy = r) */
START_TEST(bias_gradient_matches_finite_differences)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    const double h = 0x1p-10;
    enum { N = 48, ROWS = 5, COLS = 7 };
    float x[N], rv[N], grad[N];
    kt_fd_points(&r, ts_seed() + 6, x, rv, N);
    float y0[ROWS * COLS];
    for (int i = 0; i < ROWS * COLS; i++)
        y0[i] = kt_fd_grid_value(&r);
    for (int c = 0; c < COLS; c++)
        x[c] = kt_fd_grid_value(&r);
    const bias_ctx bc = {ROWS, COLS, y0};
    kt_buf tr2 = kt_buf_alloc(b, ROWS * COLS, AK_F32), tdb = kt_buf_alloc(b, COLS, AK_F32);
    kt_buf_upload(&tr2, rv);
    ck_assert_int_eq(ak_bias_grad(b, tdb.t, tr2.t, ROWS, COLS), AK_OK);
    kt_buf_download(&tdb, grad);
    kt_fd_check(b, bias_forward, &bc, COLS, ROWS * COLS, x, rv, grad, h);
    kt_buf_free(&tr2);
    kt_buf_free(&tdb);
    ak_close(b);
}
END_TEST

/* ---- arguments ----------------------------------------------------------------------------- */
START_TEST(bias_bad_arguments_named)
{
    ak_backend *b = kt_open_cpu();
    kt_buf f12 = kt_buf_alloc(b, 12, AK_F32), f4 = kt_buf_alloc(b, 4, AK_F32),
           h3 = kt_buf_alloc(b, 3, AK_F16);
    const ak_tensor none = ak_tensor_none();
    ak_tensor bad_dtype = ak_tensor_of(f12.t.data, 4, (ak_dtype)9);

    ck_assert_int_eq(ak_bias_add(NULL, f12.t, f4.t, 3, 4), AK_EINVAL);
    KT_EXPECT_ERROR(b, ak_bias_add(b, f12.t, f4.t, 4, 4), AK_EINVAL, NULL,
                    "ak_bias_add: y has 12 elements, expected 16");
    KT_EXPECT_ERROR(b, ak_bias_add(b, f12.t, h3.t, 3, 4), AK_EINVAL, NULL,
                    "ak_bias_add: bias has 3 elements, expected 4");
    KT_EXPECT_ERROR(b, ak_bias_add(b, f12.t, f4.t, SIZE_MAX / 2, 4), AK_EINVAL, NULL, "overflows");
    KT_EXPECT_ERROR(b, ak_bias_add(b, f12.t, bad_dtype, 3, 4), AK_EINVAL, NULL,
                    "ak_bias_add: bias has an invalid dtype");
    KT_EXPECT_ERROR(b, ak_bias_grad(b, f12.t, f12.t, 3, 4), AK_EINVAL, NULL,
                    "ak_bias_grad: dbias has 12 elements, expected 4");
    KT_EXPECT_ERROR(b, ak_bias_grad(b, f4.t, h3.t, 3, 4), AK_EINVAL, NULL,
                    "ak_bias_grad: dy has 3 elements, expected 12");

    /* empty work succeeds and clears the last error */
    ck_assert_int_eq(ak_bias_add(b, none, f4.t, 0, 4), AK_OK);
    ck_assert_str_eq(ak_error(b), "");
    ck_assert_int_eq(ak_bias_grad(b, none, none, 7, 0), AK_OK);
    /* rows = 0: the sums of nothing are written as +0 */
    float junk[4] = {1, 2, 3, 4}, zeros[4];
    kt_buf_upload(&f4, junk);
    ck_assert_int_eq(ak_bias_grad(b, f4.t, none, 0, 4), AK_OK);
    kt_buf_download(&f4, zeros);
    for (int c = 0; c < 4; c++)
        ck_assert(zeros[c] == 0.0f && !signbit(zeros[c]));
    ck_assert(kt_buf_guards_ok(&f12) && kt_buf_guards_ok(&f4) && kt_buf_guards_ok(&h3));
    kt_buf_free(&f12);
    kt_buf_free(&f4);
    kt_buf_free(&h3);
    ak_close(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_bias");
    TCase *tc = tcase_create("bias");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, bias_add_matches_emulator);
    tcase_add_test(tc, bias_add_special_cases);
    tcase_add_test(tc, bias_grad_matches_double_sum);
    tcase_add_test(tc, bias_gradient_matches_finite_differences);
    tcase_add_test(tc, bias_bad_arguments_named);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
