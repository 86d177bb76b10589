/* gpu_cases_norm: BatchNorm2d and LayerNorm, forward (training and eval)
 * and backward, on cuda against cpu, bit for bit (the same double lanes and
 * tree, the same fp32 element code, elem/norm.h): ResNet shapes (32 x 16 x
 * 28 x 28, 32 x 64 x 7 x 7) and transformer shapes (2048 rows x 128, x 600)
 * in every dtype, mixed dtypes and fp32 affine parameters, specials. */
#include <check.h>
#include <stdlib.h>

#include "gpu_ops.h"

static ak_backend *cpu, *gpu;

static uint32_t *input(ts_rng *r, ak_dtype dt, size_t n, bool values)
{
    uint32_t *x = malloc(n * 4 + 4);
    if (values)
        kt_fill_values(r, dt, x, n, 4.0);
    else
        kt_fill_bits(r, dt, x, n);
    return x;
}

static void check_bn(const go_cmp *cmp, ts_rng *r, size_t n, size_t c, size_t hw, ak_dtype xdt,
                     ak_dtype ydt, ak_dtype gdt, bool values)
{
    const size_t count = n * c * hw;
    uint32_t *x = input(r, xdt, count, values), *dy = input(r, ydt, count, values);
    uint32_t *g = input(r, gdt, c, true), *be = input(r, gdt, c, true);
    kt_twin tx = kt_twin_alloc(cpu, gpu, count, xdt), ty = kt_twin_alloc(cpu, gpu, count, ydt),
            tdy = kt_twin_alloc(cpu, gpu, count, ydt), tdx = kt_twin_alloc(cpu, gpu, count, xdt),
            tg = kt_twin_alloc(cpu, gpu, c, gdt), tb = kt_twin_alloc(cpu, gpu, c, gdt),
            tdg = kt_twin_alloc(cpu, gpu, c, gdt), tdb = kt_twin_alloc(cpu, gpu, c, gdt),
            rm = kt_twin_alloc(cpu, gpu, c, AK_F32), rv = kt_twin_alloc(cpu, gpu, c, AK_F32),
            sm = kt_twin_alloc(cpu, gpu, c, AK_F32), si = kt_twin_alloc(cpu, gpu, c, AK_F32);
    kt_twin_put(&tx, x);
    kt_twin_put(&tdy, dy);
    kt_twin_put(&tg, g);
    kt_twin_put(&tb, be);
    ck_assert_int_eq(ak_fill(cpu, rv.c.t, 1.0), AK_OK);
    ck_assert_int_eq(ak_fill(gpu, rv.g.t, 1.0), AK_OK);
    ck_assert_int_eq(ak_fill(cpu, rm.c.t, 0.5), AK_OK);
    ck_assert_int_eq(ak_fill(gpu, rm.g.t, 0.5), AK_OK);
    for (int training = 1; training >= 0; training--) {
        const ak_batchnorm a = {n, c, hw, 1e-5, 0.1, training != 0};
        ck_assert_int_eq(ak_batchnorm_forward(cpu, &a, ty.c.t, tx.c.t, tg.c.t, tb.c.t, rm.c.t,
                                              rv.c.t, sm.c.t, si.c.t),
                         AK_OK);
        ck_assert_int_eq(ak_batchnorm_forward(gpu, &a, ty.g.t, tx.g.t, tg.g.t, tb.g.t, rm.g.t,
                                              rv.g.t, sm.g.t, si.g.t),
                         AK_OK);
        kt_twin *outs[] = {&ty, &rm, &rv, &sm, &si};
        const char *names[] = {"bn y", "bn running_mean", "bn running_var", "bn save_mean",
                               "bn save_invstd"};
        for (int i = 0; i < 5; i++)
            ck_assert_msg(go_compare_twin(names[i], cmp, outs[i], NULL, NULL) == 0,
                          "%s training %d x %s y %s gamma %s %zux%zux%zu", names[i], training,
                          ak_dtype_name(xdt), ak_dtype_name(ydt), ak_dtype_name(gdt), n, c, hw);
    }
    const ak_batchnorm a = {n, c, hw, 1e-5, 0.1, true};
    ck_assert_int_eq(ak_batchnorm_forward(cpu, &a, ty.c.t, tx.c.t, tg.c.t, tb.c.t, rm.c.t, rv.c.t,
                                          sm.c.t, si.c.t),
                     AK_OK);
    ck_assert_int_eq(ak_batchnorm_forward(gpu, &a, ty.g.t, tx.g.t, tg.g.t, tb.g.t, rm.g.t, rv.g.t,
                                          sm.g.t, si.g.t),
                     AK_OK);
    ck_assert_int_eq(ak_batchnorm_backward(cpu, &a, tdx.c.t, tdg.c.t, tdb.c.t, tdy.c.t, tx.c.t,
                                           tg.c.t, sm.c.t, si.c.t),
                     AK_OK);
    ck_assert_int_eq(ak_batchnorm_backward(gpu, &a, tdx.g.t, tdg.g.t, tdb.g.t, tdy.g.t, tx.g.t,
                                           tg.g.t, sm.g.t, si.g.t),
                     AK_OK);
    ck_assert_msg(go_compare_twin("bn dx", cmp, &tdx, NULL, NULL) == 0 &&
                      go_compare_twin("bn dgamma", cmp, &tdg, NULL, NULL) == 0 &&
                      go_compare_twin("bn dbeta", cmp, &tdb, NULL, NULL) == 0,
                  "bn backward x %s dy %s gamma %s %zux%zux%zu", ak_dtype_name(xdt),
                  ak_dtype_name(ydt), ak_dtype_name(gdt), n, c, hw);
    kt_twin *all[] = {&tx, &ty, &tdy, &tdx, &tg, &tb, &tdg, &tdb, &rm, &rv, &sm, &si};
    for (int i = 0; i < 12; i++)
        kt_twin_free(all[i]);
    free(x), free(dy), free(g), free(be);
}

