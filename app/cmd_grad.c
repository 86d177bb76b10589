/* cmd_grad.c: `ampscope grad`, the gradients of a net at given weights on
 * given training samples, written under the parameters' own names so that
 * another framework (PyTorch, MindSpore, Paddle) can be checked against
 * them: load the same weights there, feed the same samples in the same
 * order, average the loss over the batch, and compare tensor by tensor.
 */
#define _POSIX_C_SOURCE 200809L /* strndup */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "checkpoint.h"
#include "cli.h"
#include "cli_options.h"
#include "commands.h"
#include "record_lock.h"
#include "data.h"
#include "model.h"
#include "net_size_options.h"
#include "nets.h"

/* The largest batch one call computes: the activations of COUNT samples
 * are held at once, and simplenet at width 4096 already needs 16 KB per
 * sample per layer. */
#define GRAD_MAX_COUNT (1 << 20)
#define SYNTHETIC_MAX  (1 << 24) /* train's largest --samples */

typedef struct grad_job {
    const char *net_name, *init, *out, *backend, *data_dir;
    const char *stats_out; /* --running-stats, or NULL */
    net_size size;
    prec_mode mode;
    ak_dtype low;
    uint64_t seed;
    size_t first, count;
} grad_job;

/* The command line: the job, and the texts checked after the required options. */
typedef struct grad_args {
    grad_job j;
    const char *mode, *dtype, *samples;
} grad_args;

#define F(field)   offsetof(grad_args, field)
#define SIZE_AT(f) offsetof(grad_args, j.size.f)
static const opt_spec grad_options[] = {
    {.name = "net",
     .kind = OPT_STRING,
     .offset = F(j.net_name),
     .metavar = "NET",
     .help = "simplenet, lenet5, mlp, deepmlp, resnet or transformer"},
    {.name = "init",
     .kind = OPT_PATH,
     .offset = F(j.init),
     .help = "the weights: a safetensors file with each parameter's tensor\n"
             "(F32, F16 or BF16), e.g. from PyTorch's save_file or an\n"
             "ampscope checkpoint.safetensors"},
    {.name = "samples",
     .kind = OPT_STRING,
     .offset = F(samples),
     .metavar = "F:C",
     .help = "C >= 1 training samples from index F (counted from 0)"},
    {.name = "out",
     .kind = OPT_PATH,
     .offset = F(j.out),
     .metavar = "G",
     .help = "the gradients (written atomically)"},
    {.name = "running-stats",
     .kind = OPT_PATH,
     .offset = F(j.stats_out),
     .metavar = "S",
     .help = "resnet: BatchNorm's running_mean and running_var after the\n"
             "batch's training forward (momentum 0.1 from the --init values,\n"
             "as PyTorch's state_dict holds them after one forward in train mode)"},
    {.name = "mode",
     .kind = OPT_STRING,
     .offset = F(mode),
     .metavar = "M",
     .help = "O0 (default), O1, O2, O3: where the net computes (see train)"},
    {.name = "dtype",
     .kind = OPT_STRING,
     .offset = F(dtype),
     .metavar = "T",
     .help = "fp16 (default) or bf16, for O1..O3"},
    NET_SIZE_OPTION_ROWS(SIZE_AT),
    {.name = "seed",
     .kind = OPT_U64,
     .offset = F(j.seed),
     .imin = 0,
     .imax = INT64_MAX,
     .help = "simplenet: the synthetic data's seed (default 1)"},
    {.name = "backend",
     .kind = OPT_STRING,
     .offset = F(j.backend),
     .metavar = "B",
     .help = "cpu, cuda or auto (default)"},
    {.name = "data",
     .kind = OPT_DIR,
     .offset = F(j.data_dir),
     .help = "Fashion-MNIST IDX files (lenet5, mlp, deepmlp, resnet; default\n"
             "Debian's dataset-fashion-mnist; lenet5 reads them padded to 32x32),\n"
             "or the fortunes text files (transformer; default\n"
             "/usr/share/games/fortunes)"},
    {.name = NULL},
};
#undef F

