/* elem/cast.h: the element math of ak_cast, host and device (the scaling of
 * ak_scale and ak_unscale_check is elem/unscale.h).
 *
 * Both backends call these same functions per element, so cpu and cuda give
 * the same bits.  The one exception is the cpu's fp32 -> fp16/bf16 cast,
 * which runs the emulator's array routine (fpe_chop_f32_to_u16): it rounds
 * every element exactly as fpe_convert_k does, only faster.
 */
#ifndef AMPSCOPE_KERNELS_ELEM_CAST_H
#define AMPSCOPE_KERNELS_ELEM_CAST_H

#include "kernels.h"
#include "round.h"

/* ---- casts ------------------------------------------------------------------ */
/* fp16/bf16 pattern -> fp32 pattern, exactly; equal to fpe_convert_k(from,
 * FPE_FMT_F32, env, x) in any mode (a NaN is quieted, its payload kept). */
FPE_INLINE uint32_t ak_widen16_k(fpe_format_id from, uint32_t x)
{
    /* every case computed and one selected, so that loops vectorize;
     * tests/kernels/test_cast.c checks all 2^16 patterns against the
     * emulator's fpe_f16_to_f32 and fpe_bf16_to_f32 */
    if (from == FPE_FMT_BF16) {
        const uint32_t w = x << 16;
        return (x & 0x7FFFu) > 0x7F80u ? w | 0x00400000u : w;
    }
    const uint32_t sign = (x & 0x8000u) << 16, e = x & 0x7C00u, m = x & 0x03FFu;
    const uint32_t t = (x & 0x7FFFu) << 13;
    /* normal: rebias the exponent from 15 to 127 */
    const uint32_t normal = t + ((uint32_t)(127 - 15) << 23);
    /* subnormal or zero: m 2^-24 is (1 + m 2^-10) 2^-14 - 2^-14, an exact
     * difference of two normal fp32 values */
    const uint32_t sub = ak_f32_bits(ak_f32_from_bits(t + ((uint32_t)(127 - 14) << 23)) - 0x1p-14f);
    /* infinity, or a NaN with the quiet bit set */
    const uint32_t special = 0x7F800000u | t | (m ? 0x00400000u : 0u);
    return sign | (e == 0 ? sub : e == 0x7C00u ? special : normal);
}

/* Element i of ak_cast(from -> to) rounded as r says (from != to):
 * fpe_<from>_to_<to> with sr_index r.index + i. */
FPE_INLINE uint32_t ak_cast_k(fpe_format_id from, fpe_format_id to, ak_rounding r, uint64_t i,
                              uint32_t x)
{
    if (to == FPE_FMT_F32) return ak_widen16_k(from, x);
    fpe_env env = ak_elem_env(r.mode, r.seed, r.stream, r.index + i);
    return fpe_convert_k(from, to, &env, x);
}

#endif
