/* cuda/add.cu: the residual add on the GPU, one element per thread of a
 * grid-stride loop, specialised by format as cuda/grad.cu's accumulate;
 * the element code is kernels/elem/add.h, the same as the cpu's. */
#include "cuda_backend.h"
#include "elem/add.h"

template <int F> __global__ void add_kernel(ak_tensor y, ak_tensor a, ak_tensor b)
{
    const fpe_format_id fy = AK_LAYER_FMT(F, y.dtype), fa = AK_LAYER_FMT(F, a.dtype),
                        fb = AK_LAYER_FMT(F, b.dtype);
    AK_LAYER_GRID_STRIDE(i, y.n)
    {
        const uint32_t va = ak_load_bits(fa, a.data, i), vb = ak_load_bits(fb, b.data, i);
        ak_store_bits(fy, y.data, i, ak_add_elem(fy, fa, fb, va, vb));
    }
}

extern "C" int ak_cuda_add(ak_backend *b, ak_tensor y, ak_tensor a, ak_tensor bb)
{
    const unsigned grid = ak_grid(b, y.n, AK_CUDA_BLOCK);
#define LAUNCH(F, unused) add_kernel<F><<<grid, AK_CUDA_BLOCK, 0, ak_stream(b)>>>(y, a, bb)
    AK_LAYER_SPECIALISE(ak_layer_common3(y.dtype, a.dtype, bb.dtype), LAUNCH, 0);
#undef LAUNCH
    AK_CUDA_LAUNCHED(b, "ak_add", "add_kernel");
    return AK_OK;
}
