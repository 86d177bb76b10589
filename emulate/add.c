/* add.c: fpe_<fmt>_add and fpe_<fmt>_sub (the arithmetic is in ops/add.h). */
#include "fpe_ops.h"

/* The general path and the index step, out of line: the public functions'
 * fast path then needs no stack frame. */
static __attribute__((noinline)) uint32_t add_general_next(fpe_format_id f, fpe_env *env,
                                                           uint32_t a, uint32_t b, bool subtract)
{
    FPE_NEXT_INDEX(env, fpe_add_general(f, env, a, b, subtract));
}

#define DEFINE_ONE(NAME, T, K, SUB)                                                                \
    T NAME(fpe_env *env, T a, T b)                                                                 \
    {                                                                                              \
        uint32_t r;                                                                                \
        if (fpe_add_fast(K, env, a, b, SUB, &r)) {                                                 \
            env->sr_index++;                                                                       \
            return (T)r;                                                                           \
        }                                                                                          \
        return (T)add_general_next(K, env, a, b, SUB);                                             \
    }
#define DEFINE(F, T, K) DEFINE_ONE(fpe_##F##_add, T, K, false) DEFINE_ONE(fpe_##F##_sub, T, K, true)
FPE_FOR_FORMATS(DEFINE)
