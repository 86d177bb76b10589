/* cuda/conv.cu: conv2d on the GPU: the index passes of elem/im2col.h as
 * grid-stride kernels, the products through the backend's GEMM (cuBLAS),
 * workspace stream-ordered on ak_stream(b). */
#include "cuda_backend.h"
#include "elem/im2col.h"

#define GRID_STRIDE(i, total)                                                                      \
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (total);                    \
         i += (size_t)gridDim.x * blockDim.x)

template <typename T> __global__ void im2col_kernel(T *col, const T *x, ak_conv_geom g)
{
    GRID_STRIDE(i, g.kk * g.np)
    {
        const size_t src = ak_im2col_src(&g, i);
        col[i] = src == AK_IM2COL_PAD ? (T)0 : x[src];
    }
}

/* dy (NCHW) -> its channel-major matrix */
template <typename T> __global__ void to_channel_major_kernel(T *cm, const T *nchw, ak_conv_geom g)
{
    GRID_STRIDE(i, g.out_ch * g.np) { cm[i] = nchw[ak_conv_nchw_index(&g, i)]; }
}

__global__ void output_kernel(void *y, fpe_format_id yf, fpe_format_id af, const void *ycm,
                              fpe_format_id bf, const void *bias, ak_conv_geom g)
{
    GRID_STRIDE(i, g.out_ch * g.np)
    {
        ak_store_bits(yf, y, i, ak_conv_output_k(&g, yf, af, ycm, bf, bias, i));
    }
}

__global__ void col2im_kernel(void *dx, fpe_format_id xf, const void *dcol, fpe_format_id df,
                              ak_conv_geom g)
{
    GRID_STRIDE(i, g.batch * g.in_ch * g.in_h * g.in_w)
    {
        ak_store_bits(xf, dx, i, ak_col2im_k(&g, df, dcol, xf, i));
    }
}

/* One block per output channel: each thread sums a strided share of the
 * channel's batch * P elements in binary64, then a tree over the block. */
#define DBIAS_BLOCK 256
__global__ void dbias_kernel(void *dbias, fpe_format_id bf, const void *dy, fpe_format_id yf,
                             ak_conv_geom g)
{
    __shared__ double part[DBIAS_BLOCK];
    const size_t o = blockIdx.x;
    double sum = 0.0;
    for (size_t j = threadIdx.x; j < g.np; j += blockDim.x)
        sum += ak_load_value(yf, dy, (j / g.p * g.out_ch + o) * g.p + j % g.p);
    part[threadIdx.x] = sum;
    __syncthreads();
    for (unsigned half = DBIAS_BLOCK / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) part[threadIdx.x] += part[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0) ak_store_bits(bf, dbias, o, ak_conv_dbias_k(bf, part[0]));
}

static int workspace(ak_backend *b, const char *call, size_t count, ak_dtype dt, void **p)
{
    *p = NULL;
    if (count == 0) return AK_OK;
    const size_t bytes = count * ak_dtype_size(dt); /* conv.c checked count * 4 */
    cudaError_t e = cudaMallocAsync(p, bytes, ak_stream(b));
    if (e != cudaSuccess) {
        *p = NULL;
        return ak_fail(b, e == cudaErrorMemoryAllocation ? AK_ENOMEM : AK_EDEVICE, call,
                       "cudaMallocAsync(%zu bytes of workspace): %s", bytes, cudaGetErrorString(e));
    }
    return AK_OK;
}

/* Frees stream-ordered, after the queued work that reads p; keeps the first error. */
static int release(ak_backend *b, const char *call, void *p, int rc)
{
    if (!p) return rc;
    cudaError_t e = cudaFreeAsync(p, ak_stream(b));
    if (e != cudaSuccess && rc == AK_OK)
        return ak_fail(b, AK_EDEVICE, call, "cudaFreeAsync: %s", cudaGetErrorString(e));
    return rc;
}

static int launch_im2col(ak_backend *b, const char *call, const ak_conv_geom *g, ak_tensor x,
                         void *col)
{
    if (g->kk * g->np == 0) return AK_OK;
    const unsigned grid = ak_grid(b, g->kk * g->np, AK_CUDA_BLOCK);
    if (x.dtype == AK_F32)
        im2col_kernel<uint32_t><<<grid, AK_CUDA_BLOCK, 0, ak_stream(b)>>>(
            (uint32_t *)col, (const uint32_t *)x.data, *g);
    else
        im2col_kernel<uint16_t><<<grid, AK_CUDA_BLOCK, 0, ak_stream(b)>>>(
            (uint16_t *)col, (const uint16_t *)x.data, *g);
    AK_CUDA_LAUNCHED(b, call, "im2col_kernel");
    return AK_OK;
}

