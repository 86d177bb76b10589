/* cpu/conv.c: STUB. */
#include "backend.h"

int ak_cpu_conv2d_forward(ak_backend *b, const ak_conv2d *c, ak_tensor y, ak_tensor x, ak_tensor w, ak_tensor bias)
{
    (void)c; (void)y; (void)x; (void)w; (void)bias;
    return ak_fail(b, AK_ENOTIMPL, "ak_conv2d_forward", "not implemented yet");
}

int ak_cpu_conv2d_backward(ak_backend *b, const ak_conv2d *c, ak_tensor dx, ak_tensor dw, ak_tensor dbias, ak_tensor dy, ak_tensor x, ak_tensor w)
{
    (void)c; (void)dx; (void)dw; (void)dbias; (void)dy; (void)x; (void)w;
    return ak_fail(b, AK_ENOTIMPL, "ak_conv2d_backward", "not implemented yet");
}

