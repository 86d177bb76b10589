/* sweep_internal.h: what the files of experiments/sweep/ share (sweep.h is
 * the public face).  The state of a sweep, and each file's functions the
 * others call:
 *   grid.c         the --grid text, the points, the run names (sweep.h)
 *   sweep_train.c  a point's train_options, validated; a run in a child process
 *   pool.c         this process's --jobs slots: start, reap, stop
 *   markers.c      runs/<run>/done.json
 *   summary.c      rank 0's table of runs and summary.csv
 *   folder.c       OUT, its lock and sweep.json
 *   queue.c        the queue of runs: rank 0's loop, the MPI work queue
 *   sweep.c        sweep_run, which ties them together
 */
#ifndef AMPSCOPE_SWEEP_INTERNAL_H
#define AMPSCOPE_SWEEP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sweep.h"

#define STOP_GRACE_S 30.0 /* after a signal, how long rank 0 waits for the runs in flight */

/* ---- the state of a sweep -------------------------------------------------------------------- */
typedef enum sw_run_state {
    RS_PENDING = 0,
    RS_RUNNING = 1,
    RS_OK = 2,
    RS_DIVERGED = 3,
    RS_FAILED = 4
} sw_run_state;

/* What the process that ran a run tells rank 0 (on MPI as bytes: the
 * ranks are assumed to share one architecture). */
typedef struct sw_result {
    int32_t run;
    int32_t state; /* RS_OK, RS_DIVERGED, RS_FAILED, or RS_PENDING: not started */
    double wall;
    char reason[440];
} sw_result;

typedef struct sw_metrics {
    double final_loss, test_accuracy, final_scale, underflow, lost;
    int64_t skipped;
} sw_metrics;

typedef struct sw_row {
    sw_run_state state;
    int rank; /* where it runs or ran */
    double wall;
    bool have_metrics;
    sw_metrics m;
    char reason[440];
} sw_row;

typedef struct sw_slot {
    pid_t pid; /* 0: free */
    size_t run;
    double t0;
} sw_slot;

typedef struct sw_sweep {
    const sweep_options *o;
    size_t n;
    char (*names)[128];
    sw_row *rows;
    sw_slot *slots;
    size_t *queue, q_head, q_len;
    size_t finished; /* rows ok, diverged or failed */
    int rank, size;
    bool stopping; /* a signal came: no new runs */
    double t0;
    char summary_error[512]; /* why the last rewrite of summary.csv failed; "" when it did not */
} sw_sweep;

/* sweep.c */
const char *sw_state_name(sw_run_state s);
/* OUT/runs/<run>[/file] */
void sw_path_in(const sw_sweep *s, char *buf, size_t len, size_t run, const char *file);
/* One line for a CSV field: no commas, quotes or line breaks. */
void sw_one_line(char *s);

/* sweep_train.c: starts run k into dir (o->run_point on its train_options)
 * in a child process whose output goes to log_fd (closed here either way).  0 with
 * the child's pid, or -1 with the reason. */
int sw_train_start(const sweep_options *o, size_t run, const char *dir, int log_fd, pid_t *pid,
                   char *reason, size_t len);

/* pool.c */
void sw_nap(void); /* the polling loops' short sleep */
/* Whether slot sl's run has ended (then sl is free and res says how, and
 * an ended run has its marker). */
bool sw_reap(sw_sweep *s, sw_slot *sl, sw_result *res);
size_t sw_running(const sw_sweep *s); /* busy slots */
void sw_forward_stop(sw_sweep *s);    /* SIGTERM to every run in a slot */
/* Starts run k in a free slot (there is one); false if it could not start
 * (res then holds the failure). */
bool sw_start_in_free_slot(sw_sweep *s, size_t k, sw_result *res);

/* markers.c */
int sw_write_marker(const sw_sweep *s, const sw_result *r, int exit_status, char *msg, size_t len);
/* A valid marker: true with its state, wall time and reason in r. */
bool sw_read_marker(const sw_sweep *s, size_t run, sw_result *r);

/* summary.c */
/* The reason of a run in flight that no result came for. */
const char *sw_interrupted(const sw_sweep *s, int rank);
/* Rewrites summary.csv atomically: 0, or -1 with the reason (the file and
 * its errno text) in s->summary_error, which a later success clears. */
int sw_write_summary(sw_sweep *s);
/* Rank 0: a run ended (or, RS_PENDING, came back unstarted). */
void sw_record(sw_sweep *s, const sw_result *res, int rank, bool reused);

/* folder.c: creates OUT and OUT/runs, or checks that OUT is this sweep's
 * folder; takes its record lock (*lock_fd).  SW_OK, or a status with msg. */
int sw_setup_folder(const sweep_options *o, int *lock_fd, char *msg, size_t len);

/* queue.c */
void sw_push_back(sw_sweep *s, size_t k);
/* Rank 0, or the whole sweep without MPI.  False when ranks did not
 * answer within STOP_GRACE_S of a stop. */
bool sw_coordinate(sw_sweep *s);
#if AMPSCOPE_HAVE_MPI
void sw_work(sw_sweep *s); /* ranks > 0: ask for work while a slot is free, train, report */
#endif

#endif
