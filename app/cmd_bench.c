/* cmd_bench.c: `ampscope bench emu`, the emulator's speed on one core.
 *
 * Each row times one operation, format and rounding mode over a pass of
 * BENCH_N independent inputs drawn once from a fixed seed (random signs,
 * exponents in [-6, 6], random significands: normal numbers in every
 * format, results mostly normal too).  A row runs passes for about
 * rep_seconds, repeats that several times and reports the median rate.
 * Results are summed into a volatile sink so no pass can be optimised away.
 *
 * Beside the emulator it times two references on the same inputs, after
 * checking that they give the same answers:
 *   - the MPFR recipe the oracle uses (precision 11, exponent range of fp16,
 *     mpfr_check_range + mpfr_subnormalize), for fp16 add and mul;
 *   - the hardware conversion f32 -> f16 (F16C), where the CPU has it.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <inttypes.h>
#include <math.h>
#include <mpfr.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "cli_options.h"
#include "commands.h"
#include "bench_array.h"
#include "bench_chop.h"
#include "bench_scalar.h"
#include "fpe.h"
#include "kernels.h"
#include "util.h"

#define BENCH_N        (1u << 16)
#define BENCH_MAX_REPS 9

typedef struct bench_data {
    uint16_t f16[3][BENCH_N]; /* operands a, b, c */
    uint16_t bf16[3][BENCH_N];
    uint32_t f32[3][BENCH_N];
    float in[BENCH_N];            /* f32[0] as floats: the input of conversions and chop */
    double f16_value[2][BENCH_N]; /* f16[0], f16[1] as doubles, for MPFR */
    uint16_t out[BENCH_N];
    fpe_chop_counts counts;
} bench_data;

static volatile uint64_t bench_sink;

static void sink_double(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    bench_sink += u;
}

/* One pass over the BENCH_N inputs in env's mode. */
typedef void (*bench_pass)(bench_data *d, fpe_env *env);

/* ---- emulator passes --------------------------------------------------- */
#define PASS_BINARY(F, arr, op)                                                                    \
    static void pass_##F##_##op(bench_data *d, fpe_env *env)                                       \
    {                                                                                              \
        uint64_t acc = 0;                                                                          \
        for (size_t i = 0; i < BENCH_N; i++)                                                       \
            acc += fpe_##F##_##op(env, d->arr[0][i], d->arr[1][i]);                                \
        bench_sink += acc;                                                                         \
    }
#define PASS_FORMAT(F, arr, sign)                                                                  \
    PASS_BINARY(F, arr, add)                                                                       \
    PASS_BINARY(F, arr, mul)                                                                       \
    PASS_BINARY(F, arr, div)                                                                       \
    static void pass_##F##_fma(bench_data *d, fpe_env *env)                                        \
    {                                                                                              \
        uint64_t acc = 0;                                                                          \
        for (size_t i = 0; i < BENCH_N; i++)                                                       \
            acc += fpe_##F##_mulAdd(env, d->arr[0][i], d->arr[1][i], d->arr[2][i]);                \
        bench_sink += acc;                                                                         \
    }                                                                                              \
    static void pass_##F##_sqrt(bench_data *d, fpe_env *env)                                       \
    {                                                                                              \
        uint64_t acc = 0;                                                                          \
        for (size_t i = 0; i < BENCH_N; i++)                                                       \
            acc += fpe_##F##_sqrt(env, d->arr[0][i] & ~(sign)); /* |a| */                          \
        bench_sink += acc;                                                                         \
    }

PASS_FORMAT(f16, f16, 0x8000u)
PASS_FORMAT(bf16, bf16, 0x8000u)
PASS_FORMAT(f32, f32, 0x80000000u)

#define PASS_CONVERT(name, fn, arr)                                                                \
    static void pass_##name(bench_data *d, fpe_env *env)                                           \
    {                                                                                              \
        uint64_t acc = 0;                                                                          \
        for (size_t i = 0; i < BENCH_N; i++)                                                       \
            acc += fn(env, d->arr[0][i]);                                                          \
        bench_sink += acc;                                                                         \
    }
