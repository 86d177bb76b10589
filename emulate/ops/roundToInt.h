/* roundToInt.h: round to an integral value in the format itself. */
#ifndef AMPSCOPE_OPS_ROUNDTOINT_H
#define AMPSCOPE_OPS_ROUNDTOINT_H
#include "../fpe_internal.h"

/* exact: raise inexact when the value changes (IEEE roundToIntegralExact);
 * otherwise no flag but invalid for a signaling NaN. */
FPE_INLINE uint32_t fpe_roundToInt_k(fpe_format_id f, fpe_env *env, uint32_t a, bool exact)
{
    const fpe_unp ua = fpe_unpack(f, env, a);
    if (ua.cls == FPE_CLS_NAN) return fpe_propagate_nan(f, env, a, 0);
    if (ua.cls == FPE_CLS_INF) return a;
    if (ua.cls == FPE_CLS_ZERO) return ua.sign ? fk_sign(f) : 0; /* also a DAZ'd subnormal */
    if (ua.exp >= 0) return a;                                   /* already an integer */
    bool inexact;
    const uint64_t n = fpe_round_to_integer(env, ua.sign, ua.sig, -ua.exp, &inexact);
    if (inexact && exact) env->flags |= FPE_FLAG_INEXACT;
    /* n <= 2^p: representable, so packing is exact; zero keeps a's sign */
    return fpe_round_pack(f, env, ua.sign, 0, n);
}
#endif
