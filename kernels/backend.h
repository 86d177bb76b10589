/* backend.h: what the two backends share inside kernels/ (not installed).
 *
 * The public functions of kernels.h live in kernels/<op>.c: each validates
 * its arguments once (with the ak_check_* helpers below) and then calls the
 * backend's implementation through the op table, b->ops-><op>.  The
 * implementations are ak_cpu_<op> in kernels/cpu/<op>.c and ak_cuda_<op> in
 * kernels/cuda/<op>.cu; they may assume valid arguments.
 *
 * AK_OPS lists every operation once, with its parameters; the op table's
 * fields and both backends' declarations are generated from it, so the
 * three cannot drift apart.
 */
#ifndef AMPSCOPE_KERNELS_BACKEND_H
#define AMPSCOPE_KERNELS_BACKEND_H

#include "kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AK_OPS(OP)                                                                                 \
    OP(alloc, (ak_backend * b, size_t bytes, void **ptr))                                          \
    OP(free, (ak_backend * b, void *ptr))                                                          \
    OP(to_device, (ak_backend * b, void *dst, const void *src, size_t bytes))                      \
    OP(to_host, (ak_backend * b, void *dst, const void *src, size_t bytes))                        \
    OP(copy, (ak_backend * b, void *dst, const void *src, size_t bytes))                           \
    OP(zero, (ak_backend * b, void *ptr, size_t bytes))                                            \
    OP(sync, (ak_backend * b))                                                                     \
    OP(fill, (ak_backend * b, ak_tensor t, double value))                                          \
    OP(cast, (ak_backend * b, ak_tensor dst, ak_tensor src, const ak_rounding *r))                 \
    OP(scale, (ak_backend * b, ak_tensor x, const float *factor))                                  \
    OP(unscale_check, (ak_backend * b, const ak_tensor *grads, size_t count,                       \
                       const float *inv_scale, float *found_inf))                                  \
    OP(stats,                                                                                      \
       (ak_backend * b, ak_tensor x, fpe_format_id target, const float *scale, ak_stats *result))  \
    OP(opt_step_begin,                                                                             \
       (ak_backend * b, const ak_opt_config *cfg, ak_opt_state *state, const float *found_inf))    \
    OP(update, (ak_backend * b, const ak_opt_config *cfg, const ak_param *p,                       \
                const ak_opt_state *state, const float *found_inf, ak_update_loss *loss))          \
    OP(loss_scale_update, (ak_backend * b, const ak_scaler_config *cfg, ak_scaler_state *state,    \
                           const float *found_inf))                                                \
    OP(gemm, (ak_backend * b, const ak_gemm_args *g))                                              \
    OP(gemm_batched, (ak_backend * b, const ak_gemm_args *g, size_t count, size_t stride_a,        \
                      size_t stride_b, size_t stride_c))                                           \
    OP(conv2d_forward, (ak_backend * b, const ak_conv2d *c, ak_tensor y, ak_tensor x, ak_tensor w, \
                        ak_tensor bias))                                                           \
    OP(conv2d_backward, (ak_backend * b, const ak_conv2d *c, ak_tensor dx, ak_tensor dw,           \
                         ak_tensor dbias, ak_tensor dy, ak_tensor x, ak_tensor w))                 \
    OP(bias_add, (ak_backend * b, ak_tensor y, ak_tensor bias, size_t rows, size_t cols))          \
    OP(bias_grad, (ak_backend * b, ak_tensor dbias, ak_tensor dy, size_t rows, size_t cols))       \
    OP(relu, (ak_backend * b, ak_tensor y, ak_tensor x))                                           \
    OP(relu_backward, (ak_backend * b, ak_tensor dx, ak_tensor dy, ak_tensor x))                   \
    OP(maxpool2_forward,                                                                           \
       (ak_backend * b, size_t planes, size_t h, size_t w, ak_tensor y, ak_tensor x))              \
    OP(maxpool2_backward, (ak_backend * b, size_t planes, size_t h, size_t w, ak_tensor dx,        \
                           ak_tensor dy, ak_tensor x))                                             \
    OP(gelu, (ak_backend * b, ak_gelu_form form, ak_tensor y, ak_tensor x))                        \
    OP(gelu_backward,                                                                              \
       (ak_backend * b, ak_gelu_form form, ak_tensor dx, ak_tensor dy, ak_tensor x))               \
    OP(avgpool_forward, (ak_backend * b, size_t planes, size_t hw, ak_tensor y, ak_tensor x))      \
    OP(avgpool_backward, (ak_backend * b, size_t planes, size_t hw, ak_tensor dx, ak_tensor dy))   \
    OP(embedding_forward, (ak_backend * b, size_t tokens, size_t dim, size_t vocab, ak_tensor ids, \
                           ak_tensor weight, ak_tensor y))                                         \
    OP(embedding_backward, (ak_backend * b, size_t tokens, size_t dim, size_t vocab,               \
                            ak_tensor ids, ak_tensor dy, ak_tensor dweight, ak_dtype acc))         \
    OP(dropout,                                                                                    \
       (ak_backend * b, float p, uint64_t key, uint64_t offset, ak_tensor y, ak_tensor x))         \
    OP(add, (ak_backend * b, ak_tensor y, ak_tensor a, ak_tensor bb))                              \
    OP(softmax_forward, (ak_backend * b, const ak_softmax_args *a, ak_tensor y, ak_tensor x))      \
    OP(softmax_backward,                                                                           \
       (ak_backend * b, const ak_softmax_args *a, ak_tensor dx, ak_tensor dy, ak_tensor y))        \
    OP(batchnorm_forward, (ak_backend * b, const ak_batchnorm *a, ak_tensor y, ak_tensor x,        \
                           ak_tensor gamma, ak_tensor beta, ak_tensor running_mean,                \
                           ak_tensor running_var, ak_tensor save_mean, ak_tensor save_invstd))     \
    OP(batchnorm_backward,                                                                         \
       (ak_backend * b, const ak_batchnorm *a, ak_tensor dx, ak_tensor dgamma, ak_tensor dbeta,    \
        ak_tensor dy, ak_tensor x, ak_tensor gamma, ak_tensor save_mean, ak_tensor save_invstd))   \
    OP(layernorm_forward,                                                                          \
       (ak_backend * b, size_t rows, size_t cols, double eps, ak_tensor y, ak_tensor x,            \
        ak_tensor gamma, ak_tensor beta, ak_tensor save_mean, ak_tensor save_rstd))                \
    OP(layernorm_backward,                                                                         \
       (ak_backend * b, size_t rows, size_t cols, ak_tensor dx, ak_tensor dgamma, ak_tensor dbeta, \
        ak_tensor dy, ak_tensor x, ak_tensor gamma, ak_tensor save_mean, ak_tensor save_rstd))     \
    OP(softmax_xent,                                                                               \
       (ak_backend * b, size_t batch, size_t classes, ak_tensor logits, const int32_t *labels,     \
        const float *scale, float *loss, ak_tensor dlogits, int32_t *correct))                     \
    OP(nll_loss,                                                                                   \
       (ak_backend * b, size_t batch, size_t classes, ak_tensor logp, const int32_t *labels,       \
        const float *scale, float *loss, ak_tensor dlogp, int32_t *correct))                       \
    OP(mse, (ak_backend * b, ak_tensor pred, ak_tensor target, const float *scale, float *loss,    \
             ak_tensor dpred))                                                                     \
    OP(accumulate, (ak_backend * b, ak_tensor y, ak_tensor x))                                     \
    OP(sum_squares, (ak_backend * b, const ak_tensor *xs, size_t count, double *sumsq))            \
    OP(clip_by_norm, (ak_backend * b, const ak_tensor *xs, size_t count, const double *sumsq,      \
                      float max_norm, float *coef_out))

