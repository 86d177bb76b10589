/* mulAdd.c: fpe_<fmt>_mulAdd, the fused multiply-add (fma: fpe_<fmt>_fma is
 * the same function), a * b + c rounded once (ops/mulAdd.h). */
#include "fpe_ops.h"

/* The general path and the index step, out of line (see add.c). */
static __attribute__((noinline)) uint32_t mulAdd_general_next(fpe_format_id f, fpe_env *env,
                                                              uint32_t a, uint32_t b, uint32_t c)
{
    FPE_NEXT_INDEX(env, fpe_mulAdd_general(f, env, a, b, c));
}

#define DEFINE(F, T, K)                                                                            \
    T fpe_##F##_mulAdd(fpe_env *env, T a, T b, T c)                                                \
    {                                                                                              \
        uint32_t r;                                                                                \
        if (fpe_mulAdd_fast(K, env, a, b, c, &r)) {                                                \
            env->sr_index++;                                                                       \
            return (T)r;                                                                           \
        }                                                                                          \
        return (T)mulAdd_general_next(K, env, a, b, c);                                            \
    }
FPE_FOR_FORMATS(DEFINE)
