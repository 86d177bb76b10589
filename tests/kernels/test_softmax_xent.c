/* test_softmax_xent: ak_softmax_xent on the cpu backend, against the
 * double-precision reference of ref_softmax_xent.c (loss, gradients,
 * accuracy count), central finite differences, the loss scale, extreme and
 * non-finite logits, a language model's long rows (50257 classes), bad
 * labels, bad arguments and guard regions (the scalar outputs are guarded
 * too). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "kt.h"
#include "ref_softmax_xent.h"

/* ---- softmax cross-entropy ------------------------------------------------------------ */
START_TEST(softmax_matches_double_reference)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 10);
    enum { BATCH = 7, CLASSES = 11 };
    uint32_t logits[BATCH * CLASSES];
    int32_t labels[BATCH];
    const float scale = 1024.0f, odd_scale = 3.0f;
    for (int c = 0; c < 9; c++) {
        const ak_dtype dl = kt_dtypes[c % 3], dd = kt_dtypes[c / 3];
        for (int i = 0; i < BATCH * CLASSES; i++)
            logits[i] = kt_from_f64(dl, 16.0 * ts_uniform(&r) - 8.0);
        ref_xent_labels(&r, labels, BATCH, CLASSES);
        /* row 0: two equal maxima (2 and 5), label on the second: not correct;
         * row 1 likewise with the label on the first: correct */
        logits[2] = logits[5] = kt_from_f64(dl, 9.0);
        labels[0] = 5;
        logits[CLASSES + 2] = logits[CLASSES + 5] = kt_from_f64(dl, 9.0);
        labels[1] = 2;
        xent_case xc = {BATCH, CLASSES, dl, dd, logits, labels, NULL};
        ref_xent_check(b, &xc);
        xc.scale = &scale;
        ref_xent_check(b, &xc);
        xc.scale = &odd_scale;
        ref_xent_check(b, &xc);
    }
    ak_close(b);
}
END_TEST

START_TEST(softmax_scale_is_applied)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 11);
    enum { BATCH = 4, CLASSES = 6, N = BATCH * CLASSES };
    uint32_t logits[N], g1[N], g2[N];
    int32_t labels[BATCH];
    for (int i = 0; i < N; i++)
        logits[i] = kt_from_f64(AK_F32, 6.0 * ts_uniform(&r) - 3.0);
    ref_xent_labels(&r, labels, BATCH, CLASSES);
    /* a power of two scales fp32 gradients exactly */
    const float one = 1.0f, big = 0x1p10f;
    xent_case xc = {BATCH, CLASSES, AK_F32, AK_F32, logits, labels, &one};
    xent_result a = {0, 0, g1}, c = {0, 0, g2};
    ck_assert_int_eq(ref_xent_run(b, &xc, &a), AK_OK);
    xc.scale = &big;
    ck_assert_int_eq(ref_xent_run(b, &xc, &c), AK_OK);
    for (int i = 0; i < N; i++) {
        const float u = kt_f32_of(g1[i]), s = kt_f32_of(g2[i]);
        ck_assert_msg(s == u * 0x1p10f, "dlogits[%d]: %a * 2^10 != %a", i, (double)u, (double)s);
    }
    ck_assert(a.loss == c.loss); /* the loss is not scaled */
    /* fp16 gradients overflow under a large scale, with the right signs:
     * the label's gradient is negative, the others positive */
    const float huge = 0x1p30f; /* (1 - p) >= 5e^-6 / 4 * 2^30 > 65520 */
    uint32_t h[N];
    xent_result d = {0, 0, h};
    xc.dd = AK_F16;
    xc.scale = &huge;
    ck_assert_int_eq(ref_xent_run(b, &xc, &d), AK_OK);
    for (int i = 0; i < N; i++) {
        const bool is_label = i % CLASSES == labels[i / CLASSES];
        ck_assert_uint_eq(h[i] & 0x8000, is_label ? 0x8000 : 0);
    }
    ck_assert_uint_eq(h[labels[0]], 0xFC00);
    ak_close(b);
}
END_TEST

