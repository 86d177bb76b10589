/* gpu_cases_avgpool: global average pooling on cuda against cpu, bit for
 * bit (one plane per thread, the same fp32 sum in index order): ResNet
 * head shapes (batch 32 x 64 channels x 7 x 7, x 128 x 4 x 4) in every
 * dtype, every dtype pairing on a smaller shape. */
#include <check.h>
#include <stdlib.h>

#include "gpu_ops.h"

static ak_backend *cpu, *gpu;

static void check_avgpool(const go_cmp *cmp, ts_rng *r, size_t planes, size_t hw, ak_dtype dy,
                          ak_dtype dx, bool values)
{
    const size_t n = planes * hw;
    uint32_t *x = malloc(n * 4 + 4), *g = malloc(planes * 4 + 4);
    if (values) {
        kt_fill_values(r, dx, x, n, 8.0);
        kt_fill_values(r, dy, g, planes, 8.0);
    } else {
        kt_fill_bits(r, dx, x, n);
        kt_fill_bits(r, dy, g, planes);
    }
    kt_twin tx = kt_twin_alloc(cpu, gpu, n, dx), ty = kt_twin_alloc(cpu, gpu, planes, dy),
            tdy = kt_twin_alloc(cpu, gpu, planes, dy), tdx = kt_twin_alloc(cpu, gpu, n, dx);
    kt_twin_put(&tx, x);
    kt_twin_put(&tdy, g);
    ck_assert_int_eq(ak_avgpool_forward(cpu, planes, hw, ty.c.t, tx.c.t), AK_OK);
    ck_assert_int_eq(ak_avgpool_forward(gpu, planes, hw, ty.g.t, tx.g.t), AK_OK);
    ck_assert_msg(go_compare_twin("avgpool y", cmp, &ty, NULL, NULL) == 0, "y %s x %s %zux%zu",
                  ak_dtype_name(dy), ak_dtype_name(dx), planes, hw);
    ck_assert_int_eq(ak_avgpool_backward(cpu, planes, hw, tdx.c.t, tdy.c.t), AK_OK);
    ck_assert_int_eq(ak_avgpool_backward(gpu, planes, hw, tdx.g.t, tdy.g.t), AK_OK);
    ck_assert_msg(go_compare_twin("avgpool dx", cmp, &tdx, NULL, NULL) == 0, "dx %s dy %s %zux%zu",
                  ak_dtype_name(dx), ak_dtype_name(dy), planes, hw);
    kt_twin_free(&tx);
    kt_twin_free(&ty);
    kt_twin_free(&tdy);
    kt_twin_free(&tdx);
    free(x);
    free(g);
}

GO_CASE(avgpool_bit_exact)
{
    const go_cmp *cmp = &c->cmp;
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 61);
    for (int d = 0; d < 3; d++)
        for (int v = 0; v < 2; v++) {
            check_avgpool(cmp, &r, 32 * 64, 49, kt_dtypes[d], kt_dtypes[d], v);
            check_avgpool(cmp, &r, 32 * 128, 16, kt_dtypes[d], kt_dtypes[d], v);
        }
    for (int combo = 0; combo < 9; combo++)
        check_avgpool(cmp, &r, 13, 37, kt_dtypes[combo / 3], kt_dtypes[combo % 3], false);
}

GO_CASE(avgpool_bad_arguments_on_cuda)
{
    kt_twin f12 = kt_twin_alloc(cpu, gpu, 12, AK_F32), f4 = kt_twin_alloc(cpu, gpu, 4, AK_F32);
    ck_assert_int_eq(ak_avgpool_forward(gpu, 4, 0, f4.g.t, f12.g.t), AK_EINVAL);
    ck_assert_int_eq(ak_avgpool_backward(gpu, 3, 4, f4.g.t, f4.g.t), AK_EINVAL);
    ck_assert_int_eq(ak_sync(gpu), AK_OK);
    kt_twin_free(&f12);
    kt_twin_free(&f4);
}

static const go_case rows[] = {
    {"avgpool_forward avgpool_backward", "avgpool_bit_exact", 1, avgpool_bit_exact, GO_BITS},
    {"avgpool_forward avgpool_backward", "avgpool_bad_arguments_on_cuda", 1,
     avgpool_bad_arguments_on_cuda, GO_BITS},
};
GO_FAMILY(avgpool, rows);
