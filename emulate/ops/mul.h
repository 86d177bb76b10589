/* mul.h: a * b, exactly rounded. */
#ifndef AMPSCOPE_OPS_MUL_H
#define AMPSCOPE_OPS_MUL_H
#include "../fpe_internal.h"

FPE_NOINLINE uint32_t fpe_mul_general(fpe_format_id f, fpe_env *env, uint32_t a, uint32_t b);

/* The fast path: the product of two normal numbers is exact in binary64.
 * False when it declines (special or subnormal operands or result). */
FPE_INLINE bool fpe_mul_fast(fpe_format_id f, fpe_env *env, uint32_t a, uint32_t b, uint32_t *r)
{
    if (!fk_is_normal(f, a) || !fk_is_normal(f, b)) return false;
    const double x = fpe_f64_from_bits(fpe_normal_to_f64_bits(f, a));
    const double y = fpe_f64_from_bits(fpe_normal_to_f64_bits(f, b));
    return fpe_round_f64_fast(f, env, fpe_f64_bits(x * y), r);
}

FPE_INLINE uint32_t fpe_mul_k(fpe_format_id f, fpe_env *env, uint32_t a, uint32_t b)
{
    uint32_t r;
    if (fpe_mul_fast(f, env, a, b, &r)) return r;
    return fpe_mul_general(f, env, a, b);
}

/* Every input class: special values, then the exact integer product. */
FPE_NOINLINE uint32_t fpe_mul_general(fpe_format_id f, fpe_env *env, uint32_t a, uint32_t b)
{
    const fpe_unp ua = fpe_unpack(f, env, a), ub = fpe_unpack(f, env, b);
    if (ua.cls == FPE_CLS_NAN || ub.cls == FPE_CLS_NAN) return fpe_propagate_nan(f, env, a, b);
    const bool sign = ua.sign ^ ub.sign;
    const uint32_t sbit = sign ? fk_sign(f) : 0;
    if (ua.cls == FPE_CLS_INF || ub.cls == FPE_CLS_INF) {
        /* inf * 0 is invalid; otherwise inf with the product's sign */
        if (ua.cls == FPE_CLS_ZERO || ub.cls == FPE_CLS_ZERO) return fpe_invalid(f, env);
        return sbit | fk_inf(f);
    }
    if (ua.cls == FPE_CLS_ZERO || ub.cls == FPE_CLS_ZERO) return sbit;
    /* the product of two significands below 2^24 is exact in 64 bits */
    return fpe_round_pack(f, env, sign, ua.exp + ub.exp, ua.sig * ub.sig);
}
#endif
