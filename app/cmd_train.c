/* cmd_train.c: `ampscope train`, training a reference network under a
 * precision mode and a loss-scale policy (train.c), with the record. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "record.h"
#include "train.h"

#ifndef AMPSCOPE_GIT_REVISION
#define AMPSCOPE_GIT_REVISION "unknown"
#endif

static void help(FILE *out)
{
    fprintf(
        out,
        "usage: ampscope train --net NET --mode O0|O1|O2|O3 [--dtype fp16|bf16] --out DIR "
        "[options]\n"
        "\n"
        "Trains a reference network and records what low precision did at every step:\n"
        "DIR/run.json, steps.csv, tensors.csv, updates.csv, hist.csv, eval.csv.\n"
        "\n"
        "the run:\n"
        "  --net NET              simplenet (synthetic data, MSE), lenet5 or mlp (Fashion-MNIST)\n"
        "  --width N, --depth N   simplenet's layer width (4096) and number of layers (3)\n"
        "  --mode M               O0 fp32; O1 GEMM/conv in --dtype; O2 model in --dtype with\n"
        "                         fp32 master weights; O3 everything in --dtype (default O0)\n"
        "  --dtype T              fp16 (default) or bf16\n"
        "  --white-list OPS       ops cast to --dtype in O1 (linear, conv, relu, maxpool)\n"
        "  --black-list OPS       ops kept in fp32\n"
        "  --layer-precision L=fp32,...  pin layers to fp32 (as MindSpore's to_float)\n"
        "  --epochs N, --steps N  length (steps overrides epochs; default 1 epoch)\n"
        "  --batch N              default: simplenet 512, lenet5 32, mlp 64\n"
        "  --subset N             the first N training samples only\n"
        "  --samples N            simplenet: synthetic samples per epoch (default 8 batches)\n"
        "  --seed N               weights, shuffling and data (default 1)\n"
        "  --backend B            cpu, cuda or auto (default)\n"
        "  --data DIR             Fashion-MNIST IDX files (default Debian's "
        "dataset-fashion-mnist)\n"
        "optimizer:\n"
        "  --optimizer O          sgd (default; momentum 0.9 for lenet5), momentum, adam, adamw\n"
        "  --lr X                 default: simplenet 1e-4, lenet5 and mlp 0.01\n"
        "  --momentum X, --dampening X, --nesterov on|off, --weight-decay X\n"
        "  --beta1 X, --beta2 X, --eps X\n"
        "  --accumulate N         micro-batches per update (gradients summed, then divided by N;\n"
        "                         unscaled and checked once per update)\n"
        "  --clip-norm X          clip the unscaled gradients' global 2-norm to X (as PyTorch's\n"
        "                         clip_grad_norm_)\n"
        "  --stochastic-rounding on|off   round low-precision weight writes stochastically\n"
        "loss scaling:\n"
        "  --loss-scale P         none (default), fixed, dynamic, or a preset: %s\n"
        "  --scale S              fixed: the scale\n"
        "  --init-scale S, --growth-factor F, --backoff-factor F, --scale-factor F (both),\n"
        "  --scale-window W, --hysteresis H, --consecutive-hysteresis on|off,\n"
        "  --min-scale S, --max-scale S, --refuse-nonfinite-growth on|off,\n"
        "  --scale-rule R         whose counter and hysteresis semantics: pytorch,\n"
        "                         mindspore-amp, deepspeed, megatron, paddle (set by presets)\n"
        "  --drop-overflow-update on|off\n"
        "  --diverge-after K      steps in a row at --min-scale that end the run (default 100)\n"
        "the record:\n"
        "  --stats-every N        statistics of every layer's tensors (default 10; 0 never)\n"
        "  --hist-every N         log2 histograms (default 100; 0 never)\n"
        "  --trace-every N        the gradient trace (trace.csv, trace_hist.csv: max |g| and the\n"
        "                         log2 histogram of all gradients, for `ampscope recommend`;\n"
        "                         default 1; 0 never)\n"
        "  --stats-dtype T        the format the statistics are for (default --dtype; lets an\n"
        "                         O0 run say what fp16 would have done)\n"
        "  --no-progress          no progress line on a terminal\n"
        "checkpoints:\n"
        "  --checkpoint-every N   also write DIR/checkpoint.safetensors every N steps (it is\n"
        "                         written at each epoch's end, at the end and on SIGINT/SIGTERM)\n"
        "  --resume DIR           continue the run in DIR bit for bit from its checkpoint, with\n"
        "                         the options of its run.json (--steps/--epochs may extend it)\n"
        "  --init FILE            start from the weights in a safetensors file (PyTorch names)\n"
        "testing:\n"
        "  --fault SPEC           inject numerical faults: KIND@STEPS[+KIND@STEPS...], STEPS\n"
        "                         'all' or a list of N and N-M (steps as steps.csv numbers them);\n"
        "                         KIND nonfinite-loss (the loss is NaN before scaling), inf-loss\n"
        "                         (+inf), overflow-grads (the scaled gradients overflow, the loss\n"
        "                         stays finite), zero-grads (the gradients are 0: a clean step\n"
        "                         whatever the scale).  Kept in run.json: a resumed run keeps it\n"
        "\n"
        "exit status: 0 done, 2 bad input (nothing trained), 3 diverged (the loss in O0, or the\n"
        "loss scale: grown to inf, at its floor, DeepSpeed's minimum; run.json's end_reason\n"
        "says which), 1 anything else;\n"
        "on SIGINT/SIGTERM the current step finishes and the record is complete up to it.\n",
        ak_scaler_preset_names());
}

/* ---- values ------------------------------------------------------------------------- */
/* A finite real in [min, max] (open at min when open_min). */
static int want_real(const char *opt, const char *v, double min, double max, bool open_min,
                     float *out)
{
    double d;
    if (cli_parse_decimal(v, &d) != 0 || !isfinite(d) || d < min || d > max ||
        (open_min && d == min))
        return cli_error(CLI_EINPUT, "%s wants a number in %c%g, %g], got '%s'", opt,
                         open_min ? '(' : '[', min, max, v);
    *out = (float)d;
    return CLI_OK;
}

