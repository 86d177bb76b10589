/* test_emulate_compare.c: the six comparisons against host doubles.
 *
 * eq, le_quiet and lt_quiet raise invalid only for a signaling NaN; le, lt
 * and eq_signaling for any NaN; a NaN compares false; -0 == +0.  Checked on
 * every pair of special values, on random pairs (many with equal or
 * neighbouring values), and with denormals-are-zero.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "oracle.h"
#include "test_support.h"
#include "check_main.h"

static void check_all_cmps(ts_checker *ck, fpe_format_id fmt, const fpe_env *env, uint32_t a,
                           uint32_t b)
{
    for (int c = 0; c < ORC_CMP_COUNT; c++)
        ts_check_compare(ck, (orc_cmp)c, fmt, env, a, b);
}

START_TEST(test_compare_specials)
{
    fpe_format_id fmt = (fpe_format_id)_i;
    char what[64];
    snprintf(what, sizeof what, "comparisons %s, special values", ts_format_name(fmt));
    ts_checker ck;
    ts_checker_init(&ck, what);
    uint32_t sp[128];
    size_t n = ts_special_values(fmt, sp, 128);
    for (int daz = 0; daz < 2; daz++) {
        fpe_env env = ts_env(FPE_RNE, FPE_TININESS_AFTER);
        env.daz = (uint8_t)daz;
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < n; j++)
                check_all_cmps(&ck, fmt, &env, sp[i], sp[j]);
    }
    ck_assert_msg(ts_checker_summary(&ck) == 0, "%s: %llu mismatches", what,
                  (unsigned long long)ck.mismatches);
}
END_TEST

START_TEST(test_compare_random)
{
    fpe_format_id fmt = (fpe_format_id)_i;
    char what[64];
    snprintf(what, sizeof what, "comparisons %s, random", ts_format_name(fmt));
    ts_checker ck;
    ts_checker_init(&ck, what);
    ts_rng rng;
    ts_rng_init(&rng, ts_seed() ^ (0xC0C0u + (uint64_t)fmt));
    const orc_format *F = &orc_formats[fmt];
    uint32_t mask = F->bits == 32 ? 0xFFFFFFFFu : 0xFFFFu;
    uint64_t n = ts_random_count();
    for (uint64_t i = 0; i < n; i++) {
        uint32_t a = ts_random_operand(&rng, fmt), b;
        switch (ts_below(&rng, 4)) {
        case 0: b = a; break;                                  /* equal */
        case 1: b = (a + ts_below(&rng, 5) - 2) & mask; break; /* neighbours */
        case 2: b = a ^ F->sign_mask; break;                   /* opposite sign */
        default: b = ts_random_operand(&rng, fmt); break;
        }
        fpe_env env = ts_env(FPE_RNE, FPE_TININESS_AFTER);
        env.daz = (uint8_t)(ts_below(&rng, 4) == 0);
        /* the rounding mode must not matter */
        env.round = (uint8_t)ts_below(&rng, FPE_ROUND_COUNT);
        check_all_cmps(&ck, fmt, &env, a, b);
    }
    ck_assert_msg(ts_checker_summary(&ck) == 0, "%s: %llu mismatches", what,
                  (unsigned long long)ck.mismatches);
}
END_TEST

/* All pairs of fp16 values with exponent fields 0, 1 and 0x1F (subnormals,
 * the first normals, infinities and NaNs) against every fp16 value. */
START_TEST(test_compare_f16_edges)
{
    ts_checker ck;
    ts_checker_init(&ck, "comparisons fp16, edge rows");
    fpe_env env = ts_env(FPE_RNE, FPE_TININESS_AFTER);
    static const uint32_t rows[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x83FF,
                                    0x8400, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7C01, 0x7E00,
                                    0xFE00, 0x7FFF, 0xFDFF, 0x3C00, 0xBC00};
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++)
        for (uint32_t b = 0; b < 0x10000; b++) {
            check_all_cmps(&ck, FPE_FMT_F16, &env, rows[r], b);
            check_all_cmps(&ck, FPE_FMT_F16, &env, b, rows[r]);
        }
    ck_assert_msg(ts_checker_summary(&ck) == 0, "%llu mismatches",
                  (unsigned long long)ck.mismatches);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("emulate_compare");
    TCase *tc = tcase_create("compare");
    tcase_set_timeout(tc, 900);
    tcase_add_loop_test(tc, test_compare_specials, 0, 3);
    tcase_add_loop_test(tc, test_compare_random, 0, 3);
    tcase_add_test(tc, test_compare_f16_edges);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
