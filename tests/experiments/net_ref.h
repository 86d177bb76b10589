/* net_ref.h: a double-precision reference of the nets for the tests, written
 * from the PyTorch definitions independently of kernels/: each kind of
 * layer's forward for one sample, a net's loss, and the check of a model's
 * fp32 gradients against central finite differences of that loss (used by
 * test_model for the reference nets and by test_layers for every kind). */
#ifndef AMPSCOPE_TESTS_NET_REF_H
#define AMPSCOPE_TESTS_NET_REF_H

#include "model.h"
#include "nets.h"

/* One sample through one layer: in (in features) -> out (out features);
 * w are the layer's tensors in its kind's order. */
typedef void (*ref_layer_fn)(const net_layer *l, const double *in, double *out,
                             const double *const *w);

/* The whole batch (rows samples) through one layer, for kinds whose output
 * depends on other samples (BatchNorm) or on a second input (in2: the
 * residual add; NULL for one-input kinds). */
typedef void (*ref_batch_fn)(const net_layer *l, size_t rows, const double *in, const double *in2,
                             double *out, const double *const *w);

/* Do the tests have a reference of this kind of layer? */
bool ref_has_layer(const layer_kind *k);

/* Builds an O0 model of n for rows samples (rows <= 64) on the cpu backend
 * with weights from seed 7, runs forward and backward on fixed inputs,
 * labels and targets, and asserts that its loss is the reference's and
 * that a sample of every parameter's gradient agrees with the central
 * differences of the reference loss; what names the net in messages. */
void ref_check_gradients(const char *what, const net_def *n, size_t rows);

#endif
