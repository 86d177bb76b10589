/* inspect.c: the precision statistics of a safetensors tensor
 * (inspect.h): the record's ak_stats_accumulate for F32, F16 and BF16, an
 * exact classification of its own for F64. */
#include "inspect.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fpe_internal.h" /* fpe_f64_bits, fpe_f64_from_bits */
#include "record.h"
#include "util.h"

char *an_bin_label(int bin, char *buf)
{
    if (bin == AN_BIN_ZERO) return rec_hist_bin_label(AK_HIST_ZERO, buf);
    if (bin == AN_BIN_NONFINITE) return rec_hist_bin_label(AK_HIST_NONFINITE, buf);
    if (bin < AN_BIN(AN_BIN_EMIN) || bin > AN_BIN(AN_BIN_EMAX)) return NULL;
    const int e = bin - AN_BIN(0);
    if (e >= AK_HIST_EMIN && e <= AK_HIST_EMAX) return rec_hist_bin_label(AK_HIST_BIN(e), buf);
    /* an F64 binade outside the record's range: labelled as the record labels a binade */
    snprintf(buf, REC_BIN_LABEL_MAX, "%d", e);
    return buf;
}

void an_bins_add_ak(uint64_t hist[AN_BINS], const uint64_t ak[AK_HIST_BINS])
{
    hist[AN_BIN_ZERO] += ak[AK_HIST_ZERO];
    hist[AN_BIN_NONFINITE] += ak[AK_HIST_NONFINITE];
    for (int e = AK_HIST_EMIN; e <= AK_HIST_EMAX; e++)
        hist[AN_BIN(e)] += ak[AK_HIST_BIN(e)];
}

bool an_inspect_dtype_ok(st_dtype dt)
{
    return dt == ST_F32 || dt == ST_F16 || dt == ST_BF16 || dt == ST_F64;
}

/* The class of a value of format f from its bits. */
static int class_of_bits(fpe_format_id f, uint32_t r)
{
    const fpe_format *fmt = &fpe_formats[f];
    const int fbits = fmt->p - 1;
    const uint32_t field = (r >> fbits) & ((1u << fmt->exp_bits) - 1);
    const uint32_t frac = r & ((1u << fbits) - 1);
    if (field == 0) return frac == 0 ? AN_CLASS_FLUSHED : AN_CLASS_SUBNORMAL;
    if (field == (1u << fmt->exp_bits) - 1) return AN_CLASS_OVERFLOWED; /* inf: no NaN here */
    return AN_CLASS_NORMAL;
}

/* Exact, for any binary64 x: the product |x| s has up to 53 + 24 (53 + 53)
 * significant bits, more than a double holds, so it is not computed as
 * such.  Far outside every format's range the class is plain.  Inside,
 * x s = p + e exactly (p = RN(x s), e = fma(x, s, -p): exact, as the
 * product is far above binary64's subnormals), and the round-to-odd of
 * x s to 53 bits (p truncated toward zero, its last bit set when e != 0)
 * rounds to nearest even in any format of at most 51 bits, its subnormals
 * included, exactly as x s itself does (Boldo & Melquiond, "When double
 * rounding is odd", 2005; kernels/elem/round.h rounds sums the same way).
 * The emulator then rounds it (fpe_f64_to_*, nearest even) and the result's
 * bits give the class. */
int an_f64_class(double x, double s, fpe_format_id target)
{
    x = fabs(x);
    s = fabs(s);
    int ex, es;
    (void)frexp(x, &ex);
    (void)frexp(s, &es);
    /* x s lies in [2^(ex+es-2), 2^(ex+es)) */
    if (ex + es < -300) return AN_CLASS_FLUSHED;   /* < 2^-300, under half of any least subnormal */
    if (ex + es > 300) return AN_CLASS_OVERFLOWED; /* >= 2^298, past every format's largest */
    const double p = x * s;
    const double e = fma(x, s, -p);
    uint64_t u = fpe_f64_bits(p);
    if (e != 0.0) {
        if (e < 0.0) u -= 1; /* x s < p: truncating steps p down one ulp */
        u |= 1;
    }
    const double q = fpe_f64_from_bits(u);
    fpe_env env = fpe_env_default();
    switch (target) {
    case FPE_FMT_F16: return class_of_bits(target, fpe_f64_to_f16(&env, q));
    case FPE_FMT_BF16: return class_of_bits(target, fpe_f64_to_bf16(&env, q));
    default: return class_of_bits(FPE_FMT_F32, fpe_f64_to_f32(&env, q));
    }
}

