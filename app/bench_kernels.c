/* bench_kernels.c: `ampscope bench kernels`, the speed of kernels/ on one
 * backend, each row beside the limit measured in the same run.
 *
 * Bandwidth-bound kernels (casts, unscale + check, statistics, optimizer
 * updates) report GB/s of compulsory traffic (bytes each element must read
 * and write once) and that rate as a fraction of the copy bandwidth measured
 * first: device-to-device copies on cuda, memcpy on the cpu.  GEMMs report
 * TFLOP/s (2mnk per call) beside the rate of one large GEMM of the same
 * backend (cuBLAS or OpenBLAS), measured in the same run.
 *
 * Before anything is timed on cuda, the cuda results of the elementwise
 * kernels are compared with the cpu backend's on the same inputs; a
 * disagreement is an error.  Working sets are larger than the last-level
 * cache (cuda: 2^26 elements, 256 MB of fp32; cpu: 2^24), so every
 * repetition streams from memory.  A row is the median of several
 * repetitions, each long enough to hide the launch and timer overheads.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "cli_options.h"
#include "commands.h"
#include "fpe.h"
#include "kernels.h"
#include "util.h"

#define MAX_REPS 9

typedef struct kbench {
    ak_backend *b;
    bool csv, quick;
    size_t n; /* elements of the elementwise rows */
    double rep_seconds;
    int reps;
    double copy_gbs;  /* the copy row's rate */
    double gemm_peak; /* the large GEMM's TFLOP/s for each storage type */
    /* inputs and outputs in backend memory */
    ak_tensor x32, y32, g32, m32, v32, x16, y16;
    float *scale, *inv_scale, *found_inf;
    ak_stats *stats;
    ak_opt_state *opt_state;
    ak_update_loss *loss;
} kbench;

/* One timed call; returns an ak status. */
typedef int (*kb_fn)(kbench *k, const void *arg);

/* Median seconds per call of fn, or a negative value on error. */
static double measure(kbench *k, kb_fn fn, const void *arg)
{
    /* warm up, and calibrate the calls per repetition */
    unsigned long calls = 1;
    double elapsed;
    for (;;) {
        double t0 = ut_seconds();
        for (unsigned long c = 0; c < calls; c++)
            if (fn(k, arg) != AK_OK) return -1;
        if (ak_sync(k->b) != AK_OK) return -1;
        elapsed = ut_seconds() - t0;
        if (elapsed >= k->rep_seconds / 4 || calls >= (1ul << 20)) break;
        calls *= 2;
    }
    calls = (unsigned long)((double)calls * k->rep_seconds / (elapsed > 0 ? elapsed : 1e-9)) + 1;
    double per_call[MAX_REPS];
    for (int r = 0; r < k->reps; r++) {
        double t0 = ut_seconds();
        for (unsigned long c = 0; c < calls; c++)
            if (fn(k, arg) != AK_OK) return -1;
        if (ak_sync(k->b) != AK_OK) return -1;
        per_call[r] = (ut_seconds() - t0) / (double)calls;
    }
    qsort(per_call, (size_t)k->reps, sizeof per_call[0], bench_compare_double);
    return per_call[k->reps / 2];
}

/* ---- the rows ---------------------------------------------------------------- */
static int run_copy(kbench *k, const void *arg)
{
    (void)arg;
    return ak_copy(k->b, k->y32.data, k->x32.data, k->n * 4);
}

typedef struct cast_arg {
    ak_dtype to;
    fpe_round mode;
    bool from16;
} cast_arg;

static int run_cast(kbench *k, const void *arg)
{
    const cast_arg *c = arg;
    ak_rounding r = ak_rounding_rne();
    r.mode = c->mode;
    r.seed = 42;
    if (c->from16) return ak_cast(k->b, k->y32, ak_tensor_of(k->x16.data, k->n, c->to), &r);
    return ak_cast(k->b, ak_tensor_of(k->y16.data, k->n, c->to), k->x32, &r);
}

