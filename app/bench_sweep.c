/* bench_sweep.c: `ampscope bench sweep`, the throughput of `ampscope sweep`
 * on one fixed grid with 1, 2, ... local jobs and, under mpirun, 1, 2, ...
 * MPI ranks, each as a speedup over the first count of its kind measured in
 * the same run.
 *
 * Each sweep is this very program (/proc/self/exe) started as a child, so
 * what is timed is what a user gets: process start, data loading, training,
 * the records and the summary.  Every sweep trains into a fresh folder under
 * one temporary directory, removed at the end.  A speedup only means
 * something if the sweeps did the same work, so each summary.csv must match
 * the first sweep's on every column but wall_seconds.
 */
#define _XOPEN_SOURCE 700 /* mkdtemp, readlink */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "cli_options.h"
#include "commands.h"
#include "util.h"

#define MAX_COUNTS 8
#define MAX_COUNT  64

static const char GRID[] = "mode=O2,O3 scale_factor=2,4 seed=1,2";
static const char GRID_QUICK[] = "mode=O2,O3 seed=1,2";

typedef struct bench_sweep_args {
    bool csv, quick, jobs_only;
    int counts[MAX_COUNTS], n_counts;
    int64_t steps;
} bench_sweep_args;

static int parse_counts(const char *v, int *counts, int *n);

static int set_ranks(const opt_spec *row, void *base, const char *value, char *msg, size_t len)
{
    (void)row;
    bench_sweep_args *a = base;
    if (parse_counts(value, a->counts, &a->n_counts) == 0) return OPT_OK;
    snprintf(msg, len, "%s", cli_error_message());
    return OPT_EINPUT;
}

static const char *max_count(void)
{
    static char text[16];
    snprintf(text, sizeof text, "%d", MAX_COUNT);
    return text;
}

static const char *grid_quick(void) { return GRID_QUICK; }

#define F(field) offsetof(bench_sweep_args, field)
static const opt_spec bench_sweep_options[] = {
    {.name = "ranks",
     .kind = OPT_CUSTOM,
     .offset = OPT_NO_FIELD,
     .parse = set_ranks,
     .metavar = "LIST",
     .help = "job and rank counts, comma-separated, each in [1, %s]\n(default 1,2)",
     .help_arg = max_count,
     .group = "options:"},
    {.name = "jobs-only",
     .kind = OPT_FLAG,
     .offset = F(jobs_only),
     .help = "local jobs only, even when mpirun is there"},
    {.name = "steps",
     .kind = OPT_I64,
     .offset = F(steps),
     .imin = 1,
     .imax = 100000,
     .help = "training steps per run (default 20; --quick: 5)"},
    {.name = "csv",
     .kind = OPT_FLAG,
     .offset = F(csv),
     .help = "CSV on standard output instead of the table"},
    {.name = "quick",
     .kind = OPT_FLAG,
     .offset = F(quick),
     .help = "a smaller grid (%s) and fewer steps (smoke tests)",
     .help_arg = grid_quick},
    {.name = NULL},
};
#undef F

static void help(FILE *out)
{
    fprintf(out,
            "usage: ampscope bench sweep [--ranks LIST] [--jobs-only] [--steps N] [--csv] "
            "[--quick]\n"
            "\n"
            "Times `ampscope sweep` on one fixed grid of mlp runs on the cpu backend\n"
            "(%s, --loss-scale pytorch, --subset 512, no statistics,\n"
            "histograms or traces), once per count in LIST with --jobs COUNT on this machine\n"
            "and, when mpirun is on PATH and this ampscope has MPI, once per count with\n"
            "`mpirun --oversubscribe -np COUNT`.  Each row gives the wall time of the whole\n"
            "sweep (process starts included), runs per minute and the speedup over the first\n"
            "count of its kind, measured in the same run.  Every sweep must exit 0 and write\n"
            "the same summary.csv as the first one but for wall_seconds; a row that does not\n"
            "says so and the exit status is 1.  The sweeps run in a temporary directory\n"
            "($TMPDIR or /tmp), removed at the end.\n"
            "\n",
            GRID);
    cli_print_options(out, bench_sweep_options, 17);
}

/* ---- one sweep ------------------------------------------------------------------------------ */
typedef struct sweep_row {
    bool mpi;
    int count;
    double seconds;
    int exit_status; /* of the sweep (or mpirun); -signal when killed */
    char check[160];
} sweep_row;

typedef struct bsweep {
    char exe[PATH_MAX];
    char mpirun[PATH_MAX];
    char tmp[PATH_MAX];
    const char *grid;
    int steps;
    int runs;
} bsweep;

/* Runs one sweep into TMP/<how>-<count>, its output into TMP/<how>-<count>.log.
 * Returns CLI_OK (the sweep's own status is in r), or CLI_EFAIL when it could
 * not be started or was stopped. */
