/* batchnorm.c: the public wrappers of BatchNorm2d (kernels.h): argument
 * checks, then the backend's implementation.
 *
 * The arithmetic (kernels.h, "normalization"; the code is
 * kernels/elem/norm.h, shared by both backends) is the same on cpu and
 * cuda: fixed-order double sums (256 lanes, then a tree), statistics rounded
 * once to fp32, outputs computed in fp32 and converted once; bit for bit.
 * Argument rules checked here, once for both backends:
 *   - a non-NULL ak_batchnorm, n * c * hw without overflow, eps finite and
 *     >= 0, momentum finite in [0, 1];
 *   - training forward needs n * hw >= 2 (an unbiased variance);
 *   - x, y, dy, dx: n * c * hw elements; every per-channel tensor c;
 *   - pairs given together: gamma/beta, running_mean/running_var,
 *     save_mean/save_invstd; running_* and save_* fp32;
 *   - eval needs the running statistics, the backward the saved ones;
 *   - dgamma, dbeta only with gamma;
 *   - no output overlaps any other tensor of the call.
 */
#include <math.h>

#include "backend.h"

/* The shape (and, for the forward, eps and momentum); *count = n * c * hw. */
static int check_shape(ak_backend *b, const char *call, const ak_batchnorm *a, bool forward,
                       size_t *count)
{
    *count = 0;
    if (!a) return ak_fail(b, AK_EINVAL, call, "a is NULL");
    size_t nc;
    int rc = ak_check_mul(b, call, "n x c", a->n, a->c, &nc);
    if (!rc) rc = ak_check_mul(b, call, "n x c x hw", nc, a->hw, count);
    if (rc || !forward) return rc;
    if (!(a->eps >= 0.0) || !isfinite(a->eps))
        return ak_fail(b, AK_EINVAL, call, "eps (%g) must be finite and >= 0", a->eps);
    if (!(a->momentum >= 0.0 && a->momentum <= 1.0))
        return ak_fail(b, AK_EINVAL, call, "momentum (%g) must lie in [0, 1]", a->momentum);
    if (a->training && a->c > 0 && a->n * a->hw < 2)
        return ak_fail(b, AK_EINVAL, call,
                       "training needs more than 1 value per channel (n x hw = %zu)", a->n * a->hw);
    return AK_OK;
}

int ak_batchnorm_forward(ak_backend *b, const ak_batchnorm *a, ak_tensor y, ak_tensor x,
                         ak_tensor gamma, ak_tensor beta, ak_tensor running_mean,
                         ak_tensor running_var, ak_tensor save_mean, ak_tensor save_invstd)
{
    static const char call[] = "ak_batchnorm_forward";
    AK_BEGIN(b);
    size_t count;
    int rc = check_shape(b, call, a, true, &count);
    if (!rc) rc = ak_check_tensor(b, call, "x", x, count);
    if (!rc) rc = ak_check_tensor(b, call, "y", y, count);
    if (!rc) rc = ak_check_pair(b, call, "gamma", gamma, "beta", beta, a->c, false);
    if (!rc)
        rc = ak_check_pair(b, call, "running_mean", running_mean, "running_var", running_var, a->c,
                           true);
    if (!rc)
        rc = ak_check_pair(b, call, "save_mean", save_mean, "save_invstd", save_invstd, a->c, true);
    if (!rc && !a->training && a->c > 0 && !running_mean.data)
        rc = ak_fail(b, AK_EINVAL, call, "eval mode needs running_mean and running_var");
    if (!rc) {
        const char *const names[] = {"y",           "save_mean", "save_invstd", "running_mean",
                                     "running_var", "x",         "gamma",       "beta"};
        const ak_tensor ts[] = {y,           save_mean, save_invstd, running_mean,
                                running_var, x,         gamma,       beta};
        rc = ak_check_disjoint(b, call, 5, 8, names, ts);
    }
    if (rc || count == 0) return rc;
    return b->ops->batchnorm_forward(b, a, y, x, gamma, beta, running_mean, running_var, save_mean,
                                     save_invstd);
}

int ak_batchnorm_backward(ak_backend *b, const ak_batchnorm *a, ak_tensor dx, ak_tensor dgamma,
                          ak_tensor dbeta, ak_tensor dy, ak_tensor x, ak_tensor gamma,
                          ak_tensor save_mean, ak_tensor save_invstd)
{
    static const char call[] = "ak_batchnorm_backward";
    AK_BEGIN(b);
    size_t count;
    int rc = check_shape(b, call, a, false, &count);
    if (!rc) rc = ak_check_tensor(b, call, "dy", dy, count);
    if (!rc) rc = ak_check_tensor(b, call, "x", x, count);
    if (!rc) rc = ak_check_optional(b, call, "dx", dx, count);
    if (!rc) rc = ak_check_optional(b, call, "gamma", gamma, a->c);
    if (!rc) rc = ak_check_optional(b, call, "dgamma", dgamma, a->c);
    if (!rc) rc = ak_check_optional(b, call, "dbeta", dbeta, a->c);
    if (!rc) rc = ak_check_tensor(b, call, "save_mean", save_mean, a->c);
    if (!rc) rc = ak_check_tensor(b, call, "save_invstd", save_invstd, a->c);
    if (!rc && (save_mean.dtype != AK_F32 || save_invstd.dtype != AK_F32))
        rc =
            ak_fail(b, AK_EUNSUPPORTED, call, "save_mean and save_invstd must be fp32 (are %s, %s)",
                    ak_dtype_name(save_mean.dtype), ak_dtype_name(save_invstd.dtype));
    if (!rc && a->c > 0 && !gamma.data && (dgamma.data || dbeta.data))
        rc = ak_fail(b, AK_EINVAL, call, "dgamma and dbeta need gamma (affine=False has none)");
    if (!rc) {
        const char *const names[] = {"dx", "dgamma", "dbeta",     "dy",
                                     "x",  "gamma",  "save_mean", "save_invstd"};
        const ak_tensor ts[] = {dx, dgamma, dbeta, dy, x, gamma, save_mean, save_invstd};
        rc = ak_check_disjoint(b, call, 3, 8, names, ts);
    }
    if (rc || a->c == 0) return rc;
    return b->ops->batchnorm_backward(b, a, dx, dgamma, dbeta, dy, x, gamma, save_mean,
                                      save_invstd);
}
