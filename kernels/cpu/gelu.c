/* cpu/gelu.c: GELU forward and backward (the reference), one element at a
 * time through elem/gelu.h.
 *
 * A 16-bit x has 65536 patterns, and both the fp32 value gelu(x) and the
 * slope's parts (ak_gelu_slope_parts) are functions of x alone: from
 * GELU_TABLE_MIN elements on, they are computed once per pattern into a
 * table the backend keeps (ak_cpu_table), and each element looks them up:
 * the same element code, the same bits, each pattern's series and
 * continued fractions evaluated once instead of once per element. */
#include "backend.h"
#include "elem/gelu.h"

/* Elements from which a table pays for itself: one evaluation per pattern. */
#define GELU_TABLE_MIN ((size_t)AK_CPU_TABLE_PATTERNS)

/* The table for (form, fx), fx fp16 or bf16: base id, then form, then format. */
static void *gelu_table(ak_backend *b, int base, ak_gelu_form form, fpe_format_id fx, size_t n,
                        size_t entry, bool *fresh)
{
    const int id = base + 2 * (form == AK_GELU_TANH) + (fx == FPE_FMT_BF16);
    return ak_cpu_table(b, id, AK_CPU_TABLE_PATTERNS * entry, n >= GELU_TABLE_MIN, fresh);
}

int ak_cpu_gelu(ak_backend *b, ak_gelu_form form, ak_tensor y, ak_tensor x)
{
    const fpe_format_id fy = (fpe_format_id)y.dtype, fx = (fpe_format_id)x.dtype;
    bool fresh;
    uint32_t *tab =
        fx == FPE_FMT_F32 ? NULL : gelu_table(b, AK_TABLE_GELU, form, fx, x.n, sizeof *tab, &fresh);
    if (tab) {
        for (uint32_t v = 0; fresh && v < AK_CPU_TABLE_PATTERNS; v++)
            tab[v] = ak_gelu_f32((int)form, ak_elem_value(fx, v));
        const uint16_t *xs = (const uint16_t *)x.data;
        for (size_t i = 0; i < x.n; i++)
            ak_store_bits(fy, y.data, i, ak_layer_convert(FPE_FMT_F32, fy, tab[xs[i]]));
        return AK_OK;
    }
    for (size_t i = 0; i < x.n; i++)
        ak_store_bits(fy, y.data, i, ak_gelu_elem(fy, fx, (int)form, ak_load_bits(fx, x.data, i)));
    return AK_OK;
}

int ak_cpu_gelu_backward(ak_backend *b, ak_gelu_form form, ak_tensor dx, ak_tensor dy, ak_tensor x)
{
    const fpe_format_id fdx = (fpe_format_id)dx.dtype, fdy = (fpe_format_id)dy.dtype,
                        fx = (fpe_format_id)x.dtype;
    bool fresh;
    double *tab = fx == FPE_FMT_F32
                      ? NULL
                      : gelu_table(b, AK_TABLE_GELU_SLOPE, form, fx, x.n, 2 * sizeof *tab, &fresh);
    if (tab) { /* (base, rest) of pattern v at 2v */
        for (uint32_t v = 0; fresh && v < AK_CPU_TABLE_PATTERNS; v++)
            ak_gelu_slope_parts((int)form, ak_elem_value(fx, v), &tab[2 * v], &tab[2 * v + 1]);
        const uint16_t *xs = (const uint16_t *)x.data;
        for (size_t i = 0; i < x.n; i++) {
            const double *parts = tab + 2 * (size_t)xs[i];
            const double g = ak_elem_value(fdy, ak_load_bits(fdy, dy.data, i));
            const uint32_t r = ak_gelu_slope_round(g, parts[0], parts[1]);
            ak_store_bits(fdx, dx.data, i, ak_layer_convert(FPE_FMT_F32, fdx, r));
        }
        return AK_OK;
    }
    for (size_t i = 0; i < x.n; i++) {
        const uint32_t g = ak_load_bits(fdy, dy.data, i), v = ak_load_bits(fx, x.data, i);
        ak_store_bits(fdx, dx.data, i, ak_gelu_backward_elem(fdx, fdy, fx, (int)form, g, v));
    }
    return AK_OK;
}
