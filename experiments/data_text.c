/* data_text.c: text for a character-level language model: a fixed list of
 * plain-text files (Debian's fortunes by default) read whole, concatenated,
 * mapped to the fixed vocabulary, split 90/10 and cut into windows (data.h:
 * ds_load_text). */
#define _POSIX_C_SOURCE 200809L /* fileno */

#include "data_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *const ds_fortunes_files[DS_FORTUNES_NFILES] = {
    "cookie", "definitions", "fortunes", "humorists",   "literature",
    "people", "platitudes",  "science",  "songs-poems", "tao"};

int ds_text_token(uint8_t byte)
{
    if (byte == '\t') return 1;
    if (byte == '\n') return 2;
    if (byte >= 32 && byte <= 126) return byte - 29;
    return 0;
}

int ds_text_byte(int id)
{
    if (id == 1) return '\t';
    if (id == 2) return '\n';
    if (id >= 3 && id < DS_TEXT_VOCAB) return id + 29;
    return -1;
}

double ds_bits_per_char(double mean_nats) { return mean_nats / log(2.0); }

/* " (install the Debian package fortunes)" when dir is Debian's. */
static const char *hint(const char *dir)
{
    return strcmp(dir, DS_FORTUNES_DIR) == 0 ? " (install the Debian package fortunes)" : "";
}

static char *join_path(const char *dir, const char *name)
{
    const size_t nd = strlen(dir), nn = strlen(name);
    char *p = malloc(nd + nn + 2);
    if (!p) return NULL;
    memcpy(p, dir, nd);
    size_t at = nd;
    if (nd > 0 && dir[nd - 1] != '/') p[at++] = '/';
    memcpy(p + at, name, nn + 1);
    return p;
}

static int check_dir(const char *dir, char *msg, size_t msg_len)
{
    struct stat st;
    if (stat(dir, &st) != 0) {
        const int e = errno;
        return ut_fail(msg, msg_len, e == ENOENT || e == ENOTDIR ? DS_ENOENT : DS_EIO, "%s: %s%s",
                       dir, e == ENOENT ? "no such directory" : strerror(e), hint(dir));
    }
    if (!S_ISDIR(st.st_mode)) return ut_fail(msg, msg_len, DS_ENOENT, "%s: not a directory", dir);
    return DS_OK;
}

/* Opens dir/name for reading: a regular file.  NULL with the message. */
static FILE *open_text(const char *dir, const char *path, int *status, char *msg, size_t msg_len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        const int e = errno;
        *status = ut_fail(msg, msg_len, e == ENOENT || e == ENOTDIR ? DS_ENOENT : DS_EIO,
                          "%s: %s%s", path, strerror(e), e == ENOENT ? hint(dir) : "");
        return NULL;
    }
    struct stat st;
    if (fstat(fileno(fp), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(fp);
        *status = ut_fail(msg, msg_len, DS_EFORMAT, "%s: not a regular file", path);
        return NULL;
    }
    return fp;
}

int ds_check_text(const char *dir, char *msg, size_t msg_len)
{
    ds_clear_msg(msg, msg_len);
    if (!dir) dir = DS_FORTUNES_DIR;
    int status = check_dir(dir, msg, msg_len);
    for (size_t k = 0; k < DS_FORTUNES_NFILES && status == DS_OK; k++) {
        char *path = join_path(dir, ds_fortunes_files[k]);
        if (!path) return ut_fail(msg, msg_len, DS_ENOMEM, "%s: cannot allocate a path", dir);
        FILE *fp = open_text(dir, path, &status, msg, msg_len);
        if (fp) fclose(fp);
        free(path);
    }
    return status;
}

/* Appends the whole of the file at path to *buf (*n bytes, *cap
 * allocated), mapped to token ids. */
static int append_file(const char *dir, const char *path, uint8_t **buf, size_t *n, size_t *cap,
                       char *msg, size_t msg_len)
{
    int status = DS_OK;
    FILE *fp = open_text(dir, path, &status, msg, msg_len);
    if (!fp) return status;
    const size_t start = *n;
    for (;;) {
        if (*n == *cap) {
            if (*cap >= DS_TEXT_MAX_BYTES) {
                status = ut_fail(msg, msg_len, DS_EFORMAT,
                                 "%s: the files hold more than %zu bytes together", path,
                                 DS_TEXT_MAX_BYTES);
                break;
            }
            const size_t grown = *cap ? 2 * *cap : 65536;
            uint8_t *p = realloc(*buf, grown);
            if (!p) {
                status =
                    ut_fail(msg, msg_len, DS_ENOMEM, "%s: cannot allocate %zu bytes", path, grown);
                break;
            }
            *buf = p;
            *cap = grown;
        }
        const size_t got = fread(*buf + *n, 1, *cap - *n, fp);
        *n += got;
        if (got == 0) {
            if (ferror(fp)) status = ut_fail(msg, msg_len, DS_EIO, "%s: %s", path, strerror(errno));
            break;
        }
    }
    fclose(fp);
    if (status) return status;
    if (*n == start) return ut_fail(msg, msg_len, DS_EFORMAT, "%s: empty", path);
    if (*n > DS_TEXT_MAX_BYTES)
        return ut_fail(msg, msg_len, DS_EFORMAT, "%s: the files hold more than %zu bytes together",
                       path, DS_TEXT_MAX_BYTES);
    for (size_t i = start; i < *n; i++)
        (*buf)[i] = (uint8_t)ds_text_token((*buf)[i]);
    return DS_OK;
}

