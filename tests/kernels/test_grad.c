/* test_grad: ak_accumulate, ak_sum_squares and ak_clip_by_norm on the cpu
 * backend.
 *
 * References, none of them from kernels/'s element code:
 *   - accumulate: the emulator's fpe_<fmt>_add(x, y) for equal dtypes; for
 *     an fp32 y the fp32 add of x widened (exact); for a 16-bit y and
 *     another dtype the double sum when TwoSum shows it exact, else the
 *     emulator's fp32 add rounded to odd and then to y's dtype, which rounds
 *     as the exact sum would (24 >= p + 2 bits, Boldo & Melquiond).
 *   - sum_squares: the squares (exact in double) summed in long double in
 *     order, and a case built so that an uncompensated in-order double sum
 *     is off by thousands of ulps.
 *   - clip_by_norm: PyTorch's clip_grad_norm_ formula written out here, and
 *     the products by fpe_f32_mul (fp32) or the exact double product rounded
 *     by fpe_f64_to_<fmt> (fp16/bf16), with the x86 NaN rules spelt out.
 */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "kt.h"

/* ---- elements through the emulator's public functions ------------------------- */
static bool is_nan(ak_dtype dt, uint32_t bits)
{
    switch (dt) {
    case AK_F16: return fpe_f16_isnan((uint16_t)bits);
    case AK_BF16: return fpe_bf16_isnan((uint16_t)bits);
    default: return fpe_f32_isnan(bits);
    }
}

static bool is_nonfinite(ak_dtype dt, uint32_t bits)
{
    switch (dt) {
    case AK_F16: return (bits & 0x7C00u) == 0x7C00u;
    case AK_BF16: return (bits & 0x7F80u) == 0x7F80u;
    default: return (bits & 0x7F800000u) == 0x7F800000u;
    }
}

/* The same element made finite (the exponent's top bit cleared). */
static uint32_t finite_of(ak_dtype dt, uint32_t bits)
{
    if (!is_nonfinite(dt, bits)) return bits;
    return dt == AK_F32 ? bits & 0xBFFFFFFFu : bits & 0xBFFFu;
}

/* fp16/bf16 -> fp32, exact. */
static uint32_t widen(ak_dtype from, uint32_t bits)
{
    fpe_env env = fpe_env_default();
    switch (from) {
    case AK_F16: return fpe_f16_to_f32(&env, (uint16_t)bits);
    case AK_BF16: return fpe_bf16_to_f32(&env, (uint16_t)bits);
    default: return bits;
    }
}

static uint32_t narrow(fpe_env *env, ak_dtype to, uint32_t f32)
{
    switch (to) {
    case AK_F16: return fpe_f32_to_f16(env, f32);
    case AK_BF16: return fpe_f32_to_bf16(env, f32);
    default: return f32;
    }
}

/* x + y rounded once to y's dtype, x the first operand (its NaN wins). */
static uint32_t ref_accumulate(ak_dtype dy, ak_dtype dx, uint32_t y, uint32_t x)
{
    fpe_env env = fpe_env_default();
    if (dy == dx) {
        switch (dy) {
        case AK_F16: return fpe_f16_add(&env, (uint16_t)x, (uint16_t)y);
        case AK_BF16: return fpe_bf16_add(&env, (uint16_t)x, (uint16_t)y);
        default: return fpe_f32_add(&env, x, y);
        }
    }
    if (dy == AK_F32) return fpe_f32_add(&env, widen(dx, x), y);
    const double u = kt_value(dx, x), v = kt_value(dy, y);
    if (isfinite(u) && isfinite(v)) {
        const double s = u + v, bv = s - u, av = s - bv;
        if ((u - av) + (v - bv) == 0.0) return kt_from_f64(dy, s);
    }
    env.round = FPE_RO;
    const uint32_t odd = fpe_f32_add(&env, widen(dx, x), widen(dy, y));
    env.round = FPE_RNE;
    return narrow(&env, dy, odd);
}

/* x * c as ak_scale multiplies (c an fp32 value): fpe_f32_mul for fp32;
 * for fp16/bf16 a NaN x stays itself, quieted, else a NaN c gives its
 * payload in x's dtype, else inf * 0 the default NaN, else the exact
 * product rounded to nearest even. */
static uint32_t ref_mul(ak_dtype dt, uint32_t x, uint32_t c)
{
    fpe_env env = fpe_env_default();
    if (dt == AK_F32) return fpe_f32_mul(&env, x, c);
    const bool f16 = dt == AK_F16;
    if (is_nan(dt, x)) return x | (f16 ? 0x0200u : 0x0040u);
    if (fpe_f32_isnan(c)) return narrow(&env, dt, c);
    const double p = kt_value(dt, x) * (double)kt_f32_of(c); /* exact: 11 (8) + 24 bits */
    if (isnan(p)) return kt_default_nan(dt);
    return kt_from_f64(dt, p);
}

/* PyTorch's clip_grad_norm_(max_norm, norm_type=2) coefficient:
 *   total_norm = ||g||_2;  clip_coef = max_norm / (total_norm + 1e-6);
 *   clip_coef_clamped = clamp(clip_coef, max=1.0)   (a NaN stays NaN)
 * in double from the sum of squares, then as fp32 bits; the NaN is the
 * default one. */
static uint32_t ref_coef(double sumsq, float max_norm)
{
    const double total_norm = sqrt(sumsq);
    double clip_coef = (double)max_norm / (total_norm + 1e-6);
    if (isnan(clip_coef)) return kt_default_nan(AK_F32);
    if (clip_coef > 1.0) clip_coef = 1.0;
    return kt_f32_bits((float)clip_coef);
}

static uint32_t *bits_alloc(size_t n)
{
    uint32_t *p = malloc(n * sizeof *p + 4);
    ck_assert_ptr_nonnull(p);
    return p;
}

/* ---- accumulate ----------------------------------------------------------------- */
#define ACC_N 131072 /* every 16-bit pattern twice */

