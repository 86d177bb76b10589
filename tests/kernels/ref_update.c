/* ref_update.c: the optimizer tests' shared pieces (see ref_update.h). */
#include "ref_update.h"

#include <check.h>
#include <math.h>
#include <string.h>

const char *const ref_part_names[REF_PARTS] = {"master", "model", "grad", "m", "v"};

ref_layout ref_lay(bool master, int model, int grad, int m, int v)
{
    ref_layout L = {master, model, grad, m, v};
    return L;
}

int ref_part_dtype(const ref_layout *L, int k)
{
    switch (k) {
    case REF_MASTER: return L->master ? AK_F32 : REF_NONE;
    case REF_MODEL: return L->model;
    case REF_GRAD: return L->grad;
    case REF_M: return L->m;
    default: return L->v;
    }
}

ak_opt_config ref_config(ak_optimizer kind, float lr, float weight_decay)
{
    ak_opt_config c;
    memset(&c, 0, sizeof c);
    c.kind = kind;
    c.lr = lr;
    c.weight_decay = weight_decay;
    c.momentum = 0.9f;
    c.beta1 = 0.9f;
    c.beta2 = 0.999f;
    c.eps = 1e-8f;
    c.round = ak_rounding_rne();
    return c;
}

void ref_rig_open(ref_rig *r, ak_backend *b, const ref_layout *L, size_t n)
{
    memset(r, 0, sizeof *r);
    r->b = b;
    ak_tensor *t[REF_PARTS] = {&r->p.master, &r->p.model, &r->p.grad, &r->p.m, &r->p.v};
    for (int k = 0; k < REF_PARTS; k++) {
        const int dt = ref_part_dtype(L, k);
        if (dt == REF_NONE)
            r->buf[k].t = ak_tensor_none();
        else
            r->buf[k] = kt_buf_alloc(b, n, (ak_dtype)dt);
        *t[k] = r->buf[k].t;
    }
    r->state = kt_dev_alloc(b, sizeof *r->state);
    r->loss = kt_dev_alloc(b, sizeof *r->loss);
    r->found_inf = kt_dev_alloc(b, sizeof(float));
}

void ref_rig_close(ref_rig *r)
{
    for (int k = 0; k < REF_PARTS; k++)
        if (r->buf[k].base) {
            ck_assert_msg(kt_buf_guards_ok(&r->buf[k]), "%s: %s's guard bytes",
                          ak_backend_name(r->b), ref_part_names[k]);
            kt_buf_free(&r->buf[k]);
        }
    kt_dev_free(r->b, r->state);
    kt_dev_free(r->b, r->loss);
    kt_dev_free(r->b, r->found_inf);
}

void ref_check_loss(const ak_update_loss *got, const ak_update_loss *want, const char *got_name,
                    const char *want_name)
{
    ck_assert_uint_eq(got->elements, want->elements);
    ck_assert_uint_eq(got->nonzero, want->nonzero);
    ck_assert_uint_eq(got->lost, want->lost);
    ck_assert_uint_eq(got->predicted_lost, want->predicted_lost);
    ck_assert_uint_eq(got->skipped, want->skipped);
    ck_assert_msg(
        kt_agree_within(got->sum_abs_err, want->sum_abs_err, 1e-12 * fabs(want->sum_abs_err)),
        "sum_abs_err: %s %.17g, %s %.17g", got_name, got->sum_abs_err, want_name,
        want->sum_abs_err);
    ck_assert_msg(kt_agree_within(got->sum_abs_intended, want->sum_abs_intended,
                                  1e-12 * fabs(want->sum_abs_intended)),
                  "sum_abs_intended: %s %.17g, %s %.17g", got_name, got->sum_abs_intended,
                  want_name, want->sum_abs_intended);
}
