/* conv.c: STUB (to be written). */
#include "backend.h"

int ak_conv2d_forward(ak_backend *b, const ak_conv2d *c, ak_tensor y, ak_tensor x, ak_tensor w, ak_tensor bias)
{
    AK_BEGIN(b);
    return b->ops->conv2d_forward(b, c, y, x, w, bias);
}

int ak_conv2d_backward(ak_backend *b, const ak_conv2d *c, ak_tensor dx, ak_tensor dw, ak_tensor dbias, ak_tensor dy, ak_tensor x, ak_tensor w)
{
    AK_BEGIN(b);
    return b->ops->conv2d_backward(b, c, dx, dw, dbias, dy, x, w);
}

size_t ak_conv2d_out_h(const ak_conv2d *c) { return (c->in_h + 2 * c->pad - c->k_h) / c->stride + 1; }
size_t ak_conv2d_out_w(const ak_conv2d *c) { return (c->in_w + 2 * c->pad - c->k_w) / c->stride + 1; }
