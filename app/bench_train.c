/* bench_train.c: `ampscope bench train`, the time of a training step in
 * each precision mode beside O0's on the same backend, measured in the
 * same run.
 *
 * A step is what train_step.c's train_step runs between its batch and its
 * record: the batch copied to the backend, forward and backward with the
 * loss scale (model.c), the fused unscale + finite check, the loss-scale
 * rule, and the optimizer's update of every parameter.  The statistics and
 * the host's reads of the step's outcome (the record) are left out: they
 * cost the same in every mode and are not what the modes are compared on.
 * The batches are gathered once, before any timing, and the steps cycle
 * through them.  Each mode trains its own model from the same initial
 * weights (seed 1) with the net's default optimizer, as `ampscope train`
 * would; fp16 modes use the pytorch loss-scale preset, O0 and bf16 none.
 * After a few warm-up steps, the backend is synchronised, the clock read,
 * N steps run, the backend synchronised and the clock read again.
 *
 * The batches are copied to the backend once; a step copies its batch
 * within the backend, so on cuda the host never waits for the device
 * inside the timed loop (one stream; the loss scaler's decision stays on
 * the device).
 *
 * Two optional rows: --tf32 adds O0 with tf32 GEMM inputs; --log adds O2
 * fp16 with the record's statistics and histograms taken every step and
 * read back to the host (what `ampscope train --stats-every 1 --hist-every
 * 1` does), as a ratio to the O2 fp16 row: the cost of logging.
 *
 * Targets: issue 4, on the cpu, an O2 step (emulated fp16/bf16) takes at
 * most 1.5 times an O0 step; issue 7, on cuda, simplenet 3 x 4096 batch
 * 512: an O2 step <= 0.55 ms and <= 0.25 of the O0 (fp32, tf32 off) step;
 * logging every step costs <= 5%.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_options.h"
#include "commands.h"
#include "data.h"
#include "model.h"
#include "net_size_options.h"
#include "nets.h"
#include "record.h" /* REC_KINDS */
#include "util.h"

#define MAX_BATCHES   16      /* distinct batches the steps cycle through */
#define O2_CPU_TARGET 1.5     /* issue 4: O2 emulated <= 1.5x the O0 time on the cpu */
#define O2_GPU_RATIO  0.25    /* issue 7: O2 >= 4x faster than fp32 without tf32 */
#define O2_GPU_TIME   0.55e-3 /* issue 7: O2 step <= 0.55 ms (simplenet 3 x 4096, batch 512) */
#define LOG_TARGET    1.05    /* issue 7: statistics every step cost <= 5% */

typedef struct tbench {
    ak_backend *b;
    net_def net;
    size_t batch;
    size_t n_batches;
    int64_t steps, warmup;
    bool csv, tf32_row, log_row;
    bool cpu_clock; /* --clock cpu: the process's CPU time instead of the wall clock */
    const char *data_dir;
    ds_dataset *ds;
    /* n_batches gathered batches, host memory */
    float *x, *targets;
    int32_t *labels;
    /* the same batches in backend memory */
    float *dev_x, *dev_targets;
    int32_t *dev_labels;
} tbench;

/* One row of the table: a mode, its low format, tf32 GEMMs (O0), and the
 * record's statistics every step. */
typedef struct tb_mode {
    prec_mode mode;
    ak_dtype low;
    bool tf32, log;
} tb_mode;

/* What one mode's run gives. */
typedef struct tb_result {
    double seconds_per_step;
    float final_loss; /* the last timed step's */
    int64_t skipped;  /* steps the loss-scale rule skipped */
} tb_result;

/* The state of one mode's training, on the backend. */
typedef struct tb_run {
    model *m;
    ak_opt_config opt;
    ak_scaler_config scaler_cfg;
    ak_scaler_state *scaler;
    ak_opt_state *opt_state;
    float *found_inf;
    ak_stats *stats; /* --log: n_layers * REC_KINDS, backend memory */
    ak_stats *stats_host;
} tb_run;

