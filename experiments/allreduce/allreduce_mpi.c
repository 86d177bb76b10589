/* allreduce_mpi.c: the ring of allreduce.h over MPI ranks (built only with MPI).  Each rank
 * turns its gradient into messages (the communication format's bit patterns, 16 or 32 bits),
 * then N - 1 reduce-scatter steps: at step s rank r sends its partial sum of chunk
 * (r - s) mod N to rank r + 1 and receives chunk (r - s - 1) mod N from rank r - 1, adding its
 * own message to it (received + own, one rounding).  Chunk c thus starts at rank c and gathers
 * ranks c+1, c+2, ... in the order ar_reduce uses, and rank c - 1 ends holding its sum.  Then
 * N - 1 all-gather steps pass the finished chunks round unchanged, and every rank finishes
 * (post-scale, the bucket's format) the same bits. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "allreduce.h"
#include "util.h"

/* the statistics' counters, summed over ranks in one MPI_Allreduce */
enum { C_NONZERO, C_FLUSH_CAST, C_FLUSH_PRE, C_SUB_MSG, C_OVF_CAST, C_COUNT };

/* One rank's side of the ring: its neighbours and the packed halves of the wire. */
typedef struct ring {
    MPI_Comm comm;
    int world, to, from;
    int wide; /* 32-bit messages (fp32), else 16 */
    size_t n;
    void *send, *recv;
} ring;

static int mod(int a, int m) { return (a % m + m) % m; }

/* One step: chunk send_c of mine packed to the next rank, chunk recv_c from the previous one
 * into the wire (its bounds in *rb, *re).  MPI's status. */
static int ring_exchange(const ring *g, const uint32_t *mine, int send_c, int recv_c, size_t *rb,
                         size_t *re)
{
    size_t sb, se;
    ar_chunk(g->n, g->world, send_c, &sb, &se);
    ar_chunk(g->n, g->world, recv_c, rb, re);
    for (size_t i = sb; i < se; i++) {
        if (g->wide)
            ((uint32_t *)g->send)[i - sb] = mine[i];
        else
            ((uint16_t *)g->send)[i - sb] = (uint16_t)mine[i];
    }
    const MPI_Datatype type = g->wide ? MPI_UINT32_T : MPI_UINT16_T;
    return MPI_Sendrecv(g->send, (int)(se - sb), type, g->to, 17, g->recv, (int)(*re - *rb), type,
                        g->from, 17, g->comm, MPI_STATUS_IGNORE);
}

/* element i of the chunk received */
static uint32_t received(const ring *g, size_t i)
{
    return g->wide ? ((const uint32_t *)g->recv)[i] : ((const uint16_t *)g->recv)[i];
}

