/* emu_ops.h: the emulator's operations by their Berkeley TestFloat names
 * ("f16_add", "f32_to_bf16", "f16_to_i32_r_minMag", ...), in one table.
 *
 * Every entry takes its operands and gives its result as bit patterns in a
 * uint64_t, with a type that says how wide they are and how to read them.
 * `ampscope emu testfloat` runs entries by name; `ampscope emu eval` maps
 * its friendlier operation names onto the same entries.
 */
#ifndef AMPSCOPE_EMU_OPS_H
#define AMPSCOPE_EMU_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fpe.h"

/* The first three match fpe_format_id, so a format id is also a type. */
typedef enum emu_type {
    EMU_F16 = FPE_FMT_F16,
    EMU_BF16 = FPE_FMT_BF16,
    EMU_F32 = FPE_FMT_F32,
    EMU_F64,
    EMU_I32,
    EMU_UI32,
    EMU_I64,
    EMU_UI64,
    EMU_BOOL
} emu_type;

typedef struct emu_type_info {
    const char *prefix;  /* in TestFloat's names: "f16", "ui32" */
    const char *display; /* for people: "fp16", "uint32" */
    int bits;            /* width of the bit pattern; TestFloat prints (bits + 3) / 4 hex digits */
} emu_type_info;

extern const emu_type_info emu_types[];

enum emu_function_flags {
    EMU_USES_EXACT = 1, /* roundToInt and conversions to integers: -exact matters */
    EMU_MIN_MAG = 2     /* *_r_minMag: rounds toward zero whatever the mode */
};

/* Operands x[0..arity-1] as bit patterns; the result as a bit pattern of the
 * result type (signed integers in two's complement, booleans 0/1). */
typedef uint64_t (*emu_call)(fpe_env *env, const uint64_t *x, bool exact);

typedef struct emu_function {
    const char *name;
    int arity;
    emu_type operand[3];
    emu_type result;
    unsigned flags; /* enum emu_function_flags */
    emu_call call;
} emu_function;

extern const emu_function emu_functions[];
extern const size_t emu_function_count;

/* The entry named name, or NULL. */
const emu_function *emu_function_find(const char *name);

/* Runs f in env (flags accumulate in env->flags as in the emulator). */
uint64_t emu_function_run(const emu_function *f, fpe_env *env, const uint64_t *x, bool exact);

/* ---- reading values ------------------------------------------------------ */
bool emu_type_is_float(emu_type t);

/* The value of a float type's bit pattern as a double (exact for all four
 * types); an integer type's value, rounded to double if it must be. */
double emu_to_double(emu_type t, uint64_t bits);

/* Rounds d to float type t in env's mode (t = EMU_F64 gives d's bits). */
uint64_t emu_from_double(emu_type t, fpe_env *env, double d);

/* "zero", "subnormal", "normal", "inf", "NaN (quiet)", "NaN (signaling)". */
const char *emu_classify(emu_type t, uint64_t bits);

#endif
