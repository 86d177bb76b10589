/* kernels.h: the array operations of a training step, one table, two backends.
 *
 * A backend is opened by name: "cpu" (the portable C reference, the oracle),
 * "cuda" (NVIDIA GPUs) or "auto" (cuda when a device is present, else cpu,
 * saying so).  Every operation below is a function of the backend handle; the
 * handle dispatches to the backend's implementation of the same name
 * (kernels/cpu/<op>.c, kernels/cuda/<op>.cu) after the arguments have been
 * validated once, here, for both.
 *
 * Memory.  Tensors and the small result structs (found-inf flags, scales,
 * statistics, rounding loss, optimizer state) live in *backend memory*:
 * host memory for cpu, device memory for cuda.  Move them with ak_to_device /
 * ak_to_host.  Scalars that the step decides on the device (the loss scale,
 * its inverse, found-inf) are passed as pointers into backend memory, so a
 * training step on the GPU never waits for the host.
 *
 * Errors.  Every function returns 0 (AK_OK) or a negative AK_E* code after
 * recording one message naming the call ("ak_cast: dst has 10 elements,
 * src has 12"); ak_error() returns it.  Nothing here prints, exits or aborts.
 * On cuda, errors of queued work surface at the next call that checks
 * (ak_sync, a copy to the host) and name the call that detected them.
 *
 * Numbers.  Every elementwise operation is defined bit for bit (below, per
 * operation) in terms of the emulator (emulate/fpe.h), and both backends run
 * the same inline element code, so cpu and cuda agree bit for bit on them.
 * GEMM and reductions (sums) may differ in summation order between backends;
 * their bounds are stated where they are declared.  Counts are exact.
 */
#ifndef AMPSCOPE_KERNELS_H
#define AMPSCOPE_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fpe.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status codes -------------------------------------------------------- */
#define AK_OK           0
#define AK_EINVAL       (-1) /* a bad argument: NULL, misaligned, shape, count, value */
#define AK_EUNSUPPORTED (-2) /* a dtype or dtype/compute-type pairing this op does not do */
#define AK_ENOMEM       (-3) /* an allocation failed */
#define AK_EDEVICE      (-4) /* a CUDA or cuBLAS call failed */
#define AK_ENODEV       (-5) /* the backend is not available (no GPU, built without CUDA) */
#define AK_ENOTIMPL     (-6) /* not implemented in this backend */

/* ---- element types and tensors ------------------------------------------ */
/* The storage formats; the values are the emulator's format ids. */
typedef enum ak_dtype {
    AK_F16 = FPE_FMT_F16,
    AK_BF16 = FPE_FMT_BF16,
    AK_F32 = FPE_FMT_F32
} ak_dtype;

size_t ak_dtype_size(ak_dtype dt);      /* 2, 2, 4; 0 for an invalid id */
const char *ak_dtype_name(ak_dtype dt); /* "fp16", "bf16", "fp32"; "?" for an invalid id */

/* A contiguous array in backend memory.  fp16 and bf16 elements are their
 * 16-bit patterns (uint16_t), fp32 elements are floats.  data must be
 * aligned to the element size; data may be NULL only when n == 0. */
typedef struct ak_tensor {
    void *data;
    size_t n; /* number of elements */
    ak_dtype dtype;
} ak_tensor;

static inline ak_tensor ak_tensor_of(void *data, size_t n, ak_dtype dtype)
{
    ak_tensor t;
    t.data = data;
    t.n = n;
    t.dtype = dtype;
    return t;
}
/* The empty tensor: "not given" for optional tensor arguments. */
static inline ak_tensor ak_tensor_none(void) { return ak_tensor_of(NULL, 0, AK_F32); }

/* ---- backends ------------------------------------------------------------- */
typedef struct ak_backend ak_backend;
typedef enum ak_kind { AK_CPU = 0, AK_CUDA = 1 } ak_kind;

