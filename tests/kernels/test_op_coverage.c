/* test_op_coverage: every op of the kernels' table (AK_OPS, backend.h) has
 * what kernels/README.md's "add an op" checklist asks for:
 *   - a cpu implementation: a non-NULL entry in ak_cpu_ops (and in
 *     ak_cuda_ops when built with CUDA);
 *   - a CUDA implementation: `ak_cuda_<op>(` defined in a kernels/cuda/ .cu
 *     source (read here, so the check holds on a machine without nvcc);
 *   - a row of the gpu table (gpu_table.c) that names it;
 *   - a unit test: its public wrapper, the kernels/<file>.c function that
 *     calls b->ops-><op>, called in a tests/kernels/test_<name>.c.
 * argv[1] is the source tree.  One loop test per op, so a failure names it. */
#define _POSIX_C_SOURCE 200809L /* opendir */
#include <check.h>
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "check_main.h"
#include "gpu_ops.h"

/* The ops, and whether each backend's table has them. */
typedef struct op_row {
    const char *name;
    bool cpu, cuda;
} op_row;

#ifdef AK_HAVE_CUDA
#define CUDA_ENTRY(name) (ak_cuda_ops.name != NULL)
#else
#define CUDA_ENTRY(name) true /* checked in the sources below */
#endif
#define OP_ROW(name, params) {#name, false, false},
static op_row ops[] = {AK_OPS(OP_ROW)};
#undef OP_ROW
#define NOPS (sizeof ops / sizeof ops[0])

/* The tables' entries, read at run time (they are not constants). */
static void read_tables(void)
{
    size_t k = 0;
#define OP_READ(name, params)                                                                      \
    ops[k].cpu = ak_cpu_ops.name != NULL;                                                          \
    ops[k].cuda = CUDA_ENTRY(name);                                                                \
    k++;
    AK_OPS(OP_READ)
#undef OP_READ
}

static const char *source_dir;

/* The whole file (NUL-terminated, malloc'd), or NULL. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, len = 0;
    char *s = malloc(cap);
    size_t got;
    while (s && (got = fread(s + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (len + 1 == cap) s = realloc(s, cap *= 2);
    }
    fclose(f);
    if (s) s[len] = '\0';
    return s;
}

/* Is needle in the text at a start of an identifier (not inside a longer
 * name: "ak_relu(" must not match in "ak_relu_backward(" nor "xak_relu(")? */
static bool has_call(const char *text, const char *needle)
{
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
        if (p == text || !(isalnum((unsigned char)p[-1]) || p[-1] == '_')) return true;
    return false;
}

/* Calls fn(text, arg) for every file of dir whose name starts with prefix
 * and ends with suffix, until it returns true; returns whether one did. */
static bool any_file(const char *dir, const char *prefix, const char *suffix,
                     bool (*fn)(const char *text, const void *arg), const void *arg, char *which,
                     size_t which_len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", source_dir, dir);
    DIR *d = opendir(path);
    ck_assert_msg(d != NULL, "cannot open %s", path);
    bool found = false;
    for (struct dirent *e; !found && (e = readdir(d));) {
        const size_t n = strlen(e->d_name), np = strlen(prefix), ns = strlen(suffix);
        if (n < np + ns || strncmp(e->d_name, prefix, np) != 0 ||
            strcmp(e->d_name + n - ns, suffix) != 0)
            continue;
        snprintf(path, sizeof path, "%s/%s/%s", source_dir, dir, e->d_name);
        char *text = slurp(path);
        ck_assert_msg(text != NULL, "cannot read %s", path);
        found = fn(text, arg);
        if (found && which) snprintf(which, which_len, "%s", e->d_name);
        free(text);
    }
    closedir(d);
    return found;
}

static bool mentions(const char *text, const void *needle) { return has_call(text, needle); }

/* The wrapper: the name of the function around "ops-><op>(" in text. */
static bool wrapper_in(const char *text, const void *arg)
{
    char **out = (char **)arg; /* out[0]: the op, then the wrapper's name */
    char call[96];
    snprintf(call, sizeof call, "ops->%s(", out[0]);
    const char *at = strstr(text, call);
    if (!at) return false;
    /* the last definition starting a line before it: "int ak_<name>(" */
    const char *def = NULL;
    for (const char *p = strstr(text, "\nint ak_"); p && p < at; p = strstr(p + 1, "\nint ak_"))
        def = p + 5;
    if (!def) return false;
    size_t n = 0;
    while (isalnum((unsigned char)def[n]) || def[n] == '_')
        n++;
    snprintf(out[1], 64, "%.*s(", (int)n, def);
    return true;
}

/* Does a row of the gpu table name op among its ops? */
static bool in_gpu_table(const char *op, char *which, size_t which_len)
{
    const size_t n = strlen(op);
    for (size_t f = 0; f < go_nfamilies; f++)
        for (size_t k = 0; k < go_families[f]->count; k++) {
            const char *list = go_families[f]->cases[k].ops;
            for (const char *p = strstr(list, op); p; p = strstr(p + 1, op))
                if ((p == list || p[-1] == ' ') && (p[n] == '\0' || p[n] == ' ')) {
                    snprintf(which, which_len, "%s/%s", go_families[f]->name,
                             go_families[f]->cases[k].name);
                    return true;
                }
        }
    return false;
}

START_TEST(op_is_covered)
{
    const op_row *op = &ops[_i];
    ck_assert_msg(op->cpu, "op %s: no cpu implementation (ak_cpu_ops.%s is NULL)", op->name,
                  op->name);
    ck_assert_msg(op->cuda, "op %s: no cuda implementation (ak_cuda_ops.%s is NULL)", op->name,
                  op->name);

    char def[96], where[256];
    snprintf(def, sizeof def, "int ak_cuda_%s(", op->name);
    ck_assert_msg(any_file("kernels/cuda", "", ".cu", mentions, def, where, sizeof where),
                  "op %s: no kernels/cuda/*.cu defines ak_cuda_%s", op->name, op->name);

    ck_assert_msg(in_gpu_table(op->name, where, sizeof where),
                  "op %s: no row of the gpu table (tests/kernels/gpu_cases_*.c) runs it", op->name);

    char wrapper[64] = "";
    char *arg[2] = {(char *)op->name, wrapper};
    ck_assert_msg(any_file("kernels", "", ".c", wrapper_in, arg, where, sizeof where),
                  "op %s: no kernels/*.c wrapper calls b->ops->%s", op->name, op->name);
    ck_assert_msg(any_file("tests/kernels", "test_", ".c", mentions, wrapper, where, sizeof where),
                  "op %s: no unit test (tests/kernels/test_*.c) calls its wrapper %.*s", op->name,
                  (int)strlen(wrapper) - 1, wrapper);
}
END_TEST

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: kernels_test_op_coverage SOURCE_DIR\n");
        return 2;
    }
    source_dir = argv[1];
    read_tables();
    Suite *s = suite_create("kernels_op_coverage");
    TCase *tc = tcase_create("every_op");
    tcase_add_loop_test(tc, op_is_covered, 0, (int)NOPS);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
