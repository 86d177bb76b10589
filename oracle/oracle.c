/* oracle.c: MPFR reference for every operation of emulate/fpe.h (see oracle.h).
 *
 * Layout: format parameters and bit helpers; NaN rules; the two rounding
 * routines (MPFR's recipe, and integer rounding for ties-away, odd and the
 * stochastic modes); then one function per operation, each deciding its
 * special cases first and handing the finite case to round_exact().
 */
#include <stdint.h> /* before mpfr.h, for the intmax_t functions */

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpfr.h>

#include "oracle.h"

/* ---- formats -------------------------------------------------------------
 * MPFR's exponent of x is one more than IEEE's (x = 0.1b.. * 2^E), so its
 * range for a format is [emin - p + 2, emax + 1]. */
const orc_format orc_formats[3] = {
    {"fp16", 16, 11, 5, 15, -14, 15, 10, 0x8000u, 0x7C00u, 0x03FFu, 0x0200u, 0x7BFFu, 0x7C00u, -23,
     16},
    {"bf16", 16, 8, 8, 127, -126, 127, 7, 0x8000u, 0x7F80u, 0x007Fu, 0x0040u, 0x7F7Fu, 0x7F80u,
     -132, 128},
    {"fp32", 32, 24, 8, 127, -126, 127, 23, 0x80000000u, 0x7F800000u, 0x007FFFFFu, 0x00400000u,
     0x7F7FFFFFu, 0x7F800000u, -148, 128},
};

/* binary64 parameters, used as "format 3" in NaN conversions */
#define F64_FRAC_BITS 52
#define F64_SIGN      UINT64_C(0x8000000000000000)
#define F64_EXP       UINT64_C(0x7FF0000000000000)
#define F64_FRAC      UINT64_C(0x000FFFFFFFFFFFFF)
#define F64_QUIET     UINT64_C(0x0008000000000000)

