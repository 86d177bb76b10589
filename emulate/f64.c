/* f64.c: to and from binary64 (ops/convert.h). */
#include "fpe_ops.h"

#define DEFINE(F, T, K)                                                                            \
    double fpe_##F##_to_f64(fpe_env *env, T a) { FPE_NEXT_INDEX(env, fpe_to_f64_k(K, env, a)); }   \
    T fpe_f64_to_##F(fpe_env *env, double a) { FPE_NEXT_INDEX(env, (T)fpe_from_f64_k(K, env, a)); }
FPE_FOR_FORMATS(DEFINE)