/* Opens "cpu", "cuda" or "auto".  Returns NULL on failure with the reason in
 * msg (e.g. "cuda: this machine has no CUDA device (cudaGetDeviceCount: no
 * CUDA-capable device is detected); use --backend cpu").  On success msg
 * holds "" or, for "auto" falling back to cpu, a notice the caller should
 * show ("auto: no CUDA device, using cpu").  msg may be NULL. */
ak_backend *ak_open(const char *name, char *msg, size_t msg_len);
void ak_close(ak_backend *b); /* NULL is harmless */

ak_kind ak_backend_kind(const ak_backend *b);
const char *ak_backend_name(const ak_backend *b); /* "cpu" or "cuda" */
const char *ak_device_name(const ak_backend *b);  /* "NVIDIA H100 80GB HBM3", the CPU model */
const char *ak_error(const ak_backend *b);        /* the last error's message, "" if none */
/* The same message without the ampscope call it names ("dst has 10 elements,
 * src has 12"; a CUDA failure keeps the CUDA call): what a user is shown. */
const char *ak_error_text(const ak_backend *b);
bool ak_cuda_built(void); /* was this build compiled with CUDA? */
/* The cpu backend's BLAS threads set again from OPENBLAS_NUM_THREADS (when
 * set to a positive number): OpenBLAS reads it once, when the program
 * starts, so a process forked to run a training (a sweep's point) calls this
 * to start as a freshly executed program would. */
void ak_cpu_threads_from_env(void);
/* The cpu backend's BLAS threads set to n (> 0) for the whole process.  OpenBLAS's sgemm may
 * add a product's terms in an order that depends on its thread count, so runs that must give
 * the same bits in processes of different shapes (a data-parallel run's ranks: one process
 * each under mpirun, all in one with --world) fix it.  Returns the count it had. */
int ak_cpu_set_threads(int n);

/* ---- memory ---------------------------------------------------------------- */
/* Allocates bytes of backend memory aligned to 256 bytes (*ptr = NULL when
 * bytes == 0).  ak_free(b, NULL) is harmless. */
int ak_alloc(ak_backend *b, size_t bytes, void **ptr);
int ak_alloc_tensor(ak_backend *b, size_t n, ak_dtype dtype, ak_tensor *t);
int ak_free(ak_backend *b, void *ptr);
/* Copies: host -> backend, backend -> host (waits for queued work first),
 * backend -> backend. */
int ak_to_device(ak_backend *b, void *dst, const void *host_src, size_t bytes);
int ak_to_host(ak_backend *b, void *host_dst, const void *src, size_t bytes);
int ak_copy(ak_backend *b, void *dst, const void *src, size_t bytes);
int ak_zero(ak_backend *b, void *ptr, size_t bytes);
/* Every element of t becomes value rounded once to t's dtype (to nearest,
 * ties to even, as fpe_f64_to_<fmt>). */
int ak_fill(ak_backend *b, ak_tensor t, double value);
/* Waits for queued work and reports any error it raised. */
int ak_sync(ak_backend *b);

/* ---- casts ------------------------------------------------------------------ */
/* How a result is rounded: the emulator's mode plus, for the stochastic
 * modes, the Philox key.  Element i of an operation draws random index
 * (index + i), exactly as fpe_chop_* with env.sr_index = index, so the cpu,
 * the cuda backend and the emulator give the same bits for the same seed.
 * The caller advances index between calls (by n) when it wants fresh bits. */
typedef struct ak_rounding {
    fpe_round mode;
    uint64_t seed;
    uint32_t stream;
    uint64_t index;
} ak_rounding;

static inline ak_rounding ak_rounding_rne(void)
{
    ak_rounding r;
    r.mode = FPE_RNE;
    r.seed = 0;
    r.stream = 0;
    r.index = 0;
    return r;
}

/* dst[i] = src[i] converted to dst's dtype, rounded as r says (NULL: RNE),
 * bit-identical to fpe_<src>_to_<dst> with an environment that has
 * env.round = r->mode, the seed and stream of r, sr_index = r->index + i and
 * otherwise fpe_env_default() (tininess after rounding, no FTZ/DAZ, x86
 * NaNs).  Any pair of dtypes; equal dtypes copy.  dst.n == src.n.  dst and
 * src must not overlap, unless they are the same tensor (nothing to do). */
