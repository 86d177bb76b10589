/* mulAdd.c: fpe_<fmt>_mulAdd, fused multiply-add (ops/mulAdd.h). */
#include "fpe_ops.h"

#define DEFINE(F, T, K)                                                                              \
    T fpe_##F##_mulAdd(fpe_env *env, T a, T b, T c) { FPE_NEXT_INDEX(env, (T)fpe_mulAdd_k(K, env, a, b, c)); }
FPE_FOR_FORMATS(DEFINE)
