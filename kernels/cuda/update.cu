/* cuda/update.cu: the optimizer step and update on the device.  One kernel
 * per call; found-inf, the state and the loss stay in device memory, so a
 * step never waits for the host.  The element code is elem/update.h, shared
 * with the cpu backend (the arithmetic is spelled out in kernels/update.c). */
#include <cuda_bf16.h>

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

/* ---- the fast path: fp32 masters, round to nearest even, nothing measured ----
 * The same arithmetic as ak_update_elem (elem/update.h's ak_opt_delta_k,
 * then the sum rounded to fp32), four elements per thread with 16-byte
 * master loads and stores.  The model copy is written with the hardware's
 * round-to-nearest conversion: bench/gpu's exhaustive run found
 * __float2half_rn and __float2bfloat16_rn equal to the emulator's RNE
 * conversion for every non-NaN fp32 input on the H100 (docs/GPU_NUMERICS.md);
 * a NaN here is always AK_CANONICAL_NAN_F32 (ak_canonical_nan), whose
 * conversion under the emulator's x86 NaN rules is written out. */
template <int MODEL> __device__ uint16_t model_bits(float u)
{
    if (u != u) return MODEL == AK_F16 ? 0x7E00u : 0x7FC0u; /* 0x7FC00000 quieted, payload kept */
    if (MODEL == AK_F16) return __half_as_ushort(__float2half_rn(u));
    return __bfloat16_as_ushort(__float2bfloat16_rn(u));
}

template <int GRAD> __device__ float grad_at(const void *g, size_t i)
{
    if (GRAD == AK_F32) return ((const float *)g)[i];
    return __uint_as_float(ak_cuda_widen16<GRAD>(((const uint16_t *)g)[i]));
}

template <int KIND, int MODEL>
__device__ void fast_elem(const ak_opt_scalars &s, const ak_param &p, size_t i, float w, float g,
                          float *u, uint16_t *m)
{
    const float delta = ak_canonical_nan(ak_opt_delta_k(KIND, &s, &p, i, w, g));
    *u = ak_canonical_nan(w + delta);
    if (MODEL != AK_F32) *m = model_bits<MODEL>(*u);
}

/* MODEL == AK_F32: no model copy (O0). */
template <int KIND, int MODEL, int GRAD>
__global__ void update_fast_kernel(ak_opt_config cfg, ak_param p, const ak_opt_state *state,
                                   const float *found_inf, size_t n)
{
    if (found_inf && *found_inf != 0.0f) return;
    const ak_opt_scalars s =
        ak_opt_scalars_of(&cfg, &p, state->step, state->beta1_pow, state->beta2_pow);
    float *master = (float *)p.master.data;
    uint16_t *model = (uint16_t *)p.model.data;
    const size_t stride = (size_t)gridDim.x * blockDim.x,
                 first = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    const size_t n4 = n / 4;
    for (size_t q = first; q < n4; q += stride) {
        const float4 w = ((const float4 *)master)[q];
        const size_t i = 4 * q;
        float4 u;
        uint16_t m[4];
        fast_elem<KIND, MODEL>(s, p, i, w.x, grad_at<GRAD>(p.grad.data, i), &u.x, &m[0]);
        fast_elem<KIND, MODEL>(s, p, i + 1, w.y, grad_at<GRAD>(p.grad.data, i + 1), &u.y, &m[1]);
        fast_elem<KIND, MODEL>(s, p, i + 2, w.z, grad_at<GRAD>(p.grad.data, i + 2), &u.z, &m[2]);
        fast_elem<KIND, MODEL>(s, p, i + 3, w.w, grad_at<GRAD>(p.grad.data, i + 3), &u.w, &m[3]);
        ((float4 *)master)[q] = u;
        if (MODEL != AK_F32)
            ((uint2 *)model)[q] =
                make_uint2(m[0] | (uint32_t)m[1] << 16, m[2] | (uint32_t)m[3] << 16);
    }
    for (size_t i = 4 * n4 + first; i < n; i += stride) {
        float u;
        uint16_t m;
        fast_elem<KIND, MODEL>(s, p, i, master[i], grad_at<GRAD>(p.grad.data, i), &u, &m);
        master[i] = u;
        if (MODEL != AK_F32) model[i] = m;
    }
}

