/* driver.c: a main() for the fuzz targets without libFuzzer, so that every
 * build (gcc too) runs them over their seed corpora and crash regressions
 * as ordinary tests.
 *
 *   fuzz_TARGET [FILE|DIR]...
 *
 * Feeds each file, and each regular file directly inside each directory (in
 * name order), to LLVMFuzzerTestOneInput once.  Exit status 0 when every
 * input ran (a crash ends the program as it would end the fuzzer), 2 when a
 * path cannot be read, or no input was given at all (a test that runs
 * nothing proves nothing). */
#define _XOPEN_SOURCE 700

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path, size_t *count)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return 2;
    }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            fprintf(stderr, "%s: out of memory\n", path);
            fclose(f);
            return 2;
        }
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        uint8_t *more = realloc(buf, cap * 2);
        if (!more) free(buf);
        buf = more;
        cap *= 2;
    }
    const int bad = ferror(f);
    fclose(f);
    if (bad) {
        fprintf(stderr, "%s: read error\n", path);
        free(buf);
        return 2;
    }
    /* An exact-size copy, so ASan sees a read past the input's end. */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) {
        free(buf);
        return 2;
    }
    memcpy(exact, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    (*count)++;
    return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static int run_dir(const char *dir, size_t *count)
{
    struct dirent **list;
    const int n = scandir(dir, &list, NULL, by_name);
    if (n < 0) {
        fprintf(stderr, "%s: %s\n", dir, strerror(errno));
        return 2;
    }
    int status = 0;
    for (int i = 0; i < n; i++) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, list[i]->d_name);
        if (status == 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode))
            status = run_file(path, count);
        free(list[i]);
    }
    free(list);
    return status;
}

int main(int argc, char **argv)
{
    size_t count = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
            return 2;
        }
        const int status =
            S_ISDIR(st.st_mode) ? run_dir(argv[i], &count) : run_file(argv[i], &count);
        if (status != 0) return status;
    }
    if (count == 0) {
        fprintf(stderr, "%s: no inputs given\n", argc > 0 ? argv[0] : "driver");
        return 2;
    }
    fprintf(stderr, "%s: %zu inputs ran\n", argv[0], count);
    return 0;
}
