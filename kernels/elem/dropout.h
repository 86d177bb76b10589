/* elem/dropout.h: dropout's mask, scale and element, host and device.
 *
 * Element i of a call keyed (key, offset) draws the 32-bit Philox4x32-10
 * word bits = fpe_random_bits(key, AK_DROPOUT_STREAM, offset + i) (the
 * emulator's generator, emulate/philox.h, as stochastic rounding draws it);
 * its uniform is u = bits / 2^32 in [0, 1) (exact: 0, 2^-32, ..., 1 - 2^-32)
 * and the element is kept when u >= p, compared exactly in double (p is an
 * fp32 value, bits * 2^-32 is exact).  So an element is kept with
 * probability 1 - ceil(p 2^32) / 2^32, within 2^-32 of 1 - p.
 *
 * The value is PyTorch's x * mask * scale (aten/src/ATen/native/Dropout.cpp,
 * native_dropout: input.mul(mask).mul_(scale) with double scale = 1 / (1 -
 * p); the fused CUDA kernel computes src * mask * scale in float): scale is
 * 1 / (1 - p) in double rounded to fp32; t = x * mask (1 or 0) in fp32,
 * then t * scale in fp32 (each product exact in double, rounded once to
 * fp32 to nearest even), then converted to the output's format.  So a
 * dropped element is x * 0: +0 for positive x, -0 for negative x, NaN for
 * an infinite or NaN x (inf * 0 the default NaN, a NaN quieted), and a kept
 * one x * scale.  p == 0 copies x (converted when the formats differ; the
 * bits unchanged when they agree, signaling NaNs included).
 */
#ifndef AMPSCOPE_KERNELS_ELEM_DROPOUT_H
#define AMPSCOPE_KERNELS_ELEM_DROPOUT_H

#include "kernels.h"
#include "layers.h"
#include "philox.h"

/* AK_DROPOUT_STREAM (kernels.h), the Philox counter word 2 of the draws, is
 * 'DROP' in ASCII: apart from the streams stochastic rounding uses, so a run
 * keying both with its seed does not drop elements by the bits that round
 * its updates. */

/* Whether element i (offset + i) is kept at drop probability p. */
FPE_INLINE bool ak_dropout_kept(float p, uint64_t key, uint64_t index)
{
    const uint32_t bits = fpe_random_bits_inline(key, AK_DROPOUT_STREAM, index);
    return (double)bits * 0x1p-32 >= (double)p;
}

/* 1 / (1 - p) in double, rounded to fp32 (bits). */
FPE_INLINE uint32_t ak_dropout_scale(float p)
{
    return ak_layer_from_f64(FPE_FMT_F32, 1.0 / (1.0 - (double)p));
}

/* y = x * mask * scale (x of format fx, scale fp32 bits), written to fy. */
FPE_INLINE uint32_t ak_dropout_elem(fpe_format_id fy, fpe_format_id fx, float p, uint32_t scale,
                                    bool kept, uint32_t x)
{
    if (p == 0.0f) return ak_layer_convert(fx, fy, x);
    fpe_env env = fpe_env_default();
    const uint32_t t = ak_round_product(FPE_FMT_F32, &env, ak_elem_value(fx, x), kept ? 1.0 : 0.0);
    const uint32_t r = ak_round_product(FPE_FMT_F32, &env, ak_elem_value(FPE_FMT_F32, t),
                                        ak_elem_value(FPE_FMT_F32, scale));
    return ak_layer_convert(FPE_FMT_F32, fy, r);
}

#endif
