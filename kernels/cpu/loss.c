/* cpu/loss.c: softmax cross-entropy and mean squared error (the
 * reference): rows and sums in index order, in double. */
#include "backend.h"
#include "elem/layers.h"

static double logit(fpe_format_id f, ak_tensor logits, size_t i)
{
    return ak_elem_value(f, ak_load_bits(f, logits.data, i));
}

/* The row's first maximal element (ak_xent_ranks_above): its index, and its
 * value in *m. */
static size_t row_argmax(fpe_format_id f, ak_tensor t, size_t row, size_t classes, double *m)
{
    size_t amax = 0;
    *m = logit(f, t, row);
    for (size_t j = 1; j < classes; j++) {
        const double v = logit(f, t, row + j);
        if (ak_xent_ranks_above(v, (int64_t)j, *m, (int64_t)amax)) {
            *m = v;
            amax = j;
        }
    }
    return amax;
}

int ak_cpu_softmax_xent(ak_backend *b, size_t batch, size_t classes, ak_tensor logits,
                        const int32_t *labels, const float *scale, float *loss, ak_tensor dlogits,
                        int32_t *correct)
{
    /* labels first: nothing is written when one is bad */
    for (size_t r = 0; r < batch; r++)
        if (labels[r] < 0 || (size_t)labels[r] >= classes)
            return ak_fail(b, AK_EINVAL, "ak_softmax_xent", "labels[%zu] is %d, outside [0, %zu)",
                           r, (int)labels[r], classes);
    const fpe_format_id fl = (fpe_format_id)logits.dtype, fd = (fpe_format_id)dlogits.dtype;
    const double g_scale = scale ? (double)*scale : 1.0;
    double total = 0.0;
    int32_t hits = 0;
    for (size_t r = 0; r < batch; r++) {
        const size_t row = r * classes, label = (size_t)labels[r];
        double m;
        const size_t amax = row_argmax(fl, logits, row, classes, &m);
        double s_rest = 0.0;
        if (ak_xent_row_ok(m))
            for (size_t j = 0; j < classes; j++)
                if (j != amax) s_rest += ak_xent_exp(logit(fl, logits, row + j), m);
        total += ak_xent_row_loss(m, s_rest, logit(fl, logits, row + label));
        hits += amax == label;
        if (!dlogits.data) continue;
        for (size_t j = 0; j < classes; j++) {
            const double g = ak_xent_grad(logit(fl, logits, row + j), m, s_rest, j == amax,
                                          j == label, batch, g_scale);
            ak_store_bits(fd, dlogits.data, row + j, ak_layer_from_f64(fd, g));
        }
    }
    ak_layer_store_f32(loss, total / (double)batch); /* batch 0: NaN, as PyTorch's mean */
    if (correct) *correct = hits;
    return AK_OK;
}

int ak_cpu_mse(ak_backend *b, ak_tensor pred, ak_tensor target, const float *scale, float *loss,
               ak_tensor dpred)
{
    (void)b;
    const fpe_format_id fp = (fpe_format_id)pred.dtype, ft = (fpe_format_id)target.dtype,
                        fd = (fpe_format_id)dpred.dtype;
    const double g_scale = scale ? (double)*scale : 1.0;
    const size_t n = pred.n;
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double d =
            ak_mse_diff(fp, ft, ak_load_bits(fp, pred.data, i), ak_load_bits(ft, target.data, i));
        sum += d * d;
        if (dpred.data)
            ak_store_bits(fd, dpred.data, i, ak_layer_from_f64(fd, ak_mse_grad(d, n, g_scale)));
    }
    ak_layer_store_f32(loss, sum / (double)n); /* n 0: NaN */
    return AK_OK;
}

int ak_cpu_nll_loss(ak_backend *b, size_t batch, size_t classes, ak_tensor logp,
                    const int32_t *labels, const float *scale, float *loss, ak_tensor dlogp,
                    int32_t *correct)
{
    for (size_t r = 0; r < batch; r++)
        if (labels[r] < 0 || (size_t)labels[r] >= classes)
            return ak_fail(b, AK_EINVAL, "ak_nll_loss", "labels[%zu] is %d, outside [0, %zu)", r,
                           (int)labels[r], classes);
    const fpe_format_id f = (fpe_format_id)logp.dtype;
    uint32_t lane[AK_NLL_LANES] = {0}; /* +0 in fp32 */
    int32_t hits = 0;
    for (size_t r = 0; r < batch; r++) {
        const size_t row = r * classes;
        double m;
        const size_t amax = row_argmax(f, logp, row, classes, &m);
        hits += amax == (size_t)labels[r];
        uint32_t *acc = &lane[r % AK_NLL_LANES];
        *acc = ak_nll_lane_sub(*acc, f, ak_load_bits(f, logp.data, row + (size_t)labels[r]));
    }
    uint32_t total = 0;
    for (int t = 0; t < AK_NLL_LANES; t++)
        total = ak_nll_f32_add(total, lane[t]);
    const uint32_t l = ak_nll_loss_bits(f, total, batch);
    *loss = ak_f32_from_bits(ak_layer_from_f64(FPE_FMT_F32, ak_elem_value(f, l)));
    if (correct) *correct = hits;
    if (!dlogp.data) return AK_OK;
    const uint32_t g = ak_nll_grad_bits(f, scale ? (double)*scale : 1.0, batch);
    for (size_t r = 0; r < batch; r++)
        for (size_t j = 0; j < classes; j++)
            ak_store_bits(f, dlogp.data, r * classes + j, j == (size_t)labels[r] ? g : 0u);
    return AK_OK;
}
