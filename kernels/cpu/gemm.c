/* cpu/gemm.c: ak_gemm on the host.  fp32 32F is OpenBLAS's sgemm; every
 * other contract is emulated around it (kernels/gemm.c says how), and a
 * tensor-core model (g->tc) by kernels/elem/tc_dot.h. */
#include <cblas.h>
#include <stdlib.h>

#include "backend.h"
#include "elem/gemm.h"
#include "elem/tc_dot.h"

static uint32_t load(const ak_tensor *t, size_t i)
{
    return t->dtype == AK_F32 ? ((const uint32_t *)t->data)[i] : ((const uint16_t *)t->data)[i];
}

static void store(const ak_tensor *t, size_t i, uint32_t bits)
{
    if (t->dtype == AK_F32)
        ((uint32_t *)t->data)[i] = bits;
    else
        ((uint16_t *)t->data)[i] = (uint16_t)bits;
}

/* k == 0 or alpha == 0: C = beta C (A and B not read). */
static int scale_c(const ak_gemm_args *g, const ak_gemm_scalars *s)
{
    const fpe_format_id cf = (fpe_format_id)g->c.dtype;
    for (size_t i = 0; i < g->m; i++)
        for (size_t j = 0; j < g->n; j++) {
            const size_t at = i * g->ldc + j;
            store(&g->c, at, ak_gemm_epilogue_k(s, cf, false, 0.0, load(&g->c, at)));
        }
    return AK_OK;
}

/* The rows x cols matrix in t (leading dimension ld) as packed fp32 values,
 * rounded as the compute type multiplies them. */
static void widen(const ak_tensor *t, size_t rows, size_t cols, size_t ld, ak_compute k, float *out)
{
    for (size_t r = 0; r < rows; r++) {
        float *o = out + r * cols;
        if (t->dtype == AK_F32) {
            const uint32_t *in = (const uint32_t *)t->data + r * ld;
            for (size_t c = 0; c < cols; c++)
                o[c] = ak_f32_from_bits(ak_gemm_input_k(k, in[c]));
        } else {
            ak_cpu_widen16((fpe_format_id)t->dtype, (const uint16_t *)t->data + r * ld, cols, o);
        }
    }
}

static CBLAS_TRANSPOSE trans(bool t) { return t ? CblasTrans : CblasNoTrans; }

/* The fp32-accumulating contracts other than plain fp32 32F: the inputs
 * widened (and rounded), sgemm; fp32 C takes alpha and beta in sgemm, a
 * 16-bit C gets the epilogue from an fp32 accumulator. */
static int gemm_f32_acc(ak_backend *b, const ak_gemm_args *g, const ak_gemm_scalars *s)
{
    const size_t a_rows = g->trans_a ? g->k : g->m, a_cols = g->trans_a ? g->m : g->k;
    const size_t b_rows = g->trans_b ? g->n : g->k, b_cols = g->trans_b ? g->k : g->n;
    const bool c32 = g->c.dtype == AK_F32;
    float *a, *bm, *acc;
    int rc;
    if ((rc = ak_cpu_scratch(b, AK_SCRATCH_GEMM_A, "ak_gemm", a_rows * a_cols, sizeof(float),
                             (void **)&a)) ||
        (rc = ak_cpu_scratch(b, AK_SCRATCH_GEMM_B, "ak_gemm", b_rows * b_cols, sizeof(float),
                             (void **)&bm)) ||
        (rc = ak_cpu_scratch(b, AK_SCRATCH_GEMM_ACC, "ak_gemm", c32 ? 0 : g->m * g->n,
                             sizeof(float), (void **)&acc)))
        return rc;
    widen(&g->a, a_rows, a_cols, g->lda, g->compute, a);
    widen(&g->b, b_rows, b_cols, g->ldb, g->compute, bm);
    if (c32) {
        cblas_sgemm(CblasRowMajor, trans(g->trans_a), trans(g->trans_b), (blasint)g->m,
                    (blasint)g->n, (blasint)g->k, g->alpha, a, (blasint)a_cols, bm, (blasint)b_cols,
                    g->beta, (float *)g->c.data, (blasint)g->ldc);
        return AK_OK;
    }
    cblas_sgemm(CblasRowMajor, trans(g->trans_a), trans(g->trans_b), (blasint)g->m, (blasint)g->n,
                (blasint)g->k, 1.0f, a, (blasint)a_cols, bm, (blasint)b_cols, 0.0f, acc,
                (blasint)g->n);
    const fpe_format_id cf = (fpe_format_id)g->c.dtype;
    if (s->alpha == 1.0 && s->beta == 0.0) {
        /* alpha 1, C not read: the epilogue is the accumulator rounded to
         * C's format (1 * acc is acc, and sgemm's NaNs are quiet already),
         * which the emulator's array conversion does a row at a time */
        for (size_t i = 0; i < g->m; i++) {
            fpe_env env = fpe_env_default();
            (void)fpe_chop_f32_to_u16(&env, cf, acc + i * g->n, (uint16_t *)g->c.data + i * g->ldc,
                                      g->n, NULL);
        }
        return AK_OK;
    }
    for (size_t i = 0; i < g->m; i++)
        for (size_t j = 0; j < g->n; j++) {
            const size_t at = i * g->ldc + j;
            store(&g->c, at,
                  ak_gemm_epilogue_k(s, cf, true, (double)acc[i * g->n + j], load(&g->c, at)));
        }
    return AK_OK;
}

/* 16F: op(A) packed as m rows of k, op(B) as n rows of k (transposed), so
 * both sweeps of the sequential sum are contiguous. */
