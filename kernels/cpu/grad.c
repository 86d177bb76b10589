/* cpu/grad.c: gradient accumulation, sums of squares and norm clipping on
 * the host, plain loops over elem/grad.h. */
#include "backend.h"
#include "elem/grad.h"

/* One dtype pairing of ak_accumulate (F a format constant, or AK_LAYER_ANY). */
FPE_INLINE void accumulate_loop(int F, ak_tensor y, ak_tensor x)
{
    const fpe_format_id fy = AK_LAYER_FMT(F, y.dtype), fx = AK_LAYER_FMT(F, x.dtype);
    for (size_t i = 0; i < y.n; i++) {
        const uint32_t v = ak_load_bits(fy, y.data, i);
        ak_store_bits(fy, y.data, i, ak_accumulate_elem(fy, fx, v, ak_load_bits(fx, x.data, i)));
    }
}

int ak_cpu_accumulate(ak_backend *b, ak_tensor y, ak_tensor x)
{
    (void)b;
#define LOOP(F, unused) accumulate_loop(F, y, x)
    AK_LAYER_SPECIALISE(ak_layer_common2(y.dtype, x.dtype), LOOP, 0);
#undef LOOP
    return AK_OK;
}

int ak_cpu_sum_squares(ak_backend *b, const ak_tensor *xs, size_t count, double *sumsq)
{
    (void)b;
    ak_csum acc = {0.0, 0.0};
    for (size_t t = 0; t < count; t++)
        ak_sum_squares_span((fpe_format_id)xs[t].dtype, xs[t].data, 0, xs[t].n, 1, &acc);
    *sumsq += ak_csum_value(acc);
    return AK_OK;
}

int ak_cpu_clip_by_norm(ak_backend *b, const ak_tensor *xs, size_t count, const double *sumsq,
                        float max_norm, float *coef_out)
{
    (void)b;
    const float coef = ak_clip_coef(*sumsq, max_norm);
    if (ak_clip_applies(coef)) {
        const ak_factor k = ak_factor_of(coef);
        for (size_t t = 0; t < count; t++)
            ak_scale_span((fpe_format_id)xs[t].dtype, xs[t].data, 0, xs[t].n, 1, k, true);
    }
    if (coef_out) *coef_out = coef;
    return AK_OK;
}
