/* sweep.h: a grid of training runs (`ampscope sweep`, experiments/sweep/).
 *
 * The grid.  "mode=O2,O3 dtype=fp16,bf16 seed=1,2": axes separated by
 * white space, each a training option named with '_' or '-' and its values
 * separated by commas.  The runs are the grid's points in a fixed order,
 * the first axis slowest; run k's directory is OUT/runs/<k>-<values>
 * (sw_run_name).
 *
 * The sweep folder OUT:
 *   sweep.json               the grid and the options shared by every run
 *                            (a rerun into OUT must give the same)
 *   runs/<run>/              an ordinary training record (`ampscope train`)
 *   runs/<run>/train.log     what the run's train printed
 *   runs/<run>/done.json     the completion marker: status ok or diverged,
 *                            exit status and wall time, written atomically
 *                            when the run ended (a run without it is redone)
 *   summary.csv              one row per run (SW_SUMMARY_HEADER after the
 *                            axes), rewritten atomically as runs start and end
 *   .ampscope.lock           flock'ed by the sweep at work (one at a time;
 *                            analyze/record_lock.h); each run has its own
 *
 * Each run is the program's run_point on the point's train_options in a
 * child process (fork, no exec), so a crash ends the run, never the sweep.  Without MPI, or when
 * the launcher started one rank, the sweep runs --jobs children at a time.
 * Under mpirun (or srun) with N > 1 ranks, rank 0 hands runs out one at a
 * time to whichever rank asks (a rank asks whenever one of its --jobs slots
 * is free) and trains in its own slots too; every rank writes the markers
 * of its runs, and rank 0 the summary.  OUT must be on a file system every
 * rank sees.
 */
#ifndef AMPSCOPE_SWEEP_H
#define AMPSCOPE_SWEEP_H

#include <stdbool.h>
#include <stddef.h>

struct train_options; /* train.h */

/* After the grid's axes, one column each. */
#define SW_SUMMARY_HEADER                                                                          \
    "final_loss,test_accuracy,skipped_steps,final_scale,mean_underflow_frac,lost_update_frac,"     \
    "wall_seconds,status,reason"
#define SW_DONE_JSON  "done.json"
#define SW_SWEEP_JSON "sweep.json"
#define SW_TRAIN_LOG  "train.log"
#define SW_MAX_RUNS   100000 /* a grid with more points is refused */

/* Statuses (the program's classes: SW_EINPUT is bad input, exit status 2). */
enum sw_status { SW_OK = 0, SW_EFAIL = -1, SW_EINPUT = -2 };

typedef struct sw_axis {
    char *name;   /* as given: "scale_factor" */
    char *option; /* train's option: "--scale-factor" */
    char **values;
    size_t n_values;
} sw_axis;

typedef struct sw_grid {
    sw_axis *axes;
    size_t n_axes;
    size_t n_runs; /* the product of the axes' value counts */
} sw_grid;

/* Parses a --grid text into g (sw_grid_free it).  Refused, with a one-line
 * message: an empty grid, an axis without '=' or name, a name outside
 * [A-Za-z0-9_-], the same axis twice, an empty value list or value, a value
 * starting with '-', a value repeated, out, resume and no-progress (the
 * sweep's own), more than SW_MAX_RUNS points.  0 or -1. */
int sw_grid_parse(const char *text, sw_grid *g, char *msg, size_t msg_len);
void sw_grid_free(sw_grid *g); /* harmless on a zeroed or freed grid */
/* The index into axis a's values of run k's value. */
size_t sw_grid_value(const sw_grid *g, size_t run, size_t axis);
/* "<k>-<value>-<value>...": k zero-padded to the width of n_runs - 1,
 * characters outside [A-Za-z0-9._-] as '_', at most 120 characters. */
void sw_run_name(const sw_grid *g, size_t run, char *buf, size_t len);

typedef struct sweep_options {
    const char *grid_text;
    sw_grid grid;
    /* the training options every run shares, as "--key" "value" pairs */
    const char **shared;
    int n_shared;
    const char *out_dir;
    bool force;    /* --force: replace what out_dir holds (ampscope's files only) */
    int jobs;      /* training processes at a time on each rank (>= 1) */
    bool progress; /* a line per finished run on stderr */
    /* Trains one point and reports it as `ampscope train` does (its summary
     * line, or "ampscope train: MESSAGE"), returning train's exit status
     * (0 done, 1 failed, 2 bad input, 3 diverged).  The program gives it, so
     * that a run is reported in one place; it is called in the run's child
     * process, whose output is the run's train.log. */
    int (*run_point)(const struct train_options *t, void *ctx);
    void *run_ctx;
    const char *version, *git_revision; /* recorded in each run's run.json */
} sweep_options;

/* Every point's train_options through train's table (topt_set, topt_finish)
 * and train_check before anything runs: each axis must be a train option
 * and every run's options valid.
 * SW_OK, or SW_EINPUT (SW_EFAIL: out of memory) with the one-line reason
 * in msg. */
int sweep_validate(const sweep_options *o, char *msg, size_t msg_len);

/* The rank and (in *size, when not NULL) the number of ranks an MPI
 * launcher gave this process, from its environment (OpenMPI's
 * OMPI_COMM_WORLD_*, PMIx's PMIX_RANK, MPICH's and Slurm's PMI_*); 0 and 1
 * when none did.  Known before MPI_Init, so that only rank 0 speaks for bad
 * input. */
int sw_launcher_rank(int *size);

/* Runs the sweep (MPI when the process was started by an MPI launcher and
 * the program was built with it).  0 when every run ended ok or diverged;
 * otherwise a status with the reason in msg:
 * SW_EINPUT (nothing ran: OUT is not this sweep's folder, another process
 * holds it, or it lies in a record or an input) or SW_EFAIL
 * (runs failed, or the sweep was interrupted: run it again to finish). */
int sweep_run(const sweep_options *o, char *msg, size_t msg_len);

#endif
