/* communication.c: the report's section on communication precision (issue 20): the
 * data-parallel gradient all-reduce (experiments/allreduce/allreduce.h) of the deep MLP's real
 * gradients in fp16, bf16 and fp32, against the world size and the loss scale, and a real
 * data-parallel training over MPI beside the simulated one (communication_mpi.c).
 *
 * The gradients: the deep MLP's fp32 run (deepmlp-o0-s1, the loss-scaling section's) at its
 * final weights; rank r's gradient is that of one micro-batch of COMM_BATCH training samples
 * (samples r B .. r B + B - 1, modulo the run's training set), computed once in fp32 at scale
 * 1 on the cpu backend.  Of each rank's gradient COMM_ELEMENTS elements are kept: every one of
 * the last layer (where this net's largest gradients are, so that the overflow study sees
 * them) and every k-th of the others (so that the small gradients of the first layers are
 * represented as they are in the net).  A loss scale S (a power of two) multiplies those fp32
 * values exactly, as the scaled backward pass would up to its own rounding.  The reductions are
 * ar_reduce's: the ring of the stated order in one process, bit for bit what the MPI ring
 * computes (tests mpi_allreduce_np2/np4, mpi_train). */
#include "reproduce_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allreduce.h"
#include "checkpoint.h"
#include "data.h"
#include "kernels.h"
#include "model.h"
#include "nets.h"
#include "report.h"

#define COMM_BATCH          8
#define COMM_ELEMENTS       16384
#define COMM_OVERFLOW_WORLD 32

typedef struct comm_grads {
    int ranks;     /* micro-batches: the largest simulated world */
    size_t n;      /* elements kept per rank */
    size_t last_n; /* of which the last layer's */
    size_t total;  /* the net's gradient elements */
    float *g;      /* ranks x n, fp32, scale 1 */
} comm_grads;

/* The indices kept: the last layer's params whole, every k-th element of the others. */
static size_t pick(const model *m, size_t *keep, size_t room, size_t *last_n)
{
    int last = -1;
    size_t total = 0, last_total = 0;
    for (int j = 0; j < m->n_params; j++)
        if (m->params[j].layer > last) last = m->params[j].layer;
    for (int j = 0; j < m->n_params; j++) {
        total += m->params[j].n;
        if (m->params[j].layer == last) last_total += m->params[j].n;
    }
    const size_t others = total - last_total;
    const size_t want = room > last_total ? room - last_total : 1;
    const size_t stride = others / want + (others % want != 0);
    size_t n = 0, at = 0, seen = 0;
    *last_n = 0;
    for (int j = 0; j < m->n_params; j++) {
        const bool whole = m->params[j].layer == last;
        for (size_t i = 0; i < m->params[j].n && n < room; i++, at++) {
            if (whole) {
                keep[n++] = at;
                (*last_n)++;
            } else if (seen++ % (stride ? stride : 1) == 0) {
                keep[n++] = at;
            }
        }
    }
    return n;
}

