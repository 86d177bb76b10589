/* bench_chop.c: array rounding f32 -> fp16/bf16 in `ampscope bench emu` (issue 19).
 *
 * Two named input sets of BENCH_CHOP_N floats, drawn once from a fixed seed:
 *   fp16-normal  random sign, exponent in [-6, 6], random significand: normal in fp16 and bf16;
 *   gradient     like a gradient: 95.7% log-uniform magnitudes 2^-30 .. 2^10 (40% of them below
 *                fp16's normal range: subnormal or zero results), 2% zeros, 1% fp16 overflow
 *                (2^16 .. 2^20, and 65520 and the float just below it), 0.3% bf16 overflow
 *                (next to FLT_MAX), 0.5% NaN (quiet and signaling), 0.5% infinities.
 * Every row times the library (fpe_chop_f32_to_u16, or fpe_chop_f32 for the f32-out rows) and
 * the code as it was before issue 19 (bench_chop_before.c) on the same inputs, interleaved
 * repetition by repetition, and gives the ratio; the round-to-nearest rows also time the
 * hardware (F16C for fp16, AVX512-BF16 for bf16) where the CPU has it.  Before timing, the
 * library and the baseline must agree on every result, count, flag and the final random index;
 * the hardware's disagreements are counted in its column.  Times are the process's CPU time
 * (ut_cpu_seconds), so that other work on the machine stretches no row. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_chop.h"
#include "cli.h"
#include "commands.h"
#include "util.h"

#define BENCH_CHOP_N    (1u << 16)
#define BENCH_CHOP_REPS 9

enum { SET_NORMAL, SET_GRADIENT, SET_COUNT };
static const char *const set_names[SET_COUNT] = {"fp16-normal", "gradient"};

enum { IMPL_BEFORE, IMPL_AFTER, IMPL_HW };

typedef struct chop_data {
    float in[SET_COUNT][BENCH_CHOP_N];
    uint16_t out[BENCH_CHOP_N];
    float fout[BENCH_CHOP_N];
    fpe_chop_counts counts;
} chop_data;

typedef struct chop_pass {
    int impl, fmt, mode, set;
    bool counts, f32_out;
} chop_pass;

static volatile uint64_t chop_sink;

/* ---- the hardware ------------------------------------------------------- */
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#include <cpuid.h>
#include <immintrin.h>
#define CHOP_HW 1

static bool os_saves(unsigned mask)
{
    unsigned lo, hi;
    __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    (void)hi;
    return (lo & mask) == mask;
}

static bool have_f16c(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
    return (c & bit_F16C) && (c & bit_AVX) && (c & bit_OSXSAVE) && os_saves(6);
}

/* AVX512-BF16: CPUID.(7,1):EAX bit 5, with AVX-512F and the ZMM state saved. */
static bool have_avx512bf16(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE) || !os_saves(0xE6)) return false;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(b & bit_AVX512F)) return false;
    if (!__get_cpuid_count(7, 1, &a, &b, &c, &d)) return false;
    return (a >> 5) & 1;
}

__attribute__((target("avx,f16c"))) static void hw_f16(const float *in, uint16_t *out, size_t n)
{
    size_t whole = n - n % 8;
    for (size_t i = 0; i < whole; i += 8)
        _mm_storeu_si128((__m128i *)(out + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT));
    for (size_t i = whole; i < n; i++)
        out[i] = (uint16_t)_cvtss_sh(in[i], _MM_FROUND_TO_NEAREST_INT);
}

__attribute__((target("avx512f,avx512bf16"))) static void hw_bf16(const float *in, uint16_t *out,
                                                                  size_t n)
{
    size_t whole = n - n % 16;
    for (size_t i = 0; i < whole; i += 16) {
        __m256bh h = _mm512_cvtneps_pbh(_mm512_loadu_ps(in + i));
        _mm256_storeu_si256((__m256i *)(out + i), (__m256i)h);
    }
    for (size_t i = whole; i < n; i++) { /* not reached: n is a multiple of 16 */
        uint32_t u;
        memcpy(&u, &in[i], sizeof u);
        out[i] = (uint16_t)(u >> 16);
    }
}
#else
#define CHOP_HW 0
static bool have_f16c(void) { return false; }
static bool have_avx512bf16(void) { return false; }
#endif