static uint64_t f64_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}
static double f64_from_bits(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

bool orc_is_nan(fpe_format_id fmt, uint32_t bits)
{
    const orc_format *F = &orc_formats[fmt];
    return (bits & F->exp_mask) == F->exp_mask && (bits & F->frac_mask) != 0;
}
bool orc_is_snan(fpe_format_id fmt, uint32_t bits)
{
    return orc_is_nan(fmt, bits) && !(bits & orc_formats[fmt].quiet_bit);
}
bool orc_is_inf(fpe_format_id fmt, uint32_t bits)
{
    const orc_format *F = &orc_formats[fmt];
    return (bits & ~F->sign_mask) == F->inf;
}
bool orc_is_subnormal(fpe_format_id fmt, uint32_t bits)
{
    const orc_format *F = &orc_formats[fmt];
    return (bits & F->exp_mask) == 0 && (bits & F->frac_mask) != 0;
}

double orc_to_double(fpe_format_id fmt, uint32_t bits)
{
    const orc_format *F = &orc_formats[fmt];
    int sign = (bits & F->sign_mask) != 0;
    uint32_t e = (bits & F->exp_mask) >> F->frac_bits;
    uint32_t f = bits & F->frac_mask;
    double v;
    if (e == (F->exp_mask >> F->frac_bits))
        v = f ? NAN : INFINITY;
    else if (e == 0)
        v = ldexp((double)f, F->emin - F->frac_bits);
    else
        v = ldexp((double)(f | (1u << F->frac_bits)), (int)e - F->bias - F->frac_bits);
    return sign ? -v : v;
}

uint32_t orc_from_double(fpe_format_id fmt, double v)
{
    const orc_format *F = &orc_formats[fmt];
    uint32_t sign = signbit(v) ? F->sign_mask : 0;
    double a = fabs(v);
    if (isnan(v)) {
        fprintf(stderr, "orc_from_double: NaN\n");
        abort();
    }
    if (isinf(a)) return sign | F->inf;
    if (a == 0) return sign;
    int e2;
    frexp(a, &e2); /* a in [2^(e2-1), 2^e2) */
    int e = e2 - 1;
    double sig;
    uint32_t bits;
    if (e >= F->emin) {
        if (e > F->emax) goto bad;
        sig = ldexp(a, F->frac_bits - e);
        if (sig != floor(sig)) goto bad;
        bits = ((uint32_t)(e + F->bias) << F->frac_bits) | ((uint32_t)sig - (1u << F->frac_bits));
    } else {
        sig = ldexp(a, F->frac_bits - F->emin);
        if (sig != floor(sig)) goto bad;
        bits = (uint32_t)sig;
    }
    return sign | bits;
bad:
    fprintf(stderr, "orc_from_double(%s, %a): not representable\n", F->name, v);
    abort();
}

/* ---- NaN rules (x86 = SoftFloat 8086-SSE, or canonical) ----------------- */
uint32_t orc_default_nan(fpe_format_id fmt, int nan_spec)
{
    static const uint32_t x86[3] = {0xFE00u, 0xFFC0u, 0xFFC00000u};
    static const uint32_t canonical[3] = {0x7FFFu, 0x7FFFu, 0x7FFFFFFFu};
    return nan_spec == FPE_NAN_CANONICAL ? canonical[fmt] : x86[fmt];
}

uint64_t orc_convert_nan(int from_fmt, int to_fmt, uint64_t bits)
{
    /* to the common form: sign and a 52-bit left-justified payload */
    int sign;
    uint64_t payload;
    if (from_fmt == 3) {
        sign = (bits & F64_SIGN) != 0;
        payload = bits & F64_FRAC;
    } else {
        const orc_format *F = &orc_formats[from_fmt];
        sign = (bits & F->sign_mask) != 0;
        payload = (uint64_t)(bits & F->frac_mask) << (F64_FRAC_BITS - F->frac_bits);
    }
    if (to_fmt == 3) return (sign ? F64_SIGN : 0) | F64_EXP | F64_QUIET | payload;
    const orc_format *T = &orc_formats[to_fmt];
    return (sign ? T->sign_mask : 0) | T->exp_mask | T->quiet_bit |
           (uint32_t)(payload >> (F64_FRAC_BITS - T->frac_bits));
}

/* Result of an operation with NaN operands: invalid if any is signaling;
 * x86 returns the first NaN operand quieted. */
static uint32_t propagate_nan(fpe_format_id fmt, const fpe_env *env, const uint32_t *ops, int n,
                              uint8_t *fl)
{
    int first = -1;
    for (int i = 0; i < n; i++) {
        if (orc_is_snan(fmt, ops[i])) *fl |= FPE_FLAG_INVALID;
        if (first < 0 && orc_is_nan(fmt, ops[i])) first = i;
    }
    assert(first >= 0);
    if (env->nan == FPE_NAN_CANONICAL) return orc_default_nan(fmt, FPE_NAN_CANONICAL);
    return ops[first] | orc_formats[fmt].quiet_bit;
}

static uint32_t invalid_nan(fpe_format_id fmt, const fpe_env *env, uint8_t *fl)
{
    *fl |= FPE_FLAG_INVALID;
    return orc_default_nan(fmt, env->nan);
}

/* ---- operands ------------------------------------------------------------ */
enum { CLS_ZERO, CLS_FINITE, CLS_INF, CLS_NAN };
typedef struct operand {
    int cls;
    int sign;
    double v; /* exact value; subnormals read as zero under daz */
} operand;

static operand decode(fpe_format_id fmt, uint32_t bits, int daz)
{
    operand o;
    o.sign = (bits & orc_formats[fmt].sign_mask) != 0;
    o.v = orc_to_double(fmt, bits);
    if (isnan(o.v))
        o.cls = CLS_NAN;
    else if (isinf(o.v))
        o.cls = CLS_INF;
    else if (o.v == 0 || (daz && orc_is_subnormal(fmt, bits))) {
        o.cls = CLS_ZERO;
        o.v = o.sign ? -0.0 : 0.0;
    } else
        o.cls = CLS_FINITE;
    return o;
}

static uint32_t signed_zero(fpe_format_id fmt, int sign)
{
    return sign ? orc_formats[fmt].sign_mask : 0;
}
static uint32_t signed_inf(fpe_format_id fmt, int sign)
{
    return signed_zero(fmt, sign) | orc_formats[fmt].inf;
}

/* ---- MPFR working storage ---------------------------------------------- */
#define WORK_PREC 64 /* >= p + 34 for every format: room for the 32 SR bits */
static int mp_ready;
static mpfr_t mA, mB, mC, mY, mT, mRO, mZ[3];

static void mp_init(void)
{
    if (mp_ready) return;
    mpfr_inits2(WORK_PREC, mA, mB, mC, mY, mT, mRO, (mpfr_ptr)0);
    for (int f = 0; f < 3; f++)
        mpfr_init2(mZ[f], orc_formats[f].p);
    mp_ready = 1;
}

static bool force_integer_rounding;
void oracle_force_integer_rounding(bool on) { force_integer_rounding = on; }

static bool is_stochastic(int mode) { return mode == FPE_SR_PROP || mode == FPE_SR_EQUAL; }

static uint32_t draw(const fpe_env *env)
{
    return is_stochastic(env->round) ? fpe_random_bits(env->sr_seed, env->sr_stream, env->sr_index)
                                     : 0;
}

/* ---- the exact value ----------------------------------------------------
 * A nonzero value as (-1)^sign * (m + r) * 2^e, m in [2^63, 2^64) and
 * 0 <= r < 1 with sticky = (r != 0).  It comes from an MPFR result computed
 * toward zero at 64 bits, whose ternary value is the sticky bit. */
typedef struct xval {
    int sign;
    uint64_t m;
    long e;
    int sticky;
} xval;

static xval xval_from_mpfr(mpfr_srcptr y, int ternary)
{
    xval x;
    assert(mpfr_regular_p(y) && mpfr_get_prec(y) <= 64);
    x.sign = mpfr_signbit(y) != 0;
    long E = mpfr_get_exp(y);
    mpfr_mul_2si(mT, y, 64 - E, MPFR_RNDN); /* exact: a 64-bit integer */
    mpfr_abs(mT, mT, MPFR_RNDN);
    x.m = mpfr_get_uj(mT, MPFR_RNDZ);
    x.e = E - 64;
    x.sticky = ternary != 0;
    assert(x.m >> 63);
    return x;
}

/* Round |x| to a multiple n * 2^qexp in mode (rnd: the random word for the
 * stochastic modes).  Returns n (which may carry into the next binade) and
 * whether the rounding was inexact. */
static uint64_t round_to_quantum(const xval *x, long qexp, int mode, uint32_t rnd, int *inexact)
{
    long shift = qexp - x->e;
    uint64_t n, rem;
    int above_half, at_half; /* where the discarded part lies */
    uint32_t frac32;         /* discarded part in units of 2^-32 quantum, truncated */
    assert(shift >= 0);
    /* With fewer than 34 discarded bits the sticky bit would fall inside the
     * 32-bit fraction; no caller does that. */
    assert(shift >= 34 || !x->sticky);
    if (shift == 0) {
        n = x->m;
        rem = 0;
        above_half = at_half = 0;
        frac32 = 0;
    } else if (shift < 64) {
        n = x->m >> shift;
        rem = x->m & ((UINT64_C(1) << shift) - 1);
        uint64_t half = UINT64_C(1) << (shift - 1);
        above_half = rem > half || (rem == half && x->sticky);
        at_half = rem == half && !x->sticky;
        frac32 = shift >= 32 ? (uint32_t)(rem >> (shift - 32)) : (uint32_t)(rem << (32 - shift));
    } else if (shift == 64) {
        n = 0;
        rem = x->m;
        above_half = rem > (UINT64_C(1) << 63) || (rem == (UINT64_C(1) << 63) && x->sticky);
        at_half = rem == (UINT64_C(1) << 63) && !x->sticky;
        frac32 = (uint32_t)(rem >> 32);
    } else {
        n = 0;
        rem = x->m;
        above_half = at_half = 0;
        frac32 = shift - 32 < 64 ? (uint32_t)(rem >> (shift - 32)) : 0;
    }
    int inex = rem != 0 || x->sticky;
    int up = 0;
    switch (mode) {
    case FPE_RNE: up = above_half || (at_half && (n & 1)); break;
    case FPE_RNA: up = above_half || at_half; break;
    case FPE_RZ: up = 0; break;
    case FPE_RD: up = inex && x->sign; break;
    case FPE_RU: up = inex && !x->sign; break;
    case FPE_RO:
        if (inex) n |= 1;
        break;
    case FPE_SR_PROP: up = rnd < frac32; break;
    case FPE_SR_EQUAL: up = inex && (rnd >> 31); break;
    default: abort();
    }
    *inexact = inex;
    return n + (uint64_t)up;
}

static uint32_t overflow_result(fpe_format_id fmt, int mode, int sign)
{
    const orc_format *F = &orc_formats[fmt];
    int to_inf;
    switch (mode) {
    case FPE_RZ:
    case FPE_RO: to_inf = 0; break;
    case FPE_RD: to_inf = sign; break;
    case FPE_RU: to_inf = !sign; break;
    default: to_inf = 1; break; /* RNE, RNA, stochastic */
    }
    return signed_zero(fmt, sign) | (to_inf ? F->inf : F->max_finite);
}

/* The integer routine: all modes. */
static uint32_t round_by_integers(fpe_format_id fmt, const fpe_env *env, const xval *x, uint8_t *fl)
{
    const orc_format *F = &orc_formats[fmt];
    const int p = F->p;
    const long E1 = x->e + 63; /* |x| in [2^E1, 2^(E1+1)) */
    const uint32_t rnd = draw(env);
    int inexact;

    /* p bits, unbounded exponent: decides overflow and tininess-after */
    uint64_t nu = round_to_quantum(x, E1 - (p - 1), env->round, rnd, &inexact);
    long Eu = (nu >> p) ? E1 + 1 : E1;
    bool tiny = env->tininess == FPE_TININESS_BEFORE ? E1 < F->emin : Eu < F->emin;
    if (Eu > F->emax) {
        *fl |= FPE_FLAG_OVERFLOW | FPE_FLAG_INEXACT;
        return overflow_result(fmt, env->round, x->sign);
    }
    if (env->ftz && tiny) {
        *fl |= FPE_FLAG_UNDERFLOW | FPE_FLAG_INEXACT;
        return signed_zero(fmt, x->sign);
    }
    long qexp = (E1 > F->emin ? E1 : F->emin) - (p - 1);
    uint64_t n = round_to_quantum(x, qexp, env->round, rnd, &inexact);
    if (inexact) *fl |= FPE_FLAG_INEXACT;
    if (inexact && tiny) *fl |= FPE_FLAG_UNDERFLOW;
    if (n == 0) return signed_zero(fmt, x->sign);
    double v = ldexp((double)n, (int)qexp);
    return orc_from_double(fmt, x->sign ? -v : v);
}

/* MPFR's recipe: RNE, RZ, RD, RU. */
static uint32_t round_by_mpfr(fpe_format_id fmt, const fpe_env *env, const xval *x, uint8_t *fl)
{
    const orc_format *F = &orc_formats[fmt];
    mpfr_rnd_t r;
    switch (env->round) {
    case FPE_RNE: r = MPFR_RNDN; break;
    case FPE_RZ: r = MPFR_RNDZ; break;
    case FPE_RD: r = MPFR_RNDD; break;
    case FPE_RU: r = MPFR_RNDU; break;
    default: abort();
    }
    /* round to odd at 64 bits: truncation with the sticky bit in the last
     * place; rounding that to p <= 62 bits equals rounding the exact value */
    mpfr_set_uj_2exp(mRO, x->m | (uint64_t)x->sticky, x->e, MPFR_RNDN);
    if (x->sign) mpfr_neg(mRO, mRO, MPFR_RNDN);
    mpfr_ptr z = mZ[fmt];
    int t = mpfr_set(z, mRO, r); /* p bits, exponent unbounded */
    /* MPFR exponent E means |z| in [2^(E-1), 2^E) */
    bool tiny_after = mpfr_get_exp(z) <= F->emin;
    bool tiny_before = mpfr_get_exp(mRO) <= F->emin;
    bool tiny = env->tininess == FPE_TININESS_BEFORE ? tiny_before : tiny_after;
    if (env->ftz && tiny) {
        *fl |= FPE_FLAG_UNDERFLOW | FPE_FLAG_INEXACT;
        return signed_zero(fmt, x->sign);
    }
    mpfr_exp_t old_emin = mpfr_get_emin(), old_emax = mpfr_get_emax();
    mpfr_set_emin(F->mpfr_emin);
    mpfr_set_emax(F->mpfr_emax);
    mpfr_clear_flags();
    t = mpfr_check_range(z, t, r);
    t = mpfr_subnormalize(z, t, r);
    bool overflow = mpfr_overflow_p() != 0;
    mpfr_set_emin(old_emin);
    mpfr_set_emax(old_emax);
    if (t != 0) *fl |= FPE_FLAG_INEXACT;
    if (overflow) *fl |= FPE_FLAG_OVERFLOW | FPE_FLAG_INEXACT;
    if (t != 0 && tiny) *fl |= FPE_FLAG_UNDERFLOW;
    if (mpfr_inf_p(z)) return signed_inf(fmt, x->sign);
    if (mpfr_zero_p(z)) return signed_zero(fmt, x->sign);
    return orc_from_double(fmt, mpfr_get_d(z, MPFR_RNDN));
}

static uint32_t round_exact(fpe_format_id fmt, const fpe_env *env, const xval *x, uint8_t *fl)
{
    int mode = env->round;
    bool ieee = mode == FPE_RNE || mode == FPE_RZ || mode == FPE_RD || mode == FPE_RU;
    if (ieee && !force_integer_rounding) return round_by_mpfr(fmt, env, x, fl);
    return round_by_integers(fmt, env, x, fl);
}

/* Round the MPFR value y (computed toward zero, ternary t) to fmt; an exact
 * zero takes zero_sign. */
static uint32_t finish(fpe_format_id fmt, const fpe_env *env, mpfr_srcptr y, int t, int zero_sign,
                       uint8_t *fl)
{
    if (mpfr_zero_p(y)) {
        assert(t == 0);
        return signed_zero(fmt, zero_sign);
    }
    xval x = xval_from_mpfr(y, t);
    return round_exact(fmt, env, &x, fl);
}

/* The sign of an exact zero sum of terms of signs s1 and s2. */
static int zero_sum_sign(const fpe_env *env, int s1, int s2)
{
    if (s1 == s2) return s1;
    return env->round == FPE_RD;
}

/* ---- operations ---------------------------------------------------------- */
static uint32_t op_add(fpe_format_id fmt, const fpe_env *env, uint32_t a, uint32_t b, int negate_b,
                       uint8_t *fl)
{
    uint32_t ops[2] = {a, b};
    operand A = decode(fmt, a, env->daz), B = decode(fmt, b, env->daz);
    if (A.cls == CLS_NAN || B.cls == CLS_NAN) return propagate_nan(fmt, env, ops, 2, fl);
    int sb = B.sign ^ negate_b;
    if (A.cls == CLS_INF && B.cls == CLS_INF && A.sign != sb) return invalid_nan(fmt, env, fl);
    if (A.cls == CLS_INF) return signed_inf(fmt, A.sign);
    if (B.cls == CLS_INF) return signed_inf(fmt, sb);
    mpfr_set_d(mA, A.v, MPFR_RNDN);
    mpfr_set_d(mB, negate_b ? -B.v : B.v, MPFR_RNDN);
    int t = mpfr_add(mY, mA, mB, MPFR_RNDZ);
    return finish(fmt, env, mY, t, zero_sum_sign(env, A.sign, sb), fl);
}

static uint32_t op_mul(fpe_format_id fmt, const fpe_env *env, uint32_t a, uint32_t b, uint8_t *fl)
{
    uint32_t ops[2] = {a, b};
    operand A = decode(fmt, a, env->daz), B = decode(fmt, b, env->daz);
    if (A.cls == CLS_NAN || B.cls == CLS_NAN) return propagate_nan(fmt, env, ops, 2, fl);
    int s = A.sign ^ B.sign;
    if ((A.cls == CLS_INF && B.cls == CLS_ZERO) || (A.cls == CLS_ZERO && B.cls == CLS_INF))
        return invalid_nan(fmt, env, fl);
    if (A.cls == CLS_INF || B.cls == CLS_INF) return signed_inf(fmt, s);
    if (A.cls == CLS_ZERO || B.cls == CLS_ZERO) return signed_zero(fmt, s);
    mpfr_set_d(mA, A.v, MPFR_RNDN);
    mpfr_set_d(mB, B.v, MPFR_RNDN);
    int t = mpfr_mul(mY, mA, mB, MPFR_RNDZ);
    return finish(fmt, env, mY, t, s, fl);
}

static uint32_t op_div(fpe_format_id fmt, const fpe_env *env, uint32_t a, uint32_t b, uint8_t *fl)
{
    uint32_t ops[2] = {a, b};
    operand A = decode(fmt, a, env->daz), B = decode(fmt, b, env->daz);
    if (A.cls == CLS_NAN || B.cls == CLS_NAN) return propagate_nan(fmt, env, ops, 2, fl);
    int s = A.sign ^ B.sign;
    if ((A.cls == CLS_INF && B.cls == CLS_INF) || (A.cls == CLS_ZERO && B.cls == CLS_ZERO))
        return invalid_nan(fmt, env, fl);
    if (A.cls == CLS_INF) return signed_inf(fmt, s);
    if (B.cls == CLS_INF) return signed_zero(fmt, s);
    if (B.cls == CLS_ZERO) { /* finite nonzero / 0 */
        *fl |= FPE_FLAG_INFINITE;
        return signed_inf(fmt, s);
    }
    if (A.cls == CLS_ZERO) return signed_zero(fmt, s);
    mpfr_set_d(mA, A.v, MPFR_RNDN);
    mpfr_set_d(mB, B.v, MPFR_RNDN);
    int t = mpfr_div(mY, mA, mB, MPFR_RNDZ);
    return finish(fmt, env, mY, t, s, fl);
}

static uint32_t op_sqrt(fpe_format_id fmt, const fpe_env *env, uint32_t a, uint8_t *fl)
{
    operand A = decode(fmt, a, env->daz);
    if (A.cls == CLS_NAN) return propagate_nan(fmt, env, &a, 1, fl);
    if (A.cls == CLS_ZERO) return signed_zero(fmt, A.sign); /* sqrt(-0) = -0 */
    if (A.sign) return invalid_nan(fmt, env, fl);           /* negative, -inf included */
    if (A.cls == CLS_INF) return signed_inf(fmt, 0);
    mpfr_set_d(mA, A.v, MPFR_RNDN);
    int t = mpfr_sqrt(mY, mA, MPFR_RNDZ);
    return finish(fmt, env, mY, t, 0, fl);
}

/* a*b + c with SoftFloat's order of special cases: a NaN among a, b first;
 * then an infinite product (0*inf invalid even when c is a quiet NaN); then
 * a NaN c; then infinities. */
static uint32_t op_muladd(fpe_format_id fmt, const fpe_env *env, uint32_t a, uint32_t b, uint32_t c,
                          uint8_t *fl)
{
    uint32_t ops[3] = {a, b, c};
    operand A = decode(fmt, a, env->daz), B = decode(fmt, b, env->daz),
            C = decode(fmt, c, env->daz);
    int sp = A.sign ^ B.sign;
    if (A.cls == CLS_NAN || B.cls == CLS_NAN) return propagate_nan(fmt, env, ops, 3, fl);
    if (A.cls == CLS_INF || B.cls == CLS_INF) {
        if (A.cls == CLS_ZERO || B.cls == CLS_ZERO) {
            if (orc_is_snan(fmt, c)) *fl |= FPE_FLAG_INVALID;
            return invalid_nan(fmt, env, fl);
        }
        if (C.cls == CLS_NAN) return propagate_nan(fmt, env, &ops[2], 1, fl);
        if (C.cls == CLS_INF && C.sign != sp) return invalid_nan(fmt, env, fl);
        return signed_inf(fmt, sp);
    }
    if (C.cls == CLS_NAN) return propagate_nan(fmt, env, &ops[2], 1, fl);
    if (C.cls == CLS_INF) return signed_inf(fmt, C.sign);
    mpfr_set_d(mA, A.v, MPFR_RNDN);
    mpfr_set_d(mB, B.v, MPFR_RNDN);
    mpfr_set_d(mC, C.v, MPFR_RNDN);
    int t = mpfr_fma(mY, mA, mB, mC, MPFR_RNDZ);
    return finish(fmt, env, mY, t, zero_sum_sign(env, sp, C.sign), fl);
}

/* Round a finite nonzero value v to an integer in env->round.  Returns its
 * magnitude in *mag (false if it is 2^64 or more) and the inexactness. */
static bool round_to_integer(const fpe_env *env, double v, uint64_t *mag, int *inexact)
{
    int mode = env->round;
    bool ieee = mode == FPE_RNE || mode == FPE_RZ || mode == FPE_RD || mode == FPE_RU;
    if (fabs(v) >= 0x1p64) return false;
    if (ieee && !force_integer_rounding) {
        static const mpfr_rnd_t r[5] = {MPFR_RNDN, MPFR_RNDN, MPFR_RNDZ, MPFR_RNDD, MPFR_RNDU};
        mpfr_set_d(mA, v, MPFR_RNDN);
        int t = mpfr_rint(mY, mA, r[mode]); /* mY has 64 bits: an exact integer */
        *inexact = t != 0;
        mpfr_abs(mY, mY, MPFR_RNDN);
        if (mpfr_cmp_ui_2exp(mY, 1, 64) >= 0) return false;
        *mag = mpfr_get_uj(mY, MPFR_RNDZ);
        return true;
    }
    mpfr_set_d(mA, v, MPFR_RNDN);
    xval x = xval_from_mpfr(mA, 0);
    uint64_t n = round_to_quantum(&x, 0, mode, draw(env), inexact);
    *mag = n;
    return true;
}

static uint32_t op_round_to_int(fpe_format_id fmt, const fpe_env *env, uint32_t a, bool exact,
                                uint8_t *fl)
{
    const orc_format *F = &orc_formats[fmt];
    operand A = decode(fmt, a, env->daz);
    if (A.cls == CLS_NAN) return propagate_nan(fmt, env, &a, 1, fl);
    if (A.cls == CLS_INF) return a;
    if (A.cls == CLS_ZERO) return signed_zero(fmt, A.sign);
    if (fabs(A.v) >= ldexp(1.0, F->p - 1)) return a; /* already integral */
    uint64_t n;
    int inexact;
    bool ok = round_to_integer(env, A.v, &n, &inexact);
    assert(ok && n <= (UINT64_C(1) << (F->p - 1)));
    (void)ok;
    if (inexact && exact) *fl |= FPE_FLAG_INEXACT;
    if (n == 0) return signed_zero(fmt, A.sign); /* a zero keeps a's sign */
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
    operand A = decode(fmt, a, env->daz);
    if (A.cls == CLS_NAN || A.cls == CLS_INF) {
        *fl |= FPE_FLAG_INVALID;
        return int_invalid_result(kind, env->nan, A.cls == CLS_NAN, A.sign);
    }
    if (A.cls == CLS_ZERO) return 0;
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
    operand A = decode(fmt, a, env->daz);
    if (A.cls == CLS_NAN) {
        if (orc_is_snan(fmt, a)) *fl |= FPE_FLAG_INVALID;
        if (env->nan == FPE_NAN_CANONICAL) return orc_default_nan(to, FPE_NAN_CANONICAL);
        return (uint32_t)orc_convert_nan(fmt, to, a);
    }
    if (A.cls == CLS_INF) return signed_inf(to, A.sign);
    if (A.cls == CLS_ZERO) return signed_zero(to, A.sign);
    mpfr_set_d(mY, A.v, MPFR_RNDN);
    return finish(to, env, mY, 0, A.sign, fl);
}

#define F64_CANONICAL_NAN UINT64_C(0x7FFFFFFFFFFFFFFF)

static uint64_t op_to_f64(fpe_format_id fmt, const fpe_env *env, uint32_t a, uint8_t *fl)
{
    operand A = decode(fmt, a, env->daz);
    if (A.cls == CLS_NAN) {
        if (orc_is_snan(fmt, a)) *fl |= FPE_FLAG_INVALID;
        if (env->nan == FPE_NAN_CANONICAL) return F64_CANONICAL_NAN;
        return orc_convert_nan(fmt, 3, a);
    }
    return f64_bits(A.v);
}

static uint32_t op_from_f64(fpe_format_id to, const fpe_env *env, uint64_t bits, uint8_t *fl)
{
    double v = f64_from_bits(bits);
    int sign = (bits & F64_SIGN) != 0;
    if (isnan(v)) {
        if (!(bits & F64_QUIET)) *fl |= FPE_FLAG_INVALID;
        if (env->nan == FPE_NAN_CANONICAL) return orc_default_nan(to, FPE_NAN_CANONICAL);
        return (uint32_t)orc_convert_nan(3, to, bits);
    }
    if (isinf(v)) return signed_inf(to, sign);
    if (v == 0 || (env->daz && fabs(v) < 0x1p-1022)) return signed_zero(to, sign);
    mpfr_set_d(mY, v, MPFR_RNDN);
    return finish(to, env, mY, 0, sign, fl);
}

static uint32_t op_from_int(fpe_format_id to, const fpe_env *env, uint64_t v, int kind, uint8_t *fl)
{
    switch (kind) {
    case INT_I32: mpfr_set_sj(mY, (int32_t)(uint32_t)v, MPFR_RNDN); break;
    case INT_I64: mpfr_set_sj(mY, (int64_t)v, MPFR_RNDN); break;
    case INT_UI32: mpfr_set_uj(mY, (uint32_t)v, MPFR_RNDN); break;
    default: mpfr_set_uj(mY, v, MPFR_RNDN); break;
    }
    return finish(to, env, mY, 0, 0, fl); /* integer zero converts to +0 */
}

uint64_t oracle_op(orc_op op, fpe_format_id fmt, const fpe_env *env, const uint64_t *operands,
                   uint8_t *flags_out)
{
    mp_init();
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
    operand A = decode(fmt, a, env->daz), B = decode(fmt, b, env->daz);
    bool any_nan = A.cls == CLS_NAN || B.cls == CLS_NAN;
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
