/* test_softmax_attention: causal multi-head self-attention built from the
 * ops exactly as the attention layer calls them, per sample: S = Q K^T
 * (ak_gemm_batched over the heads, lda = 3C), P = softmax(S) with
 * causal_t = T and scale 1/sqrt(d), O = P V; backward dP = dO V^T, dV =
 * P^T dO, dS = ak_softmax_backward, dQ = dS K, dK = dS^T Q.  A tiny case
 * (B = 2, H = 2, T = 4, d = 3, fp32) on the cpu backend against attention
 * in double written here, and its gradient against central differences
 * of that double attention. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "kt.h"

enum { B = 2, H = 2, T = 4, D = 3, C = H * D, NQKV = B * T * 3 * C, NO = B * T * C };

/* O (B, T, C) of qkv (B, T, 3C) in double: per head softmax(Q K^T / sqrt d
 * + causal mask) V. */
static void attention_ref(const double *qkv, double *o)
{
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < T; i++) {
                const double *q = qkv + (b * T + i) * 3 * C + h * D;
                double s[T], m = -INFINITY, sum = 0.0;
                for (int j = 0; j <= i; j++) {
                    const double *k = qkv + (b * T + j) * 3 * C + C + h * D;
                    s[j] = 0.0;
                    for (int l = 0; l < D; l++)
                        s[j] += q[l] * k[l];
                    s[j] /= sqrt((double)D);
                    m = fmax(m, s[j]);
                }
                for (int j = 0; j <= i; j++)
                    sum += exp(s[j] - m);
                for (int l = 0; l < D; l++) {
                    double acc = 0.0;
                    for (int j = 0; j <= i; j++)
                        acc += exp(s[j] - m) / sum * qkv[(b * T + j) * 3 * C + 2 * C + h * D + l];
                    o[(b * T + i) * C + h * D + l] = acc;
                }
            }
}

static double loss_ref(const double *qkv, const double *w)
{
    double o[NO], l = 0.0;
    attention_ref(qkv, o);
    for (int i = 0; i < NO; i++)
        l += w[i] * o[i];
    return l;
}

static ak_tensor at(const kt_buf *t, size_t offset)
{
    return ak_tensor_of((float *)t->t.data + offset, t->t.n - offset, AK_F32);
}

/* One batched GEMM over the H heads of sample-local matrices. */
static void gemm_heads(ak_backend *b, bool ta, bool tb, size_t m, size_t n, size_t k, ak_tensor a,
                       size_t lda, size_t sa, ak_tensor bm, size_t ldb, size_t sb, ak_tensor c,
                       size_t ldc, size_t sc)
{
    ak_gemm_args g;
    memset(&g, 0, sizeof g);
    g.trans_a = ta;
    g.trans_b = tb;
    g.m = m;
    g.n = n;
    g.k = k;
    g.alpha = 1.0f;
    g.a = a;
    g.lda = lda;
    g.b = bm;
    g.ldb = ldb;
    g.c = c;
    g.ldc = ldc;
    g.compute = AK_COMPUTE_32F;
    ck_assert_msg(ak_gemm_batched(b, &g, H, sa, sb, sc) == AK_OK, "%s", ak_error(b));
}

