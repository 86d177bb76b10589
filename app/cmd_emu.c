/* cmd_emu.c: `ampscope emu`, the emulator on the command line.
 *
 *   emu testfloat FUNCTION [options]   Berkeley TestFloat 3's line format, for machines
 *   emu eval FORMAT OP X [Y [Z]]       one operation, explained, for people
 *   emu verify --exhaustive --op OP    every operand pair against the oracle (emu_verify.c)
 *
 * testfloat is here; eval is in emu_eval.c.  Both run the entries of
 * emu_ops.c; eval only maps its operation names ("fma", "from-f32") onto
 * TestFloat's ("f16_mulAdd", "f32_to_f16").
 */
#define _POSIX_C_SOURCE 200809L /* getline */

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "cli.h"
#include "cli_options.h"
#include "cmd_emu.h"
#include "commands.h"
#include "emu_eval.h"
#include "emu_ops.h"
#include "emu_verify.h"

/* Copies a token into buf for a message: at most 24 characters, anything
 * unprintable shown as '?', so a binary line cannot garble the terminal. */
static const char *token_for_message(const char *s, size_t len, char *buf, size_t size)
{
    size_t shown = len < 24 ? len : 24, i;
    if (shown > size - 4) shown = size - 4;
    for (i = 0; i < shown; i++)
        buf[i] = (s[i] >= 0x20 && s[i] < 0x7F) ? s[i] : '?';
    if (shown < len) {
        memcpy(buf + i, "...", 3);
        i += 3;
    }
    buf[i] = '\0';
    return buf;
}

/* ======================================================================
 * emu testfloat
 * ====================================================================== */
static void testfloat_help(FILE *out)
{
    fprintf(out,
            "usage: ampscope emu testfloat FUNCTION [-r<mode>] [-tininessbefore|-tininessafter]\n"
            "                              [-exact|-notexact] [-seed N]\n"
            "\n"
            "Berkeley TestFloat 3's interface to the emulator.  Reads test cases from standard\n"
            "input as testfloat_gen writes them (hex operands, either case, leading zeros\n"
            "allowed; further fields on a line are ignored) and writes each as \"operands\n"
            "result flags\" in upper-case hex, as testfloat_ver reads them:\n"
            "\n"
            "  testfloat_gen -rminMag f16_mul | ampscope emu testfloat f16_mul -rminMag \\\n"
            "      | testfloat_ver -rminMag f16_mul\n"
            "\n"
            "Widths: f16 and bf16 4 hex digits, f32, i32 and ui32 8, f64, i64 and ui64 16,\n"
            "booleans 1 digit (0 or 1), flags 2 digits: 01 inexact, 02 underflow, 04 overflow,\n"
            "08 infinite (divide by zero), 10 invalid.  NaNs follow SoftFloat's x86 (8086-SSE)\n"
            "specialization.  Output is buffered; lines answered before a bad line are written\n"
            "out before the program stops.\n"
            "\n"
            "options:\n"
            "  -r<mode>          rounding mode (default near_even), one of:\n");
    cli_print_wrapped(out, cli_round_names(), 20, 88);
    fprintf(out,
            "  -tininessbefore   detect tininess before rounding (default: -tininessafter)\n"
            "  -exact            roundToInt and conversions to integers raise inexact\n"
            "  -notexact         ... do not (the default, as in TestFloat)\n"
            "  -seed N           Philox key for the stochastic modes (default 0); the random\n"
            "                    index starts at 0 and runs on from line to line\n"
            "\n"
            "exit status: 0 all lines answered, 2 bad input (an unknown function or option, a\n"
            "malformed, short or too wide hex line: the message names the line), 1 otherwise.\n"
            "\n"
            "functions (the _r_minMag ones round toward zero whatever -r says):\n");
    char names[4096];
    size_t used = 0;
    for (size_t i = 0; i < emu_function_count && used + 40 < sizeof names; i++)
        used += (size_t)snprintf(names + used, sizeof names - used, "%s ", emu_functions[i].name);
    cli_print_wrapped(out, names, 2, 88);
}

/* Splits one input line into the function's operands.  The line number is
 * only for messages. */
static int testfloat_parse_line(const emu_function *f, const char *line, size_t len,
                                unsigned long lineno, uint64_t *x)
{
    static const char space[] = " \t\r\n\v\f";
    size_t pos = 0;
    int found = 0;
    while (found < f->arity) {
        while (pos < len && line[pos] != '\0' && strchr(space, line[pos]))
            pos++;
        if (pos == len) break;
        size_t start = pos;
        while (pos < len && (line[pos] == '\0' || !strchr(space, line[pos])))
            pos++;
        emu_type t = f->operand[found];
        char shown[32];
        switch (cli_parse_hex(line + start, pos - start, emu_types[t].bits, &x[found])) {
        case CLI_HEX_OK: break;
        case CLI_HEX_EMPTY:
        case CLI_HEX_NOT_HEX:
            return cli_error(CLI_EINPUT, "line %lu: operand %d '%s' is not a hex number", lineno,
                             found + 1,
                             token_for_message(line + start, pos - start, shown, sizeof shown));
        case CLI_HEX_TOO_WIDE:
            return cli_error(
                CLI_EINPUT, "line %lu: operand %d '%s' is too wide for %s (%d hex digits)", lineno,
                found + 1, token_for_message(line + start, pos - start, shown, sizeof shown),
                emu_types[t].prefix, (emu_types[t].bits + 3) / 4);
        }
        found++;
    }
    if (found < f->arity)
        return cli_error(CLI_EINPUT, "line %lu: expected %d operand%s, got %d", lineno, f->arity,
                         f->arity == 1 ? "" : "s", found);
    return CLI_OK;
}

