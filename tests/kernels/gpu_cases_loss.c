/* gpu_cases_loss: the cuda backend against the cpu backend on the same inputs:
 * softmax cross-entropy (loss within one fp32 ulp, every gradient within
 * one ulp of its dtype, correct exactly) and mean squared error (loss
 * within one fp32 ulp, gradient bit for bit), NaN and the sign of
 * infinities checked explicitly; cuda's handling of bad labels; LeNet and
 * MLP classifier shapes and larger ones; the loss in a low format
 * (nll_loss) bit for bit, with cuda's bad labels; a language model's rows (GPT-2's
 * 50257 classes with extreme rows, and batch x context rows of a character
 * vocabulary); guard regions on both backends,
 * the scalar outputs included. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_ops.h"
#include "ref_softmax_xent.h"

/* Both backends, open during each test (kt_open_both_around). */
static ak_backend *cpu, *gpu;

/* One tensor (or scalar slot) on both backends. */
static kt_twin twin_alloc(size_t n, ak_dtype dt) { return kt_twin_alloc(cpu, gpu, n, dt); }

/* The scalar losses of both ops: within one fp32 ulp, any NaN with any NaN,
 * an infinity with the same one (kernels/loss.c). */
static const go_cmp loss_cmp = {
    GO_CLOSE, 1, 0, 0, false, false, "kernels/loss.c: the loss within one fp32 ulp"};

static bool loss_agrees(float cpu_loss, float gpu_loss)
{
    const uint32_t c = kt_f32_bits(cpu_loss), g = kt_f32_bits(gpu_loss);
    return go_compare("loss", &loss_cmp, AK_F32, &c, &g, 1, NULL, NULL) == 0;
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
static void check_xent(const go_cmp *cmp, size_t batch, size_t classes, ak_dtype dl, ak_dtype dd,
                       const uint32_t *logits, const int32_t *labels, const float *scale)
{
    xent_outputs out;
    run_xent(batch, classes, dl, dd, logits, labels, labels, scale, &out);
    ck_assert_msg(loss_agrees(out.loss[0], out.loss[1]),
                  "loss: cpu %.9g cuda %.9g (%zux%zu, logits %s)", (double)out.loss[0],
                  (double)out.loss[1], batch, classes, ak_dtype_name(dl));
    ck_assert_int_eq(out.correct[0], out.correct[1]);
    const size_t bad =
        go_compare("dlogits", cmp, dd, out.dlogits[0], out.dlogits[1], batch * classes, NULL, NULL);
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

GO_CASE(softmax_within_bound)
{
    const go_cmp *cmp = &c->cmp;
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
        for (int combo = 0; combo < 9; combo++) {
            const ak_dtype dl = kt_dtypes[combo % 3], dd = kt_dtypes[combo / 3];
            if (n > 100000 && dl != dd) continue; /* the large shape: matching dtypes */
            make_logits(&r, dl, batch, classes, 20.0, true, logits, labels);
            check_xent(cmp, batch, classes, dl, dd, logits, labels, NULL);
            check_xent(cmp, batch, classes, dl, dd, logits, labels, &scale);
            make_logits(&r, dl, batch, classes, 1.0, false, logits,
                        labels); /* close probabilities */
            check_xent(cmp, batch, classes, dl, dd, logits, labels, &scale);
        }
        /* every kind of pattern as logits: mostly non-finite rows */
        kt_fill_bits(&r, AK_F32, logits, n);
        check_xent(cmp, batch, classes, AK_F32, AK_F16, logits, labels, NULL);
        free(logits);
        free(labels);
    }
}

/* A language model's loss: rows = batch x context.  GPT-2's vocabulary
 * (a block per row walks 50257 logits: the tail, ties far apart, a
 * dominant last logit, rows of -1e30), then a character vocabulary of 98
 * over 64 x 64 rows; with the special rows of make_logits too. */
GO_CASE(softmax_long_rows)
{
    const go_cmp *cmp = &c->cmp;
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 33);
    const size_t C = REF_XENT_VOCAB, B = REF_XENT_LONG_ROWS;
    uint32_t *logits = malloc(B * C * 4 + 4);
    int32_t labels[REF_XENT_LONG_ROWS];
    const float scale = 65536.0f;
    for (int combo = 0; combo < 4; combo++) {
        /* matching dtypes, then fp16 logits with fp32 gradients */
        const ak_dtype dl = combo < 3 ? kt_dtypes[combo] : AK_F16;
        const ak_dtype dd = combo < 3 ? kt_dtypes[combo] : AK_F32;
        ref_xent_long_rows(&r, dl, C, logits, labels);
        check_xent(cmp, B, C, dl, dd, logits, labels, NULL);
        check_xent(cmp, B, C, dl, dd, logits, labels, &scale);
        make_logits(&r, dl, B, C, 20.0, true, logits, labels);
        check_xent(cmp, B, C, dl, dd, logits, labels, &scale);
    }
    free(logits);
    enum { ROWS = 64 * 64, CHARS = 98 };
    logits = malloc(ROWS * CHARS * 4 + 4);
    int32_t *char_labels = malloc(ROWS * 4 + 4);
    for (int d = 0; d < 3; d++) {
        make_logits(&r, kt_dtypes[d], ROWS, CHARS, 20.0, true, logits, char_labels);
        check_xent(cmp, ROWS, CHARS, kt_dtypes[d], kt_dtypes[d], logits, char_labels, &scale);
    }
    free(logits);
    free(char_labels);
}

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
GO_CASE(softmax_bad_labels_on_cuda)
{
    const go_cmp *cmp = &c->cmp;
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
                ck_assert(go_compare("dlogits", cmp, AK_F32, &out.dlogits[0][b * CLASSES + j], &g,
                                     1, NULL, NULL) == 0);
        }
    }
    ck_assert_int_eq(out.correct[1], want_correct);
    free_outputs(&out);
}