/* Operands of one pass: 0 sweeps y (every 16-bit pattern, or the fp32 mix)
 * against x from the mix; 1 the reverse; 2 ordinary values of mixed
 * magnitudes, so that sums round and cancel. */
static void fill_operands(ts_rng *r, int pass, ak_dtype dt, bool swept, uint32_t *v, size_t n)
{
    if (pass == 2) {
        for (size_t i = 0; i < n; i += 1024)
            kt_fill_values(r, dt, v + i, n - i < 1024 ? n - i : 1024,
                           ldexp(1.0, (int)ts_below(r, 24) - 12));
        return;
    }
    if (swept && dt != AK_F32) {
        for (size_t i = 0; i < n; i++)
            v[i] = (uint32_t)(i & 0xFFFF);
        return;
    }
    kt_fill_bits(r, dt, v, n);
}

/* _i = 3 * (y's dtype) + x's dtype (kt_dtypes order) */
START_TEST(accumulate_matches_emulator)
{
    const ak_dtype dy = kt_dtypes[_i / 3], dx = kt_dtypes[_i % 3];
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + (uint64_t)_i);
    uint32_t *y = bits_alloc(ACC_N), *x = bits_alloc(ACC_N), *got = bits_alloc(ACC_N),
             *want = bits_alloc(ACC_N);
    kt_buf ty = kt_buf_alloc(b, ACC_N, dy), tx = kt_buf_alloc(b, ACC_N, dx);
    for (int pass = 0; pass < 3; pass++) {
        fill_operands(&r, pass, dy, pass == 0, y, ACC_N);
        fill_operands(&r, pass, dx, pass == 1, x, ACC_N);
        kt_buf_put(&ty, y);
        kt_buf_put(&tx, x);
        ck_assert_msg(ak_accumulate(b, ty.t, tx.t) == AK_OK, "%s", ak_error(b));
        kt_buf_get(&ty, got);
        for (size_t i = 0; i < ACC_N; i++)
            want[i] = ref_accumulate(dy, dx, y[i], x[i]);
        char what[64];
        snprintf(what, sizeof what, "y (%s) += x (%s), pass %d", ak_dtype_name(dy),
                 ak_dtype_name(dx), pass);
        ck_assert_uint_eq(kt_count_mismatches(what, got, want, ACC_N, 4), 0);
        kt_buf_get(&tx, got); /* x is only read */
        ck_assert_uint_eq(kt_count_mismatches("x after", got, x, ACC_N, 4), 0);
    }
    ck_assert(kt_buf_guards_ok(&ty) && kt_buf_guards_ok(&tx));
    kt_buf_free(&ty);
    kt_buf_free(&tx);
    free(y);
    free(x);
    free(got);
    free(want);
    ak_close(b);
}
END_TEST

/* y = y + y (x is y itself): every 16-bit pattern and the fp32 mix. */
START_TEST(accumulate_onto_itself)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 20);
    uint32_t *y = bits_alloc(ACC_N), *got = bits_alloc(ACC_N), *want = bits_alloc(ACC_N);
    for (int d = 0; d < 3; d++) {
        const ak_dtype dt = kt_dtypes[d];
        fill_operands(&r, 0, dt, true, y, ACC_N);
        kt_buf t = kt_buf_alloc(b, ACC_N, dt);
        kt_buf_put(&t, y);
        ck_assert_msg(ak_accumulate(b, t.t, t.t) == AK_OK, "%s", ak_error(b));
        kt_buf_get(&t, got);
        for (size_t i = 0; i < ACC_N; i++)
            want[i] = ref_accumulate(dt, dt, y[i], y[i]);
        ck_assert_uint_eq(kt_count_mismatches(ak_dtype_name(dt), got, want, ACC_N, 4), 0);
        ck_assert(kt_buf_guards_ok(&t));
        kt_buf_free(&t);
    }
    free(y);
    free(got);
    free(want);
    ak_close(b);
}
END_TEST

/* One element y (dtype dy) += x (dtype dx) on the cpu backend. */
static uint32_t accumulate1(ak_backend *b, ak_dtype dy, uint32_t y, ak_dtype dx, uint32_t x)
{
    kt_buf ty = kt_buf_alloc(b, 1, dy), tx = kt_buf_alloc(b, 1, dx);
    kt_buf_put(&ty, &y);
    kt_buf_put(&tx, &x);
    ck_assert_msg(ak_accumulate(b, ty.t, tx.t) == AK_OK, "%s", ak_error(b));
    uint32_t got;
    kt_buf_get(&ty, &got);
    ck_assert(kt_buf_guards_ok(&ty) && kt_buf_guards_ok(&tx));
    kt_buf_free(&ty);
    kt_buf_free(&tx);
    return got;
}

/* Hand-checked sums: ties, a double rounding that round-to-odd avoids,
 * overflow, inf - inf, which NaN wins, signed zeros, subnormals. */
