/* cuda/batchnorm.cu: BatchNorm2d on the GPU.  One block of AK_NORM_LANES
 * threads per channel: thread t adds the channel's elements k = t, t +
 * lanes, ... in double, the block adds the lanes as cpu/batchnorm.c does
 * (cuda/norm_block.cuh), every thread derives the same fp32 statistics
 * (elem/norm.h), then the block writes the channel's outputs.  So cpu and
 * cuda agree bit for bit. */
#include "norm_block.cuh"

/* Element k of channel ch of an (n, c, hw) tensor. */
__device__ inline size_t bn_index(const ak_batchnorm &a, size_t ch, size_t k)
{
    return ((k / a.hw) * a.c + ch) * a.hw + k % a.hw;
}

__global__ void batchnorm_forward_kernel(ak_batchnorm a, ak_tensor y, ak_tensor x, ak_tensor gamma,
                                         ak_tensor beta, ak_tensor running_mean,
                                         ak_tensor running_var, ak_tensor save_mean,
                                         ak_tensor save_invstd)
{
    __shared__ double acc[AK_NORM_LANES];
    const fpe_format_id fy = (fpe_format_id)y.dtype, fx = (fpe_format_id)x.dtype;
    const size_t m = a.n * a.hw;
    const unsigned t = threadIdx.x;
    float *rm = (float *)running_mean.data, *rv = (float *)running_var.data;
    for (size_t ch = blockIdx.x; ch < a.c; ch += gridDim.x) {
        float mean, invstd;
        if (a.training) {
            double s = 0.0;
            for (size_t k = t; k < m; k += AK_NORM_LANES)
                s += ak_norm_load(fx, x.data, bn_index(a, ch, k));
            const double mean_d = norm_block_sum(acc, s) / (double)m;
            s = 0.0;
            for (size_t k = t; k < m; k += AK_NORM_LANES) {
                const double d = ak_norm_load(fx, x.data, bn_index(a, ch, k)) - mean_d;
                s += d * d;
            }
            const double s2 = norm_block_sum(acc, s);
            mean = ak_norm_f32(mean_d);
            invstd = ak_norm_invstd(s2 / (double)m, a.eps);
            if (rm && t == 0) {
                rm[ch] = ak_norm_running(rm[ch], mean_d, a.momentum);
                rv[ch] = ak_norm_running(rv[ch], s2 / (double)(m - 1), a.momentum);
            }
        } else {
            mean = rm[ch];
            invstd = ak_norm_invstd(rv[ch], a.eps);
        }
        if (save_mean.data && t == 0) {
            ((float *)save_mean.data)[ch] = mean;
            ((float *)save_invstd.data)[ch] = invstd;
        }
        const float g =
            gamma.data ? ak_avgpool_load((fpe_format_id)gamma.dtype, gamma.data, ch) : 1.0f;
        const float be =
            beta.data ? ak_avgpool_load((fpe_format_id)beta.dtype, beta.data, ch) : 0.0f;
        for (size_t k = t; k < m; k += AK_NORM_LANES) {
            const size_t i = bn_index(a, ch, k);
            const float v = ak_norm_apply(ak_avgpool_load(fx, x.data, i), mean, invstd, g, be);
            ak_store_bits(fy, y.data, i, ak_avgpool_store(fy, v));
        }
    }
}

extern "C" int ak_cuda_batchnorm_forward(ak_backend *b, const ak_batchnorm *a, ak_tensor y,
                                         ak_tensor x, ak_tensor gamma, ak_tensor beta,
                                         ak_tensor running_mean, ak_tensor running_var,
                                         ak_tensor save_mean, ak_tensor save_invstd)
{
    batchnorm_forward_kernel<<<norm_grid(a->c), AK_NORM_LANES, 0, ak_stream(b)>>>(
        *a, y, x, gamma, beta, running_mean, running_var, save_mean, save_invstd);
    AK_CUDA_LAUNCHED(b, "ak_batchnorm_forward", "batchnorm_forward_kernel");
    return AK_OK;
}

__global__ void batchnorm_backward_kernel(ak_batchnorm a, ak_tensor dx, ak_tensor dgamma,
                                          ak_tensor dbeta, ak_tensor dy, ak_tensor x,
                                          ak_tensor gamma, ak_tensor save_mean,
                                          ak_tensor save_invstd)
{
    __shared__ double acc[AK_NORM_LANES];
    const fpe_format_id fdy = (fpe_format_id)dy.dtype, fx = (fpe_format_id)x.dtype,
                        fdx = (fpe_format_id)dx.dtype;
    const size_t m = a.n * a.hw;
    const unsigned t = threadIdx.x;
    for (size_t ch = blockIdx.x; ch < a.c; ch += gridDim.x) {
        const float mean = ((const float *)save_mean.data)[ch];
        const float invstd = ((const float *)save_invstd.data)[ch];
        double sg = 0.0, sgx = 0.0;
        for (size_t k = t; k < m; k += AK_NORM_LANES) {
            const size_t i = bn_index(a, ch, k);
            const double g = ak_norm_load(fdy, dy.data, i);
            sg += g;
            sgx += ak_norm_gxm(g, ak_norm_load(fx, x.data, i), mean);
        }
        const double sum_g = norm_block_sum(acc, sg);
        const double sum_gx = norm_block_sum(acc, sgx);
        if (t == 0 && dbeta.data)
            ak_store_bits((fpe_format_id)dbeta.dtype, dbeta.data, ch,
                          ak_avgpool_store((fpe_format_id)dbeta.dtype, ak_norm_f32(sum_g)));
        if (t == 0 && dgamma.data)
            ak_store_bits(
                (fpe_format_id)dgamma.dtype, dgamma.data, ch,
                ak_avgpool_store((fpe_format_id)dgamma.dtype, ak_norm_f32(sum_gx * invstd)));
        if (!dx.data) continue;
        const ak_norm_coef coef = ak_norm_backward_coef(sum_g, sum_gx, m, invstd);
        const float s = gamma.data
                            ? ak_norm_f32((double)invstd *
                                          ak_norm_load((fpe_format_id)gamma.dtype, gamma.data, ch))
                            : invstd;
        for (size_t k = t; k < m; k += AK_NORM_LANES) {
            const size_t i = bn_index(a, ch, k);
            const float v = ak_norm_dx(ak_avgpool_load(fdy, dy.data, i),
                                       ak_avgpool_load(fx, x.data, i), mean, coef, s);
            ak_store_bits(fdx, dx.data, i, ak_avgpool_store(fdx, v));
        }
    }
}

extern "C" int ak_cuda_batchnorm_backward(ak_backend *b, const ak_batchnorm *a, ak_tensor dx,
                                          ak_tensor dgamma, ak_tensor dbeta, ak_tensor dy,
                                          ak_tensor x, ak_tensor gamma, ak_tensor save_mean,
                                          ak_tensor save_invstd)
{
    batchnorm_backward_kernel<<<norm_grid(a->c), AK_NORM_LANES, 0, ak_stream(b)>>>(
        *a, dx, dgamma, dbeta, dy, x, gamma, save_mean, save_invstd);
    AK_CUDA_LAUNCHED(b, "ak_batchnorm_backward", "batchnorm_backward_kernel");
    return AK_OK;
}