static int gemm_16f(ak_backend *b, const ak_gemm_args *g, const ak_gemm_scalars *s)
{
    const size_t m = g->m, n = g->n, k = g->k;
    float *a, *bt;
    int rc;
    if ((rc = ak_cpu_scratch(b, AK_SCRATCH_GEMM_A, "ak_gemm", m * k, sizeof(float), (void **)&a)) ||
        (rc = ak_cpu_scratch(b, AK_SCRATCH_GEMM_B, "ak_gemm", n * k, sizeof(float), (void **)&bt)))
        return rc;
    const uint16_t *ad = (const uint16_t *)g->a.data, *bd = (const uint16_t *)g->b.data;
    for (size_t i = 0; i < m; i++)
        for (size_t l = 0; l < k; l++)
            a[i * k + l] = ak_f32_from_bits(
                ak_widen16_k(FPE_FMT_F16, ad[g->trans_a ? l * g->lda + i : i * g->lda + l]));
    for (size_t j = 0; j < n; j++)
        for (size_t l = 0; l < k; l++)
            bt[j * k + l] = ak_f32_from_bits(
                ak_widen16_k(FPE_FMT_F16, bd[g->trans_b ? j * g->ldb + l : l * g->ldb + j]));
    fpe_env env = fpe_env_default();
    uint16_t *c = (uint16_t *)g->c.data;
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            const float *ar = a + i * k, *br = bt + j * k;
            /* -0 + p is p for every p, so the first product is rounded alone */
            double acc = -0.0;
            for (size_t l = 0; l < k; l++) {
                /* an fp16 x fp16 product has at most 22 bits: exact in binary64 */
                const double p = (double)ar[l] * (double)br[l];
                acc = ak_elem_value(FPE_FMT_F16, ak_round_sum(FPE_FMT_F16, &env, acc, p));
            }
            const size_t at = i * g->ldc + j;
            c[at] = (uint16_t)ak_gemm_epilogue_k(s, FPE_FMT_F16, true, acc, c[at]);
        }
    return AK_OK;
}

/* fp16/bf16 A and B, 32F, with a tensor-core model: each element is the
 * model's dot product from a +0 accumulator, then the fp32 epilogue. */
static void gemm_tc(const ak_gemm_args *g, const ak_gemm_scalars *s)
{
    const fpe_format_id f = (fpe_format_id)g->a.dtype, cf = (fpe_format_id)g->c.dtype;
    const uint16_t *a = (const uint16_t *)g->a.data, *bd = (const uint16_t *)g->b.data;
    /* row i of op(A) and column j of op(B) as strided vectors */
    const size_t a_step = g->trans_a ? g->lda : 1, b_step = g->trans_b ? 1 : g->ldb;
    for (size_t i = 0; i < g->m; i++)
        for (size_t j = 0; j < g->n; j++) {
            const uint16_t *ar = g->trans_a ? a + i : a + i * g->lda;
            const uint16_t *bc = g->trans_b ? bd + j * g->ldb : bd + j;
            const uint32_t acc = ak_tc_dot_k(g->tc, f, ar, a_step, bc, b_step, g->k, 0);
            const size_t at = i * g->ldc + j;
            store(
                &g->c, at,
                ak_gemm_epilogue_k(s, cf, true, ak_elem_value(FPE_FMT_F32, acc), load(&g->c, at)));
        }
}

int ak_cpu_gemm(ak_backend *b, const ak_gemm_args *g)
{
    if (g->m == 0 || g->n == 0) return AK_OK; /* conv2d calls here directly */
    const ak_gemm_scalars s = ak_gemm_scalars_of(g->compute, g->alpha, g->beta);
    if (g->k == 0 || s.alpha == 0.0) return scale_c(g, &s);
    if (g->compute == AK_COMPUTE_16F) return gemm_16f(b, g, &s);
    if (g->tc && g->compute == AK_COMPUTE_32F && g->a.dtype != AK_F32) {
        gemm_tc(g, &s);
        return AK_OK;
    }
    if (g->compute == AK_COMPUTE_32F && g->a.dtype == AK_F32) {
        cblas_sgemm(CblasRowMajor, trans(g->trans_a), trans(g->trans_b), (blasint)g->m,
                    (blasint)g->n, (blasint)g->k, g->alpha, (const float *)g->a.data,
                    (blasint)g->lda, (const float *)g->b.data, (blasint)g->ldb, g->beta,
                    (float *)g->c.data, (blasint)g->ldc);
        return AK_OK;
    }
    return gemm_f32_acc(b, g, &s);
}

/* One ak_cpu_gemm per matrix, in order (kernels/gemm.c). */
int ak_cpu_gemm_batched(ak_backend *b, const ak_gemm_args *g, size_t count, size_t stride_a,
                        size_t stride_b, size_t stride_c)
{
    for (size_t i = 0; i < count; i++) {
        const ak_gemm_args one = ak_gemm_batch_item(g, i, stride_a, stride_b, stride_c);
        const int rc = ak_cpu_gemm(b, &one);
        if (rc) return rc;
    }
    return AK_OK;
}

void ak_cpu_threads_from_env(void)
{
    const char *threads = getenv("OPENBLAS_NUM_THREADS");
    if (threads && atoi(threads) > 0) openblas_set_num_threads(atoi(threads));
}

int ak_cpu_set_threads(int n)
{
    const int had = openblas_get_num_threads();
    if (n > 0) openblas_set_num_threads(n);
    return had;
}
