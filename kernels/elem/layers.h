/* elem/layers.h: the element math of the non-GEMM layers and the losses,
 * host and device.
 *
 * cpu/layers.c, cpu/loss.c and their cuda twins run these same functions,
 * so bias add, relu, relu backward, max-pooling and the MSE gradient agree
 * bit for bit between the backends; only the sums of bias_grad and the
 * losses (summation order) and exp/log1p in softmax (libm against CUDA's
 * math library) may differ, within the bounds stated in kernels/layers.c
 * and kernels/loss.c.
 *
 * Elements are handled as bit patterns (fp16/bf16 in the low 16 bits).
 * Values are read exactly as doubles; every result that comes from double
 * arithmetic is rounded once to its format with the emulator's rounding,
 * and a NaN result is always written as the emulator's default NaN: the
 * NaN bits that double arithmetic produces differ between x86 and the GPU.
 */
#ifndef AMPSCOPE_KERNELS_ELEM_LAYERS_H
#define AMPSCOPE_KERNELS_ELEM_LAYERS_H

#include <math.h>

#include "round.h"

/* ---- formats as compile-time constants ------------------------------------
 * A loop or kernel takes an int F: a format id when every tensor of the call
 * has that format (the constant folds through the element code, which then
 * vectorizes on the cpu and loses its branches on the GPU), or AK_LAYER_ANY
 * when they differ and each tensor's own dtype is read at run time. */
#define AK_LAYER_ANY           (-1)
#define AK_LAYER_FMT(F, dtype) ((F) >= 0 ? (fpe_format_id)(F) : (fpe_format_id)(dtype))

/* Expands LOOP(F, ...) once per specialised format and once for
 * AK_LAYER_ANY, and runs the one that matches common (a format id, or
 * AK_LAYER_ANY).  LOOP is a call on the cpu and a kernel launch on cuda. */
#define AK_LAYER_SPECIALISE(common, LOOP, ...)                                                     \
    switch (common) {                                                                              \
    case FPE_FMT_F16: LOOP(FPE_FMT_F16, __VA_ARGS__); break;                                       \
    case FPE_FMT_BF16: LOOP(FPE_FMT_BF16, __VA_ARGS__); break;                                     \
    case FPE_FMT_F32: LOOP(FPE_FMT_F32, __VA_ARGS__); break;                                       \
    default: LOOP(AK_LAYER_ANY, __VA_ARGS__); break;                                               \
    }

#if defined(__CUDACC__)
/* A grid-stride loop of the cuda kernels over i in [0, n). */
#define AK_LAYER_GRID_STRIDE(i, n)                                                                 \
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n);                        \
         i += (size_t)gridDim.x * blockDim.x)
#endif

FPE_INLINE int ak_layer_common2(int a, int b) { return a == b ? a : AK_LAYER_ANY; }
FPE_INLINE int ak_layer_common3(int a, int b, int c)
{
    return ak_layer_common2(ak_layer_common2(a, b), c);
}

/* ---- loads, stores, values ---------------------------------------------- */
/* A selected element written to another format: unchanged when the formats
 * agree (relu and max-pooling are exact selections: a NaN keeps its sign and
 * payload, even a signaling one), else converted to nearest even as ak_cast. */
FPE_INLINE uint32_t ak_layer_convert(fpe_format_id from, fpe_format_id to, uint32_t bits)
{
    if (from == to) return bits;
    fpe_env env = fpe_env_default();
    return fpe_convert_k(from, to, &env, bits);
}

/* d rounded once to f, to nearest even; every NaN becomes the emulator's
 * default NaN (x86: sign set, quiet), the same bits on both backends. */
FPE_INLINE uint32_t ak_layer_from_f64(fpe_format_id f, double d)
{
    fpe_env env = fpe_env_default();
    if (d != d) return fpe_default_nan(f, &env);
    return fpe_from_f64_k(f, &env, d);
}

/* *dst = d rounded to fp32 as ak_layer_from_f64 does (the loss outputs). */
FPE_INLINE void ak_layer_store_f32(float *dst, double d)
{
    *dst = ak_f32_from_bits(ak_layer_from_f64(FPE_FMT_F32, d));
}

FPE_INLINE double ak_layer_nan(void) { return fpe_f64_from_bits(0x7FF8000000000000ull); }

/* ---- bias add ------------------------------------------------------------ */
/* y + bias (formats fy, fb), the exact sum rounded once to fy; NaNs,
 * infinities and zero signs as fpe_<fmt>_add on x86 (ak_round_sum decides
 * them from the operands' bits, so both backends agree). */
