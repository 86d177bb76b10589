/* test_gemm_batched: ak_gemm_batched on the cpu backend: each matrix bit
 * for bit what ak_gemm gives for it (pairings, transposes, a broadcast A,
 * heads side by side in one row band, C's gaps untouched), and its bad
 * arguments named. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "kt.h"

static ak_gemm_args gargs(const kt_pairing *p, bool ta, bool tb, size_t m, size_t n, size_t k)
{
    ak_gemm_args g;
    memset(&g, 0, sizeof g);
    g.trans_a = ta;
    g.trans_b = tb;
    g.m = m;
    g.n = n;
    g.k = k;
    g.alpha = 1.5f;
    g.beta = 0.0f;
    g.lda = ta ? m : k;
    g.ldb = tb ? k : n;
    g.ldc = n;
    g.compute = p->k;
    return g;
}

/* count = 3 matrices; A stride sa (0: one A for all), B packed, C either
 * packed with a gap of 5 or side by side (ldc = 3 n + 2, stride n). */
START_TEST(each_matrix_is_ak_gemm)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 200);
    const size_t count = 3, m = 5, n = 4, k = 6;
    for (int p = 0; p < KT_NPAIRINGS; p++)
        for (int tr = 0; tr < 4; tr++)
            for (int layout = 0; layout < 2; layout++) {
                const kt_pairing *pr = &kt_pairings[p];
                ak_gemm_args g = gargs(pr, tr & 1, tr & 2, m, n, k);
                const size_t sa = layout ? 0 : m * k, sb = k * n;
                const size_t ldc = layout ? count * n + 2 : n, sc = layout ? n : m * n + 5;
                const size_t na = (count - 1) * sa + m * k, nb = count * sb;
                const size_t nc = (count - 1) * sc + (m - 1) * ldc + n;
                uint32_t *a = kt_bits_alloc(na), *bm = kt_bits_alloc(nb), *c = kt_bits_alloc(nc),
                         *got = kt_bits_alloc(nc), *want = kt_bits_alloc(nc);
                kt_fill_values(&r, pr->in, a, na, 2.0);
                kt_fill_values(&r, pr->in, bm, nb, 2.0);
                for (size_t i = 0; i < nc; i++)
                    c[i] = kt_marker_nan(pr->out);
                kt_buf ta = kt_buf_alloc(b, na, pr->in), tb = kt_buf_alloc(b, nb, pr->in),
                       tc = kt_buf_alloc(b, nc, pr->out), t1 = kt_buf_alloc(b, nc, pr->out);
                kt_buf_put(&ta, a);
                kt_buf_put(&tb, bm);
                kt_buf_put(&tc, c);
                kt_buf_put(&t1, c);
                g.a = ta.t;
                g.b = tb.t;
                g.c = tc.t;
                g.ldc = ldc;
                ck_assert_msg(ak_gemm_batched(b, &g, count, sa, sb, sc) == AK_OK, "%s",
                              ak_error(b));
                const size_t ei = ak_dtype_size(pr->in), eo = ak_dtype_size(pr->out);
                for (size_t i = 0; i < count; i++) {
                    ak_gemm_args one = g;
                    one.a = ak_tensor_of((char *)ta.t.data + i * sa * ei, na - i * sa, pr->in);
                    one.b = ak_tensor_of((char *)tb.t.data + i * sb * ei, nb - i * sb, pr->in);
                    one.c = ak_tensor_of((char *)t1.t.data + i * sc * eo, nc - i * sc, pr->out);
                    ck_assert_int_eq(ak_gemm(b, &one), AK_OK);
                }
                kt_buf_get(&tc, got);
                kt_buf_get(&t1, want);
                ck_assert_msg(kt_bits_mismatches("gemm_batched", pr->out, got, want, nc) == 0,
                              "pairing %d transposes %d layout %d", p, tr, layout);
                /* the gaps keep their marker */
                ck_assert_uint_eq(got[layout ? 3 * n : m * n], kt_marker_nan(pr->out));
                ck_assert(kt_buf_guards_ok(&ta) && kt_buf_guards_ok(&tb) && kt_buf_guards_ok(&tc) &&
                          kt_buf_guards_ok(&t1));
                kt_buf_free(&ta);
                kt_buf_free(&tb);
                kt_buf_free(&tc);
                kt_buf_free(&t1);
                free(a);
                free(bm);
                free(c);
                free(got);
                free(want);
            }
    ak_close(b);
}
END_TEST

