/* data_fashion_mnist.c: Fashion-MNIST's four files found in a directory
 * (gzip'd or plain) and read as IDX (data.h: ds_load_fashion_mnist). */
#include "data_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

/* dir/name.gz, or dir/name when only the plain file is there.  NULL with
 * the message when neither is (or on ENOMEM). */
static char *find_file(const char *dir, const char *name, int *status, char *msg, size_t msg_len)
{
    char gzname[64];
    snprintf(gzname, sizeof gzname, "%s.gz", name);
    struct stat st;
    char *path = join_path(dir, gzname);
    if (!path) goto nomem;
    if (stat(path, &st) == 0 || errno != ENOENT) return path; /* idx_open names any problem */
    free(path);
    path = join_path(dir, name);
    if (!path) goto nomem;
    if (stat(path, &st) == 0 || errno != ENOENT) return path;
    free(path);
    *status = ut_fail(msg, msg_len, DS_ENOENT, "%s: has neither %s nor %s%s", dir, gzname, name,
                      strcmp(dir, DS_FASHION_MNIST_DIR) == 0
                          ? " (install the Debian package dataset-fashion-mnist)"
                          : "");
    return NULL;
nomem:
    *status = ut_fail(msg, msg_len, DS_ENOMEM, "%s: cannot allocate a path", dir);
    return NULL;
}

/* dir is a directory (NULL: Debian's); the message names it and says
 * what to install when it is Debian's. */
static int check_dir(const char *dir, char *msg, size_t msg_len)
{
    struct stat st;
    if (stat(dir, &st) != 0) {
        const int e = errno;
        return ut_fail(msg, msg_len, e == ENOENT || e == ENOTDIR ? DS_ENOENT : DS_EIO, "%s: %s%s",
                       dir, e == ENOENT ? "no such directory" : strerror(e),
                       strcmp(dir, DS_FASHION_MNIST_DIR) == 0
                           ? " (install the Debian package dataset-fashion-mnist)"
                           : "");
    }
    if (!S_ISDIR(st.st_mode)) return ut_fail(msg, msg_len, DS_ENOENT, "%s: not a directory", dir);
    return DS_OK;
}

/* The images and labels files of split in dir (both NULL on failure). */
static int find_split(const char *dir, ds_split split, char **images, char **labels, char *msg,
                      size_t msg_len)
{
    const char *prefix = split == DS_TRAIN ? "train" : "t10k";
    char name[48];
    int status = DS_OK;
    snprintf(name, sizeof name, "%s-images-idx3-ubyte", prefix);
    *images = find_file(dir, name, &status, msg, msg_len);
    *labels = NULL;
    if (!*images) return status;
    snprintf(name, sizeof name, "%s-labels-idx1-ubyte", prefix);
    *labels = find_file(dir, name, &status, msg, msg_len);
    if (!*labels) {
        free(*images);
        *images = NULL;
    }
    return status;
}

int ds_check_fashion_mnist(const char *dir, char *msg, size_t msg_len)
{
    ds_clear_msg(msg, msg_len);
    if (!dir) dir = DS_FASHION_MNIST_DIR;
    int status = check_dir(dir, msg, msg_len);
    for (int k = 0; k < 1 && status == DS_OK; k++) { /* the training split: read first */
        char *images, *labels;
        status = find_split(dir, DS_TRAIN, &images, &labels, msg, msg_len);
        for (int f = 0; f < 2 && status == DS_OK; f++) {
            const char *path = f ? labels : images;
            FILE *fp = fopen(path, "rb");
            if (!fp)
                status = ut_fail(msg, msg_len, errno == ENOENT ? DS_ENOENT : DS_EIO, "%s: %s", path,
                                 strerror(errno));
            else
                fclose(fp);
        }
        free(images);
        free(labels);
    }
    return status;
}

int ds_load_fashion_mnist(const char *dir, ds_split split, const ds_options *opt, ds_dataset **out,
                          char *msg, size_t msg_len)
{
    ds_clear_msg(msg, msg_len);
    if (!out) return ut_fail(msg, msg_len, DS_EINVAL, "ds_load_fashion_mnist: out is NULL");
    *out = NULL;
    if (split != DS_TRAIN && split != DS_TEST)
        return ut_fail(msg, msg_len, DS_EINVAL, "ds_load_fashion_mnist: invalid split %d",
                       (int)split);
    if (!dir) dir = DS_FASHION_MNIST_DIR;
    const ds_options def = ds_options_default();
    if (!opt) opt = &def;
    int status = ds_idx_check_options(opt, msg, msg_len);
    if (!status) status = check_dir(dir, msg, msg_len);
    char *images = NULL, *labels = NULL;
    if (!status) status = find_split(dir, split, &images, &labels, msg, msg_len);
    if (status) return status;
    status = ds_idx_load(images, labels, 28, 28, opt, out, msg, msg_len);
    if (status == DS_OK)
        snprintf((*out)->name, sizeof(*out)->name, "fashion-mnist %s", ds_split_name(split));
    free(images);
    free(labels);
    return status;
}
