/* gpu_cases_update: ak_opt_step_begin and ak_update on cuda against the cpu
 * backend, on the same inputs.
 *
 * kernels.h promises weights, model copies, moments and the state bit for
 * bit, loss counts exactly and loss sums equal up to summation order (here:
 * within 1e-12 relative).  Every optimizer runs several steps with O0, O2
 * and O3 layouts, moments and gradients of every dtype, nearest-even and
 * stochastic rounding, large tensors (a grid-stride loop and many blocks'
 * atomics), typical training values mixed with special ones, a skipped
 * step (found-inf set on the device), and guard bytes around every tensor.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_ops.h"
#include "ref_update.h"

/* Both backends, open during each test (kt_open_both_around). */
static ak_backend *cpu, *gpu;

/* A value of training size (random sign, magnitude 2^lo .. 2^hi) or, one
 * time in `special_one_in`, one of kt's corner patterns. */
static void fill(ts_rng *r, int dt, void *out, size_t n, int lo, int hi, unsigned special_one_in,
                 bool nonnegative)
{
    uint32_t corner[64];
    uint16_t corner16[64];
    kt_fill_f32_bits(r, corner, 64);
    if (dt != AK_F32) kt_fill_u16_bits(r, (fpe_format_id)dt, corner16, 64);
    fpe_env env = fpe_env_default();
    for (size_t i = 0; i < n; i++) {
        const bool special = special_one_in && ts_below(r, special_one_in) == 0;
        float x = (float)ldexp(1.0 + ts_uniform(r), lo + (int)ts_below(r, (uint32_t)(hi - lo + 1)));
        if (!nonnegative && ts_below(r, 2)) x = -x;
        if (ts_below(r, 40) == 0) x = 0;
        uint32_t bits;
        memcpy(&bits, &x, 4);
        if (dt == AK_F32) {
            ((uint32_t *)out)[i] = special ? corner[ts_below(r, 64)] : bits;
        } else {
            const uint16_t h =
                dt == AK_F16 ? fpe_f32_to_f16(&env, bits) : fpe_f32_to_bf16(&env, bits);
            ((uint16_t *)out)[i] = special ? corner16[ts_below(r, 64)] : h;
        }
    }
}

static void put_both(ref_rig *c, ref_rig *g, int k, const void *host)
{
    kt_buf_upload(&c->buf[k], host);
    kt_buf_upload(&g->buf[k], host);
}

/* Compares tensor k of both sides bit for bit; returns the mismatches. */
static size_t compare_tensor(ref_rig *c, ref_rig *g, int k)
{
    if (!c->buf[k].base) return 0;
    const size_t n = c->buf[k].t.n, es = ak_dtype_size(c->buf[k].t.dtype);
    void *hc = malloc(n * es + 8), *hg = malloc(n * es + 8);
    kt_buf_download(&c->buf[k], hc);
    kt_buf_download(&g->buf[k], hg);
    const size_t bad = kt_count_mismatches(ref_part_names[k], hg, hc, n, es);
    free(hc);
    free(hg);
    return bad;
}

static void compare_all(ref_rig *c, ref_rig *g, int step)
{
    size_t bad = 0;
    for (int k = 0; k < REF_PARTS; k++)
        bad += compare_tensor(c, g, k);
    ck_assert_msg(bad == 0, "step %d: %zu elements differ between cuda and cpu", step, bad);
    ak_opt_state sc, sg;
    kt_dev_get(c->b, &sc, c->state, sizeof sc);
    kt_dev_get(g->b, &sg, g->state, sizeof sg);
    ck_assert_int_eq(sg.step, sc.step);
    ck_assert_msg(sg.beta1_pow == sc.beta1_pow && sg.beta2_pow == sc.beta2_pow,
                  "state: cuda %.17g %.17g, cpu %.17g %.17g", sg.beta1_pow, sg.beta2_pow,
                  sc.beta1_pow, sc.beta2_pow);
    ak_update_loss lc, lg;
    kt_dev_get(c->b, &lc, c->loss, sizeof lc);
    kt_dev_get(g->b, &lg, g->loss, sizeof lg);
    ref_check_loss(&lg, &lc, "cuda", "cpu");
}

/* Runs `steps` steps on both backends (step 2 skipped by found-inf when
 * there are more than two), comparing after each. */