typedef struct bench_train_args {
    const char *backend, *net, *data_dir;
    int clock; /* index in clocks[] */
    bool quick, csv, tf32, log;
    int64_t steps, batch;
    net_size size;
} bench_train_args;

static const char *const clocks[] = {"wall", "cpu", NULL};

#define F(field)   offsetof(bench_train_args, field)
#define SIZE_AT(f) offsetof(bench_train_args, size.f)
static const opt_spec bench_train_options[] = {
    {.name = "net",
     .kind = OPT_STRING,
     .offset = F(net),
     .metavar = "NET",
     .help = "mlp (default), lenet5, deepmlp, resnet (Fashion-MNIST), simplenet\n"
             "(synthetic data) or transformer (fortunes text)",
     .group = "options:"},
    {.name = "backend",
     .kind = OPT_STRING,
     .offset = F(backend),
     .metavar = "B",
     .help = "cpu, cuda or auto (default auto: cuda when a GPU is present)"},
    {.name = "steps",
     .kind = OPT_I64,
     .offset = F(steps),
     .imin = 1,
     .imax = 1000000,
     .help = "timed steps per mode (default 100; --quick: 10)"},
    {.name = "batch",
     .kind = OPT_I64,
     .offset = F(batch),
     .imin = 1,
     .imax = 1 << 20,
     .help = "default (as train's): simplenet 512, lenet5 32, the others 64"},
    NET_SIZE_OPTION_ROWS(SIZE_AT),
    {.name = "data",
     .kind = OPT_DIR,
     .offset = F(data_dir),
     .help = "Fashion-MNIST IDX files (default Debian's dataset-fashion-mnist), or\n"
             "the fortunes text for the transformer (default Debian's fortunes)"},
    {.name = "tf32",
     .kind = OPT_FLAG,
     .offset = F(tf32),
     .help = "also O0 with tf32 GEMM inputs (cuBLAS's 32F_FAST_TF32)"},
    {.name = "log",
     .kind = OPT_FLAG,
     .offset = F(log),
     .help = "also O2 fp16 with the statistics and histograms of every\n"
             "layer's tensors taken every step and read back (the cost\n"
             "of `train --stats-every 1 --hist-every 1`), beside O2 fp16"},
    {.name = "clock",
     .kind = OPT_CHOICE,
     .offset = F(clock),
     .choices = clocks,
     .help = "wall (default): elapsed time; cpu: the process's CPU time (all its\n"
             "threads), which other processes' load does not inflate: on a busy\n"
             "shared machine, with OPENBLAS_NUM_THREADS=1"},
    {.name = "csv",
     .kind = OPT_FLAG,
     .offset = F(csv),
     .help = "CSV on standard output instead of the table"},
    {.name = "quick",
     .kind = OPT_FLAG,
     .offset = F(quick),
     .help = "fewer steps and warm-up steps (smoke tests; rough times)"},
    {.name = NULL},
};
#undef F

static void help(FILE *out)
{
    fprintf(out,
            "usage: ampscope bench train [--net NET] [--backend cpu|cuda|auto] [--steps N]\n"
            "                            [--batch N] [--width N] [--depth N] [--heads N]\n"
            "                            [--context N] [--data DIR] [--tf32] [--log]\n"
            "                            [--clock wall|cpu] [--csv] [--quick]\n"
            "\n"
            "Times training steps of NET in each precision mode (O0 fp32; O1, O2, O3 in fp16\n"
            "and in bf16) on one backend, and gives each mode's time per step as a ratio to\n"
            "O0's, measured in the same run.  A step is the batch copied to the backend,\n"
            "forward, backward, unscale + finite check, the loss-scale rule and the\n"
            "optimizer's updates, as in `ampscope train` without its record; fp16 modes use\n"
            "the pytorch loss-scale preset; the optimizer is train's default for the net\n"
            "(momentum for lenet5, AdamW for the transformer, SGD otherwise).  At most %d distinct "
            "batches (gathered once, in\n"
            "file order) are cycled through.  The skipped column counts steps the loss-scale\n"
            "rule skipped (a skipped step does not update the weights, so it is cheaper).\n"
            "The batches are copied to the backend once, before timing.\n"
            "Targets: cpu (issue 4): O2 <= %.1fx the O0 time per step; cuda (issue 7),\n"
            "simplenet 3 x 4096, batch 512: O2 <= %.2f ms and <= %.2fx the O0 time;\n"
            "--log (cuda): <= %.2fx the O2 fp16 time.\n"
            "\n",
            MAX_BATCHES, O2_CPU_TARGET, O2_GPU_TIME * 1e3, O2_GPU_RATIO, LOG_TARGET);
    cli_print_options(out, bench_train_options, 17);
}

