/* kernels_nn.h: the operations of the nets where mixed precision bites
 * (transformers, ResNets): embedding, dropout, the residual add, softmax and
 * log-softmax, BatchNorm2d and LayerNorm.  Part of kernels.h's API (which
 * includes this file): tensors, backends, status codes and the conventions
 * are kernels.h's. */
#ifndef AMPSCOPE_KERNELS_NN_H
#define AMPSCOPE_KERNELS_NN_H

#include "kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- embedding, dropout, residual add ----------------------------------------- */
/* y (tokens x dim, any dtype) = weight[ids[t]] (weight: vocab x dim, any dtype), converted
 * exactly/nearest-even to y's dtype.  ids: an fp32 tensor of tokens elements holding integers in
 * [0, vocab) (the net's input batch is fp32; token ids < 2^24 are exact).  cpu: a non-integer,
 * NaN or out-of-range id is AK_EINVAL naming its position; cuda: that token's row is NaN.
 * vocab is in [1, 2^24], dim >= 1; y must not overlap weight or ids (kernels/embedding.c). */
int ak_embedding_forward(ak_backend *b, size_t tokens, size_t dim, size_t vocab, ak_tensor ids,
                         ak_tensor weight, ak_tensor y);
/* dweight (vocab x dim, any dtype) = sum over tokens t with ids[t] == v of dy[t] (written: rows
 * no token names are +0).  The accumulation precision is the studied choice: acc == AK_F32 adds
 * in fp32 in token order and rounds once to dweight's dtype (PyTorch's CUDA
 * embedding_dense_backward accumulates in acc_type = float:
 * aten/src/ATen/native/cuda/EmbeddingBackwardKernel.cu, compute_grad_weight and
 * sum_and_scatter); acc == AK_F16 or AK_BF16 rounds every partial sum to that format (a kernel
 * accumulating in the low format), so small gradients of a frequent token are lost.  Each sum
 * starts at +0 and adds the tokens in increasing t (ak_add_elem, NaNs as ak_accumulate's: of two
 * NaNs the later token's).  Token order, the same on both backends: bit for bit.  Bad ids: cpu
 * AK_EINVAL as the forward; cuda adds that token to no row.  dweight must not overlap dy or ids. */
int ak_embedding_backward(ak_backend *b, size_t tokens, size_t dim, size_t vocab, ak_tensor ids,
                          ak_tensor dy, ak_tensor dweight, ak_dtype acc);

/* Dropout as PyTorch's nn.Dropout(p) in training: element i is kept when the uniform u = bits /
 * 2^32 of the emulator's Philox word bits = fpe_random_bits(key, AK_DROPOUT_STREAM ('DROP'),
 * offset + i) is >= p, compared exactly (kept with probability within 2^-32 of 1 - p).  y = x *
 * mask * scale as PyTorch computes it (aten/src/ATen/native/Dropout.cpp: input.mul(mask)
 * .mul_(scale)): scale = 1 / (1 - p) in double rounded to fp32, x * mask then * scale in fp32
 * (each rounded to nearest even), then converted once to y's dtype.  So kept y = x * scale and
 * dropped y = x * 0: +0 for positive x, -0 for negative x, NaN for an infinite or NaN x (PyTorch
 * gives the same signs and NaNs).  p in [0, 1) (else AK_EINVAL, NaN included); p == 0 copies
 * (converting).  Backward: dx = dy * the same mask and scale.  The mask is a function of (key,
 * offset, i) only: identical on cpu and cuda, and the forward and backward agree; bit for bit
 * between backends.  Any dtypes; y may be x (dx may be dy) with the same dtype. */
#define AK_DROPOUT_STREAM 0x44524F50u /* Philox counter word 2 of the mask: 'DROP' in ASCII */
int ak_dropout_forward(ak_backend *b, float p, uint64_t key, uint64_t offset, ak_tensor y,
                       ak_tensor x);
int ak_dropout_backward(ak_backend *b, float p, uint64_t key, uint64_t offset, ak_tensor dx,
                        ak_tensor dy);

/* The residual add: y = a + b, the exact sum rounded once to y's dtype to nearest even (the
 * emulator's mixed add, NaN rules as ak_accumulate's: the first NaN operand, a before b,
 * quieted), any dtypes; y may be a or b (the same dtype).  Bit for bit between backends. */
int ak_add(ak_backend *b, ak_tensor y, ak_tensor a, ak_tensor bb);

/* Row-wise softmax and log-softmax (kernels/softmax.c states the order of every operation
 * and the NaN rules; the element code is kernels/elem/softmax.h, run by both backends, one
 * row in index order, so cpu and cuda agree bit for bit). */
