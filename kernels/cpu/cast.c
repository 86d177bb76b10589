/* cpu/cast.c: casts on the host.
 *
 * fp32 -> fp16/bf16 runs the emulator's array routine, whose element i is
 * fpe_convert_k with sr_index env.sr_index + i: the same bits as the
 * element loop of the cuda backend, at the emulator's vectorized speed.
 * The other pairs loop over elem/cast.h. */
#include <string.h>

#include "backend.h"
#include "elem/cast.h"

/* fp16 <-> bf16 (from, to constants after inlining, so the formats fold). */
FPE_INLINE void cast16(fpe_format_id from, fpe_format_id to, uint16_t *dst, const uint16_t *src,
                       size_t n, ak_rounding r)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = (uint16_t)ak_cast_k(from, to, r, i, src[i]);
}

AK_CPU_VECTOR void ak_cpu_widen16(fpe_format_id from, const uint16_t *restrict in, size_t n,
                                  float *restrict out)
{
    if (from == FPE_FMT_F16)
        for (size_t i = 0; i < n; i++)
            out[i] = ak_f32_from_bits(ak_widen16_k(FPE_FMT_F16, in[i]));
    else
        for (size_t i = 0; i < n; i++)
            out[i] = ak_f32_from_bits(ak_widen16_k(FPE_FMT_BF16, in[i]));
}

int ak_cpu_cast(ak_backend *b, ak_tensor dst, ak_tensor src, const ak_rounding *r)
{
    const fpe_format_id from = (fpe_format_id)src.dtype, to = (fpe_format_id)dst.dtype;
    if (from == to) {
        memmove(dst.data, src.data, src.n * ak_dtype_size(src.dtype));
        return AK_OK;
    }
    if (from == FPE_FMT_F32) {
        fpe_env env = ak_elem_env(r->mode, r->seed, r->stream, r->index);
        if (fpe_chop_f32_to_u16(&env, to, (const float *)src.data, (uint16_t *)dst.data, src.n,
                                NULL) != FPE_OK)
            return ak_fail(b, AK_EINVAL, "ak_cast", "fpe_chop_f32_to_u16 refused the %s cast",
                           ak_dtype_name(dst.dtype));
        return AK_OK;
    }
    if (to == FPE_FMT_F32) {
        ak_cpu_widen16(from, src.data, src.n, dst.data);
        return AK_OK;
    }
    if (from == FPE_FMT_F16)
        cast16(FPE_FMT_F16, FPE_FMT_BF16, dst.data, src.data, src.n, *r);
    else
        cast16(FPE_FMT_BF16, FPE_FMT_F16, dst.data, src.data, src.n, *r);
    return AK_OK;
}
