/* cpu/conv.c: conv2d on the host: im2col and the other index passes of
 * elem/im2col.h as plain loops, the products through the backend's GEMM. */
#include <stdlib.h>

#include "backend.h"
#include "elem/im2col.h"

static int workspace(ak_backend *b, const char *call, size_t count, ak_dtype dt, void **p)
{
    *p = NULL;
    if (count == 0) return AK_OK;
    *p = malloc(count * ak_dtype_size(dt)); /* conv.c checked count * 4 */
    if (!*p)
        return ak_fail(b, AK_ENOMEM, call, "out of memory for %zu bytes of workspace",
                       count * ak_dtype_size(dt));
    return AK_OK;
}

static void im2col(const ak_conv_geom *g, ak_tensor x, void *col)
{
    const fpe_format_id f = (fpe_format_id)x.dtype;
    const size_t total = g->kk * g->np;
    for (size_t i = 0; i < total; i++) {
        const size_t src = ak_im2col_src(g, i);
        ak_store_bits(f, col, i, src == AK_IM2COL_PAD ? 0 : ak_load_bits(f, x.data, src));
    }
}

int ak_cpu_conv2d_forward(ak_backend *b, const ak_conv2d *c, ak_tensor y, ak_tensor x, ak_tensor w,
                          ak_tensor bias)
{
    const char *call = "ak_conv2d_forward";
    const ak_conv_geom g = ak_conv_geom_of(c);
    const ak_dtype acc_dt = ak_conv_acc_dtype(c->compute);
    /* one image, no bias, y in the accumulator's dtype: Ycm is y itself */
    const bool direct = g.batch == 1 && !bias.data && y.dtype == acc_dt;
    void *col = NULL, *ycm_own = NULL;
    int rc;
    if ((rc = workspace(b, call, g.kk * g.np, x.dtype, &col)) ||
        (rc = workspace(b, call, direct ? 0 : y.n, acc_dt, &ycm_own)))
        goto done;
    void *ycm = direct ? y.data : ycm_own;
    im2col(&g, x, col);
    const ak_gemm_args ga = ak_conv_gemm(c->compute, g.out_ch, g.np, g.kk, w, false,
                                         ak_tensor_of(col, g.kk * g.np, x.dtype), false,
                                         ak_tensor_of(ycm, y.n, acc_dt));
    if ((rc = b->ops->gemm(b, &ga))) goto done;
    if (!direct) {
        const fpe_format_id yf = (fpe_format_id)y.dtype, af = (fpe_format_id)acc_dt,
                            bf = (fpe_format_id)bias.dtype;
        for (size_t i = 0; i < y.n; i++)
            ak_store_bits(yf, y.data, i, ak_conv_output_k(&g, yf, af, ycm, bf, bias.data, i));
    }
done:
    free(col);
    free(ycm_own);
    return rc;
}

int ak_cpu_conv2d_backward(ak_backend *b, const ak_conv2d *c, ak_tensor dx, ak_tensor dw,
                           ak_tensor dbias, ak_tensor dy, ak_tensor x, ak_tensor w)
{
    const char *call = "ak_conv2d_backward";
    const ak_conv_geom g = ak_conv_geom_of(c);
    const ak_dtype dcol_dt = ak_conv_acc_dtype(c->compute);
    /* col, then dcol once dW has read col */
    const bool col_larger = ak_dtype_size(x.dtype) >= ak_dtype_size(dcol_dt) || !dx.data;
    void *buf = NULL, *dycm_own = NULL;
    int rc;
    if ((rc = workspace(b, call, g.kk * g.np, col_larger ? x.dtype : dcol_dt, &buf)) ||
        (rc = workspace(b, call, g.batch > 1 ? dy.n : 0, dy.dtype, &dycm_own)))
        goto done;
    const fpe_format_id yf = (fpe_format_id)dy.dtype;
    void *dycm = g.batch > 1 ? dycm_own : dy.data;
    for (size_t i = 0; g.batch > 1 && i < dy.n; i++)
        ak_store_bits(yf, dycm, i, ak_load_bits(yf, dy.data, ak_conv_nchw_index(&g, i)));
    const ak_tensor dyt = ak_tensor_of(dycm, dy.n, dy.dtype);
    im2col(&g, x, buf);
    const ak_gemm_args gw = ak_conv_gemm(c->compute, g.out_ch, g.kk, g.np, dyt, false,
                                         ak_tensor_of(buf, g.kk * g.np, x.dtype), true, dw);
    if ((rc = b->ops->gemm(b, &gw))) goto done;
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
        if ((rc = b->ops->gemm(b, &gx))) goto done;
        const fpe_format_id xf = (fpe_format_id)dx.dtype;
        for (size_t i = 0; i < dx.n; i++)
            ak_store_bits(xf, dx.data, i, ak_col2im_k(&g, (fpe_format_id)dcol_dt, buf, xf, i));
    }
done:
    free(buf);
    free(dycm_own);
    return rc;
}
