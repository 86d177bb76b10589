/* test_data_text: experiments/data_text.c: the fixed vocabulary, bits per
 * character, hand-written text files in a scratch directory (the split, the
 * windows and their labels, gathering and batches, determinism), every
 * error, and (run as `test_data_text fortunes`) the real files of Debian's
 * fortunes package, skipped (77) only when the package is absent.
 *
 * Expected ids are written by hand from the rule data.h states (id 1 tab,
 * 2 newline, byte - 29 for ' '..'~', 0 otherwise); facts about the real
 * files were read off them with wc, tr and od (quoted where used). */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_main.h"
#include "data.h"
#include "test_data_support.h"

/* ---- the vocabulary and bits per character --------------------------------------- */
START_TEST(vocabulary_by_hand)
{
    ck_assert_int_eq(DS_TEXT_VOCAB, 98);
    ck_assert_int_eq(ds_text_token('\t'), 1);
    ck_assert_int_eq(ds_text_token('\n'), 2);
    ck_assert_int_eq(ds_text_token(' '), 3);
    ck_assert_int_eq(ds_text_token('!'), 4);
    ck_assert_int_eq(ds_text_token('0'), 19); /* 48 - 29 */
    ck_assert_int_eq(ds_text_token('A'), 36); /* 65 - 29 */
    ck_assert_int_eq(ds_text_token('a'), 68); /* 97 - 29 */
    ck_assert_int_eq(ds_text_token('~'), 97); /* 126 - 29 */
    static const uint8_t other[] = {0, 1, 8, 11, 12, 13, 27, 31, 127, 128, 195, 200, 255};
    for (size_t k = 0; k < sizeof other; k++)
        ck_assert_int_eq(ds_text_token(other[k]), 0);
    /* every id 1..97 comes from exactly one byte, and ds_text_byte gives it back */
    int seen[DS_TEXT_VOCAB] = {0};
    for (int b = 0; b < 256; b++) {
        const int id = ds_text_token((uint8_t)b);
        ck_assert(id >= 0 && id < DS_TEXT_VOCAB);
        seen[id]++;
        if (id > 0) ck_assert_int_eq(ds_text_byte(id), b);
    }
    ck_assert_int_eq(seen[0], 256 - 97);
    for (int id = 1; id < DS_TEXT_VOCAB; id++)
        ck_assert_int_eq(seen[id], 1);
    ck_assert_int_eq(ds_text_byte(0), -1);
    ck_assert_int_eq(ds_text_byte(-1), -1);
    ck_assert_int_eq(ds_text_byte(DS_TEXT_VOCAB), -1);
}
END_TEST

START_TEST(bits_per_char_by_hand)
{
    ck_assert(ds_bits_per_char(0.0) == 0.0);
    /* ln 2 nats are one bit; 1 nat is 1 / ln 2 = 1.4426950408889634 bits */
    ck_assert(fabs(ds_bits_per_char(0.69314718055994531) - 1.0) < 1e-15);
    ck_assert(fabs(ds_bits_per_char(1.0) - 1.4426950408889634) < 1e-15);
    /* a uniform guess over the 98 ids: ln 98 nats = log2 98 = 6.6147098441152083 bits */
    ck_assert(fabs(ds_bits_per_char(4.5849674786705723) - 6.6147098441152083) < 1e-14);
}
END_TEST

/* ---- hand-written files ------------------------------------------------------------- */
/* "Hi there\n" then "%\nab\tZ~\x01\xff.\n": 20 bytes, so the last 20 / 10 = 2
 * tokens are held out.  Their ids, by hand: */
static const uint8_t hand_ids[20] = {
    43, 76, 3,  87, 75, 72, 85, 72, 2,       /* H i ' ' t h e r e \n */
    8,  2,  68, 69, 1,  61, 97, 0,  0, 17, 2 /* % \n a b \t Z ~ \x01 \xff . \n */
};
static const char *const hand_names[2] = {"one", "two"};

