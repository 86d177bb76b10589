/* cuda/stats.cu: ak_stats_accumulate on the GPU, in one pass over x.
 *
 * Each block first finds the class cuts for the scale (elem/stats.h; three
 * warps search at once, 32 candidates a round, reading *scale on the device),
 * then reads x with 16-byte loads in a grid-stride loop.  The histogram is
 * counted in shared memory, one sub-histogram per warp so that warps do not
 * contend; each thread also merges runs of equal bins before it adds (a
 * tensor of zeros or of one constant costs no atomics per element).  At the
 * end the block sums its warps' bins, reduces its counts with warp shuffles
 * and adds everything to *result with one 64-bit atomic per nonzero field;
 * amax is an atomicMax on the bits of a non-negative double, whose order is
 * the order of the values.  Nothing waits for the host.
 *
 * Launches cover at most kChunk elements, so every count a block keeps fits
 * in 32 bits. */
#include "cuda_backend.h"
#include "elem/stats.h"

namespace {

constexpr unsigned kBlock = 256;
constexpr unsigned kWarps = kBlock / 32;
constexpr size_t kChunk = (size_t)1 << 30;
constexpr unsigned kFullMask = 0xFFFFFFFFu;

/* The smallest mag in [1, inf) whose class is at least cls, or inf: the same
 * answer as ak_stats_first_of_class, found by the whole warp, which tests 32
 * evenly spaced candidates per round.  Every lane returns it. */
__device__ uint32_t warp_first_of_class(fpe_format_id src, fpe_format_id target, double scale_abs,
                                        int cls)
{
    const uint32_t lane = threadIdx.x % 32;
    uint32_t lo = 1, hi = fk_inf(src); /* the answer lies in [lo, hi] */
    while (lo < hi) {
        const uint32_t span = hi - lo, step = (span + 31) / 32, offset = lane * step;
        const bool at_least =
            offset < span && ak_stats_class_k(src, target, scale_abs, lo + offset) >= cls;
        const unsigned ballot = __ballot_sync(kFullMask, at_least);
        if (ballot) {
            const uint32_t first = (uint32_t)__ffs((int)ballot) - 1;
            const uint32_t below = first > 0 ? lo + (first - 1) * step + 1 : lo;
            hi = lo + first * step;
            lo = below;
        } else {
            lo += (span - 1) / step * step + 1; /* past the last candidate tested */
        }
    }
    return lo;
}

/* One thread's counts, and the run of equal bins it has not added yet. */
struct thread_tally {
    uint32_t flushed, subnormal, overflowed, amax_bits;
    uint32_t run_bin, run;
};

template <fpe_format_id F>
__device__ __forceinline__ void take(uint32_t bits, const ak_stats_cuts &c, uint32_t *hist,
                                     thread_tally &t)
{
    const uint32_t mag = ak_stats_mag_k(F, bits);
    const uint32_t bin = ak_stats_bin_k(F, mag);
    if (bin != t.run_bin) {
        atomicAdd(&hist[t.run_bin], t.run);
        t.run_bin = bin;
        t.run = 0;
    }
    t.run++;
    if (ak_stats_plain_k(c, mag)) {
        t.amax_bits = max(t.amax_bits, mag);
    } else {
        t.flushed += ak_stats_flushed_k(c, mag);
        t.subnormal += ak_stats_subnormal_k(c, mag);
        t.overflowed += ak_stats_overflowed_k(c, mag);
        t.amax_bits = max(t.amax_bits, ak_stats_amax_bits_k(c, mag));
    }
}

/* The 4 fp32 or 8 fp16/bf16 elements of a 16-byte vector, in order. */
template <fpe_format_id F>
__device__ __forceinline__ void take_vector(uint4 v, const ak_stats_cuts &c, uint32_t *hist,
                                            thread_tally &t)
{
    const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int k = 0; k < 4; k++) {
        if (F == FPE_FMT_F32) {
            take<F>(words[k], c, hist, t);
        } else {
            take<F>(words[k] & 0xFFFFu, c, hist, t); /* little-endian: the lower element first */
            take<F>(words[k] >> 16, c, hist, t);
        }
    }
}

