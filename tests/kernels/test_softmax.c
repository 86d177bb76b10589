/* test_softmax: ak_softmax_forward on the cpu backend: against the double
 * softmax (fp32 acc, within the bound of its roundings), bit for bit
 * against kernels/softmax.c's rule written step by step (ref_softmax.c:
 * every acc, every dtype pairing, masked and scaled rows, arbitrary bit
 * patterns), fp16/bf16 outputs against the rounding of the double result,
 * special rows by hand, and the low-precision kernels' overflow,
 * underflow and stagnating sum against fp32 accumulation. */
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

/* fp32 acc, fp32 in and out: within the fp32 roundings of the double
 * softmax.  With |x scale| <= 8: z and d are within 2 8 2^-24 (absolute) of
 * exact, each exp within 2^-24 relative more, the sum (cols - 1) 2^-24,
 * the division or log one more: softmax within (cols + 40) 2^-24 y,
 * log-softmax within (cols + 40) 2^-24 (1 + |y|). */
START_TEST(fp32_within_the_bound_of_the_double_softmax)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 170);
    const size_t shapes[3][3] = {{7, 13, 0}, {12, 4, 4}, {3, 300, 0}}; /* rows, cols, causal_t */
    for (int s = 0; s < 3; s++)
        for (int lg = 0; lg < 2; lg++) {
            const size_t rows = shapes[s][0], cols = shapes[s][1], n = rows * cols;
            const float scale = s == 1 ? 0.5773502691896258f : 1.0f; /* 1/sqrt(3) */
            const ak_softmax_args a = args(rows, cols, lg, shapes[s][2], scale, AK_F32);
            uint32_t *x = kt_bits_alloc(n), *y = kt_bits_alloc(n);
            double *xv = malloc(n * sizeof *xv), *want = malloc(n * sizeof *want);
            kt_fill_values(&r, AK_F32, x, n, 8.0);
            for (size_t i = 0; i < n; i++)
                xv[i] = kt_value(AK_F32, x[i]);
            ref_softmax_run(b, &a, AK_F32, AK_F32, x, y);
            for (size_t row = 0; row < rows; row++) {
                const size_t valid = ref_softmax_valid(cols, a.causal_t, row);
                ref_softmax_row(xv + row * cols, cols, valid, scale, lg, want + row * cols);
            }
            for (size_t i = 0; i < n; i++) {
                const double got = kt_value(AK_F32, y[i]), w = want[i];
                const double bound = (double)(cols + 40) * 0x1p-24 * (lg ? 1.0 + fabs(w) : w);
                ck_assert_msg(kt_agree_within(got, w, bound), "shape %d log %d [%zu]: %.9g vs %.9g",
                              s, lg, i, got, w);
                if (w == 0.0 || isinf(w)) ck_assert_uint_eq(y[i], kt_from_f64(AK_F32, w));
            }
            free(x);
            free(y);
            free(xv);
            free(want);
        }
    ak_close(b);
}
END_TEST

/* Every acc, every x and y dtype, masks, scales, ordinary values and
 * arbitrary bit patterns: the bits of ref_softmax_rule. */
START_TEST(every_acc_and_dtype_bit_for_bit_with_the_rule)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 171);
    const size_t rows = 10, cols = 5, n = rows * cols;
    uint32_t *x = kt_bits_alloc(n), *got = kt_bits_alloc(n), *want = kt_bits_alloc(n);
    for (int acc = 0; acc < 3; acc++)
        for (int c = 0; c < 9; c++)
            for (int v = 0; v < 3; v++)
                for (int lg = 0; lg < 2; lg++) {
                    const ak_dtype dy = kt_dtypes[c / 3], dx = kt_dtypes[c % 3];
                    const ak_softmax_args a = args(rows, cols, lg, v == 1 ? cols : 0,
                                                   v == 2 ? 0.125f : 0.75f, kt_dtypes[acc]);
                    if (v == 2)
                        kt_fill_bits(&r, dx, x, n);
                    else
                        kt_fill_values(&r, dx, x, n, 12.0);
                    ref_softmax_run(b, &a, dy, dx, x, got);
                    ref_softmax_rule(&a, dy, dx, x, want);
                    ck_assert_msg(kt_bits_mismatches("softmax", dy, got, want, n) == 0,
                                  "acc %s y %s x %s case %d log %d", ak_dtype_name(kt_dtypes[acc]),
                                  ak_dtype_name(dy), ak_dtype_name(dx), v, lg);
                }
    free(x);
    free(got);
    free(want);
    ak_close(b);
}
END_TEST

