/* queue.c: the queue of runs and who trains them (sweep_internal.h).
 * Rank 0 (or the only process) pops runs into its own slots and, under
 * MPI, answers the other ranks: a rank sends REQUEST whenever one of its
 * slots is free, rank 0 answers WORK(run) or STOP, the rank sends RESULT
 * when the run ends and BYE when it has been told STOP and has nothing
 * running.  Everyone polls (MPI_Iprobe, waitpid WNOHANG, a short sleep),
 * so rank 0 trains in its own slots while it hands out work. */
#define _POSIX_C_SOURCE 200809L /* kill */

#include "sweep_internal.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h" /* opt_parse_int */
#include "util.h"

#if AMPSCOPE_HAVE_MPI
#include <mpi.h>
#endif

/* ---- the launcher ---------------------------------------------------------------------------- */
static int env_int(const char *name, int fallback)
{
    const char *v = getenv(name);
    int64_t n;
    return v && opt_parse_int(v, 0, INT32_MAX, &n) == 0 ? (int)n : fallback;
}

int sw_launcher_rank(int *size)
{
    static const char *const vars[][2] = {{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                          {"PMI_RANK", "PMI_SIZE"},
                                          {"PMIX_RANK", "SLURM_NTASKS"}};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        if (getenv(vars[i][0])) {
            if (size) *size = env_int(vars[i][1], 2); /* unknown: at least "more than one" */
            return env_int(vars[i][0], 0);
        }
    if (size) *size = 1;
    return 0;
}

/* ---- rank 0: the table, the queue, its own slots --------------------------------------------- */
void sw_push_back(sw_sweep *s, size_t k) { s->queue[(s->q_head + s->q_len++) % s->n] = k; }

static size_t pop(sw_sweep *s)
{
    const size_t k = s->queue[s->q_head];
    s->q_head = (s->q_head + 1) % s->n;
    s->q_len--;
    return k;
}

#if AMPSCOPE_HAVE_MPI
enum { TAG_REQUEST = 1, TAG_WORK = 2, TAG_STOP = 3, TAG_RESULT = 4, TAG_BYE = 5 };

/* A rank that MPI can no longer reach: its runs in flight failed. */
static void rank_lost(sw_sweep *s, bool *gone, int *byes, int rank, int err)
{
    if (gone[rank]) return;
    gone[rank] = true;
    ++*byes;
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(err, text, &len);
    for (size_t k = 0; k < s->n; k++)
        if (s->rows[k].state == RS_RUNNING && s->rows[k].rank == rank) {
            sw_result res = {.run = (int32_t)k, .state = RS_FAILED};
            snprintf(res.reason, sizeof res.reason, "rank %d was lost: %s", rank, text);
            sw_record(s, &res, rank, false);
        }
}

/* Rank 0 answers what the other ranks sent; true if there was anything. */
static bool serve(sw_sweep *s, bool *gone, int *byes)
{
    bool any = false;
    for (;;) {
        int flag = 0;
        MPI_Status st;
        if (MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st) != MPI_SUCCESS) {
            ut_stop_set(SIGTERM); /* nothing more can be heard: wind down */
            return any;
        }
        if (!flag) return any;
        any = true;
        const int src = st.MPI_SOURCE;
        int err = MPI_SUCCESS;
        if (st.MPI_TAG == TAG_RESULT) {
            sw_result res;
            err = MPI_Recv(&res, (int)sizeof res, MPI_BYTE, src, TAG_RESULT, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE);
            if (err == MPI_SUCCESS && res.run >= 0 && (size_t)res.run < s->n) {
                res.reason[sizeof res.reason - 1] = '\0';
                sw_record(s, &res, src, false);
            }
        } else if (st.MPI_TAG == TAG_REQUEST) {
            int32_t none;
            err = MPI_Recv(&none, 1, MPI_INT32_T, src, TAG_REQUEST, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE);
            if (err == MPI_SUCCESS && !s->stopping && s->q_len > 0) {
                const int32_t k = (int32_t)pop(s);
                s->rows[k].state = RS_RUNNING;
                s->rows[k].rank = src;
                err = MPI_Send(&k, 1, MPI_INT32_T, src, TAG_WORK, MPI_COMM_WORLD);
                sw_write_summary(s);
            } else if (err == MPI_SUCCESS) {
                err = MPI_Send(&none, 1, MPI_INT32_T, src, TAG_STOP, MPI_COMM_WORLD);
            }
        } else {
            int32_t none;
            err =
                MPI_Recv(&none, 1, MPI_INT32_T, src, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (err == MPI_SUCCESS && st.MPI_TAG == TAG_BYE && !gone[src]) {
                gone[src] = true;
                ++*byes;
            }
        }
        if (err != MPI_SUCCESS) rank_lost(s, gone, byes, src, err);
    }
}

/* Ranks > 0: ask for work while a slot is free, train, report. */
void sw_work(sw_sweep *s)
{
    int outstanding = 0; /* requests not yet answered */
    bool told_stop = false, stopping = false;
    for (;;) {
        bool busy = false;
        sw_result res;
        for (int j = 0; j < s->o->jobs; j++)
            if (s->slots[j].pid && sw_reap(s, &s->slots[j], &res)) {
                MPI_Send(&res, (int)sizeof res, MPI_BYTE, 0, TAG_RESULT, MPI_COMM_WORLD);
                busy = true;
            }
        if (ut_stop_requested() && !stopping) {
            stopping = true;
            sw_forward_stop(s);
        }
        while (!told_stop && !stopping && (int)sw_running(s) + outstanding < s->o->jobs) {
            const int32_t none = 0;
            if (MPI_Send(&none, 1, MPI_INT32_T, 0, TAG_REQUEST, MPI_COMM_WORLD) != MPI_SUCCESS) {
                stopping = true; /* rank 0 is gone: finish what runs, then leave */
                sw_forward_stop(s);
                break;
            }
            outstanding++;
        }
        int flag = 0;
        MPI_Status st;
        while (outstanding > 0 &&
               MPI_Iprobe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st) == MPI_SUCCESS && flag) {
            int32_t k;
            MPI_Recv(&k, 1, MPI_INT32_T, 0, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            outstanding--;
            busy = true;
            if (st.MPI_TAG == TAG_STOP) {
                told_stop = true;
            } else if (stopping || told_stop || k < 0 || (size_t)k >= s->n) {
                memset(&res, 0, sizeof res);
                res.run = k;
                res.state = RS_PENDING; /* handed back unstarted */
                MPI_Send(&res, (int)sizeof res, MPI_BYTE, 0, TAG_RESULT, MPI_COMM_WORLD);
            } else if (!sw_start_in_free_slot(s, (size_t)k, &res)) {
                MPI_Send(&res, (int)sizeof res, MPI_BYTE, 0, TAG_RESULT, MPI_COMM_WORLD);
            }
        }
        if ((told_stop || stopping) && outstanding == 0 && sw_running(s) == 0) {
            const int32_t none = 0;
            MPI_Send(&none, 1, MPI_INT32_T, 0, TAG_BYE, MPI_COMM_WORLD);
            return;
        }
        if (!busy) sw_nap();
    }
}
#endif

/* Rank 0, or the whole sweep without MPI.  False when ranks did not
 * answer within STOP_GRACE_S of a stop. */
bool sw_coordinate(sw_sweep *s)
{
    int byes = 0;
    bool *gone = calloc((size_t)s->size, sizeof *gone);
    if (!gone) return false; /* out of memory: the caller aborts the job */
    double stop_at = 0;
    bool answered = true;
    for (;;) {
        bool busy = false;
        sw_result res;
        for (int j = 0; j < s->o->jobs; j++)
            if (s->slots[j].pid && sw_reap(s, &s->slots[j], &res)) {
                sw_record(s, &res, 0, false);
                busy = true;
            }
        if (ut_stop_requested() && !s->stopping) {
            s->stopping = true;
            stop_at = ut_seconds();
            sw_forward_stop(s);
            sw_write_summary(s); /* the runs in flight as interrupted, in case we are killed */
            if (s->o->progress)
                fprintf(stderr,
                        "sweep: signal %d: no new runs; the runs in flight stop after their "
                        "step\n",
                        ut_stop_requested());
        }
        while (!s->stopping && s->q_len > 0 && (int)sw_running(s) < s->o->jobs) {
            const size_t k = pop(s);
            s->rows[k].state = RS_RUNNING;
            s->rows[k].rank = 0;
            if (!sw_start_in_free_slot(s, k, &res))
                sw_record(s, &res, 0, false);
            else
                sw_write_summary(s);
            busy = true;
        }
#if AMPSCOPE_HAVE_MPI
        if (s->size > 1 && gone && serve(s, gone, &byes)) busy = true;
#endif
        if ((s->stopping || s->q_len == 0) && sw_running(s) == 0 && byes >= s->size - 1) break;
        if (s->stopping && ut_seconds() - stop_at > STOP_GRACE_S) {
            for (int j = 0; j < s->o->jobs; j++)
                if (s->slots[j].pid) kill(s->slots[j].pid, SIGKILL);
            if (sw_running(s) == 0 && byes < s->size - 1) {
                answered = false;
                break;
            }
        }
        if (!busy) sw_nap();
    }
    free(gone);
    return answered;
}
