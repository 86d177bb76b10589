/* gpu_cases_add: the residual add on cuda against cpu, bit for bit (the
 * same element code as ak_accumulate): every dtype combination over every
 * 16-bit pattern and the fp32 corner mix, a transformer's residual stream
 * (8 x 128 x 128) in each dtype, and y = a in place. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_ops.h"

static ak_backend *cpu, *gpu;

static void check_add(const go_cmp *cmp, ts_rng *r, size_t n, ak_dtype dy, ak_dtype da, ak_dtype db,
                      bool values, bool in_place)
{
    uint32_t *a = malloc(n * 4 + 4), *b = malloc(n * 4 + 4);
    ck_assert(a && b);
    if (values) {
        kt_fill_values(r, da, a, n, 4.0);
        kt_fill_values(r, db, b, n, 4.0);
    } else {
        kt_fill_bits(r, da, a, n);
        kt_fill_bits(r, db, b, n);
    }
    kt_twin ta = kt_twin_alloc(cpu, gpu, n, da), tb = kt_twin_alloc(cpu, gpu, n, db),
            ty = kt_twin_alloc(cpu, gpu, n, dy);
    kt_twin_put(&ta, a);
    kt_twin_put(&tb, b);
    kt_twin *out = in_place ? &ta : &ty;
    ck_assert_int_eq(ak_add(cpu, out->c.t, ta.c.t, tb.c.t), AK_OK);
    ck_assert_int_eq(ak_add(gpu, out->g.t, ta.g.t, tb.g.t), AK_OK);
    ck_assert_msg(go_compare_twin("add y", cmp, out, NULL, NULL) == 0, "%s = %s + %s%s",
                  ak_dtype_name(out->c.t.dtype), ak_dtype_name(da), ak_dtype_name(db),
                  in_place ? " in place" : "");
    kt_twin_free(&ta);
    kt_twin_free(&tb);
    kt_twin_free(&ty);
    free(a);
    free(b);
}

GO_CASE(add_bit_exact)
{
    const go_cmp *cmp = &c->cmp;
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 91);
    for (int combo = 0; combo < 27; combo++)
        check_add(cmp, &r, 65536 + 7, kt_dtypes[combo / 9], kt_dtypes[combo / 3 % 3],
                  kt_dtypes[combo % 3], false, false);
    for (int d = 0; d < 3; d++) {
        check_add(cmp, &r, 8 * 128 * 128, kt_dtypes[d], kt_dtypes[d], kt_dtypes[d], true, false);
        check_add(cmp, &r, 8 * 128 * 128, kt_dtypes[d], kt_dtypes[d], AK_F32, true, true);
    }
}

GO_CASE(add_bad_arguments_on_cuda)
{
    kt_twin t = kt_twin_alloc(cpu, gpu, 8, AK_F32);
    char *d = t.g.t.data;
    ck_assert_int_eq(ak_add(gpu, ak_tensor_of(d + 4, 4, AK_F32), ak_tensor_of(d, 4, AK_F32),
                            ak_tensor_of(d, 4, AK_F32)),
                     AK_EINVAL);
    ck_assert_int_eq(ak_sync(gpu), AK_OK);
    kt_twin_free(&t);
}

static const go_case rows[] = {
    {"add", "add_bit_exact", 1, add_bit_exact, GO_BITS},
    {"add", "add_bad_arguments_on_cuda", 1, add_bad_arguments_on_cuda, GO_BITS},
};
GO_FAMILY(add, rows);
