/* compare.c: the six comparisons of each format (ops/compare.h).  They round
 * nothing and consume no random index. */
#include "fpe_ops.h"

#define DEFINE(F, T, K)                                                                            \
    bool fpe_##F##_eq(fpe_env *env, T a, T b) { return fpe_eq_k(K, env, a, b, false); }            \
    bool fpe_##F##_eq_signaling(fpe_env *env, T a, T b) { return fpe_eq_k(K, env, a, b, true); }   \
    bool fpe_##F##_le(fpe_env *env, T a, T b) { return fpe_lt_k(K, env, a, b, true, true); }       \
    bool fpe_##F##_lt(fpe_env *env, T a, T b) { return fpe_lt_k(K, env, a, b, true, false); }      \
    bool fpe_##F##_le_quiet(fpe_env *env, T a, T b)                                                \
    {                                                                                              \
        return fpe_lt_k(K, env, a, b, false, true);                                                \
    }                                                                                              \
    bool fpe_##F##_lt_quiet(fpe_env *env, T a, T b)                                                \
    {                                                                                              \
        return fpe_lt_k(K, env, a, b, false, false);                                               \
    }                                                                                              \
    bool fpe_##F##_isnan(T a) { return fpe_isnan_k(K, a); }                                        \
    bool fpe_##F##_is_signaling_nan(T a) { return fpe_issnan_k(K, a); }
FPE_FOR_FORMATS(DEFINE)
