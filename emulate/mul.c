/* mul.c: fpe_<fmt>_mul (the arithmetic is in ops/mul.h). */
#include "fpe_ops.h"

#define DEFINE(F, T, K) \
    T fpe_##F##_mul(fpe_env *env, T a, T b) { FPE_NEXT_INDEX(env, (T)fpe_mul_k(K, env, a, b)); }
FPE_FOR_FORMATS(DEFINE)
