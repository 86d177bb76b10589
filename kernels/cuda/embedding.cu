/* cuda/embedding.cu: the embedding lookup and its backward on the GPU,
 * through elem/embedding.h.  Forward: one thread per element of y; a token
 * whose id names no row gets the default NaN across its row.  Backward: one
 * thread per (row, column) of dweight scans every token in order and adds
 * those with its row's id to its running sum, the cpu's additions in the
 * cpu's order (bit for bit); a warp's 32 columns read the same id at once.
 * The work is vocab x dim x tokens id reads: simple and deterministic for
 * the studies' small vocabularies (a stable sort by id would scale). */
#include "cuda_backend.h"
#include "elem/embedding.h"

__global__ void embedding_forward_kernel(size_t dim, size_t vocab, ak_tensor ids, ak_tensor weight,
                                         ak_tensor y)
{
    const fpe_format_id fy = (fpe_format_id)y.dtype, fw = (fpe_format_id)weight.dtype;
    AK_LAYER_GRID_STRIDE(i, y.n)
    {
        const size_t t = i / dim, c = i % dim;
        size_t row;
        uint32_t out;
        if (ak_embedding_row(ak_load_bits(FPE_FMT_F32, ids.data, t), vocab, &row)) {
            out = ak_embedding_elem(fy, fw, ak_load_bits(fw, weight.data, row * dim + c));
        } else {
            fpe_env env = fpe_env_default();
            out = fpe_default_nan(fy, &env);
        }
        ak_store_bits(fy, y.data, i, out);
    }
}

extern "C" int ak_cuda_embedding_forward(ak_backend *b, size_t tokens, size_t dim, size_t vocab,
                                         ak_tensor ids, ak_tensor weight, ak_tensor y)
{
    (void)tokens;
    const unsigned grid = ak_grid(b, y.n, AK_CUDA_BLOCK);
    embedding_forward_kernel<<<grid, AK_CUDA_BLOCK, 0, ak_stream(b)>>>(dim, vocab, ids, weight, y);
    AK_CUDA_LAUNCHED(b, "ak_embedding_forward", "embedding_forward_kernel");
    return AK_OK;
}

__global__ void embedding_backward_kernel(size_t tokens, size_t dim, size_t vocab, int acc,
                                          ak_tensor ids, ak_tensor dy, ak_tensor dweight)
{
    const fpe_format_id fa = (fpe_format_id)acc, fdy = (fpe_format_id)dy.dtype,
                        fdw = (fpe_format_id)dweight.dtype;
    AK_LAYER_GRID_STRIDE(i, dweight.n)
    {
        const size_t v = i / dim, c = i % dim;
        uint32_t s = 0; /* +0 in every format */
        for (size_t t = 0; t < tokens; t++) {
            size_t row;
            if (ak_embedding_row(ak_load_bits(FPE_FMT_F32, ids.data, t), vocab, &row) && row == v)
                s = ak_embedding_acc(fa, fdy, s, ak_load_bits(fdy, dy.data, t * dim + c));
        }
        ak_store_bits(fdw, dweight.data, i, ak_layer_convert(fa, fdw, s));
    }
}

extern "C" int ak_cuda_embedding_backward(ak_backend *b, size_t tokens, size_t dim, size_t vocab,
                                          ak_tensor ids, ak_tensor dy, ak_tensor dweight,
                                          ak_dtype acc)
{
    const unsigned grid = ak_grid(b, dweight.n, AK_CUDA_BLOCK);
    embedding_backward_kernel<<<grid, AK_CUDA_BLOCK, 0, ak_stream(b)>>>(tokens, dim, vocab,
                                                                        (int)acc, ids, dy, dweight);
    AK_CUDA_LAUNCHED(b, "ak_embedding_backward", "embedding_backward_kernel");
    return AK_OK;
}
