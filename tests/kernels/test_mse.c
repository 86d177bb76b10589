/* test_mse: ak_mse on the cpu backend, against a double-precision
 * reference, central finite differences, the loss scale, bad arguments and
 * guard regions (the scalar output is guarded too). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "kt.h"

/* ---- mean squared error ------------------------------------------------------------------- */
typedef struct mse_case {
    size_t n;
    ak_dtype dp, dt, dd;
    const uint32_t *pred, *target;
    const float *scale;
} mse_case;

static int run_mse(ak_backend *b, const mse_case *c, float *loss_out, uint32_t *dpred)
{
    kt_buf tp = kt_buf_alloc(b, c->n, c->dp), tt = kt_buf_alloc(b, c->n, c->dt),
           td = kt_buf_alloc(b, c->n, c->dd), loss = kt_buf_alloc(b, 1, AK_F32),
           sc = kt_buf_alloc(b, 1, AK_F32);
    kt_buf_put(&tp, c->pred);
    kt_buf_put(&tt, c->target);
    if (c->scale) kt_buf_upload(&sc, c->scale);
    const float junk = 123.0f;
    kt_buf_upload(&loss, &junk);
    const int rc = ak_mse(b, tp.t, tt.t, c->scale ? (const float *)sc.t.data : NULL,
                          (float *)loss.t.data, dpred ? td.t : ak_tensor_none());
    *loss_out = kt_buf_get_f32(&loss);
    if (dpred) kt_buf_get(&td, dpred);
    ck_assert(kt_buf_guards_ok(&tp) && kt_buf_guards_ok(&tt) && kt_buf_guards_ok(&td) &&
              kt_buf_guards_ok(&loss) && kt_buf_guards_ok(&sc));
    kt_buf_free(&tp);
    kt_buf_free(&tt);
    kt_buf_free(&td);
    kt_buf_free(&loss);
    kt_buf_free(&sc);
    return rc;
}

START_TEST(mse_matches_double_reference)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 13);
    enum { N = 29 };
    uint32_t p[N], t[N], got[N];
    const float three = 3.0f;
    for (int c = 0; c < 27; c++) {
        const ak_dtype dp = kt_dtypes[c % 3], dt = kt_dtypes[c / 3 % 3], dd = kt_dtypes[c / 9];
        for (int pass = 0; pass < 2; pass++) {
            if (pass == 0) {
                kt_fill_bits(&r, dp, p, N);
                kt_fill_bits(&r, dt, t, N);
            } else {
                for (int i = 0; i < N; i++) {
                    p[i] = kt_from_f64(dp, 4.0 * ts_uniform(&r) - 2.0);
                    t[i] = kt_from_f64(dt, 4.0 * ts_uniform(&r) - 2.0);
                }
            }
            for (int s = 0; s < 2; s++) {
                const mse_case mc = {N, dp, dt, dd, p, t, s ? &three : NULL};
                float loss;
                ck_assert_int_eq(run_mse(b, &mc, &loss, got), AK_OK);
                double sum = 0.0;
                size_t bad = 0;
                for (int i = 0; i < N; i++) {
                    const double d = kt_value(dp, p[i]) - kt_value(dt, t[i]);
                    sum += d * d;
                    const uint32_t want = kt_from_f64(dd, 2.0 * d / N * (s ? 3.0 : 1.0));
                    if (got[i] != want && bad++ < 8)
                        printf("dpred[%d] (%s): got 0x%x expected 0x%x\n", i, ak_dtype_name(dd),
                               got[i], want);
                }
                ck_assert_msg(bad == 0, "pred %s target %s dpred %s", ak_dtype_name(dp),
                              ak_dtype_name(dt), ak_dtype_name(dd));
                const double want_loss = sum / N;
                if (isnan(want_loss))
                    ck_assert(isnan(loss));
                else
                    ck_assert_msg(kt_ulp_distance(AK_F32, kt_f32_bits(loss),
                                                  kt_from_f64(AK_F32, want_loss)) <= 1,
                                  "loss %.9g, reference %.17g", (double)loss, want_loss);
            }
        }
    }
    ak_close(b);
}
END_TEST

