/* test_data: experiments/data.c: Fashion-MNIST as Debian installs it,
 * hand-made IDX files (plain and gzip'd) with every corruption the reader
 * must reject, synthetic data, shuffling and batches.
 *
 * Hand-made files are written at run time into a fresh directory under
 * $TMPDIR (or /tmp).  Expected values come from the files' bytes, from facts
 * read off the real files with od (quoted where used), or from the recipe
 * data.h documents, rebuilt here from GSL and SplitMix64 directly. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <zlib.h>

#include "check_main.h"
#include "data.h"

#define ROWS 28
#define COLS 28
#define PIX  (ROWS * COLS)

/* ---- scratch directories and files -------------------------------------------- */
static char *make_dir(void)
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
static void remove_dir(char *dir)
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

static char *path_in(const char *dir, const char *name)
{
    char *p = malloc(strlen(dir) + strlen(name) + 2);
    sprintf(p, "%s/%s", dir, name);
    return p;
}

typedef struct bytes {
    uint8_t *p;
    size_t n;
} bytes;

static void put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* The pixel byte of image i at (r, c) in the hand-made files: varied, and
 * covering 0 and 255. */
static uint8_t pixel_of(size_t i, size_t r, size_t c)
{
    return (uint8_t)((i * 97 + r * 31 + c * 7) % 256);
}

/* An IDX image file: magic, count, rows, cols, then the pixels. */
static bytes images_idx(uint32_t magic, uint32_t count, uint32_t rows, uint32_t cols)
{
    bytes b;
    b.n = 16 + (size_t)count * rows * cols;
    b.p = malloc(b.n);
    put_u32(b.p, magic);
    put_u32(b.p + 4, count);
    put_u32(b.p + 8, rows);
    put_u32(b.p + 12, cols);
    for (size_t i = 0; i < count; i++)
        for (size_t r = 0; r < rows; r++)
            for (size_t c = 0; c < cols; c++)
                b.p[16 + (i * rows + r) * cols + c] = pixel_of(i, r, c);
    return b;
}

static const uint8_t hand_labels[] = {3, 0, 9, 1, 7, 7, 2, 5, 8, 6};

static bytes labels_idx(uint32_t magic, uint32_t count)
{
    bytes b;
    b.n = 8 + count;
    b.p = malloc(b.n);
    put_u32(b.p, magic);
    put_u32(b.p + 4, count);
    for (size_t i = 0; i < count; i++)
        b.p[8 + i] = hand_labels[i % 10];
    return b;
}

