/* cpu/backend.c: the cpu backend's op table, its scratch memory and its
 * tables. */
#include <stdlib.h>

#include "backend.h"

#define AK_OP_ENTRY(name, params) .name = ak_cpu_##name,
const ak_ops ak_cpu_ops = {AK_OPS(AK_OP_ENTRY)};
#undef AK_OP_ENTRY

typedef struct ak_cpu_state {
    void *buf[AK_SCRATCH_SLOTS];
    size_t size[AK_SCRATCH_SLOTS];
    void *table[AK_TABLE_IDS];
} ak_cpu_state;

void *ak_cpu_state_new(void) { return calloc(1, sizeof(ak_cpu_state)); }

void ak_cpu_state_free(void *impl)
{
    ak_cpu_state *s = impl;
    if (!s) return;
    for (int i = 0; i < AK_SCRATCH_SLOTS; i++)
        free(s->buf[i]);
    for (int i = 0; i < AK_TABLE_IDS; i++)
        free(s->table[i]);
    free(s);
}

int ak_cpu_scratch(ak_backend *b, ak_cpu_scratch_slot slot, const char *call, size_t count,
                   size_t size, void **p)
{
    *p = NULL;
    if (count == 0 || size == 0) return AK_OK;
    if (count > SIZE_MAX / size)
        return ak_fail(b, AK_ENOMEM, call, "scratch of %zu x %zu bytes overflows", count, size);
    ak_cpu_state *s = b->impl;
    const size_t bytes = count * size;
    if (s->size[slot] < bytes) {
        /* grow to the request; the old contents need not survive */
        free(s->buf[slot]);
        s->buf[slot] = malloc(bytes);
        s->size[slot] = s->buf[slot] ? bytes : 0;
        if (!s->buf[slot])
            return ak_fail(b, AK_ENOMEM, call, "out of memory for %zu bytes of scratch", bytes);
    }
    *p = s->buf[slot];
    return AK_OK;
}

void *ak_cpu_table(ak_backend *b, int id, size_t bytes, bool build, bool *fresh)
{
    ak_cpu_state *s = b->impl;
    *fresh = false;
    if (s->table[id] || !build) return s->table[id];
    s->table[id] = malloc(bytes);
    *fresh = s->table[id] != NULL;
    return s->table[id];
}