static int want_onoff(const char *opt, const char *v, bool *out)
{
    if (strcmp(v, "on") == 0)
        *out = true;
    else if (strcmp(v, "off") == 0)
        *out = false;
    else
        return cli_error(CLI_EINPUT, "%s wants on or off, got '%s'", opt, v);
    return CLI_OK;
}

/* The scaler options are applied after the preset, whatever their order. */
typedef struct scaler_overrides {
    const char *preset;
    const char *scale, *init, *growth, *backoff, *factor, *window, *hysteresis, *consecutive, *min,
        *max, *refuse, *drop, *rule;
} scaler_overrides;

static int apply_scaler(const scaler_overrides *s, ak_scaler_config *cfg)
{
    char why[512];
    if (ak_scaler_preset(s->preset ? s->preset : "none", cfg, why, sizeof why) != 0)
        return cli_error(CLI_EINPUT, "%s", why);
    int rc = CLI_OK;
    int64_t n;
    if (s->scale) {
        if (cfg->kind != AK_SCALER_FIXED)
            return cli_error(CLI_EINPUT, "--scale needs --loss-scale fixed");
        rc = want_real("--scale", s->scale, 0, 3.4e38, true, &cfg->init_scale);
    }
    if (s->rule) {
        ak_scaler_rule rule;
        if (ak_scaler_rule_from_name(s->rule, &rule) != 0)
            return cli_error(CLI_EINPUT,
                             "--scale-rule wants pytorch, mindspore-amp, deepspeed, megatron or "
                             "paddle, got '%s'",
                             s->rule);
        cfg->rule = rule;
    }
    if (!rc && s->init) rc = want_real("--init-scale", s->init, 0, 3.4e38, true, &cfg->init_scale);
    if (!rc && s->factor) {
        rc = want_real("--scale-factor", s->factor, 1, 1e30, true, &cfg->growth_factor);
        if (!rc) cfg->backoff_factor = 1.0f / cfg->growth_factor;
    }
    if (!rc && s->growth)
        rc = want_real("--growth-factor", s->growth, 1, 1e30, true, &cfg->growth_factor);
    if (!rc && s->backoff)
        rc = want_real("--backoff-factor", s->backoff, 0, 1, true, &cfg->backoff_factor);
    if (!rc && s->window && !(rc = cli_want_int("--scale-window", s->window, 1, INT32_MAX, &n)))
        cfg->window = (int32_t)n;
    if (!rc && s->hysteresis &&
        !(rc = cli_want_int("--hysteresis", s->hysteresis, 1, INT32_MAX, &n)))
        cfg->hysteresis = (int32_t)n;
    if (!rc && s->consecutive)
        rc = want_onoff("--consecutive-hysteresis", s->consecutive, &cfg->consecutive_hysteresis);
    if (!rc && s->min) rc = want_real("--min-scale", s->min, 0, 3.4e38, false, &cfg->min_scale);
    if (!rc && s->max) rc = want_real("--max-scale", s->max, 0, 3.4e38, true, &cfg->max_scale);
    if (!rc && s->refuse)
        rc = want_onoff("--refuse-nonfinite-growth", s->refuse, &cfg->refuse_nonfinite_growth);
    if (!rc && s->drop)
        rc = want_onoff("--drop-overflow-update", s->drop, &cfg->drop_overflow_update);
    if (!rc && (s->window || s->hysteresis || s->growth || s->backoff || s->factor || s->init) &&
        cfg->kind != AK_SCALER_DYNAMIC)
        return cli_error(CLI_EINPUT,
                         "the dynamic-scaler options need --loss-scale dynamic or a preset");
    if (!rc && ak_scaler_validate(cfg, why, sizeof why) != 0)
        return cli_error(CLI_EINPUT, "%s", why);
    return rc;
}

