/* test_gemm: ak_gemm on the cpu backend against references written here.
 *
 *   - 32F-accumulating pairs: a double-precision reference on the inputs
 *     as the compute type multiplies them (fp16/bf16 rounding by the
 *     emulator's scalar functions, tf32 by kt_tf32_round (kt.c), checked by
 *     hand), within the standard bound |err| <= gamma_(k+3) S with
 *     S = |alpha| sum |a b| + |beta c| and gamma_n = n u / (1 - n u),
 *     u = 2^-24, plus one unit in the last place of a 16-bit C;
 *   - 16F: bit for bit against a sequential sum written with the
 *     emulator's fp16 fused multiply-add (never ak_round_sum);
 *   - BLAS semantics (beta == 0 overwrites a NaN C, alpha == 0 and k == 0
 *     give beta C without reading A and B), NaN/inf propagation, leading
 *     dimensions wider than the matrices (the gap must stay untouched),
 *     guard regions and bad arguments.
 */
#include <check.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "ref_gemm.h"

/* The 16F reference: the emulator's fp16 fused multiply-add summing in
 * order from -0, then alpha acc + beta c in fp16 (alpha, beta rounded to
 * fp16 first; alpha == 0 means C = beta C, beta == 0 means C is not read). */
static uint32_t ref_16f(const ref_mat *a, bool ta, const ref_mat *bm, bool tb, size_t i, size_t j,
                        size_t k, float alpha, float beta, uint32_t c)
{
    fpe_env env = fpe_env_default();
    const uint16_t al = fpe_f32_to_f16(&env, kt_f32_bits(alpha)),
                   be = fpe_f32_to_f16(&env, kt_f32_bits(beta));
    const bool beta_zero = (be & 0x7FFF) == 0;
    if ((al & 0x7FFF) == 0 || k == 0) return beta_zero ? 0 : fpe_f16_mul(&env, be, (uint16_t)c);
    uint16_t acc = 0x8000;
    for (size_t l = 0; l < k; l++)
        acc = fpe_f16_mulAdd(&env, (uint16_t)ref_mat_op(a, ta, i, l),
                             (uint16_t)ref_mat_op(bm, tb, l, j), acc);
    uint16_t t = fpe_f16_mul(&env, al, acc);
    if (!beta_zero) t = fpe_f16_add(&env, t, fpe_f16_mul(&env, be, (uint16_t)c));
    return t;
}

/* Whether two elements of dt are equal, any NaN equal to any NaN. */
static bool same_or_both_nan(ak_dtype dt, uint32_t x, uint32_t y)
{
    return x == y || (isnan(kt_value(dt, x)) && isnan(kt_value(dt, y)));
}

/* A random value of dt, |v| < 4, with a full significand before rounding. */
static uint32_t random_elem(ts_rng *r, ak_dtype dt)
{
    const double v = (2 * ts_uniform(r) - 1) * ldexp(1.0, (int)ts_below(r, 5) - 2);
    return kt_from_f64(dt, v);
}

/* Runs one case on the cpu backend and checks every element; returns the
 * number of failures (the first few printed). */
