/* train_options.c: train's option table, one option set by name from its
 * text, and the defaults resolved at the end (see train_options.h). */
#include "train_options.h"

#include <stdio.h>
#include <string.h>

#include "util.h"

#include "amp_lists.h"
#include "loss_scale.h"
#include "net_size_options.h"

_Static_assert(sizeof(int32_t) == sizeof(int), "the scaler's window and hysteresis are OPT_INT");

/* A refusal: the message (ut_fail), then this module's status. */
#define fail(msg, msg_len, ...) ut_fail(msg, msg_len, TRAIN_EINPUT, __VA_ARGS__)

static int set_no_progress(const opt_spec *row, void *base, const char *text, char *msg,
                           size_t msg_len)
{
    (void)row, (void)text, (void)msg, (void)msg_len;
    ((train_options *)base)->progress = false;
    return OPT_OK;
}

static int set_fault(const opt_spec *row, void *base, const char *text, char *msg, size_t msg_len)
{
    (void)row;
    train_options *o = base;
    return train_fault_parse(text, o->faults, &o->n_faults, msg, msg_len) != 0 ? OPT_EINPUT
                                                                               : OPT_OK;
}

static const char *const modes[] = {"O0", "O1", "O2", "O3", NULL};
static const char *const low_dtypes[] = {"fp16", "bf16", NULL};
static const char *const stats_dtypes[] = {"fp16", "bf16", "fp32", NULL};
static const char *const embed_accs[] = {"fp32", "low", NULL};
static const char *const amp_presets_names[] = {"pytorch", "apex", "paddle", "mindspore", NULL};
static const char *const optimizers[] = {"sgd", "momentum", "adam", "adamw", NULL};
static const char *const rules[] = {"pytorch",  "mindspore-amp", "deepspeed",
                                    "megatron", "paddle",        "deepspeed-fp16-optimizer",
                                    NULL};

#define F(field)   offsetof(train_options, field)
#define SIZE_AT(f) offsetof(train_options, size.f)
#define STEPS      (INT64_C(1) << 40)

