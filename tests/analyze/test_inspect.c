/* test_inspect: the exact F64 classification (an_f64_class) against a
 * reference that computes the product exactly in binary128 (53 + 24 bits fit
 * in its 113) and compares it with the rounding thresholds, hand-worked cases
 * where rounding the product (or the value, to fp32) first gives the wrong
 * class, agreement with the record's ak_stats_accumulate on values fp32
 * holds, an_inspect_tensor's counts and errors, and the bin labels.
 * AMPSCOPE_TEST_SEED and AMPSCOPE_TEST_RANDOM change the random cases. */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "inspect.h"
#include "record.h"

#if defined(__SIZEOF_FLOAT128__)
typedef __float128 quad;
#define HAVE_QUAD 1
#elif LDBL_MANT_DIG >= 113
typedef long double quad;
#define HAVE_QUAD 1
#else
#define HAVE_QUAD 0
#endif

static const fpe_format_id formats[3] = {FPE_FMT_F16, FPE_FMT_BF16, FPE_FMT_F32};

/* ---- the reference: thresholds from the format facts (fp16: p 11, emin -14, emax 15) ---- */
#if HAVE_QUAD
static quad q_pow2(int e)
{
    quad v = 1;
    for (; e > 0; e--)
        v *= 2;
    for (; e < 0; e++)
        v /= 2;
    return v;
}

/* |x| s exact; flushed iff <= 2^(emin-p) (half the least subnormal, a tie to the even 0);
 * subnormal iff < 2^emin - 2^(emin-p) (the tie goes to the even normal 2^emin);
 * overflowed iff >= 2^(emax+1) - 2^(emax-p) (the tie goes to infinity). */
static int ref_class(double x, double s, fpe_format_id f)
{
    const int p = fpe_formats[f].p, emin = fpe_formats[f].emin, emax = fpe_formats[f].emax;
    const quad v = (quad)fabs(x) * (quad)fabs(s);
    if (v <= q_pow2(emin - p)) return AN_CLASS_FLUSHED;
    if (v < q_pow2(emin) - q_pow2(emin - p)) return AN_CLASS_SUBNORMAL;
    if (v >= q_pow2(emax + 1) - q_pow2(emax - p)) return AN_CLASS_OVERFLOWED;
    return AN_CLASS_NORMAL;
}
#endif

/* ---- a small generator ---- */
static uint64_t rng_state;
static uint64_t next(void) /* splitmix64 */
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static void seed(void)
{
    const char *s = getenv("AMPSCOPE_TEST_SEED");
    rng_state = s ? strtoull(s, NULL, 10) : 20240601u;
}
static uint64_t random_count(void)
{
    const char *s = getenv("AMPSCOPE_TEST_RANDOM");
    const uint64_t n = s ? strtoull(s, NULL, 10) : 1000000u;
    return n / 4 ? n / 4 : 1;
}
/* an fp32 scale 2^[-40, 40) with random significand bits */
static float random_scale(void)
{
    const uint64_t u = next();
    return ldexpf(1.0f + (float)(u & 0x7FFFFF) / 8388608.0f, (int)((u >> 23) % 80) - 40);
}
/* x near a threshold t of f divided by s, a few ulps either side, or anywhere */
static double random_x(fpe_format_id f, double s)
{
    const int p = fpe_formats[f].p, emin = fpe_formats[f].emin, emax = fpe_formats[f].emax;
    const uint64_t u = next();
    double t;
    switch (u % 4) {
    case 0: t = ldexp(1, emin - p); break;
    case 1: t = ldexp(1, emin) - ldexp(1, emin - p); break;
    case 2: t = ldexp(1, emax + 1) - ldexp(1, emax - p); break;
    default: {
        uint64_t b = next() & 0x7FEFFFFFFFFFFFFFull; /* finite */
        double x;
        memcpy(&x, &b, sizeof x);
        return x ? x : 1;
    }
    }
    double x = t / s;
    for (int k = (int)((u >> 8) % 7) - 3; k != 0; k += k > 0 ? -1 : 1)
        x = nextafter(x, k > 0 ? INFINITY : 0);
    return x;
}

