/* cuda/stats.cu: STUB. */
#include "cuda_backend.h"

extern "C" int ak_cuda_stats(ak_backend *b, ak_tensor x, fpe_format_id target, const float *scale, ak_stats *result)
{
    (void)x; (void)target; (void)scale; (void)result;
    return ak_fail(b, AK_ENOTIMPL, "ak_stats", "not implemented yet");
}