int ak_cast(ak_backend *b, ak_tensor dst, ak_tensor src, const ak_rounding *r);

/* ---- scaling, and the fused unscale + finite check -------------------------- */
/* x[i] *= *factor (factor in backend memory).  fp32: the fp32 product,
 * rounded to nearest even (fpe_f32_mul).  fp16/bf16: the exact product of
 * x[i] and the fp32 factor, rounded once to x's dtype, to nearest even;
 * NaNs as fpe_f32_mul makes them (x86): a NaN x[i] stays itself, quieted,
 * else a NaN factor gives its payload, else (inf * 0) the default NaN. */
int ak_scale(ak_backend *b, ak_tensor x, const float *factor);

/* One pass over count tensors (any dtypes): for every element, sets
 * *found_inf = 1.0f if the element is an infinity or NaN (it is never
 * cleared here: zero it before the step), then multiplies the element by
 * *inv_scale exactly as ak_scale (elements are left alone when *inv_scale
 * is 1).  found_inf and inv_scale are in backend memory; on cuda nothing
 * waits for the host.  count may be 0 (grads NULL).  This is PyTorch's
 * _amp_foreach_non_finite_check_and_unscale_. */
int ak_unscale_check(ak_backend *b, const ak_tensor *grads, size_t count, const float *inv_scale,
                     float *found_inf);

/* ---- gradient accumulation and norm clipping ------------------------------- */
/* y[i] = x[i] + y[i]: the exact sum rounded once to y's dtype, to nearest
 * even (fpe_<fmt>_add(x, y) when the dtypes agree).  Any dtypes, y.n ==
 * x.n.  NaNs as kernels/elem/round.h's ak_round_sum: the first NaN operand,
 * x before y, quieted; inf - inf gives the default NaN; an exact zero sum is
 * +0 unless both are -0.  x may be y itself (y doubles); other overlaps are
 * AK_EINVAL.  Bit-exact on both backends. */
int ak_accumulate(ak_backend *b, ak_tensor y, ak_tensor x);

/* *sumsq (a double in backend memory) += the sum over every element of the
 * count tensors (any dtypes) of x^2, each x read exactly and squared
 * exactly in double, the squares summed in double (cpu: in order, with the
 * rounding errors carried; cuda: per-thread and per-block partial sums, then
 * one atomicAdd per block, in no fixed order).  A NaN element makes the sum
 * NaN and an infinite one +inf, as double arithmetic does.  With *sumsq >= 0
 * beforehand the backends agree to a relative 1e-12 (the bound and its
 * limits are derived in kernels/grad.c).  count may be 0 (xs NULL); sumsq
 * must not lie inside a tensor of the list.  Zero *sumsq first to start a
 * sum. */
int ak_sum_squares(ak_backend *b, const ak_tensor *xs, size_t count, double *sumsq);

/* PyTorch's clip_grad_norm_(max_norm, norm_type=2) from a sum of squares
 * (ak_sum_squares; read on the device on cuda, nothing waits for the host):
 * total_norm = sqrt(*sumsq) and clip_coef = max_norm / (total_norm + 1e-6)
 * in double, clamped to at most 1, then c = (float)clip_coef.  When c is not
 * 1, every element of the count tensors is multiplied by c exactly as
 * ak_scale does (fp32: the fp32 product; fp16/bf16: the exact product
 * rounded once; x86 NaN rules); when c is 1 the elements keep their bits.
 * *coef_out (backend memory, may be NULL) receives c, also when the list is
 * empty.  max_norm must be finite and > 0.  A non-finite total norm is not
 * an error (PyTorch's error_if_nonfinite=False): +inf gives c = 0, so finite
 * elements become zeros of their sign and infinities NaNs; a NaN (a NaN or
 * negative *sumsq) gives c = the default NaN 0xFFC00000, so every element
 * becomes a NaN (a NaN element its own, quieted).  sumsq and coef_out must
 * not overlap each other or a tensor of the list.  Bit-exact on both
 * backends for the same *sumsq. */
