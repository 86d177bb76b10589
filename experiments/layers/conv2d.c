/* conv2d.c: PyTorch's Conv2d with a square kernel, a stride (1 unless the
 * net says) and zero padding, with or without bias (NET_NO_BIAS, as
 * ResNet's convolutions before BatchNorm); weights OIHW.  One kernel call
 * each way (kernels/conv2d). */
#include "layer.h"
#include "nets.h"

#include <string.h>

static int shape(net_layer *l)
{
    const size_t s = l->stride ? l->stride : 1;
    if (!l->out_c || !l->kernel || l->kernel > l->in_h + 2 * l->pad ||
        l->kernel > l->in_w + 2 * l->pad)
        return -1;
    l->out_h = (l->in_h + 2 * l->pad - l->kernel) / s + 1;
    l->out_w = (l->in_w + 2 * l->pad - l->kernel) / s + 1;
    return 0;
}

static int tensors(const net_layer *l, layer_tensor t[LAYER_MAX_TENSORS])
{
    const size_t k = l->kernel, fan_in = l->in_c * k * k;
    t[0] = (layer_tensor){"weight", 4,   {l->out_c, l->in_c, k, k}, LAYER_INIT_UNIFORM, fan_in,
                          true,     true};
    if (l->flags & NET_NO_BIAS) return 1;
    t[1] = (layer_tensor){"bias", 1, {l->out_c}, LAYER_INIT_UNIFORM, fan_in, true, false};
    return 2;
}

static ak_conv2d conv_shape(const layer_io *io)
{
    const net_layer *l = io->l;
    ak_conv2d c;
    memset(&c, 0, sizeof c);
    c.batch = io->rows;
    c.in_ch = l->in_c;
    c.in_h = l->in_h;
    c.in_w = l->in_w;
    c.out_ch = l->out_c;
    c.k_h = c.k_w = l->kernel;
    c.stride = l->stride ? l->stride : 1;
    c.pad = l->pad;
    c.compute = io->compute;
    return c;
}

static int forward(const layer_io *io)
{
    const ak_conv2d c = conv_shape(io);
    return ak_conv2d_forward(io->b, &c, io->out, io->in, io->w[0], io->w[1]);
}

static int backward(const layer_io *io)
{
    const ak_conv2d c = conv_shape(io);
    return ak_conv2d_backward(io->b, &c, io->dx, io->dw[0], io->dw[1], io->dy, io->in, io->w[0]);
}

static layer_cost cost(const net_layer *l, size_t rows, size_t elem_bytes)
{
    const double r = (double)rows, e = (double)elem_bytes;
    const double in = (double)(l->in_c * l->in_h * l->in_w);
    const double out = (double)(l->out_c * l->out_h * l->out_w);
    const double w = (double)(l->out_c * l->in_c * l->kernel * l->kernel);
    const double macs = r * out * (double)(l->in_c * l->kernel * l->kernel);
    layer_cost c;
    c.fwd_flops = 2 * macs + r * out; /* the convolution, bias */
    c.bwd_flops = 4 * macs + r * out; /* dW, dx, db */
    c.fwd_bytes = e * (r * in + w + (double)l->out_c + r * out);
    c.bwd_bytes = e * (2 * r * out + 2 * r * in + 2 * w + (double)l->out_c);
    (void)l->stride; /* the output shape carries the stride */
    return c;
}

const layer_kind layer_conv2d = {.name = "conv2d",
                                 .op_class = "conv",
                                 .prec = LAYER_PREC_LOW,
                                 .shape = shape,
                                 .tensors = tensors,
                                 .forward = forward,
                                 .backward = backward,
                                 .cost = cost};
