/* test_loss: softmax cross-entropy and mean squared error on the cpu
 * backend, against double-precision references written here (loss,
 * gradients, accuracy count), central finite differences, the loss scale,
 * extreme and non-finite logits, bad labels, bad arguments and guard
 * regions (the scalar outputs are guarded too). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "kt.h"

/* ---- scalars in backend memory ------------------------------------------------------- */
static float get_f32(kt_buf *buf)
{
    float f;
    kt_buf_download(buf, &f);
    return f;
}

/* ---- the softmax reference -------------------------------------------------------- */
/* Row loss and gradient (softmax - onehot) / batch * scale, the textbook way:
 * s = sum exp(x - m), loss = m + log(s) - x[label], p = exp(x - m) / s.
 * Returns the index of the first maximal logit (the first NaN if any). */
static size_t ref_xent_row(const double *x, size_t classes, size_t label, size_t batch,
                           double scale, double *loss, double *grad)
{
    size_t amax = 0;
    for (size_t j = 0; j < classes; j++) {
        if (isnan(x[j])) {
            amax = j;
            break;
        }
        if (x[j] > x[amax]) amax = j;
    }
    const double m = x[amax];
    if (!isfinite(m)) {
        *loss = NAN;
        for (size_t j = 0; j < classes; j++)
            grad[j] = NAN;
        return amax;
    }
    double sum = 0.0;
    for (size_t j = 0; j < classes; j++)
        sum += exp(x[j] - m);
    *loss = m + log(sum) - x[label];
    for (size_t j = 0; j < classes; j++)
        grad[j] = (exp(x[j] - m) / sum - (j == label ? 1.0 : 0.0)) / (double)batch * scale;
    return amax;
}

typedef struct xent_case {
    size_t batch, classes;
    ak_dtype dl, dd;        /* logits, dlogits */
    const uint32_t *logits; /* bits of dl */
    const int32_t *labels;
    const float *scale; /* host value, or NULL */
} xent_case;

typedef struct xent_result {
    float loss;
    int32_t correct;
    uint32_t *dlogits; /* bits of dd, batch * classes */
} xent_result;

/* The message of the last failed run_xent (later calls clear ak_error). */
static char run_error[512];

/* Runs ak_softmax_xent on the cpu backend with guarded buffers (outputs
 * prefilled with junk: they must be written, not accumulated). */
static int run_xent(ak_backend *b, const xent_case *c, xent_result *out)
{
    const size_t n = c->batch * c->classes;
    kt_buf tl = kt_buf_alloc(b, n, c->dl), td = kt_buf_alloc(b, n, c->dd),
           lab = kt_buf_alloc(b, c->batch, AK_F32), loss = kt_buf_alloc(b, 1, AK_F32),
           correct = kt_buf_alloc(b, 1, AK_F32), sc = kt_buf_alloc(b, 1, AK_F32);
    kt_buf_put(&tl, c->logits);
    if (c->batch) kt_buf_upload(&lab, c->labels);
    if (c->scale) kt_buf_upload(&sc, c->scale);
    const float junk_loss = 123.0f;
    const int32_t junk_count = 77;
    kt_buf_upload(&loss, &junk_loss);
    kt_buf_upload(&correct, &junk_count);
    uint32_t *junk = malloc(n * 4 + 4);
    for (size_t i = 0; i < n; i++)
        junk[i] = 0x1234;
    kt_buf_put(&td, junk);
    free(junk);
    const int rc = ak_softmax_xent(b, c->batch, c->classes, tl.t, (const int32_t *)lab.t.data,
                                   c->scale ? (const float *)sc.t.data : NULL, (float *)loss.t.data,
                                   td.t, (int32_t *)correct.t.data);
    snprintf(run_error, sizeof run_error, "%s", ak_error(b));
    out->loss = get_f32(&loss);
    kt_buf_download(&correct, &out->correct);
    kt_buf_get(&td, out->dlogits);
    ck_assert(kt_buf_guards_ok(&tl) && kt_buf_guards_ok(&td) && kt_buf_guards_ok(&lab) &&
              kt_buf_guards_ok(&loss) && kt_buf_guards_ok(&correct) && kt_buf_guards_ok(&sc));
    kt_buf_free(&tl);
    kt_buf_free(&td);
    kt_buf_free(&lab);
    kt_buf_free(&loss);
    kt_buf_free(&correct);
    kt_buf_free(&sc);
    return rc;
}