int ak_clip_by_norm(ak_backend *b, const ak_tensor *xs, size_t count, const double *sumsq,
                    float max_norm, float *coef_out);

/* ---- precision statistics ------------------------------------------------------ */
/* The log2 histogram: bin AK_HIST_ZERO counts zeros (either sign),
 * AK_HIST_BIN(e) counts finite x with 2^e <= |x| < 2^(e+1) for e in
 * [AK_HIST_EMIN, AK_HIST_EMAX] (every fp32, fp16 and bf16 value has one),
 * and AK_HIST_NONFINITE counts infinities and NaNs. */
#define AK_HIST_EMIN      (-149)
#define AK_HIST_EMAX      127
#define AK_HIST_ZERO      0
#define AK_HIST_BIN(e)    (1 + (e) - (AK_HIST_EMIN))
#define AK_HIST_NONFINITE (AK_HIST_EMAX - AK_HIST_EMIN + 2)
#define AK_HIST_BINS      (AK_HIST_EMAX - AK_HIST_EMIN + 3) /* 279 */

/* What one pass over a tensor x found, for a target format and a scale s.
 * "Scaled and rounded" means the exact product x * s rounded once to the
 * target format, to nearest even (what a cast of the scaled value does).
 * Denominators are explicit: every count is of elements of x. */
typedef struct ak_stats {
    uint64_t count;     /* elements */
    uint64_t zero;      /* x == 0 (hist[AK_HIST_ZERO]) */
    uint64_t nonzero;   /* finite, nonzero x */
    uint64_t nonfinite; /* x is inf or NaN (hist[AK_HIST_NONFINITE]) */
    uint64_t flushed;   /* finite nonzero x whose scaled and rounded value is zero */
    uint64_t subnormal; /* finite nonzero x whose scaled and rounded value is subnormal (nonzero) */
    uint64_t overflowed;         /* finite x whose scaled and rounded value is an infinity */
    double amax;                 /* max |x| over finite x (0 when there is none); unscaled */
    uint64_t hist[AK_HIST_BINS]; /* log2|x|, unscaled, as above */
} ak_stats;

/* Accumulates the statistics of x (any dtype) into *result (in backend
 * memory): counts and histogram bins are added, amax is the max of both.
 * Zero *result (ak_zero) to start.  scale (backend memory) NULL means 1.
 * target is FPE_FMT_F16, FPE_FMT_BF16 or FPE_FMT_F32.  Any fp32 scale is
 * taken literally: a negative one classifies as its magnitude, 0 flushes
 * every finite nonzero x, inf overflows them, and NaN (NaN products)
 * counts none of them.  Exact on both backends. */
int ak_stats_accumulate(ak_backend *b, ak_tensor x, fpe_format_id target, const float *scale,
                        ak_stats *result);

/* ---- optimizer updates and their rounding loss ------------------------------------ */
typedef enum ak_optimizer {
    AK_OPT_SGD = 0,      /* w -= lr * (g + wd*w) */
    AK_OPT_MOMENTUM = 1, /* PyTorch SGD with momentum (dampening, nesterov) */
    AK_OPT_ADAM = 2,     /* Adam, weight decay as L2 added to g */
    AK_OPT_ADAMW = 3     /* Adam with decoupled weight decay */
} ak_optimizer;

typedef struct ak_opt_config {
    ak_optimizer kind;
    float lr;
    float weight_decay;
    float momentum, dampening; /* AK_OPT_MOMENTUM */
    bool nesterov;             /* AK_OPT_MOMENTUM */
    float beta1, beta2, eps;   /* AK_OPT_ADAM, AK_OPT_ADAMW */
    /* How the low-precision weights are written: the model copy from the
     * master (O2), or the weights themselves (O3).  Element i uses random
     * index round.index + i. */
    ak_rounding round;
} ak_opt_config;

/* Per optimizer, in backend memory, shared by all parameters of a model.
 * Zero it before the first step. */
