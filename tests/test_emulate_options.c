/* test_emulate_options.c: the environment, the tables, and the options.
 *
 *   - the emulator against the hand-checked values of hand_cases.h directly;
 *   - denormals-are-zero and flush-to-zero, alone and together, on random
 *     operands of every operation and format, against the MPFR oracle;
 *   - the canonical NaN specialization on special values and random operands;
 *   - flags accumulate (OR) and are never cleared by an operation;
 *   - fpe_formats, fpe_env_default and the name functions.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hand_cases.h"
#include "oracle.h"
#include "test_support.h"
#include "check_main.h"

START_TEST(test_hand_values_emulator)
{
    int bad = 0;
    for (size_t i = 0; i < N_HAND_CASES; i++) {
        const hand_case *h = &hand_cases[i];
        fpe_env env = ts_env(h->mode, h->tininess);
        env.ftz = (uint8_t)h->ftz;
        env.daz = (uint8_t)h->daz;
        env.nan = (uint8_t)h->nan;
        uint64_t ops[3] = {h->a, h->b, h->c};
        fpe_env e = env;
        uint64_t got = ts_emu_op(h->op, (fpe_format_id)h->fmt, &e, ops);
        int rb = oracle_result_bits(h->op, (fpe_format_id)h->fmt);
        if (rb < 64) got &= (UINT64_C(1) << rb) - 1;
        if (got != h->want || e.flags != h->flags) {
            printf("hand case %zu: ", i);
            ts_print_mismatch(oracle_op_name(h->op), (fpe_format_id)h->fmt, &env, ops,
                              oracle_op_arity(h->op), h->want, h->flags, got, e.flags);
            bad++;
        }
    }
    ck_assert_msg(bad == 0, "%d hand-checked values wrong", bad);
}
END_TEST

/* Operations run under every option; conversions between formats appear as
 * "to" ops of the source format. */
static const orc_op option_ops[] = {ORC_ADD,       ORC_SUB,      ORC_MUL,       ORC_DIV,
                                    ORC_MULADD,    ORC_SQRT,     ORC_RTI_EXACT, ORC_TO_F16,
                                    ORC_TO_BF16,   ORC_TO_F32,   ORC_TO_F64,    ORC_TO_I32_X,
                                    ORC_TO_UI64_X, ORC_FROM_I64, ORC_FROM_F64};
#define N_OPTION_OPS (sizeof option_ops / sizeof option_ops[0])

static bool f64_is_subnormal(uint64_t u)
{
    return (u & UINT64_C(0x7FF0000000000000)) == 0 && (u & UINT64_C(0x000FFFFFFFFFFFFF)) != 0;
}

/* _i: 1 = daz, 2 = ftz, 3 = both */
START_TEST(test_daz_ftz_random)
{
    const int daz = _i & 1, ftz = (_i >> 1) & 1;
    char what[64];
    snprintf(what, sizeof what, "daz=%d ftz=%d, random", daz, ftz);
    ts_checker ck;
    ts_checker_init(&ck, what);
    ts_rng rng;
    ts_rng_init(&rng, ts_seed() ^ (0xDA2u * (uint64_t)_i));
    uint64_t n = ts_random_count() / 20;
    for (int fmt = 0; fmt < 3; fmt++)
        for (size_t k = 0; k < N_OPTION_OPS; k++) {
            orc_op op = option_ops[k];
            if (!ts_emu_has_op(op, fmt)) continue;
            int n_modes = (op == ORC_RTI_EXACT || op == ORC_TO_I32_X || op == ORC_TO_UI64_X)
                              ? FPE_RO + 1
                              : FPE_ROUND_COUNT;
            for (uint64_t i = 0; i < n; i++) {
                uint64_t ops[3];
                ts_random_operands(&rng, op, fmt, ops);
                /* whether daz reads a binary64 subnormal as zero is not in the
                 * contract; keep binary64 operands normal */
                if (op == ORC_FROM_F64 && f64_is_subnormal(ops[0])) continue;
                fpe_env env = ts_env((int)ts_below(&rng, (uint32_t)n_modes), (int)(i & 1));
                env.daz = (uint8_t)daz;
                env.ftz = (uint8_t)ftz;
                env.sr_seed = 5;
                env.sr_index = i;
                ts_check_op(&ck, op, fmt, &env, ops);
            }
        }
    ck_assert_msg(ts_checker_summary(&ck) == 0, "%s: %llu mismatches", what,
                  (unsigned long long)ck.mismatches);
}
END_TEST

