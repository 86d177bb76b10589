/* test_embedding: ak_embedding_forward and ak_embedding_backward on the cpu
 * backend.  References written here: the row copy converted by the
 * emulator; the backward's sum per (row, column) in token order, in fp32 C
 * arithmetic (acc fp32) or rounded to the low format after every addition
 * by the emulator (exact double sums of grid values, one rounding each);
 * the hand-worked stall of an fp16 accumulator; finite differences; bad
 * ids and bad arguments. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "kt.h"
#include "kt_fd.h"

/* n ids, integers in [0, vocab) as fp32 bits, a few rows repeated often
 * and one id -0 (row 0). */
static void fill_ids(ts_rng *r, uint32_t *ids, size_t n, size_t vocab)
{
    for (size_t t = 0; t < n; t++) {
        const size_t v = ts_below(r, 4) == 0 ? ts_below(r, 3) % vocab : ts_below(r, vocab);
        ids[t] = kt_f32_bits((float)v);
    }
    if (n > 0) ids[n / 2] = 0x80000000u;
}

START_TEST(forward_every_dtype)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 400);
    const size_t tokens = 57, dim = 19, vocab = 23;
    uint32_t *w = kt_bits_alloc(vocab * dim), *ids = kt_bits_alloc(tokens),
             *got = kt_bits_alloc(tokens * dim), *want = kt_bits_alloc(tokens * dim);
    for (int c = 0; c < 9; c++) {
        const ak_dtype dy = kt_dtypes[c / 3], dw = kt_dtypes[c % 3];
        kt_fill_bits(&r, dw, w, vocab * dim);
        fill_ids(&r, ids, tokens, vocab);
        kt_buf tw = kt_buf_alloc(b, vocab * dim, dw), ti = kt_buf_alloc(b, tokens, AK_F32),
               ty = kt_buf_alloc(b, tokens * dim, dy);
        kt_buf_put(&tw, w);
        kt_buf_put(&ti, ids);
        ck_assert_msg(ak_embedding_forward(b, tokens, dim, vocab, ti.t, tw.t, ty.t) == AK_OK, "%s",
                      ak_error(b));
        kt_buf_get(&ty, got);
        for (size_t t = 0; t < tokens; t++) {
            const size_t row = (size_t)fabsf(kt_f32_of(ids[t]));
            for (size_t k = 0; k < dim; k++)
                want[t * dim + k] = kt_convert(dw, dy, w[row * dim + k]);
        }
        ck_assert_msg(kt_bits_mismatches("embedding y", dy, got, want, tokens * dim) == 0,
                      "y %s weight %s", ak_dtype_name(dy), ak_dtype_name(dw));
        ck_assert(kt_buf_guards_ok(&tw) && kt_buf_guards_ok(&ti) && kt_buf_guards_ok(&ty));
        kt_buf_free(&tw);
        kt_buf_free(&ti);
        kt_buf_free(&ty);
    }
    free(w);
    free(ids);
    free(got);
    free(want);
    ak_close(b);
}
END_TEST

/* The backward's reference: per (row, column), tokens in order, from +0. */
static void ref_backward(size_t tokens, size_t dim, size_t vocab, const uint32_t *ids, ak_dtype ddy,
                         const uint32_t *dy, ak_dtype ddw, ak_dtype acc, uint32_t *want)
{
    for (size_t v = 0; v < vocab; v++)
        for (size_t k = 0; k < dim; k++) {
            float s32 = 0.0f;
            uint32_t s = 0;
            for (size_t t = 0; t < tokens; t++) {
                if ((size_t)fabsf(kt_f32_of(ids[t])) != v) continue;
                const uint32_t g = dy[t * dim + k];
                if (acc == AK_F32)
                    s32 += kt_f32_of(kt_to_f32(ddy, g));
                else /* grid values: the double sum is exact, then one rounding */
                    s = kt_from_f64(acc, kt_value(acc, s) + kt_value(ddy, g));
            }
            want[v * dim + k] =
                acc == AK_F32 ? kt_convert(AK_F32, ddw, kt_f32_bits(s32)) : kt_convert(acc, ddw, s);
        }
}

/* n gradients: multiples of 2^-12 in [-4, 4], exact in every dtype. */
static void fill_grid(ts_rng *r, uint32_t *x, size_t n, ak_dtype dt)
{
    for (size_t i = 0; i < n; i++)
        x[i] = kt_from_f64(dt, ldexp((double)ts_below(r, 1u << 15) - 16384.0, -12));
}

