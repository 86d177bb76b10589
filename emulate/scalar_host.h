/* scalar_host.h: scalar operations on the host's instructions (x86-64; add.c, mul.c, div.c,
 * sqrt.c, and fp32's mulAdd.c).
 *
 * fp16 on F16C: vcvtph2ps widens any fp16 operand exactly to binary32 (subnormals too), and
 * vcvtps2ph rounds binary32 to fp16 in the mode of its immediate (the MXCSR's rounding control,
 * FTZ and DAZ play no part): near_even, minMag, min and max; near_maxMag and odd are made from
 * minMag (F16C_ROUND).  bf16 and fp32: cvtss2sd widens an operand exactly to binary64 (a
 * binary32 subnormal too, unless the host's MXCSR has DAZ: then a product, quotient or root is
 * a zero, an infinity or a NaN and leaves the path; bf16 and fp32 add take no subnormal
 * operand and mulAdd checks the MXCSR), and the binary64 result is rounded by its bits, a bias and
 * a truncation chosen per mode at compile time (host_round_b64); fp32 mulAdd rounds the
 * round-to-odd sum at 53 bits (host_odd_sum_b64).
 *
 * An operation takes these paths only for a result that is normal and cannot overflow in the
 * format (fp16: 2^-14 <= |result| < 2^15, bf16 and fp32: 2^-126 <= |result| < 2^127), where
 * inexact is the only flag, and only in the six deterministic modes without DAZ (a subnormal
 * operand is exact here); every other case, and the stochastic modes, take the portable code.
 * The host paths are allowed or not as the array paths' (host.h: fpe_host_scalar_state;
 * AMPSCOPE_EMU_PORTABLE=1 keeps the portable code). */
#ifndef AMPSCOPE_EMULATE_SCALAR_HOST_H
#define AMPSCOPE_EMULATE_SCALAR_HOST_H

#include "fpe.h"
#include "host.h"

#if defined(__x86_64__) && defined(__GNUC__) /* and clang */
#define FPE_SCALAR_HOST 1
#include <immintrin.h>

#define F16C_TARGET __attribute__((target("avx,f16c")))

/* The fp16 bits of binary32 r (2^-14 <= |r| < 2^15) rounded in one of the six deterministic
 * modes, with inexact when they differ from r, and the random index stepped.  vcvtps2ph rounds
 * in the mode of its immediate IMM; near_maxMag is minMag of |r| plus half an fp16 ulp (HALF:
 * 2^12 binary32 units of the 13 bits vcvtps2ph drops; a carry into the exponent is the rounding
 * up to the next binade), and odd is minMag with the last bit set when inexact (ODD). */
#define F16C_ROUND(env, r, IMM, HALF, ODD)                                                         \
    __extension__({                                                                                \
        const __m128 r_ = (r);                                                                     \
        const __m128 t_ =                                                                          \
            (HALF) ? _mm_castsi128_ps(_mm_add_epi32(_mm_castps_si128(r_), _mm_set1_epi32(0x1000))) \
                   : r_;                                                                           \
        const __m128i h_ = _mm_cvtps_ph(t_, (IMM));                                                \
        const int inexact_ = _mm_comineq_ss(_mm_cvtph_ps(h_), r_);                                 \
        (env)->flags |= inexact_ ? FPE_FLAG_INEXACT : 0;                                           \
        (env)->sr_index++;                                                                         \
        (uint16_t)(_mm_cvtsi128_si32(h_) | ((ODD) ? inexact_ : 0));                                \
    })

/* Whether binary32 bits u lie in [2^-14, 2^15) in magnitude (false for zeros, infinities,
 * NaNs). */
static inline bool f16c_in_range_f32(uint32_t u)
{
    return (u & 0x7FFFFFFFu) - (113u << 23) < (29u << 23);
}

/* Whether binary64 bits u lie in [2^EMIN, 2^EMAX) in magnitude (false for zeros, infinities,
 * NaNs); EMIN < EMAX are constants within binary64's normal range. */
static inline __attribute__((always_inline)) bool host_b64_between(uint64_t u, int emin, int emax)
{
    return (u & 0x7FFFFFFFFFFFFFFFull) - ((uint64_t)(1023 + emin) << 52) <
           ((uint64_t)(emax - emin) << 52);
}

/* The same as f16c_in_range_f32 for binary64 bits u */
static inline bool f16c_in_range_f64(uint64_t u) { return host_b64_between(u, -14, 15); }

/* Binary64 bits u (in range) rounded to odd at binary32's 24 bits: truncated, the last bit set
 * when a discarded bit is. */
static inline __m128 f16c_odd_f32(uint64_t u)
{
    const uint64_t mag = u & 0x7FFFFFFFFFFFFFFFull;
    const uint32_t r = (uint32_t)((mag - ((uint64_t)(1023 - 127) << 52)) >> 29) |
                       (uint32_t)((mag & ((1u << 29) - 1)) != 0) |
                       (uint32_t)(u >> 32 & 0x80000000u);
    return _mm_castsi128_ps(_mm_cvtsi32_si128((int)r));
}