static void write_plain(const char *path, const uint8_t *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    ck_assert_uint_eq(fwrite(p, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}

static void write_gz(const char *path, const uint8_t *p, size_t n)
{
    gzFile g = gzopen(path, "wb9");
    ck_assert_msg(g != NULL, "cannot write %s", path);
    ck_assert_int_eq(gzwrite(g, p, (unsigned)n), (int)n);
    ck_assert_int_eq(gzclose(g), Z_OK);
}

static size_t file_size(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fclose(f);
    return (size_t)n;
}

static void truncate_to(const char *path, size_t n)
{
    ck_assert_int_eq(truncate(path, (off_t)n), 0);
}

/* A hand-made pair in dir under the given names: count images, count labels. */
static void write_pair(const char *dir, const char *img_name, const char *lab_name, uint32_t count,
                       int gz)
{
    bytes im = images_idx(0x803, count, ROWS, COLS), lb = labels_idx(0x801, count);
    char *ip = path_in(dir, img_name), *lp = path_in(dir, lab_name);
    if (gz) {
        write_gz(ip, im.p, im.n);
        write_gz(lp, lb.p, lb.n);
    } else {
        write_plain(ip, im.p, im.n);
        write_plain(lp, lb.p, lb.n);
    }
    free(ip);
    free(lp);
    free(im.p);
    free(lb.p);
}

/* Checks every input float of a gathered image against the bytes it came
 * from: (float)b / 255.0f inside, 0 in the pad border. */
static void check_image(const float *x, size_t i, size_t pad)
{
    const size_t w = COLS + 2 * pad, h = ROWS + 2 * pad;
    for (size_t r = 0; r < h; r++)
        for (size_t c = 0; c < w; c++) {
            const float got = x[r * w + c];
            const int inside = r >= pad && r < pad + ROWS && c >= pad && c < pad + COLS;
            const float want = inside ? (float)pixel_of(i, r - pad, c - pad) / 255.0f : 0.0f;
            ck_assert_msg(got == want, "image %zu (%zu,%zu): %.9g, want %.9g", i, r, c, got, want);
        }
}

/* ---- the real data set ------------------------------------------------------------ */
static ds_dataset *load_real(ds_split split, const ds_options *opt)
{
    char msg[512];
    ds_dataset *ds = NULL;
    const int st = ds_load_fashion_mnist(NULL, split, opt, &ds, msg, sizeof msg);
    ck_assert_msg(st == DS_OK,
                  "Fashion-MNIST must be installed for this test (Debian package "
                  "dataset-fashion-mnist, files in " DS_FASHION_MNIST_DIR "): %s",
                  msg);
    return ds;
}

START_TEST(real_train)
{
    ds_dataset *ds = load_real(DS_TRAIN, NULL);
    ck_assert_uint_eq(ds->count, 60000);
    ck_assert_uint_eq(ds->channels, 1);
    ck_assert_uint_eq(ds->height, 28);
    ck_assert_uint_eq(ds->width, 28);
    ck_assert_uint_eq(ds->features, 784);
    ck_assert_uint_eq(ds->classes, 10);
    ck_assert_uint_eq(ds->target_dim, 0);
    ck_assert_ptr_null(ds->targets);
    ck_assert_str_eq(ds->name, "fashion-mnist train");
    ck_assert_str_eq(ds->images_path, DS_FASHION_MNIST_DIR "/train-images-idx3-ubyte.gz");
    /* zcat train-labels-idx1-ubyte.gz | od -t u1 -j 8: 9 0 0 3 0 2 7 2 5 5 ...,
     * and the last ten (-j 59998): 4 1 7 2 8 5 1 3 0 5 */
    static const int32_t first[10] = {9, 0, 0, 3, 0, 2, 7, 2, 5, 5};
    static const int32_t last[10] = {4, 1, 7, 2, 8, 5, 1, 3, 0, 5};
    for (int i = 0; i < 10; i++) {
        ck_assert_int_eq(ds->labels[i], first[i]);
        ck_assert_int_eq(ds->labels[59990 + i], last[i]);
    }
    size_t per_class[10] = {0};
    for (size_t i = 0; i < ds->count; i++) {
        ck_assert(ds->labels[i] >= 0 && ds->labels[i] < 10);
        per_class[ds->labels[i]]++;
    }
    for (int k = 0; k < 10; k++)
        ck_assert_uint_eq(per_class[k], 6000); /* balanced, as published */

    /* image 0 (od -t u1 -j 16 -N 784): the bytes sum to 76247, four are 255,
     * row 14 reads 0 0 1 4 6 7 2 0 0 0 0 0 237 ... 218 255 77 0 */
    float x[784];
    const size_t idx0 = 0;
    char msg[256];
    ck_assert_int_eq(ds_gather(ds, &idx0, 1, x, NULL, NULL, msg, sizeof msg), DS_OK);
    long sum = 0;
    int n255 = 0;
    for (int k = 0; k < 784; k++) {
        ck_assert(x[k] >= 0.0f && x[k] <= 1.0f);
        const float b = roundf(x[k] * 255.0f);
        ck_assert_msg(x[k] == b / 255.0f, "pixel %d = %.9g is not a byte / 255", k, x[k]);
        sum += (long)b;
        n255 += x[k] == 1.0f;
    }
    ck_assert_int_eq(sum, 76247);
    ck_assert_int_eq(n255, 4);
    ck_assert(x[14 * 28 + 2] == 1.0f / 255.0f);
    ck_assert(x[14 * 28 + 12] == 237.0f / 255.0f);
    ck_assert(x[14 * 28 + 25] == 1.0f);
    ck_assert(x[14 * 28 + 26] == 77.0f / 255.0f);
    /* pixel range over the whole split: bytes 0..255, both ends present */
    size_t zeros = 0, ones = 0;
    for (size_t k = 0; k < ds->count * 784; k++) {
        zeros += ds->pixels[k] == 0;
        ones += ds->pixels[k] == 255;
    }
    ck_assert(zeros > 0 && ones > 0);
    ds_free(ds);
}
END_TEST

START_TEST(real_test_split)
{
    ds_dataset *ds = load_real(DS_TEST, NULL);
    ck_assert_uint_eq(ds->count, 10000);
    ck_assert_str_eq(ds->name, "fashion-mnist test");
    /* zcat t10k-labels-idx1-ubyte.gz | od -t u1 -j 8: 9 2 1 1 6 1 4 6 5 7 */
    static const int32_t first[10] = {9, 2, 1, 1, 6, 1, 4, 6, 5, 7};
    for (int i = 0; i < 10; i++)
        ck_assert_int_eq(ds->labels[i], first[i]);
    /* the last test image's bytes sum to 24390 (od -j 16+784*9999 -N 784) */
    float x[784];
    const size_t last = 9999;
    ck_assert_int_eq(ds_gather(ds, &last, 1, x, NULL, NULL, NULL, 0), DS_OK);
    long sum = 0;
    for (int k = 0; k < 784; k++)
        sum += lroundf(x[k] * 255.0f);
    ck_assert_int_eq(sum, 24390);
    ds_free(ds);
}
END_TEST

START_TEST(real_padded_subset)
{
    ds_options opt = ds_options_default();
    opt.pad = 2;
    opt.subset = 5;
    ds_dataset *ds = load_real(DS_TRAIN, &opt);
    ck_assert_uint_eq(ds->count, 5);
    ck_assert_uint_eq(ds->height, 32);
    ck_assert_uint_eq(ds->width, 32);
    ck_assert_uint_eq(ds->features, 1024);
    ck_assert_int_eq(ds->labels[0], 9);
    ck_assert_int_eq(ds->labels[4], 0);
    ds_options plain = ds_options_default();
    plain.subset = 5;
    ds_dataset *ref = load_real(DS_TRAIN, &plain);
    static const size_t idx[5] = {0, 1, 2, 3, 4};
    float padded[5 * 1024], flat[5 * 784];
    int32_t lp[5], lf[5];
    ck_assert_int_eq(ds_gather(ds, idx, 5, padded, lp, NULL, NULL, 0), DS_OK);
    ck_assert_int_eq(ds_gather(ref, idx, 5, flat, lf, NULL, NULL, 0), DS_OK);
    for (int s = 0; s < 5; s++) {
        ck_assert_int_eq(lp[s], lf[s]);
        for (int r = 0; r < 32; r++)
            for (int c = 0; c < 32; c++) {
                const float v = padded[s * 1024 + r * 32 + c];
                if (r < 2 || r >= 30 || c < 2 || c >= 30)
                    ck_assert_msg(v == 0.0f, "border (%d,%d) of sample %d is %g", r, c, s, v);
                else
                    ck_assert(v == flat[s * 784 + (r - 2) * 28 + (c - 2)]);
            }
    }
    /* image 0, row 14, col 25 is 255: at (16, 27) once padded */
    ck_assert(padded[16 * 32 + 27] == 1.0f);
    ds_free(ds);
    ds_free(ref);
}
END_TEST

/* ---- hand-made files that are right -------------------------------------------------- */
START_TEST(hand_plain_and_gz_round_trip)
{
    char *dir = make_dir();
    /* train plain, test gzip'd: the loader takes whichever is there */
    write_pair(dir, "train-images-idx3-ubyte", "train-labels-idx1-ubyte", 7, 0);
    write_pair(dir, "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz", 5, 1);
    char msg[512];
    for (int split = 0; split < 2; split++) {
        ds_dataset *ds = NULL;
        const int st = ds_load_fashion_mnist(dir, (ds_split)split, NULL, &ds, msg, sizeof msg);
        ck_assert_msg(st == DS_OK, "%s", msg);
        ck_assert_str_eq(msg, "");
        const size_t n = split == 0 ? 7 : 5;
        ck_assert_uint_eq(ds->count, n);
        ck_assert_uint_eq(ds->rows, 28);
        ck_assert_ptr_nonnull(strstr(ds->images_path, split == 0 ? "train-images-idx3-ubyte"
                                                                 : "t10k-images-idx3-ubyte.gz"));
        for (size_t i = 0; i < n; i++) {
            ck_assert_int_eq(ds->labels[i], hand_labels[i]);
            for (size_t k = 0; k < PIX; k++)
                ck_assert_uint_eq(ds->pixels[i * PIX + k], pixel_of(i, k / COLS, k % COLS));
        }
        float x[7 * PIX];
        int32_t lab[7];
        static const size_t idx_train[7] = {6, 0, 5, 1, 4, 2, 3}, idx_test[5] = {4, 1, 3, 0, 2};
        const size_t m = split == 0 ? 7 : 5;
        const size_t *use = split == 0 ? idx_train : idx_test;
        ck_assert_int_eq(ds_gather(ds, use, m, x, lab, NULL, msg, sizeof msg), DS_OK);
        for (size_t j = 0; j < m; j++) {
            ck_assert_int_eq(lab[j], hand_labels[use[j]]);
            check_image(x + j * PIX, use[j], 0);
        }
        ds_free(ds);
    }
    remove_dir(dir);
}
END_TEST

START_TEST(hand_scaling_and_padding)
{
    /* the exact scaling: (float)b / 255.0f; 51/255 = 0.2 exactly, so 0.2f */
    char *dir = make_dir();
    write_pair(dir, "i.gz", "l.gz", 3, 1);
    char *ip = path_in(dir, "i.gz"), *lp = path_in(dir, "l.gz");
    ds_options opt = ds_options_default();
    opt.pad = 2;
    ds_dataset *ds = NULL;
    char msg[512];
    ck_assert_int_eq(ds_load_idx(ip, lp, 28, 28, &opt, &ds, msg, sizeof msg), DS_OK);
    ck_assert_str_eq(ds->name, "i.gz");
    ck_assert_uint_eq(ds->height, 32);
    ck_assert_uint_eq(ds->features, 1024);
    float x[3 * 1024];
    static const size_t idx[3] = {2, 1, 0};
    ck_assert_int_eq(ds_gather(ds, idx, 3, x, NULL, NULL, msg, sizeof msg), DS_OK);
    for (int j = 0; j < 3; j++)
        check_image(x + j * 1024, idx[j], 2);
    /* pixel_of(0, 0, 0) = 0; pixel_of(1, 0, 6) = (97 + 42) % 256 = 139;
     * pixel_of(0, 1, 3) = 31 + 21 = 52, pixel_of(2, 0, 0) = 194 */
    ck_assert(x[2 * 1024 + 2 * 32 + 2] == 0.0f);
    ck_assert(x[1 * 1024 + 2 * 32 + 8] == 139.0f / 255.0f);
    ck_assert(x[2 * 1024 + 3 * 32 + 5] == 52.0f / 255.0f);
    ck_assert(x[0 * 1024 + 2 * 32 + 2] == 194.0f / 255.0f);
    ds_free(ds);
    ck_assert(51.0f / 255.0f == 0.2f);
    ck_assert(255.0f / 255.0f == 1.0f);
    opt.pad = DS_MAX_PAD + 1;
    ck_assert_int_eq(ds_load_idx(ip, lp, 28, 28, &opt, &ds, msg, sizeof msg), DS_EINVAL);
    ck_assert_ptr_null(ds);
    ck_assert_ptr_nonnull(strstr(msg, "pad 65 is too large"));
    free(ip);
    free(lp);
    remove_dir(dir);
}
END_TEST

START_TEST(hand_subset)
{
    char *dir = make_dir();
    write_pair(dir, "i", "l.gz", 10, 0);
    char *ip = path_in(dir, "i"), *lp = path_in(dir, "l.gz");
    /* l.gz is in fact plain: zlib reads either whatever the name says */
    ds_options opt = ds_options_default();
    opt.subset = 4;
    ds_dataset *ds = NULL;
    ck_assert_int_eq(ds_load_idx(ip, lp, 0, 0, &opt, &ds, NULL, 0), DS_OK);
    ck_assert_uint_eq(ds->count, 4);
    for (size_t i = 0; i < 4; i++)
        ck_assert_int_eq(ds->labels[i], hand_labels[i]);
    for (size_t k = 0; k < 4 * PIX; k++)
        ck_assert_uint_eq(ds->pixels[k], pixel_of(k / PIX, (k % PIX) / COLS, k % COLS));
    ds_free(ds);
    opt.subset = 11; /* more than the file holds: all of it */
    ck_assert_int_eq(ds_load_idx(ip, lp, 0, 0, &opt, &ds, NULL, 0), DS_OK);
    ck_assert_uint_eq(ds->count, 10);
    ds_free(ds);
    free(ip);
    free(lp);
    remove_dir(dir);
}
END_TEST

/* ---- hand-made files that are wrong -------------------------------------------------- */
typedef struct bad_case {
    char *dir, *ip, *lp;
} bad_case;

static bad_case bad_open(void)
{
    bad_case b;
    b.dir = make_dir();
    b.ip = path_in(b.dir, "img.gz");
    b.lp = path_in(b.dir, "lab.gz");
    return b;
}

static void bad_close(bad_case *b)
{
    free(b->ip);
    free(b->lp);
    remove_dir(b->dir);
}

/* Loads the pair and expects status with every fragment in the message, and
 * the message naming the file (a path ending in `file`, "" for none). */
static void expect_reject(const bad_case *b, size_t rows, int status, const char *file,
                          const char *frag1, const char *frag2)
{
    char msg[512] = "untouched";
    static ds_dataset dummy;
    ds_dataset *ds = &dummy; /* must come back NULL */
    const int st = ds_load_idx(b->ip, b->lp, rows, rows, NULL, &ds, msg, sizeof msg);
    ck_assert_msg(st == status, "status %d, want %d: %s", st, status, msg);
    ck_assert_ptr_null(ds);
    ck_assert_msg(strchr(msg, '\n') == NULL, "message has a newline: %s", msg);
    if (*file) {
        char want[256];
        snprintf(want, sizeof want, "%s: ", file);
        ck_assert_msg(strstr(msg, want) != NULL, "'%s' does not name %s", msg, file);
    }
    ck_assert_msg(strstr(msg, frag1) != NULL, "'%s' lacks '%s'", msg, frag1);
    if (frag2) ck_assert_msg(strstr(msg, frag2) != NULL, "'%s' lacks '%s'", msg, frag2);
}

static void write_labels_ok(const bad_case *b, uint32_t count)
{
    bytes lb = labels_idx(0x801, count);
    write_gz(b->lp, lb.p, lb.n);
    free(lb.p);
}

static void write_images_ok(const bad_case *b, uint32_t count)
{
    bytes im = images_idx(0x803, count, ROWS, COLS);
    write_gz(b->ip, im.p, im.n);
    free(im.p);
}

START_TEST(reject_wrong_magic)
{
    bad_case b = bad_open();
    write_labels_ok(&b, 3);
    bytes im = images_idx(0x801, 3, ROWS, COLS); /* a labels magic on an images file */
    write_gz(b.ip, im.p, im.n);
    expect_reject(&b, 28, DS_EFORMAT, "img.gz",
                  "bad magic 0x00000801: 1 dimension, not 3 (images need 0x00000803)", NULL);
    put_u32(im.p, 0x0D03); /* floats, 3 dims */
    write_gz(b.ip, im.p, im.n);
    expect_reject(&b, 28, DS_EFORMAT, "img.gz",
                  "bad magic 0x00000D03: element type 0x0D, not unsigned byte", NULL);
    put_u32(im.p, 0x12340803);
    write_gz(b.ip, im.p, im.n);
    expect_reject(&b, 28, DS_EFORMAT, "img.gz", "bad magic 0x12340803: not an IDX file", NULL);
    free(im.p);
    /* an images file given as the labels */
    write_images_ok(&b, 3);
    im = images_idx(0x803, 3, ROWS, COLS);
    write_gz(b.lp, im.p, im.n);
    free(im.p);
    expect_reject(&b, 28, DS_EFORMAT, "lab.gz",
                  "bad magic 0x00000803: 3 dimensions, not 1 (labels need 0x00000801)", NULL);
    bad_close(&b);
}
END_TEST

START_TEST(reject_wrong_dims)
{
    bad_case b = bad_open();
    write_labels_ok(&b, 3);
    bytes im = images_idx(0x803, 3, 27, 28);
    write_gz(b.ip, im.p, im.n);
    free(im.p);
    expect_reject(&b, 28, DS_EFORMAT, "img.gz", "images are 27x28, expected 28x28", NULL);
    im = images_idx(0x803, 3, 0, 28);
    write_gz(b.ip, im.p, im.n);
    free(im.p);
    expect_reject(&b, 28, DS_EFORMAT, "img.gz", "dimension 1 (rows) is 0", NULL);
    im = images_idx(0x803, 0, 28, 28);
    write_gz(b.ip, im.p, im.n);
    free(im.p);
    expect_reject(&b, 28, DS_EFORMAT, "img.gz", "dimension 0 (count) is 0", NULL);
    bytes lb = labels_idx(0x801, 0);
    write_gz(b.lp, lb.p, lb.n);
    free(lb.p);
    expect_reject(&b, 28, DS_EFORMAT, "lab.gz", "dimension 0 (count) is 0", NULL);
    /* dims whose byte count overflows 64 bits: 2^32-1 images of (2^32-1)^2 bytes */
    uint8_t head[16];
    put_u32(head, 0x803);
    put_u32(head + 4, 0xFFFFFFFFu);
    put_u32(head + 8, 0xFFFFFFFFu);
    put_u32(head + 12, 0xFFFFFFFFu);
    write_plain(b.ip, head, 16);
    uint8_t lhead[8];
    put_u32(lhead, 0x801);
    put_u32(lhead + 4, 0xFFFFFFFFu);
    write_plain(b.lp, lhead, 8);
    expect_reject(&b, 0, DS_EFORMAT, "img.gz",
                  "4294967295 images of 4294967295x4294967295 bytes overflow", NULL);
    /* a header that claims more than the file has fails as truncated, without
     * allocating what it claims: 4e9 labels in a file of 11 bytes */
    put_u32(head + 4, 4000000000u);
    put_u32(head + 8, 28);
    put_u32(head + 12, 28);
    write_plain(b.ip, head, 16);
    const uint8_t lfile[11] = {0, 0, 8, 1, 0xEE, 0x6B, 0x28, 0x00, 1, 2, 3};
    write_plain(b.lp, lfile, sizeof lfile);
    expect_reject(&b, 28, DS_EFORMAT, "lab.gz",
                  "truncated: expected 4000000000 bytes of labels, got 3", NULL);
    bad_close(&b);
}
END_TEST

START_TEST(reject_truncated_gzip)
{
    bad_case b = bad_open();
    write_labels_ok(&b, 40);
    write_images_ok(&b, 40);
    const size_t full = file_size(b.ip);
    ck_assert(full > 200);
    truncate_to(b.ip, full / 2);
    expect_reject(&b, 28, DS_EFORMAT, "img.gz", "truncated gzip stream (unexpected end of file)",
                  "of 31360 bytes of pixels");
    /* only the 8-byte trailer (CRC, length) lost: every pixel arrives, the
     * stream still does not end */
    write_images_ok(&b, 40);
    truncate_to(b.ip, full - 8);
    expect_reject(&b, 28, DS_EFORMAT, "img.gz", "truncated gzip stream",
                  "after all 31360 bytes of pixels");
    /* cut inside the header's first bytes */
    write_images_ok(&b, 40);
    truncate_to(b.ip, 12);
    expect_reject(&b, 28, DS_EFORMAT, "img.gz", "truncated gzip stream", "in the header");
    bad_close(&b);
}
END_TEST

START_TEST(reject_corrupt_gzip)
{
    bad_case b = bad_open();
    write_labels_ok(&b, 40);
    /* the stored CRC-32 (the trailer's first 4 bytes) made wrong */
    write_images_ok(&b, 40);
    const size_t full = file_size(b.ip);
    FILE *f = fopen(b.ip, "r+b");
    ck_assert_ptr_nonnull(f);
    fseek(f, (long)(full - 8), SEEK_SET);
    const int c = fgetc(f);
    fseek(f, (long)(full - 8), SEEK_SET);
    fputc(c ^ 0x55, f);
    fclose(f);
    expect_reject(&b, 28, DS_EFORMAT, "img.gz", "corrupt gzip stream (incorrect data check)", NULL);
    /* a deflate block type that does not exist: byte 10 is the first of the
     * compressed data (no name field: gzopen writes none) and bits 1-2 set
     * to 11 are "reserved" */
    write_images_ok(&b, 40);
    f = fopen(b.ip, "r+b");
    fseek(f, 10, SEEK_SET);
    const int d = fgetc(f);
    fseek(f, 10, SEEK_SET);
    fputc(d | 0x06, f);
    fclose(f);
    expect_reject(&b, 28, DS_EFORMAT, "img.gz", "corrupt gzip stream (invalid block type)", NULL);
    bad_close(&b);
}
END_TEST

START_TEST(reject_truncated_plain)
{
    bad_case b = bad_open();
    write_labels_ok(&b, 3);
    bytes im = images_idx(0x803, 3, ROWS, COLS);
    write_plain(b.ip, im.p, im.n - 1);
    expect_reject(&b, 28, DS_EFORMAT, "img.gz",
                  "truncated: expected 2352 bytes of pixels, got 2351", NULL);
    write_plain(b.ip, im.p, 16);
    expect_reject(&b, 28, DS_EFORMAT, "img.gz", "truncated: expected 2352 bytes of pixels, got 0",
                  NULL);
    write_plain(b.ip, im.p, 6);
    expect_reject(&b, 28, DS_EFORMAT, "img.gz", "truncated: the header has 6 of 16 bytes", NULL);
    write_plain(b.ip, im.p, 0);
    expect_reject(&b, 28, DS_EFORMAT, "img.gz", "truncated: the header has 0 of 16 bytes", NULL);
    write_plain(b.ip, im.p, im.n);
    bytes lb = labels_idx(0x801, 3);
    write_plain(b.lp, lb.p, lb.n - 1);
    expect_reject(&b, 28, DS_EFORMAT, "lab.gz", "truncated: expected 3 bytes of labels, got 2",
                  NULL);
    free(lb.p);
    free(im.p);
    bad_close(&b);
}
END_TEST

START_TEST(reject_trailing_bytes)
{
    bad_case b = bad_open();
    write_labels_ok(&b, 3);
    bytes im = images_idx(0x803, 3, ROWS, COLS);
    uint8_t *longer = malloc(im.n + 5);
    memcpy(longer, im.p, im.n);
    memset(longer + im.n, 0, 5);
    write_plain(b.ip, longer, im.n + 3);
    expect_reject(&b, 28, DS_EFORMAT, "img.gz", "3 trailing bytes after the 2352 bytes of pixels",
                  NULL);
    write_gz(b.ip, longer, im.n + 5);
    expect_reject(&b, 28, DS_EFORMAT, "img.gz", "5 trailing bytes after the 2352 bytes of pixels",
                  NULL);
    write_gz(b.ip, im.p, im.n);
    bytes lb = labels_idx(0x801, 3);
    uint8_t lx[12];
    memcpy(lx, lb.p, lb.n);
    lx[lb.n] = 1;
    write_gz(b.lp, lx, lb.n + 1);
    expect_reject(&b, 28, DS_EFORMAT, "lab.gz", "1 trailing bytes after the 3 bytes of labels",
                  NULL);
    free(lb.p);
    free(longer);
    free(im.p);
    bad_close(&b);
}
END_TEST

START_TEST(reject_label_out_of_range)
{
    bad_case b = bad_open();
    write_images_ok(&b, 4);
    bytes lb = labels_idx(0x801, 4);
    lb.p[8 + 2] = 10;
    write_gz(b.lp, lb.p, lb.n);
    expect_reject(&b, 28, DS_EFORMAT, "lab.gz", "label 10 at index 2 is not in 0..9", NULL);
    lb.p[8 + 2] = 1;
    lb.p[8 + 3] = 255;
    write_plain(b.lp, lb.p, lb.n);
    /* also when the bad label lies beyond a subset: the whole file is checked */
    char msg[256];
    ds_options opt = ds_options_default();
    opt.subset = 1;
    ds_dataset *ds = NULL;
    ck_assert_int_eq(ds_load_idx(b.ip, b.lp, 28, 28, &opt, &ds, msg, sizeof msg), DS_EFORMAT);
    ck_assert_ptr_nonnull(strstr(msg, "label 255 at index 3 is not in 0..9"));
    free(lb.p);
    bad_close(&b);
}
END_TEST

START_TEST(reject_count_mismatch)
{
    bad_case b = bad_open();
    write_images_ok(&b, 3);
    write_labels_ok(&b, 2);
    expect_reject(&b, 28, DS_EFORMAT, "lab.gz", "2 labels for the 3 images of", "img.gz");
    bad_close(&b);
}
END_TEST

START_TEST(reject_missing_files)
{
    bad_case b = bad_open();
    write_images_ok(&b, 3);
    expect_reject(&b, 28, DS_ENOENT, "lab.gz", "no such file", NULL);
    write_labels_ok(&b, 3);
    unlink(b.ip);
    expect_reject(&b, 28, DS_ENOENT, "img.gz", "no such file", NULL);
    mkdir(b.ip, 0700); /* a directory where a file should be */
    expect_reject(&b, 28, DS_EFORMAT, "img.gz", "not a regular file", NULL);
    rmdir(b.ip);

    char msg[512];
    ds_dataset *ds = NULL;
    /* a directory without the files */
    ck_assert_int_eq(ds_load_fashion_mnist(b.dir, DS_TRAIN, NULL, &ds, msg, sizeof msg), DS_ENOENT);
    ck_assert_ptr_null(ds);
    ck_assert_msg(
        strstr(msg, "has neither train-images-idx3-ubyte.gz nor train-images-idx3-ubyte") &&
            strstr(msg, b.dir) == msg,
        "%s", msg);
    /* the images there, the labels not */
    write_pair(b.dir, "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz", 2, 1);
    char *lp = path_in(b.dir, "t10k-labels-idx1-ubyte.gz");
    unlink(lp);
    free(lp);
    ck_assert_int_eq(ds_load_fashion_mnist(b.dir, DS_TEST, NULL, &ds, msg, sizeof msg), DS_ENOENT);
    ck_assert_msg(strstr(msg, "has neither t10k-labels-idx1-ubyte.gz nor t10k-labels-idx1-ubyte"),
                  "%s", msg);
    /* no such directory; a file given as the directory */
    char *nodir = path_in(b.dir, "nothing-here");
    ck_assert_int_eq(ds_load_fashion_mnist(nodir, DS_TEST, NULL, &ds, msg, sizeof msg), DS_ENOENT);
    ck_assert_msg(strstr(msg, nodir) == msg && strstr(msg, ": no such directory"), "%s", msg);
    free(nodir);
    ck_assert_int_eq(ds_load_fashion_mnist(b.lp, DS_TEST, NULL, &ds, msg, sizeof msg), DS_ENOENT);
    ck_assert_msg(strstr(msg, ": not a directory"), "%s", msg);
    /* a corrupt file found by the Fashion-MNIST loader is named by its path */
    write_pair(b.dir, "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte", 2, 0);
    char *ip = path_in(b.dir, "t10k-images-idx3-ubyte.gz");
    truncate_to(ip, 100);
    ck_assert_int_eq(ds_load_fashion_mnist(b.dir, DS_TEST, NULL, &ds, msg, sizeof msg), DS_EFORMAT);
    char want[600];
    snprintf(want, sizeof want, "%s: truncated: expected 1568 bytes of pixels, got 84", ip);
    ck_assert_str_eq(msg, want);
    free(ip);
    bad_close(&b);
}
END_TEST

START_TEST(bad_arguments)
{
    char msg[256];
    ds_dataset *ds = NULL;
    ck_assert_int_eq(ds_load_fashion_mnist(NULL, (ds_split)5, NULL, &ds, msg, sizeof msg),
                     DS_EINVAL);
    ck_assert_ptr_nonnull(strstr(msg, "invalid split 5"));
    ck_assert_int_eq(ds_load_fashion_mnist(NULL, DS_TRAIN, NULL, NULL, msg, sizeof msg), DS_EINVAL);
    ck_assert_ptr_nonnull(strstr(msg, "out is NULL"));
    ck_assert_int_eq(ds_load_idx(NULL, "x", 0, 0, NULL, &ds, msg, sizeof msg), DS_EINVAL);
    ck_assert_ptr_nonnull(strstr(msg, "images path is NULL"));
    /* a short message buffer is truncated, not overrun */
    char tiny[8];
    memset(tiny, 'z', sizeof tiny);
    ck_assert_int_eq(ds_load_idx("/nonexistent/a", "/nonexistent/b", 0, 0, NULL, &ds, tiny, 5),
                     DS_ENOENT);
    ck_assert_str_eq(tiny, "/non");
    ck_assert_int_eq(tiny[5], 'z');
    ck_assert_str_eq(ds_split_name(DS_TRAIN), "train");
    ck_assert_str_eq(ds_split_name(DS_TEST), "test");
    ds_free(NULL);
}
END_TEST

/* ---- synthetic data ------------------------------------------------------------------- */
/* SplitMix64's step and ds_seed32 as data.h states them, written again here. */
static uint64_t sm64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint32_t seed32(uint64_t seed, uint64_t stream, uint64_t index)
{
    return (uint32_t)(sm64(sm64(sm64(seed) ^ stream) ^ index) >> 32);
}

START_TEST(seed_derivation)
{
    /* SplitMix64 from state 0 gives 0xe220a8397b1dcdaf first (Vigna's reference) */
    ck_assert_uint_eq(sm64(0), 0xe220a8397b1dcdafull);
    for (uint64_t s = 0; s < 5; s++)
        for (uint64_t k = 1; k <= 4; k++)
            for (uint64_t i = 0; i < 3; i++)
                ck_assert_uint_eq(ds_seed32(s, k, i), seed32(s, k, i));
    ck_assert_uint_eq(ds_seed32(UINT64_MAX, 4, 123456789), seed32(UINT64_MAX, 4, 123456789));
}
END_TEST

static ds_synthetic_options synth_opts(size_t count, size_t in, size_t out, uint64_t seed)
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

static ds_dataset *synth(const ds_synthetic_options *o)
{
    char msg[256];
    ds_dataset *ds = NULL;
    ck_assert_msg(ds_synthetic(o, &ds, msg, sizeof msg) == DS_OK, "%s", msg);
    return ds;
}

/* n float draws of the documented stream, from GSL directly */
static float *gsl_draws(uint64_t seed, uint64_t stream, size_t n)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, seed32(seed, stream, 0));
    float *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = (float)gsl_ran_gaussian_ziggurat(r, 1.0);
    gsl_rng_free(r);
    return v;
}