PASS_CONVERT(f32_to_f16, fpe_f32_to_f16, f32)
PASS_CONVERT(f32_to_bf16, fpe_f32_to_bf16, f32)
PASS_CONVERT(f16_to_f32, fpe_f16_to_f32, f16)
PASS_CONVERT(bf16_to_f32, fpe_bf16_to_f32, bf16)

#define PASS_CHOP(name, fmt, counts_arg)                                                           \
    static void pass_##name(bench_data *d, fpe_env *env)                                           \
    {                                                                                              \
        fpe_chop_f32_to_u16(env, fmt, d->in, d->out, BENCH_N, counts_arg);                         \
        bench_sink += d->out[BENCH_N - 1];                                                         \
    }
PASS_CHOP(chop_f16, FPE_FMT_F16, NULL)
PASS_CHOP(chop_bf16, FPE_FMT_BF16, NULL)
PASS_CHOP(chop_f16_counts, FPE_FMT_F16, &d->counts)
PASS_CHOP(chop_bf16_counts, FPE_FMT_BF16, &d->counts)

/* ---- the MPFR recipe (what tests/oracle does per operation) ------------- */
typedef int (*mpfr_binary)(mpfr_ptr, mpfr_srcptr, mpfr_srcptr, mpfr_rnd_t);

/* out[i] = a[i] op b[i] rounded to fp16 by MPFR, as doubles.  When out is
 * NULL, the results are only summed into the sink. */
static void mpfr_f16_run(const bench_data *d, mpfr_binary op, double *out)
{
    mpfr_exp_t emin = mpfr_get_emin(), emax = mpfr_get_emax();
    mpfr_set_emin(-23); /* fp16 in MPFR's convention (REFERENCES.md) */
    mpfr_set_emax(16);
    mpfr_t x, y, r;
    mpfr_inits2(11, x, y, r, (mpfr_ptr)0);
    double acc = 0;
    for (size_t i = 0; i < BENCH_N; i++) {
        mpfr_set_prec(r, 11);
        mpfr_set_d(x, d->f16_value[0][i], MPFR_RNDN);
        mpfr_set_d(y, d->f16_value[1][i], MPFR_RNDN);
        mpfr_clear_flags();
        int t = op(r, x, y, MPFR_RNDN);
        t = mpfr_check_range(r, t, MPFR_RNDN);
        mpfr_subnormalize(r, t, MPFR_RNDN);
        double v = mpfr_get_d(r, MPFR_RNDN);
        if (out) out[i] = v;
        acc += v;
    }
    mpfr_clears(x, y, r, (mpfr_ptr)0);
    mpfr_set_emin(emin);
    mpfr_set_emax(emax);
    sink_double(acc);
}

static void pass_mpfr_f16_add(bench_data *d, fpe_env *env)
{
    (void)env;
    mpfr_f16_run(d, mpfr_add, NULL);
}

static void pass_mpfr_f16_mul(bench_data *d, fpe_env *env)
{
    (void)env;
    mpfr_f16_run(d, mpfr_mul, NULL);
}

/* ---- F16C --------------------------------------------------------------- */
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <cpuid.h>
#include <immintrin.h>
#define BENCH_F16C 1

/* CPUID rather than __builtin_cpu_supports("f16c"), which clang 14 does not
 * know: F16C and AVX in CPUID.1:ECX, and the OS saving the YMM registers
 * (OSXSAVE, then XCR0 bits 1 and 2). */
static bool f16c_available(void)
{
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
    if (!(ecx & bit_F16C) || !(ecx & bit_AVX) || !(ecx & bit_OSXSAVE)) return false;
    unsigned xcr0_lo, xcr0_hi;
    __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    (void)xcr0_hi;
    return (xcr0_lo & 6) == 6;
}

