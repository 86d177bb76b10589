/* cuda/loss.cu: softmax cross-entropy and mean squared error on the GPU.
 * The element code is kernels/elem/layers.h, the same as the cpu's.  Each
 * loss is two kernels on the backend's stream: one that computes per row
 * (softmax) or per block (mse) in double, writes the gradients and leaves
 * partial losses in stream-ordered scratch memory, and a one-block kernel
 * that adds them in a fixed order and writes the outputs.  No atomics, no
 * host waits; the result does not depend on scheduling. */
#include <climits>

#include "cuda_backend.h"
#include "elem/layers.h"

#define FULL_MASK 0xFFFFFFFFu

/* ---- block reductions (blockDim.x a multiple of 32, at most 1024) ----------
 * Every thread gets the result; shared holds 32 entries and is free again
 * on return. */
__device__ double block_sum(double v, double *shared)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(FULL_MASK, v, o);
    if ((threadIdx.x & 31) == 0) shared[threadIdx.x >> 5] = v;
    __syncthreads();
    v = shared[0];
    for (unsigned k = 1; k < blockDim.x >> 5; k++)
        v += shared[k];
    __syncthreads();
    return v;
}

/* A row's running maximum and its index, ordered by ak_xent_ranks_above. */
struct row_max {
    double value;
    long long index;
};

__device__ row_max higher(row_max a, row_max b)
{
    return ak_xent_ranks_above(b.value, b.index, a.value, a.index) ? b : a;
}

__device__ row_max block_row_max(row_max v, row_max *shared)
{
    for (int o = 16; o > 0; o >>= 1) {
        row_max u;
        u.value = __shfl_xor_sync(FULL_MASK, v.value, o);
        u.index = __shfl_xor_sync(FULL_MASK, v.index, o);
        v = higher(v, u);
    }
    if ((threadIdx.x & 31) == 0) shared[threadIdx.x >> 5] = v;
    __syncthreads();
    v = shared[0];
    for (unsigned k = 1; k < blockDim.x >> 5; k++)
        v = higher(v, shared[k]);
    __syncthreads();
    return v;
}

/* ---- softmax cross-entropy ------------------------------------------------- */
__device__ __forceinline__ double logit_at(fpe_format_id f, const ak_tensor &logits, size_t i)
{
    return ak_elem_value(f, ak_load_bits(f, logits.data, i));
}

/* The block's first maximal element of a row of t (every thread gets it). */
__device__ row_max block_row_argmax(fpe_format_id f, const ak_tensor &t, size_t row, size_t classes,
                                    row_max *shared)
{
    row_max mx;
    mx.value = -INFINITY; /* ranks below every logit: its index is last */
    mx.index = LLONG_MAX;
    for (size_t j = threadIdx.x; j < classes; j += blockDim.x) {
        row_max c;
        c.value = logit_at(f, t, row + j);
        c.index = (long long)j;
        mx = higher(mx, c);
    }
    return block_row_max(mx, shared);
}

/* One block per row (grid-stride over rows). */
__global__ void xent_rows_kernel(size_t batch, size_t classes, ak_tensor logits,
                                 const int32_t *labels, const float *scale, ak_tensor dlogits,
                                 double *row_loss, int *row_hit)
{
    __shared__ row_max shared_max[32];
    __shared__ double shared_sum[32];
    const fpe_format_id fl = (fpe_format_id)logits.dtype, fd = (fpe_format_id)dlogits.dtype;
    const double g_scale = scale ? (double)*scale : 1.0;
    for (size_t r = blockIdx.x; r < batch; r += gridDim.x) {
        const size_t row = r * classes;
        const row_max mx = block_row_argmax(fl, logits, row, classes, shared_max);
        const int32_t label = labels[r];
        const bool label_ok = label >= 0 && (size_t)label < classes;
        /* a bad label makes the row NaN and reads nothing outside it */
        const double m = label_ok ? mx.value : ak_layer_nan();
        const size_t amax = (size_t)mx.index;
        double s = 0.0;
        if (ak_xent_row_ok(m))
            for (size_t j = threadIdx.x; j < classes; j += blockDim.x)
                if (j != amax) s += ak_xent_exp(logit_at(fl, logits, row + j), m);
        const double s_rest = block_sum(s, shared_sum);
        if (threadIdx.x == 0) {
            const double x_label = label_ok ? logit_at(fl, logits, row + (size_t)label) : 0.0;
            row_loss[r] = ak_xent_row_loss(m, s_rest, x_label);
            row_hit[r] = label_ok && amax == (size_t)label;
        }
        if (!dlogits.data) continue;
        for (size_t j = threadIdx.x; j < classes; j += blockDim.x) {
            const double g = ak_xent_grad(logit_at(fl, logits, row + j), m, s_rest, j == amax,
                                          label_ok && j == (size_t)label, batch, g_scale);
            ak_store_bits(fd, dlogits.data, row + j, ak_layer_from_f64(fd, g));
        }
    }
}