/* _i = 9 acc + 3 dweight + dy (kt_dtypes order) */
START_TEST(backward_matches_reference)
{
    const ak_dtype acc = kt_dtypes[_i / 9], ddw = kt_dtypes[_i / 3 % 3], ddy = kt_dtypes[_i % 3];
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 410 + (uint64_t)_i);
    const size_t tokens = 300, dim = 7, vocab = 11;
    uint32_t *dy = kt_bits_alloc(tokens * dim), *ids = kt_bits_alloc(tokens),
             *got = kt_bits_alloc(vocab * dim), *want = kt_bits_alloc(vocab * dim);
    fill_ids(&r, ids, tokens, vocab - 1); /* the last row: no token, +0 */
    fill_grid(&r, dy, tokens * dim, ddy);
    kt_buf tdy = kt_buf_alloc(b, tokens * dim, ddy), ti = kt_buf_alloc(b, tokens, AK_F32),
           tdw = kt_buf_alloc(b, vocab * dim, ddw);
    kt_buf_put(&tdy, dy);
    kt_buf_put(&ti, ids);
    for (size_t i = 0; i < vocab * dim; i++) /* written, not accumulated */
        want[i] = kt_marker_nan(ddw);
    kt_buf_put(&tdw, want);
    ck_assert_msg(ak_embedding_backward(b, tokens, dim, vocab, ti.t, tdy.t, tdw.t, acc) == AK_OK,
                  "%s", ak_error(b));
    kt_buf_get(&tdw, got);
    ref_backward(tokens, dim, vocab, ids, ddy, dy, ddw, acc, want);
    for (size_t k = 0; k < dim; k++)
        ck_assert_uint_eq(want[(vocab - 1) * dim + k], 0);
    ck_assert_msg(kt_bits_mismatches("dweight", ddw, got, want, vocab * dim) == 0,
                  "acc %s dweight %s dy %s", ak_dtype_name(acc), ak_dtype_name(ddw),
                  ak_dtype_name(ddy));
    ck_assert(kt_buf_guards_ok(&tdy) && kt_buf_guards_ok(&ti) && kt_buf_guards_ok(&tdw));
    kt_buf_free(&tdy);
    kt_buf_free(&ti);
    kt_buf_free(&tdw);
    free(dy);
    free(ids);
    free(got);
    free(want);
    ak_close(b);
}
END_TEST

/* Row 1 of dweight after `count` tokens with id 1 and gradient g (fp16). */
static uint32_t repeated_token(ak_backend *b, size_t count, uint32_t g, ak_dtype ddw, ak_dtype acc)
{
    const size_t dim = 2, vocab = 3;
    uint32_t *ids = kt_bits_alloc(count), *dy = kt_bits_alloc(count * dim), got[6];
    for (size_t t = 0; t < count; t++) {
        ids[t] = kt_f32_bits(1.0f);
        dy[t * dim] = dy[t * dim + 1] = g;
    }
    kt_buf ti = kt_buf_alloc(b, count, AK_F32), tdy = kt_buf_alloc(b, count * dim, AK_F16),
           tdw = kt_buf_alloc(b, vocab * dim, ddw);
    kt_buf_put(&ti, ids);
    kt_buf_put(&tdy, dy);
    ck_assert_int_eq(ak_embedding_backward(b, count, dim, vocab, ti.t, tdy.t, tdw.t, acc), AK_OK);
    kt_buf_get(&tdw, got);
    ck_assert(got[0] == 0 && got[1] == 0 && got[4] == 0 && got[5] == 0 && got[2] == got[3]);
    ck_assert(kt_buf_guards_ok(&ti) && kt_buf_guards_ok(&tdy) && kt_buf_guards_ok(&tdw));
    kt_buf_free(&ti);
    kt_buf_free(&tdy);
    kt_buf_free(&tdw);
    free(ids);
    free(dy);
    return got[2];
}

/* A token repeated 3000 times with gradient 2^-14 (fp16 0x0400, the
 * smallest normal).  The exact sum is 3000 2^-14 = 375 2^-11 =
 * 0.18310546875: 1.46484375 2^-3, fp16 exponent field 12, fraction
 * 0.46484375 * 1024 = 476: 0x3000 | 476 = 0x31DC, exact in fp16, and the
 * fp32 accumulator reaches it exactly (every partial sum k 2^-14, k <
 * 2^24).  An fp16 accumulator adds exactly while the sum is below 2^-3
 * (ulp 2^-14 in [2^-4, 2^-3)); at 2^-3 = 2048 2^-14 the ulp is 2^-13, so s
 * + 2^-14 is a tie and rounds to even, back to 2^-3 (fraction 0): it stalls
 * at 2048 2^-14 = 0.125 = 0x3000, losing 952 of the 3000 gradients.  A
 * bf16 accumulator (8 significant bits) stalls where 2^-14 is half an
 * ulp: ulp 2^-13 at [2^-6, 2^-5), so at 2^-6 = 256 2^-14: fp32 0x3C800000. */