/* ---- hand-worked cases ---- */
START_TEST(hand_cases_fp16)
{
    const fpe_format_id h = FPE_FMT_F16;
    /* 2^-25 is a tie: to the even 0; anything above it rounds to 2^-24 */
    ck_assert_int_eq(an_f64_class(ldexp(1, -25), 1, h), AN_CLASS_FLUSHED);
    ck_assert_int_eq(an_f64_class(-ldexp(1, -25), 1, h), AN_CLASS_FLUSHED);
    ck_assert_int_eq(an_f64_class(ldexp(1 + ldexp(1, -52), -25), 1, h), AN_CLASS_SUBNORMAL);
    /* 2^-25 (1 + 2^-40) is 2^-25 as an fp32 (which flushes), but itself subnormal */
    const double x40 = ldexp(1 + ldexp(1, -40), -25);
    ck_assert_int_eq(an_f64_class(x40, 1, h), AN_CLASS_SUBNORMAL);
    ck_assert_int_eq(an_f64_class((double)(float)x40, 1, h), AN_CLASS_FLUSHED);
    /* 2^-14 - 2^-25 rounds up to the normal 2^-14; the double below it stays subnormal */
    const double below = ldexp(1, -14) - ldexp(1, -25);
    ck_assert_int_eq(an_f64_class(below, 1, h), AN_CLASS_NORMAL);
    ck_assert_int_eq(an_f64_class(nextafter(below, 0), 1, h), AN_CLASS_SUBNORMAL);
    /* 65520 overflows, 65520 - 2^-30 does not (as an fp32 it would be 65520) */
    ck_assert_int_eq(an_f64_class(65520, 1, h), AN_CLASS_OVERFLOWED);
    ck_assert_int_eq(an_f64_class(65520 - ldexp(1, -30), 1, h), AN_CLASS_NORMAL);
    ck_assert_int_eq(an_f64_class((double)(float)(65520 - ldexp(1, -30)), 1, h),
                     AN_CLASS_OVERFLOWED);
    /* far outside fp32's range */
    ck_assert_int_eq(an_f64_class(ldexp(1, -1074), 1, h), AN_CLASS_FLUSHED);
    ck_assert_int_eq(an_f64_class(DBL_MAX, 1, h), AN_CLASS_OVERFLOWED);
    ck_assert_int_eq(an_f64_class(ldexp(1, -1074), 0x1p127, h), AN_CLASS_FLUSHED);
    ck_assert_int_eq(an_f64_class(ldexp(1, -100), 0x1p127, h), AN_CLASS_OVERFLOWED); /* 2^27 */
    ck_assert_int_eq(an_f64_class(ldexp(1, -130), 0x1p110, h), AN_CLASS_SUBNORMAL);  /* 2^-20 */
    /* a product a double cannot hold: x = RU(2^-25 / 3), x 3 = 2^-25 (1 + 2^-53), whose
     * double is 2^-25 (a tie to even), which would flush; it is above the tie: subnormal */
    const double third_up = nextafter(ldexp(1.0 / 3.0, -25), 1);
    ck_assert(third_up * 3 == ldexp(1, -25)); /* the rounded product sits on the tie */
    ck_assert_int_eq(an_f64_class(third_up, 3, h), AN_CLASS_SUBNORMAL);
    ck_assert_int_eq(an_f64_class(ldexp(1.0 / 3.0, -25), 3, h), AN_CLASS_FLUSHED);
}
END_TEST

START_TEST(hand_cases_bf16_fp32)
{
    const fpe_format_id b = FPE_FMT_BF16, f = FPE_FMT_F32;
    ck_assert_int_eq(an_f64_class(ldexp(1, -134), 1, b), AN_CLASS_FLUSHED);
    ck_assert_int_eq(an_f64_class(nextafter(ldexp(1, -134), 1), 1, b), AN_CLASS_SUBNORMAL);
    ck_assert_int_eq(an_f64_class(ldexp(1, -126) - ldexp(1, -134), 1, b), AN_CLASS_NORMAL);
    ck_assert_int_eq(an_f64_class(nextafter(ldexp(1, -126) - ldexp(1, -134), 0), 1, b),
                     AN_CLASS_SUBNORMAL);
    ck_assert_int_eq(an_f64_class(ldexp(1, 128) - ldexp(1, 119), 1, b), AN_CLASS_OVERFLOWED);
    ck_assert_int_eq(an_f64_class(nextafter(ldexp(1, 128) - ldexp(1, 119), 0), 1, b),
                     AN_CLASS_NORMAL);
    /* 2^-200: 0 as an fp32, but 2^-100 at scale 2^100, a normal bf16 */
    ck_assert_int_eq(an_f64_class(ldexp(1, -200), 0x1p100, b), AN_CLASS_NORMAL);
    ck_assert_int_eq(an_f64_class(ldexp(1, -230), 0x1p100, b), AN_CLASS_SUBNORMAL);
    ck_assert_int_eq(an_f64_class(ldexp(1, -150), 1, f), AN_CLASS_FLUSHED);
    ck_assert_int_eq(an_f64_class(nextafter(ldexp(1, -150), 1), 1, f), AN_CLASS_SUBNORMAL);
    ck_assert_int_eq(an_f64_class(ldexp(1, 128) - ldexp(1, 103), 1, f), AN_CLASS_OVERFLOWED);
    ck_assert_int_eq(an_f64_class(nextafter(ldexp(1, 128) - ldexp(1, 103), 0), 1, f),
                     AN_CLASS_NORMAL);
}
END_TEST