template <int KIND, int MODEL>
bool launch_fast_grad(ak_backend *b, unsigned grid, const ak_opt_config *cfg, const ak_param *p,
                      const ak_opt_state *state, const float *found_inf, size_t n)
{
    cudaStream_t st = ak_stream(b);
    switch (p->grad.dtype) {
    case AK_F32:
        update_fast_kernel<KIND, MODEL, AK_F32>
            <<<grid, AK_CUDA_BLOCK, 0, st>>>(*cfg, *p, state, found_inf, n);
        return true;
    case AK_F16:
        update_fast_kernel<KIND, MODEL, AK_F16>
            <<<grid, AK_CUDA_BLOCK, 0, st>>>(*cfg, *p, state, found_inf, n);
        return true;
    case AK_BF16:
        update_fast_kernel<KIND, MODEL, AK_BF16>
            <<<grid, AK_CUDA_BLOCK, 0, st>>>(*cfg, *p, state, found_inf, n);
        return true;
    default: return false;
    }
}

template <int KIND>
bool launch_fast_model(ak_backend *b, unsigned grid, const ak_opt_config *cfg, const ak_param *p,
                       const ak_opt_state *state, const float *found_inf, size_t n)
{
    if (!p->model.data) return launch_fast_grad<KIND, AK_F32>(b, grid, cfg, p, state, found_inf, n);
    if (p->model.dtype == AK_F16)
        return launch_fast_grad<KIND, AK_F16>(b, grid, cfg, p, state, found_inf, n);
    if (p->model.dtype == AK_BF16)
        return launch_fast_grad<KIND, AK_BF16>(b, grid, cfg, p, state, found_inf, n);
    return false;
}

/* The fast path when the call allows it: fp32 masters, round to nearest
 * even, no rounding loss asked for, 16-byte aligned masters and 8-byte
 * aligned model copies.  Returns whether it launched. */
bool update_fast(ak_backend *b, const ak_opt_config *cfg, const ak_param *p,
                 const ak_opt_state *state, const float *found_inf, size_t n)
{
    if (!p->master.data || cfg->round.mode != FPE_RNE) return false;
    if ((uintptr_t)p->master.data % 16 != 0 || (p->model.data && (uintptr_t)p->model.data % 8 != 0))
        return false;
    const unsigned grid = ak_grid(b, (n + 3) / 4, AK_CUDA_BLOCK);
    switch (cfg->kind) {
    case AK_OPT_SGD: return launch_fast_model<AK_OPT_SGD>(b, grid, cfg, p, state, found_inf, n);
    case AK_OPT_MOMENTUM:
        return launch_fast_model<AK_OPT_MOMENTUM>(b, grid, cfg, p, state, found_inf, n);
    case AK_OPT_ADAM: return launch_fast_model<AK_OPT_ADAM>(b, grid, cfg, p, state, found_inf, n);
    case AK_OPT_ADAMW: return launch_fast_model<AK_OPT_ADAMW>(b, grid, cfg, p, state, found_inf, n);
    default: return false;
    }
}

} // namespace

extern "C" int ak_cuda_update(ak_backend *b, const ak_opt_config *cfg, const ak_param *p,
                              const ak_opt_state *state, const float *found_inf,
                              ak_update_loss *loss)
{
    const size_t n = p->master.data ? p->master.n : p->model.n;
    if (!loss && update_fast(b, cfg, p, state, found_inf, n)) {
        AK_CUDA_LAUNCHED(b, "ak_update", "update_fast_kernel");
        return AK_OK;
    }
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
