/* elem/round.h: rounding an exact sum or product once, host and device.
 *
 * The elementwise kernels of both backends need "the exact value of a + b
 * (or a * b), rounded once to format f in mode m": an fp16 weight plus an
 * fp32 update (O3), a bias added to an fp16 activation, an fp16 GEMM
 * accumulator plus an exact product (16F).  These functions give it with
 * the emulator's own rounding (fpe_from_f64_k), so every backend and the
 * emulator agree bit for bit.
 *
 * Operands are doubles holding values that are exact in binary64 and far
 * from its range limits: fp32/fp16/bf16 values and products of two of them.
 * Build them from bits (ak_elem_value), not by a hardware conversion, when
 * they may be NaNs: GPU arithmetic and conversions need not keep payloads.
 */
#ifndef AMPSCOPE_KERNELS_ELEM_ROUND_H
#define AMPSCOPE_KERNELS_ELEM_ROUND_H

#include "fpe_ops.h"

/* The environment of element i of an operation that rounds as r says:
 * fpe_env_default() with r's mode, seed and stream and sr_index
 * r.index + i (kernels.h, ak_rounding). */
FPE_INLINE fpe_env ak_elem_env(fpe_round mode, uint64_t seed, uint32_t stream, uint64_t index)
{
    fpe_env env = fpe_env_default();
    env.round = (uint8_t)mode;
    env.sr_seed = seed;
    env.sr_stream = stream;
    env.sr_index = index;
    return env;
}

/* The result of a sum or product with a NaN operand, decided from the
 * operands' bits rather than by the FPU (the host keeps payloads, the GPU
 * gives a canonical NaN, so the FPU's NaN would differ between backends).
 * As the emulator's operations (x86 rule): the first NaN operand wins,
 * quieted, and a signaling NaN operand raises invalid. */
FPE_INLINE bool ak_f64_is_snan(double x)
{
    const uint64_t u = fpe_f64_bits(x);
    return (u & 0x7FF0000000000000ull) == 0x7FF0000000000000ull && (u & 0x000FFFFFFFFFFFFFull) &&
           !(u & 0x0008000000000000ull);
}
FPE_INLINE uint32_t ak_round_nan(fpe_format_id f, fpe_env *env, double a, double b)
{
    if (ak_f64_is_snan(a) || ak_f64_is_snan(b)) env->flags |= FPE_FLAG_INVALID;
    return fpe_from_f64_k(f, env, a != a ? a : b); /* quiets, keeps the payload's top bits */
}
FPE_INLINE bool ak_f64_is_inf(double x) { return (fpe_f64_bits(x) << 1) == 0xFFE0000000000000ull; }

/* a + b rounded once to f.  TwoSum gives s = RN(a + b) and the exact error
 * e; when e != 0 the sum is replaced by its round-to-odd to 53 bits (the
 * truncation toward zero with the last bit set), which rounds to any
 * precision p <= 51 exactly as the exact sum would, in every IEEE mode
 * (Boldo & Melquiond, "When double rounding is odd", 2005) and, for
 * p + 32 <= 53 (fp16, bf16), in the stochastic modes too: the 32 bits they
 * read below the last kept bit are all exact.  For an fp32 result in a
 * stochastic mode the probability is resolved to 2^-29 ulp instead of 2^-32.
 * Special operands are decided here, as IEEE 754 says, not by the FPU:
 * NaNs as ak_round_nan, inf - inf invalid, and an exact zero sum is +0
 * (-0 rounding down) unless both operands are zeros of the same sign. */
FPE_INLINE uint32_t ak_round_sum(fpe_format_id f, fpe_env *env, double a, double b)
{
    if (a != a || b != b) return ak_round_nan(f, env, a, b);
    const bool sa = fpe_f64_bits(a) >> 63, sb = fpe_f64_bits(b) >> 63;
    if (ak_f64_is_inf(a) || ak_f64_is_inf(b)) {
        if (ak_f64_is_inf(a) && ak_f64_is_inf(b) && sa != sb) return fpe_invalid(f, env);
        return ((ak_f64_is_inf(a) ? sa : sb) ? fk_sign(f) : 0) | fk_inf(f);
    }
    const double s = a + b;
    if (s == 0.0) return sa == sb ? (sa ? fk_sign(f) : 0) : fpe_exact_zero_sum(f, env);
    const double bv = s - a;
    const double av = s - bv;
    const double e = (a - av) + (b - bv); /* exact: a + b = s + e */
    if (e == 0.0) return fpe_from_f64_k(f, env, s);
    uint64_t u = fpe_f64_bits(s);
    /* |exact| < |s| when e points toward zero: truncating steps s down one ulp */
    if ((e < 0.0) != (s < 0.0)) u -= 1;
    u |= 1; /* round to odd: inexact, so the last bit is set */
    return fpe_from_f64_k(f, env, fpe_f64_from_bits(u));
}

/* a * b rounded once to f: the product of two values of at most 26
 * significant bits each (fp32 x fp32: 24 + 24) is exact in binary64.
 * NaNs as ak_round_nan; 0 * inf is invalid. */
FPE_INLINE uint32_t ak_round_product(fpe_format_id f, fpe_env *env, double a, double b)
{
    if (a != a || b != b) return ak_round_nan(f, env, a, b);
    if ((ak_f64_is_inf(a) && b == 0.0) || (ak_f64_is_inf(b) && a == 0.0))
        return fpe_invalid(f, env);
    return fpe_from_f64_k(f, env, a * b);
}

/* The value of a stored element (fp16/bf16 pattern or fp32 bits) as a double. */
FPE_INLINE double ak_elem_value(fpe_format_id f, uint32_t bits)
{
    fpe_env env = fpe_env_default();
    return fpe_to_f64_k(f, &env, bits);
}

/* ---- elements in memory: bit patterns, fp16/bf16 in the low 16 bits ---- */
FPE_INLINE uint32_t ak_f32_bits(float f) { return fpe_f32_bits(f); }
FPE_INLINE float ak_f32_from_bits(uint32_t u) { return fpe_f32_from_bits(u); }

/* Element i of an array of format f, as bits. */
FPE_INLINE uint32_t ak_load_bits(fpe_format_id f, const void *p, size_t i)
{
    return f == FPE_FMT_F32 ? ((const uint32_t *)p)[i] : ((const uint16_t *)p)[i];
}

FPE_INLINE void ak_store_bits(fpe_format_id f, void *p, size_t i, uint32_t bits)
{
    if (f == FPE_FMT_F32)
        ((uint32_t *)p)[i] = bits;
    else
        ((uint16_t *)p)[i] = (uint16_t)bits;
}

/* Element i of an array of format f, as its exact double value. */
FPE_INLINE double ak_load_value(fpe_format_id f, const void *p, size_t i)
{
    return ak_elem_value(f, ak_load_bits(f, p, i));
}

#endif
