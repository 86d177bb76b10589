/* layernorm.c: PyTorch's nn.LayerNorm(C) (eps 1e-5, affine) over the last
 * dimension: every token's features in a sequence net, every sample's
 * features otherwise.  The op class "layernorm" is on autocast's fp32 list
 * (layer_norm), so by default it runs in fp32 from O1 on.  The kernels are
 * ak_layernorm_forward/backward; the saved mean and 1/std per row live in
 * the workspace. */
#include "layer.h"
#include "nets.h"

#define LN_EPS 1e-5

/* Rows normalized for a batch of rows samples, and their length. */
static size_t ln_rows(const net_layer *l, size_t rows)
{
    return l->tokens ? rows * l->tokens : rows * l->in_h * l->in_w;
}

static int tensors(const net_layer *l, layer_tensor t[LAYER_MAX_TENSORS])
{
    t[0] = (layer_tensor){"weight", 1, {l->in_c}, LAYER_INIT_ONE, 0, true, true};
    t[1] = (layer_tensor){"bias", 1, {l->in_c}, LAYER_INIT_ZERO, 0, true, false};
    return 2;
}

static size_t workspace(const net_layer *l, size_t rows)
{
    return 2 * ln_rows(l, rows) * sizeof(float);
}

static ak_tensor saved(const layer_io *io, size_t which)
{
    const size_t n = ln_rows(io->l, io->rows);
    return ak_tensor_of((float *)io->work + which * n, n, AK_F32);
}

static int shape(net_layer *l)
{
    /* features on the last dimension: (C, tokens, 1), or (C, 1, 1) */
    if (l->in_w != 1 || (!l->tokens && l->in_h != 1)) return -1;
    return layer_same_shape(l);
}

static int forward(const layer_io *io)
{
    return ak_layernorm_forward(io->b, ln_rows(io->l, io->rows), io->l->in_c, LN_EPS, io->out,
                                io->in, io->w[0], io->w[1], saved(io, 0), saved(io, 1));
}

static int backward(const layer_io *io)
{
    return ak_layernorm_backward(io->b, ln_rows(io->l, io->rows), io->l->in_c, io->dx, io->dw[0],
                                 io->dw[1], io->dy, io->in, io->w[0], saved(io, 0), saved(io, 1));
}

static layer_cost cost(const net_layer *l, size_t rows, size_t elem_bytes)
{
    const double n = (double)ln_rows(l, rows) * (double)l->in_c, e = (double)elem_bytes;
    layer_cost c;
    c.fwd_flops = 7 * n;
    c.bwd_flops = 9 * n;
    c.fwd_bytes = 2 * n * e;
    c.bwd_bytes = 4 * n * e;
    return c;
}

const layer_kind layer_layernorm = {.name = "layernorm",
                                    .op_class = "layernorm",
                                    .prec = LAYER_PREC_FP32,
                                    .shape = shape,
                                    .tensors = tensors,
                                    .forward = forward,
                                    .backward = backward,
                                    .cost = cost,
                                    .workspace = workspace};
