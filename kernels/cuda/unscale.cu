/* cuda/unscale.cu: ak_scale, one thread per element, and the fused unscale +
 * finite check as one multi-tensor kernel, as PyTorch's multi_tensor_apply
 * does it.
 *
 * A launch takes a table of up to MT_TENSORS tensors by value (a kernel
 * parameter, so queuing it needs no copy and no host wait); longer lists
 * take several launches.  Each tensor is cut into chunks of MT_CHUNK
 * elements, numbered across the table; block j takes chunks j, j + grid,
 * ...  The factor is read on the device, and a thread that saw an infinity
 * or a NaN stores 1.0f to *found_inf: every such store writes the same
 * value, so the race between them is harmless, and nothing ever clears it. */
#include "cuda_backend.h"
#include "elem/unscale.h"

#define MT_TENSORS 128
#define MT_CHUNK   16384

typedef struct mt_table {
    void *data[MT_TENSORS];
    uint64_t n[MT_TENSORS];
    uint64_t chunk_end[MT_TENSORS]; /* chunks of tensors 0..t together */
    uint8_t dtype[MT_TENSORS];
    uint32_t count;
} mt_table;
/* the kernel's parameters must fit the classic 4 KB limit */
static_assert(sizeof(mt_table) + 2 * sizeof(void *) <= 4096, "mt_table is too large");

__global__ void unscale_check_kernel(const __grid_constant__ mt_table tab, const float *inv_scale,
                                     float *found_inf)
{
    const float inv = *inv_scale;
    const ak_factor k = ak_factor_of(inv);
    const bool scale = inv != 1.0f; /* at 1, even NaN payloads stay as they are */
    const uint64_t chunks = tab.chunk_end[tab.count - 1];
    bool nonfinite = false;
    uint32_t t = 0; /* chunks only grow, so the tensor index does too */
    for (uint64_t c = blockIdx.x; c < chunks; c += gridDim.x) {
        while (tab.chunk_end[t] <= c)
            t++;
        const uint64_t begin = (c - (t > 0 ? tab.chunk_end[t - 1] : 0)) * MT_CHUNK;
        const uint64_t end = begin + MT_CHUNK < tab.n[t] ? begin + MT_CHUNK : tab.n[t];
        nonfinite |= ak_scale_span((fpe_format_id)tab.dtype[t], tab.data[t], begin + threadIdx.x,
                                   end, blockDim.x, k, scale);
    }
    if (nonfinite) *found_inf = 1.0f;
}

static int launch(ak_backend *b, const mt_table *tab, uint64_t chunks, const float *inv_scale,
                  float *found_inf)
{
    const unsigned grid = ak_grid(b, chunks, 1); /* a block per chunk, up to the device's fill */
    unscale_check_kernel<<<grid, AK_CUDA_BLOCK, 0, ak_stream(b)>>>(*tab, inv_scale, found_inf);
    AK_CUDA_LAUNCHED(b, "ak_unscale_check", "unscale_check_kernel");
    return AK_OK;
}

extern "C" int ak_cuda_unscale_check(ak_backend *b, const ak_tensor *grads, size_t count,
                                     const float *inv_scale, float *found_inf)
{
    mt_table tab;
    memset(&tab, 0, sizeof tab);
    uint64_t chunks = 0;
    for (size_t i = 0; i < count; i++) {
        if (grads[i].n == 0) continue;
        const uint32_t t = tab.count++;
        tab.data[t] = grads[i].data;
        tab.n[t] = grads[i].n;
        tab.dtype[t] = (uint8_t)grads[i].dtype;
        chunks += (grads[i].n + MT_CHUNK - 1) / MT_CHUNK;
        tab.chunk_end[t] = chunks;
        if (tab.count == MT_TENSORS) {
            int rc = launch(b, &tab, chunks, inv_scale, found_inf);
            if (rc) return rc;
            tab.count = 0;
            chunks = 0;
        }
    }
    if (tab.count > 0) return launch(b, &tab, chunks, inv_scale, found_inf);
    return AK_OK;
}

/* x *= *factor, the factor read on the device. */
__global__ void scale_kernel(void *x, size_t n, int dtype, const float *factor)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    ak_scale_span((fpe_format_id)dtype, x, blockIdx.x * (size_t)blockDim.x + threadIdx.x, n, stride,
                  ak_factor_of(*factor), true);
}

extern "C" int ak_cuda_scale(ak_backend *b, ak_tensor x, const float *factor)
{
    const unsigned grid = ak_grid(b, x.n, AK_CUDA_BLOCK);
    scale_kernel<<<grid, AK_CUDA_BLOCK, 0, ak_stream(b)>>>(x.data, x.n, (int)x.dtype, factor);
    AK_CUDA_LAUNCHED(b, "ak_scale", "scale_kernel");
    return AK_OK;
}
