/* cuda/grad.cu: gradient accumulation, sums of squares and norm clipping on
 * the GPU through the element code of elem/grad.h.
 *
 * ak_accumulate is one thread per element.  The two list operations take a
 * table of up to GT_TENSORS tensors by value per launch (a kernel parameter:
 * no copy, no host wait), cut into chunks of GT_CHUNK elements numbered
 * across the table; block j takes chunks j, j + grid, ...  (the layout of
 * cuda/unscale.cu's table).  Scalars are read on the device: *sumsq by
 * every thread of the clip, which computes the coefficient itself.
 *
 * Sum of squares: each thread sums its elements with the carried error
 * (ak_csum), a block adds its threads' sums in a tree (5 warp-shuffle
 * levels, then 3 over the 8 warps), and thread 0 atomicAdds the block's sum
 * to *sumsq.  The grid is capped at GT_SUM_BLOCKS_PER_SM blocks per SM, which
 * bounds the number of atomic additions, the one error term that grows with
 * the list (kernels/grad.c). */
#include <string.h>

#include "cuda_backend.h"
#include "elem/grad.h"

#define GT_TENSORS           128
#define GT_CHUNK             16384
#define GT_SUM_BLOCKS_PER_SM 8

static_assert(AK_CUDA_BLOCK == 256, "the block reduction assumes 8 warps");

namespace { /* this file's kernels */

typedef struct grad_table {
    void *data[GT_TENSORS];
    uint64_t n[GT_TENSORS];
    uint64_t chunk_end[GT_TENSORS]; /* chunks of tensors 0..t together */
    uint8_t dtype[GT_TENSORS];
    uint32_t count;
} grad_table;
/* the kernels' parameters must fit the classic 4 KB limit */
static_assert(sizeof(grad_table) + 4 * sizeof(void *) <= 4096, "grad_table is too large");

/* Where chunk c lies: its tensor *t (advanced from its previous value: the
 * chunks a block visits only grow) and its elements [*begin, *end). */
__device__ __forceinline__ void chunk_at(const grad_table &tab, uint64_t c, uint32_t *t,
                                         uint64_t *begin, uint64_t *end)
{
    while (tab.chunk_end[*t] <= c)
        (*t)++;
    *begin = (c - (*t > 0 ? tab.chunk_end[*t - 1] : 0)) * GT_CHUNK;
    *end = *begin + GT_CHUNK < tab.n[*t] ? *begin + GT_CHUNK : tab.n[*t];
}

__device__ __forceinline__ uint64_t chunks_of(const grad_table &tab)
{
    return tab.count > 0 ? tab.chunk_end[tab.count - 1] : 0;
}

template <int F> __global__ void accumulate_kernel(ak_tensor y, ak_tensor x)
{
    const fpe_format_id fy = AK_LAYER_FMT(F, y.dtype), fx = AK_LAYER_FMT(F, x.dtype);
    AK_LAYER_GRID_STRIDE(i, y.n)
    {
        const uint32_t v = ak_load_bits(fy, y.data, i);
        ak_store_bits(fy, y.data, i, ak_accumulate_elem(fy, fx, v, ak_load_bits(fx, x.data, i)));
    }
}

__global__ void sum_squares_kernel(const __grid_constant__ grad_table tab, double *sumsq)
{
    ak_csum acc = {0.0, 0.0};
    const uint64_t chunks = chunks_of(tab);
    uint32_t t = 0;
    for (uint64_t c = blockIdx.x; c < chunks; c += gridDim.x) {
        uint64_t begin, end;
        chunk_at(tab, c, &t, &begin, &end);
        ak_sum_squares_span((fpe_format_id)tab.dtype[t], tab.data[t], begin + threadIdx.x, end,
                            blockDim.x, &acc);
    }
    double v = ak_csum_value(acc);
    __shared__ double warp_sums[AK_CUDA_BLOCK / 32];
    for (int off = 16; off > 0; off /= 2)
        v += __shfl_down_sync(0xFFFFFFFFu, v, off);
    if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        v = threadIdx.x < AK_CUDA_BLOCK / 32 ? warp_sums[threadIdx.x] : 0.0;
        for (int off = AK_CUDA_BLOCK / 64; off > 0; off /= 2)
            v += __shfl_down_sync(0xFFFFFFFFu, v, off);
        if (threadIdx.x == 0) atomicAdd(sumsq, v);
    }
}

