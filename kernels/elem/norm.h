/* elem/norm.h: the arithmetic of BatchNorm2d and LayerNorm (kernels.h,
 * "normalization"), host and device.
 *
 * cpu/batchnorm.c, cpu/layernorm.c and their cuda twins run these same
 * functions in the same order, so the backends agree bit for bit:
 *   - a channel's or row's sums are double, in AK_NORM_LANES lanes (element
 *     k to lane k mod AK_NORM_LANES, in increasing k), then the lanes added
 *     as a tree (ak_norm_tree: on the GPU one thread per lane, the same
 *     additions between barriers);
 *   - the statistics and coefficients are computed in double (+ - * / and
 *     sqrt: correctly rounded on both, no contraction: CMakeLists.txt) and
 *     rounded once to fp32 (ak_norm_f32);
 *   - an output element is computed in fp32 (+ - * only) and converted once
 *     to its format, every NaN as the default NaN (ak_avgpool_store).
 */
#ifndef AMPSCOPE_KERNELS_ELEM_NORM_H
#define AMPSCOPE_KERNELS_ELEM_NORM_H

#include <math.h>

#include "avgpool.h" /* ak_avgpool_load, ak_avgpool_store: fp32 loads and stores */

/* The lanes of a sum, and the GPU's threads per channel or row. */
#define AK_NORM_LANES 256

/* Adds the lanes acc[0 .. AK_NORM_LANES) as a tree: for s = LANES/2 .. 1,
 * acc[t] += acc[t + s] for t < s; returns acc[0]. */
FPE_INLINE double ak_norm_tree(double *acc)
{
    for (unsigned s = AK_NORM_LANES / 2; s > 0; s >>= 1)
        for (unsigned t = 0; t < s; t++)
            acc[t] += acc[t + s];
    return acc[0];
}

/* d rounded once to fp32 (nearest even; NaN: the default NaN). */
FPE_INLINE float ak_norm_f32(double d)
{
    return ak_f32_from_bits(ak_layer_from_f64(FPE_FMT_F32, d));
}

/* Element i of format f as a double (exact). */
FPE_INLINE double ak_norm_load(fpe_format_id f, const void *p, size_t i)
{
    return ak_load_value(f, p, i);
}

/* 1 / sqrt(var + eps) in double, rounded to fp32. */
FPE_INLINE float ak_norm_invstd(double var, double eps)
{
    return ak_norm_f32(1.0 / sqrt(var + eps));
}

/* A running statistic updated: momentum * batch + (1 - momentum) * running
 * in double (PyTorch's order), rounded to fp32. */
FPE_INLINE float ak_norm_running(double running, double batch, double momentum)
{
    return ak_norm_f32(momentum * batch + (1.0 - momentum) * running);
}

/* An output element in fp32: ((x - mean) * invstd) * gamma + beta. */
FPE_INLINE float ak_norm_apply(float x, float mean, float invstd, float gamma, float beta)
{
    const float xm = x - mean;
    const float xhat = xm * invstd;
    const float scaled = xhat * gamma;
    return scaled + beta;
}

/* The backward's per-channel or per-row coefficients, in fp32: c1 = S(g) / m,
 * c2 = S(g (x - mean)) / m * invstd * invstd (in double, then rounded). */
typedef struct ak_norm_coef {
    float c1, c2;
} ak_norm_coef;

FPE_INLINE ak_norm_coef ak_norm_backward_coef(double sum_g, double sum_gxm, size_t m, float invstd)
{
    ak_norm_coef k;
    const double inv = (double)invstd;
    k.c1 = ak_norm_f32(sum_g / (double)m);
    k.c2 = ak_norm_f32(sum_gxm / (double)m * inv * inv);
    return k;
}

/* dx for one element in fp32: ((g - c1) - (x - mean) * c2) * s. */
FPE_INLINE float ak_norm_dx(float g, float x, float mean, ak_norm_coef k, float s)
{
    const float centred = g - k.c1;
    const float xm = x - mean;
    const float proj = xm * k.c2;
    const float diff = centred - proj;
    return diff * s;
}

/* The two sums of one element of the backward: g and g (x - mean), double. */
FPE_INLINE double ak_norm_gxm(double g, double x, float mean) { return g * (x - (double)mean); }

/* LayerNorm's g for element i (column j): dy * gamma[j] in double (exact:
 * two values of at most 24 significant bits), or dy without gamma. */
FPE_INLINE double ak_norm_ln_g(fpe_format_id fdy, const void *dy, size_t i, ak_tensor gamma,
                               size_t j)
{
    const double d = ak_norm_load(fdy, dy, i);
    return gamma.data ? d * ak_norm_load((fpe_format_id)gamma.dtype, gamma.data, j) : d;
}

/* LayerNorm's dgamma term: dy ((x - mean) rstd), in double. */
FPE_INLINE double ak_norm_dgamma_term(double dy, double x, float mean, float rstd)
{
    return dy * ((x - (double)mean) * (double)rstd);
}

#endif
