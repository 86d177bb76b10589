/* unscale.c: ak_unscale_check, validated here for both backends.  The
 * element math is ak_scale's (elem/cast.h); cpu/unscale.c and
 * cuda/unscale.cu run it over the list. */
#include <stdio.h>

#include "backend.h"

int ak_unscale_check(ak_backend *b, const ak_tensor *grads, size_t count, const float *inv_scale,
                     float *found_inf)
{
    AK_BEGIN(b);
    const char *call = "ak_unscale_check";
    if (!grads && count > 0)
        return ak_fail(b, AK_EINVAL, call, "grads is NULL with %zu tensors", count);
    int rc = ak_check_ptr(b, call, "inv_scale", inv_scale, sizeof(float));
    if (rc) return rc;
    rc = ak_check_ptr(b, call, "found_inf", found_inf, sizeof(float));
    if (rc) return rc;
    bool any_elements = false;
    for (size_t i = 0; i < count; i++) {
        char what[48];
        snprintf(what, sizeof what, "grads[%zu]", i);
        rc = ak_check_tensor(b, call, what, grads[i], AK_ANY_N);
        if (rc) return rc;
        any_elements |= grads[i].n > 0;
    }
    if (!any_elements) return AK_OK;
    return b->ops->unscale_check(b, grads, count, inv_scale, found_inf);
}
