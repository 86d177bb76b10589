/* test_emulate_unary.c: every fp16 or bf16 input of every one-operand operation.
 *
 * Usage: test_emulate_unary fp16|bf16
 *
 * For each of the 65536 inputs, the six deterministic modes and both tininess
 * rules: sqrt, roundToInt (exact and not), the conversions to the other
 * 16-bit format, to fp32 and to binary64, and to i32/i64/ui32/ui64 (exact and
 * not), bits and flags against the MPFR oracle.  sqrt and the conversions to
 * formats are also run in the two stochastic modes (random index per input).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracle.h"
#include "test_support.h"
#include "check_main.h"

static fpe_format_id g_fmt = FPE_FMT_F16;

static const orc_op unary_ops[] = {ORC_SQRT,     ORC_RTI,       ORC_RTI_EXACT, ORC_TO_F16,
                                   ORC_TO_BF16,  ORC_TO_F32,    ORC_TO_F64,    ORC_TO_I32,
                                   ORC_TO_I64,   ORC_TO_UI32,   ORC_TO_UI64,   ORC_TO_I32_X,
                                   ORC_TO_I64_X, ORC_TO_UI32_X, ORC_TO_UI64_X};
#define N_UNARY (int)(sizeof unary_ops / sizeof unary_ops[0])

static bool rounds_to_format(orc_op op)
{
    return op == ORC_SQRT || op == ORC_TO_F16 || op == ORC_TO_BF16 || op == ORC_TO_F32;
}

START_TEST(test_unary_all_inputs)
{
    orc_op op = unary_ops[_i];
    if (!ts_emu_has_op(op, g_fmt)) return; /* e.g. fp16 -> fp16 */
    char what[96];
    snprintf(what, sizeof what, "%s %s, all inputs", oracle_op_name(op), ts_format_name(g_fmt));
    ts_checker ck;
    ts_checker_init(&ck, what);
    for (int mode = 0; mode <= FPE_RO; mode++)
        for (int tin = 0; tin < 2; tin++) {
            fpe_env env = ts_env(mode, tin);
            for (uint32_t a = 0; a < 0x10000; a++) {
                uint64_t ops[1] = {a};
                ts_check_op(&ck, op, g_fmt, &env, ops);
            }
        }
    if (rounds_to_format(op)) {
        ts_rng rng;
        ts_rng_init(&rng, ts_seed() ^ (uint64_t)op);
        for (int mode = FPE_SR_PROP; mode <= FPE_SR_EQUAL; mode++) {
            fpe_env env = ts_env(mode, FPE_TININESS_AFTER);
            env.sr_seed = ts_next(&rng);
            env.sr_stream = (uint32_t)ts_next(&rng);
            for (uint32_t a = 0; a < 0x10000; a++) {
                uint64_t ops[1] = {a};
                env.sr_index = ts_next(&rng);
                env.tininess = (uint8_t)(a & 1);
                ts_check_op(&ck, op, g_fmt, &env, ops);
            }
        }
    }
    ck_assert_msg(ts_checker_summary(&ck) == 0, "%s: %llu mismatches", what,
                  (unsigned long long)ck.mismatches);
}
END_TEST

/* The classification helpers, against the bit layout. */
START_TEST(test_classification_all_inputs)
{
    int bad = 0;
    for (uint32_t a = 0; a < 0x10000; a++) {
        bool nan = orc_is_nan(g_fmt, a), snan = orc_is_snan(g_fmt, a);
        bool got_nan =
            g_fmt == FPE_FMT_F16 ? fpe_f16_isnan((uint16_t)a) : fpe_bf16_isnan((uint16_t)a);
        bool got_snan = g_fmt == FPE_FMT_F16 ? fpe_f16_is_signaling_nan((uint16_t)a)
                                             : fpe_bf16_is_signaling_nan((uint16_t)a);
        if (got_nan != nan || got_snan != snan) {
            if (bad++ < 10)
                printf("MISMATCH isnan/is_signaling_nan %s %04X: expected %d/%d, got %d/%d\n",
                       ts_format_name(g_fmt), a, nan, snan, got_nan, got_snan);
        }
    }
    ck_assert_int_eq(bad, 0);
}
END_TEST

int main(int argc, char **argv)
{
    if (argc > 1) {
        int f = ts_parse_format(argv[1]);
        if (f < 0 || f == FPE_FMT_F32) {
            fprintf(stderr, "usage: %s fp16|bf16\n", argv[0]);
            return 2;
        }
        g_fmt = (fpe_format_id)f;
    }
    Suite *s = suite_create("emulate_unary");
    TCase *tc = tcase_create(ts_format_name(g_fmt));
    tcase_set_timeout(tc, 900);
    tcase_add_loop_test(tc, test_unary_all_inputs, 0, N_UNARY);
    tcase_add_test(tc, test_classification_all_inputs);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
