/* array_lanes.h: the vector path of the array arithmetic (array_ops.c), four elements at a time.
 *
 * An element's operands are widened to binary64 (exactly), the operation runs in binary64
 * hardware arithmetic, and the binary64 result s is rounded to fp16 or bf16 by lane_round,
 * which is fpe_round_pack written for lanes.  That is the scalar operation's result, flags
 * included, whenever s carries every bit the rounding reads: the kept bits, the bits deciding
 * a tie or an exact result, and, in stoch_prop, the 32 bits below the last kept one (so the
 * top L = p + 32 bits: 43 for fp16, 40 for bf16).  Per operation (fp16: p = 11, values are
 * multiples of 2^-24 below 2^16; bf16: p = 8, 2^-133 .. 2^128):
 *   mul   s is exact: 22 (16) significant bits, the exponent within binary64's normal range.
 *   add   fp16: exact, a multiple of 2^-24 below 2^17 has at most 41 bits.  bf16: s made
 *         odd, see "odd" below.
 *   fma   a * b is exact (as mul); s = a*b + c made odd, see "odd".
 *   div   s = RN(a / b) decides every rounding as the exact quotient X would: scale so that
 *         X lies in [2^(L-1), 2^L) with L = p + 32 (or fewer bits: subnormal results).  Then
 *         X = A / B with A an integer and B < 2^p b's significand, so X is either an integer
 *         or at least 1/B > 2^-p from one, while |s - X| <= ulp(s) / 2 = 2^(L-54) <= 2^-p.
 *         Hence floor(s) = floor(X) at every level up to L (kept bits, ties, the 32 stochastic
 *         bits) and s lies on a level's grid exactly when X does (exactness, the binade).
 *   sqrt  no square root of a p-bit number lies on the (p+1)-bit grid but exactly, and off it
 *         it is at least 2^-(p+2) units away (|x - M^2| >= 1 over sqrt(x) + M < 2^(p+2)), far
 *         beyond binary64's error: every mode but stoch_prop is decided.  For stoch_prop the
 *         element is kept only if s has a nonzero bit below level L: the exact root, within
 *         half an ulp of s, lies strictly inside the same level-L cell and binade, so it has
 *         the same 32 stochastic bits and is inexact at every level s is.
 *   odd   s = RN(x + y) with error e (x + y = s + e exactly, TwoSum: Knuth, TAOCP 4.2.2):
 *         e = 0: s is exact.  Otherwise s becomes the round-to-odd value of x + y at 53 bits
 *         (lane_sum_odd): x + y truncated to 53 bits with its last bit set.  It lies strictly
 *         between the same two 53-bit values with an even last bit as x + y; every level the
 *         rounding reads (kept bits, ties, binades, the tininess and overflow thresholds, the
 *         32 stochastic bits: at most 43 bits down) is such a value, and both are inexact at
 *         every level (Boldo and Melquiond, IEEE TC 2008).
 * The square root of a finite negative number (not -0) is the invalid operation's default NaN
 * (array_ops.c).  Declined elements (NaN or infinite operands, division by zero, stoch_prop
 * roots that rule cannot keep, and the fp16/bf16 results whose tininess after rounding needs a
 * second rounding) are marked for the scalar operation.  The hardware must round
 * to nearest (array_ops.c checks fegetround); every binary64 value here is normal or zero, so the
 * MXCSR's flush-to-zero and denormals-are-zero bits change nothing. */
#ifndef AMPSCOPE_EMULATE_ARRAY_LANES_H
#define AMPSCOPE_EMULATE_ARRAY_LANES_H

#include <string.h>

#include "fpe_internal.h"

#if defined(__GNUC__) /* and clang */
/* the helpers below are always inlined: no vector crosses a call */
#pragma GCC diagnostic ignored "-Wpsabi"
#endif
typedef uint64_t v4q __attribute__((vector_size(32)));
typedef int64_t v4s __attribute__((vector_size(32)));
typedef double v4d __attribute__((vector_size(32)));
typedef uint16_t v4h __attribute__((vector_size(8)));
typedef uint32_t v4w __attribute__((vector_size(16)));
typedef uint8_t v4b __attribute__((vector_size(4)));
#define ARRAY_LANES 4

