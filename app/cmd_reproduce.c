/* cmd_reproduce.c: `ampscope reproduce`, the studies behind the report
 * (experiments/reproduce/). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cli_options.h"
#include "commands.h"
#include "reproduce.h"

#ifndef AMPSCOPE_GIT_REVISION
#define AMPSCOPE_GIT_REVISION "unknown"
#endif

typedef struct reproduce_args {
    repro_options o;
    int levels; /* --quick, --full and --smoke given */
} reproduce_args;

static int set_level(const opt_spec *row, void *base, const char *text, char *msg, size_t len)
{
    (void)text, (void)msg, (void)len;
    reproduce_args *a = base;
    a->o.level = row->name[0] == 'q' ? REPRO_QUICK : row->name[0] == 'f' ? REPRO_FULL : REPRO_SMOKE;
    a->levels++;
    return OPT_OK;
}

static int set_no_progress(const opt_spec *row, void *base, const char *text, char *msg, size_t len)
{
    (void)row, (void)text, (void)msg, (void)len;
    ((reproduce_args *)base)->o.progress = false;
    return OPT_OK;
}

#define F(field) offsetof(reproduce_args, field)
static const opt_spec reproduce_options[] = {
    {.name = "quick",
     .kind = OPT_FLAG,
     .offset = OPT_NO_FIELD,
     .parse = set_level,
     .help = "(default) about 3 minutes on a 2-core CPU: one epoch of LeNet-5,\n"
             "one epoch of the MLP per mode, SimpleNet at width 1024"},
    {.name = "full",
     .kind = OPT_FLAG,
     .offset = OPT_NO_FIELD,
     .parse = set_level,
     .help = "whole datasets, 5 epochs, SimpleNet at width 4096 batch 512\n"
             "(about 2 hours on a 2-core CPU; says so when it starts)"},
    {.name = "smoke",
     .kind = OPT_FLAG,
     .offset = OPT_NO_FIELD,
     .parse = set_level,
     .help = "a few dozen steps per run (for tests: the numbers mean nothing)"},
    {.name = "backend",
     .kind = OPT_STRING,
     .offset = F(o.backend),
     .metavar = "B",
     .help = "cpu (default), cuda or auto"},
    {.name = "data",
     .kind = OPT_DIR,
     .offset = F(o.data_dir),
     .help = "Fashion-MNIST IDX files (default Debian's dataset-fashion-mnist)"},
    {.name = "out",
     .kind = OPT_DIR,
     .offset = F(o.out_dir),
     .help = "the report folder (created if missing; its parent must exist)"},
    {.name = "force",
     .kind = OPT_FLAG,
     .offset = F(o.force),
     .help = "replace what --out DIR holds if it is not reproduce's (only the\n"
             "files ampscope writes; says what it removes)"},
    {.name = "no-progress",
     .kind = OPT_FLAG,
     .offset = OPT_NO_FIELD,
     .parse = set_no_progress,
     .help = "no progress lines on stderr"},
    {.name = NULL},
};
#undef F

static void help(FILE *out)
{
    fprintf(out,
            "usage: ampscope reproduce [--quick|--full|--smoke] [--backend B] [--data DIR]\n"
            "                          --out DIR\n"
            "\n"
            "Trains what the studies need (run directories under DIR/runs), analyses the\n"
            "records and writes DIR/index.html: format facts, the underflow analysis\n"
            "(Micikevicius et al. 2018; MindSpore's AMP article), lost weight updates (O3\n"
            "against O2, the 2^11 rule; bf16 nearest against stochastic rounding), the\n"
            "precision-mode table, the frameworks' loss scalers replayed on one gradient\n"
            "trace, and the choice of scale_window and scale_factor with its validation\n"
            "against real fp16 training.  Figures are PNG and SVG drawn by gnuplot from the\n"
            "CSV files beside them.  Started again on the same DIR, finished runs are reused.\n"
            "\n");
    cli_print_options(out, reproduce_options, 17);
    fprintf(out, "\n"
                 "exit status: 0 done, 2 bad input, 1 a part of the report could not be made\n"
                 "(named on the page and in the message) or gnuplot is missing.\n");
}

int cmd_reproduce(int argc, char **argv)
{
    cli_set_context("reproduce");
    reproduce_args args;
    memset(&args, 0, sizeof args);
    repro_options *o = &args.o;
    o->backend = "cpu";
    o->level = REPRO_QUICK;
    o->progress = true;
    o->version = AMPSCOPE_VERSION;
    o->git_revision = AMPSCOPE_GIT_REVISION;
    bool want_help;
    int rc = cli_parse_options(reproduce_options, &args, argc, argv, &want_help, NULL);
    if (rc) return rc;
    if (want_help) {
        help(stdout);
        return CLI_OK;
    }
    const int levels = args.levels;
    if (levels > 1) return cli_error(CLI_EINPUT, "give one of --quick, --full and --smoke");
    if (!o->out_dir || !*o->out_dir) return cli_error(CLI_EINPUT, "--out DIR is required");
    if ((rc = cli_want_out_dir("--out", o->out_dir)) != 0) return rc;
    if (strcmp(o->backend, "cpu") != 0 && strcmp(o->backend, "cuda") != 0 &&
        strcmp(o->backend, "auto") != 0)
        return cli_error(CLI_EINPUT, "--backend wants cpu, cuda or auto, got '%s'", o->backend);
    if (o->data_dir && access(o->data_dir, R_OK | X_OK) != 0)
        return cli_error(CLI_EINPUT, "--data %s: %s", o->data_dir, strerror(errno));
    char msg[1024] = "";
    rc = reproduce_run(o, msg, sizeof msg);
    if (rc != 0) return cli_error(rc, "%s", msg);
    return CLI_OK;
}