GO_CASE(softmax_empty_batch)
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
    ck_assert(loss_agrees(l[0], l[1]));
    kt_twin_free(&tl);
    kt_twin_free(&lab);
    kt_twin_free(&loss);
}

/* ---- mean squared error
 * ---------------------------------------------------------------------------- */
static void check_mse(const go_cmp *cmp, ts_rng *r, size_t n, ak_dtype dp, ak_dtype dt, ak_dtype dd,
                      bool values, const float *scale)
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
    ck_assert_msg(loss_agrees(l[0], l[1]), "mse loss: cpu %.9g cuda %.9g (n %zu)", (double)l[0],
                  (double)l[1], n);
    ck_assert_msg(go_compare_twin("dpred", cmp, &td, NULL, NULL) == 0,
                  "pred %s target %s dpred %s n %zu", ak_dtype_name(dp), ak_dtype_name(dt),
                  ak_dtype_name(dd), n);
    kt_twin_free(&tp);
    kt_twin_free(&tt);
    kt_twin_free(&td);
    kt_twin_free(&sc);
    kt_twin_free(&loss);
    free(p);
    free(t);
}

GO_CASE(mse_within_bound)
{
    const go_cmp *cmp = &c->cmp;
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 32);
    const float three = 3.0f;
    static const size_t sizes[] = {32 * 10, 32 * 256, 512 * 4096, 1, 0};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int d = 0; d < 3; d++)
            for (int v = 0; v < 2; v++)
                check_mse(cmp, &r, sizes[s], kt_dtypes[d], kt_dtypes[d], kt_dtypes[d], v,
                          v ? &three : NULL);
    for (int combo = 0; combo < 27; combo++)
        for (int v = 0; v < 2; v++)
            check_mse(cmp, &r, 1001, kt_dtypes[combo % 3], kt_dtypes[combo / 3 % 3],
                      kt_dtypes[combo / 9], v, &three);
}

/* ---- the loss in a low format: bit for bit --------------------------------------------- */
/* ak_nll_loss on both backends: the loss, correct and every gradient bit
 * for bit (kernels/loss.c); labels_gpu may hold bad labels, whose rows
 * cuda makes NaN. */
