/* test_norm_layernorm: ak_layernorm_forward and ak_layernorm_backward on
 * the cpu backend: the row statistics in kernels.h's lane order and the
 * fp32 element formulas of ref_norm.c (bit for bit, every dtype pairing,
 * rows longer than 256), PyTorch's formulas in plain double (within a
 * bound), a hand example, affine=False, specials, finite differences of
 * dx, dgamma and dbeta, bad arguments, guard regions. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "kt.h"
#include "kt_fd.h"
#include "ref_norm.h"

/* The forward from host bits; gamma NULL: no affine; sm NULL: no save. */
static void ln_forward(ak_backend *b, size_t rows, size_t cols, double eps, ak_dtype xdt,
                       const uint32_t *x, ak_dtype ydt, uint32_t *y, ak_dtype gdt,
                       const uint32_t *gamma, const uint32_t *beta, float *sm, float *sr)
{
    kt_buf tx = kt_buf_alloc(b, rows * cols, xdt), ty = kt_buf_alloc(b, rows * cols, ydt),
           tg = kt_buf_alloc(b, gamma ? cols : 0, gdt), tb = kt_buf_alloc(b, gamma ? cols : 0, gdt),
           tsm = kt_buf_alloc(b, sm ? rows : 0, AK_F32),
           tsr = kt_buf_alloc(b, sm ? rows : 0, AK_F32);
    kt_buf_put(&tx, x);
    if (gamma) {
        kt_buf_put(&tg, gamma);
        kt_buf_put(&tb, beta);
    }
    const ak_tensor none = ak_tensor_none();
    ck_assert_int_eq(ak_layernorm_forward(b, rows, cols, eps, ty.t, tx.t, gamma ? tg.t : none,
                                          gamma ? tb.t : none, sm ? tsm.t : none,
                                          sm ? tsr.t : none),
                     AK_OK);
    kt_buf_get(&ty, y);
    if (sm) {
        kt_buf_download(&tsm, sm);
        kt_buf_download(&tsr, sr);
    }
    kt_buf *all[] = {&tx, &ty, &tg, &tb, &tsm, &tsr};
    for (int i = 0; i < 6; i++) {
        ck_assert(kt_buf_guards_ok(all[i]));
        kt_buf_free(all[i]);
    }
}

static void ln_backward(ak_backend *b, size_t rows, size_t cols, ak_dtype dxdt, uint32_t *dx,
                        uint32_t *dg, uint32_t *db, ak_dtype dt, const uint32_t *dy,
                        const uint32_t *x, const uint32_t *gamma, const float *sm, const float *sr)
{
    const size_t count = rows * cols;
    kt_buf tdx = kt_buf_alloc(b, dx ? count : 0, dxdt),
           tdg = kt_buf_alloc(b, dg ? cols : 0, AK_F32),
           tdb = kt_buf_alloc(b, db ? cols : 0, AK_F32), tdy = kt_buf_alloc(b, count, dt),
           tx = kt_buf_alloc(b, count, dt), tg = kt_buf_alloc(b, gamma ? cols : 0, AK_F32),
           tsm = kt_buf_alloc(b, rows, AK_F32), tsr = kt_buf_alloc(b, rows, AK_F32);
    kt_buf_put(&tdy, dy);
    kt_buf_put(&tx, x);
    if (gamma) kt_buf_put(&tg, gamma);
    kt_buf_upload(&tsm, sm);
    kt_buf_upload(&tsr, sr);
    const ak_tensor none = ak_tensor_none();
    ck_assert_int_eq(ak_layernorm_backward(b, rows, cols, dx ? tdx.t : none, dg ? tdg.t : none,
                                           db ? tdb.t : none, tdy.t, tx.t, gamma ? tg.t : none,
                                           tsm.t, tsr.t),
                     AK_OK);
    if (dx) kt_buf_get(&tdx, dx);
    if (dg) kt_buf_get(&tdg, dg);
    if (db) kt_buf_get(&tdb, db);
    kt_buf *all[] = {&tdx, &tdg, &tdb, &tdy, &tx, &tg, &tsm, &tsr};
    for (int i = 0; i < 8; i++) {
        ck_assert(kt_buf_guards_ok(all[i]));
        kt_buf_free(all[i]);
    }
}

