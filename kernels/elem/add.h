/* elem/add.h: the mixed-precision sum of two elements, host and device:
 * a + b (formats fa, fb), the exact sum rounded once to fy, to nearest even.
 *
 * ak_add (the residual add) runs it element by element, ak_accumulate
 * (elem/grad.h) is it with the output as the second operand, and the
 * embedding's backward (elem/embedding.h) adds each token's gradient to its
 * running sum with it; cpu and cuda call the same function, so they agree
 * bit for bit.
 */
#ifndef AMPSCOPE_KERNELS_ELEM_ADD_H
#define AMPSCOPE_KERNELS_ELEM_ADD_H

#include "layers.h"

/* a + b written to fy.  NaNs as ak_round_sum: the first NaN operand, a
 * before b, quieted (a signaling NaN raises invalid); inf - inf the default
 * NaN; an exact zero sum +0 unless both are -0. */
FPE_INLINE uint32_t ak_add_elem(fpe_format_id fy, fpe_format_id fa, fpe_format_id fb, uint32_t a,
                                uint32_t b)
{
    if (fy == FPE_FMT_F32 && fa == FPE_FMT_F32 && fb == FPE_FMT_F32) {
        /* the hardware's fp32 add is the correctly rounded sum (no FTZ on
         * either backend); only its NaNs are the FPU's own */
        const float s = ak_f32_from_bits(a) + ak_f32_from_bits(b);
        if (s == s) return ak_f32_bits(s);
    }
    fpe_env env = fpe_env_default();
    return ak_round_sum(fy, &env, ak_elem_value(fa, a), ak_elem_value(fb, b));
}

#endif
