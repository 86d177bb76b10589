/* sweep_train.c: how a sweep uses `ampscope train` (sweep_internal.h):
 * every point's command line validated through train's own parser in this
 * process, and each run started as `ampscope train` in a child process.
 * Everything the sweep knows about train's command line is here. */
#define _GNU_SOURCE /* prctl */

#include "sweep_internal.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"

char **sw_train_argv(const sweep_options *o, size_t run, const char *out_dir)
{
    const size_t n = 1 + (size_t)o->n_shared + 2 * o->grid.n_axes + 3 + 1;
    char **argv = calloc(n, sizeof *argv);
    if (!argv) return NULL;
    size_t k = 0;
    argv[k++] = (char *)"train";
    for (int i = 0; i < o->n_shared; i++)
        argv[k++] = (char *)o->shared[i];
    for (size_t a = 0; a < o->grid.n_axes; a++) {
        argv[k++] = o->grid.axes[a].option;
        argv[k++] = o->grid.axes[a].values[sw_grid_value(&o->grid, run, a)];
    }
    argv[k++] = (char *)"--no-progress";
    argv[k++] = (char *)"--out";
    argv[k++] = (char *)out_dir;
    argv[k] = NULL;
    return argv;
}

/* ---- validation through train's own parser --------------------------------------------------- */
/* train checks its options, the net and the scaler before it touches its
 * --out folder, and refuses a --out that is not a folder; /dev/null as
 * --out therefore stops it right after the checks, with nothing made.
 * (If train ever checks in another order, every valid grid is refused
 * with "... /dev/null: not a directory" missing, which the tests see.) */
#define DRY_OUT "/dev/null"

/* 1 when argv passed train's checks; 0 with train's message in why. */
static int dry_run(char **argv, char *why, size_t len)
{
    int argc = 0;
    while (argv[argc])
        argc++;
    fflush(stdout);
    const int rc = cmd_train(argc, argv);
    const char *m = cli_error_message();
    cli_set_context("sweep");
    if (rc == CLI_EINPUT && strstr(m, "--out " DRY_OUT ": not a directory")) return 1;
    snprintf(why, len, "%s", rc == CLI_OK ? "train accepted --out " DRY_OUT : m);
    return 0;
}

int sweep_validate(const sweep_options *o)
{
    char why[1024];
    const sw_grid *g = &o->grid;
    for (size_t a = 0; a < g->n_axes; a++)
        for (int i = 0; i + 1 < o->n_shared; i += 2)
            if (strcmp(o->shared[i], g->axes[a].option) == 0)
                return cli_error(CLI_EINPUT, "%s is both a grid axis and a shared option",
                                 g->axes[a].option);
    /* the shared options alone, then each axis with them: an unknown
     * option is named as such; other complaints may come from a
     * combination, so they wait for the whole points */
    char **argv =
        sw_train_argv(&(sweep_options){.shared = o->shared, .n_shared = o->n_shared}, 0, DRY_OUT);
    if (!argv) return cli_error(CLI_EFAIL, "out of memory");
    if (!dry_run(argv, why, sizeof why) && strncmp(why, "unknown option '", 16) == 0) {
        free(argv);
        return cli_error(CLI_EINPUT, "%s", why);
    }
    free(argv);
    for (size_t a = 0; a < g->n_axes; a++) {
        sw_grid one = {.axes = &g->axes[a], .n_axes = 1, .n_runs = g->axes[a].n_values};
        argv = sw_train_argv(
            &(sweep_options){.shared = o->shared, .n_shared = o->n_shared, .grid = one}, 0,
            DRY_OUT);
        if (!argv) return cli_error(CLI_EFAIL, "out of memory");
        const int ok = dry_run(argv, why, sizeof why);
        free(argv);
        if (!ok && strncmp(why, "unknown option '", 16) == 0)
            return cli_error(CLI_EINPUT,
                             "--grid: unknown axis '%s': 'ampscope train' has no option %s "
                             "(see 'ampscope train --help')",
                             g->axes[a].name, g->axes[a].option);
    }
    for (size_t k = 0; k < g->n_runs; k++) {
        argv = sw_train_argv(o, k, DRY_OUT);
        if (!argv) return cli_error(CLI_EFAIL, "out of memory");
        const int ok = dry_run(argv, why, sizeof why);
        free(argv);
        if (!ok) {
            char point[512];
            size_t n = 0;
            point[0] = '\0';
            for (size_t a = 0; a < g->n_axes && n < sizeof point; a++)
                n += (size_t)snprintf(point + n, sizeof point - n, "%s%s=%s", a ? " " : "",
                                      g->axes[a].name, g->axes[a].values[sw_grid_value(g, k, a)]);
            return cli_error(CLI_EINPUT, "--grid run %zu (%s): %s", k, point, why);
        }
    }
    return CLI_OK;
}

/* ---- starting a run -------------------------------------------------------------------------- */
int sw_train_start(const sweep_options *o, size_t run, const char *dir, int log_fd, pid_t *pid,
                   char *reason, size_t len)
{
    char **argv = sw_train_argv(o, run, dir);
    if (!argv) {
        close(log_fd);
        snprintf(reason, len, "out of memory");
        return -1;
    }
    fflush(stdout);
    fflush(stderr);
    const pid_t parent = getpid();
    const pid_t child = fork();
    if (child == 0) {
        /* the run dies with the process that watches it */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(127);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        if (dup2(log_fd, STDOUT_FILENO) < 0 || dup2(log_fd, STDERR_FILENO) < 0) _exit(127);
        close(log_fd);
        char *args[1024];
        int n = 0;
        args[n++] = (char *)"ampscope";
        for (int i = 0; argv[i] && n < 1023; i++)
            args[n++] = argv[i];
        args[n] = NULL;
        execv("/proc/self/exe", args);
        dprintf(STDERR_FILENO, "ampscope train: cannot start /proc/self/exe: %s\n",
                strerror(errno));
        _exit(127);
    }
    free(argv);
    close(log_fd);
    if (child < 0) {
        snprintf(reason, len, "fork: %s", strerror(errno));
        return -1;
    }
    *pid = child;
    return 0;
}
