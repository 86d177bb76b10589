/* add.c: fpe_<fmt>_add and fpe_<fmt>_sub (the arithmetic is in ops/add.h). */
#include "fpe_ops.h"

#define DEFINE(F, T, K)                                                                              \
    T fpe_##F##_add(fpe_env *env, T a, T b) { FPE_NEXT_INDEX(env, (T)fpe_add_k(K, env, a, b, false)); } \
    T fpe_##F##_sub(fpe_env *env, T a, T b) { FPE_NEXT_INDEX(env, (T)fpe_add_k(K, env, a, b, true)); }
FPE_FOR_FORMATS(DEFINE)