static char *hand_dir(void)
{
    char *dir = td_make_dir();
    char *p = td_path_in(dir, "one");
    td_write_plain(p, (const uint8_t *)"Hi there\n", 9);
    free(p);
    p = td_path_in(dir, "two");
    td_write_plain(p, (const uint8_t *)"%\nab\tZ~\x01\xff.\n", 11);
    free(p);
    return dir;
}

static ds_dataset *load_hand(const char *dir, ds_split split, size_t context, size_t stride,
                             size_t subset)
{
    const ds_text_options o = {context, stride, subset};
    ds_dataset *ds = NULL;
    char msg[512];
    const int st = ds_load_text_files(dir, hand_names, 2, split, &o, &ds, msg, sizeof msg);
    ck_assert_msg(st == DS_OK, "%s", msg);
    ck_assert_str_eq(msg, "");
    return ds;
}

/* Gathers sample i and checks its inputs and labels against the hand ids
 * of the window starting at token `at` of the whole text. */
static void check_window(const ds_dataset *ds, size_t i, size_t at)
{
    float x[16];
    int32_t lab[16];
    char msg[256];
    ck_assert_uint_le(ds->features, 16);
    ck_assert_int_eq(ds_gather(ds, &i, 1, x, lab, NULL, msg, sizeof msg), DS_OK);
    for (size_t k = 0; k < ds->features; k++) {
        ck_assert_msg(x[k] == (float)hand_ids[at + k], "sample %zu x[%zu] = %g, want %u", i, k,
                      (double)x[k], hand_ids[at + k]);
        ck_assert_int_eq(lab[k], hand_ids[at + k + 1]);
    }
}

