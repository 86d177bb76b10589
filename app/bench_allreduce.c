/* bench_allreduce.c: `ampscope bench allreduce`, the speed of the emulated low-precision ring
 * all-reduce (experiments/allreduce) in one process for simulated worlds of 2, 8 and 64 ranks,
 * beside two fp32 references measured in the same run: a plain sequential float sum over the
 * same ranks' buffers (the loop a CPU would run), and, when ampscope has MPI and was started
 * by mpirun, MPI_Allreduce of fp32 over the real ranks.  Rates are bytes of fp32 gradient
 * reduced per second: N ranks x elements x 4 / seconds (all ranks' inputs, for both).  Before
 * timing, the emulated plain fp32 ring must equal the sequential loop bit for bit at each N
 * (the ring's order: chunk c from rank c on).  Each row repeats passes for about a fixed time,
 * three times, and reports the median. */
#define _POSIX_C_SOURCE 200809L

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allreduce.h"
#include "cli.h"
#include "cli_options.h"
#include "commands.h"
#include "util.h"

#if AMPSCOPE_HAVE_MPI
#include <mpi.h>
#endif

#define REPS 3

typedef struct bench_ar_args {
    bool csv, quick;
    int64_t elements;
} bench_ar_args;

#define F(field) offsetof(bench_ar_args, field)
static const opt_spec bench_ar_options[] = {
    {.name = "elements",
     .kind = OPT_I64,
     .offset = F(elements),
     .imin = 64,
     .imax = 1 << 22,
     .metavar = "N",
     .help = "gradient elements per rank (default 65536; --quick: 4096)",
     .group = "options:"},
    {.name = "csv",
     .kind = OPT_FLAG,
     .offset = F(csv),
     .help = "CSV on standard output instead of the table"},
    {.name = "quick", .kind = OPT_FLAG, .offset = F(quick), .help = "fewer elements, shorter rows"},
    {.name = NULL},
};
#undef F

static void help(FILE *out)
{
    fprintf(out, "usage: ampscope bench allreduce [--elements N] [--csv] [--quick]\n"
                 "\n"
                 "Times the emulated gradient all-reduce (a ring, each addition rounded once to\n"
                 "the communication format) in one process for simulated worlds of 2, 8 and 64\n"
                 "ranks, with the presets pytorch-fp32, pytorch-fp16-hook and pytorch-bf16-hook,\n"
                 "against a plain fp32 sequential sum of the same buffers and, under mpirun with\n"
                 "an MPI build, MPI_Allreduce of fp32 over the real ranks, in the same run.\n"
                 "Rates are fp32 gradient bytes reduced per second (ranks x elements x 4).\n"
                 "Exit status 1 if the emulated fp32 ring differs from the sequential sum.\n"
                 "\n");
    cli_print_options(out, bench_ar_options, 17);
}

static volatile float bench_ar_sink;

/* the median of REPS timings of passes repeated for about seconds each; rate in bytes/s */
typedef int (*pass_fn)(void *ctx);

static double median3(double *t)
{
    for (int i = 0; i < REPS; i++)
        for (int j = i + 1; j < REPS; j++)
            if (t[j] < t[i]) {
                const double x = t[i];
                t[i] = t[j];
                t[j] = x;
            }
    return t[REPS / 2];
}

static double time_passes(pass_fn fn, void *ctx, double seconds)
{
    double t[REPS];
    for (int r = 0; r < REPS; r++) {
        const double start = ut_seconds();
        long passes = 0;
        do {
            if (fn(ctx)) return -1;
            passes++;
        } while (ut_seconds() - start < seconds);
        t[r] = (ut_seconds() - start) / (double)passes;
    }
    return median3(t);
}

typedef struct world_data {
    int world;
    size_t n;
    const float *const *grads;
    float *out;
    const ar_config *config;
} world_data;

