/* test_maxpool: ak_maxpool2_forward and ak_maxpool2_backward on the cpu
 * backend, against PyTorch's scan written here, for every pairing of dtypes;
 * the backward pass against central finite differences; bad arguments;
 * guard regions. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "kt.h"
#include "kt_fd.h"

/* PyTorch's max_pool2d scan: maxval from -inf, replaced when greater or NaN. */
static int ref_pick(ak_dtype dt, const uint32_t v[4])
{
    double maxval = -INFINITY;
    int pick = 0;
    for (int k = 0; k < 4; k++) {
        const double x = kt_value(dt, v[k]);
        if (x > maxval || isnan(x)) {
            maxval = x;
            pick = k;
        }
    }
    return pick;
}

/* ---- max-pooling ------------------------------------------------------------------------- */
static void check_maxpool(ak_backend *b, ts_rng *r, size_t planes, size_t h, size_t w, ak_dtype dx,
                          ak_dtype dy, ak_dtype ddx, ak_dtype ddy, const uint32_t *given_x)
{
    const size_t n_in = planes * h * w, n_out = n_in / 4;
    uint32_t *x = kt_bits_alloc(n_in), *g = kt_bits_alloc(n_out), *got = kt_bits_alloc(n_in),
             *want = kt_bits_alloc(n_in);
    if (given_x)
        memcpy(x, given_x, n_in * sizeof *x);
    else
        kt_fill_bits(r, dx, x, n_in);
    kt_fill_bits(r, ddy, g, n_out);
    kt_buf tx = kt_buf_alloc(b, n_in, dx), ty = kt_buf_alloc(b, n_out, dy),
           tdx = kt_buf_alloc(b, n_in, ddx), tdy = kt_buf_alloc(b, n_out, ddy);
    kt_buf_put(&tx, x);
    kt_buf_put(&tdy, g);
    ck_assert_int_eq(ak_maxpool2_forward(b, planes, h, w, ty.t, tx.t), AK_OK);
    uint32_t *dxw = kt_bits_alloc(n_in);
    size_t o = 0;
    for (size_t p = 0; p < planes; p++) {
        for (size_t oh = 0; oh < h / 2; oh++) {
            for (size_t ow = 0; ow < w / 2; ow++, o++) {
                const size_t at[4] = {
                    (p * h + 2 * oh) * w + 2 * ow, (p * h + 2 * oh) * w + 2 * ow + 1,
                    (p * h + 2 * oh + 1) * w + 2 * ow, (p * h + 2 * oh + 1) * w + 2 * ow + 1};
                const uint32_t v[4] = {x[at[0]], x[at[1]], x[at[2]], x[at[3]]};
                const int k = ref_pick(dx, v);
                want[o] = kt_convert(dx, dy, v[k]);
                for (int j = 0; j < 4; j++)
                    dxw[at[j]] = j == k ? kt_convert(ddy, ddx, g[o]) : 0;
            }
        }
    }
    kt_buf_get(&ty, got);
    ck_assert_msg(kt_bits_mismatches("maxpool2 y", dy, got, want, n_out) == 0, "y %s x %s",
                  ak_dtype_name(dy), ak_dtype_name(dx));
    ck_assert_int_eq(ak_maxpool2_backward(b, planes, h, w, tdx.t, tdy.t, tx.t), AK_OK);
    kt_buf_get(&tdx, got);
    ck_assert_msg(kt_bits_mismatches("maxpool2 dx", ddx, got, dxw, n_in) == 0, "dx %s dy %s x %s",
                  ak_dtype_name(ddx), ak_dtype_name(ddy), ak_dtype_name(dx));
    ck_assert(kt_buf_guards_ok(&tx) && kt_buf_guards_ok(&ty) && kt_buf_guards_ok(&tdx) &&
              kt_buf_guards_ok(&tdy));
    kt_buf_free(&tx);
    kt_buf_free(&ty);
    kt_buf_free(&tdx);
    kt_buf_free(&tdy);
    free(x);
    free(g);
    free(got);
    free(want);
    free(dxw);
}

