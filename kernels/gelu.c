/* gelu.c: the public wrappers of GELU, forward and backward (kernels.h):
 * argument checks, then the backend's implementation.
 *
 * Semantics, beyond kernels.h (the element code is kernels/elem/gelu.h,
 * shared by both backends, which therefore agree bit for bit):
 *   - form is AK_GELU_ERF or AK_GELU_TANH; any dtype for every tensor.
 *   - The value (or dy times the derivative) is computed in double by the
 *     header's own exp, erf series and erfc continued fraction (within
 *     about 1e-14 relative of the exact value), rounded to fp32 to nearest
 *     even, and that fp32 result converted to the output's dtype by the
 *     emulator: an fp16 output is exactly the emulator's fp16 of the fp32
 *     result, as a framework's fp16 GELU computes in fp32 and casts.
 *   - The tanh form is computed as x sigma(2u), equal to 0.5 x (1 + tanh u),
 *     so its negative tail keeps its relative accuracy (PyTorch's fp32
 *     1 + tanh(u) cancels to 0 below about x = -5; the difference is below
 *     1e-6 absolute).
 *   - Special values: -0 -> -0, +inf -> +inf, -inf -> NaN, NaN -> NaN (the
 *     emulator's default NaN); backward is NaN where x is +-inf or NaN or dy
 *     is NaN, and dy = +-inf times a derivative that underflowed to 0 is NaN.
 */
#include "backend.h"

static int check_form(ak_backend *b, const char *call, ak_gelu_form form)
{
    if (form == AK_GELU_ERF || form == AK_GELU_TANH) return AK_OK;
    return ak_fail(b, AK_EINVAL, call, "form %d is neither AK_GELU_ERF nor AK_GELU_TANH",
                   (int)form);
}

int ak_gelu(ak_backend *b, ak_gelu_form form, ak_tensor y, ak_tensor x)
{
    static const char call[] = "ak_gelu";
    AK_BEGIN(b);
    int rc = check_form(b, call, form);
    if (!rc) rc = ak_check_tensor(b, call, "x", x, AK_ANY_N);
    if (!rc) rc = ak_check_tensor(b, call, "y", y, x.n);
    if (rc || x.n == 0) return rc;
    return b->ops->gelu(b, form, y, x);
}

int ak_gelu_backward(ak_backend *b, ak_gelu_form form, ak_tensor dx, ak_tensor dy, ak_tensor x)
{
    static const char call[] = "ak_gelu_backward";
    AK_BEGIN(b);
    int rc = check_form(b, call, form);
    if (!rc) rc = ak_check_tensor(b, call, "x", x, AK_ANY_N);
    if (!rc) rc = ak_check_tensor(b, call, "dy", dy, x.n);
    if (!rc) rc = ak_check_tensor(b, call, "dx", dx, x.n);
    if (rc || x.n == 0) return rc;
    return b->ops->gelu_backward(b, form, dx, dy, x);
}
