/* precision_stats.c: log2 histograms turned into named fractions at a loss
 * scale for a target format, the overflow test of a cast, histogram merges
 * and quantiles (precision_stats.h).
 *
 * Every threshold comes from the emulator's format descriptor (fpe_formats:
 * p, emin, emax), so fp16, bf16 and fp32 share one code path. */
#include "precision_stats.h"

#include <gsl/gsl_histogram.h>
#include <math.h>
#include <string.h>

#include "atomic_file.h"

static bool target_ok(fpe_format_id target) { return (unsigned)target <= (unsigned)FPE_FMT_F32; }

/* The class edges of a format in log2 of the scaled magnitude.  A scaled
 * binade [2^b, 2^(b+1)) is flushed below flush_edge (= emin - p: half the
 * smallest subnormal; the binade starting there rounds up to a subnormal
 * except its lower end, a tie that goes to zero), subnormal below
 * normal_edge (= emin), normal below overflow_edge (= emax + 1) and
 * overflowing from there on. */
typedef struct class_edges {
    int flush_edge, normal_edge, overflow_edge;
} class_edges;

static class_edges edges_of(fpe_format_id target)
{
    const fpe_format *f = &fpe_formats[target];
    return (class_edges){f->emin - f->p, f->emin, f->emax + 1};
}

int an_hist_fractions(const uint64_t hist[AK_HIST_BINS], fpe_format_id target, double scale,
                      an_fractions *out)
{
    if (!hist || !out || !target_ok(target) || !(scale > 0) || !isfinite(scale)) return AN_EINVAL;
    memset(out, 0, sizeof *out);
    out->scale = scale;
    out->target = target;
    out->exact = true;

    /* A power of two 2^k moves every binade by exactly k: take k from the
     * exponent, so that no rounding of log2 can cut a binade. */
    int ex;
    const double shift = frexp(scale, &ex) == 0.5 ? (double)(ex - 1) : log2(scale);
    const class_edges c = edges_of(target);

    out->zero = hist[AK_HIST_ZERO];
    out->nonfinite = hist[AK_HIST_NONFINITE];
    for (int e = AK_HIST_EMIN; e <= AK_HIST_EMAX; e++) {
        const uint64_t n = hist[AK_HIST_BIN(e)];
        if (n == 0) continue;
        out->nonzero += n;
        const double a = e + shift, b = a + 1.0; /* the scaled binade [2^a, 2^b) */
        double flushed, subnormal, overflowed;
        if (a < c.flush_edge && b > c.flush_edge) {
            /* A class edge inside the binade: shares of its log2 width. */
            out->exact = false;
            flushed = c.flush_edge - a;
            subnormal = 1.0 - flushed;
            overflowed = 0.0;
        } else if (a < c.normal_edge && b > c.normal_edge) {
            out->exact = false;
            flushed = overflowed = 0.0;
            subnormal = c.normal_edge - a;
        } else if (a < c.overflow_edge && b > c.overflow_edge) {
            out->exact = false;
            flushed = subnormal = 0.0;
            overflowed = b - c.overflow_edge;
        } else {
            /* Wholly in one class (every binade, for a power of two). */
            flushed = a < c.flush_edge ? 1.0 : 0.0;
            subnormal = a >= c.flush_edge && a < c.normal_edge ? 1.0 : 0.0;
            overflowed = a >= c.overflow_edge ? 1.0 : 0.0;
        }
        out->flushed += (double)n * flushed;
        out->subnormal += (double)n * subnormal;
        out->overflowed += (double)n * overflowed;
    }
    out->count = out->zero + out->nonzero + out->nonfinite;
    /* An empty denominator gives 0, not NaN: nothing was there to lose. */
    const double count = (double)out->count, nonzero = (double)out->nonzero;
    out->zero_frac_of_all = count > 0 ? (double)out->zero / count : 0.0;
    out->flushed_frac_of_nonzero = nonzero > 0 ? out->flushed / nonzero : 0.0;
    out->subnormal_frac_of_nonzero = nonzero > 0 ? out->subnormal / nonzero : 0.0;
    out->overflow_frac_of_nonzero = nonzero > 0 ? out->overflowed / nonzero : 0.0;
    out->zero_after_cast_frac_of_all = count > 0 ? ((double)out->zero + out->flushed) / count : 0.0;
    return AN_OK;
}

