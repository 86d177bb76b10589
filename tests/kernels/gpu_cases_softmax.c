/* gpu_cases_softmax: softmax / log-softmax forward and backward on cuda
 * against cpu, bit for bit (one row per thread, the same operations in
 * index order: kernels/softmax.c), every acc and dtype pairing, masked
 * attention rows, arbitrary bit patterns; and ak_gemm_batched on cuda,
 * bit for bit against cuda's ak_gemm of each matrix. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_ops.h"

static ak_backend *cpu, *gpu;

static void check_softmax(const go_cmp *cmp, ts_rng *r, const ak_softmax_args *a, ak_dtype dy,
                          ak_dtype dx, bool bits)
{
    const size_t n = a->rows * a->cols;
    uint32_t *x = malloc(n * 4 + 4), *g = malloc(n * 4 + 4);
    if (bits) {
        kt_fill_bits(r, dx, x, n);
        kt_fill_bits(r, dy, g, n);
    } else {
        kt_fill_values(r, dx, x, n, 10.0);
        kt_fill_values(r, dy, g, n, 1.0);
    }
    kt_twin tx = kt_twin_alloc(cpu, gpu, n, dx), ty = kt_twin_alloc(cpu, gpu, n, dy),
            tdy = kt_twin_alloc(cpu, gpu, n, dy), tdx = kt_twin_alloc(cpu, gpu, n, dx);
    kt_twin_put(&tx, x);
    kt_twin_put(&tdy, g);
    ck_assert_int_eq(ak_softmax_forward(cpu, a, ty.c.t, tx.c.t), AK_OK);
    ck_assert_int_eq(ak_softmax_forward(gpu, a, ty.g.t, tx.g.t), AK_OK);
    ck_assert_msg(go_compare_twin("softmax y", cmp, &ty, NULL, NULL) == 0,
                  "acc %s y %s x %s %zux%zu log %d t %zu", ak_dtype_name(a->acc), ak_dtype_name(dy),
                  ak_dtype_name(dx), a->rows, a->cols, a->log, a->causal_t);
    /* the backward from the cpu's y on both */
    uint32_t *yb = malloc(n * 4 + 4);
    kt_buf_get(&ty.c, yb);
    kt_twin_put(&ty, yb);
    ck_assert_int_eq(ak_softmax_backward(cpu, a, tdx.c.t, tdy.c.t, ty.c.t), AK_OK);
    ck_assert_int_eq(ak_softmax_backward(gpu, a, tdx.g.t, tdy.g.t, ty.g.t), AK_OK);
    ck_assert_msg(go_compare_twin("softmax dx", cmp, &tdx, NULL, NULL) == 0,
                  "acc %s dx %s dy %s %zux%zu log %d t %zu", ak_dtype_name(a->acc),
                  ak_dtype_name(dx), ak_dtype_name(dy), a->rows, a->cols, a->log, a->causal_t);
    kt_twin_free(&tx);
    kt_twin_free(&ty);
    kt_twin_free(&tdy);
    kt_twin_free(&tdx);
    free(x);
    free(g);
    free(yb);
}

static ak_softmax_args sm_args(size_t rows, size_t cols, bool log, size_t t, float scale,
                               ak_dtype acc)
{
    ak_softmax_args a;
    memset(&a, 0, sizeof a);
    a.rows = rows;
    a.cols = cols;
    a.log = log;
    a.causal_t = t;
    a.scale = scale;
    a.acc = acc;
    return a;
}

/* run(i): acc kt_dtypes[i]. */
GO_CASE(softmax_bit_exact)
{
    const go_cmp *cmp = &c->cmp;
    const ak_dtype acc = kt_dtypes[_i];
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 190 + (uint64_t)_i);
    for (int lg = 0; lg < 2; lg++) {
        /* attention: batch 8 x 4 heads x 64 queries, scale 1/sqrt(16) */
        const ak_softmax_args att = sm_args(8 * 4 * 64, 64, lg, 64, 0.25f, acc);
        for (int d = 0; d < 3; d++)
            check_softmax(cmp, &r, &att, kt_dtypes[d], kt_dtypes[d], false);
        /* a long row (a vocabulary), and every pairing on a small shape */
        const ak_softmax_args vocab = sm_args(3, 5000, lg, 0, 1.0f, acc);
        check_softmax(cmp, &r, &vocab, AK_F32, AK_F16, false);
        for (int combo = 0; combo < 9; combo++)
            for (int bits = 0; bits < 2; bits++) {
                const ak_softmax_args small = sm_args(40, 7, lg, combo % 2 ? 7 : 0, 0.5f, acc);
                check_softmax(cmp, &r, &small, kt_dtypes[combo / 3], kt_dtypes[combo % 3], bits);
            }
    }
}

