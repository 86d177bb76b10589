/* add.h: a + b and a - b, exactly rounded (generic over the formats). */
#ifndef AMPSCOPE_OPS_ADD_H
#define AMPSCOPE_OPS_ADD_H
#include "../fpe_internal.h"

/* An exact zero sum of nonzero operands is +0, or -0 when rounding down. */
FPE_INLINE uint32_t fpe_exact_zero_sum(fpe_format_id f, const fpe_env *env)
{
    return env->round == FPE_RD ? fk_sign(f) : 0;
}

/* The sum of two nonzero terms (-1)^sx * x * 2^ex and (-1)^sy * y * 2^ey,
 * rounded.  The caller places x and y so that an alignment shift of the
 * smaller term either loses nothing or leaves its sticky bit at least two
 * places below the rounding position (see add and mulAdd). */
FPE_INLINE uint32_t fpe_add_terms(fpe_format_id f, fpe_env *env, bool sx, int32_t ex, uint64_t x,
                                  bool sy, int32_t ey, uint64_t y)
{
    if (ex < ey) {
        uint64_t t = x;
        x = y;
        y = t;
        int32_t te = ex;
        ex = ey;
        ey = te;
        bool ts = sx;
        sx = sy;
        sy = ts;
    }
    y = fpe_shr_jam64(y, (uint32_t)(ex - ey));
    if (sx == sy) return fpe_round_pack(f, env, sx, ex, x + y);
    if (x == y) return fpe_exact_zero_sum(f, env);
    if (x > y) return fpe_round_pack(f, env, sx, ex, x - y);
    return fpe_round_pack(f, env, sy, ex, y - x);
}

FPE_NOINLINE uint32_t fpe_add_general(fpe_format_id f, fpe_env *env, uint32_t a, uint32_t b,
                                      bool subtract);

/* The fast path: normal operands whose sum is exact in binary64 (their
 * exponents differ by at most 52 - p) and a normal result.  False when it
 * declines. */
FPE_INLINE bool fpe_add_fast(fpe_format_id f, fpe_env *env, uint32_t a, uint32_t b, bool subtract,
                             uint32_t *r)
{
    if (!fk_is_normal(f, a) || !fk_is_normal(f, b)) return false;
    const uint32_t ea = fk_expfield(f, a), eb = fk_expfield(f, b);
    if ((ea > eb ? ea - eb : eb - ea) > (uint32_t)(52 - fk_p(f))) return false;
    const double x = fpe_f64_from_bits(fpe_normal_to_f64_bits(f, a));
    const double y = fpe_f64_from_bits(fpe_normal_to_f64_bits(f, b));
    return fpe_round_f64_fast(f, env, fpe_f64_bits(subtract ? x - y : x + y), r);
}

FPE_INLINE uint32_t fpe_add_k(fpe_format_id f, fpe_env *env, uint32_t a, uint32_t b, bool subtract)
{
    uint32_t r;
    if (fpe_add_fast(f, env, a, b, subtract, &r)) return r;
    return fpe_add_general(f, env, a, b, subtract);
}

/* Every input class, exactly: special values, then integer alignment. */
FPE_NOINLINE uint32_t fpe_add_general(fpe_format_id f, fpe_env *env, uint32_t a, uint32_t b,
                                      bool subtract)
{
    const fpe_unp ua = fpe_unpack(f, env, a), ub = fpe_unpack(f, env, b);
    /* NaN: propagate the operands as given (b's sign is not flipped) */
    if (ua.cls == FPE_CLS_NAN || ub.cls == FPE_CLS_NAN) return fpe_propagate_nan(f, env, a, b);
    const bool sa = ua.sign, sb = ub.sign ^ subtract;
    const uint32_t sign_bit = fk_sign(f);
    if (ua.cls == FPE_CLS_INF) {
        /* inf - inf is invalid; otherwise inf keeps its sign */
        if (ub.cls == FPE_CLS_INF && sa != sb) return fpe_invalid(f, env);
        return (sa ? sign_bit : 0) | fk_inf(f);
    }
    if (ub.cls == FPE_CLS_INF) return (sb ? sign_bit : 0) | fk_inf(f);
    if (ua.cls == FPE_CLS_ZERO && ub.cls == FPE_CLS_ZERO) {
        /* (+0) + (+0) = +0, (-0) + (-0) = -0, mixed: +0 (-0 rounding down) */
        return sa == sb ? (sa ? sign_bit : 0) : fpe_exact_zero_sum(f, env);
    }
    if (ub.cls == FPE_CLS_ZERO) return fpe_round_pack(f, env, sa, ua.exp, ua.sig);
    if (ua.cls == FPE_CLS_ZERO) return fpe_round_pack(f, env, sb, ub.exp, ub.sig);

    /* Both finite and nonzero.  The operand with the larger exponent is the
     * larger in magnitude unless the exponents are equal (a subnormal has the
     * smallest exponent).  Significands sit 38 bits up, so an alignment shift
     * of up to 38 is exact and a longer one leaves its sticky bit far below
     * the rounding position. */
    return fpe_add_terms(f, env, sa, ua.exp - 38, ua.sig << 38, sb, ub.exp - 38, ub.sig << 38);
}
#endif
