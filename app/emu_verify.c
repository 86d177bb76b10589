/* emu_verify.c: `ampscope emu verify --exhaustive`, every operand pair of an
 * fp16/bf16 binary operation (or every fp32 input of a conversion) in the six
 * deterministic modes and both tininess rules, against the fast oracle.
 *
 * The same check as tests/test_emulate_exhaustive.c, but sharded over MPI
 * ranks: rank r takes the first operands (the fp32 inputs' high 16 bits) i of
 * the range with (i - first) % size == r, so every rank gets a similar mix of
 * easy and hard operands; the counts are summed on rank 0 with MPI_Reduce and
 * the first mismatches of every rank gathered there.  Without mpirun (or a
 * build without MPI) one process does it all.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_options.h"
#include "emu_verify.h"
#include "fast_oracle.h"
#include "fpe.h"
#include "sweep.h"

#if AMPSCOPE_HAVE_MPI
#include <mpi.h>
#endif

#define MAX_SHOWN 10 /* mismatches printed in full (per rank gathered, then cut) */

/* One mismatch, fixed size so that ranks can send it as bytes. */
typedef struct vf_mismatch {
    uint32_t a, b;
    uint16_t want, got;
    uint8_t want_flags, got_flags, mode, tininess;
} vf_mismatch;

typedef struct vf_counts {
    uint64_t checked[FO_MODES][2], mismatched[FO_MODES][2];
} vf_counts;

/* The command line, filled through the table below. */
typedef struct verify_args {
    bool exhaustive;
    const char *op;
    int m_lo, m_hi, t_lo, t_hi; /* the modes and tininess rules, inclusive */
    uint32_t first, last;       /* the first operands */
} verify_args;

static bool parse_bound(const char *s, size_t len, uint32_t *out);

static int set_round(const opt_spec *row, void *base, const char *value, char *msg, size_t len)
{
    (void)row;
    verify_args *v = base;
    fpe_round round;
    if (strcmp(value, "all") == 0) {
        v->m_lo = 0;
        v->m_hi = FO_MODES - 1;
    } else if (cli_parse_round(value, &round) == CLI_OK && (int)round < FO_MODES) {
        v->m_lo = v->m_hi = (int)round;
    } else {
        snprintf(msg, len,
                 "--round takes all, near_even, near_maxMag, minMag, min, max or odd, not '%s'",
                 value);
        return OPT_EINPUT;
    }
    return OPT_OK;
}

static int set_tininess(const opt_spec *row, void *base, const char *value, char *msg, size_t len)
{
    (void)row;
    verify_args *v = base;
    if (strcmp(value, "both") == 0)
        v->t_lo = 0, v->t_hi = 1;
    else if (strcmp(value, "after") == 0)
        v->t_lo = v->t_hi = FPE_TININESS_AFTER;
    else if (strcmp(value, "before") == 0)
        v->t_lo = v->t_hi = FPE_TININESS_BEFORE;
    else {
        snprintf(msg, len, "--tininess takes both, after or before, not '%s'", value);
        return OPT_EINPUT;
    }
    return OPT_OK;
}

static int set_first(const opt_spec *row, void *base, const char *value, char *msg, size_t len)
{
    (void)row;
    verify_args *v = base;
    const char *colon = strchr(value, ':');
    if (!colon || !parse_bound(value, (size_t)(colon - value), &v->first) ||
        !parse_bound(colon + 1, strlen(colon + 1), &v->last) || v->first > v->last) {
        snprintf(msg, len,
                 "--first takes A:B with 0 <= A <= B <= 0xFFFF (hex with 0x or decimal), not '%s'",
                 value);
        return OPT_EINPUT;
    }
    return OPT_OK;
}

#define F(field) offsetof(verify_args, field)
static const opt_spec verify_options[] = {
    {.name = "exhaustive", .kind = OPT_FLAG, .offset = F(exhaustive), .label = ""},
    {.name = "op",
     .kind = OPT_STRING,
     .offset = F(op),
     .metavar = "OP",
     .help = "f16_add f16_sub f16_mul f16_div bf16_add bf16_sub bf16_mul\n"
             "bf16_div f32_to_f16 f32_to_bf16",
     .group = "options:"},
    {.name = "round",
     .kind = OPT_CUSTOM,
     .offset = OPT_NO_FIELD,
     .parse = set_round,
     .metavar = "MODE",
     .help = "all (default) or one of near_even, near_maxMag, minMag, min,\n"
             "max, odd (or rne, rna, rz, rd, ru, ro)"},
    {.name = "tininess",
     .kind = OPT_CUSTOM,
     .offset = OPT_NO_FIELD,
     .parse = set_tininess,
     .metavar = "WHEN",
     .help = "both (default), after or before"},
    {.name = "first",
     .kind = OPT_CUSTOM,
     .offset = OPT_NO_FIELD,
     .parse = set_first,
     .metavar = "A:B",
     .help = "only first operands (for conversions: the fp32 input's high\n"
             "16 bits) A to B inclusive, hex (0x3C00) or decimal; default\n"
             "0:0xFFFF.  Each takes all 65536 second operands (low bits)"},
    {.name = NULL},
};
#undef F