/* fp32 acc with fp16/bf16 y: the double softmax rounded to y, except that
 * a double result within 2^-17 relative of a tie of y's format may go to
 * either neighbour (the fp32 result is rounded again). */
START_TEST(low_precision_outputs_are_the_rounded_double)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 172);
    const size_t rows = 40, cols = 9, n = rows * cols;
    uint32_t *x = kt_bits_alloc(n), *y = kt_bits_alloc(n);
    double *xv = malloc(n * sizeof *xv), *want = malloc(n * sizeof *want);
    for (int d = 0; d < 2; d++)
        for (int lg = 0; lg < 2; lg++) {
            const ak_dtype dy = kt_dtypes[d];
            const ak_softmax_args a = args(rows, cols, lg, 0, 1.0f, AK_F32);
            kt_fill_values(&r, AK_F32, x, n, 6.0);
            for (size_t i = 0; i < n; i++)
                xv[i] = kt_value(AK_F32, x[i]);
            ref_softmax_run(b, &a, dy, AK_F32, x, y);
            size_t near_tie = 0;
            for (size_t row = 0; row < rows; row++)
                ref_softmax_row(xv + row * cols, cols, cols, 1.0, lg, want + row * cols);
            for (size_t i = 0; i < n; i++) {
                const uint32_t w = kt_from_f64(dy, want[i]);
                const double u = kt_ulp(dy, want[i]);
                const double off = fabs(fabs(want[i]) / u - floor(fabs(want[i]) / u) - 0.5);
                if (off * u < 0x1p-17 * fabs(want[i])) {
                    near_tie++;
                    ck_assert(kt_ulp_distance(dy, y[i], w) <= 1);
                } else {
                    ck_assert_msg(y[i] == w, "%s log %d [%zu]: got 0x%04X want 0x%04X (%.9g)",
                                  ak_dtype_name(dy), lg, i, y[i], w, want[i]);
                }
            }
            ck_assert(near_tie < n / 20);
        }
    free(x);
    free(y);
    free(xv);
    free(want);
    ak_close(b);
}
END_TEST

/* Rows by hand (fp32 in, out and acc):
 *   [NaN 1 2] -> NaN; [+inf 1 2] -> NaN (inf - inf); [-inf -inf -inf] ->
 *   NaN; [-inf 0 0] -> [0 0.5 0.5], log [-inf, -ln 2, -ln 2] with ln 2 in
 *   fp32 0x3F317218; [3e38 3e38 -3e38] -> [0.5 0.5 0] (no overflow after
 *   the max); causal t = 2: row 0 [1 NaN] -> [1 0] (the NaN is masked, not
 *   read), log [0 -inf]; row 1 [0 0] -> [0.5 0.5]. */
