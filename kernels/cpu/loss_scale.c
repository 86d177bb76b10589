/* cpu/loss_scale.c: one step of the loss-scale rule (loss_scale.h), on the
 * host. */
#include "backend.h"

int ak_cpu_loss_scale_update(ak_backend *b, const ak_scaler_config *cfg, ak_scaler_state *state,
                             const float *found_inf)
{
    (void)b;
    ak_loss_scale_step(cfg, state, *found_inf != 0.0f);
    return AK_OK;
}
