/* cpu/layernorm.c: LayerNorm forward and backward (the reference), through
 * elem/norm.h: a row's sums in AK_NORM_LANES double lanes (column k to lane
 * k mod lanes), then the lanes' tree, as the cuda backend's threads add
 * them; dgamma and dbeta summed over rows in row order. */
#include <stdlib.h>

#include "backend.h"
#include "elem/norm.h"

static void zero_lanes(double *acc)
{
    for (unsigned t = 0; t < AK_NORM_LANES; t++)
        acc[t] = 0.0;
}

int ak_cpu_layernorm_forward(ak_backend *b, size_t rows, size_t cols, double eps, ak_tensor y,
                             ak_tensor x, ak_tensor gamma, ak_tensor beta, ak_tensor save_mean,
                             ak_tensor save_rstd)
{
    (void)b;
    const fpe_format_id fy = (fpe_format_id)y.dtype, fx = (fpe_format_id)x.dtype;
    double acc[AK_NORM_LANES];
    for (size_t r = 0; r < rows; r++) {
        const size_t base = r * cols;
        zero_lanes(acc);
        for (size_t j = 0; j < cols; j++)
            acc[j % AK_NORM_LANES] += ak_norm_load(fx, x.data, base + j);
        const double mean_d = ak_norm_tree(acc) / (double)cols;
        zero_lanes(acc);
        for (size_t j = 0; j < cols; j++) {
            const double d = ak_norm_load(fx, x.data, base + j) - mean_d;
            acc[j % AK_NORM_LANES] += d * d;
        }
        const float mean = ak_norm_f32(mean_d);
        const float rstd = ak_norm_invstd(ak_norm_tree(acc) / (double)cols, eps);
        if (save_mean.data) {
            ((float *)save_mean.data)[r] = mean;
            ((float *)save_rstd.data)[r] = rstd;
        }
        for (size_t j = 0; j < cols; j++) {
            const float g =
                gamma.data ? ak_avgpool_load((fpe_format_id)gamma.dtype, gamma.data, j) : 1.0f;
            const float be =
                beta.data ? ak_avgpool_load((fpe_format_id)beta.dtype, beta.data, j) : 0.0f;
            const float v = ak_norm_apply(ak_avgpool_load(fx, x.data, base + j), mean, rstd, g, be);
            ak_store_bits(fy, y.data, base + j, ak_avgpool_store(fy, v));
        }
    }
    return AK_OK;
}

/* dgamma[j] = S over rows, in order, of dy (x - mean) rstd; dbeta[j] = S dy. */
static int affine_grads(ak_backend *b, size_t rows, size_t cols, ak_tensor dgamma, ak_tensor dbeta,
                        ak_tensor dy, ak_tensor x, const float *mean, const float *rstd)
{
    const fpe_format_id fdy = (fpe_format_id)dy.dtype, fx = (fpe_format_id)x.dtype;
    double *sg = calloc(2 * cols, sizeof *sg);
    if (!sg)
        return ak_fail(b, AK_ENOMEM, "ak_layernorm_backward", "out of memory for %zu columns",
                       cols);
    double *sb = sg + cols;
    for (size_t r = 0; r < rows; r++)
        for (size_t j = 0; j < cols; j++) {
            const double g = ak_norm_load(fdy, dy.data, r * cols + j);
            sg[j] +=
                ak_norm_dgamma_term(g, ak_norm_load(fx, x.data, r * cols + j), mean[r], rstd[r]);
            sb[j] += g;
        }
    for (size_t j = 0; j < cols; j++) {
        if (dgamma.data)
            ak_store_bits((fpe_format_id)dgamma.dtype, dgamma.data, j,
                          ak_avgpool_store((fpe_format_id)dgamma.dtype, ak_norm_f32(sg[j])));
        if (dbeta.data)
            ak_store_bits((fpe_format_id)dbeta.dtype, dbeta.data, j,
                          ak_avgpool_store((fpe_format_id)dbeta.dtype, ak_norm_f32(sb[j])));
    }
    free(sg);
    return AK_OK;
}

int ak_cpu_layernorm_backward(ak_backend *b, size_t rows, size_t cols, ak_tensor dx,
                              ak_tensor dgamma, ak_tensor dbeta, ak_tensor dy, ak_tensor x,
                              ak_tensor gamma, ak_tensor save_mean, ak_tensor save_rstd)
{
    const fpe_format_id fdy = (fpe_format_id)dy.dtype, fx = (fpe_format_id)x.dtype,
                        fdx = (fpe_format_id)dx.dtype;
    const float *mean = (const float *)save_mean.data, *rstd = (const float *)save_rstd.data;
    double acc_g[AK_NORM_LANES], acc_gx[AK_NORM_LANES];
    for (size_t r = 0; dx.data && r < rows; r++) {
        const size_t base = r * cols;
        zero_lanes(acc_g);
        zero_lanes(acc_gx);
        for (size_t j = 0; j < cols; j++) {
            const double g = ak_norm_ln_g(fdy, dy.data, base + j, gamma, j);
            acc_g[j % AK_NORM_LANES] += g;
            acc_gx[j % AK_NORM_LANES] +=
                ak_norm_gxm(g, ak_norm_load(fx, x.data, base + j), mean[r]);
        }
        const double sum_g = ak_norm_tree(acc_g), sum_gx = ak_norm_tree(acc_gx);
        const ak_norm_coef coef = ak_norm_backward_coef(sum_g, sum_gx, cols, rstd[r]);
        for (size_t j = 0; j < cols; j++) {
            const float g = ak_norm_f32(ak_norm_ln_g(fdy, dy.data, base + j, gamma, j));
            const float v =
                ak_norm_dx(g, ak_avgpool_load(fx, x.data, base + j), mean[r], coef, rstd[r]);
            ak_store_bits(fdx, dx.data, base + j, ak_avgpool_store(fdx, v));
        }
    }
    if (!dgamma.data && !dbeta.data) return AK_OK;
    return affine_grads(b, rows, cols, dgamma, dbeta, dy, x, mean, rstd);
}
