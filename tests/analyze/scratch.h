/* scratch.h: a scratch directory per test program (mkdtemp under /tmp),
 * a fresh subdirectory per test, everything removed at the end.  Shared by
 * the analyze/ tests. */
#ifndef AMPSCOPE_TESTS_ANALYZE_SCRATCH_H
#define AMPSCOPE_TESTS_ANALYZE_SCRATCH_H

/* the includer defines _XOPEN_SOURCE 700 first (mkdtemp) */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "util.h"

static char base[64];

static void base_setup(void)
{
    snprintf(base, sizeof base, "/tmp/ampscope-analyze-XXXXXX");
    if (!mkdtemp(base)) {
        perror("mkdtemp");
        abort();
    }
}

/* A test may have made its directory read-only (to provoke errors). */
static void base_teardown(void)
{
    chmod(base, 0700);
    ut_remove_tree(base);
}

/* A fresh directory for one test, in dir. */
static void new_dir(char *dir, size_t len)
{
    snprintf(dir, len, "%s/t-XXXXXX", base);
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

#endif
