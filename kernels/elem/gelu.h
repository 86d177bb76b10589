/* elem/gelu.h: GELU and its derivative for one element, host and device.
 *
 * gelu(x) = x Phi(x), Phi the standard normal distribution function
 * (PyTorch's approximate='none': 0.5 x (1 + erf(x / sqrt 2))), and the tanh
 * form 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3)
 * (approximate='tanh'), written as x sigma(2u) (0.5 (1 + tanh u) = sigma(2u)
 * exactly) so that neither tail cancels.
 *
 * Everything is computed in double with + - * / only, by code written here
 * (exp, erf's series, erfc's continued fraction): libm's exp/erf/tanh and
 * CUDA's differ in their last bits, these do not, since the build forbids
 * contraction into FMA (CMakeLists.txt) and IEEE double + - * / are the
 * same on both backends.  So cpu and cuda agree bit for bit.  The double
 * result is within about 1e-13 relative of the exact value (test_gelu
 * measures it against libm), rounded once to fp32 (the fp32 result); an
 * fp16/bf16 output is that fp32 result converted by the emulator, as a
 * framework's fp16 kernel computes in fp32 and casts.
 */
#ifndef AMPSCOPE_KERNELS_ELEM_GELU_H
#define AMPSCOPE_KERNELS_ELEM_GELU_H

#include "layers.h"

/* The two forms (kernels.h, ak_gelu_form). */
#define AK_GELU_FORM_ERF  0
#define AK_GELU_FORM_TANH 1

#define AK_GELU_INV_SQRT2    0.7071067811865476 /* 1 / sqrt(2) */
#define AK_GELU_INV_SQRTPI   0.5641895835477563 /* 1 / sqrt(pi) */
#define AK_GELU_INV_SQRT2PI  0.3989422804014327 /* 1 / sqrt(2 pi) */
#define AK_GELU_TWO_SQRTPI   1.1283791670955126 /* 2 / sqrt(pi) */
#define AK_GELU_SQRT_2_PI    0.7978845608028654 /* sqrt(2 / pi) */
#define AK_GELU_TANH_CUBIC   0.044715
#define AK_GELU_ERFC_CF      90                 /* continued-fraction depth: 2e-15 at z = 1.5 */
#define AK_GELU_SERIES_LIMIT 2.1213203435596424 /* |x| below 1.5 sqrt 2 (z < 1.5): erf's series */

/* 2^k for -1022 <= k <= 1023, from its bits. */
FPE_INLINE double ak_gelu_pow2(int k) { return fpe_f64_from_bits((uint64_t)(k + 1023) << 52); }

/* exp(x): x = k ln2 + r, |r| <= ln2 / 2 (ln2 in two parts, the first with
 * 11 trailing zero bits, so k ln2_hi is exact), exp(r) by its Taylor
 * polynomial of degree 14 (remainder below 2^-57), times 2^k in two steps
 * (exact unless the result is subnormal). */
FPE_INLINE double ak_gelu_exp(double x)
{
    if (x != x) return x;
    if (x > 709.782712893384) return fpe_f64_from_bits(0x7FF0000000000000ull);
    if (x < -745.2) return 0.0;
    const double shifter = 6755399441055744.0; /* 1.5 * 2^52: adding it rounds to an integer */
    const double kd = (x * 1.4426950408889634 + shifter) - shifter;
    const double r = (x - kd * 0.6931471805598903) - kd * 5.497923018708371e-14;
    double p = 1.0;
    for (int n = 14; n >= 1; n--)
        p = 1.0 + r * p / (double)n;
    const int k = (int)kd, k1 = k / 2;
    return p * ak_gelu_pow2(k1) * ak_gelu_pow2(k - k1);
}

/* exp(-x^2 / 2), with x^2 taken exactly as hi + lo (Dekker's product):
 * exp(-hi/2) (1 - lo/2).  |x| <= 40 (beyond, the result is below 1e-347). */
FPE_INLINE double ak_gelu_exp_half_sq(double x)
{
    const double c = 134217729.0 * x; /* 2^27 + 1: x = xh + xl, 26 bits each */
    const double xh = c - (c - x), xl = x - xh;
    const double hi = x * x, lo = ((xh * xh - hi) + 2.0 * xh * xl) + xl * xl;
    return ak_gelu_exp(-0.5 * hi) * (1.0 - 0.5 * lo);
}

