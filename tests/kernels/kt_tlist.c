/* kt_tlist.c: lists of tensors and their sum of squares (see kt_tlist.h). */
#include "kt_tlist.h"

#include <check.h>
#include <stdlib.h>

kt_tlist kt_tlist_make(ak_backend *b, size_t count, const size_t *sizes, const ak_dtype *dts)
{
    kt_tlist l = {count, calloc(count, sizeof(kt_buf)), calloc(count, sizeof(ak_tensor)),
                  calloc(count, sizeof(uint32_t *))};
    ck_assert(l.bufs && l.t && l.x);
    for (size_t i = 0; i < count; i++) {
        l.x[i] = kt_bits_alloc(sizes[i]);
        if (sizes[i] == 0) {
            l.t[i] = ak_tensor_of(NULL, 0, dts[i]);
            continue;
        }
        l.bufs[i] = kt_buf_alloc(b, sizes[i], dts[i]);
        l.t[i] = l.bufs[i].t;
    }
    return l;
}

void kt_tlist_upload(kt_tlist *l)
{
    for (size_t i = 0; i < l->count; i++)
        if (l->t[i].n > 0) kt_buf_put(&l->bufs[i], l->x[i]);
}

void kt_tlist_free(kt_tlist *l)
{
    for (size_t i = 0; i < l->count; i++) {
        if (l->t[i].n > 0) {
            ck_assert(kt_buf_guards_ok(&l->bufs[i]));
            kt_buf_free(&l->bufs[i]);
        }
        free(l->x[i]);
    }
    free(l->bufs);
    free(l->t);
    free(l->x);
}

long double kt_tlist_sum_squares(const kt_tlist *l)
{
    long double s = 0.0L;
    for (size_t i = 0; i < l->count; i++)
        for (size_t j = 0; j < l->t[i].n; j++) {
            const double v = kt_value(l->t[i].dtype, l->x[i][j]);
            s += (long double)(v * v);
        }
    return s;
}

double *kt_sumsq_alloc(ak_backend *b, double v)
{
    double *p = kt_dev_alloc(b, sizeof(double));
    kt_dev_put(b, p, &v, sizeof v);
    return p;
}

double kt_sumsq_get(ak_backend *b, const double *p)
{
    double v;
    kt_dev_get(b, &v, p, sizeof v);
    return v;
}