static size_t run_case(ak_backend *b, const ref_gcase *c)
{
    char what[256];
    ref_gemm_describe(c, what, sizeof what);
    ts_rng r;
    ts_rng_init(&r, c->seed);
    ref_mat a, bm, cm;
    ref_gemm_mats(c, &a, &bm, &cm);
    for (size_t i = 0; i < a.n; i++)
        a.bits[i] = random_elem(&r, a.dt);
    for (size_t i = 0; i < bm.n; i++)
        bm.bits[i] = random_elem(&r, bm.dt);
    for (size_t i = 0; i < cm.n; i++)
        cm.bits[i] = c->nan_c ? kt_marker_nan(cm.dt) : random_elem(&r, cm.dt);
    /* the gaps between rows of C must not be written */
    for (size_t i = 0; i < cm.n; i++)
        if (ref_mat_in_gap(&cm, i)) cm.bits[i] = kt_marker_nan(cm.dt);
    ref_gemm_plant_specials(c, &a, &bm);
    kt_buf da = kt_buf_alloc(b, a.n, a.dt), db = kt_buf_alloc(b, bm.n, bm.dt),
           dc = kt_buf_alloc(b, cm.n, cm.dt);
    kt_buf_put(&da, a.bits);
    kt_buf_put(&db, bm.bits);
    kt_buf_put(&dc, cm.bits);
    ak_gemm_args g = {c->ta, c->tb, c->m,  c->n, c->k,  c->alpha, c->beta, da.t,
                      a.ld,  db.t,  bm.ld, dc.t, cm.ld, c->p.k,   NULL};
    const int rc = ak_gemm(b, &g);
    ck_assert_msg(rc == AK_OK, "%s: %s", what, ak_error(b));
    uint32_t *got = malloc((cm.n ? cm.n : 1) * sizeof *got);
    kt_buf_get(&dc, got);
    size_t bad = 0;
    ck_assert_msg(kt_buf_guards_ok(&da) && kt_buf_guards_ok(&db) && kt_buf_guards_ok(&dc), "%s",
                  what);
    for (size_t i = 0; i < cm.n; i++) {
        if (!ref_mat_in_gap(&cm, i) || got[i] == cm.bits[i]) continue;
        if (bad++ < 4) printf("%s: gap element %zu written (0x%x)\n", what, i, got[i]);
    }
    const double u = 0x1p-24;
    const bool alpha_zero =
        c->p.k == AK_COMPUTE_16F ? fabs((double)c->alpha) < 0x1p-25 : c->alpha == 0;
    for (size_t i = 0; i < c->m; i++)
        for (size_t j = 0; j < c->n; j++) {
            const size_t at = i * cm.ld + j;
            const uint32_t old = cm.bits[at], out = got[at];
            if (c->p.k == AK_COMPUTE_16F) {
                const uint32_t want =
                    ref_16f(&a, c->ta, &bm, c->tb, i, j, c->k, c->alpha, c->beta, old);
                if (same_or_both_nan(AK_F16, out, want)) continue;
                if (bad++ < 4)
                    printf("%s: C[%zu][%zu] = 0x%04x, expected 0x%04x\n", what, i, j, out, want);
                continue;
            }
            double sum = 0, abs_sum = 0;
            for (size_t l = 0; l < c->k && !alpha_zero; l++) {
                const double x =
                    kt_compute_input(c->p.k, kt_value(a.dt, ref_mat_op(&a, c->ta, i, l)));
                const double y =
                    kt_compute_input(c->p.k, kt_value(bm.dt, ref_mat_op(&bm, c->tb, l, j)));
                sum += x * y;
                abs_sum += fabs(x * y);
            }
            const double cv = c->beta == 0 ? 0 : kt_value(cm.dt, old);
            const double ref = (double)c->alpha * sum + (double)c->beta * cv;
            const double bound =
                kt_gamma((double)c->k + 3, u) *
                    (fabs((double)c->alpha) * abs_sum + fabs((double)c->beta * cv)) +
                (cm.dt == AK_F32 ? 0x1p-149 * (double)(c->k + 3) : kt_ulp(cm.dt, ref));
            const double v = kt_value(cm.dt, out);
            if (!kt_agree_within(v, ref, bound) && bad++ < 4)
                printf("%s: C[%zu][%zu] = %.9g (0x%x), reference %.17g, bound %.3g\n", what, i, j,
                       v, out, ref, bound);
        }
    kt_buf_free(&da);
    kt_buf_free(&db);
    kt_buf_free(&dc);
    free(got);
    ref_mat_free(&a);
    ref_mat_free(&bm);
    ref_mat_free(&cm);
    return bad;
}

/* ---- the supported pairs (kt_pairings) ---------------------------------------------- */
/* Each shape draws its own operands. */
static uint64_t shape_seed(size_t m, size_t n, size_t k) { return m * 131 + n * 17 + k; }

static const size_t shapes[][3] = {{1, 1, 1},    {7, 5, 13}, {17, 33, 65},
                                   {3, 64, 200}, {64, 3, 2}, {5, 9, 1}};
static const float scalars[][2] = {{1, 0}, {0.5f, -1.25f}, {-2, 0.75f}, {0.1f, 1}};

