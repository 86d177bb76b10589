/* mulAdd.h: fused a * b + c with one rounding. */
#ifndef AMPSCOPE_OPS_MULADD_H
#define AMPSCOPE_OPS_MULADD_H
#include "../fpe_internal.h"
#include "add.h"

FPE_NOINLINE uint32_t fpe_mulAdd_general(fpe_format_id f, fpe_env *env, uint32_t a, uint32_t b,
                                         uint32_t c);

/* The fast path takes three normal operands, except fp32 in the stochastic modes: they read 32
 * bits below fp32's 24, more than the 53 of binary64 hold (the general path). */
FPE_INLINE bool fpe_mulAdd_fast_ok(fpe_format_id f, const fpe_env *env, uint32_t a, uint32_t b,
                                   uint32_t c)
{
    return fk_is_normal(f, a) && fk_is_normal(f, b) && fk_is_normal(f, c) &&
           (f != FPE_FMT_F32 || env->round < FPE_SR_PROP);
}

/* fp16 and bf16: a * b (2p bits) is exact in binary64, and so is a * b + c when the sum spans
 * at most 53 bits.  With g = Ec - (Ea + Eb) (unbiased exponents) the product's bits lie in
 * [Ep - 2p + 2, Ep + 2), c's in [Ec - p + 1, Ec + 1), and the sum spans g + 2p bits when
 * g >= 1, p + 2 - g bits when g <= -p and at most 2p + 1 between: exact for
 * p - 51 <= g <= 53 - 2p, whatever the host's rounding mode.  False otherwise. */
FPE_INLINE bool fpe_mulAdd_exact_f64(fpe_format_id f, uint32_t a, uint32_t b, uint32_t c,
                                     uint64_t *u)
{
    const int p = fk_p(f);
    const int g =
        (int)fk_expfield(f, c) + fk_bias(f) - (int)fk_expfield(f, a) - (int)fk_expfield(f, b);
    const double x = fpe_f64_from_bits(fpe_normal_to_f64_bits(f, a));
    const double y = fpe_f64_from_bits(fpe_normal_to_f64_bits(f, b));
    const double z = fpe_f64_from_bits(fpe_normal_to_f64_bits(f, c));
    *u = fpe_f64_bits(x * y + z);
    return (unsigned)(g - (p - 51)) <= (unsigned)(104 - 3 * p);
}

/* a >> dist with the lowest bit set if a 1 bit was shifted out, for a < 2^63 and any dist,
 * without a branch (fpe_shr_jam64 branches on dist, which here depends on the data). */
FPE_INLINE uint64_t fpe_shr_jam63(uint64_t a, uint32_t dist)
{
    dist = dist < 63 ? dist : 63;
    return (a >> dist) | (uint64_t)((a & (((uint64_t)1 << dist) - 1)) != 0);
}

/* fp32: the product P = A B (47 or 48 bits) is exact in 64 bits.  P sits at bits 60-61 and c's
 * significand at bit 61, so an alignment shift of either up to 14 (P) or 38 (c) bits is exact,
 * and a longer one only happens when the other term is larger by 2^13 or more: the jammed
 * sticky bit then lies 35 or more places below the sum's rounding position, where it makes the
 * sum an odd integer standing for the open interval around it (as in fpe_add_terms), and
 * rounding that to odd at 53 bits is the round-to-odd sum.  Branch-free on the data: the signs
 * and the order of the terms are random in practice.  The bits of a normal binary64, or 0 for
 * an exact zero sum. */
FPE_INLINE uint64_t fpe_mulAdd_odd_f64_32(uint32_t a, uint32_t b, uint32_t c)
{
    const fpe_format_id f = FPE_FMT_F32;
    const uint64_t hidden = (uint64_t)1 << 23;
    const uint64_t x = ((a & 0x7FFFFFu) | hidden) * ((b & 0x7FFFFFu) | hidden) << 14;
    const uint64_t y = ((c & 0x7FFFFFu) | hidden) << 38;
    /* x = P 2^(Ea + Eb - 46 - 14), y = C 2^(Ec - 23 - 38) */
    const int32_t ex = (int32_t)fk_expfield(f, a) + (int32_t)fk_expfield(f, b) - 254 - 60;
    const int32_t ey = (int32_t)fk_expfield(f, c) - 127 - 61;
    /* the shifts by masks, not conditions, which the compiler would turn into a branch */
    const int32_t d = ex - ey, neg_d = d >> 31;
    const uint32_t dx = (uint32_t)(-d & neg_d), dy = (uint32_t)(d & ~neg_d);
    const int32_t e = ey + (int32_t)dy; /* the larger of ex, ey */
    const uint64_t xs = fpe_shr_jam63(x, dx), ys = fpe_shr_jam63(y, dy);
    const uint64_t sp = (a ^ b) >> 31, sub = sp ^ (c >> 31), sub_mask = (uint64_t)0 - sub;
    /* same signs: xs + ys < 2^63; opposite: the difference as a signed integer */
    uint64_t sum = xs + ((ys ^ sub_mask) + sub);
    const uint64_t neg = sum >> 63, neg_mask = (uint64_t)0 - neg;
    sum = (sum ^ neg_mask) + neg;
    if (sum == 0) return 0;
    const int lz = FPE_CLZ64(sum);
    const uint64_t top = sum << lz; /* leading one at bit 63 */
    const uint64_t sig = (top >> 11) | (uint64_t)((top & 0x7FF) != 0);
    /* sig 2^(e - lz + 11), sig in [2^52, 2^53): biased field e - lz + 11 + 1075, less one for
     * the hidden bit that sig adds */
    return ((sp ^ neg) << 63) | (((uint64_t)(e - lz + 1085) << 52) + sig);
}

