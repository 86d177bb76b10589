/* gpu_cases_memory: the memory operations on the cuda backend against the
 * cpu backend: ak_fill (a double rounded once to the dtype, to nearest
 * even) bit for bit for values that round, overflow, underflow and NaN;
 * ak_copy and ak_zero at odd offsets and lengths, the bytes around them
 * untouched; the round trip through ak_to_device / ak_to_host and ak_sync.
 * Every other family allocates, uploads and downloads through the same
 * calls (ak_alloc, ak_free, ak_to_device, ak_to_host). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_ops.h"

/* Both backends, open during each test (kt_open_both_around). */
static ak_backend *cpu, *gpu;

/* _i = dtype: every value filled on both, at an odd offset in a guarded
 * buffer (the element before must stay as uploaded). */
GO_CASE(fill_every_dtype)
{
    static const double values[] = {0.0,       -0.0,   1.0 / 3.0, -0.1,    65504.0,  65520.0,
                                    1e-8,      -1e-40, 3e38,      1e300,   -1e300,   INFINITY,
                                    -INFINITY, NAN,    0x1p-24,   0x1p-25, 0x1.8p-25};
    const ak_dtype dt = kt_dtypes[_i];
    const size_t n = ((size_t)1 << 20) + 3;
    void *x = go_inputs((fpe_format_id)dt, n + 1, ts_seed() + 60 + (uint64_t)_i);
    kt_twin t = kt_twin_alloc(cpu, gpu, n + 1, dt);
    const size_t size = ak_dtype_size(dt);
    for (size_t k = 0; k < sizeof values / sizeof values[0]; k++) {
        kt_twin_upload(&t, x);
        const ak_tensor tc = ak_tensor_of((char *)t.c.t.data + size, n, dt);
        const ak_tensor tg = ak_tensor_of((char *)t.g.t.data + size, n, dt);
        ck_assert_msg(ak_fill(cpu, tc, values[k]) == AK_OK, "cpu: %s", ak_error(cpu));
        ck_assert_msg(ak_fill(gpu, tg, values[k]) == AK_OK, "cuda: %s", ak_error(gpu));
        char what[64];
        snprintf(what, sizeof what, "fill %s %g", ak_dtype_name(dt), values[k]);
        ck_assert_uint_eq(go_compare_twin(what, &c->cmp, &t, NULL, NULL), 0);
    }
    kt_twin_free(&t);
    free(x);
}

/* ak_copy and ak_zero of byte ranges at odd offsets and lengths. */
GO_CASE(copy_and_zero)
{
    static const size_t ranges[][3] = {/* dst offset, src offset, bytes */
                                       {0, 0, 1},       {1, 3, 4095},    {7, 0, 65536},
                                       {3, 5, 1000003}, {0, 1, 1 << 22}, {5, 5, 0}};
    const size_t n = ((size_t)1 << 22) + 16;
    void *x = go_inputs(FPE_FMT_F16, n, ts_seed() + 70);
    void *y = go_inputs(FPE_FMT_F16, n, ts_seed() + 71);
    kt_twin src = kt_twin_alloc(cpu, gpu, n, AK_F16), dst = kt_twin_alloc(cpu, gpu, n, AK_F16);
    for (size_t k = 0; k < sizeof ranges / sizeof ranges[0]; k++) {
        const size_t d = ranges[k][0], s = ranges[k][1], bytes = ranges[k][2];
        kt_twin_upload(&src, x);
        kt_twin_upload(&dst, y);
        ck_assert_int_eq(ak_copy(cpu, (char *)dst.c.t.data + d, (char *)src.c.t.data + s, bytes),
                         AK_OK);
        ck_assert_int_eq(ak_copy(gpu, (char *)dst.g.t.data + d, (char *)src.g.t.data + s, bytes),
                         AK_OK);
        ck_assert_int_eq(ak_sync(gpu), AK_OK);
        ck_assert_uint_eq(go_compare_twin("copy", &c->cmp, &dst, NULL, NULL), 0);
        ck_assert_int_eq(ak_zero(cpu, (char *)src.c.t.data + s, bytes), AK_OK);
        ck_assert_int_eq(ak_zero(gpu, (char *)src.g.t.data + s, bytes), AK_OK);
        ck_assert_int_eq(ak_sync(gpu), AK_OK);
        ck_assert_uint_eq(go_compare_twin("zero", &c->cmp, &src, NULL, NULL), 0);
    }
    kt_twin_free(&src);
    kt_twin_free(&dst);
    free(x);
    free(y);
}

/* Memory from ak_alloc, filled by ak_to_device and read back by ak_to_host
 * unchanged; ak_free of NULL is a no-op on both. */
GO_CASE(round_trip)
{
    ak_backend *both[2] = {cpu, gpu};
    const size_t bytes = 3000017;
    unsigned char *in = go_inputs(FPE_FMT_F32, bytes / 4 + 1, ts_seed() + 80);
    unsigned char *out = malloc(bytes);
    ck_assert_ptr_nonnull(out);
    for (int k = 0; k < 2; k++) {
        void *p = NULL;
        ck_assert_int_eq(ak_alloc(both[k], bytes, &p), AK_OK);
        ck_assert_int_eq(ak_to_device(both[k], p, in, bytes), AK_OK);
        ck_assert_int_eq(ak_to_host(both[k], out, p, bytes), AK_OK);
        ck_assert_int_eq(ak_sync(both[k]), AK_OK);
        ck_assert_uint_eq(kt_count_mismatches(ak_backend_name(both[k]), out, in, bytes, 1), 0);
        ak_free(both[k], p);
        ak_free(both[k], NULL);
    }
    free(in);
    free(out);
}

static const go_case rows[] = {
    {"fill", "fill_every_dtype", 3, fill_every_dtype, GO_BITS},
    {"copy zero sync", "copy_and_zero", 1, copy_and_zero, GO_BITS},
    {"alloc free to_device to_host sync", "round_trip", 1, round_trip, GO_BITS},
};
GO_FAMILY(memory, rows);
