/* test_round: kernels/elem/round.h against MPFR.
 *
 * ak_round_sum(f, env, a, b) must be the exact a + b rounded once to f in
 * env's mode, with the IEEE flags (tininess after rounding); ak_round_product
 * likewise for a * b.  The reference here computes the exact value in MPFR
 * at 512 bits (a sum of an fp32-range value and an fp32 value needs at most
 * 128 + 149 + 24 bits) and rounds it with code of its own:
 *   - near_even, minMag, min, max: MPFR's recipe (mpfr_set at precision p
 *     with the exponent unbounded for tininess, then mpfr_check_range and
 *     mpfr_subnormalize in the format's MPFR exponent range, as
 *     shared/REFERENCES.md gives it);
 *   - near_maxMag, odd, stoch_prop, stoch_equal: the value divided by its
 *     quantum (2^(max(E, emin) - p + 1)) split in MPFR into an integer part
 *     and a fraction; frac32 = floor(fraction * 2^32); stoch_prop goes away
 *     from zero iff fpe_random_bits(seed, stream, index) < frac32,
 *     stoch_equal iff inexact and the word's top bit is set
 *     (docs/ARCHITECTURE.md, "Stochastic rounding, precisely").
 * NaNs, infinities and exact zeros are decided by the rules of IEEE 754 and
 * the emulator's x86 NaN specialization, written out below.  Operands cover
 * specials, huge exponent gaps (the round-to-odd path), ties of the target
 * format, cancellation, subnormal results and overflow.  For an fp32 result
 * in stoch_prop, round.h resolves the probability to 2^-29 ulp: there the
 * reference accepts either neighbour when the random word and frac32 agree
 * in their top 28 bits.
 */
#include <check.h>
#include <math.h>
#include <stdint.h> /* before mpfr.h: mpfr_get_uj */
#include <mpfr.h>
#include <stdio.h>
#include <string.h>

#include "check_main.h"
#include "elem/round.h"
#include "kt.h"

/* ---- the formats, from shared/REFERENCES.md ------------------------------------ */
typedef struct ref_format {
    const char *name;
    int bits, p, emin, emax;
    long mpfr_emin, mpfr_emax;
} ref_format;
static const ref_format ref_formats[3] = {
    {"fp16", 16, 11, -14, 15, -23, 16},
    {"bf16", 16, 8, -126, 127, -132, 128},
    {"fp32", 32, 24, -126, 127, -148, 128},
};

static uint32_t sign_bit(const ref_format *F) { return (uint32_t)1 << (F->bits - 1); }
static uint32_t inf_bits(const ref_format *F)
{
    const int ebits = F->bits - F->p;
    return (((uint32_t)1 << ebits) - 1) << (F->p - 1);
}
static uint32_t max_bits(const ref_format *F) { return inf_bits(F) - 1; }

/* Bits of sign * v, v >= 0 exactly representable in F (or +inf). */
static uint32_t encode(const ref_format *F, bool sign, double v)
{
    const uint32_t s = sign ? sign_bit(F) : 0;
    if (v == 0) return s;
    if (isinf(v)) return s | inf_bits(F);
    const int fb = F->p - 1;
    int e;
    frexp(v, &e);
    const int E = e - 1; /* v in [2^E, 2^(E+1)) */
    double frac;
    uint32_t field;
    if (E < F->emin) {
        frac = ldexp(v, fb - F->emin);
        field = 0;
    } else {
        frac = ldexp(v, fb - E) - ldexp(1.0, fb);
        field = (uint32_t)(E + F->emax);
    }
    ck_assert_msg(frac == floor(frac) && field < ((uint32_t)1 << (F->bits - F->p)),
                  "encode: %a is not an %s value", v, F->name);
    return s | (field << fb) | (uint32_t)frac;
}

/* ---- MPFR working storage ------------------------------------------------------ */
#define PREC 512
static mpfr_t X, A, B, T, K, Z[3];