/* For operands that fpe_mulAdd_fast_ok takes: a * b + c exact, or rounded to odd at 53 bits
 * (fp32), as the bits of a normal binary64; false when the sum is zero (its sign is the mode's:
 * the general path) or, in fp16 and bf16, not exact in binary64. */
FPE_INLINE bool fpe_mulAdd_odd_f64(fpe_format_id f, uint32_t a, uint32_t b, uint32_t c, uint64_t *u)
{
    if (f == FPE_FMT_F32) {
        *u = fpe_mulAdd_odd_f64_32(a, b, c);
        return *u != 0;
    }
    return fpe_mulAdd_exact_f64(f, a, b, c, u) && (*u << 1) != 0;
}

FPE_INLINE uint32_t fpe_mulAdd_k(fpe_format_id f, fpe_env *env, uint32_t a, uint32_t b, uint32_t c)
{
    uint64_t u;
    if (fpe_mulAdd_fast_ok(f, env, a, b, c) && fpe_mulAdd_odd_f64(f, a, b, c, &u))
        return fpe_round_f64_odd(f, env, u);
    return fpe_mulAdd_general(f, env, a, b, c);
}

/* Every input class: special values, then integer alignment. */
FPE_NOINLINE uint32_t fpe_mulAdd_general(fpe_format_id f, fpe_env *env, uint32_t a, uint32_t b,
                                         uint32_t c)
{
    const fpe_unp ua = fpe_unpack(f, env, a), ub = fpe_unpack(f, env, b),
                  uc = fpe_unpack(f, env, c);
    const uint32_t sign_bit = fk_sign(f);
    /* A NaN among a, b: the first NaN of a, b, c wins. */
    if (ua.cls == FPE_CLS_NAN || ub.cls == FPE_CLS_NAN) {
        const uint32_t ab = fpe_propagate_nan(f, env, a, b);
        return fpe_propagate_nan(f, env, ab, c);
    }
    const bool sp = ua.sign ^ ub.sign;
    if (ua.cls == FPE_CLS_INF || ub.cls == FPE_CLS_INF) {
        /* inf * 0 is invalid even when c is a quiet NaN (SoftFloat's rule);
         * the result is then the default NaN */
        if (ua.cls == FPE_CLS_ZERO || ub.cls == FPE_CLS_ZERO) {
            const uint32_t nan = fpe_invalid(f, env);
            if (fpe_issnan_k(f, c)) env->flags |= FPE_FLAG_INVALID;
            return nan;
        }
        if (uc.cls == FPE_CLS_NAN) return fpe_propagate_nan(f, env, c, 0);
        /* inf + (-inf) is invalid */
        if (uc.cls == FPE_CLS_INF && uc.sign != sp) return fpe_invalid(f, env);
        return (sp ? sign_bit : 0) | fk_inf(f);
    }
    if (uc.cls == FPE_CLS_NAN) return fpe_propagate_nan(f, env, c, 0);
    if (uc.cls == FPE_CLS_INF) return c;
    if (ua.cls == FPE_CLS_ZERO || ub.cls == FPE_CLS_ZERO) {
        /* exact zero product: 0 + c; two zeros of opposite signs give +0
         * (-0 rounding down) */
        if (uc.cls == FPE_CLS_ZERO)
            return sp == uc.sign ? (sp ? sign_bit : 0) : fpe_exact_zero_sum(f, env);
        return fpe_round_pack(f, env, uc.sign, uc.exp, uc.sig);
    }
    uint64_t prod = ua.sig * ub.sig; /* exact, below 2^48 */
    int32_t ep = ua.exp + ub.exp;
    if (uc.cls == FPE_CLS_ZERO) return fpe_round_pack(f, env, sp, ep, prod);

    /* Both terms with their leading one at bit 61.  Their significant bits
     * end at bit 14 or above, so an alignment shift of one is exact and only
     * a shift of two or more (no massive cancellation) jams bits. */
    int l = FPE_CLZ64(prod) - 2;
    uint64_t x = prod << l;
    int32_t ex = ep - l;
    l = FPE_CLZ64(uc.sig) - 2;
    uint64_t y = uc.sig << l;
    int32_t ey = uc.exp - l;
    return fpe_add_terms(f, env, sp, ex, x, uc.sign, ey, y);
}
#endif
