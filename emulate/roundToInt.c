/* roundToInt.c: fpe_<fmt>_roundToInt (ops/roundToInt.h). */
#include "fpe_ops.h"

#define DEFINE(F, T, K)                                                                            \
    T fpe_##F##_roundToInt(fpe_env *env, T a, bool exact)                                          \
    {                                                                                              \
        FPE_NEXT_INDEX(env, (T)fpe_roundToInt_k(K, env, a, exact));                                \
    }
FPE_FOR_FORMATS(DEFINE)
