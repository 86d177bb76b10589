/* div.c: fpe_<fmt>_div (the arithmetic is in ops/div.h), and on the host's instructions
 * (scalar_host.h). */
#include "fpe_ops.h"
#include "scalar_host.h"

/* The general path and the index step, out of line (see add.c). */
static __attribute__((noinline)) uint32_t div_general_next(fpe_format_id f, fpe_env *env,
                                                           uint32_t a, uint32_t b)
{
    FPE_NEXT_INDEX(env, fpe_div_general(f, env, a, b));
}

#define DEFINE_PORTABLE(F, T, K)                                                                   \
    static inline __attribute__((always_inline)) T F##_div_portable(fpe_env *env, T a, T b)        \
    {                                                                                              \
        if (!fpe_div_fast_ok(K, env, a, b)) return (T)div_general_next(K, env, a, b);              \
        return (T)fpe_round_f64_step(K, env, fpe_div_f64(K, env, a, b));                           \
    }
FPE_FOR_FORMATS(DEFINE_PORTABLE)

#if FPE_SCALAR_HOST
/* fp16 on F16C (scalar_host.h): the hardware's binary64 quotient q of the widened operands,
 * rounded to odd at 24 bits, then by vcvtps2ph.  That is the correct rounding of x / y: q lies
 * on the same side as x / y of every number of 25 bits, and is it when x / y is (the proof at
 * fpe_div_f64 with p = 24: the operands are binary32 numbers, subnormal fp16 ones too), so its
 * round-to-odd is x / y's; and a round-to-odd at 24 >= 11 + 2 bits rounds to fp16 as x / y
 * does in every mode (Boldo and Melquiond).  The range [2^-14, 2^15) is read on q: its ends
 * are such numbers.  A zero, infinite or NaN operand or quotient takes the general path. */
#define HW_DIV(NAME, IMM, HALF, ODD)                                                               \
    F16C_TARGET static uint16_t NAME(fpe_env *env, uint16_t a, uint16_t b)                         \
    {                                                                                              \
        const __m128d x = F16C_WIDEN_B64(a);                                                       \
        const __m128d y = F16C_WIDEN_B64(b);                                                       \
        const uint64_t q = HOST_BITS_B64(_mm_div_sd(x, y));                                        \
        if (!f16c_in_range_f64(q)) return (uint16_t)div_general_next(FPE_FMT_F16, env, a, b);      \
        return F16C_ROUND(env, f16c_odd_f32(q), IMM, HALF, ODD);                                   \
    }
F16C_KERNELS(HW_DIV, hw_div)
HOST_PUBLIC(FPE_HOST_SCALAR_F16C, uint16_t, fpe_f16_div, (fpe_env * env, uint16_t a, uint16_t b),
            (env, a, b), hw_div, f16_div_portable)

/* bf16 and fp32 (scalar_host.h): the hardware's binary64 quotient of the widened operands,
 * rounded by its bits: for p <= 24 it lies on the same side as x / y of every number of p + 1
 * bits and is it when x / y is (the proof at fpe_div_f64), which is all the rounding reads;
 * the ends of [2^-126, 2^127) are such numbers.  A quotient outside takes the portable code. */
HOST_B64_OPERATION(div, bf16, uint16_t, 8, (fpe_env * env, uint16_t a, uint16_t b), (env, a, b),
                   _mm_div_sd(HOST_WIDEN_BF16(a), HOST_WIDEN_BF16(b)))
HOST_B64_OPERATION(div, f32, uint32_t, 24, (fpe_env * env, uint32_t a, uint32_t b), (env, a, b),
                   _mm_div_sd(HOST_WIDEN_F32(a), HOST_WIDEN_F32(b)))
#else
uint16_t fpe_f16_div(fpe_env *env, uint16_t a, uint16_t b) { return f16_div_portable(env, a, b); }
uint16_t fpe_bf16_div(fpe_env *env, uint16_t a, uint16_t b) { return bf16_div_portable(env, a, b); }
uint32_t fpe_f32_div(fpe_env *env, uint32_t a, uint32_t b) { return f32_div_portable(env, a, b); }
#endif
