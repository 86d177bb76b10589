/* mulAdd.c: fpe_<fmt>_mulAdd, the fused multiply-add (fma: fpe_<fmt>_fma is
 * the same function), a * b + c rounded once (ops/mulAdd.h). */
#include "fpe_ops.h"

#define DEFINE(F, T, K)                                                                            \
    T fpe_##F##_mulAdd(fpe_env *env, T a, T b, T c)                                                \
    {                                                                                              \
        FPE_NEXT_INDEX(env, (T)fpe_mulAdd_k(K, env, a, b, c));                                     \
    }
FPE_FOR_FORMATS(DEFINE)
