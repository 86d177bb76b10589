/* cuda/layers.cu: bias add and gradient, relu, 2x2 max-pooling on the GPU.
 * The element code is kernels/elem/layers.h, the same as the cpu's; each
 * kernel is instantiated for the three shared formats and for mixed dtypes
 * (F = AK_LAYER_ANY, elem/layers.h). */
#include "cuda_backend.h"
#include "elem/layers.h"

template <int F> __global__ void bias_add_kernel(ak_tensor y, ak_tensor bias, size_t cols)
{
    const fpe_format_id fy = AK_LAYER_FMT(F, y.dtype), fb = AK_LAYER_FMT(F, bias.dtype);
    AK_LAYER_GRID_STRIDE(i, y.n)
    {
        const uint32_t v = ak_load_bits(fy, y.data, i);
        ak_store_bits(fy, y.data, i,
                      ak_bias_add_elem(fy, fb, v, ak_load_bits(fb, bias.data, i % cols)));
    }
}

extern "C" int ak_cuda_bias_add(ak_backend *b, ak_tensor y, ak_tensor bias, size_t rows,
                                size_t cols)
{
    (void)rows;
    const unsigned grid = ak_grid(b, y.n, AK_CUDA_BLOCK);
#define LAUNCH(F, unused)                                                                          \
    bias_add_kernel<F><<<grid, AK_CUDA_BLOCK, 0, ak_stream(b)>>>(y, bias, cols)
    AK_LAYER_SPECIALISE(ak_layer_common2(y.dtype, bias.dtype), LAUNCH, 0);
#undef LAUNCH
    AK_CUDA_LAUNCHED(b, "ak_bias_add", "bias_add_kernel");
    return AK_OK;
}

/* bias_grad: a block owns BG_COLS adjacent columns (one per lane, so the
 * reads of a row are coalesced) and all their rows, split among BG_ROWS
 * threads; the partial sums are added in shared memory and rounded once.
 * No atomics: the result does not depend on scheduling.  BG_ROWS 32 (not
 * 8): a 512 x 4096 gradient gives only 128 blocks, so each needs many rows
 * in flight (38 us -> measured in docs/PERFORMANCE.md). */
#define BG_COLS 32
#define BG_ROWS 32

template <int F>
__global__ void bias_grad_kernel(ak_tensor dbias, ak_tensor dy, size_t rows, size_t cols)
{
    __shared__ double part[BG_ROWS][BG_COLS];
    const fpe_format_id fd = AK_LAYER_FMT(F, dbias.dtype), fy = AK_LAYER_FMT(F, dy.dtype);
    for (size_t c0 = blockIdx.x * (size_t)BG_COLS; c0 < cols; c0 += (size_t)gridDim.x * BG_COLS) {
        const size_t c = c0 + threadIdx.x;
        double s = 0.0;
        if (c < cols)
            for (size_t r = threadIdx.y; r < rows; r += BG_ROWS)
                s += ak_elem_value(fy, ak_load_bits(fy, dy.data, r * cols + c));
        part[threadIdx.y][threadIdx.x] = s;
        __syncthreads();
        if (threadIdx.y == 0 && c < cols) {
            double t = part[0][threadIdx.x];
            for (int k = 1; k < BG_ROWS; k++)
                t += part[k][threadIdx.x];
            ak_store_bits(fd, dbias.data, c, ak_layer_from_f64(fd, t));
        }
        __syncthreads(); /* part is reused by the next columns */
    }
}

extern "C" int ak_cuda_bias_grad(ak_backend *b, ak_tensor dbias, ak_tensor dy, size_t rows,
                                 size_t cols)
{
    const dim3 block(BG_COLS, BG_ROWS);
    const unsigned grid = ak_grid(b, cols, BG_COLS);
#define LAUNCH(F, unused)                                                                          \
    bias_grad_kernel<F><<<grid, block, 0, ak_stream(b)>>>(dbias, dy, rows, cols)
    AK_LAYER_SPECIALISE(ak_layer_common2(dbias.dtype, dy.dtype), LAUNCH, 0);
#undef LAUNCH
    AK_CUDA_LAUNCHED(b, "ak_bias_grad", "bias_grad_kernel");
    return AK_OK;
}

template <int F> __global__ void relu_kernel(ak_tensor y, ak_tensor x)
{
    const fpe_format_id fy = AK_LAYER_FMT(F, y.dtype), fx = AK_LAYER_FMT(F, x.dtype);
    AK_LAYER_GRID_STRIDE(i, x.n)
    ak_store_bits(fy, y.data, i, ak_relu_elem(fy, fx, ak_load_bits(fx, x.data, i)));
}

extern "C" int ak_cuda_relu(ak_backend *b, ak_tensor y, ak_tensor x)
{
    const unsigned grid = ak_grid(b, x.n, AK_CUDA_BLOCK);
#define LAUNCH(F, unused) relu_kernel<F><<<grid, AK_CUDA_BLOCK, 0, ak_stream(b)>>>(y, x)
    AK_LAYER_SPECIALISE(ak_layer_common2(y.dtype, x.dtype), LAUNCH, 0);
#undef LAUNCH
    AK_CUDA_LAUNCHED(b, "ak_relu", "relu_kernel");
    return AK_OK;
}

