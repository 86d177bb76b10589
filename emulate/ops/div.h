/* div.h: a / b, exactly rounded. */
#ifndef AMPSCOPE_OPS_DIV_H
#define AMPSCOPE_OPS_DIV_H
#include "../fpe_internal.h"

FPE_NOINLINE uint32_t fpe_div_general(fpe_format_id f, fpe_env *env, uint32_t a, uint32_t b);

/* The fast path takes two normal operands, except fp32 in the stochastic modes: they read 32
 * bits below fp32's 24, more than the 53 of binary64 give (the general path's long division). */
FPE_INLINE bool fpe_div_fast_ok(fpe_format_id f, const fpe_env *env, uint32_t a, uint32_t b)
{
    return fk_is_normal(f, a) && fk_is_normal(f, b) &&
           (f != FPE_FMT_F32 || env->round < FPE_SR_PROP);
}

/* a / b for normal a and b, rounded to odd at 53 bits, as binary64 bits.  The hardware's
 * binary64 quotient q, rounded in whatever mode the host is in, is within one ulp of x / y; the
 * sign of the exact remainder says on which side x / y lies (fpe_f64_odd_fix).  With 53-bit
 * integer significands, x = X 2^ex, y = Y 2^ey, q = Q 2^eq, the remainder is
 * x - q y = (X 2^s - Q Y) 2^(ey + eq), s = ex - ey - eq = 52 (X >= Y) or 53.  Its magnitude is
 * below Y 2^(ey + eq) (|x / y - q| < 2^eq), so X 2^s - Q Y taken modulo 2^64 is exact as a
 * signed integer; and X 2^s is 0 modulo 2^64, X having 53 - p >= 29 trailing zeros. */
FPE_INLINE uint64_t fpe_div_odd_f64(fpe_format_id f, uint32_t a, uint32_t b)
{
    const uint64_t ux = fpe_normal_to_f64_bits(f, a), uy = fpe_normal_to_f64_bits(f, b);
    const uint64_t uq = fpe_f64_bits(fpe_f64_from_bits(ux) / fpe_f64_from_bits(uy));
    const uint64_t m52 = ((uint64_t)1 << 52) - 1;
    const uint64_t Y = (uy & m52) | (m52 + 1), Q = (uq & m52) | (m52 + 1);
    return fpe_f64_odd_fix(uq, (int64_t)((uint64_t)0 - Q * Y));
}

/* a / b for normal a and b as binary64 bits that env's mode rounds to the format as it rounds
 * the exact x / y.  In the deterministic modes that is the hardware's quotient q itself: the
 * rounding reads only where x / y lies among the levels t = T 2^e, T < 2^(p+1) integer (the
 * format's values, the midpoints, the tininess thresholds, the overflow edge) and whether it is
 * one.  Were x / y != t and q at t or past it, |x / y - t| would be below one ulp of x / y, at
 * most 2^-52 x / y.  But with x = X 2^ex, y = Y 2^ey (X, Y < 2^p integers), x - t y is a nonzero
 * multiple of 2^min(ex, e + ey), so |x / y - t| = |x - t y| / y > 2^(e - p) (then x / y <
 * t (1 + 2^-51) < 2^(e + p + 1) (1 + 2^-51), and 2^-52 x / y < 2^(e - p) as 2p + 1 < 51) or
 * > 2^(ex - ey - p) (x / y < 2^(ex - ey + 1)): a contradiction for p <= 24, fp32's included.
 * If x / y is t, q is t.  The stochastic modes read 32 more bits: the round-to-odd quotient. */
FPE_INLINE uint64_t fpe_div_f64(fpe_format_id f, const fpe_env *env, uint32_t a, uint32_t b)
{
    if (env->round >= FPE_SR_PROP) return fpe_div_odd_f64(f, a, b);
    const uint64_t ux = fpe_normal_to_f64_bits(f, a), uy = fpe_normal_to_f64_bits(f, b);
    return fpe_f64_bits(fpe_f64_from_bits(ux) / fpe_f64_from_bits(uy));
}

FPE_INLINE uint32_t fpe_div_k(fpe_format_id f, fpe_env *env, uint32_t a, uint32_t b)
{
    if (fpe_div_fast_ok(f, env, a, b)) return fpe_round_f64_odd(f, env, fpe_div_f64(f, env, a, b));
    return fpe_div_general(f, env, a, b);
}

/* Every input class: special values, then an integer long division. */
FPE_NOINLINE uint32_t fpe_div_general(fpe_format_id f, fpe_env *env, uint32_t a, uint32_t b)
{
    const fpe_unp ua = fpe_unpack(f, env, a), ub = fpe_unpack(f, env, b);
    if (ua.cls == FPE_CLS_NAN || ub.cls == FPE_CLS_NAN) return fpe_propagate_nan(f, env, a, b);
    const bool sign = ua.sign ^ ub.sign;
    const uint32_t sbit = sign ? fk_sign(f) : 0;
    if (ua.cls == FPE_CLS_INF) {
        /* inf / inf is invalid, inf / finite is inf */
        if (ub.cls == FPE_CLS_INF) return fpe_invalid(f, env);
        return sbit | fk_inf(f);
    }
    if (ub.cls == FPE_CLS_INF) return sbit; /* finite / inf = signed zero */
    if (ub.cls == FPE_CLS_ZERO) {
        /* 0 / 0 is invalid; nonzero / 0 is an exact infinity (divide by zero) */
        if (ua.cls == FPE_CLS_ZERO) return fpe_invalid(f, env);
        env->flags |= FPE_FLAG_INFINITE;
        return sbit | fk_inf(f);
    }
    if (ua.cls == FPE_CLS_ZERO) return sbit;
    /* Both significands with their leading one at bit 23; a long division in
     * two 31-bit steps gives a 62- or 63-bit quotient (enough for the 32
     * fraction bits stochastic rounding reads) and the remainder becomes its
     * sticky bit. */
    const int la = FPE_CLZ64(ua.sig) - 40, lb = FPE_CLZ64(ub.sig) - 40;
    const uint64_t x = ua.sig << la, y = ub.sig << lb;
    const uint64_t n1 = x << 31, q1 = n1 / y, r1 = n1 - q1 * y;
    const uint64_t n2 = r1 << 31, q2 = n2 / y, r2 = n2 - q2 * y;
    const uint64_t q = ((q1 << 31) + q2) | (uint64_t)(r2 != 0);
    return fpe_round_pack(f, env, sign, (ua.exp - la) - (ub.exp - lb) - 62, q);
}
#endif
