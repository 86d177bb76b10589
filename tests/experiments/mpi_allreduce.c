/* mpi_allreduce.c: the MPI ring (ar_mpi_allreduce) against the one-process simulation
 * (ar_reduce) at the same world size, bit for bit (label mpi; run under
 * `mpirun --oversubscribe -np N`).
 *
 * Each rank's gradient is a function of (rank, element) alone (Philox bits: random signs,
 * exponents 2^-30 .. 2^15, so some values flush in fp16 and some sums overflow; one NaN), so
 * every rank can run the simulation of the whole world beside the MPI call.  For every preset
 * and three plain sums (fp16, bf16, fp32, no scaling) and buffer sizes 0, 1, 3, 1001 and 4096
 * (fewer elements than ranks, chunks of unequal size): the results' bits and the statistics'
 * counters must be equal, and the in-place call (out = the gradient buffer) too.  The plain fp32
 * sum must also equal the sequential float sum of the ranks' values in the ring's order (chunk c
 * from rank c on).  Bad input is refused on every rank with the same status.  Exit 0 when all
 * agree, 1 otherwise (rank 0 prints the count). */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allreduce.h"

static float grad_value(int rank, size_t i)
{
    const uint32_t b = fpe_random_bits(20, (uint32_t)rank, i);
    if (i == 7 && rank == 1) return NAN;
    const int e = -30 + (int)(b % 46);
    const float m = 1.0f + (float)((b >> 8) & 0x3FF) / 1024.0f;
    return ((b >> 31) ? -1.0f : 1.0f) * ldexpf(m, e);
}

static int gen(void *ctx, int rank, size_t offset, size_t count, float *out)
{
    (void)ctx;
    for (size_t i = 0; i < count; i++)
        out[i] = grad_value(rank, offset + i);
    return 0;
}

static uint32_t bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static int same_counts(const ar_stats *a, const ar_stats *b)
{
    return a->elements == b->elements && a->inputs_nonzero == b->inputs_nonzero &&
           a->flushed_cast == b->flushed_cast && a->flushed_prescale == b->flushed_prescale &&
           a->subnormal_messages == b->subnormal_messages && a->overflow_cast == b->overflow_cast &&
           a->overflow_in_sum == b->overflow_in_sum &&
           a->nonfinite_results == b->nonfinite_results &&
           a->subnormal_results == b->subnormal_results && a->found_inf == b->found_inf;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int world, rank;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    enum { MAX_N = 4096 };
    static const size_t sizes[] = {0, 1, 3, 1001, MAX_N};
    static float mine[MAX_N], out[MAX_N], ref[MAX_N];
    char msg[256];
    long failures = 0, cases = 0, found_inf = 0, flushed = 0;

    ar_config configs[32];
    int n_configs = 0;
    for (const ar_config *p = ar_presets; p->name; p++)
        configs[n_configs++] = *p;
    const fpe_format_id sums[3] = {FPE_FMT_F16, FPE_FMT_BF16, FPE_FMT_F32};
    for (int f = 0; f < 3; f++)
        configs[n_configs++] =
            (ar_config){"sum", FPE_FMT_F32, sums[f], AR_ORDER_CAST_FIRST, 1, 0, "test"};
    configs[n_configs] = *ar_preset("pytorch-fp16-hook");
    configs[n_configs++].order = AR_ORDER_SCALE_FIRST;

    for (int ci = 0; ci < n_configs; ci++)
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            const ar_config *c = &configs[ci];
            const size_t n = sizes[si];
            for (size_t i = 0; i < n; i++)
                mine[i] = grad_value(rank, i);
            ar_stats st, want;
            int status =
                ar_mpi_allreduce(c, MPI_COMM_WORLD, mine, out, n, 1.0, &st, msg, sizeof msg);
            ar_call call = {.config = c, .world = world, .n = n, .gen = gen};
            if (status || ar_reduce(&call, ref, &want, msg, sizeof msg)) {
                fprintf(stderr, "rank %d: %s n=%zu: %s\n", rank, c->name, n, msg);
                failures++;
                continue;
            }
            cases++;
            found_inf += want.found_inf;
            flushed += (long)(want.flushed_cast + want.flushed_prescale);
            size_t bad = 0;
            for (size_t i = 0; i < n; i++)
                bad += bits(out[i]) != bits(ref[i]);
            if (bad || !same_counts(&st, &want)) {
                fprintf(stderr, "rank %d: %s (comm %d) n=%zu: %zu results differ, counts %s\n",
                        rank, c->name, (int)c->comm, n, bad,
                        same_counts(&st, &want) ? "equal" : "differ");
                failures++;
            }
            if (strcmp(c->name, "sum") == 0 && c->comm == FPE_FMT_F32)
                for (int ch = 0; ch < world; ch++) {
                    size_t b, e;
                    ar_chunk(n, world, ch, &b, &e);
                    for (size_t i = b; i < e; i++) {
                        volatile float s = grad_value(ch, i);
                        for (int k = 1; k < world; k++)
                            s = s + grad_value((ch + k) % world, i);
                        if (bits(s) != bits(out[i]) && !(isnan(s) && isnan(out[i]))) {
                            fprintf(stderr, "rank %d: fp32 element %zu: ring %a, sequential %a\n",
                                    rank, i, (double)out[i], (double)s);
                            failures++;
                        }
                    }
                }
        }
    /* in place, as the training step calls it: out is the gradient buffer */
    {
        const ar_config *c = ar_preset("pytorch-fp16-hook");
        for (size_t i = 0; i < 1001; i++)
            mine[i] = grad_value(rank, i);
        ar_call call = {.config = c, .world = world, .n = 1001, .gen = gen};
        size_t bad = 0;
        if (ar_mpi_allreduce(c, MPI_COMM_WORLD, mine, mine, 1001, 1.0, NULL, msg, sizeof msg) ||
            ar_reduce(&call, ref, NULL, msg, sizeof msg))
            bad = 1;
        for (size_t i = 0; i < 1001 && !bad; i++)
            bad += bits(mine[i]) != bits(ref[i]);
        if (bad) {
            fprintf(stderr, "rank %d: in place: %zu results differ\n", rank, bad);
            failures++;
        }
        cases++;
    }
    /* bad input, refused alike on every rank */
    ar_config bad = *ar_preset("apex");
    bad.pre = -1;
    if (ar_mpi_allreduce(&bad, MPI_COMM_WORLD, mine, out, 4, 1.0, NULL, msg, sizeof msg) !=
            AR_EINPUT ||
        ar_mpi_allreduce(NULL, MPI_COMM_WORLD, mine, out, 4, 1.0, NULL, msg, sizeof msg) !=
            AR_EINPUT ||
        ar_mpi_allreduce(&bad, MPI_COMM_WORLD, NULL, out, 4, 1.0, NULL, msg, sizeof msg) !=
            AR_EINPUT) {
        fprintf(stderr, "rank %d: bad input accepted\n", rank);
        failures++;
    }
    MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("mpi_allreduce: %d ranks, %ld cases (%ld with found_inf, %ld flushed inputs), "
               "%ld mismatches\n",
               world, cases, found_inf, flushed, failures);
    MPI_Finalize();
    return failures ? 1 : 0;
}