static int forward(ak_backend *b, const ak_conv2d *c, ak_tensor y, ak_tensor x, ak_tensor w,
                   ak_tensor bias, void **col, void **ycm_own)
{
    const char *call = "ak_conv2d_forward";
    const ak_conv_geom g = ak_conv_geom_of(c);
    const ak_dtype acc_dt = ak_conv_acc_dtype(c->compute);
    /* one image, no bias, y in the accumulator's dtype: Ycm is y itself */
    const bool direct = g.batch == 1 && !bias.data && y.dtype == acc_dt;
    int rc;
    if ((rc = workspace(b, call, g.kk * g.np, x.dtype, col)) ||
        (rc = workspace(b, call, direct ? 0 : y.n, acc_dt, ycm_own)))
        return rc;
    void *ycm = direct ? y.data : *ycm_own;
    if ((rc = launch_im2col(b, call, &g, x, *col))) return rc;
    const ak_gemm_args ga = ak_conv_gemm(c->compute, g.out_ch, g.np, g.kk, w, false,
                                         ak_tensor_of(*col, g.kk * g.np, x.dtype), false,
                                         ak_tensor_of(ycm, y.n, acc_dt));
    if ((rc = b->ops->gemm(b, &ga))) return rc;
    if (!direct) {
        output_kernel<<<ak_grid(b, y.n, AK_CUDA_BLOCK), AK_CUDA_BLOCK, 0, ak_stream(b)>>>(
            y.data, (fpe_format_id)y.dtype, (fpe_format_id)acc_dt, ycm, (fpe_format_id)bias.dtype,
            bias.data, g);
        AK_CUDA_LAUNCHED(b, call, "output_kernel");
    }
    return AK_OK;
}

extern "C" int ak_cuda_conv2d_forward(ak_backend *b, const ak_conv2d *c, ak_tensor y, ak_tensor x,
                                      ak_tensor w, ak_tensor bias)
{
    void *col = NULL, *ycm_own = NULL;
    int rc = forward(b, c, y, x, w, bias, &col, &ycm_own);
    rc = release(b, "ak_conv2d_forward", col, rc);
    return release(b, "ak_conv2d_forward", ycm_own, rc);
}

static int backward(ak_backend *b, const ak_conv2d *c, ak_tensor dx, ak_tensor dw, ak_tensor dbias,
                    ak_tensor dy, ak_tensor x, ak_tensor w, void **buf, void **dycm_own)
{
    const char *call = "ak_conv2d_backward";
    const ak_conv_geom g = ak_conv_geom_of(c);
    const ak_dtype dcol_dt = ak_conv_acc_dtype(c->compute);
    /* col, then dcol once dW has read col (stream order) */
    const bool col_larger = ak_dtype_size(x.dtype) >= ak_dtype_size(dcol_dt) || !dx.data;
    int rc;
    if ((rc = workspace(b, call, g.kk * g.np, col_larger ? x.dtype : dcol_dt, buf)) ||
        (rc = workspace(b, call, g.batch > 1 ? dy.n : 0, dy.dtype, dycm_own)))
        return rc;
    void *dycm = g.batch > 1 ? *dycm_own : dy.data;
    if (g.batch > 1 && dy.n > 0) {
        const unsigned grid = ak_grid(b, dy.n, AK_CUDA_BLOCK);
        if (dy.dtype == AK_F32)
            to_channel_major_kernel<uint32_t><<<grid, AK_CUDA_BLOCK, 0, ak_stream(b)>>>(
                (uint32_t *)dycm, (const uint32_t *)dy.data, g);
        else
            to_channel_major_kernel<uint16_t><<<grid, AK_CUDA_BLOCK, 0, ak_stream(b)>>>(
                (uint16_t *)dycm, (const uint16_t *)dy.data, g);
        AK_CUDA_LAUNCHED(b, call, "to_channel_major_kernel");
    }
    const ak_tensor dyt = ak_tensor_of(dycm, dy.n, dy.dtype);
    if ((rc = launch_im2col(b, call, &g, x, *buf))) return rc;
    const ak_gemm_args gw = ak_conv_gemm(c->compute, g.out_ch, g.kk, g.np, dyt, false,
                                         ak_tensor_of(*buf, g.kk * g.np, x.dtype), true, dw);
    if ((rc = b->ops->gemm(b, &gw))) return rc;
    if (dbias.data && g.out_ch > 0) {
        dbias_kernel<<<(unsigned)g.out_ch, DBIAS_BLOCK, 0, ak_stream(b)>>>(
            dbias.data, (fpe_format_id)dbias.dtype, dy.data, (fpe_format_id)dy.dtype, g);
        AK_CUDA_LAUNCHED(b, call, "dbias_kernel");
    }
    if (dx.data && dx.n > 0) {
        const ak_gemm_args gx = ak_conv_gemm(c->compute, g.kk, g.np, g.out_ch, w, true, dyt, false,
                                             ak_tensor_of(*buf, g.kk * g.np, dcol_dt));
        if ((rc = b->ops->gemm(b, &gx))) return rc;
        col2im_kernel<<<ak_grid(b, dx.n, AK_CUDA_BLOCK), AK_CUDA_BLOCK, 0, ak_stream(b)>>>(
            dx.data, (fpe_format_id)dx.dtype, *buf, (fpe_format_id)dcol_dt, g);
        AK_CUDA_LAUNCHED(b, call, "col2im_kernel");
    }
    return AK_OK;
}

extern "C" int ak_cuda_conv2d_backward(ak_backend *b, const ak_conv2d *c, ak_tensor dx,
                                       ak_tensor dw, ak_tensor dbias, ak_tensor dy, ak_tensor x,
                                       ak_tensor w)
{
    void *buf = NULL, *dycm_own = NULL;
    int rc = backward(b, c, dx, dw, dbias, dy, x, w, &buf, &dycm_own);
    rc = release(b, "ak_conv2d_backward", buf, rc);
    return release(b, "ak_conv2d_backward", dycm_own, rc);
}
