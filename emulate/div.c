/* div.c: fpe_<fmt>_div (the arithmetic is in ops/div.h). */
#include "fpe_ops.h"

#define DEFINE(F, T, K)                                                                            \
    T fpe_##F##_div(fpe_env *env, T a, T b) { FPE_NEXT_INDEX(env, (T)fpe_div_k(K, env, a, b)); }
FPE_FOR_FORMATS(DEFINE)