/* Every pair, shape, transpose combination, alpha/beta and padding. */
static size_t sweep(kt_pairing p)
{
    ak_backend *b = kt_open_cpu();
    size_t bad = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int t = 0; t < 4; t++)
            for (size_t ab = 0; ab < sizeof scalars / sizeof scalars[0]; ab++) {
                const size_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
                ref_gcase c =
                    ref_gemm_case(p, m, n, k, t, shape_seed(m, n, k) + (uint64_t)t * 1000 + ab);
                c.alpha = scalars[ab][0];
                c.beta = scalars[ab][1];
                c.pad_a = (s + ab) % 3 == 0 ? 0 : 3;
                c.pad_b = (s + t) % 2 ? 1 : 0;
                c.pad_c = ab % 2 ? 5 : 0;
                bad += run_case(b, &c);
            }
    ak_close(b);
    return bad;
}

START_TEST(every_pairing_shape_and_transpose) { ck_assert_uint_eq(sweep(kt_pairings[_i]), 0); }
END_TEST

/* _i = 0: beta == 0 overwrites a NaN C (ref_gemm_nan_c_case); _i = 1: NaN
 * and infinities in A and B propagate (ref_gemm_specials_case). */
START_TEST(nan_c_and_specials)
{
    ak_backend *b = kt_open_cpu();
    size_t bad = 0;
    for (size_t p = 0; p < KT_NPAIRINGS; p++)
        for (int t = 0; t < 4; t++) {
            const ref_gcase c =
                _i == 0 ? ref_gemm_nan_c_case(kt_pairings[p], t, shape_seed(6, 7, 9))
                        : ref_gemm_specials_case(kt_pairings[p], t, shape_seed(5, 4, 6));
            bad += run_case(b, &c);
        }
    ck_assert_uint_eq(bad, 0);
    ak_close(b);
}
END_TEST

/* alpha == 0 and k == 0: C = beta C exactly, A and B never read (NaNs). */
START_TEST(alpha_zero_and_k_zero_scale_c)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed());
    for (size_t p = 0; p < KT_NPAIRINGS; p++)
        for (int variant = 0; variant < 4; variant++) {
            const kt_pairing pr = kt_pairings[p];
            const bool k_zero = variant & 1;
            const float alpha = k_zero ? 3.0f : (pr.k == AK_COMPUTE_16F ? 1e-9f : 0.0f);
            const float beta = variant & 2 ? 0.0f : -0.3f;
            const size_t m = 3, n = 4, k = k_zero ? 0 : 2, ldc = 6, cn = (m - 1) * ldc + n;
            uint32_t abits[8], cbits[16], want[16], got[16];
            for (int i = 0; i < 8; i++)
                abits[i] = kt_marker_nan(pr.in);
            for (size_t i = 0; i < cn; i++)
                cbits[i] = random_elem(&r, pr.out);
            cbits[0] = kt_from_f64(pr.out, INFINITY);
            cbits[1] = kt_marker_nan(pr.out);
            fpe_env env = fpe_env_default();
            for (size_t i = 0; i < cn; i++) {
                if (i % ldc >= n)
                    want[i] = cbits[i];
                else if (beta == 0)
                    want[i] = 0;
                else if (pr.k == AK_COMPUTE_16F)
                    want[i] = fpe_f16_mul(&env, fpe_f32_to_f16(&env, kt_f32_bits(beta)),
                                          (uint16_t)cbits[i]);
                else {
                    /* fp32 product, rounded to C */
                    const uint32_t p32 = fpe_f32_mul(
                        &env, kt_f32_bits(beta),
                        pr.out == AK_F32 ? cbits[i]
                                         : kt_from_f64(AK_F32, kt_value(pr.out, cbits[i])));
                    want[i] = pr.out == AK_F32 ? p32 : kt_from_f64(pr.out, kt_value(AK_F32, p32));
                }
            }
            kt_buf da = kt_buf_alloc(b, 8, pr.in), dc = kt_buf_alloc(b, cn, pr.out);
            kt_buf_put(&da, abits);
            kt_buf_put(&dc, cbits);
            ak_gemm_args g = {false, false, m, n,    k,   alpha, beta, da.t,
                              k,     da.t,  n, dc.t, ldc, pr.k,  NULL};
            ck_assert_msg(ak_gemm(b, &g) == AK_OK, "%s", ak_error(b));
            kt_buf_get(&dc, got);
            for (size_t i = 0; i < cn; i++)
                ck_assert_msg(same_or_both_nan(pr.out, got[i], want[i]),
                              "%s %s variant %d: C[%zu] = 0x%x, expected 0x%x",
                              ak_dtype_name(pr.in), ak_compute_name(pr.k), variant, i, got[i],
                              want[i]);
            ck_assert(kt_buf_guards_ok(&da) && kt_buf_guards_ok(&dc));
            kt_buf_free(&da);
            kt_buf_free(&dc);
        }
    ak_close(b);
}
END_TEST

