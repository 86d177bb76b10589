/* gpu_loss: the cuda backend against the cpu backend on the same inputs:
 * softmax cross-entropy (loss within one fp32 ulp, every gradient within
 * one ulp of its dtype, correct exactly) and mean squared error (loss
 * within one fp32 ulp, gradient bit for bit), NaN and the sign of
 * infinities checked explicitly; cuda's handling of bad labels; LeNet and
 * MLP classifier shapes and larger ones; guard regions on both backends,
 * the scalar outputs included. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "kt.h"

/* Both backends, open during each test (kt_open_both_around). */
static ak_backend *cpu, *gpu;

/* One tensor (or scalar slot) on both backends. */
static kt_twin twin_alloc(size_t n, ak_dtype dt) { return kt_twin_alloc(cpu, gpu, n, dt); }

/* Whether two elements of dt agree to within max_ulps: NaN with NaN (both
 * the default NaN: the same bits), an infinity with the same infinity, and
 * otherwise by ulp distance (-0 == +0). */
static bool agree(ak_dtype dt, uint32_t a, uint32_t b, int max_ulps)
{
    const double va = kt_value(dt, a), vb = kt_value(dt, b);
    if (isnan(va) || isnan(vb)) return a == b;
    if (isinf(va) || isinf(vb)) return va == vb;
    return kt_ulp_distance(dt, a, b) <= max_ulps;
}

/* ---- softmax cross-entropy ------------------------------------------------------------------ */
typedef struct xent_outputs {
    float loss[2]; /* cpu, cuda */
    int32_t correct[2];
    uint32_t *dlogits[2];
} xent_outputs;

/* Runs both backends on the same logits and labels (labels_gpu may differ:
 * cuda is given bad labels that the cpu would reject). */
static void run_xent(size_t batch, size_t classes, ak_dtype dl, ak_dtype dd, const uint32_t *logits,
                     const int32_t *labels_cpu, const int32_t *labels_gpu, const float *scale,
                     xent_outputs *out)
{
    const size_t n = batch * classes;
    kt_twin tl = twin_alloc(n, dl), td = twin_alloc(n, dd), lab = twin_alloc(batch, AK_F32),
            sc = twin_alloc(1, AK_F32), loss = twin_alloc(1, AK_F32),
            correct = twin_alloc(1, AK_F32);
    kt_twin_put(&tl, logits);
    kt_buf_upload(&lab.c, labels_cpu);
    kt_buf_upload(&lab.g, labels_gpu);
    if (scale) kt_twin_upload(&sc, scale);
    const float junk_loss = 123.0f;
    const int32_t junk_count = 77;
    kt_twin_upload(&loss, &junk_loss);
    kt_twin_upload(&correct, &junk_count);
    ak_backend *bk[2] = {cpu, gpu};
    kt_buf *l[2] = {&loss.c, &loss.g}, *k[2] = {&correct.c, &correct.g}, *t[2] = {&tl.c, &tl.g},
           *d[2] = {&td.c, &td.g}, *lb[2] = {&lab.c, &lab.g}, *s[2] = {&sc.c, &sc.g};
    for (int i = 0; i < 2; i++) {
        const int rc =
            ak_softmax_xent(bk[i], batch, classes, t[i]->t, (const int32_t *)lb[i]->t.data,
                            scale ? (const float *)s[i]->t.data : NULL, (float *)l[i]->t.data,
                            d[i]->t, (int32_t *)k[i]->t.data);
        ck_assert_msg(rc == AK_OK, "%s: %s", ak_backend_name(bk[i]), ak_error(bk[i]));
        kt_buf_download(l[i], &out->loss[i]);
        kt_buf_download(k[i], &out->correct[i]);
        out->dlogits[i] = malloc(n * 4 + 4);
        kt_buf_get(d[i], out->dlogits[i]);
    }
    kt_twin_free(&tl);
    kt_twin_free(&td);
    kt_twin_free(&lab);
    kt_twin_free(&sc);
    kt_twin_free(&loss);
    kt_twin_free(&correct);
}

