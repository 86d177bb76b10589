/* safetensors.c: the safetensors reader and writer (safetensors.h). */
#define _POSIX_C_SOURCE 200809L /* fileno */
#include "safetensors.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.c reads and writes elements in host order, which must be little-endian"
#endif

/* The reference implementation's limit: a header larger than this is taken
 * as a corrupt length rather than an allocation to attempt. */
#define ST_HEADER_MAX 100000000u

static const struct {
    const char *name;
    size_t size;
} dtypes[ST_DTYPES] = {
    [ST_BOOL] = {"BOOL", 1},       [ST_U8] = {"U8", 1},           [ST_I8] = {"I8", 1},
    [ST_F8_E5M2] = {"F8_E5M2", 1}, [ST_F8_E4M3] = {"F8_E4M3", 1}, [ST_I16] = {"I16", 2},
    [ST_U16] = {"U16", 2},         [ST_F16] = {"F16", 2},         [ST_BF16] = {"BF16", 2},
    [ST_I32] = {"I32", 4},         [ST_U32] = {"U32", 4},         [ST_F32] = {"F32", 4},
    [ST_I64] = {"I64", 8},         [ST_U64] = {"U64", 8},         [ST_F64] = {"F64", 8},
};

const char *st_dtype_name(st_dtype dt) { return (unsigned)dt < ST_DTYPES ? dtypes[dt].name : NULL; }

size_t st_dtype_size(st_dtype dt) { return (unsigned)dt < ST_DTYPES ? dtypes[dt].size : 0; }

int st_dtype_parse(const char *name, st_dtype *dt)
{
    for (int i = 0; name && i < ST_DTYPES; i++) {
        if (strcmp(name, dtypes[i].name) == 0) {
            *dt = (st_dtype)i;
            return AN_OK;
        }
    }
    return AN_EINVAL;
}

int st_dtype_from_ak(ak_dtype a, st_dtype *dt)
{
    switch (a) {
    case AK_F16: *dt = ST_F16; return AN_OK;
    case AK_BF16: *dt = ST_BF16; return AN_OK;
    case AK_F32: *dt = ST_F32; return AN_OK;
    }
    return AN_EINVAL;
}

int st_dtype_to_ak(st_dtype dt, ak_dtype *a)
{
    switch (dt) {
    case ST_F16: *a = AK_F16; return AN_OK;
    case ST_BF16: *a = AK_BF16; return AN_OK;
    case ST_F32: *a = AK_F32; return AN_OK;
    default: return AN_EINVAL;
    }
}

/* The number of elements of a shape, false when it overflows. */
static bool shape_elements(const uint64_t *shape, size_t ndim, uint64_t *n)
{
    uint64_t p = 1;
    for (size_t i = 0; i < ndim; i++) {
        if (shape[i] != 0 && p > UINT64_MAX / shape[i]) {
            /* a zero dimension later still makes the product 0 */
            for (size_t j = i; j < ndim; j++)
                if (shape[j] == 0) {
                    *n = 0;
                    return true;
                }
            return false;
        }
        p *= shape[i];
    }
    *n = p;
    return true;
}

/* elements * size, false when it overflows. */
static bool tensor_bytes(const uint64_t *shape, size_t ndim, st_dtype dt, uint64_t *bytes)
{
    uint64_t n;
    const size_t size = st_dtype_size(dt);
    if (!shape_elements(shape, ndim, &n) || size == 0 || n > UINT64_MAX / size) return false;
    *bytes = n * size;
    return true;
}

uint64_t st_tensor_elements(const st_tensor *t)
{
    uint64_t n = 0;
    return t && shape_elements(t->shape, t->ndim, &n) ? n : 0;
}

uint64_t st_tensor_bytes(const st_tensor *t)
{
    uint64_t n = 0;
    return t && tensor_bytes(t->shape, t->ndim, t->dtype, &n) ? n : 0;
}

