/* test_nll_loss: ak_nll_loss (the loss in fp16 or bf16) on the cpu backend,
 * against values worked out by hand in the comments: the loss rounded to the
 * low format, the 32 fp32 lanes, the gradient of the scaled loss (the scale
 * rounded to the dtype first: 65536 is inf in fp16), correct, bad labels,
 * bad arguments and guard regions. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "kt.h"

typedef struct nll_out {
    float loss;
    int32_t correct;
    uint32_t dlogp[64 * 4];
} nll_out;

/* Runs ak_nll_loss with guarded buffers (rows x classes logp of dtype dt). */
static int run_nll(ak_backend *b, size_t rows, size_t classes, ak_dtype dt, const uint32_t *logp,
                   const int32_t *labels, const float *scale, bool grads, nll_out *out)
{
    const size_t n = rows * classes;
    kt_buf tl = kt_buf_alloc(b, n, dt), td = kt_buf_alloc(b, n, dt),
           lab = kt_buf_alloc(b, rows, AK_F32), sc = kt_buf_alloc(b, 1, AK_F32),
           loss = kt_buf_alloc(b, 1, AK_F32), correct = kt_buf_alloc(b, 1, AK_F32);
    kt_buf_put(&tl, logp);
    kt_buf_upload(&lab, labels);
    if (scale) kt_buf_upload(&sc, scale);
    const int rc = ak_nll_loss(b, rows, classes, tl.t, (const int32_t *)lab.t.data,
                               scale ? (const float *)sc.t.data : NULL, (float *)loss.t.data,
                               grads ? td.t : ak_tensor_none(), (int32_t *)correct.t.data);
    if (rc == AK_OK) {
        kt_buf_download(&loss, &out->loss);
        kt_buf_download(&correct, &out->correct);
        if (grads) kt_buf_get(&td, out->dlogp);
    }
    ck_assert(kt_buf_guards_ok(&tl) && kt_buf_guards_ok(&td) && kt_buf_guards_ok(&loss) &&
              kt_buf_guards_ok(&correct));
    kt_buf_free(&tl);
    kt_buf_free(&td);
    kt_buf_free(&lab);
    kt_buf_free(&sc);
    kt_buf_free(&loss);
    kt_buf_free(&correct);
    return rc;
}

/* Three rows of three fp16 log-probabilities, all exact in fp16. */
static void three_rows(ak_dtype dt, uint32_t *logp, int32_t *labels)
{
    static const double v[9] = {-0.5, -1.25, -2.0, -3.0, -0.125, -4.0, -0.25, -2.0, -3.0};
    for (int i = 0; i < 9; i++)
        logp[i] = kt_from_f64(dt, v[i]);
    labels[0] = 1; /* -1.25; the row's maximum is at 0: not correct */
    labels[1] = 0; /* -3.0; maximum at 1: not correct */
    labels[2] = 0; /* -0.25, the maximum: correct */
}