/* ---- random cases against the binary128 reference ---- */
START_TEST(random_against_quad)
{
#if HAVE_QUAD
    seed();
    const uint64_t n = random_count();
    uint64_t bad = 0;
    for (uint64_t i = 0; i < n; i++) {
        const fpe_format_id f = formats[i % 3];
        const double s = random_scale();
        const double x = random_x(f, s);
        const int got = an_f64_class(x, s, f), want = ref_class(x, s, f);
        if (got != want && bad++ < 5)
            fprintf(stderr, "%s: x %a s %a: class %d, expected %d\n", fpe_formats[f].name, x, s,
                    got, want);
    }
    ck_assert_uint_eq(bad, 0);
#else
    fprintf(stderr, "no binary128 type: random_against_quad skipped\n");
#endif
}
END_TEST

/* ---- the same classes as the record's code on what fp32 holds ---- */
START_TEST(agrees_with_ak_stats)
{
    seed();
    char msg[256];
    ak_backend *cpu = ak_open("cpu", msg, sizeof msg);
    ck_assert_msg(cpu != NULL, "%s", msg);
    enum { N = 4096 };
    float *xs = malloc(N * sizeof *xs);
    double *ds = malloc(N * sizeof *ds);
    ck_assert(xs && ds);
    const uint64_t rounds = random_count() / N + 1;
    for (uint64_t k = 0; k < rounds * 3; k++) {
        const fpe_format_id f = formats[k % 3];
        const float s = random_scale();
        for (int i = 0; i < N; i++) {
            xs[i] = (float)random_x(f, s);
            if (!isfinite(xs[i])) xs[i] = 1;
            ds[i] = xs[i];
        }
        uint64_t flushed = 0, subnormal = 0, overflowed = 0;
        for (int i = 0; i < N; i++) {
            if (ds[i] == 0) continue;
            const int c = an_f64_class(ds[i], s, f);
            flushed += c == AN_CLASS_FLUSHED;
            subnormal += c == AN_CLASS_SUBNORMAL;
            overflowed += c == AN_CLASS_OVERFLOWED;
        }
        ak_stats st;
        memset(&st, 0, sizeof st);
        ck_assert_int_eq(ak_stats_accumulate(cpu, ak_tensor_of(xs, N, AK_F32), f, &s, &st), 0);
        ck_assert_uint_eq(st.flushed, flushed);
        ck_assert_uint_eq(st.subnormal, subnormal);
        ck_assert_uint_eq(st.overflowed, overflowed);
        /* and an_inspect_tensor on the same values as F32 and as F64 */
        const uint64_t shape[1] = {N};
        const st_tensor t32 = {"x", ST_F32, 1, shape, xs}, t64 = {"x", ST_F64, 1, shape, ds};
        an_inspect_row r32, r64;
        ck_assert_int_eq(an_inspect_tensor(cpu, &t32, f, &s, 1, &r32, NULL, msg, sizeof msg), 0);
        ck_assert_int_eq(an_inspect_tensor(cpu, &t64, f, &s, 1, &r64, NULL, msg, sizeof msg), 0);
        ck_assert_mem_eq(&r32, &r64, sizeof r32);
        ck_assert_uint_eq(r32.flushed, flushed);
        ck_assert_uint_eq(r32.count, N);
    }
    free(xs);
    free(ds);
    ak_close(cpu);
}
END_TEST

