/* emu_eval.c: `ampscope emu eval FORMAT OP X [Y [Z]]`, one emulated
 * operation on given operands, explained for people: its bits, exact value,
 * class and flags.  Its operation names ("fma", "from-f32") map onto the
 * TestFloat names of emu_ops.c's table, so eval and testfloat cannot
 * disagree. */
#define _POSIX_C_SOURCE 200809L /* fmemopen */

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_options.h"
#include "emu_eval.h"
#include "emu_ops.h"

/* An eval operation is the TestFloat function prefix + FORMAT + suffix:
 * "fma" on fp16 is "" "f16" "_mulAdd", "from-f32" on bf16 "f32_to_" "bf16" "". */
static const struct eval_op {
    const char *op, *prefix, *suffix, *summary;
} eval_ops[] = {
    {"add", "", "_add", "X + Y"},
    {"sub", "", "_sub", "X - Y"},
    {"mul", "", "_mul", "X * Y"},
    {"div", "", "_div", "X / Y"},
    {"sqrt", "", "_sqrt", "square root of X"},
    {"fma", "", "_mulAdd", "X * Y + Z with one rounding"},
    {"round-to-int", "", "_roundToInt", "X rounded to an integral value (--exact: raise inexact)"},
    {"eq", "", "_eq", "X == Y, quiet"},
    {"le", "", "_le", "X <= Y, signaling"},
    {"lt", "", "_lt", "X < Y, signaling"},
    {"eq-signaling", "", "_eq_signaling", "X == Y, signaling"},
    {"le-quiet", "", "_le_quiet", "X <= Y, quiet"},
    {"lt-quiet", "", "_lt_quiet", "X < Y, quiet"},
    {"from-f16", "f16_to_", "", "X, an fp16 value, converted to FORMAT"},
    {"from-bf16", "bf16_to_", "", "X, a bf16 value, converted to FORMAT"},
    {"from-f32", "f32_to_", "", "X, an fp32 value, converted to FORMAT"},
    {"from-f64", "f64_to_", "", "X, a double, converted to FORMAT"},
    {"to-f16", "", "_to_f16", "X converted to fp16"},
    {"to-bf16", "", "_to_bf16", "X converted to bf16"},
    {"to-f32", "", "_to_f32", "X converted to fp32"},
    {"to-f64", "", "_to_f64", "X converted to double (always exact)"},
    {"to-i32", "", "_to_i32", "X converted to int32 in the rounding mode (--exact)"},
    {"to-ui32", "", "_to_ui32", "... to uint32"},
    {"to-i64", "", "_to_i64", "... to int64"},
    {"to-ui64", "", "_to_ui64", "... to uint64"},
    {"from-i32", "i32_to_", "", "X, an int32, converted to FORMAT"},
    {"from-ui32", "ui32_to_", "", "... a uint32"},
    {"from-i64", "i64_to_", "", "... an int64"},
    {"from-ui64", "ui64_to_", "", "... a uint64"},
};

/* The command line's environment, filled through the table below. */
typedef struct eval_args {
    fpe_env env;
    bool exact;
} eval_args;

static int eval_round(const opt_spec *row, void *base, const char *value, char *msg, size_t len)
{
    (void)row;
    fpe_round round;
    if (cli_parse_round(value, &round) != CLI_OK) {
        snprintf(msg, len, "unknown rounding mode '%s' (modes: %s)", value, cli_round_names());
        return OPT_EINPUT;
    }
    ((eval_args *)base)->env.round = (uint8_t)round;
    return OPT_OK;
}

static int eval_tininess(const opt_spec *row, void *base, const char *value, char *msg, size_t len)
{
    (void)row;
    fpe_env *env = &((eval_args *)base)->env;
    if (strcmp(value, "before") == 0)
        env->tininess = FPE_TININESS_BEFORE;
    else if (strcmp(value, "after") == 0)
        env->tininess = FPE_TININESS_AFTER;
    else {
        snprintf(msg, len, "--tininess takes before or after, not '%s'", value);
        return OPT_EINPUT;
    }
    return OPT_OK;
}

static int eval_nan(const opt_spec *row, void *base, const char *value, char *msg, size_t len)
{
    (void)row;
    fpe_env *env = &((eval_args *)base)->env;
    if (strcmp(value, "x86") == 0)
        env->nan = FPE_NAN_X86;
    else if (strcmp(value, "canonical") == 0)
        env->nan = FPE_NAN_CANONICAL;
    else if (strcmp(value, "cuda") == 0)
        env->nan = FPE_NAN_CUDA;
    else {
        snprintf(msg, len, "--nan takes x86, canonical or cuda, not '%s'", value);
        return OPT_EINPUT;
    }
    return OPT_OK;
}

