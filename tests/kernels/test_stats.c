/* test_stats: ak_stats_accumulate on the cpu backend against a reference
 * written here: each element decoded by hand, its exact product with the
 * scale rounded by the emulator's fpe_f64_to_<target> (RNE) and the result's
 * bits classified; the bin from frexp, amax from fabs.  Every 16-bit
 * pattern, over a million fp32 patterns, hand-worked cases, accumulation,
 * bad arguments and guard regions. */
#include <check.h>
#include <math.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "ref_stats.h"

static const char *const target_names[] = {"fp16", "bf16", "fp32"};

/* The scales every sweep runs: those of the brief, then the corners (a
 * scale with a full significand, a negative one, zero, infinity, NaN, a
 * subnormal one, a huge one). */
typedef struct scale_case {
    const char *name;
    bool null; /* pass a NULL scale (means 1) */
    uint32_t bits;
} scale_case;
static const scale_case scales[] = {
    {"NULL", true, 0},
    {"1", false, 0x3F800000u},
    {"8", false, 0x41000000u},
    {"128", false, 0x43000000u},
    {"1024", false, 0x44800000u},
    {"2^15", false, 0x47000000u},
    {"2^-10", false, 0x3A800000u},
    {"2^18", false, 0x48800000u},
    {"3", false, 0x40400000u},
    {"1.1f", false, 0x3F8CCCCDu},
    {"-0.7f", false, 0xBF333333u},
    {"0", false, 0x00000000u},
    {"inf", false, 0x7F800000u},
    {"NaN", false, 0x7FC00000u},
    {"2^-140", false, 0x00000200u},
    {"2^100", false, 0x71800000u},
};
#define NSCALES (sizeof scales / sizeof scales[0])

