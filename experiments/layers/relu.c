/* relu.c: ReLU, elementwise; its backward reads its own output. */
#include "layer.h"
#include "nets.h"

static int forward(const layer_io *io) { return ak_relu(io->b, io->out, io->in); }

static int backward(const layer_io *io)
{
    return io->dx.data ? ak_relu_backward(io->b, io->dx, io->dy, io->out) : 0;
}

static layer_cost cost(const net_layer *l, size_t rows, size_t elem_bytes)
{
    const double n = (double)rows * (double)(l->in_c * l->in_h * l->in_w), e = (double)elem_bytes;
    layer_cost c;
    c.fwd_flops = n;
    c.bwd_flops = n;
    c.fwd_bytes = 2 * n * e; /* x in, y out */
    c.bwd_bytes = 3 * n * e; /* dy and y in, dx out */
    return c;
}

const layer_kind layer_relu = {.name = "relu",
                               .op_class = "relu",
                               .prec = LAYER_PREC_FOLLOW,
                               .shape = layer_same_shape,
                               .tensors = layer_no_tensors,
                               .forward = forward,
                               .backward = backward,
                               .cost = cost};
