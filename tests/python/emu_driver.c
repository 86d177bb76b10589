/* emu_driver.c: the C side of the Python binding's checks (tests/python).
 *
 *   emu_driver ref FMT MODE SEED STREAM INDEX IN OUT
 *     reads float32 values from the file IN, rounds each with the scalar
 *     conversion (fpe_f32_to_f16 / fpe_f32_to_bf16; element i with random
 *     index INDEX + i, as chop's contract says), writes the 16-bit patterns
 *     to OUT and prints "flushed subnormal overflowed inexact", counted here
 *     from each conversion's result and flags: expected values that come
 *     neither from the binding nor from chop.
 *   emu_driver time FMT MODE REPS IN
 *     the best of REPS timed calls of fpe_chop_f32_to_u16 on the float32
 *     values of the file IN, printed as seconds: the binding's baseline
 *     (python/bench_emu.py).
 * FMT is fp16 or bf16, MODE a rounding mode name (fpe_round_from_name). */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fpe.h"

static int usage(void)
{
    fprintf(stderr, "usage: emu_driver ref FMT MODE SEED STREAM INDEX IN OUT\n"
                    "       emu_driver time FMT MODE REPS IN\n");
    return 2;
}

static void *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *buf = malloc(n > 0 ? (size_t)n : 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static int ref(int fmt, int mode, char **argv)
{
    fpe_env env = fpe_env_default();
    env.round = (uint8_t)mode;
    env.sr_seed = strtoull(argv[0], NULL, 0);
    env.sr_stream = (uint32_t)strtoul(argv[1], NULL, 0);
    const uint64_t index = strtoull(argv[2], NULL, 0);
    size_t len;
    uint32_t *in = read_file(argv[3], &len);
    if (!in) return fprintf(stderr, "emu_driver: cannot read %s\n", argv[3]), 1;
    const size_t n = len / 4;
    uint16_t *out = malloc(n * 2 + 2);
    uint64_t flushed = 0, subnormal = 0, overflowed = 0, inexact = 0;
    for (size_t i = 0; i < n; i++) {
        env.sr_index = index + i;
        env.flags = 0;
        const uint16_t r =
            fmt == FPE_FMT_F16 ? fpe_f32_to_f16(&env, in[i]) : fpe_f32_to_bf16(&env, in[i]);
        out[i] = r;
        const uint32_t xmag = in[i] & 0x7FFFFFFFu, rmag = r & 0x7FFFu;
        const int fbits = fmt == FPE_FMT_F16 ? 10 : 7;
        flushed += xmag != 0 && xmag < 0x7F800000u && rmag == 0;
        subnormal += rmag != 0 && (rmag >> fbits) == 0;
        overflowed += (env.flags & FPE_FLAG_OVERFLOW) != 0;
        inexact += (env.flags & FPE_FLAG_INEXACT) != 0;
    }
    FILE *f = fopen(argv[4], "wb");
    if (!f || fwrite(out, 2, n, f) != n || fclose(f) != 0)
        return fprintf(stderr, "emu_driver: cannot write %s\n", argv[4]), 1;
    printf("%llu %llu %llu %llu\n", (unsigned long long)flushed, (unsigned long long)subnormal,
           (unsigned long long)overflowed, (unsigned long long)inexact);
    free(in);
    free(out);
    return 0;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int timed(int fmt, int mode, char **argv)
{
    const int reps = atoi(argv[0]);
    size_t len;
    float *in = read_file(argv[1], &len);
    const size_t n = len / sizeof *in;
    uint16_t *out = malloc(n * sizeof *out + 2);
    if (!in || !out || reps < 1) return fprintf(stderr, "emu_driver: cannot read %s\n", argv[1]), 1;
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        fpe_env env = fpe_env_default();
        env.round = (uint8_t)mode;
        fpe_chop_counts c = {0, 0, 0, 0};
        const double t0 = now();
        fpe_chop_f32_to_u16(&env, (fpe_format_id)fmt, in, out, n, &c);
        const double t = now() - t0;
        if (t < best) best = t;
    }
    printf("%.9f\n", best);
    free(in);
    free(out);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4) return usage();
    const int fmt = fpe_format_from_name(argv[2]), mode = fpe_round_from_name(argv[3]);
    if ((fmt != FPE_FMT_F16 && fmt != FPE_FMT_BF16) || mode < 0) return usage();
    if (strcmp(argv[1], "ref") == 0 && argc == 9) return ref(fmt, mode, argv + 4);
    if (strcmp(argv[1], "time") == 0 && argc == 6) return timed(fmt, mode, argv + 4);
    return usage();
}
