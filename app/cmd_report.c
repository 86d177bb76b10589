/* cmd_report.c: `ampscope report`, the figures and index.html of the report
 * writer (plots/report.h) for any run directories a user made. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cli_options.h"
#include "commands.h"
#include "record_lock.h"
#include "report.h"
#include "sweep.h"

typedef struct report_args {
    const char *out, *title, *axes;
    bool force;
} report_args;

#define F(field) offsetof(report_args, field)
static const opt_spec report_options[] = {
    {.name = "out",
     .kind = OPT_DIR,
     .offset = F(out),
     .help = "the report's folder (created if missing; its parent must exist)"},
    {.name = "force",
     .kind = OPT_FLAG,
     .offset = F(force),
     .help = "replace what --out DIR holds if it is not a report (only the\n"
             "files ampscope writes; says what it removes)"},
    {.name = "title",
     .kind = OPT_STRING,
     .offset = F(title),
     .metavar = "T",
     .help = "the page's title (default \"ampscope report\")"},
    {.name = "axes",
     .kind = OPT_STRING,
     .offset = F(axes),
     .metavar = "X,Y",
     .help = "a sweep's heatmap axes, x then y (default: the grid's first two;\n"
             "a grid of one axis draws one row); --axes X sets x only"},
    {.name = NULL},
};
#undef F

static void help(FILE *out)
{
    fprintf(out,
            "usage: ampscope report RUN_DIR... --out DIR [--title T] [--axes X,Y]\n"
            "\n"
            "Draws the figures of one or more training runs (`ampscope train --out RUN_DIR`)\n"
            "and writes DIR/index.html: a table of the runs, the training loss and test\n"
            "accuracy, the loss scale with the skipped steps, gradient histograms over fp16's\n"
            "and bf16's ranges, the flushed-to-zero fraction of each layer's gradients and the\n"
            "lost weight updates, every run overlaid.  Each figure is a PNG and an SVG drawn\n"
            "by gnuplot from a CSV beside it; DIR/plots/ holds the scripts, so any figure can\n"
            "be redrawn by hand (the command is under it on the page).\n"
            "\n"
            "A RUN_DIR may be a sweep's folder (`ampscope sweep --out DIR`, with sweep.json):\n"
            "it gets heatmaps of the final test accuracy, the skipped steps and the mean\n"
            "underflow fraction over two of its grid's axes (from its summary.csv; runs that\n"
            "ended ok or diverged; averaged over the other axes, as the caption says), and its\n"
            "table of runs.\n"
            "\n");
    cli_print_options(out, report_options, 15);
    fprintf(
        out,
        "\n"
        "A figure whose data is missing or malformed (a missing or cut-short CSV, a missing\n"
        "column) is left out with a note on the page naming the file and column; the rest\n"
        "is still drawn.  gnuplot must be on PATH (apt-get install gnuplot-nox); without it\n"
        "the tables and every figure's CSV are still written.\n"
        "\n"
        "exit status: 0 done, 2 bad input (options, a missing RUN_DIR, an --axes that is\n"
        "not two different axes of every sweep's grid), 1 anything left\n"
        "out of the report (see its notes), no gnuplot, or a file that could not be written.\n");
}

/* A line rewritten in place on a terminal. */
static void show_progress(void *ctx, const char *what)
{
    (void)ctx;
    fprintf(stderr, "\r\033[Kampscope report: %s", what);
    fflush(stderr);
}

/* A sweep's folder has the sweep's sweep.json (experiments/sweep.h). */
static bool is_sweep(const char *dir)
{
    char path[4200];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, SW_SWEEP_JSON);
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* "X,Y" or "X" into ax[0], ax[1]. */
static int parse_axes(const char *text, char ax[2][128])
{
    const char *comma = strchr(text, ',');
    const size_t nx = comma ? (size_t)(comma - text) : strlen(text);
    const char *y = comma ? comma + 1 : "";
    if (nx == 0 || nx >= 128 || strlen(y) >= 128 || strchr(y, ',') || (comma && !*y))
        return cli_error(CLI_EINPUT, "--axes '%s': expected X,Y (two grid axes) or X", text);
    snprintf(ax[0], 128, "%.*s", (int)nx, text);
    snprintf(ax[1], 128, "%s", y);
    if (strcmp(ax[0], ax[1]) == 0)
        return cli_error(CLI_EINPUT, "--axes '%s': the same axis twice", text);
    return CLI_OK;
}

/* Each named axis is one of the sweep's grid axes. */
static int check_axes(const char *sweep, char ax[2][128])
{
    char list[2048], msg[1024];
    if (rp_sweep_axes(sweep, list, sizeof list, msg, sizeof msg) != RP_OK)
        return cli_error(CLI_EINPUT, "--axes: %s", msg);
    for (int k = 0; k < 2; k++) {
        if (!ax[k][0]) continue;
        bool found = false;
        for (const char *p = list; *p && !found;) {
            const size_t len = strcspn(p, ",");
            found = strlen(ax[k]) == len && strncmp(p, ax[k], len) == 0;
            p += len + (p[len] == ',');
        }
        if (!found)
            return cli_error(CLI_EINPUT,
                             "--axes: '%s' is not an axis of the sweep %s (its axes: %s)", ax[k],
                             sweep, list);
    }
    return CLI_OK;
}

