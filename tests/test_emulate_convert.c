/* test_emulate_convert.c: conversions and the fp32 one-operand operations.
 *
 *   - i32, i64, ui32, ui64 -> fp16, bf16, fp32: boundaries and random integers;
 *   - fp32 -> fp16 and fp32 -> bf16: every fp32 within 400 ulps of each
 *     threshold of the target format, and a large random sample;
 *   - binary64 -> fp16, bf16, fp32: midpoints, near-midpoints, random doubles;
 *   - fp32 sqrt, roundToInt, to_f64 and to integers: special values, and
 *     random operands aimed at each operation's interesting range.
 * All against the MPFR oracle, bits and flags; conversions to formats in all
 * eight modes, integer results in the six deterministic ones.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracle.h"
#include "test_support.h"
#include "check_main.h"

#define F16  FPE_FMT_F16
#define BF16 FPE_FMT_BF16
#define F32  FPE_FMT_F32

static uint64_t count_per_mode(uint64_t divisor)
{
    uint64_t n = ts_random_count() / divisor;
    return n ? n : 1;
}

static void check_all_modes(ts_checker *ck, orc_op op, fpe_format_id fmt, const uint64_t *ops,
                            int n_modes, uint64_t index)
{
    for (int mode = 0; mode < n_modes; mode++)
        for (int tin = 0; tin < 2; tin++) {
            fpe_env env = ts_env(mode, tin);
            env.sr_seed = 0xC0FFEE;
            env.sr_index = index;
            ts_check_op(ck, op, fmt, &env, ops);
        }
}

/* ---- integers -> formats ------------------------------------------------------ */
static const orc_op from_int_ops[] = {ORC_FROM_I32, ORC_FROM_I64, ORC_FROM_UI32, ORC_FROM_UI64};

START_TEST(test_from_int)
{
    orc_op op = from_int_ops[_i];
    char what[64];
    snprintf(what, sizeof what, "%s", oracle_op_name(op));
    ts_checker ck;
    ts_checker_init(&ck, what);
    bool is32 = op == ORC_FROM_I32 || op == ORC_FROM_UI32;
    uint64_t mask = is32 ? UINT64_C(0xFFFFFFFF) : UINT64_MAX;
    for (int fmt = 0; fmt < 3; fmt++) {
        /* boundaries: 2^k + d, (2^(p+1) +- 1) << k (ties), format limits */
        uint64_t index = 0;
        for (int k = 0; k < 64; k++)
            for (int d = -3; d <= 3; d++) {
                uint64_t v = ((UINT64_C(1) << k) + (uint64_t)(int64_t)d) & mask;
                uint64_t ops[1] = {v};
                check_all_modes(&ck, op, fmt, ops, FPE_ROUND_COUNT, index++);
                ops[0] = (0 - v) & mask;
                check_all_modes(&ck, op, fmt, ops, FPE_ROUND_COUNT, index++);
                int p = orc_formats[fmt].p;
                uint64_t tie = (((UINT64_C(1) << p) + 1) << k) + (uint64_t)(int64_t)d;
                ops[0] = tie & mask;
                check_all_modes(&ck, op, fmt, ops, FPE_ROUND_COUNT, index++);
            }
        static const uint64_t extra[] = {0,
                                         65504,
                                         65519,
                                         65520,
                                         65535,
                                         65536,
                                         UINT64_C(0x7FFFFFFF),
                                         UINT64_C(0x80000000),
                                         UINT64_C(0xFFFFFFFF),
                                         UINT64_C(0x7FFFFFFFFFFFFFFF),
                                         UINT64_C(0x8000000000000000),
                                         UINT64_MAX,
                                         UINT64_C(0xFFFFFF0000000000),
                                         UINT64_C(0xFFFFFF8000000000),
                                         UINT64_C(0xFF80000000000000)};
        for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++) {
            uint64_t ops[1] = {extra[i] & mask};
            check_all_modes(&ck, op, fmt, ops, FPE_ROUND_COUNT, index++);
        }
        ts_rng rng;
        ts_rng_init(&rng, ts_seed() ^ (0x1111u * (uint64_t)(op + 1)) ^ (uint64_t)fmt << 40);
        uint64_t n = count_per_mode(8);
        for (int mode = 0; mode < FPE_ROUND_COUNT; mode++) {
            fpe_env env = ts_env(mode, FPE_TININESS_AFTER);
            env.sr_seed = ts_next(&rng);
            for (uint64_t i = 0; i < n; i++) {
                uint64_t ops[3];
                ts_random_operands(&rng, op, fmt, ops);
                env.sr_index = ts_next(&rng);
                env.tininess = (uint8_t)(i & 1);
                ts_check_op(&ck, op, fmt, &env, ops);
            }
        }
    }
    ck_assert_msg(ts_checker_summary(&ck) == 0, "%s: %llu mismatches", what,
                  (unsigned long long)ck.mismatches);
}
END_TEST