START_TEST(hand_split_windows_and_labels)
{
    char *dir = hand_dir();
    ds_dataset *ds = load_hand(dir, DS_TRAIN, 4, 0, 0);
    /* 18 training tokens, windows of 5 every 4: starts 0 4 8 12 */
    ck_assert_uint_eq(ds->count, 4);
    ck_assert_uint_eq(ds->channels, 1);
    ck_assert_uint_eq(ds->height, 1);
    ck_assert_uint_eq(ds->width, 4);
    ck_assert_uint_eq(ds->features, 4);
    ck_assert_uint_eq(ds->classes, 98);
    ck_assert_uint_eq(ds->label_dim, 4);
    ck_assert_uint_eq(ds->target_dim, 0);
    ck_assert_ptr_null(ds->labels);
    ck_assert_ptr_null(ds->targets);
    ck_assert_ptr_null(ds->pixels);
    ck_assert_ptr_null(ds->inputs);
    ck_assert_str_eq(ds->name, "text train");
    ck_assert_str_eq(ds->images_path, dir);
    ck_assert_uint_eq(ds->stride, 4);
    ck_assert_uint_eq(ds->n_tokens, 17); /* what the windows read: 12 + 5 */
    ck_assert_int_eq(memcmp(ds->tokens, hand_ids, 17), 0);
    for (size_t i = 0; i < 4; i++)
        check_window(ds, i, 4 * i);
    /* sample 3 by hand: ids 69 1 61 97, labels 1 61 97 0 */
    float x[8];
    int32_t lab[8];
    const size_t idx[2] = {3, 0};
    char msg[256];
    ck_assert_int_eq(ds_gather(ds, idx, 2, x, lab, NULL, msg, sizeof msg), DS_OK);
    const float x3[4] = {69, 1, 61, 97}, x0[4] = {43, 76, 3, 87};
    const int32_t l3[4] = {1, 61, 97, 0}, l0[4] = {76, 3, 87, 75};
    ck_assert_int_eq(memcmp(x, x3, sizeof x3), 0);
    ck_assert_int_eq(memcmp(x + 4, x0, sizeof x0), 0);
    ck_assert_int_eq(memcmp(lab, l3, sizeof l3), 0);
    ck_assert_int_eq(memcmp(lab + 4, l0, sizeof l0), 0);
    /* labels only, inputs only */
    ck_assert_int_eq(ds_gather(ds, idx, 1, NULL, lab, NULL, msg, sizeof msg), DS_OK);
    ck_assert_int_eq(memcmp(lab, l3, sizeof l3), 0);
    ck_assert_int_eq(ds_gather(ds, idx, 1, x, NULL, NULL, msg, sizeof msg), DS_OK);
    ck_assert_int_eq(memcmp(x, x3, sizeof x3), 0);
    /* text has no float targets, and indices stay below count */
    float t[4];
    ck_assert_int_eq(ds_gather(ds, idx, 1, x, lab, t, msg, sizeof msg), DS_EINVAL);
    ck_assert_str_eq(msg, "ds_gather: targets asked of 'text train', which has none");
    const size_t bad = 4;
    ck_assert_int_eq(ds_gather(ds, &bad, 1, x, lab, NULL, msg, sizeof msg), DS_EINVAL);
    ds_free(ds);

    /* the held-out split: the last 2 tokens, one window of context 1 */
    ds = load_hand(dir, DS_TEST, 1, 0, 0);
    ck_assert_str_eq(ds->name, "text validation");
    ck_assert_uint_eq(ds->count, 1);
    ck_assert_uint_eq(ds->label_dim, 1);
    check_window(ds, 0, 18); /* x = 17 ('.'), label 2 (newline) */
    ds_free(ds);

    /* 29 tokens: floor(29 / 10) = 2 held out ('B' 'C': ids 37 38), 27 to train */
    char *p = td_path_in(dir, "abc");
    td_write_plain(p, (const uint8_t *)"abcdefghijklmnopqrstuvwxyzABC", 29);
    free(p);
    const char *const abc[1] = {"abc"};
    const ds_text_options one = {1, 1, 0};
    ck_assert_int_eq(ds_load_text_files(dir, abc, 1, DS_TEST, &one, &ds, msg, sizeof msg), DS_OK);
    ck_assert_uint_eq(ds->n_tokens, 2);
    ck_assert_uint_eq(ds->tokens[0], 37);
    ck_assert_uint_eq(ds->tokens[1], 38);
    ds_free(ds);
    ck_assert_int_eq(ds_load_text_files(dir, abc, 1, DS_TRAIN, &one, &ds, msg, sizeof msg), DS_OK);
    ck_assert_uint_eq(ds->count, 26);
    ck_assert_uint_eq(ds->n_tokens, 27);
    ck_assert_uint_eq(ds->tokens[26], 'A' - 29);
    ds_free(ds);
    td_remove_dir(dir);
}
END_TEST