START_TEST(accumulate_special_cases)
{
    static const struct {
        ak_dtype dy;
        uint32_t y;
        ak_dtype dx;
        uint32_t x, want;
    } cases[] = {
        /* fp16 y, fp32 x: 1 + 2^-11 is a tie (to even: 1); 2^-11 + 2^-24 rounds up */
        {AK_F16, 0x3C00, AK_F32, 0x3A000000u, 0x3C00},
        {AK_F16, 0x3C00, AK_F32, 0x3A000001u, 0x3C01},
        /* 65504 + 16 = 65520 rounds past the largest fp16 */
        {AK_F16, 0x7BFF, AK_F32, 0x41800000u, 0x7C00},
        /* inf + -inf: the default NaN */
        {AK_F16, 0x7C00, AK_F32, 0xFF800000u, 0xFE00},
        /* both NaNs: x's wins (payload's top bits), quieted */
        {AK_F16, 0x7D01, AK_F32, 0x7FC02000u, 0x7E01},
        {AK_F16, 0x7D01, AK_F32, 0x3F800000u, 0x7F01},
        {AK_F16, 0x7D01, AK_F16, 0xFC01, 0xFE01},
        /* -0 + -0 = -0; -0 + +0 = +0; 1 + -1 = +0 */
        {AK_F16, 0x8000, AK_F32, 0x80000000u, 0x8000},
        {AK_F16, 0x8000, AK_F32, 0x00000000u, 0x0000},
        {AK_F16, 0x3C00, AK_F32, 0xBF800000u, 0x0000},
        /* bf16 y = 2^-100, x = 1 + 2^-8 (a bf16 tie): the exact sum is just
         * above the tie and rounds up, where the double sum would be the
         * tie itself and round to even (down) */
        {AK_BF16, 0x0D80, AK_F32, 0x3F808000u, 0x3F81},
        /* -2^-100 + (1 + 2^-7 + 2^-8): just below a tie whose even side is up */
        {AK_BF16, 0x8D80, AK_F32, 0x3F818000u, 0x3F81},
        /* fp32: 1 + 2^-24 ties to even; 2^-24 (1 + 2^-23) rounds up */
        {AK_F32, 0x3F800000u, AK_F32, 0x33800000u, 0x3F800000u},
        {AK_F32, 0x3F800000u, AK_F32, 0x33800001u, 0x3F800001u},
        /* subnormals are kept: 2^-149 + 2^-149 */
        {AK_F32, 0x00000001u, AK_F32, 0x00000001u, 0x00000002u},
        /* fp32 NaNs: x's, quieted; inf - inf the default NaN */
        {AK_F32, 0x7FC00001u, AK_F32, 0xFF800001u, 0xFFC00001u},
        {AK_F32, 0x7F800000u, AK_F32, 0xFF800000u, 0xFFC00000u},
        /* fp32 y + fp16 x: 2^24 + 1 is a tie (to even: 2^24) */
        {AK_F32, 0x4B800000u, AK_F16, 0x3C00, 0x4B800000u},
    };
    ak_backend *b = kt_open_cpu();
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const uint32_t got = accumulate1(b, cases[k].dy, cases[k].y, cases[k].dx, cases[k].x);
        ck_assert_msg(got == cases[k].want, "case %zu: %s 0x%x + %s 0x%x: got 0x%x, expected 0x%x",
                      k, ak_dtype_name(cases[k].dy), cases[k].y, ak_dtype_name(cases[k].dx),
                      cases[k].x, got, cases[k].want);
        /* and the reference agrees with the hand-checked value */
        ck_assert_uint_eq(ref_accumulate(cases[k].dy, cases[k].dx, cases[k].y, cases[k].x),
                          cases[k].want);
    }
    ak_close(b);
}
END_TEST

/* ---- lists of tensors --------------------------------------------------------------- */
/* A list of tensors of mixed dtypes on one backend, with the host copy of
 * their elements (one uint32_t each). */
typedef struct tlist {
    size_t count;
    kt_buf *bufs;
    ak_tensor *t;
    uint32_t **x;
} tlist;

static tlist tlist_make(ak_backend *b, size_t count, const size_t *sizes, const ak_dtype *dts)
{
    tlist l = {count, calloc(count, sizeof(kt_buf)), calloc(count, sizeof(ak_tensor)),
               calloc(count, sizeof(uint32_t *))};
    ck_assert(l.bufs && l.t && l.x);
    for (size_t i = 0; i < count; i++) {
        l.x[i] = bits_alloc(sizes[i]);
        if (sizes[i] == 0) {
            l.t[i] = ak_tensor_of(NULL, 0, dts[i]);
            continue;
        }
        l.bufs[i] = kt_buf_alloc(b, sizes[i], dts[i]);
        l.t[i] = l.bufs[i].t;
    }
    return l;
}

static void tlist_upload(tlist *l)
{
    for (size_t i = 0; i < l->count; i++)
        if (l->t[i].n > 0) kt_buf_put(&l->bufs[i], l->x[i]);
}

static void tlist_free(tlist *l)
{
    for (size_t i = 0; i < l->count; i++) {
        if (l->t[i].n > 0) {
            ck_assert(kt_buf_guards_ok(&l->bufs[i]));
            kt_buf_free(&l->bufs[i]);
        }
        free(l->x[i]);
    }
    free(l->bufs);
    free(l->t);
    free(l->x);
}

/* The exact squares summed in order in long double (64-bit significand). */
static long double ref_sum_squares(const tlist *l)
{
    long double s = 0.0L;
    for (size_t i = 0; i < l->count; i++)
        for (size_t j = 0; j < l->t[i].n; j++) {
            const double v = kt_value(l->t[i].dtype, l->x[i][j]);
            s += (long double)(v * v);
        }
    return s;
}

static double *sumsq_alloc(ak_backend *b, double v)
{
    double *p = kt_dev_alloc(b, sizeof(double));
    kt_dev_put(b, p, &v, sizeof v);
    return p;
}

static double sumsq_get(ak_backend *b, const double *p)
{
    double v;
    kt_dev_get(b, &v, p, sizeof v);
    return v;
}

/* ---- sum of squares ------------------------------------------------------------------ */
/* Random lists (every pattern class made finite, or ordinary values of
 * spread magnitudes) against the long double sum, to 1e-13 relative. */