START_TEST(softmax_tiny_loss_keeps_accuracy)
{
    ak_backend *b = kt_open_cpu();
    /* p(label) = 1 / (1 + 2e^-40): the loss and the label's gradient are
     * about 8.5e-18, which lse - x and p - 1 would lose entirely */
    const uint32_t logits[3] = {kt_f32_bits(40.0f), 0, 0};
    const int32_t labels[1] = {0};
    uint32_t g[3];
    xent_case xc = {1, 3, AK_F32, AK_F32, logits, labels, NULL};
    xent_result out = {0, 0, g};
    ck_assert_int_eq(ref_xent_run(b, &xc, &out), AK_OK);
    const double e = exp(-40.0), loss = log1p(2.0 * e), g0 = -2.0 * e / (1.0 + 2.0 * e),
                 g1 = e / (1.0 + 2.0 * e);
    ck_assert_msg(fabs(out.loss - loss) <= 0x1p-23 * loss, "loss %.9g, expected %.17g",
                  (double)out.loss, loss);
    float v = kt_f32_of(g[0]);
    ck_assert_msg(fabs(v - g0) <= 0x1p-23 * fabs(g0), "dlogits[0] %.9g, expected %.17g", (double)v,
                  g0);
    v = kt_f32_of(g[1]);
    ck_assert_msg(fabs(v - g1) <= 0x1p-23 * g1, "dlogits[1] %.9g, expected %.17g", (double)v, g1);
    ck_assert_int_eq(out.correct, 1);
    ak_close(b);
}
END_TEST

START_TEST(softmax_extreme_logits_stay_finite)
{
    ak_backend *b = kt_open_cpu();
    enum { CLASSES = 4 };
    const double rows[][CLASSES] = {
        {80.0, -80.0, 0.0, 1.0},    {-80.0, -80.0, -80.0, -79.0},      {1e30, -1e30, 0.0, 1e29},
        {-1e38, 1e38, 1e38, -1e38}, {65504.0, -65504.0, 0.0, 65504.0}, {1e-30, -1e-30, 0.0, 0.0},
    };
    const size_t batch = sizeof rows / sizeof rows[0];
    const int32_t labels[6] = {1, 3, 1, 0, 1, 2};
    uint32_t logits[6 * CLASSES], g[6 * CLASSES];
    for (int c = 0; c < 9; c++) {
        const ak_dtype dl = kt_dtypes[c % 3], dd = kt_dtypes[c / 3];
        for (size_t r = 0; r < batch; r++) {
            for (int j = 0; j < CLASSES; j++) {
                double v = rows[r][j];
                if (dl == AK_F16) v = copysign(fmin(fabs(v), 6e4), v); /* finite in fp16 */
                logits[r * CLASSES + j] = kt_from_f64(dl, v);
            }
        }
        xent_case xc = {batch, CLASSES, dl, dd, logits, labels, NULL};
        ref_xent_check(b, &xc);
        xent_result out = {0, 0, g};
        ck_assert_int_eq(ref_xent_run(b, &xc, &out), AK_OK);
        ck_assert_msg(isfinite(out.loss), "loss %g (logits %s)", (double)out.loss,
                      ak_dtype_name(dl));
        for (size_t i = 0; i < batch * CLASSES; i++)
            ck_assert(isfinite(kt_value(dd, g[i])));
    }
    ak_close(b);
}
END_TEST

