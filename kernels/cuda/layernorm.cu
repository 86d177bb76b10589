/* cuda/layernorm.cu: LayerNorm on the GPU.  One block of AK_NORM_LANES
 * threads per row: thread t adds columns t, t + lanes, ... in double, the
 * block adds the lanes as cpu/layernorm.c does (cuda/norm_block.cuh), then
 * writes the row.  dgamma and dbeta: one thread per column, over the rows
 * in order, as the cpu.  So cpu and cuda agree bit for bit. */
#include "norm_block.cuh"

__global__ void layernorm_forward_kernel(size_t rows, size_t cols, double eps, ak_tensor y,
                                         ak_tensor x, ak_tensor gamma, ak_tensor beta,
                                         ak_tensor save_mean, ak_tensor save_rstd)
{
    __shared__ double acc[AK_NORM_LANES];
    const fpe_format_id fy = (fpe_format_id)y.dtype, fx = (fpe_format_id)x.dtype;
    const unsigned t = threadIdx.x;
    for (size_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const size_t base = r * cols;
        double s = 0.0;
        for (size_t j = t; j < cols; j += AK_NORM_LANES)
            s += ak_norm_load(fx, x.data, base + j);
        const double mean_d = norm_block_sum(acc, s) / (double)cols;
        s = 0.0;
        for (size_t j = t; j < cols; j += AK_NORM_LANES) {
            const double d = ak_norm_load(fx, x.data, base + j) - mean_d;
            s += d * d;
        }
        const float mean = ak_norm_f32(mean_d);
        const float rstd = ak_norm_invstd(norm_block_sum(acc, s) / (double)cols, eps);
        if (save_mean.data && t == 0) {
            ((float *)save_mean.data)[r] = mean;
            ((float *)save_rstd.data)[r] = rstd;
        }
        for (size_t j = t; j < cols; j += AK_NORM_LANES) {
            const float g =
                gamma.data ? ak_avgpool_load((fpe_format_id)gamma.dtype, gamma.data, j) : 1.0f;
            const float be =
                beta.data ? ak_avgpool_load((fpe_format_id)beta.dtype, beta.data, j) : 0.0f;
            const float v = ak_norm_apply(ak_avgpool_load(fx, x.data, base + j), mean, rstd, g, be);
            ak_store_bits(fy, y.data, base + j, ak_avgpool_store(fy, v));
        }
    }
}

extern "C" int ak_cuda_layernorm_forward(ak_backend *b, size_t rows, size_t cols, double eps,
                                         ak_tensor y, ak_tensor x, ak_tensor gamma, ak_tensor beta,
                                         ak_tensor save_mean, ak_tensor save_rstd)
{
    layernorm_forward_kernel<<<norm_grid(rows), AK_NORM_LANES, 0, ak_stream(b)>>>(
        rows, cols, eps, y, x, gamma, beta, save_mean, save_rstd);
    AK_CUDA_LAUNCHED(b, "ak_layernorm_forward", "layernorm_forward_kernel");
    return AK_OK;
}

__global__ void layernorm_dx_kernel(size_t rows, size_t cols, ak_tensor dx, ak_tensor dy,
                                    ak_tensor x, ak_tensor gamma, ak_tensor save_mean,
                                    ak_tensor save_rstd)
{
    __shared__ double acc[AK_NORM_LANES];
    const fpe_format_id fdy = (fpe_format_id)dy.dtype, fx = (fpe_format_id)x.dtype,
                        fdx = (fpe_format_id)dx.dtype;
    const unsigned t = threadIdx.x;
    for (size_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const size_t base = r * cols;
        const float mean = ((const float *)save_mean.data)[r];
        const float rstd = ((const float *)save_rstd.data)[r];
        double sg = 0.0, sgx = 0.0;
        for (size_t j = t; j < cols; j += AK_NORM_LANES) {
            const double g = ak_norm_ln_g(fdy, dy.data, base + j, gamma, j);
            sg += g;
            sgx += ak_norm_gxm(g, ak_norm_load(fx, x.data, base + j), mean);
        }
        const double sum_g = norm_block_sum(acc, sg);
        const double sum_gx = norm_block_sum(acc, sgx);
        const ak_norm_coef coef = ak_norm_backward_coef(sum_g, sum_gx, cols, rstd);
        for (size_t j = t; j < cols; j += AK_NORM_LANES) {
            const float g = ak_norm_f32(ak_norm_ln_g(fdy, dy.data, base + j, gamma, j));
            const float v = ak_norm_dx(g, ak_avgpool_load(fx, x.data, base + j), mean, coef, rstd);
            ak_store_bits(fdx, dx.data, base + j, ak_avgpool_store(fdx, v));
        }
    }
}

__global__ void layernorm_affine_kernel(size_t rows, size_t cols, ak_tensor dgamma, ak_tensor dbeta,
                                        ak_tensor dy, ak_tensor x, ak_tensor save_mean,
                                        ak_tensor save_rstd)
{
    const fpe_format_id fdy = (fpe_format_id)dy.dtype, fx = (fpe_format_id)x.dtype;
    const float *mean = (const float *)save_mean.data, *rstd = (const float *)save_rstd.data;
    AK_LAYER_GRID_STRIDE(j, cols)
    {
        double sg = 0.0, sb = 0.0;
        for (size_t r = 0; r < rows; r++) {
            const double g = ak_norm_load(fdy, dy.data, r * cols + j);
            sg += ak_norm_dgamma_term(g, ak_norm_load(fx, x.data, r * cols + j), mean[r], rstd[r]);
            sb += g;
        }
        if (dgamma.data)
            ak_store_bits((fpe_format_id)dgamma.dtype, dgamma.data, j,
                          ak_avgpool_store((fpe_format_id)dgamma.dtype, ak_norm_f32(sg)));
        if (dbeta.data)
            ak_store_bits((fpe_format_id)dbeta.dtype, dbeta.data, j,
                          ak_avgpool_store((fpe_format_id)dbeta.dtype, ak_norm_f32(sb)));
    }
}

extern "C" int ak_cuda_layernorm_backward(ak_backend *b, size_t rows, size_t cols, ak_tensor dx,
                                          ak_tensor dgamma, ak_tensor dbeta, ak_tensor dy,
                                          ak_tensor x, ak_tensor gamma, ak_tensor save_mean,
                                          ak_tensor save_rstd)
{
    if (dx.data && rows > 0) {
        layernorm_dx_kernel<<<norm_grid(rows), AK_NORM_LANES, 0, ak_stream(b)>>>(
            rows, cols, dx, dy, x, gamma, save_mean, save_rstd);
        AK_CUDA_LAUNCHED(b, "ak_layernorm_backward", "layernorm_dx_kernel");
    }
    if (dgamma.data || dbeta.data) {
        layernorm_affine_kernel<<<ak_grid(b, cols, AK_CUDA_BLOCK), AK_CUDA_BLOCK, 0,
                                  ak_stream(b)>>>(rows, cols, dgamma, dbeta, dy, x, save_mean,
                                                  save_rstd);
        AK_CUDA_LAUNCHED(b, "ak_layernorm_backward", "layernorm_affine_kernel");
    }
    return AK_OK;
}