static int pass_loop(void *ctx)
{
    world_data *w = ctx;
    for (int ch = 0; ch < w->world; ch++) {
        size_t b, e;
        ar_chunk(w->n, w->world, ch, &b, &e);
        for (size_t i = b; i < e; i++) {
            float s = w->grads[ch][i];
            for (int k = 1; k < w->world; k++)
                s += w->grads[(ch + k) % w->world][i];
            w->out[i] = s;
        }
    }
    bench_ar_sink += w->out[w->n / 2];
    return 0;
}

static int pass_emulated(void *ctx)
{
    world_data *w = ctx;
    ar_call call = {.config = w->config, .world = w->world, .n = w->n, .grads = w->grads};
    char msg[128];
    if (ar_reduce(&call, w->out, NULL, msg, sizeof msg)) return -1;
    bench_ar_sink += w->out[w->n / 2];
    return 0;
}

static void print_row(bool csv, const char *what, const char *comm, int world, size_t n,
                      double seconds, double loop_rate, double mpi_rate)
{
    const double rate = (double)world * (double)n * 4.0 / seconds;
    if (csv) {
        printf("%s,%s,%d,%zu,%.6g,%.4g,", what, comm, world, n, seconds, rate / 1e6);
        printf(loop_rate > 0 ? "%.4g," : ",", rate / loop_rate);
        printf(mpi_rate > 0 ? "%.4g\n" : "\n", rate / mpi_rate);
        return;
    }
    printf("%-22s %-5s %5d %9zu %11.2f", what, comm, world, n, rate / 1e6);
    if (loop_rate > 0)
        printf(" %9.4f", rate / loop_rate);
    else
        printf(" %9s", "-");
    if (mpi_rate > 0)
        printf(" %9.4f\n", rate / mpi_rate);
    else
        printf(" %9s\n", "-");
}