/* ---- fp32 -> fp16 / bf16 -------------------------------------------------------- */
START_TEST(test_f32_to_16)
{
    fpe_format_id to = _i ? BF16 : F16;
    orc_op op = _i ? ORC_TO_BF16 : ORC_TO_F16;
    char what[64];
    snprintf(what, sizeof what, "fp32 -> %s", ts_format_name(to));
    ts_checker ck;
    ts_checker_init(&ck, what);
    const orc_format *T = &orc_formats[to];
    /* thresholds of the target: its smallest subnormal and half of it, 2^emin
     * and 2^(emin-1), its largest value and 2^(emax+1), 1, and each power of
     * two of the target's range */
    double thresholds[300];
    size_t nt = 0;
    thresholds[nt++] = ldexp(1.0, T->emin - T->frac_bits);
    thresholds[nt++] = ldexp(1.0, T->emin - T->frac_bits - 1);
    thresholds[nt++] = ldexp(1.0, T->emin - T->frac_bits - 2);
    thresholds[nt++] = ldexp(3.0, T->emin - T->frac_bits - 1);
    thresholds[nt++] = orc_to_double(to, T->max_finite);
    thresholds[nt++] = ldexp(1.0, T->emax) * (2.0 - ldexp(1.0, -T->p)); /* overflow midpoint */
    for (int e = T->emin - T->frac_bits; e <= T->emax + 1 && e <= 127; e++)
        thresholds[nt++] = ldexp(1.0, e);
    uint64_t index = 0;
    for (size_t t = 0; t < nt; t++) {
        uint32_t c = orc_from_double(F32, (float)thresholds[t]);
        for (int d = -400; d <= 400; d++)
            for (int s = 0; s < 2; s++) {
                uint64_t ops[1] = {(c + (uint32_t)d) | (s ? 0x80000000u : 0)};
                check_all_modes(&ck, op, F32, ops, FPE_ROUND_COUNT, index++);
            }
    }
    uint32_t sp[128];
    size_t n_sp = ts_special_values(F32, sp, 128);
    for (size_t i = 0; i < n_sp; i++) {
        uint64_t ops[1] = {sp[i]};
        check_all_modes(&ck, op, F32, ops, FPE_ROUND_COUNT, index++);
    }
    ts_rng rng;
    ts_rng_init(&rng, ts_seed() ^ (0xF32u + (uint64_t)to));
    uint64_t n = ts_random_count();
    for (int mode = 0; mode < FPE_ROUND_COUNT; mode++) {
        fpe_env env = ts_env(mode, FPE_TININESS_AFTER);
        env.sr_seed = ts_next(&rng);
        env.sr_stream = (uint32_t)mode;
        for (uint64_t i = 0; i < n; i++) {
            uint32_t a;
            /* half uniform fp32 bits, half aimed at the target's range */
            if (i & 1)
                a = (uint32_t)ts_next(&rng);
            else {
                int lo = T->emin - T->frac_bits - 3, hi = T->emax + 2;
                if (hi > 127) hi = 127;
                a = ts_value_with_exp(&rng, F32, lo + (int)ts_below(&rng, (uint32_t)(hi - lo + 1)));
            }
            uint64_t ops[1] = {a};
            env.tininess = (uint8_t)((i >> 1) & 1);
            env.sr_index = i;
            ts_check_op(&ck, op, F32, &env, ops);
        }
    }
    ck_assert_msg(ts_checker_summary(&ck) == 0, "%s: %llu mismatches", what,
                  (unsigned long long)ck.mismatches);
}
END_TEST