/* The smallest magnitude that rounds to infinity, to nearest even: the
 * largest finite value plus half its ulp, 2^(emax+1) - 2^(emax-p) (fp16:
 * 65520, a tie that goes to the even infinity).  Exact in a double. */
static double overflow_threshold(fpe_format_id target)
{
    const fpe_format *f = &fpe_formats[target];
    return ldexp(1.0, f->emax + 1) - ldexp(1.0, f->emax - f->p);
}

bool an_overflows(double x, double scale, fpe_format_id target)
{
    if (!target_ok(target)) return false;
    x = fabs(x);
    scale = fabs(scale);
    const double t = overflow_threshold(target);
    const double prod = x * scale; /* NaN (NaN input, inf * 0) compares false below */
    if (prod != t) return prod > t;
    /* The double product rounded onto the threshold: the exact product's
     * side of it decides, and fma gives the rounding error exactly. */
    return fma(x, scale, -prod) >= 0.0;
}

double an_best_pow2_scale(double amax, fpe_format_id target)
{
    if (!target_ok(target) || !(amax > 0) || !isfinite(amax)) return 0.0;
    /* amax = m 2^ea, t = mt 2^et with m, mt in [0.5, 1): amax 2^(et-ea) =
     * m 2^et stays below t exactly when m < mt, else one binade lower
     * does (m 2^(et-1) < 2^(et-1) <= t).  Powers of two multiply exactly. */
    int ea, et;
    const double m = frexp(amax, &ea), mt = frexp(overflow_threshold(target), &et);
    int k = et - ea - (m < mt ? 0 : 1);
    if (k > 127) k = 127;
    return ldexp(1.0, k);
}

void an_hist_merge(uint64_t dst[AK_HIST_BINS], const uint64_t src[AK_HIST_BINS])
{
    if (!dst || !src) return;
    for (int i = 0; i < AK_HIST_BINS; i++)
        dst[i] += src[i];
}

int an_hist_quantile(const uint64_t hist[AK_HIST_BINS], double q, double *log2_value)
{
    if (!hist || !log2_value || !(q >= 0 && q <= 1)) return AN_EINVAL;
    int lo = AK_HIST_EMAX + 1, hi = AK_HIST_EMIN - 1;
    for (int e = AK_HIST_EMIN; e <= AK_HIST_EMAX; e++) {
        if (hist[AK_HIST_BIN(e)] == 0) continue;
        if (e < lo) lo = e;
        hi = e;
    }
    if (lo > hi) return AN_EINVAL;

    /* GSL's histogram and pdf over the occupied binades, in arrays of our
     * own: nothing is allocated, so no GSL error handler (which aborts by
     * default) can be reached through an allocation failure. */
    double range[AK_HIST_BINS + 1], bin[AK_HIST_BINS], sum[AK_HIST_BINS + 1],
        prange[AK_HIST_BINS + 1];
    const size_t n = (size_t)(hi - lo + 1);
    for (size_t i = 0; i < n; i++) {
        range[i] = lo + (double)i;
        bin[i] = (double)hist[AK_HIST_BIN(lo + (int)i)];
    }
    range[n] = hi + 1.0;
    const gsl_histogram h = {n, range, bin};
    gsl_histogram_pdf pdf = {n, prange, sum};
    gsl_histogram_pdf_init(&pdf, &h); /* cannot fail: same n, no negative bin */
    /* GSL maps r = 1 to the bottom of the range, and its cumulative sum may
     * end a rounding below 1 (it fails at or past it): the top quantile is
     * the top edge. */
    if (q >= pdf.sum[n]) {
        *log2_value = hi + 1.0;
        return AN_OK;
    }
    *log2_value = gsl_histogram_pdf_sample(&pdf, q);
    return AN_OK;
}
