/* sweep.c: a grid of training runs, local processes or MPI ranks (sweep.h):
 * sweep_run, which ties the files of experiments/sweep/ together.
 *
 * Every run is `ampscope train` in a child process, so the sweep survives
 * a run that crashes and records it as failed.  The process that started a
 * child reaps it, and when the run ended (ok, exit 0, or diverged, exit 3)
 * writes its completion marker; rank 0 alone keeps the table of runs and
 * rewrites summary.csv as each one ends.  A run without a marker is redone
 * from scratch by the next sweep of the same folder.
 *
 * Under MPI the runs are a work queue rank 0 serves (queue.c).
 *
 * What is detected: a run's crash (a signal, any exit status) from the
 * child's status; SIGTERM/SIGINT to a sweep process (forwarded to its
 * runs, which stop after a whole step; their rows say interrupted).  A rank
 * that dies is noticed only as far as the MPI library lets a job go on:
 * OpenMPI's mpirun answers a dead rank by sending SIGTERM to the others and
 * SIGKILL a second later, so rank 0 first rewrites the summary with every
 * run in flight marked failed (interrupted on rank R), then gathers what
 * results still arrive.  An MPI call that returns an error (MPI_ERRORS_RETURN
 * is set) takes that rank out and fails its runs the same way.  A run
 * whose process is killed with its rank dies too (PR_SET_PDEATHSIG), so a
 * rerun never races a stray trainer.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */

#include "sweep_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

#if AMPSCOPE_HAVE_MPI
#include <mpi.h>
#endif

const char *sw_state_name(sw_run_state s)
{
    static const char *const names[] = {"pending", "running", "ok", "diverged", "failed"};
    return names[s];
}

void sw_path_in(const sw_sweep *s, char *buf, size_t len, size_t run, const char *file)
{
    if (file)
        snprintf(buf, len, "%s/runs/%s/%s", s->o->out_dir, s->names[run], file);
    else
        snprintf(buf, len, "%s/runs/%s", s->o->out_dir, s->names[run]);
}

/* One line for a CSV field: no commas, quotes or line breaks. */
void sw_one_line(char *s)
{
    for (; *s; s++)
        if (*s == ',' || *s == '"')
            *s = ';';
        else if (*s == '\n' || *s == '\r')
            *s = ' ';
}

/* ---- the whole ------------------------------------------------------------------------------- */
#if AMPSCOPE_HAVE_MPI
static bool launched_by_mpi(void)
{
    return getenv("OMPI_COMM_WORLD_RANK") || getenv("PMI_RANK") || getenv("PMIX_RANK");
}
#endif

static void free_sweep(sw_sweep *s)
{
    free(s->names);
    free(s->rows);
    free(s->slots);
    free(s->queue);
}

