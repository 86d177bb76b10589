/* fuzz_util.h: what the fuzz targets share.  The parsers under test read
 * files by path, so each process gets one scratch directory (mkdtemp under
 * $TMPDIR, else /dev/shm, else /tmp; removed at exit) and each input is
 * written there. */
#ifndef AMPSCOPE_FUZZ_UTIL_H
#define AMPSCOPE_FUZZ_UTIL_H

/* the includer defines _XOPEN_SOURCE 700 first (mkdtemp) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util.h"

static char fuzz_dir_path[512];

/* Commands print their results; the targets that run a command send its
 * standard output to /dev/null, once per process. */
static inline void fuzz_quiet_stdout(void)
{
    static int quiet;
    if (quiet) return;
    if (!freopen("/dev/null", "w", stdout)) abort();
    quiet = 1;
}

static inline void fuzz_dir_remove(void)
{
    if (fuzz_dir_path[0]) ut_remove_tree(fuzz_dir_path);
}

/* The scratch directory; a failure here is the harness's, not the parser's,
 * so it aborts (a fuzz target may). */
static inline const char *fuzz_dir(void)
{
    if (!fuzz_dir_path[0]) {
        /* /dev/shm first: rewriting a file per input on a disk's file
         * system makes the targets ten times slower. */
        struct stat st;
        const char *tmp = getenv("TMPDIR");
        if (!tmp || !tmp[0])
            tmp = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
        snprintf(fuzz_dir_path, sizeof fuzz_dir_path, "%s/ampscope-fuzz-XXXXXX", tmp);
        if (!mkdtemp(fuzz_dir_path)) {
            perror("ampscope fuzz: mkdtemp");
            abort();
        }
        atexit(fuzz_dir_remove);
    }
    return fuzz_dir_path;
}

/* dir/name, in a static buffer per slot (0..3). */
static inline const char *fuzz_path(int slot, const char *name)
{
    static char paths[4][640];
    snprintf(paths[slot], sizeof paths[slot], "%s/%s", fuzz_dir(), name);
    return paths[slot];
}

/* Writes n bytes to path (replacing it). */
static inline void fuzz_write(const char *path, const uint8_t *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(data, 1, n, f) != n) || fclose(f) != 0) {
        perror(path);
        abort();
    }
}

/* A NUL-terminated copy of the input (malloc'ed; free it). */
static inline char *fuzz_string(const uint8_t *data, size_t n)
{
    char *s = malloc(n + 1);
    if (!s) abort();
    if (n) memcpy(s, data, n);
    s[n] = '\0';
    return s;
}

/* Reads every byte of p[0..n-1] so that ASan checks the whole range; the
 * sum is returned so the reads are not optimised away. */
static inline unsigned fuzz_touch(const void *p, size_t n)
{
    const volatile unsigned char *b = p;
    unsigned sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += b[i];
    return sum;
}

/* With AMPSCOPE_FUZZ_VERBOSE set, says on stderr why an input was refused
 * (to check that the seeds are valid files: they should all be accepted). */
static inline void fuzz_refused(const char *msg)
{
    static int verbose = -1;
    if (verbose < 0) verbose = getenv("AMPSCOPE_FUZZ_VERBOSE") != NULL;
    if (verbose) fprintf(stderr, "refused: %s\n", msg);
}

#endif