static int parse_and_run(int argc, char **argv, const char *resume_dir);

/* --resume DIR: the options of DIR/run.json, then the ones given now
 * (which win), parsed as one command line. */
static int resume(int argc, char **argv, const char *dir)
{
    char path[4096], why[512];
    snprintf(path, sizeof path, "%s/%s", dir, REC_RUN_JSON);
    rec_run *r = rec_run_read(path, why, sizeof why);
    if (!r) return cli_error(CLI_EINPUT, "--resume %s: %s", dir, why);
    const size_t n = rec_run_option_count(r);
    /* per recorded option: "--key" and its value as text */
    typedef struct {
        char key[72], value[4096]; /* a path fits */
    } text_option;
    char **args = calloc(2 * n + (size_t)argc + 1, sizeof *args);
    text_option *text = calloc(n + 1, sizeof *text);
    int rc = CLI_OK, k = 0;
    if (!args || !text)
        rc = cli_error(CLI_EFAIL, "out of memory");
    else
        args[k++] = argv[0];
    for (size_t i = 0; i < n && rc == CLI_OK; i++) {
        rec_option opt;
        rec_run_option_at(r, i, &opt);
        /* not options: the record's notes and its end */
        if (strcmp(opt.key, "out") == 0 || strcmp(opt.key, "resume") == 0 ||
            strcmp(opt.key, "end_reason") == 0 || strcmp(opt.key, "scaler_floor") == 0 ||
            strcmp(opt.key, "scaler_nonfinite_growth") == 0)
            continue;
        snprintf(text[i].key, sizeof text[i].key, "--%s", opt.key);
        if (opt.type == REC_OPT_STRING)
            snprintf(text[i].value, sizeof text[i].value, "%s", opt.string);
        else if (opt.type == REC_OPT_INT)
            snprintf(text[i].value, sizeof text[i].value, "%lld", (long long)opt.integer);
        else
            snprintf(text[i].value, sizeof text[i].value, "%.17g",
                     opt.real); /* reads back exactly */
        args[k++] = text[i].key;
        args[k++] = text[i].value;
    }
    /* then what was given now, which wins */
    for (int i = 1; i < argc && rc == CLI_OK; i++) {
        if (strcmp(argv[i], "--resume") == 0) {
            i++;
            continue;
        }
        if (strncmp(argv[i], "--resume=", 9) == 0) continue;
        args[k++] = argv[i];
    }
    if (rc == CLI_OK) rc = parse_and_run(k, args, dir);
    free(text);
    free(args);
    rec_run_free(r);
    return rc;
}

int cmd_train(int argc, char **argv)
{
    cli_set_context("train");
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) break;
        const char *v;
        int m = strncmp(argv[i], "--resume", 8) == 0
                    ? cli_option_value(argc, argv, &i, "resume", &v)
                    : 0;
        if (m < 0) return m;
        if (m > 0) return resume(argc, argv, v);
    }
    return parse_and_run(argc, argv, NULL);
}