static void mp_setup(void)
{
    mpfr_inits2(PREC, X, A, B, T, K, (mpfr_ptr)0);
    for (int f = 0; f < 3; f++)
        mpfr_init2(Z[f], ref_formats[f].p);
}

/* |X| / 2^q split into its integer part (returned) and fraction: *inexact,
 * *at_least_half, *frac32 = floor(fraction * 2^32). */
static uint64_t split(long q, bool *inexact, bool *at_least_half, uint32_t *frac32)
{
    mpfr_abs(T, X, MPFR_RNDN);
    mpfr_mul_2si(T, T, -q, MPFR_RNDN); /* exact */
    mpfr_floor(K, T);
    const uint64_t k = mpfr_get_uj(K, MPFR_RNDZ);
    mpfr_sub(T, T, K, MPFR_RNDN); /* exact: the fraction */
    *inexact = !mpfr_zero_p(T);
    *at_least_half = mpfr_cmp_d(T, 0.5) >= 0;
    mpfr_mul_2ui(T, T, 32, MPFR_RNDN);
    *frac32 = (uint32_t)mpfr_get_uj(T, MPFR_RNDZ);
    return k;
}

/* The integer routine: one rounding of |X| to a multiple of 2^q. */
static uint64_t round_at(int mode, uint32_t rnd, long q, bool *inexact)
{
    bool half;
    uint32_t frac32;
    uint64_t k = split(q, inexact, &half, &frac32);
    switch (mode) {
    case FPE_RNA: return k + half;
    case FPE_RO: return k | *inexact;
    case FPE_SR_PROP: return k + (rnd < frac32);
    case FPE_SR_EQUAL: return k + (*inexact && (rnd >> 31));
    default: ck_abort_msg("round_at: mode %d", mode); return 0;
    }
}

/* X (finite, nonzero) rounded to F in mode; rnd is the random word. */
static uint32_t ref_round(fpe_format_id fmt, int mode, uint32_t rnd, uint8_t *flags)
{
    const ref_format *F = &ref_formats[fmt];
    const bool neg = mpfr_signbit(X) != 0;
    *flags = 0;
    if (mode == FPE_RNE || mode == FPE_RZ || mode == FPE_RD || mode == FPE_RU) {
        const mpfr_rnd_t r = mode == FPE_RNE  ? MPFR_RNDN
                             : mode == FPE_RZ ? MPFR_RNDZ
                             : mode == FPE_RD ? MPFR_RNDD
                                              : MPFR_RNDU;
        mpfr_ptr z = Z[fmt];
        int t = mpfr_set(z, X, r); /* p bits, exponent unbounded */
        /* MPFR's exponent E means |z| in [2^(E-1), 2^E) */
        const bool tiny = mpfr_get_exp(z) <= F->emin;
        const mpfr_exp_t old_emin = mpfr_get_emin(), old_emax = mpfr_get_emax();
        mpfr_set_emin(F->mpfr_emin);
        mpfr_set_emax(F->mpfr_emax);
        mpfr_clear_flags();
        t = mpfr_check_range(z, t, r);
        t = mpfr_subnormalize(z, t, r);
        const bool overflow = mpfr_overflow_p() != 0;
        mpfr_set_emin(old_emin);
        mpfr_set_emax(old_emax);
        if (t != 0) *flags |= FPE_FLAG_INEXACT;
        if (overflow) *flags |= FPE_FLAG_OVERFLOW | FPE_FLAG_INEXACT;
        if (t != 0 && tiny) *flags |= FPE_FLAG_UNDERFLOW;
        return encode(F, neg, fabs(mpfr_get_d(z, MPFR_RNDN)));
    }
    const long E = mpfr_get_exp(X) - 1; /* |X| in [2^E, 2^(E+1)) */
    bool inexact;
    /* unbounded exponent: overflow, and tininess after rounding */
    const long qu = E - (F->p - 1);
    const double unbounded = ldexp((double)round_at(mode, rnd, qu, &inexact), (int)qu);
    if (unbounded >= ldexp(1.0, F->emax + 1)) {
        *flags = FPE_FLAG_OVERFLOW | FPE_FLAG_INEXACT;
        return (neg ? sign_bit(F) : 0) | (mode == FPE_RO ? max_bits(F) : inf_bits(F));
    }
    const bool tiny = unbounded < ldexp(1.0, F->emin);
    const long q = (E > F->emin ? E : F->emin) - (F->p - 1);
    const uint64_t n = round_at(mode, rnd, q, &inexact);
    if (inexact) *flags |= FPE_FLAG_INEXACT;
    if (inexact && tiny) *flags |= FPE_FLAG_UNDERFLOW;
    return encode(F, neg, ldexp((double)n, (int)q));
}