/* Every rank's gradient at the fp32 run's final weights into g. */
static int collect(repro_study *s, const char *run, int ranks, comm_grads *g)
{
    memset(g, 0, sizeof *g);
    char why[512], ckpt[4096];
    net_def net;
    if (net_build("deepmlp", NULL, &net, why, sizeof why) != 0) goto fail_why;
    repro_run_file(s, ckpt, sizeof ckpt, run, REC_CHECKPOINT);
    ds_options d = ds_options_default();
    d.subset = (size_t)atol(s->plan->deep_subset);
    ds_dataset *ds = NULL;
    if (ds_load_fashion_mnist(s->o->data_dir, DS_TRAIN, &d, &ds, why, sizeof why) != DS_OK)
        goto fail_why;
    prec_options po;
    prec_options_default(&po, PREC_O0, AK_F16);
    prec_plan plan;
    prec_plan_make(&po, &net, &plan);
    ak_backend *b = ak_open("cpu", why, sizeof why);
    if (!b) {
        ds_free(ds);
        goto fail_why;
    }
    model *m = NULL;
    float *x = malloc(COMM_BATCH * ds->features * sizeof *x), *full = NULL, *dscale = NULL;
    int32_t *labels = malloc(COMM_BATCH * ds->label_dim * sizeof *labels);
    size_t idx[COMM_BATCH], *keep = malloc(COMM_ELEMENTS * sizeof *keep);
    int rc = x && labels && keep ? 0 : -1;
    if (rc) snprintf(why, sizeof why, "out of memory");
    if (!rc) rc = model_create(b, &net, &plan, COMM_BATCH, &m, why, sizeof why);
    if (!rc) rc = ckpt_load_weights(ckpt, m, why, sizeof why);
    if (!rc) {
        g->n = pick(m, keep, COMM_ELEMENTS, &g->last_n);
        for (int j = 0; j < m->n_params; j++)
            g->total += m->params[j].n;
        g->ranks = ranks;
        g->g = malloc((size_t)ranks * g->n * sizeof *g->g);
        full = malloc(g->total * sizeof *full);
        const float one = 1.0f;
        if (!g->g || !full) {
            snprintf(why, sizeof why, "out of memory for %d ranks' gradients", ranks);
            rc = -1;
        } else if (ak_alloc(b, sizeof *dscale, (void **)&dscale) != 0 ||
                   ak_to_device(b, dscale, &one, sizeof one) != 0) {
            snprintf(why, sizeof why, "%s", ak_error_text(b));
            rc = -1;
        }
    }
    for (int r = 0; r < ranks && !rc; r++) {
        for (size_t i = 0; i < COMM_BATCH; i++)
            idx[i] = ((size_t)r * COMM_BATCH + i) % ds->count;
        if (ds_gather(ds, idx, COMM_BATCH, x, labels, NULL, why, sizeof why) != DS_OK) {
            rc = -1;
            break;
        }
        rc = ak_to_device(b, m->x.data, x, COMM_BATCH * ds->features * sizeof *x);
        if (!rc)
            rc = ak_to_device(b, m->labels, labels, COMM_BATCH * ds->label_dim * sizeof *labels);
        if (!rc) rc = model_forward_backward(m, COMM_BATCH, dscale);
        size_t at = 0;
        for (int j = 0; j < m->n_params && !rc; j++) {
            rc = ak_to_host(b, full + at, m->params[j].grad.data, m->params[j].n * sizeof *full);
            at += m->params[j].n;
        }
        if (rc) snprintf(why, sizeof why, "%s", ak_error_text(b));
        for (size_t k = 0; k < g->n && !rc; k++)
            g->g[(size_t)r * g->n + k] = full[keep[k]];
    }
    if (dscale) ak_free(b, dscale);
    model_free(m);
    ak_close(b);
    ds_free(ds);
    free(x);
    free(labels);
    free(keep);
    free(full);
    if (!rc) return 0;
    free(g->g);
    g->g = NULL;
fail_why:
    snprintf(s->msg, sizeof s->msg, "the all-reduce's gradients: %.900s", why);
    return -1;
}

/* ar_reduce's source: rank r's kept gradient (ranks from base on) times the scale. */
typedef struct comm_gen {
    const comm_grads *g;
    int base;     /* the first rank */
    size_t first; /* the first element */
    float scale;
} comm_gen;

static int gen(void *ctx, int rank, size_t offset, size_t count, float *out)
{
    const comm_gen *c = ctx;
    const float *src = c->g->g + (size_t)(c->base + rank) * c->g->n + c->first + offset;
    for (size_t i = 0; i < count; i++)
        out[i] = src[i] * c->scale;
    return 0;
}

