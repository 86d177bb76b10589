/* array_wide_bf16.h: array_wide.h's loop for bf16 mul, div, fma and sqrt (array_ops.c), where a
 * product or quotient of bf16 numbers leaves binary32's range: eight elements at a time, the
 * operation in binary64, its result made a binary32 value s, which is rounded to bf16 here.
 *
 * s is the round-to-odd value of the exact result X on binary32's grid, subnormal range
 * included: every level the bf16 rounding reads (its results and midpoints, normal or
 * subnormal; 2^-126 for tininess before rounding; the 8-bit values of [2^-127, 2^-126) for
 * tininess after) lies on that grid with at least two bits to spare, so rounding s in any
 * deterministic mode rounds X, flags included (Boldo and Melquiond, IEEE TC 2008):
 *   d     binary64, with X's floor and exactness at every level of 40 bits or fewer:
 *         mul   exact (16 bits, |d| >= 2^-266);
 *         fma   the product exact, the sum made odd at 53 bits (array_lanes.h, "odd");
 *         div   RN(a / b): array_lanes.h, "div", with L = p + 32 = 40 >= 24;
 *         sqrt  RN(sqrt(a)): for a 24-bit t (exponent E) not the root, a - t^2 is a nonzero
 *               multiple of 2^(2E-46), so |sqrt(a) - t| >= 2^(E-47) > 2^(E-53), binary64's
 *               error: d is on t's grid exactly when X is, and never across a grid point;
 *   s     d rounded to binary32 in the hardware (to nearest, gradual underflow), then made
 *         odd: widened back exactly, d minus it (exact: Sterbenz, or d itself when it
 *         rounded to zero) says whether s is d or lies beyond it (one step toward zero) or
 *         short of it, and an inexact s gets its last bit set.  An s that overflowed binary32
 *         (before that step) is marked for the scalar operation.
 * The rounding of s is chop_bf16.c's (a bias below bit 16, truncated; an overflow carries
 * into 0x7F80 where the mode's result is infinity) with binary32's subnormal range added:
 * tiny is |s| < 2^-126 (X's tininess before rounding); FTZ flushes a tiny result to a zero of
 * its sign (inexact, underflow); underflow is tiny and inexact; under tininess after rounding
 * an s in [2^-127, 2^-126) with eight leading ones and more bits below (which the second,
 * unbounded rounding might carry to 2^-126) is marked, as array_lanes.h marks it. */
#ifndef AMPSCOPE_EMULATE_ARRAY_WIDE_BF16_H
#define AMPSCOPE_EMULATE_ARRAY_WIDE_BF16_H

#include "array_lanes.h"
#include "array_wide.h"

typedef float v4f __attribute__((vector_size(16)));

/* The binary64 values of eight binary32 ones, in two halves. */
FPE_INLINE void wb_widen(v8u bits, v4d *lo, v4d *hi)
{
    const v8f f = (v8f)bits;
    *lo = __builtin_convertvector(__builtin_shufflevector(f, f, 0, 1, 2, 3), v4d);
    *hi = __builtin_convertvector(__builtin_shufflevector(f, f, 4, 5, 6, 7), v4d);
}

/* d rounded to binary32 to odd (see above), as bits; *inf: the lanes where binary32 overflowed
 * (found before the odd step, which would take an infinity back to FLT_MAX). */
FPE_INLINE v4w wb_odd32(v4d d, v4w *inf)
{
    const v4f f = __builtin_convertvector(d, v4f);
    *inf = (v4w)((((v4w)f & 0x7F800000u) == 0x7F800000u));
    const v4d back = __builtin_convertvector(f, v4d);
    const v4q e = (v4q)(d - back);
    const v4q inexact = LANE_MASK((e & 0x7FFFFFFFFFFFFFFFull) != 0);
    const v4q toward_zero = inexact & (((v4q){0}) - ((e ^ (v4q)back) >> 63));
    return ((v4w)f + __builtin_convertvector(toward_zero, v4w)) |
           __builtin_convertvector(inexact & 1, v4w);
}

FPE_INLINE v8u wb_join(v4w lo, v4w hi)
{
    return __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7);
}

/* The block's bf16 results into res, marks (1: the scalar operation) and *t; n a multiple of
 * EASY_LANES.  mode deterministic (a constant after inlining). */
