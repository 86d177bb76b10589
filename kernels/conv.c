/* conv.c: ak_conv2d_forward / ak_conv2d_backward (kernels.h), lowered to
 * GEMMs by im2col (kernels/elem/im2col.h has the layout).
 *
 * What both backends compute, per element:
 *   y     = the GEMM W col (ak_gemm's contract for the compute type) kept
 *           in fp32 (fp16 for 16F), + bias[o], rounded once to y's dtype
 *           (nearest even): without bias exactly what the GEMM would write
 *           into y, with bias one rounding of the accumulator plus bias;
 *   dw    = the GEMM dY col^T over the whole batch at once (one sum of
 *           batch * out_h * out_w terms per element) into dw's dtype;
 *   dx    = col2im of the GEMM W^T dY, which is kept in fp32 (fp16 for
 *           16F): every dx element sums its taps in binary64, in a fixed
 *           order, and is rounded once to dx's dtype;
 *   dbias = the sum of dy over batch and pixels in binary64, rounded once
 *           to dbias's dtype (the order may differ between backends).
 * x, w and dy share one dtype; y and dw take a GEMM output dtype of the
 * compute type (kernels.h, ak_gemm); dx and bias/dbias may be any dtype.
 * Workspace, allocated per call: the im2col matrix (batch * in_ch * k_h *
 * k_w * out_h * out_w elements of x's dtype, or fp32 for dcol), the GEMM
 * result of the forward and dy rearranged for the backward (as many
 * elements as y).
 */
#include <limits.h>

#include "backend.h"
#include "elem/gemm.h"
#include "elem/im2col.h"

static bool geometry_ok(const ak_conv2d *c)
{
    return c && c->stride > 0 && c->k_h > 0 && c->k_w > 0 && c->pad <= (SIZE_MAX - c->in_h) / 2 &&
           c->pad <= (SIZE_MAX - c->in_w) / 2 && c->in_h + 2 * c->pad >= c->k_h &&
           c->in_w + 2 * c->pad >= c->k_w;
}

size_t ak_conv2d_out_h(const ak_conv2d *c)
{
    return geometry_ok(c) ? (c->in_h + 2 * c->pad - c->k_h) / c->stride + 1 : 0;
}

size_t ak_conv2d_out_w(const ak_conv2d *c)
{
    return geometry_ok(c) ? (c->in_w + 2 * c->pad - c->k_w) / c->stride + 1 : 0;
}

/* Element counts of the tensors, each checked against size_t overflow. */
typedef struct conv_sizes {
    size_t x, w, y, col;
} conv_sizes;

static int mul4(ak_backend *b, const char *call, const char *what, size_t p, size_t q, size_t r,
                size_t s, size_t *out)
{
    int rc;
    if ((rc = ak_check_mul(b, call, what, p, q, out)) ||
        (rc = ak_check_mul(b, call, what, *out, r, out)) ||
        (rc = ak_check_mul(b, call, what, *out, s, out)))
        return rc;
    return AK_OK;
}

static int check_conv(ak_backend *b, const char *call, const ak_conv2d *c, conv_sizes *n)
{
    if (!c) return ak_fail(b, AK_EINVAL, call, "c is NULL");
    if (c->stride == 0) return ak_fail(b, AK_EINVAL, call, "stride is 0");
    if (c->k_h == 0 || c->k_w == 0)
        return ak_fail(b, AK_EINVAL, call, "the kernel is %zu x %zu", c->k_h, c->k_w);
    if (!geometry_ok(c))
        return ak_fail(b, AK_EINVAL, call,
                       "the %zu x %zu kernel does not fit the %zu x %zu input padded by %zu",
                       c->k_h, c->k_w, c->in_h, c->in_w, c->pad);
    if ((unsigned)c->compute > (unsigned)AK_COMPUTE_32F_FAST_TF32)
        return ak_fail(b, AK_EINVAL, call, "invalid compute type (%d)", (int)c->compute);
    const size_t oh = ak_conv2d_out_h(c), ow = ak_conv2d_out_w(c);
    size_t kk, np, bytes;
    int rc;
    if ((rc = mul4(b, call, "x", c->batch, c->in_ch, c->in_h, c->in_w, &n->x)) ||
        (rc = mul4(b, call, "w", c->out_ch, c->in_ch, c->k_h, c->k_w, &n->w)) ||
        (rc = mul4(b, call, "y", c->batch, c->out_ch, oh, ow, &n->y)) ||
        (rc = mul4(b, call, "in_ch * k_h * k_w", 1, c->in_ch, c->k_h, c->k_w, &kk)) ||
        (rc = mul4(b, call, "batch * out_h * out_w", 1, c->batch, oh, ow, &np)) ||
        (rc = ak_check_mul(b, call, "the im2col matrix", kk, np, &n->col)) ||
        (rc = ak_check_mul(b, call, "the im2col matrix", n->col, sizeof(float), &bytes)) ||
        (rc = ak_check_mul(b, call, "y", n->y, sizeof(float), &bytes)))
        return rc;
    /* the GEMMs take int sizes */
    if (kk > (size_t)INT_MAX || np > (size_t)INT_MAX || c->out_ch > (size_t)INT_MAX)
        return ak_fail(b, AK_EINVAL, call,
                       "a GEMM dimension exceeds INT_MAX (in_ch k_h k_w = %zu, batch out_h out_w "
                       "= %zu, out_ch = %zu)",
                       kk, np, c->out_ch);
    return AK_OK;
}

