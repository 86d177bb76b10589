/* cpu/update.c: STUB. */
#include "backend.h"

int ak_cpu_opt_step_begin(ak_backend *b, const ak_opt_config *cfg, ak_opt_state *state, const float *found_inf)
{
    (void)cfg; (void)state; (void)found_inf;
    return ak_fail(b, AK_ENOTIMPL, "ak_opt_step_begin", "not implemented yet");
}

int ak_cpu_update(ak_backend *b, const ak_opt_config *cfg, const ak_param *p, const ak_opt_state *state, const float *found_inf, ak_update_loss *loss)
{
    (void)cfg; (void)p; (void)state; (void)found_inf; (void)loss;
    return ak_fail(b, AK_ENOTIMPL, "ak_update", "not implemented yet");
}

