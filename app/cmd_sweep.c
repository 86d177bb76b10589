/* cmd_sweep.c: `ampscope sweep`, a grid of training runs on local processes
 * or MPI ranks (sweep.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_options.h"
#include "commands.h"
#include "sweep.h"

#ifndef AMPSCOPE_GIT_REVISION
#define AMPSCOPE_GIT_REVISION "unknown"
#endif

static int refuse_resume(const opt_spec *row, void *base, const char *text, char *msg, size_t len)
{
    (void)row, (void)base, (void)text;
    snprintf(msg, len, "--resume is not a sweep option: the same command again resumes");
    return OPT_EINPUT;
}

static int set_no_progress(const opt_spec *row, void *base, const char *text, char *msg, size_t len)
{
    (void)row, (void)text, (void)msg, (void)len;
    ((sweep_options *)base)->progress = false;
    return OPT_OK;
}

/* sweep's own options; any other is a train option every run is given */
#define F(field) offsetof(sweep_options, field)
static const opt_spec sweep_table[] = {
    {.name = "grid",
     .kind = OPT_STRING,
     .offset = F(grid_text),
     .metavar = "TEXT",
     .help = "axes separated by spaces; an axis is a train option named with '_'\n"
             "or '-' and its values separated by commas, e.g.\n"
             "\"mode=O2,O3 dtype=fp16,bf16 scale_factor=2,4 seed=1,2\".  The runs\n"
             "are the grid's points, the first axis slowest; run k trains into\n"
             "DIR/runs/<k>-<values>."},
    {.name = "",
     .label = "train options",
     .help = "any other `ampscope train` option (see its --help), given to\n"
             "every run: --net mlp --steps 500 --loss-scale pytorch ..."},
    {.name = "out",
     .kind = OPT_DIR,
     .offset = F(out_dir),
     .help = "the sweep folder (created if missing; its parent must exist)"},
    {.name = "force",
     .kind = OPT_FLAG,
     .offset = F(force),
     .help = "replace what --out DIR holds if it is not this sweep's (only the\n"
             "files ampscope writes; says what it removes)"},
    {.name = "jobs",
     .kind = OPT_INT,
     .offset = F(jobs),
     .imin = 1,
     .imax = 1024,
     .help = "runs at a time on this machine, or on each MPI rank (default 1);\n"
             "each run's BLAS uses one thread (OPENBLAS_NUM_THREADS=1 unless\n"
             "set), so give the number of cores"},
    {.name = "no-progress",
     .kind = OPT_FLAG,
     .offset = OPT_NO_FIELD,
     .parse = set_no_progress,
     .help = "no line per finished run on stderr"},
    {.name = "resume",
     .kind = OPT_DIR,
     .offset = OPT_NO_FIELD,
     .parse = refuse_resume,
     .label = ""},
    {.name = NULL},
};
#undef F

static void help(FILE *out)
{
    fprintf(out,
            "usage: ampscope sweep --grid \"AXIS=V1,V2 AXIS=V1,V2 ...\" [train options] --out DIR\n"
            "                      [--jobs N] [--no-progress]\n"
            "       mpirun -np N ampscope sweep ... (the same, over N ranks)\n"
            "\n"
            "Trains every point of a grid with `ampscope train`, each run in a process of its\n"
            "own, and writes DIR/summary.csv: one row per run with the grid's values, "
            "final_loss\n"
            "(the mean of the last 10%% of the steps), test_accuracy, skipped_steps, "
            "final_scale,\n"
            "mean_underflow_frac (activation gradients flushed in the target format, mean over\n"
            "the recorded rows), lost_update_frac (lost / nonzero updates), wall_seconds,\n"
            "status (ok, diverged, failed; pending while not run) and the reason.\n"
            "\n");
    cli_print_options(out, sweep_table, 17);
    fprintf(out,
            "\n"
            "Every option is checked for every point before anything runs.  Started again with\n"
            "the same command, the sweep skips the runs that finished (DIR/runs/<run>/done.json)\n"
            "and redoes the others from scratch; a folder holding another grid is refused.\n"
            "A run that fails (crash, error) is recorded as failed and the sweep goes on.\n"
            "Under mpirun (or srun) rank 0 hands the runs out to whichever rank has a free slot\n"
            "and trains in its own slots too; DIR must be on a file system all ranks see.\n"
            "On SIGINT/SIGTERM no new run starts and the runs in flight stop after their step.\n"
            "\n"
            "exit status: 0 every run ended ok or diverged, 2 bad input (nothing ran),\n"
            "1 runs failed or the sweep was stopped (the same command again goes on).\n");
}