START_TEST(nll_loss_and_gradient_by_hand)
{
    ak_backend *b = kt_open_cpu();
    uint32_t logp[9];
    int32_t labels[3];
    three_rows(AK_F16, logp, labels);
    nll_out o;
    /* lanes 0..2: 1.25, 3.0, 0.25; total 4.5; 4.5 / 3 = 1.5, exact */
    ck_assert_int_eq(run_nll(b, 3, 3, AK_F16, logp, labels, NULL, true, &o), AK_OK);
    ck_assert_float_eq(o.loss, 1.5f);
    ck_assert_int_eq(o.correct, 1);
    /* scale 1: g = -(1 / 3): fp32 0.333333343, fp16 1365 * 2^-12 = 0x3555,
     * negative 0xB555 at each label, +0 elsewhere */
    static const uint32_t g1[9] = {0, 0xB555, 0, 0xB555, 0, 0, 0xB555, 0, 0};
    ck_assert_int_eq(kt_bits_mismatches("dlogp", AK_F16, o.dlogp, g1, 9), 0);
    /* scale 1024: 1024 / 3 = 341.333.. in fp32; fp16 spacing 0.25 there:
     * 341.25 = 0x5D55; negative 0xDD55 */
    const float s1024 = 1024.0f;
    ck_assert_int_eq(run_nll(b, 3, 3, AK_F16, logp, labels, &s1024, true, &o), AK_OK);
    ck_assert_float_eq(o.loss, 1.5f); /* the loss itself is not scaled */
    for (int i = 0; i < 9; i++)
        ck_assert_uint_eq(o.dlogp[i], g1[i] ? 0xDD55u : 0u);
    /* scale 65536: fp16 rounds it to inf (65536 >= 65520), so every label
     * gets -inf: the loss in fp16 overflows PyTorch's initial scale */
    const float s65536 = 65536.0f;
    ck_assert_int_eq(run_nll(b, 3, 3, AK_F16, logp, labels, &s65536, true, &o), AK_OK);
    for (int i = 0; i < 9; i++)
        ck_assert_uint_eq(o.dlogp[i], g1[i] ? 0xFC00u : 0u);
    /* 32768 stays finite: 32768 / 3 = 10922.666.. in fp32, fp16 spacing 8
     * at [8192, 16384): 10920 = 0x7155; negative 0xF155 */
    const float s32768 = 32768.0f;
    ck_assert_int_eq(run_nll(b, 3, 3, AK_F16, logp, labels, &s32768, true, &o), AK_OK);
    for (int i = 0; i < 9; i++)
        ck_assert_uint_eq(o.dlogp[i], g1[i] ? 0xF155u : 0u);
    ak_close(b);
}
END_TEST

START_TEST(nll_loss_bf16_keeps_the_scale)
{
    ak_backend *b = kt_open_cpu();
    uint32_t logp[12];
    int32_t labels[4] = {0, 1, 2, 0};
    for (int i = 0; i < 12; i++)
        logp[i] = kt_from_f64(AK_BF16, -1.0 - (double)i); /* -1 .. -12, exact in bf16 */
    nll_out o;
    /* 65536 is 2^16, exact in bf16; 65536 / 4 = 16384 = 0x4680, negative
     * 0xC680; lanes 1, 5, 9, 10: total 25, 25 / 4 = 6.25 in fp32, bf16
     * spacing 2^-5 at [4, 8): 6.25 exact */
    const float s = 65536.0f;
    ck_assert_int_eq(run_nll(b, 4, 3, AK_BF16, logp, labels, &s, true, &o), AK_OK);
    ck_assert_float_eq(o.loss, 6.25f);
    ck_assert_int_eq(o.correct, 2); /* every row's maximum is its first column: rows 0 and 3 */
    static const uint32_t g[12] = {0xC680, 0, 0, 0, 0xC680, 0, 0, 0, 0xC680, 0xC680, 0, 0};
    ck_assert_int_eq(kt_bits_mismatches("dlogp", AK_BF16, o.dlogp, g, 12), 0);
    ak_close(b);
}
END_TEST

START_TEST(nll_loss_is_rounded_to_the_dtype)
{
    ak_backend *b = kt_open_cpu();
    /* labels' logp -1, -1, -(1 + 2^-10): total 3 + 2^-10 (exact in fp32),
     * / 3 = 1.000325.. in fp32, a third of an fp16 ulp above 1: 1.0 */
    uint32_t logp[6];
    int32_t labels[3] = {0, 0, 0};
    const double v[3] = {-1.0, -1.0, -(1.0 + 0x1p-10)};
    for (int r = 0; r < 3; r++) {
        logp[2 * r] = kt_from_f64(AK_F16, v[r]);
        logp[2 * r + 1] = kt_from_f64(AK_F16, -8.0);
    }
    nll_out o;
    ck_assert_int_eq(run_nll(b, 3, 2, AK_F16, logp, labels, NULL, false, &o), AK_OK);
    ck_assert_float_eq(o.loss, 1.0f);
    ck_assert_int_eq(o.correct, 3);
    /* bf16: 1.000325.. is within 2^-8 of 1: 1.0 too; and 3 rows of -2.75
     * give 2.75 exactly */
    for (int r = 0; r < 3; r++)
        logp[2 * r] = kt_from_f64(AK_BF16, -2.75), logp[2 * r + 1] = kt_from_f64(AK_BF16, -8.0);
    ck_assert_int_eq(run_nll(b, 3, 2, AK_BF16, logp, labels, NULL, false, &o), AK_OK);
    ck_assert_float_eq(o.loss, 2.75f);
    ak_close(b);
}
END_TEST