FPE_INLINE uint32_t ak_bias_add_elem(fpe_format_id fy, fpe_format_id fb, uint32_t y, uint32_t bias)
{
    fpe_env env = fpe_env_default();
    return ak_round_sum(fy, &env, ak_elem_value(fy, y), ak_elem_value(fb, bias));
}

/* ---- relu ----------------------------------------------------------------- */
/* Whether x passes relu: x > 0, or x is a NaN (of either sign).  This is
 * !(x <= 0), PyTorch's threshold_backward test; it gives the same answer for
 * x and for relu(x), so relu's backward may be fed either.  -0, +0 and
 * negative values do not pass. */
FPE_INLINE bool ak_relu_passes(fpe_format_id f, uint32_t x)
{
    return ((x & fk_sign(f)) == 0 && x != 0) || fpe_isnan_k(f, x);
}

/* relu(x) written to fy: x when it passes, else +0 (so relu(-0) = +0 and a
 * NaN stays the same NaN, as torch.relu). */
FPE_INLINE uint32_t ak_relu_elem(fpe_format_id fy, fpe_format_id fx, uint32_t x)
{
    return ak_relu_passes(fx, x) ? ak_layer_convert(fx, fy, x) : 0;
}

/* dx for one element: dy (written to fdx) where x passes, else +0: the
 * gradient is 0 at x = 0, and dy is passed where x is NaN, as PyTorch does. */
FPE_INLINE uint32_t ak_relu_backward_elem(fpe_format_id fdx, fpe_format_id fdy, fpe_format_id fx,
                                          uint32_t dy, uint32_t x)
{
    return ak_relu_passes(fx, x) ? ak_layer_convert(fdy, fdx, dy) : 0;
}

/* ---- 2x2 max-pooling ------------------------------------------------------ */
/* An integer that orders the non-NaN values of f as their values do, with
 * -0 == +0 (the sign-magnitude bits, negated when the sign is set). */
FPE_INLINE int32_t ak_layer_order_key(fpe_format_id f, uint32_t a)
{
    const int32_t mag = (int32_t)(a & (fk_sign(f) - 1));
    return (a & fk_sign(f)) ? -mag : mag;
}

/* Which element (0..3, row-major: top-left, top-right, bottom-left,
 * bottom-right) a window selects, by PyTorch's max_pool2d rule: scanning in
 * row-major order, an element replaces the running maximum when it is
 * greater or is a NaN.  So ties (and -0 beside +0) keep the first maximum,
 * a window with NaNs selects its last NaN, and the maximum is NaN. */
FPE_INLINE int ak_maxpool2_pick(fpe_format_id f, uint32_t v0, uint32_t v1, uint32_t v2, uint32_t v3)
{
    const uint32_t v[4] = {v0, v1, v2, v3};
    int pick = 0;
    bool max_is_nan = fpe_isnan_k(f, v0);
    int32_t max_key = ak_layer_order_key(f, v0);
    for (int k = 1; k < 4; k++) {
        const bool nan = fpe_isnan_k(f, v[k]);
        const int32_t key = ak_layer_order_key(f, v[k]);
        if (nan || (!max_is_nan && key > max_key)) {
            pick = k;
            max_is_nan = nan;
            max_key = key;
        }
    }
    return pick;
}

/* ---- softmax cross-entropy -------------------------------------------------
 * A row is computed in double from its maximum m, at index amax (the first
 * maximal logit, a NaN ranking above every number, as torch.argmax), and
 * s_rest = sum over j != amax of exp(x_j - m), so that sum_j exp(x_j - m)
 * = 1 + s_rest exactly and the small quantities keep their relative
 * accuracy: the loss is (m - x_label) + log1p(s_rest), not lse - x_label
 * (which cancels when the label is the maximum), and the gradient at
 * amax = label is -s_rest / (1 + s_rest), not p - 1. */

/* Whether logit a (index ia) ranks above b (index ib) for the row maximum. */
FPE_INLINE bool ak_xent_ranks_above(double a, int64_t ia, double b, int64_t ib)
{
    const bool na = a != a, nb = b != b;
    if (na != nb) return na;
    if (!na && a != b) return a > b;
    return ia < ib;
}

/* A row whose maximum is not finite (a NaN or +inf logit, or every logit
 * -inf) has a NaN loss and NaN gradients, as in PyTorch. */
FPE_INLINE bool ak_xent_row_ok(double m) { return m - m == 0.0; }

/* The summand of s_rest for a logit x of a row with maximum m. */
FPE_INLINE double ak_xent_exp(double x, double m) { return exp(x - m); }

/* The row's loss, -log softmax(x)[label]. */
FPE_INLINE double ak_xent_row_loss(double m, double s_rest, double x_label)
{
    if (!ak_xent_row_ok(m)) return ak_layer_nan();
    return (m - x_label) + log1p(s_rest);
}