__global__ void clip_kernel(const __grid_constant__ grad_table tab, const double *sumsq,
                            float max_norm, float *coef_out)
{
    const float coef = ak_clip_coef(*sumsq, max_norm);
    if (coef_out && blockIdx.x == 0 && threadIdx.x == 0) *coef_out = coef;
    if (!ak_clip_applies(coef)) return;
    const ak_factor k = ak_factor_of(coef);
    const uint64_t chunks = chunks_of(tab);
    uint32_t t = 0;
    for (uint64_t c = blockIdx.x; c < chunks; c += gridDim.x) {
        uint64_t begin, end;
        chunk_at(tab, c, &t, &begin, &end);
        ak_scale_span((fpe_format_id)tab.dtype[t], tab.data[t], begin + threadIdx.x, end,
                      blockDim.x, k, true);
    }
}

/* Calls launch(table, chunks) for the nonempty tensors of xs, GT_TENSORS at
 * a time; with no nonempty tensor, once with an empty table when
 * launch_if_empty. */
template <typename Launch>
int over_tables(const ak_tensor *xs, size_t count, bool launch_if_empty, Launch launch)
{
    grad_table tab;
    memset(&tab, 0, sizeof tab);
    uint64_t chunks = 0;
    bool launched = false;
    for (size_t i = 0; i < count; i++) {
        if (xs[i].n == 0) continue;
        const uint32_t t = tab.count++;
        tab.data[t] = xs[i].data;
        tab.n[t] = xs[i].n;
        tab.dtype[t] = (uint8_t)xs[i].dtype;
        chunks += (xs[i].n + GT_CHUNK - 1) / GT_CHUNK;
        tab.chunk_end[t] = chunks;
        if (tab.count == GT_TENSORS) {
            const int rc = launch(tab, chunks);
            if (rc) return rc;
            launched = true;
            tab.count = 0;
            chunks = 0;
        }
    }
    if (tab.count > 0 || (!launched && launch_if_empty)) return launch(tab, chunks);
    return AK_OK;
}

} // namespace

extern "C" int ak_cuda_accumulate(ak_backend *b, ak_tensor y, ak_tensor x)
{
    const unsigned grid = ak_grid(b, y.n, AK_CUDA_BLOCK);
#define LAUNCH(F, unused) accumulate_kernel<F><<<grid, AK_CUDA_BLOCK, 0, ak_stream(b)>>>(y, x)
    AK_LAYER_SPECIALISE(ak_layer_common2(y.dtype, x.dtype), LAUNCH, 0);
#undef LAUNCH
    AK_CUDA_LAUNCHED(b, "ak_accumulate", "accumulate_kernel");
    return AK_OK;
}

extern "C" int ak_cuda_sum_squares(ak_backend *b, const ak_tensor *xs, size_t count, double *sumsq)
{
    const uint64_t cap = (uint64_t)ak_cuda_of(b)->sm_count * GT_SUM_BLOCKS_PER_SM;
    return over_tables(xs, count, false, [&](const grad_table &tab, uint64_t chunks) {
        const unsigned grid = (unsigned)(chunks < cap ? chunks : cap);
        sum_squares_kernel<<<grid, AK_CUDA_BLOCK, 0, ak_stream(b)>>>(tab, sumsq);
        AK_CUDA_LAUNCHED(b, "ak_sum_squares", "sum_squares_kernel");
        return AK_OK;
    });
}

extern "C" int ak_cuda_clip_by_norm(ak_backend *b, const ak_tensor *xs, size_t count,
                                    const double *sumsq, float max_norm, float *coef_out)
{
    return over_tables(xs, count, coef_out != NULL, [&](const grad_table &tab, uint64_t chunks) {
        /* a block per chunk, up to the device's fill; one block for coef_out alone */
        const unsigned grid = ak_grid(b, chunks, 1);
        clip_kernel<<<grid, AK_CUDA_BLOCK, 0, ak_stream(b)>>>(tab, sumsq, max_norm, coef_out);
        AK_CUDA_LAUNCHED(b, "ak_clip_by_norm", "clip_kernel");
        return AK_OK;
    });
}
