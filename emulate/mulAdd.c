/* mulAdd.c: fpe_<fmt>_mulAdd, the fused multiply-add (fma: fpe_<fmt>_fma is
 * the same function), a * b + c rounded once (ops/mulAdd.h), and fp32's on the host's
 * instructions (scalar_host.h). */
#include "fpe_ops.h"
#include "scalar_host.h"

/* The general path and the index step, out of line (see add.c). */
static __attribute__((noinline)) uint32_t mulAdd_general_next(fpe_format_id f, fpe_env *env,
                                                              uint32_t a, uint32_t b, uint32_t c)
{
    FPE_NEXT_INDEX(env, fpe_mulAdd_general(f, env, a, b, c));
}

#define DEFINE_PORTABLE(F, T, K)                                                                   \
    static inline __attribute__((always_inline))                                                   \
    T F##_mulAdd_portable(fpe_env *env, T a, T b, T c)                                             \
    {                                                                                              \
        uint64_t u;                                                                                \
        if (!fpe_mulAdd_fast_ok(K, env, a, b, c) || !fpe_mulAdd_odd_f64(K, a, b, c, &u))           \
            return (T)mulAdd_general_next(K, env, a, b, c);                                        \
        return (T)fpe_round_f64_step(K, env, u);                                                   \
    }
FPE_FOR_FORMATS(DEFINE_PORTABLE)

uint16_t fpe_f16_mulAdd(fpe_env *env, uint16_t a, uint16_t b, uint16_t c)
{
    return f16_mulAdd_portable(env, a, b, c);
}
uint16_t fpe_bf16_mulAdd(fpe_env *env, uint16_t a, uint16_t b, uint16_t c)
{
    return bf16_mulAdd_portable(env, a, b, c);
}

#if FPE_SCALAR_HOST
/* fp32 (scalar_host.h): the product of the widened operands is exact in binary64 (48 bits),
 * and c added to it rounded to odd at 53 bits (host_odd_sum_b64), which rounds to fp32 as
 * a * b + c does.  The MXCSR must be in round-to-nearest without FTZ or DAZ (else the portable
 * code); a round-to-odd value outside [2^-126, 2^127), which includes every zero, infinite or
 * NaN case, takes the portable code. */
static __attribute__((noinline)) uint32_t f32_mulAdd_slow(fpe_env *env, uint32_t a, uint32_t b,
                                                          uint32_t c)
{
    return f32_mulAdd_portable(env, a, b, c);
}
#define B64_FMA(NAME, MODE, ...)                                                                   \
    static uint32_t NAME(fpe_env *env, uint32_t a, uint32_t b, uint32_t c)                         \
    {                                                                                              \
        if (!HOST_MXCSR_NEAREST()) return f32_mulAdd_slow(env, a, b, c);                           \
        const uint64_t u =                                                                         \
            host_odd_sum_b64(_mm_mul_sd(HOST_WIDEN_F32(a), HOST_WIDEN_F32(b)), HOST_WIDEN_F32(c)); \
        if (!host_in_range_b64(u)) return f32_mulAdd_slow(env, a, b, c);                           \
        return host_round_b64(env, u, 24, MODE);                                                   \
    }
HOST_KERNELS_B64(B64_FMA, f32_host_fma, 0)
HOST_PUBLIC(FPE_HOST_SCALAR_B64, uint32_t, fpe_f32_mulAdd,
            (fpe_env * env, uint32_t a, uint32_t b, uint32_t c), (env, a, b, c), f32_host_fma,
            f32_mulAdd_portable)
#else
uint32_t fpe_f32_mulAdd(fpe_env *env, uint32_t a, uint32_t b, uint32_t c)
{
    return f32_mulAdd_portable(env, a, b, c);
}
#endif
