/* test_softmax_backward: ak_softmax_backward on the cpu backend: against
 * the double gradient formula (fp32 acc, within its roundings), bit for
 * bit against kernels/softmax.c's rule step by step (every acc and dtype,
 * masks, scales, arbitrary bits), in place (dx == dy), and against
 * central finite differences of the op's own forward. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "kt.h"
#include "ref_softmax.h"

static ak_softmax_args args(size_t rows, size_t cols, bool log, size_t t, float scale, ak_dtype acc)
{
    ak_softmax_args a;
    memset(&a, 0, sizeof a);
    a.rows = rows;
    a.cols = cols;
    a.log = log;
    a.causal_t = t;
    a.scale = scale;
    a.acc = acc;
    return a;
}

/* y = the forward of uniform x in [-4, 4] (fp32), dy uniform in [-1, 1]. */
static void forward_inputs(ak_backend *b, ts_rng *r, const ak_softmax_args *a, uint32_t *y,
                           uint32_t *dy)
{
    const size_t n = a->rows * a->cols;
    uint32_t *x = kt_bits_alloc(n);
    kt_fill_values(r, AK_F32, x, n, 4.0);
    kt_fill_values(r, AK_F32, dy, n, 1.0);
    ref_softmax_run(b, a, AK_F32, AK_F32, x, y);
    free(x);
}

/* fp32: |dx - exact| <= (cols + 8) 2^-24 scale (|y| (|dy| + sum |dy y|))
 * for softmax, (cols + 8) 2^-24 scale (|dy| + exp(y) sum |dy|) for log. */
START_TEST(fp32_within_the_bound_of_the_double_formula)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 180);
    for (int lg = 0; lg < 2; lg++)
        for (int t = 0; t < 2; t++) {
            const size_t rows = 12, cols = t ? 6 : 37, n = rows * cols;
            const ak_softmax_args a = args(rows, cols, lg, t ? 6 : 0, 0.25f, AK_F32);
            uint32_t *y = kt_bits_alloc(n), *dy = kt_bits_alloc(n), *dx = kt_bits_alloc(n);
            double *yv = malloc(n * sizeof *yv), *gv = malloc(n * sizeof *gv),
                   *want = malloc(n * sizeof *want);
            forward_inputs(b, &r, &a, y, dy);
            for (size_t i = 0; i < n; i++) {
                yv[i] = kt_value(AK_F32, y[i]);
                gv[i] = kt_value(AK_F32, dy[i]);
            }
            ref_softmax_backward_run(b, &a, AK_F32, AK_F32, AK_F32, dy, y, dx);
            for (size_t row = 0; row < rows; row++) {
                const size_t at = row * cols, valid = ref_softmax_valid(cols, a.causal_t, row);
                ref_softmax_backward_row(gv + at, yv + at, cols, valid, 0.25, lg, want + at);
                double s = 0.0;
                for (size_t j = 0; j < valid; j++)
                    s += fabs(gv[at + j] * (lg ? 1.0 : yv[at + j]));
                for (size_t j = 0; j < cols; j++) {
                    const double g = kt_value(AK_F32, dx[at + j]), w = want[at + j];
                    if (j >= valid) {
                        ck_assert_uint_eq(dx[at + j], 0);
                        continue;
                    }
                    const double mag = lg ? fabs(gv[at + j]) + exp(yv[at + j]) * s
                                          : fabs(yv[at + j]) * (fabs(gv[at + j]) + s);
                    const double bound = (double)(cols + 8) * 0x1p-24 * 0.25 * mag + 0x1p-149;
                    ck_assert_msg(fabs(g - w) <= bound, "log %d t %d [%zu][%zu]: %.9g vs %.9g", lg,
                                  t, row, j, g, w);
                }
            }
            free(y);
            free(dy);
            free(dx);
            free(yv);
            free(gv);
            free(want);
        }
    ak_close(b);
}
END_TEST

