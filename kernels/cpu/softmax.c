/* cpu/softmax.c: row-wise softmax and log-softmax, forward and backward
 * (the reference), one row at a time through elem/softmax.h.  The forward
 * keeps each row's exps in a buffer instead of computing them twice: the
 * same values (the element code is deterministic), half the work. */
#include <stdlib.h>

#include "backend.h"
#include "elem/softmax.h"

static ak_softmax_row_args row_args(const ak_softmax_args *a)
{
    ak_softmax_row_args r;
    r.acc = (fpe_format_id)a->acc;
    r.log = a->log;
    r.scale = (double)a->scale;
    r.cols = a->cols;
    r.causal_t = a->causal_t;
    return r;
}

/* The rows of the forward with acc a compile-time constant (ACC), so the
 * element code loses its format branches. */
#define SOFTMAX_ROWS(ACC, ra, y, x, buf)                                                           \
    do {                                                                                           \
        ak_softmax_row_args ra_ = *(ra);                                                           \
        ra_.acc = (ACC);                                                                           \
        for (size_t r = 0; r < rows; r++)                                                          \
            ak_softmax_row(&ra_, fy, fx, (y).data, (x).data, r, (buf));                            \
    } while (0)

int ak_cpu_softmax_forward(ak_backend *b, const ak_softmax_args *a, ak_tensor y, ak_tensor x)
{
    const ak_softmax_row_args ra = row_args(a);
    const fpe_format_id fy = (fpe_format_id)y.dtype, fx = (fpe_format_id)x.dtype;
    const size_t rows = a->rows;
    double *buf = malloc(a->cols * sizeof *buf);
    if (!buf)
        return ak_fail(b, AK_ENOMEM, "ak_softmax_forward", "cannot allocate %zu bytes for a row",
                       a->cols * sizeof *buf);
    switch (ra.acc) {
    case FPE_FMT_F16: SOFTMAX_ROWS(FPE_FMT_F16, &ra, y, x, buf); break;
    case FPE_FMT_BF16: SOFTMAX_ROWS(FPE_FMT_BF16, &ra, y, x, buf); break;
    default: SOFTMAX_ROWS(FPE_FMT_F32, &ra, y, x, buf); break;
    }
    free(buf);
    return AK_OK;
}

int ak_cpu_softmax_backward(ak_backend *b, const ak_softmax_args *a, ak_tensor dx, ak_tensor dy,
                            ak_tensor y)
{
    (void)b;
    const ak_softmax_row_args ra = row_args(a);
    const fpe_format_id fdx = (fpe_format_id)dx.dtype, fdy = (fpe_format_id)dy.dtype,
                        fy = (fpe_format_id)y.dtype;
    for (size_t r = 0; r < a->rows; r++)
        ak_softmax_backward_row(&ra, fdx, fdy, fy, dx.data, dy.data, y.data, r);
    return AK_OK;
}
