/* mulAdd.h: fused a * b + c with one rounding. */
#ifndef AMPSCOPE_OPS_MULADD_H
#define AMPSCOPE_OPS_MULADD_H
#include "../fpe_internal.h"
#include "add.h"

FPE_INLINE uint32_t fpe_mulAdd_k(fpe_format_id f, fpe_env *env, uint32_t a, uint32_t b, uint32_t c)
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