static int eval_seed(const opt_spec *row, void *base, const char *value, char *msg, size_t len)
{
    (void)row;
    if (cli_parse_uint(value, UINT64_MAX, &((eval_args *)base)->env.sr_seed) != CLI_OK) {
        snprintf(msg, len, "--seed takes a decimal number, not '%s'", value);
        return OPT_EINPUT;
    }
    return OPT_OK;
}

static int eval_flush(const opt_spec *row, void *base, const char *value, char *msg, size_t len)
{
    (void)value, (void)msg, (void)len;
    fpe_env *env = &((eval_args *)base)->env;
    if (strcmp(row->name, "ftz") == 0)
        env->ftz = 1;
    else
        env->daz = 1;
    return OPT_OK;
}

/* The rounding modes' names as lines under the help column. */
static const char *round_names_help(void)
{
    static char buf[1024];
    FILE *f = fmemopen(buf, sizeof buf, "w");
    if (!f) return cli_round_names();
    cli_print_wrapped(f, cli_round_names(), 0, 68);
    fclose(f);
    const size_t n = strlen(buf);
    if (n && buf[n - 1] == '\n') buf[n - 1] = '\0';
    return buf;
}

#define F(field) offsetof(eval_args, field)
static const opt_spec eval_options[] = {
    {.name = "round",
     .kind = OPT_CUSTOM,
     .offset = OPT_NO_FIELD,
     .parse = eval_round,
     .metavar = "MODE",
     .help = "rounding mode (default near_even), one of:\n%s",
     .help_arg = round_names_help,
     .group = "options:"},
    {.name = "tininess",
     .kind = OPT_CUSTOM,
     .offset = OPT_NO_FIELD,
     .parse = eval_tininess,
     .metavar = "WHEN",
     .help = "before or after rounding (default after)"},
    {.name = "ftz",
     .kind = OPT_FLAG,
     .offset = OPT_NO_FIELD,
     .parse = eval_flush,
     .label = "--ftz, --daz",
     .help = "flush subnormal results / treat subnormal inputs as zero"},
    {.name = "daz", .kind = OPT_FLAG, .offset = OPT_NO_FIELD, .parse = eval_flush, .label = ""},
    {.name = "nan",
     .kind = OPT_CUSTOM,
     .offset = OPT_NO_FIELD,
     .parse = eval_nan,
     .metavar = "SPEC",
     .help = "x86 (default: SoftFloat's 8086-SSE NaNs), canonical (GPU), or\n"
             "cuda (canonical, but bf16 -> fp32 keeps NaN bits, as sm_90)"},
    {.name = "seed",
     .kind = OPT_CUSTOM,
     .offset = OPT_NO_FIELD,
     .parse = eval_seed,
     .metavar = "N",
     .help = "Philox key for the stochastic modes (default 0, index 0)"},
    {.name = "exact",
     .kind = OPT_FLAG,
     .offset = F(exact),
     .help = "round-to-int and to-<integer> raise inexact"},
    {.name = NULL},
};
#undef F

static void eval_help(FILE *out)
{
    fprintf(
        out,
        "usage: ampscope emu eval FORMAT OP X [Y [Z]] [--round MODE] [--tininess before|after]\n"
        "                         [--ftz] [--daz] [--nan x86|canonical|cuda] [--seed N] [--exact]\n"
        "\n"
        "Runs one emulated operation and explains the result: its bits, its exact value,\n"
        "its class and the exception flags it raised.  FORMAT is fp16, bf16 or fp32.\n"
        "\n"
        "  ampscope emu eval fp16 from-f32 0.00006666666\n"
        "  ampscope emu eval bf16 add 1 0x3B80 --round max\n"
        "\n"
        "Operands are\n"
        "  - decimal numbers (1.5, -2e-8), inf, -inf or nan: read by strtod, which rounds\n"
        "    the decimal to the nearest double (ties to even), then rounded to the operand's\n"
        "    format by the emulator, to nearest even, whatever --round says (the two steps\n"
        "    can differ from one direct rounding in rare double-rounding cases).  The\n"
        "    operation itself then rounds in --round.  For from-f32 the decimal becomes a\n"
        "    double, then an fp32 value, then FORMAT.  Integers are read exactly;\n"
        "  - 0x-prefixed bit patterns of the operand's width (4 hex digits for fp16 and\n"
        "    bf16, 8 for fp32 and 32-bit integers, 16 for doubles and 64-bit integers).\n"
        "Anything else (1.5x, C99 hex floats, a pattern too wide) is rejected, exit status 2.\n"
        "\n");
    cli_print_options(out, eval_options, 20);
    fprintf(out, "\n"
                 "operations (\"fp16\" may be written for \"f16\", \"fp32\" for \"f32\"):\n");
    for (size_t i = 0; i < sizeof eval_ops / sizeof eval_ops[0]; i++)
        fprintf(out, "  %-14s %s\n", eval_ops[i].op, eval_ops[i].summary);
}