/* f32 -> f16, round to nearest even, 8 at a time. */
__attribute__((target("avx,f16c"))) static void f16c_convert(const float *in, uint16_t *out,
                                                             size_t n)
{
    size_t whole = n - n % 8;
    for (size_t i = 0; i < whole; i += 8) {
        __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128((__m128i *)(out + i), h);
    }
    for (size_t i = whole; i < n; i++)
        out[i] = (uint16_t)_cvtss_sh(in[i], _MM_FROUND_TO_NEAREST_INT);
}

__attribute__((target("avx,f16c"))) static float f16c_widen(uint16_t h) { return _cvtsh_ss(h); }

__attribute__((target("avx,f16c"))) static void pass_f16c_array(bench_data *d, fpe_env *env)
{
    (void)env;
    f16c_convert(d->in, d->out, BENCH_N);
    bench_sink += d->out[BENCH_N - 1];
}

__attribute__((target("avx,f16c"))) static void pass_f16c_scalar(bench_data *d, fpe_env *env)
{
    (void)env;
    uint64_t acc = 0;
    for (size_t i = 0; i < BENCH_N; i++)
        acc += (uint16_t)_cvtss_sh(d->in[i], _MM_FROUND_TO_NEAREST_INT);
    bench_sink += acc;
}

__attribute__((target("avx,f16c"))) static void pass_f16c_to_f32(bench_data *d, fpe_env *env)
{
    (void)env;
    double acc = 0;
    for (size_t i = 0; i < BENCH_N; i++)
        acc += _cvtsh_ss(d->f16[0][i]);
    sink_double(acc);
}
#else
#define BENCH_F16C 0
static bool f16c_available(void) { return false; }
#endif

/* ---- the rows ------------------------------------------------------------ */
enum { REF_NONE, REF_MPFR, REF_F16C };

typedef struct bench_case {
    const char *kind; /* "scalar" (Mops/s) or "array" (Melem/s) */
    const char *op;
    const char *format;
    fpe_round round;
    int impl; /* REF_NONE = the emulator, else the reference it is */
    bench_pass pass;
    double target; /* the target in millions per second, 0 if none */
    int versus;    /* emulator rows: the reference to compare with */
} bench_case;

#define EMU(kind, op, fmt, mode, pass, target, versus)                                             \
    {                                                                                              \
        kind, op, fmt, mode, REF_NONE, pass, target, versus                                        \
    }

/* Targets from issue 2: scalar fp16/bf16 add and mul >= 300 Mops/s, array
 * f32 -> f16/bf16 in RNE >= 2 G elements/s, stochastic >= 500 M elements/s.
 * A reference row comes before the emulator rows compared with it. */