/* The fast types really round their inputs: 1 + 2^-20 times 1. */
START_TEST(fast_types_round_inputs)
{
    ak_backend *b = kt_open_cpu();
    kt_buf a = kt_buf_alloc(b, 1, AK_F32), one = kt_buf_alloc(b, 1, AK_F32),
           c = kt_buf_alloc(b, 1, AK_F32);
    const float x = 1.0f + 0x1p-20f, y = 1.0f;
    kt_buf_upload(&a, &x);
    kt_buf_upload(&one, &y);
    const ak_compute ks[] = {AK_COMPUTE_32F, AK_COMPUTE_32F_FAST_16F, AK_COMPUTE_32F_FAST_16BF,
                             AK_COMPUTE_32F_FAST_TF32};
    const float want[] = {1.0f + 0x1p-20f, 1.0f, 1.0f, 1.0f};
    for (int i = 0; i < 4; i++) {
        ak_gemm_args g = {false, false, 1, 1, 1, 1.0f, 0.0f, a.t, 1, one.t, 1, c.t, 1, ks[i], NULL};
        ck_assert_int_eq(ak_gemm(b, &g), AK_OK);
        float got;
        kt_buf_download(&c, &got);
        ck_assert_msg(got == want[i], "%s: %a", ak_compute_name(ks[i]), (double)got);
    }
    /* fp16 overflows where bf16 and tf32 do not */
    const float big = 70000.0f;
    kt_buf_upload(&a, &big);
    for (int i = 1; i < 4; i++) {
        ak_gemm_args g = {false, false, 1, 1, 1, 1.0f, 0.0f, a.t, 1, one.t, 1, c.t, 1, ks[i], NULL};
        ck_assert_int_eq(ak_gemm(b, &g), AK_OK);
        float got;
        kt_buf_download(&c, &got);
        ck_assert_msg(i == 1 ? isinf(got) : got == (float)kt_compute_input(ks[i], 70000.0),
                      "%s: %a", ak_compute_name(ks[i]), (double)got);
    }
    kt_buf_free(&a);
    kt_buf_free(&one);
    kt_buf_free(&c);
    ak_close(b);
}
END_TEST

