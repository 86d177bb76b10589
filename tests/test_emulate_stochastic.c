/* test_emulate_stochastic.c: the two stochastic rounding modes.
 *
 *   - unbiasedness: the mean of many FPE_SR_PROP roundings of x is x, within
 *     a few standard errors, for values across each format's range, the
 *     subnormals included, and for sums, products and quotients;
 *   - P(away from zero) is the discarded fraction (SR_PROP) or 1/2
 *     (SR_EQUAL), and 0 for exact values;
 *   - results depend on (seed, stream, index) alone: reproducible, each
 *     rounding operation advances sr_index by one, streams differ;
 *   - the 32-bit fraction is exact: indices are searched whose random word
 *     agrees with the exact fraction in its top bits, where an operation that
 *     kept too few quotient or root bits decides differently from the oracle;
 *   - past the largest finite value, the choice is between max and infinity.
 * Statistical bounds are 5 standard errors with fixed seeds, so the outcome
 * is deterministic.
 */
#include <check.h>
#include <math.h>
#include <mpfr.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracle.h"
#include "test_support.h"
#include "check_main.h"

#define F16  FPE_FMT_F16
#define BF16 FPE_FMT_BF16
#define F32  FPE_FMT_F32

/* Round x to fmt in mode at index, through the emulator; the result as a double. */
static double emu_round_f64(fpe_format_id fmt, fpe_env *env, double x)
{
    switch (fmt) {
    case F16: return orc_to_double(F16, fpe_f64_to_f16(env, x));
    case BF16: return orc_to_double(BF16, fpe_f64_to_bf16(env, x));
    default: return orc_to_double(F32, fpe_f64_to_f32(env, x));
    }
}

/* The format neighbours lo <= |x| < hi of a finite, nonzero x (independent
 * of the emulator: from the quantum of the format at |x|). */
static void neighbours(fpe_format_id fmt, double x, double *lo, double *hi)
{
    const orc_format *F = &orc_formats[fmt];
    int e;
    frexp(fabs(x), &e);
    e -= 1;
    if (e < F->emin) e = F->emin;
    double q = ldexp(1.0, e - F->frac_bits);
    *lo = floor(fabs(x) / q) * q;
    *hi = *lo + q;
}

/* Values to round: random significands at exponents across the range of fmt,
 * subnormal ones included, none of them representable in fmt. */
static double sample_value(ts_rng *r, fpe_format_id fmt)
{
    const orc_format *F = &orc_formats[fmt];
    for (;;) {
        int e =
            F->emin - F->frac_bits + (int)ts_below(r, (uint32_t)(F->emax - F->emin + F->frac_bits));
        double x = ldexp(1.0 + ts_uniform(r), e);
        if (ts_next(r) & 1) x = -x;
        double lo, hi;
        neighbours(fmt, x, &lo, &hi);
        if (fabs(x) != lo) return x;
    }
}

START_TEST(test_unbiased_conversion)
{
    fpe_format_id fmt = (fpe_format_id)_i;
    ts_rng rng;
    ts_rng_init(&rng, ts_seed() ^ (0x5B1A5u + (uint64_t)fmt));
    const int n_values = 150, n = 20000;
    int bad = 0;
    for (int v = 0; v < n_values; v++) {
        double x = v < 20
                       ? -ldexp(1.0 + v / 20.0, orc_formats[fmt].emin - 3 - v % 5) /* subnormal */
                       : sample_value(&rng, fmt);
        double lo, hi;
        neighbours(fmt, x, &lo, &hi);
        if (fabs(x) == lo) continue;
        fpe_env env = ts_env(FPE_SR_PROP, FPE_TININESS_AFTER);
        env.sr_seed = ts_next(&rng);
        env.sr_stream = (uint32_t)v;
        double sum = 0;
        long ups = 0;
        for (int i = 0; i < n; i++) {
            double y = emu_round_f64(fmt, &env, x);
            sum += y;
            ups += fabs(y) == hi;
            if (fabs(y) != lo && fabs(y) != hi) {
                if (bad++ < 10) printf("SR result %a of %a is not a neighbour\n", y, x);
            }
        }
        double p = (fabs(x) - lo) / (hi - lo);
        double mean = sum / n;
        double se = (hi - lo) * sqrt(p * (1 - p) / n);
        double tol = 5 * se + (hi - lo) * 0x1p-31;
        if (fabs(mean - x) > tol) {
            if (bad++ < 10)
                printf(
                    "SR_PROP %s mean of %a over %d roundings is %a, off by %.2f standard errors\n",
                    ts_format_name(fmt), x, n, mean, fabs(mean - x) / se);
        }
        double pu = (double)ups / n;
        if (fabs(pu - p) > 5 * sqrt(p * (1 - p) / n) + 1e-9) {
            if (bad++ < 10)
                printf("SR_PROP %s P(up) of %a is %f, expected %f\n", ts_format_name(fmt), x, pu,
                       p);
        }
        /* env->sr_index advanced once per rounding */
        ck_assert_uint_eq(env.sr_index, (uint64_t)n);
    }
    ck_assert_msg(bad == 0, "%d stochastic-rounding statistics off", bad);
}
END_TEST

