/* sqrt.c: fpe_<fmt>_sqrt (the arithmetic is in ops/sqrt.h), and on the host's instructions
 * (scalar_host.h). */
#include "fpe_ops.h"
#include "scalar_host.h"

/* The general path and the index step, out of line (see add.c). */
static __attribute__((noinline)) uint32_t sqrt_general_next(fpe_format_id f, fpe_env *env,
                                                            uint32_t a)
{
    FPE_NEXT_INDEX(env, fpe_sqrt_general(f, env, a));
}

#define DEFINE_PORTABLE(F, T, K)                                                                   \
    static inline __attribute__((always_inline)) T F##_sqrt_portable(fpe_env *env, T a)            \
    {                                                                                              \
        if (!fpe_sqrt_fast_ok(K, env, a)) return (T)sqrt_general_next(K, env, a);                  \
        return (T)fpe_round_f64_step(K, env, fpe_sqrt_f64(K, env, a));                             \
    }
FPE_FOR_FORMATS(DEFINE_PORTABLE)

#if FPE_SCALAR_HOST
/* fp16 on F16C (scalar_host.h): the hardware's binary64 root s of the widened operand, rounded
 * to odd at 24 bits, then by vcvtps2ph: the correct rounding of sqrt(x) (the proof at
 * fpe_sqrt_f64 with p = 24, as for div).  Every positive finite fp16 operand, subnormal ones
 * too, has its root in [2^-12, 2^8); a zero, negative, infinite or NaN operand (s zero or NaN,
 * or infinite) takes the general path. */
#define HW_SQRT(NAME, IMM, HALF, ODD)                                                              \
    F16C_TARGET static uint16_t NAME(fpe_env *env, uint16_t a)                                     \
    {                                                                                              \
        const __m128d x = F16C_WIDEN_B64(a);                                                       \
        const uint64_t s = HOST_BITS_B64(_mm_sqrt_sd(x, x));                                       \
        if (!f16c_in_range_f64(s)) return (uint16_t)sqrt_general_next(FPE_FMT_F16, env, a);        \
        return F16C_ROUND(env, f16c_odd_f32(s), IMM, HALF, ODD);                                   \
    }
F16C_KERNELS(HW_SQRT, hw_sqrt)
HOST_PUBLIC(FPE_HOST_SCALAR_F16C, uint16_t, fpe_f16_sqrt, (fpe_env * env, uint16_t a), (env, a),
            hw_sqrt, f16_sqrt_portable)

/* bf16 and fp32 (scalar_host.h): the hardware's binary64 root of the widened operand, rounded
 * by its bits (the proof at fpe_sqrt_f64, as for div).  Every positive finite operand has its
 * root in [2^-75, 2^64); a zero, negative, infinite or NaN operand takes the portable code. */
HOST_B64_OPERATION(sqrt, bf16, uint16_t, 8, (fpe_env * env, uint16_t a), (env, a),
                   _mm_sqrt_sd(_mm_setzero_pd(), HOST_WIDEN_BF16(a)))
HOST_B64_OPERATION(sqrt, f32, uint32_t, 24, (fpe_env * env, uint32_t a), (env, a),
                   _mm_sqrt_sd(_mm_setzero_pd(), HOST_WIDEN_F32(a)))
#else
uint16_t fpe_f16_sqrt(fpe_env *env, uint16_t a) { return f16_sqrt_portable(env, a); }
uint16_t fpe_bf16_sqrt(fpe_env *env, uint16_t a) { return bf16_sqrt_portable(env, a); }
uint32_t fpe_f32_sqrt(fpe_env *env, uint32_t a) { return f32_sqrt_portable(env, a); }
#endif