/* tf32 rounding by hand: input bits -> the tf32 value's fp32 bits. */
START_TEST(tf32_hand_cases)
{
    static const uint32_t cases[][2] = {
        {0x3F800800u, 0x3F800000u}, /* 1 + 2^-12: below half an ulp (2^-11) */
        {0x3F801000u, 0x3F800000u}, /* 1 + 2^-11: a tie, to even (down) */
        {0x3F803000u, 0x3F804000u}, /* 1 + 3 2^-11: a tie above the odd 1 + 2^-10: up */
        {0x3F801001u, 0x3F802000u}, /* just above a tie: up */
        {0xBF801001u, 0xBF802000u}, /* negative: symmetric */
        {0x3FFFF000u, 0x40000000u}, /* carry into the exponent: 2 - 2^-11 -> 2 */
        {0x7F7FEFFFu, 0x7F7FE000u}, /* below the tie at the top: the largest tf32 */
        {0x7F7FF000u, 0x7F800000u}, /* the tie above the largest, odd: infinity */
        {0xFF7FFFFFu, 0xFF800000u}, /* -FLT_MAX: -infinity */
        {0x00001000u, 0x00000000u}, /* 2^-137, half the subnormal quantum: a tie, to 0 */
        {0x00003000u, 0x00004000u}, /* 3 2^-137: tie above an odd quantum: up */
        {0x00001001u, 0x00002000u}, /* just above: one quantum 2^-136 */
        {0x807FFFFFu, 0x80800000u}, /* largest subnormal: up to -2^-126 */
        {0x7F800000u, 0x7F800000u}, /* infinities stay */
        {0x00000000u, 0x00000000u},
    };
    ak_backend *b = kt_open_cpu();
    kt_buf a = kt_buf_alloc(b, 1, AK_F32), one = kt_buf_alloc(b, 1, AK_F32),
           c = kt_buf_alloc(b, 1, AK_F32);
    const float y = 1.0f;
    kt_buf_upload(&one, &y);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kt_buf_upload(&a, &cases[i][0]);
        ak_gemm_args g = {false, false, 1,     1, 1,   1.0f, 0.0f,
                          a.t,   1,     one.t, 1, c.t, 1,    AK_COMPUTE_32F_FAST_TF32,
                          NULL};
        ck_assert_int_eq(ak_gemm(b, &g), AK_OK);
        uint32_t got;
        kt_buf_download(&c, &got);
        ck_assert_msg(got == cases[i][1], "tf32(0x%08x) = 0x%08x, expected 0x%08x", cases[i][0],
                      got, cases[i][1]);
        /* the test's own rule, which the random cases rely on */
        const uint32_t mine = kt_from_f64(AK_F32, kt_tf32_round(kt_value(AK_F32, cases[i][0])));
        ck_assert_msg(mine == cases[i][1], "tf32_round(0x%08x) = 0x%08x", cases[i][0], mine);
    }
    /* NaNs stay NaNs, even one whose payload lies in the low bits */
    const uint32_t nans[] = {0x7FC00000u, 0x7F800001u, 0xFFC00001u};
    for (int i = 0; i < 3; i++) {
        kt_buf_upload(&a, &nans[i]);
        ak_gemm_args g = {false, false, 1,     1, 1,   1.0f, 0.0f,
                          a.t,   1,     one.t, 1, c.t, 1,    AK_COMPUTE_32F_FAST_TF32,
                          NULL};
        ck_assert_int_eq(ak_gemm(b, &g), AK_OK);
        float got;
        kt_buf_download(&c, &got);
        ck_assert_msg(got != got, "tf32(0x%08x) is not a NaN", nans[i]);
    }
    kt_buf_free(&a);
    kt_buf_free(&one);
    kt_buf_free(&c);
    ak_close(b);
}
END_TEST

