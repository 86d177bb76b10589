/* layers.c: the public wrappers of the non-GEMM layers (bias, relu, 2x2
 * max-pooling): argument checks, then the backend's implementation.
 *
 * Semantics, beyond kernels.h (the element code is kernels/elem/layers.h,
 * shared by both backends):
 *   - Any dtype for every tensor; the tensors of one call may differ.
 *   - bias_add: y[r][c] + bias[c], the exact sum rounded once to y's dtype,
 *     to nearest even: bit-identical to fpe_<fmt>_add when y and bias share
 *     a format (NaNs included, x86 rules), and to the exact sum rounded with
 *     fpe_f64_to_<fmt> otherwise.  cpu and cuda agree bit for bit.
 *   - relu: x where x > 0, +0 where x <= 0 (relu(-0) = +0), and a NaN
 *     unchanged (sign and payload, as torch.relu propagates it).  relu and
 *     max-pooling select, so with equal dtypes they copy bits; into another
 *     dtype the selected element is converted as ak_cast (nearest even).
 *   - relu_backward: dx = dy (converted to dx's dtype) where !(x <= 0), i.e.
 *     x > 0 or x is NaN (PyTorch's threshold_backward), else +0: the
 *     gradient at x = +-0 is 0.  x may be relu's input or its output.
 *   - maxpool2: PyTorch's rule: scanning a window in row-major order, an
 *     element replaces the maximum when it is greater or is a NaN, so ties
 *     select the first maximum (-0 and +0 tie), and a window holding NaNs
 *     gives its last NaN; backward routes dy to that element and writes +0
 *     to the other three (every element of dx is written).  Bit-exact
 *     between backends.  dx must not overlap dy or x; y must not overlap x.
 *   - bias_grad: dbias[c] = sum over r of dy[r][c], summed in double (cpu:
 *     in row order; cuda: any order), rounded once to dbias's dtype (nearest
 *     even; a NaN sum gives the default NaN).  rows = 0 writes zeros.  The
 *     two backends' double sums S1, S2 of a column each lie within
 *     g = (rows - 1) 2^-53 sum_r |dy[r][c]| of the exact sum, so
 *     |cuda - cpu| <= 2g + one ulp of dbias's format at the result; fp16 dy
 *     with rows <= 2^13 sums exactly in double, and then they agree bit for
 *     bit.  NaN and the signs of infinities agree exactly.
 */
#include "backend.h"

int ak_bias_add(ak_backend *b, ak_tensor y, ak_tensor bias, size_t rows, size_t cols)
{
    static const char call[] = "ak_bias_add";
    AK_BEGIN(b);
    size_t n;
    int rc = ak_check_mul(b, call, "y (rows x cols)", rows, cols, &n);
    if (!rc) rc = ak_check_tensor(b, call, "y", y, n);
    if (!rc) rc = ak_check_tensor(b, call, "bias", bias, cols);
    if (rc || n == 0) return rc;
    return b->ops->bias_add(b, y, bias, rows, cols);
}

int ak_bias_grad(ak_backend *b, ak_tensor dbias, ak_tensor dy, size_t rows, size_t cols)
{
    static const char call[] = "ak_bias_grad";
    AK_BEGIN(b);
    size_t n;
    int rc = ak_check_mul(b, call, "dy (rows x cols)", rows, cols, &n);
    if (!rc) rc = ak_check_tensor(b, call, "dbias", dbias, cols);
    if (!rc) rc = ak_check_tensor(b, call, "dy", dy, n);
    if (rc || cols == 0) return rc; /* rows == 0 still writes zeros */
    return b->ops->bias_grad(b, dbias, dy, rows, cols);
}

int ak_relu(ak_backend *b, ak_tensor y, ak_tensor x)
{
    static const char call[] = "ak_relu";
    AK_BEGIN(b);
    int rc = ak_check_tensor(b, call, "x", x, AK_ANY_N);
    if (!rc) rc = ak_check_tensor(b, call, "y", y, x.n);
    if (rc || x.n == 0) return rc;
    return b->ops->relu(b, y, x);
}

int ak_relu_backward(ak_backend *b, ak_tensor dx, ak_tensor dy, ak_tensor x)
{
    static const char call[] = "ak_relu_backward";
    AK_BEGIN(b);
    int rc = ak_check_tensor(b, call, "x", x, AK_ANY_N);
    if (!rc) rc = ak_check_tensor(b, call, "dy", dy, x.n);
    if (!rc) rc = ak_check_tensor(b, call, "dx", dx, x.n);
    if (rc || x.n == 0) return rc;
    return b->ops->relu_backward(b, dx, dy, x);
}

/* The element counts of a 2x2 pooling: planes*h*w in, planes*(h/2)*(w/2) out. */
static int maxpool2_sizes(ak_backend *b, const char *call, size_t planes, size_t h, size_t w,
                          size_t *n_in, size_t *n_out)
{
    *n_in = *n_out = 0;
    if (h % 2 != 0 || w % 2 != 0)
        return ak_fail(b, AK_EINVAL, call, "h (%zu) and w (%zu) must be even", h, w);
    size_t plane;
    int rc = ak_check_mul(b, call, "h x w", h, w, &plane);
    if (!rc) rc = ak_check_mul(b, call, "planes x h x w", planes, plane, n_in);
    *n_out = *n_in / 4;
    return rc;
}

int ak_maxpool2_forward(ak_backend *b, size_t planes, size_t h, size_t w, ak_tensor y, ak_tensor x)
{
    static const char call[] = "ak_maxpool2_forward";
    AK_BEGIN(b);
    size_t n_in, n_out;
    int rc = maxpool2_sizes(b, call, planes, h, w, &n_in, &n_out);
    if (!rc) rc = ak_check_tensor(b, call, "x", x, n_in);
    if (!rc) rc = ak_check_tensor(b, call, "y", y, n_out);
    if (rc || n_in == 0) return rc;
    return b->ops->maxpool2_forward(b, planes, h, w, y, x);
}

int ak_maxpool2_backward(ak_backend *b, size_t planes, size_t h, size_t w, ak_tensor dx,
                         ak_tensor dy, ak_tensor x)
{
    static const char call[] = "ak_maxpool2_backward";
    AK_BEGIN(b);
    size_t n_in, n_out;
    int rc = maxpool2_sizes(b, call, planes, h, w, &n_in, &n_out);
    if (!rc) rc = ak_check_tensor(b, call, "x", x, n_in);
    if (!rc) rc = ak_check_tensor(b, call, "dx", dx, n_in);
    if (!rc) rc = ak_check_tensor(b, call, "dy", dy, n_out);
    if (rc || n_in == 0) return rc;
    return b->ops->maxpool2_backward(b, planes, h, w, dx, dy, x);
}
