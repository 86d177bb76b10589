/* grad.c: gradient accumulation and norm clipping (ak_accumulate,
 * ak_sum_squares, ak_clip_by_norm), validated here for both backends.  The
 * element math is in elem/grad.h; cpu/grad.c and cuda/grad.cu run it.
 *
 * Semantics, beyond kernels.h:
 *   - accumulate: bit-exact between backends, and equal to fpe_<fmt>_add(x,
 *     y) when the dtypes agree (x is the first operand: of two NaNs, x's
 *     wins, quieted).
 *   - sum_squares: every square is exact in double and every term is >= 0,
 *     so the sum is perfectly conditioned and errors are relative to the sum
 *     itself.  With u = 2^-53, S the exact sum of the squares and *sumsq >= 0
 *     beforehand:
 *       cpu: the terms in order, with their rounding errors carried (TwoSum,
 *         Ogita-Rump-Oishi Sum2): within u + (n u)^2 of S ((n u)^2 < 2^-46
 *         below 2^30 elements), then one addition to *sumsq: within 2u of
 *         the exact *sumsq + S, plus the (n u)^2 term.
 *       cuda: each thread the same compensated sum over its elements, a tree
 *         of 8 additions per block (8u), then one atomicAdd of each block's
 *         sum into *sumsq, in the order the blocks finish: A additions for A
 *         blocks over all launches (a launch per 128 nonempty tensors, at
 *         most 8 blocks per SM each: 1056 on an H100's 132 SMs, fewer for
 *         small tensors): within (A + 10)u of the exact result.
 *     So the backends agree to a relative (A + 12)u, below 1e-12 while A <=
 *     8990: on an H100, lists of up to 1024 tensors of any length (more when
 *     they are small: a launch takes at most one block per 16384 elements).
 *     A NaN element makes both sums a NaN and an infinite one (without NaNs)
 *     +inf, exactly as plain double arithmetic; the NaN's bits are not
 *     specified.  The cuda result may vary by a few ulps from run to run
 *     (atomic order).
 *   - clip_by_norm: the coefficient is IEEE double arithmetic (sqrt, +, /,
 *     each correctly rounded on the host and the GPU) rounded to fp32, and
 *     its NaN is the emulator's default NaN (0xFFC00000), so cpu and cuda
 *     agree bit for bit on it and on every element, given the same *sumsq.
 *     Elements are multiplied exactly as ak_scale does (fp32: the fp32
 *     product; fp16/bf16: the exact product rounded once; x86 NaN rules),
 *     and left alone, NaN payloads included, when the fp32 coefficient is 1.
 *
 * Overlaps the backends cannot order (a scalar inside a tensor that is read
 * or written meanwhile) are refused here.
 */
#include <math.h>
#include <stdalign.h>
#include <stdio.h>

#include "backend.h"

/* Do the byte ranges [a, a + an) and [b, b + bn) share a byte? */
static size_t bytes_of(ak_tensor t) { return t.n * ak_dtype_size(t.dtype); }

int ak_accumulate(ak_backend *b, ak_tensor y, ak_tensor x)
{
    static const char call[] = "ak_accumulate";
    AK_BEGIN(b);
    int rc = ak_check_tensor(b, call, "x", x, AK_ANY_N);
    if (!rc) rc = ak_check_tensor(b, call, "y", y, x.n);
    if (rc || x.n == 0) return rc;
    /* y = 2y is elementwise; any other overlap would read written elements */
    if (!(x.data == y.data && x.dtype == y.dtype) &&
        ak_overlap(y.data, bytes_of(y), x.data, bytes_of(x)))
        return ak_fail(b, AK_EINVAL, call, "y (%s at %p) and x (%s at %p) overlap",
                       ak_dtype_name(y.dtype), y.data, ak_dtype_name(x.dtype), x.data);
    return b->ops->accumulate(b, y, x);
}

/* A scalar argument in backend memory that must lie outside every tensor
 * of the list (the tensors are read or written while it is). */
typedef struct scalar_arg {
    const void *p; /* NULL: not given */
    size_t bytes;
    const char *what;
} scalar_arg;

/* The checks ak_sum_squares and ak_clip_by_norm share: each tensor of the
 * list, and the scalars' overlaps with them.  *any_elements says whether
 * there is work. */
static int check_list(ak_backend *b, const char *call, const ak_tensor *xs, size_t count,
                      const scalar_arg *scalars, size_t n_scalars, bool *any_elements)
{
    *any_elements = false;
    for (size_t i = 0; i < count; i++) {
        char name[48];
        snprintf(name, sizeof name, "xs[%zu]", i);
        const int rc = ak_check_tensor(b, call, name, xs[i], AK_ANY_N);
        if (rc) return rc;
        for (size_t k = 0; k < n_scalars; k++) {
            const scalar_arg *a = &scalars[k];
            if (a->p && ak_overlap(a->p, a->bytes, xs[i].data, bytes_of(xs[i])))
                return ak_fail(b, AK_EINVAL, call, "%s (%p) overlaps %s (%p)", a->what, a->p, name,
                               xs[i].data);
        }
        *any_elements |= xs[i].n > 0;
    }
    return AK_OK;
}

int ak_sum_squares(ak_backend *b, const ak_tensor *xs, size_t count, double *sumsq)
{
    static const char call[] = "ak_sum_squares";
    AK_BEGIN(b);
    if (!xs && count > 0) return ak_fail(b, AK_EINVAL, call, "xs is NULL with %zu tensors", count);
    int rc = ak_check_ptr(b, call, "sumsq", sumsq, alignof(double));
    if (rc) return rc;
    const scalar_arg scalar = {sumsq, sizeof *sumsq, "sumsq"};
    bool any_elements;
    rc = check_list(b, call, xs, count, &scalar, 1, &any_elements);
    if (rc || !any_elements) return rc;
    return b->ops->sum_squares(b, xs, count, sumsq);
}

int ak_clip_by_norm(ak_backend *b, const ak_tensor *xs, size_t count, const double *sumsq,
                    float max_norm, float *coef_out)
{
    static const char call[] = "ak_clip_by_norm";
    AK_BEGIN(b);
    if (!xs && count > 0) return ak_fail(b, AK_EINVAL, call, "xs is NULL with %zu tensors", count);
    int rc = ak_check_ptr(b, call, "sumsq", sumsq, alignof(double));
    if (rc) return rc;
    if (!(isfinite(max_norm) && max_norm > 0.0f))
        return ak_fail(b, AK_EINVAL, call, "max_norm (%g) must be finite and > 0",
                       (double)max_norm);
    if (coef_out) {
        rc = ak_check_ptr(b, call, "coef_out", coef_out, alignof(float));
        if (rc) return rc;
        if (ak_overlap(coef_out, sizeof *coef_out, sumsq, sizeof *sumsq))
            return ak_fail(b, AK_EINVAL, call, "coef_out (%p) overlaps sumsq (%p)",
                           (void *)coef_out, (const void *)sumsq);
    }
    const scalar_arg scalars[2] = {{sumsq, sizeof *sumsq, "sumsq"},
                                   {coef_out, sizeof *coef_out, "coef_out"}};
    bool any_elements;
    rc = check_list(b, call, xs, count, scalars, 2, &any_elements);
    /* with no elements the coefficient is still computed, when asked for */
    if (rc || (!any_elements && !coef_out)) return rc;
    return b->ops->clip_by_norm(b, xs, count, sumsq, max_norm, coef_out);
}
