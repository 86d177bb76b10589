/* kernels.c: opening a backend, errors, argument checks and the memory
 * operations' public wrappers.  Each other operation's wrapper lives in
 * kernels/<op>.c beside nothing else. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"

#if defined(AK_HAVE_CUDA)
/* cuda/backend.cu: fills b (device name, stream, handles) or returns
 * AK_ENODEV/AK_EDEVICE with the reason in why. */
int ak_cuda_open(ak_backend *b, char *why, size_t why_len);
void ak_cuda_close(ak_backend *b);
#endif

size_t ak_dtype_size(ak_dtype dt)
{
    switch (dt) {
    case AK_F16:
    case AK_BF16: return 2;
    case AK_F32: return 4;
    }
    return 0;
}

const char *ak_dtype_name(ak_dtype dt)
{
    switch (dt) {
    case AK_F16: return "fp16";
    case AK_BF16: return "bf16";
    case AK_F32: return "fp32";
    }
    return "?";
}

const char *ak_compute_name(ak_compute c)
{
    switch (c) {
    case AK_COMPUTE_32F: return "32F";
    case AK_COMPUTE_16F: return "16F";
    case AK_COMPUTE_32F_FAST_16F: return "32F_FAST_16F";
    case AK_COMPUTE_32F_FAST_16BF: return "32F_FAST_16BF";
    case AK_COMPUTE_32F_FAST_TF32: return "32F_FAST_TF32";
    }
    return "?";
}

bool ak_cuda_built(void)
{
#if defined(AK_HAVE_CUDA)
    return true;
#else
    return false;
#endif
}

int ak_fail(ak_backend *b, int code, const char *call, const char *fmt, ...)
{
    if (!b) return code;
    int used = snprintf(b->error, sizeof b->error, "%s: ", call);
    b->error_at = 0;
    if (used < 0 || (size_t)used >= sizeof b->error) return code;
    b->error_at = (size_t)used;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->error + used, sizeof b->error - (size_t)used, fmt, ap);
    va_end(ap);
    return code;
}

static void set_msg(char *msg, size_t len, const char *fmt, ...)
{
    if (!msg || len == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, len, fmt, ap);
    va_end(ap);
}

static void cpu_model_name(char *out, size_t len)
{
    snprintf(out, len, "CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            const char *colon = strchr(line, ':');
            if (colon) {
                colon++;
                while (*colon == ' ' || *colon == '\t')
                    colon++;
                snprintf(out, len, "%s", colon);
                out[strcspn(out, "\n")] = '\0';
            }
            break;
        }
    }
    fclose(f);
}

static ak_backend *open_cpu(void)
{
    ak_backend *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    b->kind = AK_CPU;
    b->ops = &ak_cpu_ops;
    b->impl = ak_cpu_state_new();
    if (!b->impl) {
        free(b);
        return NULL;
    }
    cpu_model_name(b->device, sizeof b->device);
    return b;
}

ak_backend *ak_open(const char *name, char *msg, size_t msg_len)
{
    set_msg(msg, msg_len, "%s", "");
    if (!name) {
        set_msg(msg, msg_len, "backend name is NULL (expected cpu, cuda or auto)");
        return NULL;
    }
    const bool want_cpu = strcmp(name, "cpu") == 0, want_cuda = strcmp(name, "cuda") == 0,
               want_auto = strcmp(name, "auto") == 0;
    if (!want_cpu && !want_cuda && !want_auto) {
        set_msg(msg, msg_len, "unknown backend '%s' (expected cpu, cuda or auto)", name);
        return NULL;
    }
    if (want_cpu) {
        ak_backend *b = open_cpu();
        if (!b) set_msg(msg, msg_len, "cpu: out of memory");
        return b;
    }
    char why[400] = "this build has no CUDA (configure with CUDACXX=/usr/local/cuda/bin/nvcc)";
#if defined(AK_HAVE_CUDA)
    ak_backend *g = calloc(1, sizeof *g);
    if (!g) {
        set_msg(msg, msg_len, "%s: out of memory", name);
        return NULL;
    }
    g->kind = AK_CUDA;
    g->ops = &ak_cuda_ops;
    if (ak_cuda_open(g, why, sizeof why) == AK_OK) return g;
    free(g);
#endif
    if (want_cuda) {
        set_msg(msg, msg_len, "cuda: %s; use --backend cpu", why);
        return NULL;
    }
    ak_backend *b = open_cpu();
    if (!b)
        set_msg(msg, msg_len, "auto: out of memory");
    else
        set_msg(msg, msg_len, "auto: %s; using cpu", why);
    return b;
}

