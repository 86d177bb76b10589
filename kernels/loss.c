/* loss.c: the public wrappers of the losses: argument checks, then the
 * backend's implementation.
 *
 * Semantics, beyond kernels.h (the element code is kernels/elem/layers.h,
 * shared by both backends):
 *   - Outputs are written, never accumulated.  Scalars (scale, loss,
 *     correct) are in backend memory; scale NULL means 1.  Results computed
 *     in double are rounded once to their dtype, to nearest even, and a NaN
 *     is always written as the emulator's default NaN.
 *   - softmax_xent computes each row in double: m = the row's first maximal
 *     logit (a NaN ranking above every number, as torch.argmax), s_rest =
 *     sum of exp(x_j - m) over the other logits, row loss =
 *     (m - x_label) + log1p(s_rest), dlogits_j = (softmax_j - onehot_j)
 *     / batch * scale with softmax_j = exp(x_j - m) / (1 + s_rest) (at the
 *     maximum and label: -s_rest / (1 + s_rest)), so tiny losses and
 *     gradients keep their relative accuracy.  *loss = (sum of row losses)
 *     / batch, rounded to fp32.  A row whose maximum is not finite (a NaN or
 *     +inf logit, or all -inf) has a NaN loss and NaN gradients, as in
 *     PyTorch; a -inf logit elsewhere is a probability of 0.  correct counts
 *     the rows whose maximum's index is the label (rows with non-finite
 *     logits included).  batch = 0 writes *loss = NaN (PyTorch's mean over
 *     nothing) and *correct = 0.
 *   - Labels.  cpu: a label outside [0, classes) is AK_EINVAL naming its row,
 *     before anything is written.  cuda cannot read labels without waiting
 *     for the device, so it never reads or writes outside the tensors
 *     instead: a row with a bad label gets a NaN loss (so *loss is NaN, which
 *     a loss-scaled step's finite check catches) and NaN gradients, and is
 *     never counted correct.
 *   - nll_loss (the loss in fp16 or bf16; PyTorch's CUDA nll_loss,
 *     aten/src/ATen/native/cuda/Loss.cu, 1.13 to 2.0): 32 lanes, lane t
 *     subtracting logp[r, label_r] (read exactly) for r = t, t + 32, ...
 *     from +0 in fp32, then output = ((+0 + lane 0) + lane 1) + ... + lane
 *     31 in fp32, *loss = output / batch in fp32 (total_weight: batch, exact
 *     below 2^24), rounded to logp's dtype (and stored as that value).
 *     dlogp = +0 everywhere but each row's label, which gets g = -(g0 / n)
 *     with g0 = the fp32 scale rounded to logp's dtype (autograd casts the
 *     gradient of loss * scale back to the loss's dtype), n = batch rounded
 *     to the dtype (total_weight is stored in it), the division in fp32
 *     and then rounded to the dtype (c10::Half's operator/).  Every
 *     operation is the emulator's, so cpu and cuda agree bit for bit; NaNs
 *     are written as the default NaN.  correct counts rows whose first
 *     maximal logp (NaN ranking above numbers) is the label.  Labels as for
 *     softmax_xent (cuda: a bad label's row adds a NaN to the loss, its
 *     gradients are NaN, and it is not counted correct).  batch = 0: *loss = NaN.
 *   - mse: d = pred - target in double, *loss = (sum of d^2, in double) / n
 *     rounded to fp32, dpred = (2 d / n) * scale in double, rounded once to
 *     dpred's dtype.  n = 0 writes *loss = NaN.
 *   - cpu and cuda: dpred is bit-identical (the same double operations);
 *     softmax rows may differ in exp/log1p (glibc and CUDA are each within
 *     one ulp of double) and in the order of the sums, so *loss (a sum of
 *     nonnegative terms, relative error below (batch + classes + 8) 2^-53)
 *     and each element of dlogits agree within one ulp of their dtype; mse's
 *     *loss (nonnegative terms) within one ulp of fp32.  correct is exact;
 *     NaN, and the sign of an infinity, agree exactly.
 */
#include "backend.h"

