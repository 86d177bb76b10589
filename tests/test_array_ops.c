/* test_array_ops.c: the array arithmetic against the scalar operations (issue 19).
 *
 * Usage: test_array_ops FORMAT OP      (fp16|bf16, add|sub|mul|div|fma|sqrt)
 *
 * fpe_array_arith must give, element by element, what the scalar operation gives at random
 * index sr_index + i: the same bits, the OR of the same flags, the counts by their definitions
 * (fpe.h) and the same final index (array_vs_scalar.h), in all 8 rounding modes x both
 * tininess rules x DAZ x FTZ x x86 and canonical NaNs:
 *   pairs    every pair (fma: every triple of a smaller set) of the special-value table
 *            (subnormals, ties, the overflow edge, signed zeros, infinities, quiet and
 *            signaling NaNs), each repeated over the eight lanes of one vector step, so that its
 * flags are compared exactly, not OR-ed with others'; random   arrays of the oracle tests' biased
 * operands (cancellation, subnormal results, overflow, ties) mixed with special values and any bit
 * pattern, of odd lengths and unaligned starts, over several blocks, and in place (out = a, b or
 * c); and arrays of normal operands but about one element in 40 (the cheap first loop); sqrt every
 * one of the 2^16 inputs, eight lanes each. The scalar operations are themselves held to MPFR by
 * test_emulate_arith and test_emulate_unary.  Seed: AMPSCOPE_TEST_SEED. */
#include <check.h>
#include <stdlib.h>

#include "array_vs_scalar.h"
#include "check_main.h"
#include "test_support.h"

#define N_MAX 1601 /* over three blocks of 512 and a tail */

static int g_fmt = FPE_FMT_F16;
static int g_op = FPE_ARITH_ADD;

static const orc_op orc_of[FPE_ARITH_OP_COUNT] = {ORC_ADD, ORC_SUB,    ORC_MUL,
                                                  ORC_DIV, ORC_MULADD, ORC_SQRT};

/* The 128 settings: mode, tininess, DAZ, FTZ, NaN specialization. */
static fpe_env setting_env(int s)
{
    fpe_env env = fpe_env_default();
    env.round = (uint8_t)(s & 7);
    env.tininess = (uint8_t)((s >> 3) & 1);
    env.daz = (uint8_t)((s >> 4) & 1);
    env.ftz = (uint8_t)((s >> 5) & 1);
    env.nan = (s >> 6) ? FPE_NAN_CANONICAL : FPE_NAN_X86;
    env.sr_seed = 0x5EED0000u + (uint64_t)s;
    env.sr_stream = (uint32_t)s * 7u;
    return env;
}
#define SETTINGS 128

/* Repeat operands (a, b, c) over the eight lanes of the widest vector loop (array_easy.h; a
 * shorter array would go to the scalar operation alone) and check them. */
#define LANES 8
static uint64_t check_lanes(const fpe_env *env, uint32_t a, uint32_t b, uint32_t c)
{
    uint16_t va[LANES], vb[LANES], vc[LANES], out[LANES];
    for (int k = 0; k < LANES; k++) {
        va[k] = (uint16_t)a;
        vb[k] = (uint16_t)b;
        vc[k] = (uint16_t)c;
    }
    return avs_check(env, g_fmt, g_op, va, vb, vc, LANES, 0, out);
}

START_TEST(test_pairs)
{
    uint32_t sp[128];
    const bool fma = g_op == FPE_ARITH_FMA;
    const size_t n = fma ? ts_special_values_small((fpe_format_id)g_fmt, sp, 128)
                         : ts_special_values((fpe_format_id)g_fmt, sp, 128);
    const size_t nb = g_op == FPE_ARITH_SQRT ? 1 : n, nc = fma ? n : 1;
    uint64_t bad = 0, checked = 0;
    for (int s = 0; s < SETTINGS; s++) {
        fpe_env env = setting_env(s);
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < nb; j++)
                for (size_t k = 0; k < nc; k++) {
                    env.sr_index = checked * LANES + 1;
                    bad += check_lanes(&env, sp[i], sp[j], sp[k]);
                    checked++;
                }
    }
    printf("%s %s: %" PRIu64 " special operand sets x %d lanes, %" PRIu64 " mismatches\n",
           ts_format_name((fpe_format_id)g_fmt), avs_op_names[g_op], checked, LANES, bad);
    ck_assert_msg(bad == 0, "%" PRIu64 " mismatches", bad);
}
END_TEST