/* ---- the batches --------------------------------------------------------------------- */
static int load_batches(tbench *t)
{
    const net_def *net = &t->net;
    const size_t want = t->n_batches * t->batch;
    char why[512];
    int rc;
    if (net->tokens) { /* a language model: windows of its context of the fortunes text */
        ds_text_options to;
        memset(&to, 0, sizeof to);
        to.context = net->tokens;
        to.subset = want;
        rc = ds_load_text(t->data_dir, DS_TRAIN, &to, &t->ds, why, sizeof why);
    } else if (net->loss == NET_MSE) {
        ds_synthetic_options so;
        memset(&so, 0, sizeof so);
        so.count = want;
        so.in_dim = net->in_c;
        so.out_dim = net->outputs;
        so.seed = 1;
        so.rule = DS_TARGETS_INDEPENDENT;
        rc = ds_synthetic(&so, &t->ds, why, sizeof why);
    } else {
        ds_options d = ds_options_default();
        d.pad = net->in_h == 32 ? 2 : 0;
        d.subset = want;
        rc = ds_load_fashion_mnist(t->data_dir, DS_TRAIN, &d, &t->ds, why, sizeof why);
    }
    if (rc != DS_OK)
        return cli_error(rc == DS_ENOMEM || rc == DS_EIO ? CLI_EFAIL : CLI_EINPUT, "%s%s", why,
                         rc != DS_ENOENT ? ""
                         : net->tokens   ? " (install fortunes or give --data DIR)"
                                         : " (install dataset-fashion-mnist or give --data DIR)");
    const ds_dataset *ds = t->ds;
    if (ds->features != net->in_c * net->in_h * net->in_w)
        return cli_error(CLI_EINPUT, "the data has %zu features per sample, %s wants %zu",
                         ds->features, net->name, net->in_c * net->in_h * net->in_w);
    if (ds->count < t->batch)
        return cli_error(CLI_EINPUT, "--batch %zu is larger than the %zu training samples",
                         t->batch, ds->count);
    /* fewer batches than asked when the data set is small */
    t->n_batches = ds->count / t->batch;
    if (t->n_batches > MAX_BATCHES) t->n_batches = MAX_BATCHES;
    const size_t n = t->n_batches * t->batch;
    size_t *idx = malloc(n * sizeof *idx);
    t->x = malloc(n * ds->features * sizeof *t->x);
    if (ds->target_dim) t->targets = malloc(n * ds->target_dim * sizeof *t->targets);
    if (ds->label_dim) t->labels = malloc(n * ds->label_dim * sizeof *t->labels);
    if (!idx || !t->x || (ds->target_dim && !t->targets) || (ds->label_dim && !t->labels)) {
        free(idx);
        return cli_error(CLI_EFAIL, "out of memory for %zu samples", n);
    }
    for (size_t i = 0; i < n; i++)
        idx[i] = i;
    rc = ds_gather(ds, idx, n, t->x, t->labels, t->targets, why, sizeof why);
    free(idx);
    if (rc != DS_OK) return cli_error(CLI_EFAIL, "%s", why);
    ak_backend *b = t->b;
    const size_t x_bytes = n * ds->features * sizeof *t->x;
    rc = ak_alloc(b, x_bytes, (void **)&t->dev_x);
    if (!rc) rc = ak_to_device(b, t->dev_x, t->x, x_bytes);
    if (!rc && t->targets) {
        const size_t bytes = n * ds->target_dim * sizeof *t->targets;
        rc = ak_alloc(b, bytes, (void **)&t->dev_targets);
        if (!rc) rc = ak_to_device(b, t->dev_targets, t->targets, bytes);
    }
    if (!rc && t->labels) {
        const size_t bytes = n * ds->label_dim * sizeof *t->labels;
        rc = ak_alloc(b, bytes, (void **)&t->dev_labels);
        if (!rc) rc = ak_to_device(b, t->dev_labels, t->labels, bytes);
    }
    if (rc) return cli_error(CLI_EFAIL, "copying the batches to the backend: %s", ak_error_text(b));
    return CLI_OK;
}