#define LANE_MASK(cmp) ((v4q)(cmp)) /* a comparison: all ones or zero per lane */

FPE_INLINE v4q lane_sel(v4q mask, v4q a, v4q b) { return (mask & a) | (~mask & b); }
FPE_INLINE v4q lane_load16(const uint16_t *p)
{
    v4h h;
    memcpy(&h, p, sizeof h);
    return __builtin_convertvector(h, v4q);
}
FPE_INLINE v4q lane_load32(const uint32_t *p)
{
    v4w w;
    memcpy(&w, p, sizeof w);
    return __builtin_convertvector(w, v4q);
}

/* What a block's vector loop found in the elements it kept. */
typedef struct array_tally {
    uint32_t flags;
    uint64_t declined, inexact, flushed, subnormal, overflowed, nan;
} array_tally;

/* 2^(emin - fbits): the value of a subnormal's last bit */
FPE_INLINE double fk_sub_ulp(fpe_format_id f) { return f == FPE_FMT_F16 ? 0x1p-24 : 0x1p-133; }

/* A finite value of format f (16-bit pattern x, DAZ already applied), exactly, as binary64
 * bits: normals rebiased, subnormals through the 2^52 trick (2^52 + frac - 2^52 = frac). */
FPE_INLINE v4q lane_to_f64(fpe_format_id f, v4q x)
{
    const int fb = fk_fbits(f);
    const v4q mag = x & 0x7FFF, sgn = (x & 0x8000) << 48;
    const v4q normal = (mag << (52 - fb)) + ((uint64_t)(1023 - fk_bias(f)) << 52);
    const v4d frac = (v4d)((mag & fk_frac_mask(f)) | 0x4330000000000000ull) - 0x1p52;
    const v4q sub = (v4q)(frac * fk_sub_ulp(f));
    return lane_sel(LANE_MASK((mag >> fb) == 0), sub, normal) | sgn;
}

/* Should the kept part be incremented (a mask)?  fpe_round_increment for lanes. */
FPE_INLINE v4q lane_increment(int mode, v4q sign, v4q kept, v4q rem, v4q half, v4q frac32, v4q rnd)
{
    const v4q lost = LANE_MASK(rem != 0);
    switch (mode) {
    case FPE_RNE: return LANE_MASK(rem > half) | (LANE_MASK(rem == half) & (0 - (kept & 1)));
    case FPE_RNA: return LANE_MASK(rem >= half);
    case FPE_RD: return (0 - sign) & lost;
    case FPE_RU: return (sign - 1) & lost;
    case FPE_SR_PROP: return LANE_MASK(rnd < frac32);
    case FPE_SR_EQUAL: return (0 - (rnd >> 31)) & lost;
    default: return (v4q){0}; /* RZ, RO */
    }
}

/* The magnitude of an overflow's result (fpe_overflow); sign is 0 or 1. */
FPE_INLINE v4q lane_overflow(int mode, v4q sign, uint32_t inf)
{
    switch (mode) {
    case FPE_RZ:
    case FPE_RO: return (v4q){0} + (inf - 1);
    case FPE_RD: return inf - (sign ^ 1);
    case FPE_RU: return inf - sign;
    default: return (v4q){0} + inf;
    }
}

/* What lane_round found, per lane (masks). */
typedef struct lane_flags {
    v4q inexact, underflow, overflow;
} lane_flags;

/* Round the binary64 values u (bits, finite) to format f in mode, as fpe_round_pack rounds
 * the same value: the 16-bit results; *fl the flags; *decline gets the lanes whose tininess
 * after rounding takes a second rounding (after: all ones when env->tininess says so).  A
 * result is M / 2^sh ulps: for a normal result M is u rebiased to the result's exponent field
 * and fraction (a carry out of the fraction bumps the exponent, one into the infinity field
 * is an overflow); for a tiny one M is the 53-bit significand and sh the shift to units of
 * the last subnormal bit, or, beyond 63, M shifted to sh = 63 with the lost bits jammed into
 * its last bit (as fpe_round_pack jams). */