/* Checks a result against the reference: loss within one fp32 ulp, every
 * gradient within one ulp of dd (NaN where the reference is NaN), correct
 * exactly. */
static void check_xent(ak_backend *b, const xent_case *c)
{
    const size_t n = c->batch * c->classes;
    xent_result got;
    got.dlogits = malloc(n * 4 + 4);
    ck_assert_int_eq(run_xent(b, c, &got), AK_OK);
    double *x = malloc(c->classes * sizeof *x), *g = malloc(c->classes * sizeof *g);
    double total = 0.0;
    int32_t hits = 0;
    size_t bad = 0;
    for (size_t r = 0; r < c->batch; r++) {
        for (size_t j = 0; j < c->classes; j++)
            x[j] = kt_value(c->dl, c->logits[r * c->classes + j]);
        double row_loss;
        const size_t amax = ref_xent_row(x, c->classes, (size_t)c->labels[r], c->batch,
                                         c->scale ? *c->scale : 1.0, &row_loss, g);
        total += row_loss;
        hits += amax == (size_t)c->labels[r];
        for (size_t j = 0; j < c->classes; j++) {
            const uint32_t want = kt_from_f64(c->dd, g[j]), have = got.dlogits[r * c->classes + j];
            const bool ok = isnan(g[j]) ? have == want : kt_ulp_distance(c->dd, have, want) <= 1;
            if (!ok && bad++ < 8)
                printf("dlogits[%zu][%zu] (%s): got 0x%x, reference %.17g (0x%x)\n", r, j,
                       ak_dtype_name(c->dd), have, g[j], want);
        }
    }
    ck_assert_msg(bad == 0, "%zu dlogits beyond one ulp (logits %s, dlogits %s)", bad,
                  ak_dtype_name(c->dl), ak_dtype_name(c->dd));
    const double want_loss = total / (double)c->batch;
    if (isnan(want_loss))
        ck_assert_msg(isnan(got.loss), "loss %g, expected NaN", (double)got.loss);
    else
        ck_assert_msg(
            kt_ulp_distance(AK_F32, kt_f32_bits(got.loss), kt_from_f64(AK_F32, want_loss)) <= 1,
            "loss %.9g, reference %.17g", (double)got.loss, want_loss);
    ck_assert_int_eq(got.correct, hits);
    free(x);
    free(g);
    free(got.dlogits);
}

