/* sqrt.h: square root, exactly rounded. */
#ifndef AMPSCOPE_OPS_SQRT_H
#define AMPSCOPE_OPS_SQRT_H
#include <math.h>

#include "../fpe_internal.h"

FPE_NOINLINE uint32_t fpe_sqrt_general(fpe_format_id f, fpe_env *env, uint32_t a);

/* The fast path takes a positive normal operand (its root is normal), except fp32 in the
 * stochastic modes: they read 32 bits below fp32's 24, more than the 53 of binary64 give (the
 * general path). */
FPE_INLINE bool fpe_sqrt_fast_ok(fpe_format_id f, const fpe_env *env, uint32_t a)
{
    return fk_is_normal(f, a) && !(a & fk_sign(f)) &&
           (f != FPE_FMT_F32 || env->round < FPE_SR_PROP);
}

/* sqrt(a) for a positive normal a, rounded to odd at 53 bits, as binary64 bits.  The
 * hardware's binary64 root s, rounded in whatever mode the host is in, is within one ulp of
 * sqrt(x); the sign of the exact remainder x - s^2 says on which side sqrt(x) lies
 * (fpe_f64_odd_fix).  With 53-bit integer significands, x = X 2^ex and s = S 2^es, the
 * remainder is x - s^2 = (X 2^t - S^2) 2^(2 es), t = ex - 2 es (52 or 53).
 * |sqrt(x) - s| < 2^es and sqrt(x) + s < 2^(es + 54) bound it by 2^(2 es + 54), so
 * X 2^t - S^2 taken modulo 2^64 is exact as a signed integer; and X 2^t is 0 modulo 2^64, X
 * having 53 - p >= 29 trailing zeros. */
FPE_INLINE uint64_t fpe_sqrt_odd_f64(fpe_format_id f, uint32_t a)
{
    const uint64_t us = fpe_f64_bits(sqrt(fpe_f64_from_bits(fpe_normal_to_f64_bits(f, a))));
    const uint64_t m52 = ((uint64_t)1 << 52) - 1, S = (us & m52) | (m52 + 1);
    return fpe_f64_odd_fix(us, (int64_t)((uint64_t)0 - S * S));
}

/* sqrt(a) for a positive normal a as binary64 bits that env's mode rounds to the format as it
 * rounds the exact sqrt(x) (as fpe_div_f64): in the deterministic modes the hardware's root s.
 * Were sqrt(x) != t for a level t = T 2^e (T < 2^(p+1)) and s at t or past it, |sqrt(x) - t|
 * would be below 2^-52 sqrt(x): t < sqrt(x) (1 + 2^-52) and x < t^2 (1 + 2^-50).  With
 * x = X 2^ex (X < 2^p), x - t^2 is a nonzero multiple of 2^m, m = min(ex, 2e), so
 * |sqrt(x) - t| = |x - t^2| / (sqrt(x) + t) > 2^m / (2 sqrt(x) (1 + 2^-53)), at least
 * 2^-52 sqrt(x) if x (1 + 2^-53) < 2^(m + 51).  It is: x < 2^(ex + p), and
 * x (1 + 2^-53) < 2^(2e + 2p + 3) <= 2^(2e + 51) for p <= 24 (fp32's included).  The stochastic
 * modes take the round-to-odd root. */
FPE_INLINE uint64_t fpe_sqrt_f64(fpe_format_id f, const fpe_env *env, uint32_t a)
{
    if (env->round >= FPE_SR_PROP) return fpe_sqrt_odd_f64(f, a);
    return fpe_f64_bits(sqrt(fpe_f64_from_bits(fpe_normal_to_f64_bits(f, a))));
}

FPE_INLINE uint32_t fpe_sqrt_k(fpe_format_id f, fpe_env *env, uint32_t a)
{
    if (fpe_sqrt_fast_ok(f, env, a)) return fpe_round_f64_odd(f, env, fpe_sqrt_f64(f, env, a));
    return fpe_sqrt_general(f, env, a);
}

/* floor(sqrt(r)) for r < 2^62.  The double estimate is off by at most one
 * and is then corrected with exact integer arithmetic. */
FPE_INLINE uint64_t fpe_isqrt62(uint64_t r)
{
    uint64_t s = (uint64_t)sqrt((double)r);
    while (s * s > r)
        s--;
    while ((s + 1) * (s + 1) <= r)
        s++;
    return s;
}

/* floor(sqrt(r)) for r < 2^124, digit by digit; *exact tells whether the
 * root is exact.  Used where 31 root bits do not suffice (stochastic modes
 * read 32 bits below the last kept one). */
FPE_INLINE uint64_t fpe_isqrt124(unsigned __int128 r, bool *exact)
{
    unsigned __int128 root = 0, bit = (unsigned __int128)1 << 122;
    while (bit > r)
        bit >>= 2;
    while (bit != 0) {
        if (r >= root + bit) {
            r -= root + bit;
            root = (root >> 1) + bit;
        } else {
            root >>= 1;
        }
        bit >>= 2;
    }
    *exact = r == 0;
    return (uint64_t)root;
}

/* Every input class: special values, then an integer square root. */
FPE_NOINLINE uint32_t fpe_sqrt_general(fpe_format_id f, fpe_env *env, uint32_t a)
{
    const fpe_unp ua = fpe_unpack(f, env, a);
    if (ua.cls == FPE_CLS_NAN) return fpe_propagate_nan(f, env, a, 0);
    if (ua.cls == FPE_CLS_ZERO) return ua.sign ? fk_sign(f) : 0; /* sqrt(-0) = -0 */
    if (ua.sign) return fpe_invalid(f, env);                     /* negative, -inf */
    if (ua.cls == FPE_CLS_INF) return a;
    /* radicand with its leading one at bit 61 or 60 and an even exponent */
    int l = FPE_CLZ64(ua.sig) - 2;
    int32_t e = ua.exp - l;
    if (e & 1) {
        l--;
        e++;
    }
    if (env->round >= FPE_SR_PROP) {
        /* a 62-bit root: the radicand 62 bits further up */
        bool exact;
        uint64_t root = fpe_isqrt124((unsigned __int128)(ua.sig << l) << 62, &exact);
        return fpe_round_pack(f, env, false, (e - 62) / 2, root | (uint64_t)!exact);
    }
    const uint64_t r = ua.sig << l;
    uint64_t s = fpe_isqrt62(r); /* 31 bits: 7 or more below the last kept */
    s |= (uint64_t)(s * s != r);
    return fpe_round_pack(f, env, false, e / 2, s);
}
#endif