static int check_pairing(ak_backend *b, const char *call, ak_dtype a, ak_dtype bb, ak_dtype c,
                         ak_compute k, const char *const names[3])
{
    char why[200];
    if (ak_gemm_pairing_ok(a, bb, c, k, names, why, sizeof why)) return AK_OK;
    return ak_fail(b, AK_EUNSUPPORTED, call, "%s", why);
}

int ak_conv2d_forward(ak_backend *b, const ak_conv2d *c, ak_tensor y, ak_tensor x, ak_tensor w,
                      ak_tensor bias)
{
    static const char *const names[3] = {"w", "x", "y"};
    const char *call = "ak_conv2d_forward";
    AK_BEGIN(b);
    conv_sizes n;
    int rc;
    if ((rc = check_conv(b, call, c, &n)) || (rc = ak_check_tensor(b, call, "y", y, n.y)) ||
        (rc = ak_check_tensor(b, call, "x", x, n.x)) ||
        (rc = ak_check_tensor(b, call, "w", w, n.w)) ||
        (rc = ak_check_optional(b, call, "bias", bias, c->out_ch)) ||
        (rc = check_pairing(b, call, w.dtype, x.dtype, y.dtype, c->compute, names)))
        return rc;
    if (n.y == 0) return AK_OK;
    return b->ops->conv2d_forward(b, c, y, x, w, bias);
}

int ak_conv2d_backward(ak_backend *b, const ak_conv2d *c, ak_tensor dx, ak_tensor dw,
                       ak_tensor dbias, ak_tensor dy, ak_tensor x, ak_tensor w)
{
    /* dW = dY col^T reads dy and x; dcol = W^T dY reads w and dy */
    static const char *const names[3] = {"dy", "x", "dw"};
    const char *call = "ak_conv2d_backward";
    AK_BEGIN(b);
    conv_sizes n;
    int rc;
    if ((rc = check_conv(b, call, c, &n)) || (rc = ak_check_optional(b, call, "dx", dx, n.x)) ||
        (rc = ak_check_tensor(b, call, "dw", dw, n.w)) ||
        (rc = ak_check_optional(b, call, "dbias", dbias, c->out_ch)) ||
        (rc = ak_check_tensor(b, call, "dy", dy, n.y)) ||
        (rc = ak_check_tensor(b, call, "x", x, n.x)) ||
        (rc = ak_check_tensor(b, call, "w", w, n.w)) ||
        (rc = check_pairing(b, call, dy.dtype, x.dtype, dw.dtype, c->compute, names)))
        return rc;
    /* dcol (ak_conv_acc_dtype) is a valid GEMM output for any w == dy */
    if (w.dtype != dy.dtype)
        return ak_fail(b, AK_EUNSUPPORTED, call,
                       "w is %s but dy and x are %s: the GEMMs take one input dtype",
                       ak_dtype_name(w.dtype), ak_dtype_name(dy.dtype));
    if (dx.n == 0 && dw.n == 0 && dbias.n == 0) return AK_OK;
    return b->ops->conv2d_backward(b, c, dx, dw, dbias, dy, x, w);
}
