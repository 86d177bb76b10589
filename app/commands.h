/* commands.h: the subcommands main() dispatches to.  Each takes its own
 * argument vector (argv[0] is the command's name) and returns a cli.h
 * status; `ampscope help CMD` calls it with a trailing "--help". */
#ifndef AMPSCOPE_COMMANDS_H
#define AMPSCOPE_COMMANDS_H

int cmd_emu(int argc, char **argv);   /* cmd_emu.c */
int cmd_bench(int argc, char **argv); /* cmd_bench.c */
int cmd_train(int argc, char **argv); /* cmd_train.c */
/* cmd_train.c: one sweep point trained and reported as `ampscope train`
 * reports it (sweep_options.run_point); returns the exit status. */
struct train_options;
int cmd_train_point(const struct train_options *o, void *ctx);
int cmd_grad(int argc, char **argv);        /* cmd_grad.c */
int cmd_report(int argc, char **argv);      /* cmd_report.c */
int cmd_reproduce(int argc, char **argv);   /* cmd_reproduce.c */
int cmd_recommend(int argc, char **argv);   /* cmd_recommend.c */
int cmd_inspect(int argc, char **argv);     /* cmd_inspect.c */
int cmd_sweep(int argc, char **argv);       /* cmd_sweep.c */
int bench_kernels(int argc, char **argv);   /* bench_kernels.c: `bench kernels` */
int bench_train(int argc, char **argv);     /* bench_train.c: `bench train` */
int bench_sweep(int argc, char **argv);     /* bench_sweep.c: `bench sweep` */
int bench_allreduce(int argc, char **argv); /* bench_allreduce.c: `bench allreduce` */

/* What the benchmarks share (cmd_bench.c). */
int bench_compare_double(const void *a, const void *b); /* for qsort: ascending doubles */

#endif