static const bench_case bench_cases[] = {
    {"scalar", "add", "fp16", FPE_RNE, REF_MPFR, pass_mpfr_f16_add, 0, REF_NONE},
    EMU("scalar", "add", "fp16", FPE_RNE, pass_f16_add, 300, REF_MPFR),
    EMU("scalar", "add", "fp16", FPE_RZ, pass_f16_add, 0, REF_NONE),
    EMU("scalar", "add", "fp16", FPE_SR_PROP, pass_f16_add, 0, REF_NONE),
    EMU("scalar", "add", "bf16", FPE_RNE, pass_bf16_add, 300, REF_NONE),
    EMU("scalar", "add", "bf16", FPE_RZ, pass_bf16_add, 0, REF_NONE),
    EMU("scalar", "add", "bf16", FPE_SR_PROP, pass_bf16_add, 0, REF_NONE),
    EMU("scalar", "add", "fp32", FPE_RNE, pass_f32_add, 0, REF_NONE),
    {"scalar", "mul", "fp16", FPE_RNE, REF_MPFR, pass_mpfr_f16_mul, 0, REF_NONE},
    EMU("scalar", "mul", "fp16", FPE_RNE, pass_f16_mul, 300, REF_MPFR),
    EMU("scalar", "mul", "fp16", FPE_RZ, pass_f16_mul, 0, REF_NONE),
    EMU("scalar", "mul", "fp16", FPE_SR_PROP, pass_f16_mul, 0, REF_NONE),
    EMU("scalar", "mul", "bf16", FPE_RNE, pass_bf16_mul, 300, REF_NONE),
    EMU("scalar", "mul", "bf16", FPE_RZ, pass_bf16_mul, 0, REF_NONE),
    EMU("scalar", "mul", "bf16", FPE_SR_PROP, pass_bf16_mul, 0, REF_NONE),
    EMU("scalar", "mul", "fp32", FPE_RNE, pass_f32_mul, 0, REF_NONE),
    EMU("scalar", "div", "fp16", FPE_RNE, pass_f16_div, 0, REF_NONE),
    EMU("scalar", "div", "bf16", FPE_RNE, pass_bf16_div, 0, REF_NONE),
    EMU("scalar", "div", "fp32", FPE_RNE, pass_f32_div, 0, REF_NONE),
    EMU("scalar", "fma", "fp16", FPE_RNE, pass_f16_fma, 0, REF_NONE),
    EMU("scalar", "fma", "bf16", FPE_RNE, pass_bf16_fma, 0, REF_NONE),
    EMU("scalar", "fma", "fp32", FPE_RNE, pass_f32_fma, 0, REF_NONE),
    EMU("scalar", "sqrt", "fp16", FPE_RNE, pass_f16_sqrt, 0, REF_NONE),
    EMU("scalar", "sqrt", "bf16", FPE_RNE, pass_bf16_sqrt, 0, REF_NONE),
    EMU("scalar", "sqrt", "fp32", FPE_RNE, pass_f32_sqrt, 0, REF_NONE),
#if BENCH_F16C
    {"scalar", "f32->f16", "fp16", FPE_RNE, REF_F16C, pass_f16c_scalar, 0, REF_NONE},
#endif
    EMU("scalar", "f32->f16", "fp16", FPE_RNE, pass_f32_to_f16, 0, REF_F16C),
    EMU("scalar", "f32->f16", "fp16", FPE_RZ, pass_f32_to_f16, 0, REF_NONE),
    EMU("scalar", "f32->f16", "fp16", FPE_SR_PROP, pass_f32_to_f16, 0, REF_NONE),
    EMU("scalar", "f32->bf16", "bf16", FPE_RNE, pass_f32_to_bf16, 0, REF_NONE),
    EMU("scalar", "f32->bf16", "bf16", FPE_RZ, pass_f32_to_bf16, 0, REF_NONE),
    EMU("scalar", "f32->bf16", "bf16", FPE_SR_PROP, pass_f32_to_bf16, 0, REF_NONE),
#if BENCH_F16C
    {"scalar", "f16->f32", "fp16", FPE_RNE, REF_F16C, pass_f16c_to_f32, 0, REF_NONE},
#endif
    EMU("scalar", "f16->f32", "fp16", FPE_RNE, pass_f16_to_f32, 0, REF_F16C),
    EMU("scalar", "bf16->f32", "bf16", FPE_RNE, pass_bf16_to_f32, 0, REF_NONE),
#if BENCH_F16C
    {"array", "f32->f16", "fp16", FPE_RNE, REF_F16C, pass_f16c_array, 0, REF_NONE},
#endif
    EMU("array", "f32->f16", "fp16", FPE_RNE, pass_chop_f16, 2000, REF_F16C),
    EMU("array", "f32->f16", "fp16", FPE_RZ, pass_chop_f16, 0, REF_NONE),
    EMU("array", "f32->f16", "fp16", FPE_SR_PROP, pass_chop_f16, 500, REF_NONE),
    EMU("array", "f32->f16 +counts", "fp16", FPE_RNE, pass_chop_f16_counts, 0, REF_NONE),
    EMU("array", "f32->bf16", "bf16", FPE_RNE, pass_chop_bf16, 2000, REF_NONE),
    EMU("array", "f32->bf16", "bf16", FPE_RZ, pass_chop_bf16, 0, REF_NONE),
    EMU("array", "f32->bf16", "bf16", FPE_SR_PROP, pass_chop_bf16, 500, REF_NONE),
    EMU("array", "f32->bf16 +counts", "bf16", FPE_RNE, pass_chop_bf16_counts, 0, REF_NONE),
};
#define BENCH_CASE_COUNT (sizeof bench_cases / sizeof bench_cases[0])