static double *row_values(ak_dtype dt, const uint32_t *x, size_t cols)
{
    double *v = malloc(cols * sizeof *v + 8);
    for (size_t j = 0; j < cols; j++)
        v[j] = kt_value(dt, x[j]);
    return v;
}

static void forward_case(ak_backend *b, ts_rng *r, size_t rows, size_t cols, ak_dtype xdt,
                         ak_dtype ydt, ak_dtype gdt, bool affine)
{
    const size_t count = rows * cols;
    const double eps = 1e-5;
    uint32_t *x = kt_bits_alloc(count), *y = kt_bits_alloc(count), *g = kt_bits_alloc(cols),
             *be = kt_bits_alloc(cols);
    kt_fill_values(r, xdt, x, count, 4.0);
    for (size_t i = 0; i < count; i++) /* row means away from 0 */
        x[i] = kt_from_f64(xdt, kt_value(xdt, x[i]) + 8.0 * (double)(i / cols));
    kt_fill_values(r, gdt, g, cols, 2.0);
    kt_fill_values(r, gdt, be, cols, 2.0);
    float *sm = calloc(rows + 1, 4), *sr = calloc(rows + 1, 4);
    ln_forward(b, rows, cols, eps, xdt, x, ydt, y, gdt, affine ? g : NULL, be, sm, sr);
    for (size_t row = 0; row < rows; row++) {
        double *v = row_values(xdt, x + row * cols, cols), s2, pm, pv;
        float mean, rstd;
        ref_norm_stats(v, cols, eps, &mean, &rstd, &s2);
        ck_assert_uint_eq(kt_f32_bits(sm[row]), kt_f32_bits(mean));
        ck_assert_uint_eq(kt_f32_bits(sr[row]), kt_f32_bits(rstd));
        ref_norm_plain(v, cols, &pm, &pv);
        const double pr = 1.0 / sqrt(pv + eps);
        for (size_t j = 0; j < cols; j++) {
            const size_t i = row * cols + j;
            const float gv = affine ? kt_f32_of(kt_to_f32(gdt, g[j])) : 1.0f;
            const float bv = affine ? kt_f32_of(kt_to_f32(gdt, be[j])) : 0.0f;
            ck_assert_uint_eq(y[i], ref_norm_y_bits(ydt, (float)v[j], mean, rstd, gv, bv));
            const double want = (v[j] - pm) * pr * gv + bv;
            const double bound =
                8 * 0x1p-24 * (fabs((v[j] - pm) * pr * gv) + fabs(pm * pr * gv) + fabs(bv)) +
                kt_ulp(ydt, want);
            ck_assert_msg(fabs(kt_value(ydt, y[i]) - want) <= bound, "y[%zu] %g want %g", i,
                          kt_value(ydt, y[i]), want);
        }
        free(v);
    }
    free(x), free(y), free(g), free(be), free(sm), free(sr);
}

START_TEST(forward_every_dtype)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 80);
    for (int combo = 0; combo < 9; combo++) {
        forward_case(b, &r, 5, 12, kt_dtypes[combo / 3], kt_dtypes[combo % 3], AK_F32, true);
        forward_case(b, &r, 5, 12, kt_dtypes[combo / 3], kt_dtypes[combo % 3], kt_dtypes[combo / 3],
                     true);
        forward_case(b, &r, 3, 7, kt_dtypes[combo / 3], kt_dtypes[combo % 3], AK_F32, false);
    }
    forward_case(b, &r, 3, 600, AK_F32, AK_F32, AK_F32, true); /* every lane and the tree */
    forward_case(b, &r, 2, 257, AK_BF16, AK_F16, AK_F32, true);
    ak_close(b);
}
END_TEST