START_TEST(mse_gradient_matches_finite_differences)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 14);
    enum { N = 10 };
    const double h = 0x1p-6;
    uint32_t p[N], t[N], g[N], x[N];
    for (int i = 0; i < N; i++) {
        p[i] = kt_f32_bits((float)ldexp((double)ts_below(&r, 513) - 256.0, -8));
        t[i] = kt_f32_bits((float)ldexp((double)ts_below(&r, 513) - 256.0, -8));
    }
    const float half = 0.5f;
    mse_case mc = {N, AK_F32, AK_F32, AK_F32, p, t, &half};
    float loss;
    ck_assert_int_eq(run_mse(b, &mc, &loss, g), AK_OK);
    mc.pred = x;
    mc.scale = NULL;
    for (int i = 0; i < N; i++) {
        float v0, gv, lp, lm;
        memcpy(&v0, &p[i], 4);
        memcpy(x, p, sizeof x);
        x[i] = kt_f32_bits((float)(v0 + h));
        ck_assert_int_eq(run_mse(b, &mc, &lp, NULL), AK_OK);
        x[i] = kt_f32_bits((float)(v0 - h));
        ck_assert_int_eq(run_mse(b, &mc, &lm, NULL), AK_OK);
        const double fd =
            ((double)lp - lm) / (2.0 * h); /* quadratic: exact but for the fp32 loss */
        memcpy(&gv, &g[i], 4);
        ck_assert_msg(fabs(0.5 * fd - gv) <= 1e-5, "dpred[%d] %.9g, fd/2 %.9g", i, (double)gv,
                      0.5 * fd);
    }
    /* n = 0: the mean over nothing */
    mse_case empty = {0, AK_F32, AK_BF16, AK_F16, NULL, NULL, NULL};
    ck_assert_int_eq(run_mse(b, &empty, &loss, g), AK_OK);
    ck_assert(isnan(loss));
    ak_close(b);
}
END_TEST

START_TEST(mse_bad_arguments_named)
{
    ak_backend *b = kt_open_cpu();
    kt_buf f12 = kt_buf_alloc(b, 12, AK_F32), f10 = kt_buf_alloc(b, 10, AK_F32),
           lab = kt_buf_alloc(b, 4, AK_F32), out = kt_buf_alloc(b, 4, AK_F32);
    float *loss = (float *)out.t.data;
    const float *scale = (const float *)out.t.data + 2;
    const ak_tensor none = ak_tensor_none();

    ck_assert_int_eq(ak_mse(NULL, f12.t, f12.t, NULL, loss, none), AK_EINVAL);
    KT_EXPECT_ERROR(b, ak_mse(b, f12.t, f10.t, NULL, loss, none), AK_EINVAL, NULL,
                    "ak_mse: target has 10 elements, expected 12");
    KT_EXPECT_ERROR(b, ak_mse(b, f12.t, f12.t, NULL, loss, f10.t), AK_EINVAL, NULL,
                    "ak_mse: dpred has 10 elements, expected 12");
    KT_EXPECT_ERROR(b, ak_mse(b, f12.t, f12.t, NULL, NULL, none), AK_EINVAL, NULL,
                    "ak_mse: loss is NULL");
    KT_EXPECT_ERROR(b,
                    ak_mse(b, f12.t, f12.t, (const float *)((const char *)scale + 2), loss, none),
                    AK_EINVAL, NULL, "ak_mse: scale (");
    KT_EXPECT_ERROR(b, ak_mse(b, ak_tensor_of(NULL, 3, AK_F16), f12.t, NULL, loss, none), AK_EINVAL,
                    NULL, "ak_mse: pred is NULL with 3 elements");
    ck_assert(kt_buf_guards_ok(&f12) && kt_buf_guards_ok(&f10) && kt_buf_guards_ok(&lab) &&
              kt_buf_guards_ok(&out));
    kt_buf_free(&f12);
    kt_buf_free(&f10);
    kt_buf_free(&lab);
    kt_buf_free(&out);
    ak_close(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_mse");
    TCase *tc = tcase_create("mse");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, mse_matches_double_reference);
    tcase_add_test(tc, mse_gradient_matches_finite_differences);
    tcase_add_test(tc, mse_bad_arguments_named);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
