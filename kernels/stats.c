/* stats.c: STUB (to be written). */
#include "backend.h"

int ak_stats_accumulate(ak_backend *b, ak_tensor x, fpe_format_id target, const float *scale, ak_stats *result)
{
    AK_BEGIN(b);
    return b->ops->stats(b, x, target, scale, result);
}

