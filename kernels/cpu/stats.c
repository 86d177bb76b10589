/* cpu/stats.c: STUB. */
#include "backend.h"

int ak_cpu_stats(ak_backend *b, ak_tensor x, fpe_format_id target, const float *scale, ak_stats *result)
{
    (void)x; (void)target; (void)scale; (void)result;
    return ak_fail(b, AK_ENOTIMPL, "ak_stats", "not implemented yet");
}