/* ---- binary64 -> formats ---------------------------------------------------------- */
static uint64_t dbits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

START_TEST(test_from_f64)
{
    fpe_format_id to = (fpe_format_id)_i;
    char what[64];
    snprintf(what, sizeof what, "binary64 -> %s", ts_format_name(to));
    ts_checker ck;
    ts_checker_init(&ck, what);
    static const uint64_t special[] = {0,
                                       UINT64_C(0x8000000000000000),
                                       UINT64_C(0x7FF0000000000000),
                                       UINT64_C(0xFFF0000000000000),
                                       UINT64_C(0x7FF8000000000000),
                                       UINT64_C(0xFFF8000000000001),
                                       UINT64_C(0x7FF0000000000001),
                                       UINT64_C(0x7FF4000000000000),
                                       UINT64_C(0x7FFFFFFFFFFFFFFF),
                                       UINT64_C(0x7FEFFFFFFFFFFFFF),
                                       UINT64_C(0x0010000000000000)};
    uint64_t index = 0;
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) {
        uint64_t ops[1] = {special[i]};
        check_all_modes(&ck, ORC_FROM_F64, to, ops, FPE_ROUND_COUNT, index++);
    }
    /* each power of two of the target's range, and it plus/minus tiny bits */
    const orc_format *T = &orc_formats[to];
    for (int e = T->emin - T->frac_bits - 3; e <= T->emax + 2; e++)
        for (int k = 0; k < 6; k++) {
            double base = ldexp(1.0, e);
            double v[6] = {base,
                           base * (1 + 0x1p-52),
                           base * (1 - 0x1p-53),
                           base * (1 + ldexp(1.0, -T->p)),
                           base * (1 + ldexp(1.0, -T->p) + 0x1p-50),
                           base * (2 - ldexp(1.0, -T->p))};
            uint64_t ops[1] = {dbits(v[k])};
            check_all_modes(&ck, ORC_FROM_F64, to, ops, FPE_ROUND_COUNT, index++);
        }
    ts_rng rng;
    ts_rng_init(&rng, ts_seed() ^ (0xD0B1u + (uint64_t)to));
    uint64_t n = count_per_mode(4);
    for (int mode = 0; mode < FPE_ROUND_COUNT; mode++) {
        fpe_env env = ts_env(mode, FPE_TININESS_AFTER);
        env.sr_seed = ts_next(&rng);
        for (uint64_t i = 0; i < n; i++) {
            uint64_t ops[3];
            ts_random_operands(&rng, ORC_FROM_F64, to, ops);
            env.tininess = (uint8_t)(i & 1);
            env.sr_index = ts_next(&rng);
            ts_check_op(&ck, ORC_FROM_F64, to, &env, ops);
        }
    }
    ck_assert_msg(ts_checker_summary(&ck) == 0, "%s: %llu mismatches", what,
                  (unsigned long long)ck.mismatches);
}
END_TEST

/* ---- fp32 one-operand operations --------------------------------------------------- */
static const orc_op f32_unary_ops[] = {ORC_SQRT,     ORC_RTI,      ORC_RTI_EXACT, ORC_TO_F64,
                                       ORC_TO_I32,   ORC_TO_I64,   ORC_TO_UI32,   ORC_TO_UI64,
                                       ORC_TO_I32_X, ORC_TO_I64_X, ORC_TO_UI32_X, ORC_TO_UI64_X};

