/* gemm.c: ak_gemm, C = alpha op(A) op(B) + beta C, row-major (kernels.h).
 *
 * What both backends compute (kernels/elem/gemm.h has the element rules):
 *   - m == 0 or n == 0: nothing.  k == 0 or alpha == 0 (for 16F: alpha
 *     rounded to fp16 is zero): C = beta C, A and B not read, by the same
 *     element code on both backends, so bit for bit (NaNs by the emulator's
 *     rules).  beta == 0 never reads C: a NaN there is overwritten, as
 *     OpenBLAS and cuBLAS both do.
 *   - otherwise cpu: fp32 32F is cblas_sgemm (OpenBLAS); the other pairs
 *     convert the inputs exactly to fp32 (the fast types first round them to
 *     fp16, bf16 or tf32, to nearest even; tf32 as ak_round_tf32_k says), so
 *     products are exact, and sgemm accumulates in fp32; a 16-bit C gets the
 *     epilogue alpha acc + beta c in fp32, rounded once to C.  16F: exact
 *     products summed in order l = 0 .. k-1, every partial sum rounded to
 *     fp16 (the first product alone, too), then the epilogue in fp16.
 *   - cuda: cublasGemmEx with the compute type, reductions kept in the
 *     compute type (CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION).
 *   - g->tc (a tensor-core model, kernels/elem/tc_dot.h): on cpu, fp16/bf16
 *     A and B with compute type 32F give each element as the model's dot
 *     product of row i and column j from a +0 accumulator, then the epilogue
 *     alpha acc + beta c above, bit for bit what the model says.  Other
 *     pairings ignore it, and so does cuda: there the tensor cores are the
 *     model, and tests/gpu/gpu_tc_probe measures how close the model is.
 *
 * Agreement between the backends.  Let a', b' be the inputs as the compute
 * type multiplies them (fp32 values; for the fast types rounded as above),
 * S_ij = |alpha| sum_l |a'_il b'_lj| + |beta c_ij| in exact arithmetic, and
 * u the unit roundoff of the accumulation (2^-24 for the 32F types, 2^-11
 * for 16F).  Either backend's result before its last rounding to C lies
 * within (k + 4) 2u S_ij of the exact alpha op(A') op(B') + beta C: k
 * additions in any order, each rounded to nearest (gamma_k) or truncated as
 * tensor cores do after aligning a block's terms to the largest (below 2u
 * per term), and the epilogue's two products and sum.  So, for results and
 * partial sums between the underflow and overflow thresholds,
 *
 *   |C_cuda - C_cpu| <= 2 (k + 4) 2u S_ij + 2 e_in S'_ij + ulp_C(max(|C_cuda|, |C_cpu|))
 *
 * with ulp_C one unit in the last place of C's format (each backend rounds
 * its result to nearest once).  The input term covers cuBLAS rounding fp32
 * inputs for a fast type otherwise than the cpu does (it may truncate):
 * e_in = 2 2^-f + 2^-2f for f = 10 (fp16, tf32) or 7 (bf16) fraction bits
 * and S'_ij = |alpha| sum_l |a_il b_lj| over the unrounded fp32 inputs;
 * e_in = 0 for 32F and 16F.  NaN positions and the signs of infinities
 * agree exactly where no finite partial sum overflows.
 * tests/kernels/gpu_cases_gemm.c checks exactly this bound.
 *
 * ak_gemm_batched: both backends run their ak_gemm once per matrix, in
 * order (kernels/elem/gemm.h's ak_gemm_batch_item offsets the tensors), so
 * each product is bit for bit what ak_gemm gives for it on that backend,
 * and the bound between backends is the one above.  (cuBLAS's strided
 * batched call is not used: nothing promises it the same bits as
 * cublasGemmEx for the same matrix.)
 */
#include <limits.h>
#include <string.h>

#include "backend.h"
#include "elem/gemm.h"
#include "elem/tc_dot.h"

static const char *const gemm_names[3] = {"A", "B", "C"};