const opt_spec topt_table[] = {
    {.name = "net",
     .kind = OPT_STRING,
     .offset = F(net),
     .metavar = "NET",
     .help = "simplenet (synthetic data, MSE), lenet5, mlp, deepmlp, resnet (Fashion-MNIST)\n"
             "or transformer (fortunes text)",
     .group = "the run:"},
    NET_SIZE_OPTION_ROWS(SIZE_AT),
    {.name = "dropout",
     .kind = OPT_DOUBLE,
     .offset = F(size.dropout),
     .rmin = 0,
     .rmax = 0.9,
     .metavar = "P",
     .help = "transformer: dropout after the embeddings and each residual branch (0: none)"},
    {.name = "embedding-accumulation",
     .kind = OPT_CHOICE,
     .offset = OPT_NO_FIELD,
     .choices = embed_accs,
     .deferred = true,
     .metavar = "A",
     .help = "the embedding backward's sums into rows: fp32 (PyTorch's CUDA kernel)\n"
             "or low (the run's --dtype: frequent tokens' updates are lost)"},
    {.name = "mode",
     .kind = OPT_CHOICE,
     .offset = OPT_NO_FIELD,
     .choices = modes,
     .deferred = true,
     .metavar = "M",
     .help = "O0 fp32; O1 GEMM/conv in --dtype; O2 model in --dtype with\n"
             "fp32 master weights; O3 everything in --dtype (default O0)"},
    {.name = "dtype",
     .kind = OPT_CHOICE,
     .offset = OPT_NO_FIELD,
     .choices = low_dtypes,
     .deferred = true,
     .metavar = "T",
     .help = "fp16 (default) or bf16"},
    {.name = "amp-lists",
     .kind = OPT_CHOICE,
     .offset = OPT_NO_FIELD,
     .choices = amp_presets_names,
     .deferred = true,
     .metavar = "F",
     .help = "a framework's own op lists for --mode: pytorch (autocast),\n"
             "apex, paddle, mindspore; replaces the default lists, then\n"
             "--white-list and --black-list edit them"},
    {.name = "white-list",
     .kind = OPT_STRING,
     .offset = F(white_list),
     .metavar = "OPS",
     .help = "ops cast to --dtype (linear, conv, relu, maxpool, gelu, avgpool,\n"
             "and batchnorm, layernorm, softmax, log_softmax, matmul,\n"
             "embedding, add, dropout, loss); -OP takes OP off the list;\n"
             "repeatable"},
    {.name = "black-list",
     .kind = OPT_STRING,
     .offset = F(black_list),
     .metavar = "OPS",
     .help = "ops kept in fp32; -OP takes OP off the list; repeatable"},
    {.name = "keep-batchnorm-fp32",
     .kind = OPT_ONOFF,
     .offset = OPT_NO_FIELD,
     .deferred = true,
     .label = "--keep-batchnorm-fp32 on|off",
     .help = "BatchNorm's parameters and arithmetic in fp32, its activations\n"
             "in --dtype (default: the --amp-lists framework's for the mode)"},
    {.name = "layer-precision",
     .kind = OPT_STRING,
     .offset = F(pin_spec),
     .label = "--layer-precision L=fp32,...",
     .help = "pin layers to fp32 (as MindSpore's to_float)"},
    {.name = "epochs",
     .kind = OPT_I64,
     .offset = F(epochs),
     .imin = 1,
     .imax = 1000000,
     .label = "--epochs N, --steps N",
     .help = "length (steps overrides epochs; default 1 epoch)"},
    {.name = "steps", .kind = OPT_I64, .offset = F(steps), .imin = 1, .imax = STEPS, .label = ""},
    {.name = "batch",
     .kind = OPT_SIZE,
     .offset = F(batch),
     .imin = 1,
     .imax = 1 << 20,
     .help = "default: simplenet 512, lenet5 32, mlp and deepmlp 64"},
    {.name = "subset",
     .kind = OPT_SIZE,
     .offset = F(subset),
     .imin = 1,
     .imax = INT64_C(1) << 32,
     .help = "the first N training samples only"},
    {.name = "samples",
     .kind = OPT_SIZE,
     .offset = F(samples),
     .imin = 1,
     .imax = 1 << 24,
     .help = "simplenet: synthetic samples per epoch (default 8 batches)"},
    {.name = "seed",
     .kind = OPT_U64,
     .offset = F(seed),
     .imin = 0,
     .imax = INT64_MAX,
     .help = "weights, shuffling and data (default 1)"},
    {.name = "backend",
     .kind = OPT_STRING,
     .offset = F(backend),
     .metavar = "B",
     .help = "cpu, cuda or auto (default)"},
    {.name = "data",
     .kind = OPT_DIR,
     .offset = F(data_dir),
     .help = "Fashion-MNIST IDX files (default Debian's dataset-fashion-mnist)"},

    {.name = "optimizer",
     .kind = OPT_CHOICE,
     .offset = OPT_NO_FIELD,
     .choices = optimizers,
     .deferred = true,
     .metavar = "O",
     .help = "sgd (default; momentum 0.9 for lenet5), momentum, adam, adamw",
     .group = "optimizer:"},
    {.name = "lr",
     .kind = OPT_FLOAT,
     .offset = F(opt.lr),
     .rmin = 0,
     .rmax = 1e6,
     .open_min = true,
     .help = "default: simplenet 1e-4, others 0.01"},
    {.name = "momentum",
     .kind = OPT_FLOAT,
     .offset = F(opt.momentum),
     .rmin = 0,
     .rmax = 1,
     .label = "--momentum X, --dampening X, --nesterov on|off, --weight-decay X"},
    {.name = "dampening",
     .kind = OPT_FLOAT,
     .offset = F(opt.dampening),
     .rmin = 0,
     .rmax = 1,
     .label = ""},
    {.name = "nesterov",
     .kind = OPT_ONOFF,
     .offset = F(opt.nesterov),
     .deferred = true,
     .label = ""},
    {.name = "weight-decay",
     .kind = OPT_FLOAT,
     .offset = F(opt.weight_decay),
     .rmin = 0,
     .rmax = 1e6,
     .label = ""},
    {.name = "beta1",
     .kind = OPT_FLOAT,
     .offset = F(opt.beta1),
     .rmin = 0,
     .rmax = 0.99999994,
     .label = "--beta1 X, --beta2 X, --eps X"},
    {.name = "beta2",
     .kind = OPT_FLOAT,
     .offset = F(opt.beta2),
     .rmin = 0,
     .rmax = 0.99999994,
     .label = ""},
    {.name = "eps",
     .kind = OPT_FLOAT,
     .offset = F(opt.eps),
     .rmin = 0,
     .rmax = 1,
     .open_min = true,
     .label = ""},
    {.name = "accumulate",
     .kind = OPT_I64,
     .offset = F(accumulate),
     .imin = 1,
     .imax = 65536,
     .help = "micro-batches per update (gradients summed, then divided by N;\n"
             "unscaled and checked once per update)"},
    {.name = "clip-norm",
     .kind = OPT_FLOAT,
     .offset = F(clip_norm),
     .rmin = 0,
     .rmax = 3.4e38,
     .open_min = true,
     .help = "clip the unscaled gradients' global 2-norm to X (as PyTorch's\nclip_grad_norm_)"},
    /* the label's trailing space: the help has always had three spaces here */
    {.name = "stochastic-rounding",
     .kind = OPT_ONOFF,
     .offset = OPT_NO_FIELD,
     .deferred = true,
     .label = "--stochastic-rounding on|off ",
     .help = "round low-precision weight writes stochastically"},

    {.name = "loss-scale",
     .kind = OPT_STRING,
     .offset = OPT_NO_FIELD,
     .deferred = true,
     .metavar = "P",
     .help = "none (default), fixed, dynamic, or a preset: %s",
     .help_arg = ak_scaler_preset_names,
     .group = "loss scaling:"},
    {.name = "scale",
     .kind = OPT_FLOAT,
     .offset = F(scaler.init_scale),
     .rmin = 0,
     .rmax = 3.4e38,
     .open_min = true,
     .deferred = true,
     .metavar = "S",
     .help = "fixed: the scale"},
    {.name = "init-scale",
     .kind = OPT_FLOAT,
     .offset = F(scaler.init_scale),
     .rmin = 0,
     .rmax = 3.4e38,
     .open_min = true,
     .deferred = true,
     .label = "--init-scale S, --growth-factor F, --backoff-factor F, --scale-factor F (both),\n"
              "--scale-window W, --hysteresis H, --consecutive-hysteresis on|off,\n"
              "--min-scale S, --max-scale S, --refuse-nonfinite-growth on|off,"},
    {.name = "growth-factor",
     .kind = OPT_DOUBLE,
     .offset = F(scaler.growth_factor),
     .rmin = 1,
     .rmax = 1e30,
     .open_min = true,
     .deferred = true,
     .label = ""},
    {.name = "backoff-factor",
     .kind = OPT_DOUBLE,
     .offset = F(scaler.backoff_factor),
     .rmin = 0,
     .rmax = 1,
     .open_min = true,
     .deferred = true,
     .label = ""},
    {.name = "scale-factor",
     .kind = OPT_DOUBLE,
     .offset = F(scaler.growth_factor),
     .rmin = 1,
     .rmax = 1e30,
     .open_min = true,
     .deferred = true,
     .label = ""},
    {.name = "scale-window",
     .kind = OPT_INT,
     .offset = F(scaler.window),
     .imin = 1,
     .imax = INT32_MAX,
     .deferred = true,
     .label = ""},
    {.name = "hysteresis",
     .kind = OPT_INT,
     .offset = F(scaler.hysteresis),
     .imin = 1,
     .imax = INT32_MAX,
     .deferred = true,
     .label = ""},
    {.name = "consecutive-hysteresis",
     .kind = OPT_ONOFF,
     .offset = F(scaler.consecutive_hysteresis),
     .deferred = true,
     .label = ""},
    {.name = "min-scale",
     .kind = OPT_FLOAT,
     .offset = F(scaler.min_scale),
     .rmin = 0,
     .rmax = 3.4e38,
     .deferred = true,
     .label = ""},
    {.name = "max-scale",
     .kind = OPT_FLOAT,
     .offset = F(scaler.max_scale),
     .rmin = 0,
     .rmax = 3.4e38,
     .open_min = true,
     .deferred = true,
     .label = ""},
    {.name = "refuse-nonfinite-growth",
     .kind = OPT_ONOFF,
     .offset = F(scaler.refuse_nonfinite_growth),
     .deferred = true,
     .label = ""},
    {.name = "scale-rule",
     .kind = OPT_CHOICE,
     .offset = OPT_NO_FIELD,
     .choices = rules,
     .deferred = true,
     .metavar = "R",
     .help =
         "whose counter and hysteresis semantics: pytorch,\n"
         "mindspore-amp, deepspeed, megatron, paddle,\ndeepspeed-fp16-optimizer (set by presets)"},
    {.name = "drop-overflow-update",
     .kind = OPT_ONOFF,
     .offset = F(scaler.drop_overflow_update),
     .deferred = true,
     .label = "--drop-overflow-update on|off"},
    {.name = "diverge-after",
     .kind = OPT_I64,
     .offset = F(diverge_after),
     .imin = 0,
     .imax = STEPS,
     .metavar = "K",
     .help = "overflowing (skipped) steps in a row that end the run\n"
             "(default: enough for a healthy scaler to back off from the top\n"
             "of its range to its floor, 100 for fixed or none; none where\n"
             "the framework stops runs itself; run.json's divergence_rule\n"
             "says which; 0 never)"},

    {.name = "stats-every",
     .kind = OPT_I64,
     .offset = F(stats_every),
     .imin = 0,
     .imax = STEPS,
     .help = "statistics of every layer's tensors (default 10; 0 never)",
     .group = "the record:"},
    {.name = "hist-every",
     .kind = OPT_I64,
     .offset = F(hist_every),
     .imin = 0,
     .imax = STEPS,
     .help = "log2 histograms (default 100; 0 never)"},
    {.name = "trace-every",
     .kind = OPT_I64,
     .offset = F(trace_every),
     .imin = 0,
     .imax = STEPS,
     .help = "the gradient trace (trace.csv, trace_hist.csv: max |g| and the\n"
             "log2 histogram of all gradients, for `ampscope recommend`;\n"
             "default 1; 0 never)"},
    {.name = "stats-dtype",
     .kind = OPT_CHOICE,
     .offset = OPT_NO_FIELD,
     .choices = stats_dtypes,
     .deferred = true,
     .metavar = "T",
     .help = "the format the statistics are for (default --dtype; lets an\n"
             "O0 run say what fp16 would have done)"},
    {.name = "no-progress",
     .kind = OPT_FLAG,
     .offset = OPT_NO_FIELD,
     .parse = set_no_progress,
     .help = "no progress line on a terminal"},
    {.name = "force",
     .kind = OPT_FLAG,
     .offset = F(force),
     .help = "replace the record --out DIR holds (only the files ampscope\n"
             "writes; says what it removes); not with --resume"},

    {.name = "checkpoint-every",
     .kind = OPT_I64,
     .offset = F(checkpoint_every),
     .imin = 0,
     .imax = STEPS,
     .help = "also write DIR/checkpoint.safetensors every N steps (it is\n"
             "written at each epoch's end, at the end and on SIGINT/SIGTERM)",
     .group = "checkpoints:"},
    {.name = "resume",
     .kind = OPT_DIR,
     .offset = OPT_NO_FIELD,
     .deferred = true,
     .help = "continue the run in DIR bit for bit from its checkpoint, with\n"
             "the options of its run.json; only --steps/--epochs (to extend\n"
             "it), --checkpoint-every and --no-progress may be given with it"},
    {.name = "init",
     .kind = OPT_PATH,
     .offset = F(init_path),
     .help = "start from the weights in a safetensors file (PyTorch names)"},

    {.name = "fault",
     .kind = OPT_CUSTOM,
     .offset = OPT_NO_FIELD,
     .parse = set_fault,
     .metavar = "SPEC",
     .help = "inject numerical faults: KIND@STEPS[+KIND@STEPS...], STEPS\n"
             "'all' or a list of N and N-M (steps as steps.csv numbers them);\n"
             "KIND nonfinite-loss (the loss is NaN before scaling), inf-loss\n"
             "(+inf), overflow-grads (the scaled gradients overflow, the loss\n"
             "stays finite), zero-grads (the gradients are 0: a clean step\n"
             "whatever the scale), nan-weights (a stored weight is NaN after\n"
             "the update).  Kept in run.json: a resumed run keeps it",
     .group = "testing:"},
    /* in the usage line */
    {.name = "out", .kind = OPT_DIR, .offset = F(out_dir), .label = ""},
    {.name = NULL},
};

