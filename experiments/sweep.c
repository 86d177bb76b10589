/* sweep.c: a grid of training runs, local processes or MPI ranks (sweep.h).
 *
 * Every run is `ampscope train` in a child process, so the sweep survives
 * a run that crashes and records it as failed.  The process that started a
 * child reaps it, and when the run ended (ok, exit 0, or diverged, exit 3)
 * writes its completion marker; rank 0 alone keeps the table of runs and
 * rewrites summary.csv as each one ends.  A run without a marker is redone
 * from scratch by the next sweep of the same folder.
 *
 * The MPI protocol is a work queue: a rank sends REQUEST whenever one of
 * its slots is free, rank 0 answers WORK(run) or STOP, the rank sends
 * RESULT when the run ends and BYE when it has been told STOP and has
 * nothing running.  Everyone polls (MPI_Iprobe, waitpid WNOHANG, a short
 * sleep), so rank 0 trains in its own slots while it hands out work.
 *
 * What is detected: a run's crash (a signal, any exit status) from the
 * child's status; SIGTERM/SIGINT to a sweep process (forwarded to its
 * runs, which stop after a whole step; their rows say interrupted).  A rank
 * that dies is noticed only as far as the MPI library lets a job go on:
 * OpenMPI's mpirun answers a dead rank by sending SIGTERM to the others and
 * SIGKILL a second later, so rank 0 first rewrites the summary with every
 * run in flight marked failed (interrupted on rank R), then gathers what
 * results still arrive.  An MPI call that returns an error (MPI_ERRORS_RETURN
 * is set) takes that rank out and fails its runs the same way.  A run
 * whose process is killed with its rank dies too (PR_SET_PDEATHSIG), so a
 * rerun never races a stray trainer.
 */
#define _GNU_SOURCE /* prctl, strsignal */

#include "sweep.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "atomic_file.h"
#include "cli.h"
#include "commands.h"
#include "record.h"
#include "util.h"

#if AMPSCOPE_HAVE_MPI
#include <mpi.h>
#endif

/* ---- the grid -------------------------------------------------------------------------------- */
static int grid_fail(char *msg, size_t len, const char *fmt, const char *a, const char *b)
{
    snprintf(msg, len, fmt, a, b);
    return -1;
}

static bool name_ok(const char *s)
{
    if (!*s) return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_' || *s == '-'))
            return false;
    return true;
}

void sw_grid_free(sw_grid *g)
{
    for (size_t a = 0; g->axes && a < g->n_axes; a++) {
        free(g->axes[a].name);
        free(g->axes[a].option);
        for (size_t v = 0; v < g->axes[a].n_values; v++)
            free(g->axes[a].values[v]);
        free(g->axes[a].values);
    }
    free(g->axes);
    memset(g, 0, sizeof *g);
}

/* One "name=v1,v2" word into axis x. */
static int parse_axis(const char *word, sw_axis *x, char *msg, size_t len)
{
    const char *eq = strchr(word, '=');
    if (!eq) return grid_fail(msg, len, "--grid: '%s' is not AXIS=V1,V2,...%s", word, "");
    x->name = strndup(word, (size_t)(eq - word));
    if (!x->name) return grid_fail(msg, len, "%s%s", "out of memory", "");
    if (!*x->name) return grid_fail(msg, len, "--grid: '%s' has no axis name%s", word, "");
    if (!name_ok(x->name))
        return grid_fail(msg, len, "--grid: '%s' is not an option name%s", x->name, "");
    x->option = malloc(strlen(x->name) + 3);
    if (!x->option) return grid_fail(msg, len, "%s%s", "out of memory", "");
    strcpy(x->option, "--");
    for (const char *c = x->name; *c; c++)
        x->option[2 + (c - x->name)] = *c == '_' ? '-' : *c;
    x->option[2 + strlen(x->name)] = '\0';
    const char *own[] = {"--out", "--resume", "--no-progress", "--help"};
    for (size_t i = 0; i < sizeof own / sizeof *own; i++)
        if (strcmp(x->option, own[i]) == 0)
            return grid_fail(msg, len,
                             "--grid: '%s' cannot be an axis (the sweep sets it: each run's "
                             "folder is DIR/runs/<run>, a rerun resumes)%s",
                             x->name, "");
    const char *list = eq + 1;
    if (!*list) return grid_fail(msg, len, "--grid: axis '%s' has no values%s", x->name, "");
    size_t n = 1;
    for (const char *c = list; *c; c++)
        n += *c == ',';
    x->values = calloc(n, sizeof *x->values);
    if (!x->values) return grid_fail(msg, len, "%s%s", "out of memory", "");
    const char *p = list;
    for (size_t v = 0; v < n; v++) {
        const char *end = strchr(p, ',');
        if (!end) end = p + strlen(p);
        if (end == p)
            return grid_fail(msg, len, "--grid: axis '%s' has an empty value in '%s'", x->name,
                             list);
        x->values[v] = strndup(p, (size_t)(end - p));
        if (!x->values[v]) return grid_fail(msg, len, "%s%s", "out of memory", "");
        x->n_values = v + 1;
        if (x->values[v][0] == '-')
            return grid_fail(msg, len, "--grid: axis '%s': the value '%s' starts with '-'", x->name,
                             x->values[v]);
        for (size_t w = 0; w < v; w++)
            if (strcmp(x->values[w], x->values[v]) == 0)
                return grid_fail(msg, len, "--grid: axis '%s' repeats the value '%s'", x->name,
                                 x->values[v]);
        p = end + 1;
    }
    return 0;
}

