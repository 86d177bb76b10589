/* hand_cases.h: values worked out by hand, each with its derivation.
 *
 * test_oracle.c holds the MPFR oracle to them; test_emulate_options.c holds
 * the emulator to them directly, so these expectations depend on neither. */
#ifndef AMPSCOPE_TESTS_HAND_CASES_H
#define AMPSCOPE_TESTS_HAND_CASES_H

#include <stdint.h>

#include "fpe.h"
#include "oracle.h"

#define F16  FPE_FMT_F16
#define BF16 FPE_FMT_BF16
#define F32  FPE_FMT_F32
enum { RNE = FPE_RNE, RNA = FPE_RNA, RZ = FPE_RZ, RD = FPE_RD, RU = FPE_RU, RO = FPE_RO };
enum { AFTER = FPE_TININESS_AFTER, BEFORE = FPE_TININESS_BEFORE };
enum { NX = 0x01, UF = 0x02, OF = 0x04, DZ = 0x08, NV = 0x10 };
enum { X86 = FPE_NAN_X86, CAN = FPE_NAN_CANONICAL };

typedef struct hand_case {
    orc_op op;
    int fmt, mode, tininess, ftz, daz, nan;
    uint64_t a, b, c;
    uint64_t want;
    uint8_t flags;
} hand_case;

/* clang-format off */
#define H(op, fmt, mode, a, want, flags) {op, fmt, mode, AFTER, 0, 0, X86, a, 0, 0, want, flags}
#define H2(op, fmt, mode, a, b, want, flags) {op, fmt, mode, AFTER, 0, 0, X86, a, b, 0, want, flags}
#define H3(op, fmt, mode, a, b, c, want, flags) {op, fmt, mode, AFTER, 0, 0, X86, a, b, c, want, flags}
#define HT(op, fmt, mode, tin, a, want, flags) {op, fmt, mode, tin, 0, 0, X86, a, 0, 0, want, flags}