START_TEST(test_equal_probability)
{
    fpe_format_id fmt = (fpe_format_id)_i;
    ts_rng rng;
    ts_rng_init(&rng, ts_seed() ^ (0xE0u + (uint64_t)fmt));
    const int n = 20000;
    int bad = 0;
    for (int v = 0; v < 60; v++) {
        double x = sample_value(&rng, fmt), lo, hi;
        neighbours(fmt, x, &lo, &hi);
        fpe_env env = ts_env(FPE_SR_EQUAL, FPE_TININESS_AFTER);
        env.sr_seed = ts_next(&rng);
        long ups = 0;
        for (int i = 0; i < n; i++)
            ups += fabs(emu_round_f64(fmt, &env, x)) == hi;
        double pu = (double)ups / n;
        if (fabs(pu - 0.5) > 5 * sqrt(0.25 / n)) {
            if (bad++ < 10) printf("SR_EQUAL %s P(up) of %a is %f\n", ts_format_name(fmt), x, pu);
        }
        /* exact values never move, in either mode */
        double exact = copysign(lo, x);
        for (int mode = FPE_SR_PROP; mode <= FPE_SR_EQUAL; mode++) {
            env.round = (uint8_t)mode;
            for (int i = 0; i < 100; i++) {
                env.flags = 0;
                if (emu_round_f64(fmt, &env, exact) != exact || env.flags) {
                    if (bad++ < 10) printf("SR moved exact value %a\n", exact);
                    break;
                }
            }
            env.round = FPE_SR_EQUAL;
        }
    }
    ck_assert_msg(bad == 0, "%d SR_EQUAL statistics off", bad);
}
END_TEST

/* Whether s = a + b exactly (TwoSum's error term is zero). */
static bool sum_exact(double a, double b, double s)
{
    double bv = s - a, av = s - bv;
    return (a - av) + (b - bv) == 0;
}