static void random_labels(ts_rng *r, int32_t *labels, size_t batch, size_t classes)
{
    for (size_t i = 0; i < batch; i++)
        labels[i] = (int32_t)ts_below(r, (uint32_t)classes);
}

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
        random_labels(&r, labels, BATCH, CLASSES);
        /* row 0: two equal maxima (2 and 5), label on the second: not correct;
         * row 1 likewise with the label on the first: correct */
        logits[2] = logits[5] = kt_from_f64(dl, 9.0);
        labels[0] = 5;
        logits[CLASSES + 2] = logits[CLASSES + 5] = kt_from_f64(dl, 9.0);
        labels[1] = 2;
        xent_case xc = {BATCH, CLASSES, dl, dd, logits, labels, NULL};
        check_xent(b, &xc);
        xc.scale = &scale;
        check_xent(b, &xc);
        xc.scale = &odd_scale;
        check_xent(b, &xc);
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
    random_labels(&r, labels, BATCH, CLASSES);
    /* a power of two scales fp32 gradients exactly */
    const float one = 1.0f, big = 0x1p10f;
    xent_case xc = {BATCH, CLASSES, AK_F32, AK_F32, logits, labels, &one};
    xent_result a = {0, 0, g1}, c = {0, 0, g2};
    ck_assert_int_eq(run_xent(b, &xc, &a), AK_OK);
    xc.scale = &big;
    ck_assert_int_eq(run_xent(b, &xc, &c), AK_OK);
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
    ck_assert_int_eq(run_xent(b, &xc, &d), AK_OK);
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
    ck_assert_int_eq(run_xent(b, &xc, &out), AK_OK);
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
        check_xent(b, &xc);
        xent_result out = {0, 0, g};
        ck_assert_int_eq(run_xent(b, &xc, &out), AK_OK);
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
    check_xent(b, &xc);
    xent_result out = {0, 0, g};
    ck_assert_int_eq(run_xent(b, &xc, &out), AK_OK);
    ck_assert(isnan(out.loss));
    for (int i = 0; i < 3 * CLASSES; i++)
        ck_assert_uint_eq(g[i], 0xFFC00000u);
    ck_assert_uint_eq(g[3 * CLASSES], 0);                  /* exp(-inf) = +0 */
    ck_assert_uint_eq(g[4 * CLASSES], kt_f32_bits(-0.2f)); /* (0 - 1) / 5 */
    ck_assert_int_eq(out.correct, 4); /* the argmax: the NaN, the +inf, the first -inf, 1.0 */
    /* without the NaN rows the loss is +inf (row 4) */
    xent_case xc2 = {2, CLASSES, AK_F32, AK_F32, logits + 3 * CLASSES, labels + 3, NULL};
    ck_assert_int_eq(run_xent(b, &xc2, &out), AK_OK);
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
    ck_assert_int_eq(run_xent(b, &xc, &out), AK_EINVAL);
    ck_assert_msg(strstr(run_error, "ak_softmax_xent: labels[3] is -1, outside [0, 11)"), "%s",
                  run_error);
    ck_assert(out.loss == 123.0f); /* nothing written */
    ck_assert_int_eq(out.correct, 77);
    ck_assert_uint_eq(g[0], 0x1234);
    labels[3] = 3;
    labels[4] = CLASSES;
    ck_assert_int_eq(run_xent(b, &xc, &out), AK_EINVAL);
    ck_assert_msg(strstr(run_error, "labels[4] is 11"), "%s", run_error);
    ak_close(b);
}
END_TEST