static void check_ln(const go_cmp *cmp, ts_rng *r, size_t rows, size_t cols, ak_dtype xdt,
                     ak_dtype ydt, ak_dtype gdt, bool values)
{
    const size_t count = rows * cols;
    uint32_t *x = input(r, xdt, count, values), *dy = input(r, ydt, count, values);
    uint32_t *g = input(r, gdt, cols, true), *be = input(r, gdt, cols, true);
    kt_twin tx = kt_twin_alloc(cpu, gpu, count, xdt), ty = kt_twin_alloc(cpu, gpu, count, ydt),
            tdy = kt_twin_alloc(cpu, gpu, count, ydt), tdx = kt_twin_alloc(cpu, gpu, count, xdt),
            tg = kt_twin_alloc(cpu, gpu, cols, gdt), tb = kt_twin_alloc(cpu, gpu, cols, gdt),
            tdg = kt_twin_alloc(cpu, gpu, cols, gdt), tdb = kt_twin_alloc(cpu, gpu, cols, gdt),
            sm = kt_twin_alloc(cpu, gpu, rows, AK_F32), sr = kt_twin_alloc(cpu, gpu, rows, AK_F32);
    kt_twin_put(&tx, x);
    kt_twin_put(&tdy, dy);
    kt_twin_put(&tg, g);
    kt_twin_put(&tb, be);
    ck_assert_int_eq(
        ak_layernorm_forward(cpu, rows, cols, 1e-5, ty.c.t, tx.c.t, tg.c.t, tb.c.t, sm.c.t, sr.c.t),
        AK_OK);
    ck_assert_int_eq(
        ak_layernorm_forward(gpu, rows, cols, 1e-5, ty.g.t, tx.g.t, tg.g.t, tb.g.t, sm.g.t, sr.g.t),
        AK_OK);
    ck_assert_int_eq(ak_layernorm_backward(cpu, rows, cols, tdx.c.t, tdg.c.t, tdb.c.t, tdy.c.t,
                                           tx.c.t, tg.c.t, sm.c.t, sr.c.t),
                     AK_OK);
    ck_assert_int_eq(ak_layernorm_backward(gpu, rows, cols, tdx.g.t, tdg.g.t, tdb.g.t, tdy.g.t,
                                           tx.g.t, tg.g.t, sm.g.t, sr.g.t),
                     AK_OK);
    kt_twin *outs[] = {&ty, &sm, &sr, &tdx, &tdg, &tdb};
    const char *names[] = {"ln y",  "ln save_mean", "ln save_rstd",
                           "ln dx", "ln dgamma",    "ln dbeta"};
    for (int i = 0; i < 6; i++)
        ck_assert_msg(go_compare_twin(names[i], cmp, outs[i], NULL, NULL) == 0,
                      "%s x %s y %s gamma %s %zux%zu", names[i], ak_dtype_name(xdt),
                      ak_dtype_name(ydt), ak_dtype_name(gdt), rows, cols);
    kt_twin *all[] = {&tx, &ty, &tdy, &tdx, &tg, &tb, &tdg, &tdb, &sm, &sr};
    for (int i = 0; i < 10; i++)
        kt_twin_free(all[i]);
    free(x), free(dy), free(g), free(be);
}