/* The op table: one function pointer per operation. */
#define AK_OP_FIELD(name, params) int(*name) params;
typedef struct ak_ops {
    AK_OPS(AK_OP_FIELD)
} ak_ops;
#undef AK_OP_FIELD

/* Both backends' implementations. */
#define AK_OP_DECLARE(name, params)                                                                \
    int ak_cpu_##name params;                                                                      \
    int ak_cuda_##name params;
AK_OPS(AK_OP_DECLARE)
#undef AK_OP_DECLARE

extern const ak_ops ak_cpu_ops;

/* ---- the cpu backend's vector loops ------------------------------------------------- */
/* A cpu loop built twice, for the baseline and for AVX2, picked when the
 * program loads (as emulate/chop.c does); the results are the same bits,
 * only the vector width differs. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&                             \
    !defined(__SANITIZE_ADDRESS__) && !defined(__CUDACC__)
#define AK_CPU_VECTOR __attribute__((target_clones("avx2", "default")))
#else
#define AK_CPU_VECTOR
#endif

/* n fp16 or bf16 patterns (format from) widened to fp32, exactly
 * (ak_widen16_k): the cpu cast to fp32 and the GEMM's 16-bit inputs. */
void ak_cpu_widen16(fpe_format_id from, const uint16_t *in, size_t n, float *out);

/* ---- the cpu backend's scratch memory ----------------------------------------- */
/* Work buffers that the cpu backend keeps between calls (b->impl), one per
 * purpose, so that a training step does not map and fault in fresh pages
 * for every GEMM and convolution.  Contents are undefined on return. */
typedef enum ak_cpu_scratch_slot {
    AK_SCRATCH_CONV_COL,  /* conv2d: col, or dcol */
    AK_SCRATCH_CONV_CM,   /* conv2d: the channel-major Ycm or dYcm */
    AK_SCRATCH_GEMM_A,    /* gemm: A widened to fp32 */
    AK_SCRATCH_GEMM_B,    /* gemm: B widened to fp32 */
    AK_SCRATCH_GEMM_ACC,  /* gemm: the fp32 accumulator of a 16-bit C */
    AK_SCRATCH_EMBED_ACC, /* embedding_backward: the sums in the accumulation format */
    AK_SCRATCH_SLOTS
} ak_cpu_scratch_slot;

