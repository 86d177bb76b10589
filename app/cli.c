/* cli.c: the error record, option matching and number parsing shared by the
 * subcommands (see cli.h). */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "options.h"

/* ---- the error record ----------------------------------------------------
 * One message per process is enough: the first failing function records it
 * and every caller above passes the status up unchanged. */
static char error_message[512];
static const char *error_context = "";

void cli_set_context(const char *context) { error_context = context ? context : ""; }

const char *cli_context(void) { return error_context; }

int cli_error(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(error_message, sizeof error_message, fmt, ap);
    va_end(ap);
    return status;
}

const char *cli_error_message(void) { return error_message; }

/* ---- options ------------------------------------------------------------ */
bool cli_is_help(const char *arg)
{
    return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0 || strcmp(arg, "-help") == 0;
}

int cli_option_value(int argc, char **argv, int *i, const char *name, const char **value)
{
    const char *arg = argv[*i];
    size_t len = strlen(name);
    if (strncmp(arg, "--", 2) != 0 || strncmp(arg + 2, name, len) != 0) return 0;
    if (arg[2 + len] == '=') {
        *value = arg + 3 + len;
        return 1;
    }
    if (arg[2 + len] != '\0') return 0; /* a longer option that starts with the same letters */
    if (*i + 1 >= argc) return cli_error(CLI_EINPUT, "option --%s needs a value", name);
    *value = argv[++*i];
    return 1;
}

/* ---- names -------------------------------------------------------------- */
/* Short spellings people type; the long names come from the emulator. */
static const struct {
    const char *alias;
    fpe_round round;
} round_aliases[] = {
    {"rne", FPE_RNE},    {"rna", FPE_RNA},         {"rz", FPE_RZ},
    {"rd", FPE_RD},      {"ru", FPE_RU},           {"ro", FPE_RO},
    {"sr", FPE_SR_PROP}, {"sr_prop", FPE_SR_PROP}, {"sr_equal", FPE_SR_EQUAL},
};

int cli_parse_round(const char *name, fpe_round *round)
{
    int r = fpe_round_from_name(name);
    if (r >= 0 && r < FPE_ROUND_COUNT) {
        *round = (fpe_round)r;
        return CLI_OK;
    }
    for (size_t i = 0; i < sizeof round_aliases / sizeof round_aliases[0]; i++) {
        if (strcmp(name, round_aliases[i].alias) == 0) {
            *round = round_aliases[i].round;
            return CLI_OK;
        }
    }
    return CLI_EINPUT;
}

const char *cli_round_names(void)
{
    return "near_even (rne), near_maxMag (rna), minMag (rz), min (rd), max (ru), odd (ro), "
           "stoch_prop (sr), stoch_equal (sr_equal)";
}

void cli_print_wrapped(FILE *out, const char *text, int indent, int width)
{
    int column = 0;
    const char *p = text;
    while (*p) {
        while (*p == ' ')
            p++;
        int len = (int)strcspn(p, " ");
        if (len == 0) break;
        if (column > indent && column + 1 + len > width) {
            fputc('\n', out);
            column = 0;
        }
        if (column == 0)
            column = fprintf(out, "%*s", indent, "");
        else
            column += fprintf(out, " ");
        column += fprintf(out, "%.*s", len, p);
        p += len;
    }
    if (column > 0) fputc('\n', out);
}

/* ---- numbers ------------------------------------------------------------ */
static int hex_digit(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

cli_hex_result cli_parse_hex(const char *s, size_t len, int bits, uint64_t *value)
{
    if (len == 0) return CLI_HEX_EMPTY;
    uint64_t v = 0;
    bool too_wide = false;
    for (size_t i = 0; i < len; i++) {
        int d = hex_digit((unsigned char)s[i]);
        if (d < 0) return CLI_HEX_NOT_HEX; /* reported before width: the token is not a number */
        if (v >> 60) too_wide = true;      /* one more digit would not fit in 64 bits */
        v = v << 4 | (uint64_t)d;
    }
    if (too_wide || (bits < 64 && (v >> bits) != 0)) return CLI_HEX_TOO_WIDE;
    *value = v;
    return CLI_HEX_OK;
}

/* The parsing itself is the options tables' (experiments/options.c): one copy. */
int cli_parse_decimal(const char *s, double *value) { return opt_parse_decimal(s, value); }

int cli_parse_int(const char *s, int64_t min, int64_t max, int64_t *value)
{
    return opt_parse_int(s, min, max, value);
}

int cli_parse_uint(const char *s, uint64_t umax, uint64_t *value)
{
    return opt_parse_uint(s, umax, value);
}

const char *cli_flag_names(unsigned flags, char *buf, size_t size)
{
    static const struct {
        unsigned bit;
        const char *name;
    } names[] = {{FPE_FLAG_INVALID, "invalid"},
                 {FPE_FLAG_INFINITE, "infinite"},
                 {FPE_FLAG_OVERFLOW, "overflow"},
                 {FPE_FLAG_UNDERFLOW, "underflow"},
                 {FPE_FLAG_INEXACT, "inexact"}};
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!(flags & names[i].bit)) continue;
        int n = snprintf(buf + used, size - used, "%s%s", used ? " " : "", names[i].name);
        if (n < 0 || (size_t)n >= size - used) break;
        used += (size_t)n;
    }
    if (used == 0) snprintf(buf, size, "none");
    return buf;
}

