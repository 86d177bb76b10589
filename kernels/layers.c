/* layers.c: STUB (to be written). */
#include "backend.h"

int ak_bias_add(ak_backend *b, ak_tensor y, ak_tensor bias, size_t rows, size_t cols)
{
    AK_BEGIN(b);
    return b->ops->bias_add(b, y, bias, rows, cols);
}

int ak_bias_grad(ak_backend *b, ak_tensor dbias, ak_tensor dy, size_t rows, size_t cols)
{
    AK_BEGIN(b);
    return b->ops->bias_grad(b, dbias, dy, rows, cols);
}

int ak_relu(ak_backend *b, ak_tensor y, ak_tensor x)
{
    AK_BEGIN(b);
    return b->ops->relu(b, y, x);
}

int ak_relu_backward(ak_backend *b, ak_tensor dx, ak_tensor dy, ak_tensor x)
{
    AK_BEGIN(b);
    return b->ops->relu_backward(b, dx, dy, x);
}

int ak_maxpool2_forward(ak_backend *b, size_t planes, size_t h, size_t w, ak_tensor y, ak_tensor x)
{
    AK_BEGIN(b);
    return b->ops->maxpool2_forward(b, planes, h, w, y, x);
}

int ak_maxpool2_backward(ak_backend *b, size_t planes, size_t h, size_t w, ak_tensor dx, ak_tensor dy, ak_tensor x)
{
    AK_BEGIN(b);
    return b->ops->maxpool2_backward(b, planes, h, w, dx, dy, x);
}

