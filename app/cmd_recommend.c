/* cmd_recommend.c: `ampscope recommend`, a dynamic loss scaler's
 * scale_window and scale_factor chosen by replaying a grid of policies
 * over a run's gradient trace (analyze/recommend.h), or from the measured
 * runs of a sweep. */
#define _POSIX_C_SOURCE 200809L /* strdup */

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "csv.h"
#include "cli_options.h"
#include "commands.h"
#include "record_lock.h"
#include "recommend.h"
#include "record.h"
#include "sweep.h"

typedef struct recommend_args {
    const char *grid, *base, *target, *csv;
} recommend_args;

#define F(field) offsetof(recommend_args, field)
static const opt_spec recommend_options[] = {
    {.name = "grid",
     .kind = OPT_STRING,
     .offset = F(grid),
     .metavar = "SPEC",
     .help = "e.g. 'factors=2,4,8;windows=100,500,2000;max-skip=0.01'\n"
             "(default: factors 2,4,8; windows 10,20,50,100,200,500,1000,2000;\n"
             "max-skip 0.01)"},
    {.name = "base",
     .kind = OPT_STRING,
     .offset = F(base),
     .metavar = "PRESET",
     .help = "every other setting (initial scale, hysteresis, floor, cap) from\n"
             "this preset (default pytorch)"},
    {.name = "target",
     .kind = OPT_STRING,
     .offset = F(target),
     .metavar = "T",
     .help = "fp16 (default) or bf16: the format the gradients are cast to"},
    {.name = "csv",
     .kind = OPT_PATH,
     .offset = F(csv),
     .help = "also write the grid as CSV (atomically)"},
    {.name = NULL},
};
#undef F

static void help(FILE *out)
{
    fprintf(out, "usage: ampscope recommend RUN_DIR [--grid SPEC] [--base PRESET] [--target T]\n"
                 "                          [--csv FILE]\n"
                 "\n"
                 "Replays every (scale_factor, scale_window) of a grid over the gradient trace of\n"
                 "RUN_DIR (trace.csv and trace_hist.csv, written by `ampscope train`; an O0 run\n"
                 "is the intended input) and recommends one: among the policies that skip at\n"
                 "most the allowed fraction of steps, the one with the least underflow at the\n"
                 "scale it holds, then the fewest steps below the best scale, then the fewest\n"
                 "skips.  Prints the grid and the recommendation with its reasons.\n"
                 "\n");
    cli_print_options(out, recommend_options, 17);
    fprintf(out,
            "\n"
            "RUN_DIR may instead be a sweep's folder (`ampscope sweep --out DIR` with\n"
            "scale_factor and scale_window axes): then nothing is replayed, and the choice is\n"
            "among the runs that ended ok, by their measured outcomes (summary.csv; the steps\n"
            "from each run's steps.csv): a skip fraction (skipped_steps / steps) of at most\n"
            "max-skip (--grid 'max-skip=F' is the only --grid part that applies; --base and\n"
            "--target do not), then the lowest mean_underflow_frac (an empty one counts as\n"
            "worst), then the fewest skips, then the larger window, then the smaller factor.\n"
            "With none within max-skip, the run with the fewest skips.  Diverged and failed\n"
            "runs are listed, never chosen.\n"
            "\n"
            "exit status: 0 done, 2 bad input (options, a run without a trace), 1 otherwise.\n");
}

/* ---- a sweep's folder ---- */
typedef struct sweep_row {
    char *fields[64]; /* into the line */
    double factor, underflow;
    int64_t window, steps, skipped;
    double skip_frac;
    bool ok; /* status ok and its steps known */
} sweep_row;

/* Splits line (no commas in a field: the sweep writes none) into at most 64 fields. */
/* The fields of a summary.csv line, split in place by analyze's CSV reader
 * (at most 64, the header's limit here). */
static size_t split(char *line, char **f)
{
    line[strcspn(line, "\r\n")] = '\0';
    const size_t n = csv_split(line, f, 64);
    return n < 64 ? n : 64;
}