START_TEST(softmax_non_finite_rows)
{
    ak_backend *b = kt_open_cpu();
    enum { CLASSES = 3, BATCH = 5 };
    const float rows[BATCH][CLASSES] = {
        {1.0f, NAN, 2.0f},                 /* NaN: the row is NaN; its argmax is the NaN */
        {1.0f, INFINITY, 2.0f},            /* +inf: NaN row */
        {-INFINITY, -INFINITY, -INFINITY}, /* all -inf: NaN row */
        {-INFINITY, 0.0f, 1.0f},           /* -inf elsewhere: probability 0, finite */
        {-INFINITY, 0.0f, 1.0f},           /* -inf at the label: infinite loss */
    };
    const int32_t labels[BATCH] = {1, 1, 0, 2, 0};
    uint32_t logits[BATCH * CLASSES], g[BATCH * CLASSES];
    for (int r = 0; r < BATCH; r++)
        for (int j = 0; j < CLASSES; j++)
            logits[r * CLASSES + j] = kt_f32_bits(rows[r][j]);
    xent_case xc = {BATCH, CLASSES, AK_F32, AK_F32, logits, labels, NULL};
    ref_xent_check(b, &xc);
    xent_result out = {0, 0, g};
    ck_assert_int_eq(ref_xent_run(b, &xc, &out), AK_OK);
    ck_assert(isnan(out.loss));
    for (int i = 0; i < 3 * CLASSES; i++)
        ck_assert_uint_eq(g[i], 0xFFC00000u);
    ck_assert_uint_eq(g[3 * CLASSES], 0);                  /* exp(-inf) = +0 */
    ck_assert_uint_eq(g[4 * CLASSES], kt_f32_bits(-0.2f)); /* (0 - 1) / 5 */
    ck_assert_int_eq(out.correct, 4); /* the argmax: the NaN, the +inf, the first -inf, 1.0 */
    /* without the NaN rows the loss is +inf (row 4) */
    xent_case xc2 = {2, CLASSES, AK_F32, AK_F32, logits + 3 * CLASSES, labels + 3, NULL};
    ck_assert_int_eq(ref_xent_run(b, &xc2, &out), AK_OK);
    ck_assert(isinf(out.loss) && out.loss > 0);
    ak_close(b);
}
END_TEST

START_TEST(softmax_bad_labels)
{
    ak_backend *b = kt_open_cpu();
    enum { BATCH = 5, CLASSES = 11 };
    uint32_t logits[BATCH * CLASSES], g[BATCH * CLASSES];
    for (int i = 0; i < BATCH * CLASSES; i++)
        logits[i] = kt_f32_bits((float)i);
    int32_t labels[BATCH] = {0, 1, 2, -1, 4};
    xent_case xc = {BATCH, CLASSES, AK_F32, AK_F32, logits, labels, NULL};
    xent_result out = {0, 0, g};
    ck_assert_int_eq(ref_xent_run(b, &xc, &out), AK_EINVAL);
    ck_assert_msg(strstr(ref_xent_error, "ak_softmax_xent: labels[3] is -1, outside [0, 11)"), "%s",
                  ref_xent_error);
    ck_assert(out.loss == 123.0f); /* nothing written */
    ck_assert_int_eq(out.correct, 77);
    ck_assert_uint_eq(g[0], 0x1234);
    labels[3] = 3;
    labels[4] = CLASSES;
    ck_assert_int_eq(ref_xent_run(b, &xc, &out), AK_EINVAL);
    ck_assert_msg(strstr(ref_xent_error, "labels[4] is 11"), "%s", ref_xent_error);
    ak_close(b);
}
END_TEST

START_TEST(softmax_empty_batch_and_optional_outputs)
{
    ak_backend *b = kt_open_cpu();
    xent_case xc = {0, 10, AK_F32, AK_F32, NULL, NULL, NULL};
    xent_result out = {0, 0, NULL};
    ck_assert_int_eq(ref_xent_run(b, &xc, &out), AK_OK);
    ck_assert(isnan(out.loss)); /* the mean over nothing */
    ck_assert_int_eq(out.correct, 0);
    /* no dlogits, no correct */
    kt_buf tl = kt_buf_alloc(b, 6, AK_BF16), lab = kt_buf_alloc(b, 2, AK_F32),
           loss = kt_buf_alloc(b, 1, AK_F32);
    const uint32_t logits[6] = {0x3F80, 0x4000, 0x4040, 0, 0, 0}; /* 1 2 3 / 0 0 0 */
    const int32_t labels[2] = {2, 0};
    kt_buf_put(&tl, logits);
    kt_buf_upload(&lab, labels);
    ck_assert_int_eq(ak_softmax_xent(b, 2, 3, tl.t, (const int32_t *)lab.t.data, NULL,
                                     (float *)loss.t.data, ak_tensor_none(), NULL),
                     AK_OK);
    const double want = 0.5 * (log(exp(-2.0) + exp(-1.0) + 1.0) + log(3.0));
    ck_assert(fabs(kt_buf_get_f32(&loss) - want) <= 0x1p-23 * want);
    ck_assert(kt_buf_guards_ok(&tl) && kt_buf_guards_ok(&lab) && kt_buf_guards_ok(&loss));
    kt_buf_free(&tl);
    kt_buf_free(&lab);
    kt_buf_free(&loss);
    ak_close(b);
}
END_TEST