/* 16F with operands that overflow, underflow and cancel in fp16. */
START_TEST(compute_16f_edges)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 16);
    size_t bad = 0;
    const float scal[][2] = {{1, 0}, {0.1f, 0.3f}, {-3, 1}, {1e-9f, 2}, {70000.0f, 0}};
    for (int rep = 0; rep < 40; rep++) {
        const size_t m = 1 + ts_below(&r, 9), n = 1 + ts_below(&r, 9), k = 1 + ts_below(&r, 40);
        ref_gcase c = ref_gemm_case(kt_pairings[5], m, n, k, 0, shape_seed(m, n, k));
        c.ta = ts_below(&r, 2);
        c.tb = ts_below(&r, 2);
        c.pad_a = ts_below(&r, 3);
        c.pad_c = ts_below(&r, 3);
        c.alpha = scal[rep % 5][0];
        c.beta = scal[rep % 5][1];
        c.seed = ts_seed() + (uint64_t)rep;
        bad += run_case(b, &c);
    }
    /* magnitudes near the fp16 limits: the generic cases stay below 4 */
    const int16_t scales[] = {-20, -12, 7, 12};
    for (int s = 0; s < 4; s++) {
        const size_t m = 4, n = 5, k = 30;
        uint32_t a[4 * 30], bb[30 * 5], cc[20], out[20];
        for (size_t i = 0; i < m * k; i++)
            a[i] = kt_from_f64(AK_F16, (2 * ts_uniform(&r) - 1) * ldexp(1, scales[s]));
        for (size_t i = 0; i < k * n; i++)
            bb[i] = kt_from_f64(AK_F16, 2 * ts_uniform(&r) - 1);
        for (size_t i = 0; i < m * n; i++)
            cc[i] = kt_from_f64(AK_F16, ts_uniform(&r));
        kt_buf da = kt_buf_alloc(b, m * k, AK_F16), db = kt_buf_alloc(b, k * n, AK_F16),
               dc = kt_buf_alloc(b, m * n, AK_F16);
        kt_buf_put(&da, a);
        kt_buf_put(&db, bb);
        kt_buf_put(&dc, cc);
        ak_gemm_args g = {false, false, m, n,    k, 1.0f,           1.0f, da.t,
                          k,     db.t,  n, dc.t, n, AK_COMPUTE_16F, NULL};
        ck_assert_int_eq(ak_gemm(b, &g), AK_OK);
        kt_buf_get(&dc, out);
        const ref_mat ga = {AK_F16, m, k, k, m * k, a}, gb = {AK_F16, k, n, n, k * n, bb};
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < n; j++) {
                const uint32_t want =
                    ref_16f(&ga, false, &gb, false, i, j, k, 1.0f, 1.0f, cc[i * n + j]);
                const uint32_t got = out[i * n + j];
                if (!same_or_both_nan(AK_F16, got, want) && bad++ < 4)
                    printf("16F scale 2^%d: C[%zu][%zu] = 0x%04x, expected 0x%04x\n", scales[s], i,
                           j, got, want);
            }
        ck_assert(kt_buf_guards_ok(&da) && kt_buf_guards_ok(&db) && kt_buf_guards_ok(&dc));
        kt_buf_free(&da);
        kt_buf_free(&db);
        kt_buf_free(&dc);
    }
    ck_assert_uint_eq(bad, 0);
    /* the sum starts from the first product alone: -1 x 0 = -0 stays -0 */
    kt_buf da = kt_buf_alloc(b, 1, AK_F16), db = kt_buf_alloc(b, 1, AK_F16),
           dc = kt_buf_alloc(b, 1, AK_F16);
    const uint16_t minus_one = 0xBC00, zero = 0;
    uint16_t got;
    kt_buf_upload(&da, &minus_one);
    kt_buf_upload(&db, &zero);
    ak_gemm_args g = {false, false, 1, 1,    1, 1.0f,           0.0f, da.t,
                      1,     db.t,  1, dc.t, 1, AK_COMPUTE_16F, NULL};
    ck_assert_int_eq(ak_gemm(b, &g), AK_OK);
    kt_buf_download(&dc, &got);
    ck_assert_uint_eq(got, 0x8000);
    kt_buf_free(&da);
    kt_buf_free(&db);
    kt_buf_free(&dc);
    ak_close(b);
}
END_TEST

/* ---- bad arguments ---------------------------------------------------------------- */
/* ok with `change` made must fail with code, the message naming ak_gemm
 * and saying text. */
/* A 16-bit C with alpha 1 and beta 0 (every forward GEMM of training) is
 * the fp32 result of the same product rounded once to C's format: each
 * element against fpe_f32_to_f16/bf16 of an fp32-C run, bit for bit, with
 * values that overflow C's format, fall to its subnormals and NaN/infinite
 * inputs; the gap beyond n in each row of C stays as it was. */
