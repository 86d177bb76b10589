/* cpu/memory.c: backend memory on the cpu is host memory. */
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "fpe_ops.h"

int ak_cpu_alloc(ak_backend *b, size_t bytes, void **ptr)
{
    const size_t rounded = (bytes + 255) / 256 * 256; /* aligned_alloc wants a multiple */
    if (rounded < bytes) return ak_fail(b, AK_ENOMEM, "ak_alloc", "%zu bytes is too many", bytes);
    *ptr = aligned_alloc(256, rounded);
    if (!*ptr)
        return ak_fail(b, AK_ENOMEM, "ak_alloc", "out of memory allocating %zu bytes", bytes);
    return AK_OK;
}

int ak_cpu_free(ak_backend *b, void *ptr)
{
    (void)b;
    free(ptr);
    return AK_OK;
}

int ak_cpu_to_device(ak_backend *b, void *dst, const void *src, size_t bytes)
{
    (void)b;
    memmove(dst, src, bytes);
    return AK_OK;
}

int ak_cpu_to_host(ak_backend *b, void *dst, const void *src, size_t bytes)
{
    (void)b;
    memmove(dst, src, bytes);
    return AK_OK;
}

int ak_cpu_copy(ak_backend *b, void *dst, const void *src, size_t bytes)
{
    (void)b;
    memmove(dst, src, bytes);
    return AK_OK;
}

int ak_cpu_zero(ak_backend *b, void *ptr, size_t bytes)
{
    (void)b;
    memset(ptr, 0, bytes);
    return AK_OK;
}

int ak_cpu_sync(ak_backend *b)
{
    (void)b;
    return AK_OK;
}

int ak_cpu_fill(ak_backend *b, ak_tensor t, double value)
{
    (void)b;
    fpe_env env = fpe_env_default();
    const uint32_t bits = fpe_from_f64_k((fpe_format_id)t.dtype, &env, value);
    if (t.dtype == AK_F32) {
        uint32_t *p = (uint32_t *)t.data;
        for (size_t i = 0; i < t.n; i++)
            p[i] = bits;
    } else {
        uint16_t *p = (uint16_t *)t.data;
        for (size_t i = 0; i < t.n; i++)
            p[i] = (uint16_t)bits;
    }
    return AK_OK;
}