static int run_sweep(const bsweep *b, sweep_row *r, char *out_dir, size_t out_size)
{
    const char *how = r->mpi ? "ranks" : "jobs";
    char log[PATH_MAX + 64], steps[16], count[16];
    snprintf(out_dir, out_size, "%s/%s-%d", b->tmp, how, r->count);
    snprintf(log, sizeof log, "%s.log", out_dir);
    snprintf(steps, sizeof steps, "%d", b->steps);
    snprintf(count, sizeof count, "%d", r->count);
    const char *argv[48];
    int n = 0;
    if (r->mpi) {
        argv[n++] = b->mpirun;
        argv[n++] = "--oversubscribe";
        if (geteuid() == 0) argv[n++] = "--allow-run-as-root";
        argv[n++] = "-np";
        argv[n++] = count;
    }
    argv[n++] = b->exe;
    const char *rest[] = {
        "sweep",   "--grid",        b->grid, "--net",         "mlp", "--steps",
        steps,     "--subset",      "512",   "--stats-every", "0",   "--hist-every",
        "0",       "--trace-every", "0",     "--backend",     "cpu", "--loss-scale",
        "pytorch", "--no-progress", "--out", out_dir};
    for (size_t i = 0; i < sizeof rest / sizeof *rest; i++)
        argv[n++] = rest[i];
    if (!r->mpi) {
        argv[n++] = "--jobs";
        argv[n++] = count;
    }
    argv[n] = NULL;

    fflush(stdout);
    const double t0 = ut_seconds();
    const pid_t pid = fork();
    if (pid < 0) return cli_error(CLI_EFAIL, "fork: %s", strerror(errno));
    if (pid == 0) {
        const int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, STDOUT_FILENO);
            dup2(fd, STDERR_FILENO);
            close(fd);
        }
        execv(argv[0], (char *const *)argv);
        fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int status = 0;
    bool forwarded = false;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) return cli_error(CLI_EFAIL, "waitpid: %s", strerror(errno));
        /* the terminal's SIGINT reaches the child too; a SIGTERM sent to us
         * alone is passed on, once (sweep and mpirun stop cleanly on it) */
        if (ut_stop_requested() && !forwarded) {
            kill(pid, SIGTERM);
            forwarded = true;
        }
    }
    r->seconds = ut_seconds() - t0;
    r->exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
    if (ut_stop_requested())
        return cli_error(CLI_EFAIL, "stopped by signal %d", ut_stop_requested());
    return CLI_OK;
}

/* ---- summaries ------------------------------------------------------------------------------ */
/* The text of a file, or NULL. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, len = 0;
    char *text = malloc(cap);
    for (size_t got; text && (got = fread(text + len, 1, cap - len - 1, f)) > 0;) {
        len += got;
        if (cap - len < 2) {
            char *more = realloc(text, cap *= 2);
            if (!more) free(text);
            text = more;
        }
    }
    fclose(f);
    if (text) text[len] = '\0';
    return text;
}

/* Blanks field `column` (0-based) of every line of text, in place: the
 * fields before it never hold commas (grid values and numbers). */
static void drop_column(char *text, int column)
{
    char *line = text;
    while (*line) {
        char *end = strchr(line, '\n');
        if (!end) end = line + strlen(line);
        char *p = line;
        for (int c = 0; c < column && p < end; p++)
            if (*p == ',') c++;
        char *q = p;
        while (q < end && *q != ',')
            q++;
        memmove(p, q, strlen(q) + 1);
        end -= q - p;
        line = *end ? end + 1 : end;
    }
}

/* DIR/summary.csv without its wall_seconds column, or NULL with why not in
 * check. */
static char *load_summary(const char *dir, char *check, size_t size)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/summary.csv", dir);
    char *text = slurp(path);
    if (!text) {
        snprintf(check, size, "no summary.csv");
        return NULL;
    }
    const char *wall = strstr(text, "wall_seconds");
    const char *eol = strchr(text, '\n');
    if (!wall || (eol && wall > eol)) {
        snprintf(check, size, "summary.csv has no wall_seconds column");
        free(text);
        return NULL;
    }
    int column = 0;
    for (const char *p = text; p < wall; p++)
        column += *p == ',';
    drop_column(text, column);
    return text;
}

/* ---- output --------------------------------------------------------------------------------- */
static void print_row(bool csv, const bsweep *b, const sweep_row *r, double baseline)
{
    const char *how = r->mpi ? "ranks" : "jobs";
    const double per_minute = 60.0 * b->runs / r->seconds, speedup = baseline / r->seconds;
    if (csv)
        printf("%s,%d,%d,%d,%.3f,%.2f,%.2f,%s\n", how, r->count, b->runs, b->steps, r->seconds,
               per_minute, speedup, r->check);
    else
        printf("%-6s %5d %5d %9.2f %9.2f %8.2f  %s\n", how, r->count, b->runs, r->seconds,
               per_minute, speedup, r->check);
    fflush(stdout);
}

