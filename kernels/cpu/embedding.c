/* cpu/embedding.c: the embedding lookup and its backward (the reference),
 * through elem/embedding.h.  The backward adds the tokens in order into one
 * running sum per (row, column), held in the accumulation format in a
 * scratch table, then converts the table to dweight: the same additions in
 * the same order as cuda's one thread per (row, column). */
#include "backend.h"
#include "elem/embedding.h"

/* Every id names a row, or AK_EINVAL naming the first that does not. */
static int check_ids(ak_backend *b, const char *call, size_t tokens, size_t vocab, ak_tensor ids)
{
    for (size_t t = 0; t < tokens; t++) {
        size_t row;
        const uint32_t bits = ak_load_bits(FPE_FMT_F32, ids.data, t);
        if (!ak_embedding_row(bits, vocab, &row))
            return ak_fail(b, AK_EINVAL, call, "ids[%zu] is %g, not an integer in [0, %zu)", t,
                           (double)ak_f32_from_bits(bits), vocab);
    }
    return AK_OK;
}

int ak_cpu_embedding_forward(ak_backend *b, size_t tokens, size_t dim, size_t vocab, ak_tensor ids,
                             ak_tensor weight, ak_tensor y)
{
    const int rc = check_ids(b, "ak_embedding_forward", tokens, vocab, ids);
    if (rc) return rc;
    const fpe_format_id fy = (fpe_format_id)y.dtype, fw = (fpe_format_id)weight.dtype;
    for (size_t t = 0; t < tokens; t++) {
        size_t row = 0;
        ak_embedding_row(ak_load_bits(FPE_FMT_F32, ids.data, t), vocab, &row);
        for (size_t c = 0; c < dim; c++) {
            const uint32_t w = ak_load_bits(fw, weight.data, row * dim + c);
            ak_store_bits(fy, y.data, t * dim + c, ak_embedding_elem(fy, fw, w));
        }
    }
    return AK_OK;
}

int ak_cpu_embedding_backward(ak_backend *b, size_t tokens, size_t dim, size_t vocab, ak_tensor ids,
                              ak_tensor dy, ak_tensor dweight, ak_dtype acc)
{
    static const char call[] = "ak_embedding_backward";
    int rc = check_ids(b, call, tokens, vocab, ids);
    if (rc) return rc;
    const size_t n = vocab * dim; /* dweight.n: no overflow (checked) */
    uint32_t *sum;
    rc = ak_cpu_scratch(b, AK_SCRATCH_EMBED_ACC, call, n, sizeof *sum, (void **)&sum);
    if (rc) return rc;
    for (size_t i = 0; i < n; i++)
        sum[i] = 0; /* +0 in every format */
    const fpe_format_id fa = (fpe_format_id)acc, fdy = (fpe_format_id)dy.dtype,
                        fdw = (fpe_format_id)dweight.dtype;
    for (size_t t = 0; t < tokens; t++) {
        size_t row = 0;
        ak_embedding_row(ak_load_bits(FPE_FMT_F32, ids.data, t), vocab, &row);
        uint32_t *s = sum + row * dim;
        for (size_t c = 0; c < dim; c++)
            s[c] = ak_embedding_acc(fa, fdy, s[c], ak_load_bits(fdy, dy.data, t * dim + c));
    }
    for (size_t i = 0; i < n; i++)
        ak_store_bits(fdw, dweight.data, i, ak_layer_convert(fa, fdw, sum[i]));
    return AK_OK;
}
