/* fast_oracle.h: a second, fast reference for the exhaustive runs.
 *
 * It covers what the exhaustive tests sweep: fp16 and bf16 add, sub, mul and
 * div over all operand pairs, and fp32 -> fp16 / bf16 over all inputs, with
 * the default environment (gradual underflow, x86 NaNs) in the six
 * deterministic modes and both tininess rules at once.
 *
 * Method, independent of both the emulator and the MPFR oracle:
 *   1. the exact result as a double v plus the sign of the residual
 *      (sums and products of these formats are exact in double or are made
 *      so by TwoSum; a quotient's residual sign comes from fma(-q, b, a));
 *   2. the two format neighbours of |v| by binary search in a table of all
 *      non-negative format values as doubles, and where the exact value lies
 *      between them (below, at or above the midpoint);
 *   3. the choice of each mode from that position, and tininess-after from
 *      the same test on the unbounded-exponent grid just below 2^emin.
 * test_oracle.c proves it against the MPFR oracle.
 */
#ifndef AMPSCOPE_TESTS_FAST_ORACLE_H
#define AMPSCOPE_TESTS_FAST_ORACLE_H

#include <stdint.h>

#include "fpe.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fo_op { FO_ADD, FO_SUB, FO_MUL, FO_DIV } fo_op;

#define FO_MODES 6 /* FPE_RNE .. FPE_RO */

/* Results for every deterministic mode and tininess rule:
 * bits[mode][tininess], flags[mode][tininess]. */
typedef struct fo_result {
    uint16_t bits[FO_MODES][2];
    uint8_t flags[FO_MODES][2];
} fo_result;

/* Build the tables (idempotent; call once before threads, if any). */
void fo_init(void);
/* a op b in fmt (FPE_FMT_F16 or FPE_FMT_BF16). */
void fo_binary(fo_op op, fpe_format_id fmt, uint16_t a, uint16_t b, fo_result *r);
/* fp32 bits -> fmt (FPE_FMT_F16 or FPE_FMT_BF16). */
void fo_from_f32(fpe_format_id fmt, uint32_t a, fo_result *r);

/* The operations an exhaustive run sweeps, by TestFloat name, each with the
 * emulator's function it checks: a binary operation of fmt (bin) or a
 * conversion from fp32 (cvt, op unused).  Shared by the exhaustive test
 * and `ampscope emu verify`. */
typedef uint16_t (*fo_binary_fn)(fpe_env *, uint16_t, uint16_t);
typedef uint16_t (*fo_convert_fn)(fpe_env *, uint32_t);
typedef struct fo_checked_op {
    const char *name;
    fpe_format_id fmt;
    fo_op op;
    fo_binary_fn bin;
    fo_convert_fn cvt;
} fo_checked_op;
#define FO_CHECKED_OPS 10
extern const fo_checked_op fo_checked_ops[FO_CHECKED_OPS];
/* TestFloat's names of the modes, indexed by fpe_round (FPE_RNE .. FPE_RO). */
extern const char *const fo_mode_names[FO_MODES];

#ifdef __cplusplus
}
#endif
#endif