/* ---- special operands, as IEEE 754 and the x86 specialization say ----------------- */
/* (binary64 bits through the emulator's fpe_f64_bits and fpe_f64_from_bits) */
static bool is_snan64(double d) { return isnan(d) && !(fpe_f64_bits(d) & 0x0008000000000000ull); }

/* The x86 "common NaN" conversion: sign kept, payload left-justified and
 * truncated, quiet bit set. */
static uint32_t nan_to(const ref_format *F, double d)
{
    const uint64_t u = fpe_f64_bits(d);
    const int fb = F->p - 1;
    const uint32_t frac = (uint32_t)((u & 0x000FFFFFFFFFFFFFull) >> (52 - fb));
    return ((u >> 63) ? sign_bit(F) : 0) | inf_bits(F) | ((uint32_t)1 << (fb - 1)) | frac;
}
static uint32_t default_nan(const ref_format *F)
{
    return sign_bit(F) | inf_bits(F) | ((uint32_t)1 << (F->p - 2));
}

typedef enum { REF_SUM, REF_PRODUCT } ref_op;

/* The reference for a op b rounded to fmt in env's mode (flags written). */
static uint32_t reference(ref_op op, fpe_format_id fmt, const fpe_env *env, double a, double b,
                          uint32_t rnd, uint8_t *flags)
{
    const ref_format *F = &ref_formats[fmt];
    *flags = 0;
    if (isnan(a) || isnan(b)) {
        if (is_snan64(a) || is_snan64(b)) *flags = FPE_FLAG_INVALID;
        return nan_to(F, isnan(a) ? a : b);
    }
    const bool sa = signbit(a) != 0, sb = signbit(b) != 0;
    if (op == REF_SUM) {
        if (isinf(a) && isinf(b) && sa != sb) {
            *flags = FPE_FLAG_INVALID;
            return default_nan(F);
        }
        if (isinf(a) || isinf(b)) return ((isinf(a) ? sa : sb) ? sign_bit(F) : 0) | inf_bits(F);
    } else {
        if ((isinf(a) && b == 0) || (isinf(b) && a == 0)) {
            *flags = FPE_FLAG_INVALID;
            return default_nan(F);
        }
        if (isinf(a) || isinf(b)) return (sa != sb ? sign_bit(F) : 0) | inf_bits(F);
    }
    mpfr_set_d(A, a, MPFR_RNDN);
    mpfr_set_d(B, b, MPFR_RNDN);
    const int t = op == REF_SUM ? mpfr_add(X, A, B, MPFR_RNDN) : mpfr_mul(X, A, B, MPFR_RNDN);
    ck_assert_msg(t == 0, "the exact value of %a and %a needs more than %d bits", a, b, PREC);
    if (mpfr_zero_p(X)) {
        bool neg;
        if (op == REF_PRODUCT)
            neg = sa != sb;
        else if (sa == sb)
            neg = sa; /* (+0) + (+0), (-0) + (-0) */
        else
            neg = env->round == FPE_RD; /* x + (-x): +0, -0 rounding down */
        return neg ? sign_bit(F) : 0;
    }
    return ref_round(fmt, env->round, rnd, flags);
}

