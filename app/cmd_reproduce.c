/* cmd_reproduce.c: `ampscope reproduce`, the studies behind the report
 * (reproduce.c). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "reproduce.h"

static void help(FILE *out)
{
    fprintf(out,
            "usage: ampscope reproduce [--quick|--full|--smoke] [--backend B] [--data DIR]\n"
            "                          --out DIR\n"
            "\n"
            "Trains what the studies need (run directories under DIR/runs), analyses the\n"
            "records and writes DIR/index.html: format facts, the underflow analysis\n"
            "(Micikevicius et al. 2018; MindSpore's AMP article), lost weight updates (O3\n"
            "against O2, the 2^11 rule; bf16 nearest against stochastic rounding), the\n"
            "precision-mode table, the frameworks' loss scalers replayed on one gradient\n"
            "trace, and the choice of scale_window and scale_factor with its validation\n"
            "against real fp16 training.  Figures are PNG and SVG drawn by gnuplot from the\n"
            "CSV files beside them.  Started again on the same DIR, finished runs are reused.\n"
            "\n"
            "  --quick        (default) about 3 minutes on a 2-core CPU: one epoch of LeNet-5,\n"
            "                 one epoch of the MLP per mode, SimpleNet at width 1024\n"
            "  --full         whole datasets, 5 epochs, SimpleNet at width 4096 batch 512\n"
            "                 (about 2 hours on a 2-core CPU; says so when it starts)\n"
            "  --smoke        a few dozen steps per run (for tests: the numbers mean nothing)\n"
            "  --backend B    cpu (default), cuda or auto\n"
            "  --data DIR     Fashion-MNIST IDX files (default Debian's dataset-fashion-mnist)\n"
            "  --out DIR      the report folder (created if missing)\n"
            "  --no-progress  no progress lines on stderr\n"
            "\n"
            "exit status: 0 done, 2 bad input, 1 a part of the report could not be made\n"
            "(named on the page and in the message) or gnuplot is missing.\n");
}

int cmd_reproduce(int argc, char **argv)
{
    cli_set_context("reproduce");
    repro_options o;
    memset(&o, 0, sizeof o);
    o.backend = "cpu";
    o.level = REPRO_QUICK;
    o.progress = true;
    int levels = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        if (cli_is_help(a)) {
            help(stdout);
            return CLI_OK;
        }
        if (strcmp(a, "--quick") == 0 || strcmp(a, "--full") == 0 || strcmp(a, "--smoke") == 0) {
            o.level = a[2] == 'q' ? REPRO_QUICK : a[2] == 'f' ? REPRO_FULL : REPRO_SMOKE;
            levels++;
            continue;
        }
        if (strcmp(a, "--no-progress") == 0) {
            o.progress = false;
            continue;
        }
        char key[32];
        const int m = cli_next_option(argc, argv, &i, key, sizeof key, &v);
        if (m < 0) return m;
        if (strcmp(key, "out") == 0)
            o.out_dir = v;
        else if (strcmp(key, "backend") == 0)
            o.backend = v;
        else if (strcmp(key, "data") == 0)
            o.data_dir = v;
        else
            return cli_error(CLI_EINPUT, "unknown option '--%s' (see 'ampscope reproduce --help')",
                             key);
    }
    if (levels > 1) return cli_error(CLI_EINPUT, "give one of --quick, --full and --smoke");
    if (!o.out_dir || !*o.out_dir) return cli_error(CLI_EINPUT, "--out DIR is required");
    if (strcmp(o.backend, "cpu") != 0 && strcmp(o.backend, "cuda") != 0 &&
        strcmp(o.backend, "auto") != 0)
        return cli_error(CLI_EINPUT, "--backend wants cpu, cuda or auto, got '%s'", o.backend);
    if (o.data_dir && access(o.data_dir, R_OK) != 0)
        return cli_error(CLI_EINPUT, "--data %s: cannot read it", o.data_dir);
    char msg[1024] = "";
    const int rc = reproduce_run(&o, msg, sizeof msg);
    if (rc != 0) return cli_error(rc, "%s", msg);
    return CLI_OK;
}
