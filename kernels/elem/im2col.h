/* elem/im2col.h: the index math of ak_conv2d_forward/backward, host and
 * device, so both backends lower a convolution to the same GEMMs.
 *
 * With P = out_h out_w output pixels per image, K = in_ch k_h k_w taps and
 * NP = batch P, the whole batch is one GEMM per product:
 *   col (K x NP)   col[r][n P + q] = x[n][c][oy s - pad + ki][ox s - pad + kj]
 *                  for r = (c k_h + ki) k_w + kj, q = oy out_w + ox
 *                  (0 outside the image: zero padding);
 *   "channel-major" (out_ch x NP) matrices hold y and dy with the batch
 *                  inside a row: cm[o][n P + q] = y[n][o][q].
 * forward:  Ycm = W col (fp32; fp16 for 16F), then y = Ycm + bias rounded
 *           once to y's dtype, permuted to NCHW;
 * backward: dW = dYcm col^T, dcol = W^T dYcm, dx = col2im(dcol), and
 *           dbias[o] = the sum of dy[n][o][q].
 */
#ifndef AMPSCOPE_KERNELS_ELEM_IM2COL_H
#define AMPSCOPE_KERNELS_ELEM_IM2COL_H

#include "kernels.h"
#include "round.h"

typedef struct ak_conv_geom {
    size_t batch, in_ch, in_h, in_w, out_ch, k_h, k_w, stride, pad, out_h, out_w;
    size_t p;  /* out_h out_w */
    size_t kk; /* in_ch k_h k_w: the GEMM's inner dimension forward */
    size_t np; /* batch p */
} ak_conv_geom;

/* c must be valid (ak_conv2d_forward/backward check it first). */
FPE_INLINE ak_conv_geom ak_conv_geom_of(const ak_conv2d *c)
{
    ak_conv_geom g;
    g.batch = c->batch;
    g.in_ch = c->in_ch;
    g.in_h = c->in_h;
    g.in_w = c->in_w;
    g.out_ch = c->out_ch;
    g.k_h = c->k_h;
    g.k_w = c->k_w;
    g.stride = c->stride;
    g.pad = c->pad;
    g.out_h = (c->in_h + 2 * c->pad - c->k_h) / c->stride + 1;
    g.out_w = (c->in_w + 2 * c->pad - c->k_w) / c->stride + 1;
    g.p = g.out_h * g.out_w;
    g.kk = c->in_ch * c->k_h * c->k_w;
    g.np = c->batch * g.p;
    return g;
}

/* The dtype the convolution keeps Ycm and dcol in: the GEMM's accumulator,
 * fp32 (an output every input pair may produce with an fp32-accumulating
 * compute type), or fp16 for 16F. */
FPE_INLINE ak_dtype ak_conv_acc_dtype(ak_compute k)
{
    return k == AK_COMPUTE_16F ? AK_F16 : AK_F32;
}

/* C (m x n) = op(A) op(B) with packed operands (leading dimensions equal
 * to the widths), alpha 1, beta 0: the three products above. */
FPE_INLINE ak_gemm_args ak_conv_gemm(ak_compute k, size_t m, size_t n, size_t inner, ak_tensor a,
                                     bool trans_a, ak_tensor b, bool trans_b, ak_tensor c)
{
    ak_gemm_args g;
    g.trans_a = trans_a;
    g.trans_b = trans_b;
    g.m = m;
    g.n = n;
    g.k = inner;
    g.alpha = 1.0f;
    g.beta = 0.0f;
    g.a = a;
    g.lda = trans_a ? m : inner;
    g.b = b;
    g.ldb = trans_b ? inner : n;
    g.c = c;
    g.ldc = n;
    g.compute = k;
    g.tc = NULL;
    return g;
}

#define AK_IM2COL_PAD ((size_t)-1)

/* Element i (row-major, K x NP) of col: the index of its element of x, or
 * AK_IM2COL_PAD where the tap falls in the zero padding. */