START_TEST(forward_by_hand)
{
    ak_backend *b = kt_open_cpu();
    /* row [1 2 3 4], eps 0: mean 2.5, rstd 1/sqrt(1.25) = 0x3F64F92E; row
     * [5 5 5 5], eps 0.25: rstd 2, y = beta; gamma [2 ...], beta 0.5: the
     * constant row is 0.5 everywhere.  A NaN or inf in a row: that row all
     * default NaN, the others untouched. */
    const float xf[12] = {1, 2, 3, 4, 5, 5, 5, 5, 1, INFINITY, 0, 1};
    uint32_t x[12], y[12], g[4], be[4];
    for (int i = 0; i < 12; i++)
        x[i] = kt_f32_bits(xf[i]);
    for (int j = 0; j < 4; j++) {
        g[j] = kt_f32_bits(2.0f);
        be[j] = kt_f32_bits(0.5f);
    }
    float sm[3], sr[3];
    ln_forward(b, 1, 4, 0.0, AK_F32, x, AK_F32, y, AK_F32, g, be, sm, sr);
    ck_assert_float_eq(sm[0], 2.5f);
    ck_assert_uint_eq(kt_f32_bits(sr[0]), 0x3F64F92Eu);
    ln_forward(b, 3, 4, 0.25, AK_F32, x, AK_F32, y, AK_F32, g, be, sm, sr);
    ck_assert_float_eq(sr[1], 2.0f);
    for (int j = 4; j < 8; j++)
        ck_assert_float_eq(kt_f32_of(y[j]), 0.5f);
    for (int j = 8; j < 12; j++)
        ck_assert_uint_eq(y[j], kt_default_nan(AK_F32));
    ck_assert(!isnan(kt_f32_of(y[0])));
    /* fp16 out of a large gamma overflows: x [1 -1], eps 0, gamma 70000:
     * +-inf in fp16, 0x4789 / 0xC789 in bf16 */
    const uint32_t xh[2] = {0x3C00, 0xBC00}, gh[2] = {0x4788B800, 0x4788B800}, bh[2] = {0, 0};
    ln_forward(b, 1, 2, 0.0, AK_F16, xh, AK_F16, y, AK_F32, gh, bh, NULL, NULL);
    ck_assert_uint_eq(y[0], 0x7C00);
    ck_assert_uint_eq(y[1], 0xFC00);
    ln_forward(b, 1, 2, 0.0, AK_F16, xh, AK_BF16, y, AK_F32, gh, bh, NULL, NULL);
    ck_assert_uint_eq(y[0], 0x4789);
    ck_assert_uint_eq(y[1], 0xC789);
    ak_close(b);
}
END_TEST

static void backward_case(ak_backend *b, ts_rng *r, size_t rows, size_t cols, ak_dtype dt,
                          ak_dtype dxdt, bool affine)
{
    const size_t count = rows * cols;
    uint32_t *x = kt_bits_alloc(count), *dy = kt_bits_alloc(count), *dx = kt_bits_alloc(count),
             *g = kt_bits_alloc(cols), *dg = kt_bits_alloc(cols), *db = kt_bits_alloc(cols);
    kt_fill_values(r, dt, x, count, 4.0);
    kt_fill_values(r, dt, dy, count, 1.0);
    kt_fill_values(r, AK_F32, g, cols, 2.0);
    float *sm = calloc(rows, 4), *sr = calloc(rows, 4);
    for (size_t row = 0; row < rows; row++) {
        double *v = row_values(dt, x + row * cols, cols), s2;
        ref_norm_stats(v, cols, 1e-5, &sm[row], &sr[row], &s2);
        free(v);
    }
    ln_backward(b, rows, cols, dxdt, dx, affine ? dg : NULL, affine ? db : NULL, dt, dy, x,
                affine ? g : NULL, sm, sr);
    double *gd = malloc(cols * sizeof *gd), *gx = malloc(cols * sizeof *gx);
    for (size_t row = 0; row < rows; row++) {
        double *v = row_values(dt, x + row * cols, cols),
               *d = row_values(dt, dy + row * cols, cols);
        for (size_t j = 0; j < cols; j++) {
            gd[j] = d[j] * (affine ? kt_value(AK_F32, g[j]) : 1.0);
            gx[j] = gd[j] * (v[j] - (double)sm[row]);
        }
        const double sg = ref_norm_lane_sum(gd, cols), sgx = ref_norm_lane_sum(gx, cols);
        const float c1 = ref_norm_f32(sg / (double)cols),
                    c2 = ref_norm_f32(sgx / (double)cols * sr[row] * sr[row]);
        double pm, pv, psg = 0, psgx = 0;
        ref_norm_plain(v, cols, &pm, &pv);
        const double pr = 1.0 / sqrt(pv + 1e-5);
        for (size_t j = 0; j < cols; j++) {
            psg += gd[j];
            psgx += gd[j] * (v[j] - pm);
        }
        for (size_t j = 0; j < cols; j++) {
            const size_t i = row * cols + j;
            ck_assert_uint_eq(dx[i], ref_norm_dx_bits(dxdt, ref_norm_f32(gd[j]), (float)v[j],
                                                      sm[row], c1, c2, sr[row]));
            const double proj = (v[j] - pm) * pr * pr * psgx / (double)cols;
            const double want = (gd[j] - psg / (double)cols - proj) * pr;
            const double scale = pr * (fabs(gd[j]) + fabs(psg / (double)cols) + fabs(proj));
            ck_assert_msg(fabs(kt_value(dxdt, dx[i]) - want) <=
                              64 * 0x1p-24 * scale + kt_ulp(dxdt, want),
                          "dx[%zu] %g want %g", i, kt_value(dxdt, dx[i]), want);
        }
        free(v), free(d);
    }
    if (affine) /* over rows in row order, in double */
        for (size_t j = 0; j < cols; j++) {
            double sgam = 0, sbet = 0;
            for (size_t row = 0; row < rows; row++) {
                const double d = kt_value(dt, dy[row * cols + j]);
                sgam += d * ((kt_value(dt, x[row * cols + j]) - (double)sm[row]) * sr[row]);
                sbet += d;
            }
            ck_assert_uint_eq(dg[j], kt_f32_bits(ref_norm_f32(sgam)));
            ck_assert_uint_eq(db[j], kt_f32_bits(ref_norm_f32(sbet)));
        }
    free(x), free(dy), free(dx), free(g), free(dg), free(db), free(sm), free(sr), free(gd),
        free(gx);
}