/* ---- one mode ------------------------------------------------------------------------- */
static void run_free(tbench *t, tb_run *r)
{
    ak_free(t->b, r->scaler);
    ak_free(t->b, r->opt_state);
    ak_free(t->b, r->found_inf);
    ak_free(t->b, r->stats);
    free(r->stats_host);
    model_free(r->m);
    memset(r, 0, sizeof *r);
}

/* The model, optimizer and scaler of one mode, as `ampscope train` sets
 * them up by default. */
static int run_setup(tbench *t, const tb_mode *md, tb_run *r)
{
    const prec_mode mode = md->mode;
    const ak_dtype low = md->low;
    char why[512];
    memset(r, 0, sizeof *r);
    prec_options po;
    prec_options_default(&po, mode, low);
    po.tf32 = md->tf32;
    prec_plan plan;
    prec_plan_make(&po, &t->net, &plan);
    if (model_create(t->b, &t->net, &plan, t->batch, &r->m, why, sizeof why) != 0)
        return cli_error(CLI_EFAIL, "building %s: %s", t->net.name, why);
    /* train's defaults (train_options.c, train_setup.c): the MindSpore
     * tutorial's momentum for lenet5, nanoGPT's AdamW for the transformer */
    const bool momentum = strcmp(t->net.name, "lenet5") == 0;
    const bool adamw = t->net.tokens > 0;
    memset(&r->opt, 0, sizeof r->opt);
    r->opt.kind = adamw ? AK_OPT_ADAMW : momentum ? AK_OPT_MOMENTUM : AK_OPT_SGD;
    r->opt.lr = t->net.loss == NET_MSE ? 1e-4f : adamw ? 1e-3f : 0.01f;
    r->opt.momentum = momentum ? 0.9f : 0.0f;
    r->opt.beta1 = 0.9f;
    r->opt.beta2 = 0.999f;
    r->opt.eps = 1e-8f;
    r->opt.round = ak_rounding_rne();
    const bool scaled = mode != PREC_O0 && low == AK_F16;
    ak_scaler_preset(scaled ? "pytorch" : "none", &r->scaler_cfg, NULL, 0);
    ak_scaler_state host;
    ak_scaler_init(&r->scaler_cfg, &host);
    int rc = model_alloc_optimizer(r->m, momentum || adamw, adamw);
    if (!rc) rc = model_init_weights(r->m, 1);
    if (!rc) rc = ak_alloc(t->b, sizeof *r->scaler, (void **)&r->scaler);
    if (!rc) rc = ak_alloc(t->b, sizeof *r->opt_state, (void **)&r->opt_state);
    if (!rc) rc = ak_alloc(t->b, sizeof(float), (void **)&r->found_inf);
    if (!rc) rc = ak_to_device(t->b, r->scaler, &host, sizeof host);
    if (!rc) rc = ak_zero(t->b, r->opt_state, sizeof *r->opt_state);
    const size_t n_stats = (size_t)t->net.n_layers * REC_KINDS;
    if (!rc && md->log) {
        rc = ak_alloc(t->b, n_stats * sizeof *r->stats, (void **)&r->stats);
        r->stats_host = malloc(n_stats * sizeof *r->stats_host);
        if (!rc && !r->stats_host) return cli_error(CLI_EFAIL, "out of memory");
    }
    if (rc)
        return cli_error(CLI_EFAIL, "preparing %s %s: %s", prec_mode_name(mode), ak_dtype_name(low),
                         ak_error_text(t->b));
    return CLI_OK;
}

