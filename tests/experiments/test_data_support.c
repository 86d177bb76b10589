/* test_data_files.c: scratch directories and hand-made IDX files for the
 * data tests (test_data_support.h). */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "data.h"
#include "test_data_support.h"

char *td_make_dir(void)
{
    const char *tmp = getenv("TMPDIR");
    char tmpl[512];
    snprintf(tmpl, sizeof tmpl, "%s/ampscope-test-data-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    char *d = mkdtemp(tmpl);
    ck_assert_msg(d != NULL, "mkdtemp %s failed", tmpl);
    return strdup(d);
}

/* Removes the directory and the files in it (the tests make no subdirectories
 * except where they remove them themselves). */
void td_remove_dir(char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            char p[1024];
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            if (unlink(p) != 0) rmdir(p);
        }
        closedir(d);
    }
    rmdir(dir);
    free(dir);
}

char *td_path_in(const char *dir, const char *name)
{
    char *p = malloc(strlen(dir) + strlen(name) + 2);
    sprintf(p, "%s/%s", dir, name);
    return p;
}

void td_put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* The pixel byte of image i at (r, c) in the hand-made files: varied, and
 * covering 0 and 255. */
uint8_t td_pixel_of(size_t i, size_t r, size_t c)
{
    return (uint8_t)((i * 97 + r * 31 + c * 7) % 256);
}

/* An IDX image file: magic, count, rows, cols, then the pixels. */
td_bytes td_images_idx(uint32_t magic, uint32_t count, uint32_t rows, uint32_t cols)
{
    td_bytes b;
    b.n = 16 + (size_t)count * rows * cols;
    b.p = malloc(b.n);
    td_put_u32(b.p, magic);
    td_put_u32(b.p + 4, count);
    td_put_u32(b.p + 8, rows);
    td_put_u32(b.p + 12, cols);
    for (size_t i = 0; i < count; i++)
        for (size_t r = 0; r < rows; r++)
            for (size_t c = 0; c < cols; c++)
                b.p[16 + (i * rows + r) * cols + c] = td_pixel_of(i, r, c);
    return b;
}

const uint8_t td_hand_labels[10] = {3, 0, 9, 1, 7, 7, 2, 5, 8, 6};

td_bytes td_labels_idx(uint32_t magic, uint32_t count)
{
    td_bytes b;
    b.n = 8 + count;
    b.p = malloc(b.n);
    td_put_u32(b.p, magic);
    td_put_u32(b.p + 4, count);
    for (size_t i = 0; i < count; i++)
        b.p[8 + i] = td_hand_labels[i % 10];
    return b;
}

void td_write_plain(const char *path, const uint8_t *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    ck_assert_uint_eq(fwrite(p, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}

void td_write_gz(const char *path, const uint8_t *p, size_t n)
{
    gzFile g = gzopen(path, "wb9");
    ck_assert_msg(g != NULL, "cannot write %s", path);
    ck_assert_int_eq(gzwrite(g, p, (unsigned)n), (int)n);
    ck_assert_int_eq(gzclose(g), Z_OK);
}

size_t td_file_size(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fclose(f);
    return (size_t)n;
}

void td_truncate_to(const char *path, size_t n) { ck_assert_int_eq(truncate(path, (off_t)n), 0); }

/* A hand-made pair in dir under the given names: count images, count labels. */
void td_write_pair(const char *dir, const char *img_name, const char *lab_name, uint32_t count,
                   int gz)
{
    td_bytes im = td_images_idx(0x803, count, ROWS, COLS), lb = td_labels_idx(0x801, count);
    char *ip = td_path_in(dir, img_name), *lp = td_path_in(dir, lab_name);
    if (gz) {
        td_write_gz(ip, im.p, im.n);
        td_write_gz(lp, lb.p, lb.n);
    } else {
        td_write_plain(ip, im.p, im.n);
        td_write_plain(lp, lb.p, lb.n);
    }
    free(ip);
    free(lp);
    free(im.p);
    free(lb.p);
}

/* Checks every input float of a gathered image against the bytes it came
 * from: (float)b / 255.0f inside, 0 in the pad border. */
void td_check_image(const float *x, size_t i, size_t pad)
{
    const size_t w = COLS + 2 * pad, h = ROWS + 2 * pad;
    for (size_t r = 0; r < h; r++)
        for (size_t c = 0; c < w; c++) {
            const float got = x[r * w + c];
            const int inside = r >= pad && r < pad + ROWS && c >= pad && c < pad + COLS;
            const float want = inside ? (float)td_pixel_of(i, r - pad, c - pad) / 255.0f : 0.0f;
            ck_assert_msg(got == want, "image %zu (%zu,%zu): %.9g, want %.9g", i, r, c, got, want);
        }
}

/* SplitMix64's step and ds_seed32 as data.h states them, written again here. */
uint64_t td_sm64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint32_t td_seed32(uint64_t seed, uint64_t stream, uint64_t index)
{
    return (uint32_t)(td_sm64(td_sm64(td_sm64(seed) ^ stream) ^ index) >> 32);
}

ds_synthetic_options td_synth_opts(size_t count, size_t in, size_t out, uint64_t seed)
{
    ds_synthetic_options o;
    memset(&o, 0, sizeof o);
    o.count = count;
    o.in_dim = in;
    o.out_dim = out;
    o.seed = seed;
    o.rule = DS_TARGETS_INDEPENDENT;
    o.noise = 0.0;
    return o;
}

ds_dataset *td_synth(const ds_synthetic_options *o)
{
    char msg[256];
    ds_dataset *ds = NULL;
    ck_assert_msg(ds_synthetic(o, &ds, msg, sizeof msg) == DS_OK, "%s", msg);
    return ds;
}
