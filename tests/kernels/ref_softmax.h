/* ref_softmax: what test_softmax*.c share: the double softmax reference,
 * the rule of kernels/softmax.c step by step (every operation rounded to
 * the acc format by the emulator's public conversions, exp and log from
 * libm), and a guarded runner of the op on the cpu backend. */
#ifndef AMPSCOPE_TESTS_REF_SOFTMAX_H
#define AMPSCOPE_TESTS_REF_SOFTMAX_H

#include "kt.h"

/* The unmasked columns of row r (all, or r % t + 1 when t > 0). */
size_t ref_softmax_valid(size_t cols, size_t t, size_t r);

/* The exact (double, libm) softmax or log-softmax of one row of n values
 * x[j] * scale, the first `valid` unmasked (the rest 0 / -inf). */
void ref_softmax_row(const double *x, size_t n, size_t valid, double scale, bool use_log,
                     double *y);
/* The exact gradient of that row: softmax scale y (dy - sum dy y); log
 * scale (dy - exp(y) sum dy); 0 where masked. */
void ref_softmax_backward_row(const double *dy, const double *y, size_t n, size_t valid,
                              double scale, bool use_log, double *dx);

/* The rule of kernels/softmax.c for a whole (rows, cols) tensor, written
 * independently: bits of x (dtype dx) to bits of y (dtype dy), each step
 * rounded to acc by kt_from_f64. */
void ref_softmax_rule(const ak_softmax_args *a, ak_dtype dy, ak_dtype dx, const uint32_t *x,
                      uint32_t *y);
void ref_softmax_backward_rule(const ak_softmax_args *a, ak_dtype ddx, ak_dtype ddy, ak_dtype dyt,
                               const uint32_t *dy, const uint32_t *y, uint32_t *dx);

/* Runs ak_softmax_forward on b with guarded buffers: x (bits of dx) in, y
 * (bits of dy) out; fails the test unless the call returns AK_OK and the
 * guards hold. */
void ref_softmax_run(ak_backend *b, const ak_softmax_args *a, ak_dtype dy, ak_dtype dx,
                     const uint32_t *x, uint32_t *y);
void ref_softmax_backward_run(ak_backend *b, const ak_softmax_args *a, ak_dtype ddx, ak_dtype ddy,
                              ak_dtype dyt, const uint32_t *dy, const uint32_t *y, uint32_t *dx);

#endif
