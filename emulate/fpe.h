/* fpe.h: ampscope's bit-exact software floating point for fp16, bf16 and fp32.
 *
 * The whole public face of emulate/.  Values are held as their bit patterns
 * (uint16_t for fp16/bf16, uint32_t for fp32).  Nothing here has global state:
 * the rounding mode, tininess rule, subnormal options, NaN specialization,
 * stochastic-rounding seed and the sticky exception flags all live in an
 * fpe_env passed to every call, so the same code compiles for CUDA.
 *
 * Contract of every operation: the result is the exact mathematical result
 * rounded once to the destination format in env->round, with IEEE 754-2008
 * special cases, and the exception flags of that rounding OR-ed into
 * env->flags (never cleared by an operation).
 */
#ifndef AMPSCOPE_FPE_H
#define AMPSCOPE_FPE_H

/* The version of ampscope and of this library (libampscope-emu): the one
 * place it is written.  The build reads it from here (CMakeLists.txt), and
 * CHANGELOG.md says what each version changed. */
#define FPE_VERSION_MAJOR 0
#define FPE_VERSION_MINOR 1
#define FPE_VERSION_PATCH 0
#define FPE_VERSION       "0.1.0"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define FPE_HD __host__ __device__
#else
#define FPE_HD
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- formats ------------------------------------------------------------ */
typedef enum fpe_format_id { FPE_FMT_F16 = 0, FPE_FMT_BF16 = 1, FPE_FMT_F32 = 2 } fpe_format_id;

/* Descriptor of a binary interchange-like format: value of a normal number is
 * (-1)^s * 1.f * 2^(e - bias).  emin = 1 - bias, emax = bias. */
typedef struct fpe_format {
    const char *name; /* "fp16", "bf16", "fp32" */
    int bits;         /* storage width: 16 or 32 */
    int p;            /* precision in bits, hidden bit included: 11, 8, 24 */
    int exp_bits;     /* 5, 8, 8 */
    int bias;         /* 15, 127, 127 */
    int emin;         /* exponent of the smallest normal: -14, -126, -126 */
    int emax;         /* exponent of the largest finite: 15, 127, 127 */
} fpe_format;

extern const fpe_format fpe_formats[3]; /* indexed by fpe_format_id */

/* ---- rounding, environment, flags -------------------------------------- */
typedef enum fpe_round {
    FPE_RNE = 0,     /* near_even: to nearest, ties to even (IEEE default) */
    FPE_RNA = 1,     /* near_maxMag: to nearest, ties away from zero */
    FPE_RZ = 2,      /* minMag: toward zero */
    FPE_RD = 3,      /* min: toward -inf */
    FPE_RU = 4,      /* max: toward +inf */
    FPE_RO = 5,      /* odd: truncate, then set the last bit if inexact */
    FPE_SR_PROP = 6, /* stochastic, P(away from zero) = distance / ulp */
    FPE_SR_EQUAL = 7 /* stochastic, P(away from zero) = 1/2 when inexact */
} fpe_round;
#define FPE_ROUND_COUNT 8

enum fpe_flag {
    FPE_FLAG_INEXACT = 0x01,
    FPE_FLAG_UNDERFLOW = 0x02,
    FPE_FLAG_OVERFLOW = 0x04,
    FPE_FLAG_INFINITE = 0x08, /* divide by zero */
    FPE_FLAG_INVALID = 0x10
}; /* the same bits as Berkeley TestFloat prints */

typedef enum fpe_tininess { FPE_TININESS_AFTER = 0, FPE_TININESS_BEFORE = 1 } fpe_tininess;

typedef enum fpe_nan_spec {
    /* SoftFloat's 8086-SSE specialization: default NaN 0xFE00 / 0xFFC0 /
     * 0xFFC00000 (sign set, quiet); a NaN operand is quieted and propagated,
     * the first NaN operand winning; payloads survive conversions; invalid
     * integer conversions give 0x80000000... / 0xFFFFFFFF... */
    FPE_NAN_X86 = 0,
    /* GPU-style: every NaN result is the canonical 0x7FFF / 0x7FFF /
     * 0x7FFFFFFF; invalid integer conversions saturate and NaN gives 0. */
    FPE_NAN_CANONICAL = 1,
    /* CUDA on sm_90, as measured on an H100 (docs/GPU_NUMERICS.md): as
     * FPE_NAN_CANONICAL, except that bf16 -> fp32 widening keeps a NaN's
     * bits (cvt.f32.bf16 is a 16-bit shift: payload kept, a signaling NaN
     * stays signaling); fp16 -> fp32 gives the canonical 0x7FFFFFFF. */
    FPE_NAN_CUDA = 2
} fpe_nan_spec;

