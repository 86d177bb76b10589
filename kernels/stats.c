/* stats.c: ak_stats_accumulate, validated here for both backends.  The
 * element math is in elem/stats.h; cpu/stats.c and cuda/stats.cu run it. */
#include <stdalign.h>

#include "backend.h"

/* Do the byte ranges [a, a + an) and [b, b + bn) share a byte? */
int ak_stats_accumulate(ak_backend *b, ak_tensor x, fpe_format_id target, const float *scale,
                        ak_stats *result)
{
    static const char call[] = "ak_stats_accumulate";
    AK_BEGIN(b);
    int rc = ak_check_tensor(b, call, "x", x, AK_ANY_N);
    if (rc) return rc;
    if (target != FPE_FMT_F16 && target != FPE_FMT_BF16 && target != FPE_FMT_F32)
        return ak_fail(b, AK_EINVAL, call, "target (%d) is not fp16, bf16 or fp32", (int)target);
    if (scale) {
        rc = ak_check_ptr(b, call, "scale", scale, alignof(float));
        if (rc) return rc;
    }
    rc = ak_check_ptr(b, call, "result", result, alignof(ak_stats));
    if (rc) return rc;
    /* the result is written while x and the scale are still being read */
    if (ak_overlap(result, sizeof *result, x.data, x.n * ak_dtype_size(x.dtype)))
        return ak_fail(b, AK_EINVAL, call, "result (%p) overlaps x (%p)", (void *)result, x.data);
    if (scale && ak_overlap(result, sizeof *result, scale, sizeof *scale))
        return ak_fail(b, AK_EINVAL, call, "result (%p) overlaps scale (%p)", (void *)result,
                       (const void *)scale);
    if (x.n == 0) return AK_OK;
    return b->ops->stats(b, x, target, scale, result);
}
