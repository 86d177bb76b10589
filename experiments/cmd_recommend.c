/* cmd_recommend.c: `ampscope recommend`, a dynamic loss scaler's
 * scale_window and scale_factor chosen by replaying a grid of policies
 * over a run's gradient trace (analyze/recommend.h). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "recommend.h"
#include "record.h"

static void help(FILE *out)
{
    fprintf(out,
            "usage: ampscope recommend RUN_DIR [--grid SPEC] [--base PRESET] [--target T]\n"
            "                          [--csv FILE]\n"
            "\n"
            "Replays every (scale_factor, scale_window) of a grid over the gradient trace of\n"
            "RUN_DIR (trace.csv and trace_hist.csv, written by `ampscope train`; an O0 run\n"
            "is the intended input) and recommends one: among the policies that skip at\n"
            "most the allowed fraction of steps, the one with the least underflow at the\n"
            "scale it holds, then the fewest steps below the best scale, then the fewest\n"
            "skips.  Prints the grid and the recommendation with its reasons.\n"
            "\n"
            "  --grid SPEC    e.g. 'factors=2,4,8;windows=100,500,2000;max-skip=0.01'\n"
            "                 (default: factors 2,4,8; windows 10,20,50,100,200,500,1000,2000;\n"
            "                 max-skip 0.01)\n"
            "  --base PRESET  every other setting (initial scale, hysteresis, floor, cap) from\n"
            "                 this preset (default pytorch)\n"
            "  --target T     fp16 (default) or bf16: the format the gradients are cast to\n"
            "  --csv FILE     also write the grid as CSV (atomically)\n"
            "\n"
            "exit status: 0 done, 2 bad input (options, a run without a trace), 1 otherwise.\n");
}

int cmd_recommend(int argc, char **argv)
{
    cli_set_context("recommend");
    const char *dir = NULL, *grid = NULL, *base_name = "pytorch", *target_name = "fp16";
    const char *csv = NULL;
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
        char key[32];
        const int m = cli_next_option(argc, argv, &i, key, sizeof key, &v);
        if (m < 0) return m;
        if (strcmp(key, "grid") == 0)
            grid = v;
        else if (strcmp(key, "base") == 0)
            base_name = v;
        else if (strcmp(key, "target") == 0)
            target_name = v;
        else if (strcmp(key, "csv") == 0)
            csv = v;
        else
            return cli_error(CLI_EINPUT, "unknown option '--%s' (see 'ampscope recommend --help')",
                             key);
    }
    if (!dir)
        return cli_error(CLI_EINPUT, "RUN_DIR is required (a directory `ampscope train` wrote)");
    ak_dtype target;
    int rc = cli_want_dtype("--target", target_name, false, &target);
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