__device__ __forceinline__ uint32_t warp_sum(uint32_t v)
{
    for (int d = 16; d > 0; d /= 2)
        v += __shfl_down_sync(kFullMask, v, d);
    return v;
}

__device__ __forceinline__ uint32_t warp_max(uint32_t v)
{
    for (int d = 16; d > 0; d /= 2)
        v = max(v, __shfl_down_sync(kFullMask, v, d));
    return v;
}

__device__ __forceinline__ void add_u64(uint64_t *field, uint64_t v)
{
    if (v) atomicAdd(reinterpret_cast<unsigned long long *>(field), (unsigned long long)v);
}

/* x: head scalar elements up to the first 16-byte boundary, nvec 16-byte
 * vectors, then tail scalar elements. */
template <fpe_format_id F>
__global__ void __launch_bounds__(kBlock)
    stats_kernel(const void *x, uint32_t head, uint32_t nvec, uint32_t tail, fpe_format_id target,
                 const float *scale, ak_stats *result)
{
    constexpr uint32_t per_vector = F == FPE_FMT_F32 ? 4 : 8;
    constexpr int kSums = 6; /* flushed, subnormal, overflowed, zero, nonzero, nonfinite */
    __shared__ uint32_t hist[kWarps][AK_HIST_BINS];
    __shared__ uint32_t cuts[3];
    __shared__ uint32_t sums[kWarps][kSums];
    __shared__ uint32_t maxes[kWarps];

    const uint32_t tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    for (uint32_t i = tid; i < kWarps * AK_HIST_BINS; i += kBlock)
        (&hist[0][0])[i] = 0;
    if (warp < 3) {
        const uint32_t scale_bits = scale ? __float_as_uint(*scale) : 0x3F800000u;
        const uint32_t cut = warp_first_of_class(F, target, ak_stats_scale_abs(scale_bits),
                                                 AK_STATS_SUBNORMAL + (int)warp);
        if (lane == 0) cuts[warp] = cut;
    }
    __syncthreads();
    ak_stats_cuts c;
    c.sub = cuts[0];
    c.normal = cuts[1];
    c.over = cuts[2];
    c.inf = fk_inf(F);

    uint32_t *my_hist = hist[warp];
    thread_tally t = {0, 0, 0, 0, AK_HIST_ZERO, 0};
    const uint32_t g = blockIdx.x * kBlock + tid, stride = gridDim.x * kBlock;
    if (g < head + tail) {
        const uint32_t i = g < head ? g : head + nvec * per_vector + (g - head);
        const uint32_t bits = F == FPE_FMT_F32 ? static_cast<const uint32_t *>(x)[i]
                                               : static_cast<const uint16_t *>(x)[i];
        take<F>(bits, c, my_hist, t);
    }
    const uint4 *v = reinterpret_cast<const uint4 *>(static_cast<const char *>(x) +
                                                     (size_t)head * (16 / per_vector));
    /* two loads in flight per thread before either is counted */
    for (uint32_t i = g; i < nvec; i += 2 * stride) {
        const uint4 a = __ldg(v + i);
        const bool has_b = i + stride < nvec;
        uint4 b = make_uint4(0, 0, 0, 0);
        if (has_b) b = __ldg(v + i + stride);
        take_vector<F>(a, c, my_hist, t);
        if (has_b) take_vector<F>(b, c, my_hist, t);
    }
    atomicAdd(&my_hist[t.run_bin], t.run);
    __syncthreads();

    /* the block's bins into the result; zero, nonzero, nonfinite from them */
    uint32_t zero = 0, nonzero = 0, nonfinite = 0;
    for (uint32_t bin = tid; bin < AK_HIST_BINS; bin += kBlock) {
        uint32_t n = 0;
        for (uint32_t w = 0; w < kWarps; w++)
            n += hist[w][bin];
        add_u64(&result->hist[bin], n);
        if (bin == AK_HIST_ZERO)
            zero = n;
        else if (bin == AK_HIST_NONFINITE)
            nonfinite = n;
        else
            nonzero += n;
    }
    const uint32_t mine[kSums] = {t.flushed, t.subnormal, t.overflowed, zero, nonzero, nonfinite};
#pragma unroll
    for (int k = 0; k < kSums; k++) {
        const uint32_t s = warp_sum(mine[k]);
        if (lane == 0) sums[warp][k] = s;
    }
    const uint32_t amax_bits = warp_max(t.amax_bits);
    if (lane == 0) maxes[warp] = amax_bits;
    __syncthreads();
    if (tid != 0) return;
    uint64_t total[kSums] = {0, 0, 0, 0, 0, 0};
    uint32_t block_amax = 0;
    for (uint32_t w = 0; w < kWarps; w++) {
        for (int k = 0; k < kSums; k++)
            total[k] += sums[w][k];
        block_amax = max(block_amax, maxes[w]);
    }
    add_u64(&result->count, total[3] + total[4] + total[5]);
    add_u64(&result->flushed, total[0]);
    add_u64(&result->subnormal, total[1]);
    add_u64(&result->overflowed, total[2]);
    add_u64(&result->zero, total[3]);
    add_u64(&result->nonzero, total[4]);
    add_u64(&result->nonfinite, total[5]);
    /* 0.0 changes no max: skipped */
    if (block_amax)
        atomicMax(reinterpret_cast<unsigned long long *>(&result->amax),
                  (unsigned long long)__double_as_longlong(ak_elem_value(F, block_amax)));
}