START_TEST(softmax_empty_batch_and_optional_outputs)
{
    ak_backend *b = kt_open_cpu();
    xent_case xc = {0, 10, AK_F32, AK_F32, NULL, NULL, NULL};
    xent_result out = {0, 0, NULL};
    ck_assert_int_eq(run_xent(b, &xc, &out), AK_OK);
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
    ck_assert(fabs(get_f32(&loss) - want) <= 0x1p-23 * want);
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
    random_labels(&r, labels, BATCH, CLASSES);
    const float eight = 8.0f;
    xent_case xc = {BATCH, CLASSES, AK_F32, AK_F32, logits, labels, NULL};
    xent_result out = {0, 0, g}, scaled = {0, 0, gs}, probe = {0, 0, scratch};
    ck_assert_int_eq(run_xent(b, &xc, &out), AK_OK);
    xc.scale = &eight;
    ck_assert_int_eq(run_xent(b, &xc, &scaled), AK_OK);
    xc.scale = NULL;
    uint32_t x[N];
    xc.logits = x;
    for (int i = 0; i < N; i++) {
        float v0, gv, gsv;
        memcpy(&v0, &logits[i], 4);
        memcpy(x, logits, sizeof x);
        x[i] = kt_f32_bits((float)(v0 + h));
        ck_assert_int_eq(run_xent(b, &xc, &probe), AK_OK);
        const double lp = probe.loss;
        x[i] = kt_f32_bits((float)(v0 - h));
        ck_assert_int_eq(run_xent(b, &xc, &probe), AK_OK);
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

/* ---- mean squared error ------------------------------------------------------------------- */
typedef struct mse_case {
    size_t n;
    ak_dtype dp, dt, dd;
    const uint32_t *pred, *target;
    const float *scale;
} mse_case;

static int run_mse(ak_backend *b, const mse_case *c, float *loss_out, uint32_t *dpred)
{
    kt_buf tp = kt_buf_alloc(b, c->n, c->dp), tt = kt_buf_alloc(b, c->n, c->dt),
           td = kt_buf_alloc(b, c->n, c->dd), loss = kt_buf_alloc(b, 1, AK_F32),
           sc = kt_buf_alloc(b, 1, AK_F32);
    kt_buf_put(&tp, c->pred);
    kt_buf_put(&tt, c->target);
    if (c->scale) kt_buf_upload(&sc, c->scale);
    const float junk = 123.0f;
    kt_buf_upload(&loss, &junk);
    const int rc = ak_mse(b, tp.t, tt.t, c->scale ? (const float *)sc.t.data : NULL,
                          (float *)loss.t.data, dpred ? td.t : ak_tensor_none());
    *loss_out = get_f32(&loss);
    if (dpred) kt_buf_get(&td, dpred);
    ck_assert(kt_buf_guards_ok(&tp) && kt_buf_guards_ok(&tt) && kt_buf_guards_ok(&td) &&
              kt_buf_guards_ok(&loss) && kt_buf_guards_ok(&sc));
    kt_buf_free(&tp);
    kt_buf_free(&tt);
    kt_buf_free(&td);
    kt_buf_free(&loss);
    kt_buf_free(&sc);
    return rc;
}

START_TEST(mse_matches_double_reference)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 13);
    enum { N = 29 };
    uint32_t p[N], t[N], got[N];
    const float three = 3.0f;
    for (int c = 0; c < 27; c++) {
        const ak_dtype dp = kt_dtypes[c % 3], dt = kt_dtypes[c / 3 % 3], dd = kt_dtypes[c / 9];
        for (int pass = 0; pass < 2; pass++) {
            if (pass == 0) {
                kt_fill_bits(&r, dp, p, N);
                kt_fill_bits(&r, dt, t, N);
            } else {
                for (int i = 0; i < N; i++) {
                    p[i] = kt_from_f64(dp, 4.0 * ts_uniform(&r) - 2.0);
                    t[i] = kt_from_f64(dt, 4.0 * ts_uniform(&r) - 2.0);
                }
            }
            for (int s = 0; s < 2; s++) {
                const mse_case mc = {N, dp, dt, dd, p, t, s ? &three : NULL};
                float loss;
                ck_assert_int_eq(run_mse(b, &mc, &loss, got), AK_OK);
                double sum = 0.0;
                size_t bad = 0;
                for (int i = 0; i < N; i++) {
                    const double d = kt_value(dp, p[i]) - kt_value(dt, t[i]);
                    sum += d * d;
                    const uint32_t want = kt_from_f64(dd, 2.0 * d / N * (s ? 3.0 : 1.0));
                    if (got[i] != want && bad++ < 8)
                        printf("dpred[%d] (%s): got 0x%x expected 0x%x\n", i, ak_dtype_name(dd),
                               got[i], want);
                }
                ck_assert_msg(bad == 0, "pred %s target %s dpred %s", ak_dtype_name(dp),
                              ak_dtype_name(dt), ak_dtype_name(dd));
                const double want_loss = sum / N;
                if (isnan(want_loss))
                    ck_assert(isnan(loss));
                else
                    ck_assert_msg(kt_ulp_distance(AK_F32, kt_f32_bits(loss),
                                                  kt_from_f64(AK_F32, want_loss)) <= 1,
                                  "loss %.9g, reference %.17g", (double)loss, want_loss);
            }
        }
    }
    ak_close(b);
}
END_TEST