/* One operand set: the oracle tests' biased operands, a special value or any pattern. */
static void random_set(ts_rng *r, const uint32_t *sp, size_t nsp, uint64_t *ops)
{
    const uint32_t pick = ts_below(r, 10);
    ts_random_operands(r, orc_of[g_op], (fpe_format_id)g_fmt, ops);
    for (int k = 0; k < 3; k++) {
        if (pick == 0 || (pick == 1 && ts_below(r, 2)))
            ops[k] = sp[ts_below(r, (uint32_t)nsp)];
        else if (pick == 2)
            ops[k] = ts_next(r) & 0xFFFF;
    }
}

/* A normal number of the format with a random sign and significand; its exponent within
 * [-span, span] (span > 0), or any normal exponent. */
static uint64_t normal_operand(ts_rng *r, int span)
{
    const int fb = g_fmt == FPE_FMT_F16 ? 10 : 7, bias = g_fmt == FPE_FMT_F16 ? 15 : 127;
    const uint32_t field = span > 0 ? (uint32_t)(bias - span) + ts_below(r, 2 * (uint32_t)span + 1)
                                    : 1 + ts_below(r, 2 * (uint32_t)bias);
    /* short significands now and then: exact results and ties */
    uint32_t frac = (uint32_t)ts_next(r) & ((1u << fb) - 1);
    if (ts_below(r, 4) == 0) frac &= ~((1u << (fb - 3)) - 1);
    return (uint64_t)ts_below(r, 2) << 15 | field << fb | frac;
}

START_TEST(test_random)
{
    static uint16_t a[N_MAX + 8], b[N_MAX + 8], c[N_MAX + 8], out[N_MAX + 8];
    uint32_t sp[128];
    const size_t nsp = ts_special_values((fpe_format_id)g_fmt, sp, 128);
    ts_rng rng;
    ts_rng_init(&rng, ts_seed() ^ (0xA7A7u + (uint64_t)(g_fmt * 8 + g_op)));
    uint64_t bad = 0, checked = 0;
    for (int s = 0; s < SETTINGS; s++)
        for (int rep = 0; rep < 8; rep++) {
            fpe_env env = setting_env(s);
            env.sr_index = ts_next(&rng) >> 24;
            /* lengths: several blocks and a tail; short odd ones; one block */
            const size_t n = rep < 2   ? N_MAX - ts_below(&rng, 8)
                             : rep < 4 ? 1 + ts_below(&rng, 40)
                                       : 512;
            const size_t off = ts_below(&rng, 8); /* unaligned starts */
            for (size_t i = 0; i < n; i++) {
                uint64_t ops[3] = {0, 0, 0};
                random_set(&rng, sp, nsp, ops);
                /* reps 4 to 7: normal operands but about 1 in 40 (the cheap first loop),
                 * exponents within 2^-7 .. 2^7 (even reps) or anywhere (odd ones) */
                if (rep >= 4 && ts_below(&rng, 40) != 0)
                    for (int k = 0; k < 3; k++)
                        ops[k] = normal_operand(&rng, rep % 2 == 0 ? 7 : 0);
                a[off + i] = (uint16_t)ops[0];
                b[off + i] = (uint16_t)ops[1];
                c[off + i] = (uint16_t)ops[2];
            }
            /* in place: out is a copy of a, b or c passed as that operand */
            const uint32_t operands = g_op == FPE_ARITH_SQRT ? 1 : g_op == FPE_ARITH_FMA ? 3 : 2;
            const int ip = rep == 1 ? 1 + (int)ts_below(&rng, operands) : 0;
            bad += avs_check(&env, g_fmt, g_op, a + off, b + off, c + off, n, ip, out + rep % 3);
            checked += n;
        }
    printf("%s %s: %" PRIu64 " random elements in arrays, %" PRIu64 " mismatches\n",
           ts_format_name((fpe_format_id)g_fmt), avs_op_names[g_op], checked, bad);
    ck_assert_msg(bad == 0, "%" PRIu64 " mismatches", bad);
}
END_TEST