static void free_outputs(xent_outputs *out)
{
    free(out->dlogits[0]);
    free(out->dlogits[1]);
}

/* The stated bound: loss within one fp32 ulp, each gradient within one ulp
 * of dd, NaN and inf signs exact, correct exact. */
static void check_xent(size_t batch, size_t classes, ak_dtype dl, ak_dtype dd,
                       const uint32_t *logits, const int32_t *labels, const float *scale)
{
    xent_outputs out;
    run_xent(batch, classes, dl, dd, logits, labels, labels, scale, &out);
    ck_assert_msg(agree(AK_F32, kt_f32_bits(out.loss[0]), kt_f32_bits(out.loss[1]), 1) ||
                      (isnan(out.loss[0]) && isnan(out.loss[1])),
                  "loss: cpu %.9g cuda %.9g (%zux%zu, logits %s)", (double)out.loss[0],
                  (double)out.loss[1], batch, classes, ak_dtype_name(dl));
    ck_assert_int_eq(out.correct[0], out.correct[1]);
    size_t bad = 0;
    for (size_t i = 0; i < batch * classes; i++) {
        if (agree(dd, out.dlogits[0][i], out.dlogits[1][i], 1)) continue;
        if (bad++ < 8)
            printf("dlogits[%zu] (%s): cpu 0x%x cuda 0x%x\n", i, ak_dtype_name(dd),
                   out.dlogits[0][i], out.dlogits[1][i]);
    }
    ck_assert_msg(bad == 0, "%zu dlogits differ (%zux%zu, logits %s, dlogits %s)", bad, batch,
                  classes, ak_dtype_name(dl), ak_dtype_name(dd));
    free_outputs(&out);
}

/* Logits in [-spread, spread], with some rows made special: a NaN, +inf,
 * -inf entries, extreme values, ties at the maximum. */
static void make_logits(ts_rng *r, ak_dtype dl, size_t batch, size_t classes, double spread,
                        bool specials, uint32_t *logits, int32_t *labels)
{
    for (size_t i = 0; i < batch * classes; i++)
        logits[i] = kt_from_f64(dl, (2.0 * ts_uniform(r) - 1.0) * spread);
    for (size_t b = 0; b < batch; b++)
        labels[b] = (int32_t)ts_below(r, (uint32_t)classes);
    if (!specials || batch < 6 || classes < 3) return;
    const double big = dl == AK_F16 ? 6e4 : 1e30;
    logits[0 * classes + 1] = kt_from_f64(dl, NAN);
    logits[1 * classes + 2] = kt_from_f64(dl, INFINITY);
    logits[2 * classes + 0] = kt_from_f64(dl, -INFINITY);
    logits[3 * classes + (size_t)labels[3]] = kt_from_f64(dl, -INFINITY);
    logits[4 * classes + 0] = kt_from_f64(dl, big);
    logits[4 * classes + 1] = kt_from_f64(dl, -big);
    logits[5 * classes + 0] = logits[5 * classes + 2] = kt_from_f64(dl, 80.0);
    logits[5 * classes + 1] = kt_from_f64(dl, -80.0);
}

START_TEST(softmax_within_bound)
{
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 30);
    /* LeNet / MLP classifiers (32 x 10), a block of 32 threads with 33
     * classes (128), a wide one (256), a long batch, and 1 x 1 */
    static const size_t shapes[][2] = {{32, 10}, {64, 33}, {3, 5000}, {512, 1000}, {1, 1}};
    const float scale = 4096.0f;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const size_t batch = shapes[s][0], classes = shapes[s][1], n = batch * classes;
        uint32_t *logits = malloc(n * 4 + 4);
        int32_t *labels = malloc(batch * 4 + 4);
        for (int c = 0; c < 9; c++) {
            const ak_dtype dl = kt_dtypes[c % 3], dd = kt_dtypes[c / 3];
            if (n > 100000 && dl != dd) continue; /* the large shape: matching dtypes */
            make_logits(&r, dl, batch, classes, 20.0, true, logits, labels);
            check_xent(batch, classes, dl, dd, logits, labels, NULL);
            check_xent(batch, classes, dl, dd, logits, labels, &scale);
            make_logits(&r, dl, batch, classes, 1.0, false, logits,
                        labels); /* close probabilities */
            check_xent(batch, classes, dl, dd, logits, labels, &scale);
        }
        /* every kind of pattern as logits: mostly non-finite rows */
        kt_fill_bits(&r, AK_F32, logits, n);
        check_xent(batch, classes, AK_F32, AK_F16, logits, labels, NULL);
        free(logits);
        free(labels);
    }
}
END_TEST