void ak_close(ak_backend *b)
{
    if (!b) return;
#if defined(AK_HAVE_CUDA)
    if (b->kind == AK_CUDA) ak_cuda_close(b);
#endif
    if (b->kind == AK_CPU) ak_cpu_state_free(b->impl);
    free(b);
}

ak_kind ak_backend_kind(const ak_backend *b) { return b->kind; }
const char *ak_backend_name(const ak_backend *b) { return b->kind == AK_CUDA ? "cuda" : "cpu"; }
const char *ak_device_name(const ak_backend *b) { return b->device; }
const char *ak_error(const ak_backend *b) { return b ? b->error : "no backend"; }

const char *ak_error_text(const ak_backend *b)
{
    if (!b) return "no backend";
    /* AK_BEGIN clears the message but not error_at: never past its end */
    return b->error_at <= strlen(b->error) ? b->error + b->error_at : b->error;
}

/* ---- validation -------------------------------------------------------------- */
static int check_tensor(ak_backend *b, const char *call, const char *what, ak_tensor t, size_t n,
                        bool optional)
{
    const size_t size = ak_dtype_size(t.dtype);
    if (size == 0)
        return ak_fail(b, AK_EINVAL, call, "%s has an invalid dtype (%d)", what, (int)t.dtype);
    if (optional && t.data == NULL && t.n == 0) return AK_OK;
    if (n != AK_ANY_N && t.n != n)
        return ak_fail(b, AK_EINVAL, call, "%s has %zu elements, expected %zu", what, t.n, n);
    if (t.data == NULL && t.n > 0)
        return ak_fail(b, AK_EINVAL, call, "%s is NULL with %zu elements", what, t.n);
    if ((uintptr_t)t.data % size != 0)
        return ak_fail(b, AK_EINVAL, call, "%s (%p) is not aligned to its %zu-byte %s elements",
                       what, t.data, size, ak_dtype_name(t.dtype));
    if (t.n > SIZE_MAX / size)
        return ak_fail(b, AK_EINVAL, call, "%s: %zu elements overflow a size_t", what, t.n);
    return AK_OK;
}

int ak_check_tensor(ak_backend *b, const char *call, const char *what, ak_tensor t, size_t n)
{
    return check_tensor(b, call, what, t, n, false);
}

int ak_check_optional(ak_backend *b, const char *call, const char *what, ak_tensor t, size_t n)
{
    return check_tensor(b, call, what, t, n, true);
}

int ak_check_ptr(ak_backend *b, const char *call, const char *what, const void *ptr, size_t align)
{
    if (ptr == NULL) return ak_fail(b, AK_EINVAL, call, "%s is NULL", what);
    if (align > 1 && (uintptr_t)ptr % align != 0)
        return ak_fail(b, AK_EINVAL, call, "%s (%p) is not aligned to %zu bytes", what, ptr, align);
    return AK_OK;
}

int ak_check_disjoint(ak_backend *b, const char *call, size_t n_out, size_t count,
                      const char *const *names, const ak_tensor *ts)
{
    for (size_t i = 0; i < n_out && i < count; i++)
        for (size_t j = i + 1; j < count; j++)
            if (ak_overlap(ts[i].data, ts[i].n * ak_dtype_size(ts[i].dtype), ts[j].data,
                           ts[j].n * ak_dtype_size(ts[j].dtype)))
                return ak_fail(b, AK_EINVAL, call, "%s overlaps %s", names[i], names[j]);
    return AK_OK;
}

