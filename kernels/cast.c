/* cast.c: ak_cast, validated here for both backends.  The element math is
 * in elem/cast.h; cpu/cast.c and cuda/cast.cu run it. */
#include "backend.h"

int ak_cast(ak_backend *b, ak_tensor dst, ak_tensor src, const ak_rounding *r)
{
    AK_BEGIN(b);
    int rc = ak_check_tensor(b, "ak_cast", "src", src, AK_ANY_N);
    if (rc) return rc;
    rc = ak_check_tensor(b, "ak_cast", "dst", dst, src.n);
    if (rc) return rc;
    if (r && (unsigned)r->mode >= FPE_ROUND_COUNT)
        return ak_fail(b, AK_EINVAL, "ak_cast", "r->mode (%d) is not a rounding mode",
                       (int)r->mode);
    if (src.n == 0) return AK_OK;
    if (dst.dtype == src.dtype && dst.data == src.data) return AK_OK; /* a copy onto itself */
    /* an element would be read after another one was written over it */
    if (ak_overlap(dst.data, dst.n * ak_dtype_size(dst.dtype), src.data,
                   src.n * ak_dtype_size(src.dtype)))
        return ak_fail(b, AK_EINVAL, "ak_cast", "dst (%s at %p) and src (%s at %p) overlap",
                       ak_dtype_name(dst.dtype), dst.data, ak_dtype_name(src.dtype), src.data);
    const ak_rounding rne = ak_rounding_rne();
    return b->ops->cast(b, dst, src, r ? r : &rne);
}
