/* avgpool.c: the public wrappers of global average pooling (kernels.h):
 * argument checks, then the backend's implementation.
 *
 * Semantics, beyond kernels.h (the element code is kernels/elem/avgpool.h,
 * shared by both backends):
 *   - Any dtype for every tensor.  Elements are widened to fp32 exactly.
 *   - forward: s = 0; s += x[p][i] for i = 0 .. hw-1 in fp32 (round to
 *     nearest even after each addition, in index order), mean = s / hw in
 *     fp32, then that fp32 value converted once to y's dtype by the emulator
 *     (nearest even).  NaNs are written as the emulator's default NaN.
 *   - backward: dx[p][i] = dy[p] / hw in fp32, converted once to dx's dtype.
 *   - Both backends run the same fp32 operations in the same order (one
 *     plane per GPU thread), so they agree bit for bit; the fp32 sum is
 *     within (hw - 1) 2^-24 sum |x| of the exact sum.
 *   - y must not overlap x, nor dx dy (different sizes unless hw = 1).
 */
#include "backend.h"

static int avgpool_sizes(ak_backend *b, const char *call, size_t planes, size_t hw, size_t *n_in)
{
    *n_in = 0;
    if (hw == 0) return ak_fail(b, AK_EINVAL, call, "hw is 0: a plane needs an element");
    if (hw > (1u << 24))
        return ak_fail(b, AK_EINVAL, call, "hw (%zu) exceeds 2^24: not exact in fp32", hw);
    return ak_check_mul(b, call, "planes x hw", planes, hw, n_in);
}

int ak_avgpool_forward(ak_backend *b, size_t planes, size_t hw, ak_tensor y, ak_tensor x)
{
    static const char call[] = "ak_avgpool_forward";
    AK_BEGIN(b);
    size_t n_in;
    int rc = avgpool_sizes(b, call, planes, hw, &n_in);
    if (!rc) rc = ak_check_tensor(b, call, "x", x, n_in);
    if (!rc) rc = ak_check_tensor(b, call, "y", y, planes);
    if (!rc &&
        ak_overlap(y.data, y.n * ak_dtype_size(y.dtype), x.data, x.n * ak_dtype_size(x.dtype)))
        rc = ak_fail(b, AK_EINVAL, call, "y overlaps x");
    if (rc || planes == 0) return rc;
    return b->ops->avgpool_forward(b, planes, hw, y, x);
}

int ak_avgpool_backward(ak_backend *b, size_t planes, size_t hw, ak_tensor dx, ak_tensor dy)
{
    static const char call[] = "ak_avgpool_backward";
    AK_BEGIN(b);
    size_t n_in;
    int rc = avgpool_sizes(b, call, planes, hw, &n_in);
    if (!rc) rc = ak_check_tensor(b, call, "dy", dy, planes);
    if (!rc) rc = ak_check_tensor(b, call, "dx", dx, n_in);
    if (!rc && ak_overlap(dx.data, dx.n * ak_dtype_size(dx.dtype), dy.data,
                          dy.n * ak_dtype_size(dy.dtype)))
        rc = ak_fail(b, AK_EINVAL, call, "dx overlaps dy");
    if (rc || planes == 0) return rc;
    return b->ops->avgpool_backward(b, planes, hw, dx, dy);
}