START_TEST(maxpool_selects_exactly)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 4);
    for (int c = 0; c < 9; c++) /* forward y/x pairs, backward with dx = y's dtype, dy = x's */
        check_maxpool(b, &r, 3, 6, 8, kt_dtypes[c % 3], kt_dtypes[c / 3], kt_dtypes[c / 3],
                      kt_dtypes[c % 3], NULL);
    for (int c = 0; c < 27; c++) /* backward: every dx/dy/x triple */
        check_maxpool(b, &r, 2, 4, 2, kt_dtypes[c % 3], kt_dtypes[c % 3], kt_dtypes[c / 9],
                      kt_dtypes[c / 3 % 3], NULL);
    ak_close(b);
}
END_TEST

START_TEST(maxpool_ties_zeros_and_nans)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 5);
    /* fp32 windows, one 2x2 plane each (row-major: v0 v1 / v2 v3) */
    const uint32_t one = 0x3F800000u, two = 0x40000000u, nan1 = 0x7FC00001u, nan2 = 0xFFC00002u;
    const uint32_t windows[][4] = {
        {one, one, one, one},                                 /* tie: the first */
        {two, one, two, two},                                 /* tie at the max: v0 */
        {0x80000000u, 0, 0, 0x80000000u},                     /* -0 before +0: -0 */
        {0, 0x80000000u, 0xBF800000u, 0xBF800000u},           /* +0 before -0: +0 */
        {nan1, two, nan2, one},                               /* NaNs: the last one */
        {one, nan1, two, two},                                /* a NaN after the max */
        {0xFF800000u, 0xFF800000u, 0xFF800000u, 0xFF800000u}, /* all -inf: v0 */
        {0x7F800000u, 0x7F800001u, 0xFF800000u, 0x7F800000u}, /* sNaN beats +inf */
    };
    const int want_pick[] = {0, 0, 0, 0, 2, 1, 0, 1};
    const size_t count = sizeof windows / sizeof windows[0];
    uint32_t x[4 * 8];
    for (size_t k = 0; k < count; k++) {
        memcpy(x + 4 * k, windows[k], sizeof windows[k]);
        ck_assert_int_eq(ref_pick(AK_F32, windows[k]), want_pick[k]); /* the test's own scan */
    }
    check_maxpool(b, &r, count, 2, 2, AK_F32, AK_F32, AK_F32, AK_F32, x);
    /* and the implementation agrees with the hand-worked picks */
    kt_buf tx = kt_buf_alloc(b, 4 * count, AK_F32), ty = kt_buf_alloc(b, count, AK_F32);
    kt_buf_put(&tx, x);
    ck_assert_int_eq(ak_maxpool2_forward(b, count, 2, 2, ty.t, tx.t), AK_OK);
    uint32_t y[8];
    kt_buf_get(&ty, y);
    for (size_t k = 0; k < count; k++)
        ck_assert_uint_eq(y[k], windows[k][want_pick[k]]);
    kt_buf_free(&tx);
    kt_buf_free(&ty);
    ak_close(b);
}
END_TEST

/* ---- against central finite differences --------------------------------------------- */
typedef struct pool_shape {
    size_t planes, h, w;
} pool_shape;

static void pool_forward(ak_backend *b, kt_buf *y, kt_buf *x, const void *ctx)
{
    const pool_shape *s = ctx;
    ck_assert_int_eq(ak_maxpool2_forward(b, s->planes, s->h, s->w, y->t, x->t), AK_OK);
}

/* 2 planes of 4 x 6: distinct values 2^-7 apart, so no window has a tie
 * within 2h */