typedef struct ak_opt_state {
    int64_t step;     /* steps taken (skipped steps do not count) */
    double beta1_pow; /* beta1^step (Adam's bias corrections), 0 before the first step */
    double beta2_pow;
} ak_opt_state;

/* Begins an optimizer step: unless *found_inf is nonzero (found_inf may be
 * NULL: no check), step += 1 and the beta powers advance (beta^1 at the
 * first step).  Runs on the backend (one thread on cuda). */
int ak_opt_step_begin(ak_backend *b, const ak_opt_config *cfg, ak_opt_state *state,
                      const float *found_inf);

/* One parameter tensor and what its update needs.  Unused tensors are
 * ak_tensor_none(). */
typedef struct ak_param {
    ak_tensor master; /* fp32 master weights (O0-O2); none for O3 */
    ak_tensor model;  /* fp16/bf16 weights: the copy written from the master (O2),
                         or the weights updated directly (O3, no master); none for O0/O1 */
    ak_tensor grad;   /* the unscaled gradient, any dtype, read exactly */
    ak_tensor m;      /* momentum buffer / Adam first moment (any dtype); none for SGD */
    ak_tensor v;      /* Adam second moment (any dtype) */
} ak_param;

/* The rounding loss of updates, accumulated (added) over calls; zero it
 * first.  The "stored" weight is the master when there is one, else the
 * model weights.  intended = the update the optimizer computed (fp32);
 * applied = new stored value - old stored value.  nonzero, lost,
 * predicted_lost and the sums count only elements whose old stored value,
 * intended update and new stored value are all finite. */
typedef struct ak_update_loss {
    uint64_t elements;       /* elements updated */
    uint64_t nonzero;        /* elements whose intended update is nonzero */
    uint64_t lost;           /* ... and whose stored value did not change */
    uint64_t predicted_lost; /* ... and |w| >= 2^p |intended| (p = 11 fp16, 8 bf16, 24 fp32:
                                the 2^11 rule of Micikevicius et al., per format) */
    uint64_t skipped;        /* calls skipped because found-inf was set */
    double sum_abs_err;      /* sum |applied - intended| */
    double sum_abs_intended; /* sum |intended| */
} ak_update_loss;

/* Updates one parameter in one pass: the optimizer's element math in fp32
 * (the exact sequence of operations is in kernels/update.c, the same for both
 * backends), the master updated and the model copy written in the same pass,
 * or the O3 weights updated directly with one rounding of (w + intended) to
 * their format in cfg->round.  If *found_inf is nonzero nothing is written
 * and loss->skipped counts the call; no host round trip on cuda.  state must
 * have been advanced by ak_opt_step_begin for this step.  loss may be NULL.
 * A NaN produced by the fp32 arithmetic is stored as 0x7FC00000 (then cast).
 * Tensors: master fp32, model fp16/bf16, at least one of them; grad always;
 * m for MOMENTUM/ADAM/ADAMW, v for ADAM/ADAMW; all with the same n.
 * Weights, moments and the stored results are bit-identical on both
 * backends; loss counts are exact, its sums agree to rounding. */
int ak_update(ak_backend *b, const ak_opt_config *cfg, const ak_param *p, const ak_opt_state *state,
              const float *found_inf, ak_update_loss *loss);

/* ---- GEMM ------------------------------------------------------------------------- */
/* Compute types, as cuBLAS names them. */
typedef enum ak_compute {
    AK_COMPUTE_32F = 0,           /* fp32 products and sums */
    AK_COMPUTE_16F = 1,           /* fp16 storage only: sums rounded to fp16 after every addition */
    AK_COMPUTE_32F_FAST_16F = 2,  /* fp32 storage: inputs rounded to fp16, fp32 accumulation */
    AK_COMPUTE_32F_FAST_16BF = 3, /* fp32 storage: inputs rounded to bf16, fp32 accumulation */
    AK_COMPUTE_32F_FAST_TF32 = 4  /* fp32 storage: inputs rounded to tf32, fp32 accumulation */
} ak_compute;
const char *ak_compute_name(ak_compute c); /* "32F", "16F", "32F_FAST_16F", ... */