/* The sweep's status as the program's, with its message. */
static int sweep_status(int rc, const char *msg)
{
    if (rc == SW_OK) return CLI_OK;
    return cli_error(rc == SW_EINPUT ? CLI_EINPUT : CLI_EFAIL, "%s", msg);
}

static int parse_and_check(int argc, char **argv, sweep_options *o, char **keys)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        if (cli_is_help(a)) {
            help(stdout);
            return 1;
        }
        const opt_spec *row = strncmp(a, "--", 2) == 0 ? opt_find(sweep_table, a + 2) : NULL;
        if (row && !opt_takes_value(row)) {
            opt_set(row, o, NULL, NULL, 0);
            continue;
        }
        char key[64], msg[512];
        const int m = cli_next_option(argc, argv, &i, key, sizeof key, &v);
        if (m < 0) return m;
        row = opt_find(sweep_table, key);
        if (row && !opt_takes_value(row))
            return cli_error(CLI_EINPUT, "option --%s takes no value", key);
        if (row) {
            if (opt_set(row, o, v, msg, sizeof msg) != 0) return cli_error(CLI_EINPUT, "%s", msg);
            continue;
        }
        /* a train option for every run, checked by train itself */
        char *k = malloc(strlen(key) + 3);
        if (!k) return cli_error(CLI_EFAIL, "out of memory");
        sprintf(k, "--%s", key);
        keys[o->n_shared / 2] = k;
        o->shared[o->n_shared++] = k;
        o->shared[o->n_shared++] = v;
    }
    if (!o->grid_text) return cli_error(CLI_EINPUT, "--grid is required");
    if (!o->out_dir || !*o->out_dir) return cli_error(CLI_EINPUT, "--out DIR is required");
    char msg[4096];
    if (sw_grid_parse(o->grid_text, &o->grid, msg, sizeof msg) != 0)
        return cli_error(CLI_EINPUT, "%s", msg);
    return sweep_status(sweep_validate(o, msg, sizeof msg), msg);
}

int cmd_sweep(int argc, char **argv)
{
    cli_set_context("sweep");
    sweep_options o;
    memset(&o, 0, sizeof o);
    o.jobs = 1;
    o.progress = true;
    o.run_point = cmd_train_point;
    o.version = AMPSCOPE_VERSION;
    o.git_revision = AMPSCOPE_GIT_REVISION;
    /* two entries (option, text) per train option: --key=value is one argument */
    o.shared = calloc(2 * (size_t)argc + 1, sizeof *o.shared);
    char **keys = calloc((size_t)argc + 1, sizeof *keys);
    char msg[4096];
    int rc = !o.shared || !keys ? cli_error(CLI_EFAIL, "out of memory")
                                : parse_and_check(argc, argv, &o, keys);
    if (rc == 1)
        rc = CLI_OK; /* --help */
    else if (rc == CLI_OK)
        rc = sweep_status(sweep_run(&o, msg, sizeof msg), msg);
    /* under mpirun every rank sees the same bad input: rank 0 says it */
    if (rc != CLI_OK && sw_launcher_rank(NULL) > 0 && !freopen("/dev/null", "w", stderr))
        rc = CLI_EFAIL;
    sw_grid_free(&o.grid);
    for (int i = 0; keys && keys[i]; i++)
        free(keys[i]);
    free(keys);
    free(o.shared);
    return rc;
}
