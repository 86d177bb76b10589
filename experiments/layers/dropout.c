/* dropout.c: nn.Dropout(p) (the net's p): in training each element is kept
 * with probability 1 - p and scaled by 1 / (1 - p), by a mask from Philox
 * keyed by the run's seed and the layer, counted from the step
 * (layer_io.rng_key, rng_offset), the same on every backend and in the
 * backward; in evaluation the identity.  Op class "dropout", on no list. */
#include "layer.h"
#include "nets.h"

static int shape(net_layer *l) { return l->p >= 0 && l->p < 1 ? layer_same_shape(l) : -1; }

static int forward(const layer_io *io)
{
    if (!io->training) return ak_cast(io->b, io->out, io->in, NULL);
    return ak_dropout_forward(io->b, (float)io->l->p, io->rng_key, io->rng_offset, io->out, io->in);
}

static int backward(const layer_io *io)
{
    if (!io->dx.data) return 0;
    return ak_dropout_backward(io->b, (float)io->l->p, io->rng_key, io->rng_offset, io->dx, io->dy);
}

static layer_cost cost(const net_layer *l, size_t rows, size_t elem_bytes)
{
    const double n = (double)rows * (double)(l->in_c * l->in_h * l->in_w), e = (double)elem_bytes;
    layer_cost c;
    c.fwd_flops = 12 * n; /* a Philox draw and a multiply (a count of the formula) */
    c.bwd_flops = 12 * n;
    c.fwd_bytes = 2 * n * e;
    c.bwd_bytes = 2 * n * e;
    return c;
}

const layer_kind layer_dropout = {.name = "dropout",
                                  .op_class = "dropout",
                                  .prec = LAYER_PREC_FOLLOW,
                                  .shape = shape,
                                  .tensors = layer_no_tensors,
                                  .forward = forward,
                                  .backward = backward,
                                  .cost = cost};