typedef struct fpe_env {
    uint8_t round;      /* fpe_round */
    uint8_t tininess;   /* fpe_tininess; how "tiny" is detected for underflow */
    uint8_t ftz;        /* flush tiny results to signed zero (raises underflow|inexact) */
    uint8_t daz;        /* treat subnormal inputs as signed zero */
    uint8_t nan;        /* fpe_nan_spec */
    uint8_t flags;      /* sticky fpe_flag bits, OR-ed by every operation */
    uint32_t sr_stream; /* stochastic rounding: Philox counter word 2 */
    uint64_t sr_seed;   /* stochastic rounding: Philox key */
    uint64_t sr_index;  /* index of the next random draw; every rounding
                           operation consumes exactly one index, used or not */
} fpe_env;

/* An environment with the IEEE defaults: RNE, tininess after rounding,
 * gradual underflow, x86 NaNs, flags clear, seed 0. */
FPE_HD static inline fpe_env fpe_env_default(void)
{
    fpe_env e = {FPE_RNE, FPE_TININESS_AFTER, 0, 0, FPE_NAN_X86, 0, 0, 0, 0};
    return e;
}

/* The CUDA specialization: the environment in which the emulator reproduces
 * CUDA's fp16/bf16 intrinsics on sm_90 (docs/GPU_NUMERICS.md).  RNE, as the
 * .rn instructions and conversions do; subnormals kept (no FTZ, no DAZ: the
 * .f16/.bf16 instructions flush only when asked with .ftz, which the
 * intrinsics never do); every NaN result is the canonical 0x7FFF /
 * 0x7FFFFFFF, except bf16 -> fp32 widening, which keeps the NaN's bits
 * (FPE_NAN_CUDA; measured on an H100 over all 2^16 inputs).  The GPU has no exception flags:
 * env->flags still accumulates and means nothing to compare, and tininess only decides the
 * underflow flag.  Approximate intrinsics (hrcp, hrsqrt) are not modelled. */
FPE_HD static inline fpe_env fpe_env_cuda(void)
{
    fpe_env e = {FPE_RNE, FPE_TININESS_AFTER, 0, 0, FPE_NAN_CUDA, 0, 0, 0, 0};
    return e;
}

/* ---- counter-based random bits (see philox.h) --------------------------- */
/* 32 random bits for (seed, stream, index): word (index & 3) of
 * Philox4x32-10 with key {seed lo, seed hi} and counter
 * {index >> 2 (low 32), index >> 34, stream, 0}. */
uint32_t fpe_random_bits(uint64_t seed, uint32_t stream, uint64_t index);

/* ---- operations ---------------------------------------------------------
 * For F in {f16, bf16} with type uint16_t and F = f32 with uint32_t:
 *   F fpe_F_add(env, a, b)   a + b
 *   F fpe_F_sub(env, a, b)   a - b
 *   F fpe_F_mul(env, a, b)   a * b
 *   F fpe_F_div(env, a, b)   a / b
 *   F fpe_F_sqrt(env, a)     sqrt(a)
 *   F fpe_F_mulAdd(env, a, b, c)   a * b + c, one rounding: the fused
 *                                  multiply-add (fma), SoftFloat's name; the
 *                                  fpe_F_fma aliases below lead here, and
 *                                  the code is in mulAdd.c / ops/mulAdd.h
 *   F fpe_F_roundToInt(env, a, exact)  to an integral value in env->round;
 *                                       raises inexact only if exact is true
 *   bool fpe_F_eq / le / lt (env, a, b)            eq quiet; le, lt signaling
 *   bool fpe_F_eq_signaling / le_quiet / lt_quiet  the other variants
 */