/* "[2, 3]" into buf. */
static const char *shape_text(const uint64_t *shape, size_t ndim, char *buf, size_t len)
{
    size_t used = (size_t)snprintf(buf, len, "[");
    for (size_t i = 0; i < ndim && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%" PRIu64, i ? ", " : "", shape[i]);
    if (used < len) snprintf(buf + used, len - used, "]");
    return buf;
}

/* JSON integers are signed 64-bit. */
static bool dims_fit_json(const uint64_t *shape, size_t ndim)
{
    for (size_t i = 0; i < ndim; i++)
        if (shape[i] > INT64_MAX) return false;
    return true;
}

/* ---- writing -------------------------------------------------------------------------------- */
/* Stable order by element size, largest first: each tensor then starts at
 * a multiple of its element size (the buffer starts at a multiple of 8). */
static void layout_order(const st_tensor *t, size_t n, size_t *order)
{
    size_t k = 0;
    for (size_t size = 8; size >= 1; size /= 2)
        for (size_t i = 0; i < n; i++)
            if (st_dtype_size(t[i].dtype) == size) order[k++] = i;
}

int st_write(const char *path, const st_tensor *tensors, size_t n, const st_pair *metadata,
             size_t n_metadata, char *msg, size_t msg_len)
{
    if (!path || (!tensors && n > 0) || (!metadata && n_metadata > 0))
        return ut_fail(msg, msg_len, AN_EINVAL, "st_write: path, tensors or metadata is NULL");
    int status = AN_OK;
    json_t *root = json_object(), *meta = n_metadata ? json_object() : NULL;
    size_t *order = malloc((n ? n : 1) * sizeof *order);
    uint64_t *begin = malloc((n ? n : 1) * sizeof *begin);
    char *header = NULL;
    if (!root || (n_metadata && !meta) || !order || !begin) {
        status = ut_fail(msg, msg_len, AN_ENOMEM, "%s: out of memory", path);
        goto done;
    }
    for (size_t i = 0; i < n_metadata && status == AN_OK; i++) {
        const st_pair *p = &metadata[i];
        json_t *v;
        if (!p->key || !p->value)
            status = ut_fail(msg, msg_len, AN_EINVAL, "%s: metadata %zu has a NULL key or value",
                             path, i);
        else if (json_object_get(meta, p->key))
            status =
                ut_fail(msg, msg_len, AN_EINVAL, "%s: metadata key '%s' given twice", path, p->key);
        else if (!(v = json_string(p->value)) || json_object_set_new(meta, p->key, v) != 0)
            status = ut_fail(msg, msg_len, AN_EINVAL, "%s: metadata '%s' is not valid UTF-8", path,
                             p->key); /* json_object_set_new freed v */
    }
    if (status == AN_OK && meta) {
        json_object_set_new(root, "__metadata__", meta);
        meta = NULL;
    }
    /* Offsets, in layout order, after checking every tensor. */
    uint64_t bytes_total = 0;
    for (size_t i = 0; i < n && status == AN_OK; i++) {
        const st_tensor *t = &tensors[i];
        uint64_t bytes;
        if (!t->name)
            status = ut_fail(msg, msg_len, AN_EINVAL, "%s: tensor %zu has no name", path, i);
        else if (strcmp(t->name, "__metadata__") == 0)
            status =
                ut_fail(msg, msg_len, AN_EINVAL, "%s: '__metadata__' is not a tensor name", path);
        else if (!st_dtype_name(t->dtype))
            status = ut_fail(msg, msg_len, AN_EINVAL, "%s: tensor '%s': invalid dtype %d", path,
                             t->name, (int)t->dtype);
        else if (t->ndim > 0 && !t->shape)
            status =
                ut_fail(msg, msg_len, AN_EINVAL, "%s: tensor '%s': shape is NULL", path, t->name);
        else if (!dims_fit_json(t->shape, t->ndim) ||
                 !tensor_bytes(t->shape, t->ndim, t->dtype, &bytes) || bytes > INT64_MAX)
            status =
                ut_fail(msg, msg_len, AN_EINVAL, "%s: tensor '%s': size overflows", path, t->name);
        else if (bytes > 0 && !t->data)
            status =
                ut_fail(msg, msg_len, AN_EINVAL, "%s: tensor '%s': data is NULL", path, t->name);
        else if (bytes_total > INT64_MAX - bytes)
            status = ut_fail(msg, msg_len, AN_EINVAL, "%s: tensors too large", path);
        else
            bytes_total += bytes;
    }
    if (status != AN_OK) goto done;
    layout_order(tensors, n, order);
    uint64_t at = 0;
    for (size_t k = 0; k < n; k++) {
        begin[order[k]] = at;
        at += st_tensor_bytes(&tensors[order[k]]);
    }
    for (size_t i = 0; i < n && status == AN_OK; i++) {
        const st_tensor *t = &tensors[i];
        json_t *entry = json_object(), *shape = json_array(), *offsets = json_array();
        bool ok = entry && shape && offsets;
        if (!ok) {
            json_decref(shape);
            json_decref(offsets);
        } else {
            /* entry takes shape and offsets (even when setting fails), which
             * are then filled through the borrowed pointers */
            ok = json_object_set_new(entry, "dtype", json_string(st_dtype_name(t->dtype))) == 0;
            ok = json_object_set_new(entry, "shape", shape) == 0 && ok;
            ok = json_object_set_new(entry, "data_offsets", offsets) == 0 && ok;
            for (size_t d = 0; ok && d < t->ndim; d++)
                ok = json_array_append_new(shape, json_integer((json_int_t)t->shape[d])) == 0;
            const uint64_t end = begin[i] + st_tensor_bytes(t);
            ok = ok && json_array_append_new(offsets, json_integer((json_int_t)begin[i])) == 0 &&
                 json_array_append_new(offsets, json_integer((json_int_t)end)) == 0;
        }
        if (!ok) {
            json_decref(entry);
            status = ut_fail(msg, msg_len, AN_ENOMEM, "%s: out of memory", path);
        } else if (json_object_get(root, t->name)) {
            json_decref(entry);
            status =
                ut_fail(msg, msg_len, AN_EINVAL, "%s: tensor name '%s' given twice", path, t->name);
        } else if (json_object_set_new(root, t->name, entry) != 0) {
            status = ut_fail(msg, msg_len, AN_EINVAL, "%s: tensor name '%s' is not valid UTF-8",
                             path, t->name);
        }
    }
    if (status != AN_OK) goto done;
    header = json_dumps(root, JSON_COMPACT);
    if (!header) {
        status = ut_fail(msg, msg_len, AN_ENOMEM, "%s: json_dumps failed", path);
        goto done;
    }
    const size_t len = strlen(header), padded = (len + 7) / 8 * 8;
    unsigned char le[8];
    for (int b = 0; b < 8; b++)
        le[b] = (unsigned char)((uint64_t)padded >> (8 * b));
    af_file f;
    if ((status = af_begin(&f, path, msg, msg_len)) != AN_OK) goto done;
    af_put(&f, le, 8);
    af_put(&f, header, len);
    af_put(&f, "       ", padded - len);
    for (size_t k = 0; k < n; k++)
        af_put(&f, tensors[order[k]].data, (size_t)st_tensor_bytes(&tensors[order[k]]));
    status = af_commit(&f, msg, msg_len);
done:
    free(header);
    free(order);
    free(begin);
    json_decref(meta);
    json_decref(root);
    return status;
}

/* ---- reading -------------------------------------------------------------------------------- */
struct st_file {
    char *path;
    unsigned char *bytes; /* the whole file */
    json_t *header;       /* owns the names and metadata strings */
    size_t n;
    st_tensor *tensors;
    uint64_t *dims; /* every tensor's shape, one after the other */
    void **copies;  /* aligned copies of tensors the file leaves misaligned, else NULL */
    size_t n_meta;
    st_pair *meta;
};

void st_close(st_file *f)
{
    if (!f) return;
    for (size_t i = 0; f->copies && i < f->n; i++)
        free(f->copies[i]);
    free(f->copies);
    free(f->tensors);
    free(f->dims);
    free(f->meta);
    json_decref(f->header);
    free(f->bytes);
    free(f->path);
    free(f);
}

/* Reads path into *bytes after checking its 8-byte header length against
 * the file's size, so that a corrupt length fails before anything large is
 * allocated. */
static int read_file(const char *path, unsigned char **bytes, size_t *size, uint64_t *header_len,
                     char *msg, size_t msg_len)
{
    FILE *in = fopen(path, "rb");
    if (!in) return ut_fail(msg, msg_len, AN_EIO, "%s: cannot open: %s", path, strerror(errno));
    int status = AN_OK;
    struct stat st;
    unsigned char len8[8];
    if (fstat(fileno(in), &st) != 0 || !S_ISREG(st.st_mode)) {
        status = ut_fail(msg, msg_len, AN_EIO, "%s: not a regular file", path);
        goto done;
    }
    *size = (size_t)st.st_size;
    if (*size < 8) {
        status = ut_fail(msg, msg_len, AN_EFORMAT,
                         "%s: %zu bytes is too short: a safetensors file starts with an 8-byte "
                         "header length",
                         path, *size);
        goto done;
    }
    if (fread(len8, 1, 8, in) != 8) {
        status = ut_fail(msg, msg_len, AN_EIO, "%s: read: %s", path, strerror(errno));
        goto done;
    }
    *header_len = 0;
    for (int b = 7; b >= 0; b--)
        *header_len = *header_len << 8 | len8[b];
    if (*header_len > *size - 8) {
        status = ut_fail(msg, msg_len, AN_EFORMAT,
                         "%s: header length %" PRIu64 " exceeds the %zu bytes that follow it", path,
                         *header_len, *size - 8);
        goto done;
    }
    if (*header_len > ST_HEADER_MAX) {
        status = ut_fail(msg, msg_len, AN_EFORMAT,
                         "%s: header length %" PRIu64 " exceeds the limit of %u bytes", path,
                         *header_len, ST_HEADER_MAX);
        goto done;
    }
    *bytes = malloc(*size);
    if (!*bytes) {
        status = ut_fail(msg, msg_len, AN_ENOMEM, "%s: out of memory for %zu bytes", path, *size);
        goto done;
    }
    memcpy(*bytes, len8, 8);
    const size_t got = fread(*bytes + 8, 1, *size - 8, in);
    if (got != *size - 8) {
        status = ut_fail(msg, msg_len, AN_EIO, "%s: read %zu of %zu bytes: %s", path, got + 8,
                         *size, ferror(in) ? strerror(errno) : "the file shrank");
        free(*bytes);
        *bytes = NULL;
    }
done:
    fclose(in);
    return status;
}

/* A non-negative JSON integer. */
static bool get_uint(json_t *v, uint64_t *u)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0) return false;
    *u = (uint64_t)json_integer_value(v);
    return true;
}

