/* array_easy.h: the first, cheap try at a block of the array arithmetic (array_ops.c): eight
 * elements at a time in binary32, for normal operands with a normal, non-overflowing result
 * (add, sub, mul, fma; div but in stoch_prop; sqrt in the deterministic modes).
 *
 * The binary32 result s must carry what the rounding reads (array_lanes.h has the general
 * argument; here p' = 24):
 *   mul   fp16: 22 significant bits, exact.  bf16: 16 bits, exact when s is a normal binary32
 *         (checked: the result range below is inside binary32's normal range);
 *   add   in the six deterministic modes, s made the round-to-odd sum at 24 bits from TwoSum's
 *         error (Knuth, TAOCP 4.2.2; easy_sum_odd): rounding that to p <= 22 bits in any of
 *         them rounds the exact sum (Boldo and Melquiond, IEEE TC 2008; array_lanes.h, "odd").
 *         In the stochastic modes (32 bits below the last kept one) exact when the TwoSum
 *         error is zero (checked);
 *   fma   a * b exact as for mul (its binary32 exponent field checked), then a*b + c as add;
 *   div   RN(a / b) decides every mode but stoch_prop: the rounding reads levels up to p + 1
 *         bits, where the exact quotient is an integer or 1/B > 2^-p from one while binary32's
 *         error is at most 2^(L-25) <= 2^-p for L <= 25 - p (fp16 14, bf16 17 >= p + 1);
 *   sqrt  (positive normal a; the six deterministic modes) RN(sqrt(a)) decides too: for any
 *         (p+1)-bit t (a p-bit value or a midpoint; exponent E) that is not the root, a - t^2
 *         is a nonzero multiple of 2^(2E-2p), so |sqrt(a) - t| >= 2^(E-2p-2) >= 2^(E-24),
 *         and not equal to 2^(E-24) (a 25-bit root would square to no p-bit a), while
 *         binary32's error is at most 2^(E-24): its root lies strictly between the same
 *         (p+1)-bit neighbours as sqrt(a), or is sqrt(a).  test_array_ops runs every fp16 and
 *         bf16 input in every setting (results and flags).  The stochastic modes read 32 bits
 *         below the last kept one and take the full loop.
 * With s exact (or, for div and sqrt, deciding; for add and fma, odd), rounding s as chop.c's easy
 * loop does (a bias below the last kept bit, then truncation; stoch_prop compares the discarded
 * bits with the random word as fpe_round_increment does) is fpe_round_pack's result, and inexact is
 * its only flag: the result is normal.  Elements outside these cases are marked; the caller sends
 * the block to the full vector loop, or the few marked elements to the scalar operation.  The MXCSR
 * must be in its default state (array_ops.c checks): a flushed TwoSum error would read as exact. */
#ifndef AMPSCOPE_EMULATE_ARRAY_EASY_H
#define AMPSCOPE_EMULATE_ARRAY_EASY_H

#include <string.h>

#include "fpe_internal.h"

#if defined(__GNUC__) /* and clang */
/* the helpers below are always inlined: no vector crosses a call */
#pragma GCC diagnostic ignored "-Wpsabi"
#endif
typedef uint32_t v8u __attribute__((vector_size(32)));
typedef float v8f __attribute__((vector_size(32)));
typedef uint16_t v8h __attribute__((vector_size(16)));
typedef uint8_t v8b __attribute__((vector_size(8)));
#define EASY_LANES     8
#define EASY_MASK(cmp) ((v8u)(cmp))

FPE_INLINE v8u easy_load16(const uint16_t *p)
{
    v8h h;
    memcpy(&h, p, sizeof h);
    return __builtin_convertvector(h, v8u);
}

/* Normal fp16/bf16 patterns as binary32 bits, exactly. */
FPE_INLINE v8u easy_widen(fpe_format_id f, v8u x)
{
    if (f == FPE_FMT_BF16) return x << 16;
    return ((x & 0x8000) << 16) | (((x & 0x7FFF) << 13) + ((uint32_t)(127 - 15) << 23));
}

/* The mask of lanes holding a normal number of format f. */
FPE_INLINE v8u easy_normal(fpe_format_id f, v8u x)
{
    const uint32_t top = fk_expfield_max(f);
    return EASY_MASK(((x >> fk_fbits(f)) & top) - 1 < top - 1);
}

FPE_INLINE v8u easy_exact_sum(v8f x, v8f y, v8f s)
{
    const v8f yy = s - x, xx = s - yy;
    return EASY_MASK((x - xx) + (y - yy) == 0);
}

/* s = RN(x + y) made the round-to-odd value of x + y at 24 bits, as array_lanes.h's
 * lane_sum_odd at 53: the truncation (s, or s one step toward zero when TwoSum's error points
 * toward zero) with its last bit set when inexact. */
