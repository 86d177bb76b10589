/* cuda/norm_block.cuh: the block sum of BatchNorm's and LayerNorm's kernels
 * (one block of AK_NORM_LANES threads per channel or row): thread t's lane
 * sum, then the tree of elem/norm.h's ak_norm_tree, level by level between
 * barriers, so the additions are the cpu's, in its order. */
#ifndef AMPSCOPE_KERNELS_CUDA_NORM_BLOCK_CUH
#define AMPSCOPE_KERNELS_CUDA_NORM_BLOCK_CUH

#include "cuda_backend.h"
#include "elem/norm.h"

/* Every thread gets the tree sum of the lanes (v: this thread's lane). */
__device__ inline double norm_block_sum(double *acc, double v)
{
    const unsigned t = threadIdx.x;
    acc[t] = v;
    __syncthreads();
    for (unsigned s = AK_NORM_LANES / 2; s > 0; s >>= 1) {
        if (t < s) acc[t] += acc[t + s];
        __syncthreads();
    }
    const double sum = acc[0];
    __syncthreads(); /* acc may be reused */
    return sum;
}

/* Blocks for count channels or rows, each block looping by gridDim.x. */
static inline unsigned norm_grid(size_t count)
{
    return (unsigned)(count < 65535 ? (count ? count : 1) : 65535);
}

#endif