typedef struct ak_softmax_args {
    size_t rows, cols; /* softmax over each row of cols elements */
    bool log;          /* log-softmax */
    /* 0: no mask.  t > 0: causal attention rows: row r is query (r % t) of a t x t block
     * (cols == t); columns j > r % t are masked (probability exactly 0, log-prob -inf) */
    size_t causal_t;
    float scale; /* inputs multiplied by scale first (attention's 1/sqrt(d)); 1 for none */
    /* The format the softmax is computed in.  AK_F32: each input read exactly, max-subtracted,
     * exp and the sum in fp32 (PyTorch's CUDA softmax accumulates in float for half inputs), the
     * result rounded once to y's dtype.  AK_F16/AK_BF16: a kernel that computes in the low format:
     * every intermediate (x*scale, x - max, exp, the running sum, the division / log) rounded to
     * that format with the emulator, so exp can underflow and the sum can overflow exactly as a
     * real fp16 kernel without fp32 accumulation would: this is what the black lists avoid. */
    ak_dtype acc;
} ak_softmax_args;
/* x, y: rows x cols, any dtypes; y must not overlap x.  Masked inputs are not read (a NaN
 * there does no harm).  rows must be a multiple of causal_t; scale finite and > 0.  A NaN
 * or +inf among a row's unmasked x * scale, or a row all -inf, makes the whole row NaN
 * (the default NaN), as PyTorch.  With max-subtraction every exp is at most 1, so the
 * sequential sum cannot overflow: in fp16 it stops growing at 2048 (bf16: 256), and an
 * fp16 overflow comes from x * scale (then inf - inf: a NaN row). */
int ak_softmax_forward(ak_backend *b, const ak_softmax_args *a, ak_tensor y, ak_tensor x);
/* softmax: dx = scale * y * (dy - sum(dy * y)); log-softmax: dx = scale * (dy - exp(y) * sum(dy)),
 * in the same acc format as the forward; dx may be dy. */
/* y is the forward's output (any dtype); masked columns give dx = +0 without reading dy or
 * y there (the forward does not depend on those inputs).  dx may be dy only as the same
 * tensor (same data and dtype); no other overlaps. */
int ak_softmax_backward(ak_backend *b, const ak_softmax_args *a, ak_tensor dx, ak_tensor dy,
                        ak_tensor y);
/* ---- normalization: BatchNorm2d and LayerNorm (kernels/batchnorm.c, kernels/layernorm.c) ----
 * The arithmetic, the same on both backends (elem/norm.h), so cpu and cuda
 * agree bit for bit:
 *   - Elements are read exactly.  A channel's (BatchNorm) or a row's
 *     (LayerNorm) m elements are summed in double in a fixed order: element
 *     k (k = batch * hw + pixel, or the column) goes to lane k mod 256, each
 *     lane adds its elements in increasing k, then the 256 lanes are added
 *     as a tree (lane t += lane t + s for s = 128, 64, ..., 1).
 *   - Statistics (two passes): mean = S(x) / m; var = S((x - mean)^2) / m,
 *     biased, (x - mean) with the double mean; invstd = 1 / sqrt(var + eps);
 *     all in double, then each rounded once to fp32 (save_mean, save_invstd
 *     / save_rstd are those fp32 values, as PyTorch's acc_type statistics).
 *   - y = ((x - mean) * invstd) * gamma + beta in fp32, each operation
 *     rounded to nearest even, from the fp32 statistics, the element and
 *     gamma, beta widened exactly (gamma = 1, beta = 0 when none), then
 *     converted once to y's dtype by the emulator (nearest even).
 *   - Backward: with g = dy * gamma (LayerNorm; dy for BatchNorm), S(g) and
 *     S(g (x - mean)) are summed in double as above, (x - mean) with the saved
 *     fp32 mean; c1 = S(g) / m and c2 = S(g (x - mean)) / m * invstd * invstd
 *     in double, rounded to fp32; then in fp32
 *       dx = ((g - c1) - (x - mean) * c2) * s,
 *     s = invstd * gamma rounded to fp32 (BatchNorm; invstd without gamma)
 *     or invstd (LayerNorm, where g is the fp32 product dy * gamma); dx
 *     converted once to its dtype.  PyTorch's batch_norm_backward and
 *     layer_norm_backward formulas.
 *   - A double result is rounded to fp32 and then converted to the output's
 *     dtype; every NaN is written as the default NaN.  An infinity or NaN in
 *     a channel or row makes its statistics and every output of it NaN.
 * Running statistics, save_* and every tensor of a channel's or row's
 * statistics are fp32; activations and gradients any dtype (independently);
 * gamma and beta any dtype.  No output may overlap another tensor of the call
 * (AK_EINVAL). */