static int run_unscale(kbench *k, const void *arg)
{
    const size_t parts = *(const size_t *)arg;
    ak_tensor t[64];
    const size_t per = k->n / parts;
    for (size_t i = 0; i < parts; i++)
        t[i] = ak_tensor_of((float *)k->g32.data + i * per, i + 1 == parts ? k->n - i * per : per,
                            AK_F32);
    return ak_unscale_check(k->b, t, parts, k->inv_scale, k->found_inf);
}

static int run_stats(kbench *k, const void *arg)
{
    const bool from16 = *(const bool *)arg;
    ak_tensor x = from16 ? ak_tensor_of(k->x16.data, k->n, AK_F16) : k->x32;
    return ak_stats_accumulate(k->b, x, FPE_FMT_F16, k->scale, k->stats);
}

static int run_update(kbench *k, const void *arg)
{
    const ak_opt_config *cfg = arg;
    ak_param p;
    p.master = k->y32;
    p.model = ak_tensor_of(k->y16.data, k->n, AK_F16);
    p.grad = k->g32;
    p.m = cfg->kind == AK_OPT_SGD ? ak_tensor_none() : k->m32;
    p.v = cfg->kind == AK_OPT_ADAM || cfg->kind == AK_OPT_ADAMW ? k->v32 : ak_tensor_none();
    int rc = ak_opt_step_begin(k->b, cfg, k->opt_state, k->found_inf);
    if (rc) return rc;
    return ak_update(k->b, cfg, &p, k->opt_state, k->found_inf, k->loss);
}

typedef struct gemm_arg {
    size_t m, n, k;
    ak_dtype storage;
    ak_compute compute;
    ak_tensor a, b, c;
} gemm_arg;

static int run_gemm(kbench *k, const void *arg)
{
    const gemm_arg *g = arg;
    ak_gemm_args a;
    memset(&a, 0, sizeof a);
    a.m = g->m;
    a.n = g->n;
    a.k = g->k;
    a.alpha = 1.0f;
    a.beta = 0.0f;
    a.a = g->a;
    a.lda = g->k;
    a.b = g->b;
    a.ldb = g->n;
    a.c = g->c;
    a.ldc = g->n;
    a.compute = g->compute;
    return ak_gemm(k->b, &a);
}

/* ---- output ------------------------------------------------------------------ */
static void print_header(const kbench *k)
{
    if (k->csv) {
        printf(
            "backend,device,kernel,variant,elements,seconds,rate,unit,baseline,baseline_rate,ratio,"
            "target,status\n");
        return;
    }
    printf("ampscope bench kernels: backend %s (%s); median of %d repetitions of ~%.2f s\n",
           ak_backend_name(k->b), ak_device_name(k->b), k->reps, k->rep_seconds);
    printf("bandwidth rows: compulsory bytes per element moved once; ratio = rate / copy rate\n\n");
    printf("%-14s %-22s %11s %10s %9s %-8s %-10s %6s %-7s %s\n", "kernel", "variant", "elements",
           "time", "rate", "unit", "baseline", "ratio", "target", "status");
}

static void print_row(const kbench *k, const char *kernel, const char *variant, size_t elements,
                      double seconds, double rate, const char *unit, const char *baseline,
                      double baseline_rate, double target)
{
    const double ratio = baseline_rate > 0 ? rate / baseline_rate : 0;
    const char *status = target <= 0 || baseline_rate <= 0 ? "" : ratio >= target ? "pass" : "miss";
    char target_text[16] = "";
    if (target > 0) snprintf(target_text, sizeof target_text, ">=%.2f", target);
    if (k->csv) {
        printf("%s,\"%s\",%s,%s,%zu,%.6g,%.4g,%s,%s,%.4g,%.3f,%s,%s\n", ak_backend_name(k->b),
               ak_device_name(k->b), kernel, variant, elements, seconds, rate, unit, baseline,
               baseline_rate, ratio, target > 0 ? target_text + 2 : "", status);
    } else {
        char time_text[24];
        if (seconds < 1e-3)
            snprintf(time_text, sizeof time_text, "%.1f us", seconds * 1e6);
        else
            snprintf(time_text, sizeof time_text, "%.2f ms", seconds * 1e3);
        char ratio_text[16] = "";
        if (baseline_rate > 0) snprintf(ratio_text, sizeof ratio_text, "%.2f", ratio);
        printf("%-14s %-22s %11zu %10s %9.4g %-8s %-10s %6s %-7s %s\n", kernel, variant, elements,
               time_text, rate, unit, baseline, ratio_text, target_text, status);
    }
    fflush(stdout);
}

