/* test_emulate_arith.c: add, sub, mul, div and mulAdd against the MPFR oracle.
 *
 * Usage: test_emulate_arith FORMAT OP      (fp16|bf16|fp32, add|sub|mul|div|mulAdd)
 *
 *   specials  every pair (mulAdd: every triple of a smaller set) of the
 *             special-value table, in all eight modes and both tininess rules;
 *   random    AMPSCOPE_TEST_RANDOM operand sets per mode (default 10^6),
 *             biased toward cancellation, subnormal results, overflow and
 *             ties; tininess alternates; seed AMPSCOPE_TEST_SEED;
 *   exact     (div, mulAdd) the cases the binary64 fast paths of issue 19 must
 *             get right: exact quotients (and, on the div entry, exact square
 *             roots, the same construction), exact and exactly cancelling
 *             fma sums, and fma at every exponent gap across the alignment
 *             and binary64 limits; every mode, both tininess rules;
 *   host fenv the same results, flags and random index whatever the host's
 *             floating-point environment: each host rounding mode, and on
 *             x86-64 the MXCSR's FTZ and DAZ (the host paths of
 *             emulate/scalar_host.h compute in it); the div entry checks sqrt
 *             too.
 */
#include <check.h>
#include <fenv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracle.h"
#include "test_support.h"
#include "check_main.h"

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

static fpe_format_id g_fmt = FPE_FMT_F16;
static orc_op g_op = ORC_ADD;

START_TEST(test_specials)
{
    char what[96];
    snprintf(what, sizeof what, "%s %s, special values", oracle_op_name(g_op),
             ts_format_name(g_fmt));
    ts_checker ck;
    ts_checker_init(&ck, what);
    uint32_t sp[128];
    size_t n = g_op == ORC_MULADD ? ts_special_values_small(g_fmt, sp, 128)
                                  : ts_special_values(g_fmt, sp, 128);
    ck_assert_uint_le(n, 128);
    for (int mode = 0; mode < FPE_ROUND_COUNT; mode++)
        for (int tin = 0; tin < 2; tin++) {
            fpe_env env = ts_env(mode, tin);
            env.sr_seed = 99;
            uint64_t count = 0;
            for (size_t i = 0; i < n; i++)
                for (size_t j = 0; j < n; j++) {
                    if (g_op != ORC_MULADD) {
                        uint64_t ops[2] = {sp[i], sp[j]};
                        env.sr_index = count++;
                        ts_check_op(&ck, g_op, g_fmt, &env, ops);
                        continue;
                    }
                    for (size_t k = 0; k < n; k++) {
                        uint64_t ops[3] = {sp[i], sp[j], sp[k]};
                        env.sr_index = count++;
                        ts_check_op(&ck, g_op, g_fmt, &env, ops);
                    }
                }
        }
    ck_assert_msg(ts_checker_summary(&ck) == 0, "%s: %llu mismatches", what,
                  (unsigned long long)ck.mismatches);
}
END_TEST

START_TEST(test_random)
{
    const int mode = _i;
    char what[128];
    snprintf(what, sizeof what, "%s %s %s, random", oracle_op_name(g_op), ts_format_name(g_fmt),
             ts_mode_names[mode]);
    ts_checker ck;
    ts_checker_init(&ck, what);
    ts_rng rng;
    ts_rng_init(&rng, ts_seed() + 1000003u * (uint64_t)(g_op * 8 + mode) + 7919u * g_fmt);
    fpe_env env = ts_env(mode, FPE_TININESS_AFTER);
    env.sr_seed = ts_next(&rng);
    env.sr_stream = (uint32_t)ts_next(&rng);
    const uint64_t n = ts_random_count();
    for (uint64_t i = 0; i < n; i++) {
        uint64_t ops[3];
        ts_random_operands(&rng, g_op, g_fmt, ops);
        env.tininess = (uint8_t)(i & 1);
        env.sr_index = i & 7 ? env.sr_index + 1 : ts_next(&rng);
        ts_check_op(&ck, g_op, g_fmt, &env, ops);
    }
    ck_assert_msg(ts_checker_summary(&ck) == 0, "%s: %llu mismatches", what,
                  (unsigned long long)ck.mismatches);
}
END_TEST

/* Host setting h: 0-3 a rounding mode, 4-5 round-to-nearest and upward with FTZ and DAZ. */
static void host_fenv_set(int h)
{
    static const int modes[] = {FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO, FE_TONEAREST};
    fesetround(h < 4 ? modes[h] : h == 4 ? FE_TONEAREST : FE_UPWARD);
#if defined(__x86_64__)
    if (h >= 4) _mm_setcsr(_mm_getcsr() | 0x8040u);
#endif
}