START_TEST(backward_every_dtype)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 81);
    for (int combo = 0; combo < 9; combo++) {
        backward_case(b, &r, 4, 9, kt_dtypes[combo / 3], kt_dtypes[combo % 3], true);
        backward_case(b, &r, 4, 9, kt_dtypes[combo / 3], kt_dtypes[combo % 3], false);
    }
    backward_case(b, &r, 3, 520, AK_F32, AK_F32, true);
    ak_close(b);
}
END_TEST

typedef struct ln_fd_ctx {
    ak_backend *b;
    size_t rows, cols;
    const float *x, *gamma, *beta, *r;
    int which; /* 0 x, 1 gamma, 2 beta */
} ln_fd_ctx;

static double ln_loss(const float *p, const void *vctx)
{
    const ln_fd_ctx *c = vctx;
    const size_t count = c->rows * c->cols;
    uint32_t x[64] = {0}, y[64], g[16] = {0}, be[16] = {0};
    for (size_t i = 0; i < count; i++)
        x[i] = kt_f32_bits(c->which == 0 ? p[i] : c->x[i]);
    for (size_t j = 0; j < c->cols; j++) {
        g[j] = kt_f32_bits(c->which == 1 ? p[j] : c->gamma[j]);
        be[j] = kt_f32_bits(c->which == 2 ? p[j] : c->beta[j]);
    }
    ln_forward(c->b, c->rows, c->cols, 1e-5, AK_F32, x, AK_F32, y, AK_F32, g, be, NULL, NULL);
    double l = 0;
    for (size_t i = 0; i < count; i++)
        l += (double)c->r[i] * kt_f32_of(y[i]);
    return l;
}

