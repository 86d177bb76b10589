/* cuda/avgpool.cu: global average pooling on the GPU.  Forward: one thread
 * per plane sums it in index order, as the cpu does (elem/avgpool.h), so
 * the two agree bit for bit.  Backward: one thread per element of dx. */
#include "cuda_backend.h"
#include "elem/avgpool.h"

__global__ void avgpool_forward_kernel(size_t planes, size_t hw, ak_tensor y, ak_tensor x)
{
    const fpe_format_id fy = (fpe_format_id)y.dtype, fx = (fpe_format_id)x.dtype;
    AK_LAYER_GRID_STRIDE(p, planes)
    ak_store_bits(fy, y.data, p, ak_avgpool_plane(fy, fx, x.data, p * hw, hw));
}

extern "C" int ak_cuda_avgpool_forward(ak_backend *b, size_t planes, size_t hw, ak_tensor y,
                                       ak_tensor x)
{
    const unsigned grid = ak_grid(b, planes, AK_CUDA_BLOCK);
    avgpool_forward_kernel<<<grid, AK_CUDA_BLOCK, 0, ak_stream(b)>>>(planes, hw, y, x);
    AK_CUDA_LAUNCHED(b, "ak_avgpool_forward", "avgpool_forward_kernel");
    return AK_OK;
}

__global__ void avgpool_backward_kernel(size_t hw, ak_tensor dx, ak_tensor dy)
{
    const fpe_format_id fdx = (fpe_format_id)dx.dtype, fdy = (fpe_format_id)dy.dtype;
    AK_LAYER_GRID_STRIDE(i, dx.n)
    ak_store_bits(fdx, dx.data, i,
                  ak_avgpool_backward_elem(fdx, ak_avgpool_load(fdy, dy.data, i / hw), hw));
}

extern "C" int ak_cuda_avgpool_backward(ak_backend *b, size_t planes, size_t hw, ak_tensor dx,
                                        ak_tensor dy)
{
    (void)planes;
    const unsigned grid = ak_grid(b, dx.n, AK_CUDA_BLOCK);
    avgpool_backward_kernel<<<grid, AK_CUDA_BLOCK, 0, ak_stream(b)>>>(hw, dx, dy);
    AK_CUDA_LAUNCHED(b, "ak_avgpool_backward", "avgpool_backward_kernel");
    return AK_OK;
}