/* Mean of SR sums, products and quotients against the exact result. */
START_TEST(test_unbiased_arithmetic)
{
    ts_rng rng;
    ts_rng_init(&rng, ts_seed() ^ 0xA817u);
    const int n = 20000;
    int bad = 0, tried = 0;
    for (int fmt = 0; fmt < 3; fmt++)
        for (int op = 0; op < 4; op++)
            for (int v = 0; v < 15; v++) {
                static const orc_op ops_list[] = {ORC_ADD, ORC_MUL, ORC_DIV, ORC_SQRT};
                uint64_t ops[3];
                ts_random_operands(&rng, ops_list[op], fmt, ops);
                double a = orc_to_double(fmt, (uint32_t)ops[0]);
                double b = orc_to_double(fmt, (uint32_t)ops[1]);
                /* the exact value in double: exact for + and * of these
                 * formats when the exponents are close; / and sqrt are
                 * within 2^-53 relative, far below the tolerance */
                double x;
                switch (op) {
                case 0: x = a + b; break;
                case 1: x = a * b; break;
                case 2: x = a / b; break;
                default:
                    x = sqrt(fabs(a));
                    ops[0] &= ~(uint64_t)orc_formats[fmt].sign_mask;
                    break;
                }
                if (!isfinite(x) || x == 0) continue;
                double lo, hi;
                neighbours(fmt, x, &lo, &hi);
                if (fabs(x) == lo || hi > orc_to_double(fmt, orc_formats[fmt].max_finite)) continue;
                if (op == 0 && !sum_exact(a, b, x)) continue;
                tried++;
                fpe_env env = ts_env(FPE_SR_PROP, FPE_TININESS_AFTER);
                env.sr_seed = ts_next(&rng);
                double sum = 0;
                for (int i = 0; i < n; i++) {
                    fpe_env e = env;
                    e.sr_index = (uint64_t)i;
                    sum += orc_to_double(fmt, (uint32_t)ts_emu_op(ops_list[op], fmt, &e, ops));
                }
                double p = (fabs(x) - lo) / (hi - lo);
                double se = (hi - lo) * sqrt(p * (1 - p) / n);
                double tol = 5 * se + (hi - lo) * 0x1p-30;
                if (fabs(sum / n - x) > tol) {
                    if (bad++ < 10)
                        printf("SR_PROP %s %s(%a, %a): mean %a, exact %a\n",
                               oracle_op_name(ops_list[op]), ts_format_name(fmt), a, b, sum / n, x);
                }
            }
    ck_assert_int_gt(tried, 60);
    ck_assert_msg(bad == 0, "%d biased SR arithmetic results", bad);
}
END_TEST

/* Same (seed, stream, index), same result; each op advances the index by one. */
START_TEST(test_reproducible)
{
    ts_rng rng;
    ts_rng_init(&rng, ts_seed() ^ 0x4E9u);
    static const orc_op ops_list[] = {ORC_ADD,      ORC_SUB,     ORC_MUL,    ORC_DIV,
                                      ORC_MULADD,   ORC_SQRT,    ORC_TO_F16, ORC_TO_BF16,
                                      ORC_FROM_F64, ORC_FROM_I64};
    enum { N = 3000 };
    static uint64_t first[N], operands[N][3];
    int bad = 0;
    for (int fmt = 0; fmt < 3; fmt++)
        for (int mode = FPE_SR_PROP; mode <= FPE_SR_EQUAL; mode++) {
            fpe_env env = ts_env(mode, FPE_TININESS_AFTER);
            env.sr_seed = ts_next(&rng);
            env.sr_stream = 3;
            env.sr_index = ts_next(&rng) >> 1;
            uint64_t start = env.sr_index;
            int used = 0;
            for (int i = 0; i < N; i++) {
                orc_op op = ops_list[i % 10];
                if (!ts_emu_has_op(op, fmt)) op = ORC_ADD;
                ts_random_operands(&rng, op, fmt, operands[i]);
                first[i] = ts_emu_op(op, fmt, &env, operands[i]);
                used++;
            }
            if (env.sr_index != start + (uint64_t)used) {
                if (bad++ < 10)
                    printf("sr_index advanced by %llu over %d operations\n",
                           (unsigned long long)(env.sr_index - start), used);
            }
            /* replay backwards with explicit indices: same results */
            for (int i = N - 1; i >= 0; i--) {
                orc_op op = ops_list[i % 10];
                if (!ts_emu_has_op(op, fmt)) op = ORC_ADD;
                fpe_env e = env;
                e.sr_index = start + (uint64_t)i;
                uint64_t again = ts_emu_op(op, fmt, &e, operands[i]);
                if (again != first[i] && bad++ < 10)
                    printf("%s %s not reproducible at index %llu\n", oracle_op_name(op),
                           ts_format_name(fmt), (unsigned long long)e.sr_index);
            }
        }
    /* another stream or seed changes the draws: 1 + 2^-12 in fp16 (P(up) 1/2
     * under SR_EQUAL) rounded 4096 times under two streams */
    fpe_env a = ts_env(FPE_SR_EQUAL, FPE_TININESS_AFTER), b = a, c = a;
    b.sr_stream = 1;
    c.sr_seed = 1;
    int diff_stream = 0, diff_seed = 0;
    for (int i = 0; i < 4096; i++) {
        uint16_t ra = fpe_f32_to_f16(&a, 0x3F800800u);
        diff_stream += ra != fpe_f32_to_f16(&b, 0x3F800800u);
        diff_seed += ra != fpe_f32_to_f16(&c, 0x3F800800u);
    }
    ck_assert_int_gt(diff_stream, 1500);
    ck_assert_int_lt(diff_stream, 2600);
    ck_assert_int_gt(diff_seed, 1500);
    ck_assert_int_lt(diff_seed, 2600);
    ck_assert_msg(bad == 0, "%d reproducibility failures", bad);
}
END_TEST