template <int F> __global__ void relu_backward_kernel(ak_tensor dx, ak_tensor dy, ak_tensor x)
{
    const fpe_format_id fdx = AK_LAYER_FMT(F, dx.dtype), fdy = AK_LAYER_FMT(F, dy.dtype),
                        fx = AK_LAYER_FMT(F, x.dtype);
    AK_LAYER_GRID_STRIDE(i, x.n)
    {
        const uint32_t g = ak_load_bits(fdy, dy.data, i), v = ak_load_bits(fx, x.data, i);
        ak_store_bits(fdx, dx.data, i, ak_relu_backward_elem(fdx, fdy, fx, g, v));
    }
}

extern "C" int ak_cuda_relu_backward(ak_backend *b, ak_tensor dx, ak_tensor dy, ak_tensor x)
{
    const unsigned grid = ak_grid(b, x.n, AK_CUDA_BLOCK);
#define LAUNCH(F, unused)                                                                          \
    relu_backward_kernel<F><<<grid, AK_CUDA_BLOCK, 0, ak_stream(b)>>>(dx, dy, x)
    AK_LAYER_SPECIALISE(ak_layer_common3(dx.dtype, dy.dtype, x.dtype), LAUNCH, 0);
#undef LAUNCH
    AK_CUDA_LAUNCHED(b, "ak_relu_backward", "relu_backward_kernel");
    return AK_OK;
}

/* Max-pooling: one thread per window o = (plane, oh, ow); its top-left
 * element is x[plane][2oh][2ow]. */
__device__ __forceinline__ size_t window_origin(size_t o, size_t h, size_t w)
{
    const size_t wo = w / 2, ho = h / 2;
    const size_t ow = o % wo, t = o / wo;
    const size_t oh = t % ho, p = t / ho;
    return (p * h + 2 * oh) * w + 2 * ow;
}

template <int F>
__global__ void maxpool2_forward_kernel(size_t n_out, size_t h, size_t w, ak_tensor y, ak_tensor x)
{
    const fpe_format_id fy = AK_LAYER_FMT(F, y.dtype), fx = AK_LAYER_FMT(F, x.dtype);
    AK_LAYER_GRID_STRIDE(o, n_out)
    {
        const size_t i00 = window_origin(o, h, w);
        const uint32_t v[4] = {ak_load_bits(fx, x.data, i00), ak_load_bits(fx, x.data, i00 + 1),
                               ak_load_bits(fx, x.data, i00 + w),
                               ak_load_bits(fx, x.data, i00 + w + 1)};
        const int k = ak_maxpool2_pick(fx, v[0], v[1], v[2], v[3]);
        ak_store_bits(fy, y.data, o, ak_layer_convert(fx, fy, v[k]));
    }
}

extern "C" int ak_cuda_maxpool2_forward(ak_backend *b, size_t planes, size_t h, size_t w,
                                        ak_tensor y, ak_tensor x)
{
    (void)planes;
    const size_t n_out = y.n;
    const unsigned grid = ak_grid(b, n_out, AK_CUDA_BLOCK);
#define LAUNCH(F, unused)                                                                          \
    maxpool2_forward_kernel<F><<<grid, AK_CUDA_BLOCK, 0, ak_stream(b)>>>(n_out, h, w, y, x)
    AK_LAYER_SPECIALISE(ak_layer_common2(y.dtype, x.dtype), LAUNCH, 0);
#undef LAUNCH
    AK_CUDA_LAUNCHED(b, "ak_maxpool2_forward", "maxpool2_forward_kernel");
    return AK_OK;
}

template <int F>
__global__ void maxpool2_backward_kernel(size_t n_out, size_t h, size_t w, ak_tensor dx,
                                         ak_tensor dy, ak_tensor x)
{
    const fpe_format_id fdx = AK_LAYER_FMT(F, dx.dtype), fdy = AK_LAYER_FMT(F, dy.dtype),
                        fx = AK_LAYER_FMT(F, x.dtype);
    AK_LAYER_GRID_STRIDE(o, n_out)
    {
        const size_t i00 = window_origin(o, h, w);
        const size_t at[4] = {i00, i00 + 1, i00 + w, i00 + w + 1};
        const int k =
            ak_maxpool2_pick(fx, ak_load_bits(fx, x.data, at[0]), ak_load_bits(fx, x.data, at[1]),
                             ak_load_bits(fx, x.data, at[2]), ak_load_bits(fx, x.data, at[3]));
        const uint32_t g = ak_layer_convert(fdy, fdx, ak_load_bits(fdy, dy.data, o));
        for (int j = 0; j < 4; j++)
            ak_store_bits(fdx, dx.data, at[j], j == k ? g : 0);
    }
}

extern "C" int ak_cuda_maxpool2_backward(ak_backend *b, size_t planes, size_t h, size_t w,
                                         ak_tensor dx, ak_tensor dy, ak_tensor x)
{
    (void)planes;
    const size_t n_out = dy.n;
    const unsigned grid = ak_grid(b, n_out, AK_CUDA_BLOCK);
#define LAUNCH(F, unused)                                                                          \
    maxpool2_backward_kernel<F><<<grid, AK_CUDA_BLOCK, 0, ak_stream(b)>>>(n_out, h, w, dx, dy, x)
    AK_LAYER_SPECIALISE(ak_layer_common3(dx.dtype, dy.dtype, x.dtype), LAUNCH, 0);
#undef LAUNCH
    AK_CUDA_LAUNCHED(b, "ak_maxpool2_backward", "maxpool2_backward_kernel");
    return AK_OK;
}
