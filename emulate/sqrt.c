/* sqrt.c: fpe_<fmt>_sqrt (the arithmetic is in ops/sqrt.h). */
#include "fpe_ops.h"

/* The general path and the index step, out of line (see add.c). */
static __attribute__((noinline)) uint32_t sqrt_general_next(fpe_format_id f, fpe_env *env,
                                                            uint32_t a)
{
    FPE_NEXT_INDEX(env, fpe_sqrt_general(f, env, a));
}

#define DEFINE(F, T, K)                                                                            \
    T fpe_##F##_sqrt(fpe_env *env, T a)                                                            \
    {                                                                                              \
        if (!fpe_sqrt_fast_ok(K, env, a)) return (T)sqrt_general_next(K, env, a);                  \
        return (T)fpe_round_f64_step(K, env, fpe_sqrt_f64(K, env, a));                             \
    }
FPE_FOR_FORMATS(DEFINE)