START_TEST(synthetic_recipe)
{
    const ds_synthetic_options o = synth_opts(6, 33, 17, 2024);
    ds_dataset *ds = synth(&o);
    ck_assert_uint_eq(ds->count, 6);
    ck_assert_uint_eq(ds->features, 33);
    ck_assert_uint_eq(ds->width, 33);
    ck_assert_uint_eq(ds->height, 1);
    ck_assert_uint_eq(ds->target_dim, 17);
    ck_assert_uint_eq(ds->classes, 0);
    ck_assert_ptr_null(ds->labels);
    ck_assert_str_eq(ds->name, "synthetic");
    float *x = gsl_draws(2024, DS_STREAM_INPUTS, 6 * 33);
    float *y = gsl_draws(2024, DS_STREAM_TARGETS, 6 * 17);
    ck_assert_int_eq(memcmp(ds->inputs, x, 6 * 33 * sizeof(float)), 0);
    ck_assert_int_eq(memcmp(ds->targets, y, 6 * 17 * sizeof(float)), 0);
    /* a standard Gaussian's values: not all equal, mean near 0 */
    double mean = 0;
    for (int k = 0; k < 6 * 33; k++)
        mean += x[k];
    ck_assert(fabs(mean / (6 * 33)) < 0.3);
    free(x);
    free(y);
    ds_free(ds);
}
END_TEST