static int column(char **hdr, size_t n, const char *name)
{
    for (size_t k = 0; k < n; k++)
        if (strcmp(hdr[k], name) == 0) return (int)k;
    return -1;
}

/* a better than b, in the documented order */
static bool better(const sweep_row *a, const sweep_row *b, double max_skip)
{
    const bool ia = a->skip_frac <= max_skip, ib = b->skip_frac <= max_skip;
    if (ia != ib) return ia;
    if (!ia) return a->skipped < b->skipped;
    const double ua = isnan(a->underflow) ? INFINITY : a->underflow;
    const double ub = isnan(b->underflow) ? INFINITY : b->underflow;
    if (ua != ub) return ua < ub;
    if (a->skipped != b->skipped) return a->skipped < b->skipped;
    if (a->window != b->window) return a->window > b->window;
    return a->factor < b->factor;
}

static int recommend_sweep(const char *dir, const char *grid_spec, bool trace_options)
{
    if (trace_options)
        return cli_error(CLI_EINPUT,
                         "--base, --target and --csv apply to a run's trace, not to "
                         "the sweep %s",
                         dir);
    if (grid_spec && (strstr(grid_spec, "factors") || strstr(grid_spec, "windows")))
        return cli_error(CLI_EINPUT,
                         "--grid: a sweep's factors and windows are its own; only "
                         "max-skip applies to %s",
                         dir);
    char msg[1024];
    an_grid g = an_grid_default();
    if (grid_spec && an_grid_parse(grid_spec, &g, msg, sizeof msg) != AN_OK)
        return cli_error(CLI_EINPUT, "--grid: %s", msg);

    /* the grid, for the runs' folder names */
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, SW_SWEEP_JSON);
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    const char *text = j ? json_string_value(json_object_get(j, "grid_text")) : NULL;
    sw_grid grid = {0};
    if (!text) {
        json_decref(j);
        return cli_error(CLI_EINPUT, "%s: %s", path, j ? "no grid_text" : je.text);
    }
    if (sw_grid_parse(text, &grid, msg, sizeof msg) != 0) {
        json_decref(j);
        return cli_error(CLI_EINPUT, "%s: grid_text: %s", path, msg);
    }
    json_decref(j);

    snprintf(path, sizeof path, "%s/summary.csv", dir);
    FILE *f = fopen(path, "r");
    sweep_row *rows = calloc(grid.n_runs ? grid.n_runs : 1, sizeof *rows);
    char **lines = calloc(grid.n_runs + 1, sizeof *lines);
    int rc = CLI_OK;
    size_t n = 0, n_hdr = 0;
    char *hdr[64] = {0};
    if (!f)
        rc = cli_error(CLI_EINPUT, "%s: cannot open: %s", path, strerror(errno));
    else if (!rows || !lines)
        rc = cli_error(CLI_EFAIL, "out of memory");
    char line[8192];
    if (rc == CLI_OK && fgets(line, sizeof line, f) && (lines[0] = strdup(line)))
        n_hdr = split(lines[0], hdr);
    else if (rc == CLI_OK)
        rc = cli_error(CLI_EINPUT, "%s: no header row", path);
    const int cf = column(hdr, n_hdr, "scale_factor"), cw = column(hdr, n_hdr, "scale_window");
    const char *need[] = {"skipped_steps", "mean_underflow_frac", "status"};
    int cn[3];
    for (int k = 0; k < 3; k++)
        cn[k] = column(hdr, n_hdr, need[k]);
    if (rc == CLI_OK && (cf < 0 || cw < 0))
        rc = cli_error(CLI_EINPUT,
                       "%s: the sweep has no %s axis: recommend needs a sweep over scale_factor "
                       "and scale_window (e.g. --grid \"scale_factor=2,4 scale_window=100,1000\")",
                       dir, cf < 0 ? "scale_factor" : "scale_window");
    for (int k = 0; rc == CLI_OK && k < 3; k++)
        if (cn[k] < 0) rc = cli_error(CLI_EINPUT, "%s: no column '%s'", path, need[k]);
    while (rc == CLI_OK && fgets(line, sizeof line, f)) {
        if (n == grid.n_runs) {
            rc = cli_error(CLI_EINPUT, "%s: more rows than the grid's %zu runs", path, grid.n_runs);
            break;
        }
        sweep_row *r = &rows[n];
        if (!(lines[n + 1] = strdup(line))) {
            rc = cli_error(CLI_EFAIL, "out of memory");
            break;
        }
        if (split(lines[n + 1], r->fields) != n_hdr) {
            rc = cli_error(CLI_EINPUT, "%s:%zu: expected %zu fields", path, n + 2, n_hdr);
            break;
        }
        char *end;
        r->factor = strtod(r->fields[cf], &end);
        r->window = strtoll(r->fields[cw], &end, 10);
        r->skipped = strtoll(r->fields[cn[0]], &end, 10);
        r->underflow = r->fields[cn[1]][0] ? strtod(r->fields[cn[1]], &end) : NAN;
        if (strcmp(r->fields[cn[2]], "ok") == 0) {
            char run[256], rundir[4600];
            sw_run_name(&grid, n, run, sizeof run);
            snprintf(rundir, sizeof rundir, "%s/runs/%s", dir, run);
            rec_run_summary sum;
            if (rec_summarize_run(rundir, &sum, msg, sizeof msg) != AN_OK) {
                rc = cli_error(CLI_EINPUT, "%s", msg);
                break;
            }
            r->steps = sum.steps;
            r->skip_frac = sum.steps > 0 ? (double)r->skipped / (double)sum.steps : 1.0;
            r->ok = true;
        }
        n++;
    }
    if (f) fclose(f);
    size_t best = n;
    for (size_t i = 0; rc == CLI_OK && i < n; i++)
        if (rows[i].ok && (best == n || better(&rows[i], &rows[best], g.max_skip_frac))) best = i;
    if (rc == CLI_OK && best == n)
        rc = cli_error(CLI_EFAIL, "%s: no run of the sweep ended ok (see its summary.csv)", dir);
    if (rc == CLI_OK) {
        for (size_t a = 0; a < grid.n_axes; a++)
            printf("%s ", grid.axes[a].name);
        printf("steps skipped skip%% underflow%% status\n");
        for (size_t i = 0; i < n; i++) {
            const sweep_row *r = &rows[i];
            for (size_t a = 0; a < grid.n_axes; a++)
                printf("%s ", grid.axes[a].values[sw_grid_value(&grid, i, a)]);
            if (r->ok)
                printf("%lld %lld %.2f %.4f ok%s\n", (long long)r->steps, (long long)r->skipped,
                       100 * r->skip_frac, 100 * r->underflow, i == best ? "  <- recommended" : "");
            else
                printf("- - - - %s\n", r->fields[cn[2]]);
        }
        const sweep_row *b = &rows[best];
        printf("\nrecommendation: scale_factor %s, scale_window %s (run %zu)\n", b->fields[cf],
               b->fields[cw], best);
        if (b->skip_frac <= g.max_skip_frac)
            printf("Among the runs that ended ok and skipped at most %g%% of their steps, it had "
                   "the lowest measured mean underflow fraction (%.4g%%), then the fewest skips "
                   "(%lld of %lld steps).\n",
                   100 * g.max_skip_frac, 100 * b->underflow, (long long)b->skipped,
                   (long long)b->steps);
        else
            printf("No run that ended ok skipped at most %g%% of its steps; this one skipped the "
                   "fewest (%lld of %lld steps).\n",
                   100 * g.max_skip_frac, (long long)b->skipped, (long long)b->steps);
    }
    for (size_t i = 0; lines && i <= grid.n_runs; i++)
        free(lines[i]);
    free(lines);
    free(rows);
    sw_grid_free(&grid);
    return rc;
}

