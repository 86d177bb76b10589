/* precision_stats.h: log2 histograms (kernels' ak_stats layout) turned into
 * named fractions with explicit denominators, at any loss scale and for any
 * target format; histogram merges and quantiles.
 *
 * A histogram here is uint64_t hist[AK_HIST_BINS] as kernels.h defines it:
 * hist[AK_HIST_ZERO] zeros, hist[AK_HIST_BIN(e)] finite x with
 * 2^e <= |x| < 2^(e+1), hist[AK_HIST_NONFINITE] infinities and NaNs.
 *
 * Classification at a scale S for a target format (fp16, bf16, fp32),
 * rounding to nearest even as a cast does: a value x is
 *   flushed     when x S rounds to zero,
 *   subnormal   when x S rounds to a nonzero subnormal,
 *   overflowed  when x S rounds to infinity,
 * decided per binade: binade e scaled by S is [2^e S, 2^(e+1) S); for a
 * power-of-two S every binade falls in one class except for the values
 * within half a unit of the class edges (for fp16: exactly 2^-25 flushes,
 * [2^-14 - 2^-25, 2^-14) rounds up to the normal 2^-14, [65520, 65536)
 * overflows), which a histogram cannot see and which are counted with the
 * rest of their binade.  A binade cut by an edge (a non-power-of-two S)
 * is split in proportion to its log2 width (stated as `exact = false`).
 */
#ifndef AMPSCOPE_ANALYZE_PRECISION_STATS_H
#define AMPSCOPE_ANALYZE_PRECISION_STATS_H

#include <stdbool.h>
#include <stdint.h>

#include "atomic_file.h" /* AN_* status codes */
#include "fpe.h"
#include "kernels.h"

typedef struct an_fractions {
    double scale;         /* S */
    fpe_format_id target; /* the format cast to */
    uint64_t count;       /* every element: zero + nonzero + nonfinite */
    uint64_t zero;        /* exact zeros before scaling */
    uint64_t nonzero;     /* finite nonzero */
    uint64_t nonfinite;   /* inf or NaN before scaling */
    double flushed;    /* nonzero values whose x S rounds to 0 (a count; fractional when split) */
    double subnormal;  /* nonzero values whose x S rounds to a nonzero subnormal */
    double overflowed; /* nonzero values whose x S rounds to +-inf */
    double zero_frac_of_all;            /* zero / count */
    double flushed_frac_of_nonzero;     /* flushed / nonzero (0 when nonzero is 0) */
    double subnormal_frac_of_nonzero;   /* subnormal / nonzero */
    double overflow_frac_of_nonzero;    /* overflowed / nonzero */
    double zero_after_cast_frac_of_all; /* (zero + flushed) / count */
    bool exact;                         /* every binade fell in one class (S a power of two) */
} an_fractions;

/* The fractions of hist at scale (> 0, finite) for target.  AN_OK, or
 * AN_EINVAL for a bad scale, target or NULL pointer. */
int an_hist_fractions(const uint64_t hist[AK_HIST_BINS], fpe_format_id target, double scale,
                      an_fractions *out);

/* The largest power of two S such that amax S does not round to infinity in
 * target (amax > 0 finite); 2^127 caps it; for amax == 0 or non-finite,
 * returns 0 (no such scale is defined). */
double an_best_pow2_scale(double amax, fpe_format_id target);

/* Whether x S rounds to infinity in target (x >= 0): the overflow test of a
 * cast, to nearest even. */
bool an_overflows(double x, double scale, fpe_format_id target);

/* dst += src, bin by bin. */
void an_hist_merge(uint64_t dst[AK_HIST_BINS], const uint64_t src[AK_HIST_BINS]);

/* The binade holding the q-quantile (0 <= q <= 1) of the finite nonzero
 * values' log2 magnitudes (interpolated within the binade, through GSL's
 * histogram pdf): returns log2|x| at that quantile in *log2_value.  AN_OK,
 * or AN_EINVAL when q is out of range or there are no finite nonzero values. */
int an_hist_quantile(const uint64_t hist[AK_HIST_BINS], double q, double *log2_value);

#endif