FPE_INLINE size_t ak_im2col_src(const ak_conv_geom *g, size_t i)
{
    const size_t r = i / g->np, col = i % g->np;
    const size_t n = col / g->p, q = col % g->p;
    const size_t c = r / (g->k_h * g->k_w), tap = r % (g->k_h * g->k_w);
    const size_t ki = tap / g->k_w, kj = tap % g->k_w;
    /* in padded coordinates, so the comparisons stay unsigned */
    const size_t y = q / g->out_w * g->stride + ki, x = q % g->out_w * g->stride + kj;
    if (y < g->pad || y - g->pad >= g->in_h || x < g->pad || x - g->pad >= g->in_w)
        return AK_IM2COL_PAD;
    return ((n * g->in_ch + c) * g->in_h + (y - g->pad)) * g->in_w + (x - g->pad);
}

/* NCHW element i of y or dy (batch, out_ch, P) -> its index in the
 * channel-major (out_ch x NP) matrix. */
FPE_INLINE size_t ak_conv_cm_index(const ak_conv_geom *g, size_t i)
{
    const size_t q = i % g->p, o = i / g->p % g->out_ch, n = i / g->p / g->out_ch;
    return o * g->np + n * g->p + q;
}

/* Channel-major element i (o, n P + q) -> its NCHW index. */
FPE_INLINE size_t ak_conv_nchw_index(const ak_conv_geom *g, size_t i)
{
    const size_t o = i / g->np, col = i % g->np;
    return (col / g->p * g->out_ch + o) * g->p + col % g->p;
}

/* ---- the element results ---------------------------------------------------------- */
/* y's NCHW element i (format yf) from the channel-major GEMM result ycm
 * (format af) and bias (format bf, NULL when none): ycm + bias[o] rounded
 * once to yf, to nearest even. */
FPE_INLINE uint32_t ak_conv_output_k(const ak_conv_geom *g, fpe_format_id yf, fpe_format_id af,
                                     const void *ycm, fpe_format_id bf, const void *bias, size_t i)
{
    const uint32_t y = ak_load_bits(af, ycm, ak_conv_cm_index(g, i));
    fpe_env env = fpe_env_default();
    if (bias)
        return ak_round_sum(yf, &env, ak_elem_value(af, y),
                            ak_load_value(bf, bias, i / g->p % g->out_ch));
    return af == yf ? y : fpe_convert_k(af, yf, &env, y);
}

/* dx's NCHW element i: the sum of the dcol elements (format df) of every
 * tap that read x[i], in binary64, taps in order (ki, kj), rounded once to
 * xf, to nearest even. */
FPE_INLINE uint32_t ak_col2im_k(const ak_conv_geom *g, fpe_format_id df, const void *dcol,
                                fpe_format_id xf, size_t i)
{
    const size_t x = i % g->in_w + g->pad, y = i / g->in_w % g->in_h + g->pad;
    const size_t c = i / (g->in_w * g->in_h) % g->in_ch, n = i / (g->in_w * g->in_h * g->in_ch);
    double sum = 0.0;
    for (size_t ki = 0; ki < g->k_h && ki <= y; ki++) {
        if ((y - ki) % g->stride != 0) continue;
        const size_t oy = (y - ki) / g->stride;
        if (oy >= g->out_h) continue;
        for (size_t kj = 0; kj < g->k_w && kj <= x; kj++) {
            if ((x - kj) % g->stride != 0) continue;
            const size_t ox = (x - kj) / g->stride;
            if (ox >= g->out_w) continue;
            const size_t r = (c * g->k_h + ki) * g->k_w + kj;
            sum += ak_load_value(df, dcol, r * g->np + n * g->p + oy * g->out_w + ox);
        }
    }
    fpe_env env = fpe_env_default();
    return fpe_from_f64_k(xf, &env, sum);
}

/* The rounded sum of dy[n][o][q] over n and q given as a binary64 sum. */
FPE_INLINE uint32_t ak_conv_dbias_k(fpe_format_id bf, double sum)
{
    fpe_env env = fpe_env_default();
    return fpe_from_f64_k(bf, &env, sum);
}

#endif