/* Central differences of the op's own fp32 loss against its gradient.  The
 * loss is rounded to fp32 (ulp 2^-23 near 1), so with h = 2^-6 the
 * difference quotient is good to about 1e-5; the truncation error h^2/6
 * f''' is smaller still. */
START_TEST(softmax_gradient_matches_finite_differences)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 12);
    enum { BATCH = 3, CLASSES = 5, N = BATCH * CLASSES };
    const double h = 0x1p-6;
    uint32_t logits[N], g[N], gs[N], scratch[N];
    int32_t labels[BATCH];
    for (int i = 0; i < N; i++)
        logits[i] = kt_f32_bits((float)ldexp((double)ts_below(&r, 4097) - 2048.0, -10));
    ref_xent_labels(&r, labels, BATCH, CLASSES);
    const float eight = 8.0f;
    xent_case xc = {BATCH, CLASSES, AK_F32, AK_F32, logits, labels, NULL};
    xent_result out = {0, 0, g}, scaled = {0, 0, gs}, probe = {0, 0, scratch};
    ck_assert_int_eq(ref_xent_run(b, &xc, &out), AK_OK);
    xc.scale = &eight;
    ck_assert_int_eq(ref_xent_run(b, &xc, &scaled), AK_OK);
    xc.scale = NULL;
    uint32_t x[N];
    xc.logits = x;
    for (int i = 0; i < N; i++) {
        float v0, gv, gsv;
        memcpy(&v0, &logits[i], 4);
        memcpy(x, logits, sizeof x);
        x[i] = kt_f32_bits((float)(v0 + h));
        ck_assert_int_eq(ref_xent_run(b, &xc, &probe), AK_OK);
        const double lp = probe.loss;
        x[i] = kt_f32_bits((float)(v0 - h));
        ck_assert_int_eq(ref_xent_run(b, &xc, &probe), AK_OK);
        const double fd = (lp - probe.loss) / (2.0 * h);
        memcpy(&gv, &g[i], 4);
        memcpy(&gsv, &gs[i], 4);
        ck_assert_msg(fabs(fd - gv) <= 2e-5, "d loss/d logits[%d]: %.9g, fd %.9g", i, (double)gv,
                      fd);
        ck_assert_msg(fabs(8.0 * fd - gsv) <= 8 * 2e-5, "scaled: %.9g, 8 fd %.9g", (double)gsv,
                      8 * fd);
    }
    ak_close(b);
}
END_TEST

/* ---- a long last dimension: a language model's vocabulary ---------------------------- */
/* rows = batch * context, classes = GPT-2's 50257: every dtype pair against
 * the textbook reference, on the rows where it is accurate. */
START_TEST(softmax_large_vocabulary_matches_reference)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 13);
    const size_t C = REF_XENT_VOCAB;
    uint32_t *logits = malloc(REF_XENT_LONG_ROWS * C * sizeof *logits);
    int32_t labels[REF_XENT_LONG_ROWS];
    const float scale = 256.0f;
    for (int c = 0; c < 9; c++) {
        const ak_dtype dl = kt_dtypes[c % 3], dd = kt_dtypes[c / 3];
        ref_xent_long_rows(&r, dl, C, logits, labels);
        xent_case xc = {3, C, dl, dd, logits, labels, NULL}; /* rows 0-2 */
        ref_xent_check(b, &xc);
        xent_case tail = {4, C, dl, dd, logits + 4 * C, labels + 4, &scale}; /* rows 4-7 */
        ref_xent_check(b, &tail);
    }
    free(logits);
    ak_close(b);
}
END_TEST