/* One reduction: world ranks from base, the kept elements [first, first + n), preset, scale. */
static int reduce(repro_study *s, const comm_grads *g, const char *preset, int world, int base,
                  size_t first, size_t n, float scale, float *out, ar_stats *st)
{
    comm_gen c = {g, base, first, scale};
    ar_call call;
    memset(&call, 0, sizeof call);
    call.config = ar_preset(preset);
    call.world = world;
    call.n = n;
    call.gen = gen;
    call.gen_ctx = &c;
    call.loss_scale = scale;
    char why[512];
    if (!call.config || ar_reduce(&call, out, st, why, sizeof why) != AR_OK) {
        snprintf(s->msg, sizeof s->msg, "all-reduce %s at %d ranks: %.800s", preset, world,
                 call.config ? why : "no such preset");
        return -1;
    }
    return 0;
}

/* the fraction of nonzero inputs that the cast and the pre-division flushed */
static double flushed_frac(const ar_stats *a)
{
    return a->inputs_nonzero
               ? (double)(a->flushed_cast + a->flushed_prescale) / (double)a->inputs_nonzero
               : NAN;
}

/* ---- underflow and error against the world size ----------------------------------------- */
typedef struct world_case {
    const char *label, *preset;
    bool scaled; /* at the dynamic run's final loss scale, else 1 */
} world_case;
static const world_case world_cases[] = {
    {"fp16 hook at scale 1", "pytorch-fp16-hook", false},
    {"fp16 hook scaled", "pytorch-fp16-hook", true},
    {"bf16 hook at scale 1", "pytorch-bf16-hook", false},
    {"fp32", "pytorch-fp32", false},
};
#define N_WORLD_CASES (sizeof world_cases / sizeof world_cases[0])
#define MAX_WORLDS    11 /* 2 .. 1024 */

typedef struct world_result {
    int worlds[MAX_WORLDS], n_worlds;
    ar_stats st[N_WORLD_CASES][MAX_WORLDS];
} world_result;

static int world_sweep(repro_study *s, const comm_grads *g, float scale, world_result *w)
{
    float *out = malloc(g->n * sizeof *out);
    if (!out) {
        snprintf(s->msg, sizeof s->msg, "out of memory");
        return -1;
    }
    w->n_worlds = 0;
    for (int world = 2; world <= g->ranks && w->n_worlds < MAX_WORLDS; world *= 2)
        w->worlds[w->n_worlds++] = world;
    int rc = 0;
    for (size_t c = 0; c < N_WORLD_CASES && !rc; c++)
        for (int k = 0; k < w->n_worlds && !rc; k++)
            rc = reduce(s, g, world_cases[c].preset, w->worlds[k], 0, 0, g->n,
                        world_cases[c].scaled ? scale : 1.0f, out, &w->st[c][k]);
    free(out);
    return rc;
}

static int write_world(repro_study *s, const world_result *w, float scale)
{
    repro_csv f = {.ok = false}, fl = {.ok = false}, er = {.ok = false};
    if (!repro_csv_open(s, &f, "allreduce_world.csv",
                        "case,preset,loss_scale,world,inputs_nonzero,flushed,flushed_frac,"
                        "subnormal_messages,zero_results,rel_l2_error,max_abs_error,"
                        "overflow_in_sum,nonfinite_results") ||
        !repro_csv_open(s, &fl, "allreduce_flushed.csv", "x,y,series") ||
        !repro_csv_open(s, &er, "allreduce_error.csv", "x,y,series")) {
        repro_csv_abort(&f);
        repro_csv_abort(&fl);
        return -1;
    }
    for (size_t c = 0; c < N_WORLD_CASES; c++)
        for (int k = 0; k < w->n_worlds; k++) {
            const ar_stats *a = &w->st[c][k];
            const double sc = world_cases[c].scaled ? scale : 1.0;
            repro_csv_row(&f, "%s,%s,%g,%d,%llu,%llu,%.6g,%llu,%llu,%.6g,%.6g,%llu,%llu",
                          world_cases[c].label, world_cases[c].preset, sc, w->worlds[k],
                          (unsigned long long)a->inputs_nonzero,
                          (unsigned long long)(a->flushed_cast + a->flushed_prescale),
                          flushed_frac(a), (unsigned long long)a->subnormal_messages,
                          (unsigned long long)a->zero_results, a->rel_l2_error, a->max_abs_error,
                          (unsigned long long)a->overflow_in_sum,
                          (unsigned long long)a->nonfinite_results);
            repro_csv_row(&fl, "%d,%.6g,%s", w->worlds[k], flushed_frac(a), world_cases[c].label);
            if (a->rel_l2_error > 0)
                repro_csv_row(&er, "%d,%.6g,%s", w->worlds[k], a->rel_l2_error,
                              world_cases[c].label);
        }
    const bool ok = repro_csv_close(s, &f);
    const bool ok2 = repro_csv_close(s, &fl);
    const bool ok3 = repro_csv_close(s, &er);
    return ok && ok2 && ok3 ? 0 : -1;
}