static bool have_hw(int fmt) { return fmt == FPE_FMT_F16 ? have_f16c() : have_avx512bf16(); }
static const char *hw_name(int fmt) { return fmt == FPE_FMT_F16 ? "f16c" : "avx512bf16"; }

static void run_pass(chop_data *d, const chop_pass *p, fpe_env *env)
{
    const float *in = d->in[p->set];
    fpe_chop_counts *c = p->counts ? &d->counts : NULL;
    const fpe_format_id fmt = (fpe_format_id)p->fmt;
    if (p->impl == IMPL_HW) {
#if CHOP_HW
        if (p->fmt == FPE_FMT_F16)
            hw_f16(in, d->out, BENCH_CHOP_N);
        else
            hw_bf16(in, d->out, BENCH_CHOP_N);
#endif
    } else if (p->f32_out) {
        if (p->impl == IMPL_AFTER)
            fpe_chop_f32(env, fmt, in, d->fout, BENCH_CHOP_N, c);
        else
            bench_chop_before_f32(env, fmt, in, d->fout, BENCH_CHOP_N, c);
        uint32_t u;
        memcpy(&u, &d->fout[BENCH_CHOP_N - 1], sizeof u);
        chop_sink += u;
        return;
    } else if (p->impl == IMPL_AFTER) {
        fpe_chop_f32_to_u16(env, fmt, in, d->out, BENCH_CHOP_N, c);
    } else {
        bench_chop_before_f32_to_u16(env, fmt, in, d->out, BENCH_CHOP_N, c);
    }
    chop_sink += d->out[BENCH_CHOP_N - 1];
}

