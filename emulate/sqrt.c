/* sqrt.c: fpe_<fmt>_sqrt (the arithmetic is in ops/sqrt.h). */
#include "fpe_ops.h"

#define DEFINE(F, T, K)                                                                            \
    T fpe_##F##_sqrt(fpe_env *env, T a) { FPE_NEXT_INDEX(env, (T)fpe_sqrt_k(K, env, a)); }
FPE_FOR_FORMATS(DEFINE)
