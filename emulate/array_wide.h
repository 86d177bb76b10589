/* array_wide.h: the second vector loop of the array arithmetic (array_ops.c), for the blocks
 * the cheap first try (array_easy.h) leaves: subnormal operands and results, zeros, overflow.
 * Eight elements at a time, the operation runs in binary32 and gives a value s that the array
 * rounding (fpe_chop_f32_to_u16, chop.c) then rounds to the format with its flags and counts,
 * in the six deterministic modes, for fp16 (every operation) and for bf16 add and sub
 * (array_wide_bf16.h has bf16 mul, div, fma and sqrt).
 *
 * s must decide every level the rounding of the exact result X reads (the kept bits, the tie,
 * exactness, the binade, the tininess thresholds before and after rounding, the overflow edge):
 * all are values of at most p + 1 bits, p = 11 (fp16) or 8 (bf16), on the format's grid.
 *   fp16 operands are multiples of 2^-24 below 2^16: binary32 normals or zero, exactly.
 *   add   s = RN(x + y) made the round-to-odd sum at 24 bits from TwoSum's error (easy_sum_odd;
 *         fp16 sums are binary32 normals or exact zeros, bf16 sums below 2^-126 are exact):
 *         rounding it to p <= 22 bits in any deterministic mode rounds X (Boldo and Melquiond,
 *         IEEE TC 2008; array_lanes.h, "odd").  A bf16 sum that overflows binary32 is marked.
 *   mul   fp16: 22 significant bits, exponent >= -48: exact.
 *   fma   x * y exact as for mul, then as add.
 *   div   fp16: the quotient Q = x / y lies in [2^-40, 2^40].  For a level t of at most p + 1
 *         bits (a result, a midpoint; on the subnormal grid when tiny) with X != t,
 *         |X - t| = |x - t y| / y, where x - t y is a nonzero multiple of 2^(Ey - 35) (t is a
 *         multiple of 2^-25 and of 2^(Et - 11), y of 2^(Ey - 10), x of 2^(Ex - 10)), so
 *         |X - t| >= 2^(Ey - 35) / 2^(Ey + 1) = 2^-36 for tiny X, and >= 2^(Et - 23) >
 *         ulp(s) / 2 = 2^(Et - 24) for normal X (the argument of array_easy.h): RN(X) is never
 *         t unless X is, nor beyond it.
 *   sqrt  fp16 roots are never tiny: array_easy.h's argument for p-bit operands holds for
 *         subnormal ones too.  The square root of a finite negative number (not -0) is the
 *         invalid operation's default NaN, given here (marks 2).
 * An exact zero sum takes its sign by the rules of IEEE 754 6.3: the hardware's (round to
 * nearest) is right but in roundTowardNegative, where x + (-x) and (+0) + (-0) are -0.
 * Elements with a NaN or infinite operand and divisions by zero are marked 1 for the scalar
 * operation; a marked element's s is +0 (no flag, nothing counted by the rounding).  The
 * rounding of s runs with DAZ off (DAZ applies to the operands, here) and the call's FTZ and
 * tininess rule, which fpe_round_pack applies to a conversion and an operation alike.  The
 * MXCSR must be in its default state (array_ops.c checks). */
#ifndef AMPSCOPE_EMULATE_ARRAY_WIDE_H
#define AMPSCOPE_EMULATE_ARRAY_WIDE_H

#include "array_easy.h"

typedef int32_t v8i __attribute__((vector_size(32)));

/* Whether this loop or array_wide_bf16.h's takes the mode: the deterministic ones. */
FPE_INLINE bool wide_applies(int mode) { return mode < FPE_SR_PROP; }

/* Whether it is this loop (fp16; bf16 add, sub) or array_wide_bf16.h's. */
FPE_INLINE bool wide_by_chop(int fmt, int op)
{
    return fmt == FPE_FMT_F16 || op == FPE_ARITH_ADD || op == FPE_ARITH_SUB;
}

/* Finite fp16/bf16 patterns (any class but NaN and infinity) as binary32 bits, exactly:
 * fp16 subnormals from their fraction as an integer times 2^-24. */
FPE_INLINE v8u wide_widen(fpe_format_id f, v8u x)
{
    if (f == FPE_FMT_BF16) return x << 16;
    const v8u mag = x & 0x7FFF;
    const v8u normal = (mag << 13) + ((uint32_t)(127 - 15) << 23);
    const v8u sub = (v8u)(__builtin_convertvector((v8i)mag, v8f) * 0x1p-24f);
    const v8u is_sub = EASY_MASK((mag >> 10) == 0);
    return ((is_sub & sub) | (~is_sub & normal)) | ((x & 0x8000) << 16);
}

