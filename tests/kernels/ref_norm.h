/* ref_norm.h: what the tests of BatchNorm and LayerNorm share
 * (test_norm_batchnorm.c, test_norm_layernorm.c), written from kernels.h's
 * rules, independently of kernels/elem/norm.h. */
#ifndef AMPSCOPE_TESTS_REF_NORM_H
#define AMPSCOPE_TESTS_REF_NORM_H

#include <stddef.h>
#include <stdint.h>

#include "kt.h"

/* The sum of v[0 .. m) as kernels.h orders it: 256 lanes (v[k] to lane
 * k mod 256, in increasing k), then the tree (lane t += lane t + s, s =
 * 128 .. 1). */
double ref_norm_lane_sum(const double *v, size_t m);
/* d rounded to fp32 (nearest even), as a float. */
float ref_norm_f32(double d);
/* The fp32 statistics as kernels.h specifies them, from v[0 .. m): mean
 * and invstd = 1 / sqrt(var + eps), var biased, each rounded once; *s2 =
 * the lane sum of (v - mean)^2 (double mean). */
void ref_norm_stats(const double *v, size_t m, double eps, float *mean, float *invstd, double *s2);
/* The double reference of PyTorch's formulas: plain sums in index order. */
void ref_norm_plain(const double *v, size_t m, double *mean, double *var);
/* An output element as specified: ((x - mean) * invstd) * gamma + beta in
 * fp32 (each operation rounded), as bits converted to dt (NaN: default). */
uint32_t ref_norm_y_bits(ak_dtype dt, float x, float mean, float invstd, float gamma, float beta);
/* dx as specified: ((g - c1) - (x - mean) * c2) * s in fp32, to dt. */
uint32_t ref_norm_dx_bits(ak_dtype dt, float g, float x, float mean, float c1, float c2, float s);
/* Central differences of a scalar function of n parameters at p: g[i] =
 * (f(p + h e_i) - f(p - h e_i)) / 2h. */
typedef double (*ref_norm_loss)(const float *p, const void *ctx);
void ref_norm_fd(ref_norm_loss f, const void *ctx, float *p, size_t n, double h, double *g);

#endif