START_TEST(special_rows_by_hand)
{
    ak_backend *b = kt_open_cpu();
    const uint32_t dn = kt_default_nan(AK_F32), half = 0x3F000000u, ninf = 0xFF800000u;
    const uint32_t nln2 = 0xBF317218u;
    const float xs[15] = {NAN,       1,         2, INFINITY, 1,     2,     -INFINITY, -INFINITY,
                          -INFINITY, -INFINITY, 0, 0,        3e38f, 3e38f, -3e38f};
    uint32_t x[15], y[15];
    for (int i = 0; i < 15; i++)
        x[i] = kt_f32_bits(xs[i]);
    const uint32_t want[15] = {dn, dn, dn, dn, dn, dn, dn, dn, dn, 0, half, half, half, half, 0};
    ak_softmax_args a = args(5, 3, false, 0, 1.0f, AK_F32);
    ref_softmax_run(b, &a, AK_F32, AK_F32, x, y);
    ck_assert_uint_eq(kt_bits_mismatches("special rows", AK_F32, y, want, 15), 0);
    a.log = true;
    ref_softmax_run(b, &a, AK_F32, AK_F32, x, y);
    ck_assert_uint_eq(y[0], dn);
    ck_assert_uint_eq(y[9], ninf);
    ck_assert_uint_eq(y[10], nln2);
    ck_assert_uint_eq(y[11], nln2);
    ck_assert_uint_eq(y[12], nln2);
    ck_assert_uint_eq(y[14], 0xFF800000u); /* -3e38 - 3e38 overflows fp32: -inf */
    /* causal */
    const uint32_t xc[4] = {kt_f32_bits(1.0f), kt_marker_nan(AK_F32), 0, 0};
    const uint32_t wc[4] = {0x3F800000u, 0, half, half}, wl[4] = {0, ninf, nln2, nln2};
    a = args(2, 2, false, 2, 1.0f, AK_F32);
    ref_softmax_run(b, &a, AK_F32, AK_F32, xc, y);
    ck_assert_uint_eq(kt_bits_mismatches("causal", AK_F32, y, wc, 4), 0);
    a.log = true;
    ref_softmax_run(b, &a, AK_F32, AK_F32, xc, y);
    ck_assert_uint_eq(kt_bits_mismatches("causal log", AK_F32, y, wl, 4), 0);
    ak_close(b);
}
END_TEST

/* The causal mask on a 2 x (4 x 4) block: row r % 4 = q has probabilities
 * exactly 0 beyond column q, and its first q + 1 sum to 1 (within the
 * fp32 sum). */
START_TEST(causal_masked_probabilities_are_exact_zeros)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 173);
    const size_t t = 4, rows = 8, n = rows * t;
    uint32_t x[32], y[32];
    for (int acc = 0; acc < 3; acc++) {
        kt_fill_values(&r, AK_F32, x, n, 3.0);
        const ak_softmax_args a = args(rows, t, false, t, 0.5f, kt_dtypes[acc]);
        ref_softmax_run(b, &a, AK_F32, AK_F32, x, y);
        for (size_t row = 0; row < rows; row++) {
            double s = 0.0;
            for (size_t j = 0; j < t; j++) {
                if (j > row % t)
                    ck_assert_uint_eq(y[row * t + j], 0); /* +0 exactly */
                else
                    ck_assert(kt_value(AK_F32, y[row * t + j]) > 0.0);
                s += kt_value(AK_F32, y[row * t + j]);
            }
            ck_assert(fabs(s - 1.0) < (kt_dtypes[acc] == AK_F32 ? 1e-6 : 2e-2));
        }
        ck_assert_uint_eq(y[0], 0x3F800000u); /* query 0 sees itself only */
    }
    ak_close(b);
}
END_TEST

/* The low-precision kernels do what fp32 accumulation avoids:
 *   - overflow: x = [300, 0] (fp32), scale 256: 76800 is inf in fp16, so
 *     d = inf - inf and the row is NaN; fp32 acc gives [1, 0] exactly
 *     (exp(-76800) is 0), written to fp16 as 0x3C00, 0;
 *   - underflow: x = [0, -20], y fp32: fp16 acc rounds exp(-20) = 2.06e-9
 *     (below 2^-25) to 0, so y = [1, 0] exactly; fp32 acc gives y[1] =
 *     exp(-20) / (1 + exp(-20)) within 2^-20 relative, nonzero, y[0] = 1;
 *   - the sum: 4096 equal inputs: the fp16 running sum stops at 2048 (2048
 *     + 1 is a tie, to even), so y = 2^-11 (fp16 0x1000) where fp32 acc
 *     gives 2^-12 (0x0C00); log-softmax -log 2048 rounded to fp16 is
 *     -7.625 (0xC7A0); bf16: 512 equal inputs stop at 256, y = 2^-8
 *     (bf16 0x3B80) against 2^-9 (0x3B00). */
