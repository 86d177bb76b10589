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

#endif