/* Times a bandwidth row: bytes_per_element of compulsory traffic, against
 * the copy rate (or, given, another baseline).  Returns the rate in *gbs. */
static int bandwidth_row(kbench *k, const char *kernel, const char *variant, kb_fn fn,
                         const void *arg, double bytes_per_element, double target,
                         const char *baseline, double baseline_gbs, double *gbs_out)
{
    const double s = measure(k, fn, arg);
    if (s < 0) return cli_error(CLI_EFAIL, "%s %s: %s", kernel, variant, ak_error_text(k->b));
    const double gbs = bytes_per_element * (double)k->n / s / 1e9;
    if (fn == run_copy) k->copy_gbs = gbs;
    if (!baseline) {
        baseline = fn == run_copy ? "" : "copy";
        baseline_gbs = fn == run_copy ? 0 : k->copy_gbs;
    }
    /* the targets are the H100's (issue 3) */
    print_row(k, kernel, variant, k->n, s, gbs, "GB/s", baseline, baseline_gbs,
              ak_backend_kind(k->b) == AK_CUDA ? target : 0);
    if (gbs_out) *gbs_out = gbs;
    return CLI_OK;
}

/* cpu only: the emulator's own array rounding (fpe_chop_f32_to_u16) in the
 * cast's mode, the speed the cpu casts should reach. */
static int run_chop(kbench *k, const void *arg)
{
    const cast_arg *c = arg;
    fpe_env env = fpe_env_default();
    env.round = (uint8_t)c->mode;
    env.sr_seed = 42;
    return fpe_chop_f32_to_u16(&env, (fpe_format_id)c->to, (const float *)k->x32.data,
                               (uint16_t *)k->y16.data, k->n, NULL) == FPE_OK
               ? AK_OK
               : AK_EINVAL;
}

/* ---- cuda against cpu before timing ------------------------------------------------ */
/* The elementwise kernels must agree bit for bit between the backends; a
 * benchmark of a wrong kernel is worthless. */
static int check_against_cpu(kbench *k)
{
    const size_t n = (size_t)1 << 20;
    char msg[256];
    ak_backend *cpu = ak_open("cpu", msg, sizeof msg);
    if (!cpu) return cli_error(CLI_EFAIL, "%s", msg);
    float *in = malloc(n * sizeof *in);
    uint16_t *want = malloc(n * 2), *got = malloc(n * 2);
    int rc = CLI_OK;
    if (!in || !want || !got) {
        rc = cli_error(CLI_EFAIL, "out of memory");
        goto done;
    }
    uint64_t s = 7;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t bits = (uint32_t)(s >> 32);
        memcpy(&in[i], &bits, 4);
    }
    ak_rounding r = ak_rounding_rne();
    r.mode = FPE_SR_PROP;
    r.seed = 99;
    r.index = 12345;
    /* cpu: host memory is its backend memory */
    if (ak_cast(cpu, ak_tensor_of(want, n, AK_F16), ak_tensor_of(in, n, AK_F32), &r) != AK_OK) {
        rc = cli_error(CLI_EFAIL, "cpu cast: %s", ak_error_text(cpu));
        goto done;
    }
    if (ak_to_device(k->b, k->x32.data, in, n * 4) ||
        ak_cast(k->b, ak_tensor_of(k->y16.data, n, AK_F16), ak_tensor_of(k->x32.data, n, AK_F32),
                &r) ||
        ak_to_host(k->b, got, k->y16.data, n * 2)) {
        rc = cli_error(CLI_EFAIL, "cuda cast: %s", ak_error_text(k->b));
        goto done;
    }
    size_t differ = 0;
    for (size_t i = 0; i < n; i++)
        differ += got[i] != want[i];
    if (differ)
        rc = cli_error(CLI_EFAIL, "cuda and cpu casts (stoch_prop) disagree on %zu of %zu elements",
                       differ, n);
