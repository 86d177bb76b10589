/* dropout.c: the public wrappers of dropout, forward and backward
 * (kernels.h): argument checks, then the backend's one implementation (the
 * backward is the forward applied to dy with the same key and offset).
 *
 * Semantics, beyond kernels.h (the element code, the mask's draw and the
 * rounding are in kernels/elem/dropout.h, shared by both backends, which
 * therefore agree bit for bit):
 *   - element i is kept when fpe_random_bits(key, AK_DROPOUT_STREAM 'DROP',
 *     offset + i) / 2^32 >= p (exact), so the mask depends on (key, offset +
 *     i) alone: the forward and the backward of a call with the same key and
 *     offset share it, and one tensor may be dropped in parts by advancing
 *     offset by each part's length.
 *   - y = x * mask * scale as PyTorch computes it: scale = 1 / (1 - p) in
 *     double rounded to fp32, x * mask then * scale in fp32, then converted
 *     to y's dtype; dropped elements are x * 0 (+0 or -0 by x's sign, NaN
 *     where x is infinite or NaN), kept ones x * scale.  p == 0 copies.
 *   - p in [0, 1): a negative p, p >= 1 (PyTorch's p = 1 zeroes everything
 *     and has no scale) and NaN are AK_EINVAL.
 *   - y may be x (the same dtype); no other overlap.
 */
#include <math.h>

#include "backend.h"

static size_t bytes_of(ak_tensor t) { return t.n * ak_dtype_size(t.dtype); }

/* The checks both calls share; *work says whether there are elements. */
static int check_dropout(ak_backend *b, const char *call, const char *out_name, const char *in_name,
                         float p, ak_tensor out, ak_tensor in, bool *work)
{
    *work = false;
    if (!(p >= 0.0f && p < 1.0f))
        return ak_fail(b, AK_EINVAL, call, "p (%g) must be in [0, 1)", (double)p);
    int rc = ak_check_tensor(b, call, in_name, in, AK_ANY_N);
    if (!rc) rc = ak_check_tensor(b, call, out_name, out, in.n);
    if (!rc && !(out.data == in.data && out.dtype == in.dtype) &&
        ak_overlap(out.data, bytes_of(out), in.data, bytes_of(in)))
        rc = ak_fail(b, AK_EINVAL, call, "%s overlaps %s (only %s = %s, the same dtype, may)",
                     out_name, in_name, out_name, in_name);
    *work = !rc && in.n > 0;
    return rc;
}

int ak_dropout_forward(ak_backend *b, float p, uint64_t key, uint64_t offset, ak_tensor y,
                       ak_tensor x)
{
    AK_BEGIN(b);
    bool work;
    const int rc = check_dropout(b, "ak_dropout_forward", "y", "x", p, y, x, &work);
    if (!work) return rc;
    return b->ops->dropout(b, p, key, offset, y, x);
}

int ak_dropout_backward(ak_backend *b, float p, uint64_t key, uint64_t offset, ak_tensor dx,
                        ak_tensor dy)
{
    AK_BEGIN(b);
    bool work;
    const int rc = check_dropout(b, "ak_dropout_backward", "dx", "dy", p, dx, dy, &work);
    if (!work) return rc;
    return b->ops->dropout(b, p, key, offset, dx, dy);
}
