/* oracle_ops.c: the MPFR oracle's operations (oracle.h): one function per
 * operation of emulate/fpe.h, each deciding NaN, infinity and zero operands
 * first (sign rules commented), then computing the exact result with MPFR
 * toward zero at 64 bits and rounding it once through orc_finish()
 * (oracle.c); then oracle_op()/oracle_compare(), the dispatch by operation
 * code, and the operations' names and shapes. */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracle_internal.h"

/* ---- operations ---------------------------------------------------------- */
static uint32_t op_add(fpe_format_id fmt, const fpe_env *env, uint32_t a, uint32_t b, int negate_b,
                       uint8_t *fl)
{
    uint32_t ops[2] = {a, b};
    orc_operand A = orc_decode(fmt, a, env->daz), B = orc_decode(fmt, b, env->daz);
    if (A.cls == ORC_NAN || B.cls == ORC_NAN) return orc_propagate_nan(fmt, env, ops, 2, fl);
    int sb = B.sign ^ negate_b;
    if (A.cls == ORC_INF && B.cls == ORC_INF && A.sign != sb) return orc_invalid_nan(fmt, env, fl);
    if (A.cls == ORC_INF) return orc_signed_inf(fmt, A.sign);
    if (B.cls == ORC_INF) return orc_signed_inf(fmt, sb);
    mpfr_set_d(orc_mA, A.v, MPFR_RNDN);
    mpfr_set_d(orc_mB, negate_b ? -B.v : B.v, MPFR_RNDN);
    int t = mpfr_add(orc_mY, orc_mA, orc_mB, MPFR_RNDZ);
    return orc_finish(fmt, env, orc_mY, t, orc_zero_sum_sign(env, A.sign, sb), fl);
}

static uint32_t op_mul(fpe_format_id fmt, const fpe_env *env, uint32_t a, uint32_t b, uint8_t *fl)
{
    uint32_t ops[2] = {a, b};
    orc_operand A = orc_decode(fmt, a, env->daz), B = orc_decode(fmt, b, env->daz);
    if (A.cls == ORC_NAN || B.cls == ORC_NAN) return orc_propagate_nan(fmt, env, ops, 2, fl);
    int s = A.sign ^ B.sign;
    if ((A.cls == ORC_INF && B.cls == ORC_ZERO) || (A.cls == ORC_ZERO && B.cls == ORC_INF))
        return orc_invalid_nan(fmt, env, fl);
    if (A.cls == ORC_INF || B.cls == ORC_INF) return orc_signed_inf(fmt, s);
    if (A.cls == ORC_ZERO || B.cls == ORC_ZERO) return orc_signed_zero(fmt, s);
    mpfr_set_d(orc_mA, A.v, MPFR_RNDN);
    mpfr_set_d(orc_mB, B.v, MPFR_RNDN);
    int t = mpfr_mul(orc_mY, orc_mA, orc_mB, MPFR_RNDZ);
    return orc_finish(fmt, env, orc_mY, t, s, fl);
}

static uint32_t op_div(fpe_format_id fmt, const fpe_env *env, uint32_t a, uint32_t b, uint8_t *fl)
{
    uint32_t ops[2] = {a, b};
    orc_operand A = orc_decode(fmt, a, env->daz), B = orc_decode(fmt, b, env->daz);
    if (A.cls == ORC_NAN || B.cls == ORC_NAN) return orc_propagate_nan(fmt, env, ops, 2, fl);
    int s = A.sign ^ B.sign;
    if ((A.cls == ORC_INF && B.cls == ORC_INF) || (A.cls == ORC_ZERO && B.cls == ORC_ZERO))
        return orc_invalid_nan(fmt, env, fl);
    if (A.cls == ORC_INF) return orc_signed_inf(fmt, s);
    if (B.cls == ORC_INF) return orc_signed_zero(fmt, s);
    if (B.cls == ORC_ZERO) { /* finite nonzero / 0 */
        *fl |= FPE_FLAG_INFINITE;
        return orc_signed_inf(fmt, s);
    }
    if (A.cls == ORC_ZERO) return orc_signed_zero(fmt, s);
    mpfr_set_d(orc_mA, A.v, MPFR_RNDN);
    mpfr_set_d(orc_mB, B.v, MPFR_RNDN);
    int t = mpfr_div(orc_mY, orc_mA, orc_mB, MPFR_RNDZ);
    return orc_finish(fmt, env, orc_mY, t, s, fl);
}