/* The published models, fp16/bf16 inputs, fp32 accumulation:
 *   v100: blocks of 4 products, no extra alignment bits, truncation: Fasi,
 *         Higham, Mikaitis, Pranesh, "Numerical behavior of NVIDIA tensor
 *         cores", PeerJ Comput. Sci. 7:e330 (2021);
 *   a100: blocks of 8, 1 extra bit, truncation: Khattak, Mikaitis, "Accurate
 *         models of NVIDIA tensor cores", arXiv:2512.07004 (2025) and their
 *         MATLAB models (github.com/north-numerical-computing/MATLAB-tensor-core);
 *   h100: blocks of 16, 2 extra bits, truncation: the same source -
 *         literature, to be confirmed by tests/gpu/gpu_tc_probe. */
int ak_tc_preset(const char *name, ak_tc_model *out)
{
    static const struct {
        const char *name;
        ak_tc_model m;
    } presets[] = {{"v100", {4, 0, FPE_RZ}}, {"a100", {8, 1, FPE_RZ}}, {"h100", {16, 2, FPE_RZ}}};
    if (!name || !out) return AK_EINVAL;
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (!strcmp(name, presets[i].name)) {
            *out = presets[i].m;
            return AK_OK;
        }
    return AK_EINVAL;
}

/* A rows x cols matrix with leading dimension ld in t: ld >= cols and t
 * holds (rows - 1) ld + cols elements. */
static int check_matrix(ak_backend *b, const char *call, const char *what, ak_tensor t, size_t rows,
                        size_t cols, size_t ld)
{
    int rc = ak_check_tensor(b, call, what, t, AK_ANY_N);
    if (rc) return rc;
    if (ld < cols)
        return ak_fail(b, AK_EINVAL, call, "ld%c = %zu is less than the %zu columns of %s",
                       what[0] + ('a' - 'A'), ld, cols, what);
    if (rows == 0 || cols == 0) return AK_OK;
    size_t extent;
    rc = ak_check_mul(b, call, what, rows - 1, ld, &extent);
    if (rc) return rc;
    if (extent > SIZE_MAX - cols)
        return ak_fail(b, AK_EINVAL, call, "%s: extent overflows a size_t", what);
    extent += cols;
    if (t.n < extent)
        return ak_fail(b, AK_EINVAL, call,
                       "%s has %zu elements, a %zu x %zu matrix with ld %zu needs %zu", what, t.n,
                       rows, cols, ld, extent);
    return AK_OK;
}

/* Every argument of g, as ak_gemm and ak_gemm_batched (for its first
 * matrices) check them; messages name call. */
static int gemm_check(ak_backend *b, const char *call, const ak_gemm_args *g)
{
    if (!g) return ak_fail(b, AK_EINVAL, call, "g is NULL");
    int rc;
    if ((rc = ak_check_tensor(b, call, "A", g->a, AK_ANY_N)) ||
        (rc = ak_check_tensor(b, call, "B", g->b, AK_ANY_N)) ||
        (rc = ak_check_tensor(b, call, "C", g->c, AK_ANY_N)))
        return rc;
    if ((unsigned)g->compute > (unsigned)AK_COMPUTE_32F_FAST_TF32)
        return ak_fail(b, AK_EINVAL, call, "invalid compute type (%d)", (int)g->compute);
    char why[200];
    if (!ak_gemm_pairing_ok(g->a.dtype, g->b.dtype, g->c.dtype, g->compute, gemm_names, why,
                            sizeof why))
        return ak_fail(b, AK_EUNSUPPORTED, call, "%s", why);
    /* BLAS and cuBLAS take int sizes */
    const size_t dims[6] = {g->m, g->n, g->k, g->lda, g->ldb, g->ldc};
    const char *const dim_names[6] = {"m", "n", "k", "lda", "ldb", "ldc"};
    for (int i = 0; i < 6; i++)
        if (dims[i] > (size_t)INT_MAX)
            return ak_fail(b, AK_EINVAL, call,
                           "%s = %zu exceeds INT_MAX, the largest size BLAS and cuBLAS take",
                           dim_names[i], dims[i]);
    const size_t a_rows = g->trans_a ? g->k : g->m, a_cols = g->trans_a ? g->m : g->k;
    const size_t b_rows = g->trans_b ? g->n : g->k, b_cols = g->trans_b ? g->k : g->n;
    if ((rc = check_matrix(b, call, "A", g->a, a_rows, a_cols, g->lda)) ||
        (rc = check_matrix(b, call, "B", g->b, b_rows, b_cols, g->ldb)) ||
        (rc = check_matrix(b, call, "C", g->c, g->m, g->n, g->ldc)))
        return rc;
    if (g->tc && !ak_tc_model_ok(g->tc))
        return ak_fail(b, AK_EINVAL, call,
                       "tc: block %d, extra_bits %d, round %d is not a model (block 1..%d, "
                       "extra_bits -23..%d, round RNE, RZ, RD or RU)",
                       g->tc->block, g->tc->extra_bits, (int)g->tc->round, AK_TC_MAX_BLOCK,
                       AK_TC_MAX_EXTRA);
    return AK_OK;
}

