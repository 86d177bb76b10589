/* peer_synthetic.c: writes simplenet's synthetic samples FIRST .. FIRST+COUNT-1
 * as `ampscope grad --net simplenet --width W --seed S --samples FIRST:COUNT`
 * draws them (ds_synthetic, independent targets), so that PyTorch can be fed
 * the same batch: a safetensors file with "x" and "target", both F32 of shape
 * [COUNT, W].  A test helper (tests/peer), not part of the program.
 *
 *   peer_synthetic WIDTH SEED FIRST COUNT OUT.safetensors
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data.h"
#include "safetensors.h"

static int number(const char *s, unsigned long long *v)
{
    char *end;
    *v = strtoull(s, &end, 10);
    return *s && !*end ? 0 : -1;
}

int main(int argc, char **argv)
{
    unsigned long long width, seed, first, count;
    if (argc != 6 || number(argv[1], &width) || number(argv[2], &seed) || number(argv[3], &first) ||
        number(argv[4], &count) || width == 0 || count == 0) {
        fprintf(stderr, "usage: peer_synthetic WIDTH SEED FIRST COUNT OUT.safetensors\n");
        return 2;
    }
    char why[512];
    ds_synthetic_options so;
    memset(&so, 0, sizeof so);
    so.count = (size_t)(first + count);
    so.in_dim = so.out_dim = (size_t)width;
    so.seed = seed;
    so.rule = DS_TARGETS_INDEPENDENT; /* as train and grad draw simplenet's samples */
    ds_dataset *ds = NULL;
    if (ds_synthetic(&so, &ds, why, sizeof why) != DS_OK) {
        fprintf(stderr, "peer_synthetic: %s\n", why);
        return 1;
    }
    size_t *idx = malloc((size_t)count * sizeof *idx);
    float *x = malloc((size_t)(count * width) * sizeof *x);
    float *t = malloc((size_t)(count * width) * sizeof *t);
    int rc = 1;
    if (!idx || !x || !t) {
        fprintf(stderr, "peer_synthetic: out of memory\n");
        goto done;
    }
    for (size_t i = 0; i < count; i++)
        idx[i] = (size_t)first + i;
    if (ds_gather(ds, idx, (size_t)count, x, NULL, t, why, sizeof why) != DS_OK) {
        fprintf(stderr, "peer_synthetic: %s\n", why);
        goto done;
    }
    const uint64_t shape[2] = {count, width};
    const st_tensor tensors[2] = {{"x", ST_F32, 2, shape, x}, {"target", ST_F32, 2, shape, t}};
    if (st_write(argv[5], tensors, 2, NULL, 0, why, sizeof why) != AN_OK) {
        fprintf(stderr, "peer_synthetic: %s\n", why);
        goto done;
    }
    rc = 0;
done:
    free(idx);
    free(x);
    free(t);
    ds_free(ds);
    return rc;
}