/* An fp16 operand exactly as binary32, and as binary64 (an fp16 subnormal is a binary32
 * normal, which the MXCSR's DAZ leaves alone) */
#define F16C_WIDEN(h)     _mm_cvtph_ps(_mm_cvtsi32_si128(h))
#define F16C_WIDEN_B64(h) _mm_cvtss_sd(_mm_setzero_pd(), F16C_WIDEN(h))

/* The public function NAME returning T (PARAMS: its parameters; CALL: the same names):
 * KERNEL##_rne, _rna, _rz, _rd, _ru, _ro in the six deterministic modes where the host paths apply
 * and the host has what NEED names (FPE_HOST_SCALAR_*, host.h), PORTABLE otherwise.  The state is
 * read at the first call after a change: a tail call, so that no path needs a stack frame. */
#define HOST_PUBLIC(NEED, T, NAME, PARAMS, CALL, KERNEL, PORTABLE)                                 \
    T NAME PARAMS;                                                                                 \
    static __attribute__((noinline)) T KERNEL##_first PARAMS                                       \
    {                                                                                              \
        fpe_host_scalar_read();                                                                    \
        return NAME CALL;                                                                          \
    }                                                                                              \
    T NAME PARAMS                                                                                  \
    {                                                                                              \
        const int hw = atomic_load_explicit(&fpe_host_scalar_state, memory_order_relaxed);         \
        if (hw > 0 && (hw & (NEED)) && !env->daz) switch (env->round) {                            \
            case FPE_RNE: return KERNEL##_rne CALL;                                                \
            case FPE_RNA: return KERNEL##_rna CALL;                                                \
            case FPE_RZ: return KERNEL##_rz CALL;                                                  \
            case FPE_RD: return KERNEL##_rd CALL;                                                  \
            case FPE_RU: return KERNEL##_ru CALL;                                                  \
            case FPE_RO: return KERNEL##_ro CALL;                                                  \
            default: break;                                                                        \
            }                                                                                      \
        if (hw < 0) return KERNEL##_first CALL;                                                    \
        return PORTABLE CALL;                                                                      \
    }