/* ---- the comparison ------------------------------------------------------------------ */
typedef struct tally {
    uint64_t checked, bad;
} tally;

static const char *const op_names[2] = {"ak_round_sum", "ak_round_product"};

/* Runs op on (a, b) for every target format and mode with a random key. */
static void check_pair(tally *t, ts_rng *r, ref_op op, double a, double b)
{
    for (int fmt = 0; fmt < 3; fmt++) {
        const ref_format *F = &ref_formats[fmt];
        for (int mode = 0; mode < FPE_ROUND_COUNT; mode++) {
            fpe_env env =
                ak_elem_env((fpe_round)mode, ts_next(r), (uint32_t)ts_next(r), ts_next(r));
            const uint32_t rnd = fpe_random_bits(env.sr_seed, env.sr_stream, env.sr_index);
            uint8_t want_flags;
            uint32_t want = reference(op, (fpe_format_id)fmt, &env, a, b, rnd, &want_flags);
            fpe_env run = env;
            const uint32_t got = op == REF_SUM ? ak_round_sum((fpe_format_id)fmt, &run, a, b)
                                               : ak_round_product((fpe_format_id)fmt, &run, a, b);
            bool ok = got == want && run.flags == want_flags;
            if (!ok && fmt == FPE_FMT_F32 && mode == FPE_SR_PROP && isfinite(a) && isfinite(b) &&
                !mpfr_zero_p(X)) {
                /* frac32 is resolved to 29 bits: when the word and frac32
                 * share their top 28 bits either neighbour is right */
                bool inexact, half;
                uint32_t frac32;
                const long E = mpfr_get_exp(X) - 1;
                split((E > F->emin ? E : F->emin) - (F->p - 1), &inexact, &half, &frac32);
                if ((rnd >> 4) == (frac32 >> 4)) {
                    uint8_t f0, f1;
                    const uint32_t up = ref_round((fpe_format_id)fmt, mode, 0, &f0);
                    const uint32_t down = ref_round((fpe_format_id)fmt, mode, UINT32_MAX, &f1);
                    ok = (got == up && run.flags == f0) || (got == down && run.flags == f1);
                }
            }
            ck_assert_uint_eq(run.sr_index, env.sr_index); /* the caller advances indices */
            t->checked++;
            if (ok) continue;
            if (t->bad++ < 10)
                printf("%s(%s, %s, %a, %a) [word %08x]: got 0x%0*x flags %02x, expected 0x%0*x "
                       "flags %02x\n",
                       op_names[op], F->name, ts_mode_names[mode], a, b, rnd, F->bits / 4, got,
                       run.flags, F->bits / 4, want, want_flags);
        }
    }
}

static void finish(const char *what, const tally *t)
{
    printf("%s: %llu checked, %llu mismatches\n", what, (unsigned long long)t->checked,
           (unsigned long long)t->bad);
    ck_assert_msg(t->bad == 0, "%s: %llu mismatches", what, (unsigned long long)t->bad);
}

/* The value of a format's bit pattern (finite or infinite) as a double. */
static double value_of(fpe_format_id fmt, uint32_t bits) { return orc_to_double(fmt, bits); }

static double random_value(ts_rng *r, fpe_format_id fmt, int e)
{
    return value_of(fmt, ts_value_with_exp(r, fmt, e));
}

/* ---- tests ------------------------------------------------------------------------------ */
static double specials[32];
static size_t n_specials;

