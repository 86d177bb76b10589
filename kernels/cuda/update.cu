/* cuda/update.cu: the optimizer step and update on the device.  One kernel
 * per call; found-inf, the state and the loss stay in device memory, so a
 * step never waits for the host.  The element code is elem/update.h, shared
 * with the cpu backend (the arithmetic is spelled out in kernels/update.c). */
#include "cuda_backend.h"
#include "elem/update.h"

namespace { /* this file's kernels and helpers */

__global__ void opt_step_begin_kernel(ak_opt_config cfg, ak_opt_state *state,
                                      const float *found_inf)
{
    if (found_inf && *found_inf != 0.0f) return;
    ak_opt_step_advance(&cfg, state);
}

} // namespace

extern "C" int ak_cuda_opt_step_begin(ak_backend *b, const ak_opt_config *cfg, ak_opt_state *state,
                                      const float *found_inf)
{
    opt_step_begin_kernel<<<1, 1, 0, ak_stream(b)>>>(*cfg, state, found_inf);
    AK_CUDA_LAUNCHED(b, "ak_opt_step_begin", "opt_step_begin_kernel");
    return AK_OK;
}

namespace {

/* Sum of v over the warp, in lane 0. */
template <typename T> __device__ T warp_sum(T v)
{
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_down_sync(0xFFFFFFFFu, v, offset);
    return v;
}

/* Sums the block's accumulators and adds them to *loss once per block
 * (blockDim.x a multiple of 32, at most 1024). */
__device__ void add_block_loss(ak_update_acc acc, ak_update_loss *loss, size_t n)
{
    __shared__ unsigned long long counts[3][32];
    __shared__ double sums[2][32];
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    unsigned long long c0 = warp_sum<unsigned long long>(acc.nonzero);
    unsigned long long c1 = warp_sum<unsigned long long>(acc.lost);
    unsigned long long c2 = warp_sum<unsigned long long>(acc.predicted_lost);
    double s0 = warp_sum<double>(acc.sum_abs_err), s1 = warp_sum<double>(acc.sum_abs_intended);
    if (lane == 0) {
        counts[0][warp] = c0;
        counts[1][warp] = c1;
        counts[2][warp] = c2;
        sums[0][warp] = s0;
        sums[1][warp] = s1;
    }
    __syncthreads();
    if (warp != 0) return;
    c0 = lane < warps ? counts[0][lane] : 0;
    c1 = lane < warps ? counts[1][lane] : 0;
    c2 = lane < warps ? counts[2][lane] : 0;
    s0 = lane < warps ? sums[0][lane] : 0.0;
    s1 = lane < warps ? sums[1][lane] : 0.0;
    c0 = warp_sum(c0);
    c1 = warp_sum(c1);
    c2 = warp_sum(c2);
    s0 = warp_sum(s0);
    s1 = warp_sum(s1);
    if (lane != 0) return;
    if (blockIdx.x == 0) atomicAdd((unsigned long long *)&loss->elements, (unsigned long long)n);
    atomicAdd((unsigned long long *)&loss->nonzero, c0);
    atomicAdd((unsigned long long *)&loss->lost, c1);
    atomicAdd((unsigned long long *)&loss->predicted_lost, c2);
    atomicAdd(&loss->sum_abs_err, s0);
    atomicAdd(&loss->sum_abs_intended, s1);
}

template <bool MEASURE>
__global__ void update_kernel(ak_opt_config cfg, ak_param p, const ak_opt_state *state,
                              const float *found_inf, ak_update_loss *loss, size_t n)
{
    /* every thread reads the flag, so a skipped step costs one load */
    if (found_inf && *found_inf != 0.0f) {
        if (MEASURE && blockIdx.x == 0 && threadIdx.x == 0) loss->skipped += 1;
        return;
    }
    const ak_opt_scalars s =
        ak_opt_scalars_of(&cfg, &p, state->step, state->beta1_pow, state->beta2_pow);
    ak_update_acc acc = {0, 0, 0, 0.0, 0.0};
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride)
        ak_update_elem(&s, &p, i, MEASURE ? &acc : NULL);
    if (MEASURE) add_block_loss(acc, loss, n);
}

} // namespace

extern "C" int ak_cuda_update(ak_backend *b, const ak_opt_config *cfg, const ak_param *p,
                              const ak_opt_state *state, const float *found_inf,
                              ak_update_loss *loss)
{
    const size_t n = p->master.data ? p->master.n : p->model.n;
    const unsigned grid = ak_grid(b, n, AK_CUDA_BLOCK);
    if (loss)
        update_kernel<true>
            <<<grid, AK_CUDA_BLOCK, 0, ak_stream(b)>>>(*cfg, *p, state, found_inf, loss, n);
    else
        update_kernel<false>
            <<<grid, AK_CUDA_BLOCK, 0, ak_stream(b)>>>(*cfg, *p, state, found_inf, loss, n);
    AK_CUDA_LAUNCHED(b, "ak_update", "update_kernel");
    return AK_OK;
}