typedef struct span {
    uint64_t begin, end;
    size_t tensor;
} span;

static int span_cmp(const void *a, const void *b)
{
    const span *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}

/* Checks one tensor entry and fills t (dims receives its shape). */
static int read_entry(const st_file *f, const char *name, json_t *e, st_tensor *t, uint64_t *dims,
                      span *sp, uint64_t buffer_size, char *msg, size_t msg_len)
{
    const char *path = f->path;
    if (!json_is_object(e))
        return ut_fail(msg, msg_len, AN_EFORMAT, "%s: tensor '%s': not an object", path, name);
    const char *key;
    json_t *v;
    json_object_foreach(e, key, v)
    {
        if (strcmp(key, "dtype") != 0 && strcmp(key, "shape") != 0 &&
            strcmp(key, "data_offsets") != 0)
            return ut_fail(msg, msg_len, AN_EFORMAT, "%s: tensor '%s': unexpected field \"%s\"",
                           path, name, key);
    }
    json_t *dtype = json_object_get(e, "dtype"), *shape = json_object_get(e, "shape"),
           *offsets = json_object_get(e, "data_offsets");
    if (!dtype || !shape || !offsets)
        return ut_fail(msg, msg_len, AN_EFORMAT, "%s: tensor '%s': missing \"%s\"", path, name,
                       !dtype   ? "dtype"
                       : !shape ? "shape"
                                : "data_offsets");
    if (!json_is_string(dtype) || st_dtype_parse(json_string_value(dtype), &t->dtype) != AN_OK)
        return ut_fail(msg, msg_len, AN_EFORMAT, "%s: tensor '%s': unknown dtype %s%s%s", path,
                       name, json_is_string(dtype) ? "'" : "(not a string)",
                       json_is_string(dtype) ? json_string_value(dtype) : "",
                       json_is_string(dtype) ? "'" : "");
    if (!json_is_array(shape))
        return ut_fail(msg, msg_len, AN_EFORMAT, "%s: tensor '%s': shape is not an array", path,
                       name);
    t->ndim = json_array_size(shape);
    for (size_t d = 0; d < t->ndim; d++)
        if (!get_uint(json_array_get(shape, d), &dims[d]))
            return ut_fail(msg, msg_len, AN_EFORMAT,
                           "%s: tensor '%s': shape[%zu] is not a non-negative integer", path, name,
                           d);
    t->shape = dims;
    if (!json_is_array(offsets) || json_array_size(offsets) != 2 ||
        !get_uint(json_array_get(offsets, 0), &sp->begin) ||
        !get_uint(json_array_get(offsets, 1), &sp->end))
        return ut_fail(msg, msg_len, AN_EFORMAT,
                       "%s: tensor '%s': data_offsets is not two non-negative integers", path,
                       name);
    char text[256];
    uint64_t bytes;
    if (!tensor_bytes(dims, t->ndim, t->dtype, &bytes))
        return ut_fail(msg, msg_len, AN_EFORMAT, "%s: tensor '%s': shape %s of %s overflows", path,
                       name, shape_text(dims, t->ndim, text, sizeof text), st_dtype_name(t->dtype));
    if (sp->end < sp->begin)
        return ut_fail(msg, msg_len, AN_EFORMAT,
                       "%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] end before they "
                       "begin",
                       path, name, sp->begin, sp->end);
    if (bytes != sp->end - sp->begin)
        return ut_fail(msg, msg_len, AN_EFORMAT,
                       "%s: tensor '%s': shape %s of %s takes %" PRIu64
                       " bytes, data_offsets [%" PRIu64 ", %" PRIu64 "] hold %" PRIu64,
                       path, name, shape_text(dims, t->ndim, text, sizeof text),
                       st_dtype_name(t->dtype), bytes, sp->begin, sp->end, sp->end - sp->begin);
    if (sp->end > buffer_size)
        return ut_fail(msg, msg_len, AN_EFORMAT,
                       "%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] go past the end "
                       "of the %" PRIu64 "-byte data buffer",
                       path, name, sp->begin, sp->end, buffer_size);
    t->name = name;
    return AN_OK;
}

