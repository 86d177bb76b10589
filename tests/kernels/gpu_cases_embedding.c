/* gpu_cases_embedding: the embedding lookup and its backward on cuda
 * against cpu, bit for bit (the backward: one thread per (row, column)
 * adds the tokens in order, the cpu's additions): a character-level GPT's
 * shapes (8 x 128 tokens, vocabulary 96, width 128) with a frequent token,
 * every dtype pairing and accumulation format on a smaller shape, and a
 * bad id on cuda (its row NaN in the forward, no row in the backward). */
#include <check.h>
#include <stdlib.h>

#include "gpu_ops.h"

static ak_backend *cpu, *gpu;

static void check_embedding(const go_cmp *cmp, ts_rng *r, size_t tokens, size_t dim, size_t vocab,
                            ak_dtype dw, ak_dtype dy, ak_dtype acc, bool values)
{
    uint32_t *w = malloc(vocab * dim * 4 + 4), *g = malloc(tokens * dim * 4 + 4);
    float *ids = malloc(tokens * sizeof *ids + 4);
    ck_assert(w && g && ids);
    for (size_t t = 0; t < tokens; t++) /* a third of the tokens are id 5 */
        ids[t] = (float)(ts_below(r, 3) == 0 ? 5 % vocab : ts_below(r, vocab));
    if (values) {
        kt_fill_values(r, dw, w, vocab * dim, 2.0);
        kt_fill_values(r, dy, g, tokens * dim, 0x1p-12);
    } else {
        kt_fill_bits(r, dw, w, vocab * dim);
        kt_fill_bits(r, dy, g, tokens * dim);
    }
    kt_twin ti = kt_twin_alloc(cpu, gpu, tokens, AK_F32),
            tw = kt_twin_alloc(cpu, gpu, vocab * dim, dw),
            ty = kt_twin_alloc(cpu, gpu, tokens * dim, dy),
            tdy = kt_twin_alloc(cpu, gpu, tokens * dim, dy),
            tdw = kt_twin_alloc(cpu, gpu, vocab * dim, dw);
    kt_twin_upload(&ti, ids);
    kt_twin_put(&tw, w);
    kt_twin_put(&tdy, g);
    ck_assert_int_eq(ak_embedding_forward(cpu, tokens, dim, vocab, ti.c.t, tw.c.t, ty.c.t), AK_OK);
    ck_assert_int_eq(ak_embedding_forward(gpu, tokens, dim, vocab, ti.g.t, tw.g.t, ty.g.t), AK_OK);
    ck_assert_msg(go_compare_twin("embedding y", cmp, &ty, NULL, NULL) == 0, "y %s weight %s",
                  ak_dtype_name(dy), ak_dtype_name(dw));
    ck_assert_int_eq(ak_embedding_backward(cpu, tokens, dim, vocab, ti.c.t, tdy.c.t, tdw.c.t, acc),
                     AK_OK);
    ck_assert_int_eq(ak_embedding_backward(gpu, tokens, dim, vocab, ti.g.t, tdy.g.t, tdw.g.t, acc),
                     AK_OK);
    ck_assert_msg(go_compare_twin("embedding dweight", cmp, &tdw, NULL, NULL) == 0,
                  "dweight %s dy %s acc %s", ak_dtype_name(dw), ak_dtype_name(dy),
                  ak_dtype_name(acc));
    kt_twin_free(&ti);
    kt_twin_free(&tw);
    kt_twin_free(&ty);
    kt_twin_free(&tdy);
    kt_twin_free(&tdw);
    free(w);
    free(g);
    free(ids);
}

GO_CASE(embedding_bit_exact)
{
    const go_cmp *cmp = &c->cmp;
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 71);
    for (int a = 0; a < 3; a++)
        check_embedding(cmp, &r, 8 * 128, 128, 96, kt_dtypes[a], kt_dtypes[a], kt_dtypes[a], true);
    check_embedding(cmp, &r, 8 * 128, 128, 96, AK_F16, AK_F16, AK_F32, true);
    for (int combo = 0; combo < 27; combo++)
        check_embedding(cmp, &r, 300, 13, 17, kt_dtypes[combo / 9], kt_dtypes[combo / 3 % 3],
                        kt_dtypes[combo % 3], false);
}

/* cuda: a bad id makes its row of y the default NaN and adds to no row. */
GO_CASE(embedding_bad_id_on_cuda)
{
    const float ids[3] = {1, 2.5f, 1};
    const float w[6] = {1, 2, 3, 4, 5, 6}, dy[6] = {1, 1, 2, 2, 4, 4};
    kt_twin ti = kt_twin_alloc(cpu, gpu, 3, AK_F32), tw = kt_twin_alloc(cpu, gpu, 6, AK_F32),
            ty = kt_twin_alloc(cpu, gpu, 6, AK_F32), tdy = kt_twin_alloc(cpu, gpu, 6, AK_F32);
    kt_twin_upload(&ti, ids);
    kt_twin_upload(&tw, w);
    kt_twin_upload(&tdy, dy);
    ck_assert_int_eq(ak_embedding_forward(gpu, 3, 2, 3, ti.g.t, tw.g.t, ty.g.t), AK_OK);
    uint32_t got[6];
    kt_buf_get(&ty.g, got);
    const uint32_t want_y[6] = {0x40400000u, 0x40800000u, 0xFFC00000u,
                                0xFFC00000u, 0x40400000u, 0x40800000u};
    ck_assert_uint_eq(kt_bits_mismatches("y with a bad id", AK_F32, got, want_y, 6), 0);
    ck_assert_int_eq(ak_embedding_backward(gpu, 3, 2, 3, ti.g.t, tdy.g.t, tw.g.t, AK_F32), AK_OK);
    kt_buf_get(&tw.g, got);
    const uint32_t want_dw[6] = {0, 0, 0x40A00000u, 0x40A00000u, 0, 0}; /* row 1: 1 + 4 */
    ck_assert_uint_eq(kt_bits_mismatches("dweight with a bad id", AK_F32, got, want_dw, 6), 0);
    ck_assert_int_eq(ak_embedding_forward(gpu, 3, 0, 3, ti.g.t, tw.g.t, ty.g.t), AK_EINVAL);
    ck_assert_int_eq(ak_sync(gpu), AK_OK);
    kt_twin_free(&ti);
    kt_twin_free(&tw);
    kt_twin_free(&ty);
    kt_twin_free(&tdy);
}

static const go_case rows[] = {
    {"embedding_forward embedding_backward", "embedding_bit_exact", 1, embedding_bit_exact,
     GO_BITS},
    {"embedding_forward embedding_backward", "embedding_bad_id_on_cuda", 1,
     embedding_bad_id_on_cuda, GO_BITS},
};
GO_FAMILY(embedding, rows);
