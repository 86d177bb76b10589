/* test_data_synthetic: experiments/data_synthetic.c and data.c's seeds:
 * synthetic data against the recipe data.h documents, rebuilt here from GSL
 * and SplitMix64 directly. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "check_main.h"
#include "data.h"
#include "test_data_support.h"

/* ---- synthetic data ------------------------------------------------------------------- */
START_TEST(seed_derivation)
{
    /* SplitMix64 from state 0 gives 0xe220a8397b1dcdaf first (Vigna's reference) */
    ck_assert_uint_eq(td_sm64(0), 0xe220a8397b1dcdafull);
    for (uint64_t s = 0; s < 5; s++)
        for (uint64_t k = 1; k <= 4; k++)
            for (uint64_t i = 0; i < 3; i++)
                ck_assert_uint_eq(ds_seed32(s, k, i), td_seed32(s, k, i));
    ck_assert_uint_eq(ds_seed32(UINT64_MAX, 4, 123456789), td_seed32(UINT64_MAX, 4, 123456789));
}
END_TEST

/* n float draws of the documented stream, from GSL directly */
static float *gsl_draws(uint64_t seed, uint64_t stream, size_t n)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, td_seed32(seed, stream, 0));
    float *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = (float)gsl_ran_gaussian_ziggurat(r, 1.0);
    gsl_rng_free(r);
    return v;
}

START_TEST(synthetic_recipe)
{
    const ds_synthetic_options o = td_synth_opts(6, 33, 17, 2024);
    ds_dataset *ds = td_synth(&o);
    ck_assert_uint_eq(ds->count, 6);
    ck_assert_uint_eq(ds->features, 33);
    ck_assert_uint_eq(ds->width, 33);
    ck_assert_uint_eq(ds->height, 1);
    ck_assert_uint_eq(ds->target_dim, 17);
    ck_assert_uint_eq(ds->classes, 0);
    ck_assert_ptr_null(ds->labels);
    ck_assert_str_eq(ds->name, "synthetic");
    float *x = gsl_draws(2024, DS_STREAM_INPUTS, 6 * 33);
    float *y = gsl_draws(2024, DS_STREAM_TARGETS, 6 * 17);
    ck_assert_int_eq(memcmp(ds->inputs, x, 6 * 33 * sizeof(float)), 0);
    ck_assert_int_eq(memcmp(ds->targets, y, 6 * 17 * sizeof(float)), 0);
    /* a standard Gaussian's values: not all equal, mean near 0 */
    double mean = 0;
    for (int k = 0; k < 6 * 33; k++)
        mean += x[k];
    ck_assert(fabs(mean / (6 * 33)) < 0.3);
    free(x);
    free(y);
    ds_free(ds);
}
END_TEST

START_TEST(synthetic_reproducible)
{
    const ds_synthetic_options a = td_synth_opts(64, 128, 96, 7);
    ds_dataset *d1 = td_synth(&a), *d2 = td_synth(&a);
    ck_assert_int_eq(memcmp(d1->inputs, d2->inputs, 64 * 128 * sizeof(float)), 0);
    ck_assert_int_eq(memcmp(d1->targets, d2->targets, 64 * 96 * sizeof(float)), 0);
    ds_synthetic_options b = a;
    b.seed = 8;
    ds_dataset *d3 = td_synth(&b);
    size_t same = 0;
    for (size_t k = 0; k < 64 * 128; k++)
        same += d1->inputs[k] == d3->inputs[k];
    for (size_t k = 0; k < 64 * 96; k++)
        same += d1->targets[k] == d3->targets[k];
    ck_assert_uint_eq(same, 0);
    /* inputs and targets are different streams */
    ck_assert(memcmp(d1->inputs, d1->targets, 96 * sizeof(float)) != 0);
    /* the first samples do not depend on the count, the inputs not on out_dim */
    ds_synthetic_options c = a;
    c.count = 10;
    c.out_dim = 5;
    ds_dataset *d4 = td_synth(&c);
    ck_assert_int_eq(memcmp(d1->inputs, d4->inputs, 10 * 128 * sizeof(float)), 0);
    c.out_dim = 96;
    ds_dataset *d5 = td_synth(&c);
    ck_assert_int_eq(memcmp(d1->targets, d5->targets, 10 * 96 * sizeof(float)), 0);
    ds_free(d1);
    ds_free(d2);
    ds_free(d3);
    ds_free(d4);
    ds_free(d5);
}
END_TEST