START_TEST(alpha_one_beta_zero_rounds_the_fp32_result)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed());
    const ak_dtype dts[] = {AK_F16, AK_BF16};
    for (int d = 0; d < 2; d++)
        for (int t = 0; t < 4; t++) {
            const ak_dtype dt = dts[d];
            const bool ta = t & 1, tb = t & 2;
            const size_t m = 7, n = 33, k = 19, ldc = n + 3;
            uint32_t abits[7 * 19], bbits[19 * 33], c32[7 * 36], c16[7 * 36];
            for (size_t i = 0; i < m * k; i++) {
                /* magnitudes 2^-14 .. 2^12: products from below fp16's
                 * subnormals to beyond its largest value */
                const double v = (2 * ts_uniform(&r) - 1) * ldexp(1.0, (int)ts_below(&r, 27) - 14);
                abits[i] = kt_from_f64(dt, v);
            }
            for (size_t i = 0; i < k * n; i++)
                bbits[i] = random_elem(&r, dt);
            abits[3] = kt_marker_nan(dt);
            abits[k + 2] = kt_from_f64(dt, -INFINITY);
            for (size_t i = 0; i < m * ldc; i++)
                c16[i] = kt_marker_nan(dt);
            kt_buf da = kt_buf_alloc(b, m * k, dt), db = kt_buf_alloc(b, k * n, dt),
                   dc32 = kt_buf_alloc(b, m * ldc, AK_F32), dc16 = kt_buf_alloc(b, m * ldc, dt);
            kt_buf_put(&da, abits);
            kt_buf_put(&db, bbits);
            kt_buf_put(&dc16, c16);
            ak_gemm_args g = {ta,         tb,   m,          n,      k,   1.0f,           0.0f, da.t,
                              ta ? m : k, db.t, tb ? k : n, dc32.t, ldc, AK_COMPUTE_32F, NULL};
            ck_assert_msg(ak_gemm(b, &g) == AK_OK, "%s", ak_error(b));
            g.c = dc16.t;
            ck_assert_msg(ak_gemm(b, &g) == AK_OK, "%s", ak_error(b));
            kt_buf_get(&dc32, c32);
            kt_buf_get(&dc16, c16);
            size_t bad = 0, nonfinite = 0;
            for (size_t i = 0; i < m * ldc; i++) {
                fpe_env env = fpe_env_default();
                const uint32_t want = i % ldc >= n   ? kt_marker_nan(dt)
                                      : dt == AK_F16 ? fpe_f32_to_f16(&env, c32[i])
                                                     : fpe_f32_to_bf16(&env, c32[i]);
                nonfinite += i % ldc < n && !isfinite(kt_value(dt, want));
                if (c16[i] != want && bad++ < 4)
                    fprintf(stderr, "%s t%d: C[%zu] = 0x%04x, expected 0x%04x\n", ak_dtype_name(dt),
                            t, i, c16[i], want);
            }
            ck_assert_uint_eq(bad, 0);
            ck_assert_uint_gt(nonfinite, 0); /* the NaN and the infinity reached C */
            ck_assert(kt_buf_guards_ok(&dc16));
            kt_buf_free(&da);
            kt_buf_free(&db);
            kt_buf_free(&dc32);
            kt_buf_free(&dc16);
        }
    ak_close(b);
}
END_TEST

#define FAILS(change, code, text)                                                                  \
    do {                                                                                           \
        g = ok;                                                                                    \
        change;                                                                                    \
        KT_EXPECT_ERROR(b, ak_gemm(b, &g), code, "ak_gemm: ", text);                               \
    } while (0)

