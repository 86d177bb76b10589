/* div.c: fpe_<fmt>_div (the arithmetic is in ops/div.h). */
#include "fpe_ops.h"

/* The general path and the index step, out of line (see add.c). */
static __attribute__((noinline)) uint32_t div_general_next(fpe_format_id f, fpe_env *env,
                                                           uint32_t a, uint32_t b)
{
    FPE_NEXT_INDEX(env, fpe_div_general(f, env, a, b));
}

#define DEFINE(F, T, K)                                                                            \
    T fpe_##F##_div(fpe_env *env, T a, T b)                                                        \
    {                                                                                              \
        if (!fpe_div_fast_ok(K, env, a, b)) return (T)div_general_next(K, env, a, b);              \
        return (T)fpe_round_f64_step(K, env, fpe_div_f64(K, env, a, b));                           \
    }
FPE_FOR_FORMATS(DEFINE)
