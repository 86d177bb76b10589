/* fuzz_idx.c: the IDX reader (experiments/data.h ds_load_idx), plain and
 * gzip'd, and the gathering of whatever it accepted.
 *
 * Input: byte 0 chooses the options, bytes 1-2 (little-endian) the length
 * of the images file, the rest is the images file then the labels file.
 * Byte 0: bit 0 gzips the images bytes and bit 1 the labels bytes on the
 * way to disk (so the fuzzer explores the decompressed content; ungzipped
 * bytes that start with 1f 8b explore zlib's handling of broken streams),
 * bits 2-3 the expected image size (any, 28x28, 2x3, 1 row of any width),
 * bits 4-5 the pad (0, 1, 2, DS_MAX_PAD + 1 which must be refused), bits
 * 6-7 the subset (all, 1, 3, 1000). */
#define _XOPEN_SOURCE 700

#include <stdint.h>
#include <stdlib.h>
#include <zlib.h>

#include "data.h"
#include "fuzz_util.h"

static void write_part(const char *path, const uint8_t *data, size_t n, int gzip)
{
    if (!gzip) {
        fuzz_write(path, data, n);
        return;
    }
    gzFile g = gzopen(path, "wb1");
    if (!g) abort();
    if (n && gzwrite(g, data, (unsigned)n) != (int)n) abort();
    if (gzclose(g) != Z_OK) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3) return 0;
    const unsigned flags = data[0];
    size_t images_len = (size_t)data[1] | (size_t)data[2] << 8;
    data += 3;
    size -= 3;
    if (images_len > size) images_len = size;
    const char *images = fuzz_path(0, "images-idx3-ubyte");
    const char *labels = fuzz_path(1, "labels-idx1-ubyte");
    write_part(images, data, images_len, flags & 1);
    write_part(labels, data + images_len, size - images_len, flags & 2);

    static const size_t rows[4] = {0, 28, 2, 1}, cols[4] = {0, 28, 3, 0};
    static const size_t pads[4] = {0, 1, 2, DS_MAX_PAD + 1};
    static const size_t subsets[4] = {0, 1, 3, 1000};
    ds_options opt = ds_options_default();
    opt.pad = pads[flags >> 4 & 3];
    opt.subset = subsets[flags >> 6 & 3];
    ds_dataset *ds = NULL;
    char msg[512];
    int status = ds_load_idx(images, labels, rows[flags >> 2 & 3], cols[flags >> 2 & 3], &opt, &ds,
                             msg, sizeof msg);
    if (status != DS_OK) {
        if (ds) abort();      /* *out is NULL on failure */
        if (!msg[0]) abort(); /* every failure says why */
        fuzz_refused(msg);
        return 0;
    }
    if (!ds || ds->count == 0 || !ds->labels || !ds->pixels) abort();
    if (opt.subset && ds->count > opt.subset) abort();

    /* Gather every sample (at most 16, and at most a million floats) and touch the labels: ASan
     * checks that the loader's sizes agree with its buffers. */
    size_t n = ds->count < 16 ? ds->count : 16;
    if (n > ((size_t)1 << 20) / ds->features) n = ((size_t)1 << 20) / ds->features;
    if (n == 0) n = 1;
    size_t idx[16];
    for (size_t i = 0; i < n; i++)
        idx[i] = ds->count - 1 - i;
    float *x = malloc(n * ds->features * sizeof *x);
    int32_t lab[16];
    if (!x) abort();
    if (ds_gather(ds, idx, n, x, lab, NULL, msg, sizeof msg) != DS_OK) abort();
    for (size_t i = 0; i < n; i++)
        if (lab[i] < 0 || lab[i] >= (int32_t)ds->classes) abort();
    for (size_t i = 0; i < n * ds->features; i++)
        if (!(x[i] >= 0.0f && x[i] <= 1.0f)) abort();
    (void)fuzz_touch(ds->labels, ds->count * sizeof *ds->labels);
    free(x);
    ds_free(ds);
    return 0;
}