/* A tensor-core model of an fp16/bf16 dot product with fp32 accumulation
 * (kernels/elem/tc_dot.h defines it): products exact; each block of `block`
 * products and the running fp32 accumulator aligned to the largest exponent,
 * keeping 23 + extra_bits fraction bits below it (bits shifted out are
 * truncated toward zero, term by term), summed exactly, then rounded to fp32
 * in mode `round` (FPE_RNE, FPE_RZ, FPE_RD or FPE_RU). */
typedef struct ak_tc_model {
    int block;      /* products per block, 1 .. AK_TC_MAX_BLOCK (4096) */
    int extra_bits; /* alignment bits beyond fp32's 23 fraction bits, -23 .. AK_TC_MAX_EXTRA (80) */
    fpe_round round; /* of each block's sum to fp32 */
} ak_tc_model;
/* The published models by GPU name: "v100", "a100", "h100" (kernels/gemm.c
 * cites the sources).  AK_EINVAL for NULL arguments or an unknown name. */
int ak_tc_preset(const char *name, ak_tc_model *out);

/* C = alpha * op(A) * op(B) + beta * C, row-major.  op(A) is m x k (A is
 * m x k with lda >= k, or k x m with lda >= m when trans_a), op(B) is k x n,
 * C is m x n with ldc >= n.  Supported (storage a/b -> c, compute):
 *   fp32 -> fp32: 32F, 32F_FAST_16F, 32F_FAST_16BF, 32F_FAST_TF32
 *   fp16 -> fp16: 32F, 16F;  fp16 -> fp32: 32F
 *   bf16 -> bf16: 32F;       bf16 -> fp32: 32F
 * cpu: fp32 through OpenBLAS; the other contracts emulated (inputs rounded
 * to the storage/fast format, products exact, accumulation in fp32, or in
 * fp16 after every addition for 16F).  cuda: cublasGemmEx.  Results agree
 * between backends to the bound stated in kernels/gemm.c.  As in BLAS:
 * beta == 0 does not read C (a NaN there is overwritten); k == 0 or
 * alpha == 0 gives C = beta C without reading A and B.  C must not overlap
 * A or B.  Sizes and leading dimensions must fit an int. */
typedef struct ak_gemm_args {
    bool trans_a, trans_b;
    size_t m, n, k;
    float alpha, beta;
    ak_tensor a;
    size_t lda;
    ak_tensor b;
    size_t ldb;
    ak_tensor c;
    size_t ldc;
    ak_compute compute;
    /* NULL: as above.  Otherwise the cpu backend computes fp16/bf16-input
     * 32F GEMMs with this model (each element alpha * dot + beta * c, the
     * dot from a zero accumulator); every other pairing and the cuda backend
     * (where the hardware is the model) ignore it. */
    const ak_tc_model *tc;
} ak_gemm_args;
int ak_gemm(ak_backend *b, const ak_gemm_args *g);

/* count GEMMs as ak_gemm (every field of g as there, for the first matrices), the i-th reading
 * a + i*stride_a, b + i*stride_b and writing c + i*stride_c (strides in elements), as
 * cublasGemmStridedBatchedEx; each product exactly what ak_gemm gives for it. */
/* Both backends run their ak_gemm once per matrix, in order (kernels/gemm.c), so the bound
 * between them is ak_gemm's.  g->a, g->b and g->c hold every matrix: a.n >= (count - 1)
 * stride_a + the first A's extent, likewise B and C.  stride_a and stride_b may be 0 (one
 * matrix for all); the C matrices must not share an element: stride_c at least C's extent,
 * or side by side in one row band (stride_c >= n and (count - 1) stride_c + n <= ldc, as the
 * heads of an attention output (B, T, H d) with ldc = H d, stride_c = d).  count == 0 does
 * nothing (and reads no tensor beyond the checks of g). */
int ak_gemm_batched(ak_backend *b, const ak_gemm_args *g, size_t count, size_t stride_a,
                    size_t stride_b, size_t stride_c);

