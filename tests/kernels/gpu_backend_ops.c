/* gpu_backend_ops: every kernel op on the cuda backend against the cpu
 * backend, driven by one table (gpu_ops.h, gpu_table.c).
 *
 *   gpu_backend_ops [FAMILY [CASE]]
 *
 * runs the cases of one family (all when none is named), or one case of
 * it; ctest has one entry per family (kernels_gpu_ops_<family>), so a
 * failure names the op.  Exits 77 when no CUDA device can be opened: the
 * probe runs in a child process, since CUDA cannot be used in a process
 * forked after it was initialised and Check forks every test. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "gpu_ops.h"

/* Check's loop index over the selected cases' runs: run k is case
 * runs[k].c with index runs[k].i. */
typedef struct go_run {
    const go_case *c;
    int i;
} go_run;
static go_run *runs;

START_TEST(one_run) { runs[_i].c->run(runs[_i].c, runs[_i].i); }
END_TEST

static const go_family *family_named(const char *name)
{
    for (size_t f = 0; f < go_nfamilies; f++)
        if (strcmp(go_families[f]->name, name) == 0) return go_families[f];
    return NULL;
}

static void usage(void)
{
    fprintf(stderr, "usage: gpu_backend_ops [FAMILY [CASE]]\nfamilies:");
    for (size_t f = 0; f < go_nfamilies; f++)
        fprintf(stderr, " %s", go_families[f]->name);
    fprintf(stderr, "\n");
}

int main(int argc, char **argv)
{
    if (argc > 3) {
        usage();
        return 2;
    }
    const go_family *only = NULL;
    if (argc > 1 && !(only = family_named(argv[1]))) {
        usage();
        return 2;
    }
    const char *case_name = argc > 2 ? argv[2] : NULL;
    kt_require_cuda_or_skip();

    size_t total = 0;
    for (size_t f = 0; f < go_nfamilies; f++)
        for (size_t k = 0; k < go_families[f]->count; k++)
            total += (size_t)go_families[f]->cases[k].loops;
    runs = calloc(total + 1, sizeof *runs);
    if (!runs) return 1;

    Suite *s = suite_create(only ? only->name : "gpu_backend_ops");
    int next = 0, selected = 0;
    for (size_t f = 0; f < go_nfamilies; f++) {
        const go_family *fam = go_families[f];
        if (only && fam != only) continue;
        for (size_t k = 0; k < fam->count; k++) {
            const go_case *c = &fam->cases[k];
            if (case_name && strcmp(c->name, case_name) != 0) continue;
            char name[128];
            snprintf(name, sizeof name, "%s/%s", fam->name, c->name);
            TCase *tc = tcase_create(name);
            kt_open_both_around(tc, fam->cpu, fam->gpu);
            tcase_set_timeout(tc, 600);
            for (int i = 0; i < c->loops; i++)
                runs[next + i] = (go_run){c, i};
            tcase_add_loop_test(tc, one_run, next, next + c->loops);
            next += c->loops;
            suite_add_tcase(s, tc);
            selected++;
        }
    }
    if (selected == 0) {
        fprintf(stderr, "gpu_backend_ops: no case '%s' in %s\n", case_name, only->name);
        return 2;
    }
    const int rc = ts_run_suite(s);
    free(runs);
    return rc;
}
