/* maxpool2.c: 2 x 2 max-pooling with stride 2 over even heights and
 * widths (PyTorch's MaxPool2d(2)); its backward routes dy to the element
 * forward chose, found again from the input (kernels.h). */
#include "layer.h"
#include "nets.h"

static int shape(net_layer *l)
{
    l->out_c = l->in_c;
    l->out_h = l->in_h / 2;
    l->out_w = l->in_w / 2;
    return l->in_h && l->in_w && l->in_h % 2 == 0 && l->in_w % 2 == 0 ? 0 : -1;
}

static int forward(const layer_io *io)
{
    const net_layer *l = io->l;
    return ak_maxpool2_forward(io->b, io->rows * l->in_c, l->in_h, l->in_w, io->out, io->in);
}

static int backward(const layer_io *io)
{
    const net_layer *l = io->l;
    if (!io->dx.data) return 0;
    return ak_maxpool2_backward(io->b, io->rows * l->in_c, l->in_h, l->in_w, io->dx, io->dy,
                                io->in);
}

static layer_cost cost(const net_layer *l, size_t rows, size_t elem_bytes)
{
    const double r = (double)rows, e = (double)elem_bytes;
    const double in = r * (double)(l->in_c * l->in_h * l->in_w);
    const double out = r * (double)(l->out_c * l->out_h * l->out_w);
    layer_cost c;
    c.fwd_flops = 3 * out; /* three comparisons per window */
    c.bwd_flops = 3 * out;
    c.fwd_bytes = e * (in + out);
    c.bwd_bytes = e * (in + out + in); /* x and dy in, dx out */
    return c;
}

const layer_kind layer_maxpool2 = {.name = "maxpool2",
                                   .op_class = "maxpool",
                                   .prec = LAYER_PREC_FOLLOW,
                                   .shape = shape,
                                   .tensors = layer_no_tensors,
                                   .forward = forward,
                                   .backward = backward,
                                   .cost = cost};