/* ---- inputs --------------------------------------------------------------- */
static uint64_t chop_splitmix(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static uint32_t gradient_value(uint64_t r)
{
    const uint32_t sign = (uint32_t)(r >> 63) << 31, frac = (uint32_t)(r >> 20) & 0x7FFFFF;
    const uint32_t pick = (uint32_t)(r % 1000);
    if (pick < 20) return sign;                    /* zeros */
    if (pick < 30) {                               /* fp16 overflow, its edges included */
        if (pick == 20) return sign | 0x477FF000u; /* 65520: a tie, overflows in near modes */
        if (pick == 21) return sign | 0x477FEFFFu; /* just below: 65504 in near modes */
        return sign | (uint32_t)(127 + 16 + (r >> 8) % 5) << 23 | frac;
    }
    if (pick < 33) return sign | (0x7F7F8000u + (frac & 0x7FFF)); /* bf16 overflow */
    if (pick < 38) return sign | 0x7F800000u | (frac | 1);        /* NaN: quiet or signaling */
    if (pick < 43) return sign | 0x7F800000u;                     /* infinity */
    const uint32_t e = 127 - 30 + (uint32_t)((r >> 8) % 40);      /* 2^-30 .. 2^10 */
    return sign | e << 23 | frac;
}

static void chop_fill(chop_data *d)
{
    uint64_t state = 20261201;
    for (size_t i = 0; i < BENCH_CHOP_N; i++) {
        uint64_t r = chop_splitmix(&state);
        uint32_t u = (uint32_t)(r >> 63) << 31 | (uint32_t)(127 + (r % 13) - 6) << 23 |
                     ((uint32_t)(r >> 16) & 0x7FFFFF);
        memcpy(&d->in[SET_NORMAL][i], &u, sizeof u);
        u = gradient_value(chop_splitmix(&state));
        memcpy(&d->in[SET_GRADIENT][i], &u, sizeof u);
    }
}

/* ---- checks ---------------------------------------------------------------- */
static fpe_env pass_env(int mode)
{
    fpe_env env = fpe_env_default();
    env.round = (uint8_t)mode;
    env.sr_seed = 1;
    env.sr_index = 3; /* not a multiple of 4: Philox words start mid-block */
    return env;
}

/* Elements on which the library and the baseline (or the hardware) disagree. */
static size_t chop_check(chop_data *d, chop_pass p)
{
    static uint16_t want[BENCH_CHOP_N];
    static float fwant[BENCH_CHOP_N];
    fpe_env e1 = pass_env(p.mode), e2 = e1;
    fpe_chop_counts c1 = {0, 0, 0, 0}, c2 = {0, 0, 0, 0};
    const chop_pass after = {IMPL_AFTER, p.fmt, p.mode, p.set, p.counts, p.f32_out};
    d->counts = c1;
    run_pass(d, &after, &e1);
    c1 = d->counts;
    memcpy(want, d->out, sizeof want);
    memcpy(fwant, d->fout, sizeof fwant);
    d->counts = c2;
    run_pass(d, &p, &e2);
    c2 = d->counts;
    size_t differ = 0;
    for (size_t i = 0; i < BENCH_CHOP_N; i++)
        differ +=
            p.f32_out ? memcmp(&fwant[i], &d->fout[i], sizeof(float)) != 0 : want[i] != d->out[i];
    if (p.impl != IMPL_HW &&
        (memcmp(&c1, &c2, sizeof c1) != 0 || e1.flags != e2.flags || e1.sr_index != e2.sr_index))
        differ += 1;
    d->counts = (fpe_chop_counts){0, 0, 0, 0};
    return differ;
}

/* ---- timing ---------------------------------------------------------------- */
/* Times the passes interleaved: rate[k] is pass k's median in Melem/s, ratio[1] the median over
 * the repetitions of pass 1's rate over pass 0's in the same repetition, ratio[2] (np = 3) that
 * of pass 1's rate over pass 2's. */
static void chop_time(chop_data *d, const chop_pass *p, int np, double rep_seconds, int reps,
                      double *rate, double *ratio)
{
    fpe_env env = pass_env(p[0].mode);
    unsigned long passes = 1;
    double elapsed;
    for (;;) {
        double t0 = ut_cpu_seconds();
        for (unsigned long k = 0; k < passes; k++)
            run_pass(d, &p[0], &env);
        elapsed = ut_cpu_seconds() - t0;
        if (elapsed >= rep_seconds / 8 || passes >= (1ul << 30)) break;
        passes *= 2;
    }
    passes = (unsigned long)((double)passes * rep_seconds / (elapsed > 0 ? elapsed : 1e-9)) + 1;
    double r[4][BENCH_CHOP_REPS], q[4][BENCH_CHOP_REPS];
    for (int rep = 0; rep < reps; rep++) {
        for (int k = 0; k < np; k++) {
            env = pass_env(p[k].mode);
            double t0 = ut_cpu_seconds();
            for (unsigned long j = 0; j < passes; j++)
                run_pass(d, &p[k], &env);
            double t = ut_cpu_seconds() - t0;
            r[k][rep] = (double)passes * BENCH_CHOP_N / (t > 0 ? t : 1e-9) / 1e6;
        }
        for (int k = 0; k < np; k++)
            q[k][rep] = k < 2 ? r[k][rep] / r[0][rep] : r[1][rep] / r[2][rep];
    }
    for (int k = 0; k < np; k++) {
        qsort(r[k], (size_t)reps, sizeof r[k][0], bench_compare_double);
        qsort(q[k], (size_t)reps, sizeof q[k][0], bench_compare_double);
        rate[k] = r[k][reps / 2];
        ratio[k] = q[k][reps / 2];
    }
}

/* ---- the table ------------------------------------------------------------- */
static void print_row(bool csv, const chop_pass *p, const double *rate, const double *ratio, int np,
                      size_t hw_differ, const char *target)
{
    const char *fmt = p->fmt == FPE_FMT_F16 ? "fp16" : "bf16";
    const char *what = p->f32_out ? "fpe_chop_f32" : p->counts ? "+counts" : "-";
    char hw[64] = "", hw_ratio[32] = "";
    const char *third = np < 3 ? "" : p->f32_out ? "u16-chop" : hw_name(p->fmt);
    if (np > 2) {
        snprintf(hw, sizeof hw, "%.1f", rate[2]);
        snprintf(hw_ratio, sizeof hw_ratio, "%.3g", ratio[2]);
        if (hw_differ)
            snprintf(hw + strlen(hw), sizeof hw - strlen(hw), " (%zu differ)", hw_differ);
    }
    if (csv) {
        printf("%s,%s,%s,%s,%.1f,%.1f,%.3g,%s,%s,%s,%s\n", fmt, set_names[p->set],
               fpe_round_name((fpe_round)p->mode), what, rate[0], rate[1], ratio[1], third, hw,
               hw_ratio, target);
    } else {
        char line[200];
        snprintf(line, sizeof line,
                 "%-4s %-11s %-11s %-12s %9.1f %9.1f %8.2fx  %-10s %-18s %-7s %s", fmt,
                 set_names[p->set], fpe_round_name((fpe_round)p->mode), what, rate[0], rate[1],
                 ratio[1], third, hw, hw_ratio[0] ? hw_ratio : "", target);
        size_t len = strlen(line);
        while (len > 0 && line[len - 1] == ' ')
            line[--len] = '\0';
        printf("%s\n", line);
    }
    fflush(stdout);
}

/* The target for a row, as text. */
static const char *row_target(const chop_pass *p, bool hw)
{
    if (p->f32_out) return "aft/u16>=0.83";
    const bool sr = p->mode >= FPE_SR_PROP;
    if (p->set == SET_GRADIENT) return sr ? "after>=10x" : "after>=5x";
    if (sr) return "after>=4x";
    if (hw && p->mode == FPE_RNE && p->fmt == FPE_FMT_F16) return "vs hw>=0.7"; /* F16C only */
    return "";
}

int bench_chop_table(bool csv, double rep_seconds, int reps)
{
    chop_data *d = calloc(1, sizeof *d);
    if (!d) return cli_error(CLI_EFAIL, "out of memory");
    chop_fill(d);
    if (reps > BENCH_CHOP_REPS) reps = BENCH_CHOP_REPS;
    if (csv)
        printf("format,inputs,mode,variant,before,after,after/before,hardware,hw_rate,"
               "after/hw,target\n");
    else
        printf("\narray rounding f32 -> fp16/bf16 (issue 19): %u elements per set, Melem/s of CPU "
               "time; before = the code before issue 19\n%-4s %-11s %-11s %-12s %9s %9s %9s  %-10s "
               "%-18s %-7s %s\n",
               BENCH_CHOP_N, "fmt", "inputs", "mode", "variant", "before", "after", "ratio",
               "hardware", "hw rate", "aft/hw", "target");
    { /* a warm-up, so that the first row runs at the clock the others see */
        const chop_pass warm = {IMPL_BEFORE, FPE_FMT_F16, FPE_RNE, SET_NORMAL, false, false};
        fpe_env env = pass_env(FPE_RNE);
        for (const double t0 = ut_cpu_seconds(); ut_cpu_seconds() - t0 < 0.3;)
            run_pass(d, &warm, &env);
    }
    size_t bad = 0;
    const char *bad_row = NULL;
    for (int fmt = FPE_FMT_F16; fmt <= FPE_FMT_BF16; fmt++)
        for (int set = 0; set < SET_COUNT; set++)
            for (int variant = 0; variant < 3; variant++)
                for (int mode = 0; mode < FPE_ROUND_COUNT; mode++) {
                    const bool f32_out = variant == 2, counts = variant == 1;
                    if (f32_out && mode != FPE_RNE && mode != FPE_SR_PROP) continue;
                    /* the third pass: the hardware, or for the f32-out rows the library's
                     * bit-pattern chop */
                    chop_pass p[3] = {
                        {IMPL_BEFORE, fmt, mode, set, counts, f32_out},
                        {IMPL_AFTER, fmt, mode, set, counts, f32_out},
                        {f32_out ? IMPL_AFTER : IMPL_HW, fmt, mode, set, false, false}};
                    const bool hw = mode == FPE_RNE && !counts && !f32_out && have_hw(fmt);
                    const int np = hw || f32_out ? 3 : 2;
                    size_t differ = chop_check(d, p[0]);
                    if (differ && !bad_row) {
                        bad = differ;
                        bad_row = set_names[set];
                    }
                    const size_t hw_differ = hw ? chop_check(d, p[2]) : 0;
                    double rate[3], ratio[3];
                    chop_time(d, p, np, rep_seconds, reps, rate, ratio);
                    print_row(csv, &p[0], rate, ratio, np, hw_differ, row_target(&p[0], hw));
                }
    free(d);
    if (bad_row)
        return cli_error(CLI_EFAIL,
                         "the library and the code before issue 19 disagree on %zu of %u "
                         "elements (%s inputs)",
                         bad, BENCH_CHOP_N, bad_row);
    return CLI_OK;
}
