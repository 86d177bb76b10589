/* cpu/unscale.c: scaling and the fused unscale + finite check on the host,
 * one pass per tensor, through elem/unscale.h or (finite chunks) vector loops that give the
 * same bits. */
#include "backend.h"
#include "elem/unscale.h"

/* fp32 gradients with a finite factor: a chunk without infinities or NaNs
 * cannot produce a NaN product, so ak_scale_f32_k is the hardware product
 * there, in a loop the compiler vectorizes; a chunk with one goes through
 * the element code.  Returns whether a non-finite element was seen. */
AK_CPU_VECTOR static bool unscale_f32(uint32_t *restrict p, size_t n, ak_factor k, bool scale)
{
    enum { CHUNK = 1024 };
    const float f = ak_f32_from_bits(k.bits);
    bool nonfinite = false;
    for (size_t start = 0; start < n; start += CHUNK) {
        const size_t len = n - start < CHUNK ? n - start : CHUNK;
        uint32_t *q = p + start;
        uint32_t bad = 0;
        for (size_t i = 0; i < len; i++)
            bad |= (q[i] & 0x7F800000u) == 0x7F800000u;
        if (bad) {
            nonfinite = true;
            ak_scale_span(FPE_FMT_F32, q, 0, len, 1, k, scale);
        } else if (scale) {
            for (size_t i = 0; i < len; i++)
                q[i] = ak_f32_bits(ak_f32_from_bits(q[i]) * f);
        }
    }
    return nonfinite;
}

/* fp16/bf16 elements times a factor 2^k (a binary32 normal) or zero: in a chunk without infinities
 * or NaNs, the emulator's array conversion (to nearest even) of the hardware's binary32 products
 * gives ak_scale16_k's result, the exact product P rounded once.  P has at most 11 significant
 * bits, so binary32 holds it unless |P| >= 2^128, where both give the infinity, or P's last bit
 * falls below 2^-149, which needs |P| < 2^-138, where both give a zero of P's sign (the format's
 * least subnormal is 2^-24 or 2^-133, half of it far above); a zero factor gives zeros, exactly.
 * Other chunks, and other factors, go through the element code.  Returns whether a non-finite
 * element was seen. */
AK_CPU_VECTOR static bool scale16(fpe_format_id f, uint16_t *restrict p, size_t n, ak_factor k,
                                  bool scale)
{
    enum { CHUNK = 1024 };
    const uint32_t kexp = (k.bits >> 23) & 0xFFu;
    const bool pow2 = (k.bits & 0x007FFFFFu) == 0 && kexp != 0xFFu; /* or a zero */
    if (!scale || !pow2) return ak_scale_span(f, p, 0, n, 1, k, scale);
    const float factor = ak_f32_from_bits(k.bits);
    const uint16_t special = f == FPE_FMT_F16 ? 0x7C00u : 0x7F80u;
    bool nonfinite = false;
    for (size_t start = 0; start < n; start += CHUNK) {
        const size_t len = n - start < CHUNK ? n - start : CHUNK;
        uint16_t *q = p + start;
        uint32_t bad = 0;
        for (size_t i = 0; i < len; i++)
            bad |= (q[i] & special) == special;
        if (bad) {
            nonfinite = true;
            (void)ak_scale_span(f, q, 0, len, 1, k, true);
            continue;
        }
        float prod[CHUNK];
        ak_cpu_widen16(f, q, len, prod);
        for (size_t i = 0; i < len; i++)
            prod[i] *= factor;
        fpe_env env = fpe_env_default();
        (void)fpe_chop_f32_to_u16(&env, f, prod, q, len, NULL);
    }
    return nonfinite;
}

int ak_cpu_unscale_check(ak_backend *b, const ak_tensor *grads, size_t count,
                         const float *inv_scale, float *found_inf)
{
    (void)b;
    const ak_factor k = ak_factor_of(*inv_scale);
    const bool scale = *inv_scale != 1.0f; /* at 1, even NaN payloads stay as they are */
    bool nonfinite = false;
    const bool finite_factor = (k.bits & 0x7F800000u) != 0x7F800000u;
    for (size_t t = 0; t < count; t++)
        if (grads[t].dtype == AK_F32 && finite_factor)
            nonfinite |= unscale_f32(grads[t].data, grads[t].n, k, scale);
        else if (grads[t].dtype != AK_F32)
            nonfinite |=
                scale16((fpe_format_id)grads[t].dtype, grads[t].data, grads[t].n, k, scale);
        else
            nonfinite |= ak_scale_span(FPE_FMT_F32, grads[t].data, 0, grads[t].n, 1, k, scale);
    if (nonfinite) *found_inf = 1.0f;
    return AK_OK;
}

int ak_cpu_scale(ak_backend *b, ak_tensor x, const float *factor)
{
    (void)b;
    if (x.dtype == AK_F32)
        ak_scale_span(FPE_FMT_F32, x.data, 0, x.n, 1, ak_factor_of(*factor), true);
    else
        (void)scale16((fpe_format_id)x.dtype, x.data, x.n, ak_factor_of(*factor), true);
    return AK_OK;
}
