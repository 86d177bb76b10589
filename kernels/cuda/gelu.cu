/* cuda/gelu.cu: GELU forward and backward on the GPU, one element per
 * thread of a grid-stride loop; the element code is kernels/elem/gelu.h,
 * the same as the cpu's. */
#include "cuda_backend.h"
#include "elem/gelu.h"

__global__ void gelu_kernel(int form, ak_tensor y, ak_tensor x)
{
    const fpe_format_id fy = (fpe_format_id)y.dtype, fx = (fpe_format_id)x.dtype;
    AK_LAYER_GRID_STRIDE(i, x.n)
    ak_store_bits(fy, y.data, i, ak_gelu_elem(fy, fx, form, ak_load_bits(fx, x.data, i)));
}

extern "C" int ak_cuda_gelu(ak_backend *b, ak_gelu_form form, ak_tensor y, ak_tensor x)
{
    const unsigned grid = ak_grid(b, x.n, AK_CUDA_BLOCK);
    gelu_kernel<<<grid, AK_CUDA_BLOCK, 0, ak_stream(b)>>>((int)form, y, x);
    AK_CUDA_LAUNCHED(b, "ak_gelu", "gelu_kernel");
    return AK_OK;
}

__global__ void gelu_backward_kernel(int form, ak_tensor dx, ak_tensor dy, ak_tensor x)
{
    const fpe_format_id fdx = (fpe_format_id)dx.dtype, fdy = (fpe_format_id)dy.dtype,
                        fx = (fpe_format_id)x.dtype;
    AK_LAYER_GRID_STRIDE(i, x.n)
    {
        const uint32_t g = ak_load_bits(fdy, dy.data, i), v = ak_load_bits(fx, x.data, i);
        ak_store_bits(fdx, dx.data, i, ak_gelu_backward_elem(fdx, fdy, fx, form, g, v));
    }
}

extern "C" int ak_cuda_gelu_backward(ak_backend *b, ak_gelu_form form, ak_tensor dx, ak_tensor dy,
                                     ak_tensor x)
{
    const unsigned grid = ak_grid(b, x.n, AK_CUDA_BLOCK);
    gelu_backward_kernel<<<grid, AK_CUDA_BLOCK, 0, ak_stream(b)>>>((int)form, dx, dy, x);
    AK_CUDA_LAUNCHED(b, "ak_gelu_backward", "gelu_backward_kernel");
    return AK_OK;
}