/* BatchNorm2d over x (n, c, hw) in NCHW (hw = h*w), as PyTorch's nn.BatchNorm2d */
typedef struct ak_batchnorm {
    size_t n, c, hw;
    double eps;      /* 1e-5 */
    double momentum; /* 0.1: running = (1 - momentum) running + momentum batch */
    bool training;   /* true: batch statistics (and running stats updated); false: running stats */
} ak_batchnorm;
/* y = (x - mean) * invstd * gamma + beta per channel.  Training: mean and biased variance of the
 * channel over n*hw elements; running_mean/var (fp32, c) updated with the UNBIASED variance (var *
 * m/(m-1)) as PyTorch does; save_mean/save_invstd (fp32, c) written for the backward.  Eval: the
 * running statistics, save_* may be none.  x, y any dtypes (may differ: fp16 activations with the
 * fp32 affine parameters of keep_batchnorm_fp32); gamma, beta any dtype (same n = c), or both none
 * (affine=False).
 * Exactly (the arithmetic above): training needs m = n * hw >= 2 (PyTorch:
 * "Expected more than 1 value per channel"); running_mean[c] =
 * momentum * mean + (1 - momentum) * running_mean and running_var likewise
 * with S((x - mean)^2) / (m - 1), in double from the double statistics,
 * rounded once to fp32; running_* may both be none in training
 * (track_running_stats=False) and are required in eval.  Eval: invstd =
 * 1 / sqrt(running_var + eps) in double, rounded to fp32, mean =
 * running_mean; save_* when given receive that mean and invstd.  eps >= 0
 * and momentum in [0, 1], finite (momentum=None, the cumulative average, is
 * not offered).  Pairs (gamma, beta), (running_mean, running_var),
 * (save_mean, save_invstd) are given together or not at all. */
int ak_batchnorm_forward(ak_backend *b, const ak_batchnorm *a, ak_tensor y, ak_tensor x,
                         ak_tensor gamma, ak_tensor beta, ak_tensor running_mean,
                         ak_tensor running_var, ak_tensor save_mean, ak_tensor save_invstd);
/* Training-mode backward (PyTorch's batch_norm_backward with the saved statistics): dx (any
 * dtype, optional: none for a first layer), dgamma, dbeta (any dtype, written not accumulated,
 * none when affine=False).
 * Exactly: dbeta = S(dy), dgamma = S(dy (x - mean)) * invstd (in double,
 * rounded to fp32, then to the dtype); dx as above.  dgamma and dbeta may
 * each be none when gamma is given (a frozen affine) and must be none when
 * it is not; save_mean and save_invstd are required (a->training is not
 * read).  m = n * hw >= 1. */
int ak_batchnorm_backward(ak_backend *b, const ak_batchnorm *a, ak_tensor dx, ak_tensor dgamma,
                          ak_tensor dbeta, ak_tensor dy, ak_tensor x, ak_tensor gamma,
                          ak_tensor save_mean, ak_tensor save_invstd);

/* LayerNorm over the last dimension: rows x cols, as nn.LayerNorm(cols)
 * (gamma, beta: cols elements of any dtype, or both none: elementwise_affine=False;
 * eps >= 0, finite; cols >= 1).  The backward's dgamma[j] = S over rows, in
 * row order (not by lanes), of dy * ((x - mean) * rstd) and dbeta[j] = S of
 * dy, in double with (x - mean) * rstd in double from the saved fp32
 * statistics, rounded to fp32 then to the dtype; save_mean and save_rstd
 * are required by the backward; dgamma, dbeta as in ak_batchnorm_backward. */
int ak_layernorm_forward(ak_backend *b, size_t rows, size_t cols, double eps, ak_tensor y,
                         ak_tensor x, ak_tensor gamma, ak_tensor beta, ak_tensor save_mean,
                         ak_tensor save_rstd); /* save_* fp32 (rows), optional */
int ak_layernorm_backward(ak_backend *b, size_t rows, size_t cols, ak_tensor dx, ak_tensor dgamma,
                          ak_tensor dbeta, ak_tensor dy, ak_tensor x, ak_tensor gamma,
                          ak_tensor save_mean,
                          ak_tensor save_rstd); /* dx optional; dgamma, dbeta written */

#ifdef __cplusplus
}
#endif
#endif