/* ---- an_inspect_tensor: counts, histogram, errors ---- */
START_TEST(tensor_counts_and_errors)
{
    char msg[256];
    ak_backend *cpu = ak_open("cpu", msg, sizeof msg);
    ck_assert(cpu);
    /* 0, -0, 2^-25, 2^-25 (1 + 2^-40), 2^-1074, 2^1000, 1, -inf, NaN: fp16 at scales 1, 2^10 */
    const double d[9] = {0,   -0.0,      0x1p-25, 0x1.0000000001p-25, 0x1p-1074, 0x1p1000,
                         1.0, -INFINITY, NAN};
    const uint64_t shape[2] = {3, 3};
    const st_tensor t = {"w", ST_F64, 2, shape, d};
    const float scales[2] = {1, 1024};
    an_inspect_row r[2];
    uint64_t *hist = calloc(AN_BINS, sizeof *hist);
    ck_assert_int_eq(an_inspect_tensor(cpu, &t, FPE_FMT_F16, scales, 2, r, hist, msg, sizeof msg),
                     0);
    ck_assert_uint_eq(r[0].count, 9);
    ck_assert_uint_eq(r[0].zero, 2);
    ck_assert_uint_eq(r[0].nonfinite, 2);
    ck_assert_uint_eq(r[0].nonzero, 5);
    ck_assert_uint_eq(r[0].flushed, 2);    /* 2^-25, 2^-1074 */
    ck_assert_uint_eq(r[0].subnormal, 1);  /* 2^-25 (1 + 2^-40) */
    ck_assert_uint_eq(r[0].overflowed, 1); /* 2^1000 */
    ck_assert(r[0].amax == 0x1p1000);
    ck_assert_uint_eq(r[1].flushed, 1);    /* 2^-1074 */
    ck_assert_uint_eq(r[1].subnormal, 2);  /* 2^-15 and just above */
    ck_assert_uint_eq(r[1].overflowed, 1); /* 2^1000 (1024 is normal) */
    ck_assert(r[1].scale == 1024);
    ck_assert_uint_eq(hist[AN_BIN_ZERO], 2);
    ck_assert_uint_eq(hist[AN_BIN_NONFINITE], 2);
    ck_assert_uint_eq(hist[AN_BIN(-25)], 2);
    ck_assert_uint_eq(hist[AN_BIN(-1074)], 1);
    ck_assert_uint_eq(hist[AN_BIN(1000)], 1);
    ck_assert_uint_eq(hist[AN_BIN(0)], 1);
    /* an F16 tensor goes through the record's code: 2^-24, 1, 65504, -inf, 0 */
    const uint16_t h[5] = {0x0001, 0x3C00, 0x7BFF, 0xFC00, 0x0000};
    const st_tensor th = {"h", ST_F16, 1, shape, h};
    memset(hist, 0, AN_BINS * sizeof *hist);
    ck_assert_int_eq(an_inspect_tensor(cpu, &th, FPE_FMT_F16, scales, 1, r, hist, msg, sizeof msg),
                     0);
    ck_assert_uint_eq(r[0].count, 3); /* shape [3] */
    ck_assert_uint_eq(r[0].subnormal, 1);
    ck_assert_uint_eq(hist[AN_BIN(-24)], 1);
    ck_assert_uint_eq(hist[AN_BIN(15)], 1);
    /* errors */
    const st_tensor ti = {"ids", ST_I64, 1, shape, d};
    ck_assert_int_eq(an_inspect_tensor(cpu, &ti, FPE_FMT_F16, scales, 1, r, NULL, msg, sizeof msg),
                     AN_EINVAL);
    ck_assert_str_eq(msg, "tensor 'ids' has dtype I64 (inspect reads F32, F16, BF16 and F64)");
    const float bad[1] = {0};
    ck_assert_int_eq(an_inspect_tensor(cpu, &t, FPE_FMT_F16, bad, 1, r, NULL, msg, sizeof msg),
                     AN_EINVAL);
    free(hist);
    ak_close(cpu);
}
END_TEST

START_TEST(bin_labels)
{
    char buf[REC_BIN_LABEL_MAX];
    ck_assert_str_eq(an_bin_label(AN_BIN_ZERO, buf), "zero");
    ck_assert_str_eq(an_bin_label(AN_BIN_NONFINITE, buf), "nonfinite");
    ck_assert_str_eq(an_bin_label(AN_BIN(-24), buf), "-24");
    ck_assert_str_eq(an_bin_label(AN_BIN(-1074), buf), "-1074");
    ck_assert_str_eq(an_bin_label(AN_BIN(1023), buf), "1023");
    ck_assert_ptr_null(an_bin_label(-1, buf));
    ck_assert_ptr_null(an_bin_label(AN_BINS, buf));
    /* every record bin maps to the bin with its label */
    uint64_t ak[AK_HIST_BINS] = {0}, *wide = calloc(AN_BINS, sizeof *wide);
    for (int b = 0; b < AK_HIST_BINS; b++)
        ak[b] = (uint64_t)b + 1;
    an_bins_add_ak(wide, ak);
    for (int b = 0; b < AK_HIST_BINS; b++) {
        char want[REC_BIN_LABEL_MAX];
        int wb = -1;
        for (int k = 0; k < AN_BINS && wb < 0; k++)
            if (wide[k] == (uint64_t)b + 1) wb = k;
        ck_assert_int_ge(wb, 0);
        ck_assert_str_eq(an_bin_label(wb, buf), rec_hist_bin_label(b, want));
    }
    free(wide);
}
END_TEST

static Suite *inspect_suite(void)
{
    Suite *s = suite_create("analyze_inspect");
    TCase *tc = tcase_create("inspect");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, hand_cases_fp16);
    tcase_add_test(tc, hand_cases_bf16_fp32);
    tcase_add_test(tc, random_against_quad);
    tcase_add_test(tc, agrees_with_ak_stats);
    tcase_add_test(tc, tensor_counts_and_errors);
    tcase_add_test(tc, bin_labels);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return ts_run_suite(inspect_suite()); }
