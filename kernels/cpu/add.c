/* cpu/add.c: the residual add (the reference), a plain loop over
 * elem/add.h, specialised by format as cpu/grad.c's accumulate. */
#include "backend.h"
#include "elem/add.h"

/* One dtype combination (F a format constant, or AK_LAYER_ANY). */
FPE_INLINE void add_loop(int F, ak_tensor y, ak_tensor a, ak_tensor b)
{
    const fpe_format_id fy = AK_LAYER_FMT(F, y.dtype), fa = AK_LAYER_FMT(F, a.dtype),
                        fb = AK_LAYER_FMT(F, b.dtype);
    for (size_t i = 0; i < y.n; i++) {
        const uint32_t va = ak_load_bits(fa, a.data, i), vb = ak_load_bits(fb, b.data, i);
        ak_store_bits(fy, y.data, i, ak_add_elem(fy, fa, fb, va, vb));
    }
}

int ak_cpu_add(ak_backend *b, ak_tensor y, ak_tensor a, ak_tensor bb)
{
    (void)b;
#define LOOP(F, unused) add_loop(F, y, a, bb)
    AK_LAYER_SPECIALISE(ak_layer_common3(y.dtype, a.dtype, bb.dtype), LOOP, 0);
#undef LOOP
    return AK_OK;
}
