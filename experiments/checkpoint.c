/* checkpoint.c: model weights and run state in safetensors files (checkpoint.h). */
#include "atomic_file.h" /* ut_fail */
#include "checkpoint.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "safetensors.h"

/* Format 2 adds "data_crc32"; format 1 files (no checksum) are refused. */
#define CKPT_FORMAT 2

/* ---- the checksum of the tensor data ------------------------------------------------- */
static int by_name(const void *a, const void *b)
{
    return strcmp((*(const st_tensor *const *)a)->name, (*(const st_tensor *const *)b)->name);
}

/* zlib's CRC-32 of the tensors' bytes, tensor after tensor in the order of
 * their names (strcmp), so that it does not depend on the file's layout.  -1
 * when out of memory. */
static int64_t tensors_crc32(const st_tensor *const *tensors, size_t n)
{
    const st_tensor **sorted = malloc((n ? n : 1) * sizeof *sorted);
    if (!sorted) return -1;
    memcpy(sorted, tensors, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, by_name);
    uLong crc = crc32(0L, Z_NULL, 0);
    for (size_t i = 0; i < n; i++) {
        const unsigned char *p = sorted[i]->data;
        for (uint64_t left = st_tensor_bytes(sorted[i]); left > 0;) {
            const uInt chunk = left > (1u << 30) ? (1u << 30) : (uInt)left;
            crc = crc32(crc, p, chunk);
            p += chunk;
            left -= chunk;
        }
    }
    free(sorted);
    return (int64_t)(crc & 0xffffffffu);
}

/* Checks f's "data_crc32" against its tensor data; a file without one
 * passes when required is false (weights from another program). */
static int check_crc32(const st_file *f, const char *path, bool required, char *msg, size_t len)
{
    const char *text = st_metadata_get(f, "data_crc32");
    if (!text && !required) return 0;
    if (!text || strlen(text) != 8 || strspn(text, "0123456789abcdef") != 8)
        return ut_fail(msg, len, -1, "%s: metadata 'data_crc32' is %s%s%s, expected 8 hex digits",
                       path, text ? "'" : "missing", text ? text : "", text ? "'" : "");
    const size_t n = st_count(f);
    const st_tensor **all = malloc((n ? n : 1) * sizeof *all);
    if (!all) return ut_fail(msg, len, -1, "%s: out of memory", path);
    for (size_t i = 0; i < n; i++)
        all[i] = st_at(f, i);
    const int64_t got = tensors_crc32(all, n);
    free(all);
    if (got < 0) return ut_fail(msg, len, -1, "%s: out of memory", path);
    if ((unsigned long)got != strtoul(text, NULL, 16))
        return ut_fail(msg, len, -1,
                       "%s: the tensor data's CRC-32 is %08lx, the metadata say %s: the file is "
                       "damaged",
                       path, (unsigned long)got, text);
    return 0;
}

/* A parameter's shape as PyTorch has it (its kind says: (out, in), OIHW,
 * (out) for a bias). */
static size_t param_shape(const model_param *p, uint64_t shape[4])
{
    for (size_t d = 0; d < p->spec.ndim; d++)
        shape[d] = p->spec.shape[d];
    return p->spec.ndim;
}

/* ---- what a checkpoint holds, one entry per tensor ------------------------------------ */
typedef struct entry {
    char name[96];
    ak_tensor t; /* backend tensor */
    st_dtype dtype;
    size_t ndim;
    uint64_t shape[4];
    void *host; /* staging copy */
} entry;