/* Attention's batched products (2 samples x 3 heads, T = 16, d = 8, the
 * heads interleaved in rows of 3C) in fp32, fp16 32F and 16F: each
 * matrix of ak_gemm_batched on cuda bit for bit ak_gemm on cuda. */
GO_CASE(gemm_batched_is_gemm_per_matrix)
{
    const go_cmp *cmp = &c->cmp;
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 195);
    const size_t T = 16, d = 8, H = 3, C = H * d;
    const kt_pairing pairs[3] = {
        {AK_F32, AK_F32, AK_COMPUTE_32F},
        {AK_F16, AK_F32, AK_COMPUTE_32F},
        {AK_F16, AK_F16, AK_COMPUTE_16F},
    };
    for (int p = 0; p < 3; p++) {
        const size_t na = T * 3 * C, nc = H * T * T;
        uint32_t *qkv = malloc(na * 4);
        kt_fill_values(&r, pairs[p].in, qkv, na, 2.0);
        kt_twin tq = kt_twin_alloc(cpu, gpu, na, pairs[p].in),
                tb = kt_twin_alloc(cpu, gpu, nc, pairs[p].out),
                t1 = kt_twin_alloc(cpu, gpu, nc, pairs[p].out);
        kt_twin_put(&tq, qkv);
        /* S_h = Q_h K_h^T */
        ak_gemm_args g;
        memset(&g, 0, sizeof g);
        g.trans_b = true;
        g.m = T;
        g.n = T;
        g.k = d;
        g.alpha = 0.5f;
        g.a = tq.g.t;
        g.lda = 3 * C;
        g.b =
            ak_tensor_of((char *)tq.g.t.data + C * ak_dtype_size(pairs[p].in), na - C, pairs[p].in);
        g.ldb = 3 * C;
        g.c = tb.g.t;
        g.ldc = T;
        g.compute = pairs[p].k;
        ck_assert_int_eq(ak_gemm_batched(gpu, &g, H, d, d, T * T), AK_OK);
        /* one ak_gemm per head on cuda, into t1 */
        for (size_t h = 0; h < H; h++) {
            ak_gemm_args one = g;
            const size_t es = ak_dtype_size(pairs[p].in), cs = ak_dtype_size(pairs[p].out);
            one.a = ak_tensor_of((char *)g.a.data + h * d * es, g.a.n - h * d, pairs[p].in);
            one.b = ak_tensor_of((char *)g.b.data + h * d * es, g.b.n - h * d, pairs[p].in);
            one.c =
                ak_tensor_of((char *)t1.g.t.data + h * T * T * cs, nc - h * T * T, pairs[p].out);
            ck_assert_int_eq(ak_gemm(gpu, &one), AK_OK);
        }
        uint32_t *batched = malloc(nc * 4), *single = malloc(nc * 4);
        kt_buf_get(&tb.g, batched);
        kt_buf_get(&t1.g, single);
        ck_assert_uint_eq(
            go_compare("gemm_batched", cmp, pairs[p].out, single, batched, nc, NULL, NULL), 0);
        kt_twin_free(&tq);
        kt_twin_free(&tb);
        kt_twin_free(&t1);
        free(qkv);
        free(batched);
        free(single);
    }
}

GO_CASE(softmax_bad_arguments_on_cuda)
{
    kt_twin f12 = kt_twin_alloc(cpu, gpu, 12, AK_F32), g12 = kt_twin_alloc(cpu, gpu, 12, AK_F32);
    ak_softmax_args a = sm_args(3, 4, false, 3, 1.0f, AK_F32);
    ck_assert_int_eq(ak_softmax_forward(gpu, &a, g12.g.t, f12.g.t), AK_EINVAL);
    a.causal_t = 0;
    ck_assert_int_eq(ak_softmax_backward(gpu, &a, g12.g.t, f12.g.t, g12.g.t), AK_EINVAL);
    ck_assert_int_eq(ak_sync(gpu), AK_OK);
    kt_twin_free(&f12);
    kt_twin_free(&g12);
}

static const go_case rows[] = {
    {"softmax_forward softmax_backward", "softmax_bit_exact", 3, softmax_bit_exact, GO_BITS},
    {"gemm_batched", "gemm_batched_is_gemm_per_matrix", 1, gemm_batched_is_gemm_per_matrix,
     GO_BITS},
    {"softmax_forward softmax_backward", "softmax_bad_arguments_on_cuda", 1,
     softmax_bad_arguments_on_cuda, GO_BITS},
};
GO_FAMILY(softmax, rows);
