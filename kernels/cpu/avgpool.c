/* cpu/avgpool.c: global average pooling forward and backward (the
 * reference), through elem/avgpool.h. */
#include "backend.h"
#include "elem/avgpool.h"

int ak_cpu_avgpool_forward(ak_backend *b, size_t planes, size_t hw, ak_tensor y, ak_tensor x)
{
    (void)b;
    const fpe_format_id fy = (fpe_format_id)y.dtype, fx = (fpe_format_id)x.dtype;
    for (size_t p = 0; p < planes; p++)
        ak_store_bits(fy, y.data, p, ak_avgpool_plane(fy, fx, x.data, p * hw, hw));
    return AK_OK;
}

int ak_cpu_avgpool_backward(ak_backend *b, size_t planes, size_t hw, ak_tensor dx, ak_tensor dy)
{
    (void)b;
    const fpe_format_id fdx = (fpe_format_id)dx.dtype, fdy = (fpe_format_id)dy.dtype;
    for (size_t p = 0; p < planes; p++) {
        const uint32_t g = ak_avgpool_backward_elem(fdx, ak_avgpool_load(fdy, dy.data, p), hw);
        for (size_t i = 0; i < hw; i++)
            ak_store_bits(fdx, dx.data, p * hw + i, g);
    }
    return AK_OK;
}