/* "to-fp16" -> "to-f16": both spellings of the formats are accepted. */
static void eval_normalize_op(const char *op, char *buf, size_t size)
{
    size_t n = 0;
    for (const char *p = op; *p && n + 1 < size; p++) {
        buf[n++] = *p;
        if (p[0] == 'f' && p[1] == 'p' && p > op && p[-1] == '-') p++; /* drop the 'p' of "-fp" */
    }
    buf[n] = '\0';
}

/* Reads operand text s as a value of type t (see eval_help).  *rounded is set
 * when a decimal was not exactly representable in t. */
static int eval_parse_operand(emu_type t, const char *s, int index, uint64_t *bits, bool *rounded)
{
    const emu_type_info *info = &emu_types[t];
    int digits = (info->bits + 3) / 4;
    *rounded = false;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        switch (cli_parse_hex(s + 2, strlen(s + 2), info->bits, bits)) {
        case CLI_HEX_OK: return CLI_OK;
        case CLI_HEX_TOO_WIDE:
            return cli_error(CLI_EINPUT, "operand %d '%s' is too wide for %s (%d hex digits)",
                             index, s, info->display, digits);
        default: return cli_error(CLI_EINPUT, "operand %d '%s' is not a hex bit pattern", index, s);
        }
    }
    if (emu_type_is_float(t)) {
        double d;
        if (cli_parse_decimal(s, &d) != CLI_OK)
            return cli_error(CLI_EINPUT,
                             "operand %d '%s' is not a number (give a decimal, inf, -inf, nan, "
                             "or a 0x bit pattern of %d hex digits)",
                             index, s, digits);
        fpe_env rne = fpe_env_default();
        *bits = emu_from_double(t, &rne, d);
        *rounded = (rne.flags & (FPE_FLAG_INEXACT | FPE_FLAG_OVERFLOW)) != 0;
        return CLI_OK;
    }
    int status;
    int64_t v = 0;
    uint64_t u = 0;
    switch (t) {
    case EMU_I32:
        status = cli_parse_int(s, INT32_MIN, INT32_MAX, &v);
        u = (uint32_t)v;
        break;
    case EMU_I64:
        status = cli_parse_int(s, INT64_MIN, INT64_MAX, &v);
        u = (uint64_t)v;
        break;
    case EMU_UI32: status = cli_parse_uint(s, UINT32_MAX, &u); break;
    default: status = cli_parse_uint(s, UINT64_MAX, &u); break;
    }
    if (status != CLI_OK)
        return cli_error(CLI_EINPUT, "operand %d '%s' is not an %s (decimal or 0x%d hex digits)",
                         index, s, info->display, digits);
    *bits = u;
    return CLI_OK;
}

static void eval_print_value(const char *label, int width, emu_type t, uint64_t bits,
                             const char *note)
{
    char hex[24];
    snprintf(hex, sizeof hex, "0x%0*" PRIX64, (emu_types[t].bits + 3) / 4, bits);
    if (t == EMU_BOOL) {
        printf("  %-7s %-*s %s\n", label, width, bits ? "1" : "0", bits ? "true" : "false");
        return;
    }
    char value[80];
    if (emu_type_is_float(t)) {
        double d = emu_to_double(t, bits);
        if (isnan(d))
            snprintf(value, sizeof value, "%s", signbit(d) ? "-nan" : "nan");
        else if (isinf(d) || d == 0)
            snprintf(value, sizeof value, "%.17g", d);
        else
            snprintf(value, sizeof value, "%.17g = %a", d, d);
        printf("  %-7s %-*s %-6s %-38s %s%s%s\n", label, width, hex, emu_types[t].display, value,
               emu_classify(t, bits), note[0] ? "  " : "", note);
    } else {
        if (t == EMU_I32)
            snprintf(value, sizeof value, "%" PRId32, (int32_t)(uint32_t)bits);
        else if (t == EMU_I64)
            snprintf(value, sizeof value, "%" PRId64, (int64_t)bits);
        else
            snprintf(value, sizeof value, "%" PRIu64, bits);
        printf("  %-7s %-*s %-6s %s%s%s\n", label, width, hex, emu_types[t].display, value,
               note[0] ? "  " : "", note);
    }
}