static uint32_t op_sqrt(fpe_format_id fmt, const fpe_env *env, uint32_t a, uint8_t *fl)
{
    orc_operand A = orc_decode(fmt, a, env->daz);
    if (A.cls == ORC_NAN) return orc_propagate_nan(fmt, env, &a, 1, fl);
    if (A.cls == ORC_ZERO) return orc_signed_zero(fmt, A.sign); /* sqrt(-0) = -0 */
    if (A.sign) return orc_invalid_nan(fmt, env, fl);           /* negative, -inf included */
    if (A.cls == ORC_INF) return orc_signed_inf(fmt, 0);
    mpfr_set_d(orc_mA, A.v, MPFR_RNDN);
    int t = mpfr_sqrt(orc_mY, orc_mA, MPFR_RNDZ);
    return orc_finish(fmt, env, orc_mY, t, 0, fl);
}

/* a*b + c with SoftFloat's order of special cases: a NaN among a, b first;
 * then an infinite product (0*inf invalid even when c is a quiet NaN); then
 * a NaN c; then infinities. */
static uint32_t op_muladd(fpe_format_id fmt, const fpe_env *env, uint32_t a, uint32_t b, uint32_t c,
                          uint8_t *fl)
{
    uint32_t ops[3] = {a, b, c};
    orc_operand A = orc_decode(fmt, a, env->daz), B = orc_decode(fmt, b, env->daz),
                C = orc_decode(fmt, c, env->daz);
    int sp = A.sign ^ B.sign;
    if (A.cls == ORC_NAN || B.cls == ORC_NAN) return orc_propagate_nan(fmt, env, ops, 3, fl);
    if (A.cls == ORC_INF || B.cls == ORC_INF) {
        if (A.cls == ORC_ZERO || B.cls == ORC_ZERO) {
            if (orc_is_snan(fmt, c)) *fl |= FPE_FLAG_INVALID;
            return orc_invalid_nan(fmt, env, fl);
        }
        if (C.cls == ORC_NAN) return orc_propagate_nan(fmt, env, &ops[2], 1, fl);
        if (C.cls == ORC_INF && C.sign != sp) return orc_invalid_nan(fmt, env, fl);
        return orc_signed_inf(fmt, sp);
    }
    if (C.cls == ORC_NAN) return orc_propagate_nan(fmt, env, &ops[2], 1, fl);
    if (C.cls == ORC_INF) return orc_signed_inf(fmt, C.sign);
    mpfr_set_d(orc_mA, A.v, MPFR_RNDN);
    mpfr_set_d(orc_mB, B.v, MPFR_RNDN);
    mpfr_set_d(orc_mC, C.v, MPFR_RNDN);
    int t = mpfr_fma(orc_mY, orc_mA, orc_mB, orc_mC, MPFR_RNDZ);
    return orc_finish(fmt, env, orc_mY, t, orc_zero_sum_sign(env, sp, C.sign), fl);
}

/* Round a finite nonzero value v to an integer in env->round.  Returns its
 * magnitude in *mag (false if it is 2^64 or more) and the inexactness. */
static bool round_to_integer(const fpe_env *env, double v, uint64_t *mag, int *inexact)
{
    int mode = env->round;
    bool ieee = mode == FPE_RNE || mode == FPE_RZ || mode == FPE_RD || mode == FPE_RU;
    if (fabs(v) >= 0x1p64) return false;
    if (ieee && !orc_force_integer) {
        static const mpfr_rnd_t r[5] = {MPFR_RNDN, MPFR_RNDN, MPFR_RNDZ, MPFR_RNDD, MPFR_RNDU};
        mpfr_set_d(orc_mA, v, MPFR_RNDN);
        int t = mpfr_rint(orc_mY, orc_mA, r[mode]); /* orc_mY has 64 bits: an exact integer */
        *inexact = t != 0;
        mpfr_abs(orc_mY, orc_mY, MPFR_RNDN);
        if (mpfr_cmp_ui_2exp(orc_mY, 1, 64) >= 0) return false;
        *mag = mpfr_get_uj(orc_mY, MPFR_RNDZ);
        return true;
    }
    mpfr_set_d(orc_mA, v, MPFR_RNDN);
    orc_xval x = orc_xval_from_mpfr(orc_mA, 0);
    uint64_t n = orc_round_to_quantum(&x, 0, mode, orc_draw(env), inexact);
    *mag = n;
    return true;
}