static void run_case(ak_opt_config cfg, ref_layout L, size_t n, int steps, unsigned special_one_in,
                     bool with_loss, uint64_t seed)
{
    ak_backend *bc = cpu, *bg = gpu;
    ref_rig c, g;
    ref_rig_open(&c, bc, &L, n);
    ref_rig_open(&g, bg, &L, n);
    ts_rng r;
    ts_rng_init(&r, ts_seed() ^ seed);
    void *host = malloc(n * 4 + 8);
    const int lo[5] = {-10, -10, -12, -14, -20}, hi[5] = {3, 3, 2, -2, -4};
    for (int k = 0; k < REF_PARTS; k++) {
        const int dt = ref_part_dtype(&L, k);
        if (dt == REF_NONE || k == REF_GRAD) continue;
        fill(&r, dt, host, n, lo[k], hi[k], special_one_in, k == REF_V);
        put_both(&c, &g, k, host);
    }
    for (int s = 1; s <= steps; s++) {
        fill(&r, L.grad, host, n, lo[REF_GRAD], hi[REF_GRAD], special_one_in, false);
        put_both(&c, &g, REF_GRAD, host);
        const float flag = steps > 2 && s == 2 ? 1.0f : 0.0f;
        kt_dev_put(bc, c.found_inf, &flag, sizeof flag);
        kt_dev_put(bg, g.found_inf, &flag, sizeof flag);
        ref_rig *both[2] = {&c, &g};
        for (int k = 0; k < 2; k++) {
            ref_rig *x = both[k];
            const float *fi = s % 3 == 0 ? NULL : x->found_inf;
            int rc = ak_opt_step_begin(x->b, &cfg, x->state, fi);
            ck_assert_msg(rc == AK_OK, "%s: %s", ak_backend_name(x->b), ak_error(x->b));
            rc = ak_update(x->b, &cfg, &x->p, x->state, fi, with_loss ? x->loss : NULL);
            ck_assert_msg(rc == AK_OK, "%s: %s", ak_backend_name(x->b), ak_error(x->b));
        }
        ck_assert_int_eq(ak_sync(bg), AK_OK);
        compare_all(&c, &g, s);
        cfg.round.index += n;
    }
    free(host);
    ref_rig_close(&c);
    ref_rig_close(&g);
}

/* ref_config with dampening for momentum and the rounding mode given. */
static ak_opt_config config(ak_optimizer kind, float lr, float wd, fpe_round mode)
{
    ak_opt_config c = ref_config(kind, lr, wd);
    c.dampening = kind == AK_OPT_MOMENTUM ? 0.1f : 0;
    c.round = kt_rounding(mode, 0x5EED0000ull + (uint64_t)mode, 3, 77);
    return c;
}

/* Every optimizer with O0, O2 (both model formats, RNE and SR) and O3. */
GO_CASE(every_optimizer_and_layout)
{
    const size_t n = 100003;
    for (int kind = AK_OPT_SGD; kind <= AK_OPT_ADAMW; kind++) {
        const bool adam = kind >= AK_OPT_ADAM;
        const float lr = adam ? 1e-3f : 0.01f;
        const int m32 = kind == AK_OPT_SGD ? REF_NONE : AK_F32, v32 = adam ? AK_F32 : REF_NONE;
        const int m16 = kind == AK_OPT_SGD ? REF_NONE : AK_BF16, v16 = adam ? AK_F16 : REF_NONE;
        const struct {
            ref_layout L;
            fpe_round mode;
        } cases[] = {
            {ref_lay(true, REF_NONE, AK_F32, m32, v32), FPE_RNE},     /* O0 */
            {ref_lay(true, AK_F16, AK_F16, m32, v32), FPE_RNE},       /* O2 */
            {ref_lay(true, AK_BF16, AK_BF16, m16, v32), FPE_SR_PROP}, /* O2, SR */
            {ref_lay(true, AK_F16, AK_F32, m16, v16), FPE_SR_EQUAL},  /* O2, SR, 16-bit moments */
            {ref_lay(false, AK_F16, AK_F16, m32, v32), FPE_RNE},      /* O3 */
            {ref_lay(false, AK_F16, AK_F32, m16, v32), FPE_SR_PROP},  /* O3, SR */
            {ref_lay(false, AK_BF16, AK_BF16, m16, v16), FPE_SR_EQUAL},
            {ref_lay(false, AK_BF16, AK_F32, m32, v32), FPE_RZ},
        };
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
            run_case(config((ak_optimizer)kind, lr, k % 2 ? 1e-2f : 0, cases[k].mode), cases[k].L,
                     n, 4, 0, true, (uint64_t)(kind * 100) + k);
    }
}

