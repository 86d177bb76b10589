/* kt_fd.h: backward passes against central finite differences (fp32, double
 * sums), shared by the tests of the layer ops (test_bias, test_relu,
 * test_maxpool).  A forward op is wrapped as a kt_fd_forward; the objective
 * is L = sum r .* y over its fp32 output y. */
#ifndef AMPSCOPE_TESTS_KT_FD_H
#define AMPSCOPE_TESTS_KT_FD_H

#include "kt.h"

typedef void (*kt_fd_forward)(ak_backend *b, kt_buf *y, kt_buf *x, const void *ctx);

/* Compares the analytic gradient grad (n_x values) with central differences
 * of step h; points are chosen on a grid where x +- h and the outputs are
 * exact in fp32 and away from kinks and ties, so the differences are exact. */
void kt_fd_check(ak_backend *b, kt_fd_forward f, const void *ctx, size_t n_x, size_t n_y,
                 const float *x0, const float *rv, const float *grad, double h);

/* A multiple of 2^-12 in [-1, 1] with |x| >= 2^-6 (away from relu's kink). */
float kt_fd_grid_value(ts_rng *r);

/* The points and weights the layer tests start from: x[i] on the grid,
 * r[i] a multiple of 2^-10 in [-1, 1], n of each (seeded with seed). */
void kt_fd_points(ts_rng *r, uint64_t seed, float *x, float *rv, size_t n);

#endif
