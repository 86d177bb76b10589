/* cmd_emu.h: the part of `ampscope emu testfloat` (cmd_emu.c) that reads a
 * stream, exposed so that the fuzz target (fuzz/fuzz_testfloat.c) drives it
 * without a process and a pipe per input. */
#ifndef AMPSCOPE_CMD_EMU_H
#define AMPSCOPE_CMD_EMU_H

#include <stdbool.h>
#include <stdio.h>

#include "emu_ops.h"
#include "fpe.h"

/* Answers every line of in (TestFloat's format: f's operands in hex, see
 * `ampscope emu testfloat --help`) with "operands result flags" on out,
 * running f in env.  CLI_OK at the end of in; CLI_EINPUT (a message naming
 * the line, cli_error) at the first malformed line, after the lines before
 * it were answered; CLI_EFAIL when reading in fails. */
int emu_testfloat_run(const emu_function *f, fpe_env *env, bool exact, FILE *in, FILE *out);

#endif
