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
