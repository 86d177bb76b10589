/* add.c: the public wrapper of the residual add (kernels.h): argument
 * checks, then the backend's implementation.
 *
 * Semantics, beyond kernels.h: y[i] = a[i] + b[i], the exact sum rounded
 * once to y's dtype to nearest even, by ak_add_elem (kernels/elem/add.h),
 * the element code of ak_accumulate too, which both backends run, so they
 * agree bit for bit (fp32 + fp32 -> fp32 is the hardware's correctly
 * rounded add).  NaNs: the first NaN operand, a before b, quieted; inf -
 * inf the default NaN; an exact zero sum is +0 unless both are -0.  Any
 * dtypes; y may be a or b (the same tensor and dtype), no other overlap.
 */
#include "backend.h"

static size_t bytes_of(ak_tensor t) { return t.n * ak_dtype_size(t.dtype); }

/* y may be x itself; any other overlap would read elements already written. */
static bool bad_overlap(ak_tensor y, ak_tensor x)
{
    return !(y.data == x.data && y.dtype == x.dtype) &&
           ak_overlap(y.data, bytes_of(y), x.data, bytes_of(x));
}

int ak_add(ak_backend *b, ak_tensor y, ak_tensor a, ak_tensor bb)
{
    static const char call[] = "ak_add";
    AK_BEGIN(b);
    int rc = ak_check_tensor(b, call, "a", a, AK_ANY_N);
    if (!rc) rc = ak_check_tensor(b, call, "b", bb, a.n);
    if (!rc) rc = ak_check_tensor(b, call, "y", y, a.n);
    if (!rc && bad_overlap(y, a))
        rc = ak_fail(b, AK_EINVAL, call, "y overlaps a (only y = a, the same dtype, may)");
    if (!rc && bad_overlap(y, bb))
        rc = ak_fail(b, AK_EINVAL, call, "y overlaps b (only y = b, the same dtype, may)");
    if (rc || a.n == 0) return rc;
    return b->ops->add(b, y, a, bb);
}