START_TEST(sum_squares_matches_reference)
{
    static const size_t sizes[6] = {1000, 0, 77777, 1, 4097, 65536};
    static const ak_dtype dts[6] = {AK_F32, AK_F16, AK_BF16, AK_F16, AK_F32, AK_F16};
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 30);
    double *sumsq = sumsq_alloc(b, 0.0);
    for (int pass = 0; pass < 2; pass++) {
        tlist l = tlist_make(b, 6, sizes, dts);
        for (size_t i = 0; i < 6; i++) {
            if (pass == 0) {
                kt_fill_bits(&r, dts[i], l.x[i], sizes[i]);
                for (size_t j = 0; j < sizes[i]; j++)
                    l.x[i][j] = finite_of(dts[i], l.x[i][j]);
            } else {
                kt_fill_values(&r, dts[i], l.x[i], sizes[i], ldexp(1.0, (int)i * 3 - 8));
            }
        }
        tlist_upload(&l);
        const double zero = 0.0;
        kt_dev_put(b, sumsq, &zero, sizeof zero);
        ck_assert_msg(ak_sum_squares(b, l.t, 6, sumsq) == AK_OK, "%s", ak_error(b));
        const double got = sumsq_get(b, sumsq), want = (double)ref_sum_squares(&l);
        ck_assert_msg(isfinite(want) && want > 0, "pass %d: reference %g", pass, want);
        ck_assert_msg(kt_agree_within(got, want, 1e-13 * want), "pass %d: got %.17g expected %.17g",
                      pass, got, want);
        tlist_free(&l);
    }
    kt_dev_free(b, sumsq);
    ak_close(b);
}
END_TEST

/* 2^20 (the square of 2^10) followed by 100000 squares t of 2^-17 (1 +
 * 2^-11): each t is below half an ulp of 2^20, so an in-order double sum
 * without its rounding errors stays at 2^20, 25000 ulps off.  The exact sum
 * 2^20 + 100000 t rounds once in double (100000 t is exact). */
START_TEST(sum_squares_carries_rounding_errors)
{
    enum { N = 100000 };
    ak_backend *b = kt_open_cpu();
    const size_t sizes[2] = {1, N};
    const ak_dtype dts[2] = {AK_F32, AK_F32};
    tlist l = tlist_make(b, 2, sizes, dts);
    const float small = ldexpf(1.0f + ldexpf(1.0f, -11), -17);
    l.x[0][0] = kt_f32_bits(1024.0f);
    for (size_t j = 0; j < N; j++)
        l.x[1][j] = kt_f32_bits(small);
    tlist_upload(&l);
    double *sumsq = sumsq_alloc(b, 0.0);
    ck_assert_int_eq(ak_sum_squares(b, l.t, 2, sumsq), AK_OK);
    const double t = (double)small * (double)small;
    const double want = 0x1p20 + (double)N * t;
    const double got = sumsq_get(b, sumsq);
    ck_assert_msg(fabs(got - want) <= 2 * 0x1p-32, "got %.17g expected %.17g (plain sum: %.17g)",
                  got, want, 0x1p20);
    tlist_free(&l);
    kt_dev_free(b, sumsq);
    ak_close(b);
}
END_TEST

/* *sumsq accumulates: a starting value plus two calls. */
START_TEST(sum_squares_accumulates)
{
    static const size_t sa[3] = {300, 5000, 17}, sb[2] = {40000, 2};
    static const ak_dtype da[3] = {AK_BF16, AK_F32, AK_F16}, db[2] = {AK_F16, AK_F32};
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 31);
    tlist la = tlist_make(b, 3, sa, da), lb = tlist_make(b, 2, sb, db);
    for (size_t i = 0; i < 3; i++)
        kt_fill_values(&r, da[i], la.x[i], sa[i], 3.0);
    for (size_t i = 0; i < 2; i++)
        kt_fill_values(&r, db[i], lb.x[i], sb[i], 0.25);
    tlist_upload(&la);
    tlist_upload(&lb);
    double *sumsq = sumsq_alloc(b, 3.5);
    ck_assert_int_eq(ak_sum_squares(b, la.t, 3, sumsq), AK_OK);
    const double after_a = sumsq_get(b, sumsq);
    const long double ra = ref_sum_squares(&la), rb = ref_sum_squares(&lb);
    const double want_a = (double)(3.5L + ra), want = (double)(3.5L + ra + rb);
    ck_assert_msg(kt_agree_within(after_a, want_a, 1e-13 * want_a), "got %.17g expected %.17g",
                  after_a, want_a);
    ck_assert_int_eq(ak_sum_squares(b, lb.t, 2, sumsq), AK_OK);
    const double got = sumsq_get(b, sumsq);
    ck_assert_msg(kt_agree_within(got, want, 1e-13 * want), "got %.17g expected %.17g", got, want);
    tlist_free(&la);
    tlist_free(&lb);
    kt_dev_free(b, sumsq);
    ak_close(b);
}
END_TEST

/* Sum of squares of a two-tensor list: a fp32 tensor {1, e32} and an fp16
 * tensor {0.5, e16}, starting from start. */
static double sum_squares_of(ak_backend *b, uint32_t e32, uint32_t e16, double start)
{
    const size_t sizes[2] = {2, 2};
    const ak_dtype dts[2] = {AK_F32, AK_F16};
    tlist l = tlist_make(b, 2, sizes, dts);
    l.x[0][0] = 0x3F800000u;
    l.x[0][1] = e32;
    l.x[1][0] = 0x3800;
    l.x[1][1] = e16;
    tlist_upload(&l);
    double *sumsq = sumsq_alloc(b, start);
    ck_assert_msg(ak_sum_squares(b, l.t, 2, sumsq) == AK_OK, "%s", ak_error(b));
    const double v = sumsq_get(b, sumsq);
    tlist_free(&l);
    kt_dev_free(b, sumsq);
    return v;
}

/* Infinities give +inf, NaNs (quiet or signaling, any sign) NaN, both NaN;
 * the largest fp32 squares without overflow; an empty list or a list of
 * empty tensors leaves *sumsq alone. */