START_TEST(maxpool_gradient_matches_finite_differences)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    const double h = 0x1p-10;
    enum { N = 48, ROWS = 5, COLS = 7 };
    float x[N], rv[N], grad[N];
    kt_fd_points(&r, ts_seed() + 6, x, rv, N);
    const pool_shape ps = {2, 4, 6};
    for (int i = 0; i < N; i++)
        x[i] = (float)ldexp(i - 24, -7);
    for (int i = N - 1; i > 0; i--) { /* shuffle */
        const int j = (int)ts_below(&r, (uint32_t)i + 1);
        const float t = x[i];
        x[i] = x[j];
        x[j] = t;
    }
    kt_buf tx = kt_buf_alloc(b, N, AK_F32), tg = kt_buf_alloc(b, N, AK_F32),
           tdy = kt_buf_alloc(b, N / 4, AK_F32);
    kt_buf_upload(&tx, x);
    kt_buf_upload(&tdy, rv);
    ck_assert_int_eq(ak_maxpool2_backward(b, ps.planes, ps.h, ps.w, tg.t, tdy.t, tx.t), AK_OK);
    kt_buf_download(&tg, grad);
    kt_fd_check(b, pool_forward, &ps, N, N / 4, x, rv, grad, h);
    kt_buf_free(&tx);
    kt_buf_free(&tg);
    kt_buf_free(&tdy);
    ak_close(b);
}
END_TEST

/* ---- arguments ----------------------------------------------------------------------------- */
START_TEST(maxpool_bad_arguments_named)
{
    ak_backend *b = kt_open_cpu();
    kt_buf f12 = kt_buf_alloc(b, 12, AK_F32), f4 = kt_buf_alloc(b, 4, AK_F32),
           h3 = kt_buf_alloc(b, 3, AK_F16);
    const ak_tensor none = ak_tensor_none();

    KT_EXPECT_ERROR(b, ak_maxpool2_forward(b, 1, 3, 4, f4.t, f12.t), AK_EINVAL, NULL,
                    "ak_maxpool2_forward: h (3) and w (4) must be even");
    KT_EXPECT_ERROR(b, ak_maxpool2_forward(b, 1, 2, 6, f4.t, f12.t), AK_EINVAL, NULL,
                    "ak_maxpool2_forward: y has 4 elements, expected 3");
    KT_EXPECT_ERROR(b, ak_maxpool2_forward(b, 1, 4, 4, f4.t, f12.t), AK_EINVAL, NULL,
                    "ak_maxpool2_forward: x has 12 elements, expected 16");
    KT_EXPECT_ERROR(b, ak_maxpool2_forward(b, SIZE_MAX / 4, 4, 4, f4.t, f12.t), AK_EINVAL, NULL,
                    "overflows");
    KT_EXPECT_ERROR(b, ak_maxpool2_backward(b, 1, 2, 6, f12.t, f4.t, f12.t), AK_EINVAL, NULL,
                    "ak_maxpool2_backward: dy has 4 elements, expected 3");
    KT_EXPECT_ERROR(b, ak_maxpool2_backward(b, 1, 2, 6, f4.t, h3.t, f12.t), AK_EINVAL, NULL,
                    "ak_maxpool2_backward: dx has 4 elements, expected 12");
    KT_EXPECT_ERROR(b, ak_maxpool2_backward(b, 1, 2, 5, f12.t, h3.t, f12.t), AK_EINVAL, NULL,
                    "must be even");

    /* empty work succeeds */
    ck_assert_int_eq(ak_maxpool2_forward(b, 0, 4, 4, none, none), AK_OK);
    ck_assert_int_eq(ak_maxpool2_backward(b, 3, 0, 4, none, none, none), AK_OK);
    ck_assert(kt_buf_guards_ok(&f12) && kt_buf_guards_ok(&f4) && kt_buf_guards_ok(&h3));
    kt_buf_free(&f12);
    kt_buf_free(&f4);
    kt_buf_free(&h3);
    ak_close(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_maxpool");
    TCase *tc = tcase_create("maxpool");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, maxpool_selects_exactly);
    tcase_add_test(tc, maxpool_ties_zeros_and_nans);
    tcase_add_test(tc, maxpool_gradient_matches_finite_differences);
    tcase_add_test(tc, maxpool_bad_arguments_named);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