/* The exact 32-bit fraction of |exact| above its RZ neighbour, in units of
 * 2^-32 of that neighbour's quantum, computed with MPFR at 1000 bits (the
 * results checked here are far from any case where that truncation matters). */
static uint32_t exact_frac32(orc_op op, fpe_format_id fmt, const uint64_t *ops, uint32_t rz_bits)
{
    const orc_format *F = &orc_formats[fmt];
    mpfr_t a, b, c, x, lo;
    mpfr_inits2(1000, a, b, c, x, lo, (mpfr_ptr)0);
    mpfr_set_d(a, orc_to_double(fmt, (uint32_t)ops[0]), MPFR_RNDN);
    mpfr_set_d(b, orc_to_double(fmt, (uint32_t)ops[1]), MPFR_RNDN);
    mpfr_set_d(c, orc_to_double(fmt, (uint32_t)ops[2]), MPFR_RNDN);
    switch (op) {
    case ORC_ADD: mpfr_add(x, a, b, MPFR_RNDZ); break;
    case ORC_MUL: mpfr_mul(x, a, b, MPFR_RNDZ); break;
    case ORC_DIV: mpfr_div(x, a, b, MPFR_RNDZ); break;
    case ORC_SQRT: mpfr_sqrt(x, a, MPFR_RNDZ); break;
    default: mpfr_fma(x, a, b, c, MPFR_RNDZ); break;
    }
    mpfr_abs(x, x, MPFR_RNDN);
    double l = fabs(orc_to_double(fmt, rz_bits));
    int e;
    frexp(l == 0 ? ldexp(1.0, F->emin) : l, &e);
    e -= 1;
    if (e < F->emin) e = F->emin;
    mpfr_set_d(lo, l, MPFR_RNDN);
    mpfr_sub(x, x, lo, MPFR_RNDZ);                          /* discarded part */
    mpfr_mul_2si(x, x, 32 - (e - F->frac_bits), MPFR_RNDZ); /* in 2^-32 quanta */
    mpfr_floor(x, x);
    uint32_t f = (uint32_t)mpfr_get_ui(x, MPFR_RNDZ);
    mpfr_clears(a, b, c, x, lo, (mpfr_ptr)0);
    return f;
}

/* Operations whose discarded part can be longer than 20 bits: quotients,
 * roots and fused products in every format; fp32 sums and products. */
static const struct {
    orc_op op;
    fpe_format_id fmt;
} long_fraction_cases[] = {{ORC_DIV, F16},    {ORC_DIV, BF16},    {ORC_DIV, F32},
                           {ORC_SQRT, F16},   {ORC_SQRT, BF16},   {ORC_SQRT, F32},
                           {ORC_MULADD, F16}, {ORC_MULADD, BF16}, {ORC_MULADD, F32},
                           {ORC_ADD, F32},    {ORC_MUL, F32}};
#define N_LONG_FRACTION_CASES (int)(sizeof long_fraction_cases / sizeof long_fraction_cases[0])

