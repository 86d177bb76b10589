/* oracle.h: reference results for the emulator's tests, computed with GNU MPFR.
 *
 * Every operation of emulate/fpe.h has a counterpart here, written from the
 * contract alone: the special cases (NaN, infinities, zeros, invalid and
 * divide-by-zero) are decided by independent code, and the finite cases are
 * computed with MPFR toward zero at 64 bits while keeping the sticky bit,
 * then rounded once to the destination format.  Rounding uses MPFR's own
 * recipe (mpfr_set, mpfr_check_range, mpfr_subnormalize) for the four IEEE
 * directions and a separate integer rounding routine for ties-away,
 * round-to-odd and the stochastic modes; the two routines are checked
 * against each other in test_oracle.c.
 *
 * The only things taken from the emulator are the types of fpe.h and
 * fpe_random_bits (stochastic rounding draws), which has its own
 * known-answer test (test_philox.c).
 */
#ifndef AMPSCOPE_TESTS_ORACLE_H
#define AMPSCOPE_TESTS_ORACLE_H

#include <stdbool.h>
#include <stdint.h>

#include "fpe.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Operations.  "fmt" below is the format of the floating-point operands, or
 * for ORC_FROM_* the destination format. */
typedef enum orc_op {
    ORC_ADD,       /* a + b */
    ORC_SUB,       /* a - b */
    ORC_MUL,       /* a * b */
    ORC_DIV,       /* a / b */
    ORC_MULADD,    /* a * b + c, one rounding */
    ORC_SQRT,      /* sqrt(a) */
    ORC_RTI,       /* roundToInt(a, exact = false) */
    ORC_RTI_EXACT, /* roundToInt(a, exact = true) */
    ORC_TO_F16,    /* fmt -> fp16 */
    ORC_TO_BF16,   /* fmt -> bf16 */
    ORC_TO_F32,    /* fmt -> fp32 */
    ORC_TO_F64,    /* fmt -> binary64 bits (always exact) */
    ORC_TO_I32,    /* float -> integer, exact = false (never inexact) */
    ORC_TO_I64,
    ORC_TO_UI32,
    ORC_TO_UI64,
    ORC_TO_I32_X, /* float -> integer, exact = true */
    ORC_TO_I64_X,
    ORC_TO_UI32_X,
    ORC_TO_UI64_X,
    ORC_FROM_I32, /* operand 0 holds the integer (sign-extended for i32/i64) */
    ORC_FROM_I64,
    ORC_FROM_UI32,
    ORC_FROM_UI64,
    ORC_FROM_F64, /* operand 0 holds the binary64 bits */
    ORC_OP_COUNT
} orc_op;

/* Comparisons (result 0 or 1). */
typedef enum orc_cmp {
    ORC_EQ, /* quiet */
    ORC_LE, /* signaling */
    ORC_LT, /* signaling */
    ORC_EQ_SIGNALING,
    ORC_LE_QUIET,
    ORC_LT_QUIET,
    ORC_CMP_COUNT
} orc_cmp;

/* Format parameters, written out here rather than read from fpe_formats so
 * that the emulator's table is itself under test. */
typedef struct orc_format {
    const char *name;
    int bits, p, exp_bits, bias, emin, emax;
    int frac_bits; /* p - 1 */
    uint32_t sign_mask, exp_mask, frac_mask, quiet_bit;
    uint32_t max_finite;       /* bits of the largest finite positive value */
    uint32_t inf;              /* bits of +inf */
    long mpfr_emin, mpfr_emax; /* the exponent range in MPFR's convention */
} orc_format;

extern const orc_format orc_formats[3];

/* Number of floating-point operands an operation takes (1, 2 or 3), and
 * whether its result is a format value (otherwise an integer or f64 bits). */
int oracle_op_arity(orc_op op);
const char *oracle_op_name(orc_op op);
const char *oracle_cmp_name(orc_cmp c);
/* Format of the result of op applied to operands of format fmt; -1 for
 * integer and f64 results. */
int oracle_result_format(orc_op op, fpe_format_id fmt);
/* Width in bits of the result (16, 32 or 64). */
int oracle_result_bits(orc_op op, fpe_format_id fmt);

/* The reference result of op on operands (bit patterns, or integers for
 * ORC_FROM_I*), rounded in env->round with env's tininess, ftz, daz and NaN
 * specialization.  Stochastic modes draw
 * fpe_random_bits(env->sr_seed, env->sr_stream, env->sr_index).  The flags
 * raised are written to *flags_out (not OR-ed).  env is not modified. */
uint64_t oracle_op(orc_op op, fpe_format_id fmt, const fpe_env *env, const uint64_t *operands,
                   uint8_t *flags_out);

/* Reference comparison, computed with host doubles. */
bool oracle_compare(orc_cmp cmp, fpe_format_id fmt, const fpe_env *env, uint32_t a, uint32_t b,
                    uint8_t *flags_out);

/* For the oracle's self-test: when set, the four IEEE directions are also
 * rounded by the integer routine instead of MPFR's recipe. */
void oracle_force_integer_rounding(bool on);

/* ---- small helpers on bit patterns, shared by the tests ---------------- */
/* Exact value of a bit pattern (NaN -> NaN, inf -> inf). */
double orc_to_double(fpe_format_id fmt, uint32_t bits);
/* Bits of a double that is exactly representable in fmt (or +-0, +-inf).
 * Aborts if it is not. */
uint32_t orc_from_double(fpe_format_id fmt, double v);
bool orc_is_nan(fpe_format_id fmt, uint32_t bits);
bool orc_is_snan(fpe_format_id fmt, uint32_t bits);
bool orc_is_inf(fpe_format_id fmt, uint32_t bits);
bool orc_is_subnormal(fpe_format_id fmt, uint32_t bits); /* nonzero subnormal */
/* The default NaN of a specialization. */
uint32_t orc_default_nan(fpe_format_id fmt, int nan_spec);
/* A NaN converted between formats (x86 "common NaN": sign kept, payload
 * left-justified and truncated, quiet bit set).  Formats 0..2 or 3 = f64. */
uint64_t orc_convert_nan(int from_fmt, int to_fmt, uint64_t bits);

#ifdef __cplusplus
}
#endif
#endif