FPE_INLINE v4q lane_round(fpe_format_id f, int mode, v4q ftz, v4q after, v4q u, v4q rnd,
                          lane_flags *fl, v4q *decline)
{
    const int p = fk_p(f), sn = 53 - p; /* bits below the last kept one, normal results */
    const int64_t emin = fk_emin(f);
    const uint32_t inf = fk_inf(f);
    const v4q zero = {0};
    const v4q sign = u >> 63, mag = u & 0x7FFFFFFFFFFFFFFFull;
    const v4q is_zero = LANE_MASK(mag == 0);
    const v4s E = (v4s)(mag >> 52) - 1023;
    const v4q tiny = LANE_MASK(E < emin) & ~is_zero;
    const v4q sig = (mag & 0xFFFFFFFFFFFFFull) | 0x10000000000000ull;
    const v4s dist = (sn + emin) - E; /* the shift of a tiny result */
    const v4q far = tiny & LANE_MASK(dist > 63);
    const v4q jd = lane_sel(far, lane_sel(LANE_MASK(dist > 126), zero + 63, (v4q)dist - 63), zero);
    const v4q jammed = (sig >> jd) | (LANE_MASK((sig & (((zero + 1) << jd) - 1)) != 0) & 1);
    const v4q h = mag - ((uint64_t)(1023 - fk_bias(f)) << 52);
    const v4q sh = lane_sel(tiny, lane_sel(far, zero + 63, (v4q)dist), zero + (uint64_t)sn);
    const v4q M = lane_sel(tiny, lane_sel(far, jammed, sig), h);
    const v4q one_sh = (zero + 1) << sh;
    v4q kept = M >> sh;
    const v4q rem = M & (one_sh - 1), half = one_sh >> 1;
    const v4q lost = LANE_MASK(rem != 0);
    const v4q frac32 = mode == FPE_SR_PROP ? rem >> (sh - 32) : zero;
    if (mode == FPE_RO)
        kept |= lost & 1;
    else
        kept -= lane_increment(mode, sign, kept, rem, half, frac32, rnd);
    const v4q over = ~tiny & ~is_zero & LANE_MASK(kept >= inf);
    /* just below 2^emin with p leading ones: tiny after rounding unless rounding to p bits
     * carries (fpe_round_pack's second rounding): left to the scalar operation */
    *decline |= after & LANE_MASK(E == emin - 1) &
                LANE_MASK((sig >> sn) == ((uint64_t)1 << p) - 1) &
                LANE_MASK((sig & (((uint64_t)1 << sn) - 1)) != 0);
    const v4q flush = tiny & ftz;
    const v4q res = lane_sel(over, lane_overflow(mode, sign, inf), kept);
    fl->inexact = (lost & ~is_zero) | over | flush;
    fl->underflow = tiny & (lost | flush);
    fl->overflow = over;
    return lane_sel(flush | is_zero, zero, res) | (sign << 15);
}

/* s = RN(x + y) made the round-to-odd value of x + y at 53 bits (see "odd" above): TwoSum's
 * error e (exact: no overflow here) says whether x + y is s (e = 0; e may be -0) or lies
 * toward zero from s (e's sign is not s's: the truncation is s one step toward zero) or away
 * (the truncation is s); an inexact truncation gets its last bit set. */
FPE_INLINE v4d lane_sum_odd(v4d x, v4d y, v4d s)
{
    const v4d yy = s - x, xx = s - yy;
    const v4q ue = (v4q)((x - xx) + (y - yy)), us = (v4q)s;
    const v4q inexact = LANE_MASK((ue & 0x7FFFFFFFFFFFFFFFull) != 0);
    const v4q toward_zero = inexact & (((v4q){0}) - ((ue ^ us) >> 63));
    return (v4d)((us + toward_zero) | (inexact & 1)); /* + all ones: one step down */
}

#endif