static void help(FILE *out)
{
    fprintf(out,
            "usage: ampscope grad --net NET --init FILE.safetensors --samples FIRST:COUNT\n"
            "                     --out G.safetensors [options]\n"
            "\n"
            "Writes the gradients of the loss, averaged over the batch as PyTorch does, with\n"
            "respect to every parameter, at the weights in FILE, for training samples\n"
            "FIRST .. FIRST+COUNT-1 in file order (no shuffling), as one batch.  G holds one\n"
            "tensor per parameter under its own name (\"fc1.weight\", \"conv2.bias\") and shape:\n"
            "fp32, or --dtype in O3 (the gradient the optimizer reads).  No loss scale.\n"
            "Prints the batch's loss.\n"
            "\n");
    cli_print_options(out, grad_options, 22);
    fprintf(
        out,
        "\n"
        "simplenet's samples are those `ampscope train --net simplenet` draws with the same\n"
        "--seed and --width: synthetic sample i does not depend on how many are drawn, so\n"
        "sample i here is sample i of train's set (train draws --samples of them, 8 batches\n"
        "by default; grad draws FIRST+COUNT).  The transformer's sample i is train's:\n"
        "the window of --context + 1 tokens from token i * context of the text's\n"
        "training split (the inputs, then every position's next token as its labels;\n"
        "the loss is the mean over COUNT * context tokens).  There is no dropout.\n"
        "\n"
        "exit status: 0 done, 2 bad input (options, data, the --init file), 1 anything else.\n");
}

/* ---- values ------------------------------------------------------------------------- */
/* "FIRST:COUNT", both decimal, COUNT >= 1. */
static int want_samples(const char *v, size_t *first, size_t *count)
{
    const char *colon = strchr(v, ':');
    if (!colon)
        return cli_error(CLI_EINPUT, "--samples wants FIRST:COUNT (e.g. 0:32), got '%s'", v);
    char *head = strndup(v, (size_t)(colon - v));
    if (!head) return cli_error(CLI_EFAIL, "out of memory");
    int64_t f = 0, c = 0;
    const bool ok = cli_parse_int(head, 0, INT64_C(1) << 40, &f) == 0 &&
                    cli_parse_int(colon + 1, INT64_MIN, INT64_MAX, &c) == 0;
    free(head);
    if (!ok) return cli_error(CLI_EINPUT, "--samples wants FIRST:COUNT (e.g. 0:32), got '%s'", v);
    if (c < 1 || c > GRAD_MAX_COUNT)
        return cli_error(CLI_EINPUT, "--samples %s: COUNT must be in [1, %d]", v, GRAD_MAX_COUNT);
    *first = (size_t)f;
    *count = (size_t)c;
    return CLI_OK;
}

/* Whether a layer of the net has a buffer (a tensor the optimizer never sees). */
static bool has_buffers(const net_def *net)
{
    for (int i = 0; i < net->n_layers; i++) {
        layer_tensor t[LAYER_MAX_TENSORS];
        const net_layer *l = &net->layers[i];
        const int n = l->kind->tensors ? l->kind->tensors(l, t) : 0;
        for (int k = 0; k < n; k++)
            if (!t[k].trainable) return true;
    }
    return false;
}

/* ---- the work ------------------------------------------------------------------------ */
/* The training set holding samples first .. first+count-1 (and perhaps
 * fewer: the caller checks the range against ds->count). */
