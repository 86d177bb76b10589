/* gpu_cases_loss_scale: ak_loss_scale_update on the cuda backend against the cpu
 * backend and the pure function (loss_scale.h): the whole state after every
 * step, bit for bit, over a long sequence of found-inf flags, for every
 * preset and for factors that round (growth 3, backoff 0.3) and a scale that
 * falls through the subnormals to 0. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_ops.h"

#define STEPS 20000

/* Both backends, open during each test (kt_open_both_around). */
static ak_backend *cpu, *gpu;

/* Whether step i overflows, as a training run might: mostly when the scale
 * is above a limit that moves between 2^12 and 2^20 every 500 steps, now
 * and then at random, and in bursts of 50 steps.  collapse: the first 300
 * steps all overflow. */
static bool scripted_overflow(ts_rng *rng, int i, float scale, bool collapse)
{
    if (collapse && i < 300) return true;
    const float limit = ldexpf(1.0f, 12 + (i / 500) % 9);
    unsigned percent = scale > limit ? 80 : 3;
    if ((i / 50) % 13 == 6) percent = 70;
    return ts_below(rng, 100) < percent;
}

/* Runs the op over the n flags on backend b from init, keeping the state
 * after every step (queued copies, one download at the end). */
static void run_op(ak_backend *b, const ak_scaler_config *cfg, const ak_scaler_state *init,
                   const float *flags, size_t n, ak_scaler_state *out)
{
    float *dflags = kt_dev_alloc(b, n * sizeof *dflags);
    ak_scaler_state *dstate = kt_dev_alloc(b, sizeof *dstate);
    ak_scaler_state *dtraj = kt_dev_alloc(b, n * sizeof *dtraj);
    kt_dev_put(b, dflags, flags, n * sizeof *flags);
    kt_dev_put(b, dstate, init, sizeof *init);
    for (size_t i = 0; i < n; i++) {
        ck_assert_msg(ak_loss_scale_update(b, cfg, dstate, dflags + i) == AK_OK, "%s", ak_error(b));
        ck_assert_msg(ak_copy(b, dtraj + i, dstate, sizeof *dstate) == AK_OK, "%s", ak_error(b));
    }
    kt_dev_get(b, out, dtraj, n * sizeof *out);
    ck_assert_msg(ak_sync(b) == AK_OK, "%s", ak_error(b));
    kt_dev_free(b, dflags);
    kt_dev_free(b, dstate);
    kt_dev_free(b, dtraj);
}

static void print_state(const char *who, const ak_scaler_state *s)
{
    printf("  %s: scale %a inv %a skip %g hyst %d good %lld steps %lld overflows %lld skipped %lld "
           "growths %lld backoffs %lld in_a_row %lld master %a\n",
           who, (double)s->scale, (double)s->inv_scale, (double)s->skip, (int)s->hysteresis_left,
           (long long)s->good, (long long)s->steps, (long long)s->overflows, (long long)s->skipped,
           (long long)s->growths, (long long)s->backoffs, (long long)s->overflows_in_a_row,
           s->master_scale);
}

/* The index of the first step whose states differ, or n. */
static size_t first_difference(const ak_scaler_state *a, const ak_scaler_state *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof a[i]) != 0) return i;
    return n;
}

typedef struct policy {
    const char *preset;
    int32_t window;
    bool consecutive;
    double growth, backoff; /* 0: the preset's */
    float min, max;         /* 0: the preset's */
    bool collapse;
} policy;

static const policy policies[] = {
    {"none", 0, false, 0, 0, 0, 0, false},
    {"fixed", 0, false, 0, 0, 0, 0, false},
    {"pytorch", 3, false, 0, 0, 0, 0, false},
    {"apex", 4, false, 0, 0, 0, 0, false},
    {"mindspore-manager", 1, false, 0, 0, 0, 0, false},
    {"mindspore-amp", 2, false, 0, 0, 0, 0, false},
    {"paddle", 3, false, 0, 0, 0, 0, false},
    {"deepspeed", 4, false, 0, 0, 0, 0, false},
    {"deepspeed", 4, true, 0, 0, 0, 0, false},
    {"megatron", 1, false, 0, 0, 0, 0, false},
    {"keras", 2, false, 0, 0, 0, 0, false},
    {"paddle-static", 3, false, 0, 0, 0, 0, false},
    {"deepspeed-zero", 4, false, 0, 0, 0, 0, false},
    {"deepspeed-fp16-optimizer", 3, false, 0, 0, 0, 0, false},
    {"tf-keras2", 2, false, 0, 0, 0, 0, false},
    /* factors whose products round, a floor and a cap that are no powers of two */
    {"dynamic", 2, false, 3.0, 0.3, 0.01f, 1e30f, false},
    /* each number type with factors that are no fp32 numbers (1.7, 1/1.7, 1/3) */
    {"pytorch", 2, false, 1.7, 1.0 / 1.7, 0, 0, false},
    {"deepspeed", 2, false, 1.7, 0, 0, 0, false},
    {"mindspore-manager", 2, false, 3.0, 1.0 / 3.0, 0, 0, false},
    {"mindspore-amp", 2, false, 3.0, 0, 0, 0, false},
    /* through the subnormals to 0 and back to growing from 0 */
    {"pytorch", 5, false, 0, 0, 0, 0, true},
};

