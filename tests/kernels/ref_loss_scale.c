/* ref_loss_scale.c: the loss-scale tests' shared checks (see the header). */
#include "ref_loss_scale.h"

#include <check.h>
#include <math.h>

ak_scaler_config ref_scaler_preset(const char *name)
{
    ak_scaler_config cfg;
    char msg[256];
    ck_assert_msg(ak_scaler_preset(name, &cfg, msg, sizeof msg) == AK_OK, "%s", msg);
    return cfg;
}

void ref_scaler_check_run(const char *what, const ak_scaler_config *cfg, const char *events,
                          const float *scale)
{
    char msg[256];
    ck_assert_msg(ak_scaler_validate(cfg, msg, sizeof msg) == AK_OK, "%s: %s", what, msg);
    ak_scaler_state s;
    ck_assert_int_eq(ak_scaler_init(cfg, &s), AK_OK);
    int64_t overflows = 0;
    for (size_t i = 0; events[i]; i++) {
        const bool inf = events[i] == 'O';
        overflows += inf;
        ak_loss_scale_step(cfg, &s, inf);
        ck_assert_msg(s.scale == scale[i], "%s: step %zu (%c): scale %a, expected %a", what, i + 1,
                      events[i], (double)s.scale, (double)scale[i]);
        /* a double scale past fp32's maximum is inf applied; its inverse is the
         * double quotient rounded to fp32 (grad.mul_(1. / scale)) */
        const float inv = cfg->arith == AK_SCALE_ARITH_DOUBLE && isinf(scale[i])
                              ? (float)(1.0 / s.master_scale)
                              : 1.0f / scale[i];
        ck_assert_msg(s.inv_scale == inv, "%s: step %zu: inv_scale %a", what, i + 1,
                      (double)s.inv_scale);
        if (cfg->arith != AK_SCALE_ARITH_DOUBLE)
            ck_assert_msg(s.master_scale == (double)s.scale, "%s: step %zu: master_scale %a", what,
                          i + 1, s.master_scale);
        const float skip = inf && cfg->drop_overflow_update ? 1.0f : 0.0f;
        ck_assert_msg(s.skip == skip, "%s: step %zu (%c): skip %g", what, i + 1, events[i],
                      (double)s.skip);
        ck_assert_int_eq(s.steps, (int64_t)i + 1);
        ck_assert_int_eq(s.overflows, overflows);
    }
}