/* Phi(x) for finite x, given e = exp(-x^2/2), as *base + *rest: for |x| <
 * 2 sqrt 2 (z = |x| / sqrt 2 < 1.5) base is 1/2 and rest +-erf(z)/2, by its
 * series of positive terms, erf(z) = 2/sqrt(pi) e z sum_n (2z^2)^n / (1 3
 * ... (2n+1)) (no cancellation; 1 - erf(z) >= 0.034 loses at most 5 bits);
 * beyond, base is 0 and rest Phi(x), from erfc(z) = e / (sqrt(pi) (z + 1/2
 * / (z + 1 / (z + 3/2 / (z + ...))))), evaluated from depth
 * AK_GELU_ERFC_CF up.  Keeping 1/2 apart lets x (1/2 + rest) round once
 * (ak_gelu_round), right even where x/2 is a tie of the output format. */
FPE_INLINE void ak_gelu_cdf_parts(double x, double e, double *base, double *rest)
{
    const double ax = x < 0 ? -x : x, z = ax * AK_GELU_INV_SQRT2;
    if (ax < AK_GELU_SERIES_LIMIT) {
        const double z2 = 2.0 * z * z;
        double t = z, s = z;
        for (int n = 1; t > s * 1.4e-17; n++) {
            t = t * z2 / (double)(2 * n + 1);
            s += t;
        }
        const double half_erf = 0.5 * AK_GELU_TWO_SQRTPI * e * s;
        *base = 0.5;
        *rest = x < 0 ? -half_erf : half_erf;
        return;
    }
    *base = 0.0;
    if (ax >= 40.0) {
        *rest = x < 0 ? 0.0 : 1.0;
        return;
    }
    double f = z;
    for (int k = AK_GELU_ERFC_CF; k >= 1; k--)
        f = z + (0.5 * (double)k) / f;
    const double half_erfc = 0.5 * AK_GELU_INV_SQRTPI * e / f;
    *rest = x < 0 ? half_erfc : 1.0 - half_erfc;
}

/* Phi(x) as one double (the tests' accuracy check). */
FPE_INLINE double ak_gelu_phi_cdf(double x, double e)
{
    double base, rest;
    ak_gelu_cdf_parts(x, e, &base, &rest);
    return base + rest;
}

/* exp(-x^2/2), 0 beyond |x| = 40. */
FPE_INLINE double ak_gelu_density_exp(double x)
{
    return (x < 0 ? -x : x) < 40.0 ? ak_gelu_exp_half_sq(x) : 0.0;
}

/* For the tanh form at x: sigma(2u) in *s and 1 - sigma(2u) in *t, each
 * without cancellation (from e = exp(-2|u|) <= 1), u'(x) in *du; returns u. */
FPE_INLINE double ak_gelu_tanh_parts(double x, double *s, double *t, double *du)
{
    const double x2 = x * x;
    const double u = AK_GELU_SQRT_2_PI * (x + AK_GELU_TANH_CUBIC * x2 * x);
    const double e = ak_gelu_exp(-2.0 * (u < 0 ? -u : u));
    *s = u >= 0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
    *t = u >= 0 ? e / (1.0 + e) : 1.0 / (1.0 + e);
    *du = AK_GELU_SQRT_2_PI * (1.0 + 3.0 * AK_GELU_TANH_CUBIC * x2);
    return u;
}

/* Below this |u|, sigma(2u) - 1/2 = tanh(u)/2 is u/2 to within u^2/3 relative. */
#define AK_GELU_TANH_LINEAR 3.725290298461914e-09 /* 2^-28 */

/* scale (base + rest) rounded once to fp32 (ak_round_sum: the exact sum of
 * the two products, which are exact or within an ulp of double), every NaN
 * the default NaN (inf * 0 makes different NaN bits on x86 and the GPU). */
FPE_INLINE uint32_t ak_gelu_round(double scale, double base, double rest)
{
    const double a = scale * base, b = scale * rest;
    fpe_env env = fpe_env_default();
    if (a != a || b != b) return fpe_default_nan(FPE_FMT_F32, &env);
    return ak_round_sum(FPE_FMT_F32, &env, a, b);
}