/* One training step on gathered batch k (train_step.c's train_step, steps 1-5
 * and 7-9).  Returns an ak status. */
static int run_step(tbench *t, tb_run *r, size_t k)
{
    ak_backend *b = t->b;
    model *m = r->m;
    const ds_dataset *ds = t->ds;
    const size_t rows = t->batch, first = k * rows;
    int rc =
        ak_copy(b, m->x.data, t->dev_x + first * ds->features, rows * ds->features * sizeof(float));
    if (!rc && t->dev_labels)
        rc = ak_copy(b, m->labels, t->dev_labels + first * ds->label_dim,
                     rows * ds->label_dim * sizeof(int32_t));
    if (!rc && t->dev_targets)
        rc = ak_copy(b, m->target.data, t->dev_targets + first * ds->target_dim,
                     rows * ds->target_dim * sizeof(float));
    if (!rc) rc = ak_zero(b, r->found_inf, sizeof(float));
    if (!rc) rc = model_forward_backward(m, rows, &r->scaler->scale);
    if (!rc && r->stats) { /* --log: what train's step 6 computes, read back every step */
        const size_t n_stats = (size_t)t->net.n_layers * REC_KINDS;
        rc = ak_zero(b, r->stats, n_stats * sizeof *r->stats);
        if (!rc) rc = model_stats(m, rows, (fpe_format_id)m->plan.low, r->stats);
        if (!rc) rc = ak_to_host(b, r->stats_host, r->stats, n_stats * sizeof *r->stats);
    }
    ak_tensor grads[MODEL_MAX_PARAMS];
    const int n = model_grads(m, grads);
    if (!rc) rc = ak_unscale_check(b, grads, (size_t)n, &r->scaler->inv_scale, r->found_inf);
    if (!rc) rc = ak_loss_scale_update(b, &r->scaler_cfg, r->scaler, r->found_inf);
    if (!rc) rc = ak_opt_step_begin(b, &r->opt, r->opt_state, &r->scaler->skip);
    for (int i = 0; i < m->n_params && !rc; i++) {
        model_param *p = &m->params[i];
        ak_param ap;
        ap.master = p->w32;
        ap.model = p->wlow;
        ap.grad = p->grad;
        ap.m = p->m;
        ap.v = p->v;
        rc = ak_update(b, &r->opt, &ap, r->opt_state, &r->scaler->skip, NULL);
        r->opt.round.index += p->n;
    }
    return rc;
}

static int time_mode(tbench *t, const tb_mode *md, tb_result *out)
{
    const prec_mode mode = md->mode;
    const ak_dtype low = md->low;
    tb_run r;
    int rc = run_setup(t, md, &r);
    if (rc) {
        run_free(t, &r);
        return rc;
    }
    /* ak errors of the steps surface at the latest at a sync (cuda) */
    const int64_t total = t->warmup + t->steps;
    int ak = AK_OK;
    int64_t step = 0;
    double t0 = 0;
    for (; step < total && ak == AK_OK; step++) {
        if (step == t->warmup) {
            ak = ak_sync(t->b);
            t0 = t->cpu_clock ? ut_cpu_seconds() : ut_seconds();
        }
        if (ak == AK_OK) ak = run_step(t, &r, (size_t)step % t->n_batches);
    }
    if (ak == AK_OK) ak = ak_sync(t->b);
    const double t1 = t->cpu_clock ? ut_cpu_seconds() : ut_seconds();
    ak_scaler_state st;
    if (ak == AK_OK) ak = ak_to_host(t->b, &out->final_loss, r.m->loss, sizeof(float));
    if (ak == AK_OK) ak = ak_to_host(t->b, &st, r.scaler, sizeof st);
    if (ak != AK_OK) {
        rc = cli_error(CLI_EFAIL, "%s %s, step %lld of %lld: %s", prec_mode_name(mode),
                       ak_dtype_name(low), (long long)step, (long long)total, ak_error_text(t->b));
    } else {
        out->seconds_per_step = (t1 - t0) / (double)t->steps;
        out->skipped = st.skipped;
    }
    run_free(t, &r);
    return rc;
}

