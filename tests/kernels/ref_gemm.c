/* ref_gemm.c: the cases and host matrices of test_gemm and gpu_cases_gemm (see ref_gemm.h). */
#include "ref_gemm.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

ref_gcase ref_gemm_case(kt_pairing p, size_t m, size_t n, size_t k, int transposes, uint64_t seed)
{
    const ref_gcase c = {.p = p,
                         .m = m,
                         .n = n,
                         .k = k,
                         .ta = transposes & 1,
                         .tb = transposes >> 1 & 1,
                         .alpha = 1,
                         .beta = 0,
                         .seed = ts_seed() + seed};
    return c;
}

ref_gcase ref_gemm_nan_c_case(kt_pairing p, int transposes, uint64_t seed)
{
    ref_gcase c = ref_gemm_case(p, 6, 7, 9, transposes, seed);
    c.nan_c = true;
    c.pad_c = 2;
    c.alpha = -1.5f;
    return c;
}

ref_gcase ref_gemm_specials_case(kt_pairing p, int transposes, uint64_t seed)
{
    ref_gcase c = ref_gemm_case(p, 5, 4, 6, transposes, seed);
    c.specials = true;
    c.alpha = transposes == 3 ? -1 : 1;
    c.beta = 0.5f;
    return c;
}

void ref_gemm_describe(const ref_gcase *c, char *out, size_t len)
{
    snprintf(out, len,
             "%s/%s->%s %s m=%zu n=%zu k=%zu ta=%d tb=%d pads=%zu,%zu,%zu alpha=%g beta=%g%s%s",
             ak_dtype_name(c->p.in), ak_dtype_name(c->p.in), ak_dtype_name(c->p.out),
             ak_compute_name(c->p.k), c->m, c->n, c->k, c->ta, c->tb, c->pad_a, c->pad_b, c->pad_c,
             (double)c->alpha, (double)c->beta, c->nan_c ? " nanC" : "",
             c->specials ? " specials" : "");
}

ref_mat ref_mat_make(ak_dtype dt, size_t rows, size_t cols, size_t pad)
{
    ref_mat m;
    m.dt = dt;
    m.rows = rows;
    m.cols = cols;
    m.ld = cols + pad;
    m.n = rows == 0 ? 0 : (rows - 1) * m.ld + cols;
    m.bits = calloc(m.n + 1, sizeof(uint32_t));
    ck_assert_ptr_nonnull(m.bits);
    return m;
}

void ref_mat_free(ref_mat *m)
{
    free(m->bits);
    m->bits = NULL;
}

uint32_t ref_mat_op(const ref_mat *m, bool t, size_t i, size_t j)
{
    return t ? m->bits[j * m->ld + i] : m->bits[i * m->ld + j];
}

bool ref_mat_in_gap(const ref_mat *m, size_t i) { return i % m->ld >= m->cols; }

void ref_gemm_mats(const ref_gcase *c, ref_mat *a, ref_mat *b, ref_mat *cm)
{
    *a = ref_mat_make(c->p.in, c->ta ? c->k : c->m, c->ta ? c->m : c->k, c->pad_a);
    *b = ref_mat_make(c->p.in, c->tb ? c->n : c->k, c->tb ? c->k : c->n, c->pad_b);
    *cm = ref_mat_make(c->p.out, c->m, c->n, c->pad_c);
}

void ref_gemm_plant_specials(const ref_gcase *c, ref_mat *a, ref_mat *b)
{
    if (!c->specials || c->m < 4 || c->k < 3 || c->n < 3) return;
    a->bits[c->ta ? 2 * a->ld + 1 : 1 * a->ld + 2] = kt_marker_nan(a->dt);
    a->bits[c->ta ? 0 * a->ld + 3 : 3 * a->ld + 0] = kt_from_f64(a->dt, INFINITY);
    b->bits[c->tb ? 2 * b->ld + 1 : 1 * b->ld + 2] = kt_from_f64(b->dt, -INFINITY);
    b->bits[c->tb ? 1 * b->ld + 0 : 0 * b->ld + 1] = 0;
}