int sw_grid_parse(const char *text, sw_grid *g, char *msg, size_t len)
{
    memset(g, 0, sizeof *g);
    char *copy = strdup(text ? text : "");
    if (!copy) return grid_fail(msg, len, "%s%s", "out of memory", "");
    size_t words = 0;
    for (char *save = NULL, *w = strtok_r(copy, " \t\n", &save); w;
         w = strtok_r(NULL, " \t\n", &save))
        words++;
    free(copy);
    if (words == 0) return grid_fail(msg, len, "--grid is empty: give AXIS=V1,V2 ...%s%s", "", "");
    g->axes = calloc(words, sizeof *g->axes);
    copy = strdup(text);
    if (!g->axes || !copy) {
        free(copy);
        return grid_fail(msg, len, "%s%s", "out of memory", "");
    }
    int rc = 0;
    g->n_runs = 1;
    char *save = NULL;
    for (char *w = strtok_r(copy, " \t\n", &save); w && !rc; w = strtok_r(NULL, " \t\n", &save)) {
        sw_axis *x = &g->axes[g->n_axes++];
        rc = parse_axis(w, x, msg, len);
        for (size_t a = 0; !rc && a + 1 < g->n_axes; a++)
            if (strcmp(g->axes[a].option, x->option) == 0)
                rc = grid_fail(msg, len, "--grid: axis '%s' is given twice (as '%s')", x->name,
                               g->axes[a].name);
        if (!rc && g->n_runs > SW_MAX_RUNS / x->n_values) {
            char max[32];
            snprintf(max, sizeof max, "%d", SW_MAX_RUNS);
            rc = grid_fail(msg, len, "--grid has more than %s runs (at axis '%s')", max, x->name);
        }
        if (!rc) g->n_runs *= x->n_values;
    }
    free(copy);
    if (rc) sw_grid_free(g);
    return rc;
}

size_t sw_grid_value(const sw_grid *g, size_t run, size_t axis)
{
    /* the first axis slowest: the last axis is the lowest digit */
    for (size_t a = g->n_axes; a-- > axis + 1;)
        run /= g->axes[a].n_values;
    return run % g->axes[axis].n_values;
}