START_TEST(synthetic_reproducible)
{
    const ds_synthetic_options a = synth_opts(64, 128, 96, 7);
    ds_dataset *d1 = synth(&a), *d2 = synth(&a);
    ck_assert_int_eq(memcmp(d1->inputs, d2->inputs, 64 * 128 * sizeof(float)), 0);
    ck_assert_int_eq(memcmp(d1->targets, d2->targets, 64 * 96 * sizeof(float)), 0);
    ds_synthetic_options b = a;
    b.seed = 8;
    ds_dataset *d3 = synth(&b);
    size_t same = 0;
    for (size_t k = 0; k < 64 * 128; k++)
        same += d1->inputs[k] == d3->inputs[k];
    for (size_t k = 0; k < 64 * 96; k++)
        same += d1->targets[k] == d3->targets[k];
    ck_assert_uint_eq(same, 0);
    /* inputs and targets are different streams */
    ck_assert(memcmp(d1->inputs, d1->targets, 96 * sizeof(float)) != 0);
    /* the first samples do not depend on the count, the inputs not on out_dim */
    ds_synthetic_options c = a;
    c.count = 10;
    c.out_dim = 5;
    ds_dataset *d4 = synth(&c);
    ck_assert_int_eq(memcmp(d1->inputs, d4->inputs, 10 * 128 * sizeof(float)), 0);
    c.out_dim = 96;
    ds_dataset *d5 = synth(&c);
    ck_assert_int_eq(memcmp(d1->targets, d5->targets, 10 * 96 * sizeof(float)), 0);
    ds_free(d1);
    ds_free(d2);
    ds_free(d3);
    ds_free(d4);
    ds_free(d5);
}
END_TEST