/* The canonical specialization: every pair / triple of special values for
 * the arithmetic, every special value for the rest, and random operands. */
START_TEST(test_canonical_nan)
{
    fpe_format_id fmt = (fpe_format_id)_i;
    char what[64];
    snprintf(what, sizeof what, "canonical NaN %s", ts_format_name(fmt));
    ts_checker ck;
    ts_checker_init(&ck, what);
    uint32_t sp[128], sm[64];
    size_t n = ts_special_values(fmt, sp, 128), nm = ts_special_values_small(fmt, sm, 64);
    fpe_env env = ts_env(FPE_RNE, FPE_TININESS_AFTER);
    env.nan = FPE_NAN_CANONICAL;
    for (size_t k = 0; k < N_OPTION_OPS; k++) {
        orc_op op = option_ops[k];
        if (!ts_emu_has_op(op, fmt) || op == ORC_FROM_I64 || op == ORC_FROM_F64) continue;
        int ar = oracle_op_arity(op);
        for (size_t i = 0; i < (ar == 3 ? nm : n); i++)
            for (size_t j = 0; j < (ar >= 2 ? (ar == 3 ? nm : n) : 1); j++)
                for (size_t l = 0; l < (ar == 3 ? nm : 1); l++) {
                    uint64_t ops[3] = {ar == 3 ? sm[i] : sp[i], ar == 3 ? sm[j] : sp[j], sm[l]};
                    env.round = (uint8_t)((i + j + l) % (FPE_RO + 1));
                    ts_check_op(&ck, op, fmt, &env, ops);
                }
    }
    /* binary64 NaNs into the format */
    static const uint64_t f64_nans[] = {UINT64_C(0x7FF8000000000000), UINT64_C(0xFFF8000000000001),
                                        UINT64_C(0x7FF0000000000001), UINT64_C(0x7FF4000000000000)};
    for (size_t i = 0; i < 4; i++) {
        uint64_t ops[1] = {f64_nans[i]};
        ts_check_op(&ck, ORC_FROM_F64, fmt, &env, ops);
    }
    ts_rng rng;
    ts_rng_init(&rng, ts_seed() ^ (0xCA4u + (uint64_t)fmt));
    uint64_t n_rand = ts_random_count() / 20;
    for (size_t k = 0; k < N_OPTION_OPS; k++) {
        orc_op op = option_ops[k];
        if (!ts_emu_has_op(op, fmt)) continue;
        for (uint64_t i = 0; i < n_rand; i++) {
            uint64_t ops[3];
            ts_random_operands(&rng, op, fmt, ops);
            env.round = (uint8_t)ts_below(&rng, FPE_RO + 1);
            ts_check_op(&ck, op, fmt, &env, ops);
        }
    }
    ck_assert_msg(ts_checker_summary(&ck) == 0, "%s: %llu mismatches", what,
                  (unsigned long long)ck.mismatches);
}
END_TEST