START_TEST(hand_strides_subsets_and_batches)
{
    char *dir = hand_dir();
    /* stride 1: windows start at 0..13 (13 + 5 = 18) */
    ds_dataset *ds = load_hand(dir, DS_TRAIN, 4, 1, 0);
    ck_assert_uint_eq(ds->count, 14);
    for (size_t i = 0; i < 14; i++)
        check_window(ds, i, i);
    ds_free(ds);
    /* stride 3: starts 0 3 6 9 12 */
    ds = load_hand(dir, DS_TRAIN, 4, 3, 0);
    ck_assert_uint_eq(ds->count, 5);
    for (size_t i = 0; i < 5; i++)
        check_window(ds, i, 3 * i);
    ds_free(ds);
    /* a subset keeps the first windows; one larger than the count keeps all */
    ds = load_hand(dir, DS_TRAIN, 4, 1, 2);
    ck_assert_uint_eq(ds->count, 2);
    ck_assert_uint_eq(ds->n_tokens, 6);
    check_window(ds, 1, 1);
    ds_free(ds);
    ds = load_hand(dir, DS_TRAIN, 4, 0, 99);
    ck_assert_uint_eq(ds->count, 4);
    ds_free(ds);
    /* the largest context the 18 training tokens allow: 17, one window */
    ds = load_hand(dir, DS_TRAIN, 17, 0, 0);
    ck_assert_uint_eq(ds->count, 1);
    ds_free(ds);

    /* batches in a shuffled order: sample after sample, label_dim labels each */
    ds = load_hand(dir, DS_TRAIN, 4, 1, 0);
    size_t order[14];
    char msg[256];
    ck_assert_int_eq(ds_shuffle(14, 7, 0, order, msg, sizeof msg), DS_OK);
    ds_batcher it;
    ck_assert_int_eq(ds_batcher_init(&it, ds, order, 4, true, msg, sizeof msg), DS_OK);
    ck_assert_uint_eq(ds_batcher_count(&it), 4);
    float x[16];
    int32_t lab[16];
    size_t n, seen = 0;
    for (;;) {
        ck_assert_int_eq(ds_batch_next(&it, x, lab, NULL, &n, msg, sizeof msg), DS_OK);
        if (n == 0) break;
        for (size_t j = 0; j < n; j++) {
            const size_t at = order[seen + j];
            for (size_t k = 0; k < 4; k++) {
                ck_assert(x[j * 4 + k] == (float)hand_ids[at + k]);
                ck_assert_int_eq(lab[j * 4 + k], hand_ids[at + k + 1]);
            }
        }
        seen += n;
    }
    ck_assert_uint_eq(seen, 14);
    ds_free(ds);
    td_remove_dir(dir);
}
END_TEST

START_TEST(hand_is_deterministic)
{
    char *dir = hand_dir(), *dir2 = hand_dir();
    ds_dataset *a = load_hand(dir, DS_TRAIN, 3, 2, 0), *b = load_hand(dir, DS_TRAIN, 3, 2, 0),
               *c = load_hand(dir2, DS_TRAIN, 3, 2, 0);
    ck_assert_uint_eq(a->count, b->count);
    ck_assert_uint_eq(a->n_tokens, c->n_tokens);
    ck_assert_int_eq(memcmp(a->tokens, b->tokens, a->n_tokens), 0);
    ck_assert_int_eq(memcmp(a->tokens, c->tokens, a->n_tokens), 0);
    ds_free(a);
    ds_free(b);
    ds_free(c);
    /* the files' order is the list's: two then one starts with '%' (id 8) */
    const char *const swapped[2] = {"two", "one"};
    const ds_text_options o = {4, 0, 0};
    ds_dataset *ds = NULL;
    char msg[256];
    ck_assert_int_eq(ds_load_text_files(dir, swapped, 2, DS_TRAIN, &o, &ds, msg, sizeof msg),
                     DS_OK);
    ck_assert_uint_eq(ds->tokens[0], 8);
    ck_assert_uint_eq(ds->tokens[11], 43); /* 'H' after the 11 bytes of "two" */
    ds_free(ds);
    td_remove_dir(dir);
    td_remove_dir(dir2);
}
END_TEST