START_TEST(synthetic_linear)
{
    ds_synthetic_options o = synth_opts(5, 8, 3, 99);
    o.rule = DS_TARGETS_LINEAR;
    o.noise = 0.25;
    ds_dataset *ds = synth(&o);
    float *x = gsl_draws(99, DS_STREAM_INPUTS, 5 * 8);
    float *e = gsl_draws(99, DS_STREAM_TARGETS, 5 * 3);
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, seed32(99, DS_STREAM_MAP, 0));
    double w[3][8];
    for (int j = 0; j < 3; j++)
        for (int k = 0; k < 8; k++)
            w[j][k] = gsl_ran_gaussian_ziggurat(r, 1.0);
    gsl_rng_free(r);
    ck_assert_int_eq(memcmp(ds->inputs, x, sizeof(float) * 40), 0);
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 3; j++) {
            double s = 0;
            for (int k = 0; k < 8; k++)
                s += w[j][k] * (double)x[i * 8 + k];
            const float want = (float)(s / sqrt(8.0) + 0.25 * (double)e[i * 3 + j]);
            ck_assert_msg(ds->targets[i * 3 + j] == want, "target (%d,%d) %.9g, want %.9g", i, j,
                          ds->targets[i * 3 + j], want);
        }
    /* the noise term moves them */
    o.noise = 0.0;
    ds_dataset *d0 = synth(&o);
    ck_assert(d0->targets[0] != ds->targets[0]);
    free(x);
    free(e);
    ds_free(ds);
    ds_free(d0);
}
END_TEST