/* Rows 1-4 of ref_xent_long_rows as a batch of 4, checked against values
 * written from the rule (kernels/loss.c), in every logits dtype (the
 * logits are exact in each). */
START_TEST(softmax_large_vocabulary_by_hand)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 14);
    const size_t C = REF_XENT_VOCAB, last = C - 1;
    uint32_t *logits = malloc(REF_XENT_LONG_ROWS * C * sizeof *logits);
    uint32_t *g = malloc(4 * C * sizeof *g);
    int32_t labels[REF_XENT_LONG_ROWS];
    /* rows 3 and 4: s_rest = (C - 1) e^-88 */
    const double e88 = exp(-88.0), s = (double)(C - 1) * e88;
    /* (row loss): ln C, ln C, log1p(s), 88 + log1p(s) */
    const double loss = (2.0 * log((double)C) + 88.0 + 2.0 * log1p(s)) / 4.0;
    for (int d = 0; d < 3; d++) {
        const ak_dtype dl = kt_dtypes[d];
        ref_xent_long_rows(&r, dl, C, logits, labels);
        xent_case xc = {4, C, dl, AK_F32, logits + C, labels + 1, NULL};
        xent_result out = {0, 0, g};
        ck_assert_int_eq(ref_xent_run(b, &xc, &out), AK_OK);
        ck_assert_msg(fabs(out.loss - loss) <= 0x1p-23 * loss, "loss %.9g, expected %.17g (%s)",
                      (double)out.loss, loss, ak_dtype_name(dl));
        ck_assert_int_eq(out.correct, 2); /* rows 1 and 3 */
        for (size_t row = 0; row < 4; row++) {
            for (size_t j = 0; j < C; j++) {
                double want;
                if (row < 2) /* uniform: p = 1 / C */
                    want = (1.0 / (double)C - (j == (row == 0 ? 0 : last))) / 4.0;
                else if (j == last) /* the maximum: 1 / (1 + s), minus 1 at the label (row 3) */
                    want = (row == 2 ? -s / (1.0 + s) : 1.0 / (1.0 + s)) / 4.0;
                else
                    want = (e88 / (1.0 + s) - (row == 3 && j == 0)) / 4.0;
                const uint32_t have = g[row * C + j], w = kt_from_f64(AK_F32, want);
                ck_assert_msg(kt_ulp_distance(AK_F32, have, w) <= 1,
                              "dlogits[%zu][%zu] %.9g, expected %.17g (%s)", row, j,
                              kt_value(AK_F32, have), want, ak_dtype_name(dl));
            }
        }
    }
    free(g);
    free(logits);
    ak_close(b);
}
END_TEST