/* The spans, sorted, must tile [0, buffer_size) exactly. */
static int check_tiling(const st_file *f, span *sp, size_t n, uint64_t buffer_size, char *msg,
                        size_t msg_len)
{
    qsort(sp, n, sizeof *sp, span_cmp);
    uint64_t at = 0;
    for (size_t k = 0; k < n; k++) {
        if (sp[k].begin < at)
            return ut_fail(msg, msg_len, AN_EFORMAT,
                           "%s: tensors '%s' [%" PRIu64 ", %" PRIu64 "] and '%s' [%" PRIu64
                           ", %" PRIu64 "] overlap",
                           f->path, f->tensors[sp[k - 1].tensor].name, sp[k - 1].begin,
                           sp[k - 1].end, f->tensors[sp[k].tensor].name, sp[k].begin, sp[k].end);
        if (sp[k].begin > at)
            return ut_fail(msg, msg_len, AN_EFORMAT,
                           "%s: bytes [%" PRIu64 ", %" PRIu64 ") of the data buffer, before "
                           "tensor '%s', belong to no tensor",
                           f->path, at, sp[k].begin, f->tensors[sp[k].tensor].name);
        at = sp[k].end;
    }
    if (at != buffer_size)
        return ut_fail(msg, msg_len, AN_EFORMAT,
                       "%s: bytes [%" PRIu64 ", %" PRIu64 ") at the end of the data buffer belong "
                       "to no tensor",
                       f->path, at, buffer_size);
    return AN_OK;
}

