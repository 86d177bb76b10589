/* mul.c: fpe_<fmt>_mul (the arithmetic is in ops/mul.h). */
#include "fpe_ops.h"

/* The general path and the index step, out of line (see add.c). */
static __attribute__((noinline)) uint32_t mul_general_next(fpe_format_id f, fpe_env *env,
                                                           uint32_t a, uint32_t b)
{
    FPE_NEXT_INDEX(env, fpe_mul_general(f, env, a, b));
}

#define DEFINE(F, T, K)                                                                            \
    T fpe_##F##_mul(fpe_env *env, T a, T b)                                                        \
    {                                                                                              \
        uint32_t r;                                                                                \
        if (fpe_mul_fast(K, env, a, b, &r)) {                                                      \
            env->sr_index++;                                                                       \
            return (T)r;                                                                           \
        }                                                                                          \
        return (T)mul_general_next(K, env, a, b);                                                  \
    }
FPE_FOR_FORMATS(DEFINE)