int ar_mpi_allreduce(const ar_config *c, MPI_Comm comm, const float *grad, float *out, size_t n,
                     double loss_scale, ar_stats *stats, char *msg, size_t msg_len)
{
    int world, rank;
    if (MPI_Comm_size(comm, &world) != MPI_SUCCESS || MPI_Comm_rank(comm, &rank) != MPI_SUCCESS)
        return ut_fail(msg, msg_len, AR_EMPI, "all-reduce: not an MPI communicator");
    int st = ar_check_config(c, world, msg, msg_len);
    if (st) return st;
    if (n > 0 && (!grad || !out))
        return ut_fail(msg, msg_len, AR_EINPUT, "all-reduce: NULL gradient or output");
    if (n > (size_t)0x7FFFFFFF)
        return ut_fail(msg, msg_len, AR_EINPUT, "all-reduce: %zu elements are too many for MPI", n);
    if (stats) memset(stats, 0, sizeof *stats);
    if (n == 0) return AR_OK;
    const ar_plan plan = ar_plan_make(c, world);

    const int wide = c->comm == FPE_FMT_F32;
    const size_t max_len = n / (size_t)world + 1;
    uint32_t *mine = malloc(n * sizeof *mine); /* this rank's messages, then the sums */
    uint32_t *wire = malloc(2 * max_len * 4);  /* one chunk sent, one received, packed */
    unsigned char *nonfinite = stats ? calloc(n, 1) : NULL;
    double *exact = stats ? malloc(n * sizeof *exact) : NULL;
    if (!mine || !wire || (stats && (!nonfinite || !exact))) {
        free(mine), free(wire), free(nonfinite), free(exact);
        return ut_fail(msg, msg_len, AR_ENOMEM, "all-reduce: out of memory (%zu elements)", n);
    }
    ar_stats local = {0};
    for (size_t i = 0; i < n; i++) {
        mine[i] = ar_message(&plan, grad[i], stats ? &local : NULL);
        if (stats) {
            const uint32_t e = wide ? 0x7F800000u : c->comm == FPE_FMT_F16 ? 0x7C00u : 0x7F80u;
            nonfinite[i] = (mine[i] & e) == e;
            exact[i] = (double)grad[i];
        }
    }
    ring g = {comm, world, (rank + 1) % world, (rank + world - 1) % world, wide, n, wire, NULL};
    g.recv = wide ? (void *)(wire + max_len) : (void *)((uint16_t *)wire + max_len);
    size_t rb, re;
    /* reduce-scatter: send the partial sum of chunk r - s, add this rank's to chunk r - s - 1 */
    for (int s = 0; s < world - 1 && st == 0; s++) {
        if (ring_exchange(&g, mine, mod(rank - s, world), mod(rank - s - 1, world), &rb, &re) !=
            MPI_SUCCESS) {
            st = AR_EMPI;
            break;
        }
        for (size_t i = rb; i < re; i++)
            mine[i] = ar_add(c->comm, received(&g, i - rb), mine[i]);
    }
    /* all-gather: rank r holds chunk (r + 1) mod N; pass the finished chunks round */
    for (int s = 0; s < world - 1 && st == 0; s++) {
        if (ring_exchange(&g, mine, mod(rank + 1 - s, world), mod(rank - s, world), &rb, &re) !=
            MPI_SUCCESS) {
            st = AR_EMPI;
            break;
        }
        for (size_t i = rb; i < re; i++)
            mine[i] = received(&g, i - rb);
    }
    if (st == 0)
        for (size_t i = 0; i < n; i++)
            out[i] = ar_finish(&plan, mine[i]);
    if (st == 0 && stats) {
        unsigned long long counts[C_COUNT] = {local.inputs_nonzero, local.flushed_cast,
                                              local.flushed_prescale, local.subnormal_messages,
                                              local.overflow_cast};
        if (MPI_Allreduce(MPI_IN_PLACE, counts, C_COUNT, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm) !=
                MPI_SUCCESS ||
            MPI_Allreduce(MPI_IN_PLACE, nonfinite, (int)n, MPI_UNSIGNED_CHAR, MPI_MAX, comm) !=
                MPI_SUCCESS ||
            MPI_Allreduce(MPI_IN_PLACE, exact, (int)n, MPI_DOUBLE, MPI_SUM, comm) != MPI_SUCCESS)
            st = AR_EMPI;
        if (st == 0) {
            stats->inputs_nonzero = counts[C_NONZERO];
            stats->flushed_cast = counts[C_FLUSH_CAST];
            stats->flushed_prescale = counts[C_FLUSH_PRE];
            stats->subnormal_messages = counts[C_SUB_MSG];
            stats->overflow_cast = counts[C_OVF_CAST];
            double err2 = 0, ref2 = 0;
            for (size_t i = 0; i < n; i++)
                ar_stats_result(c, mine[i], out[i], exact[i] / ar_divisor(c, world), loss_scale,
                                !nonfinite[i], stats, &err2, &ref2);
            ar_stats_finish(stats, err2, ref2);
        }
    }
    free(mine), free(wire), free(nonfinite), free(exact);
    if (st == AR_EMPI) return ut_fail(msg, msg_len, AR_EMPI, "all-reduce: an MPI call failed");
    return st;
}
