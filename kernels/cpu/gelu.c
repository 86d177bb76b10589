/* cpu/gelu.c: GELU forward and backward (the reference), one element at a
 * time through elem/gelu.h. */
#include "backend.h"
#include "elem/gelu.h"

int ak_cpu_gelu(ak_backend *b, ak_gelu_form form, ak_tensor y, ak_tensor x)
{
    (void)b;
    const fpe_format_id fy = (fpe_format_id)y.dtype, fx = (fpe_format_id)x.dtype;
    for (size_t i = 0; i < x.n; i++)
        ak_store_bits(fy, y.data, i, ak_gelu_elem(fy, fx, (int)form, ak_load_bits(fx, x.data, i)));
    return AK_OK;
}

int ak_cpu_gelu_backward(ak_backend *b, ak_gelu_form form, ak_tensor dx, ak_tensor dy, ak_tensor x)
{
    (void)b;
    const fpe_format_id fdx = (fpe_format_id)dx.dtype, fdy = (fpe_format_id)dy.dtype,
                        fx = (fpe_format_id)x.dtype;
    for (size_t i = 0; i < x.n; i++) {
        const uint32_t g = ak_load_bits(fdy, dy.data, i), v = ak_load_bits(fx, x.data, i);
        ak_store_bits(fdx, dx.data, i, ak_gelu_backward_elem(fdx, fdy, fx, (int)form, g, v));
    }
    return AK_OK;
}
