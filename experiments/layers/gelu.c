/* gelu.c: GELU, elementwise, in PyTorch's two forms (nn.GELU() and
 * nn.GELU(approximate='tanh')), one row each; the backward reads the
 * layer's input.  Not on autocast's lists: it follows its input. */
#include "layer.h"
#include "nets.h"

static int forward_erf(const layer_io *io) { return ak_gelu(io->b, AK_GELU_ERF, io->out, io->in); }
static int forward_tanh(const layer_io *io)
{
    return ak_gelu(io->b, AK_GELU_TANH, io->out, io->in);
}

static int backward_erf(const layer_io *io)
{
    return io->dx.data ? ak_gelu_backward(io->b, AK_GELU_ERF, io->dx, io->dy, io->in) : 0;
}
static int backward_tanh(const layer_io *io)
{
    return io->dx.data ? ak_gelu_backward(io->b, AK_GELU_TANH, io->dx, io->dy, io->in) : 0;
}

/* About 20 flops an element for the value, 25 for the derivative (exp and
 * a rational part: a count of the formula, not of the emulated code). */
static layer_cost cost(const net_layer *l, size_t rows, size_t elem_bytes)
{
    const double n = (double)rows * (double)(l->in_c * l->in_h * l->in_w), e = (double)elem_bytes;
    layer_cost c;
    c.fwd_flops = 20 * n;
    c.bwd_flops = 25 * n;
    c.fwd_bytes = 2 * n * e; /* x in, y out */
    c.bwd_bytes = 3 * n * e; /* dy and x in, dx out */
    return c;
}

const layer_kind layer_gelu = {.name = "gelu",
                               .op_class = "gelu",
                               .prec = LAYER_PREC_FOLLOW,
                               .shape = layer_same_shape,
                               .tensors = layer_no_tensors,
                               .forward = forward_erf,
                               .backward = backward_erf,
                               .cost = cost};
const layer_kind layer_gelu_tanh = {.name = "gelu_tanh",
                                    .op_class = "gelu",
                                    .prec = LAYER_PREC_FOLLOW,
                                    .shape = layer_same_shape,
                                    .tensors = layer_no_tensors,
                                    .forward = forward_tanh,
                                    .backward = backward_tanh,
                                    .cost = cost};
