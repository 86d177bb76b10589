/* div.h: a / b, exactly rounded. */
#ifndef AMPSCOPE_OPS_DIV_H
#define AMPSCOPE_OPS_DIV_H
#include "../fpe_internal.h"

FPE_INLINE uint32_t fpe_div_k(fpe_format_id f, fpe_env *env, uint32_t a, uint32_t b)
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
    /* dividend's leading one at bit 62, divisor's at bit 31: the quotient has
     * 31 or 32 bits, the remainder becomes its sticky bit */
    const int la = FPE_CLZ64(ua.sig) - 1, lb = FPE_CLZ64(ub.sig) - 32;
    const uint64_t x = ua.sig << la, y = ub.sig << lb;
    uint64_t q = x / y;
    q |= (uint64_t)(x - q * y != 0);
    return fpe_round_pack(f, env, sign, (ua.exp - la) - (ub.exp - lb), q);
}
#endif