/* The buffer of slot, at least count * size bytes, in *p (NULL when the
 * product is 0); AK_ENOMEM with a message naming call when it cannot be
 * had. */
int ak_cpu_scratch(ak_backend *b, ak_cpu_scratch_slot slot, const char *call, size_t count,
                   size_t size, void **p);
/* ---- the cpu backend's tables --------------------------------------------------- */
/* Tables of an op's results (or of the parts of them that depend on one
 * input alone) for every 16-bit input pattern, built by the op when it
 * first runs on a tensor large enough to pay for them, then kept for the
 * backend's life.  An entry is what the op's element code computes for that
 * pattern, so a lookup gives the same bits as computing it again. */
#define AK_CPU_TABLE_PATTERNS 65536 /* 16-bit input patterns */
typedef enum ak_cpu_table_id {
    AK_TABLE_GELU = 0,                       /* 2 forms x fp16, bf16: fp32 results */
    AK_TABLE_GELU_SLOPE = AK_TABLE_GELU + 4, /* 2 forms x fp16, bf16: the slope's parts */
    AK_TABLE_IDS = AK_TABLE_GELU_SLOPE + 4
} ak_cpu_table_id;

/* Table id (bytes long): the one kept, or when build is true and there is
 * none, a new one that the caller fills before it returns (*fresh true).
 * NULL when there is none and build is false, or memory cannot be had (the
 * op then computes its elements as it would without a table). */
void *ak_cpu_table(ak_backend *b, int id, size_t bytes, bool build, bool *fresh);

/* The state of a cpu backend (b->impl): NULL when it cannot be allocated;
 * ak_cpu_state_free releases it and every buffer. */
void *ak_cpu_state_new(void);
void ak_cpu_state_free(void *impl);
extern const ak_ops ak_cuda_ops; /* defined only when built with CUDA */

struct ak_backend {
    ak_kind kind;
    const ak_ops *ops;
    char device[128]; /* device or CPU name */
    char error[512];  /* the last error's message */
    size_t error_at;  /* where its text starts after the "call: " prefix */
    void *impl;       /* the backend's own state (cuda: stream, cuBLAS handles) */
};

/* Every public wrapper starts with AK_BEGIN(b): a NULL backend is AK_EINVAL,
 * and the previous call's error message is cleared. */
#define AK_BEGIN(b)                                                                                \
    do {                                                                                           \
        if (!(b)) return AK_EINVAL;                                                                \
        (b)->error[0] = '\0';                                                                      \
    } while (0)

/* Records "call: message" as b's last error and returns code. */
int ak_fail(ak_backend *b, int code, const char *call, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* ---- validation, shared by the public wrappers ----------------------------- */
/* t must have a valid dtype, data aligned to its element size, data != NULL
 * when n > 0, and exactly n elements when n != (size_t)-1.  what names the
 * argument in the message ("ak_cast: dst is NULL with 12 elements"). */
#define AK_ANY_N ((size_t)-1)
int ak_check_tensor(ak_backend *b, const char *call, const char *what, ak_tensor t, size_t n);
/* As ak_check_tensor, but an empty tensor (data NULL, n 0) is accepted. */
int ak_check_optional(ak_backend *b, const char *call, const char *what, ak_tensor t, size_t n);
/* ptr must be non-NULL and aligned to align bytes. */
int ak_check_ptr(ak_backend *b, const char *call, const char *what, const void *ptr, size_t align);
/* Do the byte ranges [a, a + an) and [b, b + bn) share a byte? (Empty
 * ranges share none.) */
static inline bool ak_overlap(const void *a, size_t an, const void *b, size_t bn)
{
    const uintptr_t pa = (uintptr_t)a, pb = (uintptr_t)b;
    return an > 0 && bn > 0 && pa < pb + bn && pb < pa + an;
}
/* Two optional tensors of n elements (ak_check_optional) that are given
 * together or not at all (gamma and beta), both fp32 when fp32 is set
 * (AK_EUNSUPPORTED otherwise). */
int ak_check_pair(ak_backend *b, const char *call, const char *wa, ak_tensor ta, const char *wb,
                  ak_tensor tb, size_t n, bool fp32);
/* The first n_out of the count tensors (a call's outputs) share no byte
 * with each other nor with the rest (empty ones share none): AK_EINVAL
 * "names[i] overlaps names[j]" for the first pair that does. */
int ak_check_disjoint(ak_backend *b, const char *call, size_t n_out, size_t count,
                      const char *const *names, const ak_tensor *ts);
/* a * b without wrapping, or AK_EINVAL naming the call. */
int ak_check_mul(ak_backend *b, const char *call, const char *what, size_t x, size_t y,
                 size_t *product);

#ifdef __cplusplus
}
#endif
#endif