GO_CASE(batchnorm_bit_exact)
{
    const go_cmp *cmp = &c->cmp;
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 90);
    for (int d = 0; d < 3; d++) {
        check_bn(cmp, &r, 32, 16, 28 * 28, kt_dtypes[d], kt_dtypes[d], AK_F32, true);
        check_bn(cmp, &r, 32, 64, 49, kt_dtypes[d], kt_dtypes[d], kt_dtypes[d], true);
        check_bn(cmp, &r, 3, 5, 37, kt_dtypes[d], kt_dtypes[d], AK_F32, false); /* specials */
    }
    for (int combo = 0; combo < 9; combo++)
        check_bn(cmp, &r, 4, 3, 77, kt_dtypes[combo / 3], kt_dtypes[combo % 3], AK_F32, true);
}

GO_CASE(layernorm_bit_exact)
{
    const go_cmp *cmp = &c->cmp;
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 91);
    for (int d = 0; d < 3; d++) {
        check_ln(cmp, &r, 2048, 128, kt_dtypes[d], kt_dtypes[d], AK_F32, true);
        check_ln(cmp, &r, 64, 600, kt_dtypes[d], kt_dtypes[d], kt_dtypes[d], true);
        check_ln(cmp, &r, 17, 33, kt_dtypes[d], kt_dtypes[d], AK_F32, false); /* specials */
    }
    for (int combo = 0; combo < 9; combo++)
        check_ln(cmp, &r, 9, 300, kt_dtypes[combo / 3], kt_dtypes[combo % 3], AK_F32, true);
}

GO_CASE(norm_bad_arguments_on_cuda)
{
    kt_twin x = kt_twin_alloc(cpu, gpu, 12, AK_F32), y = kt_twin_alloc(cpu, gpu, 12, AK_F32);
    const ak_tensor none = ak_tensor_none();
    const ak_batchnorm a = {1, 12, 1, 1e-5, 0.1, true};
    ck_assert_int_eq(
        ak_batchnorm_forward(gpu, &a, y.g.t, x.g.t, none, none, none, none, none, none), AK_EINVAL);
    ck_assert_int_eq(ak_layernorm_forward(gpu, 3, 0, 1e-5, y.g.t, x.g.t, none, none, none, none),
                     AK_EINVAL);
    ck_assert_int_eq(ak_sync(gpu), AK_OK);
    kt_twin_free(&x);
    kt_twin_free(&y);
}

static const go_case rows[] = {
    {"batchnorm_forward batchnorm_backward", "batchnorm_bit_exact", 1, batchnorm_bit_exact,
     GO_BITS},
    {"layernorm_forward layernorm_backward", "layernorm_bit_exact", 1, layernorm_bit_exact,
     GO_BITS},
    {"batchnorm_forward layernorm_forward", "norm_bad_arguments_on_cuda", 1,
     norm_bad_arguments_on_cuda, GO_BITS},
};
GO_FAMILY(norm, rows);
