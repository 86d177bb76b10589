/* add.c: the residual add of ResNet's blocks and the transformer's, y = in
 * + in2 (two inputs of one shape, both in the layer's format: the model casts
 * them), the exact sum rounded once to the layer's format; autocast's
 * "promote" op: it runs in the wider of its inputs' formats in O1.  The
 * backward hands dy to both inputs; the model sums the gradients of an
 * output that two layers read. */
#include "layer.h"
#include "nets.h"

static int forward(const layer_io *io)
{
    /* out = in exactly (same format), then out += in2 rounded once */
    int rc = ak_cast(io->b, io->out, io->in, NULL);
    return rc ? rc : ak_accumulate(io->b, io->out, io->in2);
}

static int backward(const layer_io *io)
{
    int rc = io->dx.data ? ak_cast(io->b, io->dx, io->dy, NULL) : 0;
    if (!rc && io->dx2.data) rc = ak_cast(io->b, io->dx2, io->dy, NULL);
    return rc;
}

static layer_cost cost(const net_layer *l, size_t rows, size_t elem_bytes)
{
    const double n = (double)rows * (double)(l->in_c * l->in_h * l->in_w), e = (double)elem_bytes;
    layer_cost c;
    c.fwd_flops = n;
    c.bwd_flops = n; /* the model's sum of the two gradients of a shared input */
    c.fwd_bytes = 3 * n * e;
    c.bwd_bytes = 3 * n * e;
    return c;
}

const layer_kind layer_add = {.name = "add",
                              .op_class = "add",
                              .prec = LAYER_PREC_FOLLOW,
                              .shape = layer_same_shape,
                              .tensors = layer_no_tensors,
                              .forward = forward,
                              .backward = backward,
                              .cost = cost,
                              .inputs = 2};