START_TEST(sum_squares_special_values)
{
    ak_backend *b = kt_open_cpu();
    const double one_quarter = 1.0 + 0.25;
    ck_assert(sum_squares_of(b, 0x00000000u, 0x0000, 0.0) == one_quarter);
    ck_assert(sum_squares_of(b, 0xFF800000u, 0x0000, 0.0) == INFINITY);
    ck_assert(sum_squares_of(b, 0x00000000u, 0x7C00, 0.0) == INFINITY);
    ck_assert(sum_squares_of(b, 0x00000000u, 0xFC00, 2.0) == INFINITY);
    ck_assert(isnan(sum_squares_of(b, 0x7FC00000u, 0x0000, 0.0)));
    ck_assert(isnan(sum_squares_of(b, 0xFF800001u, 0x0000, 0.0))); /* signaling */
    ck_assert(isnan(sum_squares_of(b, 0x00000000u, 0xFE00, 0.0)));
    ck_assert(isnan(sum_squares_of(b, 0xFF800000u, 0x7D00, 0.0))); /* inf and NaN */
    ck_assert(isnan(sum_squares_of(b, 0x00000000u, 0x0000, NAN)));
    ck_assert(sum_squares_of(b, 0x00000000u, 0x0000, INFINITY) == INFINITY);
    /* FLT_MAX^2 ~ 2^256 and the least subnormals' squares are exact in double */
    const double m = (double)FLT_MAX;
    ck_assert(sum_squares_of(b, 0x7F7FFFFFu, 0x0000, 0.0) == m * m + one_quarter);
    ck_assert(sum_squares_of(b, 0x00000001u, 0x0001, 0.0) == one_quarter + 0x1p-48 + 0x1p-298);
    /* nothing to do */
    double *sumsq = sumsq_alloc(b, 0.75);
    ck_assert_int_eq(ak_sum_squares(b, NULL, 0, sumsq), AK_OK);
    const ak_tensor empty[2] = {ak_tensor_none(), ak_tensor_of(NULL, 0, AK_F16)};
    ck_assert_int_eq(ak_sum_squares(b, empty, 2, sumsq), AK_OK);
    ck_assert(sumsq_get(b, sumsq) == 0.75);
    ck_assert_str_eq(ak_error(b), "");
    kt_dev_free(b, sumsq);
    ak_close(b);
}
END_TEST

/* ---- clipping -------------------------------------------------------------------------- */
/* Every 16-bit pattern, the fp32 mix and a one-element fp32 tensor. */
static tlist clip_inputs(ak_backend *b, uint64_t seed)
{
    static const ak_dtype dts[5] = {AK_F16, AK_BF16, AK_F32, AK_F16, AK_F32};
    const size_t sizes[5] = {65536, 65536, 100000, 0, 1};
    tlist l = tlist_make(b, 5, sizes, dts);
    ts_rng r;
    ts_rng_init(&r, seed);
    for (uint32_t i = 0; i < 65536; i++)
        l.x[0][i] = l.x[1][i] = i;
    kt_fill_f32_bits(&r, l.x[2], sizes[2]);
    uint32_t specials[512];
    const size_t ns = ts_special_values(FPE_FMT_F32, specials, 512);
    memcpy(l.x[2], specials, ns * sizeof *specials);
    l.x[4][0] = 0x40490FDBu; /* pi */
    return l;
}

/* After ak_clip_by_norm with coefficient bits c: every element is
 * ref_mul(x, c), or x itself when c is 1; returns the mismatches. */
static size_t clip_mismatches(tlist *l, uint32_t c, const char *label)
{
    size_t bad = 0;
    for (size_t i = 0; i < l->count; i++) {
        const size_t n = l->t[i].n;
        if (n == 0) continue;
        const ak_dtype dt = l->t[i].dtype;
        uint32_t *got = bits_alloc(n), *want = bits_alloc(n);
        kt_buf_get(&l->bufs[i], got);
        for (size_t j = 0; j < n; j++)
            want[j] = c == 0x3F800000u ? l->x[i][j] : ref_mul(dt, l->x[i][j], c);
        char what[96];
        snprintf(what, sizeof what, "%s: xs[%zu] (%s)", label, i, ak_dtype_name(dt));
        bad += kt_count_mismatches(what, got, want, n, 4);
        free(got);
        free(want);
    }
    return bad;
}

/* The coefficient and every element against PyTorch's formula, for sums of
 * squares below, at and above max_norm^2, huge and tiny ones, and the
 * non-finite and negative ones; with and without coef_out. */