/* An F64 tensor: every element classified at every scale. */
static void f64_stats(const double *d, uint64_t n, fpe_format_id target, const float *scales,
                      size_t n_scales, an_inspect_row *rows, uint64_t hist[AN_BINS])
{
    for (uint64_t k = 0; k < n; k++) {
        const double x = fabs(d[k]);
        if (x == 0.0) {
            for (size_t i = 0; i < n_scales; i++)
                rows[i].zero++;
            if (hist) hist[AN_BIN_ZERO]++;
            continue;
        }
        if (!isfinite(x)) {
            for (size_t i = 0; i < n_scales; i++)
                rows[i].nonfinite++;
            if (hist) hist[AN_BIN_NONFINITE]++;
            continue;
        }
        int e;
        (void)frexp(x, &e); /* x in [2^(e-1), 2^e) */
        if (hist) hist[AN_BIN(e - 1)]++;
        for (size_t i = 0; i < n_scales; i++) {
            an_inspect_row *r = &rows[i];
            r->nonzero++;
            if (x > r->amax) r->amax = x;
            switch (an_f64_class(x, scales[i], target)) {
            case AN_CLASS_FLUSHED: r->flushed++; break;
            case AN_CLASS_SUBNORMAL: r->subnormal++; break;
            case AN_CLASS_OVERFLOWED: r->overflowed++; break;
            default: break;
            }
        }
    }
}

int an_inspect_tensor(ak_backend *cpu, const st_tensor *t, fpe_format_id target,
                      const float *scales, size_t n_scales, an_inspect_row *rows,
                      uint64_t hist[AN_BINS], char *msg, size_t msg_len)
{
    if (!t || !rows || (n_scales && !scales))
        return ut_fail(msg, msg_len, AN_EINVAL, "an_inspect_tensor: NULL argument");
    if (target != FPE_FMT_F16 && target != FPE_FMT_BF16 && target != FPE_FMT_F32)
        return ut_fail(msg, msg_len, AN_EINVAL, "an_inspect_tensor: target %d", (int)target);
    for (size_t i = 0; i < n_scales; i++)
        if (!(isfinite(scales[i]) && scales[i] > 0))
            return ut_fail(msg, msg_len, AN_EINVAL, "scale %g is not finite and > 0",
                           (double)scales[i]);
    if (!an_inspect_dtype_ok(t->dtype))
        return ut_fail(msg, msg_len, AN_EINVAL,
                       "tensor '%s' has dtype %s (inspect reads F32, F16, BF16 and F64)", t->name,
                       st_dtype_name(t->dtype));
    const uint64_t n = st_tensor_elements(t);
    memset(rows, 0, n_scales * sizeof *rows);
    for (size_t i = 0; i < n_scales; i++) {
        rows[i].scale = scales[i];
        rows[i].count = n;
    }
    if (t->dtype == ST_F64) {
        f64_stats(t->data, n, target, scales, n_scales, rows, hist);
        return AN_OK;
    }
    if (!cpu) return ut_fail(msg, msg_len, AN_EINVAL, "an_inspect_tensor: no cpu backend");
    ak_dtype dt;
    (void)st_dtype_to_ak(t->dtype, &dt);
    /* the cpu backend only reads x: the file's bytes, aligned to the element size */
    const ak_tensor x = ak_tensor_of((void *)t->data, (size_t)n, dt);
    ak_stats s;
    for (size_t i = 0; i < n_scales; i++) {
        memset(&s, 0, sizeof s);
        if (ak_stats_accumulate(cpu, x, target, &scales[i], &s) != AK_OK)
            return ut_fail(msg, msg_len, AN_EIO, "tensor '%s': %s", t->name, ak_error_text(cpu));
        an_inspect_row *r = &rows[i];
        r->zero = s.zero;
        r->nonzero = s.nonzero;
        r->nonfinite = s.nonfinite;
        r->flushed = s.flushed;
        r->subnormal = s.subnormal;
        r->overflowed = s.overflowed;
        r->amax = s.amax;
        if (i == 0 && hist) an_bins_add_ak(hist, s.hist);
    }
    if (n_scales == 0 && hist) { /* the histogram alone */
        memset(&s, 0, sizeof s);
        if (ak_stats_accumulate(cpu, x, target, NULL, &s) != AK_OK)
            return ut_fail(msg, msg_len, AN_EIO, "tensor '%s': %s", t->name, ak_error_text(cpu));
        an_bins_add_ak(hist, s.hist);
    }
    return AN_OK;
}
