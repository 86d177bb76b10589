/* cuda/gemm.cu: ak_gemm through cublasGemmEx (kernels/gemm.c says what
 * both backends compute). */
#include <cuda_fp16.h>

#include "cuda_backend.h"
#include "elem/gemm.h"

/* k == 0 or alpha == 0: C = beta C with the cpu's element code. */
template <typename T>
__global__ void gemm_scale_c_kernel(T *c, size_t m, size_t n, size_t ldc, fpe_format_id cf,
                                    ak_gemm_scalars s)
{
    const size_t total = m * n;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        const size_t at = ak_gemm_c_index(i, n, ldc);
        c[at] = (T)ak_gemm_epilogue_k(&s, cf, false, 0.0, c[at]);
    }
}

static cudaDataType_t cuda_type(ak_dtype d)
{
    switch (d) {
    case AK_F16: return CUDA_R_16F;
    case AK_BF16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
    }
}

static cublasComputeType_t cublas_compute(ak_compute k)
{
    switch (k) {
    case AK_COMPUTE_16F: return CUBLAS_COMPUTE_16F;
    case AK_COMPUTE_32F_FAST_16F: return CUBLAS_COMPUTE_32F_FAST_16F;
    case AK_COMPUTE_32F_FAST_16BF: return CUBLAS_COMPUTE_32F_FAST_16BF;
    case AK_COMPUTE_32F_FAST_TF32: return CUBLAS_COMPUTE_32F_FAST_TF32;
    default: return CUBLAS_COMPUTE_32F;
    }
}

static __half half_of(uint32_t bits)
{
    __half_raw r;
    r.x = (unsigned short)bits;
    return __half(r);
}

extern "C" int ak_cuda_gemm(ak_backend *b, const ak_gemm_args *g)
{
    if (g->m == 0 || g->n == 0) return AK_OK; /* conv2d calls here directly */
    const ak_gemm_scalars s = ak_gemm_scalars_of(g->compute, g->alpha, g->beta);
    if (g->k == 0 || s.alpha == 0.0) {
        const unsigned grid = ak_grid(b, g->m * g->n, AK_CUDA_BLOCK);
        const fpe_format_id cf = (fpe_format_id)g->c.dtype;
        if (g->c.dtype == AK_F32)
            gemm_scale_c_kernel<uint32_t><<<grid, AK_CUDA_BLOCK, 0, ak_stream(b)>>>(
                (uint32_t *)g->c.data, g->m, g->n, g->ldc, cf, s);
        else
            gemm_scale_c_kernel<uint16_t><<<grid, AK_CUDA_BLOCK, 0, ak_stream(b)>>>(
                (uint16_t *)g->c.data, g->m, g->n, g->ldc, cf, s);
        AK_CUDA_LAUNCHED(b, "ak_gemm", "gemm_scale_c_kernel");
        return AK_OK;
    }
    cublasHandle_t h = ak_cuda_of(b)->blas;
    AK_CUBLAS_TRY(b, "ak_gemm", cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
    /* kernels.h promises accumulation in the compute type: no split-K
     * reductions in a 16-bit output type */
    AK_CUBLAS_TRY(
        b, "ak_gemm",
        cublasSetMathMode(h, (cublasMath_t)(CUBLAS_DEFAULT_MATH |
                                            CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
    const float alpha32 = g->alpha, beta32 = g->beta;
    const __half alpha16 = half_of(s.alpha_bits), beta16 = half_of(s.beta_bits);
    const bool half_scalars = g->compute == AK_COMPUTE_16F;
    const void *alpha = half_scalars ? (const void *)&alpha16 : (const void *)&alpha32;
    const void *beta = half_scalars ? (const void *)&beta16 : (const void *)&beta32;
    /* row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, and a
     * row-major matrix read column-major is its transpose: swap the operands */
    AK_CUBLAS_TRY(b, "ak_gemm",
                  cublasGemmEx(h, g->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                               g->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, (int)g->n, (int)g->m,
                               (int)g->k, alpha, g->b.data, cuda_type(g->b.dtype), (int)g->ldb,
                               g->a.data, cuda_type(g->a.dtype), (int)g->lda, beta, g->c.data,
                               cuda_type(g->c.dtype), (int)g->ldc, cublas_compute(g->compute),
                               CUBLAS_GEMM_DEFAULT));
    return AK_OK;
}

/* One ak_cuda_gemm per matrix, in order on the stream (kernels/gemm.c):
 * each the same cublasGemmEx call as a single GEMM of that matrix. */
extern "C" int ak_cuda_gemm_batched(ak_backend *b, const ak_gemm_args *g, size_t count,
                                    size_t stride_a, size_t stride_b, size_t stride_c)
{
    for (size_t i = 0; i < count; i++) {
        const ak_gemm_args one = ak_gemm_batch_item(g, i, stride_a, stride_b, stride_c);
        const int rc = ak_cuda_gemm(b, &one);
        if (rc) return rc;
    }
    return AK_OK;
}