static void verify_help(FILE *out)
{
    fprintf(out,
            "usage: ampscope emu verify --exhaustive --op OP [--round all|MODE]\n"
            "                           [--tininess both|after|before] [--first A:B]\n"
            "\n"
            "Checks the emulator against the fast oracle on every operand pair of an fp16 or\n"
            "bf16 operation (2^32 pairs) or every fp32 input of a conversion, in each rounding\n"
            "mode and tininess rule asked for.  Prints per mode and tininess the count checked\n"
            "and the mismatches, the first mismatches in full and a total; exit status 1 on\n"
            "any mismatch.  Under mpirun the first operands are dealt out over the ranks:\n"
            "  mpirun -np 8 ampscope emu verify --exhaustive --op f16_mul --round all\n"
            "\n");
    cli_print_options(out, verify_options, 20);
}

/* A 16-bit bound: 0x-prefixed hex or decimal. */
static bool parse_bound(const char *s, size_t len, uint32_t *out)
{
    uint64_t v;
    if (len > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        return cli_parse_hex(s + 2, len - 2, 16, &v) == CLI_HEX_OK && (*out = (uint32_t)v, true);
    char buf[16];
    if (len == 0 || len >= sizeof buf) return false;
    memcpy(buf, s, len);
    buf[len] = '\0';
    if (cli_parse_uint(buf, 0xFFFF, &v) != CLI_OK) return false;
    *out = (uint32_t)v;
    return true;
}

/* Checks first operand (or high half) i against the oracle in the chosen
 * modes, adding to c and keeping the first mismatches in shown. */
static void verify_one(int k, uint32_t i, int m_lo, int m_hi, int t_lo, int t_hi, vf_counts *c,
                       vf_mismatch *shown, int *n_shown)
{
    fpe_env env = fpe_env_default();
    fo_result r;
    for (uint32_t j = 0; j < 0x10000; j++) {
        uint32_t a, b;
        if (fo_checked_ops[k].bin) {
            a = i;
            b = j;
            fo_binary(fo_checked_ops[k].op, fo_checked_ops[k].fmt, (uint16_t)a, (uint16_t)b, &r);
        } else {
            a = i << 16 | j;
            b = 0;
            fo_from_f32(fo_checked_ops[k].fmt, a, &r);
        }
        for (int m = m_lo; m <= m_hi; m++)
            for (int t = t_lo; t <= t_hi; t++) {
                env.round = (uint8_t)m;
                env.tininess = (uint8_t)t;
                env.flags = 0;
                uint16_t z = fo_checked_ops[k].bin
                                 ? fo_checked_ops[k].bin(&env, (uint16_t)a, (uint16_t)b)
                                 : fo_checked_ops[k].cvt(&env, a);
                c->checked[m][t]++;
                if (z != r.bits[m][t] || env.flags != r.flags[m][t]) {
                    c->mismatched[m][t]++;
                    if (*n_shown < MAX_SHOWN)
                        shown[(*n_shown)++] =
                            (vf_mismatch){a,         b,          r.bits[m][t], z, r.flags[m][t],
                                          env.flags, (uint8_t)m, (uint8_t)t};
                }
            }
    }
}

#if AMPSCOPE_HAVE_MPI
static bool launched_by_mpi(void)
{
    return getenv("OMPI_COMM_WORLD_RANK") || getenv("PMI_RANK") || getenv("PMIX_RANK");
}
#endif

static int verify_parse(int argc, char **argv, int *k, int *m_lo, int *m_hi, int *t_lo, int *t_hi,
                        uint32_t *first, uint32_t *last, bool *help)
{
    verify_args v = {false, NULL, *m_lo, *m_hi, *t_lo, *t_hi, *first, *last};
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            *help = true;
            return CLI_OK;
        }
        const opt_spec *row;
        const char *value;
        const int m = cli_match_option(verify_options, argc, argv, &i, &row, &value);
        if (m < 0) return m;
        if (m == 0)
            return cli_error(CLI_EINPUT, "unknown option '%s' (see 'ampscope emu verify --help')",
                             argv[i]);
        char msg[512];
        if (opt_set(row, &v, value, msg, sizeof msg) != 0) return cli_error(CLI_EINPUT, "%s", msg);
    }
    const bool exhaustive = v.exhaustive;
    const char *op = v.op;
    *m_lo = v.m_lo, *m_hi = v.m_hi, *t_lo = v.t_lo, *t_hi = v.t_hi;
    *first = v.first, *last = v.last;
    if (!exhaustive)
        return cli_error(CLI_EINPUT, "--exhaustive is required (the only kind of check so far)");
    if (!op) return cli_error(CLI_EINPUT, "--op is required (see 'ampscope emu verify --help')");
    for (int i = 0; i < FO_CHECKED_OPS; i++)
        if (strcmp(op, fo_checked_ops[i].name) == 0) *k = i;
    if (*k < 0)
        return cli_error(CLI_EINPUT,
                         "unknown op '%s' (f16_add f16_sub f16_mul f16_div bf16_add bf16_sub "
                         "bf16_mul bf16_div f32_to_f16 f32_to_bf16)",
                         op);
    return CLI_OK;
}

