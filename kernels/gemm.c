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
static int check_matrix(ak_backend *b, const char *what, ak_tensor t, size_t rows, size_t cols,
                        size_t ld)
{
    int rc = ak_check_tensor(b, "ak_gemm", what, t, AK_ANY_N);
    if (rc) return rc;
    if (ld < cols)
        return ak_fail(b, AK_EINVAL, "ak_gemm", "ld%c = %zu is less than the %zu columns of %s",
                       what[0] + ('a' - 'A'), ld, cols, what);
    if (rows == 0 || cols == 0) return AK_OK;
    size_t extent;
    rc = ak_check_mul(b, "ak_gemm", what, rows - 1, ld, &extent);
    if (rc) return rc;
    if (extent > SIZE_MAX - cols)
        return ak_fail(b, AK_EINVAL, "ak_gemm", "%s: extent overflows a size_t", what);
    extent += cols;
    if (t.n < extent)
        return ak_fail(b, AK_EINVAL, "ak_gemm",
                       "%s has %zu elements, a %zu x %zu matrix with ld %zu needs %zu", what, t.n,
                       rows, cols, ld, extent);
    return AK_OK;
}

int ak_gemm(ak_backend *b, const ak_gemm_args *g)
{
    AK_BEGIN(b);
    if (!g) return ak_fail(b, AK_EINVAL, "ak_gemm", "g is NULL");
    int rc;
    if ((rc = ak_check_tensor(b, "ak_gemm", "A", g->a, AK_ANY_N)) ||
        (rc = ak_check_tensor(b, "ak_gemm", "B", g->b, AK_ANY_N)) ||
        (rc = ak_check_tensor(b, "ak_gemm", "C", g->c, AK_ANY_N)))
        return rc;
    if ((unsigned)g->compute > (unsigned)AK_COMPUTE_32F_FAST_TF32)
        return ak_fail(b, AK_EINVAL, "ak_gemm", "invalid compute type (%d)", (int)g->compute);
    char why[200];
    if (!ak_gemm_pairing_ok(g->a.dtype, g->b.dtype, g->c.dtype, g->compute, gemm_names, why,
                            sizeof why))
        return ak_fail(b, AK_EUNSUPPORTED, "ak_gemm", "%s", why);
    /* BLAS and cuBLAS take int sizes */
    const size_t dims[6] = {g->m, g->n, g->k, g->lda, g->ldb, g->ldc};
    const char *const dim_names[6] = {"m", "n", "k", "lda", "ldb", "ldc"};
    for (int i = 0; i < 6; i++)
        if (dims[i] > (size_t)INT_MAX)
            return ak_fail(b, AK_EINVAL, "ak_gemm",
                           "%s = %zu exceeds INT_MAX, the largest size BLAS and cuBLAS take",
                           dim_names[i], dims[i]);
    const size_t a_rows = g->trans_a ? g->k : g->m, a_cols = g->trans_a ? g->m : g->k;
    const size_t b_rows = g->trans_b ? g->n : g->k, b_cols = g->trans_b ? g->k : g->n;
    if ((rc = check_matrix(b, "A", g->a, a_rows, a_cols, g->lda)) ||
        (rc = check_matrix(b, "B", g->b, b_rows, b_cols, g->ldb)) ||
        (rc = check_matrix(b, "C", g->c, g->m, g->n, g->ldc)))
        return rc;
    if (g->tc && !ak_tc_model_ok(g->tc))
        return ak_fail(b, AK_EINVAL, "ak_gemm",
                       "tc: block %d, extra_bits %d, round %d is not a model (block 1..%d, "
                       "extra_bits -23..%d, round RNE, RZ, RD or RU)",
                       g->tc->block, g->tc->extra_bits, (int)g->tc->round, AK_TC_MAX_BLOCK,
                       AK_TC_MAX_EXTRA);
    if (g->m == 0 || g->n == 0) return AK_OK;
    return b->ops->gemm(b, g);
}
