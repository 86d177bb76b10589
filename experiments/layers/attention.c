/* attention.c: the core of causal multi-head self-attention, as GPT-2's
 * (nanoGPT's CausalSelfAttention between c_attn and c_proj): the input is
 * every token's q, k, v (3C features: q of all heads, then k, then v; head
 * h's slice at h*D, D = C / heads), the output every token's heads
 * concatenated (C features).  Per sample and head:
 *     S = Q K^T,  P = softmax(S / sqrt(D)) with the causal mask,  O = P V.
 * The matmuls are batched GEMMs over the heads (ak_gemm_batched) in the
 * layer's format, op class "matmul" (autocast's bmm/matmul: low from O1
 * on); the softmax runs in the format the plan gives the "softmax" op
 * class (io->softmax: fp32 when the lists keep it there, as autocast
 * does), reading S exactly, computing in fp32 and rounding P once; P is
 * cast to the layer's format for P V, as autocast casts bmm's inputs.  A
 * low-format S can overflow (inf, then NaN in P): what the fp32 list is
 * about.  No parameters; the workspace keeps P, its cast and the scratch of
 * the backward:
 *     dP = dO V^T,  dV = P^T dO,  dS = softmax'(dP) / sqrt(D),
 *     dQ = dS K,  dK = dS^T Q. */
#include "layer.h"
#include "nets.h"

#include <math.h>
#include <string.h>

static int shape(net_layer *l)
{
    if (!l->tokens || !l->heads || l->in_h != l->tokens || l->in_w != 1 || l->in_c % 3 ||
        (l->in_c / 3) % l->heads)
        return -1;
    l->out_c = l->in_c / 3;
    l->out_h = l->tokens;
    l->out_w = 1;
    return 0;
}

/* Elements of one score tensor (every sample, head, query and key). */
static size_t scores(const net_layer *l, size_t rows)
{
    return rows * l->heads * l->tokens * l->tokens;
}

/* Four score-sized buffers, 4 bytes an element at most: P (softmax
 * format), P cast (layer format), S or dP, dS. */
static size_t workspace(const net_layer *l, size_t rows) { return 4 * scores(l, rows) * 4; }

static ak_tensor buffer(const layer_io *io, int which, ak_dtype dt)
{
    const size_t n = scores(io->l, io->rows);
    return ak_tensor_of((char *)io->work + (size_t)which * n * 4, n, dt);
}

/* The part of t from element off on. */
static ak_tensor from(ak_tensor t, size_t off)
{
    return ak_tensor_of((char *)t.data + off * ak_dtype_size(t.dtype), t.n - off, t.dtype);
}

typedef struct dims {
    size_t t, c, d, h; /* tokens, features, head size, heads */
} dims;

static dims dims_of(const net_layer *l)
{
    const dims d = {l->tokens, l->out_c, l->out_c / l->heads, l->heads};
    return d;
}

/* One batched GEMM over the heads of sample s: C_h = op(A_h) op(B_h). */
static int bmm(const layer_io *io, bool ta, bool tb, size_t m, size_t n, size_t k, ak_tensor a,
               size_t lda, size_t sa, ak_tensor b, size_t ldb, size_t sb, ak_tensor c, size_t ldc,
               size_t sc)
{
    ak_gemm_args g;
    memset(&g, 0, sizeof g);
    g.trans_a = ta;
    g.trans_b = tb;
    g.m = m;
    g.n = n;
    g.k = k;
    g.alpha = 1.0f;
    g.a = a;
    g.lda = lda;
    g.b = b;
    g.ldb = ldb;
    g.c = c;
    g.ldc = ldc;
    g.compute = io->compute;
    return ak_gemm_batched(io->b, &g, io->l->heads, sa, sb, sc);
}

static ak_softmax_args softmax_args(const layer_io *io)
{
    const dims d = dims_of(io->l);
    ak_softmax_args a;
    memset(&a, 0, sizeof a);
    a.rows = io->rows * d.h * d.t;
    a.cols = d.t;
    a.causal_t = d.t;
    a.scale = (float)(1.0 / sqrt((double)d.d));
    a.acc = AK_F32;
    return a;
}

