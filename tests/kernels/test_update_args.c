/* test_update_args: ak_opt_step_begin and ak_update refuse bad arguments,
 * naming them, and keep their guard bytes. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "ref_update.h"

START_TEST(bad_arguments_named)
{
    ak_backend *b = kt_open_cpu();
    float w[4] = {1, 2, 3, 4}, g[4] = {0}, m[4] = {0}, v[4] = {0};
    uint16_t h[4] = {0};
    ak_opt_state st = {0, 0, 0};
    ak_update_loss loss;
    memset(&loss, 0, sizeof loss);
    const ak_param good = {ak_tensor_of(w, 4, AK_F32), ak_tensor_of(h, 4, AK_F16),
                           ak_tensor_of(g, 4, AK_F32), ak_tensor_of(m, 4, AK_F32),
                           ak_tensor_of(v, 4, AK_F32)};
    const ak_opt_config base = ref_config(AK_OPT_ADAM, 1e-3f, 0);
    ck_assert_int_eq(ak_update(b, &base, &good, &st, NULL, &loss), AK_OK);

    /* the configuration */
    struct {
        const char *text;
        ak_opt_config c;
    } bad[16];
    int nb = 0;
#define BAD_CFG(field, value, k, message)                                                          \
    do {                                                                                           \
        bad[nb].c = base;                                                                          \
        bad[nb].c.kind = (k);                                                                      \
        bad[nb].c.field = (value);                                                                 \
        bad[nb++].text = (message);                                                                \
    } while (0)
    BAD_CFG(lr, -1.0f, AK_OPT_SGD, "ak_update: cfg->lr is -1");
    BAD_CFG(lr, NAN, AK_OPT_ADAM, "cfg->lr is nan");
    BAD_CFG(weight_decay, INFINITY, AK_OPT_SGD, "cfg->weight_decay is inf");
    BAD_CFG(momentum, -0.5f, AK_OPT_MOMENTUM, "cfg->momentum is -0.5");
    BAD_CFG(dampening, 1.5f, AK_OPT_MOMENTUM, "cfg->dampening is 1.5");
    BAD_CFG(nesterov, true, AK_OPT_MOMENTUM, "cfg->nesterov needs");
    BAD_CFG(beta1, 1.0f, AK_OPT_ADAM, "cfg->beta1 is 1");
    BAD_CFG(beta2, -0.1f, AK_OPT_ADAMW, "cfg->beta2 is -0.1");
    BAD_CFG(eps, 0.0f, AK_OPT_ADAM, "cfg->eps is 0");
    BAD_CFG(eps, INFINITY, AK_OPT_ADAMW, "cfg->eps is inf");
    BAD_CFG(kind, (ak_optimizer)9, (ak_optimizer)9, "cfg->kind is 9");
    BAD_CFG(round.mode, (fpe_round)8, AK_OPT_ADAM, "cfg->round.mode is 8");
    bad[5].c.dampening = 0.5f; /* nesterov with dampening */
    for (int k = 0; k < nb; k++) {
        KT_EXPECT_ERROR(b, ak_update(b, &bad[k].c, &good, &st, NULL, &loss), AK_EINVAL, NULL,
                        bad[k].text);
        KT_EXPECT_ERROR(b, ak_opt_step_begin(b, &bad[k].c, &st, NULL), AK_EINVAL, NULL,
                        strstr(bad[k].text, "cfg->"));
        ck_assert_msg(strncmp(ak_error(b), "ak_opt_step_begin: ", 19) == 0, "%s", ak_error(b));
    }
    /* unused fields are not checked: SGD ignores the betas */
    ak_opt_config sgd_cfg = base;
    sgd_cfg.kind = AK_OPT_SGD;
    sgd_cfg.beta1 = 7;
    ck_assert_int_eq(ak_update(b, &sgd_cfg, &good, &st, NULL, &loss), AK_OK);
    ck_assert_str_eq(ak_error(b), "");

    /* pointers */
    KT_EXPECT_ERROR(b, ak_update(b, NULL, &good, &st, NULL, &loss), AK_EINVAL, NULL,
                    "ak_update: cfg is NULL");
    KT_EXPECT_ERROR(b, ak_update(b, &base, NULL, &st, NULL, &loss), AK_EINVAL, NULL,
                    "ak_update: p is NULL");
    KT_EXPECT_ERROR(b, ak_update(b, &base, &good, NULL, NULL, &loss), AK_EINVAL, NULL,
                    "ak_update: state is NULL");
    KT_EXPECT_ERROR(b, ak_opt_step_begin(b, &base, NULL, NULL), AK_EINVAL, NULL,
                    "ak_opt_step_begin: state is NULL");
    char raw[64] __attribute__((aligned(16)));
    KT_EXPECT_ERROR(b, ak_update(b, &base, &good, (ak_opt_state *)(raw + 4), NULL, &loss),
                    AK_EINVAL, NULL, "state");
    KT_EXPECT_ERROR(b, ak_update(b, &base, &good, &st, (const float *)(raw + 2), &loss), AK_EINVAL,
                    NULL, "found_inf");
    KT_EXPECT_ERROR(b, ak_opt_step_begin(b, &base, &st, (const float *)(raw + 1)), AK_EINVAL, NULL,
                    "found_inf");
    KT_EXPECT_ERROR(b, ak_update(b, &base, &good, &st, NULL, (ak_update_loss *)(raw + 4)),
                    AK_EINVAL, NULL, "loss");
    ck_assert_int_eq(ak_update(NULL, &base, &good, &st, NULL, &loss), AK_EINVAL);
    ck_assert_int_eq(ak_opt_step_begin(NULL, &base, &st, NULL), AK_EINVAL);

    /* tensors: good with `change` made must fail with text */
