/* unscale.c: STUB (to be written). */
#include "backend.h"

int ak_unscale_check(ak_backend *b, const ak_tensor *grads, size_t count, const float *inv_scale, float *found_inf)
{
    AK_BEGIN(b);
    return b->ops->unscale_check(b, grads, count, inv_scale, found_inf);
}