START_TEST(synthetic_bad_options)
{
    char msg[256];
    ds_dataset *ds = NULL;
    ds_synthetic_options o = synth_opts(0, 4, 4, 1);
    ck_assert_int_eq(ds_synthetic(&o, &ds, msg, sizeof msg), DS_EINVAL);
    ck_assert_ptr_nonnull(strstr(msg, "count 0, in_dim 4 and out_dim 4 must be nonzero"));
    o = synth_opts(2, 4, 4, 1);
    o.rule = DS_TARGETS_LINEAR;
    o.noise = -1;
    ck_assert_int_eq(ds_synthetic(&o, &ds, msg, sizeof msg), DS_EINVAL);
    ck_assert_ptr_nonnull(strstr(msg, "noise -1 must be finite and >= 0"));
    o.noise = NAN;
    ck_assert_int_eq(ds_synthetic(&o, &ds, msg, sizeof msg), DS_EINVAL);
    o.rule = (ds_target_rule)3;
    ck_assert_int_eq(ds_synthetic(&o, &ds, msg, sizeof msg), DS_EINVAL);
    ck_assert_ptr_nonnull(strstr(msg, "invalid target rule 3"));
    o = synth_opts(SIZE_MAX / 2, 4096, 4096, 1);
    ck_assert_int_eq(ds_synthetic(&o, &ds, msg, sizeof msg), DS_EINVAL);
    ck_assert_ptr_nonnull(strstr(msg, "overflow"));
    ck_assert_int_eq(ds_synthetic(NULL, &ds, msg, sizeof msg), DS_EINVAL);
    ck_assert_ptr_null(ds);
}
END_TEST