int cmd_report(int argc, char **argv)
{
    cli_set_context("report");
    report_args args = {NULL, NULL, NULL, false};
    const char **runs = argc > 1 ? calloc((size_t)argc, sizeof *runs) : NULL;
    size_t n = 0;
    bool only_dirs = false; /* after "--" */
    int rc = CLI_OK;
    for (int i = 1; i < argc && rc == CLI_OK; i++) {
        const char *a = argv[i], *v;
        if (!only_dirs && cli_is_help(a)) {
            help(stdout);
            free(runs);
            return CLI_OK;
        }
        if (!only_dirs && strcmp(a, "--") == 0) {
            only_dirs = true;
            continue;
        }
        if (only_dirs || a[0] != '-' || a[1] == '\0') {
            if (!runs) {
                rc = cli_error(CLI_EFAIL, "out of memory");
                break;
            }
            runs[n++] = a;
            continue;
        }
        const opt_spec *row;
        char msg[512];
        const int m = cli_read_option(report_options, argc, argv, &i, &row, &v);
        if (m < 0)
            rc = m;
        else if (opt_set(row, &args, v, msg, sizeof msg) != 0)
            rc = cli_error(CLI_EINPUT, "%s", msg);
    }
    const char *out = args.out, *title = args.title, *axes = args.axes;
    if (rc == CLI_OK && n == 0)
        rc = cli_error(CLI_EINPUT, "no RUN_DIR given (see 'ampscope report --help')");
    if (rc == CLI_OK && (!out || !*out)) rc = cli_error(CLI_EINPUT, "--out DIR is required");
    if (rc == CLI_OK) rc = cli_want_out_dir("--out", out);
    for (size_t i = 0; rc == CLI_OK && i < n; i++) {
        struct stat st;
        if (stat(runs[i], &st) != 0 || !S_ISDIR(st.st_mode))
            rc = cli_error(CLI_EINPUT, "RUN_DIR %s: no such directory", runs[i]);
    }
    /* sweeps apart from runs; --axes checked against every sweep before anything is written */
    const char **sweeps = n ? calloc(n, sizeof *sweeps) : NULL;
    size_t n_sweeps = 0, n_runs = 0;
    char ax[2][128] = {"", ""};
    if (rc == CLI_OK && !sweeps) rc = cli_error(CLI_EFAIL, "out of memory");
    for (size_t i = 0; rc == CLI_OK && i < n; i++) {
        if (is_sweep(runs[i]))
            sweeps[n_sweeps++] = runs[i];
        else
            runs[n_runs++] = runs[i];
    }
    if (rc == CLI_OK && axes) rc = parse_axes(axes, ax);
    if (rc == CLI_OK && axes && n_sweeps == 0)
        rc = cli_error(CLI_EINPUT, "--axes: no RUN_DIR is a sweep's folder (with sweep.json)");
    for (size_t i = 0; rc == CLI_OK && axes && i < n_sweeps; i++)
        rc = check_axes(sweeps[i], ax);
    /* --out held for the whole report: one writer, never a RUN_DIR nor
     * inside one or another record, replaced only with --force */
    rec_input *inputs = rc == CLI_OK ? calloc(n, sizeof *inputs) : NULL;
    if (rc == CLI_OK && !inputs) rc = cli_error(CLI_EFAIL, "out of memory");
    for (size_t i = 0; rc == CLI_OK && i < n_runs; i++)
        inputs[i] = (rec_input){"RUN_DIR", runs[i]};
    for (size_t i = 0; rc == CLI_OK && i < n_sweeps; i++)
        inputs[n_runs + i] = (rec_input){"RUN_DIR", sweeps[i]};
    char msg[1024], said[1024];
    int lock_fd = -1;
    const rec_out_dir want = {.option = "--out",
                              .dir = out,
                              .command = "report",
                              .inputs = inputs,
                              .n_inputs = n,
                              .reuse = true,
                              .force = args.force};
    const int taken =
        rc == CLI_OK ? rec_take_out_dir(&want, &lock_fd, said, sizeof said, msg, sizeof msg) : 0;
    if (taken) rc = cli_error(taken == AN_EINVAL ? CLI_EINPUT : CLI_EFAIL, "%s", msg);
    free(inputs);
    if (rc != CLI_OK) {
        free(runs);
        free(sweeps);
        return rc;
    }
    if (said[0]) fprintf(stderr, "ampscope report: %s\n", said);
    rp_report *r = rp_open(out, title, msg, sizeof msg);
    if (!r) {
        rec_lock_release(lock_fd);
        free(runs);
        free(sweeps);
        return cli_error(CLI_EFAIL, "%s", msg);
    }
    const bool tty = isatty(2);
    if (tty) rp_set_progress(r, show_progress, NULL);
    if (n_runs) rp_add_runs(r, runs, n_runs);
    for (size_t i = 0; i < n_sweeps; i++)
        rp_add_sweep(r, sweeps[i], ax[0][0] ? ax[0] : NULL, ax[1][0] ? ax[1] : NULL);
    free(runs);
    free(sweeps);
    if (tty) show_progress(NULL, "writing index.html");
    const int status = rp_close(r, msg, sizeof msg);
    rec_lock_release(lock_fd);
    if (tty) fprintf(stderr, "\r\033[K");
    /* the page is written in every case but RP_EIO: say where, then what is wrong */
    if (status != RP_OK) return cli_error(CLI_EFAIL, "%s", msg);
    printf("%s/index.html\n", out);
    return CLI_OK;
}