START_TEST(backward_fp16_accumulator_stalls)
{
    ak_backend *b = kt_open_cpu();
    ck_assert_uint_eq(repeated_token(b, 3000, 0x0400, AK_F16, AK_F32), 0x31DC);
    ck_assert_uint_eq(repeated_token(b, 3000, 0x0400, AK_F16, AK_F16), 0x3000);
    ck_assert_uint_eq(repeated_token(b, 3000, 0x0400, AK_F32, AK_F32), kt_f32_bits(0.18310546875f));
    ck_assert_uint_eq(repeated_token(b, 3000, 0x0400, AK_F32, AK_F16), kt_f32_bits(0.125f));
    ck_assert_uint_eq(repeated_token(b, 3000, 0x0400, AK_F32, AK_BF16), 0x3C800000u);
    /* below the stall the accumulators agree: 2047 tokens -> 2047 2^-14 */
    ck_assert_uint_eq(repeated_token(b, 2047, 0x0400, AK_F32, AK_F16),
                      kt_f32_bits(2047.0f / 16384.0f));
    ak_close(b);
}
END_TEST

/* Special values: a lone -0 gradient sums to +0 (from +0); NaN and inf. */
START_TEST(backward_specials)
{
    ak_backend *b = kt_open_cpu();
    /* tokens: ids 0, 1, 1, 2, 2 over dim 1; dy -0, +inf, 1, NaN(0x7FC00001), -inf */
    const float ids[5] = {0, 1, 1, 2, 2};
    const uint32_t dy[5] = {0x80000000u, 0x7F800000u, 0x3F800000u, 0x7FC00001u, 0xFF800000u};
    kt_buf ti = kt_buf_alloc(b, 5, AK_F32), tdy = kt_buf_alloc(b, 5, AK_F32),
           tdw = kt_buf_alloc(b, 4, AK_F32);
    kt_buf_upload(&ti, ids);
    kt_buf_put(&tdy, dy);
    uint32_t got[4];
    for (int a = 0; a < 3; a++) {
        ck_assert_int_eq(ak_embedding_backward(b, 5, 1, 4, ti.t, tdy.t, tdw.t, kt_dtypes[a]),
                         AK_OK);
        kt_buf_get(&tdw, got);
        /* +0 + -0 = +0; inf + 1 = inf; NaN + -inf = the NaN (quieted, in
         * the accumulator's format and back); row 3: +0 */
        ck_assert_uint_eq(got[0], 0);
        ck_assert_uint_eq(got[1], 0x7F800000u);
        ck_assert(kt_is_nan(AK_F32, got[2]));
        ck_assert_uint_eq(got[3], 0);
    }
    kt_buf_free(&ti);
    kt_buf_free(&tdy);
    kt_buf_free(&tdw);
    ak_close(b);
}
END_TEST

typedef struct fd_ctx {
    kt_buf *ids;
    size_t tokens, dim, vocab;
} fd_ctx;

static void embedding_fd_forward(ak_backend *b, kt_buf *y, kt_buf *x, const void *ctx)
{
    const fd_ctx *c = ctx;
    ck_assert_int_eq(ak_embedding_forward(b, c->tokens, c->dim, c->vocab, c->ids->t, x->t, y->t),
                     AK_OK);
}

/* dL/dweight = embedding_backward(dy = r), L = sum r .* weight[ids]. */
START_TEST(gradient_matches_finite_differences)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    enum { TOKENS = 9, DIM = 3, VOCAB = 5 };
    float w[VOCAB * DIM], rv[TOKENS * DIM], grad[VOCAB * DIM], unused[TOKENS * DIM];
    kt_fd_points(&r, ts_seed() + 420, w, unused, VOCAB * DIM);
    kt_fd_points(&r, ts_seed() + 421, unused, rv, TOKENS * DIM);
    const float ids[TOKENS] = {3, 0, 3, 1, 3, 0, 2, 3, 1}; /* row 4 unused */
    kt_buf ti = kt_buf_alloc(b, TOKENS, AK_F32), tr = kt_buf_alloc(b, TOKENS * DIM, AK_F32),
           tg = kt_buf_alloc(b, VOCAB * DIM, AK_F32);
    kt_buf_upload(&ti, ids);
    kt_buf_upload(&tr, rv);
    ck_assert_int_eq(ak_embedding_backward(b, TOKENS, DIM, VOCAB, ti.t, tr.t, tg.t, AK_F32), AK_OK);
    kt_buf_download(&tg, grad);
    const fd_ctx ctx = {&ti, TOKENS, DIM, VOCAB};
    kt_fd_check(b, embedding_fd_forward, &ctx, VOCAB * DIM, TOKENS * DIM, w, rv, grad, 0x1p-10);
    kt_buf_free(&ti);
    kt_buf_free(&tr);
    kt_buf_free(&tg);
    ak_close(b);
}
END_TEST