START_TEST(clip_matches_formula)
{
    static const struct {
        double sumsq;
        float max_norm;
    } cases[] = {
        {0.0, 1.0f},                          /* nothing to clip */
        {-0.0, 1.0f},                         /* sqrt(-0) = -0: still nothing */
        {0.25, 1.0f},                         /* norm 0.5 < 1 */
        {1.0, 1.0f},                          /* norm == max_norm: 1 / (1 + 1e-6) clips a little */
        {4.0, 1.0f},                          /* about 0.5 */
        {1e10, 1.0f},                         /* about 1e-5 */
        {25e6, 1000.0f},                      /* about 0.2 */
        {1e6, 1000.0f},                       /* 1 - 1e-9 rounds to 1.0f: left alone */
        {1e300, 5.0f},                        /* about 5e-150: 0 in fp32 */
        {1e-30, 1e-20f},                      /* the 1e-6 dominates: about 1e-14 */
        {1.0, 1.4e-45f},                      /* the least subnormal coefficient */
        {(double)FLT_MAX * FLT_MAX, FLT_MAX}, /* max_norm / max_norm = 1 */
        {4.0 * FLT_MAX * (double)FLT_MAX, FLT_MAX}, /* exactly 0.5 */
        {0x1p256, FLT_MAX},                         /* 1 - 2^-24 (FLT_MAX / 2^128) */
        {3.0e-5, 0.004f},                           /* about 0.73 */
        {INFINITY, 1.0f},                           /* 0: zeros, and NaNs from infinities */
        {NAN, 1.0f},                                /* the default NaN */
        {-1.0, 1.0f},                               /* sqrt(-1) is NaN: likewise */
    };
    ak_backend *b = kt_open_cpu();
    tlist l = clip_inputs(b, ts_seed() + 40);
    double *sumsq = sumsq_alloc(b, 0.0);
    float *coef = kt_dev_alloc(b, sizeof(float));
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        for (int with_coef = 0; with_coef < 2; with_coef++) {
            tlist_upload(&l);
            kt_dev_put(b, sumsq, &cases[k].sumsq, sizeof(double));
            const uint32_t marker = kt_marker_nan(AK_F32);
            kt_dev_put(b, coef, &marker, sizeof marker);
            const int rc =
                ak_clip_by_norm(b, l.t, l.count, sumsq, cases[k].max_norm, with_coef ? coef : NULL);
            ck_assert_msg(rc == AK_OK, "%s", ak_error(b));
            const uint32_t want = ref_coef(cases[k].sumsq, cases[k].max_norm);
            uint32_t got;
            kt_dev_get(b, &got, coef, sizeof got);
            ck_assert_msg(got == (with_coef ? want : marker),
                          "case %zu: coef_out 0x%08x, expected 0x%08x", k, got, want);
            char label[64];
            snprintf(label, sizeof label, "case %zu (coef 0x%08x)", k, want);
            ck_assert_uint_eq(clip_mismatches(&l, want, label), 0);
            /* *sumsq is only read */
            ck_assert(memcmp(&(double){sumsq_get(b, sumsq)}, &cases[k].sumsq, sizeof(double)) == 0);
        }
    }
    /* the cases reach what they say they reach */
    ck_assert_uint_eq(ref_coef(1.0, 1.0f), kt_f32_bits((float)(1.0 / (1.0 + 1e-6))));
    ck_assert(ref_coef(1.0, 1.0f) != 0x3F800000u && ref_coef(1e6, 1000.0f) == 0x3F800000u);
    ck_assert_uint_eq(ref_coef(1e300, 5.0f), 0);
    ck_assert_uint_eq(ref_coef(1.0, 1.4e-45f), 1);
    ck_assert_uint_eq(ref_coef((double)FLT_MAX * FLT_MAX, FLT_MAX), 0x3F800000u);
    ck_assert_uint_eq(ref_coef(4.0 * FLT_MAX * (double)FLT_MAX, FLT_MAX), 0x3F000000u);
    ck_assert_uint_eq(ref_coef(0x1p256, FLT_MAX), 0x3F7FFFFFu);
    ck_assert_uint_eq(ref_coef(INFINITY, 1.0f), 0);
    ck_assert_uint_eq(ref_coef(-1.0, 1.0f), 0xFFC00000u);
    tlist_free(&l);
    kt_dev_free(b, sumsq);
    kt_dev_free(b, coef);
    ak_close(b);
}
END_TEST

/* Runs ak_clip_by_norm on one tensor of n elements of dt (host bits x, in
 * place) with *sumsq = s; returns the coefficient's bits. */
static uint32_t clip1(ak_backend *b, ak_dtype dt, uint32_t *x, size_t n, double s, float max_norm)
{
    kt_buf t = kt_buf_alloc(b, n, dt);
    kt_buf_put(&t, x);
    double *sumsq = sumsq_alloc(b, s);
    float *coef = kt_dev_alloc(b, sizeof(float));
    ck_assert_msg(ak_clip_by_norm(b, &t.t, 1, sumsq, max_norm, coef) == AK_OK, "%s", ak_error(b));
    kt_buf_get(&t, x);
    uint32_t c;
    kt_dev_get(b, &c, coef, sizeof c);
    ck_assert(kt_buf_guards_ok(&t));
    kt_buf_free(&t);
    kt_dev_free(b, sumsq);
    kt_dev_free(b, coef);
    return c;
}

/* Hand-checked: below max_norm nothing moves (a signaling NaN included);
 * an infinite norm zeroes finite elements (keeping their signs) and makes
 * infinities NaNs; a NaN norm makes everything NaN. */
START_TEST(clip_hand_checked)
{
    ak_backend *b = kt_open_cpu();
    /* norm 3 < 4 */
    uint32_t a[4] = {0x40400000u, 0x7F800001u, 0xFF800000u, 0x80000000u};
    ck_assert_uint_eq(clip1(b, AK_F32, a, 4, 9.0, 4.0f), 0x3F800000u);
    ck_assert(a[0] == 0x40400000u && a[1] == 0x7F800001u && a[2] == 0xFF800000u &&
              a[3] == 0x80000000u);
    /* norm 8, max 4: 4 / (8 + 1e-6) = 0.49999993750000781... -> fp32 0x3EFFFFFE */
    uint32_t h[3] = {0x4000, 0x3C00, 0xC800}; /* 2, 1, -8 (fp16) */
    const uint32_t c = clip1(b, AK_F16, h, 3, 64.0, 4.0f);
    ck_assert_uint_eq(c, 0x3EFFFFFEu);
    /* 2 c = 0.99999988 rounds to 1 in fp16; c rounds to 0.5; -8 c to -4 */
    ck_assert(h[0] == 0x3C00 && h[1] == 0x3800 && h[2] == 0xC400);
    /* infinite norm: coefficient 0 */
    uint32_t f[5] = {0x3FC00000u, 0xC0000000u, 0x7F800000u, 0x7FA00000u, 0x80000000u};
    ck_assert_uint_eq(clip1(b, AK_F32, f, 5, INFINITY, 1.0f), 0);
    ck_assert(f[0] == 0 && f[1] == 0x80000000u && f[2] == 0xFFC00000u && f[3] == 0x7FE00000u &&
              f[4] == 0x80000000u);
    uint32_t g[3] = {0x3F80, 0xFF80, 0x8001}; /* bf16 1, -inf, -least subnormal */
    ck_assert_uint_eq(clip1(b, AK_BF16, g, 3, INFINITY, 1.0f), 0);
    ck_assert(g[0] == 0 && g[1] == 0xFFC0 && g[2] == 0x8000);
    /* NaN norm: the default NaN coefficient; NaN elements keep theirs, quieted */
    uint32_t n[3] = {0x3FC00000u, 0x7F800001u, 0x00000000u};
    ck_assert_uint_eq(clip1(b, AK_F32, n, 3, NAN, 1.0f), 0xFFC00000u);
    ck_assert(n[0] == 0xFFC00000u && n[1] == 0x7FC00001u && n[2] == 0xFFC00000u);
    uint32_t m[2] = {0x3C00, 0x7D01};
    ck_assert_uint_eq(clip1(b, AK_F16, m, 2, NAN, 1.0f), 0xFFC00000u);
    ck_assert(m[0] == 0xFE00 && m[1] == 0x7F01);
    ak_close(b);
}
END_TEST

