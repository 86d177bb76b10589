/* oracle.c: the MPFR oracle's formats and rounding (oracle.h; the
 * operations are in oracle_ops.c).
 *
 * Layout: format parameters and bit helpers; NaN rules; operands; the two
 * rounding routines (MPFR's recipe, and integer rounding for ties-away, odd
 * and the stochastic modes) behind orc_finish(), where every operation's
 * finite case ends.
 */
#include <stdint.h> /* before mpfr.h, for the intmax_t functions */

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpfr.h>

#include "oracle.h"
#include "oracle_internal.h"

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

uint64_t orc_f64_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}
double orc_f64_from_bits(uint64_t u)
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
        sign = (bits & ORC_F64_SIGN) != 0;
        payload = bits & ORC_F64_FRAC;
    } else {
        const orc_format *F = &orc_formats[from_fmt];
        sign = (bits & F->sign_mask) != 0;
        payload = (uint64_t)(bits & F->frac_mask) << (ORC_F64_FRAC_BITS - F->frac_bits);
    }
    if (to_fmt == 3) return (sign ? ORC_F64_SIGN : 0) | ORC_F64_EXP | ORC_F64_QUIET | payload;
    const orc_format *T = &orc_formats[to_fmt];
    return (sign ? T->sign_mask : 0) | T->exp_mask | T->quiet_bit |
           (uint32_t)(payload >> (ORC_F64_FRAC_BITS - T->frac_bits));
}

/* Result of an operation with NaN operands: invalid if any is signaling;
 * x86 returns the first NaN orc_operand quieted. */