int cli_want_int(const char *opt, const char *v, int64_t min, int64_t max, int64_t *out)
{
    if (cli_parse_int(v, min, max, out) != 0)
        return cli_error(CLI_EINPUT, "%s wants an integer in [%lld, %lld], got '%s'", opt,
                         (long long)min, (long long)max, v);
    return CLI_OK;
}

int cli_exit_status(int status)
{
    /* What was answered goes out before any message, and a failed write
     * (a full disk, a closed pipe) is a failure, not a silent truncation. */
    if ((fflush(stdout) != 0 || ferror(stdout)) && status == CLI_OK) {
        cli_set_context("");
        status = cli_error(CLI_EFAIL, "writing standard output: %s", strerror(errno));
    }
    if (status == CLI_OK) return 0;
    const char *context = cli_context();
    /* (no message: another process spoke for this one, e.g. rank 0 of an MPI run) */
    if (cli_error_message()[0])
        fprintf(stderr, "ampscope%s%s: %s\n", context[0] ? " " : "", context, cli_error_message());
    return status == CLI_EINPUT ? 2 : status == CLI_EDIVERGED ? 3 : 1;
}

int cli_next_option(int argc, char **argv, int *i, char *key, size_t key_len, const char **value)
{
    const char *a = argv[*i];
    if (strncmp(a, "--", 2) != 0 || a[2] == '\0')
        return cli_error(CLI_EINPUT, "unexpected argument '%s' (see 'ampscope %s --help')", a,
                         cli_context());
    const char *eq = strchr(a + 2, '=');
    const size_t klen = eq ? (size_t)(eq - (a + 2)) : strlen(a + 2);
    if (klen >= key_len) return cli_error(CLI_EINPUT, "unknown option '%s'", a);
    memcpy(key, a + 2, klen);
    key[klen] = '\0';
    const int m = cli_option_value(argc, argv, i, key, value);
    return m < 0 ? m : 1;
}

int cli_want_dtype(const char *opt, const char *v, bool allow_f32, ak_dtype *out)
{
    if (strcmp(v, "fp16") == 0)
        *out = AK_F16;
    else if (strcmp(v, "bf16") == 0)
        *out = AK_BF16;
    else if (allow_f32 && strcmp(v, "fp32") == 0)
        *out = AK_F32;
    else
        return cli_error(CLI_EINPUT, "%s wants fp16 or bf16%s, got '%s'", opt,
                         allow_f32 ? " or fp32" : "", v);
    return CLI_OK;
}

/* ---- output paths ---------------------------------------------------------
 * Checked before a command creates anything, so that a wrong kind of path is
 * bad input (exit 2) rather than a failure halfway through. */
int cli_want_out_dir(const char *opt, const char *path)
{
    struct stat st;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) return CLI_OK;
        return cli_error(CLI_EINPUT, "%s %s: not a directory (a file is there); give a folder", opt,
                         path);
    }
    if (errno == ENOENT) return CLI_OK; /* created, with its parents */
    return cli_error(CLI_EINPUT, "%s %s: %s", opt, path, strerror(errno));
}

int cli_want_out_file(const char *opt, const char *path)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return cli_error(CLI_EINPUT, "%s %s: a directory; give a file name", opt, path);
    const char *slash = strrchr(path, '/');
    if (!slash) return CLI_OK;
    char dir[4096];
    snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    if (stat(dir, &st) != 0 && errno == ENOENT)
        return cli_error(CLI_EINPUT, "%s %s: no directory %s", opt, path, dir);
    if (stat(dir, &st) != 0)
        return cli_error(CLI_EINPUT, "%s %s: %s: %s", opt, path, dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return cli_error(CLI_EINPUT, "%s %s: %s is not a directory", opt, path, dir);
    return CLI_OK;
}