int cmd_recommend(int argc, char **argv)
{
    cli_set_context("recommend");
    const char *dir = NULL;
    recommend_args args = {NULL, NULL, NULL, NULL};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        if (cli_is_help(a)) {
            help(stdout);
            return CLI_OK;
        }
        if (a[0] != '-') {
            if (dir) return cli_error(CLI_EINPUT, "one RUN_DIR, got '%s' and '%s'", dir, a);
            dir = a;
            continue;
        }
        const opt_spec *row;
        char why[512];
        const int m = cli_read_option(recommend_options, argc, argv, &i, &row, &v);
        if (m < 0) return m;
        if (opt_set(row, &args, v, why, sizeof why) != 0) return cli_error(CLI_EINPUT, "%s", why);
    }
    const char *grid = args.grid, *csv = args.csv;
    const char *base_name = args.base ? args.base : "pytorch";
    const char *target_name = args.target ? args.target : "fp16";
    const bool base_given = args.base != NULL, target_given = args.target != NULL;
    if (!dir || !*dir)
        return cli_error(CLI_EINPUT, "RUN_DIR is required (a directory `ampscope train` wrote)");
    int rc = csv ? cli_want_out_file("--csv", csv) : CLI_OK;
    if (rc) return rc;
    char sweep_json[4200];
    struct stat st;
    /* --csv never over what it reads, nor into a record */
    const rec_input inputs[] = {{"RUN_DIR", dir}};
    char why[1024];
    if (csv && rec_check_output("--csv", csv, NULL, inputs, 1, why, sizeof why) != AN_OK)
        return cli_error(CLI_EINPUT, "%s", why);
    snprintf(sweep_json, sizeof sweep_json, "%s/%s", dir, SW_SWEEP_JSON);
    if (stat(sweep_json, &st) == 0)
        return recommend_sweep(dir, grid, base_given || target_given || csv);
    ak_dtype target;
    rc = cli_want_dtype("--target", target_name, false, &target);
    if (rc) return rc;
    char msg[1024];
    ak_scaler_config base;
    if (ak_scaler_preset(base_name, &base, msg, sizeof msg) != 0)
        return cli_error(CLI_EINPUT, "--base: %s", msg);
    if (base.kind != AK_SCALER_DYNAMIC)
        return cli_error(CLI_EINPUT, "--base %s is not a dynamic scaler", base_name);
    an_grid g = an_grid_default();
    if (grid && an_grid_parse(grid, &g, msg, sizeof msg) != AN_OK)
        return cli_error(CLI_EINPUT, "--grid: %s", msg);
    an_trace t;
    if ((rc = an_trace_load(dir, &t, msg, sizeof msg)) != AN_OK)
        return cli_error(rc == AN_ENOMEM ? CLI_EFAIL : CLI_EINPUT,
                         "%s (train with --trace-every 1 to record a trace)", msg);
    an_recommendation rec;
    rc = an_recommend(&t, &base, (fpe_format_id)target, &g, &rec, msg, sizeof msg);
    an_trace_free(&t);
    if (rc != AN_OK) return cli_error(CLI_EFAIL, "%s", msg);
    printf("factor window   skipped skip%%  underflow%%  below-best  final-scale\n");
    for (size_t i = 0; i < rec.n; i++) {
        const an_grid_point *p = &rec.points[i];
        printf("%6g %6d %9lld %5.2f %11.4f %11lld %12g%s\n", p->factor, (int)p->window,
               (long long)p->r.skipped_steps, 100 * p->r.skip_frac, 100 * p->r.mean_underflow_frac,
               (long long)p->r.steps_below_best, p->r.final_scale,
               i == rec.best ? "  <- recommended" : "");
    }
    printf("\nrecommendation: scale_factor %g, scale_window %d\n%s\n", rec.points[rec.best].factor,
           (int)rec.points[rec.best].window, rec.reason);
    if (csv && an_recommendation_write_csv(&rec, csv, msg, sizeof msg) != AN_OK) {
        an_recommendation_free(&rec);
        return cli_error(CLI_EFAIL, "%s", msg);
    }
    an_recommendation_free(&rec);
    return CLI_OK;
}
