/* fuzz_eval.c: `ampscope emu eval`, whole: its options, FORMAT and OP
 * names, the operand parser (decimals, inf/nan, 0x bit patterns, integers)
 * and the explanation it prints (to /dev/null here).
 *
 * Input: the arguments after "emu eval", one per line (at most 12; a line
 * may be empty).  The command is cmd_emu with argv[1] fixed to "eval", so
 * `emu verify` (hours) cannot be reached. */
#define _XOPEN_SOURCE 700

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet_stdout();
    char *text = fuzz_string(data, size);
    char *argv[16] = {"emu", "eval"};
    int argc = 2;
    char *p = text;
    while (argc < 14) {
        argv[argc++] = p;
        char *nl = strchr(p, '\n');
        if (!nl) break;
        *nl = '\0';
        p = nl + 1;
    }
    argv[argc] = NULL;
    int status = cmd_emu(argc, argv);
    if (status != CLI_OK && status != CLI_EINPUT) abort();
    if (status == CLI_EINPUT && !cli_error_message()[0]) abort();
    if (status != CLI_OK) fuzz_refused(cli_error_message());
    free(text);
    return 0;
}
