/* elem/stats.h: the element math of ak_stats_accumulate, host and device.
 *
 * Per element the statistics need two things: the log2 histogram bin of x,
 * read from its bits, and, for finite nonzero x, whether the exact product
 * |x| * |s| rounded to nearest even in the target format is zero, subnormal
 * or infinite.
 *
 * The second question is answered once per call, not once per element.
 * The rounded class of |x| * |s| never decreases as |x| grows, and for
 * non-negative finite x the magnitude bits (sign cleared) order exactly as
 * the values do.  So the classes split the finite magnitude patterns of the
 * source format into four consecutive ranges:
 *
 *   [1, sub)       flushed to zero
 *   [sub, normal)  subnormal
 *   [normal, over) normal (or NaN, when s is NaN)
 *   [over, inf)    overflowed
 *
 * ak_stats_cuts_of finds the three cuts by bisection on ak_stats_class_k
 * (the cuda backend searches 32 candidates at a time with a warp, for the
 * same cuts), and per element the counts are integer range tests.
 *
 * ak_stats_class_k decides the class by comparing the double product, which
 * is exact (at most 24 + 24 significant bits, exponents far inside binary64),
 * with the target's rounding thresholds:
 *   half the smallest subnormal   ties to even, to zero: flushed iff p <= it;
 *   the midpoint between the largest subnormal and the smallest normal
 *                                 ties to the even normal: subnormal iff p < it;
 *   the largest finite + half an ulp  ties to even, to infinity: overflow iff p >= it.
 * A NaN product (s is NaN) fails every comparison: no class is counted,
 * as none of zero, subnormal or infinity is its rounded value.
 */
#ifndef AMPSCOPE_KERNELS_ELEM_STATS_H
#define AMPSCOPE_KERNELS_ELEM_STATS_H

#include "kernels.h"
#include "round.h"

/* The class of a rounded product, in increasing order of magnitude. */
#define AK_STATS_FLUSHED    0
#define AK_STATS_SUBNORMAL  1
#define AK_STATS_NORMAL     2 /* also NaN */
#define AK_STATS_OVERFLOWED 3

/* 2^e as a double, for e in the normal range of binary64. */
FPE_INLINE double ak_stats_pow2(int e) { return fpe_f64_from_bits((uint64_t)(1023 + e) << 52); }

/* The rounded class of the exact non-negative product p in format target. */
FPE_INLINE int ak_stats_outcome_k(fpe_format_id target, double p)
{
    const int emin = fk_emin(target), emax = fk_emax(target), prec = fk_p(target);
    const double half_min_subnormal = ak_stats_pow2(emin - prec);
    const double below_min_normal = ak_stats_pow2(emin) - half_min_subnormal;
    const double overflow = ak_stats_pow2(emax + 1) - ak_stats_pow2(emax - prec);
    if (p <= half_min_subnormal) return AK_STATS_FLUSHED;
    if (p < below_min_normal) return AK_STATS_SUBNORMAL;
    if (p >= overflow) return AK_STATS_OVERFLOWED;
    return AK_STATS_NORMAL;
}

/* |s| exactly, from the bits of the fp32 scale (NaN stays NaN). */
FPE_INLINE double ak_stats_scale_abs(uint32_t scale_bits)
{
    return ak_elem_value(FPE_FMT_F32, scale_bits & 0x7FFFFFFFu);
}

/* The class of |x| * scale_abs for the finite magnitude pattern mag of
 * format src. */
FPE_INLINE int ak_stats_class_k(fpe_format_id src, fpe_format_id target, double scale_abs,
                                uint32_t mag)
{
    return ak_stats_outcome_k(target, ak_elem_value(src, mag) * scale_abs);
}

/* The cuts between the classes, as magnitude patterns of the source format:
 * sub, normal and over are the smallest finite magnitude patterns >= 1 whose
 * class is at least subnormal, normal and overflowed (inf when there is
 * none); inf is the source's infinity pattern, the first non-finite one. */
typedef struct ak_stats_cuts {
    uint32_t sub, normal, over, inf;
} ak_stats_cuts;

/* The smallest mag in [1, inf) whose class is at least cls, or inf. */
FPE_INLINE uint32_t ak_stats_first_of_class(fpe_format_id src, fpe_format_id target,
                                            double scale_abs, int cls)
{
    uint32_t lo = 1, hi = fk_inf(src); /* the answer lies in [lo, hi] */
    while (lo < hi) {
        const uint32_t mid = lo + (hi - lo) / 2;
        if (ak_stats_class_k(src, target, scale_abs, mid) >= cls)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

FPE_INLINE ak_stats_cuts ak_stats_cuts_of(fpe_format_id src, fpe_format_id target,
                                          uint32_t scale_bits)
{
    const double s = ak_stats_scale_abs(scale_bits);
    ak_stats_cuts c;
    c.sub = ak_stats_first_of_class(src, target, s, AK_STATS_SUBNORMAL);
    c.normal = ak_stats_first_of_class(src, target, s, AK_STATS_NORMAL);
    c.over = ak_stats_first_of_class(src, target, s, AK_STATS_OVERFLOWED);
    c.inf = fk_inf(src);
    return c;
}

/* ---- per element ----------------------------------------------------------- */
/* The element's bits without the sign: ordered like |x| while finite. */
FPE_INLINE uint32_t ak_stats_mag_k(fpe_format_id src, uint32_t bits)
{
    return bits & (fk_sign(src) - 1);
}

/* The histogram bin of the element with magnitude bits mag (kernels.h):
 * the exponent field gives the binade of a normal number, the leading one
 * of the fraction that of a subnormal. */
FPE_INLINE uint32_t ak_stats_bin_k(fpe_format_id src, uint32_t mag)
{
    const uint32_t field = mag >> fk_fbits(src);
    const int bias = fk_bias(src);
    if (field == fk_expfield_max(src)) return AK_HIST_NONFINITE;
    if (field != 0) return (uint32_t)((int)field - bias - AK_HIST_EMIN + 1);
    if (mag == 0) return AK_HIST_ZERO;
    /* a subnormal with its leading one at bit k is 2^(emin - fbits + k) */
    const int k = 63 - FPE_CLZ64((uint64_t)mag);
    return (uint32_t)(1 - bias - fk_fbits(src) + k - AK_HIST_EMIN + 1);
}

/* 1 when the element's scaled and rounded value is zero, subnormal or
 * infinite (finite nonzero x only: unsigned range tests, so 0 and
 * non-finite patterns fall outside every range), else 0. */
FPE_INLINE uint32_t ak_stats_flushed_k(ak_stats_cuts c, uint32_t mag)
{
    return mag - 1 < c.sub - 1;
}
FPE_INLINE uint32_t ak_stats_subnormal_k(ak_stats_cuts c, uint32_t mag)
{
    return mag - c.sub < c.normal - c.sub;
}
FPE_INLINE uint32_t ak_stats_overflowed_k(ak_stats_cuts c, uint32_t mag)
{
    return mag - c.over < c.inf - c.over;
}

/* Is the element finite with a normal scaled and rounded value?  Then it
 * counts toward nothing but its bin and amax: the common case, tested
 * first so that most elements skip the three range tests above. */
FPE_INLINE bool ak_stats_plain_k(ak_stats_cuts c, uint32_t mag)
{
    return mag - c.normal < c.over - c.normal;
}

/* The magnitude bits that count toward amax: mag when finite, else 0.
 * The largest of these, as a value, is amax. */
FPE_INLINE uint32_t ak_stats_amax_bits_k(ak_stats_cuts c, uint32_t mag)
{
    return mag < c.inf ? mag : 0;
}

#endif
