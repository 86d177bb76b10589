/* mul.c: fpe_<fmt>_mul (the arithmetic is in ops/mul.h), and on the host's instructions
 * (scalar_host.h). */
#include "fpe_ops.h"
#include "scalar_host.h"

/* The general path and the index step, out of line (see add.c). */
static __attribute__((noinline)) uint32_t mul_general_next(fpe_format_id f, fpe_env *env,
                                                           uint32_t a, uint32_t b)
{
    FPE_NEXT_INDEX(env, fpe_mul_general(f, env, a, b));
}

#define DEFINE_PORTABLE(F, T, K)                                                                   \
    static inline __attribute__((always_inline)) T F##_mul_portable(fpe_env *env, T a, T b)        \
    {                                                                                              \
        uint32_t r;                                                                                \
        if (fpe_mul_fast(K, env, a, b, &r)) {                                                      \
            env->sr_index++;                                                                       \
            return (T)r;                                                                           \
        }                                                                                          \
        return (T)mul_general_next(K, env, a, b);                                                  \
    }
FPE_FOR_FORMATS(DEFINE_PORTABLE)

#if FPE_SCALAR_HOST
/* fp16 on F16C (scalar_host.h): the product of the widened operands is exact in binary32
 * (11 + 11 bits, magnitudes 2^-48 .. 2^32), rounded once; a zero, infinite or NaN product and
 * any other outside [2^-14, 2^15) take the general path. */
#define HW_MUL(NAME, IMM, HALF, ODD)                                                               \
    F16C_TARGET static uint16_t NAME(fpe_env *env, uint16_t a, uint16_t b)                         \
    {                                                                                              \
        const __m128 p = _mm_mul_ss(F16C_WIDEN(a), F16C_WIDEN(b));                                 \
        if (!f16c_in_range_f32((uint32_t)_mm_cvtsi128_si32(_mm_castps_si128(p))))                  \
            return (uint16_t)mul_general_next(FPE_FMT_F16, env, a, b);                             \
        return F16C_ROUND(env, p, IMM, HALF, ODD);                                                 \
    }
F16C_KERNELS(HW_MUL, hw_mul)
HOST_PUBLIC(FPE_HOST_SCALAR_F16C, uint16_t, fpe_f16_mul, (fpe_env * env, uint16_t a, uint16_t b),
            (env, a, b), hw_mul, f16_mul_portable)

/* bf16 and fp32 (scalar_host.h): the product of the widened operands is exact in binary64
 * (at most 24 + 24 bits, magnitudes 2^-298 .. 2^256), rounded once by its bits; a product
 * outside [2^-126, 2^127) takes the portable code. */
HOST_B64_OPERATION(mul, bf16, uint16_t, 8, (fpe_env * env, uint16_t a, uint16_t b), (env, a, b),
                   _mm_mul_sd(HOST_WIDEN_BF16(a), HOST_WIDEN_BF16(b)))
HOST_B64_OPERATION(mul, f32, uint32_t, 24, (fpe_env * env, uint32_t a, uint32_t b), (env, a, b),
                   _mm_mul_sd(HOST_WIDEN_F32(a), HOST_WIDEN_F32(b)))
#else
uint16_t fpe_f16_mul(fpe_env *env, uint16_t a, uint16_t b) { return f16_mul_portable(env, a, b); }
uint16_t fpe_bf16_mul(fpe_env *env, uint16_t a, uint16_t b) { return bf16_mul_portable(env, a, b); }
uint32_t fpe_f32_mul(fpe_env *env, uint32_t a, uint32_t b) { return f32_mul_portable(env, a, b); }
#endif
