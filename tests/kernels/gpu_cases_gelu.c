/* gpu_cases_gelu: GELU forward and backward, both forms, on cuda against
 * cpu, bit for bit (the same elem/gelu.h code in double + - * / on both):
 * transformer MLP shapes (batch 32 x context 64 x 4 * 128) in every
 * dtype, every dtype pairing on a smaller shape, specials included. */
#include <check.h>
#include <stdlib.h>

#include "gpu_ops.h"

static ak_backend *cpu, *gpu;

static uint32_t *input(ts_rng *r, ak_dtype dt, size_t n, bool values)
{
    uint32_t *x = malloc(n * 4 + 4);
    if (values)
        kt_fill_values(r, dt, x, n, 8.0);
    else
        kt_fill_bits(r, dt, x, n);
    return x;
}

static void check_gelu(const go_cmp *cmp, ts_rng *r, ak_gelu_form form, size_t n, ak_dtype ddx,
                       ak_dtype ddy, ak_dtype dx, bool values)
{
    uint32_t *x = input(r, dx, n, values), *g = input(r, ddy, n, values);
    kt_twin tx = kt_twin_alloc(cpu, gpu, n, dx), ty = kt_twin_alloc(cpu, gpu, n, ddx),
            tdy = kt_twin_alloc(cpu, gpu, n, ddy), tdx = kt_twin_alloc(cpu, gpu, n, ddx);
    kt_twin_put(&tx, x);
    kt_twin_put(&tdy, g);
    ck_assert_int_eq(ak_gelu(cpu, form, ty.c.t, tx.c.t), AK_OK);
    ck_assert_int_eq(ak_gelu(gpu, form, ty.g.t, tx.g.t), AK_OK);
    ck_assert_msg(go_compare_twin("gelu y", cmp, &ty, NULL, NULL) == 0, "form %d y %s x %s n %zu",
                  (int)form, ak_dtype_name(ddx), ak_dtype_name(dx), n);
    ck_assert_int_eq(ak_gelu_backward(cpu, form, tdx.c.t, tdy.c.t, tx.c.t), AK_OK);
    ck_assert_int_eq(ak_gelu_backward(gpu, form, tdx.g.t, tdy.g.t, tx.g.t), AK_OK);
    ck_assert_msg(go_compare_twin("gelu_backward dx", cmp, &tdx, NULL, NULL) == 0,
                  "form %d dx %s dy %s x %s n %zu", (int)form, ak_dtype_name(ddx),
                  ak_dtype_name(ddy), ak_dtype_name(dx), n);
    kt_twin_free(&tx);
    kt_twin_free(&ty);
    kt_twin_free(&tdy);
    kt_twin_free(&tdx);
    free(x);
    free(g);
}

GO_CASE(gelu_bit_exact)
{
    const go_cmp *cmp = &c->cmp;
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 60);
    for (int f = 0; f < 2; f++) {
        const ak_gelu_form form = f ? AK_GELU_TANH : AK_GELU_ERF;
        for (int d = 0; d < 3; d++)
            for (int v = 0; v < 2; v++)
                check_gelu(cmp, &r, form, 32 * 64 * 512, kt_dtypes[d], kt_dtypes[d], kt_dtypes[d],
                           v);
        for (int combo = 0; combo < 27; combo++)
            check_gelu(cmp, &r, form, 1001, kt_dtypes[combo / 9], kt_dtypes[combo / 3 % 3],
                       kt_dtypes[combo % 3], false);
    }
}

GO_CASE(gelu_bad_arguments_on_cuda)
{
    kt_twin f12 = kt_twin_alloc(cpu, gpu, 12, AK_F32), f4 = kt_twin_alloc(cpu, gpu, 4, AK_F32);
    ck_assert_int_eq(ak_gelu(gpu, AK_GELU_ERF, f4.g.t, f12.g.t), AK_EINVAL);
    ck_assert_int_eq(ak_gelu_backward(gpu, (ak_gelu_form)7, f12.g.t, f12.g.t, f12.g.t), AK_EINVAL);
    ck_assert_int_eq(ak_gelu(gpu, AK_GELU_TANH, ak_tensor_none(), ak_tensor_none()), AK_OK);
    ck_assert_int_eq(ak_sync(gpu), AK_OK);
    kt_twin_free(&f12);
    kt_twin_free(&f4);
}

static const go_case rows[] = {
    {"gelu gelu_backward", "gelu_bit_exact", 1, gelu_bit_exact, GO_BITS},
    {"gelu gelu_backward", "gelu_bad_arguments_on_cuda", 1, gelu_bad_arguments_on_cuda, GO_BITS},
};
GO_FAMILY(gelu, rows);
