/* ref_conv.h: what test_conv.c and gpu_cases_conv.c share: the geometry, a
 * direct double-precision convolution whose sums of |products| give the
 * error bounds, and host tensors. */
#ifndef AMPSCOPE_TESTS_REF_CONV_H
#define AMPSCOPE_TESTS_REF_CONV_H

#include "kt.h"

/* A geometry with compute type 32F. */
ak_conv2d ref_conv_geom(size_t batch, size_t in_ch, size_t in_h, size_t in_w, size_t out_ch,
                        size_t k_h, size_t k_w, size_t stride, size_t pad);
/* The output size, from the textbook formula (not ak_conv2d_out_h). */
size_t ref_conv_out_h(const ak_conv2d *c);
size_t ref_conv_out_w(const ak_conv2d *c);
/* The element counts of x, w and y. */
size_t ref_conv_nx(const ak_conv2d *c);
size_t ref_conv_nw(const ak_conv2d *c);
size_t ref_conv_ny(const ak_conv2d *c);

/* y = conv(x, w) + bias (bias may be NULL) and s = sum |x w| + |bias| per
 * output, by direct loops in double. */
void ref_conv_forward(const ak_conv2d *c, const double *x, const double *w, const double *bias,
                      double *y, double *s);
/* The gradients of sum(dy .* y) with respect to x, w and bias, and their
 * sums of absolute terms (allocated by ref_conv_backward). */
typedef struct ref_conv_grads {
    double *dx, *sx, *dw, *sw, *db, *sb;
} ref_conv_grads;
ref_conv_grads ref_conv_backward(const ak_conv2d *c, const double *x, const double *w,
                                 const double *dy);
void ref_conv_grads_free(ref_conv_grads *g);

/* A host tensor: the bits of its n elements of dt and their exact values. */
typedef struct ref_tensor {
    ak_dtype dt;
    size_t n;
    uint32_t *bits;
    double *v;
} ref_tensor;
ref_tensor ref_tensor_make(ak_dtype dt, size_t n); /* zeros */
/* Every element uniform in [-1, 1], rounded to dt. */
void ref_tensor_random(ref_tensor *t, ts_rng *r);
/* Every element bits (the values follow). */
void ref_tensor_fill(ref_tensor *t, uint32_t bits);
/* The values of the bits as they stand (after the bits were changed). */
void ref_tensor_update_values(ref_tensor *t);
void ref_tensor_free(ref_tensor *t);

#endif