/* gelu(x) rounded to fp32.  As PyTorch's formula gives them: gelu(NaN) =
 * NaN, gelu(+inf) = +inf, gelu(-inf) = NaN (-inf times 1 + erf(-inf) = 0),
 * so an overflow before a GELU stays visible; gelu(-0) = -0. */
FPE_INLINE uint32_t ak_gelu_f32(int form, double x)
{
    if (x - x != 0.0) return ak_layer_from_f64(FPE_FMT_F32, x > 0 ? x : ak_layer_nan());
    if (x == 0.0) return ak_layer_from_f64(FPE_FMT_F32, x); /* keeps the sign */
    double base, rest;
    if (form == AK_GELU_FORM_TANH) {
        double s, t, du;
        const double u = ak_gelu_tanh_parts(x, &s, &t, &du);
        const bool linear = (u < 0 ? -u : u) < AK_GELU_TANH_LINEAR;
        base = linear ? 0.5 : 0.0;
        rest = linear ? 0.5 * u : s;
    } else {
        ak_gelu_cdf_parts(x, ak_gelu_density_exp(x), &base, &rest);
    }
    return ak_gelu_round(x, base, rest);
}

/* gelu'(x) as *base + *rest: Phi(x) + x phi(x), or sigma(2u) + 2 x sigma(2u)
 * (1 - sigma(2u)) u'(x) for the tanh form, with 1/2 kept apart near 0 as
 * for the value.  x = NaN or +-inf: *base NaN (PyTorch's formulas give inf *
 * 0 there).  A function of x alone, so a table of it per input pattern
 * gives the same bits (cpu/gelu.c). */
FPE_INLINE void ak_gelu_slope_parts(int form, double x, double *base, double *rest)
{
    if (x - x != 0.0) {
        *base = ak_layer_nan();
        *rest = 0.0;
        return;
    }
    if (form == AK_GELU_FORM_TANH) {
        double s, t, du;
        const double u = ak_gelu_tanh_parts(x, &s, &t, &du);
        const double tail = 2.0 * x * s * t * du;
        const bool linear = (u < 0 ? -u : u) < AK_GELU_TANH_LINEAR;
        *base = linear ? 0.5 : 0.0;
        *rest = linear ? 0.5 * u + tail : s + tail;
    } else {
        const double e = ak_gelu_density_exp(x);
        ak_gelu_cdf_parts(x, e, base, rest);
        *rest += x * (AK_GELU_INV_SQRT2PI * e);
    }
}

/* dy (base + rest) rounded to fp32, from ak_gelu_slope_parts; NaN where
 * base is NaN (x not finite) or dy is NaN. */
FPE_INLINE uint32_t ak_gelu_slope_round(double dy, double base, double rest)
{
    if (base != base || dy != dy) return ak_layer_from_f64(FPE_FMT_F32, ak_layer_nan());
    return ak_gelu_round(dy, base, rest);
}

/* dy gelu'(x) rounded to fp32.  NaN at x = NaN or +-inf and at dy = NaN. */
FPE_INLINE uint32_t ak_gelu_slope_f32(int form, double dy, double x)
{
    double base, rest;
    ak_gelu_slope_parts(form, x, &base, &rest);
    return ak_gelu_slope_round(dy, base, rest);
}

/* y = gelu(x) written to fy: the fp32 result converted by the emulator. */
FPE_INLINE uint32_t ak_gelu_elem(fpe_format_id fy, fpe_format_id fx, int form, uint32_t x)
{
    return ak_layer_convert(FPE_FMT_F32, fy, ak_gelu_f32(form, ak_elem_value(fx, x)));
}

/* dx = dy gelu'(x) written to fdx. */
FPE_INLINE uint32_t ak_gelu_backward_elem(fpe_format_id fdx, fpe_format_id fdy, fpe_format_id fx,
                                          int form, uint32_t dy, uint32_t x)
{
    const uint32_t r = ak_gelu_slope_f32(form, ak_elem_value(fdy, dy), ak_elem_value(fx, x));
    return ak_layer_convert(FPE_FMT_F32, fdx, r);
}

#endif