/* A bad id: AK_EINVAL naming its position, nothing written. */
START_TEST(bad_ids_named)
{
    ak_backend *b = kt_open_cpu();
    static const struct {
        float id;
        const char *text;
    } bad[] = {
        {1.5f, "ids[2] is 1.5, not an integer in [0, 4)"},
        {-1.0f, "ids[2] is -1, not an integer in [0, 4)"},
        {4.0f, "ids[2] is 4, not an integer in [0, 4)"},
        {NAN, "ids[2] is nan, not an integer in [0, 4)"},
        {INFINITY, "ids[2] is inf, not an integer in [0, 4)"},
        {0x1p-149f, "ids[2] is 1.4013e-45, not an integer in [0, 4)"},
    };
    kt_buf ti = kt_buf_alloc(b, 3, AK_F32), tw = kt_buf_alloc(b, 8, AK_F16),
           ty = kt_buf_alloc(b, 6, AK_BF16), tdw = kt_buf_alloc(b, 8, AK_F32);
    uint32_t marks[8], marks16[6], got[8];
    for (size_t i = 0; i < 8; i++)
        marks[i] = kt_marker_nan(AK_F32);
    for (size_t i = 0; i < 6; i++)
        marks16[i] = kt_marker_nan(AK_BF16);
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        const float ids[3] = {0, 3, bad[k].id};
        kt_buf_upload(&ti, ids);
        kt_buf_put(&ty, marks16);
        kt_buf_put(&tdw, marks);
        KT_EXPECT_ERROR(b, ak_embedding_forward(b, 3, 2, 4, ti.t, tw.t, ty.t), AK_EINVAL,
                        "ak_embedding_forward: ", bad[k].text);
        KT_EXPECT_ERROR(b, ak_embedding_backward(b, 3, 2, 4, ti.t, ty.t, tdw.t, AK_F32), AK_EINVAL,
                        "ak_embedding_backward: ", bad[k].text);
        kt_buf_get(&ty, got);
        ck_assert_uint_eq(kt_bits_mismatches("y untouched", AK_BF16, got, marks16, 6), 0);
        kt_buf_get(&tdw, got);
        ck_assert_uint_eq(kt_bits_mismatches("dweight untouched", AK_F32, got, marks, 8), 0);
    }
    ck_assert(kt_buf_guards_ok(&ti) && kt_buf_guards_ok(&tw) && kt_buf_guards_ok(&ty) &&
              kt_buf_guards_ok(&tdw));
    kt_buf_free(&ti);
    kt_buf_free(&tw);
    kt_buf_free(&ty);
    kt_buf_free(&tdw);
    ak_close(b);
}
END_TEST