GO_CASE(cuda_equals_cpu)
{
    const policy *p = &policies[_i];
    ak_scaler_config cfg;
    char msg[256];
    ck_assert_msg(ak_scaler_preset(p->preset, &cfg, msg, sizeof msg) == AK_OK, "%s", msg);
    if (p->window) cfg.window = p->window;
    cfg.consecutive_hysteresis = p->consecutive;
    if (p->growth) cfg.growth_factor = p->growth;
    if (p->backoff) cfg.backoff_factor = p->backoff;
    if (p->min) cfg.min_scale = p->min;
    if (p->max) cfg.max_scale = p->max;
    ck_assert_msg(ak_scaler_validate(&cfg, msg, sizeof msg) == AK_OK, "%s", msg);

    /* the flags, and the pure function's trajectory */
    static const float set[] = {1.0f, -3.0f, INFINITY, NAN}, clear[] = {0.0f, -0.0f};
    float *flags = malloc(STEPS * sizeof *flags);
    ak_scaler_state *pure = malloc(STEPS * sizeof *pure);
    ak_scaler_state *on_cpu = malloc(STEPS * sizeof *on_cpu);
    ak_scaler_state *on_gpu = malloc(STEPS * sizeof *on_gpu);
    ck_assert(flags && pure && on_cpu && on_gpu);
    ts_rng rng;
    ts_rng_init(&rng, ts_seed() + 40 + (uint64_t)_i);
    ak_scaler_state init, s;
    ck_assert_int_eq(ak_scaler_init(&cfg, &init), AK_OK);
    s = init;
    for (int i = 0; i < STEPS; i++) {
        const bool inf = scripted_overflow(&rng, i, s.scale, p->collapse);
        flags[i] = inf ? set[ts_below(&rng, 4)] : clear[ts_below(&rng, 2)];
        ak_loss_scale_step(&cfg, &s, inf);
        pure[i] = s;
    }
    if (p->collapse) ck_assert(pure[299].scale == 0.0f && pure[299].backoffs == 166);
    if (cfg.kind == AK_SCALER_DYNAMIC && !p->collapse)
        ck_assert_msg(s.growths > 100 && s.backoffs > 100, "%lld growths, %lld backoffs",
                      (long long)s.growths, (long long)s.backoffs);

    run_op(cpu, &cfg, &init, flags, STEPS, on_cpu);
    run_op(gpu, &cfg, &init, flags, STEPS, on_gpu);
    size_t d = first_difference(on_cpu, pure, STEPS);
    if (d < STEPS) {
        print_state("cpu ", &on_cpu[d]);
        print_state("pure", &pure[d]);
    }
    ck_assert_msg(d == STEPS, "%s: the cpu op and the pure function differ at step %zu", p->preset,
                  d + 1);
    d = first_difference(on_gpu, on_cpu, STEPS);
    if (d < STEPS) {
        print_state("cuda", &on_gpu[d]);
        print_state("cpu ", &on_cpu[d]);
    }
    ck_assert_msg(d == STEPS, "%s: cuda and cpu differ at step %zu", p->preset, d + 1);
    free(flags);
    free(pure);
    free(on_cpu);
    free(on_gpu);
}

/* The wrapper's checks run before the backend is reached, the same on cuda. */
GO_CASE(cuda_bad_arguments)
{
    ak_scaler_config cfg;
    ck_assert_int_eq(ak_scaler_preset("megatron", &cfg, NULL, 0), AK_OK);
    ak_scaler_state *state = kt_dev_alloc(gpu, sizeof *state);
    float *found = kt_dev_alloc(gpu, sizeof *found);
    cfg.hysteresis = 0;
    ck_assert_int_eq(ak_loss_scale_update(gpu, &cfg, state, found), AK_EINVAL);
    ck_assert_str_eq(ak_error(gpu), "ak_loss_scale_update: --hysteresis 0: must be >= 1");
    cfg.hysteresis = 2;
    ck_assert_int_eq(ak_loss_scale_update(gpu, &cfg, state, NULL), AK_EINVAL);
    ck_assert_str_eq(ak_error(gpu), "ak_loss_scale_update: found_inf is NULL");
    ck_assert_int_eq(ak_sync(gpu), AK_OK);
    kt_dev_free(gpu, state);
    kt_dev_free(gpu, found);
}

/* The whole state after every step, bit for bit (first_difference), for
 * every row of policies[]: each preset, rounding factors, the collapse. */
static const go_case rows[] = {
    {"loss_scale_update copy", "cuda_equals_cpu", (int)(sizeof policies / sizeof policies[0]),
     cuda_equals_cpu, GO_BITS},
    {"loss_scale_update", "cuda_bad_arguments", 1, cuda_bad_arguments, GO_BITS},
};
GO_FAMILY(loss_scale, rows);
