/* cpu/conv.c: conv2d on the host: im2col and the other index passes of
 * elem/im2col.h as plain loops, the products through the backend's GEMM. */
#include <stdlib.h>

#include "backend.h"
#include "elem/im2col.h"

/* col[r][n P + q] as ak_im2col_src defines it, by nested loops (no
 * division per element); the 16-bit or 32-bit patterns are copied. */
FPE_INLINE void im2col_k(const ak_conv_geom *g, size_t esize, const void *x, void *col)
{
    size_t i = 0;
    for (size_t c = 0; c < g->in_ch; c++)
        for (size_t ki = 0; ki < g->k_h; ki++)
            for (size_t kj = 0; kj < g->k_w; kj++)
                for (size_t n = 0; n < g->batch; n++) {
                    const size_t plane = (n * g->in_ch + c) * g->in_h;
                    for (size_t oy = 0; oy < g->out_h; oy++) {
                        /* padded coordinates, so the comparisons stay unsigned */
                        const size_t y = oy * g->stride + ki;
                        const bool row_in = y >= g->pad && y - g->pad < g->in_h;
                        for (size_t ox = 0; ox < g->out_w; ox++, i++) {
                            const size_t xx = ox * g->stride + kj;
                            const bool in = row_in && xx >= g->pad && xx - g->pad < g->in_w;
                            const size_t src =
                                in ? (plane + (y - g->pad)) * g->in_w + (xx - g->pad) : 0;
                            if (esize == 2)
                                ((uint16_t *)col)[i] = in ? ((const uint16_t *)x)[src] : 0;
                            else
                                ((uint32_t *)col)[i] = in ? ((const uint32_t *)x)[src] : 0;
                        }
                    }
                }
}

static void im2col(const ak_conv_geom *g, ak_tensor x, void *col)
{
    if (ak_dtype_size(x.dtype) == 2)
        im2col_k(g, 2, x.data, col);
    else
        im2col_k(g, 4, x.data, col);
}

int ak_cpu_conv2d_forward(ak_backend *b, const ak_conv2d *c, ak_tensor y, ak_tensor x, ak_tensor w,
                          ak_tensor bias)
{
    const char *call = "ak_conv2d_forward";
    const ak_conv_geom g = ak_conv_geom_of(c);
    const ak_dtype acc_dt = ak_conv_acc_dtype(c->compute);
    /* one image, no bias, y in the accumulator's dtype: Ycm is y itself */
    const bool direct = g.batch == 1 && !bias.data && y.dtype == acc_dt;
    void *col, *ycm_own;
    int rc;
    if ((rc = ak_cpu_scratch(b, AK_SCRATCH_CONV_COL, call, g.kk * g.np, ak_dtype_size(x.dtype),
                             &col)) ||
        (rc = ak_cpu_scratch(b, AK_SCRATCH_CONV_CM, call, direct ? 0 : y.n, ak_dtype_size(acc_dt),
                             &ycm_own)))
        return rc;
    void *ycm = direct ? y.data : ycm_own;
    im2col(&g, x, col);
    const ak_gemm_args ga = ak_conv_gemm(c->compute, g.out_ch, g.np, g.kk, w, false,
                                         ak_tensor_of(col, g.kk * g.np, x.dtype), false,
                                         ak_tensor_of(ycm, y.n, acc_dt));
    if ((rc = b->ops->gemm(b, &ga))) return rc;
    if (!direct) {
        const fpe_format_id yf = (fpe_format_id)y.dtype, af = (fpe_format_id)acc_dt,
                            bf = (fpe_format_id)bias.dtype;
        for (size_t i = 0; i < y.n; i++)
            ak_store_bits(yf, y.data, i, ak_conv_output_k(&g, yf, af, ycm, bf, bias.data, i));
    }
    return AK_OK;
}

int ak_cpu_conv2d_backward(ak_backend *b, const ak_conv2d *c, ak_tensor dx, ak_tensor dw,
                           ak_tensor dbias, ak_tensor dy, ak_tensor x, ak_tensor w)
{
    const char *call = "ak_conv2d_backward";
    const ak_conv_geom g = ak_conv_geom_of(c);
    const ak_dtype dcol_dt = ak_conv_acc_dtype(c->compute);
    /* col, then dcol once dW has read col */
    const bool col_larger = ak_dtype_size(x.dtype) >= ak_dtype_size(dcol_dt) || !dx.data;
    void *buf, *dycm_own;
    int rc;
    if ((rc = ak_cpu_scratch(b, AK_SCRATCH_CONV_COL, call, g.kk * g.np,
                             ak_dtype_size(col_larger ? x.dtype : dcol_dt), &buf)) ||
        (rc = ak_cpu_scratch(b, AK_SCRATCH_CONV_CM, call, g.batch > 1 ? dy.n : 0,
                             ak_dtype_size(dy.dtype), &dycm_own)))
        return rc;
    const fpe_format_id yf = (fpe_format_id)dy.dtype;
    void *dycm = g.batch > 1 ? dycm_own : dy.data;
    for (size_t i = 0; g.batch > 1 && i < dy.n; i++)
        ak_store_bits(yf, dycm, i, ak_load_bits(yf, dy.data, ak_conv_nchw_index(&g, i)));
    const ak_tensor dyt = ak_tensor_of(dycm, dy.n, dy.dtype);
    im2col(&g, x, buf);
    const ak_gemm_args gw = ak_conv_gemm(c->compute, g.out_ch, g.kk, g.np, dyt, false,
                                         ak_tensor_of(buf, g.kk * g.np, x.dtype), true, dw);
    if ((rc = b->ops->gemm(b, &gw))) return rc;
    if (dbias.data) {
        for (size_t o = 0; o < g.out_ch; o++) {
            double sum = 0.0;
            for (size_t n = 0; n < g.batch; n++)
                for (size_t q = 0; q < g.p; q++)
                    sum += ak_load_value(yf, dy.data, (n * g.out_ch + o) * g.p + q);
            ak_store_bits((fpe_format_id)dbias.dtype, dbias.data, o,
                          ak_conv_dbias_k((fpe_format_id)dbias.dtype, sum));
        }
    }
    if (dx.data) {
        const ak_gemm_args gx = ak_conv_gemm(c->compute, g.kk, g.np, g.out_ch, w, true, dyt, false,
                                             ak_tensor_of(buf, g.kk * g.np, dcol_dt));
        if ((rc = b->ops->gemm(b, &gx))) return rc;
        const fpe_format_id xf = (fpe_format_id)dx.dtype;
        for (size_t i = 0; i < dx.n; i++)
            ak_store_bits(xf, dx.data, i, ak_col2im_k(&g, (fpe_format_id)dcol_dt, buf, xf, i));
    }
    return AK_OK;
}
