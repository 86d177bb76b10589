/* oracle_internal.h: what the MPFR oracle's two files share (not for its
 * users: they include oracle.h).  oracle.c holds the formats, the NaN rules,
 * the operand decoding and the rounding of an exact value (MPFR's recipe, or
 * integer rounding for ties-away, odd and the stochastic modes);
 * oracle_ops.c holds one function per operation, each deciding its special
 * cases first and handing the finite case to orc_finish(). */
#ifndef AMPSCOPE_ORACLE_INTERNAL_H
#define AMPSCOPE_ORACLE_INTERNAL_H

#include <stdint.h> /* before mpfr.h, for the intmax_t functions */

#include <stdbool.h>

#include <mpfr.h>

#include "oracle.h"

/* binary64 parameters, used as "format 3" in NaN conversions */
#define ORC_F64_FRAC_BITS 52
#define ORC_F64_SIGN      UINT64_C(0x8000000000000000)
#define ORC_F64_EXP       UINT64_C(0x7FF0000000000000)
#define ORC_F64_FRAC      UINT64_C(0x000FFFFFFFFFFFFF)
#define ORC_F64_QUIET     UINT64_C(0x0008000000000000)

enum { ORC_ZERO, ORC_FINITE, ORC_INF, ORC_NAN };
typedef struct orc_operand {
    int cls;
    int sign;
    double v; /* exact value; subnormals read as zero under daz */
} orc_operand;

/* ---- the exact value ----------------------------------------------------
 * A nonzero value as (-1)^sign * (m + r) * 2^e, m in [2^63, 2^64) and
 * 0 <= r < 1 with sticky = (r != 0).  It comes from an MPFR result computed
 * toward zero at 64 bits, whose ternary value is the sticky bit. */
typedef struct orc_xval {
    int sign;
    uint64_t m;
    long e;
    int sticky;
} orc_xval;

/* binary64 <-> its bits */
uint64_t orc_f64_bits(double d);
double orc_f64_from_bits(uint64_t u);

/* Result of an operation with NaN operands: invalid if any is signaling;
 * x86 returns the first NaN operand quieted. */
uint32_t orc_propagate_nan(fpe_format_id fmt, const fpe_env *env, const uint32_t *ops, int n,
                           uint8_t *fl);
/* The default NaN of an invalid operation, raising invalid. */
uint32_t orc_invalid_nan(fpe_format_id fmt, const fpe_env *env, uint8_t *fl);

/* An operand's class, sign and exact value (subnormals read as zero under daz). */
orc_operand orc_decode(fpe_format_id fmt, uint32_t bits, int daz);
uint32_t orc_signed_zero(fpe_format_id fmt, int sign);
uint32_t orc_signed_inf(fpe_format_id fmt, int sign);

/* MPFR working storage (64 bits: room for p + 32 stochastic-rounding bits),
 * set up once by orc_mp_init(); one thread at a time. */
extern mpfr_t orc_mA, orc_mB, orc_mC, orc_mY;
void orc_mp_init(void);
/* oracle_force_integer_rounding(): every mode through the integer rounding */
extern bool orc_force_integer;

/* The stochastic-rounding word of env's current index (0 in other modes). */
uint32_t orc_draw(const fpe_env *env);
/* The exact value of an MPFR result computed toward zero with ternary t. */
orc_xval orc_xval_from_mpfr(mpfr_srcptr y, int ternary);
/* x rounded to an integer multiple of 2^qexp in mode (rnd: the stochastic
 * word), as a magnitude; *inexact says whether it changed. */
uint64_t orc_round_to_quantum(const orc_xval *x, long qexp, int mode, uint32_t rnd, int *inexact);
/* Round the MPFR value y (computed toward zero, ternary t) to fmt; an exact
 * zero takes zero_sign. */
uint32_t orc_finish(fpe_format_id fmt, const fpe_env *env, mpfr_srcptr y, int t, int zero_sign,
                    uint8_t *fl);
/* The sign of an exact zero sum of terms of signs s1 and s2. */
int orc_zero_sum_sign(const fpe_env *env, int s1, int s2);

#endif
