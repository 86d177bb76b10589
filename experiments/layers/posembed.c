/* posembed.c: learned position embeddings, GPT-2's wpe: y[s][t] = x[s][t] +
 * weight[t] for every sample s of a sequence net, weight (tokens, C) from
 * N(0, 0.02^2).  As PyTorch's tok_emb + pos_emb: the exact sum rounded once
 * to the layer's format (ak_bias_add over samples); the weight's gradient
 * is the sum of dy over the samples (ak_bias_grad), dx is dy.  Op class
 * "embedding" (nn.Embedding, on no autocast list): it follows its input. */
#include "layer.h"
#include "nets.h"

#define GPT2_INIT_FAN_IN 2500 /* 1/sqrt(2500) = 0.02 */

static int shape(net_layer *l)
{
    if (!l->tokens || l->in_h != l->tokens || l->in_w != 1) return -1;
    return layer_same_shape(l);
}

static int tensors(const net_layer *l, layer_tensor t[LAYER_MAX_TENSORS])
{
    t[0] = (layer_tensor){"weight", 2,   {l->tokens, l->in_c}, LAYER_INIT_NORMAL, GPT2_INIT_FAN_IN,
                          true,     true};
    return 1;
}

static int forward(const layer_io *io)
{
    const size_t per = io->l->tokens * io->l->in_c;
    int rc = ak_cast(io->b, io->out, io->in, NULL); /* the same format: a copy */
    return rc ? rc : ak_bias_add(io->b, io->out, io->w[0], io->rows, per);
}

static int backward(const layer_io *io)
{
    const size_t per = io->l->tokens * io->l->in_c;
    int rc = ak_bias_grad(io->b, io->dw[0], io->dy, io->rows, per);
    if (!rc && io->dx.data) rc = ak_cast(io->b, io->dx, io->dy, NULL);
    return rc;
}

static layer_cost cost(const net_layer *l, size_t rows, size_t elem_bytes)
{
    const double per = (double)(l->tokens * l->in_c), n = (double)rows * per;
    const double e = (double)elem_bytes;
    layer_cost c;
    c.fwd_flops = n;
    c.bwd_flops = n;
    c.fwd_bytes = 2 * n * e + per * e;
    c.bwd_bytes = 2 * n * e + per * e;
    return c;
}

const layer_kind layer_posembed = {.name = "posembed",
                                   .op_class = "embedding",
                                   .prec = LAYER_PREC_FOLLOW,
                                   .shape = shape,
                                   .tensors = tensors,
                                   .forward = forward,
                                   .backward = backward,
                                   .cost = cost};