done:
    free(in);
    free(want);
    free(got);
    ak_close(cpu);
    return rc;
}

/* ---- setup ------------------------------------------------------------------------------- */
static int alloc_all(kbench *k)
{
    ak_backend *b = k->b;
    int rc = ak_alloc_tensor(b, k->n, AK_F32, &k->x32);
    if (!rc) rc = ak_alloc_tensor(b, k->n, AK_F32, &k->y32);
    if (!rc) rc = ak_alloc_tensor(b, k->n, AK_F32, &k->g32);
    if (!rc) rc = ak_alloc_tensor(b, k->n, AK_F32, &k->m32);
    if (!rc) rc = ak_alloc_tensor(b, k->n, AK_F32, &k->v32);
    if (!rc) rc = ak_alloc_tensor(b, k->n, AK_F16, &k->x16);
    if (!rc) rc = ak_alloc_tensor(b, k->n, AK_F16, &k->y16);
    if (!rc) rc = ak_alloc(b, sizeof(float), (void **)&k->scale);
    if (!rc) rc = ak_alloc(b, sizeof(float), (void **)&k->inv_scale);
    if (!rc) rc = ak_alloc(b, sizeof(float), (void **)&k->found_inf);
    if (!rc) rc = ak_alloc(b, sizeof(ak_stats), (void **)&k->stats);
    if (!rc) rc = ak_alloc(b, sizeof(ak_opt_state), (void **)&k->opt_state);
    if (!rc) rc = ak_alloc(b, sizeof(ak_update_loss), (void **)&k->loss);
    if (rc)
        return cli_error(CLI_EFAIL, "allocating %zu-element buffers: %s", k->n, ak_error_text(b));
    /* random signs, magnitudes 2^-12 .. 2^4: normal in fp16 and bf16, so the
     * rows time the common path (values that underflow take the emulator's
     * slower general path; 'ampscope bench emu' times that separately) */
    float *host = malloc(k->n * sizeof *host);
    if (!host) return cli_error(CLI_EFAIL, "out of memory");
    uint64_t s = 1;
    for (size_t i = 0; i < k->n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        const uint32_t r = (uint32_t)(s >> 32);
        const int e = (int)(r % 17) - 12;
        host[i] = ldexpf(1.0f + (float)(r >> 9 & 0xFFFF) / 65536.0f, e) * ((r & 1) ? -1.0f : 1.0f);
    }
    rc = ak_to_device(b, k->x32.data, host, k->n * 4);
    if (!rc) rc = ak_to_device(b, k->g32.data, host, k->n * 4);
    if (!rc) rc = ak_to_device(b, k->y32.data, host, k->n * 4);
    free(host);
    /* inv_scale 1 - 2^-24: every element is multiplied, yet repeated calls
     * do not drive the gradients into the (slow on x86) subnormal range */
    const float s128 = 128.0f, inv = 0.99999994f, zero = 0.0f;
    if (!rc) rc = ak_to_device(b, k->scale, &s128, 4);
    if (!rc) rc = ak_to_device(b, k->inv_scale, &inv, 4);
    if (!rc) rc = ak_to_device(b, k->found_inf, &zero, 4);
    if (!rc) rc = ak_zero(b, k->m32.data, k->n * 4);
    if (!rc) rc = ak_zero(b, k->v32.data, k->n * 4);
    if (!rc) rc = ak_zero(b, k->stats, sizeof(ak_stats));
    if (!rc) rc = ak_zero(b, k->opt_state, sizeof(ak_opt_state));
    if (!rc) rc = ak_zero(b, k->loss, sizeof(ak_update_loss));
    if (!rc) rc = ak_cast(b, k->x16, k->x32, NULL);
    if (rc) return cli_error(CLI_EFAIL, "preparing the inputs: %s", ak_error_text(b));
    return CLI_OK;
}