START_TEST(bad_arguments_named)
{
    ak_backend *b = kt_open_cpu();
    kt_buf ti = kt_buf_alloc(b, 3, AK_F32), th = kt_buf_alloc(b, 3, AK_F16),
           tw = kt_buf_alloc(b, 8, AK_F32), ty = kt_buf_alloc(b, 6, AK_F32);
    const float ids[3] = {0, 1, 2};
    kt_buf_upload(&ti, ids);
    static const char fw[] = "ak_embedding_forward: ", bw[] = "ak_embedding_backward: ";
    ck_assert_int_eq(ak_embedding_forward(NULL, 3, 2, 4, ti.t, tw.t, ty.t), AK_EINVAL);
    KT_EXPECT_ERROR(b, ak_embedding_forward(b, 3, 0, 4, ti.t, tw.t, ty.t), AK_EINVAL, fw,
                    "dim is 0");
    KT_EXPECT_ERROR(b, ak_embedding_forward(b, 3, 2, 0, ti.t, tw.t, ty.t), AK_EINVAL, fw,
                    "vocab is 0");
    KT_EXPECT_ERROR(b,
                    ak_embedding_backward(b, 3, 2, ((size_t)1 << 24) + 1, ti.t, ty.t, tw.t, AK_F32),
                    AK_EINVAL, bw, "vocab (16777217) exceeds 2^24");
    KT_EXPECT_ERROR(b, ak_embedding_forward(b, 3, 2, 4, th.t, tw.t, ty.t), AK_EINVAL, fw,
                    "ids is fp16: token ids are an fp32 tensor");
    KT_EXPECT_ERROR(b, ak_embedding_forward(b, 2, 2, 4, ti.t, tw.t, ty.t), AK_EINVAL, fw,
                    "ids has 3 elements, expected 2");
    KT_EXPECT_ERROR(b, ak_embedding_forward(b, 3, 2, 3, ti.t, tw.t, ty.t), AK_EINVAL, fw,
                    "weight has 8 elements, expected 6");
    KT_EXPECT_ERROR(b, ak_embedding_forward(b, 3, 2, 4, ti.t, tw.t, tw.t), AK_EINVAL, fw,
                    "y has 8 elements, expected 6");
    KT_EXPECT_ERROR(b, ak_embedding_forward(b, 3, 2, 4, ti.t, tw.t, ak_tensor_of(NULL, 6, AK_F16)),
                    AK_EINVAL, fw, "y is NULL with 6 elements");
    KT_EXPECT_ERROR(b, ak_embedding_forward(b, SIZE_MAX, 2, 4, ti.t, tw.t, ty.t), AK_EINVAL, fw,
                    "tokens x dim");
    KT_EXPECT_ERROR(b, ak_embedding_backward(b, 3, 2, 4, ti.t, ty.t, tw.t, (ak_dtype)5), AK_EINVAL,
                    bw, "acc (5) is not AK_F32, AK_F16 or AK_BF16");
    /* overlaps */
    char *wd = tw.t.data;
    const ak_tensor w_head6 = ak_tensor_of(wd, 6, AK_F32), w_tail8 = ak_tensor_of(wd, 8, AK_F32);
    KT_EXPECT_ERROR(b, ak_embedding_forward(b, 3, 2, 4, ti.t, w_tail8, w_head6), AK_EINVAL, fw,
                    "y overlaps weight");
    KT_EXPECT_ERROR(b,
                    ak_embedding_forward(b, 1, 2, 4, ak_tensor_of(wd, 1, AK_F32), ty.t,
                                         ak_tensor_of(wd, 2, AK_F32)),
                    AK_EINVAL, fw, "weight has 6 elements, expected 8");
    KT_EXPECT_ERROR(b,
                    ak_embedding_forward(b, 1, 2, 3, ak_tensor_of(wd, 1, AK_F32), ty.t,
                                         ak_tensor_of(wd, 2, AK_F32)),
                    AK_EINVAL, fw, "y overlaps ids");
    KT_EXPECT_ERROR(
        b, ak_embedding_backward(b, 3, 2, 3, ti.t, w_head6, ak_tensor_of(wd, 6, AK_F32), AK_F32),
        AK_EINVAL, bw, "dweight overlaps dy");
    KT_EXPECT_ERROR(b,
                    ak_embedding_backward(b, 1, 2, 3, ak_tensor_of(wd, 1, AK_F32),
                                          ak_tensor_of(ty.t.data, 2, AK_F32), w_head6, AK_F32),
                    AK_EINVAL, bw, "dweight overlaps ids");
    /* no tokens: the forward does nothing, the backward writes +0 rows */
    uint32_t marks[8], got[8];
    for (size_t i = 0; i < 8; i++)
        marks[i] = kt_marker_nan(AK_F32);
    kt_buf_put(&tw, marks);
    ck_assert_int_eq(ak_embedding_forward(b, 0, 2, 4, ak_tensor_none(), tw.t, ak_tensor_none()),
                     AK_OK);
    ck_assert_int_eq(
        ak_embedding_backward(b, 0, 2, 4, ak_tensor_none(), ak_tensor_none(), tw.t, AK_F16), AK_OK);
    kt_buf_get(&tw, got);
    for (size_t i = 0; i < 8; i++)
        ck_assert_uint_eq(got[i], 0);
    ck_assert(kt_buf_guards_ok(&ti) && kt_buf_guards_ok(&th) && kt_buf_guards_ok(&tw) &&
              kt_buf_guards_ok(&ty));
    kt_buf_free(&ti);
    kt_buf_free(&th);
    kt_buf_free(&tw);
    kt_buf_free(&ty);
    ak_close(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_embedding");
    TCase *tc = tcase_create("embedding");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, forward_every_dtype);
    tcase_add_loop_test(tc, backward_matches_reference, 0, 27);
    tcase_add_test(tc, backward_fp16_accumulator_stalls);
    tcase_add_test(tc, backward_specials);
    tcase_add_test(tc, gradient_matches_finite_differences);
    tcase_add_test(tc, bad_ids_named);
    tcase_add_test(tc, bad_arguments_named);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
