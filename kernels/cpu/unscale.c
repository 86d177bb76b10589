/* cpu/unscale.c: scaling and the fused unscale + finite check on the host,
 * one pass per tensor through elem/unscale.h. */
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
        else
            nonfinite |= ak_scale_span((fpe_format_id)grads[t].dtype, grads[t].data, 0, grads[t].n,
                                       1, k, scale);
    if (nonfinite) *found_inf = 1.0f;
    return AK_OK;
}

int ak_cpu_scale(ak_backend *b, ak_tensor x, const float *factor)
{
    (void)b;
    ak_scale_span((fpe_format_id)x.dtype, x.data, 0, x.n, 1, ak_factor_of(*factor), true);
    return AK_OK;
}