/* ---- the reference ----------------------------------------------------------- */
static double decode(ak_dtype dt, uint32_t bits)
{
    if (dt == AK_F16) {
        const double sign = bits & 0x8000u ? -1.0 : 1.0;
        const int e = (int)(bits >> 10) & 31, m = (int)(bits & 0x3FFu);
        if (e == 31) return m ? NAN : sign * INFINITY;
        if (e == 0) return sign * ldexp(m, -24);
        return sign * ldexp(m + 1024, e - 25);
    }
    if (dt == AK_BF16) bits <<= 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static double scale_value(const scale_case *s)
{
    if (s->null) return 1.0;
    float f;
    memcpy(&f, &s->bits, sizeof f);
    return f;
}

static uint32_t element(ak_dtype dt, const void *x, size_t i)
{
    return dt == AK_F32 ? ((const uint32_t *)x)[i] : ((const uint16_t *)x)[i];
}

/* Adds the statistics of x to *r, one element at a time. */
static void reference(ak_stats *r, ak_dtype dt, const void *x, size_t n, fpe_format_id target,
                      double s)
{
    /* the target's exponent field and infinity, to read the rounded bits */
    const uint32_t exp_mask[] = {0x7C00u, 0x7F80u, 0x7F800000u};
    const uint32_t sign_bit[] = {0x8000u, 0x8000u, 0x80000000u};
    for (size_t i = 0; i < n; i++) {
        const double v = decode(dt, element(dt, x, i));
        r->count++;
        if (isnan(v) || isinf(v)) {
            r->nonfinite++;
            r->hist[AK_HIST_NONFINITE]++;
            continue;
        }
        if (fabs(v) > r->amax) r->amax = fabs(v);
        if (v == 0) {
            r->zero++;
            r->hist[AK_HIST_ZERO]++;
            continue;
        }
        r->nonzero++;
        int e;
        frexp(fabs(v), &e); /* |v| = m 2^e with m in [0.5, 1) */
        r->hist[AK_HIST_BIN(e - 1)]++;
        fpe_env env = fpe_env_default();
        const double p = v * s; /* exact: 24 + 24 bits at most */
        uint32_t y;
        switch (target) {
        case FPE_FMT_F16: y = fpe_f64_to_f16(&env, p); break;
        case FPE_FMT_BF16: y = fpe_f64_to_bf16(&env, p); break;
        default: y = fpe_f64_to_f32(&env, p); break;
        }
        const uint32_t mag = y & (sign_bit[target] - 1);
        if (mag == 0)
            r->flushed++;
        else if ((mag & exp_mask[target]) == 0)
            r->subnormal++;
        else if (mag == exp_mask[target])
            r->overflowed++;
    }
}

/* ---- running the op and comparing ------------------------------------------ */
/* The differences between two results, printed; 0 when equal (amax bitwise). */
static int differences(const char *ctx, const ak_stats *got, const ak_stats *want)
{
    int bad = 0;
#define FIELD(f)                                                                                   \
    if (got->f != want->f && bad++ < 6)                                                            \
        printf("%s: " #f " %llu, expected %llu\n", ctx, (unsigned long long)got->f,                \
               (unsigned long long)want->f);
    FIELD(count)
    FIELD(zero)
    FIELD(nonzero)
    FIELD(nonfinite)
    FIELD(flushed)
    FIELD(subnormal)
    FIELD(overflowed)
#undef FIELD
    if (memcmp(&got->amax, &want->amax, sizeof got->amax) != 0 && bad++ < 6)
        printf("%s: amax %a, expected %a\n", ctx, got->amax, want->amax);
    for (int i = 0; i < AK_HIST_BINS; i++)
        if (got->hist[i] != want->hist[i] && bad++ < 6)
            printf("%s: hist[%d] (2^%d) %llu, expected %llu\n", ctx, i, i + AK_HIST_EMIN - 1,
                   (unsigned long long)got->hist[i], (unsigned long long)want->hist[i]);
    return bad;
}

/* ak_stats_accumulate onto *out with the scale sc. */
static void accumulate(ak_backend *b, ak_tensor x, fpe_format_id target, const scale_case *sc,
                       ak_stats *out)
{
    ref_stats_accumulate(b, x, target, sc->null ? NULL : &sc->bits, out);
}

/* Every target and scale on the host array x: op against reference. */
static void sweep(const char *what, ak_dtype dt, const void *x, size_t n)
{
    ak_backend *b = kt_open_cpu();
    kt_buf buf = kt_buf_alloc(b, n, dt);
    kt_buf_upload(&buf, x);
    int bad = 0;
    for (int target = 0; target < 3; target++) {
        for (size_t k = 0; k < NSCALES; k++) {
            ak_stats got, want;
            memset(&got, 0, sizeof got);
            memset(&want, 0, sizeof want);
            accumulate(b, buf.t, (fpe_format_id)target, &scales[k], &got);
            reference(&want, dt, x, n, (fpe_format_id)target, scale_value(&scales[k]));
            char ctx[128];
            snprintf(ctx, sizeof ctx, "%s -> %s, scale %s", what, target_names[target],
                     scales[k].name);
            bad += differences(ctx, &got, &want);
        }
    }
    ck_assert(kt_buf_guards_ok(&buf));
    void *back = malloc(buf.bytes);
    ck_assert_ptr_nonnull(back);
    kt_buf_download(&buf, back);
    ck_assert_msg(memcmp(back, x, buf.bytes) == 0, "x was written");
    free(back);
    kt_buf_free(&buf);
    ak_close(b);
    ck_assert_msg(bad == 0, "%s: %d differences", what, bad);
}

/* ---- sweeps ---------------------------------------------------------------------- */
static void sweep_all_16(ak_dtype dt)
{
    uint16_t *x = malloc(65536 * sizeof *x);
    ck_assert_ptr_nonnull(x);
    for (uint32_t i = 0; i < 65536; i++)
        x[i] = (uint16_t)i;
    sweep(ak_dtype_name(dt), dt, x, 65536);
    free(x);
}

START_TEST(every_fp16_pattern) { sweep_all_16(AK_F16); }
END_TEST

START_TEST(every_bf16_pattern) { sweep_all_16(AK_BF16); }
END_TEST

/* fp32 patterns from kt_fill_f32_bits, then the fp32 values at and next to
 * every rounding threshold of every target divided by every scale. */
START_TEST(fp32_patterns)
{
    /* half the smallest subnormal, the midpoint below the smallest normal,
     * the overflow threshold; fp16, bf16, fp32 */
    const double thresholds[] = {0x1p-25,  0x1p-14 - 0x1p-25,   65520.0,
                                 0x1p-134, 0x1p-126 - 0x1p-134, 0x1p128 - 0x1p119,
                                 0x1p-150, 0x1p-126 - 0x1p-150, 0x1p128 - 0x1p103};
    const size_t nt = sizeof thresholds / sizeof thresholds[0];
    size_t n = ts_random_count();
    if (n < (1u << 20)) n = 1u << 20;
    const size_t extra = NSCALES * nt * 10;
    uint32_t *x = malloc((n + extra) * sizeof *x);
    ck_assert_ptr_nonnull(x);
    ts_rng r;
    ts_rng_init(&r, ts_seed());
    kt_fill_f32_bits(&r, x, n);
    for (size_t k = 0; k < NSCALES; k++) {
        const double s = fabs(scale_value(&scales[k]));
        for (size_t t = 0; t < nt; t++) {
            const float q = (float)(thresholds[t] / s);
            uint32_t bits;
            memcpy(&bits, &q, sizeof bits);
            for (int d = -2; d <= 2; d++) {
                x[n++] = bits + (uint32_t)d;
                x[n++] = (bits + (uint32_t)d) ^ 0x80000000u;
            }
        }
    }
    sweep("fp32", AK_F32, x, n);
    free(x);
}
END_TEST

/* ---- by hand ------------------------------------------------------------------ */
/* The stats of fp32 elements (given as bits) with target fp16 and scale 1. */
static ak_stats fp16_target_of(const uint32_t *bits, size_t n, const scale_case *sc)
{
    ak_backend *b = kt_open_cpu();
    kt_buf buf = kt_buf_alloc(b, n, AK_F32);
    kt_buf_upload(&buf, bits);
    ak_stats s;
    memset(&s, 0, sizeof s);
    accumulate(b, buf.t, FPE_FMT_F16, sc, &s);
    ck_assert(kt_buf_guards_ok(&buf));
    kt_buf_free(&buf);
    ak_close(b);
    return s;
}

/* One finite nonzero fp32 element, fp16 target, scale 1: its class and bin. */
static void one_element(uint32_t bits, int flushed, int subnormal, int overflowed, int binade)
{
    const ak_stats s = fp16_target_of(&bits, 1, &scales[1]);
    ck_assert_msg(s.count == 1 && s.nonzero == 1 && s.zero == 0 && s.nonfinite == 0,
                  "0x%08x: count %llu nonzero %llu", bits, (unsigned long long)s.count,
                  (unsigned long long)s.nonzero);
    ck_assert_msg(s.flushed == (uint64_t)flushed && s.subnormal == (uint64_t)subnormal &&
                      s.overflowed == (uint64_t)overflowed,
                  "0x%08x: flushed %llu subnormal %llu overflowed %llu, expected %d %d %d", bits,
                  (unsigned long long)s.flushed, (unsigned long long)s.subnormal,
                  (unsigned long long)s.overflowed, flushed, subnormal, overflowed);
    ck_assert_msg(s.hist[AK_HIST_BIN(binade)] == 1, "0x%08x: not in bin 2^%d", bits, binade);
    float f;
    memcpy(&f, &bits, sizeof f);
    ck_assert_msg(s.amax == fabs((double)f), "0x%08x: amax %a", bits, s.amax);
}

START_TEST(hand_worked_fp16_target)
{
    /*          bits         flushed subnormal overflowed  binade */
    one_element(0x33000000u, 1, 0, 0, -25);  /* 2^-25: a tie between 0 and 2^-24, to even: 0 */
    one_element(0xB3000000u, 1, 0, 0, -25);  /* -2^-25 likewise */
    one_element(0x33000001u, 0, 1, 0, -25);  /* 2^-25 + an fp32 ulp: up to 2^-24 */
    one_element(0x32FFFFFFu, 1, 0, 0, -26);  /* just below 2^-25: 0 */
    one_element(0x33400000u, 0, 1, 0, -25);  /* 1.5 * 2^-25: 2^-24 */
    one_element(0x33C00000u, 0, 1, 0, -24);  /* 1.5 * 2^-24: a tie, to even: 2^-23 */
    one_element(0x387FC000u, 0, 1, 0, -15);  /* the largest fp16 subnormal, 1023 * 2^-24 */
    one_element(0x387FE000u, 0, 0, 0, -15);  /* halfway to 2^-14: to the even normal 2^-14 */
    one_element(0x387FDFFFu, 0, 1, 0, -15);  /* just below halfway: the largest subnormal */
    one_element(0x38800000u, 0, 0, 0, -14);  /* 2^-14, the smallest fp16 normal */
    one_element(0x477FE000u, 0, 0, 0, 15);   /* 65504, the fp16 max, stays */
    one_element(0x477FEFFFu, 0, 0, 0, 15);   /* just below 65520: 65504 */
    one_element(0x477FF000u, 0, 0, 1, 15);   /* 65520: a tie, to even: inf */
    one_element(0xC77FF000u, 0, 0, 1, 15);   /* -65520: -inf */
    one_element(0x47800000u, 0, 0, 1, 16);   /* 65536 */
    one_element(0x00000001u, 1, 0, 0, -149); /* the smallest fp32 subnormal */
    one_element(0x007FFFFFu, 1, 0, 0, -127); /* the largest fp32 subnormal */
    one_element(0x7F7FFFFFu, 0, 0, 1, 127);  /* the fp32 max */
    one_element(0x3F800000u, 0, 0, 0, 0);    /* 1 */
}
END_TEST

START_TEST(hand_worked_batches)
{
    /* zeros and non-finite elements are counted apart and never flush or
     * overflow; amax is the largest finite magnitude, unscaled */
    const uint32_t mixed[] = {0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u,
                              0x7FC00000u, 0x33000000u, 0x477FF000u, 0xC788B800u /* -70000 */,
                              0x387FC000u};
    ak_stats s = fp16_target_of(mixed, 9, &scales[1]);
    ck_assert_uint_eq(s.count, 9);
    ck_assert_uint_eq(s.zero, 2);
    ck_assert_uint_eq(s.nonfinite, 3);
    ck_assert_uint_eq(s.nonzero, 4);
    ck_assert_uint_eq(s.flushed, 1);
    ck_assert_uint_eq(s.subnormal, 1);
    ck_assert_uint_eq(s.overflowed, 2);
    ck_assert(s.amax == 70000.0);
    ck_assert_uint_eq(s.hist[AK_HIST_ZERO], 2);
    ck_assert_uint_eq(s.hist[AK_HIST_NONFINITE], 3);
    ck_assert_uint_eq(s.hist[AK_HIST_BIN(-25)], 1);
    ck_assert_uint_eq(s.hist[AK_HIST_BIN(15)], 1);
    ck_assert_uint_eq(s.hist[AK_HIST_BIN(16)], 1); /* 65536 <= 70000 < 131072 */
    ck_assert_uint_eq(s.hist[AK_HIST_BIN(-15)], 1);

    /* scale 2^-10: 1 -> 2^-10 normal, 2^-15 -> 2^-25 flushed, 2^-14 -> 2^-24
     * subnormal, 2^25 -> 2^15 normal, 2^26 -> 2^16 overflows; and the
     * histogram stays unscaled */
    const uint32_t scaled[] = {0x3F800000u, 0x38000000u, 0x38800000u, 0x4C000000u, 0x4C800000u};
    s = fp16_target_of(scaled, 5, &scales[6]);
    ck_assert_uint_eq(s.flushed, 1);
    ck_assert_uint_eq(s.subnormal, 1);
    ck_assert_uint_eq(s.overflowed, 1);
    ck_assert_uint_eq(s.hist[AK_HIST_BIN(-15)], 1);
    ck_assert_uint_eq(s.hist[AK_HIST_BIN(26)], 1);
    ck_assert(s.amax == 0x1p26);

    /* scale 0: every finite nonzero element flushes; infinite scale: every
     * one overflows, and 0 * inf (NaN) is neither */
    const uint32_t small[] = {0x3F800000u, 0x00000000u, 0x00000001u};
    const scale_case zero_scale = {"0", false, 0}, inf_scale = {"inf", false, 0x7F800000u};
    s = fp16_target_of(small, 3, &zero_scale);
    ck_assert(s.flushed == 2 && s.subnormal == 0 && s.overflowed == 0);
    s = fp16_target_of(small, 3, &inf_scale);
    ck_assert(s.flushed == 0 && s.subnormal == 0 && s.overflowed == 2);

    /* nothing finite: amax 0 */
    const uint32_t nonfinite[] = {0x7F800000u, 0xFFC00000u};
    s = fp16_target_of(nonfinite, 2, &scales[0]);
    ck_assert(s.amax == 0.0 && s.nonfinite == 2 && s.count == 2);
}
END_TEST

START_TEST(hand_worked_16bit_sources)
{
    ak_backend *b = kt_open_cpu();
    /* fp16 0x0001 = 2^-24: bf16 keeps it (normal there), fp16 too (subnormal);
     * times 2^-10 in fp16 it flushes.  bf16 0x7F7F (its max, ~3.39e38) overflows fp16. */
    const uint16_t h[] = {0x0001, 0x7BFF, 0x8400};
    const uint16_t bf[] = {0x7F7F, 0x0001, 0x3F80};
    kt_buf hb = kt_buf_alloc(b, 3, AK_F16), bb = kt_buf_alloc(b, 3, AK_BF16);
    kt_buf_upload(&hb, h);
    kt_buf_upload(&bb, bf);
    ak_stats s;
    memset(&s, 0, sizeof s);
    accumulate(b, hb.t, FPE_FMT_BF16, &scales[1], &s);
    ck_assert(s.flushed == 0 && s.subnormal == 0 && s.overflowed == 0);
    ck_assert(s.hist[AK_HIST_BIN(-24)] == 1 && s.hist[AK_HIST_BIN(15)] == 1 &&
              s.hist[AK_HIST_BIN(-14)] == 1);
    ck_assert(s.amax == 65504.0);
    memset(&s, 0, sizeof s);
    accumulate(b, hb.t, FPE_FMT_F16, &scales[1], &s);
    ck_assert(s.flushed == 0 && s.subnormal == 1 && s.overflowed == 0);
    memset(&s, 0, sizeof s);
    accumulate(b, hb.t, FPE_FMT_F16, &scales[6], &s); /* 2^-10 */
    ck_assert(s.flushed == 1 && s.subnormal == 1 && s.overflowed == 0);
    memset(&s, 0, sizeof s);
    accumulate(b, bb.t, FPE_FMT_F16, &scales[0], &s);
    /* bf16 0x0001 = 2^-133 flushes in fp16; 1.0 stays */
    ck_assert(s.flushed == 1 && s.subnormal == 0 && s.overflowed == 1);
    ck_assert(s.hist[AK_HIST_BIN(127)] == 1 && s.hist[AK_HIST_BIN(-133)] == 1);
    ck_assert(s.amax == 0x1p128 - 0x1p120);
    memset(&s, 0, sizeof s);
    accumulate(b, bb.t, FPE_FMT_BF16, &scales[0], &s); /* bf16 0x0001 is a bf16 subnormal */
    ck_assert(s.flushed == 0 && s.subnormal == 1 && s.overflowed == 0);
    kt_buf_free(&hb);
    kt_buf_free(&bb);
    ak_close(b);
}
END_TEST

/* ---- accumulation ----------------------------------------------------------- */
static void split_equals_whole(ak_dtype dt, const void *x, size_t n, size_t cut)
{
    ak_backend *b = kt_open_cpu();
    kt_buf buf = kt_buf_alloc(b, n, dt);
    kt_buf_upload(&buf, x);
    const size_t size = ak_dtype_size(dt);
    for (int target = 0; target < 3; target++) {
        const scale_case *sc = &scales[target == 2 ? 9 : 5];
        ak_stats whole, parts, want;
        memset(&whole, 0, sizeof whole);
        memset(&parts, 0, sizeof parts);
        memset(&want, 0, sizeof want);
        accumulate(b, buf.t, (fpe_format_id)target, sc, &whole);
        accumulate(b, ak_tensor_of(buf.t.data, cut, dt), (fpe_format_id)target, sc, &parts);
        accumulate(b, ak_tensor_of((char *)buf.t.data + cut * size, n - cut, dt),
                   (fpe_format_id)target, sc, &parts);
        reference(&want, dt, x, n, (fpe_format_id)target, scale_value(sc));
        ck_assert_int_eq(differences("two calls vs one", &parts, &whole), 0);
        ck_assert_int_eq(differences("one call vs reference", &whole, &want), 0);

        /* a result that already holds counts: they are added to, amax max'ed */
        ak_stats held, got;
        memset(&held, 0, sizeof held);
        held.count = 5;
        held.zero = 1;
        held.flushed = 2;
        held.hist[10] = 7;
        held.amax = 1e300;
        got = held;
        accumulate(b, buf.t, (fpe_format_id)target, sc, &got);
        want = whole;
        want.count += 5;
        want.zero += 1;
        want.flushed += 2;
        want.hist[10] += 7;
        want.amax = 1e300;
        ck_assert_int_eq(differences("onto held counts", &got, &want), 0);
        held.amax = 0x1p-149;
        got = held;
        accumulate(b, buf.t, (fpe_format_id)target, sc, &got);
        ck_assert(got.amax == whole.amax);
    }
    ck_assert(kt_buf_guards_ok(&buf));
    kt_buf_free(&buf);
    ak_close(b);
}

START_TEST(accumulates)
{
    const size_t n = 100003;
    uint32_t *x = malloc(n * sizeof *x);
    uint16_t *h = malloc(n * sizeof *h);
    ck_assert(x && h);
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 1);
    kt_fill_f32_bits(&r, x, n);
    kt_fill_u16_bits(&r, FPE_FMT_F16, h, n);
    split_equals_whole(AK_F32, x, n, 33331);
    split_equals_whole(AK_F16, h, n, 5);
    kt_fill_u16_bits(&r, FPE_FMT_BF16, h, n);
    split_equals_whole(AK_BF16, h, n, n - 3);
    free(x);
    free(h);
}
END_TEST