FPE_INLINE v8f easy_sum_odd(v8f x, v8f y, v8f s)
{
    const v8f yy = s - x, xx = s - yy;
    const v8u ue = (v8u)((x - xx) + (y - yy)), us = (v8u)s;
    const v8u inexact = EASY_MASK((ue & 0x7FFFFFFFu) != 0);
    const v8u toward_zero = inexact & ((v8u){0} - ((ue ^ us) >> 31));
    return (v8f)((us + toward_zero) | (inexact & 1)); /* + all ones: one step down */
}

/* Rounds the block's elements that qualify (see above) into res and marks the others
 * (marks[i] = 1); n a multiple of EASY_LANES.  Returns the number of inexact results;
 * *hard the number marked. */
FPE_INLINE size_t easy_lanes(fpe_format_id f, int op, int mode, uint16_t negate_b,
                             const uint16_t *a, const uint16_t *b, const uint16_t *c,
                             uint16_t *restrict res, uint8_t *restrict marks,
                             const uint32_t *restrict rnd, size_t n, size_t *hard)
{
    /* binary32 exponent fields of normal, non-overflowing results: fp16 2^-14 <= |s| < 2^15,
     * bf16 2^-126 <= |s| < 2^127 (a carry to 2^15 or 2^127 is still finite) */
    const uint32_t lo = f == FPE_FMT_F16 ? 113 : 1, hi = f == FPE_FMT_F16 ? 141 : 253;
    const uint32_t rebias = f == FPE_FMT_F16 ? (uint32_t)(127 - 15) << 23 : 0;
    const int shift = f == FPE_FMT_F16 ? 13 : 16;
    const uint32_t ulp_m1 = ((uint32_t)1 << shift) - 1, half = (uint32_t)1 << (shift - 1);
    v8u n_inexact = {0}, n_hard = {0};
    for (size_t i = 0; i < n; i += EASY_LANES) {
        const v8u x = easy_load16(a + i);
        const v8u y = op == FPE_ARITH_SQRT ? x : easy_load16(b + i) ^ negate_b;
        v8u ok = easy_normal(f, x) & easy_normal(f, y);
        const v8f fx = (v8f)easy_widen(f, x), fy = (v8f)easy_widen(f, y);
        v8f s;
        switch (op) {
        case FPE_ARITH_SQRT:
            ok &= EASY_MASK(x < 0x8000); /* positive */
            for (int k = 0; k < EASY_LANES; k++)
                s[k] = __builtin_sqrtf(fx[k]);
            break;
        case FPE_ARITH_MUL: s = fx * fy; break;
        case FPE_ARITH_DIV: s = fx / fy; break;
        case FPE_ARITH_FMA: {
            const v8u z = easy_load16(c + i);
            const v8f fz = (v8f)easy_widen(f, z), prod = fx * fy;
            const v8u pf = ((v8u)prod >> 23) & 0xFF;
            s = prod + fz;
            ok &= easy_normal(f, z) & EASY_MASK(pf - 1 < 254);
            if (mode < FPE_SR_PROP)
                s = easy_sum_odd(prod, fz, s);
            else
                ok &= easy_exact_sum(prod, fz, s);
            break;
        }
        default: /* add, sub */
            s = fx + fy;
            if (mode < FPE_SR_PROP)
                s = easy_sum_odd(fx, fy, s);
            else
                ok &= easy_exact_sum(fx, fy, s);
            break;
        }
        const v8u u = (v8u)s, sign = u >> 31, ef = (u >> 23) & 0xFF;
        ok &= EASY_MASK(ef - lo <= hi - lo);
        const v8u h = (u & 0x7FFFFFFFu) - rebias, rem = h & ulp_m1;
        v8u bias;
        switch (mode) {
        case FPE_RNE: bias = half - 1 + ((h >> shift) & 1); break;
        case FPE_RNA: bias = (v8u){0} + half; break;
        case FPE_RD: bias = (0 - sign) & ulp_m1; break;
        case FPE_RU: bias = (sign - 1) & ulp_m1; break;
        case FPE_SR_PROP: {
            v8u r32;
            memcpy(&r32, rnd + i, sizeof r32);
            bias = ulp_m1 - (r32 >> (32 - shift));
            break;
        }
        case FPE_SR_EQUAL: {
            v8u r32;
            memcpy(&r32, rnd + i, sizeof r32);
            bias = (0 - (r32 >> 31)) & ulp_m1;
            break;
        }
        default: bias = (v8u){0}; break; /* RZ, RO */
        }
        const v8u lost = EASY_MASK(rem != 0);
        v8u kept = (h + bias) >> shift;
        if (mode == FPE_RO) kept |= lost & 1;
        const v8h r16 = __builtin_convertvector((sign << 15) | kept, v8h);
        memcpy(res + i, &r16, sizeof r16);
        const v8b m8 = __builtin_convertvector(~ok & 1, v8b);
        memcpy(marks + i, &m8, sizeof m8);
        n_inexact -= lost & ok;
        n_hard -= ~ok;
    }
    size_t inexact = 0, nh = 0;
    for (int k = 0; k < EASY_LANES; k++) {
        inexact += n_inexact[k];
        nh += n_hard[k];
    }
    *hard = nh;
    return inexact;
}

#endif
