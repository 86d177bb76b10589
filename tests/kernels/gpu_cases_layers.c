/* gpu_cases_layers: the cuda backend against the cpu backend on the same inputs:
 * bias add, relu, relu backward and 2x2 max-pooling bit for bit; bias_grad
 * within the bound stated in kernels/layers.c, with NaN and the sign of
 * infinities checked explicitly.  LeNet-5-like shapes (batch 32: 6x28x28
 * pooled, 16x10x10 pooled, fc 120/84/10) and MLP shapes (32x256,
 * 512x4096), every dtype pairing on smaller shapes; guard regions on both
 * backends. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_ops.h"

/* ---- one tensor on both backends ---------------------------------------------- */
/* Both backends, open during each test (kt_open_both_around). */
static ak_backend *cpu, *gpu;

static kt_twin twin_alloc(size_t n, ak_dtype dt) { return kt_twin_alloc(cpu, gpu, n, dt); }

/* Every kind of pattern (specials, boundaries, random bits), or ordinary
 * finite values in [-8, 8]. */
static uint32_t *random_input(ts_rng *r, ak_dtype dt, size_t n, bool values)
{
    uint32_t *x = malloc(n * 4 + 4);
    if (values)
        kt_fill_values(r, dt, x, n, 8.0);
    else
        kt_fill_bits(r, dt, x, n);
    return x;
}

/* ---- elementwise: bit for bit ------------------------------------------------------ */
static void check_relu(const go_cmp *cmp, ts_rng *r, size_t n, ak_dtype dy, ak_dtype dx,
                       bool values)
{
    uint32_t *x = random_input(r, dx, n, values);
    kt_twin tx = twin_alloc(n, dx), ty = twin_alloc(n, dy);
    kt_twin_put(&tx, x);
    ck_assert_int_eq(ak_relu(cpu, ty.c.t, tx.c.t), AK_OK);
    ck_assert_int_eq(ak_relu(gpu, ty.g.t, tx.g.t), AK_OK);
    ck_assert_msg(go_compare_twin("relu y", cmp, &ty, NULL, NULL) == 0, "y %s x %s n %zu",
                  ak_dtype_name(dy), ak_dtype_name(dx), n);
    if (dx == dy) { /* in place on the GPU */
        ck_assert_int_eq(ak_relu(gpu, tx.g.t, tx.g.t), AK_OK);
        ck_assert_int_eq(ak_relu(cpu, tx.c.t, tx.c.t), AK_OK);
        ck_assert_uint_eq(go_compare_twin("relu in place", cmp, &tx, NULL, NULL), 0);
    }
    kt_twin_free(&tx);
    kt_twin_free(&ty);
    free(x);
}

static void check_relu_backward(const go_cmp *cmp, ts_rng *r, size_t n, ak_dtype ddx, ak_dtype ddy,
                                ak_dtype dx, bool values)
{
    uint32_t *x = random_input(r, dx, n, values), *g = random_input(r, ddy, n, values);
    kt_twin tx = twin_alloc(n, dx), tdy = twin_alloc(n, ddy), tdx = twin_alloc(n, ddx);
    kt_twin_put(&tx, x);
    kt_twin_put(&tdy, g);
    ck_assert_int_eq(ak_relu_backward(cpu, tdx.c.t, tdy.c.t, tx.c.t), AK_OK);
    ck_assert_int_eq(ak_relu_backward(gpu, tdx.g.t, tdy.g.t, tx.g.t), AK_OK);
    ck_assert_msg(go_compare_twin("relu_backward dx", cmp, &tdx, NULL, NULL) == 0,
                  "dx %s dy %s x %s n %zu", ak_dtype_name(ddx), ak_dtype_name(ddy),
                  ak_dtype_name(dx), n);
    kt_twin_free(&tx);
    kt_twin_free(&tdy);
    kt_twin_free(&tdx);
    free(x);
    free(g);
}

GO_CASE(relu_bit_exact)
{
    const go_cmp *cmp = &c->cmp;
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 20);
    /* LeNet activations: conv1 (32 x 6 x 28 x 28), conv2 (32 x 16 x 10 x 10), fc (32 x 120) */
    static const size_t sizes[] = {32 * 6 * 28 * 28, 32 * 16 * 10 * 10, 32 * 120};
    for (size_t s = 0; s < 3; s++)
        for (int d = 0; d < 3; d++)
            for (int v = 0; v < 2; v++) {
                check_relu(cmp, &r, sizes[s], kt_dtypes[d], kt_dtypes[d], v);
                check_relu_backward(cmp, &r, sizes[s], kt_dtypes[d], kt_dtypes[d], kt_dtypes[d], v);
            }
    for (int combo = 0; combo < 9; combo++)
        check_relu(cmp, &r, 1001, kt_dtypes[combo / 3], kt_dtypes[combo % 3], false);
    for (int combo = 0; combo < 27; combo++)
        check_relu_backward(cmp, &r, 1001, kt_dtypes[combo / 9], kt_dtypes[combo / 3 % 3],
                            kt_dtypes[combo % 3], false);
}

