/* sweep_train.c: how a sweep uses the training library (sweep_internal.h):
 * every point's train_options filled through train's option table and
 * checked as train_run checks them, in this process, before anything runs;
 * and each run trained by the program's run_point on those options in a
 * child process.  Everything the sweep knows about training is here. */
#define _GNU_SOURCE /* prctl */

#include "sweep_internal.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "train.h"
#include "train_options.h"
#include "util.h"

/* ---- a point's options ----------------------------------------------------------------------- */
/* One "--key" and its text into t, with the messages of train's command
 * line (a flag takes no text: the text is then an unexpected argument). */
static int set_one(train_options *t, const char *opt, const char *text, char *msg, size_t len)
{
    const char *key = opt + 2;
    const opt_spec *row = opt_find(topt_table, key);
    if (!row)
        return ut_fail(msg, len, TRAIN_EINPUT,
                       "unknown option '--%s' (see 'ampscope train --help')", key);
    if (opt_takes_value(row)) return topt_set(t, key, text, msg, len);
    const int rc = topt_set(t, key, NULL, msg, len);
    if (rc) return rc;
    return ut_fail(msg, len, TRAIN_EINPUT, "unexpected argument '%s' (see 'ampscope train --help')",
                   text);
}

/* Run k of grid g: the shared options, the axes' values, --no-progress,
 * --out dir, then finished.  0 or TRAIN_EINPUT with train's message. */
static int point_options(const sweep_options *o, const sw_grid *g, size_t run, const char *dir,
                         train_options *t, char *msg, size_t len)
{
    train_options_default(t);
    t->version = o->version;
    t->git_revision = o->git_revision;
    t->progress = true;
    int rc = 0;
    for (int i = 0; i + 1 < o->n_shared && !rc; i += 2)
        rc = set_one(t, o->shared[i], o->shared[i + 1], msg, len);
    for (size_t a = 0; a < g->n_axes && !rc; a++)
        rc = set_one(t, g->axes[a].option, g->axes[a].values[sw_grid_value(g, run, a)], msg, len);
    if (!rc) rc = topt_set(t, "no-progress", NULL, msg, len);
    if (!rc) rc = topt_set(t, "out", dir, msg, len);
    if (!rc) rc = topt_finish(t, msg, len);
    t->owner_dir = o->out_dir; /* the runs lie in the sweep's folder, which it holds */
    return rc;
}

/* ---- validation ------------------------------------------------------------------------------ */
/* 1 when run k of g passes train's checks (the options, then what
 * train_run checks before it creates anything); 0 with train's message in
 * why; -1 when out of memory. */
static int dry_run(const sweep_options *o, const sw_grid *g, size_t run, char *why, size_t len)
{
    /* large (the options as given): not on the stack */
    train_options *t = malloc(sizeof *t);
    if (!t) return -1;
    int rc = point_options(o, g, run, "/dev/null", t, why, len);
    if (!rc) rc = train_check(t, why, len);
    free(t);
    return rc == 0;
}

int sweep_validate(const sweep_options *o, char *msg, size_t len)
{
    char why[1024];
    const sw_grid *g = &o->grid;
    for (size_t a = 0; a < g->n_axes; a++)
        for (int i = 0; i + 1 < o->n_shared; i += 2)
            if (strcmp(o->shared[i], g->axes[a].option) == 0)
                return ut_fail(msg, len, SW_EINPUT, "%s is both a grid axis and a shared option",
                               g->axes[a].option);
    /* the shared options alone, then each axis with them: an unknown
     * option is named as such; other complaints may come from a
     * combination, so they wait for the whole points */
    const sw_grid none = {.axes = NULL, .n_axes = 0, .n_runs = 1};
    int ok = dry_run(o, &none, 0, why, sizeof why);
    if (ok < 0) return ut_fail(msg, len, SW_EFAIL, "out of memory");
    if (!ok && strncmp(why, "unknown option '", 16) == 0)
        return ut_fail(msg, len, SW_EINPUT, "%s", why);
    for (size_t a = 0; a < g->n_axes; a++) {
        const sw_grid one = {.axes = &g->axes[a], .n_axes = 1, .n_runs = g->axes[a].n_values};
        ok = dry_run(o, &one, 0, why, sizeof why);
        if (ok < 0) return ut_fail(msg, len, SW_EFAIL, "out of memory");
        if (!ok && strncmp(why, "unknown option '", 16) == 0)
            return ut_fail(msg, len, SW_EINPUT,
                           "--grid: unknown axis '%s': 'ampscope train' has no option %s "
                           "(see 'ampscope train --help')",
                           g->axes[a].name, g->axes[a].option);
    }
    for (size_t k = 0; k < g->n_runs; k++) {
        ok = dry_run(o, g, k, why, sizeof why);
        if (ok < 0) return ut_fail(msg, len, SW_EFAIL, "out of memory");
        if (!ok) {
            char point[512];
            size_t n = 0;
            point[0] = '\0';
            for (size_t a = 0; a < g->n_axes && n < sizeof point; a++)
                n += (size_t)snprintf(point + n, sizeof point - n, "%s%s=%s", a ? " " : "",
                                      g->axes[a].name, g->axes[a].values[sw_grid_value(g, k, a)]);
            return ut_fail(msg, len, SW_EINPUT, "--grid run %zu (%s): %s", k, point, why);
        }
    }
    return SW_OK;
}

/* ---- starting a run -------------------------------------------------------------------------- */
int sw_train_start(const sweep_options *o, size_t run, const char *dir, int log_fd, pid_t *pid,
                   char *reason, size_t len)
{
    train_options *t = malloc(sizeof *t);
    if (!t) {
        close(log_fd);
        snprintf(reason, len, "out of memory");
        return -1;
    }
    if (point_options(o, &o->grid, run, dir, t, reason, len) != 0) {
        free(t);
        close(log_fd);
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
        /* nothing else of the parent's: not its record lock (a run outliving
         * a killed sweep for a moment must not lock out the next one), not
         * MPI's connections; as exec did with them */
        close_range(3, ~0U, 0);
        /* OpenBLAS read its thread count when this program started; a run
         * gets OPENBLAS_NUM_THREADS (sweep.c sets 1 unless given), as a
         * freshly started program would */
        ak_cpu_threads_from_env();
        const int status = o->run_point(t, o->run_ctx);
        fflush(stdout);
        fflush(stderr);
        /* nothing of the parent's: no atexit handlers, no MPI finalization */
        _exit(status);
    }
    free(t);
    close(log_fd);
    if (child < 0) {
        snprintf(reason, len, "fork: %s", strerror(errno));
        return -1;
    }
    *pid = child;
    return 0;
}
