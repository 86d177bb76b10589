/* cuda/update.cu: STUB. */
#include "cuda_backend.h"

extern "C" int ak_cuda_opt_step_begin(ak_backend *b, const ak_opt_config *cfg, ak_opt_state *state, const float *found_inf)
{
    (void)cfg; (void)state; (void)found_inf;
    return ak_fail(b, AK_ENOTIMPL, "ak_opt_step_begin", "not implemented yet");
}

extern "C" int ak_cuda_update(ak_backend *b, const ak_opt_config *cfg, const ak_param *p, const ak_opt_state *state, const float *found_inf, ak_update_loss *loss)
{
    (void)cfg; (void)p; (void)state; (void)found_inf; (void)loss;
    return ak_fail(b, AK_ENOTIMPL, "ak_update", "not implemented yet");
}