START_TEST(attention_forward_and_backward_against_double_and_finite_differences)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 210);
    float qkv[NQKV], w[NO], o[NO], dqkv[NQKV];
    double qd[NQKV], wd[NO], od[NO];
    for (int i = 0; i < NQKV; i++)
        qd[i] = qkv[i] = (float)(2.0 * ts_uniform(&r) - 1.0);
    for (int i = 0; i < NO; i++)
        wd[i] = w[i] = (float)(2.0 * ts_uniform(&r) - 1.0);
    kt_buf tq = kt_buf_alloc(b, NQKV, AK_F32), tdq = kt_buf_alloc(b, NQKV, AK_F32),
           ts = kt_buf_alloc(b, B * H * T * T, AK_F32), tp = kt_buf_alloc(b, B * H * T * T, AK_F32),
           tdp = kt_buf_alloc(b, B * H * T * T, AK_F32),
           tds = kt_buf_alloc(b, B * H * T * T, AK_F32), to = kt_buf_alloc(b, NO, AK_F32),
           tdo = kt_buf_alloc(b, NO, AK_F32);
    kt_buf_upload(&tq, qkv);
    kt_buf_upload(&tdo, w);
    ak_softmax_args sa;
    memset(&sa, 0, sizeof sa);
    sa.rows = B * H * T;
    sa.cols = T;
    sa.causal_t = T;
    sa.scale = (float)(1.0 / sqrt((double)D));
    sa.acc = AK_F32;
    const size_t TT = T * T, ROW = 3 * C;
    for (size_t s = 0; s < B; s++) { /* S = Q K^T */
        const size_t x = s * T * ROW, hs = s * H * TT;
        gemm_heads(b, false, true, T, T, D, at(&tq, x), ROW, D, at(&tq, x + C), ROW, D, at(&ts, hs),
                   T, TT);
    }
    ck_assert_int_eq(ak_softmax_forward(b, &sa, tp.t, ts.t), AK_OK);
    for (size_t s = 0; s < B; s++) { /* O = P V */
        const size_t x = s * T * ROW, hs = s * H * TT;
        gemm_heads(b, false, false, T, D, T, at(&tp, hs), T, TT, at(&tq, x + 2 * C), ROW, D,
                   at(&to, s * T * C), C, D);
    }
    kt_buf_download(&to, o);
    attention_ref(qd, od);
    for (int i = 0; i < NO; i++)
        ck_assert_msg(fabs(o[i] - od[i]) <= 1e-6 * (1.0 + fabs(od[i])), "O[%d]: %.9g vs %.9g", i,
                      (double)o[i], od[i]);
    ak_zero(b, tdq.t.data, NQKV * sizeof(float));
    for (size_t s = 0; s < B; s++) {
        const size_t x = s * T * ROW, hs = s * H * TT, os = s * T * C;
        /* dP = dO V^T; dV = P^T dO */
        gemm_heads(b, false, true, T, T, D, at(&tdo, os), C, D, at(&tq, x + 2 * C), ROW, D,
                   at(&tdp, hs), T, TT);
        gemm_heads(b, true, false, T, D, T, at(&tp, hs), T, TT, at(&tdo, os), C, D,
                   at(&tdq, x + 2 * C), ROW, D);
    }
    ck_assert_int_eq(ak_softmax_backward(b, &sa, tds.t, tdp.t, tp.t), AK_OK);
    for (size_t s = 0; s < B; s++) {
        const size_t x = s * T * ROW, hs = s * H * TT;
        /* dQ = dS K; dK = dS^T Q */
        gemm_heads(b, false, false, T, D, T, at(&tds, hs), T, TT, at(&tq, x + C), ROW, D,
                   at(&tdq, x), ROW, D);
        gemm_heads(b, true, false, T, D, T, at(&tds, hs), T, TT, at(&tq, x), ROW, D,
                   at(&tdq, x + C), ROW, D);
    }
    kt_buf_download(&tdq, dqkv);
    const double h = 1e-6;
    for (int i = 0; i < NQKV; i++) {
        double xp[NQKV];
        memcpy(xp, qd, sizeof xp);
        xp[i] = qd[i] + h;
        const double lp = loss_ref(xp, wd);
        xp[i] = qd[i] - h;
        const double fd = (lp - loss_ref(xp, wd)) / (2.0 * h);
        ck_assert_msg(fabs(dqkv[i] - fd) <= 2e-5 * (1.0 + fabs(fd)), "dqkv[%d]: %.9g vs fd %.9g", i,
                      (double)dqkv[i], fd);
    }
    /* the last query of each block attends to all keys: its gradients are nonzero */
    ck_assert(fabs(dqkv[(T - 1) * ROW]) > 0.0f);
    kt_buf *all[8] = {&tq, &tdq, &ts, &tp, &tdp, &tds, &to, &tdo};
    for (int i = 0; i < 8; i++) {
        ck_assert(kt_buf_guards_ok(all[i]));
        kt_buf_free(all[i]);
    }
    ak_close(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_softmax_attention");
    TCase *tc = tcase_create("attention");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, attention_forward_and_backward_against_double_and_finite_differences);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
