/* main.c: the ampscope program: a table of subcommands, git style.
 *
 * Only this file prints an error and picks the exit status (cli.h):
 * 0 success, 2 bad input, 3 a training run diverged, 1 anything else.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"

#ifndef AMPSCOPE_VERSION
#error "AMPSCOPE_VERSION must be defined by the build (experiments/CMakeLists.txt)"
#endif

static int cmd_help(int argc, char **argv);
static int cmd_version(int argc, char **argv);

static const struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} commands[] = {
    {"emu", cmd_emu, "the bit-exact fp16/bf16/fp32 emulator: TestFloat interface, calculator"},
    {"train", cmd_train, "train a reference network under a precision mode and loss-scale policy"},
    {"grad", cmd_grad, "the gradients of a net at given weights on given samples (safetensors)"},
    {"report", cmd_report,
     "figures and index.html for run directories (report RUN_DIR... --out DIR)"},
    {"reproduce", cmd_reproduce,
     "the studies behind the report: trains, analyses, writes DIR/index.html"},
    {"sweep", cmd_sweep, "train a grid of runs: local processes, or MPI ranks under mpirun"},
    {"recommend", cmd_recommend,
     "scale_window and scale_factor chosen by replaying a run's gradient trace"},
    {"inspect", cmd_inspect,
     "precision statistics of the tensors of safetensors files (any framework's)"},
    {"bench", cmd_bench,
     "benchmarks: the emulator, kernels, training steps, sweeps, all-reduce (bench "
     "emu|kernels|train|sweep|allreduce)"},
    {"help", cmd_help, "list the commands, or show one command's help"},
    {"version", cmd_version, "print the version"},
};
#define COMMAND_COUNT (sizeof commands / sizeof commands[0])

static const struct command *find_command(const char *name)
{
    for (size_t i = 0; i < COMMAND_COUNT; i++)
        if (strcmp(commands[i].name, name) == 0) return &commands[i];
    return NULL;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: ampscope [--version] [--help] COMMAND [ARGS]\n\n"
                 "ampscope studies floating-point precision in mixed-precision training.\n\n"
                 "commands:\n");
    for (size_t i = 0; i < COMMAND_COUNT; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(
        out,
        "\n'ampscope help COMMAND' or 'ampscope COMMAND --help' shows a command's help.\n"
        "exit status: 0 success, 2 bad input, 3 a training run diverged, 1 any other failure.\n");
}

/* `ampscope help CMD [SUB...]` is `ampscope CMD [SUB...] --help`. */
static int cmd_help(int argc, char **argv)
{
    cli_set_context("help");
    if (argc < 2 || cli_is_help(argv[1])) { /* `help`, `help --help` */
        usage(stdout);
        return CLI_OK;
    }
    const struct command *c = find_command(argv[1]);
    if (!c) return cli_error(CLI_EINPUT, "unknown command '%s' (see 'ampscope help')", argv[1]);
    if (c->fn == cmd_help) {
        usage(stdout);
        return CLI_OK;
    }
    char *sub[16];
    int n = 0;
    if (argc > 15) return cli_error(CLI_EINPUT, "too many arguments");
    for (int i = 1; i < argc; i++)
        sub[n++] = argv[i];
    sub[n++] = (char *)"--help";
    sub[n] = NULL;
    return c->fn(n, sub);
}

static int cmd_version(int argc, char **argv)
{
    if (argc > 1 && cli_is_help(argv[1])) {
        printf("usage: ampscope version (or ampscope --version)\n\nPrints ampscope's version.\n");
        return CLI_OK;
    }
    printf("ampscope %s\n", AMPSCOPE_VERSION);
    return CLI_OK;
}

int main(int argc, char **argv)
{
    int status;
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *name = argv[1];
    if (cli_is_help(name))
        name = "help";
    else if (strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0)
        name = "version";
    const struct command *c = find_command(name);
    if (c)
        status = c->fn(argc - 1, argv + 1);
    else
        status = cli_error(CLI_EINPUT, "unknown command '%s' (see 'ampscope help')", name);

    return cli_exit_status(status);
}
