/* layernorm.c: the public wrappers of LayerNorm over the last dimension
 * (kernels.h): argument checks, then the backend's implementation.
 *
 * The arithmetic (kernels.h, "normalization"; kernels/elem/norm.h, shared by
 * both backends) is the same on cpu and cuda: a row's sums in double in a
 * fixed order (256 lanes, then a tree), the statistics rounded once to fp32,
 * outputs in fp32 converted once; dgamma and dbeta sum over rows in row
 * order, in double.  Bit for bit.  Checked here, once for both backends:
 *   - rows * cols without overflow, cols >= 1, eps finite and >= 0;
 *   - x, y, dy, dx: rows * cols elements; gamma, beta, dgamma, dbeta: cols;
 *     save_mean, save_rstd: rows, fp32;
 *   - gamma and beta given together (or neither), likewise save_*; the
 *     backward needs save_*; dgamma and dbeta only with gamma;
 *   - no output overlaps any other tensor of the call.
 */
#include <math.h>

#include "backend.h"

static int check_shape(ak_backend *b, const char *call, size_t rows, size_t cols, size_t *count)
{
    *count = 0;
    if (cols == 0) return ak_fail(b, AK_EINVAL, call, "cols is 0: a row needs an element");
    return ak_check_mul(b, call, "rows x cols", rows, cols, count);
}

int ak_layernorm_forward(ak_backend *b, size_t rows, size_t cols, double eps, ak_tensor y,
                         ak_tensor x, ak_tensor gamma, ak_tensor beta, ak_tensor save_mean,
                         ak_tensor save_rstd)
{
    static const char call[] = "ak_layernorm_forward";
    AK_BEGIN(b);
    size_t count;
    int rc = check_shape(b, call, rows, cols, &count);
    if (!rc && (!(eps >= 0.0) || !isfinite(eps)))
        rc = ak_fail(b, AK_EINVAL, call, "eps (%g) must be finite and >= 0", eps);
    if (!rc) rc = ak_check_tensor(b, call, "x", x, count);
    if (!rc) rc = ak_check_tensor(b, call, "y", y, count);
    if (!rc) rc = ak_check_pair(b, call, "gamma", gamma, "beta", beta, cols, false);
    if (!rc)
        rc = ak_check_pair(b, call, "save_mean", save_mean, "save_rstd", save_rstd, rows, true);
    if (!rc) {
        const char *const names[] = {"y", "save_mean", "save_rstd", "x", "gamma", "beta"};
        const ak_tensor ts[] = {y, save_mean, save_rstd, x, gamma, beta};
        rc = ak_check_disjoint(b, call, 3, 6, names, ts);
    }
    if (rc || rows == 0) return rc;
    return b->ops->layernorm_forward(b, rows, cols, eps, y, x, gamma, beta, save_mean, save_rstd);
}

int ak_layernorm_backward(ak_backend *b, size_t rows, size_t cols, ak_tensor dx, ak_tensor dgamma,
                          ak_tensor dbeta, ak_tensor dy, ak_tensor x, ak_tensor gamma,
                          ak_tensor save_mean, ak_tensor save_rstd)
{
    static const char call[] = "ak_layernorm_backward";
    AK_BEGIN(b);
    size_t count;
    int rc = check_shape(b, call, rows, cols, &count);
    if (!rc) rc = ak_check_tensor(b, call, "dy", dy, count);
    if (!rc) rc = ak_check_tensor(b, call, "x", x, count);
    if (!rc) rc = ak_check_optional(b, call, "dx", dx, count);
    if (!rc) rc = ak_check_optional(b, call, "gamma", gamma, cols);
    if (!rc) rc = ak_check_optional(b, call, "dgamma", dgamma, cols);
    if (!rc) rc = ak_check_optional(b, call, "dbeta", dbeta, cols);
    if (!rc) rc = ak_check_tensor(b, call, "save_mean", save_mean, rows);
    if (!rc) rc = ak_check_tensor(b, call, "save_rstd", save_rstd, rows);
    if (!rc && (save_mean.dtype != AK_F32 || save_rstd.dtype != AK_F32))
        rc = ak_fail(b, AK_EUNSUPPORTED, call, "save_mean and save_rstd must be fp32 (are %s, %s)",
                     ak_dtype_name(save_mean.dtype), ak_dtype_name(save_rstd.dtype));
    if (!rc && !gamma.data && (dgamma.data || dbeta.data))
        rc = ak_fail(b, AK_EINVAL, call,
                     "dgamma and dbeta need gamma (elementwise_affine=False has none)");
    if (!rc) {
        const char *const names[] = {"dx", "dgamma", "dbeta",     "dy",
                                     "x",  "gamma",  "save_mean", "save_rstd"};
        const ak_tensor ts[] = {dx, dgamma, dbeta, dy, x, gamma, save_mean, save_rstd};
        rc = ak_check_disjoint(b, call, 3, 8, names, ts);
    }
    if (rc) return rc;
    return b->ops->layernorm_backward(b, rows, cols, dx, dgamma, dbeta, dy, x, gamma, save_mean,
                                      save_rstd);
}
