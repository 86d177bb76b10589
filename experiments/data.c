/* data.c: IDX files through zlib, synthetic Gaussian data, seeded shuffling
 * and batch gathering.  See data.h for the contract. */
#include "data.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <zlib.h>

#include "util.h"

#define IDX_TYPE_UBYTE   0x08
#define IDX_IMAGES_MAGIC 0x00000803u
#define IDX_LABELS_MAGIC 0x00000801u
#define READ_CHUNK       ((size_t)1 << 20)
/* The first allocation for kept data; it grows as bytes arrive, so a header
 * that claims billions of images in a small file ends as "truncated", not as
 * an allocation of the claimed size. */
#define FIRST_CAPACITY ((size_t)1 << 24)

static void clear_msg(char *msg, size_t msg_len)
{
    if (msg && msg_len > 0) msg[0] = '\0';
}

const char *ds_split_name(ds_split split)
{
    switch (split) {
    case DS_TRAIN: return "train";
    case DS_TEST: return "test";
    }
    return "?";
}

void ds_free(ds_dataset *ds)
{
    if (!ds) return;
    free(ds->labels);
    free(ds->targets);
    free(ds->pixels);
    free(ds->inputs);
    free(ds->images_path);
    free(ds->labels_path);
    free(ds);
}

static char *dup_string(const char *s)
{
    const size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
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
static int load_idx(const char *images_path, const char *labels_path, size_t expect_rows,
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

static int check_options(const ds_options *opt, char *msg, size_t msg_len)
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
    clear_msg(msg, msg_len);
    if (!out) return ut_fail(msg, msg_len, DS_EINVAL, "ds_load_idx: out is NULL");
    *out = NULL;
    if (!images_path || !labels_path)
        return ut_fail(msg, msg_len, DS_EINVAL, "ds_load_idx: %s path is NULL",
                       images_path ? "labels" : "images");
    const ds_options def = ds_options_default();
    if (!opt) opt = &def;
    const int status = check_options(opt, msg, msg_len);
    if (status) return status;
    return load_idx(images_path, labels_path, expect_rows, expect_cols, opt, out, msg, msg_len);
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

int ds_load_fashion_mnist(const char *dir, ds_split split, const ds_options *opt, ds_dataset **out,
                          char *msg, size_t msg_len)
{
    clear_msg(msg, msg_len);
    if (!out) return ut_fail(msg, msg_len, DS_EINVAL, "ds_load_fashion_mnist: out is NULL");
    *out = NULL;
    if (split != DS_TRAIN && split != DS_TEST)
        return ut_fail(msg, msg_len, DS_EINVAL, "ds_load_fashion_mnist: invalid split %d",
                       (int)split);
    if (!dir) dir = DS_FASHION_MNIST_DIR;
    const ds_options def = ds_options_default();
    if (!opt) opt = &def;
    int status = check_options(opt, msg, msg_len);
    if (status) return status;

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

    const char *prefix = split == DS_TRAIN ? "train" : "t10k";
    char name[48];
    snprintf(name, sizeof name, "%s-images-idx3-ubyte", prefix);
    char *images = find_file(dir, name, &status, msg, msg_len);
    if (!images) return status;
    snprintf(name, sizeof name, "%s-labels-idx1-ubyte", prefix);
    char *labels = find_file(dir, name, &status, msg, msg_len);
    if (!labels) {
        free(images);
        return status;
    }
    status = load_idx(images, labels, 28, 28, opt, out, msg, msg_len);
    if (status == DS_OK)
        snprintf((*out)->name, sizeof(*out)->name, "fashion-mnist %s", ds_split_name(split));
    free(images);
    free(labels);
    return status;
}

/* ---- random numbers ------------------------------------------------------------ */
static uint64_t splitmix64_mix(uint64_t z)
{
    z += UINT64_C(0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

uint32_t ds_seed32(uint64_t seed, uint64_t stream, uint64_t index)
{
    const uint64_t h = splitmix64_mix(splitmix64_mix(splitmix64_mix(seed) ^ stream) ^ index);
    return (uint32_t)(h >> 32);
}

/* An MT19937 generator built without gsl_rng_alloc: on a failed allocation
 * that calls GSL's error handler, which aborts by default, and a library
 * must not abort.  gsl_rng is a public struct {type, state}. */
static int rng_init(gsl_rng *r, uint32_t seed)
{
    r->type = gsl_rng_mt19937;
    r->state = malloc(r->type->size);
    if (!r->state) return DS_ENOMEM;
    gsl_rng_set(r, seed);
    return DS_OK;
}

static void rng_release(gsl_rng *r)
{
    free(r->state);
    r->state = NULL;
}

static void fill_gaussian(gsl_rng *r, float *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = (float)gsl_ran_gaussian_ziggurat(r, 1.0);
}

/* ---- synthetic data ---------------------------------------------------------------- */
/* targets already hold the float noise draws e; adds the teacher W x. */
static int apply_linear_map(const ds_synthetic_options *o, const float *inputs, float *targets,
                            char *msg, size_t msg_len)
{
    gsl_rng r;
    double *row = malloc(o->in_dim * sizeof *row);
    if (!row || rng_init(&r, ds_seed32(o->seed, DS_STREAM_MAP, 0)) != DS_OK) {
        free(row);
        return ut_fail(msg, msg_len, DS_ENOMEM, "ds_synthetic: cannot allocate the linear map");
    }
    const double sqrt_in = sqrt((double)o->in_dim);
    for (size_t j = 0; j < o->out_dim; j++) {
        for (size_t k = 0; k < o->in_dim; k++)
            row[k] = gsl_ran_gaussian_ziggurat(&r, 1.0);
        for (size_t i = 0; i < o->count; i++) {
            const float *x = inputs + i * o->in_dim;
            double dot = 0.0;
            for (size_t k = 0; k < o->in_dim; k++)
                dot += row[k] * (double)x[k];
            float *y = targets + i * o->out_dim + j;
            *y = (float)(dot / sqrt_in + o->noise * (double)*y);
        }
    }
    rng_release(&r);
    free(row);
    return DS_OK;
}

int ds_synthetic(const ds_synthetic_options *opt, ds_dataset **out, char *msg, size_t msg_len)
{
    clear_msg(msg, msg_len);
    if (!out) return ut_fail(msg, msg_len, DS_EINVAL, "ds_synthetic: out is NULL");
    *out = NULL;
    if (!opt) return ut_fail(msg, msg_len, DS_EINVAL, "ds_synthetic: options are NULL");
    if (opt->count == 0 || opt->in_dim == 0 || opt->out_dim == 0)
        return ut_fail(msg, msg_len, DS_EINVAL,
                       "ds_synthetic: count %zu, in_dim %zu and out_dim %zu must be nonzero",
                       opt->count, opt->in_dim, opt->out_dim);
    if (opt->rule != DS_TARGETS_INDEPENDENT && opt->rule != DS_TARGETS_LINEAR)
        return ut_fail(msg, msg_len, DS_EINVAL, "ds_synthetic: invalid target rule %d",
                       (int)opt->rule);
    if (opt->rule == DS_TARGETS_LINEAR && !(opt->noise >= 0.0 && isfinite(opt->noise)))
        return ut_fail(msg, msg_len, DS_EINVAL, "ds_synthetic: noise %g must be finite and >= 0",
                       opt->noise);
    const size_t max_elems = SIZE_MAX / sizeof(float);
    if (opt->in_dim > max_elems / opt->count || opt->out_dim > max_elems / opt->count)
        return ut_fail(msg, msg_len, DS_EINVAL,
                       "ds_synthetic: %zu samples of %zu + %zu floats overflow the address space",
                       opt->count, opt->in_dim, opt->out_dim);

    ds_dataset *ds = calloc(1, sizeof *ds);
    gsl_rng r = {0};
    int status = DS_OK;
    if (!ds) goto nomem;
    ds->inputs = malloc(opt->count * opt->in_dim * sizeof(float));
    ds->targets = malloc(opt->count * opt->out_dim * sizeof(float));
    if (!ds->inputs || !ds->targets) goto nomem;
    if (rng_init(&r, ds_seed32(opt->seed, DS_STREAM_INPUTS, 0)) != DS_OK) goto nomem;
    fill_gaussian(&r, ds->inputs, opt->count * opt->in_dim);
    rng_release(&r);
    if (rng_init(&r, ds_seed32(opt->seed, DS_STREAM_TARGETS, 0)) != DS_OK) goto nomem;
    fill_gaussian(&r, ds->targets, opt->count * opt->out_dim);
    rng_release(&r);
    if (opt->rule == DS_TARGETS_LINEAR) {
        status = apply_linear_map(opt, ds->inputs, ds->targets, msg, msg_len);
        if (status) goto error;
    }
    snprintf(ds->name, sizeof ds->name, "synthetic");
    ds->count = opt->count;
    ds->channels = 1;
    ds->height = 1;
    ds->width = opt->in_dim;
    ds->features = opt->in_dim;
    ds->target_dim = opt->out_dim;
    *out = ds;
    return DS_OK;
nomem:
    status = ut_fail(msg, msg_len, DS_ENOMEM,
                     "ds_synthetic: cannot allocate %zu samples of %zu + %zu floats", opt->count,
                     opt->in_dim, opt->out_dim);
error:
    rng_release(&r);
    ds_free(ds);
    return status;
}

/* ---- shuffling ---------------------------------------------------------------------- */
int ds_shuffle(size_t n, uint64_t seed, uint64_t epoch, size_t *perm, char *msg, size_t msg_len)
{
    clear_msg(msg, msg_len);
    if (n > 0 && !perm) return ut_fail(msg, msg_len, DS_EINVAL, "ds_shuffle: perm is NULL");
    /* gsl_rng_uniform_int(r, m) needs m <= 2^32 - 1 for MT19937 */
    if ((uint64_t)n > UINT32_MAX)
        return ut_fail(msg, msg_len, DS_EINVAL, "ds_shuffle: %zu elements, at most %u", n,
                       UINT32_MAX);
    for (size_t i = 0; i < n; i++)
        perm[i] = i;
    if (n < 2) return DS_OK; /* gsl_ran_shuffle's loop starts at n - 1: not for n = 0 */
    gsl_rng r;
    if (rng_init(&r, ds_seed32(seed, DS_STREAM_SHUFFLE, epoch)) != DS_OK)
        return ut_fail(msg, msg_len, DS_ENOMEM, "ds_shuffle: cannot allocate the generator");
    gsl_ran_shuffle(&r, perm, n, sizeof *perm);
    rng_release(&r);
    return DS_OK;
}

/* ---- gathering ------------------------------------------------------------------------- */
static void gather_image(const ds_dataset *ds, size_t index, float *dst)
{
    const uint8_t *src = ds->pixels + index * ds->rows * ds->cols;
    if (ds->pad > 0) memset(dst, 0, ds->features * sizeof *dst);
    for (size_t r = 0; r < ds->rows; r++) {
        float *d = dst + (r + ds->pad) * ds->width + ds->pad;
        const uint8_t *s = src + r * ds->cols;
        for (size_t c = 0; c < ds->cols; c++)
            d[c] = (float)s[c] / 255.0f;
    }
}

/* Samples order[start + j] (order NULL: start + j) for j < n. */
static int gather(const char *caller, const ds_dataset *ds, const size_t *order, size_t start,
                  size_t n, float *x, int32_t *labels, float *targets, char *msg, size_t msg_len)
{
    if (!ds) return ut_fail(msg, msg_len, DS_EINVAL, "%s: the data set is NULL", caller);
    if (labels && !ds->labels)
        return ut_fail(msg, msg_len, DS_EINVAL, "%s: labels asked of '%s', which has none", caller,
                       ds->name);
    if (targets && !ds->targets)
        return ut_fail(msg, msg_len, DS_EINVAL, "%s: targets asked of '%s', which has none", caller,
                       ds->name);
    for (size_t j = 0; j < n; j++) {
        const size_t i = order ? order[start + j] : start + j;
        if (i >= ds->count)
            return ut_fail(msg, msg_len, DS_EINVAL, "%s: index %zu (position %zu) is not below %zu",
                           caller, i, start + j, ds->count);
    }
    for (size_t j = 0; j < n; j++) {
        const size_t i = order ? order[start + j] : start + j;
        if (x) {
            float *dst = x + j * ds->features;
            if (ds->pixels)
                gather_image(ds, i, dst);
            else
                memcpy(dst, ds->inputs + i * ds->features, ds->features * sizeof *dst);
        }
        if (labels) labels[j] = ds->labels[i];
        if (targets)
            memcpy(targets + j * ds->target_dim, ds->targets + i * ds->target_dim,
                   ds->target_dim * sizeof *targets);
    }
    return DS_OK;
}

int ds_gather(const ds_dataset *ds, const size_t *indices, size_t n, float *x, int32_t *labels,
              float *targets, char *msg, size_t msg_len)
{
    clear_msg(msg, msg_len);
    if (n > 0 && !indices) return ut_fail(msg, msg_len, DS_EINVAL, "ds_gather: indices are NULL");
    return gather("ds_gather", ds, indices, 0, n, x, labels, targets, msg, msg_len);
}

int ds_batcher_init(ds_batcher *it, const ds_dataset *ds, const size_t *order, size_t batch_size,
                    bool keep_partial, char *msg, size_t msg_len)
{
    clear_msg(msg, msg_len);
    if (!it || !ds)
        return ut_fail(msg, msg_len, DS_EINVAL, "ds_batcher_init: %s is NULL",
                       it ? "the data set" : "the batcher");
    if (batch_size == 0)
        return ut_fail(msg, msg_len, DS_EINVAL, "ds_batcher_init: batch size is 0");
    if (order) {
        for (size_t j = 0; j < ds->count; j++)
            if (order[j] >= ds->count)
                return ut_fail(msg, msg_len, DS_EINVAL,
                               "ds_batcher_init: order[%zu] = %zu is not below %zu", j, order[j],
                               ds->count);
    }
    it->ds = ds;
    it->order = order;
    it->batch_size = batch_size;
    it->keep_partial = keep_partial;
    it->next = 0;
    return DS_OK;
}

size_t ds_batcher_count(const ds_batcher *it)
{
    if (!it || !it->ds || it->batch_size == 0) return 0;
    const size_t full = it->ds->count / it->batch_size;
    return full + (it->keep_partial && it->ds->count % it->batch_size != 0 ? 1 : 0);
}

int ds_batch_next(ds_batcher *it, float *x, int32_t *labels, float *targets, size_t *n, char *msg,
                  size_t msg_len)
{
    clear_msg(msg, msg_len);
    if (!n) return ut_fail(msg, msg_len, DS_EINVAL, "ds_batch_next: n is NULL");
    *n = 0;
    if (!it || !it->ds || it->batch_size == 0)
        return ut_fail(msg, msg_len, DS_EINVAL, "ds_batch_next: the batcher is not initialised");
    if (it->next >= ds_batcher_count(it)) return DS_OK;
    const size_t start = it->next * it->batch_size;
    const size_t rest = it->ds->count - start;
    const size_t size = rest < it->batch_size ? rest : it->batch_size;
    const int status =
        gather("ds_batch_next", it->ds, it->order, start, size, x, labels, targets, msg, msg_len);
    if (status) return status;
    it->next++;
    *n = size;
    return DS_OK;
}