int topt_set(train_options *o, const char *name, const char *text, char *msg, size_t msg_len)
{
    const opt_spec *row = opt_find(topt_table, name);
    if (!row) return fail(msg, msg_len, "unknown option '--%s'", name);
    if (opt_takes_value(row) && (!text || !*text))
        return fail(msg, msg_len, "option --%s needs a value", name);
    if (text && !rec_run_text_ok(text))
        return fail(msg, msg_len,
                    "--%s: the value is not valid UTF-8 (run.json records it as given)", name);
    if (!row->deferred && opt_set(row, o, text, msg, msg_len) != 0) return TRAIN_EINPUT;
    if (o->n_given == TRAIN_MAX_GIVEN)
        return fail(msg, msg_len, "more than %d options", TRAIN_MAX_GIVEN);
    o->given[o->n_given].key = row->name;
    o->given[o->n_given].text = opt_takes_value(row) ? text : NULL;
    o->n_given++;
    return TRAIN_OK;
}

const char *topt_given(const train_options *o, const char *name)
{
    for (int i = o->n_given - 1; i >= 0; i--)
        if (strcmp(o->given[i].key, name) == 0) return o->given[i].text;
    return NULL;
}

/* A deferred option, when it was given, set now by its row; *given whether it was. */
static int set_later(train_options *o, const char *name, bool *given, char *msg, size_t msg_len)
{
    const char *text = topt_given(o, name);
    if (given) *given = text != NULL;
    if (!text) return TRAIN_OK;
    return opt_set(opt_find(topt_table, name), o, text, msg, msg_len) != 0 ? TRAIN_EINPUT
                                                                           : TRAIN_OK;
}