START_TEST(low_precision_acc_overflows_underflows_and_stagnates)
{
    ak_backend *b = kt_open_cpu();
    const uint32_t dn16 = kt_default_nan(AK_F16);
    uint32_t x[2] = {kt_f32_bits(300.0f), 0}, y[2];
    ak_softmax_args a = args(1, 2, false, 0, 256.0f, AK_F16);
    ref_softmax_run(b, &a, AK_F16, AK_F32, x, y);
    ck_assert_uint_eq(y[0], dn16);
    ck_assert_uint_eq(y[1], dn16);
    a.acc = AK_F32;
    ref_softmax_run(b, &a, AK_F16, AK_F32, x, y);
    ck_assert_uint_eq(y[0], 0x3C00);
    ck_assert_uint_eq(y[1], 0);

    x[0] = 0;
    x[1] = kt_f32_bits(-20.0f);
    a = args(1, 2, false, 0, 1.0f, AK_F16);
    ref_softmax_run(b, &a, AK_F32, AK_F32, x, y);
    ck_assert_uint_eq(y[0], 0x3F800000u);
    ck_assert_uint_eq(y[1], 0);
    a.acc = AK_F32;
    ref_softmax_run(b, &a, AK_F32, AK_F32, x, y);
    ck_assert_uint_eq(y[0], 0x3F800000u);
    const double e20 = exp(-20.0) / (1.0 + exp(-20.0));
    ck_assert(fabs(kt_value(AK_F32, y[1]) - e20) <= 0x1p-20 * e20);

    enum { N = 4096 };
    uint32_t *xe = kt_bits_alloc(N), *ye = kt_bits_alloc(N);
    for (size_t i = 0; i < N; i++)
        xe[i] = 0x3F800000u;
    a = args(1, N, false, 0, 1.0f, AK_F16);
    ref_softmax_run(b, &a, AK_F16, AK_F32, xe, ye);
    ck_assert_uint_eq(ye[0], 0x1000);
    ck_assert_uint_eq(ye[N - 1], 0x1000);
    a.log = true;
    ref_softmax_run(b, &a, AK_F16, AK_F32, xe, ye);
    ck_assert_uint_eq(ye[7], 0xC7A0);
    a = args(1, N, false, 0, 1.0f, AK_F32);
    ref_softmax_run(b, &a, AK_F16, AK_F32, xe, ye);
    ck_assert_uint_eq(ye[5], 0x0C00);
    a = args(1, 512, false, 0, 1.0f, AK_BF16);
    ref_softmax_run(b, &a, AK_BF16, AK_F32, xe, ye);
    ck_assert_uint_eq(ye[0], 0x3B80);
    a.acc = AK_F32;
    ref_softmax_run(b, &a, AK_BF16, AK_F32, xe, ye);
    ck_assert_uint_eq(ye[0], 0x3B00);
    free(xe);
    free(ye);
    ak_close(b);
}
END_TEST

