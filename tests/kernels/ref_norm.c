/* ref_norm.c: the BatchNorm and LayerNorm tests' references (ref_norm.h). */
#include "ref_norm.h"

#include <math.h>
#include <stdlib.h>

double ref_norm_lane_sum(const double *v, size_t m)
{
    double lane[256] = {0};
    for (size_t k = 0; k < m; k++)
        lane[k % 256] += v[k];
    for (unsigned s = 128; s > 0; s /= 2)
        for (unsigned t = 0; t < s; t++)
            lane[t] += lane[t + s];
    return lane[0];
}

float ref_norm_f32(double d) { return kt_f32_of(kt_from_f64(AK_F32, d)); }

void ref_norm_stats(const double *v, size_t m, double eps, float *mean, float *invstd, double *s2)
{
    const double mean_d = ref_norm_lane_sum(v, m) / (double)m;
    double *sq = malloc(m * sizeof *sq + 8);
    for (size_t k = 0; k < m; k++)
        sq[k] = (v[k] - mean_d) * (v[k] - mean_d);
    *s2 = ref_norm_lane_sum(sq, m);
    free(sq);
    *mean = ref_norm_f32(mean_d);
    *invstd = ref_norm_f32(1.0 / sqrt(*s2 / (double)m + eps));
}

void ref_norm_plain(const double *v, size_t m, double *mean, double *var)
{
    double s = 0.0, q = 0.0;
    for (size_t k = 0; k < m; k++)
        s += v[k];
    *mean = s / (double)m;
    for (size_t k = 0; k < m; k++)
        q += (v[k] - *mean) * (v[k] - *mean);
    *var = q / (double)m;
}

static uint32_t to_dt(ak_dtype dt, float v)
{
    if (v != v) return kt_default_nan(dt);
    return kt_convert(AK_F32, dt, kt_f32_bits(v));
}

uint32_t ref_norm_y_bits(ak_dtype dt, float x, float mean, float invstd, float gamma, float beta)
{
    volatile float t = x - mean; /* one fp32 rounding per operation */
    t = t * invstd;
    t = t * gamma;
    t = t + beta;
    return to_dt(dt, t);
}

uint32_t ref_norm_dx_bits(ak_dtype dt, float g, float x, float mean, float c1, float c2, float s)
{
    volatile float a = g - c1, xm = x - mean;
    volatile float p = xm * c2;
    volatile float d = a - p;
    return to_dt(dt, d * s);
}

void ref_norm_fd(ref_norm_loss f, const void *ctx, float *p, size_t n, double h, double *g)
{
    for (size_t i = 0; i < n; i++) {
        const float keep = p[i];
        p[i] = (float)(keep + h);
        const double lp = f(p, ctx);
        p[i] = (float)(keep - h);
        const double lm = f(p, ctx);
        p[i] = keep;
        g[i] = (lp - lm) / (2.0 * h);
    }
}