int ak_softmax_xent(ak_backend *b, size_t batch, size_t classes, ak_tensor logits,
                    const int32_t *labels, const float *scale, float *loss, ak_tensor dlogits,
                    int32_t *correct)
{
    static const char call[] = "ak_softmax_xent";
    AK_BEGIN(b);
    if (batch > 0 && classes == 0) return ak_fail(b, AK_EINVAL, call, "classes is 0");
    if (classes > INT32_MAX)
        return ak_fail(b, AK_EINVAL, call, "classes (%zu) exceeds the int32 labels' range",
                       classes);
    if (correct && batch > INT32_MAX)
        return ak_fail(b, AK_EINVAL, call, "batch (%zu) overflows the int32 count correct", batch);
    size_t n;
    int rc = ak_check_mul(b, call, "logits (batch x classes)", batch, classes, &n);
    if (!rc) rc = ak_check_tensor(b, call, "logits", logits, n);
    if (!rc) rc = ak_check_optional(b, call, "dlogits", dlogits, n);
    if (!rc && batch > 0) rc = ak_check_ptr(b, call, "labels", labels, sizeof(int32_t));
    if (!rc && scale) rc = ak_check_ptr(b, call, "scale", scale, sizeof(float));
    if (!rc) rc = ak_check_ptr(b, call, "loss", loss, sizeof(float));
    if (!rc && correct) rc = ak_check_ptr(b, call, "correct", correct, sizeof(int32_t));
    if (rc) return rc;
    return b->ops->softmax_xent(b, batch, classes, logits, labels, scale, loss, dlogits, correct);
}

int ak_mse(ak_backend *b, ak_tensor pred, ak_tensor target, const float *scale, float *loss,
           ak_tensor dpred)
{
    static const char call[] = "ak_mse";
    AK_BEGIN(b);
    int rc = ak_check_tensor(b, call, "pred", pred, AK_ANY_N);
    if (!rc) rc = ak_check_tensor(b, call, "target", target, pred.n);
    if (!rc) rc = ak_check_optional(b, call, "dpred", dpred, pred.n);
    if (!rc && scale) rc = ak_check_ptr(b, call, "scale", scale, sizeof(float));
    if (!rc) rc = ak_check_ptr(b, call, "loss", loss, sizeof(float));
    if (rc) return rc;
    return b->ops->mse(b, pred, target, scale, loss, dpred);
}

int ak_nll_loss(ak_backend *b, size_t batch, size_t classes, ak_tensor logp, const int32_t *labels,
                const float *scale, float *loss, ak_tensor dlogp, int32_t *correct)
{
    static const char call[] = "ak_nll_loss";
    AK_BEGIN(b);
    if (batch > 0 && classes == 0) return ak_fail(b, AK_EINVAL, call, "classes is 0");
    if (classes > INT32_MAX)
        return ak_fail(b, AK_EINVAL, call, "classes (%zu) exceeds the int32 labels' range",
                       classes);
    if (batch > ((size_t)1 << 24))
        return ak_fail(b, AK_EINVAL, call,
                       "batch (%zu) exceeds 2^24 (the fp32 total weight would round)", batch);
    size_t n;
    int rc = ak_check_mul(b, call, "logp (batch x classes)", batch, classes, &n);
    if (!rc) rc = ak_check_tensor(b, call, "logp", logp, n);
    if (!rc) rc = ak_check_optional(b, call, "dlogp", dlogp, n);
    if (rc) return rc;
    if (n > 0 && logp.dtype != AK_F16 && logp.dtype != AK_BF16)
        return ak_fail(b, AK_EINVAL, call, "logp is %s, expected fp16 or bf16",
                       ak_dtype_name(logp.dtype));
    if (n > 0 && dlogp.data && dlogp.dtype != logp.dtype)
        return ak_fail(b, AK_EINVAL, call, "dlogp is %s, expected logp's %s",
                       ak_dtype_name(dlogp.dtype), ak_dtype_name(logp.dtype));
    if (!rc && batch > 0) rc = ak_check_ptr(b, call, "labels", labels, sizeof(int32_t));
    if (!rc && scale) rc = ak_check_ptr(b, call, "scale", scale, sizeof(float));
    if (!rc) rc = ak_check_ptr(b, call, "loss", loss, sizeof(float));
    if (!rc && correct) rc = ak_check_ptr(b, call, "correct", correct, sizeof(int32_t));
    if (rc) return rc;
    return b->ops->nll_loss(b, batch, classes, logp, labels, scale, loss, dlogp, correct);
}
