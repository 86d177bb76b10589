/* test_update_o3: ak_update without a master (O3) on the cpu backend: the
 * fp16/bf16 weights are the exact sum w + delta (formed in binary64, where
 * the test data keep it exact) rounded once by fpe_f64_to_f16/bf16, for every
 * optimizer and rounding mode, updates far below the weights' last bit, and every weight
 * pattern with deltas at and around its ties (the cpu backend rounds those sums to odd in
 * binary32 first). */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "ref_update.h"

/* O3: no master; the fp16/bf16 weights are updated by one rounding. */
START_TEST(o3_every_optimizer_and_mode)
{
    const fpe_round modes[] = {FPE_RNE, FPE_SR_PROP, FPE_SR_EQUAL, FPE_RZ, FPE_RO};
    for (int kind = AK_OPT_SGD; kind <= AK_OPT_ADAMW; kind++)
        for (int k = 0; k < 5; k++)
            for (int model = AK_F16; model <= AK_BF16; model++) {
                ak_opt_config c = ref_config(
                    (ak_optimizer)kind, kind >= AK_OPT_ADAM ? 1e-3f : 0.01f, k % 2 ? 1e-2f : 0);
                c.round = ref_rounding(modes[k], 1234 + (uint64_t)k);
                const int mv = kind == AK_OPT_SGD ? REF_NONE : model;
                ref_run_case(
                    c, ref_lay(false, model, AK_F32, mv, kind >= AK_OPT_ADAM ? AK_F32 : REF_NONE),
                    2000, 3, REF_DATA_TYPICAL, 60 + (uint64_t)(kind * 10 + k * 2 + model));
            }
}
END_TEST

/* Updates far below the weights' last bit (lr 2^-30): most sums are not
 * exact in binary64, and every mode decides between w and its neighbour. */
START_TEST(o3_tiny_updates)
{
    for (int mode = 0; mode < FPE_ROUND_COUNT; mode++)
        for (int model = AK_F16; model <= AK_BF16; model++) {
            ak_opt_config c = ref_config(AK_OPT_SGD, 0x1p-30f, 0);
            c.round = ref_rounding((fpe_round)mode, 555 + (uint64_t)mode);
            ref_run_case(c, ref_lay(false, model, AK_F32, REF_NONE, REF_NONE), 3000, 2,
                         REF_DATA_TYPICAL, 200 + (uint64_t)(mode * 2 + model));
        }
}
END_TEST

/* The delta for weight w (finite, of format dt) chosen by k: ties of dt, sums just above and below
 * them and around the weight's neighbours, which binary64 holds exactly and binary32 does not
 * (the cpu backend's round-to-odd path), zero and tiny sums, and a step past the largest finite
 * value.  Every sum is exact in binary64, so the reference rounds it once. */
static float edge_delta(int dt, float w, int k)
{
    const int p = dt == AK_F16 ? 11 : 8;
    const int e = w == 0 ? (dt == AK_F16 ? -14 : -126) : ilogbf(w);
    const int emin = dt == AK_F16 ? -14 : -126;
    const double q = ldexp(1.0, (e < emin ? emin : e) - (p - 1)); /* w's spacing */
    const double s = k % 2 ? -1.0 : 1.0;
    double d;
    switch (k % 12 / 2) {
    case 0: d = q / 2; break;                           /* a tie */
    case 1: d = q / 2 + q * 0x1p-20; break;             /* just past it */
    case 2: d = q / 2 - q * 0x1p-21; break;             /* just short of it */
    case 3: d = q * (1 + 0x1p-23) + q * 0x1p-26; break; /* past the neighbour */
    case 4: d = q * 0x1p-14 * (1 + 0x1p-12); break;     /* far below the last bit */
    default: d = -(double)w + q * 0x1p-18; break;       /* cancels to a tiny sum */
    }
    d *= k % 12 < 10 ? s : 1.0;
    if (k >= 12) d = -(double)w; /* an exact zero sum */
    if ((double)(float)d != d) d = s * q / 2;
    return (float)d;
}

/* Every fp16 and bf16 pattern as a weight, each with every delta of edge_delta, in every rounding
 * mode: SGD with lr 1, so the delta is minus the gradient, exactly. */
START_TEST(o3_every_weight_near_ties)
{
    for (int model = AK_F16; model <= AK_BF16; model++)
        for (int mode = 0; mode < FPE_ROUND_COUNT; mode++) {
            const ref_layout L = ref_lay(false, model, AK_F32, REF_NONE, REF_NONE);
            const size_t n = 65536;
            ref_param x = ref_param_open(&L, n);
            ak_opt_config c = ref_config(AK_OPT_SGD, 1.0f, 0);
            c.round = ref_rounding((fpe_round)mode, 77 + (uint64_t)mode);
            ak_update_loss want;
            memset(&want, 0, sizeof want);
            ref_state rs = {0, 0, 0};
            for (int k = 0; k < 13; k++) {
                for (size_t i = 0; i < n; i++) {
                    x.h.model[i] = (uint32_t)i;
                    const float w = ref_widen(model, (uint32_t)i);
                    const float d = isfinite(w) ? edge_delta(model, w, k) : 0x1p-3f;
                    x.h.grad[i] = kt_f32_bits(-d);
                }
                ref_mirror_put(&x.d, &x.h);
                ck_assert_int_eq(ak_opt_step_begin(x.d.b, &c, x.d.state, NULL), AK_OK);
                ref_begin(&c, &rs);
                ck_assert_int_eq(ak_update(x.d.b, &c, &x.d.p, x.d.state, NULL, x.d.loss), AK_OK);
                ref_update_step(&c, &rs, &L, &x.h, &want);
                want.elements += n;
                const size_t bad = ref_mirror_compare(&x.d, &x.h);
                ck_assert_msg(bad == 0, "%s, mode %d, deltas %d: %zu mismatches",
                              model == AK_F16 ? "fp16" : "bf16", mode, k, bad);
                c.round.index += n;
            }
            ak_update_loss got;
            kt_dev_get(x.d.b, &got, x.d.loss, sizeof got);
            ref_check_loss(&got, &want, "got", "expected");
            ref_param_close(&x);
        }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_update_o3");
    TCase *tc = tcase_create("update_o3");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, o3_every_optimizer_and_mode);
    tcase_add_test(tc, o3_tiny_updates);
    tcase_add_test(tc, o3_every_weight_near_ties);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