/* ---- arguments --------------------------------------------------------------- */
static void expect_error(ak_backend *b, int rc, int code, const char *text)
{
    ck_assert_int_eq(rc, code);
    ck_assert_msg(strstr(ak_error(b), "ak_stats_accumulate: ") == ak_error(b) &&
                      strstr(ak_error(b), text) != NULL,
                  "message '%s' lacks '%s'", ak_error(b), text);
}

START_TEST(bad_arguments)
{
    ak_backend *b = kt_open_cpu();
    alignas(16) float data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    alignas(16) unsigned char raw[sizeof(ak_stats) + 16];
    ak_stats *r = (ak_stats *)raw;
    memset(r, 0, sizeof *r);
    const ak_tensor x = ak_tensor_of(data, 8, AK_F32);
    const float one = 1.0f;

    ck_assert_int_eq(ak_stats_accumulate(NULL, x, FPE_FMT_F16, NULL, r), AK_EINVAL);
    expect_error(b, ak_stats_accumulate(b, ak_tensor_of(NULL, 4, AK_F32), FPE_FMT_F16, NULL, r),
                 AK_EINVAL, "x is NULL with 4 elements");
    expect_error(
        b, ak_stats_accumulate(b, ak_tensor_of((char *)data + 2, 3, AK_F32), FPE_FMT_F16, NULL, r),
        AK_EINVAL, "not aligned");
    expect_error(b,
                 ak_stats_accumulate(b, ak_tensor_of(data, 8, (ak_dtype)9), FPE_FMT_F16, NULL, r),
                 AK_EINVAL, "invalid dtype");
    expect_error(b, ak_stats_accumulate(b, x, (fpe_format_id)3, NULL, r), AK_EINVAL,
                 "target (3) is not fp16, bf16 or fp32");
    expect_error(b, ak_stats_accumulate(b, x, (fpe_format_id)-1, NULL, r), AK_EINVAL,
                 "target (-1)");
    expect_error(b,
                 ak_stats_accumulate(b, x, FPE_FMT_F16, (const float *)((const char *)&one + 1), r),
                 AK_EINVAL, "scale");
    expect_error(b, ak_stats_accumulate(b, x, FPE_FMT_F16, NULL, NULL), AK_EINVAL,
                 "result is NULL");
    expect_error(b, ak_stats_accumulate(b, x, FPE_FMT_F16, NULL, (ak_stats *)(raw + 4)), AK_EINVAL,
                 "result");
    ck_assert_msg(strstr(ak_error(b), "not aligned") != NULL, "%s", ak_error(b));
    expect_error(b, ak_stats_accumulate(b, ak_tensor_of(raw, 8, AK_F32), FPE_FMT_F16, NULL, r),
                 AK_EINVAL, "result");
    ck_assert_msg(strstr(ak_error(b), "overlaps x") != NULL, "%s", ak_error(b));
    expect_error(b, ak_stats_accumulate(b, x, FPE_FMT_F16, (const float *)(raw + 8), r), AK_EINVAL,
                 "overlaps scale");

    /* nothing failed above wrote the result */
    for (size_t i = 0; i < sizeof(ak_stats); i++)
        ck_assert_uint_eq(raw[i], 0);
    /* an empty x adds nothing, and a good call clears the last error */
    ck_assert_int_eq(ak_stats_accumulate(b, ak_tensor_of(NULL, 0, AK_F16), FPE_FMT_BF16, NULL, r),
                     AK_OK);
    ck_assert_str_eq(ak_error(b), "");
    for (size_t i = 0; i < sizeof(ak_stats); i++)
        ck_assert_uint_eq(raw[i], 0);
    ck_assert_int_eq(ak_stats_accumulate(b, x, FPE_FMT_F16, &one, r), AK_OK);
    ck_assert_uint_eq(r->count, 8);
    ck_assert(r->amax == 8.0);
    ak_close(b);
}
END_TEST