static void host_fenv_reset(unsigned csr)
{
    fesetround(FE_TONEAREST);
#if defined(__x86_64__)
    _mm_setcsr(csr);
#else
    (void)csr;
#endif
}

START_TEST(test_host_fenv)
{
    const orc_op ops_list[2] = {g_op, ORC_SQRT};
    const int n_ops = g_op == ORC_DIV ? 2 : 1;
#if defined(__x86_64__)
    const unsigned csr = _mm_getcsr();
#else
    const unsigned csr = 0;
#endif
    ts_rng rng;
    ts_rng_init(&rng, ts_seed() + 4099u * (uint64_t)g_op + 31u * g_fmt);
    uint64_t checked = 0, mismatches = 0;
    for (int h = 0; h < 6; h++)
        for (int k = 0; k < n_ops; k++)
            for (int mode = 0; mode < FPE_ROUND_COUNT; mode++)
                for (int i = 0; i < 4000; i++) {
                    const orc_op op = ops_list[k];
                    uint64_t ops[3];
                    ts_random_operands(&rng, op, g_fmt, ops);
                    fpe_env e_host = ts_env(mode, i & 1);
                    e_host.sr_seed = 12345;
                    e_host.sr_index = (uint64_t)i * 3;
                    fpe_env e_plain = e_host;
                    host_fenv_set(h);
                    const uint64_t r_host = ts_emu_op(op, g_fmt, &e_host, ops);
                    host_fenv_reset(csr);
                    const uint64_t r_plain = ts_emu_op(op, g_fmt, &e_plain, ops);
                    checked++;
                    if (r_host == r_plain && e_host.flags == e_plain.flags &&
                        e_host.sr_index == e_plain.sr_index)
                        continue;
                    if (mismatches++ < 8)
                        printf("MISMATCH %s %s host setting %d mode %s operands %llx %llx %llx: "
                               "%llx flags %02x under it, %llx flags %02x without\n",
                               oracle_op_name(op), ts_format_name(g_fmt), h, ts_mode_names[mode],
                               (unsigned long long)ops[0], (unsigned long long)ops[1],
                               (unsigned long long)ops[2], (unsigned long long)r_host, e_host.flags,
                               (unsigned long long)r_plain, e_plain.flags);
                }
    printf("%s %s, host fenv: %llu checked, %llu mismatches\n", oracle_op_name(g_op),
           ts_format_name(g_fmt), (unsigned long long)checked, (unsigned long long)mismatches);
    ck_assert_uint_eq(mismatches, 0);
}
END_TEST

/* A value of fmt with significand sig (its leading one at bit p - 1) and unbiased exponent e,
 * sign s; e must be in the normal range. */
static uint32_t value_of(fpe_format_id fmt, bool s, uint32_t sig, int e)
{
    const orc_format *F = &orc_formats[fmt];
    const uint32_t field = (uint32_t)(e + F->bias);
    return (s ? F->sign_mask : 0) | field << F->frac_bits | (sig & ((1u << F->frac_bits) - 1));
}

/* The exact square of u * 2^e (u a significand of at most half the bits), as a value. */
static uint32_t square_of(fpe_format_id fmt, uint32_t u, int e)
{
    const int p = orc_formats[fmt].p;
    const uint64_t uu = (uint64_t)u * u;
    const int top = uu >> (2 * p - 1) ? 1 : 0;
    return value_of(fmt, false, (uint32_t)(uu >> (p - 1 + top)), 2 * e + top);
}

/* A random significand of p bits whose low `zeros` bits are clear. */
static uint32_t short_sig(ts_rng *r, int p, int zeros)
{
    return (uint32_t)((ts_next(r) | (uint64_t)1 << 63) >> (64 - p)) >> zeros << zeros;
}

