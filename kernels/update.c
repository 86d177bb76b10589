/* update.c: STUB (to be written). */
#include "backend.h"

int ak_opt_step_begin(ak_backend *b, const ak_opt_config *cfg, ak_opt_state *state, const float *found_inf)
{
    AK_BEGIN(b);
    return b->ops->opt_step_begin(b, cfg, state, found_inf);
}

int ak_update(ak_backend *b, const ak_opt_config *cfg, const ak_param *p, const ak_opt_state *state, const float *found_inf, ak_update_loss *loss)
{
    AK_BEGIN(b);
    return b->ops->update(b, cfg, p, state, found_inf, loss);
}