int ak_check_pair(ak_backend *b, const char *call, const char *wa, ak_tensor ta, const char *wb,
                  ak_tensor tb, size_t n, bool fp32)
{
    int rc = ak_check_optional(b, call, wa, ta, n);
    if (!rc) rc = ak_check_optional(b, call, wb, tb, n);
    if (rc) return rc;
    if ((ta.data == NULL) != (tb.data == NULL) && n > 0)
        return ak_fail(b, AK_EINVAL, call, "%s and %s must be given together", wa, wb);
    if (fp32 && ta.data && (ta.dtype != AK_F32 || tb.dtype != AK_F32))
        return ak_fail(b, AK_EUNSUPPORTED, call, "%s and %s must be fp32 (are %s, %s)", wa, wb,
                       ak_dtype_name(ta.dtype), ak_dtype_name(tb.dtype));
    return AK_OK;
}

int ak_check_mul(ak_backend *b, const char *call, const char *what, size_t x, size_t y,
                 size_t *product)
{
    if (y != 0 && x > SIZE_MAX / y)
        return ak_fail(b, AK_EINVAL, call, "%s: %zu x %zu overflows a size_t", what, x, y);
    *product = x * y;
    return AK_OK;
}

/* ---- memory ------------------------------------------------------------------- */
int ak_alloc(ak_backend *b, size_t bytes, void **ptr)
{
    AK_BEGIN(b);
    if (!ptr) return ak_fail(b, AK_EINVAL, "ak_alloc", "ptr is NULL");
    *ptr = NULL;
    if (bytes == 0) return AK_OK;
    return b->ops->alloc(b, bytes, ptr);
}

int ak_alloc_tensor(ak_backend *b, size_t n, ak_dtype dtype, ak_tensor *t)
{
    AK_BEGIN(b);
    if (!t) return ak_fail(b, AK_EINVAL, "ak_alloc_tensor", "t is NULL");
    const size_t size = ak_dtype_size(dtype);
    if (size == 0)
        return ak_fail(b, AK_EINVAL, "ak_alloc_tensor", "invalid dtype (%d)", (int)dtype);
    size_t bytes;
    int rc = ak_check_mul(b, "ak_alloc_tensor", "size", n, size, &bytes);
    if (rc) return rc;
    *t = ak_tensor_of(NULL, n, dtype);
    return ak_alloc(b, bytes, &t->data);
}

int ak_free(ak_backend *b, void *ptr)
{
    AK_BEGIN(b);
    if (!ptr) return AK_OK;
    return b->ops->free(b, ptr);
}

static int check_copy(ak_backend *b, const char *call, void *dst, const void *src, size_t bytes)
{
    if (bytes == 0) return AK_OK;
    if (!dst) return ak_fail(b, AK_EINVAL, call, "dst is NULL (%zu bytes to copy)", bytes);
    if (!src) return ak_fail(b, AK_EINVAL, call, "src is NULL (%zu bytes to copy)", bytes);
    return AK_OK;
}

int ak_to_device(ak_backend *b, void *dst, const void *host_src, size_t bytes)
{
    AK_BEGIN(b);
    int rc = check_copy(b, "ak_to_device", dst, host_src, bytes);
    if (rc || bytes == 0) return rc;
    return b->ops->to_device(b, dst, host_src, bytes);
}

int ak_to_host(ak_backend *b, void *host_dst, const void *src, size_t bytes)
{
    AK_BEGIN(b);
    int rc = check_copy(b, "ak_to_host", host_dst, src, bytes);
    if (rc || bytes == 0) return rc;
    return b->ops->to_host(b, host_dst, src, bytes);
}

int ak_copy(ak_backend *b, void *dst, const void *src, size_t bytes)
{
    AK_BEGIN(b);
    int rc = check_copy(b, "ak_copy", dst, src, bytes);
    if (rc || bytes == 0) return rc;
    return b->ops->copy(b, dst, src, bytes);
}

int ak_zero(ak_backend *b, void *ptr, size_t bytes)
{
    AK_BEGIN(b);
    if (bytes == 0) return AK_OK;
    if (!ptr) return ak_fail(b, AK_EINVAL, "ak_zero", "ptr is NULL (%zu bytes)", bytes);
    return b->ops->zero(b, ptr, bytes);
}

int ak_fill(ak_backend *b, ak_tensor t, double value)
{
    AK_BEGIN(b);
    int rc = ak_check_tensor(b, "ak_fill", "t", t, AK_ANY_N);
    if (rc || t.n == 0) return rc;
    return b->ops->fill(b, t, value);
}

int ak_sync(ak_backend *b)
{
    AK_BEGIN(b);
    return b->ops->sync(b);
}
