/* loss.c: STUB (to be written). */
#include "backend.h"

int ak_softmax_xent(ak_backend *b, size_t batch, size_t classes, ak_tensor logits, const int32_t *labels, const float *scale, float *loss, ak_tensor dlogits, int32_t *correct)
{
    AK_BEGIN(b);
    return b->ops->softmax_xent(b, batch, classes, logits, labels, scale, loss, dlogits, correct);
}

int ak_mse(ak_backend *b, ak_tensor pred, ak_tensor target, const float *scale, float *loss, ak_tensor dpred)
{
    AK_BEGIN(b);
    return b->ops->mse(b, pred, target, scale, loss, dpred);
}