static uint32_t op_round_to_int(fpe_format_id fmt, const fpe_env *env, uint32_t a, bool exact,
                                uint8_t *fl)
{
    const orc_format *F = &orc_formats[fmt];
    orc_operand A = orc_decode(fmt, a, env->daz);
    if (A.cls == ORC_NAN) return orc_propagate_nan(fmt, env, &a, 1, fl);
    if (A.cls == ORC_INF) return a;
    if (A.cls == ORC_ZERO) return orc_signed_zero(fmt, A.sign);
    if (fabs(A.v) >= ldexp(1.0, F->p - 1)) return a; /* already integral */
    uint64_t n;
    int inexact;
    bool ok = round_to_integer(env, A.v, &n, &inexact);
    assert(ok && n <= (UINT64_C(1) << (F->p - 1)));
    (void)ok;
    if (inexact && exact) *fl |= FPE_FLAG_INEXACT;
    if (n == 0) return orc_signed_zero(fmt, A.sign); /* a zero keeps a's sign */
    return orc_from_double(fmt, A.sign ? -(double)n : (double)n);
}

enum { INT_I32, INT_I64, INT_UI32, INT_UI64 };

/* What an invalid conversion returns: x86 gives one pattern per type,
 * canonical saturates (NaN -> 0). */
static uint64_t int_invalid_result(int kind, int nan_spec, int is_nan, int sign)
{
    if (nan_spec != FPE_NAN_CANONICAL) {
        switch (kind) {
        case INT_I32: return UINT64_C(0x80000000);
        case INT_I64: return UINT64_C(0x8000000000000000);
        case INT_UI32: return UINT64_C(0xFFFFFFFF);
        default: return UINT64_MAX;
        }
    }
    if (is_nan) return 0;
    switch (kind) {
    case INT_I32: return sign ? UINT64_C(0x80000000) : UINT64_C(0x7FFFFFFF);
    case INT_I64: return sign ? UINT64_C(0x8000000000000000) : UINT64_C(0x7FFFFFFFFFFFFFFF);
    case INT_UI32: return sign ? 0 : UINT64_C(0xFFFFFFFF);
    default: return sign ? 0 : UINT64_MAX;
    }
}

static uint64_t op_to_int(fpe_format_id fmt, const fpe_env *env, uint32_t a, int kind, bool exact,
                          uint8_t *fl)
{
    orc_operand A = orc_decode(fmt, a, env->daz);
    if (A.cls == ORC_NAN || A.cls == ORC_INF) {
        *fl |= FPE_FLAG_INVALID;
        return int_invalid_result(kind, env->nan, A.cls == ORC_NAN, A.sign);
    }
    if (A.cls == ORC_ZERO) return 0;
    uint64_t n = 0;
    int inexact = 0;
    bool fits = round_to_integer(env, A.v, &n, &inexact);
    if (fits) {
        switch (kind) {
        case INT_I32: fits = A.sign ? n <= UINT64_C(0x80000000) : n <= UINT64_C(0x7FFFFFFF); break;
        case INT_I64:
            fits = A.sign ? n <= UINT64_C(0x8000000000000000) : n <= UINT64_C(0x7FFFFFFFFFFFFFFF);
            break;
        case INT_UI32: fits = A.sign ? n == 0 : n <= UINT64_C(0xFFFFFFFF); break;
        default: fits = A.sign ? n == 0 : true; break;
        }
    }
    if (!fits) {
        *fl |= FPE_FLAG_INVALID;
        return int_invalid_result(kind, env->nan, 0, A.sign);
    }
    if (inexact && exact) *fl |= FPE_FLAG_INEXACT;
    uint64_t v = A.sign ? (uint64_t)0 - n : n;
    if (kind == INT_I32 || kind == INT_UI32) v &= UINT64_C(0xFFFFFFFF);
    return v;
}

/* fmt -> to (one of the three formats) */
static uint32_t op_convert(fpe_format_id fmt, fpe_format_id to, const fpe_env *env, uint32_t a,
                           uint8_t *fl)
{
    orc_operand A = orc_decode(fmt, a, env->daz);
    if (A.cls == ORC_NAN) {
        if (orc_is_snan(fmt, a)) *fl |= FPE_FLAG_INVALID;
        if (env->nan == FPE_NAN_CANONICAL) return orc_default_nan(to, FPE_NAN_CANONICAL);
        return (uint32_t)orc_convert_nan(fmt, to, a);
    }
    if (A.cls == ORC_INF) return orc_signed_inf(to, A.sign);
    if (A.cls == ORC_ZERO) return orc_signed_zero(to, A.sign);
    mpfr_set_d(orc_mY, A.v, MPFR_RNDN);
    return orc_finish(to, env, orc_mY, 0, A.sign, fl);
}