/* ---- arguments ---------------------------------------------------------------------------- */
START_TEST(softmax_bad_arguments_named)
{
    ak_backend *b = kt_open_cpu();
    kt_buf f12 = kt_buf_alloc(b, 12, AK_F32), f10 = kt_buf_alloc(b, 10, AK_F32),
           lab = kt_buf_alloc(b, 4, AK_F32), out = kt_buf_alloc(b, 4, AK_F32);
    const int32_t *labels = (const int32_t *)lab.t.data;
    float *loss = (float *)out.t.data;
    int32_t *correct = (int32_t *)out.t.data + 1;
    const float *scale = (const float *)out.t.data + 2;
    const ak_tensor none = ak_tensor_none();

    ck_assert_int_eq(ak_softmax_xent(NULL, 3, 4, f12.t, labels, NULL, loss, none, NULL), AK_EINVAL);
    KT_EXPECT_ERROR(b, ak_softmax_xent(b, 3, 4, f10.t, labels, NULL, loss, none, NULL), AK_EINVAL,
                    NULL, "ak_softmax_xent: logits has 10 elements, expected 12");
    KT_EXPECT_ERROR(b, ak_softmax_xent(b, 3, 4, f12.t, labels, NULL, loss, f10.t, NULL), AK_EINVAL,
                    NULL, "ak_softmax_xent: dlogits has 10 elements, expected 12");
    KT_EXPECT_ERROR(b, ak_softmax_xent(b, 3, 4, f12.t, NULL, NULL, loss, none, NULL), AK_EINVAL,
                    NULL, "ak_softmax_xent: labels is NULL");
    KT_EXPECT_ERROR(b, ak_softmax_xent(b, 3, 4, f12.t, labels, NULL, NULL, none, NULL), AK_EINVAL,
                    NULL, "ak_softmax_xent: loss is NULL");
    KT_EXPECT_ERROR(
        b, ak_softmax_xent(b, 3, 4, f12.t, labels, NULL, (float *)((char *)loss + 1), none, NULL),
        AK_EINVAL, NULL, "ak_softmax_xent: loss (");
    KT_EXPECT_ERROR(b,
                    ak_softmax_xent(b, 3, 4, f12.t, (const int32_t *)((const char *)labels + 2),
                                    NULL, loss, none, NULL),
                    AK_EINVAL, NULL, "ak_softmax_xent: labels (");
    KT_EXPECT_ERROR(b,
                    ak_softmax_xent(b, 3, 4, f12.t, labels,
                                    (const float *)((const char *)scale + 1), loss, none, NULL),
                    AK_EINVAL, NULL, "ak_softmax_xent: scale (");
    KT_EXPECT_ERROR(
        b,
        ak_softmax_xent(b, 3, 4, f12.t, labels, NULL, loss, none, (int32_t *)((char *)correct + 1)),
        AK_EINVAL, NULL, "ak_softmax_xent: correct (");
    KT_EXPECT_ERROR(b, ak_softmax_xent(b, 3, 0, none, labels, NULL, loss, none, NULL), AK_EINVAL,
                    NULL, "ak_softmax_xent: classes is 0");
    KT_EXPECT_ERROR(
        b, ak_softmax_xent(b, 1, (size_t)INT32_MAX + 1, f12.t, labels, NULL, loss, none, NULL),
        AK_EINVAL, NULL, "exceeds the int32 labels' range");
    KT_EXPECT_ERROR(b, ak_softmax_xent(b, SIZE_MAX / 2, 4, f12.t, labels, NULL, loss, none, NULL),
                    AK_EINVAL, NULL, "overflows");
    KT_EXPECT_ERROR(b,
                    ak_softmax_xent(b, 3, 4, ak_tensor_of(f12.t.data, 12, (ak_dtype)5), labels,
                                    NULL, loss, none, NULL),
                    AK_EINVAL, NULL, "ak_softmax_xent: logits has an invalid dtype");

    ck_assert(kt_buf_guards_ok(&f12) && kt_buf_guards_ok(&f10) && kt_buf_guards_ok(&lab) &&
              kt_buf_guards_ok(&out));
    kt_buf_free(&f12);
    kt_buf_free(&f10);
    kt_buf_free(&lab);
    kt_buf_free(&out);
    ak_close(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_softmax_xent");
    TCase *tc = tcase_create("softmax_xent");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, softmax_matches_double_reference);
    tcase_add_test(tc, softmax_scale_is_applied);
    tcase_add_test(tc, softmax_tiny_loss_keeps_accuracy);
    tcase_add_test(tc, softmax_extreme_logits_stay_finite);
    tcase_add_test(tc, softmax_non_finite_rows);
    tcase_add_test(tc, softmax_bad_labels);
    tcase_add_test(tc, softmax_empty_batch_and_optional_outputs);
    tcase_add_test(tc, softmax_gradient_matches_finite_differences);
    tcase_add_test(tc, softmax_large_vocabulary_matches_reference);
    tcase_add_test(tc, softmax_large_vocabulary_by_hand);
    tcase_add_test(tc, softmax_bad_arguments_named);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
