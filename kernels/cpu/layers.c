/* cpu/layers.c: bias add and gradient, relu, 2x2 max-pooling (the
 * reference).  Each loop is written once over an int F (elem/layers.h):
 * specialised to a constant format when all the tensors of a call share
 * one, so the element code folds and the simple loops vectorize. */
#include "backend.h"
#include "elem/layers.h"

/* Loops are always inlined into their specialisations. */
#define LOOP_INLINE static inline __attribute__((always_inline))

LOOP_INLINE void bias_add_loop(int F, ak_tensor y, ak_tensor bias, size_t rows, size_t cols)
{
    const fpe_format_id fy = AK_LAYER_FMT(F, y.dtype), fb = AK_LAYER_FMT(F, bias.dtype);
    for (size_t r = 0; r < rows; r++) {
        const size_t row = r * cols;
        for (size_t c = 0; c < cols; c++) {
            const uint32_t v = ak_load_bits(fy, y.data, row + c);
            ak_store_bits(fy, y.data, row + c,
                          ak_bias_add_elem(fy, fb, v, ak_load_bits(fb, bias.data, c)));
        }
    }
}

int ak_cpu_bias_add(ak_backend *b, ak_tensor y, ak_tensor bias, size_t rows, size_t cols)
{
    (void)b;
    if (y.dtype == bias.dtype && (y.dtype == AK_F16 || y.dtype == AK_BF16)) {
        /* with equal 16-bit dtypes ak_bias_add_elem is fpe_<fmt>_add in the default environment:
         * the emulator's array add (the same bits), a row at a time, in place */
        for (size_t r = 0; r < rows; r++) {
            fpe_env env = fpe_env_default();
            uint16_t *row = (uint16_t *)y.data + r * cols;
            (void)fpe_array_arith(&env, (fpe_format_id)y.dtype, FPE_ARITH_ADD, row,
                                  (const uint16_t *)bias.data, NULL, row, cols, NULL);
        }
        return AK_OK;
    }
    AK_LAYER_SPECIALISE(ak_layer_common2(y.dtype, bias.dtype), bias_add_loop, y, bias, rows, cols);
    return AK_OK;
}

/* Columns are summed a block at a time, row after row, so dy streams
 * through the cache in order while every column is still summed in row
 * order. */
#define BIAS_GRAD_BLOCK 512

int ak_cpu_bias_grad(ak_backend *b, ak_tensor dbias, ak_tensor dy, size_t rows, size_t cols)
{
    (void)b;
    const fpe_format_id fd = (fpe_format_id)dbias.dtype, fy = (fpe_format_id)dy.dtype;
    double sum[BIAS_GRAD_BLOCK];
    for (size_t c0 = 0; c0 < cols; c0 += BIAS_GRAD_BLOCK) {
        const size_t width = cols - c0 < BIAS_GRAD_BLOCK ? cols - c0 : BIAS_GRAD_BLOCK;
        for (size_t c = 0; c < width; c++)
            sum[c] = 0.0;
        for (size_t r = 0; r < rows; r++) {
            const size_t row = r * cols + c0;
            for (size_t c = 0; c < width; c++)
                sum[c] += ak_elem_value(fy, ak_load_bits(fy, dy.data, row + c));
        }
        for (size_t c = 0; c < width; c++)
            ak_store_bits(fd, dbias.data, c0 + c, ak_layer_from_f64(fd, sum[c]));
    }
    return AK_OK;
}

LOOP_INLINE void relu_loop(int F, ak_tensor y, ak_tensor x)
{
    const fpe_format_id fy = AK_LAYER_FMT(F, y.dtype), fx = AK_LAYER_FMT(F, x.dtype);
    for (size_t i = 0; i < x.n; i++)
        ak_store_bits(fy, y.data, i, ak_relu_elem(fy, fx, ak_load_bits(fx, x.data, i)));
}

int ak_cpu_relu(ak_backend *b, ak_tensor y, ak_tensor x)
{
    (void)b;
    AK_LAYER_SPECIALISE(ak_layer_common2(y.dtype, x.dtype), relu_loop, y, x);
    return AK_OK;
}

