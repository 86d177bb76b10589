/* test_emulate_arith.c: add, sub, mul, div and mulAdd against the MPFR oracle.
 *
 * Usage: test_emulate_arith FORMAT OP      (fp16|bf16|fp32, add|sub|mul|div|mulAdd)
 *
 *   specials  every pair (mulAdd: every triple of a smaller set) of the
 *             special-value table, in all eight modes and both tininess rules;
 *   random    AMPSCOPE_TEST_RANDOM operand sets per mode (default 10^6),
 *             biased toward cancellation, subnormal results, overflow and
 *             ties; tininess alternates; seed AMPSCOPE_TEST_SEED.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracle.h"
#include "test_support.h"
#include "check_main.h"

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
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