START_TEST(gradients_match_finite_differences)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    enum { ROWS = 3, COLS = 6, COUNT = ROWS * COLS };
    float x[COUNT], rv[COUNT], gamma[COLS], beta[COLS];
    kt_fd_points(&r, ts_seed() + 82, x, rv, COUNT);
    for (int j = 0; j < COLS; j++) {
        gamma[j] = (float)(0.5 + 0.125 * j);
        beta[j] = (float)(0.25 * j - 0.5);
    }
    uint32_t xb[COUNT], rb[COUNT], gb[COLS], bb[COLS], y[COUNT], dx[COUNT], dg[COLS], db[COLS];
    for (int i = 0; i < COUNT; i++) {
        xb[i] = kt_f32_bits(x[i]);
        rb[i] = kt_f32_bits(rv[i]);
    }
    for (int j = 0; j < COLS; j++) {
        gb[j] = kt_f32_bits(gamma[j]);
        bb[j] = kt_f32_bits(beta[j]);
    }
    float sm[ROWS], sr[ROWS];
    ln_forward(b, ROWS, COLS, 1e-5, AK_F32, xb, AK_F32, y, AK_F32, gb, bb, sm, sr);
    ln_backward(b, ROWS, COLS, AK_F32, dx, dg, db, AK_F32, rb, xb, gb, sm, sr);
    ln_fd_ctx ctx = {b, ROWS, COLS, x, gamma, beta, rv, 0};
    double fd[COUNT];
    ref_norm_fd(ln_loss, &ctx, x, COUNT, 0x1p-8, fd);
    for (int i = 0; i < COUNT; i++)
        ck_assert_msg(fabs(fd[i] - kt_f32_of(dx[i])) <= 2e-3 * (1 + fabs(fd[i])), "dx[%d] %g fd %g",
                      i, (double)kt_f32_of(dx[i]), fd[i]);
    ctx.which = 1;
    ref_norm_fd(ln_loss, &ctx, gamma, COLS, 0x1p-8, fd);
    for (int j = 0; j < COLS; j++)
        ck_assert_msg(fabs(fd[j] - kt_f32_of(dg[j])) <= 2e-3 * (1 + fabs(fd[j])),
                      "dgamma[%d] %g fd %g", j, (double)kt_f32_of(dg[j]), fd[j]);
    ctx.which = 2;
    ref_norm_fd(ln_loss, &ctx, beta, COLS, 0x1p-8, fd);
    for (int j = 0; j < COLS; j++)
        ck_assert_msg(fabs(fd[j] - kt_f32_of(db[j])) <= 2e-3 * (1 + fabs(fd[j])),
                      "dbeta[%d] %g fd %g", j, (double)kt_f32_of(db[j]), fd[j]);
    ak_close(b);
}
END_TEST