static uint32_t random_f32_for(ts_rng *r, orc_op op)
{
    uint32_t pick = ts_below(r, 4);
    if (pick == 0) return ts_random_operand(r, F32);
    switch (op) {
    case ORC_SQRT:
        if (pick == 1) { /* a square, or next to one */
            float y = (float)ts_uniform(r) * 4096.0f;
            y = floorf(y) * ldexpf(1.0f, (int)ts_below(r, 120) - 70); /* y*y in range */
            return orc_from_double(F32, (double)y * y) + ts_below(r, 3) - 1;
        }
        return ts_value_with_exp(r, F32, -149 + (int)ts_below(r, 277));
    case ORC_RTI:
    case ORC_RTI_EXACT: {
        if (pick == 1) { /* k + 1/2, k + 1/2 +- ulp */
            double v = floor(ts_uniform(r) * 4096.0) + 0.5;
            return orc_from_double(F32, ts_below(r, 2) ? -v : v) + ts_below(r, 3) - 1;
        }
        return ts_value_with_exp(r, F32, -3 + (int)ts_below(r, 28));
    }
    default: { /* to integers: around every magnitude up to 2^65 */
        if (pick == 1) {
            int e = (int)ts_below(r, 66);
            uint32_t sign = ts_below(r, 2) ? 0x80000000u : 0;
            return (orc_from_double(F32, ldexp(1.0, e)) + ts_below(r, 5) - 2) | sign;
        }
        return ts_value_with_exp(r, F32, -3 + (int)ts_below(r, 70));
    }
    }
}

START_TEST(test_f32_unary)
{
    orc_op op = f32_unary_ops[_i];
    char what[64];
    snprintf(what, sizeof what, "%s fp32", oracle_op_name(op));
    ts_checker ck;
    ts_checker_init(&ck, what);
    int n_modes = op == ORC_SQRT ? FPE_ROUND_COUNT : FPE_RO + 1;
    uint32_t sp[128];
    size_t n_sp = ts_special_values(F32, sp, 128);
    for (size_t i = 0; i < n_sp; i++) {
        uint64_t ops[1] = {sp[i]};
        check_all_modes(&ck, op, F32, ops, n_modes, i);
    }
    ts_rng rng;
    ts_rng_init(&rng, ts_seed() ^ (0xAB00u + (uint64_t)op));
    uint64_t n = count_per_mode(4);
    for (int mode = 0; mode < n_modes; mode++) {
        fpe_env env = ts_env(mode, FPE_TININESS_AFTER);
        env.sr_seed = ts_next(&rng);
        for (uint64_t i = 0; i < n; i++) {
            uint64_t ops[1] = {random_f32_for(&rng, op)};
            env.tininess = (uint8_t)(i & 1);
            env.sr_index = ts_next(&rng);
            ts_check_op(&ck, op, F32, &env, ops);
        }
    }
    ck_assert_msg(ts_checker_summary(&ck) == 0, "%s: %llu mismatches", what,
                  (unsigned long long)ck.mismatches);
}
END_TEST

/* fp32 NaN classification helpers on a sample of patterns */
START_TEST(test_f32_classification)
{
    ts_rng rng;
    ts_rng_init(&rng, ts_seed());
    int bad = 0;
    for (int i = 0; i < 1000000; i++) {
        uint32_t a = (uint32_t)ts_next(&rng);
        if (i & 1) a |= 0x7F800000u;
        bool nan = orc_is_nan(F32, a), snan = orc_is_snan(F32, a);
        if (fpe_f32_isnan(a) != nan || fpe_f32_is_signaling_nan(a) != snan) {
            if (bad++ < 10)
                printf("MISMATCH f32 isnan/is_signaling_nan %08X: expected %d/%d\n", a, nan, snan);
        }
    }
    ck_assert_int_eq(bad, 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("emulate_convert");
    TCase *tc = tcase_create("convert");
    tcase_set_timeout(tc, 900);
    tcase_add_loop_test(tc, test_from_int, 0, 4);
    tcase_add_loop_test(tc, test_f32_to_16, 0, 2);
    tcase_add_loop_test(tc, test_from_f64, 0, 3);
    tcase_add_loop_test(tc, test_f32_unary, 0,
                        (int)(sizeof f32_unary_ops / sizeof f32_unary_ops[0]));
    tcase_add_test(tc, test_f32_classification);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