/* ---- overflow in the sum against the scale --------------------------------------------- */
static const char *const overflow_presets[] = {"apex", "pytorch-fp16-hook"};
#define N_OVERFLOW_PRESETS 2
#define LOG2_SCALE_LO      10
#define LOG2_SCALE_HI      26
#define N_SCALES           (LOG2_SCALE_HI - LOG2_SCALE_LO + 1)
#define MAX_OVERFLOW_STEPS 64

typedef struct overflow_result {
    int steps;
    int rank_overflow[N_OVERFLOW_PRESETS][N_SCALES]; /* steps where a rank's cast overflowed */
    int sum_only[N_OVERFLOW_PRESETS][N_SCALES];      /* no rank's did, the sum did */
} overflow_result;

static int overflow_sweep(repro_study *s, const comm_grads *g, overflow_result *o)
{
    memset(o, 0, sizeof *o);
    o->steps = g->ranks / COMM_OVERFLOW_WORLD;
    if (o->steps > MAX_OVERFLOW_STEPS) o->steps = MAX_OVERFLOW_STEPS;
    float *out = malloc(g->n * sizeof *out);
    if (!out) {
        snprintf(s->msg, sizeof s->msg, "out of memory");
        return -1;
    }
    int rc = 0;
    for (int p = 0; p < N_OVERFLOW_PRESETS && !rc; p++)
        for (int k = 0; k < N_SCALES && !rc; k++)
            for (int t = 0; t < o->steps && !rc; t++) {
                ar_stats a;
                /* the last layer's elements: the largest gradients, the only ones near
                 * fp16's overflow at these scales */
                rc = reduce(s, g, overflow_presets[p], COMM_OVERFLOW_WORLD, t * COMM_OVERFLOW_WORLD,
                            g->n - g->last_n, g->last_n, ldexpf(1.0f, LOG2_SCALE_LO + k), out, &a);
                o->rank_overflow[p][k] += a.overflow_cast > 0;
                o->sum_only[p][k] += a.overflow_cast == 0 && a.overflow_in_sum > 0;
            }
    free(out);
    return rc;
}

static int write_overflow(repro_study *s, const overflow_result *o)
{
    repro_csv f = {.ok = false}, l = {.ok = false};
    if (!repro_csv_open(s, &f, "allreduce_overflow.csv",
                        "preset,world,log2_scale,steps,rank_overflow_steps,sum_only_steps") ||
        !repro_csv_open(s, &l, "allreduce_overflow_lines.csv", "x,y,series")) {
        repro_csv_abort(&f);
        return -1;
    }
    for (int p = 0; p < N_OVERFLOW_PRESETS; p++)
        for (int k = 0; k < N_SCALES; k++) {
            const int e = LOG2_SCALE_LO + k;
            repro_csv_row(&f, "%s,%d,%d,%d,%d,%d", overflow_presets[p], COMM_OVERFLOW_WORLD, e,
                          o->steps, o->rank_overflow[p][k], o->sum_only[p][k]);
            repro_csv_row(&l, "%d,%.6g,%s: a rank's cast overflowed", e,
                          (double)o->rank_overflow[p][k] / o->steps, overflow_presets[p]);
            repro_csv_row(&l, "%d,%.6g,%s: only the sum overflowed", e,
                          (double)o->sum_only[p][k] / o->steps, overflow_presets[p]);
        }
    const bool ok = repro_csv_close(s, &f);
    return repro_csv_close(s, &l) && ok ? 0 : -1;
}

