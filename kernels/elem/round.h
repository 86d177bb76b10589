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

/* a + b rounded once to f.  TwoSum gives s = RN(a + b) and the exact error
 * e; when e != 0 the sum is replaced by its round-to-odd to 53 bits (the
 * truncation toward zero with the last bit set), which rounds to any
 * precision p <= 51 exactly as the exact sum would, in every IEEE mode
 * (Boldo & Melquiond, "When double rounding is odd", 2005) and, for
 * p + 32 <= 53 (fp16, bf16), in the stochastic modes too: the 32 bits they
 * read below the last kept bit are all exact.  For an fp32 result in a
 * stochastic mode the probability is resolved to 2^-29 ulp instead of 2^-32. */
FPE_INLINE uint32_t ak_round_sum(fpe_format_id f, fpe_env *env, double a, double b)
{
    const double s = a + b;
    const double bv = s - a;
    const double av = s - bv;
    const double e = (a - av) + (b - bv); /* exact: a + b = s + e */
    if (e == 0.0 || s != s || s - s != 0.0) return fpe_from_f64_k(f, env, s);
    uint64_t u = fpe_f64_bits(s);
    /* |exact| < |s| when e points toward zero: truncating steps s down one ulp */
    if ((e < 0.0) != (s < 0.0)) u -= 1;
    u |= 1; /* round to odd: inexact, so the last bit is set */
    return fpe_from_f64_k(f, env, fpe_f64_from_bits(u));
}

/* a * b rounded once to f: the product of two values of at most 26
 * significant bits each (fp32 x fp32: 24 + 24) is exact in binary64. */
FPE_INLINE uint32_t ak_round_product(fpe_format_id f, fpe_env *env, double a, double b)
{
    return fpe_from_f64_k(f, env, a * b);
}

/* The value of a stored element (fp16/bf16 pattern or fp32 bits) as a double. */
FPE_INLINE double ak_elem_value(fpe_format_id f, uint32_t bits)
{
    fpe_env env = fpe_env_default();
    return fpe_to_f64_k(f, &env, bits);
}

#endif