/* The six kernels of one operation from DEFINE_ONE(NAME, IMM, HALF, ODD) (F16C_ROUND) */
#define F16C_KERNELS(DEFINE_ONE, NAME)                                                             \
    DEFINE_ONE(NAME##_rne, _MM_FROUND_TO_NEAREST_INT, 0, 0)                                        \
    DEFINE_ONE(NAME##_rna, _MM_FROUND_TO_ZERO, 1, 0)                                               \
    DEFINE_ONE(NAME##_rz, _MM_FROUND_TO_ZERO, 0, 0)                                                \
    DEFINE_ONE(NAME##_rd, _MM_FROUND_TO_NEG_INF, 0, 0)                                             \
    DEFINE_ONE(NAME##_ru, _MM_FROUND_TO_POS_INF, 0, 0)                                             \
    DEFINE_ONE(NAME##_ro, _MM_FROUND_TO_ZERO, 0, 1)

/* ---- bf16 and fp32 through binary64 ---- */

/* An operand exactly as binary64 (cvtss2sd) */
#define HOST_WIDEN_BF16(a)                                                                         \
    _mm_cvtss_sd(_mm_setzero_pd(), _mm_castsi128_ps(_mm_cvtsi32_si128((int)((uint32_t)(a) << 16))))
#define HOST_WIDEN_F32(a)                                                                          \
    _mm_cvtss_sd(_mm_setzero_pd(), _mm_castsi128_ps(_mm_cvtsi32_si128((int)(a))))

/* The bits of binary64 lane 0 */
#define HOST_BITS_B64(x) ((uint64_t)_mm_cvtsi128_si64(_mm_castpd_si128(x)))

/* Whether binary64 bits u lie in [2^-126, 2^127) in magnitude (false for zeros, infinities,
 * NaNs): normal and not overflowing in bf16 and fp32, in every mode. */
static inline bool host_in_range_b64(uint64_t u) { return host_b64_between(u, -126, 127); }

/* Binary64 bits u (in range) rounded to P bits (8: bf16, 24: fp32) in MODE, a compile-time
 * constant: the magnitude plus the mode's bias below the kept bits, truncated (a carry into
 * the exponent is the rounding up to the next binade), with the exponent rebiased; odd sets the
 * last bit when inexact.  Inexact when a discarded bit is set; the random index stepped.  It is
 * the correct rounding of the exact result x wherever u is x or lies on the same side as x of
 * every number of P + 1 bits and equals it when x does (fpe_div_f64, fpe_sqrt_f64), as
 * fpe_round_f64_fast's. */
static inline __attribute__((always_inline)) uint32_t host_round_b64(fpe_env *env, uint64_t u,
                                                                     int p, fpe_round mode)
{
    const int s = 53 - p; /* discarded bits */
    const uint64_t mask = ((uint64_t)1 << s) - 1;
    const uint64_t mag = u & 0x7FFFFFFFFFFFFFFFull;
    const bool neg = u >> 63;
    const uint64_t low = mag & mask;
    uint64_t bias = 0;
    if (mode == FPE_RNE) bias = (mask >> 1) + (mag >> s & 1);
    if (mode == FPE_RNA) bias = (uint64_t)1 << (s - 1);
    if (mode == FPE_RU && !neg) bias = mask;
    if (mode == FPE_RD && neg) bias = mask;
    uint32_t r = (uint32_t)(((mag + bias) >> s) - ((uint64_t)(1023 - 127) << (p - 1)));
    if (mode == FPE_RO) r |= low != 0;
    env->flags |= low ? FPE_FLAG_INEXACT : 0;
    env->sr_index++;
    return r | (uint32_t)neg << (p + 7);
}

/* Whether the MXCSR rounds to nearest without FTZ or DAZ, as host_odd_sum_b64 needs */
#define HOST_MXCSR_NEAREST() ((_mm_getcsr() & 0xE040u) == 0) /* RC, FTZ, DAZ */

/* The bits of p + z rounded to odd at 53 bits, for binary64 p and z (in round-to-nearest: the
 * caller checks HOST_MXCSR_NEAREST) whose exact sum neither overflows nor lies strictly between
 * zero and 2^-1022 in magnitude (a nonzero sum of binary32 values is a multiple of 2^-149, of a
 * binary32 product and value one of 2^-298).  s = p + z rounded to nearest and its error
 * e = p + z - s, exact (TwoSum, Knuth: six operations); the result is s when e is zero, else
 * s's magnitude, or the one below it when e points toward zero, with the last bit set.  A
 * round-to-odd at 53 >= 24 + 2 bits rounds to bf16 and fp32 as p + z does in every mode (Boldo
 * and Melquiond). */
static inline uint64_t host_odd_sum_b64(__m128d p, __m128d z)
{
    const __m128d s = _mm_add_sd(p, z), t = _mm_sub_sd(s, p);
    const __m128d e = _mm_add_sd(_mm_sub_sd(p, _mm_sub_sd(s, t)), _mm_sub_sd(z, t));
    const uint64_t u = HOST_BITS_B64(s), ue = HOST_BITS_B64(e);
    return ue << 1 ? ((ue ^ u) >> 63 ? u - 1 : u) | 1 : u;
}

/* The six kernels of one bf16 or fp32 operation from DEFINE_ONE(NAME, MODE, ...) (MODE for
 * host_round_b64; the rest passed on) */
#define HOST_KERNELS_B64(DEFINE_ONE, NAME, ...)                                                    \
    DEFINE_ONE(NAME##_rne, FPE_RNE, __VA_ARGS__)                                                   \
    DEFINE_ONE(NAME##_rna, FPE_RNA, __VA_ARGS__)                                                   \
    DEFINE_ONE(NAME##_rz, FPE_RZ, __VA_ARGS__)                                                     \
    DEFINE_ONE(NAME##_rd, FPE_RD, __VA_ARGS__)                                                     \
    DEFINE_ONE(NAME##_ru, FPE_RU, __VA_ARGS__)                                                     \
    DEFINE_ONE(NAME##_ro, FPE_RO, __VA_ARGS__)

/* One bf16 or fp32 operation OP of format F (type T, P bits; PARAMS its parameters, CALL the
 * same names) through binary64: RESULT the binary64 result (a __m128d) of the widened operands,
 * rounded by host_round_b64 in each mode when it lies in [2^-126, 2^127); outside, the portable
 * code F##_##OP##_portable, called out of line. */
#define HOST_B64_KERNEL(NAME, MODE, OP, F, T, P, PARAMS, CALL, RESULT)                             \
    static T NAME PARAMS                                                                           \
    {                                                                                              \
        const uint64_t r = HOST_BITS_B64(RESULT);                                                  \
        if (!host_in_range_b64(r)) return F##_##OP##_slow CALL;                                    \
        return (T)host_round_b64(env, r, P, MODE);                                                 \
    }
#define HOST_B64_OPERATION(OP, F, T, P, PARAMS, CALL, RESULT)                                      \
    static __attribute__((noinline)) T F##_##OP##_slow PARAMS { return F##_##OP##_portable CALL; } \
    HOST_KERNELS_B64(HOST_B64_KERNEL, F##_host_##OP, OP, F, T, P, PARAMS, CALL, RESULT)            \
    HOST_PUBLIC(FPE_HOST_SCALAR_B64, T, fpe_##F##_##OP, PARAMS, CALL, F##_host_##OP,               \
                F##_##OP##_portable)
#endif

#endif