/* The tensors of m, in a fixed order; returns the count. */
static size_t entries_of(model *m, entry *e)
{
    size_t n = 0;
    for (int i = 0; i < m->n_tensors; i++) {
        model_param *p = &m->params[i];
        struct {
            const char *prefix, *suffix;
            ak_tensor t;
        } parts[] = {
            {"", "", p->wlow.data ? p->wlow : p->w32},
            {"master.", "", p->wlow.data ? p->w32 : ak_tensor_none()},
            {"optimizer.", p->v.data ? ".exp_avg" : ".momentum_buffer", p->m},
            {"optimizer.", ".exp_avg_sq", p->v},
        };
        for (size_t k = 0; k < sizeof parts / sizeof parts[0]; k++) {
            if (!parts[k].t.data) continue;
            entry *x = &e[n++];
            memset(x, 0, sizeof *x);
            snprintf(x->name, sizeof x->name, "%s%s%s", parts[k].prefix, p->name, parts[k].suffix);
            x->t = parts[k].t;
            st_dtype_from_ak(parts[k].t.dtype, &x->dtype);
            x->ndim = param_shape(p, x->shape);
        }
    }
    return n;
}

#define CKPT_MAX_ENTRIES (4 * MODEL_MAX_PARAMS)

/* ---- metadata: every number as text that reads back exactly ---------------------------- */
typedef struct meta {
    char keys[40][40];
    char values[40][48];
    st_pair pairs[40];
    size_t n;
} meta;

static void put_i(meta *md, const char *key, int64_t v)
{
    snprintf(md->keys[md->n], sizeof md->keys[0], "%s", key);
    snprintf(md->values[md->n], sizeof md->values[0], "%" PRId64, v);
    md->n++;
}

static void put_d(meta *md, const char *key, double v)
{
    snprintf(md->keys[md->n], sizeof md->keys[0], "%s", key);
    snprintf(md->values[md->n], sizeof md->values[0], "%a", v); /* exact */
    md->n++;
}

static void put_s(meta *md, const char *key, const char *v)
{
    snprintf(md->keys[md->n], sizeof md->keys[0], "%s", key);
    snprintf(md->values[md->n], sizeof md->values[0], "%s", v);
    md->n++;
}

static int get_s(const st_file *f, const char *path, const char *key, char *v, size_t v_len,
                 char *msg, size_t len)
{
    const char *s = st_metadata_get(f, key);
    if (!s || !*s) return ut_fail(msg, len, -1, "%s: metadata '%s' is missing", path, key);
    if (strlen(s) >= v_len)
        return ut_fail(msg, len, -1, "%s: metadata '%s' is too long: '%.64s...'", path, key, s);
    memcpy(v, s, strlen(s) + 1);
    return 0;
}

static int get_i(const st_file *f, const char *path, const char *key, int64_t *v, char *msg,
                 size_t len)
{
    const char *s = st_metadata_get(f, key);
    char *end;
    if (!s || !*s) return ut_fail(msg, len, -1, "%s: metadata '%s' is missing", path, key);
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (*end || errno)
        return ut_fail(msg, len, -1, "%s: metadata '%s' is not a 64-bit integer: '%s'", path, key,
                       s);
    *v = x;
    return 0;
}

static int get_d(const st_file *f, const char *path, const char *key, double *v, char *msg,
                 size_t len)
{
    const char *s = st_metadata_get(f, key);
    char *end;
    if (!s || !*s) return ut_fail(msg, len, -1, "%s: metadata '%s' is missing", path, key);
    *v = strtod(s, &end);
    if (*end) return ut_fail(msg, len, -1, "%s: metadata '%s' is not a number: '%s'", path, key, s);
    return 0;
}

