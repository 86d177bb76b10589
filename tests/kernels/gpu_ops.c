/* gpu_ops.c: what the cases of gpu_backend_ops share (see gpu_ops.h): the
 * comparisons, the one place that decides whether cuda's result agrees
 * with the cpu's, and the inputs of the elementwise cases. */
#include <math.h>
#include <stdio.h>
#include <check.h>
#include <stdlib.h>

#include "gpu_ops.h"

const go_cmp go_bits = GO_BITS;

/* Whether a and b (elements of dt, values va and vb) agree as cmp says,
 * given the extra allowance beyond the ulps term. */
static bool close_enough(const go_cmp *cmp, ak_dtype dt, uint32_t a, uint32_t b, double va,
                         double vb, double allowance, double *bound)
{
    *bound = 0;
    if (isnan(va) || isnan(vb)) return isnan(va) && isnan(vb) && (!cmp->nan_bits || a == b);
    if (isinf(va) && isinf(vb)) return va == vb;
    if (isinf(va) || isinf(vb))
        return cmp->inf_step && (double)kt_ulp_distance(dt, a, b) <= cmp->steps &&
               (va < 0) == (vb < 0);
    if (cmp->steps > 0 && (double)kt_ulp_distance(dt, a, b) <= cmp->steps) return true;
    *bound = cmp->ulps * kt_ulp(dt, fmax(fabs(va), fabs(vb))) + allowance;
    return fabs(va - vb) <= *bound;
}

size_t go_compare(const char *what, const go_cmp *cmp, ak_dtype dt, const uint32_t *cpu,
                  const uint32_t *gpu, size_t n, const double *scale, const double *extra)
{
    if (cmp->kind == GO_EXACT) return kt_count_mismatches(what, gpu, cpu, n, sizeof *cpu);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        const double vc = kt_value(dt, cpu[i]), vg = kt_value(dt, gpu[i]);
        const double allowance = cmp->rel * (scale ? scale[i] : 0) + (extra ? extra[i] : 0);
        double bound;
        if (close_enough(cmp, dt, cpu[i], gpu[i], vc, vg, allowance, &bound)) continue;
        if (bad++ < 8)
            printf("%s[%zu] (%s): cpu %.9g (0x%x), cuda %.9g (0x%x), bound %.3g (%s)\n", what, i,
                   ak_dtype_name(dt), vc, cpu[i], vg, gpu[i], bound, cmp->bound);
    }
    if (bad > 8) printf("%s: %zu outside the bound in all\n", what, bad);
    return bad;
}

static uint32_t *unpacked(ak_dtype dt, const void *x, size_t n)
{
    uint32_t *bits = malloc(n * sizeof *bits + 4);
    if (!bits) return NULL;
    for (size_t i = 0; i < n; i++)
        bits[i] = dt == AK_F32 ? ((const uint32_t *)x)[i] : ((const uint16_t *)x)[i];
    return bits;
}

size_t go_compare_packed(const char *what, const go_cmp *cmp, ak_dtype dt, const void *cpu,
                         const void *gpu, size_t n)
{
    if (cmp->kind == GO_EXACT) return kt_count_mismatches(what, gpu, cpu, n, ak_dtype_size(dt));
    uint32_t *c = unpacked(dt, cpu, n), *g = unpacked(dt, gpu, n);
    if (!c || !g) {
        printf("%s: out of memory\n", what);
        free(c);
        free(g);
        return n + 1;
    }
    const size_t bad = go_compare(what, cmp, dt, c, g, n, NULL, NULL);
    free(c);
    free(g);
    return bad;
}

size_t go_compare_twin(const char *what, const go_cmp *cmp, kt_twin *t, const double *scale,
                       const double *extra)
{
    if (cmp->kind == GO_EXACT) return kt_twin_mismatches(what, t);
    const size_t n = t->c.t.n;
    uint32_t *c = malloc((n + 1) * 4), *g = malloc((n + 1) * 4);
    if (!c || !g) {
        printf("%s: out of memory\n", what);
        free(c);
        free(g);
        return n + 1;
    }
    kt_buf_get(&t->c, c);
    kt_buf_get(&t->g, g);
    const size_t bad = go_compare(what, cmp, t->c.t.dtype, c, g, n, scale, extra);
    free(c);
    free(g);
    return bad;
}

bool go_agree_f64(const go_cmp *cmp, double cpu, double gpu)
{
    if (cmp->kind == GO_EXACT) return cpu == gpu || (isnan(cpu) && isnan(gpu));
    return kt_agree_within(gpu, cpu, cmp->rel * fabs(cpu));
}

/* ---- inputs ---------------------------------------------------------------------- */
/* n host elements of format f (packed): every 16-bit pattern in a shuffled
 * order, repeated, or kt_fill_f32_bits's mix. */
void *go_inputs(fpe_format_id f, size_t n, uint64_t seed)
{
    const size_t size = ak_dtype_size((ak_dtype)f);
    void *p = malloc(n * size + 4);
    ck_assert_ptr_nonnull(p);
    if (f == FPE_FMT_F32) {
        ts_rng rng;
        ts_rng_init(&rng, seed);
        kt_fill_f32_bits(&rng, p, n);
    } else {
        uint16_t *h = p;
        /* 40503 is odd: i -> 40503 i is a permutation of each run of 2^16 */
        for (size_t i = 0; i < n; i++)
            h[i] = (uint16_t)((i + seed) * 40503u);
    }
    return p;
}