static void setup_specials(void)
{
    const double list[] = {
        0.0,
        -0.0,
        INFINITY,
        -INFINITY,
        fpe_f64_from_bits(0x7FF8000000000000ull), /* quiet NaN */
        fpe_f64_from_bits(0xFFF8123456789ABCull), /* negative quiet NaN, payload */
        fpe_f64_from_bits(0x7FF4000000000000ull), /* signaling NaN */
        fpe_f64_from_bits(0xFFF0000000000001ull), /* signaling, tiny payload */
        0x1p-149,
        -0x1p-149,
        0x1p-126,
        0x1p-24,
        -0x1p-24,
        0x1p-14,
        0x1.ff8p-15, /* fp16 max subnormal */
        65504.0,
        -65504.0,
        65520.0,
        0x1.fep127,
        -0x1.fffffep127,
        1.0,
        -1.0,
        0x1.002p0,
        0x1.01p0,
        3.0,
        -0x1p-133};
    n_specials = sizeof list / sizeof list[0];
    memcpy(specials, list, sizeof list);
}

START_TEST(specials_grid)
{
    mp_setup();
    setup_specials();
    ts_rng r;
    ts_rng_init(&r, ts_seed());
    tally t = {0, 0}, tp = {0, 0};
    for (size_t i = 0; i < n_specials; i++)
        for (size_t j = 0; j < n_specials; j++) {
            check_pair(&t, &r, REF_SUM, specials[i], specials[j]);
            check_pair(&tp, &r, REF_PRODUCT, specials[i], specials[j]);
        }
    finish("specials, sums", &t);
    finish("specials, products", &tp);
}
END_TEST

/* ---- random operands -------------------------------------------------------------------- */
/* One draw of a random test: operands from r, their pair checked into t
 * (or passed over). */
typedef void (*draw_fn)(ts_rng *r, tally *t);

/* ts_random_count() / per + 100 draws from the generator seeded
 * ts_seed() + seed. */
static void run_draws(const char *what, uint64_t seed, uint64_t per, draw_fn draw)
{
    mp_setup();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + seed);
    tally t = {0, 0};
    const uint64_t count = ts_random_count() / per + 100;
    for (uint64_t k = 0; k < count; k++)
        draw(&r, &t);
    finish(what, &t);
}

/* An exponent of F's values, subnormals' included, uniformly. */
static int random_exponent(ts_rng *r, const ref_format *F)
{
    return F->emin - F->p + 1 + (int)ts_below(r, (uint32_t)(F->emax - F->emin + F->p));
}

/* a of each format, b an fp32 value 0 to 200 binades below it (clamped to
 * fp32's range): past 53 - p binades the sum is inexact in binary64 and
 * the round-to-odd step decides. */
static void draw_exponent_gaps(ts_rng *r, tally *t)
{
    const fpe_format_id fa = (fpe_format_id)ts_below(r, 3);
    const int ea = random_exponent(r, &ref_formats[fa]);
    const double a = random_value(r, fa, ea);
    const int gap = (int)ts_below(r, 4) == 0 ? (int)ts_below(r, 201) : (int)ts_below(r, 70);
    double b = random_value(r, FPE_FMT_F32, ea - gap);
    if (ts_below(r, 2)) b = -b;
    if (ts_below(r, 2))
        check_pair(t, r, REF_SUM, a, b);
    else
        check_pair(t, r, REF_SUM, b, a);
}

START_TEST(exponent_gaps) { run_draws("exponent gaps", 1, 250, draw_exponent_gaps); }
END_TEST

/* Sums at, just above and just below a midpoint of the target format, and
 * exact multiples of its quantum. */
static void draw_ties(ts_rng *r, tally *t)
{
    const fpe_format_id ft = (fpe_format_id)ts_below(r, 3);
    const ref_format *F = &ref_formats[ft];
    const int e = random_exponent(r, F);
    const double a = random_value(r, ft, e);
    int ae;
    frexp(a, &ae);
    const int q = (ae - 1 > F->emin ? ae - 1 : F->emin) - (F->p - 1); /* quantum of a */
    double b;
    switch (ts_below(r, 5)) {
    case 0: b = ldexp(1.0, q - 1); break;                          /* a midpoint */
    case 1: b = ldexp(1.0, q - 1) + ldexp(1.0, q - 1 - 20); break; /* above it */
    case 2: b = ldexp(1.0, q - 1) - ldexp(1.0, q - 1 - 20); break; /* below it */
    case 3: b = ldexp(1.0, q - 1) + ldexp(1.0, q - 80); break;     /* far above: odd path */
    default: b = ldexp((double)(int)ts_below(r, 7) - 3, q); break;
    }
    if (ldexp(fabs(b), 149) < 1.0 || (float)b != b) return; /* b must be an fp32 value */
    if (ts_below(r, 2)) b = -b;
    check_pair(t, r, REF_SUM, a, b);
}