/* ---- shuffling -------------------------------------------------------------------------- */
static void check_permutation(const size_t *p, size_t n)
{
    unsigned char *seen = calloc(n ? n : 1, 1);
    for (size_t i = 0; i < n; i++) {
        ck_assert_msg(p[i] < n, "p[%zu] = %zu", i, p[i]);
        ck_assert_msg(!seen[p[i]], "%zu twice", p[i]);
        seen[p[i]] = 1;
    }
    free(seen);
}

START_TEST(shuffle_permutation)
{
    const size_t n = 60000;
    size_t *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    char msg[256];
    ck_assert_int_eq(ds_shuffle(n, 42, 0, a, msg, sizeof msg), DS_OK);
    check_permutation(a, n);
    size_t fixed = 0;
    for (size_t i = 0; i < n; i++)
        fixed += a[i] == i;
    ck_assert_uint_lt(fixed, 20); /* about 1 expected */
    ck_assert_int_eq(ds_shuffle(n, 42, 0, b, msg, sizeof msg), DS_OK);
    ck_assert_int_eq(memcmp(a, b, n * sizeof *a), 0);
    ck_assert_int_eq(ds_shuffle(n, 42, 1, b, msg, sizeof msg), DS_OK);
    check_permutation(b, n);
    ck_assert(memcmp(a, b, n * sizeof *a) != 0);
    ck_assert_int_eq(ds_shuffle(n, 43, 0, b, msg, sizeof msg), DS_OK);
    ck_assert(memcmp(a, b, n * sizeof *a) != 0);
    /* the recipe: gsl_ran_shuffle of the identity with MT19937 seeded from
     * (seed, DS_STREAM_SHUFFLE, epoch) */
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, seed32(42, DS_STREAM_SHUFFLE, 0));
    for (size_t i = 0; i < n; i++)
        b[i] = i;
    gsl_ran_shuffle(r, b, n, sizeof *b);
    gsl_rng_free(r);
    ck_assert_int_eq(memcmp(a, b, n * sizeof *a), 0);
    free(a);
    free(b);
}
END_TEST

START_TEST(shuffle_edges)
{
    char msg[256];
    size_t one = 99;
    ck_assert_int_eq(ds_shuffle(0, 1, 0, NULL, msg, sizeof msg), DS_OK);
    ck_assert_int_eq(ds_shuffle(1, 1, 0, &one, msg, sizeof msg), DS_OK);
    ck_assert_uint_eq(one, 0);
    size_t two[2];
    int swapped = 0;
    for (uint64_t e = 0; e < 64; e++) {
        ck_assert_int_eq(ds_shuffle(2, 5, e, two, msg, sizeof msg), DS_OK);
        check_permutation(two, 2);
        swapped += two[0] == 1;
    }
    ck_assert(swapped > 10 && swapped < 54); /* both orders occur */
    ck_assert_int_eq(ds_shuffle(3, 1, 0, NULL, msg, sizeof msg), DS_EINVAL);
    ck_assert_ptr_nonnull(strstr(msg, "ds_shuffle: perm is NULL"));
    ck_assert_int_eq(ds_shuffle((size_t)UINT32_MAX + 1, 1, 0, two, msg, sizeof msg), DS_EINVAL);
    ck_assert_ptr_nonnull(strstr(msg, "4294967296 elements, at most 4294967295"));
}
END_TEST

/* ---- batches ------------------------------------------------------------------------------ */
static ds_dataset *hand_dataset(char **dir_out, uint32_t count, size_t pad)
{
    char *dir = make_dir();
    write_pair(dir, "i", "l", count, 0);
    char *ip = path_in(dir, "i"), *lp = path_in(dir, "l");
    ds_options opt = ds_options_default();
    opt.pad = pad;
    ds_dataset *ds = NULL;
    char msg[256];
    ck_assert_msg(ds_load_idx(ip, lp, 28, 28, &opt, &ds, msg, sizeof msg) == DS_OK, "%s", msg);
    free(ip);
    free(lp);
    *dir_out = dir;
    return ds;
}

START_TEST(batches_images)
{
    char *dir;
    ds_dataset *ds = hand_dataset(&dir, 7, 2);
    static const size_t order[7] = {4, 6, 0, 3, 1, 5, 2};
    char msg[256];
    for (int keep = 0; keep < 2; keep++) {
        ds_batcher it;
        ck_assert_int_eq(ds_batcher_init(&it, ds, order, 3, keep, msg, sizeof msg), DS_OK);
        ck_assert_uint_eq(ds_batcher_count(&it), keep ? 3 : 2);
        float x[3 * 1024 + 1];
        int32_t lab[3 + 1];
        size_t seen = 0, n;
        x[3 * 1024] = -7.0f; /* sentinels after the buffers */
        lab[3] = -7;
        for (int b = 0;; b++) {
            ck_assert_int_eq(ds_batch_next(&it, x, lab, NULL, &n, msg, sizeof msg), DS_OK);
            if (n == 0) break;
            ck_assert_uint_eq(n, b < 2 ? 3 : 1);
            for (size_t j = 0; j < n; j++) {
                const size_t i = order[seen + j];
                ck_assert_int_eq(lab[j], hand_labels[i]);
                check_image(x + j * 1024, i, 2);
            }
            seen += n;
        }
        ck_assert_uint_eq(seen, keep ? 7 : 6);
        ck_assert(x[3 * 1024] == -7.0f && lab[3] == -7);
        /* after the end it stays at the end */
        ck_assert_int_eq(ds_batch_next(&it, x, lab, NULL, &n, msg, sizeof msg), DS_OK);
        ck_assert_uint_eq(n, 0);
        /* resuming at batch 1 */
        it.next = 1;
        ck_assert_int_eq(ds_batch_next(&it, x, NULL, NULL, &n, msg, sizeof msg), DS_OK);
        ck_assert_uint_eq(n, 3);
        check_image(x, order[3], 2);
    }
    /* file order, batch larger than the data set */
    ds_batcher it;
    ck_assert_int_eq(ds_batcher_init(&it, ds, NULL, 10, false, msg, sizeof msg), DS_OK);
    ck_assert_uint_eq(ds_batcher_count(&it), 0);
    ck_assert_int_eq(ds_batcher_init(&it, ds, NULL, 10, true, msg, sizeof msg), DS_OK);
    ck_assert_uint_eq(ds_batcher_count(&it), 1);
    float *x = malloc(10 * 1024 * sizeof *x);
    int32_t lab[10];
    size_t n;
    ck_assert_int_eq(ds_batch_next(&it, x, lab, NULL, &n, msg, sizeof msg), DS_OK);
    ck_assert_uint_eq(n, 7);
    for (size_t j = 0; j < 7; j++) {
        ck_assert_int_eq(lab[j], hand_labels[j]);
        check_image(x + j * 1024, j, 2);
    }
    free(x);
    ds_free(ds);
    remove_dir(dir);
}
END_TEST