static void free_all(kbench *k)
{
    void *bufs[] = {k->x32.data, k->y32.data,  k->g32.data, k->m32.data,  k->v32.data,
                    k->x16.data, k->y16.data,  k->scale,    k->inv_scale, k->found_inf,
                    k->stats,    k->opt_state, k->loss};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        ak_free(k->b, bufs[i]);
}

static int gemm_rows(kbench *k)
{
    const bool cuda = ak_backend_kind(k->b) == AK_CUDA;
    struct {
        ak_dtype storage;
        ak_compute compute;
        const char *name;
    } kinds[] = {
        {AK_F32, AK_COMPUTE_32F, "fp32 32F"},
        {AK_F32, AK_COMPUTE_32F_FAST_TF32, "fp32 32F_FAST_TF32"},
        {AK_F16, AK_COMPUTE_32F, "fp16 32F"},
        {AK_BF16, AK_COMPUTE_32F, "bf16 32F"},
        {AK_F16, AK_COMPUTE_16F, "fp16 16F"},
    };
    /* cpu: the emulated low-precision contracts are reference code, timed
     * only at a small size to show their cost */
    const size_t cuda_sizes[] = {512, 2048, 4096}, cpu_sizes[] = {256, 1024};
    const size_t *sizes = cuda ? cuda_sizes : cpu_sizes;
    const size_t nsizes = cuda ? 3 : 2;
    const size_t big = k->quick ? (cuda ? 4096 : 1024) : (cuda ? 8192 : 2048);
    int rc = CLI_OK;
    for (size_t kind = 0; kind < sizeof kinds / sizeof kinds[0] && rc == CLI_OK; kind++) {
        const ak_dtype st = kinds[kind].storage;
        if (!cuda && kind > 0 && kinds[kind].compute != AK_COMPUTE_32F) continue;
        /* the ceiling: one large GEMM of this kind */
        size_t top = big;
        if (!cuda && st != AK_F32) top = 512; /* emulated: slow */
        gemm_arg g = {top, top, top, st, kinds[kind].compute, {0}, {0}, {0}};
        if (ak_alloc_tensor(k->b, top * top, st, &g.a) ||
            ak_alloc_tensor(k->b, top * top, st, &g.b) ||
            ak_alloc_tensor(k->b, top * top, st, &g.c)) {
            rc = cli_error(CLI_EFAIL, "gemm buffers: %s", ak_error_text(k->b));
        } else if (ak_fill(k->b, g.a, 0.5) || ak_fill(k->b, g.b, 0.25) || ak_fill(k->b, g.c, 0)) {
            rc = cli_error(CLI_EFAIL, "gemm inputs: %s", ak_error_text(k->b));
        } else {
            double s = measure(k, run_gemm, &g);
            if (s < 0) {
                rc = cli_error(CLI_EFAIL, "gemm %s: %s", kinds[kind].name, ak_error_text(k->b));
            } else {
                const double peak = 2.0 * (double)top * top * top / s / 1e12;
                char variant[48];
                snprintf(variant, sizeof variant, "%s %zu^3", kinds[kind].name, top);
                print_row(k, "gemm-ceiling", variant, top * top, s, peak, "TFLOP/s", "", 0, 0);
                for (size_t i = 0; i < nsizes && rc == CLI_OK && sizes[i] < top; i++) {
                    gemm_arg h = g;
                    h.m = h.n = h.k = sizes[i];
                    s = measure(k, run_gemm, &h);
                    if (s < 0) {
                        rc = cli_error(CLI_EFAIL, "gemm %s: %s", kinds[kind].name,
                                       ak_error_text(k->b));
                        break;
                    }
                    snprintf(variant, sizeof variant, "%s %zu^3", kinds[kind].name, sizes[i]);
                    print_row(k, "gemm", variant, sizes[i] * sizes[i], s,
                              2.0 * (double)sizes[i] * sizes[i] * sizes[i] / s / 1e12, "TFLOP/s",
                              "ceiling", peak, 0);
                }
            }
        }
        ak_free(k->b, g.a.data);
        ak_free(k->b, g.b.data);
        ak_free(k->b, g.c.data);
    }
    return rc;
}