static void check_maxpool(const go_cmp *cmp, ts_rng *r, size_t planes, size_t h, size_t w,
                          ak_dtype dx, ak_dtype dy, ak_dtype ddx, ak_dtype ddy, bool values)
{
    const size_t n_in = planes * h * w, n_out = n_in / 4;
    uint32_t *x = random_input(r, dx, n_in, values), *g = random_input(r, ddy, n_out, values);
    if (values) /* ties in some windows: the first of equal maxima */
        for (size_t i = 0; i + 1 < n_in; i += 7)
            x[i + 1] = x[i];
    kt_twin tx = twin_alloc(n_in, dx), ty = twin_alloc(n_out, dy), tdx = twin_alloc(n_in, ddx),
            tdy = twin_alloc(n_out, ddy);
    kt_twin_put(&tx, x);
    kt_twin_put(&tdy, g);
    ck_assert_int_eq(ak_maxpool2_forward(cpu, planes, h, w, ty.c.t, tx.c.t), AK_OK);
    ck_assert_int_eq(ak_maxpool2_forward(gpu, planes, h, w, ty.g.t, tx.g.t), AK_OK);
    ck_assert_msg(go_compare_twin("maxpool2 y", cmp, &ty, NULL, NULL) == 0, "y %s x %s %zux%zux%zu",
                  ak_dtype_name(dy), ak_dtype_name(dx), planes, h, w);
    ck_assert_int_eq(ak_maxpool2_backward(cpu, planes, h, w, tdx.c.t, tdy.c.t, tx.c.t), AK_OK);
    ck_assert_int_eq(ak_maxpool2_backward(gpu, planes, h, w, tdx.g.t, tdy.g.t, tx.g.t), AK_OK);
    ck_assert_msg(go_compare_twin("maxpool2 dx", cmp, &tdx, NULL, NULL) == 0,
                  "dx %s dy %s x %s %zux%zux%zu", ak_dtype_name(ddx), ak_dtype_name(ddy),
                  ak_dtype_name(dx), planes, h, w);
    kt_twin_free(&tx);
    kt_twin_free(&ty);
    kt_twin_free(&tdx);
    kt_twin_free(&tdy);
    free(x);
    free(g);
}

GO_CASE(maxpool_bit_exact)
{
    const go_cmp *cmp = &c->cmp;
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 21);
    for (int d = 0; d < 3; d++) {
        for (int v = 0; v < 2; v++) {
            const ak_dtype t = kt_dtypes[d];
            check_maxpool(cmp, &r, 32 * 6, 28, 28, t, t, t, t, v);  /* LeNet conv1 -> 14 x 14 */
            check_maxpool(cmp, &r, 32 * 16, 10, 10, t, t, t, t, v); /* LeNet conv2 -> 5 x 5 */
        }
    }
    for (int combo = 0; combo < 9; combo++)
        check_maxpool(cmp, &r, 3, 6, 8, kt_dtypes[combo % 3], kt_dtypes[combo / 3],
                      kt_dtypes[combo / 3], kt_dtypes[combo % 3], false);
    for (int combo = 0; combo < 27; combo++)
        check_maxpool(cmp, &r, 2, 4, 6, kt_dtypes[combo % 3], kt_dtypes[combo % 3],
                      kt_dtypes[combo / 9], kt_dtypes[combo / 3 % 3], false);
}

static void check_bias_add(const go_cmp *cmp, ts_rng *r, size_t rows, size_t cols, ak_dtype dy,
                           ak_dtype db, bool values)
{
    uint32_t *y = random_input(r, dy, rows * cols, values),
             *bias = random_input(r, db, cols, values);
    kt_twin ty = twin_alloc(rows * cols, dy), tb = twin_alloc(cols, db);
    kt_twin_put(&ty, y);
    kt_twin_put(&tb, bias);
    ck_assert_int_eq(ak_bias_add(cpu, ty.c.t, tb.c.t, rows, cols), AK_OK);
    ck_assert_int_eq(ak_bias_add(gpu, ty.g.t, tb.g.t, rows, cols), AK_OK);
    ck_assert_msg(go_compare_twin("bias_add y", cmp, &ty, NULL, NULL) == 0, "y %s bias %s %zux%zu",
                  ak_dtype_name(dy), ak_dtype_name(db), rows, cols);
    kt_twin_free(&ty);
    kt_twin_free(&tb);
    free(y);
    free(bias);
}

GO_CASE(bias_add_bit_exact)
{
    const go_cmp *cmp = &c->cmp;
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 22);
    static const size_t shapes[][2] = {{32, 256}, {512, 4096}, {32, 120}, {32, 84}, {32, 10}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int d = 0; d < 3; d++)
            for (int v = 0; v < 2; v++)
                check_bias_add(cmp, &r, shapes[s][0], shapes[s][1], kt_dtypes[d], kt_dtypes[d], v);
    for (int combo = 0; combo < 9; combo++)
        for (int v = 0; v < 2; v++)
            check_bias_add(cmp, &r, 23, 37, kt_dtypes[combo / 3], kt_dtypes[combo % 3], v);
}

