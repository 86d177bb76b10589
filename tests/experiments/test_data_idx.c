/* test_data_idx: experiments/data_idx.c: hand-made IDX files (plain and
 * gzip'd) read back, and every corruption the reader must reject.
 *
 * Hand-made files are written at run time into a fresh directory under
 * $TMPDIR (or /tmp) (test_data_support.h).  Expected values come from the
 * files' bytes, from facts read off the real files with od (quoted where
 * used), or from the recipe data.h documents. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_main.h"
#include "data.h"
#include "test_data_support.h"

/* ---- hand-made files that are right -------------------------------------------------- */
START_TEST(hand_scaling_and_padding)
{
    /* the exact scaling: (float)b / 255.0f; 51/255 = 0.2 exactly, so 0.2f */
    char *dir = td_make_dir();
    td_write_pair(dir, "i.gz", "l.gz", 3, 1);
    char *ip = td_path_in(dir, "i.gz"), *lp = td_path_in(dir, "l.gz");
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
        td_check_image(x + j * 1024, idx[j], 2);
    /* td_pixel_of(0, 0, 0) = 0; td_pixel_of(1, 0, 6) = (97 + 42) % 256 = 139;
     * td_pixel_of(0, 1, 3) = 31 + 21 = 52, td_pixel_of(2, 0, 0) = 194 */
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
    td_remove_dir(dir);
}
END_TEST

START_TEST(hand_subset)
{
    char *dir = td_make_dir();
    td_write_pair(dir, "i", "l.gz", 10, 0);
    char *ip = td_path_in(dir, "i"), *lp = td_path_in(dir, "l.gz");
    /* l.gz is in fact plain: zlib reads either whatever the name says */
    ds_options opt = ds_options_default();
    opt.subset = 4;
    ds_dataset *ds = NULL;
    ck_assert_int_eq(ds_load_idx(ip, lp, 0, 0, &opt, &ds, NULL, 0), DS_OK);
    ck_assert_uint_eq(ds->count, 4);
    for (size_t i = 0; i < 4; i++)
        ck_assert_int_eq(ds->labels[i], td_hand_labels[i]);
    for (size_t k = 0; k < 4 * PIX; k++)
        ck_assert_uint_eq(ds->pixels[k], td_pixel_of(k / PIX, (k % PIX) / COLS, k % COLS));
    ds_free(ds);
    opt.subset = 11; /* more than the file holds: all of it */
    ck_assert_int_eq(ds_load_idx(ip, lp, 0, 0, &opt, &ds, NULL, 0), DS_OK);
    ck_assert_uint_eq(ds->count, 10);
    ds_free(ds);
    free(ip);
    free(lp);
    td_remove_dir(dir);
}
END_TEST

/* ---- hand-made files that are wrong -------------------------------------------------- */
typedef struct bad_case {
    char *dir, *ip, *lp;
} bad_case;

static bad_case bad_open(void)
{
    bad_case b;
    b.dir = td_make_dir();
    b.ip = td_path_in(b.dir, "img.gz");
    b.lp = td_path_in(b.dir, "lab.gz");
    return b;
}

static void bad_close(bad_case *b)
{
    free(b->ip);
    free(b->lp);
    td_remove_dir(b->dir);
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
    td_bytes lb = td_labels_idx(0x801, count);
    td_write_gz(b->lp, lb.p, lb.n);
    free(lb.p);
}

static void write_images_ok(const bad_case *b, uint32_t count)
{
    td_bytes im = td_images_idx(0x803, count, ROWS, COLS);
    td_write_gz(b->ip, im.p, im.n);
    free(im.p);
}

