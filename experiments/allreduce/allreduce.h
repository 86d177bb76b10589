/* allreduce.h: the gradient all-reduce of data-parallel training in low precision, bit for bit
 * (prefix ar_).
 *
 * What one call computes, for a world of N ranks each holding n fp32 gradient values g_r[i]:
 *   1. the bucket: b = RN_grad(g_r[i]), the gradient in the framework's bucket format
 *      (fp32: unchanged; fp16/bf16: the model's gradients);
 *   2. the message: m = RN_comm(b), cast to the communication format, then, when the preset
 *      pre-scales, m = RN_comm(RN_f32(m * k_pre)) with k_pre = RN_f32(1 / pre) (PyTorch's
 *      `div_(world_size)` on a CUDA tensor with a CPU scalar is a multiply by the fp32
 *      reciprocal in fp32 opmath, aten/src/ATen/native/cuda/BinaryDivTrueKernel.cu
 *      div_true_kernel_cuda; `mul_(1. / f)` is the same product).  AR_ORDER_SCALE_FIRST
 *      swaps the two: the product in fp32 on b, then one cast;
 *   3. the sum, a ring reduce-scatter + all-gather: the buffer is cut into N contiguous chunks,
 *      chunk c = [floor(c n / N), floor((c + 1) n / N)); chunk c's sum starts at rank c's
 *      message and adds rank c+1, c+2, ..., c+N-1 (mod N) in that order, s = s + m_r, each
 *      addition rounded once to the communication format, to nearest even, subnormals kept
 *      (NCCL's half/bf16 sum: __hadd / fp32 add rounded .rn), NaNs canonical as on the GPU
 *      (fpe_env_cuda).  Whether NCCL adds with __hadd or through fp32 and back gives the same
 *      bits: fp32's 24 bits are at least 2p + 2 for p = 11 and 8, so that double rounding of a
 *      sum is innocuous (Figueroa, 1995).  The order is this stated one: NCCL's own (channels,
 *      slices, trees) decides which rank starts each element's sum differently, not how each
 *      addition rounds.  The all-gather copies the finished chunks' bit patterns unchanged, so
 *      every rank ends with the same bits;
 *   4. the post-scale, when the preset has one: s = RN_comm(RN_f32(s * k_post)),
 *      k_post = RN_f32(pre / N) (Apex and DeepSpeed's `mul_(f / world_size)`);
 *   5. the result: RN_grad(s) (the bucket's `copy_` back), returned as fp32 values.
 * The messages are the communication format's bit patterns, so this is what a real ring of
 * that order computes.  ar_reduce runs the N ranks in one process (N in [1, AR_MAX_WORLD]);
 * ar_mpi_allreduce (allreduce_mpi.c, built with MPI) runs the same ring over MPI ranks with
 * MPI_Sendrecv of the bit patterns and gives the same bits.
 *
 * The statistics of a call (ar_stats) compare the result with the exact mean of the ranks'
 * fp32 gradients (the exact sum over ar_divisor): in ar_reduce the sum over ranks is Neumaier's
 * compensated sum in binary64 (its error is of order 2^-53 of the sum plus N 2^-106 of the
 * sum of magnitudes, Higham 2002 sec. 4.3: far below any fp16, bf16 or fp32 error); in
 * ar_mpi_allreduce it is MPI_Allreduce of binary64 values (error of order N 2^-53 of the sum of
 * magnitudes), so its errors may differ from ar_reduce's in the last bits; its counters do not.
 * Errors are divided by loss_scale (the gradients given are the scaled ones, as in the training
 * step). */
#ifndef AMPSCOPE_ALLREDUCE_H
#define AMPSCOPE_ALLREDUCE_H

#include <stddef.h>
#include <stdint.h>

#include "fpe.h"

#define AR_MAX_WORLD (1 << 20)

/* status codes */
#define AR_OK     0
#define AR_EINPUT (-1) /* a bad argument: the message names it */
#define AR_ENOMEM (-2)
#define AR_EMPI   (-3)

typedef enum ar_order {
    AR_ORDER_CAST_FIRST = 0, /* cast to the communication format, then the pre-scale in it */
    AR_ORDER_SCALE_FIRST = 1 /* the pre-scale on the bucket (in fp32), then one cast */
} ar_order;

/* One way of all-reducing gradients: a preset row, or one built by hand. */
typedef struct ar_config {
    const char *name;
    fpe_format_id grad; /* the bucket's format (the model's gradients) */
    fpe_format_id comm; /* the format of the messages and of the sum */
    ar_order order;     /* where the pre-scale sits against the cast */
    double pre;         /* pre-divide factor: 0 = the world size, 1 = none */
    int post;           /* 1: multiply the sum by pre / N after the reduction (unless pre = N) */
    const char *source; /* the framework's file and function */
} ar_config;

