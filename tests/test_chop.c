/* test_chop.c: array rounding (fpe_chop_*), element by element against the oracle.
 *
 * Element i of a call is the oracle's conversion of in[i] at random index
 * sr_index + i; the counts are recomputed from the per-element results by
 * their definitions in fpe.h; a split array gives the same results, counts
 * and final index as one call; in-place works; bad arguments are refused.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracle.h"
#include "test_support.h"
#include "check_main.h"

#define N_ELEMS 4099

enum chop_kind { CHOP_F32, CHOP_F64, CHOP_F32_U16, CHOP_F64_U16 };
static const char *const kind_names[] = {"fpe_chop_f32", "fpe_chop_f64", "fpe_chop_f32_to_u16",
                                         "fpe_chop_f64_to_u16"};

static int call_chop(int kind, fpe_env *env, int fmt, const void *in, void *out, size_t n,
                     fpe_chop_counts *counts)
{
    switch (kind) {
    case CHOP_F32: return fpe_chop_f32(env, (fpe_format_id)fmt, in, out, n, counts);
    case CHOP_F64: return fpe_chop_f64(env, (fpe_format_id)fmt, in, out, n, counts);
    case CHOP_F32_U16: return fpe_chop_f32_to_u16(env, (fpe_format_id)fmt, in, out, n, counts);
    default: return fpe_chop_f64_to_u16(env, (fpe_format_id)fmt, in, out, n, counts);
    }
}

static bool input_is_f64(int kind) { return kind == CHOP_F64 || kind == CHOP_F64_U16; }
static bool output_is_u16(int kind) { return kind >= CHOP_F32_U16; }

/* Inputs: format-aware random values (subnormals, overflow, ties), zeros and
 * infinities; NaNs only when with_nans. */
static void make_inputs(ts_rng *r, int kind, int fmt, bool with_nans, float *f, double *d)
{
    for (size_t i = 0; i < N_ELEMS; i++) {
        for (;;) {
            double v;
            if (input_is_f64(kind)) {
                uint64_t ops[3], u;
                ts_random_operands(r, ORC_FROM_F64, (fpe_format_id)fmt, ops);
                u = ops[0];
                memcpy(&v, &u, sizeof v);
                /* binary64 subnormals: whether daz applies to them is open */
                if (v != 0 && fabs(v) < 0x1p-1022) continue;
            } else {
                uint32_t b =
                    ts_below(r, 2)
                        ? ts_random_operand(r, FPE_FMT_F32)
                        : ts_value_with_exp(r, FPE_FMT_F32,
                                            orc_formats[fmt].emin - 14 + (int)ts_below(r, 40));
                if (ts_below(r, 3) == 0) { /* aimed at the target format */
                    int lo = orc_formats[fmt].emin - orc_formats[fmt].frac_bits - 2;
                    int hi = orc_formats[fmt].emax + 1;
                    if (hi > 127) hi = 127;
                    b = ts_value_with_exp(r, FPE_FMT_F32,
                                          lo + (int)ts_below(r, (uint32_t)(hi - lo + 1)));
                }
                v = orc_to_double(FPE_FMT_F32, b);
            }
            if (isnan(v) && !with_nans) continue;
            d[i] = v;
            f[i] = (float)v; /* exact for the f32 kinds */
            break;
        }
    }
}