/* on|off of an option without a field of its own */
static int onoff(const char *name, const char *text, bool *out, char *msg, size_t msg_len)
{
    opt_spec row = *opt_find(topt_table, name);
    row.offset = 0;
    return opt_set(&row, out, text, msg, msg_len) != 0 ? TRAIN_EINPUT : TRAIN_OK;
}

/* The scaler: the preset, then its overrides in a fixed order.  Which
 * message wins when several are wrong is part of the interface (the tests
 * read it), so the order is kept as it always was. */
static int finish_scaler(train_options *o, char *msg, size_t msg_len)
{
    ak_scaler_config *cfg = &o->scaler;
    const char *preset = topt_given(o, "loss-scale");
    char why[512];
    if (ak_scaler_preset(preset ? preset : "none", cfg, why, sizeof why) != 0)
        return fail(msg, msg_len, "%s", why);
    int rc = TRAIN_OK;
    if (topt_given(o, "scale")) {
        if (cfg->kind != AK_SCALER_FIXED)
            return fail(msg, msg_len, "--scale needs --loss-scale fixed");
        rc = set_later(o, "scale", NULL, msg, msg_len);
    }
    const char *rule_name = topt_given(o, "scale-rule");
    if (rule_name) {
        ak_scaler_rule rule;
        if (ak_scaler_rule_from_name(rule_name, &rule) != 0) {
            char list[256];
            return fail(msg, msg_len, "--scale-rule wants %s, got '%s'",
                        opt_choice_list(rules, list, sizeof list), rule_name);
        }
        cfg->rule = rule;
    }
    bool init = false, factor = false, growth = false, backoff = false, window = false,
         hysteresis = false;
    if (!rc) rc = set_later(o, "init-scale", &init, msg, msg_len);
    if (!rc) {
        rc = set_later(o, "scale-factor", &factor, msg, msg_len);
        if (!rc && factor) cfg->backoff_factor = 1.0 / cfg->growth_factor;
    }
    if (!rc) rc = set_later(o, "growth-factor", &growth, msg, msg_len);
    if (!rc) rc = set_later(o, "backoff-factor", &backoff, msg, msg_len);
    /* a framework with one scale factor divides by it: the growth factor is the backoff's */
    if (!rc && backoff && cfg->backoff_divides)
        return fail(msg, msg_len,
                    "--backoff-factor: the %s policy divides by its one scale factor, as its "
                    "framework does; set that factor with --scale-factor F",
                    preset ? preset : "none");
    if (!rc && growth && cfg->backoff_divides) cfg->backoff_factor = 1.0 / cfg->growth_factor;
    if (!rc) rc = set_later(o, "scale-window", &window, msg, msg_len);
    if (!rc) rc = set_later(o, "hysteresis", &hysteresis, msg, msg_len);
    if (!rc) rc = set_later(o, "consecutive-hysteresis", NULL, msg, msg_len);
    if (!rc) rc = set_later(o, "min-scale", NULL, msg, msg_len);
    if (!rc) rc = set_later(o, "max-scale", NULL, msg, msg_len);
    if (!rc) rc = set_later(o, "refuse-nonfinite-growth", NULL, msg, msg_len);
    if (!rc) rc = set_later(o, "drop-overflow-update", NULL, msg, msg_len);
    if (!rc && (window || hysteresis || growth || backoff || factor || init) &&
        cfg->kind != AK_SCALER_DYNAMIC)
        return fail(msg, msg_len,
                    "the dynamic-scaler options need --loss-scale dynamic or a preset");
    if (!rc && ak_scaler_validate(cfg, why, sizeof why) != 0) return fail(msg, msg_len, "%s", why);
    if (!rc) o->scaler_name = preset ? preset : "none";
    return rc;
}