START_TEST(test_fraction_has_32_bits)
{
    fpe_format_id fmt = long_fraction_cases[_i].fmt;
    orc_op op = long_fraction_cases[_i].op;
    char what[96];
    snprintf(what, sizeof what, "%s %s stoch_prop, near-tie random words", oracle_op_name(op),
             ts_format_name(fmt));
    ts_checker ck;
    ts_checker_init(&ck, what);
    ts_rng rng;
    ts_rng_init(&rng, ts_seed() ^ (0xF4AC + (uint64_t)_i));
    fpe_env env = ts_env(FPE_SR_PROP, FPE_TININESS_AFTER);
    env.sr_seed = 0x5EED5EEDu;
    int cases = 0;
    for (int tries = 0; tries < 400 && cases < 8; tries++) {
        uint64_t ops[3];
        ts_random_operands(&rng, op, fmt, ops);
        if (op == ORC_SQRT) ops[0] &= ~(uint64_t)orc_formats[fmt].sign_mask;
        fpe_env ez = ts_env(FPE_RZ, FPE_TININESS_AFTER);
        uint8_t fz;
        uint64_t rz = oracle_op(op, fmt, &ez, ops, &fz);
        /* inexact, finite, and with a fraction that needs many bits */
        if (!(fz & 0x01) || (fz & 0x14) || orc_is_inf(fmt, (uint32_t)rz)) continue;
        uint32_t frac = exact_frac32(op, fmt, ops, (uint32_t)rz);
        if ((frac & 0xFFFFF) == 0 || (frac & 0xFFFFF) == 0xFFFFF) continue;
        cases++;
        /* indices whose word agrees with frac in its top 22 bits: there the
         * decision rests on the fraction's low bits */
        env.sr_stream = (uint32_t)tries;
        int found = 0;
        for (uint64_t i = 0; i < (UINT64_C(1) << 23) && found < 2; i++) {
            uint32_t w = fpe_random_bits(env.sr_seed, env.sr_stream, i);
            if ((w >> 10) != (frac >> 10)) continue;
            found++;
            env.sr_index = i;
            ts_check_op(&ck, op, fmt, &env, ops);
        }
    }
    ck_assert_int_ge(cases, 5);
    ck_assert_msg(ts_checker_summary(&ck) == 0, "%s: %llu mismatches", what,
                  (unsigned long long)ck.mismatches);
}
END_TEST

/* Past the largest finite value: between max and infinity. */
START_TEST(test_overflow_choice)
{
    for (int fmt = 0; fmt < 3; fmt++) {
        const orc_format *F = &orc_formats[fmt];
        double max = orc_to_double(fmt, F->max_finite);
        double ulp = ldexp(1.0, F->emax - F->frac_bits);
        double x = max + 0.25 * ulp; /* P(inf) = 1/4 under SR_PROP */
        fpe_env env = ts_env(FPE_SR_PROP, FPE_TININESS_AFTER);
        env.sr_seed = 77;
        int infs = 0, n = 20000;
        for (int i = 0; i < n; i++) {
            env.flags = 0;
            double y = emu_round_f64(fmt, &env, x);
            if (isinf(y)) {
                infs++;
                ck_assert_uint_eq(env.flags, FPE_FLAG_OVERFLOW | FPE_FLAG_INEXACT);
            } else {
                ck_assert(y == max);
                ck_assert_uint_eq(env.flags, FPE_FLAG_INEXACT);
            }
        }
        double pu = (double)infs / n;
        ck_assert_msg(fabs(pu - 0.25) < 5 * sqrt(0.25 * 0.75 / n), "%s P(inf) %f",
                      ts_format_name(fmt), pu);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("emulate_stochastic");
    TCase *tc = tcase_create("stochastic");
    tcase_set_timeout(tc, 900);
    tcase_add_loop_test(tc, test_unbiased_conversion, 0, 3);
    tcase_add_loop_test(tc, test_equal_probability, 0, 3);
    tcase_add_test(tc, test_unbiased_arithmetic);
    tcase_add_test(tc, test_reproducible);
    tcase_add_loop_test(tc, test_fraction_has_32_bits, 0, N_LONG_FRACTION_CASES);
    tcase_add_test(tc, test_overflow_choice);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