/* x with DAZ applied (daz all ones or zero): a subnormal becomes a zero of its sign. */
FPE_INLINE v8u wide_daz(fpe_format_id f, v8u daz, v8u x)
{
    const v8u sub = daz & EASY_MASK(((x >> fk_fbits(f)) & fk_expfield_max(f)) == 0);
    return (sub & (x & 0x8000)) | (~sub & x);
}

/* The block's s values into s_out and marks (0 rounded by the caller, 1 the
 * scalar operation, 2 the default NaN); n a multiple of EASY_LANES.  rd: roundTowardNegative.
 * Returns the number marked 1; *invalid the number marked 2. */
FPE_INLINE size_t wide_lanes(fpe_format_id f, int op, bool rd, bool daz_on, uint16_t negate_b,
                             const uint16_t *a, const uint16_t *b, const uint16_t *c,
                             float *restrict s_out, uint8_t *restrict marks, size_t n,
                             size_t *invalid)
{
    const uint32_t top = fk_expfield_max(f), fb = (uint32_t)fk_fbits(f);
    const v8u daz = (v8u){0} - (uint32_t)daz_on;
    const v8u neg_zero = (v8u){0} + (rd ? 0x80000000u : 0);
    v8u n_hard = {0}, n_inv = {0};
    for (size_t i = 0; i < n; i += EASY_LANES) {
        const v8u x = wide_daz(f, daz, easy_load16(a + i));
        const v8u y = op == FPE_ARITH_SQRT ? x : wide_daz(f, daz, easy_load16(b + i) ^ negate_b);
        const v8u z = op == FPE_ARITH_FMA ? wide_daz(f, daz, easy_load16(c + i)) : x;
        v8u hard = EASY_MASK(((x >> fb) & top) == top) | EASY_MASK(((y >> fb) & top) == top) |
                   EASY_MASK(((z >> fb) & top) == top);
        v8u inv = {0};
        const v8f fx = (v8f)wide_widen(f, x), fy = (v8f)wide_widen(f, y);
        v8f s;
        switch (op) {
        case FPE_ARITH_MUL: s = fx * fy; break;
        case FPE_ARITH_DIV: {
            const v8u by_zero = EASY_MASK((y & 0x7FFF) == 0);
            hard |= by_zero;
            s = fx / (v8f)((by_zero & 0x3F800000u) | (~by_zero & (v8u)fy));
            break;
        }
        case FPE_ARITH_SQRT:
            inv = EASY_MASK(x > 0x8000) & ~hard; /* finite, negative, not -0 */
            for (int k = 0; k < EASY_LANES; k++)
                s[k] = __builtin_sqrtf(fx[k] < 0 ? 0.0f : fx[k]);
            s = (v8f)((v8u)s | ((v8u)fx & 0x80000000u)); /* sqrt(-0) = -0 */
            break;
        case FPE_ARITH_FMA: {
            const v8f fz = (v8f)wide_widen(f, z), prod = fx * fy;
            s = easy_sum_odd(prod, fz, prod + fz);
            const v8u pos0 = EASY_MASK((v8u)prod == 0) & EASY_MASK((v8u)fz == 0);
            s = (v8f)((v8u)s | (EASY_MASK(s == 0) & ~pos0 & neg_zero));
            break;
        }
        default: { /* add, and sub with b negated */
            const v8f sum = fx + fy;
            if (f == FPE_FMT_BF16) /* a sum beyond binary32's range (before TwoSum reads it) */
                hard |= EASY_MASK(((v8u)sum & 0x7F800000u) == 0x7F800000u);
            s = easy_sum_odd(fx, fy, sum);
            const v8u pos0 = EASY_MASK(x == 0) & EASY_MASK(y == 0);
            s = (v8f)((v8u)s | (EASY_MASK(s == 0) & ~pos0 & neg_zero));
            break;
        }
        }
        const v8u u = ~(hard | inv) & (v8u)s;
        memcpy(s_out + i, &u, sizeof u);
        const v8b m8 = __builtin_convertvector((hard & 1) | (inv & 2), v8b);
        memcpy(marks + i, &m8, sizeof m8);
        n_hard -= hard;
        n_inv -= inv;
    }
    size_t nh = 0, ni = 0;
    for (int k = 0; k < EASY_LANES; k++) {
        nh += n_hard[k];
        ni += n_inv[k];
    }
    *invalid = ni;
    return nh;
}

#endif