/* d(loss of the scaled batch mean)/dx for logit x: (softmax - onehot) / batch
 * * scale, in double (rounded to dlogits' dtype by the caller). */
FPE_INLINE double ak_xent_grad(double x, double m, double s_rest, bool is_amax, bool is_label,
                               size_t batch, double scale)
{
    if (!ak_xent_row_ok(m)) return ak_layer_nan();
    const double denom = 1.0 + s_rest;
    double delta;
    if (is_amax) {
        delta = is_label ? (0.0 - s_rest) / denom : 1.0 / denom; /* 0 - s: +0 when s = 0 */
    } else {
        const double p = ak_xent_exp(x, m) / denom; /* <= 1/2: p - 1 does not cancel */
        delta = is_label ? p - 1.0 : p;
    }
    return delta / (double)batch * scale;
}

/* ---- negative log-likelihood in a low format --------------------------------
 * The loss computed in fp16 or bf16 as PyTorch's CUDA nll_loss (mean
 * reduction) computes it for a half or bfloat16 log-softmax
 * (aten/src/ATen/native/cuda/Loss.cu, nll_loss_forward_reduce_cuda_kernel_2d
 * and nll_loss_backward_reduce_cuda_kernel_2d, PyTorch 1.13 to 2.0): 32
 * lanes, lane t subtracting logp[r, label_r] for r = t, t + 32, ... in fp32,
 * then the lanes added in order; every fp32 operation is the emulator's, so
 * both backends give the same bits. */
#define AK_NLL_LANES 32

/* acc - x in fp32, to nearest even (x read exactly from format f). */
FPE_INLINE uint32_t ak_nll_lane_sub(uint32_t acc, fpe_format_id f, uint32_t x)
{
    fpe_env env = fpe_env_default();
    return fpe_add_k(FPE_FMT_F32, &env, acc, ak_layer_from_f64(FPE_FMT_F32, ak_elem_value(f, x)),
                     true);
}

/* a + b in fp32, to nearest even. */
FPE_INLINE uint32_t ak_nll_f32_add(uint32_t a, uint32_t b)
{
    fpe_env env = fpe_env_default();
    return fpe_add_k(FPE_FMT_F32, &env, a, b, false);
}

/* The loss from the lanes' total (fp32 bits) over batch rows: total / batch
 * in fp32, then rounded to f (static_cast<scalar_t>(output_acc /
 * total_weight_acc)); a NaN as the default NaN. */
FPE_INLINE uint32_t ak_nll_loss_bits(fpe_format_id f, uint32_t total, size_t batch)
{
    fpe_env env = fpe_env_default();
    const uint32_t q =
        fpe_div_k(FPE_FMT_F32, &env, total, ak_layer_from_f64(FPE_FMT_F32, (double)batch));
    return ak_layer_from_f64(f, ak_elem_value(FPE_FMT_F32, q));
}

/* The gradient every label's log-probability gets, in f: autograd hands the
 * low-precision loss the fp32 scale cast to f (the product of an f loss and
 * an fp32 scale is fp32; its gradient is cast back to the loss's dtype, so
 * fp16 makes 65536 an infinity), then g = -(that / total_weight) with
 * total_weight = batch stored in f, the division as c10::Half's operator/
 * (in fp32, then rounded to f).  scale NaN or a NaN quotient: the default
 * NaN. */
FPE_INLINE uint32_t ak_nll_grad_bits(fpe_format_id f, double scale, size_t batch)
{
    fpe_env env = fpe_env_default();
    const uint32_t g0 = ak_layer_from_f64(f, scale);
    const uint32_t n = ak_layer_from_f64(f, (double)batch);
    const uint32_t q =
        fpe_div_k(FPE_FMT_F32, &env, ak_layer_from_f64(FPE_FMT_F32, ak_elem_value(f, g0)),
                  ak_layer_from_f64(FPE_FMT_F32, ak_elem_value(f, n)));
    return ak_layer_from_f64(f, -ak_elem_value(FPE_FMT_F32, q));
}

/* ---- mean squared error ----------------------------------------------------- */
FPE_INLINE double ak_mse_diff(fpe_format_id fp, fpe_format_id ft, uint32_t pred, uint32_t target)
{
    return ak_elem_value(fp, pred) - ak_elem_value(ft, target);
}

/* d(scale * mean (pred - target)^2)/dpred for a difference d over n elements. */
FPE_INLINE double ak_mse_grad(double d, size_t n, double scale)
{
    return 2.0 * d / (double)n * scale;
}

#endif
