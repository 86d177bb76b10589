/* cuda_backend.h: what the cuda backend's files share: the backend state,
 * error checks and the launch shape.  Included only by the .cu files of kernels/cuda/. */
#ifndef AMPSCOPE_KERNELS_CUDA_BACKEND_H
#define AMPSCOPE_KERNELS_CUDA_BACKEND_H

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "backend.h"
#include "fpe_ops.h"

/* The cuda backend's state (b->impl): every operation is queued on one
 * stream, so the operations of a step run in order without host waits. */
typedef struct ak_cuda {
    int device;
    int sm_count;
    cudaStream_t stream;
    cublasHandle_t blas;
    cublasLtHandle_t lt;
    void *workspace; /* cuBLAS workspace */
    size_t workspace_bytes;
} ak_cuda;

static inline ak_cuda *ak_cuda_of(ak_backend *b) { return (ak_cuda *)b->impl; }
static inline cudaStream_t ak_stream(ak_backend *b) { return ak_cuda_of(b)->stream; }

/* Returns AK_EDEVICE from the enclosing function, naming the public call and
 * the CUDA call, when expr does not give cudaSuccess. */
#define AK_CUDA_TRY(b, call, expr)                                                                 \
    do {                                                                                           \
        cudaError_t ak_e_ = (expr);                                                                \
        if (ak_e_ != cudaSuccess)                                                                  \
            return ak_fail((b), AK_EDEVICE, (call), "%s: %s", #expr, cudaGetErrorString(ak_e_));   \
    } while (0)

/* After a kernel launch: a bad launch configuration or an earlier
 * asynchronous error. */
#define AK_CUDA_LAUNCHED(b, call, kernel_name)                                                     \
    do {                                                                                           \
        cudaError_t ak_e_ = cudaGetLastError();                                                    \
        if (ak_e_ != cudaSuccess)                                                                  \
            return ak_fail((b), AK_EDEVICE, (call), "launching %s: %s", (kernel_name),             \
                           cudaGetErrorString(ak_e_));                                             \
    } while (0)

extern "C" const char *ak_cublas_status_name(cublasStatus_t s);

#define AK_CUBLAS_TRY(b, call, expr)                                                               \
    do {                                                                                           \
        cublasStatus_t ak_s_ = (expr);                                                             \
        if (ak_s_ != CUBLAS_STATUS_SUCCESS)                                                        \
            return ak_fail((b), AK_EDEVICE, (call), "%s: %s", #expr,                               \
                           ak_cublas_status_name(ak_s_));                                          \
    } while (0)

/* Threads per block of the elementwise kernels, and a grid for n elements
 * processed by grid-stride loops: enough blocks to fill the device, no more. */
#define AK_CUDA_BLOCK 256
static inline unsigned ak_grid(ak_backend *b, size_t n, unsigned block)
{
    size_t blocks = (n + block - 1) / block;
    const size_t cap = (size_t)ak_cuda_of(b)->sm_count * 16;
    if (blocks > cap) blocks = cap;
    if (blocks == 0) blocks = 1;
    return (unsigned)blocks;
}

/* fp16/bf16 bits (FROM) -> fp32 bits, as the emulator widens them under the
 * x86 NaN rules the kernels use (fpe_convert_k): the hardware's cvt.f32.f16
 * for every non-NaN fp16 input (equal to the emulator's over all 2^16 on an
 * H100, docs/GPU_NUMERICS.md), a shift for bf16, the emulator for NaNs
 * (it keeps their payloads, quieted).  Widening is exact: no rounding mode. */
template <int FROM> __device__ inline uint32_t ak_cuda_widen16(uint16_t h)
{
    const bool nan = FROM == AK_F16 ? (h & 0x7C00u) == 0x7C00u && (h & 0x3FFu)
                                    : (h & 0x7F80u) == 0x7F80u && (h & 0x7Fu);
    if (nan) {
        fpe_env env = fpe_env_default();
        return fpe_convert_k((fpe_format_id)FROM, FPE_FMT_F32, &env, h);
    }
    if (FROM == AK_F16) return __float_as_uint(__half2float(__ushort_as_half(h)));
    return (uint32_t)h << 16;
}

#endif