/* ---- output ------------------------------------------------------------------------- */
static void print_header(const tbench *t)
{
    if (t->csv) {
        printf("backend,device,net,mode,dtype,loss_scale,batch,steps,seconds_per_step,"
               "samples_per_second,baseline,ratio,target,status,skipped,final_loss\n");
        return;
    }
    printf("ampscope bench train: %s on %s (%s); batch %zu, %lld steps per mode after %lld "
           "warm-up, %zu distinct batches; %s time\n",
           t->net.name, ak_backend_name(t->b), ak_device_name(t->b), t->batch, (long long)t->steps,
           (long long)t->warmup, t->n_batches, t->cpu_clock ? "cpu" : "wall");
    if (ak_backend_kind(t->b) == AK_CPU)
        printf("ratio = time per step / the baseline's; target (cpu): O2 <= %.1f\n\n",
               O2_CPU_TARGET);
    else
        printf("ratio = time per step / the baseline's; targets (cuda, simplenet 3 x 4096, batch "
               "512): O2 <= %.2f and <= %.2f ms; O2+log <= %.2f\n\n",
               O2_GPU_RATIO, O2_GPU_TIME * 1e3, LOG_TARGET);
    printf("%-6s %-5s %-8s %12s %10s %-8s %6s %-7s %-6s %7s %s\n", "mode", "dtype", "scale",
           "time/step", "samples/s", "baseline", "ratio", "target", "status", "skipped",
           "final loss");
}

/* Issue 7's cuda targets hold for its configuration only. */
static bool issue7_config(const tbench *t)
{
    return strcmp(t->net.name, "simplenet") == 0 && t->net.n_layers == 5 &&
           t->net.layers[0].out_c == 4096 && t->batch == 512;
}

/* A row's target (0: none) and whether it is met. */
static double row_target(const tbench *t, const tb_mode *md, double ratio, double seconds,
                         const char **status)
{
    double target = 0;
    bool met = false;
    if (md->log) {
        if (ak_backend_kind(t->b) != AK_CPU) {
            target = LOG_TARGET;
            met = ratio <= target;
        }
    } else if (md->mode == PREC_O2 && ak_backend_kind(t->b) == AK_CPU) {
        target = O2_CPU_TARGET;
        met = ratio <= target;
    } else if (md->mode == PREC_O2 && issue7_config(t)) {
        target = O2_GPU_RATIO;
        met = ratio <= target && seconds <= O2_GPU_TIME;
    }
    *status = target == 0 ? "" : met ? "pass" : "miss";
    return target;
}

static void print_row(const tbench *t, const tb_mode *md, const tb_result *r, double baseline)
{
    const prec_mode mode = md->mode;
    const double ratio = r->seconds_per_step / baseline;
    const char *status;
    const double target_value = row_target(t, md, ratio, r->seconds_per_step, &status);
    const char *dtype = md->tf32 ? "tf32" : mode == PREC_O0 ? "fp32" : ak_dtype_name(md->low);
    const char *scale = mode != PREC_O0 && md->low == AK_F16 ? "pytorch" : "none";
    const char *mode_name = md->log ? "O2+log" : prec_mode_name(mode);
    const char *base = md->log ? "O2" : mode == PREC_O0 && !md->tf32 ? "" : "O0";
    const double rate = (double)t->batch / r->seconds_per_step;
    char target[16] = "";
    if (target_value > 0) snprintf(target, sizeof target, "<=%.2f", target_value);
    if (t->csv) {
        printf("%s,\"%s\",%s,%s,%s,%s,%zu,%lld,%.6g,%.6g,%s,%.4f,%s,%s,%lld,%.9g\n",
               ak_backend_name(t->b), ak_device_name(t->b), t->net.name, mode_name, dtype, scale,
               t->batch, (long long)t->steps, r->seconds_per_step, rate, base, ratio,
               target_value > 0 ? target + 2 : "", status, (long long)r->skipped,
               (double)r->final_loss);
    } else {
        char time_text[24];
        if (r->seconds_per_step < 1e-3)
            snprintf(time_text, sizeof time_text, "%.1f us", r->seconds_per_step * 1e6);
        else
            snprintf(time_text, sizeof time_text, "%.3f ms", r->seconds_per_step * 1e3);
        printf("%-6s %-5s %-8s %12s %10.4g %-8s %6.2f %-7s %-6s %7lld %.6g\n", mode_name, dtype,
               scale, time_text, rate, base, ratio, target, status, (long long)r->skipped,
               (double)r->final_loss);
    }
    fflush(stdout);
}

