/* cpu/dropout.c: dropout (the reference), one element at a time through
 * elem/dropout.h; forward and backward are the same call. */
#include "backend.h"
#include "elem/dropout.h"

int ak_cpu_dropout(ak_backend *b, float p, uint64_t key, uint64_t offset, ak_tensor y, ak_tensor x)
{
    (void)b;
    const fpe_format_id fy = (fpe_format_id)y.dtype, fx = (fpe_format_id)x.dtype;
    const uint32_t scale = ak_dropout_scale(p);
    for (size_t i = 0; i < x.n; i++) {
        const bool kept = p == 0.0f || ak_dropout_kept(p, key, offset + i);
        const uint32_t v = ak_load_bits(fx, x.data, i);
        ak_store_bits(fy, y.data, i, ak_dropout_elem(fy, fx, p, scale, kept, v));
    }
    return AK_OK;
}