/* A host argmax: the first NaN, else the first maximum. */
static size_t host_argmax(ak_dtype dl, const uint32_t *row, size_t classes)
{
    size_t amax = 0;
    for (size_t j = 0; j < classes; j++) {
        const double v = kt_value(dl, row[j]);
        if (isnan(v)) return j;
        if (v > kt_value(dl, row[amax])) amax = j;
    }
    return amax;
}

/* cuda cannot reject bad labels without a host wait: their rows become NaN
 * (so the loss is NaN) and are never correct, and nothing outside the
 * tensors is touched.  The other rows match the cpu's. */
START_TEST(softmax_bad_labels_on_cuda)
{
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 31);
    enum { BATCH = 32, CLASSES = 10, N = BATCH * CLASSES };
    uint32_t logits[N];
    int32_t labels[BATCH], bad_labels[BATCH];
    make_logits(&r, AK_F32, BATCH, CLASSES, 5.0, false, logits, labels);
    memcpy(bad_labels, labels, sizeof labels);
    bad_labels[3] = -5;
    bad_labels[7] = CLASSES;
    bad_labels[8] = INT32_MAX;
    xent_outputs out;
    run_xent(BATCH, CLASSES, AK_F32, AK_F32, logits, labels, bad_labels, NULL, &out);
    ck_assert(isnan(out.loss[1]));
    int32_t want_correct = 0;
    for (size_t b = 0; b < BATCH; b++) {
        const bool bad = b == 3 || b == 7 || b == 8;
        if (!bad)
            want_correct += host_argmax(AK_F32, logits + b * CLASSES, CLASSES) == (size_t)labels[b];
        for (size_t j = 0; j < CLASSES; j++) {
            const uint32_t g = out.dlogits[1][b * CLASSES + j];
            if (bad)
                ck_assert_msg(g == 0xFFC00000u, "row %zu: 0x%x, expected the default NaN", b, g);
            else
                ck_assert(agree(AK_F32, out.dlogits[0][b * CLASSES + j], g, 1));
        }
    }
    ck_assert_int_eq(out.correct[1], want_correct);
    free_outputs(&out);
}
END_TEST

START_TEST(softmax_empty_batch)
{
    xent_outputs out;
    run_xent(0, 10, AK_F32, AK_F32, NULL, NULL, NULL, NULL, &out);
    ck_assert(isnan(out.loss[0]) && isnan(out.loss[1]));
    ck_assert_int_eq(out.correct[0], 0);
    ck_assert_int_eq(out.correct[1], 0);
    free_outputs(&out);
    /* optional outputs left out on cuda */
    kt_twin tl = twin_alloc(6, AK_F32), lab = twin_alloc(2, AK_F32), loss = twin_alloc(1, AK_F32);
    const float logits[6] = {1, 2, 3, 0, 0, 0};
    const int32_t labels[2] = {2, 0};
    kt_twin_upload(&tl, logits);
    kt_twin_upload(&lab, labels);
    float l[2];
    ck_assert_int_eq(ak_softmax_xent(cpu, 2, 3, tl.c.t, (const int32_t *)lab.c.t.data, NULL,
                                     (float *)loss.c.t.data, ak_tensor_none(), NULL),
                     AK_OK);
    ck_assert_int_eq(ak_softmax_xent(gpu, 2, 3, tl.g.t, (const int32_t *)lab.g.t.data, NULL,
                                     (float *)loss.g.t.data, ak_tensor_none(), NULL),
                     AK_OK);
    kt_buf_download(&loss.c, &l[0]);
    kt_buf_download(&loss.g, &l[1]);
    ck_assert(agree(AK_F32, kt_f32_bits(l[0]), kt_f32_bits(l[1]), 1));
    kt_twin_free(&tl);
    kt_twin_free(&lab);
    kt_twin_free(&loss);
}
END_TEST

