/* unscale.c: ak_scale and ak_unscale_check, validated here for both
 * backends.  The element math is in elem/unscale.h; cpu/unscale.c and
 * cuda/unscale.cu run it (ak_unscale_check over the whole list). */
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

int ak_scale(ak_backend *b, ak_tensor x, const float *factor)
{
    AK_BEGIN(b);
    int rc = ak_check_tensor(b, "ak_scale", "x", x, AK_ANY_N);
    if (rc) return rc;
    rc = ak_check_ptr(b, "ak_scale", "factor", factor, sizeof(float));
    if (rc || x.n == 0) return rc;
    return b->ops->scale(b, x, factor);
}