#define TOTAL_BLOCK 1024

/* After the launches of a loss: frees its scratch memory (stream-ordered,
 * after the kernels) whether or not they launched, then reports e. */
static int finish(ak_backend *b, const char *call, void *scratch, cudaError_t e)
{
    const cudaError_t freed = scratch ? cudaFreeAsync(scratch, ak_stream(b)) : cudaSuccess;
    if (e != cudaSuccess)
        return ak_fail(b, AK_EDEVICE, call, "launching its kernels: %s", cudaGetErrorString(e));
    if (freed != cudaSuccess)
        return ak_fail(b, AK_EDEVICE, call, "cudaFreeAsync: %s", cudaGetErrorString(freed));
    return AK_OK;
}

__global__ void xent_total_kernel(size_t batch, const double *row_loss, const int *row_hit,
                                  float *loss, int32_t *correct)
{
    __shared__ double shared_sum[32];
    double s = 0.0, hits = 0.0; /* hits < 2^31: exact in double */
    for (size_t r = threadIdx.x; r < batch; r += blockDim.x) {
        s += row_loss[r];
        hits += row_hit[r];
    }
    s = block_sum(s, shared_sum);
    hits = block_sum(hits, shared_sum);
    if (threadIdx.x != 0) return;
    ak_layer_store_f32(loss, s / (double)batch); /* batch 0: NaN */
    if (correct) *correct = (int32_t)hits;
}

extern "C" int ak_cuda_softmax_xent(ak_backend *b, size_t batch, size_t classes, ak_tensor logits,
                                    const int32_t *labels, const float *scale, float *loss,
                                    ak_tensor dlogits, int32_t *correct)
{
    static const char call[] = "ak_softmax_xent";
    const cudaStream_t stream = ak_stream(b);
    void *scratch = NULL;
    if (batch > 0)
        AK_CUDA_TRY(b, call,
                    cudaMallocAsync(&scratch, batch * (sizeof(double) + sizeof(int)), stream));
    double *row_loss = (double *)scratch;
    int *row_hit = (int *)(row_loss + batch);
    if (batch > 0) {
        const unsigned block = classes <= 32 ? 32 : classes <= 1024 ? 128 : 256;
        xent_rows_kernel<<<ak_grid(b, batch, 1), block, 0, stream>>>(
            batch, classes, logits, labels, scale, dlogits, row_loss, row_hit);
    }
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) {
        xent_total_kernel<<<1, TOTAL_BLOCK, 0, stream>>>(batch, row_loss, row_hit, loss, correct);
        e = cudaGetLastError();
    }
    return finish(b, call, scratch, e);
}

/* ---- mean squared error ------------------------------------------------------ */
__global__ void mse_partial_kernel(ak_tensor pred, ak_tensor target, const float *scale,
                                   ak_tensor dpred, double *partial)
{
    __shared__ double shared_sum[32];
    const fpe_format_id fp = (fpe_format_id)pred.dtype, ft = (fpe_format_id)target.dtype,
                        fd = (fpe_format_id)dpred.dtype;
    const double g_scale = scale ? (double)*scale : 1.0;
    double s = 0.0;
    AK_LAYER_GRID_STRIDE(i, pred.n)
    {
        const double d =
            ak_mse_diff(fp, ft, ak_load_bits(fp, pred.data, i), ak_load_bits(ft, target.data, i));
        s += d * d;
        if (dpred.data)
            ak_store_bits(fd, dpred.data, i,
                          ak_layer_from_f64(fd, ak_mse_grad(d, pred.n, g_scale)));
    }
    s = block_sum(s, shared_sum);
    if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

__global__ void mse_total_kernel(size_t parts, const double *partial, size_t n, float *loss)
{
    __shared__ double shared_sum[32];
    double s = 0.0;
    for (size_t k = threadIdx.x; k < parts; k += blockDim.x)
        s += partial[k];
    s = block_sum(s, shared_sum);
    if (threadIdx.x == 0) ak_layer_store_f32(loss, s / (double)n); /* n 0: NaN */
}

extern "C" int ak_cuda_mse(ak_backend *b, ak_tensor pred, ak_tensor target, const float *scale,
                           float *loss, ak_tensor dpred)
{
    static const char call[] = "ak_mse";
    const cudaStream_t stream = ak_stream(b);
    const unsigned parts = pred.n > 0 ? ak_grid(b, pred.n, AK_CUDA_BLOCK) : 0;
    void *scratch = NULL;
    if (parts > 0) AK_CUDA_TRY(b, call, cudaMallocAsync(&scratch, parts * sizeof(double), stream));
    double *partial = (double *)scratch;
    if (parts > 0)
        mse_partial_kernel<<<parts, AK_CUDA_BLOCK, 0, stream>>>(pred, target, scale, dpred,
                                                                partial);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) {
        mse_total_kernel<<<1, TOTAL_BLOCK, 0, stream>>>(parts, partial, pred.n, loss);
        e = cudaGetLastError();
    }
    return finish(b, call, scratch, e);
}