/* The result is written inside its own bytes only. */
START_TEST(result_guards)
{
    ak_backend *b = kt_open_cpu();
    const size_t words = sizeof(ak_stats) / sizeof(float);
    kt_buf res = kt_buf_alloc(b, words, AK_F32);
    const uint32_t x[] = {0x3F800000u, 0x7F800000u, 0x00000001u, 0x477FF000u};
    kt_buf xb = kt_buf_alloc(b, 4, AK_F32);
    kt_buf_upload(&xb, x);
    for (int target = 0; target < 3; target++)
        ck_assert_int_eq(
            ak_stats_accumulate(b, xb.t, (fpe_format_id)target, NULL, (ak_stats *)res.t.data),
            AK_OK);
    ak_stats s;
    kt_dev_get(b, &s, res.t.data, sizeof s);
    ck_assert_uint_eq(s.count, 12);
    ck_assert_uint_eq(s.hist[AK_HIST_BINS - 1], 3);
    ck_assert(kt_buf_guards_ok(&res) && kt_buf_guards_ok(&xb));
    kt_buf_free(&res);
    kt_buf_free(&xb);
    ak_close(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_stats");
    TCase *tc = tcase_create("stats");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, hand_worked_fp16_target);
    tcase_add_test(tc, hand_worked_batches);
    tcase_add_test(tc, hand_worked_16bit_sources);
    tcase_add_test(tc, every_fp16_pattern);
    tcase_add_test(tc, every_bf16_pattern);
    tcase_add_test(tc, fp32_patterns);
    tcase_add_test(tc, accumulates);
    tcase_add_test(tc, bad_arguments);
    tcase_add_test(tc, result_guards);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
