/* to_int.c: fpe_<fmt>_to_{i32,i64,ui32,ui64} (ops/convert.h). */
#include "fpe_ops.h"

#define DEFINE(F, T, K)                                                                            \
    int32_t fpe_##F##_to_i32(fpe_env *env, T a, bool exact)                                        \
    {                                                                                              \
        FPE_NEXT_INDEX(env, (int32_t)(uint32_t)fpe_to_int_k(K, FPE_I32, env, a, exact));           \
    }                                                                                              \
    int64_t fpe_##F##_to_i64(fpe_env *env, T a, bool exact)                                        \
    {                                                                                              \
        FPE_NEXT_INDEX(env, (int64_t)fpe_to_int_k(K, FPE_I64, env, a, exact));                     \
    }                                                                                              \
    uint32_t fpe_##F##_to_ui32(fpe_env *env, T a, bool exact)                                      \
    {                                                                                              \
        FPE_NEXT_INDEX(env, (uint32_t)fpe_to_int_k(K, FPE_UI32, env, a, exact));                   \
    }                                                                                              \
    uint64_t fpe_##F##_to_ui64(fpe_env *env, T a, bool exact)                                      \
    {                                                                                              \
        FPE_NEXT_INDEX(env, fpe_to_int_k(K, FPE_UI64, env, a, exact));                             \
    }
FPE_FOR_FORMATS(DEFINE)