START_TEST(bad_arguments)
{
    ak_backend *b = kt_open_cpu();
    static float fa[64], fb[64], fc[64];
    static uint16_t ha[64], hb[64], hc[64];
    const ak_gemm_args ok = {false, false,
                             3,     4,
                             5,     1.0f,
                             0.0f,  ak_tensor_of(fa, 15, AK_F32),
                             5,     ak_tensor_of(fb, 20, AK_F32),
                             4,     ak_tensor_of(fc, 12, AK_F32),
                             4,     AK_COMPUTE_32F,
                             NULL};
    ck_assert_int_eq(ak_gemm(b, &ok), AK_OK);
    ck_assert_int_eq(ak_gemm(NULL, &ok), AK_EINVAL);
    ck_assert_int_eq(ak_gemm(b, NULL), AK_EINVAL);
    ck_assert_msg(strstr(ak_error(b), "ak_gemm: g is NULL"), "%s", ak_error(b));
    ak_gemm_args g;
    FAILS(g.compute = (ak_compute)9, AK_EINVAL, "invalid compute type (9)");

    /* unsupported pairs name the compute type and the dtypes */
    const ak_tensor a16 = ak_tensor_of(ha, 15, AK_F16), b16 = ak_tensor_of(hb, 20, AK_F16),
                    c16 = ak_tensor_of(hc, 12, AK_F16), abf = ak_tensor_of(ha, 15, AK_BF16),
                    bbf = ak_tensor_of(hb, 20, AK_BF16), cbf = ak_tensor_of(hc, 12, AK_BF16);
    FAILS((g.a = abf, g.b = bbf, g.c = cbf, g.compute = AK_COMPUTE_16F), AK_EUNSUPPORTED,
          "compute type 16F needs fp16 A, B and C, got bf16/bf16/bf16");
    FAILS(g.compute = AK_COMPUTE_16F, AK_EUNSUPPORTED,
          "compute type 16F needs fp16 A, B and C, got fp32/fp32/fp32");
    FAILS((g.a = a16, g.b = b16, g.c = c16, g.compute = AK_COMPUTE_32F_FAST_TF32), AK_EUNSUPPORTED,
          "compute type 32F_FAST_TF32 needs fp32 A, B and C, got fp16/fp16/fp16");
    FAILS((g.a = a16, g.b = b16, g.c = c16, g.compute = AK_COMPUTE_32F_FAST_16F), AK_EUNSUPPORTED,
          "32F_FAST_16F needs fp32");
    FAILS((g.a = a16, g.b = bbf), AK_EUNSUPPORTED,
          "compute type 32F needs A and B of one dtype, got fp16/bf16/fp32");
    FAILS(g.c = c16, AK_EUNSUPPORTED, "with fp32 A and B needs fp32 C, got fp32/fp32/fp16");
    FAILS((g.a = a16, g.b = b16, g.c = cbf), AK_EUNSUPPORTED,
          "with fp16 A and B needs fp16 or fp32 C, got fp16/fp16/bf16");
    FAILS((g.a = a16, g.b = b16, g.c = ak_tensor_of(fc, 12, (ak_dtype)7)), AK_EINVAL,
          "C has an invalid dtype");

    /* shapes and leading dimensions (A is 5 x 3 when transposed, B 4 x 5) */
    FAILS(g.lda = 4, AK_EINVAL, "lda = 4 is less than the 5 columns of A");
    FAILS(g.trans_a = true, AK_EINVAL, "A has 15 elements, a 5 x 3 matrix with ld 5 needs 23");
    FAILS((g.trans_a = true, g.lda = 2), AK_EINVAL, "lda = 2 is less than the 3 columns of A");
    g = ok;
    g.trans_a = true;
    g.lda = 3;
    ck_assert_int_eq(ak_gemm(b, &g), AK_OK);
    FAILS(g.ldb = 3, AK_EINVAL, "ldb = 3 is less than the 4 columns of B");
    FAILS(g.trans_b = true, AK_EINVAL, "ldb = 4 is less than the 5 columns of B");
    FAILS(g.ldc = 2, AK_EINVAL, "ldc = 2 is less than the 4 columns of C");
    FAILS(g.a.n = 14, AK_EINVAL, "A has 14 elements, a 3 x 5 matrix with ld 5 needs 15");
    FAILS(g.ldc = 6, AK_EINVAL, "C has 12 elements, a 3 x 4 matrix with ld 6 needs 16");
    FAILS(g.b.n = 19, AK_EINVAL, "B has 19 elements");
    FAILS(g.a.data = NULL, AK_EINVAL, "A is NULL");
    FAILS(g.c.data = (char *)fc + 2, AK_EINVAL, "not aligned");
    FAILS(g.m = (size_t)INT_MAX + 1, AK_EINVAL, "m = 2147483648 exceeds INT_MAX");
    FAILS(g.lda = (size_t)INT_MAX + 1, AK_EINVAL, "lda = 2147483648 exceeds INT_MAX");

    /* empty products: nothing to do, nothing touched */
    fc[0] = 42.0f;
    g = ok;
    g.m = 0;
    g.a = ak_tensor_none();
    g.c = ak_tensor_none();
    g.lda = 5;
    ck_assert_int_eq(ak_gemm(b, &g), AK_OK);
    g = ok;
    g.n = 0;
    g.ldb = 0, g.ldc = 0;
    ck_assert_int_eq(ak_gemm(b, &g), AK_OK);
    ck_assert(fc[0] == 42.0f);
    ck_assert_str_eq(ak_error(b), "");
    ak_close(b);
}
END_TEST
#undef FAILS

int main(void)
{
    Suite *s = suite_create("kernels_gemm");
    TCase *tc = tcase_create("gemm");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, every_pairing_shape_and_transpose, 0, KT_NPAIRINGS);
    tcase_add_loop_test(tc, nan_c_and_specials, 0, 2);
    tcase_add_test(tc, alpha_zero_and_k_zero_scale_c);
    tcase_add_test(tc, fast_types_round_inputs);
    tcase_add_test(tc, tf32_hand_cases);
    tcase_add_test(tc, compute_16f_edges);
    tcase_add_test(tc, alpha_one_beta_zero_rounds_the_fp32_result);
    tcase_add_test(tc, bad_arguments);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