#define F64_CANONICAL_NAN UINT64_C(0x7FFFFFFFFFFFFFFF)

static uint64_t op_to_f64(fpe_format_id fmt, const fpe_env *env, uint32_t a, uint8_t *fl)
{
    orc_operand A = orc_decode(fmt, a, env->daz);
    if (A.cls == ORC_NAN) {
        if (orc_is_snan(fmt, a)) *fl |= FPE_FLAG_INVALID;
        if (env->nan == FPE_NAN_CANONICAL) return F64_CANONICAL_NAN;
        return orc_convert_nan(fmt, 3, a);
    }
    return orc_f64_bits(A.v);
}

static uint32_t op_from_f64(fpe_format_id to, const fpe_env *env, uint64_t bits, uint8_t *fl)
{
    double v = orc_f64_from_bits(bits);
    int sign = (bits & ORC_F64_SIGN) != 0;
    if (isnan(v)) {
        if (!(bits & ORC_F64_QUIET)) *fl |= FPE_FLAG_INVALID;
        if (env->nan == FPE_NAN_CANONICAL) return orc_default_nan(to, FPE_NAN_CANONICAL);
        return (uint32_t)orc_convert_nan(3, to, bits);
    }
    if (isinf(v)) return orc_signed_inf(to, sign);
    if (v == 0 || (env->daz && fabs(v) < 0x1p-1022)) return orc_signed_zero(to, sign);
    mpfr_set_d(orc_mY, v, MPFR_RNDN);
    return orc_finish(to, env, orc_mY, 0, sign, fl);
}

static uint32_t op_from_int(fpe_format_id to, const fpe_env *env, uint64_t v, int kind, uint8_t *fl)
{
    switch (kind) {
    case INT_I32: mpfr_set_sj(orc_mY, (int32_t)(uint32_t)v, MPFR_RNDN); break;
    case INT_I64: mpfr_set_sj(orc_mY, (int64_t)v, MPFR_RNDN); break;
    case INT_UI32: mpfr_set_uj(orc_mY, (uint32_t)v, MPFR_RNDN); break;
    default: mpfr_set_uj(orc_mY, v, MPFR_RNDN); break;
    }
    return orc_finish(to, env, orc_mY, 0, 0, fl); /* integer zero converts to +0 */
}

uint64_t oracle_op(orc_op op, fpe_format_id fmt, const fpe_env *env, const uint64_t *operands,
                   uint8_t *flags_out)
{
    orc_mp_init();
    uint8_t fl = 0;
    uint64_t r;
    uint32_t a = (uint32_t)operands[0];
    uint32_t b = oracle_op_arity(op) >= 2 ? (uint32_t)operands[1] : 0;
    uint32_t c = oracle_op_arity(op) >= 3 ? (uint32_t)operands[2] : 0;
    switch (op) {
    case ORC_ADD: r = op_add(fmt, env, a, b, 0, &fl); break;
    case ORC_SUB: r = op_add(fmt, env, a, b, 1, &fl); break;
    case ORC_MUL: r = op_mul(fmt, env, a, b, &fl); break;
    case ORC_DIV: r = op_div(fmt, env, a, b, &fl); break;
    case ORC_MULADD: r = op_muladd(fmt, env, a, b, c, &fl); break;
    case ORC_SQRT: r = op_sqrt(fmt, env, a, &fl); break;
    case ORC_RTI: r = op_round_to_int(fmt, env, a, false, &fl); break;
    case ORC_RTI_EXACT: r = op_round_to_int(fmt, env, a, true, &fl); break;
    case ORC_TO_F16: r = op_convert(fmt, FPE_FMT_F16, env, a, &fl); break;
    case ORC_TO_BF16: r = op_convert(fmt, FPE_FMT_BF16, env, a, &fl); break;
    case ORC_TO_F32: r = op_convert(fmt, FPE_FMT_F32, env, a, &fl); break;
    case ORC_TO_F64: r = op_to_f64(fmt, env, a, &fl); break;
    case ORC_TO_I32: r = op_to_int(fmt, env, a, INT_I32, false, &fl); break;
    case ORC_TO_I64: r = op_to_int(fmt, env, a, INT_I64, false, &fl); break;
    case ORC_TO_UI32: r = op_to_int(fmt, env, a, INT_UI32, false, &fl); break;
    case ORC_TO_UI64: r = op_to_int(fmt, env, a, INT_UI64, false, &fl); break;
    case ORC_TO_I32_X: r = op_to_int(fmt, env, a, INT_I32, true, &fl); break;
    case ORC_TO_I64_X: r = op_to_int(fmt, env, a, INT_I64, true, &fl); break;
    case ORC_TO_UI32_X: r = op_to_int(fmt, env, a, INT_UI32, true, &fl); break;
    case ORC_TO_UI64_X: r = op_to_int(fmt, env, a, INT_UI64, true, &fl); break;
    case ORC_FROM_I32: r = op_from_int(fmt, env, operands[0], INT_I32, &fl); break;
    case ORC_FROM_I64: r = op_from_int(fmt, env, operands[0], INT_I64, &fl); break;
    case ORC_FROM_UI32: r = op_from_int(fmt, env, operands[0], INT_UI32, &fl); break;
    case ORC_FROM_UI64: r = op_from_int(fmt, env, operands[0], INT_UI64, &fl); break;
    case ORC_FROM_F64: r = op_from_f64(fmt, env, operands[0], &fl); break;
    default: abort();
    }
    *flags_out = fl;
    return r;
}