uint32_t orc_propagate_nan(fpe_format_id fmt, const fpe_env *env, const uint32_t *ops, int n,
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

uint32_t orc_invalid_nan(fpe_format_id fmt, const fpe_env *env, uint8_t *fl)
{
    *fl |= FPE_FLAG_INVALID;
    return orc_default_nan(fmt, env->nan);
}

/* ---- operands ------------------------------------------------------------ */

orc_operand orc_decode(fpe_format_id fmt, uint32_t bits, int daz)
{
    orc_operand o;
    o.sign = (bits & orc_formats[fmt].sign_mask) != 0;
    o.v = orc_to_double(fmt, bits);
    if (isnan(o.v))
        o.cls = ORC_NAN;
    else if (isinf(o.v))
        o.cls = ORC_INF;
    else if (o.v == 0 || (daz && orc_is_subnormal(fmt, bits))) {
        o.cls = ORC_ZERO;
        o.v = o.sign ? -0.0 : 0.0;
    } else
        o.cls = ORC_FINITE;
    return o;
}

uint32_t orc_signed_zero(fpe_format_id fmt, int sign)
{
    return sign ? orc_formats[fmt].sign_mask : 0;
}
uint32_t orc_signed_inf(fpe_format_id fmt, int sign)
{
    return orc_signed_zero(fmt, sign) | orc_formats[fmt].inf;
}

/* ---- MPFR working storage ---------------------------------------------- */
#define WORK_PREC 64 /* >= p + 34 for every format: room for the 32 SR bits */
static int mp_ready;
mpfr_t orc_mA, orc_mB, orc_mC, orc_mY;
static mpfr_t mT, mRO, mZ[3];

void orc_mp_init(void)
{
    if (mp_ready) return;
    mpfr_inits2(WORK_PREC, orc_mA, orc_mB, orc_mC, orc_mY, mT, mRO, (mpfr_ptr)0);
    for (int f = 0; f < 3; f++)
        mpfr_init2(mZ[f], orc_formats[f].p);
    mp_ready = 1;
}

bool orc_force_integer;
void oracle_force_integer_rounding(bool on) { orc_force_integer = on; }

static bool is_stochastic(int mode) { return mode == FPE_SR_PROP || mode == FPE_SR_EQUAL; }

uint32_t orc_draw(const fpe_env *env)
{
    return is_stochastic(env->round) ? fpe_random_bits(env->sr_seed, env->sr_stream, env->sr_index)
                                     : 0;
}

orc_xval orc_xval_from_mpfr(mpfr_srcptr y, int ternary)
{
    orc_xval x;
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
uint64_t orc_round_to_quantum(const orc_xval *x, long qexp, int mode, uint32_t rnd, int *inexact)
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
    return orc_signed_zero(fmt, sign) | (to_inf ? F->inf : F->max_finite);
}

/* The integer routine: all modes. */
static uint32_t round_by_integers(fpe_format_id fmt, const fpe_env *env, const orc_xval *x,
                                  uint8_t *fl)
{
    const orc_format *F = &orc_formats[fmt];
    const int p = F->p;
    const long E1 = x->e + 63; /* |x| in [2^E1, 2^(E1+1)) */
    const uint32_t rnd = orc_draw(env);
    int inexact;

    /* p bits, unbounded exponent: decides overflow and tininess-after */
    uint64_t nu = orc_round_to_quantum(x, E1 - (p - 1), env->round, rnd, &inexact);
    long Eu = (nu >> p) ? E1 + 1 : E1;
    bool tiny = env->tininess == FPE_TININESS_BEFORE ? E1 < F->emin : Eu < F->emin;
    if (Eu > F->emax) {
        *fl |= FPE_FLAG_OVERFLOW | FPE_FLAG_INEXACT;
        return overflow_result(fmt, env->round, x->sign);
    }
    if (env->ftz && tiny) {
        *fl |= FPE_FLAG_UNDERFLOW | FPE_FLAG_INEXACT;
        return orc_signed_zero(fmt, x->sign);
    }
    long qexp = (E1 > F->emin ? E1 : F->emin) - (p - 1);
    uint64_t n = orc_round_to_quantum(x, qexp, env->round, rnd, &inexact);
    if (inexact) *fl |= FPE_FLAG_INEXACT;
    if (inexact && tiny) *fl |= FPE_FLAG_UNDERFLOW;
    if (n == 0) return orc_signed_zero(fmt, x->sign);
    double v = ldexp((double)n, (int)qexp);
    return orc_from_double(fmt, x->sign ? -v : v);
}

/* MPFR's recipe: RNE, RZ, RD, RU. */
static uint32_t round_by_mpfr(fpe_format_id fmt, const fpe_env *env, const orc_xval *x, uint8_t *fl)
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
        return orc_signed_zero(fmt, x->sign);
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
    if (mpfr_inf_p(z)) return orc_signed_inf(fmt, x->sign);
    if (mpfr_zero_p(z)) return orc_signed_zero(fmt, x->sign);
    return orc_from_double(fmt, mpfr_get_d(z, MPFR_RNDN));
}

static uint32_t round_exact(fpe_format_id fmt, const fpe_env *env, const orc_xval *x, uint8_t *fl)
{
    int mode = env->round;
    bool ieee = mode == FPE_RNE || mode == FPE_RZ || mode == FPE_RD || mode == FPE_RU;
    if (ieee && !orc_force_integer) return round_by_mpfr(fmt, env, x, fl);
    return round_by_integers(fmt, env, x, fl);
}

/* Round the MPFR value y (computed toward zero, ternary t) to fmt; an exact
 * zero takes zero_sign. */
uint32_t orc_finish(fpe_format_id fmt, const fpe_env *env, mpfr_srcptr y, int t, int zero_sign,
                    uint8_t *fl)
{
    if (mpfr_zero_p(y)) {
        assert(t == 0);
        return orc_signed_zero(fmt, zero_sign);
    }
    orc_xval x = orc_xval_from_mpfr(y, t);
    return round_exact(fmt, env, &x, fl);
}

/* The sign of an exact zero sum of terms of signs s1 and s2. */
int orc_zero_sum_sign(const fpe_env *env, int s1, int s2)
{
    if (s1 == s2) return s1;
    return env->round == FPE_RD;
}
