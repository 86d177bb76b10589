/* ref_softmax_xent: the softmax cross-entropy reference (see the header). */
#include "ref_softmax_xent.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the softmax reference -------------------------------------------------------- */
/* Row loss and gradient (softmax - onehot) / batch * scale, the textbook way:
 * s = sum exp(x - m), loss = m + log(s) - x[label], p = exp(x - m) / s.
 * Returns the index of the first maximal logit (the first NaN if any). */
size_t ref_xent_row(const double *x, size_t classes, size_t label, size_t batch, double scale,
                    double *loss, double *grad)
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

char ref_xent_error[512];

/* Runs ak_softmax_xent on the cpu backend with guarded buffers (outputs
 * prefilled with junk: they must be written, not accumulated). */
int ref_xent_run(ak_backend *b, const xent_case *c, xent_result *out)
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
    snprintf(ref_xent_error, sizeof ref_xent_error, "%s", ak_error(b));
    out->loss = kt_buf_get_f32(&loss);
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
void ref_xent_check(ak_backend *b, const xent_case *c)
{
    const size_t n = c->batch * c->classes;
    xent_result got;
    got.dlogits = malloc(n * 4 + 4);
    ck_assert_int_eq(ref_xent_run(b, c, &got), AK_OK);
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

void ref_xent_labels(ts_rng *r, int32_t *labels, size_t batch, size_t classes)
{
    for (size_t i = 0; i < batch; i++)
        labels[i] = (int32_t)ts_below(r, (uint32_t)classes);
}

void ref_xent_long_rows(ts_rng *r, ak_dtype dl, size_t classes, uint32_t *logits, int32_t *labels)
{
    ck_assert_uint_gt(classes, 40000);
    const size_t last = classes - 1;
    const double neg_big = dl == AK_F16 ? -65504.0 : -1e30;
    for (size_t b = 0; b < REF_XENT_LONG_ROWS; b++) {
        uint32_t *row = logits + b * classes;
        for (size_t j = 0; j < classes; j++) {
            double v = 16.0 * ts_uniform(r) - 8.0;
            if (b == 1 || b == 2) v = 0.5;
            if (b == 3 || b == 4) v = j == last ? 80.0 : -8.0;
            if (b == 5 && (j == 40000 || j == last)) v = 30.0;
            if (b == 6) v = j == 12345 ? 0.0 : neg_big;
            if (b == 7) v = j == 0 ? 65504.0 : -65504.0;
            row[j] = kt_from_f64(dl, v);
        }
    }
    const int32_t fixed[REF_XENT_LONG_ROWS] = {(int32_t)ts_below(r, (uint32_t)classes),
                                               0,
                                               (int32_t)last,
                                               (int32_t)last,
                                               0,
                                               (int32_t)last,
                                               7,
                                               (int32_t)(classes / 2)};
    memcpy(labels, fixed, sizeof fixed);
}