int ckpt_save(const char *path, model *m, const ckpt_state *s, char *msg, size_t msg_len)
{
    entry e[CKPT_MAX_ENTRIES];
    const size_t n = entries_of(m, e);
    st_tensor t[CKPT_MAX_ENTRIES];
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        const size_t bytes = e[i].t.n * ak_dtype_size(e[i].t.dtype);
        e[i].host = malloc(bytes ? bytes : 1);
        if (!e[i].host)
            rc = ut_fail(msg, msg_len, -1, "%s: out of memory", path);
        else if (ak_to_host(m->b, e[i].host, e[i].t.data, bytes) != 0)
            rc = ut_fail(msg, msg_len, -1, "%s: reading %s: %s", path, e[i].name,
                         ak_error_text(m->b));
        t[i].name = e[i].name;
        t[i].dtype = e[i].dtype;
        t[i].ndim = e[i].ndim;
        t[i].shape = e[i].shape;
        t[i].data = e[i].host;
    }
    meta md;
    memset(&md, 0, sizeof md);
    put_i(&md, "format", CKPT_FORMAT);
    if (!rc) {
        const st_tensor *all[CKPT_MAX_ENTRIES];
        for (size_t i = 0; i < n; i++)
            all[i] = &t[i];
        const int64_t crc = tensors_crc32(all, n);
        char hex[16];
        snprintf(hex, sizeof hex, "%08lx", (unsigned long)crc);
        if (crc < 0) rc = ut_fail(msg, msg_len, -1, "%s: out of memory", path);
        put_s(&md, "data_crc32", hex);
    }
    put_i(&md, "step", s->step);
    put_i(&md, "epoch", s->epoch);
    put_i(&md, "batch", s->batch);
    put_i(&md, "sr_index", (int64_t)s->sr_index);
    put_i(&md, "skips", s->skips);
    put_d(&md, "scale_used", s->scale_used);
    put_i(&md, "optimizer.step", s->opt.step);
    put_d(&md, "optimizer.beta1_pow", s->opt.beta1_pow);
    put_d(&md, "optimizer.beta2_pow", s->opt.beta2_pow);
    const ak_scaler_state *c = &s->scaler;
    put_d(&md, "scaler.scale", c->scale);
    put_d(&md, "scaler.inv_scale", c->inv_scale);
    put_d(&md, "scaler.skip", c->skip);
    put_i(&md, "scaler.hysteresis_left", c->hysteresis_left);
    put_i(&md, "scaler.good", c->good);
    put_i(&md, "scaler.steps", c->steps);
    put_i(&md, "scaler.overflows", c->overflows);
    put_i(&md, "scaler.skipped", c->skipped);
    put_i(&md, "scaler.growths", c->growths);
    put_i(&md, "scaler.backoffs", c->backoffs);
    put_i(&md, "scaler.overflows_in_a_row", c->overflows_in_a_row);
    put_d(&md, "scaler.master_scale", c->master_scale);
    put_s(&md, "run.net", s->run.net);
    put_s(&md, "run.mode", s->run.mode);
    put_s(&md, "run.dtype", s->run.dtype);
    put_i(&md, "run.batch", s->run.batch);
    put_d(&md, "run.lr", s->run.lr);
    put_i(&md, "run.seed", (int64_t)s->run.seed);
    for (size_t i = 0; i < md.n; i++) {
        md.pairs[i].key = md.keys[i];
        md.pairs[i].value = md.values[i];
    }
    char why[512];
    if (!rc && st_write(path, t, n, md.pairs, md.n, why, sizeof why) != 0)
        rc = ut_fail(msg, msg_len, -1, "%s", why);
    for (size_t i = 0; i < n; i++)
        free(e[i].host);
    return rc;
}

