/* fpe_ops.h: every operation as a forced-inline generic over the formats,
 * host and device.  kernels/ includes this to round with the very same code
 * on the GPU; the public fpe_<fmt>_<op> functions (one .c file per operation)
 * are thin instantiations. */
#ifndef AMPSCOPE_FPE_OPS_H
#define AMPSCOPE_FPE_OPS_H
#include "fpe_internal.h"
#include "ops/add.h"
#include "ops/compare.h"
#include "ops/convert.h"
#include "ops/div.h"
#include "ops/mulAdd.h"
#include "ops/mul.h"
#include "ops/roundToInt.h"
#include "ops/sqrt.h"

/* Every public rounding operation consumes one stochastic-rounding index,
 * whether or not it rounded. */
#define FPE_NEXT_INDEX(env, expr)                                                                  \
    do {                                                                                           \
        __typeof__(expr) fpe_result_ = (expr);                                                     \
        (env)->sr_index++;                                                                         \
        return fpe_result_;                                                                        \
    } while (0)

/* The slow side of fpe_round_f64_odd and the index step, out of line, and the public
 * functions' tail that calls it: their fast paths then need no stack frame (div.c, sqrt.c,
 * mulAdd.c). */
FPE_NOINLINE uint32_t fpe_round_f64_next(fpe_format_id f, fpe_env *env, uint64_t u)
{
    FPE_NEXT_INDEX(env, fpe_round_f64_pack(f, env, u));
}
FPE_INLINE uint32_t fpe_round_f64_step(fpe_format_id f, fpe_env *env, uint64_t u)
{
    uint32_t r;
    if (fpe_round_f64_fast(f, env, u, &r)) {
        env->sr_index++;
        return r;
    }
    return fpe_round_f64_next(f, env, u);
}

/* Instantiate a public wrapper for each of the three formats. */
#define FPE_FOR_FORMATS(M)                                                                         \
    M(f16, uint16_t, FPE_FMT_F16) M(bf16, uint16_t, FPE_FMT_BF16) M(f32, uint32_t, FPE_FMT_F32)
#endif
