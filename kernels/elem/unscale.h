/* elem/unscale.h: the element math of ak_scale and ak_unscale_check (and of
 * ak_clip_by_norm's scaling), host and device.
 *
 * Both backends call these same functions per element, so cpu and cuda give
 * the same bits.  Scaling is IEEE arithmetic on the host and the GPU, except
 * for NaN results: the GPU makes every NaN result its canonical 0x7FFFFFFF,
 * while kernels.h promises the emulator's (x86) NaNs, so NaN results are
 * built here from the operands' bits instead of taken from the hardware.
 */
#ifndef AMPSCOPE_KERNELS_ELEM_UNSCALE_H
#define AMPSCOPE_KERNELS_ELEM_UNSCALE_H

#include "kernels.h"
#include "round.h"

/* Is the element (of format f) an infinity or a NaN? */
FPE_INLINE bool ak_nonfinite_k(fpe_format_id f, uint32_t x)
{
    return fk_expfield(f, x) == fk_expfield_max(f);
}

/* ---- scaling ----------------------------------------------------------------- */
/* A scale factor, read once per call (or per GPU thread) from backend memory. */
typedef struct ak_factor {
    uint32_t bits; /* the fp32 factor */
    double value;  /* its value, exactly (a NaN keeps its payload) */
} ak_factor;

FPE_INLINE ak_factor ak_factor_of(float f)
{
    ak_factor k;
    k.bits = ak_f32_bits(f);
    k.value = ak_elem_value(FPE_FMT_F32, k.bits);
    return k;
}

/* fpe_f32_mul(x, factor) in the default environment: the hardware product
 * (round to nearest even, subnormals kept on both the host and the GPU),
 * with x86 NaNs: the first NaN operand quieted, else the default NaN. */
FPE_INLINE uint32_t ak_scale_f32_k(uint32_t x, ak_factor k)
{
    const float p = ak_f32_from_bits(x) * ak_f32_from_bits(k.bits);
    if (p == p) return ak_f32_bits(p);
    fpe_env env = fpe_env_default();
    if (fpe_isnan_k(FPE_FMT_F32, x) || fpe_isnan_k(FPE_FMT_F32, k.bits))
        return fpe_propagate_nan(FPE_FMT_F32, &env, x, k.bits);
    return fpe_default_nan(FPE_FMT_F32, &env); /* inf * 0 */
}

/* x (fp16/bf16) times the factor, the exact product rounded once to f, to
 * nearest even.  A NaN x stays itself, quieted; a NaN factor gives its own
 * payload in f (as fpe_f32_to_<f> would); inf * 0 gives the default NaN. */
FPE_INLINE uint32_t ak_scale16_k(fpe_format_id f, uint32_t x, ak_factor k)
{
    fpe_env env = fpe_env_default();
    const double v = ak_elem_value(f, x);
    if (v == v && k.value == k.value) {
        const double p = v * k.value;
        if (p == p) return ak_round_product(f, &env, v, k.value);
        return fpe_default_nan(f, &env); /* inf * 0 */
    }
    /* the first NaN operand, converted (which quiets it) */
    return fpe_from_f64_k(f, &env, v != v ? v : k.value);
}

/* One format's loop of ak_scale_span (f a constant, so the format folds). */
FPE_INLINE bool ak_scale_span16(fpe_format_id f, uint16_t *p, size_t begin, size_t end,
                                size_t stride, ak_factor k, bool scale)
{
    bool nonfinite = false;
    for (size_t i = begin; i < end; i += stride) {
        const uint32_t x = p[i];
        nonfinite |= ak_nonfinite_k(f, x);
        if (scale) p[i] = (uint16_t)ak_scale16_k(f, x, k);
    }
    return nonfinite;
}

/* The elements begin, begin + stride, ... (< end) of the tensor at data of
 * format f: multiplied by the factor when scale is set (as ak_scale), and
 * checked.  Returns whether any of them was an infinity or a NaN (before
 * scaling).  The cpu calls it with stride 1, a GPU thread with its stride. */
FPE_INLINE bool ak_scale_span(fpe_format_id f, void *data, size_t begin, size_t end, size_t stride,
                              ak_factor k, bool scale)
{
    if (f == FPE_FMT_F16)
        return ak_scale_span16(FPE_FMT_F16, (uint16_t *)data, begin, end, stride, k, scale);
    if (f == FPE_FMT_BF16)
        return ak_scale_span16(FPE_FMT_BF16, (uint16_t *)data, begin, end, stride, k, scale);
    uint32_t *p = (uint32_t *)data;
    bool nonfinite = false;
    for (size_t i = begin; i < end; i += stride) {
        const uint32_t x = p[i];
        nonfinite |= ak_nonfinite_k(FPE_FMT_F32, x);
        if (scale) p[i] = ak_scale_f32_k(x, k);
    }
    return nonfinite;
}

#endif