START_TEST(test_sqrt_all)
{
    uint64_t bad = 0;
    for (int s = 0; s < SETTINGS; s++) {
        fpe_env env = setting_env(s);
        for (uint32_t x = 0; x < 0x10000; x++) {
            env.sr_index = (uint64_t)x * LANES + 3;
            bad += check_lanes(&env, x, 0, 0);
        }
    }
    printf("%s sqrt: all 65536 inputs x %d lanes in %d settings, %" PRIu64 " mismatches\n",
           ts_format_name((fpe_format_id)g_fmt), LANES, SETTINGS, bad);
    ck_assert_msg(bad == 0, "%" PRIu64 " mismatches", bad);
}
END_TEST

START_TEST(test_arguments)
{
    fpe_env env = fpe_env_default();
    uint16_t a[4] = {0x3C00, 0x3C00, 0x3C00, 0x3C00}, out[4];
    ck_assert_int_eq(fpe_array_arith(NULL, FPE_FMT_F16, FPE_ARITH_ADD, a, a, NULL, out, 4, NULL),
                     FPE_EINVAL);
    ck_assert_int_eq(fpe_array_arith(&env, FPE_FMT_F32, FPE_ARITH_ADD, a, a, NULL, out, 4, NULL),
                     FPE_EINVAL);
    ck_assert_int_eq(fpe_array_arith(&env, FPE_FMT_F16, (fpe_arith_op)6, a, a, NULL, out, 4, NULL),
                     FPE_EINVAL);
    ck_assert_int_eq(fpe_f16_add_array(&env, a, NULL, out, 4, NULL), FPE_EINVAL);
    ck_assert_int_eq(fpe_f16_fma_array(&env, a, a, NULL, out, 4, NULL), FPE_EINVAL);
    ck_assert_int_eq(fpe_f16_sqrt_array(&env, a, out, 4, NULL), FPE_OK);
    ck_assert_int_eq(fpe_f16_add_array(&env, NULL, NULL, NULL, 0, NULL), FPE_OK);
    /* the named functions are the generic one: 1 + 1 = 2 in fp16 and bf16 */
    ck_assert_int_eq(fpe_f16_add_array(&env, a, a, out, 4, NULL), FPE_OK);
    ck_assert_uint_eq(out[3], 0x4000);
    const uint16_t one_bf16[1] = {0x3F80};
    ck_assert_int_eq(fpe_bf16_mul_array(&env, one_bf16, one_bf16, out, 1, NULL), FPE_OK);
    ck_assert_uint_eq(out[0], 0x3F80);
    ck_assert_uint_eq(env.sr_index, 9);
}
END_TEST

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s fp16|bf16 add|sub|mul|div|fma|sqrt\n", argv[0]);
        return 2;
    }
    g_fmt = !strcmp(argv[1], "bf16") ? FPE_FMT_BF16 : FPE_FMT_F16;
    g_op = -1;
    for (int k = 0; k < FPE_ARITH_OP_COUNT; k++)
        if (!strcmp(argv[2], avs_op_names[k])) g_op = k;
    if (g_op < 0 || (strcmp(argv[1], "fp16") && strcmp(argv[1], "bf16"))) {
        fprintf(stderr, "unknown format or operation\n");
        return 2;
    }
    Suite *s = suite_create("array_ops");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 900);
    tcase_add_test(tc, test_arguments);
    tcase_add_test(tc, test_pairs);
    tcase_add_test(tc, test_random);
    if (g_op == FPE_ARITH_SQRT) tcase_add_test(tc, test_sqrt_all);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
