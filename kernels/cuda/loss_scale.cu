/* cuda/loss_scale.cu: one step of the loss-scale rule (loss_scale.h) in a
 * one-thread kernel, so the scale, its inverse and the skip flag are decided
 * on the device and a training step never waits for the host. */
#include "cuda_backend.h"

namespace { /* this file's kernel */

__global__ void loss_scale_update_kernel(ak_scaler_config cfg, ak_scaler_state *state,
                                         const float *found_inf)
{
    ak_loss_scale_step(&cfg, state, *found_inf != 0.0f);
}

} // namespace

extern "C" int ak_cuda_loss_scale_update(ak_backend *b, const ak_scaler_config *cfg,
                                         ak_scaler_state *state, const float *found_inf)
{
    loss_scale_update_kernel<<<1, 1, 0, ak_stream(b)>>>(*cfg, state, found_inf);
    AK_CUDA_LAUNCHED(b, "ak_loss_scale_update", "loss_scale_update_kernel");
    return AK_OK;
}
