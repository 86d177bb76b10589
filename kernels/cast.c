/* cast.c: STUB (to be written). */
#include "backend.h"

int ak_cast(ak_backend *b, ak_tensor dst, ak_tensor src, const ak_rounding *r)
{
    AK_BEGIN(b);
    return b->ops->cast(b, dst, src, r);
}

int ak_scale(ak_backend *b, ak_tensor x, const float *factor)
{
    AK_BEGIN(b);
    return b->ops->scale(b, x, factor);
}

