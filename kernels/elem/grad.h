/* elem/grad.h: the element math of gradient accumulation and norm clipping,
 * host and device.
 *
 * cpu/grad.c and cuda/grad.cu run these same functions, so ak_accumulate
 * and ak_clip_by_norm agree bit for bit between the backends (the clip
 * coefficient is IEEE double arithmetic, correctly rounded on both, and its
 * NaN is built from bits); only ak_sum_squares sums in a different order
 * (its bound is derived in kernels/grad.c).
 */
#ifndef AMPSCOPE_KERNELS_ELEM_GRAD_H
#define AMPSCOPE_KERNELS_ELEM_GRAD_H

#include <math.h>

#include "add.h"
#include "cast.h"
#include "layers.h"
#include "unscale.h"

/* ---- accumulation ------------------------------------------------------------ */
/* x + y (formats fx, fy), the exact sum rounded once to fy, to nearest even
 * (ak_add_elem with x first, so when both are NaNs x's NaN wins). */
FPE_INLINE uint32_t ak_accumulate_elem(fpe_format_id fy, fpe_format_id fx, uint32_t y, uint32_t x)
{
    return ak_add_elem(fy, fx, fy, x, y);
}

/* ---- sums of squares ----------------------------------------------------------- */
/* The square of an element, exact in double (at most 2 x 24 significant
 * bits; fp32's largest square is about 2^256).  A NaN gives a NaN, of
 * unspecified bits: the sum only has to be a NaN. */
FPE_INLINE double ak_square_elem(fpe_format_id f, uint32_t x)
{
    const uint32_t bits32 = f == FPE_FMT_F32 ? x : ak_widen16_k(f, x);
    const double v = (double)ak_f32_from_bits(bits32);
    return v * v;
}

/* A running sum with its rounding error (TwoSum, Knuth): the error is
 * carried in c, so a long in-order sum of nonnegative terms stays within
 * about one rounding of the exact sum instead of n/2 roundings (Ogita, Rump
 * and Oishi's Sum2).  Once s is an infinity or a NaN, c is meaningless and
 * the value is s, as plain double arithmetic would give it. */
typedef struct ak_csum {
    double s, c;
} ak_csum;

FPE_INLINE void ak_csum_add(ak_csum *a, double v)
{
    const double t = a->s + v;
    const double z = t - a->s;
    a->c += (a->s - (t - z)) + (v - z);
    a->s = t;
}

FPE_INLINE double ak_csum_value(ak_csum a) { return isfinite(a.s) ? a.s + a.c : a.s; }

/* One format's loop of ak_sum_squares_span (f a constant, so the format folds). */
FPE_INLINE void ak_sum_squares_fmt(fpe_format_id f, const void *data, size_t begin, size_t end,
                                   size_t stride, ak_csum *acc)
{
    for (size_t i = begin; i < end; i += stride)
        ak_csum_add(acc, ak_square_elem(f, ak_load_bits(f, data, i)));
}

/* Adds the squares of the elements begin, begin + stride, ... (< end) of a
 * tensor of format f to *acc, in that order.  The cpu calls it with stride
 * 1, a GPU thread with its stride. */
FPE_INLINE void ak_sum_squares_span(fpe_format_id f, const void *data, size_t begin, size_t end,
                                    size_t stride, ak_csum *acc)
{
    if (f == FPE_FMT_F16)
        ak_sum_squares_fmt(FPE_FMT_F16, data, begin, end, stride, acc);
    else if (f == FPE_FMT_BF16)
        ak_sum_squares_fmt(FPE_FMT_BF16, data, begin, end, stride, acc);
    else
        ak_sum_squares_fmt(FPE_FMT_F32, data, begin, end, stride, acc);
}

/* ---- norm clipping ------------------------------------------------------------- */
/* PyTorch's clip_grad_norm_ coefficient from the sum of squares, in double:
 * max_norm / (sqrt(sumsq) + 1e-6) clamped to at most 1, rounded to fp32.
 * An infinite norm gives 0, a NaN norm (a NaN sum, or a negative one) the
 * emulator's default fp32 NaN, whatever NaN the FPU made. */
FPE_INLINE float ak_clip_coef(double sumsq, float max_norm)
{
    const double total_norm = sqrt(sumsq);
    double coef = (double)max_norm / (total_norm + 1e-6);
    if (coef != coef) {
        fpe_env env = fpe_env_default();
        return ak_f32_from_bits(fpe_default_nan(FPE_FMT_F32, &env));
    }
    if (coef > 1.0) coef = 1.0;
    return (float)coef;
}

/* Whether ak_clip_by_norm multiplies the elements by coef: not when it is
 * 1 (nothing to clip; the elements keep their bits, NaN payloads included),
 * as ak_unscale_check leaves them alone at an inverse scale of 1. */
FPE_INLINE bool ak_clip_applies(float coef) { return coef != 1.0f; }

#endif
