/* cuda/loss.cu: STUB. */
#include "cuda_backend.h"

extern "C" int ak_cuda_softmax_xent(ak_backend *b, size_t batch, size_t classes, ak_tensor logits, const int32_t *labels, const float *scale, float *loss, ak_tensor dlogits, int32_t *correct)
{
    (void)batch; (void)classes; (void)logits; (void)labels; (void)scale; (void)loss; (void)dlogits; (void)correct;
    return ak_fail(b, AK_ENOTIMPL, "ak_softmax_xent", "not implemented yet");
}

extern "C" int ak_cuda_mse(ak_backend *b, ak_tensor pred, ak_tensor target, const float *scale, float *loss, ak_tensor dpred)
{
    (void)pred; (void)target; (void)scale; (void)loss; (void)dpred;
    return ak_fail(b, AK_ENOTIMPL, "ak_mse", "not implemented yet");
}