int topt_finish(train_options *o, char *msg, size_t msg_len)
{
    const char *resume = topt_given(o, "resume");
    if (resume) {
        o->out_dir = resume;
        o->resume = true;
    }
    if (!o->out_dir) return fail(msg, msg_len, "--out DIR is required");
    const char *mode = topt_given(o, "mode"), *dtype = topt_given(o, "dtype");
    const int pm = prec_mode_from_name(mode ? mode : "O0");
    int index;
    if (pm < 0 && opt_choice(opt_find(topt_table, "mode"), mode, &index, msg, msg_len) != 0)
        return TRAIN_EINPUT;
    if (dtype && opt_choice(opt_find(topt_table, "dtype"), dtype, &index, msg, msg_len) != 0)
        return TRAIN_EINPUT;
    prec_options_default(&o->prec, (prec_mode)pm, dtype && index == 1 ? AK_BF16 : AK_F16);
    const char *amp = topt_given(o, "amp-lists");
    if (amp && (opt_choice(opt_find(topt_table, "amp-lists"), amp, &index, msg, msg_len) != 0 ||
                amp_lists_apply(&o->prec, amp, msg, msg_len) != 0))
        return TRAIN_EINPUT;
    const char *keep_bn = topt_given(o, "keep-batchnorm-fp32");
    if (keep_bn &&
        onoff("keep-batchnorm-fp32", keep_bn, &o->prec.keep_batchnorm_fp32, msg, msg_len) != 0)
        return TRAIN_EINPUT;
    const char *embed = topt_given(o, "embedding-accumulation");
    if (embed) {
        if (opt_choice(opt_find(topt_table, "embedding-accumulation"), embed, &index, msg,
                       msg_len) != 0)
            return TRAIN_EINPUT;
        o->prec.embed_acc_low = index == 1;
    }
    const char *stats = topt_given(o, "stats-dtype");
    if (stats) {
        static const ak_dtype types[] = {AK_F16, AK_BF16, AK_F32};
        if (opt_choice(opt_find(topt_table, "stats-dtype"), stats, &index, NULL, 0) != 0)
            return fail(msg, msg_len, "--stats-dtype wants fp16 or bf16 or fp32, got '%s'", stats);
        o->stats_dtype = types[index];
    }
    const char *optimizer = topt_given(o, "optimizer");
    if (optimizer) {
        static const ak_optimizer kinds[] = {AK_OPT_SGD, AK_OPT_MOMENTUM, AK_OPT_ADAM,
                                             AK_OPT_ADAMW};
        if (opt_choice(opt_find(topt_table, "optimizer"), optimizer, &index, msg, msg_len) != 0)
            return TRAIN_EINPUT;
        o->opt.kind = kinds[index];
    } else if (strcmp(o->net, "lenet5") == 0) {
        o->opt.kind = AK_OPT_MOMENTUM; /* the MindSpore tutorial: Momentum(lr 0.01, 0.9) */
    } else if (strcmp(o->net, "transformer") == 0) {
        o->opt.kind = AK_OPT_ADAMW; /* nanoGPT's optimizer */
    }
    if (o->opt.kind == AK_OPT_MOMENTUM && !topt_given(o, "momentum")) o->opt.momentum = 0.9f;
    if (set_later(o, "nesterov", NULL, msg, msg_len) != 0) return TRAIN_EINPUT;
    bool stochastic = false;
    const char *sr = topt_given(o, "stochastic-rounding");
    if (sr && onoff("stochastic-rounding", sr, &stochastic, msg, msg_len) != 0) return TRAIN_EINPUT;
    o->opt.round.mode = stochastic ? FPE_SR_PROP : FPE_RNE;
    o->opt.round.seed = o->seed;
    o->opt.round.stream = 1;
    if (!topt_given(o, "lr")) o->opt.lr = -1;
    return finish_scaler(o, msg, msg_len);
}