st_file *st_open(const char *path, char *msg, size_t msg_len)
{
    if (!path) {
        ut_fail(msg, msg_len, AN_EINVAL, "st_open: path is NULL");
        return NULL;
    }
    st_file *f = calloc(1, sizeof *f);
    if (f) f->path = malloc(strlen(path) + 1);
    if (!f || !f->path) {
        free(f);
        ut_fail(msg, msg_len, AN_ENOMEM, "%s: out of memory", path);
        return NULL;
    }
    strcpy(f->path, path);
    span *sp = NULL;
    size_t size = 0;
    uint64_t header_len = 0;
    if (read_file(path, &f->bytes, &size, &header_len, msg, msg_len) != AN_OK) goto fail;
    const char *text = (const char *)f->bytes + 8;
    if (header_len == 0 || text[0] != '{') {
        ut_fail(msg, msg_len, AN_EFORMAT, "%s: the header does not start with '{'", path);
        goto fail;
    }
    json_error_t err;
    f->header = json_loadb(text, (size_t)header_len, JSON_REJECT_DUPLICATES, &err);
    if (!f->header) {
        ut_fail(msg, msg_len, AN_EFORMAT, "%s: header, line %d, column %d: %s", path, err.line,
                err.column, err.text);
        goto fail;
    }
    const uint64_t buffer_size = size - 8 - header_len;
    const unsigned char *buffer = f->bytes + 8 + header_len;

    /* Count, then fill: metadata and tensors. */
    const size_t entries = json_object_size(f->header);
    json_t *meta = json_object_get(f->header, "__metadata__");
    size_t total_dims = 0;
    const char *key;
    json_t *v;
    json_object_foreach(f->header, key, v)
    {
        if (v != meta && json_is_object(v) && json_is_array(json_object_get(v, "shape")))
            total_dims += json_array_size(json_object_get(v, "shape"));
    }
    f->n = entries - (meta != NULL);
    if (meta) {
        if (!json_is_object(meta)) {
            ut_fail(msg, msg_len, AN_EFORMAT, "%s: __metadata__ is not an object", path);
            goto fail;
        }
        f->n_meta = json_object_size(meta);
    }
    f->tensors = calloc(f->n ? f->n : 1, sizeof *f->tensors);
    f->copies = calloc(f->n ? f->n : 1, sizeof *f->copies);
    f->dims = calloc(total_dims ? total_dims : 1, sizeof *f->dims);
    f->meta = calloc(f->n_meta ? f->n_meta : 1, sizeof *f->meta);
    sp = calloc(f->n ? f->n : 1, sizeof *sp);
    if (!f->tensors || !f->copies || !f->dims || !f->meta || !sp) {
        ut_fail(msg, msg_len, AN_ENOMEM, "%s: out of memory", path);
        goto fail;
    }
    size_t m = 0;
    if (meta) {
        json_object_foreach(meta, key, v)
        {
            if (!json_is_string(v)) {
                ut_fail(msg, msg_len, AN_EFORMAT, "%s: __metadata__ '%s' is not a string", path,
                        key);
                goto fail;
            }
            f->meta[m].key = key;
            f->meta[m].value = json_string_value(v);
            m++;
        }
    }
    size_t i = 0, d = 0;
    json_object_foreach(f->header, key, v)
    {
        if (v == meta) continue;
        if (read_entry(f, key, v, &f->tensors[i], f->dims + d, &sp[i], buffer_size, msg, msg_len) !=
            AN_OK)
            goto fail;
        sp[i].tensor = i;
        d += f->tensors[i].ndim;
        i++;
    }
    if (check_tiling(f, sp, f->n, buffer_size, msg, msg_len) != AN_OK) goto fail;
    for (size_t k = 0; k < f->n; k++) {
        st_tensor *t = &f->tensors[sp[k].tensor];
        const unsigned char *data = buffer + sp[k].begin;
        const size_t bytes = (size_t)(sp[k].end - sp[k].begin);
        /* Another writer may leave a tensor misaligned; callers read it as
         * float * and the like, so they get an aligned copy. */
        if ((uintptr_t)data % st_dtype_size(t->dtype) != 0) {
            void *copy = malloc(bytes);
            if (!copy) {
                ut_fail(msg, msg_len, AN_ENOMEM, "%s: out of memory", path);
                goto fail;
            }
            memcpy(copy, data, bytes);
            f->copies[sp[k].tensor] = copy;
            data = copy;
        }
        t->data = data;
    }
    free(sp);
    return f;
fail:
    free(sp);
    st_close(f);
    return NULL;
}

