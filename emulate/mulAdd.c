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
        uint64_t u;                                                                                \
        if (!fpe_mulAdd_fast_ok(K, env, a, b, c) || !fpe_mulAdd_odd_f64(K, a, b, c, &u))           \
            return (T)mulAdd_general_next(K, env, a, b, c);                                        \
        return (T)fpe_round_f64_step(K, env, u);                                                   \
    }
FPE_FOR_FORMATS(DEFINE)
