/* cuda/layers.cu: STUB. */
#include "cuda_backend.h"

extern "C" int ak_cuda_bias_add(ak_backend *b, ak_tensor y, ak_tensor bias, size_t rows, size_t cols)
{
    (void)y; (void)bias; (void)rows; (void)cols;
    return ak_fail(b, AK_ENOTIMPL, "ak_bias_add", "not implemented yet");
}

extern "C" int ak_cuda_bias_grad(ak_backend *b, ak_tensor dbias, ak_tensor dy, size_t rows, size_t cols)
{
    (void)dbias; (void)dy; (void)rows; (void)cols;
    return ak_fail(b, AK_ENOTIMPL, "ak_bias_grad", "not implemented yet");
}

extern "C" int ak_cuda_relu(ak_backend *b, ak_tensor y, ak_tensor x)
{
    (void)y; (void)x;
    return ak_fail(b, AK_ENOTIMPL, "ak_relu", "not implemented yet");
}

extern "C" int ak_cuda_relu_backward(ak_backend *b, ak_tensor dx, ak_tensor dy, ak_tensor x)
{
    (void)dx; (void)dy; (void)x;
    return ak_fail(b, AK_ENOTIMPL, "ak_relu_backward", "not implemented yet");
}

extern "C" int ak_cuda_maxpool2_forward(ak_backend *b, size_t planes, size_t h, size_t w, ak_tensor y, ak_tensor x)
{
    (void)planes; (void)h; (void)w; (void)y; (void)x;
    return ak_fail(b, AK_ENOTIMPL, "ak_maxpool2_forward", "not implemented yet");
}

extern "C" int ak_cuda_maxpool2_backward(ak_backend *b, size_t planes, size_t h, size_t w, ak_tensor dx, ak_tensor dy, ak_tensor x)
{
    (void)planes; (void)h; (void)w; (void)dx; (void)dy; (void)x;
    return ak_fail(b, AK_ENOTIMPL, "ak_maxpool2_backward", "not implemented yet");
}

