/* compare.h: equality and ordering, quiet and signaling. */
#ifndef AMPSCOPE_OPS_COMPARE_H
#define AMPSCOPE_OPS_COMPARE_H
#include "../fpe_internal.h"

/* Subnormals read as signed zero under DAZ. */
FPE_INLINE uint32_t fpe_cmp_operand(fpe_format_id f, const fpe_env *env, uint32_t a)
{
    if (env->daz && ((a >> fk_fbits(f)) & fk_expfield_max(f)) == 0) return a & fk_sign(f);
    return a;
}

/* NaN operands: the comparison is false (unordered); invalid for a
 * signaling NaN, or for any NaN when the comparison is signaling. */
FPE_INLINE bool fpe_cmp_unordered(fpe_format_id f, fpe_env *env, uint32_t a, uint32_t b,
                                  bool signaling)
{
    if (!fpe_isnan_k(f, a) && !fpe_isnan_k(f, b)) return false;
    if (signaling || fpe_issnan_k(f, a) || fpe_issnan_k(f, b)) env->flags |= FPE_FLAG_INVALID;
    return true;
}

FPE_INLINE bool fpe_eq_k(fpe_format_id f, fpe_env *env, uint32_t a, uint32_t b, bool signaling)
{
    if (fpe_cmp_unordered(f, env, a, b, signaling)) return false;
    a = fpe_cmp_operand(f, env, a);
    b = fpe_cmp_operand(f, env, b);
    const uint32_t mag = fk_sign(f) - 1;
    return a == b || ((a | b) & mag) == 0; /* +0 == -0 */
}

/* a < b (or_equal: a <= b) on the sign-magnitude encodings */
FPE_INLINE bool fpe_lt_k(fpe_format_id f, fpe_env *env, uint32_t a, uint32_t b, bool signaling,
                         bool or_equal)
{
    if (fpe_cmp_unordered(f, env, a, b, signaling)) return false;
    a = fpe_cmp_operand(f, env, a);
    b = fpe_cmp_operand(f, env, b);
    const uint32_t sbit = fk_sign(f), mag = sbit - 1;
    const bool sa = (a & sbit) != 0, sb = (b & sbit) != 0;
    if (((a | b) & mag) == 0) return or_equal; /* both zero */
    if (a == b) return or_equal;
    if (sa != sb) return sa; /* negative < positive */
    return sa ? (a & mag) > (b & mag) : (a & mag) < (b & mag);
}
#endif