FPE_INLINE void wb_lanes(int op, int mode, bool ftz_on, bool after_on, bool daz_on,
                         uint16_t default_nan, const uint16_t *a, const uint16_t *b,
                         const uint16_t *c, uint16_t *restrict res, uint8_t *restrict marks,
                         size_t n, array_tally *t)
{
    const fpe_format_id f = FPE_FMT_BF16;
    const v8u zero = {0}, daz = zero - (uint32_t)daz_on, ftz = zero - (uint32_t)ftz_on;
    const v8u after = zero - (uint32_t)after_on;
    v8u f_ix = zero, f_uf = zero, f_ov = zero, f_inv = zero;
    v8u n_hard = zero, n_ix = zero, n_fl = zero, n_sub = zero, n_ov = zero, n_nan = zero;
    for (size_t i = 0; i < n; i += EASY_LANES) {
        const v8u x = wide_daz(f, daz, easy_load16(a + i));
        const v8u y = op == FPE_ARITH_SQRT ? x : wide_daz(f, daz, easy_load16(b + i));
        const v8u z = op == FPE_ARITH_FMA ? wide_daz(f, daz, easy_load16(c + i)) : x;
        v8u hard = EASY_MASK(((x >> 7) & 0xFF) == 0xFF) | EASY_MASK(((y >> 7) & 0xFF) == 0xFF) |
                   EASY_MASK(((z >> 7) & 0xFF) == 0xFF);
        v8u inv = zero, xs = x, ys = y;
        if (op == FPE_ARITH_DIV) {
            const v8u by_zero = EASY_MASK((y & 0x7FFF) == 0);
            hard |= by_zero;
            ys = (by_zero & 0x3F80) | (~by_zero & y);
        }
        if (op == FPE_ARITH_SQRT) {
            inv = EASY_MASK(x > 0x8000) & ~hard; /* finite, negative, not -0 */
            xs = x & 0x7FFF;
        }
        v4d x0, x1, y0, y1, d0, d1;
        wb_widen(xs << 16, &x0, &x1);
        wb_widen(ys << 16, &y0, &y1);
        switch (op) {
        case FPE_ARITH_MUL: d0 = x0 * y0, d1 = x1 * y1; break;
        case FPE_ARITH_DIV: d0 = x0 / y0, d1 = x1 / y1; break;
        case FPE_ARITH_SQRT:
            for (int k = 0; k < 4; k++) {
                d0[k] = __builtin_sqrt(x0[k]);
                d1[k] = __builtin_sqrt(x1[k]);
            }
            break;
        default: { /* fma */
            v4d z0, z1;
            wb_widen(z << 16, &z0, &z1);
            const v4d p0 = x0 * y0, p1 = x1 * y1;
            d0 = lane_sum_odd(p0, z0, p0 + z0);
            d1 = lane_sum_odd(p1, z1, p1 + z1);
            if (mode == FPE_RD) { /* an exact zero sum is -0 unless both terms are +0 */
                const v4q q0 = LANE_MASK((v4q)p0 == 0) & LANE_MASK((v4q)z0 == 0);
                const v4q q1 = LANE_MASK((v4q)p1 == 0) & LANE_MASK((v4q)z1 == 0);
                d0 = (v4d)((v4q)d0 | (LANE_MASK(d0 == 0) & ~q0 & 0x8000000000000000ull));
                d1 = (v4d)((v4q)d1 | (LANE_MASK(d1 == 0) & ~q1 & 0x8000000000000000ull));
            }
            break;
        }
        }
        v4w inf0, inf1;
        v8u s = wb_join(wb_odd32(d0, &inf0), wb_odd32(d1, &inf1));
        if (op == FPE_ARITH_SQRT) s |= (x & 0x8000) << 16; /* sqrt(-0) = -0 */
        hard |= wb_join(inf0, inf1);                       /* beyond binary32's range */
        /* the rounding (chop_bf16.c's, with the subnormal range) */
        const v8u sign = s >> 31, mag = s & 0x7FFFFFFFu;
        v8u bias;
        switch (mode) {
        case FPE_RNE: bias = 0x7FFF + ((mag >> 16) & 1); break;
        case FPE_RNA: bias = zero + 0x8000; break;
        case FPE_RD: bias = (0 - sign) & 0xFFFF; break;
        case FPE_RU: bias = (sign - 1) & 0xFFFF; break;
        default: bias = zero; break; /* RZ, RO */
        }
        const v8u lost = EASY_MASK((mag & 0xFFFF) != 0);
        v8u kept = (mag + bias) >> 16;
        if (mode == FPE_RO) kept |= lost & 1;
        const v8u tiny = EASY_MASK(mag - 1 < 0x007FFFFFu);
        hard |= after & EASY_MASK((mag >> 15) == 0xFF) & EASY_MASK((mag & 0x7FFF) != 0);
        const v8u flush = tiny & ftz, over = EASY_MASK(kept == 0x7F80) & lost;
        const v8u ix = lost | flush;
        v8u r = ((~flush & kept) | (sign << 15));
        r = (inv & default_nan) | (~inv & r);
        const v8u keep = ~hard & ~inv, rm = r & 0x7FFF;
        f_ix |= ix & keep;
        f_uf |= tiny & ix & keep;
        f_ov |= over & keep;
        f_inv |= inv;
        n_hard -= hard;
        n_ix -= ix & keep;
        n_fl -= ix & keep & EASY_MASK(rm == 0);
        n_sub -= keep & EASY_MASK(rm - 1 < 0x7Fu);
        n_ov -= over & keep;
        n_nan -= inv;
        const v8h r16 = __builtin_convertvector(r, v8h);
        memcpy(res + i, &r16, sizeof r16);
        const v8b m8 = __builtin_convertvector(hard & 1, v8b);
        memcpy(marks + i, &m8, sizeof m8);
    }
    bool ix = false, uf = false, ov = false, iv = false;
    memset(t, 0, sizeof *t);
    for (int k = 0; k < EASY_LANES; k++) {
        ix |= f_ix[k] != 0;
        uf |= f_uf[k] != 0;
        ov |= f_ov[k] != 0;
        iv |= f_inv[k] != 0;
        t->declined += n_hard[k];
        t->inexact += n_ix[k];
        t->flushed += n_fl[k];
        t->subnormal += n_sub[k];
        t->overflowed += n_ov[k];
        t->nan += n_nan[k];
    }
    t->flags = (ix ? FPE_FLAG_INEXACT : 0) | (uf ? FPE_FLAG_UNDERFLOW : 0) |
               (ov ? FPE_FLAG_OVERFLOW : 0) | (iv ? FPE_FLAG_INVALID : 0);
}

#endif
