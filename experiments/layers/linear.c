/* linear.c: PyTorch's Linear, y = x W^T + b with W (out, in), as a GEMM and
 * a bias add (none with NET_NO_BIAS); a linear layer after a conv reads the
 * NCHW activations flattened; in a sequence net it maps every token's
 * features (the last dimension), as nn.Linear does on (batch, T, C). */
#include "layer.h"
#include "nets.h"

#include <string.h>

static int shape(net_layer *l)
{
    if (l->tokens) { /* per token: (features, tokens, 1) */
        if (l->in_h != l->tokens || l->in_w != 1) return -1;
        l->out_h = l->tokens;
        l->out_w = 1;
        return l->in_c && l->out_c ? 0 : -1;
    }
    l->in_c = l->in_c * l->in_h * l->in_w; /* flattened NCHW */
    l->in_h = l->in_w = 1;
    l->out_h = l->out_w = 1;
    return l->in_c && l->out_c ? 0 : -1;
}

/* The GEMM's rows: samples, or samples x tokens. */
static size_t gemm_rows(const layer_io *io)
{
    return io->rows * (io->l->tokens ? io->l->tokens : 1);
}

static int tensors(const net_layer *l, layer_tensor t[LAYER_MAX_TENSORS])
{
    t[0] =
        (layer_tensor){"weight", 2, {l->out_c, l->in_c}, LAYER_INIT_UNIFORM, l->in_c, true, true};
    if (l->flags & NET_NO_BIAS) return 1;
    t[1] = (layer_tensor){"bias", 1, {l->out_c}, LAYER_INIT_UNIFORM, l->in_c, true, false};
    return 2;
}

static int forward(const layer_io *io)
{
    const net_layer *l = io->l;
    ak_gemm_args g;
    memset(&g, 0, sizeof g);
    g.trans_b = true; /* y = x W^T: W is (out, in) */
    g.m = gemm_rows(io);
    g.n = l->out_c;
    g.k = l->in_c;
    g.alpha = 1.0f;
    g.a = io->in;
    g.lda = l->in_c;
    g.b = io->w[0];
    g.ldb = l->in_c;
    g.c = io->out;
    g.ldc = l->out_c;
    g.compute = io->compute;
    int rc = ak_gemm(io->b, &g);
    if (!rc && io->w[1].data) rc = ak_bias_add(io->b, io->out, io->w[1], g.m, l->out_c);
    return rc;
}

static int backward(const layer_io *io)
{
    const net_layer *l = io->l;
    ak_gemm_args g;
    memset(&g, 0, sizeof g);
    g.alpha = 1.0f;
    g.compute = io->compute;
    /* dW (out, in) = dy^T x */
    g.trans_a = true;
    g.m = l->out_c;
    g.n = l->in_c;
    g.k = gemm_rows(io);
    g.a = io->dy;
    g.lda = l->out_c;
    g.b = io->in;
    g.ldb = l->in_c;
    g.c = io->dw[0];
    g.ldc = l->in_c;
    int rc = ak_gemm(io->b, &g);
    if (!rc && io->dw[1].data) rc = ak_bias_grad(io->b, io->dw[1], io->dy, g.k, l->out_c);
    if (!rc && io->dx.data) { /* dx (rows, in) = dy W */
        memset(&g, 0, sizeof g);
        g.alpha = 1.0f;
        g.compute = io->compute;
        g.m = gemm_rows(io);
        g.n = l->in_c;
        g.k = l->out_c;
        g.a = io->dy;
        g.lda = l->out_c;
        g.b = io->w[0];
        g.ldb = l->in_c;
        g.c = io->dx;
        g.ldc = l->in_c;
        rc = ak_gemm(io->b, &g);
    }
    return rc;
}

static layer_cost cost(const net_layer *l, size_t rows, size_t elem_bytes)
{
    const double r = (double)rows * (double)(l->tokens ? l->tokens : 1), in = (double)l->in_c,
                 out = (double)l->out_c, e = (double)elem_bytes;
    layer_cost c;
    c.fwd_flops = 2 * r * in * out + r * out; /* GEMM, bias */
    c.bwd_flops = 4 * r * in * out + r * out; /* dW, dx, db */
    c.fwd_bytes = e * (r * in + in * out + out + r * out);
    c.bwd_bytes = e * (2 * r * out + 2 * r * in + 2 * in * out + out);
    return c;
}

const layer_kind layer_linear = {.name = "linear",
                                 .op_class = "linear",
                                 .prec = LAYER_PREC_LOW,
                                 .shape = shape,
                                 .tensors = tensors,
                                 .forward = forward,
                                 .backward = backward,
                                 .cost = cost};