/* ---- mean squared error
 * ---------------------------------------------------------------------------- */
static void check_mse(ts_rng *r, size_t n, ak_dtype dp, ak_dtype dt, ak_dtype dd, bool values,
                      const float *scale)
{
    uint32_t *p = malloc(n * 4 + 4), *t = malloc(n * 4 + 4);
    if (values) {
        for (size_t i = 0; i < n; i++) {
            p[i] = kt_from_f64(dp, 4.0 * ts_uniform(r) - 2.0);
            t[i] = kt_from_f64(dt, 4.0 * ts_uniform(r) - 2.0);
        }
    } else {
        kt_fill_bits(r, dp, p, n);
        kt_fill_bits(r, dt, t, n);
    }
    kt_twin tp = twin_alloc(n, dp), tt = twin_alloc(n, dt), td = twin_alloc(n, dd),
            sc = twin_alloc(1, AK_F32), loss = twin_alloc(1, AK_F32);
    kt_twin_put(&tp, p);
    kt_twin_put(&tt, t);
    if (scale) kt_twin_upload(&sc, scale);
    float l[2];
    ck_assert_int_eq(ak_mse(cpu, tp.c.t, tt.c.t, scale ? (const float *)sc.c.t.data : NULL,
                            (float *)loss.c.t.data, td.c.t),
                     AK_OK);
    ck_assert_int_eq(ak_mse(gpu, tp.g.t, tt.g.t, scale ? (const float *)sc.g.t.data : NULL,
                            (float *)loss.g.t.data, td.g.t),
                     AK_OK);
    kt_buf_download(&loss.c, &l[0]);
    kt_buf_download(&loss.g, &l[1]);
    ck_assert_msg(agree(AK_F32, kt_f32_bits(l[0]), kt_f32_bits(l[1]), 1) ||
                      (isnan(l[0]) && isnan(l[1])),
                  "mse loss: cpu %.9g cuda %.9g (n %zu)", (double)l[0], (double)l[1], n);
    ck_assert_msg(kt_twin_mismatches("dpred", &td) == 0, "pred %s target %s dpred %s n %zu",
                  ak_dtype_name(dp), ak_dtype_name(dt), ak_dtype_name(dd), n);
    kt_twin_free(&tp);
    kt_twin_free(&tt);
    kt_twin_free(&td);
    kt_twin_free(&sc);
    kt_twin_free(&loss);
    free(p);
    free(t);
}

START_TEST(mse_within_bound)
{
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 32);
    const float three = 3.0f;
    static const size_t sizes[] = {32 * 10, 32 * 256, 512 * 4096, 1, 0};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int d = 0; d < 3; d++)
            for (int v = 0; v < 2; v++)
                check_mse(&r, sizes[s], kt_dtypes[d], kt_dtypes[d], kt_dtypes[d], v,
                          v ? &three : NULL);
    for (int c = 0; c < 27; c++)
        for (int v = 0; v < 2; v++)
            check_mse(&r, 1001, kt_dtypes[c % 3], kt_dtypes[c / 3 % 3], kt_dtypes[c / 9], v,
                      &three);
}
END_TEST

int main(void)
{
    kt_require_cuda_or_skip();
    Suite *s = suite_create("kernels_gpu_loss");
    TCase *tc = tcase_create("gpu_loss");
    kt_open_both_around(tc, &cpu, &gpu);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, softmax_within_bound);
    tcase_add_test(tc, softmax_bad_labels_on_cuda);
    tcase_add_test(tc, softmax_empty_batch);
    tcase_add_test(tc, mse_within_bound);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