/* The fixed list itself, read from a scratch directory holding its names. */
START_TEST(hand_fortunes_names)
{
    ck_assert_int_eq(DS_FORTUNES_NFILES, 10);
    ck_assert_str_eq(ds_fortunes_files[0], "cookie");
    ck_assert_str_eq(ds_fortunes_files[9], "tao");
    char *dir = td_make_dir();
    char msg[512];
    /* file k holds the letter 'a' + k and a newline */
    for (int k = 0; k < DS_FORTUNES_NFILES; k++) {
        char *p = td_path_in(dir, ds_fortunes_files[k]);
        const uint8_t line[2] = {(uint8_t)('a' + k), '\n'};
        td_write_plain(p, line, 2);
        free(p);
    }
    ck_assert_int_eq(ds_check_text(dir, msg, sizeof msg), DS_OK);
    const ds_text_options o = {2, 0, 0};
    ds_dataset *ds = NULL;
    /* 20 tokens: train 18, windows at 0 2 .. 14 (14 + 3 = 17 <= 18): 8 */
    ck_assert_int_eq(ds_load_text(dir, DS_TRAIN, &o, &ds, msg, sizeof msg), DS_OK);
    ck_assert_uint_eq(ds->count, 8);
    for (size_t t = 0; t < ds->n_tokens; t++)
        ck_assert_uint_eq(ds->tokens[t], t % 2 ? 2 : 68 + t / 2); /* 'a' + k is 68 + k */
    ds_free(ds);
    ck_assert_int_eq(ds_load_text(dir, DS_TEST, &o, &ds, msg, sizeof msg), DS_EFORMAT);
    ck_assert_ptr_null(ds);
    ck_assert_msg(
        strstr(msg, ": the validation split holds 2 tokens, fewer than one window of 2 + 1"), "%s",
        msg);
    /* one name missing */
    char *p = td_path_in(dir, "science");
    unlink(p);
    ck_assert_int_eq(ds_check_text(dir, msg, sizeof msg), DS_ENOENT);
    char want[1024];
    snprintf(want, sizeof want, "%s: No such file or directory", p);
    ck_assert_str_eq(msg, want);
    ck_assert_int_eq(ds_load_text(dir, DS_TRAIN, &o, &ds, msg, sizeof msg), DS_ENOENT);
    ck_assert_str_eq(msg, want);
    free(p);
    td_remove_dir(dir);
}
END_TEST

/* ---- errors --------------------------------------------------------------------------- */
static void expect_error(const char *dir, const char *const *names, size_t n_names, ds_split split,
                         const ds_text_options *o, int status, const char *want)
{
    ds_dataset *ds = (ds_dataset *)1;
    char msg[1024];
    const int st = ds_load_text_files(dir, names, n_names, split, o, &ds, msg, sizeof msg);
    ck_assert_msg(st == status, "status %d, expected %d (%s)", st, status, msg);
    ck_assert_ptr_null(ds);
    ck_assert_msg(strstr(msg, want) != NULL, "message '%s' lacks '%s'", msg, want);
    ck_assert_ptr_null(strchr(msg, '\n')); /* one line */
}