START_TEST(synthetic_linear)
{
    ds_synthetic_options o = td_synth_opts(5, 8, 3, 99);
    o.rule = DS_TARGETS_LINEAR;
    o.noise = 0.25;
    ds_dataset *ds = td_synth(&o);
    float *x = gsl_draws(99, DS_STREAM_INPUTS, 5 * 8);
    float *e = gsl_draws(99, DS_STREAM_TARGETS, 5 * 3);
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, td_seed32(99, DS_STREAM_MAP, 0));
    double w[3][8];
    for (int j = 0; j < 3; j++)
        for (int k = 0; k < 8; k++)
            w[j][k] = gsl_ran_gaussian_ziggurat(r, 1.0);
    gsl_rng_free(r);
    ck_assert_int_eq(memcmp(ds->inputs, x, sizeof(float) * 40), 0);
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 3; j++) {
            double s = 0;
            for (int k = 0; k < 8; k++)
                s += w[j][k] * (double)x[i * 8 + k];
            const float want = (float)(s / sqrt(8.0) + 0.25 * (double)e[i * 3 + j]);
            ck_assert_msg(ds->targets[i * 3 + j] == want, "target (%d,%d) %.9g, want %.9g", i, j,
                          ds->targets[i * 3 + j], want);
        }
    /* the noise term moves them */
    o.noise = 0.0;
    ds_dataset *d0 = td_synth(&o);
    ck_assert(d0->targets[0] != ds->targets[0]);
    free(x);
    free(e);
    ds_free(ds);
    ds_free(d0);
}
END_TEST

START_TEST(synthetic_bad_options)
{
    char msg[256];
    ds_dataset *ds = NULL;
    ds_synthetic_options o = td_synth_opts(0, 4, 4, 1);
    ck_assert_int_eq(ds_synthetic(&o, &ds, msg, sizeof msg), DS_EINVAL);
    ck_assert_ptr_nonnull(strstr(msg, "count 0, in_dim 4 and out_dim 4 must be nonzero"));
    o = td_synth_opts(2, 4, 4, 1);
    o.rule = DS_TARGETS_LINEAR;
    o.noise = -1;
    ck_assert_int_eq(ds_synthetic(&o, &ds, msg, sizeof msg), DS_EINVAL);
    ck_assert_ptr_nonnull(strstr(msg, "noise -1 must be finite and >= 0"));
    o.noise = NAN;
    ck_assert_int_eq(ds_synthetic(&o, &ds, msg, sizeof msg), DS_EINVAL);
    o.rule = (ds_target_rule)3;
    ck_assert_int_eq(ds_synthetic(&o, &ds, msg, sizeof msg), DS_EINVAL);
    ck_assert_ptr_nonnull(strstr(msg, "invalid target rule 3"));
    o = td_synth_opts(SIZE_MAX / 2, 4096, 4096, 1);
    ck_assert_int_eq(ds_synthetic(&o, &ds, msg, sizeof msg), DS_EINVAL);
    ck_assert_ptr_nonnull(strstr(msg, "overflow"));
    ck_assert_int_eq(ds_synthetic(NULL, &ds, msg, sizeof msg), DS_EINVAL);
    ck_assert_ptr_null(ds);
}
END_TEST

static Suite *data_synthetic_suite(void)
{
    Suite *s = suite_create("data-synthetic");
    TCase *gen = tcase_create("synthetic");
    tcase_add_test(gen, seed_derivation);
    tcase_add_test(gen, synthetic_recipe);
    tcase_add_test(gen, synthetic_reproducible);
    tcase_add_test(gen, synthetic_linear);
    tcase_add_test(gen, synthetic_bad_options);
    suite_add_tcase(s, gen);
    return s;
}

int main(void) { return ts_run_suite(data_synthetic_suite()); }
