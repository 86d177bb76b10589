/* embedding.c: PyTorch's nn.Embedding(vocab, C) on a sequence net's token
 * ids: (1, tokens, 1) ids in, (C, tokens, 1) out; the weight (vocab, C)
 * starts as GPT-2's N(0, 0.02^2).  Its input holds integers and is never
 * cast (index_input); it is the first layer, so it has no dx.  The backward
 * sums the gradients of every occurrence of a token into its row, in the
 * format the plan gives (plan.embed_acc: fp32 as PyTorch's CUDA kernel, or
 * the low format: the study of lost updates of frequent tokens).  Op class
 * "embedding", on no autocast list: it follows its input (fp32 ids), so O1
 * runs it in fp32 and O2/O3 in the low format. */
#include "layer.h"
#include "nets.h"

#define GPT2_INIT_FAN_IN 2500 /* 1/sqrt(2500) = 0.02 */

static int shape(net_layer *l)
{
    if (!l->tokens || !l->vocab || !l->out_c || l->in_c != 1 || l->in_h != l->tokens ||
        l->in_w != 1)
        return -1;
    l->out_h = l->tokens;
    l->out_w = 1;
    return 0;
}

static int tensors(const net_layer *l, layer_tensor t[LAYER_MAX_TENSORS])
{
    t[0] = (layer_tensor){"weight", 2,   {l->vocab, l->out_c}, LAYER_INIT_NORMAL, GPT2_INIT_FAN_IN,
                          true,     true};
    return 1;
}

static int forward(const layer_io *io)
{
    const net_layer *l = io->l;
    return ak_embedding_forward(io->b, io->rows * l->tokens, l->out_c, l->vocab, io->in, io->w[0],
                                io->out);
}

static int backward(const layer_io *io)
{
    const net_layer *l = io->l;
    return ak_embedding_backward(io->b, io->rows * l->tokens, l->out_c, l->vocab, io->in, io->dy,
                                 io->dw[0], io->accumulate);
}

static layer_cost cost(const net_layer *l, size_t rows, size_t elem_bytes)
{
    const double n = (double)rows * (double)(l->tokens * l->out_c), e = (double)elem_bytes;
    const double w = (double)(l->vocab * l->out_c);
    layer_cost c;
    c.fwd_flops = n; /* a copy an element */
    c.bwd_flops = n + w;
    c.fwd_bytes = 2 * n * e;
    c.bwd_bytes = 2 * n * e + w * e;
    return c;
}

const layer_kind layer_embedding = {.name = "embedding",
                                    .op_class = "embedding",
                                    .prec = LAYER_PREC_FOLLOW,
                                    .shape = shape,
                                    .tensors = tensors,
                                    .forward = forward,
                                    .backward = backward,
                                    .cost = cost,
                                    .index_input = true};