static int check_options(const ds_text_options *opt, char *msg, size_t msg_len)
{
    if (!opt) return ut_fail(msg, msg_len, DS_EINVAL, "ds_load_text: options are NULL");
    if (opt->context == 0 || opt->context > DS_TEXT_MAX_CONTEXT)
        return ut_fail(msg, msg_len, DS_EINVAL, "the text context %zu is not in 1..%d",
                       opt->context, DS_TEXT_MAX_CONTEXT);
    if (opt->stride > opt->context)
        return ut_fail(msg, msg_len, DS_EINVAL,
                       "the text stride %zu is larger than the context %zu", opt->stride,
                       opt->context);
    return DS_OK;
}

/* The data set of one split of the n tokens in all (taken over). */
static int make_split(const char *dir, ds_split split, const ds_text_options *opt, uint8_t *all,
                      size_t n, ds_dataset **out, char *msg, size_t msg_len)
{
    const size_t held = n / 10, first = split == DS_TRAIN ? 0 : n - held;
    const size_t len = split == DS_TRAIN ? n - held : held;
    const size_t stride = opt->stride ? opt->stride : opt->context;
    if (len < opt->context + 1) {
        free(all);
        return ut_fail(msg, msg_len, DS_EFORMAT,
                       "%s: the %s split holds %zu tokens, fewer than one window of %zu + 1", dir,
                       split == DS_TRAIN ? "training" : "validation", len, opt->context);
    }
    size_t count = (len - opt->context - 1) / stride + 1;
    if (opt->subset > 0 && opt->subset < count) count = opt->subset;
    /* keep only what the windows read */
    const size_t used = (count - 1) * stride + opt->context + 1;
    ds_dataset *ds = calloc(1, sizeof *ds);
    if (ds) ds->images_path = malloc(strlen(dir) + 1);
    if (!ds || !ds->images_path) {
        free(all);
        ds_free(ds);
        return ut_fail(msg, msg_len, DS_ENOMEM, "%s: cannot allocate the data set", dir);
    }
    memmove(all, all + first, used);
    uint8_t *shrunk = realloc(all, used);
    ds->tokens = shrunk ? shrunk : all;
    memcpy(ds->images_path, dir, strlen(dir) + 1);
    snprintf(ds->name, sizeof ds->name, "text %s", split == DS_TRAIN ? "train" : "validation");
    ds->n_tokens = used;
    ds->stride = stride;
    ds->count = count;
    ds->channels = 1;
    ds->height = 1;
    ds->width = opt->context;
    ds->features = opt->context;
    ds->classes = DS_TEXT_VOCAB;
    ds->label_dim = opt->context;
    *out = ds;
    return DS_OK;
}

int ds_load_text_files(const char *dir, const char *const *names, size_t n_names, ds_split split,
                       const ds_text_options *opt, ds_dataset **out, char *msg, size_t msg_len)
{
    ds_clear_msg(msg, msg_len);
    if (!out) return ut_fail(msg, msg_len, DS_EINVAL, "ds_load_text: out is NULL");
    *out = NULL;
    if (!names || n_names == 0)
        return ut_fail(msg, msg_len, DS_EINVAL, "ds_load_text: no file names");
    if (split != DS_TRAIN && split != DS_TEST)
        return ut_fail(msg, msg_len, DS_EINVAL, "ds_load_text: invalid split %d", (int)split);
    if (!dir) dir = DS_FORTUNES_DIR;
    int status = check_options(opt, msg, msg_len);
    if (!status) status = check_dir(dir, msg, msg_len);
    if (status) return status;
    uint8_t *all = NULL;
    size_t n = 0, cap = 0;
    for (size_t k = 0; k < n_names && status == DS_OK; k++) {
        char *path = names[k] ? join_path(dir, names[k]) : NULL;
        if (!path) {
            free(all);
            return names[k] ? ut_fail(msg, msg_len, DS_ENOMEM, "%s: cannot allocate a path", dir)
                            : ut_fail(msg, msg_len, DS_EINVAL, "ds_load_text: name %zu is NULL", k);
        }
        status = append_file(dir, path, &all, &n, &cap, msg, msg_len);
        free(path);
    }
    if (status) {
        free(all);
        return status;
    }
    return make_split(dir, split, opt, all, n, out, msg, msg_len);
}

int ds_load_text(const char *dir, ds_split split, const ds_text_options *opt, ds_dataset **out,
                 char *msg, size_t msg_len)
{
    return ds_load_text_files(dir, ds_fortunes_files, DS_FORTUNES_NFILES, split, opt, out, msg,
                              msg_len);
}