#define FPE_DECLARE_FORMAT_OPS(F, T)                                                               \
    T fpe_##F##_add(fpe_env *env, T a, T b);                                                       \
    T fpe_##F##_sub(fpe_env *env, T a, T b);                                                       \
    T fpe_##F##_mul(fpe_env *env, T a, T b);                                                       \
    T fpe_##F##_div(fpe_env *env, T a, T b);                                                       \
    T fpe_##F##_sqrt(fpe_env *env, T a);                                                           \
    T fpe_##F##_mulAdd(fpe_env *env, T a, T b, T c);                                               \
    T fpe_##F##_roundToInt(fpe_env *env, T a, bool exact);                                         \
    bool fpe_##F##_eq(fpe_env *env, T a, T b);                                                     \
    bool fpe_##F##_le(fpe_env *env, T a, T b);                                                     \
    bool fpe_##F##_lt(fpe_env *env, T a, T b);                                                     \
    bool fpe_##F##_eq_signaling(fpe_env *env, T a, T b);                                           \
    bool fpe_##F##_le_quiet(fpe_env *env, T a, T b);                                               \
    bool fpe_##F##_lt_quiet(fpe_env *env, T a, T b);                                               \
    /* to and from integers; out of range or NaN raises invalid */                                 \
    int32_t fpe_##F##_to_i32(fpe_env *env, T a, bool exact);                                       \
    int64_t fpe_##F##_to_i64(fpe_env *env, T a, bool exact);                                       \
    uint32_t fpe_##F##_to_ui32(fpe_env *env, T a, bool exact);                                     \
    uint64_t fpe_##F##_to_ui64(fpe_env *env, T a, bool exact);                                     \
    T fpe_i32_to_##F(fpe_env *env, int32_t a);                                                     \
    T fpe_i64_to_##F(fpe_env *env, int64_t a);                                                     \
    T fpe_ui32_to_##F(fpe_env *env, uint32_t a);                                                   \
    T fpe_ui64_to_##F(fpe_env *env, uint64_t a);                                                   \
    /* to and from binary64 (double); to_f64 is always exact */                                    \
    double fpe_##F##_to_f64(fpe_env *env, T a);                                                    \
    T fpe_f64_to_##F(fpe_env *env, double a);                                                      \
    /* classification helpers (no flags) */                                                        \
    bool fpe_##F##_isnan(T a);                                                                     \
    bool fpe_##F##_is_signaling_nan(T a);

FPE_DECLARE_FORMAT_OPS(f16, uint16_t)
FPE_DECLARE_FORMAT_OPS(bf16, uint16_t)
FPE_DECLARE_FORMAT_OPS(f32, uint32_t)

/* fma is mulAdd (IEEE 754's fusedMultiplyAdd, C's fma): the same function
 * under the name most readers search for. */
#define fpe_f16_fma  fpe_f16_mulAdd
#define fpe_bf16_fma fpe_bf16_mulAdd
#define fpe_f32_fma  fpe_f32_mulAdd

/* conversions between the three formats */
uint32_t fpe_f16_to_f32(fpe_env *env, uint16_t a);
uint16_t fpe_f32_to_f16(fpe_env *env, uint32_t a);
uint32_t fpe_bf16_to_f32(fpe_env *env, uint16_t a);
uint16_t fpe_f32_to_bf16(fpe_env *env, uint32_t a);
uint16_t fpe_f16_to_bf16(fpe_env *env, uint16_t a);
uint16_t fpe_bf16_to_f16(fpe_env *env, uint16_t a);

/* ---- array rounding ("chop") --------------------------------------------
 * Round each element to format fmt in env->round.  Element i of a call uses
 * random index env->sr_index + i; env->sr_index advances by n, so a result
 * depends on (seed, stream, index) alone, not on how the array is split.
 * On x86-64 with F16C, f32 -> fp16 in the four IEEE modes (no FTZ/DAZ) runs on
 * the host's vcvtps2ph, which gives the same bits, flags and counts (tested
 * over every input); the host's floating-point environment (MXCSR) is set for
 * the call and restored; f32 -> bf16 on x86-64 with AVX2 runs a loop written for
 * it (the same bits, flags and counts).  AMPSCOPE_EMU_PORTABLE=1 in the
 * environment keeps the portable code. */
typedef struct fpe_chop_counts {
    uint64_t flushed;    /* nonzero finite inputs whose result is zero */
    uint64_t subnormal;  /* results that are subnormal (nonzero) in fmt */
    uint64_t overflowed; /* finite inputs whose rounding overflowed */
    uint64_t inexact;    /* results that differ from their input */
} fpe_chop_counts;

/* Results as float/double values, in place when out == in.  counts may be
 * NULL; otherwise the counts of this call are added to it. */
int fpe_chop_f32(fpe_env *env, fpe_format_id fmt, const float *in, float *out, size_t n,
                 fpe_chop_counts *counts);
int fpe_chop_f64(fpe_env *env, fpe_format_id fmt, const double *in, double *out, size_t n,
                 fpe_chop_counts *counts);