#define BAD_PARAM(change, text)                                                                    \
    do {                                                                                           \
        p = good;                                                                                  \
        change;                                                                                    \
        KT_EXPECT_ERROR(b, ak_update(b, &base, &p, &st, NULL, &loss), AK_EINVAL, NULL, (text));    \
    } while (0)
    ak_param p;
    BAD_PARAM(p.master = ak_tensor_of(h, 4, AK_F16), "p->master is fp16 (expected fp32)");
    BAD_PARAM(p.model = ak_tensor_of(w, 4, AK_F32), "p->model is fp32");
    BAD_PARAM((p.master = ak_tensor_none(), p.model = ak_tensor_none()), "both none");
    BAD_PARAM(p.grad = ak_tensor_of(g, 3, AK_F32), "p->grad has 3 elements, expected 4");
    BAD_PARAM(p.grad = ak_tensor_none(), "p->grad");
    BAD_PARAM(p.model = ak_tensor_of(h, 5, AK_F16), "p->model has 5 elements");
    BAD_PARAM(p.v = ak_tensor_of(v, 2, AK_F32), "p->v has 2 elements");
    BAD_PARAM(p.m = ak_tensor_none(), "p->m is none");
    ak_opt_config mom = base;
    mom.kind = AK_OPT_MOMENTUM;
    KT_EXPECT_ERROR(b, ak_update(b, &mom, &p, &st, NULL, &loss), AK_EINVAL, NULL, "p->m is none");
    BAD_PARAM(p.v = ak_tensor_none(), "p->v is none");
    ck_assert_int_eq(ak_update(b, &mom, &p, &st, NULL, &loss), AK_OK); /* momentum needs no v */
    BAD_PARAM(p.m = ak_tensor_of((char *)m + 2, 4, AK_F32), "not aligned");
    BAD_PARAM(p.grad = ak_tensor_of(g, 4, (ak_dtype)5), "invalid dtype");

    /* nothing was written by the failures, and empty work is fine */
    ak_update_loss before = loss;
    p = good;
    p.master = ak_tensor_none();
    p.model = ak_tensor_of(h, 0, AK_F16);
    p.grad = ak_tensor_of(g, 0, AK_F32);
    p.m = ak_tensor_none();
    p.v = ak_tensor_none();
    ck_assert_int_eq(ak_update(b, &sgd_cfg, &p, &st, NULL, &loss), AK_OK);
    ck_assert(memcmp(&before, &loss, sizeof loss) == 0);
    ck_assert_uint_eq(loss.elements, 4 + 4 + 4); /* the three calls that ran */
    ak_close(b);
#undef BAD_CFG
#undef BAD_PARAM
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_update_args");
    TCase *tc = tcase_create("update_args");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, bad_arguments_named);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
