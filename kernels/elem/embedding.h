/* elem/embedding.h: the embedding lookup and its accumulating backward,
 * element by element, host and device.
 *
 * A token's id is an fp32 element; it names a row when it is an integer in
 * [0, vocab) (ak_embedding_row).  The forward copies the row converted to
 * y's format.  The backward adds, for each (row v, column c), the gradients
 * dy[t][c] of the tokens t with id v in token order into a running sum held
 * in the accumulation format (ak_add_elem, rounded after every addition),
 * starting from +0, and converts the sum once to dweight's format: cpu and
 * cuda make the same additions in the same order, so they agree bit for bit.
 */
#ifndef AMPSCOPE_KERNELS_ELEM_EMBEDDING_H
#define AMPSCOPE_KERNELS_ELEM_EMBEDDING_H

#include "add.h"

/* The row that id (fp32 bits) names: true with *row set when the id is an
 * integer in [0, vocab) (-0 names row 0); false for a fraction, a NaN, an
 * infinity or a value out of range. */
FPE_INLINE bool ak_embedding_row(uint32_t id_bits, size_t vocab, size_t *row)
{
    const double v = (double)ak_f32_from_bits(id_bits);
    if (!(v >= 0.0 && v < (double)vocab)) return false; /* NaN fails too */
    const size_t r = (size_t)v;
    *row = r;
    return (double)r == v;
}

/* y[t][c] from weight element w (format fw), written to fy: the same bits
 * when the formats agree, else converted to nearest even. */
FPE_INLINE uint32_t ak_embedding_elem(fpe_format_id fy, fpe_format_id fw, uint32_t w)
{
    return ak_layer_convert(fw, fy, w);
}

/* The running sum s (format fa) plus a token's gradient g (format fdy),
 * rounded to fa; of two NaNs g's wins (ak_accumulate's order). */
FPE_INLINE uint32_t ak_embedding_acc(fpe_format_id fa, fpe_format_id fdy, uint32_t s, uint32_t g)
{
    return ak_add_elem(fa, fdy, fa, g, s);
}

#endif
