/* formats.c: study 1, the formats' facts and worked fp16 examples, from the
 * emulator.  Every number on the page is computed here: the facts from the
 * formats' bit patterns (built from their descriptors, fpe_formats), each
 * example's note from its result's class, flags and error (fp_note.c), and
 * the literature's values are data that the text and the difference are
 * both made from. */
#include "reproduce_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fpe.h"
#include "report.h"

/* The formats' facts as the standards state them (IEEE 754-2008 binary16
 * and binary32; bfloat16 as Google and Intel define it): significant bits,
 * log2 of the smallest subnormal and normal, the largest finite value. */
typedef struct fmt_literature {
    fpe_format_id f;
    int p, log2_min_sub, log2_min_norm;
    double max;
} fmt_literature;

static const fmt_literature literature[] = {
    {FPE_FMT_F16, 11, -24, -14, 65504},
    {FPE_FMT_BF16, 8, -133, -126, 3.3895313892515355e38},
    {FPE_FMT_F32, 24, -149, -126, 3.4028234663852886e38},
};
#define N_FORMATS (sizeof literature / sizeof *literature)

typedef struct fmt_measured {
    int p, log2_min_sub, log2_min_norm;
    double min_sub, min_norm, max, eps;
} fmt_measured;

static fmt_measured measure(fpe_format_id f)
{
    const fpe_format *d = &fpe_formats[f];
    const uint32_t one = repro_fp_one_bits(f);
    fmt_measured m;
    m.min_sub = repro_fp_value(f, 1);
    m.min_norm = repro_fp_value(f, (uint32_t)1 << (d->p - 1));
    m.max = repro_fp_value(f, repro_fp_max_bits(f));
    m.eps = repro_fp_value(f, one + 1) - repro_fp_value(f, one);
    m.p = 1 - ilogb(m.eps);
    m.log2_min_sub = ilogb(m.min_sub);
    m.log2_min_norm = ilogb(m.min_norm);
    return m;
}

/* printf at the end of buf (a text of len bytes); truncated when full. */
static void appendf(char *buf, size_t len, const char *fmt, ...)
{
    const size_t n = strlen(buf);
    va_list ap;
    va_start(ap, fmt);
    if (n < len) vsnprintf(buf + n, len - n, fmt, ap);
    va_end(ap);
}

/* The claim, with the standards' values and ours side by side and the
 * difference decided by comparing them; formats.csv. */
static bool write_facts(repro_study *s)
{
    fmt_measured m[N_FORMATS];
    char lit[1024] = "",
         ours[1024] = "Computed by the emulator from the formats' bit patterns: ", diff[512] = "";
    for (size_t i = 0; i < N_FORMATS; i++) {
        const fmt_literature *l = &literature[i];
        const char *name = fpe_formats[l->f].name, *sep = i ? "; " : "";
        m[i] = measure(l->f);
        appendf(lit, sizeof lit,
                "%s%s: %d significant bits, min subnormal 2^%d ~ %.3g, min normal 2^%d ~ %.3g, "
                "max %.6g",
                sep, name, l->p, l->log2_min_sub, ldexp(1, l->log2_min_sub), l->log2_min_norm,
                ldexp(1, l->log2_min_norm), l->max);
        appendf(ours, sizeof ours,
                "%s%s: %d significant bits, min subnormal 2^%d, min normal 2^%d, max %.6g", sep,
                name, m[i].p, m[i].log2_min_sub, m[i].log2_min_norm, m[i].max);
        if (m[i].p != l->p || m[i].log2_min_sub != l->log2_min_sub ||
            m[i].log2_min_norm != l->log2_min_norm || m[i].max != l->max)
            appendf(diff, sizeof diff, "%s%s differs from the standard", *diff ? "; " : "", name);
    }
    if (!*diff)
        snprintf(diff, sizeof diff,
                 "None: every value agrees with the standards, and the emulator's conversions "
                 "are checked against MPFR bit for bit.");
    rp_claim(s->rep,
             "fp16 has few significant bits and a narrow range; bf16 keeps fp32's range with "
             "fewer significant bits still.",
             lit, ours, diff);
    repro_csv c = {.ok = false};
    if (repro_csv_open(s, &c, "formats.csv",
                       "format,precision_bits,min_subnormal,min_normal,max,machine_epsilon,"
                       "log2_min_subnormal,log2_min_normal"))
        for (size_t i = 0; i < N_FORMATS; i++)
            repro_csv_row(&c, "%s,%d,%.9g,%.9g,%.9g,%.9g,%d,%d", fpe_formats[literature[i].f].name,
                          m[i].p, m[i].min_sub, m[i].min_norm, m[i].max, m[i].eps,
                          m[i].log2_min_sub, m[i].log2_min_norm);
    return repro_csv_close(s, &c);
}

