/* train_mpi.c: `ampscope train` under mpirun: the MPI ranks as the training loop's
 * train_comm (experiments/train.h), so that one run trains data-parallel over them.
 *
 * The launcher is recognised by its environment before MPI_Init (sweep.h's
 * sw_launcher_rank: OpenMPI, PMI, PMIx), so that a plain `ampscope train` never starts MPI.
 * Errors return (MPI_ERRORS_RETURN) instead of aborting, so that a rank that fails says why;
 * a rank that dies is seen by mpirun, which ends the others (the record stays resumable: it
 * is flushed step by step and its checkpoint written whole or not at all). */
#include "train_mpi.h"

#include <stdio.h>
#include <string.h>

#include "sweep.h" /* sw_launcher_rank */

#if AMPSCOPE_HAVE_MPI
#include <mpi.h>

#include "allreduce.h"

static int mpi_fail(int err, char *msg, size_t len)
{
    char text[MPI_MAX_ERROR_STRING];
    int n = 0;
    if (MPI_Error_string(err, text, &n) != MPI_SUCCESS)
        snprintf(text, sizeof text, "error %d", err);
    snprintf(msg, len, "MPI: %s", text);
    return -1;
}

static int comm_allreduce(void *ctx, const ar_config *c, const float *grad, float *out, size_t n,
                          double loss_scale, ar_stats *stats, char *msg, size_t len)
{
    (void)ctx;
    return ar_mpi_allreduce(c, MPI_COMM_WORLD, grad, out, n, loss_scale, stats, msg, len) == AR_OK
               ? 0
               : -1;
}

static int comm_max_int(void *ctx, int *values, int n, char *msg, size_t len)
{
    (void)ctx;
    const int err = MPI_Allreduce(MPI_IN_PLACE, values, n, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return err == MPI_SUCCESS ? 0 : mpi_fail(err, msg, len);
}

static int comm_gather(void *ctx, double mine, double *all, char *msg, size_t len)
{
    (void)ctx;
    const int err = MPI_Allgather(&mine, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, MPI_COMM_WORLD);
    return err == MPI_SUCCESS ? 0 : mpi_fail(err, msg, len);
}

int train_mpi_begin(train_comm *c, bool *started, char *msg, size_t len)
{
    memset(c, 0, sizeof *c);
    *started = false;
    int size;
    sw_launcher_rank(&size);
    if (size <= 1) return 0; /* one process (mpirun -np 1 too): nothing to reduce */
    if (MPI_Init(NULL, NULL) != MPI_SUCCESS) {
        snprintf(msg, len, "MPI_Init failed (started by an MPI launcher)");
        return -1;
    }
    *started = true;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &c->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &c->size);
    c->allreduce = comm_allreduce;
    c->max_int = comm_max_int;
    c->gather = comm_gather;
    return 0;
}

void train_mpi_end(bool started)
{
    if (started) MPI_Finalize();
}

#else

int train_mpi_begin(train_comm *c, bool *started, char *msg, size_t len)
{
    memset(c, 0, sizeof *c);
    *started = false;
    int size;
    sw_launcher_rank(&size);
    if (size > 1) {
        snprintf(msg, len,
                 "started by an MPI launcher with %d ranks, but this ampscope was built without "
                 "MPI (install libopenmpi-dev and build again), so each rank would train the "
                 "whole run alone",
                 size);
        return -1;
    }
    return 0;
}

void train_mpi_end(bool started) { (void)started; }

#endif