/* Results packed as 16-bit patterns (fmt must be FPE_FMT_F16 or FPE_FMT_BF16). */
int fpe_chop_f32_to_u16(fpe_env *env, fpe_format_id fmt, const float *in, uint16_t *out, size_t n,
                        fpe_chop_counts *counts);
int fpe_chop_f64_to_u16(fpe_env *env, fpe_format_id fmt, const double *in, uint16_t *out, size_t n,
                        fpe_chop_counts *counts);
/* Return codes of the chop functions */
#define FPE_OK     0
#define FPE_EINVAL (-1) /* bad format id, or NULL pointer with n > 0 */

/* ---- array arithmetic ------------------------------------------------------
 * out[i] = a[i] op b[i] (c[i] for fma) for fp16 or bf16 bit patterns, each element exactly as
 * the scalar operation (fpe_<fmt>_add ...) gives it with random index env->sr_index + i: the
 * same bits, and the OR of the same flags into env->flags; env->sr_index advances by n.  out
 * may be a, b or c (in place), but must not overlap them otherwise.  Elements the vector path
 * cannot prove go through the scalar operation (array_ops.c says which). */
typedef enum fpe_arith_op {
    FPE_ARITH_ADD = 0,
    FPE_ARITH_SUB = 1,
    FPE_ARITH_MUL = 2,
    FPE_ARITH_DIV = 3,
    FPE_ARITH_FMA = 4, /* a * b + c, one rounding (mulAdd) */
    FPE_ARITH_SQRT = 5 /* sqrt(a); b and c are not read */
} fpe_arith_op;
#define FPE_ARITH_OP_COUNT 6

/* What the results of one call were, element by element; added to, never cleared. */
typedef struct fpe_array_counts {
    uint64_t flushed;    /* zero results that raised inexact: the exact result was not zero */
    uint64_t subnormal;  /* results that are subnormal (nonzero) */
    uint64_t overflowed; /* results whose rounding overflowed */
    uint64_t inexact;    /* results that raised inexact */
    uint64_t nan;        /* NaN results (NaN operands, invalid operations) */
} fpe_array_counts;

/* The generic entry: fmt FPE_FMT_F16 or FPE_FMT_BF16; b may be NULL for sqrt, c is read only
 * for fma; counts may be NULL.  FPE_EINVAL for a bad format or op, or a NULL array with n > 0. */
int fpe_array_arith(fpe_env *env, fpe_format_id fmt, fpe_arith_op op, const uint16_t *a,
                    const uint16_t *b, const uint16_t *c, uint16_t *out, size_t n,
                    fpe_array_counts *counts);
/* The same, by name: fpe_f16_add_array(env, a, b, out, n, counts), ... */
#define FPE_DECLARE_ARRAY_OPS(F)                                                                   \
    int fpe_##F##_add_array(fpe_env *env, const uint16_t *a, const uint16_t *b, uint16_t *out,     \
                            size_t n, fpe_array_counts *counts);                                   \
    int fpe_##F##_sub_array(fpe_env *env, const uint16_t *a, const uint16_t *b, uint16_t *out,     \
                            size_t n, fpe_array_counts *counts);                                   \
    int fpe_##F##_mul_array(fpe_env *env, const uint16_t *a, const uint16_t *b, uint16_t *out,     \
                            size_t n, fpe_array_counts *counts);                                   \
    int fpe_##F##_div_array(fpe_env *env, const uint16_t *a, const uint16_t *b, uint16_t *out,     \
                            size_t n, fpe_array_counts *counts);                                   \
    int fpe_##F##_fma_array(fpe_env *env, const uint16_t *a, const uint16_t *b, const uint16_t *c, \
                            uint16_t *out, size_t n, fpe_array_counts *counts);                    \
    int fpe_##F##_sqrt_array(fpe_env *env, const uint16_t *a, uint16_t *out, size_t n,             \
                             fpe_array_counts *counts);
FPE_DECLARE_ARRAY_OPS(f16)
FPE_DECLARE_ARRAY_OPS(bf16)

/* ---- names, for command lines ------------------------------------------- */
/* TestFloat's mode names: "near_even", "near_maxMag", "minMag", "min", "max",
 * "odd", plus ampscope's "stoch_prop" and "stoch_equal". */
const char *fpe_round_name(fpe_round r);
int fpe_round_from_name(const char *name); /* -1 if unknown */
/* "fp16"/"f16", "bf16", "fp32"/"f32" -> id, -1 if unknown */
int fpe_format_from_name(const char *name);

#ifdef __cplusplus
}
#endif
#endif