START_TEST(every_acc_and_dtype_bit_for_bit_with_the_rule)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 181);
    const size_t rows = 8, cols = 4, n = rows * cols;
    uint32_t *y = kt_bits_alloc(n), *dy = kt_bits_alloc(n), *got = kt_bits_alloc(n),
             *want = kt_bits_alloc(n);
    for (int acc = 0; acc < 3; acc++)
        for (int c = 0; c < 27; c++)
            for (int v = 0; v < 3; v++)
                for (int lg = 0; lg < 2; lg++) {
                    const ak_dtype ddx = kt_dtypes[c / 9], ddy = kt_dtypes[c / 3 % 3],
                                   dyt = kt_dtypes[c % 3];
                    const ak_softmax_args a = args(rows, cols, lg, v == 1 ? cols : 0,
                                                   v == 2 ? 2.0f : 0.5f, kt_dtypes[acc]);
                    if (v == 2) {
                        kt_fill_bits(&r, ddy, dy, n);
                        kt_fill_bits(&r, dyt, y, n);
                    } else {
                        kt_fill_values(&r, ddy, dy, n, 2.0);
                        /* probabilities, or log-probabilities */
                        kt_fill_values(&r, dyt, y, n, lg ? 6.0 : 1.0);
                        for (size_t i = 0; i < n; i++)
                            if (lg == (kt_value(dyt, y[i]) > 0))
                                y[i] ^= dyt == AK_F32 ? 0x80000000u : 0x8000u;
                    }
                    ref_softmax_backward_run(b, &a, ddx, ddy, dyt, dy, y, got);
                    ref_softmax_backward_rule(&a, ddx, ddy, dyt, dy, y, want);
                    ck_assert_msg(kt_bits_mismatches("softmax_backward", ddx, got, want, n) == 0,
                                  "acc %s dx %s dy %s y %s case %d log %d",
                                  ak_dtype_name(kt_dtypes[acc]), ak_dtype_name(ddx),
                                  ak_dtype_name(ddy), ak_dtype_name(dyt), v, lg);
                }
    free(y);
    free(dy);
    free(got);
    free(want);
    ak_close(b);
}
END_TEST

/* dx may be dy: the same bits as into a separate tensor. */
START_TEST(in_place_gives_the_same_bits)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 182);
    const size_t rows = 6, cols = 3, n = rows * cols;
    for (int lg = 0; lg < 2; lg++) {
        const ak_softmax_args a = args(rows, cols, lg, 3, 0.5f, AK_F32);
        uint32_t y[18], dy[18], sep[18], inplace[18];
        forward_inputs(b, &r, &a, y, dy);
        ref_softmax_backward_run(b, &a, AK_F32, AK_F32, AK_F32, dy, y, sep);
        kt_buf tdy = kt_buf_alloc(b, n, AK_F32), ty = kt_buf_alloc(b, n, AK_F32);
        kt_buf_put(&tdy, dy);
        kt_buf_put(&ty, y);
        ck_assert_int_eq(ak_softmax_backward(b, &a, tdy.t, tdy.t, ty.t), AK_OK);
        kt_buf_get(&tdy, inplace);
        ck_assert_uint_eq(kt_bits_mismatches("in place", AK_F32, inplace, sep, n), 0);
        ck_assert(kt_buf_guards_ok(&tdy) && kt_buf_guards_ok(&ty));
        kt_buf_free(&tdy);
        kt_buf_free(&ty);
    }
    ak_close(b);
}
END_TEST

/* L = sum w .* y(x) through the op's fp32 forward, central differences of
 * step h = 2^-7 in double: the fp32 forward's rounding (about 2^-22 in L)
 * over 2h and the h^2 term keep the difference within 2e-3 (1 + |g|). */
START_TEST(gradient_matches_finite_differences)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 183);
    enum { ROWS = 6, COLS = 3, N = ROWS * COLS };
    const double h = 0x1p-7;
    for (int lg = 0; lg < 2; lg++)
        for (int t = 0; t < 2; t++) {
            const ak_softmax_args a = args(ROWS, COLS, lg, t ? COLS : 0, 0.75f, AK_F32);
            uint32_t x[N], y[N], w[N], g[N], xp[N];
            kt_fill_values(&r, AK_F32, x, N, 2.0);
            kt_fill_values(&r, AK_F32, w, N, 1.0);
            ref_softmax_run(b, &a, AK_F32, AK_F32, x, y);
            ref_softmax_backward_run(b, &a, AK_F32, AK_F32, AK_F32, w, y, g);
            for (size_t i = 0; i < N; i++) {
                double l[2];
                for (int side = 0; side < 2; side++) {
                    memcpy(xp, x, sizeof xp);
                    xp[i] = kt_f32_bits((float)(kt_value(AK_F32, x[i]) + (side ? -h : h)));
                    ref_softmax_run(b, &a, AK_F32, AK_F32, xp, y);
                    l[side] = 0.0;
                    for (size_t j = 0; j < N; j++)
                        if (!isinf(kt_value(AK_F32, y[j])))
                            l[side] += kt_value(AK_F32, w[j]) * kt_value(AK_F32, y[j]);
                }
                const double fd = (l[0] - l[1]) / (2.0 * h), an = kt_value(AK_F32, g[i]);
                ck_assert_msg(fabs(fd - an) <= 2e-3 * (1.0 + fabs(fd)),
                              "log %d t %d d/dx[%zu]: analytic %.9g fd %.9g", lg, t, i, an, fd);
            }
        }
    ak_close(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_softmax_backward");
    TCase *tc = tcase_create("softmax_backward");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, fp32_within_the_bound_of_the_double_formula);
    tcase_add_test(tc, every_acc_and_dtype_bit_for_bit_with_the_rule);
    tcase_add_test(tc, in_place_gives_the_same_bits);
    tcase_add_test(tc, gradient_matches_finite_differences);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
