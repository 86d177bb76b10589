/* emu_ops.c: the table of emulator operations by TestFloat name (emu_ops.h).
 *
 * One adapter per operation turns the uniform (env, uint64_t operands,
 * exact) call into the emulator's typed one.  The adapters and the table
 * rows are written once per format by the macros below, so fp16, bf16 and
 * fp32 cannot drift apart.
 */
#include "emu_ops.h"

#include <string.h>

const emu_type_info emu_types[] = {
    [EMU_F16] = {"f16", "fp16", 16},  [EMU_BF16] = {"bf16", "bf16", 16},
    [EMU_F32] = {"f32", "fp32", 32},  [EMU_F64] = {"f64", "fp64", 64},
    [EMU_I32] = {"i32", "int32", 32}, [EMU_UI32] = {"ui32", "uint32", 32},
    [EMU_I64] = {"i64", "int64", 64}, [EMU_UI64] = {"ui64", "uint64", 64},
    [EMU_BOOL] = {"bool", "bool", 1},
};

static uint64_t f64_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static double f64_from_bits(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* ---- adapters ----------------------------------------------------------- */
#define EMU_ADAPTER(name, expr)                                                                    \
    static uint64_t call_##name(fpe_env *env, const uint64_t *x, bool exact)                       \
    {                                                                                              \
        (void)exact;                                                                               \
        return (uint64_t)(expr);                                                                   \
    }

/* Integer results are cast to their own unsigned width first, so -1 as an
 * int32 is 0xFFFFFFFF and not 0xFFFFFFFFFFFFFFFF. */
#define EMU_FORMAT_ADAPTERS(F, T)                                                                  \
    EMU_ADAPTER(F##_add, fpe_##F##_add(env, (T)x[0], (T)x[1]))                                     \
    EMU_ADAPTER(F##_sub, fpe_##F##_sub(env, (T)x[0], (T)x[1]))                                     \
    EMU_ADAPTER(F##_mul, fpe_##F##_mul(env, (T)x[0], (T)x[1]))                                     \
    EMU_ADAPTER(F##_div, fpe_##F##_div(env, (T)x[0], (T)x[1]))                                     \
    EMU_ADAPTER(F##_sqrt, fpe_##F##_sqrt(env, (T)x[0]))                                            \
    EMU_ADAPTER(F##_mulAdd, fpe_##F##_mulAdd(env, (T)x[0], (T)x[1], (T)x[2]))                      \
    EMU_ADAPTER(F##_roundToInt, fpe_##F##_roundToInt(env, (T)x[0], exact))                         \
    EMU_ADAPTER(F##_eq, fpe_##F##_eq(env, (T)x[0], (T)x[1]))                                       \
    EMU_ADAPTER(F##_le, fpe_##F##_le(env, (T)x[0], (T)x[1]))                                       \
    EMU_ADAPTER(F##_lt, fpe_##F##_lt(env, (T)x[0], (T)x[1]))                                       \
    EMU_ADAPTER(F##_eq_signaling, fpe_##F##_eq_signaling(env, (T)x[0], (T)x[1]))                   \
    EMU_ADAPTER(F##_le_quiet, fpe_##F##_le_quiet(env, (T)x[0], (T)x[1]))                           \
    EMU_ADAPTER(F##_lt_quiet, fpe_##F##_lt_quiet(env, (T)x[0], (T)x[1]))                           \
    EMU_ADAPTER(F##_to_i32, (uint32_t)fpe_##F##_to_i32(env, (T)x[0], exact))                       \
    EMU_ADAPTER(F##_to_ui32, fpe_##F##_to_ui32(env, (T)x[0], exact))                               \
    EMU_ADAPTER(F##_to_i64, (uint64_t)fpe_##F##_to_i64(env, (T)x[0], exact))                       \
    EMU_ADAPTER(F##_to_ui64, fpe_##F##_to_ui64(env, (T)x[0], exact))                               \
    EMU_ADAPTER(i32_to_##F, fpe_i32_to_##F(env, (int32_t)(uint32_t)x[0]))                          \
    EMU_ADAPTER(ui32_to_##F, fpe_ui32_to_##F(env, (uint32_t)x[0]))                                 \
    EMU_ADAPTER(i64_to_##F, fpe_i64_to_##F(env, (int64_t)x[0]))                                    \
    EMU_ADAPTER(ui64_to_##F, fpe_ui64_to_##F(env, x[0]))                                           \
    EMU_ADAPTER(F##_to_f64, f64_bits(fpe_##F##_to_f64(env, (T)x[0])))                              \
    EMU_ADAPTER(f64_to_##F, fpe_f64_to_##F(env, f64_from_bits(x[0])))

EMU_FORMAT_ADAPTERS(f16, uint16_t)
EMU_FORMAT_ADAPTERS(bf16, uint16_t)
EMU_FORMAT_ADAPTERS(f32, uint32_t)

EMU_ADAPTER(f16_to_f32, fpe_f16_to_f32(env, (uint16_t)x[0]))
EMU_ADAPTER(f32_to_f16, fpe_f32_to_f16(env, (uint32_t)x[0]))
EMU_ADAPTER(bf16_to_f32, fpe_bf16_to_f32(env, (uint16_t)x[0]))
EMU_ADAPTER(f32_to_bf16, fpe_f32_to_bf16(env, (uint32_t)x[0]))
EMU_ADAPTER(f16_to_bf16, fpe_f16_to_bf16(env, (uint16_t)x[0]))
EMU_ADAPTER(bf16_to_f16, fpe_bf16_to_f16(env, (uint16_t)x[0]))

/* ---- the table ---------------------------------------------------------- */
/* clang-format off */
#define EMU_ROW(name, arity, a, b, c, result, flags) \
    {#name, arity, {a, b, c}, result, flags, call_##name}
#define EMU_MIN_MAG_ROW(F, K, to, R) \
    {#F "_to_" #to "_r_minMag", 1, {K, K, K}, R, EMU_USES_EXACT | EMU_MIN_MAG, call_##F##_to_##to}

/* F: the TestFloat prefix, K: its emu_type.  Unused operand slots repeat K. */
#define EMU_FORMAT_ROWS(F, K)                                         \
    EMU_ROW(F##_add, 2, K, K, K, K, 0),                               \
    EMU_ROW(F##_sub, 2, K, K, K, K, 0),                               \
    EMU_ROW(F##_mul, 2, K, K, K, K, 0),                               \
    EMU_ROW(F##_div, 2, K, K, K, K, 0),                               \
    EMU_ROW(F##_sqrt, 1, K, K, K, K, 0),                              \
    EMU_ROW(F##_mulAdd, 3, K, K, K, K, 0),                            \
    EMU_ROW(F##_roundToInt, 1, K, K, K, K, EMU_USES_EXACT),           \
    EMU_ROW(F##_eq, 2, K, K, K, EMU_BOOL, 0),                         \
    EMU_ROW(F##_le, 2, K, K, K, EMU_BOOL, 0),                         \
    EMU_ROW(F##_lt, 2, K, K, K, EMU_BOOL, 0),                         \
    EMU_ROW(F##_eq_signaling, 2, K, K, K, EMU_BOOL, 0),               \
    EMU_ROW(F##_le_quiet, 2, K, K, K, EMU_BOOL, 0),                   \
    EMU_ROW(F##_lt_quiet, 2, K, K, K, EMU_BOOL, 0),                   \
    EMU_ROW(F##_to_i32, 1, K, K, K, EMU_I32, EMU_USES_EXACT),         \
    EMU_ROW(F##_to_ui32, 1, K, K, K, EMU_UI32, EMU_USES_EXACT),       \
    EMU_ROW(F##_to_i64, 1, K, K, K, EMU_I64, EMU_USES_EXACT),         \
    EMU_ROW(F##_to_ui64, 1, K, K, K, EMU_UI64, EMU_USES_EXACT),       \
    EMU_MIN_MAG_ROW(F, K, i32, EMU_I32),                              \
    EMU_MIN_MAG_ROW(F, K, ui32, EMU_UI32),                            \
    EMU_MIN_MAG_ROW(F, K, i64, EMU_I64),                              \
    EMU_MIN_MAG_ROW(F, K, ui64, EMU_UI64),                            \
    EMU_ROW(i32_to_##F, 1, EMU_I32, EMU_I32, EMU_I32, K, 0),          \
    EMU_ROW(ui32_to_##F, 1, EMU_UI32, EMU_UI32, EMU_UI32, K, 0),      \
    EMU_ROW(i64_to_##F, 1, EMU_I64, EMU_I64, EMU_I64, K, 0),          \
    EMU_ROW(ui64_to_##F, 1, EMU_UI64, EMU_UI64, EMU_UI64, K, 0),      \
    EMU_ROW(F##_to_f64, 1, K, K, K, EMU_F64, 0),                      \
    EMU_ROW(f64_to_##F, 1, EMU_F64, EMU_F64, EMU_F64, K, 0)
/* clang-format on */

const emu_function emu_functions[] = {
    EMU_FORMAT_ROWS(f16, EMU_F16),
    EMU_FORMAT_ROWS(bf16, EMU_BF16),
    EMU_FORMAT_ROWS(f32, EMU_F32),
    EMU_ROW(f16_to_f32, 1, EMU_F16, EMU_F16, EMU_F16, EMU_F32, 0),
    EMU_ROW(f32_to_f16, 1, EMU_F32, EMU_F32, EMU_F32, EMU_F16, 0),
    EMU_ROW(bf16_to_f32, 1, EMU_BF16, EMU_BF16, EMU_BF16, EMU_F32, 0),
    EMU_ROW(f32_to_bf16, 1, EMU_F32, EMU_F32, EMU_F32, EMU_BF16, 0),
    EMU_ROW(f16_to_bf16, 1, EMU_F16, EMU_F16, EMU_F16, EMU_BF16, 0),
    EMU_ROW(bf16_to_f16, 1, EMU_BF16, EMU_BF16, EMU_BF16, EMU_F16, 0),
};
const size_t emu_function_count = sizeof emu_functions / sizeof emu_functions[0];

const emu_function *emu_function_find(const char *name)
{
    for (size_t i = 0; i < emu_function_count; i++)
        if (strcmp(emu_functions[i].name, name) == 0) return &emu_functions[i];
    return NULL;
}

uint64_t emu_function_run(const emu_function *f, fpe_env *env, const uint64_t *x, bool exact)
{
    uint8_t round = env->round;
    if (f->flags & EMU_MIN_MAG) env->round = FPE_RZ;
    uint64_t r = f->call(env, x, exact);
    env->round = round;
    int bits = emu_types[f->result].bits;
    return bits < 64 ? r & ((UINT64_C(1) << bits) - 1) : r;
}

/* ---- reading values ------------------------------------------------------ */
bool emu_type_is_float(emu_type t)
{
    return t == EMU_F16 || t == EMU_BF16 || t == EMU_F32 || t == EMU_F64;
}

double emu_to_double(emu_type t, uint64_t bits)
{
    fpe_env scratch = fpe_env_default(); /* for display: flags are not wanted */
    switch (t) {
    case EMU_F16: return fpe_f16_to_f64(&scratch, (uint16_t)bits);
    case EMU_BF16: return fpe_bf16_to_f64(&scratch, (uint16_t)bits);
    case EMU_F32: return fpe_f32_to_f64(&scratch, (uint32_t)bits);
    case EMU_F64: return f64_from_bits(bits);
    case EMU_I32: return (double)(int32_t)(uint32_t)bits;
    case EMU_I64: return (double)(int64_t)bits;
    case EMU_UI32:
    case EMU_UI64:
    case EMU_BOOL: return (double)bits;
    }
    return 0.0;
}

uint64_t emu_from_double(emu_type t, fpe_env *env, double d)
{
    switch (t) {
    case EMU_F16: return fpe_f64_to_f16(env, d);
    case EMU_BF16: return fpe_f64_to_bf16(env, d);
    case EMU_F32: return fpe_f64_to_f32(env, d);
    default: return f64_bits(d);
    }
}

const char *emu_classify(emu_type t, uint64_t bits)
{
    int exp_bits, frac_bits;
    if (t == EMU_F64) {
        exp_bits = 11;
        frac_bits = 52;
    } else if (t == EMU_F16 || t == EMU_BF16 || t == EMU_F32) {
        exp_bits = fpe_formats[t].exp_bits;
        frac_bits = fpe_formats[t].p - 1;
    } else {
        return "integer";
    }
    uint64_t exp_max = (UINT64_C(1) << exp_bits) - 1;
    uint64_t exp = bits >> frac_bits & exp_max;
    uint64_t frac = bits & ((UINT64_C(1) << frac_bits) - 1);
    if (exp == 0) return frac ? "subnormal" : "zero";
    if (exp < exp_max) return "normal";
    if (frac == 0) return "inf";
    /* IEEE 754-2008 6.2.1: the first fraction bit set means quiet. */
    return frac >> (frac_bits - 1) ? "NaN (quiet)" : "NaN (signaling)";
}