static const char *impl_name(int impl)
{
    return impl == REF_MPFR ? "mpfr" : impl == REF_F16C ? "f16c" : "emulator";
}

/* ---- inputs -------------------------------------------------------------- */
static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* A random normal number: sign, exponent in [-6, 6], significand bits. */
static uint32_t random_normal(uint64_t *state, int exp_bits, int frac_bits)
{
    uint64_t r = splitmix64(state);
    uint32_t bias = (1u << (exp_bits - 1)) - 1;
    uint32_t exponent = bias + (uint32_t)(r % 13) - 6;
    uint32_t frac = (uint32_t)(r >> 16) & ((1u << frac_bits) - 1);
    uint32_t sign = (uint32_t)(r >> 63);
    return sign << (exp_bits + frac_bits) | exponent << frac_bits | frac;
}

static void bench_fill(bench_data *d)
{
    uint64_t state = 20240601; /* fixed: every run times the same inputs */
    fpe_env env = fpe_env_default();
    for (int k = 0; k < 3; k++) {
        for (size_t i = 0; i < BENCH_N; i++) {
            d->f16[k][i] = (uint16_t)random_normal(&state, 5, 10);
            d->bf16[k][i] = (uint16_t)random_normal(&state, 8, 7);
            d->f32[k][i] = random_normal(&state, 8, 23);
        }
    }
    memcpy(d->in, d->f32[0], sizeof d->in);
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < BENCH_N; i++)
            d->f16_value[k][i] = fpe_f16_to_f64(&env, d->f16[k][i]);
}

/* ---- checks before timing ------------------------------------------------ */
/* Number of inputs on which the reference and the emulator (RNE) differ. */
static size_t bench_check(bench_data *d, const bench_case *c)
{
    fpe_env env = fpe_env_default();
    size_t differ = 0;
    if (c->impl == REF_MPFR) {
        double *want = malloc(BENCH_N * sizeof *want);
        if (!want) return BENCH_N;
        bool is_add = c->pass == pass_mpfr_f16_add;
        mpfr_f16_run(d, is_add ? mpfr_add : mpfr_mul, want);
        for (size_t i = 0; i < BENCH_N; i++) {
            uint16_t got = is_add ? fpe_f16_add(&env, d->f16[0][i], d->f16[1][i])
                                  : fpe_f16_mul(&env, d->f16[0][i], d->f16[1][i]);
            double g = fpe_f16_to_f64(&env, got);
            if (!(g == want[i] && signbit(g) == signbit(want[i]))) differ++;
        }
        free(want);
    }
#if BENCH_F16C
    if (c->impl == REF_F16C) {
        /* The F16C conversions are checked against the emulator's on all
         * inputs, both directions, whichever row this is. */
        uint16_t *hw = malloc(BENCH_N * sizeof *hw);
        if (!hw) return BENCH_N;
        f16c_convert(d->in, hw, BENCH_N);
        fpe_chop_f32_to_u16(&env, FPE_FMT_F16, d->in, d->out, BENCH_N, NULL);
        for (size_t i = 0; i < BENCH_N; i++)
            differ += hw[i] != d->out[i] || hw[i] != fpe_f32_to_f16(&env, d->f32[0][i]);
        free(hw);
        for (size_t i = 0; i < BENCH_N; i++) {
            float wide = f16c_widen(d->f16[0][i]);
            uint32_t bits;
            memcpy(&bits, &wide, sizeof bits);
            differ += bits != fpe_f16_to_f32(&env, d->f16[0][i]);
        }
    }
#endif
    return differ;
}