int ckpt_load(const char *path, model *m, ckpt_state *s, char *msg, size_t msg_len)
{
    char why[512];
    st_file *f = st_open(path, why, sizeof why);
    if (!f) return ut_fail(msg, msg_len, -1, "%s", why);
    entry e[CKPT_MAX_ENTRIES];
    const size_t n = entries_of(m, e);
    int64_t v, format = 0;
    int rc = get_i(f, path, "format", &format, msg, msg_len);
    if (!rc && format == 1)
        rc = ut_fail(msg, msg_len, -1,
                     "%s: checkpoint format 1 carries no checksum of its tensor data, and this "
                     "ampscope resumes only checkpoints it can verify (format %d): start the run "
                     "again",
                     path, CKPT_FORMAT);
    else if (!rc && format != CKPT_FORMAT)
        rc = ut_fail(msg, msg_len, -1, "%s: checkpoint format %lld, expected %d", path,
                     (long long)format, CKPT_FORMAT);
    if (!rc) rc = check_crc32(f, path, true, msg, msg_len);
    for (size_t i = 0; i < n && !rc; i++) {
        const st_tensor *t;
        if (st_expect(f, e[i].name, e[i].dtype, e[i].ndim, e[i].shape, &t, why, sizeof why) != 0)
            rc = ut_fail(msg, msg_len, -1,
                         "%s (was it written by the same --net, --mode and --dtype?)", why);
        else if (ak_to_device(m->b, e[i].t.data, t->data, st_tensor_bytes(t)) != 0)
            rc = ut_fail(msg, msg_len, -1, "%s: %s", path, ak_error_text(m->b));
    }
    memset(s, 0, sizeof *s);
    double d;
#define GET_I(key, field)                                                                          \
    if (!rc && (rc = get_i(f, path, key, &v, msg, msg_len)) == 0) field = v
#define GET_D(key, field)                                                                          \
    if (!rc && (rc = get_d(f, path, key, &d, msg, msg_len)) == 0) field = d
    GET_I("step", s->step);
    GET_I("epoch", s->epoch);
    GET_I("batch", s->batch);
    GET_I("sr_index", s->sr_index);
    GET_I("skips", s->skips);
    GET_D("scale_used", s->scale_used);
    GET_I("optimizer.step", s->opt.step);
    GET_D("optimizer.beta1_pow", s->opt.beta1_pow);
    GET_D("optimizer.beta2_pow", s->opt.beta2_pow);
    ak_scaler_state *c = &s->scaler;
    GET_D("scaler.scale", c->scale);
    GET_D("scaler.inv_scale", c->inv_scale);
    GET_D("scaler.skip", c->skip);
    GET_I("scaler.hysteresis_left", c->hysteresis_left);
    GET_I("scaler.good", c->good);
    GET_I("scaler.steps", c->steps);
    GET_I("scaler.overflows", c->overflows);
    GET_I("scaler.skipped", c->skipped);
    GET_I("scaler.growths", c->growths);
    GET_I("scaler.backoffs", c->backoffs);
    GET_I("scaler.overflows_in_a_row", c->overflows_in_a_row);
    /* the framework's own number (a double scale may pass fp32's maximum,
     * where scale is inf): required, as every format-2 key is */
    GET_D("scaler.master_scale", c->master_scale);
    if (!rc) rc = get_s(f, path, "run.net", s->run.net, sizeof s->run.net, msg, msg_len);
    if (!rc) rc = get_s(f, path, "run.mode", s->run.mode, sizeof s->run.mode, msg, msg_len);
    if (!rc) rc = get_s(f, path, "run.dtype", s->run.dtype, sizeof s->run.dtype, msg, msg_len);
    GET_I("run.batch", s->run.batch);
    GET_D("run.lr", s->run.lr);
    GET_I("run.seed", s->run.seed);
#undef GET_I
#undef GET_D
    if (!rc && (s->step < 0 || s->epoch < 0 || s->batch < 0))
        rc = ut_fail(msg, msg_len, -1, "%s: negative step, epoch or batch in the metadata", path);
    st_close(f);
    return rc;
}

