/* softmax.c: the public wrappers of row-wise softmax and log-softmax,
 * forward and backward (kernels.h): argument checks, then the backend.
 *
 * What both backends compute, row by row (kernels/elem/softmax.h is the
 * code, run by both; "round" means rounded once to the acc format, to
 * nearest even: fp32 as IEEE arithmetic, fp16/bf16 by the emulator):
 *   - the unmasked columns are j < cols, or j <= r % causal_t; the others
 *     are not read, and are written 0 (log-softmax: -inf), and their
 *     gradient +0.
 *   - forward: z_j = round(x_j * scale) (x_j read exactly); m = max z_j
 *     (NaN if any z_j is NaN); d_j = round(z_j - m); e_j = round(exp(d_j));
 *     s = 0, s = round(s + e_j) for j = 0, 1, ... in index order; softmax
 *     y_j = round(e_j / s); log-softmax y_j = round(d_j - round(log s)).
 *     The result, a value of acc, is converted once to y's dtype (nearest
 *     even), a NaN as the default NaN.  exp and log are computed in double
 *     by code of kernels/elem/ (within about 1e-15 relative of the exact
 *     value), so the fp32 result is that of an fp32 kernel whose exp and
 *     log are correctly rounded, except within 1e-15 of a tie.
 *   - backward, softmax: t = 0, t = round(t + round(dy_j y_j)) in index
 *     order; dx_j = round(round(y_j round(dy_j - t)) scale).  log-softmax:
 *     t = 0, t = round(t + dy_j); dx_j = round(round(dy_j -
 *     round(round(exp(y_j)) t)) scale).  Converted to dx's dtype as above.
 *   - Specials: a row whose unmasked x * scale hold a NaN or +inf, or are
 *     all -inf, is all NaN (inf - inf, or a NaN max), as PyTorch; a -inf
 *     input among finite ones gives probability 0 (log-prob -inf).
 *   - fp16 acc: exp(d) below 2^-25 (d < about -17.3) is 0, and x * scale
 *     beyond 65519 is inf (a NaN row); the sequential sum stops growing at
 *     2048 (every e_j <= 1 is at most half an ulp there), so a row of more
 *     than 2048 equal inputs gives 1/2048 each.  bf16: at 256.
 *   - The backends run one row as one sequential loop (a GPU thread per
 *     row), the same operations in the same order: bit for bit.
 */
#include <math.h>

#include "backend.h"

static int check_args(ak_backend *b, const char *call, const ak_softmax_args *a, size_t *n)
{
    *n = 0;
    if (!a) return ak_fail(b, AK_EINVAL, call, "a is NULL");
    if (a->acc != AK_F32 && a->acc != AK_F16 && a->acc != AK_BF16)
        return ak_fail(b, AK_EINVAL, call, "acc (%d) is not a dtype: use AK_F32, AK_F16 or AK_BF16",
                       (int)a->acc);
    if (!(a->scale > 0.0f) || isinf(a->scale))
        return ak_fail(b, AK_EINVAL, call, "scale (%g) must be finite and > 0", (double)a->scale);
    if (a->cols == 0 && a->rows > 0)
        return ak_fail(b, AK_EINVAL, call, "cols is 0: a row needs an element");
    if (a->causal_t) {
        if (a->cols != a->causal_t)
            return ak_fail(b, AK_EINVAL, call, "causal_t (%zu) must equal cols (%zu)", a->causal_t,
                           a->cols);
        if (a->rows % a->causal_t)
            return ak_fail(b, AK_EINVAL, call, "rows (%zu) is not a multiple of causal_t (%zu)",
                           a->rows, a->causal_t);
    }
    return ak_check_mul(b, call, "rows x cols", a->rows, a->cols, n);
}

static size_t bytes_of(ak_tensor t) { return t.n * ak_dtype_size(t.dtype); }

int ak_softmax_forward(ak_backend *b, const ak_softmax_args *a, ak_tensor y, ak_tensor x)
{
    static const char call[] = "ak_softmax_forward";
    AK_BEGIN(b);
    size_t n;
    int rc = check_args(b, call, a, &n);
    if (!rc) rc = ak_check_tensor(b, call, "x", x, n);
    if (!rc) rc = ak_check_tensor(b, call, "y", y, n);
    if (!rc && ak_overlap(y.data, bytes_of(y), x.data, bytes_of(x)))
        rc = ak_fail(b, AK_EINVAL, call, "y overlaps x");
    if (rc || n == 0) return rc;
    return b->ops->softmax_forward(b, a, y, x);
}

int ak_softmax_backward(ak_backend *b, const ak_softmax_args *a, ak_tensor dx, ak_tensor dy,
                        ak_tensor y)
{
    static const char call[] = "ak_softmax_backward";
    AK_BEGIN(b);
    size_t n;
    int rc = check_args(b, call, a, &n);
    if (!rc) rc = ak_check_tensor(b, call, "dy", dy, n);
    if (!rc) rc = ak_check_tensor(b, call, "y", y, n);
    if (!rc) rc = ak_check_tensor(b, call, "dx", dx, n);
    if (rc) return rc;
    const bool in_place = dx.data == dy.data && dx.dtype == dy.dtype;
    if (!in_place && ak_overlap(dx.data, bytes_of(dx), dy.data, bytes_of(dy)))
        return ak_fail(b, AK_EINVAL, call,
                       "dx overlaps dy (only dx == dy, same dtype, is allowed)");
    if (ak_overlap(dx.data, bytes_of(dx), y.data, bytes_of(y)))
        return ak_fail(b, AK_EINVAL, call, "dx overlaps y");
    if (n == 0) return AK_OK;
    return b->ops->softmax_backward(b, a, dx, dy, y);
}