START_TEST(nll_loss_lanes_and_many_rows)
{
    ak_backend *b = kt_open_cpu();
    /* 40 rows (lanes 0..7 take two rows each): labels' logp -0.5 in rows
     * 0..31 and -64 in rows 32..39: total 16 + 512 = 528, / 40 = 13.2 in
     * fp32; fp16 spacing 2^-7 at [8, 16): 13.203125 (1690 * 2^-7, the
     * nearer of 13.1953125 and 13.203125) */
    enum { ROWS = 40, CLASSES = 2 };
    uint32_t logp[ROWS * CLASSES];
    int32_t labels[ROWS];
    for (int r = 0; r < ROWS; r++) {
        labels[r] = 1;
        logp[2 * r] = kt_from_f64(AK_F16, -100.0);
        logp[2 * r + 1] = kt_from_f64(AK_F16, r < 32 ? -0.5 : -64.0);
    }
    nll_out o;
    ck_assert_int_eq(run_nll(b, ROWS, CLASSES, AK_F16, logp, labels, NULL, true, &o), AK_OK);
    ck_assert_float_eq(o.loss, 13.203125f);
    ck_assert_int_eq(o.correct, ROWS);
    /* 1 / 40 = 0.025 in fp32 (0.0250000004), fp16 spacing 2^-16 at
     * [2^-6, 2^-5): 1638.4 -> 1638 * 2^-16 = 0x2666; negative 0xA666 */
    for (int r = 0; r < ROWS; r++) {
        ck_assert_uint_eq(o.dlogp[2 * r], 0u);
        ck_assert_uint_eq(o.dlogp[2 * r + 1], 0xA666u);
    }
    ak_close(b);
}
END_TEST

/* The gradient against a finite difference of the loss, in values that the
 * low format holds exactly: 4 rows whose labels' logp are -1 give 1.0;
 * moving one to -1.25 gives 1.0625, a slope of -0.25 = -1/4, the gradient
 * at scale 1; every other logp leaves the loss unchanged (slope 0). */
START_TEST(nll_loss_gradient_matches_finite_differences)
{
    ak_backend *b = kt_open_cpu();
    for (int d = 0; d < 2; d++) {
        const ak_dtype dt = kt_dtypes[d];
        uint32_t logp[8];
        int32_t labels[4] = {0, 1, 0, 1};
        for (int i = 0; i < 8; i++)
            logp[i] = kt_from_f64(dt, (i % 2) == labels[i / 2] ? -1.0 : -4.0);
        nll_out base, moved;
        ck_assert_int_eq(run_nll(b, 4, 2, dt, logp, labels, NULL, true, &base), AK_OK);
        ck_assert_float_eq(base.loss, 1.0f);
        for (int i = 0; i < 8; i++) {
            uint32_t p[8];
            memcpy(p, logp, sizeof p);
            const double x = kt_value(dt, logp[i]);
            p[i] = kt_from_f64(dt, x - 0.25);
            ck_assert_int_eq(run_nll(b, 4, 2, dt, p, labels, NULL, false, &moved), AK_OK);
            const double slope = ((double)moved.loss - (double)base.loss) / -0.25;
            ck_assert_msg(slope == kt_value(dt, base.dlogp[i]), "%s logp[%d]: slope %g, dlogp %g",
                          ak_dtype_name(dt), i, slope, kt_value(dt, base.dlogp[i]));
        }
    }
    ak_close(b);
}
END_TEST