static uint32_t f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}
static uint64_t f64_bits(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

/* Expected element i: oracle bits, flags. */
static uint64_t expect(int kind, int fmt, const fpe_env *env0, size_t i, const float *f,
                       const double *d, uint8_t *fl)
{
    fpe_env e = *env0;
    e.sr_index = env0->sr_index + i;
    uint64_t ops[1];
    if (input_is_f64(kind)) {
        ops[0] = f64_bits(d[i]);
        return oracle_op(ORC_FROM_F64, (fpe_format_id)fmt, &e, ops, fl);
    }
    ops[0] = f32_bits(f[i]);
    static const orc_op to[3] = {ORC_TO_F16, ORC_TO_BF16, ORC_TO_F32};
    return oracle_op(to[fmt], FPE_FMT_F32, &e, ops, fl);
}

/* Run one chop and compare every element, the counts and the flags. */
static int check_chop(int kind, int fmt, const fpe_env *env0, const float *fin, const double *din,
                      bool check_counts)
{
    static float fout[N_ELEMS];
    static double dout[N_ELEMS];
    static uint16_t uout[N_ELEMS];
    fpe_env env = *env0;
    fpe_chop_counts counts = {1, 2, 3, 4}; /* added to, not overwritten */
    void *out = output_is_u16(kind)  ? (void *)uout
                : input_is_f64(kind) ? (void *)dout
                                     : (void *)fout;
    const void *in = input_is_f64(kind) ? (const void *)din : (const void *)fin;
    int rc = call_chop(kind, &env, fmt, in, out, N_ELEMS, check_counts ? &counts : NULL);
    ck_assert_int_eq(rc, FPE_OK);
    int bad = 0;
    fpe_chop_counts want = {1, 2, 3, 4};
    uint8_t want_flags = 0;
    for (size_t i = 0; i < N_ELEMS; i++) {
        uint8_t fl;
        uint64_t wb = expect(kind, fmt, env0, i, fin, din, &fl);
        want_flags |= fl;
        double wv = orc_to_double((fpe_format_id)fmt, (uint32_t)wb);
        double in_v = input_is_f64(kind) ? din[i] : (double)fin[i];
        bool ok;
        uint64_t got_bits;
        if (output_is_u16(kind)) {
            got_bits = uout[i];
            ok = got_bits == wb;
        } else {
            double gv = input_is_f64(kind) ? dout[i] : (double)fout[i];
            got_bits = input_is_f64(kind) ? f64_bits(gv) : f32_bits((float)gv);
            ok = isnan(wv) ? isnan(gv) : (gv == wv && signbit(gv) == signbit(wv));
        }
        if (!ok && bad++ < 5) {
            printf("MISMATCH %s %s mode=%s daz=%d ftz=%d element %zu (index %llu) input %a: "
                   "expected %0*llX (%a), got %llX\n",
                   kind_names[kind], ts_format_name((fpe_format_id)fmt), ts_mode_names[env0->round],
                   env0->daz, env0->ftz, i, (unsigned long long)(env0->sr_index + i), in_v,
                   orc_formats[fmt].bits / 4, (unsigned long long)wb, wv,
                   (unsigned long long)got_bits);
        }
        if (isfinite(in_v) && in_v != 0 && wv == 0) want.flushed++;
        if (orc_is_subnormal((fpe_format_id)fmt, (uint32_t)wb)) want.subnormal++;
        if (isfinite(in_v) && (fl & FPE_FLAG_OVERFLOW)) want.overflowed++;
        if (!isnan(in_v) && wv != in_v) want.inexact++;
    }
    if (env.sr_index != env0->sr_index + N_ELEMS && bad++ < 5)
        printf("MISMATCH %s: sr_index advanced by %llu, expected %d\n", kind_names[kind],
               (unsigned long long)(env.sr_index - env0->sr_index), N_ELEMS);
    if (check_counts && (counts.flushed != want.flushed || counts.subnormal != want.subnormal ||
                         counts.overflowed != want.overflowed || counts.inexact != want.inexact)) {
        if (bad++ < 5)
            printf("MISMATCH %s %s mode=%s daz=%d ftz=%d counts (flushed, subnormal, overflowed, "
                   "inexact): expected %llu %llu %llu %llu, got %llu %llu %llu %llu\n",
                   kind_names[kind], ts_format_name((fpe_format_id)fmt), ts_mode_names[env0->round],
                   env0->daz, env0->ftz, (unsigned long long)want.flushed,
                   (unsigned long long)want.subnormal, (unsigned long long)want.overflowed,
                   (unsigned long long)want.inexact, (unsigned long long)counts.flushed,
                   (unsigned long long)counts.subnormal, (unsigned long long)counts.overflowed,
                   (unsigned long long)counts.inexact);
    }
    if (env.flags != want_flags && bad++ < 5)
        printf("MISMATCH %s %s mode=%s daz=%d ftz=%d: env->flags %02X, expected the OR of the "
               "elements' flags %02X\n",
               kind_names[kind], ts_format_name((fpe_format_id)fmt), ts_mode_names[env0->round],
               env0->daz, env0->ftz, env.flags, want_flags);
    return bad;
}

/* _i = kind */
START_TEST(test_chop_elements_and_counts)
{
    const int kind = _i;
    static float fin[N_ELEMS];
    static double din[N_ELEMS];
    ts_rng rng;
    ts_rng_init(&rng, ts_seed() ^ (0xC409u + (uint64_t)kind));
    int bad = 0;
    for (int fmt = 0; fmt < 3; fmt++) {
        if (output_is_u16(kind) && fmt == FPE_FMT_F32) continue;
        for (int mode = 0; mode < FPE_ROUND_COUNT; mode++)
            for (int opt = 0; opt < 4; opt++) {
                make_inputs(&rng, kind, fmt, false, fin, din);
                fpe_env env = ts_env(mode, (int)ts_below(&rng, 2));
                env.daz = (uint8_t)(opt & 1);
                env.ftz = (uint8_t)(opt >> 1);
                env.sr_seed = ts_next(&rng);
                env.sr_stream = (uint32_t)mode;
                env.sr_index = ts_next(&rng) >> 8;
                bad += check_chop(kind, fmt, &env, fin, din, true);
                /* NaNs in the input: results only */
                make_inputs(&rng, kind, fmt, true, fin, din);
                bad += check_chop(kind, fmt, &env, fin, din, false);
            }
    }
    ck_assert_msg(bad == 0, "%s: %d mismatches", kind_names[kind], bad);
}
END_TEST

/* The same array chopped in one call and in random pieces. */
START_TEST(test_chop_split_independent)
{
    const int kind = _i;
    static float fin[N_ELEMS], fa[N_ELEMS], fb[N_ELEMS];
    static double din[N_ELEMS], da[N_ELEMS], db[N_ELEMS];
    static uint16_t ua[N_ELEMS], ub[N_ELEMS];
    ts_rng rng;
    ts_rng_init(&rng, ts_seed() ^ (0x5711u + (uint64_t)kind));
    for (int fmt = 0; fmt < 3; fmt++) {
        if (output_is_u16(kind) && fmt == FPE_FMT_F32) continue;
        for (int mode = FPE_SR_PROP; mode <= FPE_SR_EQUAL; mode++) {
            make_inputs(&rng, kind, fmt, false, fin, din);
            fpe_env e1 = ts_env(mode, FPE_TININESS_AFTER);
            e1.sr_seed = ts_next(&rng);
            e1.sr_index = 12345;
            fpe_env e2 = e1;
            fpe_chop_counts c1 = {0, 0, 0, 0}, c2 = {0, 0, 0, 0};
            const void *in = input_is_f64(kind) ? (const void *)din : (const void *)fin;
            void *oa = output_is_u16(kind)  ? (void *)ua
                       : input_is_f64(kind) ? (void *)da
                                            : (void *)fa;
            call_chop(kind, &e1, fmt, in, oa, N_ELEMS, &c1);
            size_t done = 0;
            while (done < N_ELEMS) {
                size_t piece = 1 + ts_below(&rng, 700);
                if (piece > N_ELEMS - done) piece = N_ELEMS - done;
                if (ts_below(&rng, 5) == 0) piece = 0; /* empty calls are harmless */
                size_t esz = input_is_f64(kind) ? sizeof(double) : sizeof(float);
                size_t osz = output_is_u16(kind) ? sizeof(uint16_t) : esz;
                void *ob = output_is_u16(kind)  ? (void *)ub
                           : input_is_f64(kind) ? (void *)db
                                                : (void *)fb;
                int rc = call_chop(kind, &e2, fmt, (const char *)in + done * esz,
                                   (char *)ob + done * osz, piece, &c2);
                ck_assert_int_eq(rc, FPE_OK);
                done += piece;
            }
            if (output_is_u16(kind))
                ck_assert(memcmp(ua, ub, sizeof ua) == 0);
            else if (input_is_f64(kind))
                ck_assert(memcmp(da, db, sizeof da) == 0);
            else
                ck_assert(memcmp(fa, fb, sizeof fa) == 0);
            ck_assert_uint_eq(e1.sr_index, e2.sr_index);
            ck_assert_uint_eq(e1.sr_index, 12345 + N_ELEMS);
            ck_assert(memcmp(&c1, &c2, sizeof c1) == 0);
            ck_assert_uint_eq(e1.flags, e2.flags);
        }
    }
}
END_TEST

/* out == in */
START_TEST(test_chop_in_place)
{
    static float f[N_ELEMS], f0[N_ELEMS], fo[N_ELEMS];
    static double d[N_ELEMS], d0[N_ELEMS], dout[N_ELEMS];
    ts_rng rng;
    ts_rng_init(&rng, ts_seed() ^ 0x1F1Au);
    for (int fmt = 0; fmt < 3; fmt++) {
        make_inputs(&rng, CHOP_F32, fmt, false, f0, d0);
        memcpy(f, f0, sizeof f);
        fpe_env e1 = ts_env(FPE_SR_PROP, FPE_TININESS_AFTER), e2 = e1;
        ck_assert_int_eq(fpe_chop_f32(&e1, (fpe_format_id)fmt, f0, fo, N_ELEMS, NULL), FPE_OK);
        ck_assert_int_eq(fpe_chop_f32(&e2, (fpe_format_id)fmt, f, f, N_ELEMS, NULL), FPE_OK);
        ck_assert(memcmp(f, fo, sizeof f) == 0);
        make_inputs(&rng, CHOP_F64, fmt, false, f0, d0);
        memcpy(d, d0, sizeof d);
        e1 = e2 = ts_env(FPE_RNE, FPE_TININESS_AFTER);
        ck_assert_int_eq(fpe_chop_f64(&e1, (fpe_format_id)fmt, d0, dout, N_ELEMS, NULL), FPE_OK);
        ck_assert_int_eq(fpe_chop_f64(&e2, (fpe_format_id)fmt, d, d, N_ELEMS, NULL), FPE_OK);
        ck_assert(memcmp(d, dout, sizeof d) == 0);
    }
}
END_TEST

START_TEST(test_chop_arguments)
{
    fpe_env env = ts_env(FPE_RNE, FPE_TININESS_AFTER);
    float f[4] = {1, 2, 3, 4}, fo[4];
    double d[4] = {1, 2, 3, 4}, dout[4];
    uint16_t u[4];
    ck_assert_int_eq(fpe_chop_f32(&env, (fpe_format_id)3, f, fo, 4, NULL), FPE_EINVAL);
    ck_assert_int_eq(fpe_chop_f32(&env, (fpe_format_id)-1, f, fo, 4, NULL), FPE_EINVAL);
    ck_assert_int_eq(fpe_chop_f64(&env, (fpe_format_id)7, d, dout, 4, NULL), FPE_EINVAL);
    ck_assert_int_eq(fpe_chop_f32(&env, FPE_FMT_F16, NULL, fo, 4, NULL), FPE_EINVAL);
    ck_assert_int_eq(fpe_chop_f32(&env, FPE_FMT_F16, f, NULL, 4, NULL), FPE_EINVAL);
    ck_assert_int_eq(fpe_chop_f64(&env, FPE_FMT_BF16, NULL, dout, 4, NULL), FPE_EINVAL);
    ck_assert_int_eq(fpe_chop_f32_to_u16(&env, FPE_FMT_F32, f, u, 4, NULL), FPE_EINVAL);
    ck_assert_int_eq(fpe_chop_f64_to_u16(&env, FPE_FMT_F32, d, u, 4, NULL), FPE_EINVAL);
    ck_assert_int_eq(fpe_chop_f32_to_u16(&env, FPE_FMT_F16, f, NULL, 4, NULL), FPE_EINVAL);
    ck_assert_int_eq(fpe_chop_f64_to_u16(&env, FPE_FMT_F16, NULL, u, 4, NULL), FPE_EINVAL);
    /* n = 0 with NULL arrays is fine and consumes no index */
    uint64_t idx = env.sr_index;
    ck_assert_int_eq(fpe_chop_f32(&env, FPE_FMT_F16, NULL, NULL, 0, NULL), FPE_OK);
    ck_assert_int_eq(fpe_chop_f64_to_u16(&env, FPE_FMT_BF16, NULL, NULL, 0, NULL), FPE_OK);
    ck_assert_uint_eq(env.sr_index, idx);
    /* the valid call does the work */
    ck_assert_int_eq(fpe_chop_f32_to_u16(&env, FPE_FMT_F16, f, u, 4, NULL), FPE_OK);
    ck_assert_uint_eq(u[0], 0x3C00);
    ck_assert_uint_eq(u[3], 0x4400);
    ck_assert_uint_eq(env.sr_index, idx + 4);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("chop");
    TCase *tc = tcase_create("chop");
    tcase_set_timeout(tc, 900);
    tcase_add_loop_test(tc, test_chop_elements_and_counts, 0, 4);
    tcase_add_loop_test(tc, test_chop_split_independent, 0, 4);
    tcase_add_test(tc, test_chop_in_place);
    tcase_add_test(tc, test_chop_arguments);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