START_TEST(bad_arguments_named)
{
    ak_backend *b = kt_open_cpu();
    kt_buf f12 = kt_buf_alloc(b, 12, AK_F32), g12 = kt_buf_alloc(b, 12, AK_F32),
           f8 = kt_buf_alloc(b, 8, AK_F32);
    static const char fw[] = "ak_softmax_forward: ";
    ak_softmax_args a = args(3, 4, false, 0, 1.0f, AK_F32);
    KT_EXPECT_ERROR(b, ak_softmax_forward(b, NULL, g12.t, f12.t), AK_EINVAL, fw, "a is NULL");
    ck_assert_int_eq(ak_softmax_forward(NULL, &a, g12.t, f12.t), AK_EINVAL);
    a.acc = (ak_dtype)7;
    KT_EXPECT_ERROR(b, ak_softmax_forward(b, &a, g12.t, f12.t), AK_EINVAL, fw,
                    "acc (7) is not a dtype");
    a.acc = AK_F32;
    const float bad_scales[4] = {0.0f, -1.0f, NAN, INFINITY};
    for (int i = 0; i < 4; i++) {
        a.scale = bad_scales[i];
        KT_EXPECT_ERROR(b, ak_softmax_forward(b, &a, g12.t, f12.t), AK_EINVAL, fw,
                        "must be finite and > 0");
    }
    a.scale = 1.0f;
    a.cols = 0;
    KT_EXPECT_ERROR(b, ak_softmax_forward(b, &a, g12.t, f12.t), AK_EINVAL, fw, "cols is 0");
    a.cols = 4;
    a.causal_t = 3;
    KT_EXPECT_ERROR(b, ak_softmax_forward(b, &a, g12.t, f12.t), AK_EINVAL, fw,
                    "causal_t (3) must equal cols (4)");
    a.causal_t = 4;
    KT_EXPECT_ERROR(b, ak_softmax_forward(b, &a, g12.t, f12.t), AK_EINVAL, fw,
                    "rows (3) is not a multiple of causal_t (4)");
    a.causal_t = 0;
    a.rows = SIZE_MAX / 2;
    KT_EXPECT_ERROR(b, ak_softmax_forward(b, &a, g12.t, f12.t), AK_EINVAL, fw, "rows x cols: ");
    a.rows = 3;
    KT_EXPECT_ERROR(b, ak_softmax_forward(b, &a, g12.t, f8.t), AK_EINVAL, fw,
                    "x has 8 elements, expected 12");
    KT_EXPECT_ERROR(b, ak_softmax_forward(b, &a, f8.t, f12.t), AK_EINVAL, fw,
                    "y has 8 elements, expected 12");
    KT_EXPECT_ERROR(b, ak_softmax_forward(b, &a, f12.t, f12.t), AK_EINVAL, fw, "y overlaps x");
    const ak_tensor bad_dtype = ak_tensor_of(g12.t.data, 12, (ak_dtype)9);
    ck_assert_int_ne(ak_softmax_forward(b, &a, bad_dtype, f12.t), AK_OK);
    ck_assert(strstr(ak_error(b), fw) == ak_error(b));

    static const char bw[] = "ak_softmax_backward: ";
    const ak_tensor tail = ak_tensor_of((float *)f12.t.data + 4, 8, AK_F32);
    a.rows = 2;
    KT_EXPECT_ERROR(b, ak_softmax_backward(b, &a, tail, f8.t, g12.t), AK_EINVAL, bw,
                    "y has 12 elements, expected 8");
    KT_EXPECT_ERROR(b, ak_softmax_backward(b, &a, tail, ak_tensor_of(f12.t.data, 8, AK_F32), f8.t),
                    AK_EINVAL, bw, "dx overlaps dy");
    const ak_tensor as16 = ak_tensor_of(f8.t.data, 8, AK_F16);
    KT_EXPECT_ERROR(b, ak_softmax_backward(b, &a, as16, f8.t, tail), AK_EINVAL, bw,
                    "dx overlaps dy");
    KT_EXPECT_ERROR(b, ak_softmax_backward(b, &a, f8.t, tail, ak_tensor_of(f8.t.data, 8, AK_F32)),
                    AK_EINVAL, bw, "dx overlaps y");
    a.scale = NAN;
    KT_EXPECT_ERROR(b, ak_softmax_backward(b, &a, f8.t, f8.t, tail), AK_EINVAL, bw,
                    "must be finite and > 0");
    /* nothing to do */
    a = args(0, 4, false, 0, 1.0f, AK_F32);
    ck_assert_int_eq(ak_softmax_forward(b, &a, ak_tensor_none(), ak_tensor_none()), AK_OK);
    ck_assert_int_eq(
        ak_softmax_backward(b, &a, ak_tensor_none(), ak_tensor_none(), ak_tensor_none()), AK_OK);
    ck_assert(kt_buf_guards_ok(&f12) && kt_buf_guards_ok(&g12) && kt_buf_guards_ok(&f8));
    kt_buf_free(&f12);
    kt_buf_free(&g12);
    kt_buf_free(&f8);
    ak_close(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_softmax");
    TCase *tc = tcase_create("softmax");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, fp32_within_the_bound_of_the_double_softmax);
    tcase_add_test(tc, every_acc_and_dtype_bit_for_bit_with_the_rule);
    tcase_add_test(tc, low_precision_outputs_are_the_rounded_double);
    tcase_add_test(tc, special_rows_by_hand);
    tcase_add_test(tc, causal_masked_probabilities_are_exact_zeros);
    tcase_add_test(tc, low_precision_acc_overflows_underflows_and_stagnates);
    tcase_add_test(tc, bad_arguments_named);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