static const hand_case hand_cases[] = {
    /* 1 + 1 = 2: 0x3C00 is 1.0 (biased exponent 15), 0x4000 is 2.0 */
    H2(ORC_ADD, F16, RNE, 0x3C00, 0x3C00, 0x4000, 0),

    /* 0.00006666666f = 0x388BCF64.  Times 2^24 (the fp16 ulp in [2^-14, 2^-13)
     * is 2^-24) it is 1118.48..., so the fp16 significand is 1118 = 0x400 +
     * 0x5E: bits 0x0400 | 0x5E = 0x045E, inexact; upward 1119 -> 0x045F. */
    H(ORC_TO_F16, F32, RNE, 0x388BCF64, 0x045E, NX),
    H(ORC_TO_F16, F32, RZ, 0x388BCF64, 0x045E, NX),
    H(ORC_TO_F16, F32, RU, 0x388BCF64, 0x045F, NX),
    H(ORC_TO_F16, F32, RNA, 0x388BCF64, 0x045E, NX),

    /* 65520 = 0x477FF000 is the midpoint of max 65504 (significand 0x3FF, odd)
     * and 2^16: RNE and RNA go up to 2^16, which overflows -> inf, OF|NX.
     * Overflow is judged on the result rounded with an unbounded exponent:
     * toward zero that is 65504 = max, so RZ and RD give max with NX only
     * (a first draft of this table expected OF there; the oracle was right).
     * RO truncates to max, which is odd: max, NX. */
    H(ORC_TO_F16, F32, RNE, 0x477FF000, 0x7C00, OF | NX),
    H(ORC_TO_F16, F32, RNA, 0x477FF000, 0x7C00, OF | NX),
    H(ORC_TO_F16, F32, RZ, 0x477FF000, 0x7BFF, NX),
    H(ORC_TO_F16, F32, RD, 0x477FF000, 0x7BFF, NX),
    H(ORC_TO_F16, F32, RU, 0x477FF000, 0x7C00, OF | NX),
    H(ORC_TO_F16, F32, RO, 0x477FF000, 0x7BFF, NX),
    H(ORC_TO_F16, F32, RD, 0xC77FF000, 0xFC00, OF | NX),
    H(ORC_TO_F16, F32, RU, 0xC77FF000, 0xFBFF, NX),
    /* 65536 = 2^16 = 0x47800000 overflows in every mode: RZ and RO give max
     * with OF|NX */
    H(ORC_TO_F16, F32, RZ, 0x47800000, 0x7BFF, OF | NX),
    H(ORC_TO_F16, F32, RO, 0x47800000, 0x7BFF, OF | NX),
    H(ORC_TO_F16, F32, RD, 0x47800000, 0x7BFF, OF | NX),
    H(ORC_TO_F16, F32, RNE, 0x47800000, 0x7C00, OF | NX),
    H(ORC_TO_F16, F32, RU, 0xC7800000, 0xFBFF, OF | NX),
    /* 65519 (just below the midpoint) rounds to max without overflow */
    H(ORC_FROM_I32, F16, RNE, 65519, 0x7BFF, NX),
    H(ORC_FROM_I32, F16, RNE, 65520, 0x7C00, OF | NX),
    H(ORC_FROM_I32, F16, RNE, (uint32_t)-65536, 0xFC00, OF | NX),

    /* 2^-25 = 0x33000000 is half the smallest subnormal 2^-24: a tie between
     * 0 (even) and 0x0001.  RNE -> +0; RNA -> 0x0001; RO: truncates to 0 and
     * is inexact -> 0x0001.  Tiny and inexact: UF|NX everywhere. */
    H(ORC_TO_F16, F32, RNE, 0x33000000, 0x0000, UF | NX),
    H(ORC_TO_F16, F32, RNA, 0x33000000, 0x0001, UF | NX),
    H(ORC_TO_F16, F32, RZ, 0x33000000, 0x0000, UF | NX),
    H(ORC_TO_F16, F32, RD, 0x33000000, 0x0000, UF | NX),
    H(ORC_TO_F16, F32, RU, 0x33000000, 0x0001, UF | NX),
    H(ORC_TO_F16, F32, RO, 0x33000000, 0x0001, UF | NX),
    H2(ORC_MUL, F16, RNE, 0x0001, 0x3800, 0x0000, UF | NX), /* 2^-24 * 0.5 */
    H2(ORC_MUL, F16, RNA, 0x0001, 0x3800, 0x0001, UF | NX),
    H2(ORC_MUL, F16, RD, 0x8001, 0x3800, 0x8001, UF | NX),
    H2(ORC_MUL, F16, RU, 0x8001, 0x3800, 0x8000, UF | NX),

    /* Tininess before vs after.  x = 2^-14 - 2^-26 = 0x387FF000 (f32 exponent
     * -15, fraction (1 - 2^-11)).  On the subnormal grid (step 2^-24) it is
     * 2^-26 below 2^-14, less than half a step: RNE gives 0x0400, inexact.
     * With 11 bits and no exponent limit the grid below 2^-14 has step 2^-25
     * and x is the midpoint of 2^-14 - 2^-25 (odd) and 2^-14: RNE goes up to
     * 2^-14, so x is not tiny after rounding; it is tiny before. */
    HT(ORC_TO_F16, F32, RNE, AFTER, 0x387FF000, 0x0400, NX),
    HT(ORC_TO_F16, F32, RNE, BEFORE, 0x387FF000, 0x0400, UF | NX),
    HT(ORC_TO_F16, F32, RNA, AFTER, 0x387FF000, 0x0400, NX),
    HT(ORC_TO_F16, F32, RU, AFTER, 0x387FF000, 0x0400, NX),
    HT(ORC_TO_F16, F32, RU, BEFORE, 0x387FF000, 0x0400, UF | NX),
    /* RZ: truncates to the largest subnormal, tiny either way */
    HT(ORC_TO_F16, F32, RZ, AFTER, 0x387FF000, 0x03FF, UF | NX),
    /* RO: unbounded truncation 2^-14 - 2^-25 is odd: stays tiny; the
     * subnormal truncation 0x03FF is odd too */
    HT(ORC_TO_F16, F32, RO, AFTER, 0x387FF000, 0x03FF, UF | NX),
    /* x = 2^-14 - 2^-25 = 0x387FE000 is exact with 11 bits, so tiny after
     * rounding too, though on the subnormal grid it is the midpoint of
     * 0x03FF (odd) and 0x0400 and RNE returns the normal 0x0400 */
    HT(ORC_TO_F16, F32, RNE, AFTER, 0x387FE000, 0x0400, UF | NX),
    HT(ORC_TO_F16, F32, RNE, BEFORE, 0x387FE000, 0x0400, UF | NX),
    HT(ORC_TO_F16, F32, RZ, AFTER, 0x387FE000, 0x03FF, UF | NX),

    /* Ties away: 1 + 2^-11 (0x1000 is 2^-11, exponent field 4) is the midpoint
     * of 1 (0x3C00, even) and 1 + 2^-10 (0x3C01). */
    H2(ORC_ADD, F16, RNE, 0x3C00, 0x1000, 0x3C00, NX),
    H2(ORC_ADD, F16, RNA, 0x3C00, 0x1000, 0x3C01, NX),
    H2(ORC_ADD, F16, RZ, 0x3C00, 0x1000, 0x3C00, NX),
    H2(ORC_ADD, F16, RU, 0x3C00, 0x1000, 0x3C01, NX),
    H2(ORC_ADD, F16, RD, 0xBC00, 0x9000, 0xBC01, NX),
    /* Round to odd: truncation 0x3C00 is even and inexact -> 0x3C01 */
    H2(ORC_ADD, F16, RO, 0x3C00, 0x1000, 0x3C01, NX),
    /* 1 + 2^-10 + 2^-11 = midpoint of 0x3C01 and 0x3C02: RNE/RNA -> 0x3C02;
     * RO keeps the odd truncation 0x3C01 */
    H2(ORC_ADD, F16, RNE, 0x3C01, 0x1000, 0x3C02, NX),
    H2(ORC_ADD, F16, RNA, 0x3C01, 0x1000, 0x3C02, NX),
    H2(ORC_ADD, F16, RO, 0x3C01, 0x1000, 0x3C01, NX),
    /* 1 + 0.75 ulp (0x1200 = 1.5 * 2^-11) */
    H2(ORC_ADD, F16, RNE, 0x3C00, 0x1200, 0x3C01, NX),
    H2(ORC_ADD, F16, RZ, 0x3C00, 0x1200, 0x3C00, NX),
    H2(ORC_ADD, F16, RO, 0x3C00, 0x1200, 0x3C01, NX),
    /* exact results take no flags in any mode */
    H2(ORC_ADD, F16, RO, 0x3C00, 0x3C00, 0x4000, 0),

    /* bf16: 1 + 2^-8 = 0x3F808000 is the midpoint of 0x3F80 and 0x3F81 */
    H(ORC_TO_BF16, F32, RNE, 0x3F808000, 0x3F80, NX),
    H(ORC_TO_BF16, F32, RNA, 0x3F808000, 0x3F81, NX),
    H(ORC_TO_BF16, F32, RO, 0x3F808000, 0x3F81, NX),
    H(ORC_TO_BF16, F32, RU, 0x3F808000, 0x3F81, NX),
    /* 1 + 3*2^-8: midpoint of 0x3F81 and 0x3F82 */
    H(ORC_TO_BF16, F32, RNE, 0x3F818000, 0x3F82, NX),
    H(ORC_TO_BF16, F32, RO, 0x3F818000, 0x3F81, NX),
    /* fp32 max (2 - 2^-23) * 2^127 is above bf16 max (2 - 2^-7) * 2^127 plus
     * half its ulp (2^-8 * 2^127): RNE overflows; RZ and RO stay at max with
     * no overflow since it is below 2^128 */
    H(ORC_TO_BF16, F32, RNE, 0x7F7FFFFF, 0x7F80, OF | NX),
    H(ORC_TO_BF16, F32, RZ, 0x7F7FFFFF, 0x7F7F, NX),
    H(ORC_TO_BF16, F32, RO, 0x7F7FFFFF, 0x7F7F, NX),
    /* 2^-127 (fp32 subnormal 0x00400000) is the bf16 subnormal 0x40 * 2^-133 */
    H(ORC_TO_BF16, F32, RNE, 0x00400000, 0x0040, 0),
    /* 2^-149 is far below bf16's 2^-133 */
    H(ORC_TO_BF16, F32, RNE, 0x00000001, 0x0000, UF | NX),
    H(ORC_TO_BF16, F32, RU, 0x00000001, 0x0001, UF | NX),
    H(ORC_TO_BF16, F32, RD, 0x80000001, 0x8001, UF | NX),
    /* 257 = 2^8 + 1: bf16 has 8 bits, so the midpoint of 256 (0x4380, even)
     * and 258 (0x4381) */
    H(ORC_FROM_I32, BF16, RNE, 257, 0x4380, NX),
    H(ORC_FROM_I32, BF16, RNA, 257, 0x4381, NX),
    H(ORC_FROM_I32, BF16, RO, 257, 0x4381, NX),

    /* 1/3: 2^-2 * 1.333..; 0.333.. * 1024 = 341.33 -> fraction 341 = 0x155,
     * exponent field 13 -> 0x3555 (RNE, RZ), 0x3556 (RU) */
    H2(ORC_DIV, F16, RNE, 0x3C00, 0x4200, 0x3555, NX),
    H2(ORC_DIV, F16, RZ, 0x3C00, 0x4200, 0x3555, NX),
    H2(ORC_DIV, F16, RU, 0x3C00, 0x4200, 0x3556, NX),
    /* sqrt 2 = 1.41421..; 0.41421 * 1024 = 424.15 -> 0x3C00 + 0x1A8 */
    H(ORC_SQRT, F16, RNE, 0x4000, 0x3DA8, NX),
    H(ORC_SQRT, F16, RU, 0x4000, 0x3DA9, NX),
    H(ORC_SQRT, F16, RNE, 0x4400, 0x4000, 0), /* sqrt 4 = 2 */
    /* (1 + 2^-10)^2 - (1 + 2^-9) = 2^-20 exactly, the subnormal 16 * 2^-24 */
    H3(ORC_MULADD, F16, RNE, 0x3C01, 0x3C01, 0xBC02, 0x0010, 0),
    /* max * 2 overflows in every mode; RO gives max with OF|NX */
    H2(ORC_MUL, F16, RNE, 0x7BFF, 0x4000, 0x7C00, OF | NX),
    H2(ORC_MUL, F16, RZ, 0x7BFF, 0x4000, 0x7BFF, OF | NX),
    H2(ORC_MUL, F16, RO, 0x7BFF, 0x4000, 0x7BFF, OF | NX),
    H2(ORC_MUL, F16, RD, 0x7BFF, 0x4000, 0x7BFF, OF | NX),
    H2(ORC_MUL, F16, RD, 0xFBFF, 0x4000, 0xFC00, OF | NX),
    H2(ORC_ADD, F32, RNE, 0x7F7FFFFF, 0x7F7FFFFF, 0x7F800000, OF | NX),
    H2(ORC_ADD, F32, RZ, 0x7F7FFFFF, 0x7F7FFFFF, 0x7F7FFFFF, OF | NX),
    /* 2^-126 * 0.5 = 2^-127, an exact subnormal: no flags */
    H2(ORC_MUL, F32, RNE, 0x00800000, 0x3F000000, 0x00400000, 0),

    /* zeros: x + (-x) = +0, -0 rounding down; -0 + -0 = -0 */
    H2(ORC_ADD, F16, RNE, 0x3C00, 0xBC00, 0x0000, 0),
    H2(ORC_ADD, F16, RD, 0x3C00, 0xBC00, 0x8000, 0),
    H2(ORC_SUB, F16, RNE, 0x3C00, 0x3C00, 0x0000, 0),
    H2(ORC_SUB, F16, RD, 0x3C00, 0x3C00, 0x8000, 0),
    H2(ORC_ADD, F16, RNE, 0x8000, 0x8000, 0x8000, 0),
    H2(ORC_ADD, F16, RNE, 0x0000, 0x8000, 0x0000, 0),
    H2(ORC_ADD, F16, RD, 0x0000, 0x8000, 0x8000, 0),
    H2(ORC_SUB, F16, RNE, 0x8000, 0x0000, 0x8000, 0),

    /* NaNs (x86): the first NaN operand, quieted; invalid if any is signaling */
    H2(ORC_ADD, F16, RNE, 0x7C01, 0x7E05, 0x7E01, NV),
    H2(ORC_ADD, F16, RNE, 0x3C00, 0xFC01, 0xFE01, NV),
    H2(ORC_ADD, F16, RNE, 0x7E00, 0x7C01, 0x7E00, NV),
    H2(ORC_SUB, F16, RNE, 0x3C00, 0x7E05, 0x7E05, 0), /* the NaN keeps its sign */
    H2(ORC_MUL, F32, RNE, 0x7FA00001, 0x3F800000, 0x7FE00001, NV),
    /* invalid operations give the default NaN */
    H2(ORC_ADD, F16, RNE, 0x7C00, 0xFC00, 0xFE00, NV),
    H2(ORC_SUB, BF16, RNE, 0x7F80, 0x7F80, 0xFFC0, NV),
    H2(ORC_MUL, F16, RNE, 0x0000, 0x7C00, 0xFE00, NV),
    H2(ORC_DIV, F16, RNE, 0x0000, 0x8000, 0xFE00, NV),
    H2(ORC_DIV, F32, RNE, 0x7F800000, 0xFF800000, 0xFFC00000, NV),
    H2(ORC_DIV, F16, RNE, 0x3C00, 0x0000, 0x7C00, DZ),
    H2(ORC_DIV, F16, RNE, 0xBC00, 0x0000, 0xFC00, DZ),
    H2(ORC_DIV, F16, RNE, 0x3C00, 0x8000, 0xFC00, DZ),
    H2(ORC_DIV, F16, RNE, 0x3C00, 0x7C00, 0x0000, 0),
    H(ORC_SQRT, F16, RNE, 0xBC00, 0xFE00, NV),
    H(ORC_SQRT, F16, RNE, 0xFC00, 0xFE00, NV),
    H(ORC_SQRT, F16, RNE, 0x8000, 0x8000, 0),
    H(ORC_SQRT, F16, RNE, 0x7C00, 0x7C00, 0),
    H(ORC_SQRT, F16, RNE, 0xFC01, 0xFE01, NV),
    /* mulAdd: 0 * inf + qNaN is invalid with the default NaN (SoftFloat) */
    H3(ORC_MULADD, F16, RNE, 0x0000, 0x7C00, 0x7E05, 0xFE00, NV),
    H3(ORC_MULADD, F16, RNE, 0x7C00, 0x0000, 0x7C05, 0xFE00, NV),
    /* finite * finite + sNaN propagates c quieted */
    H3(ORC_MULADD, F16, RNE, 0x3C00, 0x3C00, 0x7C05, 0x7E05, NV),
    /* inf * 2 + qNaN: c, no flag */
    H3(ORC_MULADD, F16, RNE, 0x4000, 0x7C00, 0x7E05, 0x7E05, 0),
    /* inf * 1 - inf: invalid */
    H3(ORC_MULADD, F16, RNE, 0x7C00, 0x3C00, 0xFC00, 0xFE00, NV),
    H3(ORC_MULADD, F16, RNE, 0x7C00, 0x3C00, 0x7C00, 0x7C00, 0),
    /* a NaN in a or b wins over c */
    H3(ORC_MULADD, F16, RNE, 0x3C00, 0x7E01, 0x7C02, 0x7E01, NV),
    H3(ORC_MULADD, BF16, RNE, 0x7FC1, 0x7F81, 0x3F80, 0x7FC1, NV),
    /* 0 * x + c = c exactly; (+0 * -1) + -0 = -0; (+0 * 1) + -0 = +0 */
    H3(ORC_MULADD, F16, RNE, 0x0000, 0x3C00, 0x3555, 0x3555, 0),
    H3(ORC_MULADD, F16, RNE, 0x0000, 0xBC00, 0x8000, 0x8000, 0),
    H3(ORC_MULADD, F16, RNE, 0x0000, 0x3C00, 0x8000, 0x0000, 0),
    H3(ORC_MULADD, F16, RD, 0x0000, 0x3C00, 0x8000, 0x8000, 0),

    /* NaN conversions: sign kept, payload left-justified, quiet bit set.
     * f32 0xFFC12345 -> f16: 0x412345 >> 13 = 0x209: 0x8000 | 0x7C00 | 0x209 */
    H(ORC_TO_F16, F32, RNE, 0x7F800001, 0x7E00, NV),
    H(ORC_TO_F16, F32, RNE, 0xFFC12345, 0xFE09, 0),
    H(ORC_TO_F32, F16, RNE, 0x7C01, 0x7FC02000, NV),   /* 1 << 13 */
    H(ORC_TO_F32, BF16, RNE, 0x7F81, 0x7FC10000, NV),  /* 1 << 16 */
    H(ORC_TO_BF16, F32, RNE, 0xFF812345, 0xFFC1, NV),  /* 0x012345 >> 16 = 1 */
    H(ORC_TO_BF16, F16, RNE, 0x7D00, 0x7FE0, NV),      /* 0x100 >> 3 = 0x20 */
    H(ORC_TO_F16, BF16, RNE, 0xFFC1, 0xFE08, 0),       /* 0x41 << 3 = 0x208 */
    H(ORC_TO_F64, F16, RNE, 0x7E01, UINT64_C(0x7FF8040000000000), 0), /* 1 << 42 */
    H(ORC_TO_F64, F32, RNE, 0xFF800001, UINT64_C(0xFFF8000020000000), NV), /* 1 << 29 */
    H(ORC_FROM_F64, F16, RNE, UINT64_C(0x7FF0000000000001), 0x7E00, NV),
    H(ORC_FROM_F64, F32, RNE, UINT64_C(0xFFF8000020000000), 0xFFC00001, 0),
    H(ORC_TO_F32, F16, RNE, 0xFC00, 0xFF800000, 0),
    H(ORC_TO_F32, F16, RNE, 0x0001, 0x33800000, 0), /* 2^-24, exact */

    /* to integers: 2.5 -> 2 (RNE, RZ, RD), 3 (RNA, RU, RO: truncation 2 is even) */
    H(ORC_TO_I32_X, F16, RNE, 0x4100, 2, NX),
    H(ORC_TO_I32_X, F16, RNA, 0x4100, 3, NX),
    H(ORC_TO_I32_X, F16, RZ, 0x4100, 2, NX),
    H(ORC_TO_I32_X, F16, RD, 0x4100, 2, NX),
    H(ORC_TO_I32_X, F16, RU, 0x4100, 3, NX),
    H(ORC_TO_I32_X, F16, RO, 0x4100, 3, NX),
    H(ORC_TO_I32, F16, RNE, 0x4100, 2, 0),
    H(ORC_TO_I32_X, F16, RNE, 0xC100, 0xFFFFFFFE, NX),
    H(ORC_TO_I32_X, F16, RNA, 0xC100, 0xFFFFFFFD, NX),
    H(ORC_TO_I32_X, F16, RD, 0xC100, 0xFFFFFFFD, NX),
    H(ORC_TO_I32_X, F16, RU, 0xC100, 0xFFFFFFFE, NX),
    H(ORC_TO_I32_X, F16, RO, 0xC100, 0xFFFFFFFD, NX),
    H(ORC_TO_I64_X, F16, RNE, 0xC100, UINT64_C(0xFFFFFFFFFFFFFFFE), NX),
    /* 3.5 -> 4 in RNE (tie to even), 3 in RO */
    H(ORC_TO_I32_X, F16, RNE, 0x4300, 4, NX),
    H(ORC_TO_I32_X, F16, RO, 0x4300, 3, NX),
    /* 2^31 does not fit i32 (x86: 0x80000000, invalid, no inexact) but fits
     * ui32; -2^31 fits i32 */
    H(ORC_TO_I32_X, F32, RNE, 0x4F000000, 0x80000000, NV),
    H(ORC_TO_UI32_X, F32, RNE, 0x4F000000, 0x80000000, 0),
    H(ORC_TO_I32_X, F32, RNE, 0xCF000000, 0x80000000, 0),
    H(ORC_TO_I64, F32, RNE, 0x5F000000, UINT64_C(0x8000000000000000), NV), /* 2^63 */
    H(ORC_TO_UI64, F32, RNE, 0x5F000000, UINT64_C(0x8000000000000000), 0),
    H(ORC_TO_I64, F32, RNE, 0xDF000000, UINT64_C(0x8000000000000000), 0),  /* -2^63 */
    H(ORC_TO_UI64, F32, RNE, 0x5F800000, UINT64_MAX, NV),                   /* 2^64 */
    /* -0.5 to unsigned: rounds to 0 (fine) in RNE/RZ, to -1 (invalid) in RD */
    H(ORC_TO_UI32_X, F16, RNE, 0xB800, 0, NX),
    H(ORC_TO_UI32_X, F16, RZ, 0xB800, 0, NX),
    H(ORC_TO_UI32_X, F16, RD, 0xB800, 0xFFFFFFFF, NV),
    H(ORC_TO_UI64, F16, RNE, 0xBC00, UINT64_MAX, NV),
    /* NaN and infinities */
    H(ORC_TO_I32, F16, RNE, 0x7E00, 0x80000000, NV),
    H(ORC_TO_I32, F16, RNE, 0x7C00, 0x80000000, NV),
    H(ORC_TO_I64, F16, RNE, 0xFC00, UINT64_C(0x8000000000000000), NV),
    H(ORC_TO_UI32, F16, RNE, 0xFC00, 0xFFFFFFFF, NV),
    H(ORC_TO_UI64, F32, RNE, 0x7F800000, UINT64_MAX, NV),
    H(ORC_TO_I32, F16, RNE, 0x7BFF, 65504, 0),
    H(ORC_TO_I32_X, F16, RNE, 0x0001, 0, NX),

    /* roundToInt: 0.5 -> +0 (RNE: tie to even), 1 (RNA, RU, RO) */
    H(ORC_RTI_EXACT, F16, RNE, 0x3800, 0x0000, NX),
    H(ORC_RTI_EXACT, F16, RNA, 0x3800, 0x3C00, NX),
    H(ORC_RTI_EXACT, F16, RZ, 0x3800, 0x0000, NX),
    H(ORC_RTI_EXACT, F16, RD, 0x3800, 0x0000, NX),
    H(ORC_RTI_EXACT, F16, RU, 0x3800, 0x3C00, NX),
    H(ORC_RTI_EXACT, F16, RO, 0x3800, 0x3C00, NX),
    H(ORC_RTI, F16, RNE, 0x3800, 0x0000, 0),
    H(ORC_RTI_EXACT, F16, RU, 0xB800, 0x8000, NX), /* a zero keeps a's sign */
    H(ORC_RTI_EXACT, F16, RD, 0xB800, 0xBC00, NX),
    H(ORC_RTI_EXACT, F16, RNE, 0x4100, 0x4000, NX), /* 2.5 -> 2 */
    H(ORC_RTI_EXACT, F16, RNA, 0x4100, 0x4200, NX), /* 2.5 -> 3 */
    H(ORC_RTI_EXACT, F16, RO, 0x4100, 0x4200, NX),
    H(ORC_RTI_EXACT, F16, RO, 0x4200, 0x4200, 0),   /* 3 is an integer */
    H(ORC_RTI_EXACT, F16, RO, 0x4400, 0x4400, 0),   /* 4 is an integer, even */
    H(ORC_RTI_EXACT, F16, RNE, 0x6400, 0x6400, 0),  /* 1024 */
    H(ORC_RTI_EXACT, F16, RU, 0x0001, 0x3C00, NX),
    H(ORC_RTI_EXACT, F16, RD, 0x0001, 0x0000, NX),
    H(ORC_RTI, F16, RNE, 0x7C01, 0x7E01, NV),
    H(ORC_RTI, F16, RNE, 0xFC00, 0xFC00, 0),
    H(ORC_RTI_EXACT, BF16, RNE, 0x3FC0, 0x4000, NX), /* 1.5 -> 2 */
    H(ORC_RTI_EXACT, F32, RNE, 0x4B000001, 0x4B000001, 0), /* 2^23 + 1 */
    H(ORC_RTI_EXACT, F32, RNE, 0x4AFFFFFF, 0x4B000000, NX), /* 2^23 - 0.5 -> 2^23 */

    /* from integers */
    H(ORC_FROM_I32, F16, RNE, 0, 0x0000, 0),
    H(ORC_FROM_I32, F16, RNE, (uint32_t)-1, 0xBC00, 0),
    H(ORC_FROM_UI64, F32, RNE, UINT64_MAX, 0x5F800000, NX),  /* 2^64 - 1 -> 2^64 */
    H(ORC_FROM_UI64, F32, RZ, UINT64_MAX, 0x5F7FFFFF, NX),
    H(ORC_FROM_I64, F32, RNE, UINT64_C(0x8000000000000000), 0xDF000000, 0), /* -2^63 */
    H(ORC_FROM_UI32, F16, RNE, 0xFFFFFFFF, 0x7C00, OF | NX),
    H(ORC_FROM_UI32, F16, RZ, 0xFFFFFFFF, 0x7BFF, OF | NX),
    H(ORC_FROM_UI32, BF16, RNE, 0xFFFFFFFF, 0x4F80, NX), /* -> 2^32 */

    /* flush to zero: 2^-24 + 2^-24 = 2^-23 exact subnormal -> 0 with UF|NX */
    {ORC_ADD, F16, RNE, AFTER, 1, 0, X86, 0x0001, 0x0001, 0, 0x0000, UF | NX},
    {ORC_ADD, F16, RNE, AFTER, 0, 0, X86, 0x0001, 0x0001, 0, 0x0002, 0},
    {ORC_ADD, F16, RNE, AFTER, 1, 0, X86, 0x8001, 0x8001, 0, 0x8000, UF | NX},
    /* not tiny after rounding (see above): stays 0x0400; tiny before: flushed */
    {ORC_TO_F16, F32, RNE, AFTER, 1, 0, X86, 0x387FF000, 0, 0, 0x0400, NX},
    {ORC_TO_F16, F32, RNE, BEFORE, 1, 0, X86, 0x387FF000, 0, 0, 0x0000, UF | NX},
    /* denormals are zero: 2^-24 * inf = 0 * inf, invalid */
    {ORC_MUL, F16, RNE, AFTER, 0, 1, X86, 0x0001, 0x7C00, 0, 0xFE00, NV},
    {ORC_MUL, F16, RNE, AFTER, 0, 0, X86, 0x0001, 0x7C00, 0, 0x7C00, 0},
    {ORC_ADD, F16, RNE, AFTER, 0, 1, X86, 0x0001, 0x3C00, 0, 0x3C00, 0},
    {ORC_ADD, F16, RNE, AFTER, 0, 0, X86, 0x0001, 0x3C00, 0, 0x3C00, NX},
    {ORC_DIV, F16, RNE, AFTER, 0, 1, X86, 0x3C00, 0x8001, 0, 0xFC00, DZ},
    {ORC_TO_F32, F16, RNE, AFTER, 0, 1, X86, 0x8001, 0, 0, 0x80000000, 0},
    /* canonical NaNs */
    {ORC_ADD, F16, RNE, AFTER, 0, 0, CAN, 0x7C01, 0x3C00, 0, 0x7FFF, NV},
    {ORC_ADD, BF16, RNE, AFTER, 0, 0, CAN, 0x7F80, 0xFF80, 0, 0x7FFF, NV},
    {ORC_SQRT, F32, RNE, AFTER, 0, 0, CAN, 0xBF800000, 0, 0, 0x7FFFFFFF, NV},
    {ORC_TO_F16, F32, RNE, AFTER, 0, 0, CAN, 0xFFC12345, 0, 0, 0x7FFF, 0},
    {ORC_TO_I32, F16, RNE, AFTER, 0, 0, CAN, 0x7E00, 0, 0, 0, NV},
    {ORC_TO_I32, F16, RNE, AFTER, 0, 0, CAN, 0x7C00, 0, 0, 0x7FFFFFFF, NV},
    {ORC_TO_I32, F16, RNE, AFTER, 0, 0, CAN, 0xFC00, 0, 0, 0x80000000, NV},
    {ORC_TO_UI64, F16, RNE, AFTER, 0, 0, CAN, 0xFC00, 0, 0, 0, NV},
    {ORC_TO_UI32, F32, RNE, AFTER, 0, 0, CAN, 0xBF800000, 0, 0, 0, NV},
    {ORC_TO_UI32, F32, RNE, AFTER, 0, 0, CAN, 0x4F800000, 0, 0, 0xFFFFFFFF, NV},
};

/* clang-format on */

#define N_HAND_CASES (sizeof hand_cases / sizeof hand_cases[0])

#endif