START_TEST(bad_arguments_named)
{
    ak_backend *b = kt_open_cpu();
    kt_buf x = kt_buf_alloc(b, 12, AK_F32), y = kt_buf_alloc(b, 12, AK_F32),
           c1 = kt_buf_alloc(b, 4, AK_F32), c2 = kt_buf_alloc(b, 4, AK_F32),
           r1 = kt_buf_alloc(b, 3, AK_F32), r2 = kt_buf_alloc(b, 3, AK_F32),
           h3 = kt_buf_alloc(b, 3, AK_BF16), f5 = kt_buf_alloc(b, 5, AK_F32);
    const ak_tensor none = ak_tensor_none();
    const char *F = "ak_layernorm_forward: ", *B = "ak_layernorm_backward: ";
    ck_assert_int_eq(ak_layernorm_forward(NULL, 3, 4, 1e-5, y.t, x.t, none, none, none, none),
                     AK_EINVAL);
    KT_EXPECT_ERROR(b, ak_layernorm_forward(b, 3, 0, 1e-5, y.t, x.t, none, none, none, none),
                    AK_EINVAL, F, "cols is 0");
    KT_EXPECT_ERROR(b, ak_layernorm_forward(b, 3, 4, -1.0, y.t, x.t, none, none, none, none),
                    AK_EINVAL, F, "eps (-1) must be finite and >= 0");
    KT_EXPECT_ERROR(b, ak_layernorm_forward(b, 3, 4, INFINITY, y.t, x.t, none, none, none, none),
                    AK_EINVAL, F, "eps (inf)");
    KT_EXPECT_ERROR(b, ak_layernorm_forward(b, 4, 4, 1e-5, y.t, x.t, none, none, none, none),
                    AK_EINVAL, F, "x has 12 elements, expected 16");
    KT_EXPECT_ERROR(b, ak_layernorm_forward(b, 3, 4, 1e-5, f5.t, x.t, none, none, none, none),
                    AK_EINVAL, F, "y has 5 elements, expected 12");
    KT_EXPECT_ERROR(b, ak_layernorm_forward(b, 3, 4, 1e-5, y.t, x.t, none, c1.t, none, none),
                    AK_EINVAL, F, "gamma and beta must be given together");
    KT_EXPECT_ERROR(b, ak_layernorm_forward(b, 3, 4, 1e-5, y.t, x.t, f5.t, f5.t, none, none),
                    AK_EINVAL, F, "gamma has 5 elements, expected 4");
    KT_EXPECT_ERROR(b, ak_layernorm_forward(b, 3, 4, 1e-5, y.t, x.t, none, none, h3.t, r2.t),
                    AK_EUNSUPPORTED, F, "save_mean and save_rstd must be fp32");
    KT_EXPECT_ERROR(b, ak_layernorm_forward(b, 3, 4, 1e-5, y.t, x.t, none, none, r1.t, none),
                    AK_EINVAL, F, "save_mean and save_rstd must be given together");
    KT_EXPECT_ERROR(b, ak_layernorm_forward(b, 3, 4, 1e-5, x.t, x.t, none, none, none, none),
                    AK_EINVAL, F, "y overlaps x");
    KT_EXPECT_ERROR(b, ak_layernorm_forward(b, 3, 4, 1e-5, y.t, x.t, none, none, r1.t, r1.t),
                    AK_EINVAL, F, "save_mean overlaps save_rstd");
    KT_EXPECT_ERROR(
        b, ak_layernorm_forward(b, SIZE_MAX / 2, 4, 1e-5, y.t, x.t, none, none, none, none),
        AK_EINVAL, F, "overflows a size_t");
    const ak_tensor bad = ak_tensor_of(x.t.data, 12, (ak_dtype)9);
    KT_EXPECT_ERROR(b, ak_layernorm_forward(b, 3, 4, 1e-5, y.t, bad, none, none, none, none),
                    AK_EINVAL, F, "x has an invalid dtype (9)");
    KT_EXPECT_ERROR(b, ak_layernorm_backward(b, 3, 4, y.t, none, none, x.t, x.t, none, none, r2.t),
                    AK_EINVAL, B, "save_mean has 0 elements, expected 3");
    KT_EXPECT_ERROR(b, ak_layernorm_backward(b, 3, 4, y.t, none, none, x.t, x.t, none, h3.t, r2.t),
                    AK_EUNSUPPORTED, B, "save_mean and save_rstd must be fp32");
    KT_EXPECT_ERROR(b, ak_layernorm_backward(b, 3, 4, y.t, c1.t, none, x.t, x.t, none, r1.t, r2.t),
                    AK_EINVAL, B, "dgamma and dbeta need gamma");
    KT_EXPECT_ERROR(b, ak_layernorm_backward(b, 3, 4, x.t, none, none, x.t, y.t, none, r1.t, r2.t),
                    AK_EINVAL, B, "dx overlaps dy");
    KT_EXPECT_ERROR(b, ak_layernorm_backward(b, 3, 4, y.t, c1.t, c2.t, x.t, x.t, c1.t, r1.t, r2.t),
                    AK_EINVAL, B, "dgamma overlaps gamma");
    KT_EXPECT_ERROR(b, ak_layernorm_backward(b, 3, 4, f5.t, none, none, x.t, x.t, none, r1.t, r2.t),
                    AK_EINVAL, B, "dx has 5 elements, expected 12");
    KT_EXPECT_ERROR(b, ak_layernorm_backward(b, 3, 0, y.t, none, none, x.t, x.t, none, r1.t, r2.t),
                    AK_EINVAL, B, "cols is 0");
    /* no rows: dgamma and dbeta are written, zeros */
    ak_fill(b, c1.t, 5.0);
    ak_fill(b, c2.t, 5.0);
    kt_buf g4 = kt_buf_alloc(b, 4, AK_F32);
    ck_assert_int_eq(ak_layernorm_backward(b, 0, 4, none, c1.t, c2.t, none, none, g4.t, none, none),
                     AK_OK);
    float z[4];
    kt_buf_download(&c1, z);
    ck_assert(z[0] == 0.0f && z[3] == 0.0f);
    kt_buf_download(&c2, z);
    ck_assert(z[0] == 0.0f && z[3] == 0.0f);
    ck_assert_int_eq(ak_layernorm_forward(b, 0, 4, 1e-5, none, none, none, none, none, none),
                     AK_OK);
    kt_buf *all[] = {&x, &y, &c1, &c2, &r1, &r2, &h3, &f5, &g4};
    for (int i = 0; i < 9; i++) {
        ck_assert(kt_buf_guards_ok(all[i]));
        kt_buf_free(all[i]);
    }
    ak_close(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_norm_layernorm");
    TCase *tc = tcase_create("layernorm");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, forward_every_dtype);
    tcase_add_test(tc, forward_by_hand);
    tcase_add_test(tc, backward_every_dtype);
    tcase_add_test(tc, gradients_match_finite_differences);
    tcase_add_test(tc, bad_arguments_named);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
