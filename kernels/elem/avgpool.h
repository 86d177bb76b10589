/* elem/avgpool.h: one plane of global average pooling, and one element of
 * its backward, host and device.
 *
 * cpu/avgpool.c and cuda/avgpool.cu run these same functions, in fp32 with
 * + and / only (IEEE on both, no contraction: CMakeLists.txt), so the two
 * backends agree bit for bit.  Elements are widened to fp32 exactly; a
 * result is rounded to fp32 by the arithmetic and converted once to the
 * output's format by the emulator, every NaN as the default NaN.
 */
#ifndef AMPSCOPE_KERNELS_ELEM_AVGPOOL_H
#define AMPSCOPE_KERNELS_ELEM_AVGPOOL_H

#include "layers.h"

/* Element i of a tensor of format f as an fp32 value (exact). */
FPE_INLINE float ak_avgpool_load(fpe_format_id f, const void *p, size_t i)
{
    return (float)ak_elem_value(f, ak_load_bits(f, p, i));
}

/* An fp32 value converted to f (NaN: the default NaN). */
FPE_INLINE uint32_t ak_avgpool_store(fpe_format_id f, float v)
{
    return ak_layer_convert(FPE_FMT_F32, f, ak_layer_from_f64(FPE_FMT_F32, (double)v));
}

/* The mean of x[base .. base + hw) written to fy: summed in fp32 in index
 * order, divided by hw (exact in fp32: hw <= 2^24) in fp32. */
FPE_INLINE uint32_t ak_avgpool_plane(fpe_format_id fy, fpe_format_id fx, const void *x, size_t base,
                                     size_t hw)
{
    float s = 0.0f;
    for (size_t i = 0; i < hw; i++)
        s += ak_avgpool_load(fx, x, base + i);
    return ak_avgpool_store(fy, s / (float)hw);
}

/* dy / hw in fp32, written to fdx. */
FPE_INLINE uint32_t ak_avgpool_backward_elem(fpe_format_id fdx, float dy, size_t hw)
{
    return ak_avgpool_store(fdx, dy / (float)hw);
}

#endif