static int load_samples(const grad_job *j, const net_def *net, ds_dataset **ds)
{
    char why[512];
    int rc;
    if (net->loss == NET_MSE) {
        ds_synthetic_options so;
        memset(&so, 0, sizeof so);
        so.count = j->first + j->count;
        so.in_dim = net->in_c;
        so.out_dim = net->outputs;
        so.seed = j->seed;
        so.rule = DS_TARGETS_INDEPENDENT; /* as train draws them */
        rc = ds_synthetic(&so, ds, why, sizeof why);
    } else if (net->tokens) { /* the fortunes text, windows of the context, as train reads it */
        ds_text_options to;
        memset(&to, 0, sizeof to);
        to.context = net->tokens;
        to.subset = j->first + j->count;
        rc = ds_load_text(j->data_dir, DS_TRAIN, &to, ds, why, sizeof why);
    } else {
        ds_options d = ds_options_default();
        d.pad = net->in_h == 32 ? 2 : 0; /* LeNet5 reads 32 x 32 */
        d.subset = j->first + j->count;  /* the whole file is still validated */
        rc = ds_load_fashion_mnist(j->data_dir, DS_TRAIN, &d, ds, why, sizeof why);
        if (rc == DS_OK && (*ds)->features != net->in_c * net->in_h * net->in_w) {
            const size_t have = (*ds)->features;
            ds_free(*ds);
            *ds = NULL;
            return cli_error(CLI_EINPUT, "the data has %zu features per sample, %s wants %zu", have,
                             net->name, net->in_c * net->in_h * net->in_w);
        }
    }
    if (rc != DS_OK)
        return cli_error(rc == DS_ENOMEM || rc == DS_EIO ? CLI_EFAIL : CLI_EINPUT, "%s%s", why,
                         rc != DS_ENOENT ? ""
                         : net->tokens   ? " (install fortunes or give --data DIR)"
                                         : " (install dataset-fashion-mnist or give --data DIR)");
    if ((*ds)->count < j->first + j->count)
        return cli_error(
            CLI_EINPUT, "--samples %zu:%zu asks for samples %zu..%zu, but the training set has %zu",
            j->first, j->count, j->first, j->first + j->count - 1, (*ds)->count);
    return CLI_OK;
}

/* Gathers the samples in file order into the model's input buffers. */
static int upload_samples(const grad_job *j, const ds_dataset *ds, model *m)
{
    char why[512];
    size_t *idx = malloc(j->count * sizeof *idx);
    float *x = malloc(j->count * ds->features * sizeof *x);
    float *t = ds->target_dim ? malloc(j->count * ds->target_dim * sizeof *t) : NULL;
    int32_t *labels = ds->label_dim ? malloc(j->count * ds->label_dim * sizeof *labels) : NULL;
    int rc = CLI_OK;
    if (!idx || !x || (ds->target_dim && !t) || (ds->label_dim && !labels)) {
        rc = cli_error(CLI_EFAIL, "out of memory for %zu samples", j->count);
        goto done;
    }
    for (size_t i = 0; i < j->count; i++)
        idx[i] = j->first + i;
    if (ds_gather(ds, idx, j->count, x, labels, t, why, sizeof why) != DS_OK) {
        rc = cli_error(CLI_EFAIL, "%s", why);
        goto done;
    }
    int ak = ak_to_device(m->b, m->x.data, x, j->count * ds->features * sizeof *x);
    if (!ak && labels)
        ak = ak_to_device(m->b, m->labels, labels, j->count * ds->label_dim * sizeof *labels);
    if (!ak && t) ak = ak_to_device(m->b, m->target.data, t, j->count * ds->target_dim * sizeof *t);
    if (ak)
        rc = cli_error(CLI_EFAIL, "copying the samples to the backend: %s", ak_error_text(m->b));
done:
    free(idx);
    free(x);
    free(t);
    free(labels);
    return rc;
}

static int run_grad(const grad_job *j, const net_def *given)
{
    char why[512];
    const net_def net = *given;
    prec_options po;
    prec_options_default(&po, j->mode, j->low);
    prec_plan plan;
    prec_plan_make(&po, &net, &plan);

    ak_backend *b = ak_open(j->backend, why, sizeof why);
    if (!b) return cli_error(CLI_EINPUT, "%s", why);
    if (why[0]) fprintf(stderr, "ampscope grad: %s\n", why);
    ds_dataset *ds = NULL;
    int rc = load_samples(j, &net, &ds);
    model *m = NULL;
    if (!rc && model_create(b, &net, &plan, j->count, &m, why, sizeof why) != 0)
        rc = cli_error(CLI_EFAIL, "building %s for %zu samples: %s", net.name, j->count, why);
    /* a file that is not the net's weights is the user's input */
    if (!rc && ckpt_load_weights(j->init, m, why, sizeof why) != 0)
        rc = cli_error(CLI_EINPUT, "%s", why);
    if (!rc) rc = upload_samples(j, ds, m);
    float loss = 0;
    if (!rc && (model_forward_backward(m, j->count, NULL) != 0 ||
                ak_to_host(b, &loss, m->loss, sizeof loss) != 0))
        rc = cli_error(CLI_EFAIL, "forward/backward: %s", ak_error_text(b));
    if (!rc && ckpt_save_grads(j->out, m, why, sizeof why) != 0)
        rc = cli_error(CLI_EFAIL, "%s", why);
    if (!rc && j->stats_out && ckpt_save_buffers(j->stats_out, m, why, sizeof why) != 0)
        rc = cli_error(CLI_EFAIL, "%s", why);
    if (!rc)
        printf("%s %s%s%s: loss %.9g over samples %zu..%zu (%zu); gradients of %d tensors in %s\n",
               net.name, prec_mode_name(j->mode), j->mode == PREC_O0 ? "" : " ",
               j->mode == PREC_O0 ? "" : ak_dtype_name(j->low), (double)loss, j->first,
               j->first + j->count - 1, j->count, m->n_params, j->out);
    if (!rc && j->stats_out)
        printf("running statistics of %d tensors in %s\n", m->n_tensors - m->n_params,
               j->stats_out);
    model_free(m);
    ak_close(b);
    ds_free(ds);
    return rc;
}