/* ---- timing -------------------------------------------------------------- */
int bench_compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median rate of one row in millions of elements per second. */
static double bench_measure(bench_data *d, const bench_case *c, double rep_seconds, int reps)
{
    fpe_env env = fpe_env_default();
    env.round = (uint8_t)c->round;
    env.sr_seed = 1;
    /* Calibrate: double the passes until they take an eighth of a repetition. */
    unsigned long passes = 1;
    double elapsed;
    for (;;) {
        double t0 = ut_seconds();
        for (unsigned long p = 0; p < passes; p++)
            c->pass(d, &env);
        elapsed = ut_seconds() - t0;
        if (elapsed >= rep_seconds / 8 || passes >= (1ul << 30)) break;
        passes *= 2;
    }
    passes = (unsigned long)((double)passes * rep_seconds / (elapsed > 0 ? elapsed : 1e-9)) + 1;
    double rates[BENCH_MAX_REPS];
    for (int r = 0; r < reps; r++) {
        double t0 = ut_seconds();
        for (unsigned long p = 0; p < passes; p++)
            c->pass(d, &env);
        double t = ut_seconds() - t0;
        rates[r] = (double)passes * BENCH_N / (t > 0 ? t : 1e-9) / 1e6;
    }
    qsort(rates, (size_t)reps, sizeof rates[0], bench_compare_double);
    return rates[reps / 2];
}

/* ---- output -------------------------------------------------------------- */
typedef struct bench_emu_args {
    bool csv, quick, chop, array, scalar;
} bench_emu_args;

static const opt_spec bench_emu_options[] = {
    {.name = "csv",
     .kind = OPT_FLAG,
     .offset = offsetof(bench_emu_args, csv),
     .help = "CSV on standard output instead of the table",
     .group = "options:"},
    {.name = "quick",
     .kind = OPT_FLAG,
     .offset = offsetof(bench_emu_args, quick),
     .help = "short runs (for smoke tests; the rates are rougher)"},
    {.name = "chop",
     .kind = OPT_FLAG,
     .offset = offsetof(bench_emu_args, chop),
     .help = "only the array-rounding table (issue 19)"},
    {.name = "array",
     .kind = OPT_FLAG,
     .offset = offsetof(bench_emu_args, array),
     .help = "only the array-arithmetic table (issue 19): fpe_array_arith against the scalar "
             "loop"},
    {.name = "scalar",
     .kind = OPT_FLAG,
     .offset = offsetof(bench_emu_args, scalar),
     .help = "only the scalar div, sqrt, fma, mul and add table (issue 19)"},
    {.name = NULL},
};