int ckpt_load_weights(const char *path, model *m, char *msg, size_t msg_len)
{
    char why[512];
    st_file *f = st_open(path, why, sizeof why);
    if (!f) return ut_fail(msg, msg_len, -1, "%s", why);
    /* an ampscope checkpoint carries its checksum; other programs' files need none */
    int rc = check_crc32(f, path, false, msg, msg_len);
    for (int i = 0; i < m->n_tensors && !rc; i++) {
        model_param *p = &m->params[i];
        uint64_t shape[4];
        const size_t ndim = param_shape(p, shape);
        const st_tensor *t = st_find(f, p->name);
        if (!t) {
            rc = ut_fail(msg, msg_len, -1, "%s: no tensor '%s' (%s needs every parameter)", path,
                         p->name, m->net.name);
            break;
        }
        ak_dtype dt;
        if (st_dtype_to_ak(t->dtype, &dt) != 0) {
            rc = ut_fail(msg, msg_len, -1, "%s: tensor '%s' is %s; expected F32, F16 or BF16", path,
                         p->name, st_dtype_name(t->dtype));
            break;
        }
        const st_tensor *checked;
        if (st_expect(f, p->name, t->dtype, ndim, shape, &checked, why, sizeof why) != 0) {
            rc = ut_fail(msg, msg_len, -1, "%s", why);
            break;
        }
        /* widen to fp32 exactly on the backend, then write every copy */
        ak_tensor stage_in, stage32;
        float *host = malloc(p->n * sizeof *host);
        int k = ak_alloc_tensor(m->b, p->n, dt, &stage_in);
        if (!k) k = ak_alloc_tensor(m->b, p->n, AK_F32, &stage32);
        if (!k) k = ak_to_device(m->b, stage_in.data, t->data, st_tensor_bytes(t));
        if (!k) k = ak_cast(m->b, stage32, stage_in, NULL);
        if (!k && host) k = ak_to_host(m->b, host, stage32.data, p->n * sizeof *host);
        /* widening is exact: a NaN or an infinity is the file's */
        size_t bad = p->n;
        for (size_t j = 0; !k && host && j < p->n && bad == p->n; j++)
            if (!isfinite(host[j])) bad = j;
        if (!k && host && bad < p->n)
            rc = ut_fail(msg, msg_len, -1, "%s: tensor %s has %s at index %zu", path, p->name,
                         isnan(host[bad]) ? "nan"
                         : host[bad] > 0  ? "inf"
                                          : "-inf",
                         bad);
        else if (!k && host)
            k = model_set_param(m, p, host);
        if (!rc && (k || !host))
            rc = ut_fail(msg, msg_len, -1, "%s: loading '%s': %s", path, p->name,
                         host ? ak_error_text(m->b) : "out of memory");
        ak_free(m->b, stage_in.data);
        ak_free(m->b, stage32.data);
        free(host);
    }
    st_close(f);
    return rc;
}

/* Writes params[first, last) of m: their gradients (grads), else their fp32 values. */
static int save_tensors(const char *path, model *m, int first, int last, bool grads, char *msg,
                        size_t msg_len)
{
    st_tensor t[MODEL_MAX_PARAMS] = {{0}};
    uint64_t shapes[MODEL_MAX_PARAMS][4];
    void *host[MODEL_MAX_PARAMS] = {0};
    const int n = last - first;
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        model_param *p = &m->params[first + i];
        const ak_tensor src = grads ? p->grad : p->w32;
        const size_t bytes = p->n * ak_dtype_size(src.dtype);
        host[i] = malloc(bytes);
        if (!host[i])
            rc = ut_fail(msg, msg_len, -1, "%s: out of memory", path);
        else if (ak_to_host(m->b, host[i], src.data, bytes) != 0)
            rc =
                ut_fail(msg, msg_len, -1, "%s: reading %s: %s", path, p->name, ak_error_text(m->b));
        t[i].name = p->name;
        st_dtype_from_ak(src.dtype, &t[i].dtype);
        t[i].ndim = param_shape(p, shapes[i]);
        t[i].shape = shapes[i];
        t[i].data = host[i];
    }
    char why[512];
    if (!rc && st_write(path, t, (size_t)n, NULL, 0, why, sizeof why) != 0)
        rc = ut_fail(msg, msg_len, -1, "%s", why);
    for (int i = 0; i < n; i++)
        free(host[i]);
    return rc;
}

int ckpt_save_grads(const char *path, model *m, char *msg, size_t msg_len)
{
    return save_tensors(path, m, 0, m->n_params, true, msg, msg_len);
}

int ckpt_save_buffers(const char *path, model *m, char *msg, size_t msg_len)
{
    return save_tensors(path, m, m->n_params, m->n_tensors, false, msg, msg_len);
}