START_TEST(errors_name_the_path)
{
    char *dir = hand_dir();
    const ds_text_options o = {4, 0, 0};
    char want[1024];
    /* a missing directory, and a file given as the directory */
    char *missing = td_path_in(dir, "nope");
    snprintf(want, sizeof want, "%s: no such directory", missing);
    expect_error(missing, hand_names, 2, DS_TRAIN, &o, DS_ENOENT, want);
    char msg[1024];
    ck_assert_int_eq(ds_check_text(missing, msg, sizeof msg), DS_ENOENT);
    ck_assert_str_eq(msg, want);
    free(missing);
    char *file = td_path_in(dir, "one");
    snprintf(want, sizeof want, "%s: not a directory", file);
    expect_error(file, hand_names, 2, DS_TRAIN, &o, DS_ENOENT, want);
    free(file);
    /* a missing file */
    const char *const with_missing[3] = {"one", "absent", "two"};
    snprintf(want, sizeof want, "%s/absent: No such file or directory", dir);
    expect_error(dir, with_missing, 3, DS_TRAIN, &o, DS_ENOENT, want);
    /* an empty file */
    char *empty = td_path_in(dir, "empty");
    td_write_plain(empty, (const uint8_t *)"", 0);
    const char *const with_empty[3] = {"one", "empty", "two"};
    snprintf(want, sizeof want, "%s: empty", empty);
    expect_error(dir, with_empty, 3, DS_TRAIN, &o, DS_EFORMAT, want);
    /* a directory where a file must be: unreadable as text, even by root */
    char *sub = td_path_in(dir, "sub");
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    const char *const with_dir[2] = {"one", "sub"};
    snprintf(want, sizeof want, "%s: not a regular file", sub);
    expect_error(dir, with_dir, 2, DS_TRAIN, &o, DS_EFORMAT, want);
    /* a file without read permission (root reads it anyway: then it loads) */
    char *locked = td_path_in(dir, "locked");
    td_write_plain(locked, (const uint8_t *)"0123456789abcdefghij", 20);
    ck_assert_int_eq(chmod(locked, 0), 0);
    const char *const with_locked[1] = {"locked"};
    if (geteuid() != 0) {
        snprintf(want, sizeof want, "%s: Permission denied", locked);
        expect_error(dir, with_locked, 1, DS_TRAIN, &o, DS_EIO, want);
    }
    /* too little text for one window: the training split of hand_dir holds 18 */
    const ds_text_options big = {18, 0, 0};
    snprintf(want, sizeof want,
             "%s: the training split holds 18 tokens, fewer than one window of 18 + 1", dir);
    expect_error(dir, hand_names, 2, DS_TRAIN, &big, DS_EFORMAT, want);
    expect_error(dir, hand_names, 2, DS_TEST, &o, DS_EFORMAT,
                 ": the validation split holds 2 tokens, fewer than one window of 4 + 1");
    /* bad options and arguments */
    const ds_text_options zero = {0, 0, 0}, huge = {DS_TEXT_MAX_CONTEXT + 1, 0, 0},
                          wide = {4, 5, 0};
    expect_error(dir, hand_names, 2, DS_TRAIN, &zero, DS_EINVAL,
                 "the text context 0 is not in 1..65536");
    expect_error(dir, hand_names, 2, DS_TRAIN, &huge, DS_EINVAL,
                 "the text context 65537 is not in 1..65536");
    expect_error(dir, hand_names, 2, DS_TRAIN, &wide, DS_EINVAL,
                 "the text stride 5 is larger than the context 4");
    expect_error(dir, hand_names, 2, DS_TRAIN, NULL, DS_EINVAL, "options are NULL");
    expect_error(dir, hand_names, 0, DS_TRAIN, &o, DS_EINVAL, "no file names");
    expect_error(dir, NULL, 2, DS_TRAIN, &o, DS_EINVAL, "no file names");
    expect_error(dir, hand_names, 2, (ds_split)7, &o, DS_EINVAL, "invalid split 7");
    const char *const with_null[2] = {"one", NULL};
    expect_error(dir, with_null, 2, DS_TRAIN, &o, DS_EINVAL, "name 1 is NULL");
    ck_assert_int_eq(ds_load_text_files(dir, hand_names, 2, DS_TRAIN, &o, NULL, msg, sizeof msg),
                     DS_EINVAL);
    /* nothing was created in the directory: one two empty sub locked only */
    free(empty);
    free(sub);
    chmod(locked, 0600);
    free(locked);
    td_remove_dir(dir);
}
END_TEST

/* ---- the real files --------------------------------------------------------------------- */
/* Facts read off the ten files (cat cookie definitions fortunes humorists
 * literature people platitudes science songs-poems tao > all):
 *   wc -c: 1136525 bytes, so 113652 held out and 1022873 for training;
 *   tr -cd counts: 12373 tabs, 31778 newlines, 176209 spaces, 101714 'e',
 *   one '~', and 122 other bytes (all backspaces, 8: overstrike);
 *   head -c 16 | od -t u1: 34 89 111 117 32 107 110 111 119 44 32 111 102 32 99 111
 *   ("You know, of co);
 *   od -j 1022873 -N 8 -t u1: 99 97 115 116 32 116 104 101 ("cast the);
 *   tail -c 4: '"' '\n' '%' '\n'. */
static void count_ids(const ds_dataset *ds, size_t *hist)
{
    for (size_t t = 0; t < ds->n_tokens; t++)
        hist[ds->tokens[t]]++;
}

