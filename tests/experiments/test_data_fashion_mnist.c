/* test_data_fashion_mnist: experiments/data_fashion_mnist.c: Fashion-MNIST
 * as Debian installs it, a directory of hand-made files (plain or gzip'd),
 * missing files and bad arguments.
 *
 * Hand-made files are written at run time into a fresh directory under
 * $TMPDIR (or /tmp) (test_data_support.h).  Expected values come from the
 * files' bytes, from facts read off the real files with od (quoted where
 * used), or from the recipe data.h documents. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "data.h"
#include "test_data_support.h"

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

/* ---- hand-made files ------------------------------------------------------------------ */
START_TEST(hand_plain_and_gz_round_trip)
{
    char *dir = td_make_dir();
    /* train plain, test gzip'd: the loader takes whichever is there */
    td_write_pair(dir, "train-images-idx3-ubyte", "train-labels-idx1-ubyte", 7, 0);
    td_write_pair(dir, "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz", 5, 1);
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
            ck_assert_int_eq(ds->labels[i], td_hand_labels[i]);
            for (size_t k = 0; k < PIX; k++)
                ck_assert_uint_eq(ds->pixels[i * PIX + k], td_pixel_of(i, k / COLS, k % COLS));
        }
        float x[7 * PIX];
        int32_t lab[7];
        static const size_t idx_train[7] = {6, 0, 5, 1, 4, 2, 3}, idx_test[5] = {4, 1, 3, 0, 2};
        const size_t m = split == 0 ? 7 : 5;
        const size_t *use = split == 0 ? idx_train : idx_test;
        ck_assert_int_eq(ds_gather(ds, use, m, x, lab, NULL, msg, sizeof msg), DS_OK);
        for (size_t j = 0; j < m; j++) {
            ck_assert_int_eq(lab[j], td_hand_labels[use[j]]);
            td_check_image(x + j * PIX, use[j], 0);
        }
        ds_free(ds);
    }
    td_remove_dir(dir);
}
END_TEST

START_TEST(fashion_missing_files)
{
    char *dir = td_make_dir();
    char msg[512];
    ds_dataset *ds = NULL;
    /* a directory without the files */
    ck_assert_int_eq(ds_load_fashion_mnist(dir, DS_TRAIN, NULL, &ds, msg, sizeof msg), DS_ENOENT);
    ck_assert_ptr_null(ds);
    ck_assert_msg(
        strstr(msg, "has neither train-images-idx3-ubyte.gz nor train-images-idx3-ubyte") &&
            strstr(msg, dir) == msg,
        "%s", msg);
    /* the images there, the labels not */
    td_write_pair(dir, "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz", 2, 1);
    char *lp = td_path_in(dir, "t10k-labels-idx1-ubyte.gz");
    unlink(lp);
    free(lp);
    ck_assert_int_eq(ds_load_fashion_mnist(dir, DS_TEST, NULL, &ds, msg, sizeof msg), DS_ENOENT);
    ck_assert_msg(strstr(msg, "has neither t10k-labels-idx1-ubyte.gz nor t10k-labels-idx1-ubyte"),
                  "%s", msg);
    /* no such directory; a file given as the directory */
    char *nodir = td_path_in(dir, "nothing-here");
    ck_assert_int_eq(ds_load_fashion_mnist(nodir, DS_TEST, NULL, &ds, msg, sizeof msg), DS_ENOENT);
    ck_assert_msg(strstr(msg, nodir) == msg && strstr(msg, ": no such directory"), "%s", msg);
    free(nodir);
    char *file = td_path_in(dir, "t10k-images-idx3-ubyte.gz");
    ck_assert_int_eq(ds_load_fashion_mnist(file, DS_TEST, NULL, &ds, msg, sizeof msg), DS_ENOENT);
    ck_assert_msg(strstr(msg, ": not a directory"), "%s", msg);
    free(file);
    /* a corrupt file found by the Fashion-MNIST loader is named by its path */
    td_write_pair(dir, "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte", 2, 0);
    char *ip = td_path_in(dir, "t10k-images-idx3-ubyte.gz");
    td_truncate_to(ip, 100);
    ck_assert_int_eq(ds_load_fashion_mnist(dir, DS_TEST, NULL, &ds, msg, sizeof msg), DS_EFORMAT);
    char want[600];
    snprintf(want, sizeof want, "%s: truncated: expected 1568 bytes of pixels, got 84", ip);
    ck_assert_str_eq(msg, want);
    free(ip);
    td_remove_dir(dir);
}
END_TEST

START_TEST(fashion_bad_arguments)
{
    char msg[256];
    ds_dataset *ds = NULL;
    ck_assert_int_eq(ds_load_fashion_mnist(NULL, (ds_split)5, NULL, &ds, msg, sizeof msg),
                     DS_EINVAL);
    ck_assert_ptr_nonnull(strstr(msg, "invalid split 5"));
    ck_assert_int_eq(ds_load_fashion_mnist(NULL, DS_TRAIN, NULL, NULL, msg, sizeof msg), DS_EINVAL);
    ck_assert_ptr_nonnull(strstr(msg, "out is NULL"));
}
END_TEST

static Suite *data_fashion_mnist_suite(void)
{
    Suite *s = suite_create("data-fashion-mnist");
    TCase *real = tcase_create("fashion-mnist");
    tcase_set_timeout(real, 60);
    tcase_add_test(real, real_train);
    tcase_add_test(real, real_test_split);
    tcase_add_test(real, real_padded_subset);
    suite_add_tcase(s, real);
    TCase *hand = tcase_create("hand-made");
    tcase_add_test(hand, hand_plain_and_gz_round_trip);
    tcase_add_test(hand, fashion_missing_files);
    tcase_add_test(hand, fashion_bad_arguments);
    suite_add_tcase(s, hand);
    return s;
}

int main(void) { return ts_run_suite(data_fashion_mnist_suite()); }