typedef struct kernels_args {
    const char *backend;
    bool csv, quick, no_gemm;
    size_t elements;
} kernels_args;

static int set_elements(const opt_spec *row, void *base, const char *value, char *msg, size_t len)
{
    (void)row;
    uint64_t v;
    if (cli_parse_uint(value, (uint64_t)1 << 31, &v) != 0 || v < 1024) {
        snprintf(msg, len, "--elements wants an integer in [1024, 2^31], got '%s'", value);
        return OPT_EINPUT;
    }
    ((kernels_args *)base)->elements = (size_t)v;
    return OPT_OK;
}

#define F(field) offsetof(kernels_args, field)
static const opt_spec kernels_options[] = {
    {.name = "backend",
     .kind = OPT_STRING,
     .offset = F(backend),
     .metavar = "B",
     .help = "cpu, cuda or auto (default auto: cuda when a GPU is present)",
     .group = "options:"},
    {.name = "elements",
     .kind = OPT_CUSTOM,
     .offset = OPT_NO_FIELD,
     .parse = set_elements,
     .metavar = "N",
     .help = "elements per bandwidth row (default 2^26 on cuda, 2^24 on cpu)"},
    {.name = "csv",
     .kind = OPT_FLAG,
     .offset = F(csv),
     .help = "CSV on standard output instead of the table"},
    {.name = "quick",
     .kind = OPT_FLAG,
     .offset = F(quick),
     .help = "short runs and small sizes (smoke tests; rough rates)"},
    {.name = "no-gemm", .kind = OPT_FLAG, .offset = F(no_gemm), .help = "skip the GEMM rows"},
    {.name = NULL},
};
#undef F

static void help(FILE *out)
{
    fprintf(out,
            "usage: ampscope bench kernels [--backend cpu|cuda|auto] [--csv] [--quick]\n"
            "                              [--elements N] [--no-gemm]\n"
            "\n"
            "Times the kernels/ operations on one backend.  Bandwidth-bound rows (casts,\n"
            "unscale + finite check, statistics + histogram, optimizer updates) give GB/s of\n"
            "compulsory traffic and the ratio to the copy bandwidth measured first in the same\n"
            "run (device-to-device copy on cuda, memcpy on the cpu).  GEMM rows give TFLOP/s\n"
            "beside the same backend's rate on one large GEMM (cuBLAS / OpenBLAS).  On cuda the\n"
            "elementwise results are first compared with the cpu backend's.\n"
            "Targets (cuda, from issue 3): casts and unscale >= 0.80 of copy, statistics >= 0.70.\n"
            "\n");
    cli_print_options(out, kernels_options, 17);
}