/* The worked examples: a value converted to fp16, or an fp16 weight w plus
 * an update dw (has_dw) added in fp16. */
typedef struct example {
    double x, dw;
    bool has_dw;
} example;

static const example examples[] = {
    {0.00006666666, 0, false}, /* the seed article's: rounding, not underflow */
    {0.000001, 0, false},      /* below 2^-14: subnormal */
    {65520, 0, false},         {0x1p-25, 0, false}, {2048, 1, true}, {2047, 1, true},
};

static void example_row(repro_csv *c, const example *e)
{
    fpe_env env = fpe_env_default();
    char in[80], a[32], b[32], note[512];
    repro_fp_number(a, sizeof a, e->x);
    uint16_t w = fpe_f64_to_f16(&env, e->x), bits = w;
    double exact = e->x;
    if (e->has_dw) {
        const uint16_t dw = fpe_f64_to_f16(&env, e->dw);
        env.flags = 0; /* the add's flags only: w and dw are exact in fp16 */
        bits = fpe_f16_add(&env, w, dw);
        exact = repro_fp_value(FPE_FMT_F16, w) + repro_fp_value(FPE_FMT_F16, dw);
        repro_fp_number(b, sizeof b, e->dw);
        snprintf(in, sizeof in, "%s + %s", a, b);
    } else {
        snprintf(in, sizeof in, "%s", a);
    }
    repro_fp_result r;
    repro_fp_describe(FPE_FMT_F16, bits, exact, env.flags, &r);
    repro_fp_note(&r, note, sizeof note);
    if (e->has_dw) {
        /* the 2^p rule beside what happened */
        const int p = fpe_formats[FPE_FMT_F16].p;
        const double ratio = fabs(e->x) / fabs(e->dw);
        const size_t n = strlen(note);
        snprintf(note + n, sizeof note - n, "; |w|/|dw| = %.10g %s 2^%d: the update %s", ratio,
                 ratio >= ldexp(1, p) ? ">=" : "<", p,
                 bits == w        ? "is lost (w + dw = w)"
                 : r.rel_err == 0 ? "lands"
                                  : "lands rounded");
    }
    repro_csv_row(c, "%s,0x%04X,%.10g,%s,%d,%.3g,%s", in, bits, r.value, repro_fp_class_name(r.cls),
                  r.sig_bits, r.rel_err, note);
}

void repro_study_formats(repro_study *s)
{
    rp_section(s->rep, "formats", "Format facts");
    if (!write_facts(s)) {
        repro_section_failed(s, "formats.csv");
        return;
    }
    rp_table_csv(s->rep, "The formats, from the emulator", "formats.csv");
    repro_csv c = {.ok = false};

    if (repro_csv_open(s, &c, "examples.csv",
                       "input,fp16_bits,fp16_value,class,significant_bits,relative_error,note"))
        for (size_t i = 0; i < sizeof examples / sizeof *examples; i++)
            example_row(&c, &examples[i]);
    if (!repro_csv_close(s, &c)) {
        repro_section_failed(s, "examples.csv");
        return;
    }
    rp_table_csv(s->rep,
                 "Worked examples in fp16 (round to nearest even); each note is made from the "
                 "result's class, the emulator's flags and the relative error",
                 "examples.csv");
}