START_TEST(real_fortunes)
{
    const ds_text_options all = {1, 1, 0};
    ds_dataset *tr = NULL, *va = NULL;
    char msg[512];
    ck_assert_int_eq(ds_check_text(NULL, msg, sizeof msg), DS_OK);
    ck_assert_int_eq(ds_load_text(NULL, DS_TRAIN, &all, &tr, msg, sizeof msg), DS_OK);
    ck_assert_int_eq(ds_load_text(DS_FORTUNES_DIR, DS_TEST, &all, &va, msg, sizeof msg), DS_OK);
    ck_assert_str_eq(tr->images_path, DS_FORTUNES_DIR);
    /* context 1, stride 1: every token is read */
    ck_assert_uint_eq(tr->n_tokens, 1022873);
    ck_assert_uint_eq(va->n_tokens, 113652);
    ck_assert_uint_eq(tr->count, 1022872);
    size_t hist[DS_TEXT_VOCAB] = {0};
    count_ids(tr, hist);
    count_ids(va, hist);
    ck_assert_uint_eq(hist[0], 122);
    ck_assert_uint_eq(hist[1], 12373);
    ck_assert_uint_eq(hist[2], 31778);
    ck_assert_uint_eq(hist[3], 176209);
    ck_assert_uint_eq(hist['e' - 29], 101714);
    ck_assert_uint_eq(hist[97], 1);
    static const uint8_t head[16] = {34,  89, 111, 117, 32,  107, 110, 111,
                                     119, 44, 32,  111, 102, 32,  99,  111};
    for (int k = 0; k < 16; k++)
        ck_assert_uint_eq(tr->tokens[k], head[k] - 29);
    static const uint8_t held[8] = {99, 97, 115, 116, 32, 116, 104, 101};
    for (int k = 0; k < 8; k++)
        ck_assert_uint_eq(va->tokens[k], held[k] - 29);
    const uint8_t tail[4] = {'"' - 29, 2, '%' - 29, 2};
    ck_assert_int_eq(memcmp(va->tokens + va->n_tokens - 4, tail, 4), 0);
    ds_free(tr);
    ds_free(va);

    /* context 64 without overlap: (1022873 - 65) / 64 + 1 = 15982 training
     * windows, (113652 - 65) / 64 + 1 = 1775 held out */
    const ds_text_options c64 = {64, 0, 0};
    ck_assert_int_eq(ds_load_text(NULL, DS_TRAIN, &c64, &tr, msg, sizeof msg), DS_OK);
    ck_assert_int_eq(ds_load_text(NULL, DS_TEST, &c64, &va, msg, sizeof msg), DS_OK);
    ck_assert_uint_eq(tr->count, 15982);
    ck_assert_uint_eq(va->count, 1775);
    float x[64];
    int32_t lab[64];
    const size_t first = 0;
    ck_assert_int_eq(ds_gather(tr, &first, 1, x, lab, NULL, msg, sizeof msg), DS_OK);
    for (int k = 0; k < 15; k++) {
        ck_assert(x[k] == (float)(head[k] - 29));
        ck_assert_int_eq(lab[k], head[k + 1] - 29);
    }
    ds_free(tr);
    ds_free(va);
}
END_TEST

int main(int argc, char **argv)
{
    Suite *s = suite_create("data_text");
    TCase *tc = tcase_create("text");
    tcase_set_timeout(tc, 120);
    if (argc > 1 && strcmp(argv[1], "fortunes") == 0) {
        struct stat st;
        if (stat(DS_FORTUNES_DIR "/cookie", &st) != 0 && errno == ENOENT) {
            printf("skipped: %s/cookie is absent (install the Debian package fortunes)\n",
                   DS_FORTUNES_DIR);
            return 77;
        }
        tcase_add_test(tc, real_fortunes);
    } else {
        tcase_add_test(tc, vocabulary_by_hand);
        tcase_add_test(tc, bits_per_char_by_hand);
        tcase_add_test(tc, hand_split_windows_and_labels);
        tcase_add_test(tc, hand_strides_subsets_and_batches);
        tcase_add_test(tc, hand_is_deterministic);
        tcase_add_test(tc, hand_fortunes_names);
        tcase_add_test(tc, errors_name_the_path);
    }
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
