/* batchnorm2d.c: PyTorch's nn.BatchNorm2d(C) (eps 1e-5, momentum 0.1,
 * affine): training normalizes with the batch's statistics and updates the
 * running mean and (unbiased) variance; evaluation uses the running ones.
 * weight and bias are trainable; running_mean and running_var are buffers
 * (fp32, in checkpoints, PyTorch's names; num_batches_tracked is not kept:
 * a momentum of 0.1 never reads it).  The op class is "batchnorm", on no
 * autocast list (it follows its input); Apex's and MindSpore's O2 keep its
 * parameters in fp32 (keep_batchnorm_fp32: the plan's params_f32).  The
 * kernels are ak_batchnorm_forward/backward; the saved mean and 1/std of
 * the forward live in the workspace. */
#include "layer.h"
#include "nets.h"

#define BN_EPS      1e-5
#define BN_MOMENTUM 0.1

static int tensors(const net_layer *l, layer_tensor t[LAYER_MAX_TENSORS])
{
    const size_t c = l->in_c;
    t[0] = (layer_tensor){"weight", 1, {c}, LAYER_INIT_ONE, 0, true, true};
    t[1] = (layer_tensor){"bias", 1, {c}, LAYER_INIT_ZERO, 0, true, false};
    t[2] = (layer_tensor){"running_mean", 1, {c}, LAYER_INIT_ZERO, 0, false, false};
    t[3] = (layer_tensor){"running_var", 1, {c}, LAYER_INIT_ONE, 0, false, false};
    return 4;
}

static ak_batchnorm args(const layer_io *io)
{
    const net_layer *l = io->l;
    const ak_batchnorm a = {.n = io->rows,
                            .c = l->in_c,
                            .hw = l->in_h * l->in_w,
                            .eps = BN_EPS,
                            .momentum = BN_MOMENTUM,
                            .training = io->training};
    return a;
}

/* The workspace: the saved mean, then the saved 1/std, fp32 each. */
static size_t workspace(const net_layer *l, size_t rows)
{
    (void)rows;
    return 2 * l->in_c * sizeof(float);
}

static ak_tensor saved(const layer_io *io, size_t which)
{
    return ak_tensor_of((float *)io->work + which * io->l->in_c, io->l->in_c, AK_F32);
}

static int forward(const layer_io *io)
{
    const ak_batchnorm a = args(io);
    return ak_batchnorm_forward(io->b, &a, io->out, io->in, io->w[0], io->w[1], io->w[2], io->w[3],
                                io->training ? saved(io, 0) : ak_tensor_none(),
                                io->training ? saved(io, 1) : ak_tensor_none());
}

static int backward(const layer_io *io)
{
    const ak_batchnorm a = args(io);
    return ak_batchnorm_backward(io->b, &a, io->dx, io->dw[0], io->dw[1], io->dy, io->in, io->w[0],
                                 saved(io, 0), saved(io, 1));
}

/* Two passes for the statistics and one to normalize; backward two
 * reductions and one pass (counts of the formula). */
static layer_cost cost(const net_layer *l, size_t rows, size_t elem_bytes)
{
    const double n = (double)rows * (double)(l->in_c * l->in_h * l->in_w), e = (double)elem_bytes;
    layer_cost c;
    c.fwd_flops = 7 * n;
    c.bwd_flops = 9 * n;
    c.fwd_bytes = 3 * n * e;
    c.bwd_bytes = 5 * n * e;
    return c;
}

const layer_kind layer_batchnorm2d = {.name = "batchnorm2d",
                                      .op_class = "batchnorm",
                                      .prec = LAYER_PREC_FOLLOW,
                                      .shape = layer_same_shape,
                                      .tensors = tensors,
                                      .forward = forward,
                                      .backward = backward,
                                      .cost = cost,
                                      .workspace = workspace};