/* The frameworks' presets (allreduce_presets.c), ended by a row with name NULL. */
extern const ar_config ar_presets[];
const ar_config *ar_preset(const char *name); /* NULL if unknown */
/* "pytorch-fp32, pytorch-fp16-hook, ..." for messages and help */
const char *ar_preset_names(void);

typedef struct ar_stats {
    uint64_t elements;           /* n */
    uint64_t inputs_nonzero;     /* (rank, element) inputs that are nonzero */
    uint64_t flushed_cast;       /* nonzero inputs that the casts (to grad, to comm) made zero */
    uint64_t flushed_prescale;   /* nonzero after the cast, zero after the pre-scale */
    uint64_t subnormal_messages; /* messages that are subnormal in the communication format */
    uint64_t overflow_cast;      /* finite inputs that the cast or the pre-scale made inf */
    uint64_t overflow_in_sum;    /* every rank's message finite, the reduced value inf */
    uint64_t nonfinite_results;  /* results that are inf or NaN */
    uint64_t zero_results;       /* results that are zero where the exact mean is not */
    uint64_t subnormal_results;  /* results subnormal in the communication format */
    double max_abs_error;        /* max |result - exact mean| / loss_scale, finite results */
    double rel_l2_error;         /* ||result - exact||_2 / ||exact||_2, finite results */
    int found_inf;               /* a non-finite value in the result: the step is skipped */
} ar_stats;

/* Rank r's gradient values [offset, offset + count) into out; returns 0, or nonzero to stop. */
typedef int (*ar_grad_fn)(void *ctx, int rank, size_t offset, size_t count, float *out);

typedef struct ar_call {
    const ar_config *config;
    int world;                 /* N, in [1, AR_MAX_WORLD] */
    size_t n;                  /* elements per rank (0 allowed) */
    const float *const *grads; /* grads[r]: rank r's n values; or NULL and gen */
    ar_grad_fn gen;
    void *gen_ctx;
    double loss_scale; /* the gradients' scale, for the errors (0 means 1) */
} ar_call;

/* The reduction of call's N gradients in one process: out (n fp32 values) is the result every
 * rank receives; stats (may be NULL) the statistics.  Returns AR_OK or a negative status with
 * a message in msg. */
int ar_reduce(const ar_call *call, float *out, ar_stats *stats, char *msg, size_t msg_len);
/* (out may be one rank's grads buffer: each chunk is read from every rank before it is
 * written.) */

/* The pieces the MPI transport shares (allreduce.c). */
/* The pre-scale factor for a world of N (pre, or N when pre is 0). */
double ar_pre_factor(const ar_config *c, int world);
/* What the result is the exact sum divided by: N with a post-scale, else the pre factor (N for
 * every preset: they all average). */
double ar_divisor(const ar_config *c, int world);
/* A configuration at a world size, its constants computed once (ar_plan_make). */
typedef struct ar_plan {
    const ar_config *config;
    int world;
    int pre_scale;   /* 1 when the messages are multiplied by k_pre */
    int post_scale;  /* 1 when the sum is multiplied by k_post */
    uint32_t k_pre;  /* RN_f32(1 / pre), fp32 bits */
    uint32_t k_post; /* RN_f32(pre / N), fp32 bits */
} ar_plan;
ar_plan ar_plan_make(const ar_config *c, int world); /* c checked by ar_check_config */
/* Step 1 and 2 for one value: its message's bits; counts into stats (may be NULL). */
uint32_t ar_message(const ar_plan *p, float g, ar_stats *stats);
/* Step 3's addition: a + b rounded once to fmt (NCCL's sum). */
uint32_t ar_add(fpe_format_id fmt, uint32_t a, uint32_t b);
/* Steps 4 and 5 for one reduced value: the fp32 result. */
float ar_finish(const ar_plan *p, uint32_t sum);
/* chunk c of N over n elements: [*begin, *end) */
void ar_chunk(size_t n, int world, int c, size_t *begin, size_t *end);
int ar_check_config(const ar_config *c, int world, char *msg, size_t msg_len);
/* The per-element statistics of a result against an exact mean. */
void ar_stats_result(const ar_config *c, uint32_t sum, float result, double exact,
                     double loss_scale, int all_messages_finite, ar_stats *s, double *err2,
                     double *ref2);
void ar_stats_finish(ar_stats *s, double err2, double ref2);

#ifdef AMPSCOPE_HAVE_MPI
#include <mpi.h>
/* The same reduction over the ranks of comm (its size is N, this process's rank r): grad is
 * this rank's n values, out receives the result (the same bits on every rank).  stats (may be
 * NULL) are the whole world's, on every rank.  Collective: every rank must call it with the
 * same config and n. */
int ar_mpi_allreduce(const ar_config *c, MPI_Comm comm, const float *grad, float *out, size_t n,
                     double loss_scale, ar_stats *stats, char *msg, size_t msg_len);
/* (out may be grad: the training step's gradient buffer, reduced in place.) */
#endif

#endif
