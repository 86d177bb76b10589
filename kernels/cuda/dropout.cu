/* cuda/dropout.cu: dropout on the GPU, one element per thread of a
 * grid-stride loop; the mask's draw and the element code are
 * kernels/elem/dropout.h, the same as the cpu's. */
#include "cuda_backend.h"
#include "elem/dropout.h"

__global__ void dropout_kernel(float p, uint32_t scale, uint64_t key, uint64_t offset, ak_tensor y,
                               ak_tensor x)
{
    const fpe_format_id fy = (fpe_format_id)y.dtype, fx = (fpe_format_id)x.dtype;
    AK_LAYER_GRID_STRIDE(i, x.n)
    {
        const bool kept = p == 0.0f || ak_dropout_kept(p, key, offset + i);
        const uint32_t v = ak_load_bits(fx, x.data, i);
        ak_store_bits(fy, y.data, i, ak_dropout_elem(fy, fx, p, scale, kept, v));
    }
}

extern "C" int ak_cuda_dropout(ak_backend *b, float p, uint64_t key, uint64_t offset, ak_tensor y,
                               ak_tensor x)
{
    const unsigned grid = ak_grid(b, x.n, AK_CUDA_BLOCK);
    dropout_kernel<<<grid, AK_CUDA_BLOCK, 0, ak_stream(b)>>>(p, ak_dropout_scale(p), key, offset, y,
                                                             x);
    AK_CUDA_LAUNCHED(b, "ak_dropout_forward/ak_dropout_backward", "dropout_kernel");
    return AK_OK;
}