static void bench_help(FILE *out)
{
    fprintf(out,
            "usage: ampscope bench emu [--csv] [--quick] [--chop | --array | --scalar]\n"
            "\n"
            "Times the emulator on one core: scalar add, mul, div, fma, sqrt and conversions\n"
            "for fp16, bf16 and fp32 (Mops/s), and array rounding with fpe_chop_f32_to_u16\n"
            "(Melem/s), in near_even and for some rows minMag and stoch_prop.  Inputs: %u\n"
            "independent random normal numbers, fixed seed.  Each row runs ~%.2f s (median of\n"
            "%d repetitions; --quick: ~%.3f s, %d repetitions).\n"
            "\n"
            "In the same run it times MPFR doing what the oracle does (fp16 add and mul) and,\n"
            "where the CPU has F16C, the hardware f32->f16 and f16->f32 conversions, after\n"
            "checking that they agree with the emulator on every input; a disagreement is an\n"
            "error (exit status 1).  Rows with a target from issue 2 say pass or miss:\n"
            "scalar fp16/bf16 add, mul >= 300 Mops/s; array f32->f16, f32->bf16 near_even\n"
            "  >= 2000 Melem/s; array stochastic >= 500 Melem/s.\n"
            "\n"
            "Then (not with --csv) the array-rounding table of issue 19 (--chop: only that\n"
            "table, also as CSV): every mode,\n"
            "with and without counts and as floats (fpe_chop_f32), on two named input sets\n"
            "(fp16-normal; gradient: magnitudes 2^-30..2^10 with zeros, overflow, NaN, inf),\n"
            "the library against the code before issue 19 and the hardware (F16C,\n"
            "AVX512-BF16) in the same run, as ratios.\n"
            "\n"
            "--array: only the array-arithmetic table of issue 19 (also as CSV): add, sub,\n"
            "mul, div, fma and sqrt on fp16 and bf16 arrays with fpe_array_arith against a\n"
            "loop of the scalar operations, in near_even, minMag and stoch_prop, on two named\n"
            "input sets (normal; gradient: subnormals, zeros, overflow, NaN, inf), after\n"
            "checking results, flags and counts; target >= 4x.\n"
            "\n"
            "--scalar: only the scalar div, sqrt, fma, mul and add table of issue 19 (also\n"
            "as CSV): every format and mode on two named input sets (normal; edge: subnormal,\n"
            "special, overflowing, underflowing and exact cases), the library against the code\n"
            "before issue 19 in the same run, after checking that they agree on every result\n"
            "and flag; target: after/before >= 2.1x (fp16 mul: 1.5x, fp32 mul and add: 1.4x,\n"
            "bf16 mul and add, fp16 add: none) on normal operands in the deterministic modes.\n"
            "\n",
            BENCH_N, 5 * 0.04, 5, 3 * 0.005, 3);
    cli_print_options(out, bench_emu_options, 12);
}

static int bench_emu(int argc, char **argv)
{
    cli_set_context("bench emu");
    bench_emu_args args = {false, false, false, false, false};
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            bench_help(stdout);
            return CLI_OK;
        }
        /* flags only: anything else is named as given */
        const opt_spec *row =
            strncmp(argv[i], "--", 2) == 0 ? opt_find(bench_emu_options, argv[i] + 2) : NULL;
        if (!row)
            return cli_error(CLI_EINPUT, "unknown argument '%s' (see 'ampscope bench emu --help')",
                             argv[i]);
        opt_set(row, &args, NULL, NULL, 0);
    }
    const bool csv = args.csv, quick = args.quick;
    double rep_seconds = quick ? 0.005 : 0.04;
    int reps = quick ? 3 : 5;
    bool have_f16c = f16c_available();
    if (args.chop) return bench_chop_table(csv, rep_seconds, reps);
    if (args.array) return bench_array_table(csv, rep_seconds, reps);
    if (args.scalar) return bench_scalar_table(csv, rep_seconds, reps);

    bench_data *d = malloc(sizeof *d);
    if (!d) return cli_error(CLI_EFAIL, "out of memory");
    memset(d, 0, sizeof *d);
    bench_fill(d);

    if (csv) {
        printf("kind,operation,format,mode,implementation,rate,unit,target,status,versus,ratio\n");
    } else {
        ak_backend *cpu_backend = ak_open("cpu", NULL, 0);
        const char *cpu = cpu_backend ? ak_device_name(cpu_backend) : "unknown";
        printf("ampscope bench emu: one core, %u independent inputs per pass, median of %d "
               "repetitions of ~%.3f s\n",
               BENCH_N, reps, rep_seconds);
        printf("cpu: %s; F16C: %s; MPFR %s\n\n", cpu, have_f16c ? "yes" : "no", mpfr_get_version());
        ak_close(cpu_backend);
        printf("%-6s %-17s %-6s %-11s %-8s %9s %-8s %-9s %-6s %s\n", "kind", "operation", "format",
               "mode", "impl", "rate", "unit", "target", "status", "versus");
    }
    fflush(stdout);

    double reference_rate[3] = {0, 0, 0}; /* the last measured MPFR / F16C rate */
    size_t mismatches = 0;
    const char *mismatch_row = NULL;
    for (size_t i = 0; i < BENCH_CASE_COUNT; i++) {
        const bench_case *c = &bench_cases[i];
        if (c->impl == REF_F16C && !have_f16c) continue;
        if (c->impl != REF_NONE) {
            size_t differ = bench_check(d, c);
            if (differ && !mismatch_row) {
                mismatches = differ;
                mismatch_row = c->impl == REF_MPFR ? c->op : "f32<->f16 conversion";
            }
        }
        double rate = bench_measure(d, c, rep_seconds, reps);
        if (c->impl != REF_NONE) reference_rate[c->impl] = rate;
        const char *unit = strcmp(c->kind, "array") == 0 ? "Melem/s" : "Mops/s";
        const char *status = c->target <= 0 ? "" : rate >= c->target ? "pass" : "miss";
        double versus_rate = c->versus != REF_NONE ? reference_rate[c->versus] : 0;
        char target[16] = "", versus[48] = "";
        if (c->target > 0) snprintf(target, sizeof target, ">=%.0f", c->target);
        if (csv) {
            printf("%s,%s,%s,%s,%s,%.1f,%s,%s,%s,%s,", c->kind, c->op, c->format,
                   fpe_round_name(c->round), impl_name(c->impl), rate, unit,
                   c->target > 0 ? target + 2 : "", status,
                   versus_rate > 0 ? impl_name(c->versus) : "");
            if (versus_rate > 0) printf("%.3g", rate / versus_rate);
            printf("\n");
        } else {
            if (versus_rate > 0)
                snprintf(versus, sizeof versus, "x%.3g vs %s", rate / versus_rate,
                         impl_name(c->versus));
            char line[160];
            snprintf(line, sizeof line, "%-6s %-17s %-6s %-11s %-8s %9.1f %-8s %-9s %-6s %s",
                     c->kind, c->op, c->format, fpe_round_name(c->round), impl_name(c->impl), rate,
                     unit, target, status, versus);
            size_t len = strlen(line);
            while (len > 0 && line[len - 1] == ' ')
                line[--len] = '\0';
            printf("%s\n", line);
        }
        fflush(stdout);
    }
    free(d);
    if (mismatch_row)
        return cli_error(CLI_EFAIL,
                         "the reference and the emulator disagree on %zu of %u inputs (%s)",
                         mismatches, BENCH_N, mismatch_row);
    /* the array table has its own columns: in CSV only with --chop */
    return csv ? CLI_OK : bench_chop_table(csv, rep_seconds, reps);
}

