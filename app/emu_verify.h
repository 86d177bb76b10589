/* emu_verify.h: `ampscope emu verify`, the exhaustive check of the emulator
 * against the fast oracle (tests/oracle/fast_oracle.h), over MPI ranks when
 * started by mpirun. */
#ifndef AMPSCOPE_EMU_VERIFY_H
#define AMPSCOPE_EMU_VERIFY_H

/* argv[0] is "verify"; returns a cli.h status (CLI_EFAIL on any mismatch). */
int emu_verify(int argc, char **argv);

#endif
