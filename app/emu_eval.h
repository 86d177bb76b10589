/* emu_eval.h: `ampscope emu eval`, one emulated operation explained
 * (emu_eval.c). */
#ifndef AMPSCOPE_EMU_EVAL_H
#define AMPSCOPE_EMU_EVAL_H

/* argv[0] is "eval"; returns a cli.h status. */
int emu_eval(int argc, char **argv);

#endif
