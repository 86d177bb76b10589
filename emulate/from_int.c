/* from_int.c: fpe_{i32,i64,ui32,ui64}_to_<fmt> (ops/convert.h). */
#include "fpe_ops.h"

/* the magnitude of a signed value, without overflow at the most negative */
static uint64_t magnitude(int64_t v) { return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v; }

#define DEFINE(F, T, K)                                                                            \
    T fpe_i32_to_##F(fpe_env *env, int32_t a)                                                      \
    {                                                                                              \
        FPE_NEXT_INDEX(env, (T)fpe_from_int_k(K, env, a < 0, magnitude(a)));                       \
    }                                                                                              \
    T fpe_i64_to_##F(fpe_env *env, int64_t a)                                                      \
    {                                                                                              \
        FPE_NEXT_INDEX(env, (T)fpe_from_int_k(K, env, a < 0, magnitude(a)));                       \
    }                                                                                              \
    T fpe_ui32_to_##F(fpe_env *env, uint32_t a)                                                    \
    {                                                                                              \
        FPE_NEXT_INDEX(env, (T)fpe_from_int_k(K, env, false, a));                                  \
    }                                                                                              \
    T fpe_ui64_to_##F(fpe_env *env, uint64_t a)                                                    \
    {                                                                                              \
        FPE_NEXT_INDEX(env, (T)fpe_from_int_k(K, env, false, a));                                  \
    }
FPE_FOR_FORMATS(DEFINE)