void sw_run_name(const sw_grid *g, size_t run, char *buf, size_t len)
{
    int width = 1;
    for (size_t m = g->n_runs > 0 ? g->n_runs - 1 : 0; m >= 10; m /= 10)
        width++;
    char name[128];
    int n = snprintf(name, sizeof name, "%0*zu", width, run);
    for (size_t a = 0; a < g->n_axes && n < 120; a++) {
        const char *v = g->axes[a].values[sw_grid_value(g, run, a)];
        name[n++] = '-';
        for (; *v && n < 120; v++) {
            const char c = *v;
            const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                              (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
            name[n++] = safe ? c : '_';
        }
    }
    name[n] = '\0';
    snprintf(buf, len, "%s", name);
}

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

/* ---- the launcher ---------------------------------------------------------------------------- */
static int env_int(const char *name, int fallback)
{
    const char *v = getenv(name);
    int64_t n;
    return v && cli_parse_int(v, 0, INT32_MAX, &n) == 0 ? (int)n : fallback;
}

int sw_launcher_rank(int *size)
{
    static const char *const vars[][2] = {{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                          {"PMI_RANK", "PMI_SIZE"},
                                          {"PMIX_RANK", "SLURM_NTASKS"}};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        if (getenv(vars[i][0])) {
            if (size) *size = env_int(vars[i][1], 2); /* unknown: at least "more than one" */
            return env_int(vars[i][0], 0);
        }
    if (size) *size = 1;
    return 0;
}

/* ---- the state of a sweep -------------------------------------------------------------------- */
typedef enum run_state {
    RS_PENDING = 0,
    RS_RUNNING = 1,
    RS_OK = 2,
    RS_DIVERGED = 3,
    RS_FAILED = 4
} run_state;

static const char *state_name(run_state s)
{
    static const char *const names[] = {"pending", "running", "ok", "diverged", "failed"};
    return names[s];
}

/* What the process that ran a run tells rank 0 (on MPI as bytes: the
 * ranks are assumed to share one architecture). */
typedef struct sw_result {
    int32_t run;
    int32_t state; /* RS_OK, RS_DIVERGED, RS_FAILED, or RS_PENDING: not started */
    double wall;
    char reason[440];
} sw_result;

typedef struct metrics {
    double final_loss, test_accuracy, final_scale, underflow, lost;
    int64_t skipped;
} metrics;

typedef struct row {
    run_state state;
    int rank; /* where it runs or ran */
    double wall;
    bool have_metrics;
    metrics m;
    char reason[440];
} row;

typedef struct slot {
    pid_t pid; /* 0: free */
    size_t run;
    double t0;
} slot;

typedef struct sweep {
    const sweep_options *o;
    size_t n;
    char (*names)[128];
    row *rows;
    slot *slots;
    size_t *queue, q_head, q_len;
    size_t finished; /* rows ok, diverged or failed */
    int rank, size;
    bool stopping; /* a signal came: no new runs */
    double t0;
} sweep;

static void nap(void)
{
    const struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

static void path_in(const sweep *s, char *buf, size_t len, size_t run, const char *file)
{
    if (file)
        snprintf(buf, len, "%s/runs/%s/%s", s->o->out_dir, s->names[run], file);
    else
        snprintf(buf, len, "%s/runs/%s", s->o->out_dir, s->names[run]);
}

/* snprintf's "%s" without the compiler's truncation warning: cut at len. */
static void copy_text(char *dst, size_t len, const char *src)
{
    const size_t n = strnlen(src, len - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* One line for a CSV field: no commas, quotes or line breaks. */
static void one_line(char *s)
{
    for (; *s; s++)
        if (*s == ',' || *s == '"')
            *s = ';';
        else if (*s == '\n' || *s == '\r')
            *s = ' ';
}

/* ---- markers --------------------------------------------------------------------------------- */
static int write_marker(const sweep *s, const sw_result *r, int exit_status, char *msg, size_t len)
{
    char path[4400], host[256] = "";
    path_in(s, path, sizeof path, (size_t)r->run, SW_DONE_JSON);
    gethostname(host, sizeof host - 1);
    json_t *j = json_pack("{s:s, s:i, s:f, s:s, s:s, s:i}", "status", state_name(r->state),
                          "exit_status", exit_status, "wall_seconds", r->wall, "reason", r->reason,
                          "host", host, "rank", s->rank);
    if (!j) return an_fail(msg, len, AN_ENOMEM, "%s: out of memory", path);
    const int rc = rec_write_json(path, j, JSON_INDENT(2), msg, len);
    json_decref(j);
    return rc;
}

/* A valid marker: true with its state, wall time and reason in r. */
static bool read_marker(const sweep *s, size_t run, sw_result *r)
{
    char path[4400];
    path_in(s, path, sizeof path, run, SW_DONE_JSON);
    json_t *j = json_load_file(path, 0, NULL);
    const char *status = NULL, *reason = "";
    double wall = 0;
    bool ok = j && json_unpack(j, "{s:s, s:F, s?s}", "status", &status, "wall_seconds", &wall,
                               "reason", &reason) == 0;
    if (ok && strcmp(status, "ok") == 0)
        r->state = RS_OK;
    else if (ok && strcmp(status, "diverged") == 0)
        r->state = RS_DIVERGED;
    else
        ok = false;
    if (ok) {
        r->run = (int32_t)run;
        r->wall = wall;
        snprintf(r->reason, sizeof r->reason, "%s", reason);
    }
    json_decref(j);
    return ok;
}

/* ---- the record of a finished run ------------------------------------------------------------ */
static int read_metrics(const sweep *s, size_t run, metrics *m, char *msg, size_t len)
{
    char p[4400];
    path_in(s, p, sizeof p, run, NULL);
    rec_run_summary sum;
    if (rec_summarize_run(p, &sum, msg, len) != AN_OK) return -1;
    m->skipped = sum.skipped;
    m->final_loss = sum.final_loss;
    m->final_scale = sum.final_scale;
    m->test_accuracy = sum.test_accuracy;
    size_t n = 0;

    /* undefined fractions (no nonzero gradient in a row) do not count */
    m->underflow = NAN;
    path_in(s, p, sizeof p, run, REC_TENSORS_CSV);
    if (access(p, F_OK) == 0) {
        rec_tensor_row *t = NULL;
        if (rec_read_tensors(p, &t, &n, msg, len) != 0) return -1;
        double total = 0;
        size_t rows = 0;
        for (size_t i = 0; i < n; i++)
            if (t[i].kind == REC_ACTIVATION_GRAD && !isnan(t[i].flushed_frac_of_nonzero)) {
                total += t[i].flushed_frac_of_nonzero;
                rows++;
            }
        free(t);
        if (rows) m->underflow = total / (double)rows;
    }

    m->lost = NAN;
    path_in(s, p, sizeof p, run, REC_UPDATES_CSV);
    if (access(p, F_OK) == 0) {
        rec_update_row *u = NULL;
        if (rec_read_updates(p, &u, &n, msg, len) != 0) return -1;
        double lost = 0, nonzero = 0;
        for (size_t i = 0; i < n; i++) {
            lost += (double)u[i].lost;
            nonzero += (double)u[i].nonzero_updates;
        }
        free(u);
        if (nonzero > 0) m->lost = lost / nonzero;
    }
    return 0;
}

/* ---- summary.csv ----------------------------------------------------------------------------- */
static void put_real(FILE *f, double v, bool empty_if_nan)
{
    if (!(empty_if_nan && isnan(v))) fprintf(f, "%.9g", v);
    fputc(',', f);
}

/* The reason of a run in flight that no result came for. */
static const char *interrupted(const sweep *s, int rank)
{
    static char text[128];
    if (s->size > 1)
        snprintf(text, sizeof text, "interrupted on rank %d (the sweep was stopped or a rank died)",
                 rank);
    else
        snprintf(text, sizeof text, "interrupted (the sweep was stopped)");
    return text;
}

static int write_summary(const sweep *s)
{
    char path[4200], msg[512];
    snprintf(path, sizeof path, "%s/summary.csv", s->o->out_dir);
    af_file f;
    if (af_begin(&f, path, msg, sizeof msg) != 0) {
        fprintf(stderr, "ampscope sweep: %s\n", msg);
        return -1;
    }
    const sw_grid *g = &s->o->grid;
    for (size_t a = 0; a < g->n_axes; a++)
        fprintf(f.fp, "%s,", g->axes[a].name);
    fprintf(f.fp, "%s\n", SW_SUMMARY_HEADER);
    for (size_t k = 0; k < s->n; k++) {
        const row *r = &s->rows[k];
        for (size_t a = 0; a < g->n_axes; a++)
            fprintf(f.fp, "%s,", g->axes[a].values[sw_grid_value(g, k, a)]);
        if (r->have_metrics) {
            put_real(f.fp, r->m.final_loss, false);
            put_real(f.fp, r->m.test_accuracy, true);
            fprintf(f.fp, "%lld,", (long long)r->m.skipped);
            put_real(f.fp, r->m.final_scale, false);
            put_real(f.fp, r->m.underflow, true);
            put_real(f.fp, r->m.lost, true);
        } else {
            fputs(",,,,,,", f.fp);
        }
        if (r->state == RS_OK || r->state == RS_DIVERGED || r->state == RS_FAILED)
            fprintf(f.fp, "%.3f", r->wall);
        if (r->state == RS_RUNNING && s->stopping)
            /* mpirun kills a job a second after one of its ranks died: say
             * now what becomes of the runs in flight if no result comes */
            fprintf(f.fp, ",failed,%s\n", interrupted(s, r->rank));
        else if (r->state == RS_RUNNING && s->size > 1)
            fprintf(f.fp, ",pending,running on rank %d\n", r->rank);
        else if (r->state == RS_RUNNING)
            fprintf(f.fp, ",pending,running\n");
        else
            fprintf(f.fp, ",%s,%s\n", state_name(r->state), r->reason);
    }
    if (af_commit(&f, msg, sizeof msg) != 0) {
        fprintf(stderr, "ampscope sweep: %s\n", msg);
        return -1;
    }
    return 0;
}

/* Rank 0: a run ended (or, RS_PENDING, came back unstarted). */
static void record(sweep *s, const sw_result *res, int rank, bool reused)
{
    row *r = &s->rows[res->run];
    r->state = (run_state)res->state;
    r->rank = rank;
    r->wall = res->wall;
    snprintf(r->reason, sizeof r->reason, "%s", res->reason);
    one_line(r->reason);
    r->have_metrics = false;
    if (r->state == RS_PENDING) {
        s->queue[(s->q_head + s->q_len++) % s->n] = (size_t)res->run;
        write_summary(s);
        return;
    }
    if (r->state == RS_OK || r->state == RS_DIVERGED) {
        char msg[512];
        if (read_metrics(s, (size_t)res->run, &r->m, msg, sizeof msg) == 0) {
            r->have_metrics = true;
        } else {
            r->state = RS_FAILED;
            snprintf(r->reason, sizeof r->reason, "its record cannot be read: %.380s", msg);
            one_line(r->reason);
        }
    }
    s->finished++;
    if (!reused) write_summary(s); /* the caller writes it once after the reused ones */
    if (!s->o->progress) return;
    char where[32] = "";
    if (s->size > 1) snprintf(where, sizeof where, " on rank %d", rank);
    if (reused)
        fprintf(stderr, "sweep: [%zu/%zu] %s: %s (done before, reused)\n", s->finished, s->n,
                s->names[res->run], state_name(r->state));
    else
        fprintf(stderr, "sweep: [%zu/%zu] %s: %s in %.1f s%s%s%s\n", s->finished, s->n,
                s->names[res->run], state_name(r->state), res->wall, where,
                r->reason[0] ? ": " : "", r->reason);
}

/* ---- running one training -------------------------------------------------------------------- */
/* Starts run k in slot sl; on failure to start, fills res (RS_FAILED) and
 * returns -1. */
static int start_run(sweep *s, slot *sl, size_t k, sw_result *res)
{
    char dir[4200], log[4400];
    path_in(s, dir, sizeof dir, k, NULL);
    path_in(s, log, sizeof log, k, SW_TRAIN_LOG);
    memset(res, 0, sizeof *res);
    res->run = (int32_t)k;
    res->state = RS_FAILED;
    /* an unfinished run is redone from the start, as a fresh record */
    if (access(dir, F_OK) == 0 && ut_remove_tree(dir) != 0) {
        snprintf(res->reason, sizeof res->reason, "cannot remove the unfinished run %.300s: %.60s",
                 dir, strerror(errno));
        return -1;
    }
    int fd = -1;
    if (mkdir(dir, 0777) != 0 || (fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0666)) < 0) {
        snprintf(res->reason, sizeof res->reason, "%.340s: %.60s", fd < 0 ? log : dir,
                 strerror(errno));
        return -1;
    }
    char **argv = sw_train_argv(s->o, k, dir);
    if (!argv) {
        close(fd);
        snprintf(res->reason, sizeof res->reason, "out of memory");
        return -1;
    }
    fflush(stdout);
    fflush(stderr);
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid == 0) {
        /* the run dies with the process that watches it */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(127);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        if (dup2(fd, STDOUT_FILENO) < 0 || dup2(fd, STDERR_FILENO) < 0) _exit(127);
        close(fd);
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
    close(fd);
    if (pid < 0) {
        snprintf(res->reason, sizeof res->reason, "fork: %s", strerror(errno));
        return -1;
    }
    sl->pid = pid;
    sl->run = k;
    sl->t0 = ut_seconds();
    return 0;
}

/* The last "ampscope train: ..." line of the run's log, the message train
 * ended with. */
static void train_message(const sweep *s, size_t k, char *buf, size_t len)
{
    char path[4400], line[1024];
    path_in(s, path, sizeof path, k, SW_TRAIN_LOG);
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f) return;
    const char *prefix = "ampscope train: ";
    while (fgets(line, sizeof line, f))
        if (strncmp(line, prefix, strlen(prefix)) == 0) {
            line[strcspn(line, "\n")] = '\0';
            copy_text(buf, len, line + strlen(prefix));
        }
    fclose(f);
}

/* Whether slot sl's run has ended (then sl is free and res says how, and
 * an ended run has its marker). */
static bool reap(sweep *s, slot *sl, sw_result *res)
{
    int status;
    const pid_t got = waitpid(sl->pid, &status, WNOHANG);
    if (got == 0 || (got < 0 && errno == EINTR)) return false;
    memset(res, 0, sizeof *res);
    res->run = (int32_t)sl->run;
    res->wall = ut_seconds() - sl->t0;
    sl->pid = 0;
    char why[400];
    train_message(s, sl->run, why, sizeof why);
    int exit_status = -1;
    if (got < 0) {
        res->state = RS_FAILED;
        snprintf(res->reason, sizeof res->reason, "waitpid: %s", strerror(errno));
    } else if (WIFSIGNALED(status)) {
        res->state = RS_FAILED;
        snprintf(res->reason, sizeof res->reason, "killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    } else {
        exit_status = WEXITSTATUS(status);
        res->state = exit_status == 0 ? RS_OK : exit_status == 3 ? RS_DIVERGED : RS_FAILED;
        if (res->state == RS_FAILED)
            snprintf(res->reason, sizeof res->reason, "exit status %d: %s", exit_status,
                     why[0] ? why : "no message (see train.log)");
        else if (res->state == RS_DIVERGED)
            snprintf(res->reason, sizeof res->reason, "%s", why);
    }
    one_line(res->reason);
    if (res->state == RS_OK || res->state == RS_DIVERGED) {
        char msg[512];
        if (write_marker(s, res, exit_status, msg, sizeof msg) != 0) {
            res->state = RS_FAILED;
            snprintf(res->reason, sizeof res->reason, "the run ended but %.380s", msg);
            one_line(res->reason);
        }
    }
    return true;
}

static size_t running(const sweep *s)
{
    size_t n = 0;
    for (int j = 0; j < s->o->jobs; j++)
        n += s->slots[j].pid != 0;
    return n;
}

static void forward_stop(sweep *s)
{
    for (int j = 0; j < s->o->jobs; j++)
        if (s->slots[j].pid) kill(s->slots[j].pid, SIGTERM);
}

/* Starts run k in a free slot (there is one); false if it could not start
 * (res then holds the failure). */
static bool start_in_free_slot(sweep *s, size_t k, sw_result *res)
{
    for (int j = 0; j < s->o->jobs; j++)
        if (!s->slots[j].pid) return start_run(s, &s->slots[j], k, res) == 0;
    return false;
}

/* ---- folders and the sweep's identity -------------------------------------------------------- */
static json_t *describe(const sweep_options *o)
{
    json_t *grid = json_array(), *shared = json_array();
    for (size_t a = 0; a < o->grid.n_axes; a++) {
        json_t *values = json_array();
        for (size_t v = 0; v < o->grid.axes[a].n_values; v++)
            json_array_append_new(values, json_string(o->grid.axes[a].values[v]));
        json_array_append_new(grid, json_pack("{s:s, s:s, s:o}", "axis", o->grid.axes[a].name,
                                              "option", o->grid.axes[a].option, "values", values));
    }
    for (int i = 0; i < o->n_shared; i++)
        json_array_append_new(shared, json_string(o->shared[i]));
    return json_pack("{s:i, s:s, s:o, s:o, s:i}", "sweep_version", 1, "grid_text", o->grid_text,
                     "grid", grid, "shared", shared, "runs", (json_int_t)o->grid.n_runs);
}

/* Creates OUT and OUT/runs, or checks that OUT is this sweep's folder. */
static int setup_folder(const sweep_options *o, int *lock_fd)
{
    if (mkdir(o->out_dir, 0777) != 0 && errno != EEXIST)
        return cli_error(CLI_EINPUT, "--out %s: cannot create it: %s", o->out_dir, strerror(errno));
    struct stat st;
    if (stat(o->out_dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return cli_error(CLI_EINPUT, "--out %s: not a directory", o->out_dir);
    char path[4200], msg[512];
    snprintf(path, sizeof path, "%s/sweep.lock", o->out_dir);
    *lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (*lock_fd < 0) return cli_error(CLI_EFAIL, "%s: %s", path, strerror(errno));
    if (flock(*lock_fd, LOCK_EX | LOCK_NB) != 0)
        return cli_error(CLI_EINPUT, "--out %s: another sweep is running in it (%s is locked)",
                         o->out_dir, path);
    /* what a sweep killed while it rewrote them left (under the lock, nobody
     * else writes them); unfinished runs' folders are redone whole */
    const char *ours[] = {SW_SWEEP_JSON, "summary.csv"};
    for (size_t i = 0; i < sizeof ours / sizeof *ours; i++) {
        snprintf(path, sizeof path, "%s/%s", o->out_dir, ours[i]);
        if (af_remove_stale(path, msg, sizeof msg) < 0) return cli_error(CLI_EFAIL, "%s", msg);
    }
    json_t *mine = describe(o);
    if (!mine) return cli_error(CLI_EFAIL, "out of memory");
    snprintf(path, sizeof path, "%s/%s", o->out_dir, SW_SWEEP_JSON);
    int rc = CLI_OK;
    if (access(path, F_OK) == 0) {
        json_error_t err;
        json_t *old = json_load_file(path, 0, &err);
        if (!old)
            rc = cli_error(CLI_EINPUT, "%s: %s (line %d)", path, err.text, err.line);
        else if (!json_equal(json_object_get(old, "grid"), json_object_get(mine, "grid")) ||
                 !json_equal(json_object_get(old, "shared"), json_object_get(mine, "shared"))) {
            /* its command line, so that it can be given again */
            char cmd[2048];
            const char *g = json_string_value(json_object_get(old, "grid_text"));
            size_t n = (size_t)snprintf(cmd, sizeof cmd, "--grid \"%s\"", g ? g : "?");
            json_t *v;
            size_t i;
            json_array_foreach(json_object_get(old, "shared"), i, v)
            {
                if (n < sizeof cmd && json_string_value(v))
                    n += (size_t)snprintf(cmd + n, sizeof cmd - n, " %s", json_string_value(v));
            }
            rc = cli_error(CLI_EINPUT,
                           "--out %s holds another sweep (%s, in %s): give that command to resume "
                           "it, or another --out",
                           o->out_dir, cmd, path);
        }
        json_decref(old);
    } else {
        /* a folder that holds something else is not taken over */
        char runs[4200];
        snprintf(runs, sizeof runs, "%s/runs", o->out_dir);
        if (access(runs, F_OK) == 0)
            rc = cli_error(CLI_EINPUT, "--out %s has runs/ but no %s: not a sweep folder",
                           o->out_dir, SW_SWEEP_JSON);
        if (!rc && rec_write_json(path, mine, JSON_INDENT(2), msg, sizeof msg) != AN_OK)
            rc = cli_error(CLI_EFAIL, "%s", msg);
    }
    json_decref(mine);
    if (rc) return rc;
    snprintf(path, sizeof path, "%s/runs", o->out_dir);
    if (mkdir(path, 0777) != 0 && errno != EEXIST)
        return cli_error(CLI_EFAIL, "%s: %s", path, strerror(errno));
    return CLI_OK;
}

/* ---- rank 0: the table, the queue, its own slots --------------------------------------------- */
#define STOP_GRACE_S 30.0 /* after a signal, how long rank 0 waits for the runs in flight */

static void push_back(sweep *s, size_t k) { s->queue[(s->q_head + s->q_len++) % s->n] = k; }

static size_t pop(sweep *s)
{
    const size_t k = s->queue[s->q_head];
    s->q_head = (s->q_head + 1) % s->n;
    s->q_len--;
    return k;
}

#if AMPSCOPE_HAVE_MPI
enum { TAG_REQUEST = 1, TAG_WORK = 2, TAG_STOP = 3, TAG_RESULT = 4, TAG_BYE = 5 };

/* A rank that MPI can no longer reach: its runs in flight failed. */
static void rank_lost(sweep *s, bool *gone, int *byes, int rank, int err)
{
    if (gone[rank]) return;
    gone[rank] = true;
    ++*byes;
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(err, text, &len);
    for (size_t k = 0; k < s->n; k++)
        if (s->rows[k].state == RS_RUNNING && s->rows[k].rank == rank) {
            sw_result res = {.run = (int32_t)k, .state = RS_FAILED};
            snprintf(res.reason, sizeof res.reason, "rank %d was lost: %s", rank, text);
            record(s, &res, rank, false);
        }
}

/* Rank 0 answers what the other ranks sent; true if there was anything. */
static bool serve(sweep *s, bool *gone, int *byes)
{
    bool any = false;
    for (;;) {
        int flag = 0;
        MPI_Status st;
        if (MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st) != MPI_SUCCESS) {
            ut_stop_set(SIGTERM); /* nothing more can be heard: wind down */
            return any;
        }
        if (!flag) return any;
        any = true;
        const int src = st.MPI_SOURCE;
        int err = MPI_SUCCESS;
        if (st.MPI_TAG == TAG_RESULT) {
            sw_result res;
            err = MPI_Recv(&res, (int)sizeof res, MPI_BYTE, src, TAG_RESULT, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE);
            if (err == MPI_SUCCESS && res.run >= 0 && (size_t)res.run < s->n) {
                res.reason[sizeof res.reason - 1] = '\0';
                record(s, &res, src, false);
            }
        } else if (st.MPI_TAG == TAG_REQUEST) {
            int32_t none;
            err = MPI_Recv(&none, 1, MPI_INT32_T, src, TAG_REQUEST, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE);
            if (err == MPI_SUCCESS && !s->stopping && s->q_len > 0) {
                const int32_t k = (int32_t)pop(s);
                s->rows[k].state = RS_RUNNING;
                s->rows[k].rank = src;
                err = MPI_Send(&k, 1, MPI_INT32_T, src, TAG_WORK, MPI_COMM_WORLD);
                write_summary(s);
            } else if (err == MPI_SUCCESS) {
                err = MPI_Send(&none, 1, MPI_INT32_T, src, TAG_STOP, MPI_COMM_WORLD);
            }
        } else {
            int32_t none;
            err =
                MPI_Recv(&none, 1, MPI_INT32_T, src, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (err == MPI_SUCCESS && st.MPI_TAG == TAG_BYE && !gone[src]) {
                gone[src] = true;
                ++*byes;
            }
        }
        if (err != MPI_SUCCESS) rank_lost(s, gone, byes, src, err);
    }
}

/* Ranks > 0: ask for work while a slot is free, train, report. */
static void work(sweep *s)
{
    int outstanding = 0; /* requests not yet answered */
    bool told_stop = false, stopping = false;
    for (;;) {
        bool busy = false;
        sw_result res;
        for (int j = 0; j < s->o->jobs; j++)
            if (s->slots[j].pid && reap(s, &s->slots[j], &res)) {
                MPI_Send(&res, (int)sizeof res, MPI_BYTE, 0, TAG_RESULT, MPI_COMM_WORLD);
                busy = true;
            }
        if (ut_stop_requested() && !stopping) {
            stopping = true;
            forward_stop(s);
        }
        while (!told_stop && !stopping && (int)running(s) + outstanding < s->o->jobs) {
            const int32_t none = 0;
            if (MPI_Send(&none, 1, MPI_INT32_T, 0, TAG_REQUEST, MPI_COMM_WORLD) != MPI_SUCCESS) {
                stopping = true; /* rank 0 is gone: finish what runs, then leave */
                forward_stop(s);
                break;
            }
            outstanding++;
        }
        int flag = 0;
        MPI_Status st;
        while (outstanding > 0 &&
               MPI_Iprobe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st) == MPI_SUCCESS && flag) {
            int32_t k;
            MPI_Recv(&k, 1, MPI_INT32_T, 0, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            outstanding--;
            busy = true;
            if (st.MPI_TAG == TAG_STOP) {
                told_stop = true;
            } else if (stopping || told_stop || k < 0 || (size_t)k >= s->n) {
                memset(&res, 0, sizeof res);
                res.run = k;
                res.state = RS_PENDING; /* handed back unstarted */
                MPI_Send(&res, (int)sizeof res, MPI_BYTE, 0, TAG_RESULT, MPI_COMM_WORLD);
            } else if (!start_in_free_slot(s, (size_t)k, &res)) {
                MPI_Send(&res, (int)sizeof res, MPI_BYTE, 0, TAG_RESULT, MPI_COMM_WORLD);
            }
        }
        if ((told_stop || stopping) && outstanding == 0 && running(s) == 0) {
            const int32_t none = 0;
            MPI_Send(&none, 1, MPI_INT32_T, 0, TAG_BYE, MPI_COMM_WORLD);
            return;
        }
        if (!busy) nap();
    }
}
#endif

/* Rank 0, or the whole sweep without MPI.  False when ranks did not
 * answer within STOP_GRACE_S of a stop. */
static bool coordinate(sweep *s)
{
    int byes = 0;
    bool *gone = calloc((size_t)s->size, sizeof *gone);
    if (!gone) return false; /* out of memory: the caller aborts the job */
    double stop_at = 0;
    bool answered = true;
    for (;;) {
        bool busy = false;
        sw_result res;
        for (int j = 0; j < s->o->jobs; j++)
            if (s->slots[j].pid && reap(s, &s->slots[j], &res)) {
                record(s, &res, 0, false);
                busy = true;
            }
        if (ut_stop_requested() && !s->stopping) {
            s->stopping = true;
            stop_at = ut_seconds();
            forward_stop(s);
            write_summary(s); /* the runs in flight as interrupted, in case we are killed */
            if (s->o->progress)
                fprintf(stderr,
                        "sweep: signal %d: no new runs; the runs in flight stop after their "
                        "step\n",
                        ut_stop_requested());
        }
        while (!s->stopping && s->q_len > 0 && (int)running(s) < s->o->jobs) {
            const size_t k = pop(s);
            s->rows[k].state = RS_RUNNING;
            s->rows[k].rank = 0;
            if (!start_in_free_slot(s, k, &res))
                record(s, &res, 0, false);
            else
                write_summary(s);
            busy = true;
        }
#if AMPSCOPE_HAVE_MPI
        if (s->size > 1 && gone && serve(s, gone, &byes)) busy = true;
#endif
        if ((s->stopping || s->q_len == 0) && running(s) == 0 && byes >= s->size - 1) break;
        if (s->stopping && ut_seconds() - stop_at > STOP_GRACE_S) {
            for (int j = 0; j < s->o->jobs; j++)
                if (s->slots[j].pid) kill(s->slots[j].pid, SIGKILL);
            if (running(s) == 0 && byes < s->size - 1) {
                answered = false;
                break;
            }
        }
        if (!busy) nap();
    }
    free(gone);
    return answered;
}

/* ---- the whole ------------------------------------------------------------------------------- */
#if AMPSCOPE_HAVE_MPI
static bool launched_by_mpi(void)
{
    return getenv("OMPI_COMM_WORLD_RANK") || getenv("PMI_RANK") || getenv("PMIX_RANK");
}
#endif

static void free_sweep(sweep *s)
{
    free(s->names);
    free(s->rows);
    free(s->slots);
    free(s->queue);
}

int sweep_run(const sweep_options *o)
{
    cli_set_context("sweep");
    sweep s;
    memset(&s, 0, sizeof s);
    s.o = o;
    s.n = o->grid.n_runs;
    s.size = 1;
    s.t0 = ut_seconds();
    int launcher_size;
    sw_launcher_rank(&launcher_size);
    bool mpi = false;
#if AMPSCOPE_HAVE_MPI
    if (launched_by_mpi()) {
        if (MPI_Init(NULL, NULL) != MPI_SUCCESS)
            return cli_error(CLI_EFAIL, "MPI_Init failed (started by an MPI launcher)");
        mpi = true;
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Comm_rank(MPI_COMM_WORLD, &s.rank);
        MPI_Comm_size(MPI_COMM_WORLD, &s.size);
    }
#else
    if (launcher_size > 1)
        return cli_error(CLI_EINPUT,
                         "started by an MPI launcher with %d ranks, but this ampscope was built "
                         "without MPI (install libopenmpi-dev and build again), so each rank "
                         "would run the whole grid",
                         launcher_size);
#endif
    s.names = calloc(s.n, sizeof *s.names);
    s.rows = calloc(s.n, sizeof *s.rows);
    s.slots = calloc((size_t)o->jobs, sizeof *s.slots);
    s.queue = calloc(s.n, sizeof *s.queue);
    int rc = CLI_OK, lock_fd = -1;
    if (!s.names || !s.rows || !s.slots || !s.queue) rc = cli_error(CLI_EFAIL, "out of memory");
    for (size_t k = 0; !rc && k < s.n; k++)
        sw_run_name(&o->grid, k, s.names[k], sizeof s.names[k]);
    if (s.rank == 0 && !rc) rc = setup_folder(o, &lock_fd);
#if AMPSCOPE_HAVE_MPI
    if (mpi) {
        int32_t setup = rc;
        MPI_Bcast(&setup, 1, MPI_INT32_T, 0, MPI_COMM_WORLD);
        if (setup != CLI_OK) {
            /* rank 0 tells why; the others leave quietly */
            MPI_Finalize();
            free_sweep(&s);
            if (lock_fd >= 0) close(lock_fd);
            return s.rank == 0 ? rc : CLI_OK;
        }
    }
#endif
    if (rc) {
        free_sweep(&s);
        if (lock_fd >= 0) close(lock_fd);
        return rc;
    }
    /* the parallelism is across runs: a run's BLAS on one thread, so that
     * --jobs runs share the cores instead of fighting over them */
    setenv("OPENBLAS_NUM_THREADS", "1", 0);
    ut_stop_on_signals(false);

    bool answered = true;
    if (s.rank == 0) {
        sw_result *done = calloc(s.n, sizeof *done);
        if (!done) rc = cli_error(CLI_EFAIL, "out of memory");
        for (size_t k = 0; done && k < s.n; k++)
            if (!read_marker(&s, k, &done[k])) {
                done[k].state = RS_PENDING;
                push_back(&s, k);
            }
        if (done && o->progress)
            fprintf(stderr, "sweep: %zu runs: %zu done before, %zu to train, %d at a time%s\n", s.n,
                    s.n - s.q_len, s.q_len, o->jobs * s.size,
                    s.size > 1 ? " (over the MPI ranks)" : "");
        for (size_t k = 0; done && k < s.n; k++)
            if (done[k].state != RS_PENDING) record(&s, &done[k], 0, true);
        free(done);
        write_summary(&s);
        answered = coordinate(&s);
    } else {
#if AMPSCOPE_HAVE_MPI
        work(&s);
#endif
    }

    size_t ok = 0, diverged = 0, failed = 0;
    if (s.rank == 0) {
        for (size_t k = 0; k < s.n; k++) {
            row *r = &s.rows[k];
            if (r->state == RS_RUNNING) { /* no word from its rank */
                r->state = RS_FAILED;
                snprintf(r->reason, sizeof r->reason, "%s", interrupted(&s, r->rank));
            }
            ok += r->state == RS_OK;
            diverged += r->state == RS_DIVERGED;
            failed += r->state == RS_FAILED;
        }
        write_summary(&s);
        printf("sweep: %zu runs: %zu ok, %zu diverged, %zu failed, %zu not run; %s/summary.csv\n",
               s.n, ok, diverged, failed, s.n - ok - diverged - failed, o->out_dir);
    }
    if (s.rank == 0 && ut_stop_requested())
        rc = cli_error(CLI_EFAIL,
                       "stopped by signal %d: %zu of %zu runs done; the same command again "
                       "trains the rest",
                       ut_stop_requested(), ok + diverged, s.n);
    else if (s.rank == 0 && failed)
        rc = cli_error(CLI_EFAIL, "%zu of %zu runs failed (see %s/summary.csv)", failed, s.n,
                       o->out_dir);
#if AMPSCOPE_HAVE_MPI
    if (mpi) {
        if (!answered) {
            fflush(stdout);
            fprintf(stderr, "ampscope sweep: ranks did not answer within %.0f s of the stop\n",
                    STOP_GRACE_S);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        MPI_Finalize();
    }
#endif
    (void)answered;
    (void)mpi;
    if (lock_fd >= 0) close(lock_fd);
    free_sweep(&s);
    return rc;
}