START_TEST(mse_gradient_matches_finite_differences)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 14);
    enum { N = 10 };
    const double h = 0x1p-6;
    uint32_t p[N], t[N], g[N], x[N];
    for (int i = 0; i < N; i++) {
        p[i] = kt_f32_bits((float)ldexp((double)ts_below(&r, 513) - 256.0, -8));
        t[i] = kt_f32_bits((float)ldexp((double)ts_below(&r, 513) - 256.0, -8));
    }
    const float half = 0.5f;
    mse_case mc = {N, AK_F32, AK_F32, AK_F32, p, t, &half};
    float loss;
    ck_assert_int_eq(run_mse(b, &mc, &loss, g), AK_OK);
    mc.pred = x;
    mc.scale = NULL;
    for (int i = 0; i < N; i++) {
        float v0, gv, lp, lm;
        memcpy(&v0, &p[i], 4);
        memcpy(x, p, sizeof x);
        x[i] = kt_f32_bits((float)(v0 + h));
        ck_assert_int_eq(run_mse(b, &mc, &lp, NULL), AK_OK);
        x[i] = kt_f32_bits((float)(v0 - h));
        ck_assert_int_eq(run_mse(b, &mc, &lm, NULL), AK_OK);
        const double fd =
            ((double)lp - lm) / (2.0 * h); /* quadratic: exact but for the fp32 loss */
        memcpy(&gv, &g[i], 4);
        ck_assert_msg(fabs(0.5 * fd - gv) <= 1e-5, "dpred[%d] %.9g, fd/2 %.9g", i, (double)gv,
                      0.5 * fd);
    }
    /* n = 0: the mean over nothing */
    mse_case empty = {0, AK_F32, AK_BF16, AK_F16, NULL, NULL, NULL};
    ck_assert_int_eq(run_mse(b, &empty, &loss, g), AK_OK);
    ck_assert(isnan(loss));
    ak_close(b);
}
END_TEST

/* ---- arguments ---------------------------------------------------------------------------- */
START_TEST(bad_arguments_named)
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

    ck_assert_int_eq(ak_mse(NULL, f12.t, f12.t, NULL, loss, none), AK_EINVAL);
    KT_EXPECT_ERROR(b, ak_mse(b, f12.t, f10.t, NULL, loss, none), AK_EINVAL, NULL,
                    "ak_mse: target has 10 elements, expected 12");
    KT_EXPECT_ERROR(b, ak_mse(b, f12.t, f12.t, NULL, loss, f10.t), AK_EINVAL, NULL,
                    "ak_mse: dpred has 10 elements, expected 12");
    KT_EXPECT_ERROR(b, ak_mse(b, f12.t, f12.t, NULL, NULL, none), AK_EINVAL, NULL,
                    "ak_mse: loss is NULL");
    KT_EXPECT_ERROR(b,
                    ak_mse(b, f12.t, f12.t, (const float *)((const char *)scale + 2), loss, none),
                    AK_EINVAL, NULL, "ak_mse: scale (");
    KT_EXPECT_ERROR(b, ak_mse(b, ak_tensor_of(NULL, 3, AK_F16), f12.t, NULL, loss, none), AK_EINVAL,
                    NULL, "ak_mse: pred is NULL with 3 elements");
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
    Suite *s = suite_create("kernels_loss");
    TCase *tc = tcase_create("loss");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, softmax_matches_double_reference);
    tcase_add_test(tc, softmax_scale_is_applied);
    tcase_add_test(tc, softmax_tiny_loss_keeps_accuracy);
    tcase_add_test(tc, softmax_extreme_logits_stay_finite);
    tcase_add_test(tc, softmax_non_finite_rows);
    tcase_add_test(tc, softmax_bad_labels);
    tcase_add_test(tc, softmax_empty_batch_and_optional_outputs);
    tcase_add_test(tc, softmax_gradient_matches_finite_differences);
    tcase_add_test(tc, mse_matches_double_reference);
    tcase_add_test(tc, mse_gradient_matches_finite_differences);
    tcase_add_test(tc, bad_arguments_named);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