int emu_eval(int argc, char **argv)
{
    cli_set_context("emu eval");
    eval_args ea = {fpe_env_default(), false};
    bool options_done = false;
    const char *args[6];
    int nargs = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *value;
        const opt_spec *row;
        int m;
        /* Only "--" options: "-1.5" and "-inf" are operands. */
        if (options_done || strncmp(arg, "--", 2) != 0) {
            if (!options_done && strcmp(arg, "-h") == 0) {
                eval_help(stdout);
                return CLI_OK;
            }
            if (nargs == 5) return cli_error(CLI_EINPUT, "too many arguments at '%s'", arg);
            args[nargs++] = arg;
        } else if (strcmp(arg, "--") == 0) {
            options_done = true;
        } else if (strcmp(arg, "--help") == 0) {
            eval_help(stdout);
            return CLI_OK;
        } else if ((m = cli_match_option(eval_options, argc, argv, &i, &row, &value)) != 0) {
            if (m < 0) return m;
            char msg[1024];
            if (opt_set(row, &ea, value, msg, sizeof msg) != 0)
                return cli_error(CLI_EINPUT, "%s", msg);
        } else {
            return cli_error(CLI_EINPUT, "unknown option '%s' (see 'ampscope emu eval --help')",
                             arg);
        }
    }
    fpe_env env = ea.env;
    const bool exact = ea.exact;
    if (nargs < 2)
        return cli_error(CLI_EINPUT, "usage: ampscope emu eval FORMAT OP X [Y [Z]] (see --help)");

    int format = fpe_format_from_name(args[0]);
    if (format < 0 || format > FPE_FMT_F32)
        return cli_error(CLI_EINPUT, "unknown format '%s' (fp16, bf16 or fp32)", args[0]);
    char op[32];
    eval_normalize_op(args[1], op, sizeof op);
    const struct eval_op *e = NULL;
    for (size_t i = 0; i < sizeof eval_ops / sizeof eval_ops[0]; i++)
        if (strcmp(eval_ops[i].op, op) == 0) e = &eval_ops[i];
    if (!e)
        return cli_error(CLI_EINPUT, "unknown operation '%s' (see 'ampscope emu eval --help')",
                         args[1]);
    char name[48];
    snprintf(name, sizeof name, "%s%s%s", e->prefix, emu_types[format].prefix, e->suffix);
    const emu_function *f = emu_function_find(name);
    if (!f)
        return cli_error(CLI_EINPUT, "%s does not apply to %s", args[1], emu_types[format].display);
    if (nargs - 2 != f->arity)
        return cli_error(CLI_EINPUT, "%s takes %d operand%s, got %d", args[1], f->arity,
                         f->arity == 1 ? "" : "s", nargs - 2);

    uint64_t x[3];
    bool rounded[3];
    for (int k = 0; k < f->arity; k++) {
        int status = eval_parse_operand(f->operand[k], args[2 + k], k + 1, &x[k], &rounded[k]);
        if (status != CLI_OK) return status;
    }
    env.flags = 0;
    uint64_t result = emu_function_run(f, &env, x, exact);

    printf("%s %s", emu_types[format].display, op);
    for (int k = 0; k < f->arity; k++)
        printf(" %s", args[2 + k]);
    printf("   (%s, round %s, tininess %s%s%s%s%s", f->name, fpe_round_name(env.round),
           env.tininess == FPE_TININESS_BEFORE ? "before" : "after", env.ftz ? ", ftz" : "",
           env.daz ? ", daz" : "",
           env.nan == FPE_NAN_CANONICAL ? ", canonical NaN"
           : env.nan == FPE_NAN_CUDA    ? ", CUDA NaN"
                                        : "",
           exact && (f->flags & EMU_USES_EXACT) ? ", exact" : "");
    if (env.round == FPE_SR_PROP || env.round == FPE_SR_EQUAL)
        printf(", seed %" PRIu64 " index 0", env.sr_seed);
    printf(")\n");
    /* The bits column is as wide as the widest pattern: "0x" + its digits. */
    int width = 2 + (emu_types[f->result].bits + 3) / 4;
    for (int k = 0; k < f->arity; k++)
        if (2 + (emu_types[f->operand[k]].bits + 3) / 4 > width)
            width = 2 + (emu_types[f->operand[k]].bits + 3) / 4;
    static const char *labels[3] = {"x", "y", "z"};
    for (int k = 0; k < f->arity; k++)
        eval_print_value(labels[k], width, f->operand[k], x[k],
                         rounded[k] ? "(the decimal rounded to nearest even)" : "");
    eval_print_value("result", width, f->result, result, "");
    char flags[64];
    printf("  %-7s %s\n", "flags", cli_flag_names(env.flags, flags, sizeof flags));
    return CLI_OK;
}