/* With no elements the coefficient is still written (when asked for). */
START_TEST(clip_empty_list)
{
    ak_backend *b = kt_open_cpu();
    double *sumsq = sumsq_alloc(b, 100.0);
    float *coef = kt_dev_alloc(b, sizeof(float));
    ck_assert_int_eq(ak_clip_by_norm(b, NULL, 0, sumsq, 2.0f, coef), AK_OK);
    uint32_t c;
    kt_dev_get(b, &c, coef, sizeof c);
    ck_assert_uint_eq(c, ref_coef(100.0, 2.0f));
    const ak_tensor empty[2] = {ak_tensor_none(), ak_tensor_of(NULL, 0, AK_BF16)};
    kt_dev_put(b, sumsq, &(double){1e-2}, sizeof(double));
    ck_assert_int_eq(ak_clip_by_norm(b, empty, 2, sumsq, 2.0f, coef), AK_OK);
    kt_dev_get(b, &c, coef, sizeof c);
    ck_assert_uint_eq(c, 0x3F800000u);
    ck_assert_int_eq(ak_clip_by_norm(b, empty, 2, sumsq, 2.0f, NULL), AK_OK);
    ck_assert_str_eq(ak_error(b), "");
    kt_dev_free(b, sumsq);
    kt_dev_free(b, coef);
    ak_close(b);
}
END_TEST

/* The training-step sequence: sum of squares, clip to half the norm, sum
 * again: the new norm is max_norm to the precision of the elements. */
START_TEST(clip_after_sum_squares)
{
    static const size_t sizes[4] = {3000, 20000, 1, 777};
    static const ak_dtype dts[4] = {AK_F32, AK_BF16, AK_F16, AK_F16};
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 50);
    tlist l = tlist_make(b, 4, sizes, dts);
    for (size_t i = 0; i < 4; i++)
        kt_fill_values(&r, dts[i], l.x[i], sizes[i], 0.5);
    tlist_upload(&l);
    double *sumsq = sumsq_alloc(b, 0.0);
    ck_assert_int_eq(ak_sum_squares(b, l.t, 4, sumsq), AK_OK);
    const double norm = sqrt(sumsq_get(b, sumsq));
    const float max_norm = (float)(norm / 2);
    float *coef = kt_dev_alloc(b, sizeof(float));
    ck_assert_int_eq(ak_clip_by_norm(b, l.t, 4, sumsq, max_norm, coef), AK_OK);
    float c;
    kt_dev_get(b, &c, coef, sizeof c);
    ck_assert_msg(fabs(c - 0.5) < 1e-6, "coefficient %.9g", (double)c);
    kt_dev_put(b, sumsq, &(double){0.0}, sizeof(double));
    ck_assert_int_eq(ak_sum_squares(b, l.t, 4, sumsq), AK_OK);
    const double clipped = sqrt(sumsq_get(b, sumsq));
    /* each element is off by at most half a bf16 ulp (2^-9 relative) */
    ck_assert_msg(fabs(clipped - max_norm) <= 0x1p-9 * max_norm, "norm %.9g after clipping to %.9g",
                  clipped, (double)max_norm);
    tlist_free(&l);
    kt_dev_free(b, sumsq);
    kt_dev_free(b, coef);
    ak_close(b);
}
END_TEST