START_TEST(test_exact_cases)
{
    if (g_op != ORC_DIV && g_op != ORC_MULADD) return;
    char what[96];
    snprintf(what, sizeof what, "%s %s, exact cases", oracle_op_name(g_op), ts_format_name(g_fmt));
    ts_checker ck;
    ts_checker_init(&ck, what);
    ts_rng rng;
    ts_rng_init(&rng, ts_seed() + 77u * (uint64_t)g_op + g_fmt);
    const orc_format *F = &orc_formats[g_fmt];
    const int p = F->p, half = (p + 1) / 2;
    for (int i = 0; i < 20000; i++) {
        uint64_t ops[3];
        const bool s1 = ts_next(&rng) & 1, s2 = ts_next(&rng) & 1;
        /* u, v with at most half the bits: u * v is exact in the format */
        const uint32_t u = short_sig(&rng, p, p - half), v = short_sig(&rng, p, p - half);
        const uint64_t uv = (uint64_t)u * v; /* 2p - 1 or 2p bits, the low p - 1 or more clear */
        const int top = uv >> (2 * p - 1) ? 1 : 0;
        const uint32_t uv_sig = (uint32_t)(uv >> (p - 1 + top));
        /* exponents in [-6, 6]: the product and the square stay normal in fp16 */
        const int e1 = (int)ts_below(&rng, 13) - 6, e2 = (int)ts_below(&rng, 13) - 6;
        const uint32_t a = value_of(g_fmt, s1, u, e1), b = value_of(g_fmt, s2, v, e2);
        const uint32_t ab = value_of(g_fmt, s1 ^ s2, uv_sig, e1 + e2 + top);
        for (int mode = 0; mode < FPE_ROUND_COUNT; mode++) {
            fpe_env env = ts_env(mode, i & 1);
            env.sr_seed = 5;
            env.sr_index = (uint64_t)i;
            if (g_op == ORC_DIV) {
                ops[0] = ab; /* (u v) / v = u, exactly; and (u v) / u = v */
                ops[1] = b;
                ts_check_op(&ck, ORC_DIV, g_fmt, &env, ops);
                ops[1] = a;
                ts_check_op(&ck, ORC_DIV, g_fmt, &env, ops);
                ops[0] = square_of(g_fmt, u, e1);
                ts_check_op(&ck, ORC_SQRT, g_fmt, &env, ops);   /* sqrt(u^2) = u */
                ops[0] += ts_next(&rng) & 1 ? 1 : (uint64_t)-1; /* one ulp off: inexact */
                ops[0] &= F->sign_mask | (F->sign_mask - 1);
                ts_check_op(&ck, ORC_SQRT, g_fmt, &env, ops);
                continue;
            }
            /* a * b - a * b = 0 (the sign is the mode's), and one ulp off either way */
            ops[0] = a;
            ops[1] = b;
            for (int k = -1; k <= 1; k++) {
                ops[2] = ((ab + (uint32_t)k) ^ F->sign_mask) & (F->sign_mask | (F->sign_mask - 1));
                ts_check_op(&ck, ORC_MULADD, g_fmt, &env, ops);
            }
            /* every gap between the product's exponent and c's, across the alignment shifts
             * (14 and 38 in fp32) and the binary64 span (p - 51 .. 53 - 2p in fp16, bf16) */
            const int ep = e1 + e2, gap = (int)ts_below(&rng, 141) - 70;
            const int ec = ep + gap;
            if (ec < F->emin || ec > F->emax) continue;
            ops[2] = value_of(g_fmt, ts_next(&rng) & 1, short_sig(&rng, p, 0), ec);
            ts_check_op(&ck, ORC_MULADD, g_fmt, &env, ops);
        }
    }
    ck_assert_msg(ts_checker_summary(&ck) == 0, "%s: %llu mismatches", what,
                  (unsigned long long)ck.mismatches);
}
END_TEST

static int parse_op(const char *s)
{
    static const struct {
        const char *name;
        orc_op op;
    } t[] = {{"add", ORC_ADD},
             {"sub", ORC_SUB},
             {"mul", ORC_MUL},
             {"div", ORC_DIV},
             {"mulAdd", ORC_MULADD}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(s, t[i].name)) return t[i].op;
    return -1;
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        int f = ts_parse_format(argv[1]);
        int op = argc > 2 ? parse_op(argv[2]) : ORC_ADD;
        if (f < 0 || op < 0) {
            fprintf(stderr, "usage: %s fp16|bf16|fp32 add|sub|mul|div|mulAdd\n", argv[0]);
            return 2;
        }
        g_fmt = (fpe_format_id)f;
        g_op = (orc_op)op;
    }
    Suite *s = suite_create("emulate_arith");
    TCase *tc = tcase_create("arith");
    tcase_set_timeout(tc, 900);
    tcase_add_test(tc, test_specials);
    tcase_add_loop_test(tc, test_random, 0, FPE_ROUND_COUNT);
    tcase_add_test(tc, test_exact_cases);
    tcase_add_test(tc, test_host_fenv);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
