/* avgpool.c: global average pooling (PyTorch's AdaptiveAvgPool2d(1)): each
 * channel's plane to its mean, c x h x w -> c x 1 x 1.  The sum is added
 * in fp32 and rounded once to the run format (kernels.h); not on
 * autocast's lists, it follows its input. */
#include "layer.h"
#include "nets.h"

static int shape(net_layer *l)
{
    l->out_c = l->in_c;
    l->out_h = 1;
    l->out_w = 1;
    return l->in_c && l->in_h && l->in_w ? 0 : -1;
}

static int forward(const layer_io *io)
{
    const net_layer *l = io->l;
    return ak_avgpool_forward(io->b, io->rows * l->in_c, l->in_h * l->in_w, io->out, io->in);
}

static int backward(const layer_io *io)
{
    const net_layer *l = io->l;
    if (!io->dx.data) return 0;
    return ak_avgpool_backward(io->b, io->rows * l->in_c, l->in_h * l->in_w, io->dx, io->dy);
}

static layer_cost cost(const net_layer *l, size_t rows, size_t elem_bytes)
{
    const double r = (double)rows, e = (double)elem_bytes;
    const double in = r * (double)(l->in_c * l->in_h * l->in_w), out = r * (double)l->in_c;
    layer_cost c;
    c.fwd_flops = in + out; /* the additions, one division a plane */
    c.bwd_flops = out;
    c.fwd_bytes = e * (in + out);
    c.bwd_bytes = e * (out + in); /* dy in, dx out */
    return c;
}

const layer_kind layer_avgpool = {.name = "avgpool",
                                  .op_class = "avgpool",
                                  .prec = LAYER_PREC_FOLLOW,
                                  .shape = shape,
                                  .tensors = layer_no_tensors,
                                  .forward = forward,
                                  .backward = backward,
                                  .cost = cost};