int bench_allreduce(int argc, char **argv)
{
    bench_ar_args args = {0};
    bool want_help = false;
    const int prc = cli_parse_options(bench_ar_options, &args, argc, argv, &want_help, NULL);
    if (prc) return prc;
    if (want_help) {
        help(stdout);
        return CLI_OK;
    }
    const size_t n = (size_t)(args.elements ? args.elements : args.quick ? 4096 : 65536);
    const double seconds = args.quick ? 0.02 : 0.3;
    const int worlds[3] = {2, 8, 64};
    static const char *const presets[3] = {"pytorch-fp32", "pytorch-fp16-hook",
                                           "pytorch-bf16-hook"};
    double mpi_rate = 0;
    int mpi_world = 0;
#if AMPSCOPE_HAVE_MPI
    int rank = 0;
    const bool launched =
        getenv("OMPI_COMM_WORLD_RANK") || getenv("PMI_RANK") || getenv("PMIX_RANK");
    if (launched) {
        if (MPI_Init(NULL, NULL) != MPI_SUCCESS)
            return cli_error(CLI_EFAIL, "MPI_Init failed (started by an MPI launcher)");
        MPI_Comm_size(MPI_COMM_WORLD, &mpi_world);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        float *in = malloc(n * sizeof *in), *res = malloc(n * sizeof *res);
        int ok = in && res, all_ok = 0;
        for (size_t i = 0; ok && i < n; i++)
            in[i] = (float)((i * 7 + (size_t)rank) % 13) - 6;
        MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (all_ok) {
            double t[REPS];
            long passes = 1;
            const double t0 = ut_seconds();
            MPI_Allreduce(in, res, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            const double one = ut_seconds() - t0;
            if (rank == 0) passes = one > 0 ? (long)(seconds / one) + 1 : 1000;
            MPI_Bcast(&passes, 1, MPI_LONG, 0, MPI_COMM_WORLD);
            for (int r = 0; r < REPS; r++) {
                MPI_Barrier(MPI_COMM_WORLD);
                const double start = ut_seconds();
                for (long p = 0; p < passes; p++)
                    MPI_Allreduce(in, res, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
                t[r] = (ut_seconds() - start) / (double)passes;
            }
            mpi_rate = (double)mpi_world * (double)n * 4.0 / median3(t);
        }
        free(in);
        free(res);
        if (!all_ok) {
            MPI_Finalize();
            return cli_error(CLI_EFAIL, "out of memory (%zu elements)", n);
        }
        if (rank != 0) {
            MPI_Finalize();
            return CLI_OK;
        }
    }
#endif
    float *data = malloc((size_t)64 * n * sizeof *data);
    float *out = malloc(n * sizeof *out), *check = malloc(n * sizeof *check);
    const float *grads[64];
    int status = CLI_OK;
    if (!data || !out || !check) {
        status = cli_error(CLI_EFAIL, "out of memory (%zu elements x 64 ranks)", n);
        goto done;
    }
    for (int r = 0; r < 64; r++) {
        for (size_t i = 0; i < n; i++) {
            const uint32_t b = fpe_random_bits(7, (uint32_t)r, i);
            data[(size_t)r * n + i] = ((b >> 31) ? -1.0f : 1.0f) * (float)(b & 0xFFFFF) * 0x1p-30f;
        }
        grads[r] = data + (size_t)r * n;
    }
    if (args.csv)
        printf("what,comm,ranks,elements,seconds,mb_per_s,vs_loop,vs_mpi\n");
    else {
        printf("ampscope bench allreduce: %zu fp32 elements per rank, one core; rates in MB/s of\n"
               "fp32 gradients (ranks x elements x 4 bytes); ratios against the fp32 loop at the\n"
               "same ranks and against MPI_Allreduce (fp32, over the real ranks) in this run\n"
               "MPI: %s\n\n",
               n,
               mpi_world ? "started by mpirun" : "none (not started by mpirun, or no MPI build)");
        printf("%-22s %-5s %5s %9s %11s %9s %9s\n", "what", "comm", "ranks", "elements", "MB/s",
               "vs loop", "vs MPI");
    }
    if (mpi_rate > 0)
        print_row(args.csv, "MPI_Allreduce", "fp32", mpi_world, n,
                  (double)mpi_world * (double)n * 4.0 / mpi_rate, 0, mpi_rate);
    for (int wi = 0; wi < 3; wi++) {
        world_data w = {worlds[wi], n, grads, out, NULL};
        /* the emulated plain fp32 ring against the loop, bit for bit, before any timing */
        const ar_config sum = {"sum", FPE_FMT_F32, FPE_FMT_F32, AR_ORDER_CAST_FIRST, 1, 0, ""};
        ar_call call = {.config = &sum, .world = w.world, .n = n, .grads = grads};
        char msg[128];
        pass_loop(&w);
        if (ar_reduce(&call, check, NULL, msg, sizeof msg) ||
            memcmp(check, out, n * sizeof *out) != 0) {
            status = cli_error(CLI_EFAIL,
                               "the emulated fp32 ring differs from the sequential sum "
                               "at %d ranks",
                               w.world);
            goto done;
        }
        const double loop = time_passes(pass_loop, &w, seconds);
        const double loop_rate = (double)w.world * (double)n * 4.0 / loop;
        print_row(args.csv, "fp32 loop", "fp32", w.world, n, loop, loop_rate, mpi_rate);
        for (int p = 0; p < 3; p++) {
            w.config = ar_preset(presets[p]);
            const double t = time_passes(pass_emulated, &w, seconds);
            if (t < 0) {
                status = cli_error(CLI_EFAIL, "the all-reduce failed");
                goto done;
            }
            print_row(args.csv, presets[p], fpe_formats[w.config->comm].name, w.world, n, t,
                      loop_rate, mpi_rate);
        }
    }
done:
    free(data);
    free(out);
    free(check);
#if AMPSCOPE_HAVE_MPI
    if (mpi_world) MPI_Finalize();
#endif
    return status;
}
