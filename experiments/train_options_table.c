/* train_options_table.c: train's options as data (topt_table, train_options.h): each option's
 * field, range and help, in the order of the help, and the parsers of the options that need
 * their own. */
#include "train_options.h"

#include <string.h>

#include "allreduce.h"
#include "amp_lists.h"
#include "loss_scale.h"
#include "net_size_options.h"

_Static_assert(sizeof(int32_t) == sizeof(int), "the scaler's window and hysteresis are OPT_INT");

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

/* --allreduce: a preset's name (allreduce_presets.c), or fp32, fp16, bf16 for PyTorch DDP's
 * three (no hook, fp16_compress_hook, bf16_compress_hook). */
static int set_allreduce(const opt_spec *row, void *base, const char *text, char *msg,
                         size_t msg_len)
{
    (void)row;
    static const char *const alias[][2] = {
        {"fp32", "pytorch-fp32"}, {"fp16", "pytorch-fp16-hook"}, {"bf16", "pytorch-bf16-hook"}};
    const char *name = text;
    for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
        if (strcmp(text, alias[i][0]) == 0) name = alias[i][1];
    const ar_config *c = ar_preset(name);
    if (!c) {
        ut_fail(msg, msg_len, OPT_EINPUT,
                "--allreduce wants fp32, fp16, bf16 or one of %s, got '%s'", ar_preset_names(),
                text);
        return OPT_EINPUT;
    }
    ((train_options *)base)->allreduce = c;
    return OPT_OK;
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

    {.name = "world",
     .kind = OPT_I64,
     .offset = F(world),
     .imin = 1,
     .imax = TRAIN_MAX_WORLD,
     .help = "data-parallel training on N simulated ranks in this process: each\n"
             "rank's --batch samples, their gradients all-reduced every step\n"
             "(under mpirun the ranks are MPI's; N must then be its size)",
     .group = "data parallel:"},
    {.name = "allreduce",
     .kind = OPT_CUSTOM,
     .offset = OPT_NO_FIELD,
     .parse = set_allreduce,
     .metavar = "HOW",
     .help = "how the ranks' gradients are all-reduced: fp32 (the default),\n"
             "fp16 or bf16 (PyTorch DDP, its compress hooks) or a framework's\n"
             "preset: apex, apex-fp32, apex-predivide, megatron-fp32,\n"
             "megatron-bf16, deepspeed-fp16, deepspeed-bf16, deepspeed-fp32,\n"
             "deepspeed-prescale; the record's allreduce.csv says what it did"},

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