int bench_kernels(int argc, char **argv)
{
    cli_set_context("bench kernels");
    kernels_args args = {"auto", false, false, false, 0};
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            help(stdout);
            return CLI_OK;
        }
        const opt_spec *row;
        const char *value;
        char why[512];
        const int m = cli_match_option(kernels_options, argc, argv, &i, &row, &value);
        if (m < 0) return m;
        if (m == 0)
            return cli_error(
                CLI_EINPUT, "unknown argument '%s' (see 'ampscope bench kernels --help')", argv[i]);
        if (opt_set(row, &args, value, why, sizeof why) != 0)
            return cli_error(CLI_EINPUT, "%s", why);
    }
    const char *backend = args.backend;
    const bool csv = args.csv, quick = args.quick, gemm = !args.no_gemm;
    const size_t elements = args.elements;
    char msg[512];
    kbench k;
    memset(&k, 0, sizeof k);
    k.b = ak_open(backend, msg, sizeof msg);
    if (!k.b) return cli_error(CLI_EINPUT, "%s", msg);
    if (msg[0]) fprintf(stderr, "ampscope bench kernels: %s\n", msg);
    const bool cuda = ak_backend_kind(k.b) == AK_CUDA;
    k.csv = csv;
    k.quick = quick;
    k.n = elements ? elements
          : quick  ? ((size_t)1 << (cuda ? 24 : 20))
                   : ((size_t)1 << (cuda ? 26 : 24));
    k.rep_seconds = quick ? 0.02 : 0.2;
    k.reps = quick ? 3 : 5;
    int rc = alloc_all(&k);
    if (rc == CLI_OK && cuda) rc = check_against_cpu(&k);
    if (rc == CLI_OK) {
        print_header(&k);
        static const cast_arg to16 = {AK_F16, FPE_RNE, false}, tobf16 = {AK_BF16, FPE_RNE, false},
                              to16rz = {AK_F16, FPE_RZ, false},
                              to16sr = {AK_F16, FPE_SR_PROP, false},
                              from16 = {AK_F16, FPE_RNE, true}, frombf16 = {AK_BF16, FPE_RNE, true};
        static const size_t one = 1, many = 50;
        static const bool f32 = false, f16 = true;
        ak_opt_config sgd, adam;
        memset(&sgd, 0, sizeof sgd);
        sgd.kind = AK_OPT_SGD;
        sgd.lr = 1e-4f;
        sgd.round = ak_rounding_rne();
        adam = sgd;
        adam.kind = AK_OPT_ADAMW;
        adam.beta1 = 0.9f;
        adam.beta2 = 0.999f;
        adam.eps = 1e-8f;
        adam.weight_decay = 0.01f;
        struct {
            const char *kernel, *variant;
            kb_fn fn;
            const void *arg;
            double bytes, target;
        } rows[] = {
            {"copy", "fp32", run_copy, NULL, 8, 0},
            {"cast", "fp32->fp16 near_even", run_cast, &to16, 6, 0.8},
            {"cast", "fp32->bf16 near_even", run_cast, &tobf16, 6, 0.8},
            {"cast", "fp32->fp16 minMag", run_cast, &to16rz, 6, 0.8},
            {"cast", "fp32->fp16 stoch_prop", run_cast, &to16sr, 6, 0.8},
            {"cast", "fp16->fp32", run_cast, &from16, 6, 0.8},
            {"cast", "bf16->fp32", run_cast, &frombf16, 6, 0.8},
            {"unscale_check", "fp32 1 tensor", run_unscale, &one, 8, 0.8},
            {"unscale_check", "fp32 50 tensors", run_unscale, &many, 8, 0.8},
            {"stats", "fp32 to fp16 scale 128", run_stats, &f32, 4, 0.7},
            {"stats", "fp16 to fp16 scale 128", run_stats, &f16, 2, 0.7},
            {"update", "sgd O2 master+fp16", run_update, &sgd, 14, 0},
            {"update", "adamw O2 master+fp16", run_update, &adam, 30, 0},
        };
        for (size_t i = 0; i < sizeof rows / sizeof rows[0] && rc == CLI_OK; i++) {
            const cast_arg *c = rows[i].fn == run_cast ? rows[i].arg : NULL;
            if (!cuda && c && !c->from16) {
                /* cpu casts against the emulator's array speed */
                double chop_gbs = 0;
                rc = bandwidth_row(&k, "emu-chop", rows[i].variant, run_chop, c, rows[i].bytes, 0,
                                   NULL, 0, &chop_gbs);
                if (rc == CLI_OK)
                    rc = bandwidth_row(&k, rows[i].kernel, rows[i].variant, rows[i].fn, rows[i].arg,
                                       rows[i].bytes, 0, "emu-chop", chop_gbs, NULL);
                continue;
            }
            rc = bandwidth_row(&k, rows[i].kernel, rows[i].variant, rows[i].fn, rows[i].arg,
                               rows[i].bytes, rows[i].target, NULL, 0, NULL);
        }
        if (rc == CLI_OK && gemm) rc = gemm_rows(&k);
    }
    free_all(&k);
    ak_close(k.b);
    return rc;
}