/* ---- the loss in a low format: negative log-likelihood ---------------------- */
/* One block per row (grid-stride over rows): whether the row's first
 * maximal logp is its label, and its gradients (+0 but at the label; NaN
 * for a bad label). */
__global__ void nll_rows_kernel(size_t batch, size_t classes, ak_tensor logp, const int32_t *labels,
                                const float *scale, ak_tensor dlogp, int *row_hit)
{
    __shared__ row_max shared_max[32];
    const fpe_format_id f = (fpe_format_id)logp.dtype;
    const uint32_t g = ak_nll_grad_bits(f, scale ? (double)*scale : 1.0, batch);
    fpe_env env = fpe_env_default();
    const uint32_t nan = fpe_default_nan(f, &env);
    for (size_t r = blockIdx.x; r < batch; r += gridDim.x) {
        const size_t row = r * classes;
        const row_max mx = block_row_argmax(f, logp, row, classes, shared_max);
        const int32_t label = labels[r];
        const bool label_ok = label >= 0 && (size_t)label < classes;
        if (threadIdx.x == 0) row_hit[r] = label_ok && (size_t)mx.index == (size_t)label;
        if (!dlogp.data) continue;
        for (size_t j = threadIdx.x; j < classes; j += blockDim.x)
            ak_store_bits(f, dlogp.data, row + j, !label_ok ? nan : j == (size_t)label ? g : 0u);
    }
}

/* One block of AK_NLL_LANES threads: lane t's fp32 sum over rows t, t + 32,
 * ..., the lanes added in order by thread 0, the loss and the count. */
__global__ void nll_total_kernel(size_t batch, size_t classes, ak_tensor logp,
                                 const int32_t *labels, const int *row_hit, float *loss,
                                 int32_t *correct)
{
    __shared__ uint32_t lane[AK_NLL_LANES];
    __shared__ int hits[AK_NLL_LANES];
    const fpe_format_id f = (fpe_format_id)logp.dtype;
    fpe_env env = fpe_env_default();
    uint32_t acc = 0;
    int h = 0;
    for (size_t r = threadIdx.x; r < batch; r += AK_NLL_LANES) {
        const int32_t label = labels[r];
        const bool label_ok = label >= 0 && (size_t)label < classes;
        const uint32_t x = label_ok ? ak_load_bits(f, logp.data, r * classes + (size_t)label)
                                    : fpe_default_nan(f, &env);
        acc = ak_nll_lane_sub(acc, f, x);
        h += row_hit[r];
    }
    lane[threadIdx.x] = acc;
    hits[threadIdx.x] = h;
    __syncthreads();
    if (threadIdx.x != 0) return;
    uint32_t total = 0;
    int32_t all = 0;
    for (int t = 0; t < AK_NLL_LANES; t++) {
        total = ak_nll_f32_add(total, lane[t]);
        all += hits[t];
    }
    const uint32_t l = ak_nll_loss_bits(f, total, batch);
    *loss = ak_f32_from_bits(ak_layer_from_f64(FPE_FMT_F32, ak_elem_value(f, l)));
    if (correct) *correct = all;
}

extern "C" int ak_cuda_nll_loss(ak_backend *b, size_t batch, size_t classes, ak_tensor logp,
                                const int32_t *labels, const float *scale, float *loss,
                                ak_tensor dlogp, int32_t *correct)
{
    static const char call[] = "ak_nll_loss";
    const cudaStream_t stream = ak_stream(b);
    void *scratch = NULL;
    if (batch > 0) AK_CUDA_TRY(b, call, cudaMallocAsync(&scratch, batch * sizeof(int), stream));
    int *row_hit = (int *)scratch;
    if (batch > 0) {
        const unsigned block = classes <= 32 ? 32 : classes <= 1024 ? 128 : 256;
        nll_rows_kernel<<<ak_grid(b, batch, 1), block, 0, stream>>>(batch, classes, logp, labels,
                                                                    scale, dlogp, row_hit);
    }
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) {
        nll_total_kernel<<<1, AK_NLL_LANES, 0, stream>>>(batch, classes, logp, labels, row_hit,
                                                         loss, correct);
        e = cudaGetLastError();
    }
    return finish(b, call, scratch, e);
}
