/* softmax.c: nn.Softmax(dim=-1) and nn.LogSoftmax(dim=-1) as layers, over
 * every token's features in a sequence net, over every sample's features
 * otherwise; max-subtracted, computed in fp32 from the input read exactly,
 * the result rounded once to the layer's format (PyTorch's kernels
 * accumulate in float for half inputs).  Both are on autocast's fp32 list
 * (op classes "softmax" and "log_softmax"): fp32 from O1 on unless a list
 * says otherwise; in a low format the output underflows to 0 where a real
 * fp16 softmax's would.  The backward reads the layer's output. */
#include "layer.h"
#include "nets.h"

#include <string.h>

static ak_softmax_args args(const layer_io *io, bool log)
{
    const net_layer *l = io->l;
    ak_softmax_args a;
    memset(&a, 0, sizeof a);
    a.rows = l->tokens ? io->rows * l->tokens : io->rows;
    a.cols = l->tokens ? l->in_c : l->in_c * l->in_h * l->in_w;
    a.log = log;
    a.scale = 1.0f;
    a.acc = AK_F32;
    return a;
}

static int forward_soft(const layer_io *io)
{
    const ak_softmax_args a = args(io, false);
    return ak_softmax_forward(io->b, &a, io->out, io->in);
}
static int forward_log(const layer_io *io)
{
    const ak_softmax_args a = args(io, true);
    return ak_softmax_forward(io->b, &a, io->out, io->in);
}
static int backward_soft(const layer_io *io)
{
    const ak_softmax_args a = args(io, false);
    return io->dx.data ? ak_softmax_backward(io->b, &a, io->dx, io->dy, io->out) : 0;
}
static int backward_log(const layer_io *io)
{
    const ak_softmax_args a = args(io, true);
    return io->dx.data ? ak_softmax_backward(io->b, &a, io->dx, io->dy, io->out) : 0;
}

/* max, exp, sum, divide (or log); backward a dot product and a pass */
static layer_cost cost(const net_layer *l, size_t rows, size_t elem_bytes)
{
    const double n = (double)rows * (double)(l->in_c * l->in_h * l->in_w), e = (double)elem_bytes;
    layer_cost c;
    c.fwd_flops = 5 * n;
    c.bwd_flops = 4 * n;
    c.fwd_bytes = 2 * n * e;
    c.bwd_bytes = 3 * n * e;
    return c;
}

const layer_kind layer_softmax = {.name = "softmax",
                                  .op_class = "softmax",
                                  .prec = LAYER_PREC_FP32,
                                  .shape = layer_same_shape,
                                  .tensors = layer_no_tensors,
                                  .forward = forward_soft,
                                  .backward = backward_soft,
                                  .cost = cost};
const layer_kind layer_log_softmax = {.name = "log_softmax",
                                      .op_class = "log_softmax",
                                      .prec = LAYER_PREC_FP32,
                                      .shape = layer_same_shape,
                                      .tensors = layer_no_tensors,
                                      .forward = forward_log,
                                      .backward = backward_log,
                                      .cost = cost};