/* ---- the section -------------------------------------------------------------------------- */
/* the data-parallel runs' steps per level */
static const char *const dp_steps[] = {"10", "50", "200"};

static void mpi_table(repro_study *s, const repro_dp_row *rows, int n)
{
    repro_csv f = {.ok = false};
    if (!repro_csv_open(s, &f, "allreduce_mpi.csv",
                        "ranks,simulated_run,mpirun,same_checkpoint,same_steps_csv,"
                        "same_allreduce_counters"))
        return;
    for (int i = 0; i < n; i++)
        repro_csv_row(&f, "%d,%s,%s,%s,%s,%s", rows[i].world, rows[i].sim_run, rows[i].mpi_note,
                      rows[i].ran ? (rows[i].same_checkpoint ? "yes" : "no") : "",
                      rows[i].ran ? (rows[i].same_steps ? "yes" : "no") : "",
                      rows[i].ran ? (rows[i].same_counters ? "yes" : "no") : "");
    if (repro_csv_close(s, &f))
        rp_table_csv(s->rep, "One data-parallel run simulated in one process and under mpirun",
                     "allreduce_mpi.csv");
}

static void real_runs(repro_study *s)
{
    const char *const pairs[] = {"net",         "deepmlp",
                                 "mode",        "O2",
                                 "dtype",       "fp16",
                                 "loss-scale",  "pytorch",
                                 "optimizer",   REPRO_DEEP_OPTIMIZER,
                                 "lr",          REPRO_DEEP_LR,
                                 "batch",       "16",
                                 "steps",       dp_steps[s->o->level],
                                 "subset",      s->plan->deep_subset,
                                 "allreduce",   "fp16",
                                 "stats-every", s->plan->stats_every,
                                 "hist-every",  "0",
                                 NULL};
    repro_dp_row rows[2];
    int n = 0;
    /* (--smoke: 2 ranks only, the test suite's report) */
    const int most = s->o->level == REPRO_SMOKE ? 2 : 4;
    for (int world = 2; world <= most; world *= 2) {
        if (repro_dp_compare(s, world, pairs, &rows[n]) != 0) {
            repro_section_failed(s, "allreduce_mpi.csv");
            return;
        }
        n++;
    }
    char ours[1024], diff[1200];
    snprintf(ours, sizeof ours,
             "The deep MLP in O2 fp16, PyTorch's dynamic scale, the fp16 compress hook, %s "
             "steps of 16 samples a rank: `ampscope train --world N` (runs/dp-w2, dp-w4) and "
             "the same options under `mpirun -np N` (this program; its record compared, then "
             "removed).",
             dp_steps[s->o->level]);
    if (n > 1)
        snprintf(diff, sizeof diff, "2 ranks: %s; 4 ranks: %s.", rows[0].mpi_note,
                 rows[1].mpi_note);
    else
        snprintf(diff, sizeof diff, "2 ranks: %s.", rows[0].mpi_note);
    rp_claim(s->rep,
             "A data-parallel run over MPI ranks computes exactly what the simulated world "
             "computes: the messages carry the low-precision bit patterns and every addition "
             "of the ring is the emulator's.",
             "ampscope's own design (issue 20): no framework exposes its all-reduce's bits.", ours,
             diff);
    mpi_table(s, rows, n);
}

