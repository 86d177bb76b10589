/* embedding.c: the public wrappers of the embedding lookup and its backward
 * (kernels.h): argument checks, then the backend's implementation.
 *
 * Semantics, beyond kernels.h (the element code is kernels/elem/embedding.h,
 * shared by both backends, which therefore agree bit for bit):
 *   - ids is an fp32 tensor of tokens elements; an id names row v when its
 *     value is the integer v in [0, vocab) (-0 names row 0).  vocab is at
 *     most 2^24, so every row has an fp32 id.
 *   - forward: y[t][c] = weight[ids[t]][c], the same bits when the dtypes
 *     agree (NaN payloads included), else converted to nearest even.  A bad
 *     id: the cpu returns AK_EINVAL naming its position before writing
 *     anything; cuda writes the default NaN over that token's row of y.
 *   - backward: dweight[v][c] = the sum over tokens t with ids[t] == v, in
 *     increasing t, of dy[t][c], each addition rounded to acc (ak_add_elem:
 *     fp32 or the low format), starting from +0, then the sum converted once
 *     to dweight's dtype; rows no token names are +0.  acc == AK_F32 is what
 *     PyTorch's CUDA embedding_dense_backward does for fp16/bf16 gradients:
 *     aten/src/ATen/native/cuda/EmbeddingBackwardKernel.cu (above 3072
 *     tokens, or with scale_grad_by_freq) sums each row's sorted tokens in
 *     acc_type<scalar_t, true> (float) in compute_grad_weight and
 *     sum_and_scatter and stores once; Embedding.cu's
 *     embedding_backward_feature_kernel (up to 3072 tokens) sums up to 32
 *     tokens at a time in that accscalar_t and adds each partial sum into
 *     the fp16 grad_weight, one fp16 rounding per 32 tokens.  A bad id: cpu
 *     AK_EINVAL as the forward; cuda adds that token to no row.  NaNs: a NaN
 *     gradient makes its row's sum NaN (of two NaNs the later token's,
 *     quieted).
 *   - cuda runs one thread per (row, column), scanning every token in order:
 *     vocab x dim x tokens id reads in warps of 32 columns, simple and
 *     deterministic, meant for the small vocabularies of the studies.
 *   - y must not overlap weight or ids; dweight must not overlap dy or ids.
 */
#include "backend.h"

static size_t bytes_of(ak_tensor t) { return t.n * ak_dtype_size(t.dtype); }

/* The checks both calls share: sizes, ids, the table (weight or dweight)
 * and the rows (y or dy) with their element counts. */
static int check_common(ak_backend *b, const char *call, size_t tokens, size_t dim, size_t vocab,
                        ak_tensor ids, const char *table_name, ak_tensor table,
                        const char *rows_name, ak_tensor rows)
{
    if (dim == 0) return ak_fail(b, AK_EINVAL, call, "dim is 0: a row needs an element");
    if (vocab == 0) return ak_fail(b, AK_EINVAL, call, "vocab is 0: ids need a row to name");
    if (vocab > ((size_t)1 << 24))
        return ak_fail(b, AK_EINVAL, call,
                       "vocab (%zu) exceeds 2^24: ids are fp32, not every row has one", vocab);
    size_t n_rows, n_table;
    int rc = ak_check_mul(b, call, "tokens x dim", tokens, dim, &n_rows);
    if (!rc) rc = ak_check_mul(b, call, "vocab x dim", vocab, dim, &n_table);
    if (!rc) rc = ak_check_tensor(b, call, "ids", ids, tokens);
    if (!rc && ids.dtype != AK_F32)
        rc = ak_fail(b, AK_EINVAL, call, "ids is %s: token ids are an fp32 tensor",
                     ak_dtype_name(ids.dtype));
    if (!rc) rc = ak_check_tensor(b, call, table_name, table, n_table);
    if (!rc) rc = ak_check_tensor(b, call, rows_name, rows, n_rows);
    return rc;
}

int ak_embedding_forward(ak_backend *b, size_t tokens, size_t dim, size_t vocab, ak_tensor ids,
                         ak_tensor weight, ak_tensor y)
{
    static const char call[] = "ak_embedding_forward";
    AK_BEGIN(b);
    int rc = check_common(b, call, tokens, dim, vocab, ids, "weight", weight, "y", y);
    if (!rc && ak_overlap(y.data, bytes_of(y), weight.data, bytes_of(weight)))
        rc = ak_fail(b, AK_EINVAL, call, "y overlaps weight");
    if (!rc && ak_overlap(y.data, bytes_of(y), ids.data, bytes_of(ids)))
        rc = ak_fail(b, AK_EINVAL, call, "y overlaps ids");
    if (rc || tokens == 0) return rc;
    return b->ops->embedding_forward(b, tokens, dim, vocab, ids, weight, y);
}

int ak_embedding_backward(ak_backend *b, size_t tokens, size_t dim, size_t vocab, ak_tensor ids,
                          ak_tensor dy, ak_tensor dweight, ak_dtype acc)
{
    static const char call[] = "ak_embedding_backward";
    AK_BEGIN(b);
    int rc = check_common(b, call, tokens, dim, vocab, ids, "dweight", dweight, "dy", dy);
    if (!rc && acc != AK_F32 && acc != AK_F16 && acc != AK_BF16)
        rc = ak_fail(b, AK_EINVAL, call, "acc (%d) is not AK_F32, AK_F16 or AK_BF16", (int)acc);
    if (!rc && ak_overlap(dweight.data, bytes_of(dweight), dy.data, bytes_of(dy)))
        rc = ak_fail(b, AK_EINVAL, call, "dweight overlaps dy");
    if (!rc && ak_overlap(dweight.data, bytes_of(dweight), ids.data, bytes_of(ids)))
        rc = ak_fail(b, AK_EINVAL, call, "dweight overlaps ids");
    if (rc) return rc;
    /* no tokens: every row is +0, written by the backend all the same */
    return b->ops->embedding_backward(b, tokens, dim, vocab, ids, dy, dweight, acc);
}