static void print_hex(FILE *out, emu_type t, uint64_t v)
{
    fprintf(out, "%0*" PRIX64, (emu_types[t].bits + 3) / 4, v);
}

int emu_testfloat_run(const emu_function *f, fpe_env *env, bool exact, FILE *in, FILE *out)
{
    char *line = NULL;
    size_t capacity = 0;
    ssize_t len;
    unsigned long lineno = 0;
    int status = CLI_OK;
    errno = 0;
    while ((len = getline(&line, &capacity, in)) != -1) {
        uint64_t x[3];
        status = testfloat_parse_line(f, line, (size_t)len, ++lineno, x);
        if (status != CLI_OK) break;
        env->flags = 0;
        uint64_t result = emu_function_run(f, env, x, exact);
        for (int k = 0; k < f->arity; k++) {
            print_hex(out, f->operand[k], x[k]);
            fputc(' ', out);
        }
        print_hex(out, f->result, result);
        fprintf(out, " %02X\n", (unsigned)env->flags);
    }
    if (status == CLI_OK && ferror(in))
        status = cli_error(CLI_EFAIL, "reading standard input: %s", strerror(errno));
    free(line);
    return status;
}

static int emu_testfloat(int argc, char **argv)
{
    cli_set_context("emu testfloat");
    fpe_env env = fpe_env_default();
    bool exact = false;
    const char *name = NULL;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (cli_is_help(arg)) {
            testfloat_help(stdout);
            return CLI_OK;
        } else if (strncmp(arg, "-r", 2) == 0) {
            const char *mode = arg + 2;
            if (*mode == '\0' && i + 1 < argc) mode = argv[++i]; /* "-r near_even" */
            if (*mode == '\0')
                return cli_error(CLI_EINPUT, "-r needs a rounding mode (modes: %s)",
                                 cli_round_names());
            fpe_round round;
            if (cli_parse_round(mode, &round) != CLI_OK)
                return cli_error(CLI_EINPUT, "unknown rounding mode '%s' (modes: %s)", mode,
                                 cli_round_names());
            env.round = (uint8_t)round;
        } else if (strcmp(arg, "-tininessbefore") == 0) {
            env.tininess = FPE_TININESS_BEFORE;
        } else if (strcmp(arg, "-tininessafter") == 0) {
            env.tininess = FPE_TININESS_AFTER;
        } else if (strcmp(arg, "-exact") == 0) {
            exact = true;
        } else if (strcmp(arg, "-notexact") == 0) {
            exact = false;
        } else if (strcmp(arg, "-seed") == 0) {
            if (i + 1 >= argc || cli_parse_uint(argv[i + 1], UINT64_MAX, &env.sr_seed) != CLI_OK)
                return cli_error(CLI_EINPUT, "-seed needs a decimal number");
            i++;
        } else if (arg[0] == '-') {
            return cli_error(CLI_EINPUT,
                             "unknown option '%s' (see 'ampscope emu testfloat --help')", arg);
        } else if (name) {
            return cli_error(CLI_EINPUT, "one function at a time ('%s' and '%s')", name, arg);
        } else {
            name = arg;
        }
    }
    if (!name)
        return cli_error(CLI_EINPUT, "missing FUNCTION (see 'ampscope emu testfloat --help')");
    const emu_function *f = emu_function_find(name);
    if (!f)
        return cli_error(CLI_EINPUT,
                         "unknown function '%s' (the list: 'ampscope emu testfloat --help')", name);
    return emu_testfloat_run(f, &env, exact, stdin, stdout);
}

/* ======================================================================
 * emu
 * ====================================================================== */
static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *summary;
} emu_commands[] = {
    {"testfloat", emu_testfloat, "Berkeley TestFloat 3 test cases in, results out"},
    {"eval", emu_eval, "one operation on given operands, explained"},
    {"verify", emu_verify, "every operand pair against the oracle, over MPI ranks"},
};

static void emu_help(FILE *out)
{
    fprintf(out, "usage: ampscope emu COMMAND [ARGS]\n\n"
                 "The bit-exact fp16/bf16/fp32 emulator (emulate/fpe.h) on the command line.\n\n"
                 "commands:\n");
    for (size_t i = 0; i < sizeof emu_commands / sizeof emu_commands[0]; i++)
        fprintf(out, "  %-10s %s\n", emu_commands[i].name, emu_commands[i].summary);
    fprintf(out, "\n'ampscope emu COMMAND --help' shows a command's options.\n");
}

int cmd_emu(int argc, char **argv)
{
    cli_set_context("emu");
    if (argc < 2)
        return cli_error(CLI_EINPUT,
                         "missing command: testfloat, eval or verify (see 'ampscope emu --help')");
    if (cli_is_help(argv[1])) {
        emu_help(stdout);
        return CLI_OK;
    }
    for (size_t i = 0; i < sizeof emu_commands / sizeof emu_commands[0]; i++)
        if (strcmp(argv[1], emu_commands[i].name) == 0)
            return emu_commands[i].fn(argc - 1, argv + 1);
    return cli_error(CLI_EINPUT, "unknown command '%s' (see 'ampscope emu --help')", argv[1]);
}
