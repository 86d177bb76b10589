/* fuzz_testfloat.c: `ampscope emu testfloat`'s line reader and the
 * operations it runs (app/cmd_emu.h emu_testfloat_run).
 *
 * Input: byte 0 picks the function (an index into emu_functions), byte 1
 * the environment (bits 0-2 the rounding mode, bit 3 tininess before
 * rounding, bit 4 -exact, bit 5 ftz, bit 6 daz, bit 7 canonical NaNs), the
 * rest is standard input: TestFloat lines. */
#define _XOPEN_SOURCE 700

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmd_emu.h"
#include "emu_ops.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (!sink && !(sink = fopen("/dev/null", "w"))) abort();
    if (size < 3) return 0; /* fmemopen refuses an empty buffer */
    const emu_function *f = &emu_functions[data[0] % emu_function_count];
    const unsigned e = data[1];
    fpe_env env = fpe_env_default();
    env.round = (uint8_t)(e & 7);
    env.tininess = (e & 8) ? FPE_TININESS_BEFORE : FPE_TININESS_AFTER;
    env.ftz = (e >> 5) & 1;
    env.daz = (e >> 6) & 1;
    env.nan = (e & 128) ? FPE_NAN_CANONICAL : FPE_NAN_X86;
    env.sr_seed = 42;
    /* fmemopen wants a writable buffer even for reading on some libcs. */
    char *copy = malloc(size - 2);
    if (!copy) abort();
    memcpy(copy, data + 2, size - 2);
    FILE *in = fmemopen(copy, size - 2, "r");
    if (!in) abort();
    int status = emu_testfloat_run(f, &env, (e & 16) != 0, in, sink);
    if (status != CLI_OK && status != CLI_EINPUT) abort();
    if (status == CLI_EINPUT && !cli_error_message()[0]) abort();
    if (status != CLI_OK) fuzz_refused(cli_error_message());
    fclose(in);
    free(copy);
    return 0;
}
