/* data_idx.c: IDX image and label files read through zlib (gzip'd or
 * plain), every field checked, into a data set (data.h: ds_load_idx). */
#include "data_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <zlib.h>

#define IDX_TYPE_UBYTE   0x08
#define IDX_IMAGES_MAGIC 0x00000803u
#define IDX_LABELS_MAGIC 0x00000801u
#define READ_CHUNK       ((size_t)1 << 20)
/* The first allocation for kept data; it grows as bytes arrive, so a header
 * that claims billions of images in a small file ends as "truncated", not as
 * an allocation of the claimed size. */
#define FIRST_CAPACITY ((size_t)1 << 24)

static char *dup_string(const char *s)
{
    const size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* ---- reading one IDX file --------------------------------------------------- */
typedef struct idx_file {
    const char *path;
    gzFile gz;
    const char *what; /* "images" or "labels" */
    const char *unit; /* what the body's bytes are: "pixels" or "labels" */
    uint32_t dims[3];
    unsigned ndims;
} idx_file;

/* Reads up to len bytes into buf; *got says how many arrived.  Returns zlib's
 * error number after the reads: Z_OK, or Z_BUF_ERROR for a gzip stream that
 * ends early (gzread itself does not report that one), Z_DATA_ERROR, ... */
static int idx_read(idx_file *f, void *buf, size_t len, size_t *got)
{
    *got = 0;
    while (*got < len) {
        size_t want = len - *got;
        if (want > READ_CHUNK) want = READ_CHUNK;
        const int r = gzread(f->gz, (char *)buf + *got, (unsigned)want);
        if (r > 0) *got += (size_t)r;
        if (r < (int)want) break;
    }
    /* zlib may note an error (a stream ending early) while the bytes asked
     * for still arrive from its buffer; it stays noted, and the final read
     * to the end of the file is always short, so it surfaces there. */
    if (*got == len) return Z_OK;
    int errnum = Z_OK;
    gzerror(f->gz, &errnum);
    return errnum;
}

/* The message for a zlib error: "PATH: truncated gzip stream (unexpected end
 * of file) CONTEXT". */
static int gz_fail(idx_file *f, int errnum, const char *context, char *msg, size_t msg_len)
{
    int dummy;
    const char *zmsg = gzerror(f->gz, &dummy);
    /* zlib writes "path: reason"; the reason alone reads better after ours */
    const size_t np = strlen(f->path);
    if (zmsg && strncmp(zmsg, f->path, np) == 0 && strncmp(zmsg + np, ": ", 2) == 0) zmsg += np + 2;
    if (!zmsg || !*zmsg) zmsg = "no detail";
    switch (errnum) {
    case Z_BUF_ERROR:
        return ut_fail(msg, msg_len, DS_EFORMAT, "%s: truncated gzip stream (%s) %s", f->path, zmsg,
                       context);
    case Z_DATA_ERROR:
        return ut_fail(msg, msg_len, DS_EFORMAT, "%s: corrupt gzip stream (%s) %s", f->path, zmsg,
                       context);
    case Z_MEM_ERROR:
        return ut_fail(msg, msg_len, DS_ENOMEM, "%s: out of memory in zlib %s", f->path, context);
    case Z_ERRNO:
        return ut_fail(msg, msg_len, DS_EIO, "%s: read error (%s) %s", f->path, strerror(errno),
                       context);
    default:
        return ut_fail(msg, msg_len, DS_EIO, "%s: zlib error %d (%s) %s", f->path, errnum, zmsg,
                       context);
    }
}

static int idx_open(idx_file *f, const char *path, const char *what, unsigned ndims, char *msg,
                    size_t msg_len)
{
    f->path = path;
    f->what = what;
    f->unit = ndims == 3 ? "pixels" : "labels";
    f->ndims = ndims;
    f->gz = NULL;
    struct stat st;
    if (stat(path, &st) != 0) {
        const int e = errno;
        return ut_fail(msg, msg_len, e == ENOENT || e == ENOTDIR ? DS_ENOENT : DS_EIO, "%s: %s",
                       path, e == ENOENT ? "no such file" : strerror(e));
    }
    if (!S_ISREG(st.st_mode))
        return ut_fail(msg, msg_len, DS_EFORMAT, "%s: not a regular file", path);
    errno = 0;
    f->gz = gzopen(path, "rb");
    if (!f->gz)
        return ut_fail(msg, msg_len, errno == 0 ? DS_ENOMEM : DS_EIO, "%s: cannot open (%s)", path,
                       errno == 0 ? "out of memory" : strerror(errno));
    gzbuffer(f->gz, 1u << 17);

    const uint32_t magic = ndims == 3 ? IDX_IMAGES_MAGIC : IDX_LABELS_MAGIC;
    uint8_t head[16];
    const size_t head_len = 4 + 4 * (size_t)ndims;
    size_t got;
    const int z = idx_read(f, head, head_len, &got);
    if (z != Z_OK) return gz_fail(f, z, "in the header", msg, msg_len);
    if (got < 4)
        return ut_fail(msg, msg_len, DS_EFORMAT, "%s: truncated: the header has %zu of %zu bytes",
                       path, got, head_len);
    const uint32_t m =
        (uint32_t)head[0] << 24 | (uint32_t)head[1] << 16 | (uint32_t)head[2] << 8 | head[3];
    if (head[0] != 0 || head[1] != 0)
        return ut_fail(msg, msg_len, DS_EFORMAT,
                       "%s: bad magic 0x%08X: not an IDX file (%s need 0x%08X)", path, m, what,
                       magic);
    if (head[2] != IDX_TYPE_UBYTE)
        return ut_fail(msg, msg_len, DS_EFORMAT,
                       "%s: bad magic 0x%08X: element type 0x%02X, not unsigned byte (%s need "
                       "0x%08X)",
                       path, m, head[2], what, magic);
    if (head[3] != ndims)
        return ut_fail(msg, msg_len, DS_EFORMAT,
                       "%s: bad magic 0x%08X: %u dimension%s, not %u (%s need 0x%08X)", path, m,
                       head[3], head[3] == 1 ? "" : "s", ndims, what, magic);
    if (got < head_len)
        return ut_fail(msg, msg_len, DS_EFORMAT, "%s: truncated: the header has %zu of %zu bytes",
                       path, got, head_len);
    static const char *const dim_names[3] = {"count", "rows", "cols"};
    for (unsigned d = 0; d < ndims; d++) {
        const uint8_t *b = head + 4 + 4 * d;
        f->dims[d] = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
        if (f->dims[d] == 0)
            return ut_fail(msg, msg_len, DS_EFORMAT, "%s: dimension %u (%s) is 0", path, d,
                           dim_names[d]);
    }
    return DS_OK;
}

static void idx_close(idx_file *f)
{
    if (f->gz) gzclose_r(f->gz);
    f->gz = NULL;
}

/* Reads the body: exactly total bytes, keeping the first keep of them in
 * *kept (allocated here), then checks that the file ends there. */
static int idx_read_body(idx_file *f, size_t total, size_t keep, uint8_t **kept, char *msg,
                         size_t msg_len)
{
    *kept = NULL;
    uint8_t *scratch = malloc(READ_CHUNK);
    size_t cap = keep < FIRST_CAPACITY ? keep : FIRST_CAPACITY;
    uint8_t *buf = malloc(cap > 0 ? cap : 1);
    int status = DS_OK;
    char context[160];
    if (!scratch || !buf) {
        status = ut_fail(msg, msg_len, DS_ENOMEM, "%s: cannot allocate %zu bytes for the %s",
                         f->path, cap, f->what);
        goto done;
    }
    size_t done = 0;
    while (done < total) {
        size_t want = total - done;
        uint8_t *dst;
        if (done < keep) {
            if (want > keep - done) want = keep - done;
            if (want > READ_CHUNK) want = READ_CHUNK;
            if (done + want > cap) {
                size_t ncap = cap * 2 > keep || cap * 2 < cap ? keep : cap * 2;
                if (ncap < done + want) ncap = done + want;
                uint8_t *nb = realloc(buf, ncap);
                if (!nb) {
                    status =
                        ut_fail(msg, msg_len, DS_ENOMEM, "%s: cannot allocate %zu bytes for the %s",
                                f->path, ncap, f->what);
                    goto done;
                }
                buf = nb;
                cap = ncap;
            }
            dst = buf + done;
        } else {
            if (want > READ_CHUNK) want = READ_CHUNK;
            dst = scratch;
        }
        size_t got;
        const int z = idx_read(f, dst, want, &got);
        done += got;
        if (z != Z_OK) {
            snprintf(context, sizeof context, "after %zu of %zu bytes of %s", done, total, f->unit);
            status = gz_fail(f, z, context, msg, msg_len);
            goto done;
        }
        if (got < want) {
            status = ut_fail(msg, msg_len, DS_EFORMAT,
                             "%s: truncated: expected %zu bytes of %s, got %zu", f->path, total,
                             f->unit, done);
            goto done;
        }
    }
    /* Read to the end: trailing bytes are an error, and a gzip stream's
     * CRC and length are checked only when its end is reached. */
    size_t trailing = 0;
    for (;;) {
        size_t got;
        const int z = idx_read(f, scratch, READ_CHUNK, &got);
        trailing += got;
        if (z != Z_OK) {
            snprintf(context, sizeof context, "after all %zu bytes of %s", total, f->unit);
            status = gz_fail(f, z, context, msg, msg_len);
            goto done;
        }
        if (got < READ_CHUNK) break;
    }
    if (trailing > 0) {
        status =
            ut_fail(msg, msg_len, DS_EFORMAT, "%s: %zu trailing bytes after the %zu bytes of %s",
                    f->path, trailing, total, f->unit);
        goto done;
    }
    *kept = buf;
    buf = NULL;
done:
    free(buf);
    free(scratch);
    return status;
}

/* ---- image/label pairs ------------------------------------------------------- */
int ds_idx_load(const char *images_path, const char *labels_path, size_t expect_rows,
                size_t expect_cols, const ds_options *opt, ds_dataset **out, char *msg,
                size_t msg_len)
{
    idx_file img = {0}, lab = {0};
    ds_dataset *ds = NULL;
    uint8_t *label_bytes = NULL;
    int status = idx_open(&lab, labels_path, "labels", 1, msg, msg_len);
    if (status) goto done;
    status = idx_open(&img, images_path, "images", 3, msg, msg_len);
    if (status) goto done;

    const size_t count = img.dims[0], rows = img.dims[1], cols = img.dims[2];
    if ((expect_rows && rows != expect_rows) || (expect_cols && cols != expect_cols)) {
        status = ut_fail(msg, msg_len, DS_EFORMAT, "%s: images are %zux%zu, expected %zux%zu",
                         images_path, rows, cols, expect_rows ? expect_rows : rows,
                         expect_cols ? expect_cols : cols);
        goto done;
    }
    if (lab.dims[0] != count) {
        status = ut_fail(msg, msg_len, DS_EFORMAT, "%s: %u labels for the %zu images of %s",
                         labels_path, lab.dims[0], count, images_path);
        goto done;
    }
    /* count < 2^32 and rows, cols < 2^32: the product can exceed size_t */
    const size_t image_bytes = rows * cols;
    if (rows != 0 && image_bytes / rows != cols) {
        status = ut_fail(msg, msg_len, DS_EFORMAT, "%s: images of %zux%zu bytes are too large",
                         images_path, rows, cols);
        goto done;
    }
    if (image_bytes > SIZE_MAX / count) {
        status = ut_fail(msg, msg_len, DS_EFORMAT,
                         "%s: %zu images of %zux%zu bytes overflow the address space", images_path,
                         count, rows, cols);
        goto done;
    }
    const size_t pad = opt->pad;
    const size_t height = rows + 2 * pad, width = cols + 2 * pad;
    if (height > SIZE_MAX / width) {
        status = ut_fail(msg, msg_len, DS_EFORMAT, "%s: padded images of %zux%zu are too large",
                         images_path, height, width);
        goto done;
    }
    const size_t keep = opt->subset == 0 || opt->subset > count ? count : opt->subset;

    ds = calloc(1, sizeof *ds);
    if (!ds) {
        status = ut_fail(msg, msg_len, DS_ENOMEM, "%s: cannot allocate the data set", images_path);
        goto done;
    }
    status = idx_read_body(&lab, count, count, &label_bytes, msg, msg_len);
    if (status) goto done;
    for (size_t i = 0; i < count; i++) {
        if (label_bytes[i] >= DS_CLASSES) {
            status = ut_fail(msg, msg_len, DS_EFORMAT, "%s: label %u at index %zu is not in 0..%d",
                             labels_path, label_bytes[i], i, DS_CLASSES - 1);
            goto done;
        }
    }
    ds->labels = malloc(keep * sizeof *ds->labels);
    if (!ds->labels) {
        status =
            ut_fail(msg, msg_len, DS_ENOMEM, "%s: cannot allocate %zu labels", labels_path, keep);
        goto done;
    }
    for (size_t i = 0; i < keep; i++)
        ds->labels[i] = label_bytes[i];
    status =
        idx_read_body(&img, count * image_bytes, keep * image_bytes, &ds->pixels, msg, msg_len);
    if (status) goto done;

    const char *base = strrchr(images_path, '/');
    snprintf(ds->name, sizeof ds->name, "%s", base ? base + 1 : images_path);
    ds->count = keep;
    ds->label_dim = 1;
    ds->channels = 1;
    ds->height = height;
    ds->width = width;
    ds->features = height * width;
    ds->classes = DS_CLASSES;
    ds->rows = rows;
    ds->cols = cols;
    ds->pad = pad;
    ds->images_path = dup_string(images_path);
    ds->labels_path = dup_string(labels_path);
    if (!ds->images_path || !ds->labels_path)
        status = ut_fail(msg, msg_len, DS_ENOMEM, "%s: cannot allocate the data set", images_path);
done:
    idx_close(&img);
    idx_close(&lab);
    free(label_bytes);
    if (status) {
        ds_free(ds);
        ds = NULL;
    }
    *out = ds;
    return status;
}

int ds_idx_check_options(const ds_options *opt, char *msg, size_t msg_len)
{
    if (opt->pad > DS_MAX_PAD)
        return ut_fail(msg, msg_len, DS_EINVAL, "pad %zu is too large (at most %d)", opt->pad,
                       DS_MAX_PAD);
    return DS_OK;
}

int ds_load_idx(const char *images_path, const char *labels_path, size_t expect_rows,
                size_t expect_cols, const ds_options *opt, ds_dataset **out, char *msg,
                size_t msg_len)
{
    ds_clear_msg(msg, msg_len);
    if (!out) return ut_fail(msg, msg_len, DS_EINVAL, "ds_load_idx: out is NULL");
    *out = NULL;
    if (!images_path || !labels_path)
        return ut_fail(msg, msg_len, DS_EINVAL, "ds_load_idx: %s path is NULL",
                       images_path ? "labels" : "images");
    const ds_options def = ds_options_default();
    if (!opt) opt = &def;
    const int status = ds_idx_check_options(opt, msg, msg_len);
    if (status) return status;
    return ds_idx_load(images_path, labels_path, expect_rows, expect_cols, opt, out, msg, msg_len);
}