/* ---- layers -------------------------------------------------------------------------- */
/* Tensors are row-major: activations (batch, features) or NCHW, linear
 * weights (out, in), conv weights OIHW, as PyTorch lays them out.  Element
 * results are rounded once to the output's dtype, to nearest even. */

/* 2-D convolution, cross-correlation as PyTorch computes it, square stride
 * and zero padding; im2col + ak_gemm with the given compute type.  x, w and
 * dy share one dtype; y and dw are an output dtype ak_gemm takes for it and
 * the compute type; dx, bias and dbias may be any dtype (kernels/conv.c
 * says how each is rounded). */
typedef struct ak_conv2d {
    size_t batch, in_ch, in_h, in_w;
    size_t out_ch, k_h, k_w;
    size_t stride, pad;
    ak_compute compute;
} ak_conv2d;
size_t ak_conv2d_out_h(const ak_conv2d *c); /* (in_h + 2 pad - k_h) / stride + 1; 0 if invalid */
size_t ak_conv2d_out_w(const ak_conv2d *c);
/* y (batch, out_ch, out_h, out_w) = conv(x (batch, in_ch, in_h, in_w), w (out_ch, in_ch, k_h, k_w))
 * + bias (out_ch, optional) */
int ak_conv2d_forward(ak_backend *b, const ak_conv2d *c, ak_tensor y, ak_tensor x, ak_tensor w,
                      ak_tensor bias);
/* dx (optional), dw (overwritten), dbias (optional, overwritten) from dy */
int ak_conv2d_backward(ak_backend *b, const ak_conv2d *c, ak_tensor dx, ak_tensor dw,
                       ak_tensor dbias, ak_tensor dy, ak_tensor x, ak_tensor w);

/* The non-conv layers and the losses below take tensors of any dtype, which
 * may differ within a call; kernels/layers.c and kernels/loss.c state the
 * precise semantics (NaN rules, bounds between backends). */
/* y[r][c] += bias[c] for a (rows, cols) y: the exact sum rounded once to y's
 * dtype (as fpe_<fmt>_add when the dtypes agree).  Bit-exact on both backends. */
int ak_bias_add(ak_backend *b, ak_tensor y, ak_tensor bias, size_t rows, size_t cols);
/* dbias[c] = sum over r of dy[r][c], summed in double (cpu: in row order;
 * cuda: any order), rounded once to dbias's dtype; the bound is in layers.c. */
int ak_bias_grad(ak_backend *b, ak_tensor dbias, ak_tensor dy, size_t rows, size_t cols);
/* y = x where x > 0, else +0 (relu(-0) = +0); a NaN stays the same NaN.
 * y may be x (same dtype). */
int ak_relu(ak_backend *b, ak_tensor y, ak_tensor x);
/* dx = dy where x > 0 or x is NaN (PyTorch's !(x <= 0)), else +0 (also at
 * x = 0); x may be relu's input or its output; dx may be dy (same dtype). */
int ak_relu_backward(ak_backend *b, ak_tensor dx, ak_tensor dy, ak_tensor x);
/* 2x2 max-pooling, stride 2, over planes = batch * channels planes of h x w
 * (h, w even): y (planes, h/2, w/2).  PyTorch's rule: in row-major order an
 * element replaces the maximum when greater or NaN, so ties give the first
 * maximum and a window with NaNs its last NaN.  Backward routes dy to that
 * element, recomputed from x, and writes +0 to the other three. */
int ak_maxpool2_forward(ak_backend *b, size_t planes, size_t h, size_t w, ak_tensor y, ak_tensor x);
int ak_maxpool2_backward(ak_backend *b, size_t planes, size_t h, size_t w, ak_tensor dx,
                         ak_tensor dy, ak_tensor x);

/* GELU (elem/gelu.h, kernels/gelu.c): AK_GELU_ERF is x Phi(x) = 0.5 x (1 +
 * erf(x / sqrt 2)), AK_GELU_TANH 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715
 * x^3))), PyTorch's approximate='none' and 'tanh'.  Any dtypes: computed in
 * double (own exp/erf, the same on both backends), rounded once to fp32,
 * then converted to y's dtype by the emulator (nearest even).  gelu(+inf) =
 * +inf, gelu(-inf) = NaN, gelu(NaN) = NaN (PyTorch's formulas), NaNs
 * written as the default NaN.  Bit for bit between backends.  y may be x. */
