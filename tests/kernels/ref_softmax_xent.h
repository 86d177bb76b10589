/* ref_softmax_xent: the double-precision softmax cross-entropy reference and
 * the guarded runner that test_softmax_xent.c uses (kept apart so the test
 * stays about its cases). */
#ifndef AMPSCOPE_TESTS_REF_SOFTMAX_XENT_H
#define AMPSCOPE_TESTS_REF_SOFTMAX_XENT_H

#include "kt.h"

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

/* The message of the last failed ref_xent_run (later calls clear ak_error). */
extern char ref_xent_error[512];

/* Row loss and gradient (softmax - onehot) / batch * scale, the textbook way.
 * Returns the index of the first maximal logit (the first NaN if any). */
size_t ref_xent_row(const double *x, size_t classes, size_t label, size_t batch, double scale,
                    double *loss, double *grad);
/* Runs ak_softmax_xent on the cpu backend with guarded buffers. */
int ref_xent_run(ak_backend *b, const xent_case *c, xent_result *out);
/* Checks the op's result against ref_xent_row. */
void ref_xent_check(ak_backend *b, const xent_case *c);
void ref_xent_labels(ts_rng *r, int32_t *labels, size_t batch, size_t classes);

/* A language model's vocabulary head: GPT-2's 50257 classes. */
#define REF_XENT_VOCAB 50257
/* REF_XENT_LONG_ROWS rows of a long last dimension (classes > 40000), the
 * logits exact in every dtype (fp16 clamps the two huge values):
 *   0  uniform in [-8, 8], a random label;
 *   1  every logit 0.5, label 0 (the first maximum: correct);
 *   2  every logit 0.5, label classes - 1 (not correct);
 *   3  -8 except 80 at the last index, the label there (a loss about
 *      (classes - 1) e^-88);
 *   4  the same logits, label 0 (a loss about 88);
 *   5  uniform in [-8, 8] with 30 at 40000 and at the last index, the
 *      label on the last (a tie: not correct);
 *   6  -1e30 (fp16: -65504) except 0 at 12345, label 7;
 *   7  65504 at 0, -65504 elsewhere, label classes / 2.
 * Rows 0-2 and 4-7 suit the textbook reference; row 3's label gradient,
 * -s/(1+s) with s about 3e-34, is 1/(1+s) - 1 = 0 there. */
#define REF_XENT_LONG_ROWS 8
void ref_xent_long_rows(ts_rng *r, ak_dtype dl, size_t classes, uint32_t *logits, int32_t *labels);

#endif
