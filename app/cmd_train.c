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
#include "sweep.h" /* sw_launcher_rank */
#include "train_mpi.h"
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

/* The run, as `ampscope train` reports it: train_run prints the summary
 * line; a failure is recorded with the status of its class. */
static int train(const train_options *o)
{
    char msg[1024];
    msg[0] = '\0';
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

/* The options of argv, in order: every one read (both --key value and
 * --key=value) before any is set, so that --resume anywhere takes effect
 * first.  1 for --help. */
typedef struct given_now {
    const char *key, *text;
} given_now;

static int read_argv(int argc, char **argv, given_now *now, int *n, int *resume)
{
    *n = 0;
    *resume = -1;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            help(stdout);
            return 1;
        }
        const opt_spec *row;
        const char *v;
        const int rc = cli_read_option(topt_table, argc, argv, &i, &row, &v);
        if (rc < 0) return rc;
        if (strcmp(row->name, "resume") == 0 && *resume < 0) *resume = *n;
        now[(*n)++] = (given_now){row->name, v};
    }
    return CLI_OK;
}

/* --resume DIR: the options DIR/run.json recorded, replayed as they were
 * given, then the ones given now, each checked against them. */
static int set_resumed(train_options *o, const given_now *now, int n, int resume, rec_run **run)
{
    const char *dir = now[resume].text;
    char path[4096], msg[1024];
    if (!*dir) return cli_error(CLI_EINPUT, "--resume wants a run's folder, got ''");
    snprintf(path, sizeof path, "%s/%s", dir, REC_RUN_JSON);
    *run = rec_run_read(path, msg, sizeof msg);
    if (!*run) return cli_error(CLI_EINPUT, "--resume %s: %s", dir, msg);
    if (topt_from_record(o, *run, path, msg, sizeof msg) != 0 ||
        topt_set(o, "resume", dir, msg, sizeof msg) != 0)
        return cli_error(CLI_EINPUT, "%s", msg);
    for (int k = 0; k < n; k++)
        if (k != resume && topt_resume_set(o, now[k].key, now[k].text, msg, sizeof msg) != 0)
            return cli_error(CLI_EINPUT, "%s", msg);
    return CLI_OK;
}

int cmd_train(int argc, char **argv)
{
    cli_set_context("train");
    /* large (the options as given): not on the stack of a study's caller */
    train_options *o = malloc(sizeof *o);
    given_now *now = malloc((size_t)argc * sizeof *now);
    if (!o || !now) {
        free(o);
        free(now);
        return cli_error(CLI_EFAIL, "out of memory");
    }
    train_options_default(o);
    o->version = AMPSCOPE_VERSION;
    o->git_revision = AMPSCOPE_GIT_REVISION;
    o->progress = true;
    rec_run *run = NULL; /* --resume: the record, whose texts o keeps */
    int n, resume;
    int rc = read_argv(argc, argv, now, &n, &resume);
    if (rc == 1) {
        rc = CLI_OK; /* --help */
    } else if (!rc) {
        rc = resume >= 0 ? set_resumed(o, now, n, resume, &run) : CLI_OK;
        for (int k = 0; k < n && !rc && resume < 0; k++)
            rc = set(o, now[k].key, now[k].text);
        char msg[1024];
        if (!rc && topt_finish(o, msg, sizeof msg) != 0) rc = cli_error(CLI_EINPUT, "%s", msg);
        /* under mpirun: one run, data-parallel over the ranks */
        train_comm comm;
        bool mpi = false;
        if (!rc && train_mpi_begin(&comm, &mpi, msg, sizeof msg) != 0)
            rc = cli_error(CLI_EFAIL, "%s", msg);
        if (!rc && mpi) o->comm = &comm;
        if (!rc) rc = train(o);
        train_mpi_end(mpi);
        /* bad input found before MPI started: rank 0 of the launch says it for all */
        if (rc && !mpi && sw_launcher_rank(NULL) != 0) rc = cli_error(rc, "%s", "");
    }
    rec_run_free(run);
    free(now);
    free(o);
    return rc;
}