typedef enum ak_gelu_form { AK_GELU_ERF = 0, AK_GELU_TANH = 1 } ak_gelu_form;
int ak_gelu(ak_backend *b, ak_gelu_form form, ak_tensor y, ak_tensor x);
/* dx = dy * gelu'(x), the exact derivative of the form, dy times it in
 * double, rounded as ak_gelu; NaN where x is +-inf or NaN or dy is NaN.
 * dx may be dy (same dtype). */
int ak_gelu_backward(ak_backend *b, ak_gelu_form form, ak_tensor dx, ak_tensor dy, ak_tensor x);
/* Global average pooling over planes = batch * channels planes of hw
 * elements (PyTorch's AdaptiveAvgPool2d(1)): y[p] = (sum of the plane,
 * added in fp32 in index order) / hw in fp32, rounded once to y's dtype.
 * Backward: dx[p][i] = dy[p] / hw in fp32, rounded once to dx's dtype.
 * Any dtypes; bit for bit between backends (the same fp32 order). */
int ak_avgpool_forward(ak_backend *b, size_t planes, size_t hw, ak_tensor y, ak_tensor x);
int ak_avgpool_backward(ak_backend *b, size_t planes, size_t hw, ak_tensor dx, ak_tensor dy);

/* Softmax cross-entropy over (batch, classes) logits (any dtype, computed in
 * double), labels int32 in [0, classes) in backend memory (cpu: a bad label
 * is AK_EINVAL naming its row; cuda: its row's loss and gradients are NaN).
 * *loss (backend memory) = the mean loss over the batch.  dlogits (optional,
 * any dtype) = (softmax - onehot) / batch * (*scale), scale NULL meaning 1:
 * the gradient of the scaled loss.  correct (optional, backend memory) =
 * the number of rows whose first maximal logit is the label. */
int ak_softmax_xent(ak_backend *b, size_t batch, size_t classes, ak_tensor logits,
                    const int32_t *labels, const float *scale, float *loss, ak_tensor dlogits,
                    int32_t *correct);
/* The loss in a low format: the negative log-likelihood of (batch, classes)
 * log-probabilities logp (fp16 or bf16, e.g. ak_softmax_forward's
 * log-softmax) as PyTorch's CUDA nll_loss computes it for that dtype (mean
 * reduction; kernels/loss.c gives the order): *loss (backend memory) = the
 * mean of -logp[r, label_r] summed in fp32, rounded to logp's dtype.
 * dlogp (optional, logp's dtype) = the gradient of the scaled loss as
 * autograd delivers it to a low-precision loss: -(scale rounded to the
 * dtype) / batch at each label, +0 elsewhere (fp16 turns a scale of 65536
 * into inf).  scale NULL means 1.  Labels and correct as ak_softmax_xent
 * (correct on logp).  batch at most 2^24.  Bit for bit between backends. */
int ak_nll_loss(ak_backend *b, size_t batch, size_t classes, ak_tensor logp, const int32_t *labels,
                const float *scale, float *loss, ak_tensor dlogp, int32_t *correct);
/* Mean squared error over all elements: *loss = mean (pred - target)^2
 * (summed in double); dpred (optional) = 2 (pred - target) / n * (*scale)
 * in double, rounded once to dpred's dtype.  Outputs are written, not
 * accumulated. */
int ak_mse(ak_backend *b, ak_tensor pred, ak_tensor target, const float *scale, float *loss,
           ak_tensor dpred);

#ifdef __cplusplus
}
#endif

/* The loss-scale rule and its backend operation, ak_loss_scale_update. */
#include "loss_scale.h"
/* The ops of the nets where precision bites: embedding, dropout, residual
 * add, softmax, BatchNorm, LayerNorm. */
#include "kernels_nn.h"
#endif