int ak_gemm(ak_backend *b, const ak_gemm_args *g)
{
    AK_BEGIN(b);
    const int rc = gemm_check(b, "ak_gemm", g);
    if (rc || g->m == 0 || g->n == 0) return rc;
    return b->ops->gemm(b, g);
}

/* The C matrices of a batch share no element: each at least C's extent
 * past the previous one, or all side by side within one row band. */
static bool batch_c_disjoint(const ak_gemm_args *g, size_t count, size_t stride_c)
{
    if (count <= 1 || g->m == 0 || g->n == 0) return true;
    const size_t extent = (g->m - 1) * g->ldc + g->n;
    if (stride_c >= extent) return true;
    return stride_c >= g->n && (count - 1) <= (g->ldc - g->n) / stride_c;
}

/* The last matrix of a batch lies inside t: (count - 1) stride + the extent
 * of one (rows x cols, ld) at most t.n. */
static int check_batch_extent(ak_backend *b, const char *what, ak_tensor t, size_t rows,
                              size_t cols, size_t ld, size_t count, size_t stride)
{
    static const char call[] = "ak_gemm_batched";
    if (rows == 0 || cols == 0) return AK_OK;
    size_t last;
    int rc = ak_check_mul(b, call, what, count - 1, stride, &last);
    if (rc) return rc;
    const size_t extent = (rows - 1) * ld + cols; /* checked by ak_gemm's checks */
    if (last > SIZE_MAX - extent)
        return ak_fail(b, AK_EINVAL, call, "%s: the batch's extent overflows a size_t", what);
    if (t.n < last + extent)
        return ak_fail(b, AK_EINVAL, call,
                       "%s has %zu elements, %zu matrices %zu apart (%zu x %zu, ld %zu) need %zu",
                       what, t.n, count, stride, rows, cols, ld, last + extent);
    return AK_OK;
}

int ak_gemm_batched(ak_backend *b, const ak_gemm_args *g, size_t count, size_t stride_a,
                    size_t stride_b, size_t stride_c)
{
    static const char call[] = "ak_gemm_batched";
    AK_BEGIN(b);
    int rc = gemm_check(b, call, g); /* the first matrices, as ak_gemm */
    if (rc) return rc;
    if (count == 0) return AK_OK;
    const size_t a_rows = g->trans_a ? g->k : g->m, a_cols = g->trans_a ? g->m : g->k;
    const size_t b_rows = g->trans_b ? g->n : g->k, b_cols = g->trans_b ? g->k : g->n;
    if ((rc = check_batch_extent(b, "A", g->a, a_rows, a_cols, g->lda, count, stride_a)) ||
        (rc = check_batch_extent(b, "B", g->b, b_rows, b_cols, g->ldb, count, stride_b)) ||
        (rc = check_batch_extent(b, "C", g->c, g->m, g->n, g->ldc, count, stride_c)))
        return rc;
    if (!batch_c_disjoint(g, count, stride_c))
        return ak_fail(b, AK_EINVAL, call,
                       "the C matrices overlap: stride_c %zu with %zu x %zu and ldc %zu (needs "
                       "stride_c >= %zu, or stride_c >= n and (count - 1) stride_c + n <= ldc)",
                       stride_c, g->m, g->n, g->ldc, (g->m - 1) * g->ldc + g->n);
    if (g->m == 0 || g->n == 0) return AK_OK;
    return b->ops->gemm_batched(b, g, count, stride_a, stride_b, stride_c);
}
