/* fuzz_safetensors.c: analyze/safetensors.h st_open (the 8-byte header
 * length, the header JSON, dtypes, shapes, data offsets, metadata), then
 * every accessor over what it accepted.  The input is the whole file. */
#define _XOPEN_SOURCE 700

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_path(0, "in.safetensors");
    fuzz_write(path, data, size);
    char msg[512];
    msg[0] = '\0';
    st_file *f = st_open(path, msg, sizeof msg);
    if (!f) {
        if (!msg[0]) abort(); /* every failure says why */
        fuzz_refused(msg);
        return 0;
    }
    /* Everything an accepted file offers must be within it: ASan checks
     * each tensor's bytes, and the header's promises are checked here. */
    const size_t n = st_count(f);
    for (size_t i = 0; i < n; i++) {
        const st_tensor *t = st_at(f, i);
        if (!t || !t->name || st_find(f, t->name) != t) abort();
        if (!st_dtype_name(t->dtype)) abort();
        if (t->ndim && !t->shape) abort();
        const size_t esize = st_dtype_size(t->dtype);
        const uint64_t bytes = st_tensor_bytes(t);
        if (bytes != st_tensor_elements(t) * esize) abort();
        if (bytes > size) abort();
        if (bytes && ((uintptr_t)t->data % esize) != 0) abort(); /* aligned, as promised */
        (void)fuzz_touch(t->data, (size_t)bytes);
        (void)fuzz_touch(t->name, strlen(t->name));
        const st_tensor *same = NULL;
        if (st_expect(f, t->name, t->dtype, t->ndim, t->shape, &same, msg, sizeof msg) != AN_OK ||
            same != t)
            abort();
    }
    if (st_at(f, n) != NULL) abort();
    const size_t m = st_metadata_count(f);
    for (size_t i = 0; i < m; i++) {
        const st_pair *p = st_metadata_at(f, i);
        if (!p || !p->key || !p->value) abort();
        if (st_metadata_get(f, p->key) != p->value) abort();
    }
    const st_tensor *missing = NULL;
    if (st_expect(f, "__no such tensor__", ST_F32, 0, NULL, &missing, msg, sizeof msg) == AN_OK)
        abort();
    st_close(f);
    return 0;
}
