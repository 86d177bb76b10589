/* fp_note.c: what the report says about one emulated result, computed from
 * the result itself: its class read from the bit pattern's fields (zero,
 * subnormal with its significant bits, normal, infinity, NaN), the flags the
 * emulator raised producing it, and its relative error against the exact
 * value.  The formats study writes its worked examples' notes with these,
 * so no note is a claim written by hand. */
#include "reproduce_internal.h"

#include <math.h>
#include <stdio.h>

static uint32_t field_max(const fpe_format *d) { return ((uint32_t)1 << d->exp_bits) - 1; }

uint32_t repro_fp_max_bits(fpe_format_id f)
{
    const fpe_format *d = &fpe_formats[f];
    return (field_max(d) << (d->p - 1)) - 1;
}

uint32_t repro_fp_one_bits(fpe_format_id f)
{
    const fpe_format *d = &fpe_formats[f];
    return (uint32_t)d->bias << (d->p - 1);
}

double repro_fp_value(fpe_format_id f, uint32_t bits)
{
    fpe_env env = fpe_env_default();
    if (f == FPE_FMT_F16) return fpe_f16_to_f64(&env, (uint16_t)bits);
    if (f == FPE_FMT_BF16) return fpe_bf16_to_f64(&env, (uint16_t)bits);
    return fpe_f32_to_f64(&env, bits);
}

repro_fp_class repro_fp_classify(fpe_format_id f, uint32_t bits, int *sig_bits)
{
    const fpe_format *d = &fpe_formats[f];
    const uint32_t frac = bits & (((uint32_t)1 << (d->p - 1)) - 1);
    const uint32_t field = (bits >> (d->p - 1)) & field_max(d);
    int sig = 0;
    repro_fp_class c;
    if (field == field_max(d)) {
        c = frac ? REPRO_FP_NAN : REPRO_FP_INF;
    } else if (field != 0) {
        c = REPRO_FP_NORMAL;
        sig = d->p;
    } else if (frac == 0) {
        c = REPRO_FP_ZERO;
    } else {
        c = REPRO_FP_SUBNORMAL; /* the bits from the leading 1 of the fraction down */
        for (uint32_t v = frac; v; v >>= 1)
            sig++;
    }
    if (sig_bits) *sig_bits = sig;
    return c;
}

const char *repro_fp_class_name(repro_fp_class c)
{
    static const char *const names[] = {"zero", "subnormal", "normal", "infinity", "NaN"};
    return (unsigned)c <= REPRO_FP_NAN ? names[c] : "?";
}

void repro_fp_describe(fpe_format_id f, uint32_t bits, double exact, uint8_t flags,
                       repro_fp_result *out)
{
    out->format = f;
    out->bits = bits;
    out->value = repro_fp_value(f, bits);
    out->exact = exact;
    out->flags = flags;
    out->cls = repro_fp_classify(f, bits, &out->sig_bits);
    /* 1 when a nonzero value became zero, inf when a finite one became infinite */
    out->rel_err = exact == out->value ? 0 : fabs(out->value - exact) / fabs(exact);
}

/* 2^e when x is a power of two beyond 2^+-16, else %.10g. */
void repro_fp_number(char *buf, size_t len, double x)
{
    int e;
    if (x > 0 && frexp(x, &e) == 0.5 && (e - 1 > 16 || e - 1 < -16))
        snprintf(buf, len, "2^%d", e - 1);
    else
        snprintf(buf, len, "%.10g", x);
}

void repro_fp_note(const repro_fp_result *r, char *buf, size_t len)
{
    const fpe_format *d = &fpe_formats[r->format];
    const bool inexact = r->flags & FPE_FLAG_INEXACT;
    int n;
    switch (r->cls) {
    case REPRO_FP_SUBNORMAL:
        n = snprintf(buf, len, "subnormal: %d significant bit%s of %d", r->sig_bits,
                     r->sig_bits == 1 ? "" : "s", d->p);
        break;
    case REPRO_FP_NORMAL: n = snprintf(buf, len, "normal: %d significant bits", r->sig_bits); break;
    default: n = snprintf(buf, len, "%s", repro_fp_class_name(r->cls)); break;
    }
    if (n < 0 || (size_t)n >= len) return;
    char lim[32];
    if (r->flags & FPE_FLAG_OVERFLOW) {
        repro_fp_number(lim, sizeof lim, repro_fp_value(r->format, repro_fp_max_bits(r->format)));
        snprintf(buf + n, len - (size_t)n, "; overflow: rounded past the largest finite %s (%s)",
                 d->name, lim);
    } else if (inexact && r->cls == REPRO_FP_ZERO) {
        repro_fp_number(lim, sizeof lim, repro_fp_value(r->format, 1));
        snprintf(buf + n, len - (size_t)n,
                 "; underflow: rounded to 0 (the smallest subnormal is %s)", lim);
    } else if (inexact) {
        snprintf(buf + n, len - (size_t)n, "; rounded: relative error %.2g", r->rel_err);
    } else {
        snprintf(buf + n, len - (size_t)n, "; exact");
    }
}