/* ---- bias_grad: within the stated bound -------------------------------------------------- */

static void check_bias_grad(const go_cmp *cmp, ts_rng *r, size_t rows, size_t cols, ak_dtype dd,
                            ak_dtype dt, bool values)
{
    const size_t n = rows * cols;
    uint32_t *dy = random_input(r, dt, n, values), *gc = malloc(cols * 4 + 4),
             *gg = malloc(cols * 4 + 4);
    kt_twin tdy = twin_alloc(n, dt), tdb = twin_alloc(cols, dd);
    kt_twin_put(&tdy, dy);
    ck_assert_int_eq(ak_bias_grad(cpu, tdb.c.t, tdy.c.t, rows, cols), AK_OK);
    ck_assert_int_eq(ak_bias_grad(gpu, tdb.g.t, tdy.g.t, rows, cols), AK_OK);
    kt_buf_get(&tdb.c, gc);
    kt_buf_get(&tdb.g, gg);
    /* the summation-order term of the bound, per column */
    double *g = calloc(cols + 1, sizeof *g);
    ck_assert_ptr_nonnull(g);
    for (size_t c = 0; c < cols; c++) {
        double abs_sum = 0.0;
        for (size_t i = 0; i < rows; i++)
            abs_sum += fabs(kt_value(dt, dy[i * cols + c]));
        g[c] = (double)(rows ? rows - 1 : 0) * 0x1p-53 * abs_sum;
    }
    /* fp16 sums of up to 2^13 rows are exact in double: bit for bit */
    const bool exact = dt == AK_F16 && rows <= 8192;
    char what[96];
    snprintf(what, sizeof what, "bias_grad (dy %s, %zux%zu)", ak_dtype_name(dt), rows, cols);
    const size_t bad = go_compare(what, exact ? &go_bits : cmp, dd, gc, gg, cols, g, NULL);
    free(g);
    ck_assert_msg(bad == 0, "%zu columns outside the bound", bad);
    kt_twin_free(&tdy);
    kt_twin_free(&tdb);
    free(dy);
    free(gc);
    free(gg);
}

GO_CASE(bias_grad_within_bound)
{
    const go_cmp *cmp = &c->cmp;
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 23);
    /* MLP and LeNet fc layers, a tall thin one, and rows = 0 (zeros) */
    static const size_t shapes[][2] = {{32, 256}, {512, 4096}, {32, 120},
                                       {32, 10},  {10000, 3},  {0, 5}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int d = 0; d < 3; d++)
            for (int v = 0; v < 2; v++)
                check_bias_grad(cmp, &r, shapes[s][0], shapes[s][1], kt_dtypes[d], kt_dtypes[d], v);
    for (int combo = 0; combo < 9; combo++)
        for (int v = 0; v < 2; v++)
            check_bias_grad(cmp, &r, 50, 70, kt_dtypes[combo / 3], kt_dtypes[combo % 3], v);
}

/* The cuda wrappers check arguments as the cpu's do (one shared wrapper). */
GO_CASE(bad_arguments_on_cuda)
{
    kt_twin f12 = twin_alloc(12, AK_F32), f4 = twin_alloc(4, AK_F32);
    ck_assert_int_eq(ak_bias_add(gpu, f12.g.t, f4.g.t, 4, 4), AK_EINVAL);
    ck_assert_msg(strstr(ak_error(gpu), "ak_bias_add: y has 12 elements, expected 16"), "%s",
                  ak_error(gpu));
    ck_assert_int_eq(ak_maxpool2_forward(gpu, 1, 3, 4, f4.g.t, f12.g.t), AK_EINVAL);
    ck_assert_msg(strstr(ak_error(gpu), "must be even"), "%s", ak_error(gpu));
    ck_assert_int_eq(ak_relu(gpu, f4.g.t, f12.g.t), AK_EINVAL);
    ck_assert_int_eq(ak_relu(gpu, ak_tensor_none(), ak_tensor_none()), AK_OK);
    ck_assert_int_eq(ak_sync(gpu), AK_OK);
    kt_twin_free(&f12);
    kt_twin_free(&f4);
}

static const go_case rows[] = {
    {"relu relu_backward", "relu_bit_exact", 1, relu_bit_exact, GO_BITS},
    {"maxpool2_forward maxpool2_backward", "maxpool_bit_exact", 1, maxpool_bit_exact, GO_BITS},
    {"bias_add", "bias_add_bit_exact", 1, bias_add_bit_exact, GO_BITS},
    /* fp16 sums of up to 2^13 rows are exact in double: there bit for bit */
    {"bias_grad",
     "bias_grad_within_bound",
     1,
     bias_grad_within_bound,
     {GO_CLOSE, 1, 1, 2, true, true,
      "kernels/layers.c: one step (to inf of the same sign included), or 2 (rows - 1) 2^-53 "
      "sum |dy| + ulp"}},
    {"bias_add maxpool2_forward relu", "bad_arguments_on_cuda", 1, bad_arguments_on_cuda, GO_BITS},
};
GO_FAMILY(layers, rows);