/* Blocks per SM that fit at once: the grid is one full wave of them. */
template <fpe_format_id F> int resident_blocks_per_sm()
{
    static const int blocks = [] {
        int n = 0;
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, stats_kernel<F>, kBlock, 0) !=
                cudaSuccess ||
            n < 1) {
            (void)cudaGetLastError(); /* not an error of the caller's work */
            n = 4;
        }
        return n;
    }();
    return blocks;
}

template <fpe_format_id F>
int launch(ak_backend *b, const char *p, size_t n, fpe_format_id target, const float *scale,
           ak_stats *result)
{
    constexpr size_t size = F == FPE_FMT_F32 ? 4 : 2, per_vector = 16 / size;
    size_t head = ((16 - (uintptr_t)p % 16) % 16) / size;
    if (head > n) head = n;
    const size_t nvec = (n - head) / per_vector, tail = n - head - nvec * per_vector;
    size_t blocks = (nvec + 2 * kBlock - 1) / (2 * kBlock);
    const size_t cap = (size_t)ak_cuda_of(b)->sm_count * resident_blocks_per_sm<F>();
    if (blocks > cap) blocks = cap;
    if (blocks == 0) blocks = 1; /* head and tail alone */
    stats_kernel<F><<<(unsigned)blocks, kBlock, 0, ak_stream(b)>>>(
        p, (uint32_t)head, (uint32_t)nvec, (uint32_t)tail, target, scale, result);
    AK_CUDA_LAUNCHED(b, "ak_stats_accumulate", "stats_kernel");
    return AK_OK;
}

} // namespace

extern "C" int ak_cuda_stats(ak_backend *b, ak_tensor x, fpe_format_id target, const float *scale,
                             ak_stats *result)
{
    const size_t size = ak_dtype_size(x.dtype);
    for (size_t done = 0; done < x.n; done += kChunk) {
        const size_t n = x.n - done < kChunk ? x.n - done : kChunk;
        const char *p = static_cast<const char *>(x.data) + done * size;
        int rc = AK_OK;
        switch (x.dtype) {
        case AK_F16: rc = launch<FPE_FMT_F16>(b, p, n, target, scale, result); break;
        case AK_BF16: rc = launch<FPE_FMT_BF16>(b, p, n, target, scale, result); break;
        case AK_F32: rc = launch<FPE_FMT_F32>(b, p, n, target, scale, result); break;
        }
        if (rc) return rc;
    }
    return AK_OK;
}