void repro_study_communication(repro_study *s)
{
    rp_section(s->rep, "communication", "Communication precision: the gradient all-reduce");
    if (repro_train_deep(s, 0, 1) != 0 || repro_train_deep(s, 2, 1) != 0) {
        repro_section_failed(s, "allreduce_world.csv");
        return;
    }
    char o0[64], dyn[64];
    repro_deep_run_name(o0, sizeof o0, 0, 1);
    repro_deep_run_name(dyn, sizeof dyn, 2, 1);
    rec_run_summary d;
    if (repro_summarize(s, dyn, &d) != 0) {
        repro_section_failed(s, "allreduce_world.csv");
        return;
    }
    const float scale = (float)d.final_scale;
    const int ranks = s->o->level == REPRO_SMOKE ? 32 : 1024;
    repro_progress(s, "all-reduce: %d ranks' gradients of %s", ranks, o0);
    comm_grads g;
    memset(&g, 0, sizeof g);
    world_result *w = malloc(sizeof *w);
    overflow_result ov;
    int rc = w ? collect(s, o0, ranks, &g) : -1;
    if (!w) snprintf(s->msg, sizeof s->msg, "out of memory");
    if (!rc) rc = world_sweep(s, &g, scale, w);
    if (!rc) rc = write_world(s, w, scale);
    if (!rc) rc = overflow_sweep(s, &g, &ov);
    if (!rc) rc = write_overflow(s, &ov);
    if (rc) {
        repro_section_failed(s, "allreduce_world.csv");
        free(w);
        free(g.g);
        return;
    }
    const int last = w->n_worlds - 1;
    const ar_stats *h1 = w->st[0], *hs = w->st[1], *b1 = w->st[2], *f32 = w->st[3];
    char ours[1024], diff[2048];
    snprintf(ours, sizeof ours,
             "The deep MLP's fp32 run (%s) at its final weights: %d ranks, each the gradient of "
             "%d training samples; %zu of its %zu gradient elements a rank (all %zu of the last "
             "layer, every k-th of the others); worlds of 2 to %d ranks reduced by PyTorch's "
             "compress hooks (cast to fp16/bf16, divide by the world in it, ring sum) at scale "
             "1 and at the scale the dynamic fp16 run (%s) ended with, %g.",
             o0, ranks, COMM_BATCH, g.n, g.total, g.last_n, w->worlds[last], dyn, (double)scale);
    snprintf(diff, sizeof diff,
             "Flushed to zero by the cast and the division, of the nonzero inputs: fp16 at "
             "scale 1 %.3g at 2 ranks, %.3g at %d; fp16 at scale %g %.3g and %.3g; bf16 %.3g "
             "and %.3g. The reduced gradient's relative error (2-norm, against the exact mean): "
             "fp16 %.3g at 2 ranks, %.3g at %d; scaled fp16 %.3g and %.3g; bf16 %.3g and %.3g; "
             "fp32 %.3g and %.3g. %s%s",
             flushed_frac(&h1[0]), flushed_frac(&h1[last]), w->worlds[last], (double)scale,
             flushed_frac(&hs[0]), flushed_frac(&hs[last]), flushed_frac(&b1[0]),
             flushed_frac(&b1[last]), h1[0].rel_l2_error, h1[last].rel_l2_error, w->worlds[last],
             hs[0].rel_l2_error, hs[last].rel_l2_error, b1[0].rel_l2_error, b1[last].rel_l2_error,
             f32[0].rel_l2_error, f32[last].rel_l2_error,
             flushed_frac(&h1[last]) > flushed_frac(&h1[0])
                 ? "Dividing by the world before the sum pushes more of the small gradients "
                   "below fp16's subnormals the more ranks there are, as the claim says; the "
                   "loss scale moves them back into range; bf16's exponent range keeps them."
                 : "Here the fp16 hook flushed no more at the largest world than at 2 ranks: "
                   "the claim is not borne out on these gradients.",
             b1[last].rel_l2_error > h1[last].rel_l2_error
                 ? " bf16 flushes nothing, but its error grows faster than fp16's: each of the "
                   "ring's N - 1 additions rounds to its 8-bit significand (fp16 keeps 11)."
                 : "");
    rp_claim(s->rep,
             "PyTorch's fp16_compress_hook divides each rank's gradient by the world size in "
             "fp16 before the sum, so small gradients underflow more as the world grows; a "
             "loss scale or bf16 prevents it.",
             "torch/distributed/algorithms/ddp_comm_hooks/default_hooks.py (_compress_hook: "
             "buffer.to(dtype).div_(world_size), then all_reduce); no published figure.",
             ours, diff);
    rp_table_csv(s->rep, "The all-reduce against the world size (simulated ranks)",
                 "allreduce_world.csv");
    const char *vf[] = {"title=Gradients flushed by the all-reduce's cast and division",
                        "xlabel=ranks",
                        "ylabel=fraction of the nonzero inputs",
                        "logx=1",
                        "points=1",
                        NULL};
    rp_figure(s->rep, "lines.gp", "allreduce_flushed",
              "Flushed to zero against the world size, per format and scale", vf);
    const char *ve[] = {"title=Relative error of the reduced gradient",
                        "xlabel=ranks",
                        "ylabel=relative 2-norm error",
                        "logx=1",
                        "logy=1",
                        "points=1",
                        NULL};
    rp_figure(s->rep, "lines.gp", "allreduce_error",
              "The all-reduce's relative error against the world size", ve);

    /* overflow only in the sum */
    int first_sum = -1, hook_sum = 0;
    for (int k = 0; k < N_SCALES; k++) {
        if (first_sum < 0 && ov.sum_only[0][k] > 0) first_sum = LOG2_SCALE_LO + k;
        hook_sum += ov.sum_only[1][k];
    }
    snprintf(ours, sizeof ours,
             "The same gradients (the last layer's %zu elements, the largest) as %d steps of %d "
             "ranks, each step's ranks distinct, at scales 2^%d to 2^%d: Apex's DDP (the model's "
             "fp16 gradients summed in fp16, divided "
             "after) against PyTorch's fp16 hook (divided before).",
             g.last_n, ov.steps, COMM_OVERFLOW_WORLD, LOG2_SCALE_LO, LOG2_SCALE_HI);
    if (first_sum >= 0)
        snprintf(diff, sizeof diff,
                 "With Apex a step where no rank's gradient overflowed overflowed in the sum "
                 "from scale 2^%d on; with PyTorch's hook %d such step(s) at any scale (its "
                 "division comes first). allreduce_overflow.csv has every count.",
                 first_sum, hook_sum);
    else
        snprintf(diff, sizeof diff,
                 "No step overflowed only in the sum at these scales (Apex: 0; the hook: %d): "
                 "each scale that overflowed the sum already overflowed a rank's cast on these "
                 "gradients.",
                 hook_sum);
    rp_claim(s->rep,
             "Scaled gradients that are finite on every rank can overflow in the sum, which is "
             "why the frameworks check for inf after the reduction.",
             "apex/parallel/distributed.py (allreduce_bucket: the fp16 sum, then "
             "mul_(predivide / world_size)); DeepSpeed's engine likewise (postscale_gradients).",
             ours, diff);
    rp_table_csv(s->rep, "Steps that overflowed, against the loss scale", "allreduce_overflow.csv");
    const char *vo[] = {"title=Overflow in the all-reduce against the loss scale",
                        "xlabel=log2 of the loss scale",
                        "ylabel=fraction of the steps",
                        "points=1",
                        "in=allreduce_overflow_lines.csv",
                        NULL};
    rp_figure(s->rep, "lines.gp", "allreduce_overflow",
              "Steps where a rank's cast overflowed, and where only the sum did", vo);
    free(w);
    free(g.g);
    real_runs(s);
}
