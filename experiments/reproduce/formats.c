/* formats.c: study 1, the formats' facts and worked fp16 examples, from the
 * emulator. */
#include "reproduce_internal.h"

#include <math.h>
#include <stdint.h>

#include "fpe.h"
#include "report.h"

typedef struct fmt_fact {
    const char *name;
    fpe_format_id f;
    uint32_t min_sub, min_norm, max, one, one_next;
} fmt_fact;

static double value_of(fpe_format_id f, uint32_t bits)
{
    fpe_env env = fpe_env_default();
    if (f == FPE_FMT_F16) return fpe_f16_to_f64(&env, (uint16_t)bits);
    if (f == FPE_FMT_BF16) return fpe_bf16_to_f64(&env, (uint16_t)bits);
    return fpe_f32_to_f64(&env, bits);
}

void repro_study_formats(repro_study *s)
{
    rp_section(s->rep, "formats", "Format facts");
    rp_claim(s->rep,
             "fp16 has 11 significant bits and a range of 2^-24 .. 65504; bf16 keeps fp32's "
             "range with 8 significant bits.",
             "IEEE 754-2008 binary16 and binary32; bfloat16 as Google and Intel define it: "
             "fp16 min subnormal 2^-24 ~ 5.96e-8, min normal 2^-14 ~ 6.10e-5, max 65504; bf16 "
             "min subnormal 2^-133, min normal 2^-126, max ~ 3.39e38.",
             "Computed below by the emulator from the formats' bit patterns.",
             "None: these are definitions, and the emulator's conversions are checked against "
             "MPFR bit for bit.");
    static const fmt_fact facts[] = {
        {"fp16", FPE_FMT_F16, 0x0001, 0x0400, 0x7BFF, 0x3C00, 0x3C01},
        {"bf16", FPE_FMT_BF16, 0x0001, 0x0080, 0x7F7F, 0x3F80, 0x3F81},
        {"fp32", FPE_FMT_F32, 0x00000001, 0x00800000, 0x7F7FFFFF, 0x3F800000, 0x3F800001},
    };
    repro_csv c = {.ok = false};
    if (repro_csv_open(s, &c, "formats.csv",
                       "format,precision_bits,min_subnormal,min_normal,max,machine_epsilon,"
                       "log2_min_subnormal,log2_min_normal")) {
        for (int i = 0; i < 3; i++) {
            const fmt_fact *f = &facts[i];
            const double sub = value_of(f->f, f->min_sub), norm = value_of(f->f, f->min_norm);
            const double eps = value_of(f->f, f->one_next) - value_of(f->f, f->one);
            repro_csv_row(&c, "%s,%d,%.9g,%.9g,%.9g,%.9g,%d,%d", f->name, 1 - (int)log2(eps), sub,
                          norm, value_of(f->f, f->max), eps, (int)log2(sub), (int)log2(norm));
        }
    }
    if (!repro_csv_close(s, &c)) {
        repro_section_failed(s, "formats.csv");
        return;
    }
    rp_table_csv(s->rep, "The formats, from the emulator", "formats.csv");

    /* worked examples, each through the emulator's conversions and adds */
    fpe_env env = fpe_env_default();
    const uint16_t a = fpe_f64_to_f16(&env, 0.00006666666);
    const uint16_t b = fpe_f64_to_f16(&env, 65520.0);
    const uint16_t z = fpe_f64_to_f16(&env, ldexp(1.0, -25));
    const uint16_t w = fpe_f64_to_f16(&env, 2048.0), d = fpe_f64_to_f16(&env, 1.0);
    const uint16_t sum = fpe_f16_add(&env, w, d);
    const uint16_t w2 = fpe_f64_to_f16(&env, 2047.0), sum2 = fpe_f16_add(&env, w2, d);
    if (repro_csv_open(s, &c, "examples.csv", "input,fp16_bits,fp16_value,note")) {
        repro_csv_row(&c, "0.00006666666,0x%04X,%.10g,below 2^-14: a subnormal with fewer bits", a,
                      value_of(FPE_FMT_F16, a));
        repro_csv_row(&c, "65520,0x%04X,%g,rounds past 65504 to infinity", b,
                      value_of(FPE_FMT_F16, b));
        repro_csv_row(&c, "2^-25,0x%04X,%g,half the smallest subnormal: ties to even give 0", z,
                      value_of(FPE_FMT_F16, z));
        repro_csv_row(&c, "2048 + 1,0x%04X,%g,|w| >= 2^11 |dw|: the update is lost", sum,
                      value_of(FPE_FMT_F16, sum));
        repro_csv_row(&c, "2047 + 1,0x%04X,%g,|w| < 2^11 |dw|: the update lands", sum2,
                      value_of(FPE_FMT_F16, sum2));
    }
    if (!repro_csv_close(s, &c)) {
        repro_section_failed(s, "examples.csv");
        return;
    }
    rp_table_csv(s->rep, "Worked examples in fp16 (round to nearest even)", "examples.csv");
}
