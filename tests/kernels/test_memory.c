/* test_memory: opening backends, memory, fill and argument checks (cpu). */
#include <check.h>
#include <math.h>
#include <string.h>

#include "check_main.h"
#include "kt.h"

START_TEST(open_names)
{
    char msg[512];
    ck_assert_ptr_null(ak_open("gpu", msg, sizeof msg));
    ck_assert_msg(strstr(msg, "unknown backend 'gpu'") != NULL, "%s", msg);
    ak_backend *b = ak_open("auto", msg, sizeof msg);
    ck_assert_ptr_nonnull(b);
    if (ak_backend_kind(b) == AK_CPU) ck_assert_msg(strstr(msg, "using cpu") != NULL, "%s", msg);
    ak_close(b);
    b = ak_open("cuda", msg, sizeof msg);
    if (!b) ck_assert_msg(strstr(msg, "cuda: ") == msg && strstr(msg, "--backend cpu"), "%s", msg);
    ak_close(b);
    ak_close(NULL);
}
END_TEST

START_TEST(fill_rounds_once)
{
    ak_backend *b = kt_open_cpu();
    kt_buf h = kt_buf_alloc(b, 5, AK_F16), f = kt_buf_alloc(b, 3, AK_F32);
    ck_assert_int_eq(ak_fill(b, h.t, 65520.0), AK_OK); /* ties to even: overflows to inf */
    uint16_t hv[5];
    kt_buf_download(&h, hv);
    for (int i = 0; i < 5; i++)
        ck_assert_uint_eq(hv[i], 0x7C00);
    ck_assert_int_eq(ak_fill(b, h.t, 1.0 / 3.0), AK_OK);
    kt_buf_download(&h, hv);
    ck_assert_uint_eq(hv[4], 0x3555); /* 1/3 in fp16, hand-rounded: 0x3555 = 0.33325 */
    ck_assert_int_eq(ak_fill(b, f.t, -0.1), AK_OK);
    float fv[3];
    kt_buf_download(&f, fv);
    ck_assert(fv[2] == -0.1f);
    ck_assert(kt_buf_guards_ok(&h) && kt_buf_guards_ok(&f));
    kt_buf_free(&h);
    kt_buf_free(&f);
    ak_close(b);
}
END_TEST

START_TEST(bad_arguments_named)
{
    ak_backend *b = kt_open_cpu();
    ck_assert_int_eq(ak_fill(b, ak_tensor_of(NULL, 4, AK_F32), 0), AK_EINVAL);
    ck_assert_msg(strstr(ak_error(b), "ak_fill: t is NULL") != NULL, "%s", ak_error(b));
    char raw[16] __attribute__((aligned(8)));
    ck_assert_int_eq(ak_fill(b, ak_tensor_of(raw + 1, 2, AK_F32), 0), AK_EINVAL);
    ck_assert_msg(strstr(ak_error(b), "not aligned") != NULL, "%s", ak_error(b));
    ck_assert_int_eq(ak_fill(b, ak_tensor_of(raw, 2, (ak_dtype)7), 0), AK_EINVAL);
    ck_assert_msg(strstr(ak_error(b), "invalid dtype") != NULL, "%s", ak_error(b));
    ck_assert_int_eq(ak_to_host(b, NULL, raw, 4), AK_EINVAL);
    ck_assert_msg(strstr(ak_error(b), "ak_to_host: dst is NULL") != NULL, "%s", ak_error(b));
    ak_tensor t;
    ck_assert_int_eq(ak_alloc_tensor(b, SIZE_MAX / 2, AK_F32, &t), AK_EINVAL);
    ck_assert_int_eq(ak_alloc_tensor(b, 0, AK_F32, &t), AK_OK);
    ck_assert_ptr_null(t.data);
    ck_assert_int_eq(ak_free(b, NULL), AK_OK);
    ck_assert_int_eq(ak_sync(b), AK_OK);
    ck_assert_str_eq(ak_error(b), "");
    ak_close(b);
}
END_TEST

START_TEST(copies)
{
    ak_backend *b = kt_open_cpu();
    kt_buf x = kt_buf_alloc(b, 100, AK_F32), y = kt_buf_alloc(b, 100, AK_F32);
    float in[100], out[100];
    for (int i = 0; i < 100; i++)
        in[i] = (float)i * 0.5f;
    kt_buf_upload(&x, in);
    ck_assert_int_eq(ak_copy(b, y.t.data, x.t.data, sizeof in), AK_OK);
    kt_buf_download(&y, out);
    ck_assert_int_eq(memcmp(in, out, sizeof in), 0);
    ck_assert_int_eq(ak_zero(b, y.t.data, sizeof in), AK_OK);
    kt_buf_download(&y, out);
    for (int i = 0; i < 100; i++)
        ck_assert(out[i] == 0.0f);
    ck_assert(kt_buf_guards_ok(&x) && kt_buf_guards_ok(&y));
    kt_buf_free(&x);
    kt_buf_free(&y);
    ak_close(b);
}
END_TEST

/* ak_alloc, ak_to_device and ak_to_host move bytes unchanged, at odd
 * offsets and lengths; ak_free takes the memory back. */
START_TEST(round_trip)
{
    ak_backend *b = kt_open_cpu();
    unsigned char in[1003], out[1003];
    for (size_t i = 0; i < sizeof in; i++)
        in[i] = (unsigned char)(i * 131 + 7);
    void *p = NULL;
    ck_assert_int_eq(ak_alloc(b, sizeof in + 1, &p), AK_OK);
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(ak_to_device(b, (char *)p + 1, in, sizeof in), AK_OK);
    memset(out, 0, sizeof out);
    ck_assert_int_eq(ak_to_host(b, out, (char *)p + 1, sizeof in), AK_OK);
    ck_assert_int_eq(memcmp(in, out, sizeof in), 0);
    ck_assert_int_eq(ak_to_device(b, p, NULL, 0), AK_OK); /* nothing to copy */
    ck_assert_int_eq(ak_to_device(b, p, NULL, 4), AK_EINVAL);
    ck_assert_msg(strstr(ak_error(b), "ak_to_device: src is NULL") != NULL, "%s", ak_error(b));
    ck_assert_int_eq(ak_free(b, p), AK_OK);
    ak_close(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_memory");
    TCase *tc = tcase_create("memory");
    tcase_add_test(tc, open_names);
    tcase_add_test(tc, fill_rounds_once);
    tcase_add_test(tc, bad_arguments_named);
    tcase_add_test(tc, copies);
    tcase_add_test(tc, round_trip);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
