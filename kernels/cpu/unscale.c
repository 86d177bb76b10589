/* cpu/unscale.c: the fused unscale + finite check on the host, one pass per
 * tensor through elem/cast.h. */
#include "backend.h"
#include "elem/cast.h"

int ak_cpu_unscale_check(ak_backend *b, const ak_tensor *grads, size_t count,
                         const float *inv_scale, float *found_inf)
{
    (void)b;
    const ak_factor k = ak_factor_of(*inv_scale);
    const bool scale = *inv_scale != 1.0f; /* at 1, even NaN payloads stay as they are */
    bool nonfinite = false;
    for (size_t t = 0; t < count; t++)
        nonfinite |=
            ak_scale_span((fpe_format_id)grads[t].dtype, grads[t].data, 0, grads[t].n, 1, k, scale);
    if (nonfinite) *found_inf = 1.0f;
    return AK_OK;
}