int emu_verify(int argc, char **argv)
{
    cli_set_context("emu verify");
    int k = -1, m_lo = 0, m_hi = FO_MODES - 1, t_lo = 0, t_hi = 1;
    uint32_t first = 0, last = 0xFFFF;
    bool help = false;
    int rc = verify_parse(argc, argv, &k, &m_lo, &m_hi, &t_lo, &t_hi, &first, &last, &help);
    int launcher_size;
    int launcher_rank = sw_launcher_rank(&launcher_size);
    if (help) {
        if (launcher_rank == 0) verify_help(stdout);
        return CLI_OK;
    }
    /* every rank rejects the same arguments: let only rank 0 say so (if stderr cannot be
     * silenced, a duplicate line is all that happens) */
    if (rc != CLI_OK && launcher_rank > 0 && !freopen("/dev/null", "w", stderr)) return rc;
    if (rc != CLI_OK) return rc;
    int rank = 0, size = 1;
#if AMPSCOPE_HAVE_MPI
    bool mpi = false;
    if (launched_by_mpi()) {
        if (MPI_Init(NULL, NULL) != MPI_SUCCESS)
            return cli_error(CLI_EFAIL, "MPI_Init failed (started by an MPI launcher)");
        mpi = true;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &size);
    }
#else
    if (launcher_size > 1)
        return cli_error(CLI_EINPUT,
                         "started by an MPI launcher with %d ranks, but this ampscope was built "
                         "without MPI, so each rank would check everything",
                         launcher_size);
#endif
    fo_init();
    vf_counts mine, total;
    memset(&mine, 0, sizeof mine);
    memset(&total, 0, sizeof total);
    vf_mismatch shown[MAX_SHOWN];
    int n_shown = 0;
    for (uint32_t i = first + (uint32_t)rank; i <= last; i += (uint32_t)size)
        verify_one(k, i, m_lo, m_hi, t_lo, t_hi, &mine, shown, &n_shown);

    /* rank 0's view: the sums and every rank's first mismatches, rank by rank */
    vf_mismatch *all = shown;
    int n_all = n_shown;
    vf_mismatch *gathered = NULL;
#if AMPSCOPE_HAVE_MPI
    if (mpi) {
        MPI_Reduce(&mine, &total, 2 * FO_MODES * 2, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
        for (int m = n_shown; m < MAX_SHOWN; m++)
            shown[m] = (vf_mismatch){0};
        int32_t n32 = n_shown, *counts = NULL;
        if (rank == 0) {
            gathered = calloc((size_t)size * MAX_SHOWN, sizeof *gathered);
            counts = calloc((size_t)size, sizeof *counts);
        }
        MPI_Gather(&n32, 1, MPI_INT32_T, counts, 1, MPI_INT32_T, 0, MPI_COMM_WORLD);
        MPI_Gather(shown, (int)sizeof shown, MPI_BYTE, gathered, (int)sizeof shown, MPI_BYTE, 0,
                   MPI_COMM_WORLD);
        if (rank == 0) {
            n_all = 0;
            for (int r = 0; gathered && counts && r < size; r++)
                for (int m = 0; m < counts[r] && n_all < MAX_SHOWN; m++)
                    gathered[n_all++] = gathered[(size_t)r * MAX_SHOWN + (size_t)m];
            all = gathered;
        }
        free(counts);
        MPI_Finalize();
        if (rank != 0) return CLI_OK;
        if (!gathered) return cli_error(CLI_EFAIL, "out of memory gathering the mismatches");
    } else
#endif
    {
        total = mine;
    }

    const char *op = fo_checked_ops[k].name;
    const bool bin = fo_checked_ops[k].bin != NULL;
    for (int m = 0; m < n_all; m++) {
        const vf_mismatch *x = &all[m];
        printf("MISMATCH %s mode=%s tininess=%s operands %0*" PRIX32, op, fo_mode_names[x->mode],
               x->tininess ? "before" : "after", bin ? 4 : 8, x->a);
        if (bin) printf(" %04" PRIX32, x->b);
        printf(": expected %04X flags %02X, got %04X flags %02X\n", x->want, x->want_flags, x->got,
               x->got_flags);
    }
    printf("%s first operands 0x%04" PRIX32 "..0x%04" PRIX32 " on %d rank%s:\n", op, first, last,
           size, size == 1 ? "" : "s");
    uint64_t checked = 0, bad = 0;
    for (int m = m_lo; m <= m_hi; m++)
        for (int t = t_lo; t <= t_hi; t++) {
            printf("  %-12s tininess=%-6s %12" PRIu64 " checked %10" PRIu64 " mismatches\n",
                   fo_mode_names[m], t ? "before" : "after", total.checked[m][t],
                   total.mismatched[m][t]);
            checked += total.checked[m][t];
            bad += total.mismatched[m][t];
        }
    printf("  total %" PRIu64 " checked, %" PRIu64 " mismatches\n", checked, bad);
    free(gathered);
    if (bad) return cli_error(CLI_EFAIL, "%" PRIu64 " mismatches against the oracle", bad);
    return CLI_OK;
}