START_TEST(ties) { run_draws("ties", 2, 400, draw_ties); }
END_TEST

/* Cancellation, subnormal and zero results, and sums past the largest
 * finite value. */
static void draw_cancellation_subnormal_overflow(ts_rng *r, tally *t)
{
    const fpe_format_id ft = (fpe_format_id)ts_below(r, 3);
    const ref_format *F = &ref_formats[ft];
    double a, b;
    switch (ts_below(r, 3)) {
    case 0: /* b close to -a */
        a = random_value(r, FPE_FMT_F32, -140 + (int)ts_below(r, 260));
        b = (float)(-a * (1.0 + ldexp(ts_uniform(r) - 0.5, -(int)ts_below(r, 30))));
        break;
    case 1: /* around the target's subnormal range */
        a = random_value(r, ft, F->emin - F->p - 1 + (int)ts_below(r, F->p + 4));
        b = random_value(r, FPE_FMT_F32, F->emin - F->p - 8 + (int)ts_below(r, F->p + 12));
        if (ts_below(r, 2)) b = -b;
        break;
    default: /* near the target's largest finite value */
        a = value_of(ft, max_bits(F) - ts_below(r, 4)) * (ts_below(r, 2) ? 1 : -1);
        b = random_value(r, FPE_FMT_F32, F->emax - F->p - 2 + (int)ts_below(r, F->p + 6));
        if (signbit(a)) b = -b;
        if (ts_below(r, 4) == 0) b = -b;
        break;
    }
    check_pair(t, r, REF_SUM, a, b);
}

START_TEST(cancellation_subnormal_overflow)
{
    run_draws("cancellation, subnormal, overflow", 3, 400, draw_cancellation_subnormal_overflow);
}
END_TEST

/* a of a random format and b of fb, random operands of every kind (NaN
 * operands are specials_grid's), checked under op. */
static void check_random_operands(ts_rng *r, tally *t, ref_op op, fpe_format_id fa,
                                  fpe_format_id fb)
{
    const double a = value_of(fa, ts_random_operand(r, fa));
    const double b = value_of(fb, ts_random_operand(r, fb));
    if (!isnan(a) && !isnan(b)) check_pair(t, r, op, a, b);
}

/* Products of two values of any of the formats (exact in binary64). */
static void draw_products(ts_rng *r, tally *t)
{
    const fpe_format_id fa = (fpe_format_id)ts_below(r, 3), fb = (fpe_format_id)ts_below(r, 3);
    check_random_operands(r, t, REF_PRODUCT, fa, fb);
}

START_TEST(products) { run_draws("products", 4, 400, draw_products); }
END_TEST

/* Random operands of every kind, any exponents (sums). */
static void draw_random_pairs(ts_rng *r, tally *t)
{
    check_random_operands(r, t, REF_SUM, (fpe_format_id)ts_below(r, 3), FPE_FMT_F32);
}

START_TEST(random_pairs) { run_draws("random pairs", 5, 400, draw_random_pairs); }
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_round");
    TCase *tc = tcase_create("round");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, specials_grid);
    tcase_add_test(tc, exponent_gaps);
    tcase_add_test(tc, ties);
    tcase_add_test(tc, cancellation_subnormal_overflow);
    tcase_add_test(tc, products);
    tcase_add_test(tc, random_pairs);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