static void check_nll(const go_cmp *cmp, size_t batch, size_t classes, ak_dtype dt,
                      const uint32_t *logp, const int32_t *labels_cpu, const int32_t *labels_gpu,
                      const float *scale, float *loss_gpu)
{
    const size_t n = batch * classes;
    kt_twin tl = twin_alloc(n, dt), td = twin_alloc(n, dt), lab = twin_alloc(batch, AK_F32),
            sc = twin_alloc(1, AK_F32), loss = twin_alloc(1, AK_F32),
            correct = twin_alloc(1, AK_F32);
    kt_twin_put(&tl, logp);
    kt_buf_upload(&lab.c, labels_cpu);
    kt_buf_upload(&lab.g, labels_gpu);
    if (scale) kt_twin_upload(&sc, scale);
    ak_backend *bk[2] = {cpu, gpu};
    kt_buf *t[2] = {&tl.c, &tl.g}, *d[2] = {&td.c, &td.g}, *lb[2] = {&lab.c, &lab.g},
           *s[2] = {&sc.c, &sc.g}, *l[2] = {&loss.c, &loss.g}, *k[2] = {&correct.c, &correct.g};
    float lv[2];
    int32_t cv[2];
    for (int i = 0; i < 2; i++) {
        const int rc = ak_nll_loss(bk[i], batch, classes, t[i]->t, (const int32_t *)lb[i]->t.data,
                                   scale ? (const float *)s[i]->t.data : NULL,
                                   (float *)l[i]->t.data, d[i]->t, (int32_t *)k[i]->t.data);
        ck_assert_msg(rc == AK_OK, "%s: %s", ak_backend_name(bk[i]), ak_error(bk[i]));
        kt_buf_download(l[i], &lv[i]);
        kt_buf_download(k[i], &cv[i]);
    }
    *loss_gpu = lv[1];
    if (labels_cpu == labels_gpu) {
        ck_assert_msg(kt_f32_bits(lv[0]) == kt_f32_bits(lv[1]),
                      "nll loss: cpu %a cuda %a (%zux%zu %s)", (double)lv[0], (double)lv[1], batch,
                      classes, ak_dtype_name(dt));
        ck_assert_int_eq(cv[0], cv[1]);
        ck_assert_msg(go_compare_twin("dlogp", cmp, &td, NULL, NULL) == 0, "%zux%zu %s", batch,
                      classes, ak_dtype_name(dt));
    }
    kt_twin_free(&tl);
    kt_twin_free(&td);
    kt_twin_free(&lab);
    kt_twin_free(&sc);
    kt_twin_free(&loss);
    kt_twin_free(&correct);
}

GO_CASE(nll_bits)
{
    const go_cmp *cmp = &c->cmp;
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 34);
    /* a character vocabulary's batch x context rows, lanes not all filled,
     * one row, a long vocabulary, no rows */
    static const size_t shapes[][2] = {{2048, 96}, {33, 10}, {1, 7}, {5, 50257}, {0, 4}};
    static const float scales[] = {1.0f, 1024.0f, 65536.0f, 3.0f, 0x1p-20f};
    for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++)
        for (int dt = 0; dt < 2; dt++) {
            const size_t batch = shapes[sh][0], classes = shapes[sh][1], n = batch * classes;
            uint32_t *logp = malloc(n * 4 + 4);
            int32_t *labels = malloc(batch * 4 + 4);
            for (size_t i = 0; i < n; i++)
                logp[i] = kt_from_f64(kt_dtypes[dt], -12.0 * ts_uniform(&r));
            for (size_t b = 0; b < batch; b++)
                labels[b] = (int32_t)ts_below(&r, (uint32_t)classes);
            if (batch > 3) logp[3 * classes] = kt_from_f64(kt_dtypes[dt], NAN);
            float got;
            for (size_t k = 0; k < sizeof scales / sizeof scales[0]; k++)
                check_nll(cmp, batch, classes, kt_dtypes[dt], logp, labels, labels, &scales[k],
                          &got);
            check_nll(cmp, batch, classes, kt_dtypes[dt], logp, labels, labels, NULL, &got);
            free(logp);
            free(labels);
        }
}

/* cuda's bad labels: the loss is NaN (the cpu rejects them). */
GO_CASE(nll_bad_labels_on_cuda)
{
    (void)c;
    uint32_t logp[12];
    for (int i = 0; i < 12; i++)
        logp[i] = kt_from_f64(AK_F16, -1.0 - i);
    const int32_t good[4] = {0, 1, 2, 0}, bad[4] = {0, 3, -1, 0};
    float got;
    check_nll(&c->cmp, 4, 3, AK_F16, logp, good, bad, NULL, &got);
    ck_assert_msg(isnan(got), "cuda's loss with bad labels: %a", (double)got);
}

/* The gradients: dlogits within one ulp of their dtype (NaN: the default
 * NaN on both), dpred bit for bit; the losses as loss_cmp. */
#define XENT_CMP                                                                                   \
    {                                                                                              \
        GO_CLOSE, 1, 0, 0, true, false, "kernels/loss.c: each dlogit within one ulp"               \
    }
static const go_case rows[] = {
    {"softmax_xent", "softmax_within_bound", 1, softmax_within_bound, XENT_CMP},
    {"softmax_xent", "softmax_long_rows", 1, softmax_long_rows, XENT_CMP},
    {"softmax_xent", "softmax_bad_labels_on_cuda", 1, softmax_bad_labels_on_cuda, XENT_CMP},
    {"softmax_xent", "softmax_empty_batch", 1, softmax_empty_batch, XENT_CMP},
    {"mse", "mse_within_bound", 1, mse_within_bound, GO_BITS},
    {"nll_loss", "nll_bits", 1, nll_bits, GO_BITS},
    {"nll_loss", "nll_bad_labels_on_cuda", 1, nll_bad_labels_on_cuda, GO_BITS},
};
GO_FAMILY(loss, rows);
