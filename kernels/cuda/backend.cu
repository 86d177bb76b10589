/* cuda/backend.cu: opening the cuda backend (device, stream, cuBLAS) and its
 * op table. */
#include <cstdio>
#include <cstdlib>

#include "cuda_backend.h"

#define AK_OP_ENTRY(name, params) ak_cuda_##name,
extern "C" const ak_ops ak_cuda_ops = {AK_OPS(AK_OP_ENTRY)};
#undef AK_OP_ENTRY

extern "C" const char *ak_cublas_status_name(cublasStatus_t s)
{
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: return "unknown cuBLAS status";
    }
}

static void release(ak_cuda *c)
{
    if (!c) return;
    if (c->workspace) cudaFree(c->workspace);
    if (c->lt) cublasLtDestroy(c->lt);
    if (c->blas) cublasDestroy(c->blas);
    if (c->stream) cudaStreamDestroy(c->stream);
    free(c);
}

extern "C" int ak_cuda_open(ak_backend *b, char *why, size_t why_len)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        snprintf(why, why_len, "this machine has no CUDA device (cudaGetDeviceCount: %s)",
                 e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        return AK_ENODEV;
    }
    ak_cuda *c = (ak_cuda *)calloc(1, sizeof *c);
    if (!c) {
        snprintf(why, why_len, "out of memory");
        return AK_ENOMEM;
    }
    c->device = 0;
    cudaDeviceProp prop;
    const char *step = "cudaSetDevice";
    if ((e = cudaSetDevice(0)) != cudaSuccess) goto cuda_fail;
    step = "cudaGetDeviceProperties";
    if ((e = cudaGetDeviceProperties(&prop, 0)) != cudaSuccess) goto cuda_fail;
    snprintf(b->device, sizeof b->device, "%.127s", prop.name); /* device[128] */
    c->sm_count = prop.multiProcessorCount > 0 ? prop.multiProcessorCount : 1;
    step = "cudaStreamCreateWithFlags";
    if ((e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking)) != cudaSuccess)
        goto cuda_fail;
    c->workspace_bytes = (size_t)32 << 20;
    step = "cudaMalloc (cuBLAS workspace)";
    if ((e = cudaMalloc(&c->workspace, c->workspace_bytes)) != cudaSuccess) goto cuda_fail;
    {
        cublasStatus_t s = cublasCreate(&c->blas);
        if (s == CUBLAS_STATUS_SUCCESS) s = cublasSetStream(c->blas, c->stream);
        if (s == CUBLAS_STATUS_SUCCESS)
            s = cublasSetWorkspace(c->blas, c->workspace, c->workspace_bytes);
        if (s == CUBLAS_STATUS_SUCCESS) s = cublasLtCreate(&c->lt);
        if (s != CUBLAS_STATUS_SUCCESS) {
            snprintf(why, why_len, "cuBLAS initialisation failed: %s", ak_cublas_status_name(s));
            release(c);
            return AK_EDEVICE;
        }
    }
    b->impl = c;
    return AK_OK;
cuda_fail:
    snprintf(why, why_len, "%s: %s", step, cudaGetErrorString(e));
    release(c);
    return AK_EDEVICE;
}

extern "C" void ak_cuda_close(ak_backend *b)
{
    ak_cuda *c = ak_cuda_of(b);
    if (c && c->stream) cudaStreamSynchronize(c->stream);
    release(c);
    b->impl = NULL;
}
