/* files.h: what the analyze/ tests share (test_atomic_file, test_record*,
 * test_csv, test_replay*): files written and read back whole, message
 * checks, bit-exact comparisons, a hand-made ak_stats and the loss-scaler
 * presets.  Static inline, so that a test that uses only some of them
 * compiles clean. */
#ifndef AMPSCOPE_TESTS_ANALYZE_FILES_H
#define AMPSCOPE_TESTS_ANALYZE_FILES_H

/* the includer defines _XOPEN_SOURCE 700 first */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loss_scale.h"
#include "record.h"

static inline void path_in(char *out, size_t len, const char *dir, const char *name)
{
    snprintf(out, len, "%s/%s", dir, name);
}

/* The whole content of a file (NUL-terminated, malloc'ed), or NULL. */
static inline char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = malloc(1 << 20);
    const size_t n = fread(buf, 1, (1 << 20) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static inline void put_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static inline void assert_file(const char *path, const char *expected)
{
    char *got = slurp(path);
    ck_assert_ptr_nonnull(got);
    ck_assert_str_eq(got, expected);
    free(got);
}

/* The number of entries of dir (without . and ..). */
static inline int dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
    closedir(d);
    return n;
}

#define ASSERT_MSG(msg, part)                                                                      \
    ck_assert_msg(strstr((msg), (part)) != NULL, "'%s' lacks '%s'", (msg), (part))

static inline bool same_f32(float a, float b)
{
    return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0;
}

static inline bool same_f64(double a, double b)
{
    return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0;
}

/* A hand-made ak_stats: 10 elements, 2 zeros, 7 finite nonzero, 1 inf. */
static inline ak_stats hand_stats(void)
{
    ak_stats s;
    memset(&s, 0, sizeof s);
    s.count = 10;
    s.zero = 2;
    s.nonzero = 7;
    s.nonfinite = 1;
    s.flushed = 3;
    s.subnormal = 2;
    s.overflowed = 1;
    s.amax = 65504.0;
    s.hist[AK_HIST_ZERO] = 2;
    s.hist[AK_HIST_BIN(AK_HIST_EMIN)] = 1;
    s.hist[AK_HIST_BIN(-24)] = 3;
    s.hist[AK_HIST_BIN(15)] = 2;
    s.hist[AK_HIST_BIN(AK_HIST_EMAX)] = 1;
    s.hist[AK_HIST_NONFINITE] = 1;
    return s;
}

/* Writes text as dir/file. */
static inline void write_text(const char *dir, const char *file, const char *text)
{
    char path[256];
    path_in(path, sizeof path, dir, file);
    put_file(path, text);
}

/* A framework's loss-scaler preset (kernels/loss_scale.h). */
static inline ak_scaler_config preset(const char *name)
{
    ak_scaler_config cfg;
    char msg[256];
    ck_assert_msg(ak_scaler_preset(name, &cfg, msg, sizeof msg) == 0, "%s", msg);
    return cfg;
}

#endif