/* Flags are OR-ed into env->flags and never cleared. */
START_TEST(test_flags_accumulate)
{
    fpe_env env = ts_env(FPE_RNE, FPE_TININESS_AFTER);
    env.flags = 0x1F;
    ck_assert_uint_eq(fpe_f16_add(&env, 0x3C00, 0x3C00), 0x4000); /* exact */
    ck_assert_uint_eq(env.flags, 0x1F);
    env.flags = FPE_FLAG_INFINITE;
    ck_assert_uint_eq(fpe_f16_div(&env, 0x3C00, 0x4200), 0x3555); /* 1/3, inexact */
    ck_assert_uint_eq(env.flags, FPE_FLAG_INFINITE | FPE_FLAG_INEXACT);
    fpe_f16_mul(&env, 0x7BFF, 0x4000); /* overflow */
    ck_assert_uint_eq(env.flags, FPE_FLAG_INFINITE | FPE_FLAG_INEXACT | FPE_FLAG_OVERFLOW);
    fpe_f32_sqrt(&env, 0xBF800000u); /* invalid */
    ck_assert_uint_eq(env.flags, 0x1D);
    fpe_bf16_mul(&env, 0x0001, 0x3F00); /* underflow */
    ck_assert_uint_eq(env.flags, 0x1F);
    env.flags = 0x1F;
    fpe_f16_lt(&env, 0x3C00, 0x4000);
    fpe_f32_to_i32(&env, 0x3F800000u, true);
    fpe_f16_roundToInt(&env, 0x3800, false);
    ck_assert_uint_eq(env.flags, 0x1F);
}
END_TEST

START_TEST(test_format_table)
{
    for (int f = 0; f < 3; f++) {
        const fpe_format *E = &fpe_formats[f];
        const orc_format *O = &orc_formats[f];
        ck_assert_str_eq(E->name, O->name);
        ck_assert_int_eq(E->bits, O->bits);
        ck_assert_int_eq(E->p, O->p);
        ck_assert_int_eq(E->exp_bits, O->exp_bits);
        ck_assert_int_eq(E->bias, O->bias);
        ck_assert_int_eq(E->emin, O->emin);
        ck_assert_int_eq(E->emax, O->emax);
    }
}
END_TEST

START_TEST(test_env_default)
{
    fpe_env e = fpe_env_default();
    ck_assert_int_eq(e.round, FPE_RNE);
    ck_assert_int_eq(e.tininess, FPE_TININESS_AFTER);
    ck_assert_int_eq(e.ftz, 0);
    ck_assert_int_eq(e.daz, 0);
    ck_assert_int_eq(e.nan, FPE_NAN_X86);
    ck_assert_int_eq(e.flags, 0);
    ck_assert_uint_eq(e.sr_seed, 0);
    ck_assert_uint_eq(e.sr_stream, 0);
    ck_assert_uint_eq(e.sr_index, 0);
}
END_TEST

START_TEST(test_names)
{
    static const char *const names[FPE_ROUND_COUNT] = {
        "near_even", "near_maxMag", "minMag", "min", "max", "odd", "stoch_prop", "stoch_equal"};
    for (int r = 0; r < FPE_ROUND_COUNT; r++) {
        ck_assert_str_eq(fpe_round_name((fpe_round)r), names[r]);
        ck_assert_int_eq(fpe_round_from_name(names[r]), r);
    }
    ck_assert_int_eq(fpe_round_from_name("nearest"), -1);
    ck_assert_int_eq(fpe_round_from_name(""), -1);
    ck_assert_int_eq(fpe_format_from_name("fp16"), FPE_FMT_F16);
    ck_assert_int_eq(fpe_format_from_name("f16"), FPE_FMT_F16);
    ck_assert_int_eq(fpe_format_from_name("bf16"), FPE_FMT_BF16);
    ck_assert_int_eq(fpe_format_from_name("fp32"), FPE_FMT_F32);
    ck_assert_int_eq(fpe_format_from_name("f32"), FPE_FMT_F32);
    ck_assert_int_eq(fpe_format_from_name("fp64"), -1);
    ck_assert_int_eq(fpe_format_from_name("bfloat"), -1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("emulate_options");
    TCase *tc = tcase_create("options");
    tcase_set_timeout(tc, 900);
    tcase_add_test(tc, test_hand_values_emulator);
    tcase_add_loop_test(tc, test_daz_ftz_random, 1, 4);
    tcase_add_loop_test(tc, test_canonical_nan, 0, 3);
    tcase_add_test(tc, test_flags_accumulate);
    tcase_add_test(tc, test_format_table);
    tcase_add_test(tc, test_env_default);
    tcase_add_test(tc, test_names);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
