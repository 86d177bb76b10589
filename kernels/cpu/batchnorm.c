/* cpu/batchnorm.c: BatchNorm2d forward and backward (the reference), through
 * elem/norm.h: a channel's sums in AK_NORM_LANES double lanes (element k =
 * batch * hw + pixel to lane k mod lanes), then the lanes' tree, as the cuda
 * backend's threads add them. */
#include "backend.h"
#include "elem/norm.h"

/* x's channel ch, element k of it at ((k / hw) c + ch) hw + k mod hw. */
#define BN_FOR_CHANNEL(a, ch, k, i)                                                                \
    for (size_t bn_n_ = 0, k = 0; bn_n_ < (a)->n; bn_n_++)                                         \
        for (size_t bn_p_ = 0, i = (bn_n_ * (a)->c + (ch)) * (a)->hw; bn_p_ < (a)->hw;             \
             bn_p_++, i++, k++)

int ak_cpu_batchnorm_forward(ak_backend *b, const ak_batchnorm *a, ak_tensor y, ak_tensor x,
                             ak_tensor gamma, ak_tensor beta, ak_tensor running_mean,
                             ak_tensor running_var, ak_tensor save_mean, ak_tensor save_invstd)
{
    (void)b;
    const fpe_format_id fy = (fpe_format_id)y.dtype, fx = (fpe_format_id)x.dtype;
    const size_t m = a->n * a->hw;
    float *rm = (float *)running_mean.data, *rv = (float *)running_var.data;
    double acc[AK_NORM_LANES];
    for (size_t ch = 0; ch < a->c; ch++) {
        float mean, invstd;
        if (a->training) {
            for (unsigned t = 0; t < AK_NORM_LANES; t++)
                acc[t] = 0.0;
            BN_FOR_CHANNEL(a, ch, k, i) acc[k % AK_NORM_LANES] += ak_norm_load(fx, x.data, i);
            const double mean_d = ak_norm_tree(acc) / (double)m;
            for (unsigned t = 0; t < AK_NORM_LANES; t++)
                acc[t] = 0.0;
            BN_FOR_CHANNEL(a, ch, k, i)
            {
                const double d = ak_norm_load(fx, x.data, i) - mean_d;
                acc[k % AK_NORM_LANES] += d * d;
            }
            const double s2 = ak_norm_tree(acc);
            mean = ak_norm_f32(mean_d);
            invstd = ak_norm_invstd(s2 / (double)m, a->eps);
            if (rm) {
                rm[ch] = ak_norm_running(rm[ch], mean_d, a->momentum);
                rv[ch] = ak_norm_running(rv[ch], s2 / (double)(m - 1), a->momentum);
            }
        } else {
            mean = rm[ch];
            invstd = ak_norm_invstd(rv[ch], a->eps);
        }
        if (save_mean.data) {
            ((float *)save_mean.data)[ch] = mean;
            ((float *)save_invstd.data)[ch] = invstd;
        }
        const float g =
            gamma.data ? ak_avgpool_load((fpe_format_id)gamma.dtype, gamma.data, ch) : 1.0f;
        const float be =
            beta.data ? ak_avgpool_load((fpe_format_id)beta.dtype, beta.data, ch) : 0.0f;
        BN_FOR_CHANNEL(a, ch, k, i)
        {
            (void)k;
            const float v = ak_norm_apply(ak_avgpool_load(fx, x.data, i), mean, invstd, g, be);
            ak_store_bits(fy, y.data, i, ak_avgpool_store(fy, v));
        }
    }
    return AK_OK;
}

int ak_cpu_batchnorm_backward(ak_backend *b, const ak_batchnorm *a, ak_tensor dx, ak_tensor dgamma,
                              ak_tensor dbeta, ak_tensor dy, ak_tensor x, ak_tensor gamma,
                              ak_tensor save_mean, ak_tensor save_invstd)
{
    (void)b;
    const fpe_format_id fdy = (fpe_format_id)dy.dtype, fx = (fpe_format_id)x.dtype,
                        fdx = (fpe_format_id)dx.dtype;
    const size_t m = a->n * a->hw;
    double acc_g[AK_NORM_LANES], acc_gx[AK_NORM_LANES];
    for (size_t ch = 0; ch < a->c; ch++) {
        const float mean = ((const float *)save_mean.data)[ch];
        const float invstd = ((const float *)save_invstd.data)[ch];
        for (unsigned t = 0; t < AK_NORM_LANES; t++)
            acc_g[t] = acc_gx[t] = 0.0;
        BN_FOR_CHANNEL(a, ch, k, i)
        {
            const double g = ak_norm_load(fdy, dy.data, i);
            acc_g[k % AK_NORM_LANES] += g;
            acc_gx[k % AK_NORM_LANES] += ak_norm_gxm(g, ak_norm_load(fx, x.data, i), mean);
        }
        const double sum_g = ak_norm_tree(acc_g), sum_gx = ak_norm_tree(acc_gx);
        if (dbeta.data)
            ak_store_bits((fpe_format_id)dbeta.dtype, dbeta.data, ch,
                          ak_avgpool_store((fpe_format_id)dbeta.dtype, ak_norm_f32(sum_g)));
        if (dgamma.data)
            ak_store_bits(
                (fpe_format_id)dgamma.dtype, dgamma.data, ch,
                ak_avgpool_store((fpe_format_id)dgamma.dtype, ak_norm_f32(sum_gx * invstd)));
        if (!dx.data) continue;
        const ak_norm_coef coef = ak_norm_backward_coef(sum_g, sum_gx, m, invstd);
        const float s = gamma.data
                            ? ak_norm_f32((double)invstd *
                                          ak_norm_load((fpe_format_id)gamma.dtype, gamma.data, ch))
                            : invstd;
        BN_FOR_CHANNEL(a, ch, k, i)
        {
            (void)k;
            const float v = ak_norm_dx(ak_avgpool_load(fdy, dy.data, i),
                                       ak_avgpool_load(fx, x.data, i), mean, coef, s);
            ak_store_bits(fdx, dx.data, i, ak_avgpool_store(fdx, v));
        }
    }
    return AK_OK;
}
