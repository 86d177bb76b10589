/* test_data_support.h: what the data tests share: scratch directories,
 * hand-made IDX files (plain or gzip'd) whose every byte the tests know,
 * the seed recipe data.h documents and synthetic data sets
 * (test_data_support.c). */
#ifndef AMPSCOPE_TEST_DATA_SUPPORT_H
#define AMPSCOPE_TEST_DATA_SUPPORT_H

#include <stddef.h>
#include <stdint.h>

#include "data.h"

#define ROWS 28
#define COLS 28
#define PIX  (ROWS * COLS)

/* A fresh directory under $TMPDIR (or /tmp); td_remove_dir removes it, the
 * files in it and the path. */
char *td_make_dir(void);
void td_remove_dir(char *dir);
char *td_path_in(const char *dir, const char *name); /* dir/name, malloc'd */

typedef struct td_bytes {
    uint8_t *p;
    size_t n;
} td_bytes;

void td_put_u32(uint8_t *p, uint32_t v); /* big-endian, as IDX headers */
/* The pixel byte of image i at (r, c) in the hand-made files: varied, and
 * covering 0 and 255. */
uint8_t td_pixel_of(size_t i, size_t r, size_t c);
/* An IDX image file: magic, count, rows, cols, then the pixels. */
td_bytes td_images_idx(uint32_t magic, uint32_t count, uint32_t rows, uint32_t cols);
/* The labels of the hand-made files: sample i has td_hand_labels[i % 10]. */
extern const uint8_t td_hand_labels[10];
td_bytes td_labels_idx(uint32_t magic, uint32_t count);

void td_write_plain(const char *path, const uint8_t *p, size_t n);
void td_write_gz(const char *path, const uint8_t *p, size_t n);
size_t td_file_size(const char *path);
void td_truncate_to(const char *path, size_t n);
/* A hand-made pair in dir under the given names: count images, count labels. */
void td_write_pair(const char *dir, const char *img_name, const char *lab_name, uint32_t count,
                   int gz);
/* Checks every input float of a gathered image against the bytes it came
 * from: (float)b / 255.0f inside, 0 in the pad border. */
void td_check_image(const float *x, size_t i, size_t pad);

/* SplitMix64's step and ds_seed32 as data.h states them, written again. */
uint64_t td_sm64(uint64_t z);
uint32_t td_seed32(uint64_t seed, uint64_t stream, uint64_t index);
/* Independent-target options; a data set made from them (asserted to load). */
ds_synthetic_options td_synth_opts(size_t count, size_t in, size_t out, uint64_t seed);
ds_dataset *td_synth(const ds_synthetic_options *o);

#endif
