/* cpu/update.c: the optimizer step and update as plain loops over the
 * element code of elem/update.h (the arithmetic is spelled out in
 * kernels/update.c). */
#include "backend.h"
#include "elem/update.h"

int ak_cpu_opt_step_begin(ak_backend *b, const ak_opt_config *cfg, ak_opt_state *state,
                          const float *found_inf)
{
    (void)b;
    if (found_inf && *found_inf != 0.0f) return AK_OK;
    ak_opt_step_advance(cfg, state);
    return AK_OK;
}

int ak_cpu_update(ak_backend *b, const ak_opt_config *cfg, const ak_param *p,
                  const ak_opt_state *state, const float *found_inf, ak_update_loss *loss)
{
    (void)b;
    if (found_inf && *found_inf != 0.0f) {
        if (loss) loss->skipped += 1;
        return AK_OK;
    }
    const ak_opt_scalars s =
        ak_opt_scalars_of(cfg, p, state->step, state->beta1_pow, state->beta2_pow);
    const size_t n = p->master.data ? p->master.n : p->model.n;
    if (!loss) {
        for (size_t i = 0; i < n; i++)
            ak_update_elem(&s, p, i, NULL);
        return AK_OK;
    }
    /* the sums are gathered in chunks, as the GPU gathers them per thread
     * and block, so that both stay close to the exact sums */
    ak_update_acc acc = {0, 0, 0, 0.0, 0.0};
    for (size_t start = 0; start < n; start += 1024) {
        const size_t end = n - start > 1024 ? start + 1024 : n;
        ak_update_acc part = {0, 0, 0, 0.0, 0.0};
        for (size_t i = start; i < end; i++)
            ak_update_elem(&s, p, i, &part);
        acc.nonzero += part.nonzero;
        acc.lost += part.lost;
        acc.predicted_lost += part.predicted_lost;
        acc.sum_abs_err += part.sum_abs_err;
        acc.sum_abs_intended += part.sum_abs_intended;
    }
    loss->elements += n;
    loss->nonzero += acc.nonzero;
    loss->lost += acc.lost;
    loss->predicted_lost += acc.predicted_lost;
    loss->sum_abs_err += acc.sum_abs_err;
    loss->sum_abs_intended += acc.sum_abs_intended;
    return AK_OK;
}