START_TEST(reject_wrong_magic)
{
    bad_case b = bad_open();
    write_labels_ok(&b, 3);
    td_bytes im = td_images_idx(0x801, 3, ROWS, COLS); /* a labels magic on an images file */
    td_write_gz(b.ip, im.p, im.n);
    expect_reject(&b, 28, DS_EFORMAT, "img.gz",
                  "bad magic 0x00000801: 1 dimension, not 3 (images need 0x00000803)", NULL);
    td_put_u32(im.p, 0x0D03); /* floats, 3 dims */
    td_write_gz(b.ip, im.p, im.n);
    expect_reject(&b, 28, DS_EFORMAT, "img.gz",
                  "bad magic 0x00000D03: element type 0x0D, not unsigned byte", NULL);
    td_put_u32(im.p, 0x12340803);
    td_write_gz(b.ip, im.p, im.n);
    expect_reject(&b, 28, DS_EFORMAT, "img.gz", "bad magic 0x12340803: not an IDX file", NULL);
    free(im.p);
    /* an images file given as the labels */
    write_images_ok(&b, 3);
    im = td_images_idx(0x803, 3, ROWS, COLS);
    td_write_gz(b.lp, im.p, im.n);
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
    td_bytes im = td_images_idx(0x803, 3, 27, 28);
    td_write_gz(b.ip, im.p, im.n);
    free(im.p);
    expect_reject(&b, 28, DS_EFORMAT, "img.gz", "images are 27x28, expected 28x28", NULL);
    im = td_images_idx(0x803, 3, 0, 28);
    td_write_gz(b.ip, im.p, im.n);
    free(im.p);
    expect_reject(&b, 28, DS_EFORMAT, "img.gz", "dimension 1 (rows) is 0", NULL);
    im = td_images_idx(0x803, 0, 28, 28);
    td_write_gz(b.ip, im.p, im.n);
    free(im.p);
    expect_reject(&b, 28, DS_EFORMAT, "img.gz", "dimension 0 (count) is 0", NULL);
    td_bytes lb = td_labels_idx(0x801, 0);
    td_write_gz(b.lp, lb.p, lb.n);
    free(lb.p);
    expect_reject(&b, 28, DS_EFORMAT, "lab.gz", "dimension 0 (count) is 0", NULL);
    /* dims whose byte count overflows 64 bits: 2^32-1 images of (2^32-1)^2 bytes */
    uint8_t head[16];
    td_put_u32(head, 0x803);
    td_put_u32(head + 4, 0xFFFFFFFFu);
    td_put_u32(head + 8, 0xFFFFFFFFu);
    td_put_u32(head + 12, 0xFFFFFFFFu);
    td_write_plain(b.ip, head, 16);
    uint8_t lhead[8];
    td_put_u32(lhead, 0x801);
    td_put_u32(lhead + 4, 0xFFFFFFFFu);
    td_write_plain(b.lp, lhead, 8);
    expect_reject(&b, 0, DS_EFORMAT, "img.gz",
                  "4294967295 images of 4294967295x4294967295 bytes overflow", NULL);
    /* a header that claims more than the file has fails as truncated, without
     * allocating what it claims: 4e9 labels in a file of 11 bytes */
    td_put_u32(head + 4, 4000000000u);
    td_put_u32(head + 8, 28);
    td_put_u32(head + 12, 28);
    td_write_plain(b.ip, head, 16);
    const uint8_t lfile[11] = {0, 0, 8, 1, 0xEE, 0x6B, 0x28, 0x00, 1, 2, 3};
    td_write_plain(b.lp, lfile, sizeof lfile);
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
    const size_t full = td_file_size(b.ip);
    ck_assert(full > 200);
    td_truncate_to(b.ip, full / 2);
    expect_reject(&b, 28, DS_EFORMAT, "img.gz", "truncated gzip stream (unexpected end of file)",
                  "of 31360 bytes of pixels");
    /* only the 8-byte trailer (CRC, length) lost: every pixel arrives, the
     * stream still does not end */
    write_images_ok(&b, 40);
    td_truncate_to(b.ip, full - 8);
    expect_reject(&b, 28, DS_EFORMAT, "img.gz", "truncated gzip stream",
                  "after all 31360 bytes of pixels");
    /* cut inside the header's first bytes */
    write_images_ok(&b, 40);
    td_truncate_to(b.ip, 12);
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
    const size_t full = td_file_size(b.ip);
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
    td_bytes im = td_images_idx(0x803, 3, ROWS, COLS);
    td_write_plain(b.ip, im.p, im.n - 1);
    expect_reject(&b, 28, DS_EFORMAT, "img.gz",
                  "truncated: expected 2352 bytes of pixels, got 2351", NULL);
    td_write_plain(b.ip, im.p, 16);
    expect_reject(&b, 28, DS_EFORMAT, "img.gz", "truncated: expected 2352 bytes of pixels, got 0",
                  NULL);
    td_write_plain(b.ip, im.p, 6);
    expect_reject(&b, 28, DS_EFORMAT, "img.gz", "truncated: the header has 6 of 16 bytes", NULL);
    td_write_plain(b.ip, im.p, 0);
    expect_reject(&b, 28, DS_EFORMAT, "img.gz", "truncated: the header has 0 of 16 bytes", NULL);
    td_write_plain(b.ip, im.p, im.n);
    td_bytes lb = td_labels_idx(0x801, 3);
    td_write_plain(b.lp, lb.p, lb.n - 1);
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
    td_bytes im = td_images_idx(0x803, 3, ROWS, COLS);
    uint8_t *longer = malloc(im.n + 5);
    memcpy(longer, im.p, im.n);
    memset(longer + im.n, 0, 5);
    td_write_plain(b.ip, longer, im.n + 3);
    expect_reject(&b, 28, DS_EFORMAT, "img.gz", "3 trailing bytes after the 2352 bytes of pixels",
                  NULL);
    td_write_gz(b.ip, longer, im.n + 5);
    expect_reject(&b, 28, DS_EFORMAT, "img.gz", "5 trailing bytes after the 2352 bytes of pixels",
                  NULL);
    td_write_gz(b.ip, im.p, im.n);
    td_bytes lb = td_labels_idx(0x801, 3);
    uint8_t lx[12];
    memcpy(lx, lb.p, lb.n);
    lx[lb.n] = 1;
    td_write_gz(b.lp, lx, lb.n + 1);
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
    td_bytes lb = td_labels_idx(0x801, 4);
    lb.p[8 + 2] = 10;
    td_write_gz(b.lp, lb.p, lb.n);
    expect_reject(&b, 28, DS_EFORMAT, "lab.gz", "label 10 at index 2 is not in 0..9", NULL);
    lb.p[8 + 2] = 1;
    lb.p[8 + 3] = 255;
    td_write_plain(b.lp, lb.p, lb.n);
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
    bad_close(&b);
}
END_TEST

START_TEST(bad_arguments)
{
    char msg[256];
    ds_dataset *ds = NULL;
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

static Suite *data_idx_suite(void)
{
    Suite *s = suite_create("data-idx");
    TCase *right = tcase_create("hand-made");
    tcase_add_test(right, hand_scaling_and_padding);
    tcase_add_test(right, hand_subset);
    suite_add_tcase(s, right);
    TCase *wrong = tcase_create("rejected");
    tcase_add_test(wrong, reject_wrong_magic);
    tcase_add_test(wrong, reject_wrong_dims);
    tcase_add_test(wrong, reject_truncated_gzip);
    tcase_add_test(wrong, reject_corrupt_gzip);
    tcase_add_test(wrong, reject_truncated_plain);
    tcase_add_test(wrong, reject_trailing_bytes);
    tcase_add_test(wrong, reject_label_out_of_range);
    tcase_add_test(wrong, reject_count_mismatch);
    tcase_add_test(wrong, reject_missing_files);
    tcase_add_test(wrong, bad_arguments);
    suite_add_tcase(s, wrong);
    return s;
}

int main(void) { return ts_run_suite(data_idx_suite()); }
