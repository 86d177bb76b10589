/* cpu/cast.c: STUB. */
#include "backend.h"

int ak_cpu_cast(ak_backend *b, ak_tensor dst, ak_tensor src, const ak_rounding *r)
{
    (void)dst; (void)src; (void)r;
    return ak_fail(b, AK_ENOTIMPL, "ak_cast", "not implemented yet");
}

int ak_cpu_scale(ak_backend *b, ak_tensor x, const float *factor)
{
    (void)x; (void)factor;
    return ak_fail(b, AK_ENOTIMPL, "ak_scale", "not implemented yet");
}