START_TEST(batches_synthetic)
{
    const ds_synthetic_options o = synth_opts(10, 6, 4, 3);
    ds_dataset *ds = synth(&o);
    size_t order[10];
    char msg[256];
    ck_assert_int_eq(ds_shuffle(10, 3, 0, order, msg, sizeof msg), DS_OK);
    ds_batcher it;
    ck_assert_int_eq(ds_batcher_init(&it, ds, order, 4, false, msg, sizeof msg), DS_OK);
    ck_assert_uint_eq(ds_batcher_count(&it), 2);
    float x[4 * 6], y[4 * 4];
    size_t n, seen = 0;
    for (;;) {
        ck_assert_int_eq(ds_batch_next(&it, x, NULL, y, &n, msg, sizeof msg), DS_OK);
        if (n == 0) break;
        ck_assert_uint_eq(n, 4);
        for (size_t j = 0; j < n; j++) {
            const size_t i = order[seen + j];
            ck_assert_int_eq(memcmp(x + j * 6, ds->inputs + i * 6, 6 * sizeof(float)), 0);
            ck_assert_int_eq(memcmp(y + j * 4, ds->targets + i * 4, 4 * sizeof(float)), 0);
        }
        seen += n;
    }
    ck_assert_uint_eq(seen, 8);
    /* targets alone, x skipped */
    const size_t pick[2] = {9, 0};
    ck_assert_int_eq(ds_gather(ds, pick, 2, NULL, NULL, y, msg, sizeof msg), DS_OK);
    ck_assert_int_eq(memcmp(y, ds->targets + 36, 4 * sizeof(float)), 0);
    ck_assert_int_eq(memcmp(y + 4, ds->targets, 4 * sizeof(float)), 0);
    ds_free(ds);
}
END_TEST

START_TEST(batches_bad_arguments)
{
    char *dir;
    ds_dataset *img = hand_dataset(&dir, 3, 0);
    const ds_synthetic_options o = synth_opts(3, 2, 2, 1);
    ds_dataset *syn = synth(&o);
    char msg[256];
    float x[3 * PIX], y[6];
    int32_t lab[3];
    const size_t idx[2] = {0, 3};
    ck_assert_int_eq(ds_gather(img, idx, 2, x, NULL, NULL, msg, sizeof msg), DS_EINVAL);
    ck_assert_str_eq(msg, "ds_gather: index 3 (position 1) is not below 3");
    ck_assert_int_eq(ds_gather(img, idx, 1, x, NULL, y, msg, sizeof msg), DS_EINVAL);
    ck_assert_str_eq(msg, "ds_gather: targets asked of 'i', which has none");
    ck_assert_int_eq(ds_gather(syn, idx, 1, x, lab, NULL, msg, sizeof msg), DS_EINVAL);
    ck_assert_str_eq(msg, "ds_gather: labels asked of 'synthetic', which has none");
    ck_assert_int_eq(ds_gather(syn, NULL, 1, x, NULL, NULL, msg, sizeof msg), DS_EINVAL);
    ck_assert_int_eq(ds_gather(NULL, idx, 1, x, NULL, NULL, msg, sizeof msg), DS_EINVAL);
    ds_batcher it;
    ck_assert_int_eq(ds_batcher_init(&it, img, NULL, 0, true, msg, sizeof msg), DS_EINVAL);
    ck_assert_str_eq(msg, "ds_batcher_init: batch size is 0");
    const size_t bad_order[3] = {2, 7, 0};
    ck_assert_int_eq(ds_batcher_init(&it, img, bad_order, 2, true, msg, sizeof msg), DS_EINVAL);
    ck_assert_str_eq(msg, "ds_batcher_init: order[1] = 7 is not below 3");
    ck_assert_int_eq(ds_batcher_init(&it, NULL, NULL, 2, true, msg, sizeof msg), DS_EINVAL);
    size_t n = 5;
    ck_assert_int_eq(ds_batcher_init(&it, syn, NULL, 2, true, msg, sizeof msg), DS_OK);
    ck_assert_int_eq(ds_batch_next(&it, x, lab, NULL, &n, msg, sizeof msg), DS_EINVAL);
    ck_assert_uint_eq(n, 0);
    ck_assert_uint_eq(it.next, 0); /* a failed batch is not skipped */
    ck_assert_int_eq(ds_batch_next(&it, x, NULL, NULL, NULL, msg, sizeof msg), DS_EINVAL);
    ds_free(img);
    ds_free(syn);
    remove_dir(dir);
}
END_TEST

static Suite *data_suite(void)
{
    Suite *s = suite_create("data");
    TCase *real = tcase_create("fashion-mnist");
    tcase_set_timeout(real, 60);
    tcase_add_test(real, real_train);
    tcase_add_test(real, real_test_split);
    tcase_add_test(real, real_padded_subset);
    suite_add_tcase(s, real);
    TCase *hand = tcase_create("hand-made");
    tcase_add_test(hand, hand_plain_and_gz_round_trip);
    tcase_add_test(hand, hand_scaling_and_padding);
    tcase_add_test(hand, hand_subset);
    tcase_add_test(hand, reject_wrong_magic);
    tcase_add_test(hand, reject_wrong_dims);
    tcase_add_test(hand, reject_truncated_gzip);
    tcase_add_test(hand, reject_corrupt_gzip);
    tcase_add_test(hand, reject_truncated_plain);
    tcase_add_test(hand, reject_trailing_bytes);
    tcase_add_test(hand, reject_label_out_of_range);
    tcase_add_test(hand, reject_count_mismatch);
    tcase_add_test(hand, reject_missing_files);
    tcase_add_test(hand, bad_arguments);
    suite_add_tcase(s, hand);
    TCase *gen = tcase_create("synthetic, shuffle, batches");
    tcase_add_test(gen, seed_derivation);
    tcase_add_test(gen, synthetic_recipe);
    tcase_add_test(gen, synthetic_reproducible);
    tcase_add_test(gen, synthetic_linear);
    tcase_add_test(gen, synthetic_bad_options);
    tcase_add_test(gen, shuffle_permutation);
    tcase_add_test(gen, shuffle_edges);
    tcase_add_test(gen, batches_images);
    tcase_add_test(gen, batches_synthetic);
    tcase_add_test(gen, batches_bad_arguments);
    suite_add_tcase(s, gen);
    return s;
}

int main(void) { return ts_run_suite(data_suite()); }