/* Special values mixed in (NaNs with payloads, infinities, subnormals,
 * extremes): the NaNs stored must be the same bits too. */
GO_CASE(special_values)
{
    for (int kind = AK_OPT_SGD; kind <= AK_OPT_ADAMW; kind++) {
        const int m = kind == AK_OPT_SGD ? REF_NONE : AK_F16,
                  v = kind >= AK_OPT_ADAM ? AK_BF16 : REF_NONE;
        run_case(config((ak_optimizer)kind, 0.5f, 0.25f, FPE_RNE),
                 ref_lay(true, AK_F16, AK_F32, m, v), 50021, 3, 4, true, 1000 + (uint64_t)kind);
        run_case(config((ak_optimizer)kind, 0.5f, 0.25f, FPE_SR_PROP),
                 ref_lay(false, AK_BF16, AK_F16, m, v), 50021, 3, 4, true, 1100 + (uint64_t)kind);
        run_case(config((ak_optimizer)kind, 0.5f, 0, FPE_RO), ref_lay(false, AK_F16, AK_BF16, m, v),
                 50021, 3, 4, true, 1200 + (uint64_t)kind);
    }
}

/* The cuda fast path (fp32 masters, RNE, no rounding loss asked for): every
 * optimizer, no model copy (O0) and fp16/bf16 copies, fp32 and 16-bit
 * gradients, special values (canonical NaNs in the copies), an element
 * count that leaves a tail of 3 after the groups of four. */
GO_CASE(fast_path)
{
    for (int kind = AK_OPT_SGD; kind <= AK_OPT_ADAMW; kind++) {
        const int m = kind == AK_OPT_SGD ? REF_NONE : AK_F32,
                  v = kind >= AK_OPT_ADAM ? AK_F32 : REF_NONE;
        const int models[3] = {REF_NONE, AK_F16, AK_BF16}, grads[3] = {AK_F32, AK_F16, AK_BF16};
        for (int a = 0; a < 3; a++)
            for (int k = 0; k < 3; k++)
                run_case(config((ak_optimizer)kind, 0.5f, k == 1 ? 0.25f : 0, FPE_RNE),
                         ref_lay(true, models[a], grads[k], m, v), 40003, 4, a == 1 ? 4 : 0, false,
                         3000 + (uint64_t)(kind * 10 + a * 3 + k));
    }
}

/* Millions of elements: many blocks, the grid-stride loop, the per-block
 * reductions and their atomics; also the update without a loss. */
GO_CASE(large_tensors)
{
    const size_t n = (size_t)5 << 20 | 7;
    run_case(config(AK_OPT_ADAMW, 1e-3f, 0.01f, FPE_SR_PROP),
             ref_lay(true, AK_BF16, AK_F32, AK_F32, AK_F32), n, 3, 1000, true, 2000);
    run_case(config(AK_OPT_MOMENTUM, 0.01f, 0, FPE_SR_EQUAL),
             ref_lay(false, AK_F16, AK_F16, AK_BF16, REF_NONE), n, 3, 1000, true, 2001);
    run_case(config(AK_OPT_ADAM, 1e-3f, 0, FPE_RNE),
             ref_lay(false, AK_BF16, AK_BF16, AK_F16, AK_BF16), n, 2, 0, false, 2002);
}

/* Weights, model copies, moments and the state bit for bit (compare_all),
 * the loss counts exactly and its sums to 1e-12 relative (ref_check_loss). */
static const go_case rows[] = {
    {"opt_step_begin update", "every_optimizer_and_layout", 1, every_optimizer_and_layout, GO_BITS},
    {"opt_step_begin update", "special_values", 1, special_values, GO_BITS},
    {"opt_step_begin update", "fast_path", 1, fast_path, GO_BITS},
    {"opt_step_begin update", "large_tensors", 1, large_tensors, GO_BITS},
};
GO_FAMILY(update, rows);
