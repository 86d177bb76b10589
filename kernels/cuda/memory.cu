/* cuda/memory.cu: device memory, copies on the backend's stream, fill. */
#include "cuda_backend.h"
#include "fpe_ops.h"

extern "C" int ak_cuda_alloc(ak_backend *b, size_t bytes, void **ptr)
{
    cudaError_t e = cudaMalloc(ptr, bytes); /* 256-byte aligned */
    if (e != cudaSuccess) {
        *ptr = NULL;
        return ak_fail(b, e == cudaErrorMemoryAllocation ? AK_ENOMEM : AK_EDEVICE, "ak_alloc",
                       "cudaMalloc(%zu bytes): %s", bytes, cudaGetErrorString(e));
    }
    return AK_OK;
}

extern "C" int ak_cuda_free(ak_backend *b, void *ptr)
{
    /* the memory may still be in use by queued work */
    AK_CUDA_TRY(b, "ak_free", cudaStreamSynchronize(ak_stream(b)));
    AK_CUDA_TRY(b, "ak_free", cudaFree(ptr));
    return AK_OK;
}

extern "C" int ak_cuda_to_device(ak_backend *b, void *dst, const void *src, size_t bytes)
{
    /* synchronous with respect to the host buffer: it may be reused at once */
    AK_CUDA_TRY(b, "ak_to_device",
                cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, ak_stream(b)));
    AK_CUDA_TRY(b, "ak_to_device", cudaStreamSynchronize(ak_stream(b)));
    return AK_OK;
}

extern "C" int ak_cuda_to_host(ak_backend *b, void *dst, const void *src, size_t bytes)
{
    AK_CUDA_TRY(b, "ak_to_host",
                cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, ak_stream(b)));
    AK_CUDA_TRY(b, "ak_to_host", cudaStreamSynchronize(ak_stream(b)));
    return AK_OK;
}

extern "C" int ak_cuda_copy(ak_backend *b, void *dst, const void *src, size_t bytes)
{
    AK_CUDA_TRY(b, "ak_copy",
                cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, ak_stream(b)));
    return AK_OK;
}

extern "C" int ak_cuda_zero(ak_backend *b, void *ptr, size_t bytes)
{
    AK_CUDA_TRY(b, "ak_zero", cudaMemsetAsync(ptr, 0, bytes, ak_stream(b)));
    return AK_OK;
}

extern "C" int ak_cuda_sync(ak_backend *b)
{
    AK_CUDA_TRY(b, "ak_sync", cudaStreamSynchronize(ak_stream(b)));
    return AK_OK;
}

template <typename T> __global__ void fill_kernel(T *p, size_t n, T bits)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = bits;
}

extern "C" int ak_cuda_fill(ak_backend *b, ak_tensor t, double value)
{
    fpe_env env = fpe_env_default();
    const uint32_t bits =
        fpe_from_f64_k((fpe_format_id)t.dtype, &env, value); /* rounded on the host */
    const unsigned grid = ak_grid(b, t.n, AK_CUDA_BLOCK);
    if (t.dtype == AK_F32)
        fill_kernel<uint32_t>
            <<<grid, AK_CUDA_BLOCK, 0, ak_stream(b)>>>((uint32_t *)t.data, t.n, bits);
    else
        fill_kernel<uint16_t>
            <<<grid, AK_CUDA_BLOCK, 0, ak_stream(b)>>>((uint16_t *)t.data, t.n, (uint16_t)bits);
    AK_CUDA_LAUNCHED(b, "ak_fill", "fill_kernel");
    return AK_OK;
}