int sweep_run(const sweep_options *o, char *msg, size_t len)
{
    sw_sweep s;
    memset(&s, 0, sizeof s);
    s.o = o;
    s.n = o->grid.n_runs;
    s.size = 1;
    s.t0 = ut_seconds();
    int launcher_size;
    sw_launcher_rank(&launcher_size);
    bool mpi = false;
#if AMPSCOPE_HAVE_MPI
    if (launched_by_mpi()) {
        if (MPI_Init(NULL, NULL) != MPI_SUCCESS)
            return ut_fail(msg, len, SW_EFAIL, "MPI_Init failed (started by an MPI launcher)");
        mpi = true;
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Comm_rank(MPI_COMM_WORLD, &s.rank);
        MPI_Comm_size(MPI_COMM_WORLD, &s.size);
    }
#else
    if (launcher_size > 1)
        return ut_fail(msg, len, SW_EINPUT,
                       "started by an MPI launcher with %d ranks, but this ampscope was built "
                       "without MPI (install libopenmpi-dev and build again), so each rank "
                       "would run the whole grid",
                       launcher_size);
#endif
    s.names = calloc(s.n, sizeof *s.names);
    s.rows = calloc(s.n, sizeof *s.rows);
    s.slots = calloc((size_t)o->jobs, sizeof *s.slots);
    s.queue = calloc(s.n, sizeof *s.queue);
    int rc = SW_OK, lock_fd = -1;
    if (!s.names || !s.rows || !s.slots || !s.queue)
        rc = ut_fail(msg, len, SW_EFAIL, "out of memory");
    for (size_t k = 0; !rc && k < s.n; k++)
        sw_run_name(&o->grid, k, s.names[k], sizeof s.names[k]);
    if (s.rank == 0 && !rc) rc = sw_setup_folder(o, &lock_fd, msg, len);
#if AMPSCOPE_HAVE_MPI
    if (mpi) {
        int32_t setup = rc;
        MPI_Bcast(&setup, 1, MPI_INT32_T, 0, MPI_COMM_WORLD);
        if (setup != SW_OK) {
            /* rank 0 tells why; the others leave quietly */
            MPI_Finalize();
            free_sweep(&s);
            if (lock_fd >= 0) close(lock_fd);
            return s.rank == 0 ? rc : SW_OK;
        }
    }
#endif
    if (rc) {
        free_sweep(&s);
        if (lock_fd >= 0) close(lock_fd);
        return rc;
    }
    /* the parallelism is across runs: a run's BLAS on one thread, so that
     * --jobs runs share the cores instead of fighting over them */
    setenv("OPENBLAS_NUM_THREADS", "1", 0);
    ut_stop_on_signals(false);

    bool answered = true;
    if (s.rank == 0) {
        sw_result *done = calloc(s.n, sizeof *done);
        if (!done) rc = ut_fail(msg, len, SW_EFAIL, "out of memory");
        for (size_t k = 0; done && k < s.n; k++)
            if (!sw_read_marker(&s, k, &done[k])) {
                done[k].state = RS_PENDING;
                sw_push_back(&s, k);
            }
        if (done && o->progress)
            fprintf(stderr, "sweep: %zu runs: %zu done before, %zu to train, %d at a time%s\n", s.n,
                    s.n - s.q_len, s.q_len, o->jobs * s.size,
                    s.size > 1 ? " (over the MPI ranks)" : "");
        for (size_t k = 0; done && k < s.n; k++)
            if (done[k].state != RS_PENDING) sw_record(&s, &done[k], 0, true);
        free(done);
        sw_write_summary(&s);
        answered = sw_coordinate(&s);
    } else {
#if AMPSCOPE_HAVE_MPI
        sw_work(&s);
#endif
    }

    size_t ok = 0, diverged = 0, failed = 0;
    if (s.rank == 0) {
        for (size_t k = 0; k < s.n; k++) {
            sw_row *r = &s.rows[k];
            if (r->state == RS_RUNNING) { /* no word from its rank */
                r->state = RS_FAILED;
                snprintf(r->reason, sizeof r->reason, "%s", sw_interrupted(&s, r->rank));
            }
            ok += r->state == RS_OK;
            diverged += r->state == RS_DIVERGED;
            failed += r->state == RS_FAILED;
        }
        sw_write_summary(&s);
        printf("sweep: %zu runs: %zu ok, %zu diverged, %zu failed, %zu not run; %s/summary.csv\n",
               s.n, ok, diverged, failed, s.n - ok - diverged - failed, o->out_dir);
    }
    if (s.rank == 0 && s.summary_error[0])
        rc = ut_fail(msg, len, SW_EFAIL, "%s (%zu of %zu runs ok or diverged, %zu failed)",
                     s.summary_error, ok + diverged, s.n, failed);
    else if (s.rank == 0 && ut_stop_requested())
        rc = ut_fail(msg, len, SW_EFAIL,
                     "stopped by signal %d: %zu of %zu runs done; the same command again "
                     "trains the rest",
                     ut_stop_requested(), ok + diverged, s.n);
    else if (s.rank == 0 && failed)
        rc = ut_fail(msg, len, SW_EFAIL, "%zu of %zu runs failed (see %s/summary.csv)", failed, s.n,
                     o->out_dir);
#if AMPSCOPE_HAVE_MPI
    if (mpi) {
        if (!answered) {
            fflush(stdout);
            fprintf(stderr, "ampscope sweep: ranks did not answer within %.0f s of the stop\n",
                    STOP_GRACE_S);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        MPI_Finalize();
    }
#endif
    (void)answered;
    (void)mpi;
    if (lock_fd >= 0) close(lock_fd);
    free_sweep(&s);
    return rc;
}