static int forward(const layer_io *io)
{
    const dims d = dims_of(io->l);
    const ak_dtype run = io->out.dtype;
    const ak_tensor s = buffer(io, 2, run), p = buffer(io, 0, io->softmax);
    const ak_tensor pc = io->softmax == run ? p : buffer(io, 1, run);
    const size_t tt = d.t * d.t;
    int rc = 0;
    for (size_t i = 0; i < io->rows && !rc; i++) { /* S = Q K^T */
        const ak_tensor qkv = from(io->in, i * d.t * 3 * d.c);
        rc = bmm(io, false, true, d.t, d.t, d.d, qkv, 3 * d.c, d.d, from(qkv, d.c), 3 * d.c, d.d,
                 from(s, i * d.h * tt), d.t, tt);
    }
    const ak_softmax_args sa = softmax_args(io);
    if (!rc) rc = ak_softmax_forward(io->b, &sa, p, s);
    if (!rc && pc.data != p.data) rc = ak_cast(io->b, pc, p, NULL);
    for (size_t i = 0; i < io->rows && !rc; i++) { /* O = P V */
        const ak_tensor qkv = from(io->in, i * d.t * 3 * d.c);
        rc = bmm(io, false, false, d.t, d.d, d.t, from(pc, i * d.h * tt), d.t, tt,
                 from(qkv, 2 * d.c), 3 * d.c, d.d, from(io->out, i * d.t * d.c), d.c, d.d);
    }
    return rc;
}

static int backward(const layer_io *io)
{
    const dims d = dims_of(io->l);
    const ak_dtype run = io->dy.dtype;
    const ak_tensor p = buffer(io, 0, io->softmax);
    const ak_tensor pc = io->softmax == run ? p : buffer(io, 1, run);
    const ak_tensor dp = buffer(io, 2, run), ds = buffer(io, 3, run);
    const size_t tt = d.t * d.t;
    int rc = 0;
    for (size_t i = 0; i < io->rows && !rc; i++) {
        const ak_tensor qkv = from(io->in, i * d.t * 3 * d.c), dy = from(io->dy, i * d.t * d.c);
        const ak_tensor dqkv = from(io->dx, i * d.t * 3 * d.c);
        /* dP = dO V^T;  dV = P^T dO */
        rc = bmm(io, false, true, d.t, d.t, d.d, dy, d.c, d.d, from(qkv, 2 * d.c), 3 * d.c, d.d,
                 from(dp, i * d.h * tt), d.t, tt);
        if (!rc)
            rc = bmm(io, true, false, d.t, d.d, d.t, from(pc, i * d.h * tt), d.t, tt, dy, d.c, d.d,
                     from(dqkv, 2 * d.c), 3 * d.c, d.d);
    }
    const ak_softmax_args sa = softmax_args(io);
    if (!rc) rc = ak_softmax_backward(io->b, &sa, ds, dp, p);
    for (size_t i = 0; i < io->rows && !rc; i++) {
        const ak_tensor qkv = from(io->in, i * d.t * 3 * d.c);
        const ak_tensor dqkv = from(io->dx, i * d.t * 3 * d.c), dsi = from(ds, i * d.h * tt);
        /* dQ = dS K;  dK = dS^T Q */
        rc = bmm(io, false, false, d.t, d.d, d.t, dsi, d.t, tt, from(qkv, d.c), 3 * d.c, d.d, dqkv,
                 3 * d.c, d.d);
        if (!rc)
            rc = bmm(io, true, false, d.t, d.d, d.t, dsi, d.t, tt, qkv, 3 * d.c, d.d,
                     from(dqkv, d.c), 3 * d.c, d.d);
    }
    return rc;
}

static layer_cost cost(const net_layer *l, size_t rows, size_t elem_bytes)
{
    const double r = (double)rows, t = (double)l->tokens, c = (double)l->out_c;
    const double e = (double)elem_bytes, sc = (double)scores(l, rows);
    layer_cost k;
    k.fwd_flops = 4 * r * t * t * c + 5 * sc; /* two matmuls, the softmax */
    k.bwd_flops = 8 * r * t * t * c + 4 * sc;
    k.fwd_bytes = e * (r * t * 4 * c) + 3 * sc * e;
    k.bwd_bytes = e * (r * t * 8 * c) + 5 * sc * e;
    return k;
}

const layer_kind layer_attention = {.name = "attention",
                                    .op_class = "matmul",
                                    .prec = LAYER_PREC_LOW,
                                    .shape = shape,
                                    .tensors = layer_no_tensors,
                                    .forward = forward,
                                    .backward = backward,
                                    .cost = cost,
                                    .workspace = workspace};