int cmd_grad(int argc, char **argv)
{
    cli_set_context("grad");
    grad_args args;
    memset(&args, 0, sizeof args);
    args.j.backend = "auto";
    args.j.seed = 1;
    args.mode = "O0";
    args.dtype = "fp16";
    bool want_help;
    int rc = cli_parse_options(grad_options, &args, argc, argv, &want_help, NULL);
    if (rc) return rc;
    if (want_help) {
        help(stdout);
        return CLI_OK;
    }
    grad_job j = args.j;
    const char *mode = args.mode, *dtype = args.dtype, *samples = args.samples;
    if (!j.net_name) return cli_error(CLI_EINPUT, "--net NET is required (%s)", net_names());
    if (!j.init) return cli_error(CLI_EINPUT, "--init FILE.safetensors is required");
    if (!samples) return cli_error(CLI_EINPUT, "--samples FIRST:COUNT is required");
    if (!j.out) return cli_error(CLI_EINPUT, "--out G.safetensors is required");
    rc = want_samples(samples, &j.first, &j.count);
    if (rc) return rc;
    const int pm = prec_mode_from_name(mode);
    if (pm < 0) return cli_error(CLI_EINPUT, "--mode wants O0, O1, O2 or O3, got '%s'", mode);
    j.mode = (prec_mode)pm;
    if ((rc = cli_want_dtype("--dtype", dtype, false, &j.low)) != 0) return rc;
    char why[512];
    net_def net;
    if (net_build(j.net_name, &j.size, &net, why, sizeof why) != 0)
        return cli_error(CLI_EINPUT, "%s", why);
    /* train's --samples limit: synthetic samples are drawn from the first */
    if (net.loss == NET_MSE && j.first + j.count > SYNTHETIC_MAX)
        return cli_error(CLI_EINPUT, "--samples %s: simplenet's samples end at %d", samples,
                         SYNTHETIC_MAX - 1);
    if (j.stats_out && !has_buffers(&net))
        return cli_error(CLI_EINPUT, "--running-stats: %s has no running statistics (resnet has)",
                         net.name);
    if (j.stats_out && strcmp(j.stats_out, j.out) == 0)
        return cli_error(CLI_EINPUT, "--running-stats %s is also --out: give another file",
                         j.stats_out);
    /* the cheap checks of the files before the data are read */
    FILE *f = fopen(j.init, "rb");
    if (!f) return cli_error(CLI_EINPUT, "--init %s: %s", j.init, strerror(errno));
    fclose(f);
    if ((rc = cli_want_out_file("--out", j.out)) != 0) return rc;
    if (j.stats_out && (rc = cli_want_out_file("--running-stats", j.stats_out)) != 0) return rc;
    /* never over what it reads, nor into a record */
    const rec_input inputs[] = {{"--init", j.init}, {"--data", j.data_dir}};
    if (rec_check_output("--out", j.out, NULL, inputs, 2, why, sizeof why) != AN_OK)
        return cli_error(CLI_EINPUT, "%s", why);
    if (j.stats_out &&
        rec_check_output("--running-stats", j.stats_out, NULL, inputs, 2, why, sizeof why) != AN_OK)
        return cli_error(CLI_EINPUT, "%s", why);
    return run_grad(&j, &net);
}