static int parse_counts(const char *v, int *counts, int *n)
{
    *n = 0;
    const char *p = v;
    for (;;) {
        const char *end = strchr(p, ',');
        const size_t len = end ? (size_t)(end - p) : strlen(p);
        char item[24];
        int64_t x;
        if (*n == MAX_COUNTS || len == 0 || len >= sizeof item)
            return cli_error(CLI_EINPUT, "--ranks wants at most %d counts in [1, %d], got '%s'",
                             MAX_COUNTS, MAX_COUNT, v);
        memcpy(item, p, len);
        item[len] = '\0';
        if (cli_parse_int(item, 1, MAX_COUNT, &x) != 0)
            return cli_error(CLI_EINPUT, "--ranks wants at most %d counts in [1, %d], got '%s'",
                             MAX_COUNTS, MAX_COUNT, v);
        counts[(*n)++] = (int)x;
        if (!end) return CLI_OK;
        p = end + 1;
    }
}

int bench_sweep(int argc, char **argv)
{
    cli_set_context("bench sweep");
    bench_sweep_args args = {.counts = {1, 2}, .n_counts = 2};
    bool want_help;
    const int prc = cli_parse_options(bench_sweep_options, &args, argc, argv, &want_help, NULL);
    if (prc) return prc;
    if (want_help) {
        help(stdout);
        return CLI_OK;
    }
    const bool csv = args.csv, quick = args.quick, jobs_only = args.jobs_only;
    const int *counts = args.counts, n_counts = args.n_counts;
    const int64_t steps = args.steps;

    bsweep b;
    memset(&b, 0, sizeof b);
    b.grid = quick ? GRID_QUICK : GRID;
    b.runs = quick ? 4 : 8;
    b.steps = steps ? (int)steps : quick ? 5 : 20;
    const ssize_t len = readlink("/proc/self/exe", b.exe, sizeof b.exe - 1);
    if (len <= 0) return cli_error(CLI_EFAIL, "readlink /proc/self/exe: %s", strerror(errno));
    b.exe[len] = '\0';
    const char *why_no_mpi = NULL;
    if (jobs_only)
        why_no_mpi = "--jobs-only";
    else if (!ut_find_on_path("mpirun", b.mpirun, sizeof b.mpirun))
        why_no_mpi = "no mpirun on PATH";
#if !AMPSCOPE_HAVE_MPI
    else
        why_no_mpi = "this ampscope was built without MPI";
#endif
    const char *tmpdir = getenv("TMPDIR");
    snprintf(b.tmp, sizeof b.tmp, "%s/ampscope-bench-sweep-XXXXXX",
             tmpdir && *tmpdir ? tmpdir : "/tmp");
    if (!mkdtemp(b.tmp)) return cli_error(CLI_EFAIL, "mkdtemp %s: %s", b.tmp, strerror(errno));

    ut_stop_clear();
    ut_stop_on_signals(false); /* no SA_RESTART: waitpid returns EINTR */

    if (csv) {
        printf("how,count,runs,steps,wall_seconds,runs_per_minute,speedup,check\n");
    } else {
        printf("ampscope bench sweep: %d mlp runs (%s), %d steps each, cpu backend; %ld cores "
               "online\n",
               b.runs, b.grid, b.steps, sysconf(_SC_NPROCESSORS_ONLN));
        printf("MPI: %s; speedup = wall time of the first count of the same kind / this row's\n\n",
               why_no_mpi ? why_no_mpi : b.mpirun);
        printf("%-6s %5s %5s %9s %9s %8s  %s\n", "how", "count", "runs", "wall s", "runs/min",
               "speedup", "check");
    }
    fflush(stdout);

    int rc = CLI_OK;
    bool all_ok = true;
    char *reference = NULL;
    for (int kind = 0; kind < 2 && rc == CLI_OK; kind++) {
        if (kind == 1 && why_no_mpi) break;
        double baseline = 0;
        for (int i = 0; i < n_counts && rc == CLI_OK; i++) {
            sweep_row r;
            memset(&r, 0, sizeof r);
            r.mpi = kind == 1;
            r.count = counts[i];
            char dir[PATH_MAX + 32];
            rc = run_sweep(&b, &r, dir, sizeof dir);
            if (rc) break;
            bool ok = false;
            char *summary = NULL;
            if (r.exit_status != 0)
                snprintf(r.check, sizeof r.check, "the sweep exited with status %d (see its log)",
                         r.exit_status);
            else if ((summary = load_summary(dir, r.check, sizeof r.check)) != NULL) {
                /* the first complete summary is what the others must match */
                ok = !reference || strcmp(summary, reference) == 0;
                snprintf(r.check, sizeof r.check, ok ? "ok" : "summary.csv differs from the first");
                if (!reference) {
                    reference = summary;
                    summary = NULL;
                }
            }
            free(summary);
            all_ok = all_ok && ok;
            if (i == 0) baseline = r.seconds;
            print_row(csv, &b, &r, baseline);
        }
    }
    ut_restore_signals();
    free(reference);
    if (rc == CLI_OK && !all_ok) {
        /* the failed sweep's folder and log stay for a look */
        rc = cli_error(CLI_EFAIL, "a sweep failed or disagreed with the first; its files are in %s",
                       b.tmp);
    } else {
        ut_remove_tree(b.tmp);
    }
    return rc;
}
