/* test_data_batch: experiments/data_batch.c: seeded shuffles against GSL,
 * and batches of hand-made images and synthetic data. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "check_main.h"
#include "data.h"
#include "test_data_support.h"

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
    gsl_rng_set(r, td_seed32(42, DS_STREAM_SHUFFLE, 0));
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
    char *dir = td_make_dir();
    td_write_pair(dir, "i", "l", count, 0);
    char *ip = td_path_in(dir, "i"), *lp = td_path_in(dir, "l");
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
                ck_assert_int_eq(lab[j], td_hand_labels[i]);
                td_check_image(x + j * 1024, i, 2);
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
        td_check_image(x, order[3], 2);
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
        ck_assert_int_eq(lab[j], td_hand_labels[j]);
        td_check_image(x + j * 1024, j, 2);
    }
    free(x);
    ds_free(ds);
    td_remove_dir(dir);
}
END_TEST

START_TEST(batches_synthetic)
{
    const ds_synthetic_options o = td_synth_opts(10, 6, 4, 3);
    ds_dataset *ds = td_synth(&o);
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
    const ds_synthetic_options o = td_synth_opts(3, 2, 2, 1);
    ds_dataset *syn = td_synth(&o);
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
    td_remove_dir(dir);
}
END_TEST

static Suite *data_batch_suite(void)
{
    Suite *s = suite_create("data-batch");
    TCase *gen = tcase_create("shuffle, batches");
    tcase_add_test(gen, shuffle_permutation);
    tcase_add_test(gen, shuffle_edges);
    tcase_add_test(gen, batches_images);
    tcase_add_test(gen, batches_synthetic);
    tcase_add_test(gen, batches_bad_arguments);
    suite_add_tcase(s, gen);
    return s;
}

int main(void) { return ts_run_suite(data_batch_suite()); }
