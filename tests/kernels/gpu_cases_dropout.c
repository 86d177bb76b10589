/* gpu_cases_dropout: dropout on cuda against cpu, bit for bit (the same
 * Philox draw and element code): a transformer's activations (8 x 128 x
 * 512) at p = 0.1 in every dtype, forward and backward, a large offset,
 * every dtype pairing on a smaller tensor with specials, and p = 0. */
#include <check.h>
#include <stdlib.h>

#include "gpu_ops.h"

static ak_backend *cpu, *gpu;

static void check_dropout(const go_cmp *cmp, ts_rng *r, size_t n, ak_dtype dy, ak_dtype dx, float p,
                          uint64_t key, uint64_t offset, bool values)
{
    uint32_t *x = malloc(n * 4 + 4);
    ck_assert(x);
    if (values)
        kt_fill_values(r, dx, x, n, 4.0);
    else
        kt_fill_bits(r, dx, x, n);
    kt_twin tx = kt_twin_alloc(cpu, gpu, n, dx), ty = kt_twin_alloc(cpu, gpu, n, dy);
    kt_twin_put(&tx, x);
    ck_assert_int_eq(ak_dropout_forward(cpu, p, key, offset, ty.c.t, tx.c.t), AK_OK);
    ck_assert_int_eq(ak_dropout_forward(gpu, p, key, offset, ty.g.t, tx.g.t), AK_OK);
    ck_assert_msg(go_compare_twin("dropout y", cmp, &ty, NULL, NULL) == 0, "y %s x %s p %g",
                  ak_dtype_name(dy), ak_dtype_name(dx), (double)p);
    ck_assert_int_eq(ak_dropout_backward(cpu, p, key, offset, ty.c.t, tx.c.t), AK_OK);
    ck_assert_int_eq(ak_dropout_backward(gpu, p, key, offset, ty.g.t, tx.g.t), AK_OK);
    ck_assert_msg(go_compare_twin("dropout dx", cmp, &ty, NULL, NULL) == 0, "dx %s dy %s p %g",
                  ak_dtype_name(dy), ak_dtype_name(dx), (double)p);
    kt_twin_free(&tx);
    kt_twin_free(&ty);
    free(x);
}

GO_CASE(dropout_bit_exact)
{
    const go_cmp *cmp = &c->cmp;
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 81);
    for (int d = 0; d < 3; d++) {
        check_dropout(cmp, &r, 8 * 128 * 512, kt_dtypes[d], kt_dtypes[d], 0.1f, 1234, 0, true);
        check_dropout(cmp, &r, 100003, kt_dtypes[d], kt_dtypes[d], 0.5f, 99, (1ull << 40) + 3,
                      true);
    }
    for (int combo = 0; combo < 9; combo++) {
        check_dropout(cmp, &r, 4099, kt_dtypes[combo / 3], kt_dtypes[combo % 3], 0.3f,
                      (uint64_t)combo, 17, false);
        check_dropout(cmp, &r, 4099, kt_dtypes[combo / 3], kt_dtypes[combo % 3], 0.0f, 5, 0, false);
    }
}

GO_CASE(dropout_bad_p_on_cuda)
{
    kt_twin t = kt_twin_alloc(cpu, gpu, 8, AK_F32);
    ck_assert_int_eq(ak_dropout_forward(gpu, 1.0f, 1, 0, t.g.t, t.g.t), AK_EINVAL);
    ck_assert_int_eq(ak_dropout_backward(gpu, -0.5f, 1, 0, t.g.t, t.g.t), AK_EINVAL);
    ck_assert_int_eq(ak_sync(gpu), AK_OK);
    kt_twin_free(&t);
}

static const go_case rows[] = {
    {"dropout", "dropout_bit_exact", 1, dropout_bit_exact, GO_BITS},
    {"dropout", "dropout_bad_p_on_cuda", 1, dropout_bad_p_on_cuda, GO_BITS},
};
GO_FAMILY(dropout, rows);