int bench_train(int argc, char **argv)
{
    cli_set_context("bench train");
    bench_train_args args;
    memset(&args, 0, sizeof args);
    args.backend = "auto";
    args.net = "mlp";
    bool want_help;
    const int prc = cli_parse_options(bench_train_options, &args, argc, argv, &want_help, NULL);
    if (prc) return prc;
    if (want_help) {
        help(stdout);
        return CLI_OK;
    }
    const char *backend = args.backend, *net_name = args.net;
    const bool quick = args.quick;
    const int64_t steps = args.steps, batch = args.batch;
    net_size size = args.size;
    tbench t;
    memset(&t, 0, sizeof t);
    t.csv = args.csv;
    t.tf32_row = args.tf32;
    t.log_row = args.log;
    t.cpu_clock = args.clock == 1;
    t.data_dir = args.data_dir;
    char why[512];
    if (net_build(net_name, &size, &t.net, why, sizeof why) != 0)
        return cli_error(CLI_EINPUT, "%s", why);
    t.steps = steps ? steps : quick ? 10 : 100;
    t.warmup = quick ? 1 : 3;
    t.batch = batch ? (size_t)batch : t.net.loss == NET_MSE ? 512 : t.net.in_h == 32 ? 32 : 64;
    t.n_batches = (size_t)t.steps < MAX_BATCHES ? (size_t)t.steps : MAX_BATCHES;
    t.b = ak_open(backend, why, sizeof why);
    if (!t.b) return cli_error(CLI_EINPUT, "%s", why);
    if (why[0]) fprintf(stderr, "ampscope bench train: %s\n", why);
    int rc = load_batches(&t);
    if (!rc) {
        print_header(&t);
        /* O0 (and O0 tf32), O1-O3 in fp16 and bf16, then O2 fp16 with the statistics */
        tb_mode modes[10];
        size_t n_modes = 0;
        modes[n_modes++] = (tb_mode){PREC_O0, AK_F16, false, false};
        if (t.tf32_row) modes[n_modes++] = (tb_mode){PREC_O0, AK_F16, true, false};
        for (int mode = PREC_O1; mode <= PREC_O3; mode++) {
            modes[n_modes++] = (tb_mode){(prec_mode)mode, AK_F16, false, false};
            modes[n_modes++] = (tb_mode){(prec_mode)mode, AK_BF16, false, false};
        }
        if (t.log_row) modes[n_modes++] = (tb_mode){PREC_O2, AK_F16, false, true};
        double o0 = 0, o2_fp16 = 0;
        for (size_t i = 0; i < n_modes && !rc; i++) {
            const tb_mode *md = &modes[i];
            tb_result r;
            rc = time_mode(&t, md, &r);
            if (rc) break;
            if (i == 0) o0 = r.seconds_per_step;
            if (md->mode == PREC_O2 && md->low == AK_F16 && !md->log) o2_fp16 = r.seconds_per_step;
            print_row(&t, md, &r, md->log ? o2_fp16 : o0);
        }
    }
    ak_free(t.b, t.dev_x);
    ak_free(t.b, t.dev_targets);
    ak_free(t.b, t.dev_labels);
    ak_close(t.b);
    ds_free(t.ds);
    free(t.x);
    free(t.targets);
    free(t.labels);
    return rc;
}