static int parse_and_run(int argc, char **argv, const char *resume_dir)
{
    train_options o;
    train_options_default(&o);
    o.version = AMPSCOPE_VERSION;
    o.git_revision = AMPSCOPE_GIT_REVISION;
    o.progress = true;
    o.argc = argc;
    o.argv = argv;
    scaler_overrides sc;
    memset(&sc, 0, sizeof sc);
    const char *mode = "O0", *dtype = "fp16", *optimizer = NULL, *stats_dtype = NULL, *sr = NULL;
    const char *nesterov = NULL;
    bool lr_given = false, momentum_given = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        if (cli_is_help(a)) {
            help(stdout);
            return CLI_OK;
        }
        if (strcmp(a, "--no-progress") == 0) {
            o.progress = false;
            continue;
        }
        /* every other option takes a value */
        char key[64];
        const int m = cli_next_option(argc, argv, &i, key, sizeof key, &v);
        if (m < 0) return m;
        int64_t n = 0;
        int rc = CLI_OK;
#define IS(s) (strcmp(key, s) == 0)
        if (IS("net"))
            o.net = v;
        else if (IS("mode"))
            mode = v;
        else if (IS("dtype"))
            dtype = v;
        else if (IS("out"))
            o.out_dir = v;
        else if (IS("backend"))
            o.backend = v;
        else if (IS("data"))
            o.data_dir = v;
        else if (IS("white-list"))
            o.white_list = v;
        else if (IS("black-list"))
            o.black_list = v;
        else if (IS("layer-precision"))
            o.pin_spec = v;
        else if (IS("optimizer"))
            optimizer = v;
        else if (IS("stats-dtype"))
            stats_dtype = v;
        else if (IS("stochastic-rounding"))
            sr = v;
        else if (IS("nesterov"))
            nesterov = v;
        else if (IS("epochs"))
            rc = cli_want_int(a, v, 1, 1000000, &o.epochs);
        else if (IS("steps"))
            rc = cli_want_int(a, v, 1, INT64_C(1) << 40, &o.steps);
        else if (IS("batch")) {
            if (!(rc = cli_want_int(a, v, 1, 1 << 20, &n))) o.batch = (size_t)n;
        } else if (IS("subset")) {
            if (!(rc = cli_want_int(a, v, 1, INT64_C(1) << 32, &n))) o.subset = (size_t)n;
        } else if (IS("samples")) {
            if (!(rc = cli_want_int(a, v, 1, INT64_C(1) << 24, &n))) o.samples = (size_t)n;
        } else if (IS("width")) {
            if (!(rc = cli_want_int(a, v, 1, 65536, &n))) o.size.width = (size_t)n;
        } else if (IS("depth")) {
            if (!(rc = cli_want_int(a, v, 1, 16, &n))) o.size.depth = (int)n;
        } else if (IS("seed")) {
            if (!(rc = cli_want_int(a, v, 0, INT64_MAX, &n))) o.seed = (uint64_t)n;
        } else if (IS("stats-every"))
            rc = cli_want_int(a, v, 0, INT64_C(1) << 40, &o.stats_every);
        else if (IS("hist-every"))
            rc = cli_want_int(a, v, 0, INT64_C(1) << 40, &o.hist_every);
        else if (IS("trace-every"))
            rc = cli_want_int(a, v, 0, INT64_C(1) << 40, &o.trace_every);
        else if (IS("diverge-after"))
            rc = cli_want_int(a, v, 0, INT64_C(1) << 40, &o.diverge_after);
        else if (IS("lr")) {
            rc = want_real(a, v, 0, 1e6, true, &o.opt.lr);
            lr_given = true;
        } else if (IS("momentum")) {
            rc = want_real(a, v, 0, 1, false, &o.opt.momentum);
            momentum_given = true;
        } else if (IS("dampening"))
            rc = want_real(a, v, 0, 1, false, &o.opt.dampening);
        else if (IS("weight-decay"))
            rc = want_real(a, v, 0, 1e6, false, &o.opt.weight_decay);
        else if (IS("beta1"))
            rc = want_real(a, v, 0, 0.99999994, false, &o.opt.beta1);
        else if (IS("beta2"))
            rc = want_real(a, v, 0, 0.99999994, false, &o.opt.beta2);
        else if (IS("eps"))
            rc = want_real(a, v, 0, 1, true, &o.opt.eps);
        else if (IS("loss-scale"))
            sc.preset = v;
        else if (IS("scale"))
            sc.scale = v;
        else if (IS("init-scale"))
            sc.init = v;
        else if (IS("growth-factor"))
            sc.growth = v;
        else if (IS("backoff-factor"))
            sc.backoff = v;
        else if (IS("scale-factor"))
            sc.factor = v;
        else if (IS("scale-window"))
            sc.window = v;
        else if (IS("hysteresis"))
            sc.hysteresis = v;
        else if (IS("consecutive-hysteresis"))
            sc.consecutive = v;
        else if (IS("min-scale"))
            sc.min = v;
        else if (IS("max-scale"))
            sc.max = v;
        else if (IS("refuse-nonfinite-growth"))
            sc.refuse = v;
        else if (IS("drop-overflow-update"))
            sc.drop = v;
        else if (IS("scale-rule"))
            sc.rule = v;
        else if (IS("init"))
            o.init_path = v;
        else if (IS("accumulate"))
            rc = cli_want_int(a, v, 1, 65536, &o.accumulate);
        else if (IS("clip-norm"))
            rc = want_real(a, v, 0, 3.4e38, true, &o.clip_norm);
        else if (IS("fault")) {
            char why[512];
            if (train_fault_parse(v, o.faults, &o.n_faults, why, sizeof why) != 0)
                return cli_error(CLI_EINPUT, "%s", why);
        } else if (IS("checkpoint-every"))
            rc = cli_want_int(a, v, 0, INT64_C(1) << 40, &o.checkpoint_every);
        else
            return cli_error(CLI_EINPUT, "unknown option '--%s' (see 'ampscope train --help')",
                             key);
#undef IS
        if (rc) return rc;
    }
    if (resume_dir) {
        o.out_dir = resume_dir;
        o.resume = true;
    }
    if (!o.out_dir) return cli_error(CLI_EINPUT, "--out DIR is required");
    const int pm = prec_mode_from_name(mode);
    if (pm < 0) return cli_error(CLI_EINPUT, "--mode wants O0, O1, O2 or O3, got '%s'", mode);
    ak_dtype low;
    int rc = cli_want_dtype("--dtype", dtype, false, &low);
    if (rc) return rc;
    prec_options_default(&o.prec, (prec_mode)pm, low);
    if (stats_dtype &&
        (rc = cli_want_dtype("--stats-dtype", stats_dtype, true, &o.stats_dtype)) != 0)
        return rc;
    if (optimizer) {
        if (strcmp(optimizer, "sgd") == 0)
            o.opt.kind = AK_OPT_SGD;
        else if (strcmp(optimizer, "momentum") == 0)
            o.opt.kind = AK_OPT_MOMENTUM;
        else if (strcmp(optimizer, "adam") == 0)
            o.opt.kind = AK_OPT_ADAM;
        else if (strcmp(optimizer, "adamw") == 0)
            o.opt.kind = AK_OPT_ADAMW;
        else
            return cli_error(CLI_EINPUT, "--optimizer wants sgd, momentum, adam or adamw, got '%s'",
                             optimizer);
    } else if (strcmp(o.net, "lenet5") == 0) {
        o.opt.kind = AK_OPT_MOMENTUM; /* the MindSpore tutorial: Momentum(lr 0.01, 0.9) */
    }
    if (o.opt.kind == AK_OPT_MOMENTUM && !momentum_given) o.opt.momentum = 0.9f;
    if (nesterov && (rc = want_onoff("--nesterov", nesterov, &o.opt.nesterov)) != 0) return rc;
    bool stochastic = false;
    if (sr && (rc = want_onoff("--stochastic-rounding", sr, &stochastic)) != 0) return rc;
    o.opt.round.mode = stochastic ? FPE_SR_PROP : FPE_RNE;
    o.opt.round.seed = o.seed;
    o.opt.round.stream = 1;
    if (!lr_given) o.opt.lr = -1;
    if ((rc = apply_scaler(&sc, &o.scaler)) != 0) return rc;
    o.scaler_name = sc.preset ? sc.preset : "none";

    char msg[1024];
    rc = train_run(&o, msg, sizeof msg);
    switch (rc) {
    case TRAIN_OK: return CLI_OK;
    case TRAIN_EINPUT: return cli_error(CLI_EINPUT, "%s", msg);
    case TRAIN_DIVERGED: return cli_error(CLI_EDIVERGED, "%s", msg);
    default: return cli_error(CLI_EFAIL, "%s", msg);
    }
}
