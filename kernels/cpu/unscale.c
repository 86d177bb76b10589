/* cpu/unscale.c: STUB. */
#include "backend.h"

int ak_cpu_unscale_check(ak_backend *b, const ak_tensor *grads, size_t count, const float *inv_scale, float *found_inf)
{
    (void)grads; (void)count; (void)inv_scale; (void)found_inf;
    return ak_fail(b, AK_ENOTIMPL, "ak_unscale_check", "not implemented yet");
}