LOOP_INLINE void relu_backward_loop(int F, ak_tensor dx, ak_tensor dy, ak_tensor x)
{
    const fpe_format_id fdx = AK_LAYER_FMT(F, dx.dtype), fdy = AK_LAYER_FMT(F, dy.dtype),
                        fx = AK_LAYER_FMT(F, x.dtype);
    for (size_t i = 0; i < x.n; i++) {
        const uint32_t g = ak_load_bits(fdy, dy.data, i), v = ak_load_bits(fx, x.data, i);
        ak_store_bits(fdx, dx.data, i, ak_relu_backward_elem(fdx, fdy, fx, g, v));
    }
}

int ak_cpu_relu_backward(ak_backend *b, ak_tensor dx, ak_tensor dy, ak_tensor x)
{
    (void)b;
    AK_LAYER_SPECIALISE(ak_layer_common3(dx.dtype, dy.dtype, x.dtype), relu_backward_loop, dx, dy,
                        x);
    return AK_OK;
}

/* Window o of a plane (oh, ow) covers x[2oh][2ow .. 2ow+1] and the row
 * below; i00 is the offset of its top-left element. */
LOOP_INLINE void maxpool2_forward_loop(int F, size_t planes, size_t h, size_t w, ak_tensor y,
                                       ak_tensor x)
{
    const fpe_format_id fy = AK_LAYER_FMT(F, y.dtype), fx = AK_LAYER_FMT(F, x.dtype);
    size_t o = 0;
    for (size_t p = 0; p < planes; p++) {
        for (size_t oh = 0; oh < h / 2; oh++) {
            const size_t row = (p * h + 2 * oh) * w;
            for (size_t ow = 0; ow < w / 2; ow++, o++) {
                const size_t i00 = row + 2 * ow;
                const uint32_t v[4] = {
                    ak_load_bits(fx, x.data, i00), ak_load_bits(fx, x.data, i00 + 1),
                    ak_load_bits(fx, x.data, i00 + w), ak_load_bits(fx, x.data, i00 + w + 1)};
                const int k = ak_maxpool2_pick(fx, v[0], v[1], v[2], v[3]);
                ak_store_bits(fy, y.data, o, ak_layer_convert(fx, fy, v[k]));
            }
        }
    }
}

int ak_cpu_maxpool2_forward(ak_backend *b, size_t planes, size_t h, size_t w, ak_tensor y,
                            ak_tensor x)
{
    (void)b;
    AK_LAYER_SPECIALISE(ak_layer_common2(y.dtype, x.dtype), maxpool2_forward_loop, planes, h, w, y,
                        x);
    return AK_OK;
}

LOOP_INLINE void maxpool2_backward_loop(int F, size_t planes, size_t h, size_t w, ak_tensor dx,
                                        ak_tensor dy, ak_tensor x)
{
    const fpe_format_id fdx = AK_LAYER_FMT(F, dx.dtype), fdy = AK_LAYER_FMT(F, dy.dtype),
                        fx = AK_LAYER_FMT(F, x.dtype);
    size_t o = 0;
    for (size_t p = 0; p < planes; p++) {
        for (size_t oh = 0; oh < h / 2; oh++) {
            const size_t row = (p * h + 2 * oh) * w;
            for (size_t ow = 0; ow < w / 2; ow++, o++) {
                const size_t at[4] = {row + 2 * ow, row + 2 * ow + 1, row + w + 2 * ow,
                                      row + w + 2 * ow + 1};
                const int k = ak_maxpool2_pick(
                    fx, ak_load_bits(fx, x.data, at[0]), ak_load_bits(fx, x.data, at[1]),
                    ak_load_bits(fx, x.data, at[2]), ak_load_bits(fx, x.data, at[3]));
                const uint32_t g = ak_layer_convert(fdy, fdx, ak_load_bits(fdy, dy.data, o));
                for (int j = 0; j < 4; j++)
                    ak_store_bits(fdx, dx.data, at[j], j == k ? g : 0);
            }
        }
    }
}

int ak_cpu_maxpool2_backward(ak_backend *b, size_t planes, size_t h, size_t w, ak_tensor dx,
                             ak_tensor dy, ak_tensor x)
{
    (void)b;
    AK_LAYER_SPECIALISE(ak_layer_common3(dx.dtype, dy.dtype, x.dtype), maxpool2_backward_loop,
                        planes, h, w, dx, dy, x);
    return AK_OK;
}