bool oracle_compare(orc_cmp cmp, fpe_format_id fmt, const fpe_env *env, uint32_t a, uint32_t b,
                    uint8_t *flags_out)
{
    orc_operand A = orc_decode(fmt, a, env->daz), B = orc_decode(fmt, b, env->daz);
    bool any_nan = A.cls == ORC_NAN || B.cls == ORC_NAN;
    bool any_snan = orc_is_snan(fmt, a) || orc_is_snan(fmt, b);
    bool signaling = cmp == ORC_LE || cmp == ORC_LT || cmp == ORC_EQ_SIGNALING;
    *flags_out = (any_snan || (signaling && any_nan)) ? FPE_FLAG_INVALID : 0;
    switch (cmp) {
    case ORC_EQ:
    case ORC_EQ_SIGNALING: return A.v == B.v;
    case ORC_LE:
    case ORC_LE_QUIET: return A.v <= B.v;
    default: return A.v < B.v;
    }
}

/* ---- names and shapes ---------------------------------------------------- */
int oracle_op_arity(orc_op op)
{
    switch (op) {
    case ORC_ADD:
    case ORC_SUB:
    case ORC_MUL:
    case ORC_DIV: return 2;
    case ORC_MULADD: return 3;
    default: return 1;
    }
}

const char *oracle_op_name(orc_op op)
{
    static const char *const names[ORC_OP_COUNT] = {
        "add",      "sub",      "mul",        "div",
        "mulAdd",   "sqrt",     "roundToInt", "roundToInt_exact",
        "to_f16",   "to_bf16",  "to_f32",     "to_f64",
        "to_i32",   "to_i64",   "to_ui32",    "to_ui64",
        "to_i32_x", "to_i64_x", "to_ui32_x",  "to_ui64_x",
        "from_i32", "from_i64", "from_ui32",  "from_ui64",
        "from_f64"};
    return (unsigned)op < ORC_OP_COUNT ? names[op] : "?";
}

const char *oracle_cmp_name(orc_cmp c)
{
    static const char *const names[ORC_CMP_COUNT] = {"eq",           "le",       "lt",
                                                     "eq_signaling", "le_quiet", "lt_quiet"};
    return (unsigned)c < ORC_CMP_COUNT ? names[c] : "?";
}

int oracle_result_format(orc_op op, fpe_format_id fmt)
{
    switch (op) {
    case ORC_TO_F16: return FPE_FMT_F16;
    case ORC_TO_BF16: return FPE_FMT_BF16;
    case ORC_TO_F32: return FPE_FMT_F32;
    case ORC_TO_F64:
    case ORC_TO_I32:
    case ORC_TO_I64:
    case ORC_TO_UI32:
    case ORC_TO_UI64:
    case ORC_TO_I32_X:
    case ORC_TO_I64_X:
    case ORC_TO_UI32_X:
    case ORC_TO_UI64_X: return -1;
    default: return fmt;
    }
}

int oracle_result_bits(orc_op op, fpe_format_id fmt)
{
    int rf = oracle_result_format(op, fmt);
    if (rf >= 0) return orc_formats[rf].bits;
    switch (op) {
    case ORC_TO_I32:
    case ORC_TO_UI32:
    case ORC_TO_I32_X:
    case ORC_TO_UI32_X: return 32;
    default: return 64;
    }
}
