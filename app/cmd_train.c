/* cmd_train.c: `ampscope train`, training a reference network under a
 * precision mode and a loss-scale policy (train.c), with the record.  The
 * options are train's table (experiments/train_options.h): the command line
 * fills a train_options through it, --help prints it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_options.h"
#include "commands.h"
#include "record.h"
#include "train.h"
#include "train_options.h"

#ifndef AMPSCOPE_GIT_REVISION
#define AMPSCOPE_GIT_REVISION "unknown"
#endif

static void help(FILE *out)
{
    fprintf(out, "usage: ampscope train --net NET --mode O0|O1|O2|O3 [--dtype fp16|bf16] --out DIR "
                 "[options]\n"
                 "\n"
                 "Trains a reference network and records what low precision did at every step:\n"
                 "DIR/run.json, steps.csv, tensors.csv, updates.csv, hist.csv, eval.csv.\n"
                 "\n");
    cli_print_options(out, topt_table, 25);
    fprintf(out,
            "\n"
            "exit status: 0 done, 2 bad input (nothing trained), 3 diverged (the loss in O0, or "
            "the\n"
            "loss scale: grown to inf, at its floor, DeepSpeed's minimum; run.json's end_reason\n"
            "says which), 1 anything else;\n"
            "on SIGINT/SIGTERM the current step finishes and the record is complete up to it.\n");
}

/* One option into o through train's table, with the program's message for an unknown one. */
static int set(train_options *o, const char *key, const char *text)
{
    char msg[1024];
    if (!opt_find(topt_table, key))
        return cli_error(CLI_EINPUT, "unknown option '--%s' (see 'ampscope train --help')", key);
    if (topt_set(o, key, text, msg, sizeof msg) != 0) return cli_error(CLI_EINPUT, "%s", msg);
    return CLI_OK;
}

/* --resume DIR: the options of DIR/run.json first, as they were given,
 * then the ones given now (which win). */
typedef struct recorded {
    rec_run *run;
    char (*text)[4096]; /* the recorded values as text (a path fits) */
} recorded;

static int set_recorded(train_options *o, const char *dir, recorded *rd)
{
    char path[4096], why[512];
    snprintf(path, sizeof path, "%s/%s", dir, REC_RUN_JSON);
    rd->run = rec_run_read(path, why, sizeof why);
    if (!rd->run) return cli_error(CLI_EINPUT, "--resume %s: %s", dir, why);
    const size_t n = rec_run_option_count(rd->run);
    rd->text = calloc(n + 1, sizeof *rd->text);
    if (!rd->text) return cli_error(CLI_EFAIL, "out of memory");
    for (size_t i = 0; i < n; i++) {
        rec_option opt;
        rec_run_option_at(rd->run, i, &opt);
        /* not options: the record's notes (the scaler's are scaler_*) and its end */
        if (strcmp(opt.key, "out") == 0 || strcmp(opt.key, "resume") == 0 ||
            strcmp(opt.key, "end_reason") == 0 || strncmp(opt.key, "scaler_", 7) == 0)
            continue;
        if (opt.type == REC_OPT_STRING)
            snprintf(rd->text[i], sizeof rd->text[i], "%s", opt.string);
        else if (opt.type == REC_OPT_INT)
            snprintf(rd->text[i], sizeof rd->text[i], "%lld", (long long)opt.integer);
        else
            snprintf(rd->text[i], sizeof rd->text[i], "%.17g", opt.real); /* reads back exactly */
        const int rc = set(o, opt.key, rd->text[i]);
        if (rc) return rc;
    }
    return CLI_OK;
}

/* The run, as `ampscope train` reports it: train_run prints the summary
 * line; a failure is recorded with the status of its class. */
static int train(const train_options *o)
{
    char msg[1024];
    switch (train_run(o, msg, sizeof msg)) {
    case TRAIN_OK: return CLI_OK;
    case TRAIN_EINPUT: return cli_error(CLI_EINPUT, "%s", msg);
    case TRAIN_DIVERGED: return cli_error(CLI_EDIVERGED, "%s", msg);
    default: return cli_error(CLI_EFAIL, "%s", msg);
    }
}

int cmd_train_point(const train_options *o, void *ctx)
{
    (void)ctx;
    cli_set_context("train");
    return cli_exit_status(train(o));
}

static int run(train_options *o, int argc, char **argv, const char *resume_dir)
{
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            help(stdout);
            return CLI_OK;
        }
        if (resume_dir && strcmp(argv[i], "--resume") == 0) {
            i++;
            continue;
        }
        if (resume_dir && strncmp(argv[i], "--resume=", 9) == 0) continue;
        const opt_spec *row;
        const char *v;
        int rc = cli_read_option(topt_table, argc, argv, &i, &row, &v);
        if (rc < 0) return rc;
        if ((rc = set(o, row->name, v)) != 0) return rc;
    }
    char msg[1024];
    if (resume_dir && topt_set(o, "resume", resume_dir, msg, sizeof msg) != 0)
        return cli_error(CLI_EINPUT, "%s", msg);
    if (topt_finish(o, msg, sizeof msg) != 0) return cli_error(CLI_EINPUT, "%s", msg);
    return train(o);
}

int cmd_train(int argc, char **argv)
{
    cli_set_context("train");
    const char *resume_dir = NULL;
    for (int i = 1; i < argc && !resume_dir; i++) {
        if (cli_is_help(argv[i])) break;
        const char *v;
        const int m = strncmp(argv[i], "--resume", 8) == 0
                          ? cli_option_value(argc, argv, &i, "resume", &v)
                          : 0;
        if (m < 0) return m;
        if (m > 0) resume_dir = v;
    }
    /* large (the options as given): not on the stack of a study's caller */
    train_options *o = malloc(sizeof *o);
    if (!o) return cli_error(CLI_EFAIL, "out of memory");
    train_options_default(o);
    o->version = AMPSCOPE_VERSION;
    o->git_revision = AMPSCOPE_GIT_REVISION;
    o->progress = true;
    recorded rd = {NULL, NULL};
    int rc = resume_dir ? set_recorded(o, resume_dir, &rd) : CLI_OK;
    if (!rc) rc = run(o, argc, argv, resume_dir);
    free(rd.text);
    rec_run_free(rd.run);
    free(o);
    return rc;
}