START_TEST(nll_loss_nan_and_empty)
{
    ak_backend *b = kt_open_cpu();
    uint32_t logp[4] = {kt_from_f64(AK_F16, NAN), kt_from_f64(AK_F16, -1.0),
                        kt_from_f64(AK_F16, -1.0), kt_from_f64(AK_F16, -2.0)};
    int32_t labels[2] = {0, 0};
    nll_out o;
    ck_assert_int_eq(run_nll(b, 2, 2, AK_F16, logp, labels, NULL, false, &o), AK_OK);
    ck_assert(isnan(o.loss));
    ck_assert_int_eq(o.correct, 2); /* a NaN ranks above every number */
    /* a NaN scale: NaN gradients (the default NaN, 0xFE00) at the labels */
    const float nan = NAN;
    ck_assert_int_eq(run_nll(b, 2, 2, AK_F16, logp, labels, &nan, true, &o), AK_OK);
    ck_assert_uint_eq(o.dlogp[0], kt_default_nan(AK_F16));
    ck_assert_uint_eq(o.dlogp[1], 0u);
    /* no rows: NaN, as PyTorch's mean over nothing; correct 0 */
    ck_assert_int_eq(run_nll(b, 0, 2, AK_F16, logp, labels, NULL, true, &o), AK_OK);
    ck_assert(isnan(o.loss));
    ck_assert_int_eq(o.correct, 0);
    ak_close(b);
}
END_TEST

START_TEST(nll_loss_bad_arguments_named)
{
    ak_backend *b = kt_open_cpu();
    kt_buf h = kt_buf_alloc(b, 6, AK_F16), f = kt_buf_alloc(b, 6, AK_F32),
           bf = kt_buf_alloc(b, 6, AK_BF16), lab = kt_buf_alloc(b, 3, AK_F32),
           out = kt_buf_alloc(b, 1, AK_F32);
    const int32_t bad[3] = {0, 2, 1};
    kt_buf_upload(&lab, bad);
    const int32_t *labels = (const int32_t *)lab.t.data;
    float *loss = (float *)out.t.data;
    const ak_tensor none = ak_tensor_none();
    KT_EXPECT_ERROR(b, ak_nll_loss(b, 3, 2, h.t, labels, NULL, loss, none, NULL), AK_EINVAL,
                    "ak_nll_loss", "labels[1] is 2, outside [0, 2)");
    KT_EXPECT_ERROR(b, ak_nll_loss(b, 3, 2, f.t, labels, NULL, loss, none, NULL), AK_EINVAL, NULL,
                    "ak_nll_loss: logp is fp32, expected fp16 or bf16");
    KT_EXPECT_ERROR(b, ak_nll_loss(b, 3, 2, h.t, labels, NULL, loss, bf.t, NULL), AK_EINVAL, NULL,
                    "ak_nll_loss: dlogp is bf16, expected logp's fp16");
    KT_EXPECT_ERROR(b, ak_nll_loss(b, 2, 2, h.t, labels, NULL, loss, none, NULL), AK_EINVAL, NULL,
                    "ak_nll_loss: logp has 6 elements, expected 4");
    KT_EXPECT_ERROR(b, ak_nll_loss(b, 3, 2, h.t, NULL, NULL, loss, none, NULL), AK_EINVAL, NULL,
                    "ak_nll_loss: labels is NULL");
    KT_EXPECT_ERROR(b, ak_nll_loss(b, 3, 2, h.t, labels, NULL, NULL, none, NULL), AK_EINVAL, NULL,
                    "ak_nll_loss: loss is NULL");
    KT_EXPECT_ERROR(b, ak_nll_loss(b, 3, 0, none, labels, NULL, loss, none, NULL), AK_EINVAL, NULL,
                    "ak_nll_loss: classes is 0");
    KT_EXPECT_ERROR(b,
                    ak_nll_loss(b, ((size_t)1 << 24) + 1, 1, h.t, labels, NULL, loss, none, NULL),
                    AK_EINVAL, NULL, "exceeds 2^24");
    ck_assert(kt_buf_guards_ok(&h) && kt_buf_guards_ok(&out));
    kt_buf_free(&h);
    kt_buf_free(&f);
    kt_buf_free(&bf);
    kt_buf_free(&lab);
    kt_buf_free(&out);
    ak_close(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_nll_loss");
    TCase *tc = tcase_create("nll_loss");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, nll_loss_and_gradient_by_hand);
    tcase_add_test(tc, nll_loss_bf16_keeps_the_scale);
    tcase_add_test(tc, nll_loss_is_rounded_to_the_dtype);
    tcase_add_test(tc, nll_loss_lanes_and_many_rows);
    tcase_add_test(tc, nll_loss_gradient_matches_finite_differences);
    tcase_add_test(tc, nll_loss_nan_and_empty);
    tcase_add_test(tc, nll_loss_bad_arguments_named);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
