/* cuda/cast.cu: casts on the GPU, one thread per element through the
 * element code of elem/cast.h (the cpu backend's functions). */
#include "cuda_backend.h"
#include "elem/cast.h"

/* Element i of dst = src[i] cast from FROM to TO, with random index r.index + i. */
template <int FROM, int TO, typename S, typename D>
__global__ void cast_kernel(D *dst, const S *src, size_t n, ak_rounding r)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride)
        dst[i] = (D)ak_cast_k((fpe_format_id)FROM, (fpe_format_id)TO, r, i, src[i]);
}

template <int FROM, int TO, typename S, typename D>
static int launch_cast(ak_backend *b, ak_tensor dst, ak_tensor src, const ak_rounding *r)
{
    const unsigned grid = ak_grid(b, src.n, AK_CUDA_BLOCK);
    cast_kernel<FROM, TO, S, D>
        <<<grid, AK_CUDA_BLOCK, 0, ak_stream(b)>>>((D *)dst.data, (const S *)src.data, src.n, *r);
    AK_CUDA_LAUNCHED(b, "ak_cast", "cast_kernel");
    return AK_OK;
}

/* fp16/bf16 -> fp32, four elements per thread (8-byte loads, 16-byte
 * stores), each as ak_cuda_widen16: widening is exact, so the rounding
 * mode does not matter. */
template <int FROM> __global__ void widen_kernel(uint32_t *dst, const uint16_t *src, size_t n)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x,
                 first = blockIdx.x * (size_t)blockDim.x + threadIdx.x, n4 = n / 4;
    for (size_t q = first; q < n4; q += stride) {
        const uint2 v = ((const uint2 *)src)[q];
        uint4 w;
        w.x = ak_cuda_widen16<FROM>((uint16_t)v.x);
        w.y = ak_cuda_widen16<FROM>((uint16_t)(v.x >> 16));
        w.z = ak_cuda_widen16<FROM>((uint16_t)v.y);
        w.w = ak_cuda_widen16<FROM>((uint16_t)(v.y >> 16));
        ((uint4 *)dst)[q] = w;
    }
    for (size_t i = 4 * n4 + first; i < n; i += stride)
        dst[i] = ak_cuda_widen16<FROM>(src[i]);
}

template <int FROM>
static int launch_widen(ak_backend *b, ak_tensor dst, ak_tensor src, const ak_rounding *r)
{
    if ((uintptr_t)dst.data % 16 != 0 || (uintptr_t)src.data % 8 != 0)
        return launch_cast<FROM, AK_F32, uint16_t, uint32_t>(b, dst, src, r);
    const unsigned grid = ak_grid(b, (src.n + 3) / 4, AK_CUDA_BLOCK);
    widen_kernel<FROM><<<grid, AK_CUDA_BLOCK, 0, ak_stream(b)>>>((uint32_t *)dst.data,
                                                                 (const uint16_t *)src.data, src.n);
    AK_CUDA_LAUNCHED(b, "ak_cast", "widen_kernel");
    return AK_OK;
}

extern "C" int ak_cuda_cast(ak_backend *b, ak_tensor dst, ak_tensor src, const ak_rounding *r)
{
    if (dst.dtype == src.dtype) {
        AK_CUDA_TRY(b, "ak_cast",
                    cudaMemcpyAsync(dst.data, src.data, src.n * ak_dtype_size(src.dtype),
                                    cudaMemcpyDeviceToDevice, ak_stream(b)));
        return AK_OK;
    }
    switch (src.dtype) {
    case AK_F32:
        if (dst.dtype == AK_F16)
            return launch_cast<AK_F32, AK_F16, uint32_t, uint16_t>(b, dst, src, r);
        return launch_cast<AK_F32, AK_BF16, uint32_t, uint16_t>(b, dst, src, r);
    case AK_F16:
        if (dst.dtype == AK_F32) return launch_widen<AK_F16>(b, dst, src, r);
        return launch_cast<AK_F16, AK_BF16, uint16_t, uint16_t>(b, dst, src, r);
    case AK_BF16:
        if (dst.dtype == AK_F32) return launch_widen<AK_BF16>(b, dst, src, r);
        return launch_cast<AK_BF16, AK_F16, uint16_t, uint16_t>(b, dst, src, r);
    }
    return ak_fail(b, AK_EUNSUPPORTED, "ak_cast", "%s -> %s", ak_dtype_name(src.dtype),
                   ak_dtype_name(dst.dtype));
}