START_TEST(bad_arguments_named)
{
    ak_backend *b = kt_open_cpu();
    static const char call[] = "ak_gemm_batched: ";
    kt_buf a = kt_buf_alloc(b, 24, AK_F32), bb = kt_buf_alloc(b, 24, AK_F32),
           c = kt_buf_alloc(b, 24, AK_F32);
    ak_gemm_args g = gargs(&kt_pairings[0], false, false, 2, 2, 2);
    g.a = a.t;
    g.b = bb.t;
    g.c = c.t;
    KT_EXPECT_ERROR(b, ak_gemm_batched(b, NULL, 2, 4, 4, 4), AK_EINVAL, call, "g is NULL");
    g.lda = 1;
    KT_EXPECT_ERROR(b, ak_gemm_batched(b, &g, 2, 4, 4, 4), AK_EINVAL, call,
                    "lda = 1 is less than the 2 columns of A");
    g.lda = 2;
    KT_EXPECT_ERROR(b, ak_gemm_batched(b, &g, 7, 4, 4, 4), AK_EINVAL, call,
                    "A has 24 elements, 7 matrices 4 apart (2 x 2, ld 2) need 28");
    KT_EXPECT_ERROR(b, ak_gemm_batched(b, &g, 3, 4, 12, 4), AK_EINVAL, call,
                    "B has 24 elements, 3 matrices 12 apart");
    KT_EXPECT_ERROR(b, ak_gemm_batched(b, &g, 2, 4, 4, SIZE_MAX), AK_EINVAL, call,
                    "C: the batch's extent overflows a size_t");
    KT_EXPECT_ERROR(b, ak_gemm_batched(b, &g, 2, 4, 4, 3), AK_EINVAL, call,
                    "the C matrices overlap");
    KT_EXPECT_ERROR(b, ak_gemm_batched(b, &g, 2, 4, 4, 0), AK_EINVAL, call,
                    "the C matrices overlap");
    g.ldc = 5; /* 3 side by side need (3 - 1) 2 + 2 = 6 <= ldc */
    KT_EXPECT_ERROR(b, ak_gemm_batched(b, &g, 3, 4, 4, 2), AK_EINVAL, call,
                    "the C matrices overlap");
    g.ldc = 6;
    ck_assert_int_eq(ak_gemm_batched(b, &g, 3, 4, 4, 2), AK_OK); /* 3 heads side by side */
    g.a.dtype = g.b.dtype = AK_BF16;
    g.c.dtype = AK_F16;
    KT_EXPECT_ERROR(b, ak_gemm_batched(b, &g, 2, 4, 4, 4), AK_EUNSUPPORTED, call, "32F");
    g = gargs(&kt_pairings[0], false, false, 2, 2, 2);
    g.a = a.t;
    g.b = bb.t;
    g.c = c.t;
    ck_assert_int_eq(ak_gemm_batched(b, &g, 0, 4, 4, 4), AK_OK);
    ck_assert(kt_buf_guards_ok(&a) && kt_buf_guards_ok(&bb) && kt_buf_guards_ok(&c));
    kt_buf_free(&a);
    kt_buf_free(&bb);
    kt_buf_free(&c);
    ak_close(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_gemm_batched");
    TCase *tc = tcase_create("gemm_batched");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, each_matrix_is_ak_gemm);
    tcase_add_test(tc, bad_arguments_named);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
