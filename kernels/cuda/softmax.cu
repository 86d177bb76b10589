/* cuda/softmax.cu: row-wise softmax and log-softmax, forward and backward,
 * on the GPU: one thread per row runs the row in index order with the
 * element code of kernels/elem/softmax.h, the cpu's, so the two agree bit
 * for bit.  (The forward computes each exp twice instead of keeping the
 * row: the same values, no scratch memory.) */
#include "cuda_backend.h"
#include "elem/softmax.h"

static ak_softmax_row_args row_args(const ak_softmax_args *a)
{
    ak_softmax_row_args r;
    r.acc = (fpe_format_id)a->acc;
    r.log = a->log;
    r.scale = (double)a->scale;
    r.cols = a->cols;
    r.causal_t = a->causal_t;
    return r;
}

__global__ void softmax_forward_kernel(ak_softmax_row_args ra, size_t rows, ak_tensor y,
                                       ak_tensor x)
{
    const fpe_format_id fy = (fpe_format_id)y.dtype, fx = (fpe_format_id)x.dtype;
    AK_LAYER_GRID_STRIDE(r, rows)
    ak_softmax_row(&ra, fy, fx, y.data, x.data, r, NULL);
}

extern "C" int ak_cuda_softmax_forward(ak_backend *b, const ak_softmax_args *a, ak_tensor y,
                                       ak_tensor x)
{
    const unsigned grid = ak_grid(b, a->rows, AK_CUDA_BLOCK);
    softmax_forward_kernel<<<grid, AK_CUDA_BLOCK, 0, ak_stream(b)>>>(row_args(a), a->rows, y, x);
    AK_CUDA_LAUNCHED(b, "ak_softmax_forward", "softmax_forward_kernel");
    return AK_OK;
}

__global__ void softmax_backward_kernel(ak_softmax_row_args ra, size_t rows, ak_tensor dx,
                                        ak_tensor dy, ak_tensor y)
{
    const fpe_format_id fdx = (fpe_format_id)dx.dtype, fdy = (fpe_format_id)dy.dtype,
                        fy = (fpe_format_id)y.dtype;
    AK_LAYER_GRID_STRIDE(r, rows)
    ak_softmax_backward_row(&ra, fdx, fdy, fy, dx.data, dy.data, y.data, r);
}

extern "C" int ak_cuda_softmax_backward(ak_backend *b, const ak_softmax_args *a, ak_tensor dx,
                                        ak_tensor dy, ak_tensor y)
{
    const unsigned grid = ak_grid(b, a->rows, AK_CUDA_BLOCK);
    softmax_backward_kernel<<<grid, AK_CUDA_BLOCK, 0, ak_stream(b)>>>(row_args(a), a->rows, dx, dy,
                                                                      y);
    AK_CUDA_LAUNCHED(b, "ak_softmax_backward", "softmax_backward_kernel");
    return AK_OK;
}