const st_tensor *st_find(const st_file *f, const char *name)
{
    for (size_t i = 0; f && name && i < f->n; i++)
        if (strcmp(f->tensors[i].name, name) == 0) return &f->tensors[i];
    return NULL;
}

size_t st_count(const st_file *f) { return f ? f->n : 0; }

const st_tensor *st_at(const st_file *f, size_t i) { return f && i < f->n ? &f->tensors[i] : NULL; }

const char *st_metadata_get(const st_file *f, const char *key)
{
    for (size_t i = 0; f && key && i < f->n_meta; i++)
        if (strcmp(f->meta[i].key, key) == 0) return f->meta[i].value;
    return NULL;
}

size_t st_metadata_count(const st_file *f) { return f ? f->n_meta : 0; }

const st_pair *st_metadata_at(const st_file *f, size_t i)
{
    return f && i < f->n_meta ? &f->meta[i] : NULL;
}

int st_expect(const st_file *f, const char *name, st_dtype dtype, size_t ndim,
              const uint64_t *shape, const st_tensor **t, char *msg, size_t msg_len)
{
    if (!f || !name || !t || (ndim > 0 && !shape))
        return ut_fail(msg, msg_len, AN_EINVAL, "st_expect: NULL argument");
    *t = st_find(f, name);
    if (!*t) return ut_fail(msg, msg_len, AN_EFORMAT, "%s: no tensor '%s'", f->path, name);
    char got[256], want[256];
    if ((*t)->dtype != dtype)
        return ut_fail(msg, msg_len, AN_EFORMAT, "%s: tensor '%s' is %s, expected %s", f->path,
                       name, st_dtype_name((*t)->dtype),
                       st_dtype_name(dtype) ? st_dtype_name(dtype) : "?");
    bool same = (*t)->ndim == ndim;
    for (size_t i = 0; same && i < ndim; i++)
        same = (*t)->shape[i] == shape[i];
    if (!same)
        return ut_fail(msg, msg_len, AN_EFORMAT, "%s: tensor '%s' has shape %s, expected %s",
                       f->path, name, shape_text((*t)->shape, (*t)->ndim, got, sizeof got),
                       shape_text(shape, ndim, want, sizeof want));
    return AN_OK;
}