/* ---- bench --------------------------------------------------------------- */
int cmd_bench(int argc, char **argv)
{
    cli_set_context("bench");
    if (argc < 2)
        return cli_error(CLI_EINPUT, "missing benchmark: emu, kernels, train, sweep or allreduce "
                                     "(see 'ampscope bench --help')");
    if (cli_is_help(argv[1])) {
        printf(
            "usage: ampscope bench BENCHMARK [ARGS]\n\n"
            "benchmarks:\n"
            "  emu        the emulator's speed, against MPFR and F16C\n"
            "  kernels    kernels/ on a backend, against copy bandwidth and a large GEMM\n"
            "  train      training steps of each precision mode, against O0 on the same backend\n"
            "  sweep      `ampscope sweep` on 1, 2 jobs and MPI ranks, as speedups\n"
            "  allreduce  the emulated low-precision gradient all-reduce, against fp32 sums\n\n"
            "'ampscope bench BENCHMARK --help' shows its options.\n");
        return CLI_OK;
    }
    if (strcmp(argv[1], "emu") == 0) return bench_emu(argc - 1, argv + 1);
    if (strcmp(argv[1], "kernels") == 0) return bench_kernels(argc - 1, argv + 1);
    if (strcmp(argv[1], "train") == 0) return bench_train(argc - 1, argv + 1);
    if (strcmp(argv[1], "sweep") == 0) return bench_sweep(argc - 1, argv + 1);
    if (strcmp(argv[1], "allreduce") == 0) return bench_allreduce(argc - 1, argv + 1);
    return cli_error(CLI_EINPUT, "unknown benchmark '%s' (see 'ampscope bench --help')", argv[1]);
}