/* ---- bad arguments ----------------------------------------------------------------------- */
START_TEST(bad_arguments_named)
{
    ak_backend *b = kt_open_cpu();
    kt_buf x = kt_buf_alloc(b, 10, AK_F32), y = kt_buf_alloc(b, 10, AK_F32);
    double *sumsq = sumsq_alloc(b, 0.0);
    float *coef = kt_dev_alloc(b, sizeof(float));
    char *xd = x.t.data;

    /* ak_accumulate */
    ck_assert_int_eq(ak_accumulate(NULL, y.t, x.t), AK_EINVAL);
    KT_EXPECT_ERROR(b, ak_accumulate(b, ak_tensor_of(y.t.data, 9, AK_F32), x.t), AK_EINVAL, NULL,
                    "ak_accumulate: y has 9 elements, expected 10");
    KT_EXPECT_ERROR(b, ak_accumulate(b, y.t, ak_tensor_of(NULL, 10, AK_F16)), AK_EINVAL, NULL,
                    "ak_accumulate: x is NULL with 10 elements");
    KT_EXPECT_ERROR(b, ak_accumulate(b, y.t, ak_tensor_of(xd, 10, (ak_dtype)7)), AK_EINVAL, NULL,
                    "ak_accumulate: x has an invalid dtype (7)");
    KT_EXPECT_ERROR(b,
                    ak_accumulate(b, ak_tensor_of(xd + 2, 4, AK_F32), ak_tensor_of(xd, 4, AK_F32)),
                    AK_EINVAL, NULL, "ak_accumulate: y");
    ck_assert_msg(strstr(ak_error(b), "not aligned"), "%s", ak_error(b));
    KT_EXPECT_ERROR(b,
                    ak_accumulate(b, ak_tensor_of(xd + 4, 4, AK_F32), ak_tensor_of(xd, 4, AK_F32)),
                    AK_EINVAL, "ak_accumulate: y (fp32 at", "overlap");
    KT_EXPECT_ERROR(b, ak_accumulate(b, ak_tensor_of(xd, 4, AK_F16), ak_tensor_of(xd, 4, AK_F32)),
                    AK_EINVAL, "ak_accumulate: y (fp16 at", "and x (fp32 at");
    ck_assert_int_eq(ak_accumulate(b, x.t, x.t), AK_OK); /* y = 2y */
    ck_assert_int_eq(ak_accumulate(b, ak_tensor_none(), ak_tensor_none()), AK_OK);
    ck_assert_str_eq(ak_error(b), "");

    /* ak_sum_squares */
    ak_tensor xs[5] = {x.t, y.t, ak_tensor_none(), ak_tensor_of(NULL, 10, AK_BF16), x.t};
    ck_assert_int_eq(ak_sum_squares(NULL, xs, 2, sumsq), AK_EINVAL);
    KT_EXPECT_ERROR(b, ak_sum_squares(b, NULL, 3, sumsq), AK_EINVAL, NULL,
                    "ak_sum_squares: xs is NULL with 3 tensors");
    KT_EXPECT_ERROR(b, ak_sum_squares(b, xs, 2, NULL), AK_EINVAL, NULL,
                    "ak_sum_squares: sumsq is NULL");
    KT_EXPECT_ERROR(b, ak_sum_squares(b, xs, 2, (double *)(void *)((char *)sumsq + 4)), AK_EINVAL,
                    NULL, "ak_sum_squares: sumsq");
    ck_assert_msg(strstr(ak_error(b), "not aligned to 8 bytes"), "%s", ak_error(b));
    KT_EXPECT_ERROR(b, ak_sum_squares(b, xs, 5, sumsq), AK_EINVAL, NULL,
                    "ak_sum_squares: xs[3] is NULL with 10 elements");
    xs[3] = ak_tensor_of(xd, 2, (ak_dtype)-3);
    KT_EXPECT_ERROR(b, ak_sum_squares(b, xs, 5, sumsq), AK_EINVAL, NULL,
                    "ak_sum_squares: xs[3] has an invalid dtype (-3)");
    KT_EXPECT_ERROR(b, ak_sum_squares(b, xs, 2, (double *)(void *)(xd + 8)), AK_EINVAL,
                    "ak_sum_squares: sumsq (", "overlaps xs[0]");

    /* ak_clip_by_norm */
    static const float bad_norms[4] = {0.0f, -1.0f, INFINITY, NAN};
    for (int k = 0; k < 4; k++)
        KT_EXPECT_ERROR(b, ak_clip_by_norm(b, xs, 2, sumsq, bad_norms[k], coef), AK_EINVAL,
                        "ak_clip_by_norm: max_norm (", "must be finite and > 0");
    KT_EXPECT_ERROR(b, ak_clip_by_norm(b, xs, 2, sumsq, -0.0f, coef), AK_EINVAL, NULL,
                    "ak_clip_by_norm: max_norm (-0) must be finite and > 0");
    ck_assert_int_eq(ak_clip_by_norm(NULL, xs, 2, sumsq, 1.0f, coef), AK_EINVAL);
    KT_EXPECT_ERROR(b, ak_clip_by_norm(b, NULL, 1, sumsq, 1.0f, coef), AK_EINVAL, NULL,
                    "ak_clip_by_norm: xs is NULL with 1 tensors");
    KT_EXPECT_ERROR(b, ak_clip_by_norm(b, xs, 2, NULL, 1.0f, coef), AK_EINVAL, NULL,
                    "ak_clip_by_norm: sumsq is NULL");
    KT_EXPECT_ERROR(b, ak_clip_by_norm(b, xs, 2, sumsq, 1.0f, (float *)(void *)((char *)coef + 2)),
                    AK_EINVAL, NULL, "ak_clip_by_norm: coef_out");
    KT_EXPECT_ERROR(b, ak_clip_by_norm(b, xs, 2, sumsq, 1.0f, (float *)(void *)((char *)sumsq + 4)),
                    AK_EINVAL, "ak_clip_by_norm: coef_out (", "overlaps sumsq");
    KT_EXPECT_ERROR(b, ak_clip_by_norm(b, xs, 5, sumsq, 1.0f, coef), AK_EINVAL, NULL,
                    "ak_clip_by_norm: xs[3] has an invalid dtype (-3)");
    KT_EXPECT_ERROR(b, ak_clip_by_norm(b, xs, 2, (double *)(void *)(y.t.data), 1.0f, coef),
                    AK_EINVAL, "ak_clip_by_norm: sumsq (", "overlaps xs[1]");
    KT_EXPECT_ERROR(b, ak_clip_by_norm(b, xs, 2, sumsq, 1.0f, (float *)(void *)(xd + 36)),
                    AK_EINVAL, "ak_clip_by_norm: coef_out (", "overlaps xs[0]");
    /* nothing to do */
    ck_assert_int_eq(ak_sum_squares(b, NULL, 0, sumsq), AK_OK);
    ck_assert_int_eq(ak_clip_by_norm(b, NULL, 0, sumsq, 1.0f, NULL), AK_OK);
    ck_assert_str_eq(ak_error(b), "");

    ck_assert(kt_buf_guards_ok(&x) && kt_buf_guards_ok(&y));
    kt_buf_free(&x);
    kt_buf_free(&y);
    kt_dev_free(b, sumsq);
    kt_dev_free(b, coef);
    ak_close(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_grad");
    TCase *tc = tcase_create("grad");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, accumulate_matches_emulator, 0, 9);
    tcase_add_test(tc, accumulate_onto_itself);
    tcase_add_test(tc, accumulate_special_cases);
    tcase_add_test(tc, sum_squares_matches_reference);
    tcase_add_test(tc, sum_squares_carries_rounding_errors);
    tcase_add_test(tc, sum_squares_accumulates);
    tcase_add_test(tc, sum_squares_special_values);
    tcase_add_test(tc, clip_matches_formula);
    tcase_add_test(tc, clip_hand_checked);
    tcase_add_test(tc, clip_empty_list);
    tcase_add_test(tc, clip_after_sum_squares);
    tcase_add_test(tc, bad_arguments_named);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
