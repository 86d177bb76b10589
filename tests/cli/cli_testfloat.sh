#!/usr/bin/env bash
# cli_testfloat.sh: `ampscope emu testfloat`, TestFloat 3's line format.
#
# Every expected line was worked out by hand (the working is in the comments);
# none was produced by running ampscope.  Flags: 01 inexact, 02 underflow,
# 04 overflow, 08 infinite, 10 invalid.  NaNs: SoftFloat's 8086-SSE rules.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
A=$AMPSCOPE

# tf FUNCTION [OPTIONS...] -- INPUT EXPECTED: one run, status 0, exact output.
tf() {
    local args=()
    while [[ $1 != -- ]]; do
        args+=("$1")
        shift
    done
    run --stdin "$2" "$A" emu testfloat "${args[@]}"
    expect_status 0
    expect_out "$3"
    expect_err_empty
}

# ---- arithmetic -------------------------------------------------------------
# 1 + 1 = 2: fp16 2.0 is exponent field 16, fraction 0 -> 0x4000, exact.
tf f16_add -- $'3C00 3C00\n' '3C00 3C00 4000 00'
# Lower case in, upper case out; fields after the operands are ignored
# (this is testfloat_ver's own input fed back in); leading zeros are allowed
# while the value fits; a tab separates as well as a space; CR LF line ends
# and a last line without a newline are read.
tf f16_add -- $'3c00 3c00\n' '3C00 3C00 4000 00'
tf f16_add -- $'3C00 3C00 4000 00\n' '3C00 3C00 4000 00'
tf f16_add -- $'00003C00 3C00\n' '3C00 3C00 4000 00'
tf f16_add -- $'3C00\t3C00\r\n3C00 3C00' $'3C00 3C00 4000 00\n3C00 3C00 4000 00'
# 65504 * 2 = 131008 lies beyond the largest finite 65504 (0x7BFF):
#   near_even and near_maxMag: past 65520 (max + half an ulp of 32) -> inf;
#   minMag and odd: the largest finite; max (positive): inf; min: largest finite.
# The flags are overflow | inexact = 05 in every mode.
tf f16_mul -- $'7BFF 4000\n' '7BFF 4000 7C00 05'
tf f16_mul -rnear_maxMag -- $'7BFF 4000\n' '7BFF 4000 7C00 05'
tf f16_mul -rminMag -- $'7BFF 4000\n' '7BFF 4000 7BFF 05'
tf f16_mul -rodd -- $'7BFF 4000\n' '7BFF 4000 7BFF 05'
tf f16_mul -rmax -- $'7BFF 4000\n' '7BFF 4000 7C00 05'
tf f16_mul -rmin -- $'7BFF 4000\n' '7BFF 4000 7BFF 05'
# -65504 * 2: min goes to -inf (FC00), max stays at -65504 (FBFF).
tf f16_mul -rmin -- $'FBFF 4000\n' 'FBFF 4000 FC00 05'
tf f16_mul -rmax -- $'FBFF 4000\n' 'FBFF 4000 FBFF 05'
# 65504 + 2 = 65506 is within half an ulp (16) of 65504: inexact only.
tf f16_add -- $'7BFF 4000\n' '7BFF 4000 7BFF 01'
# 2^-14 * 0.5 = 2^-15 = 512 * 2^-24: the subnormal 0x0200, exact: no flags.
# (1 + 2^-10) * 2^-14 * 0.5 = 512.5 * 2^-24: a tie, even 512 -> 0x0200,
# tiny and inexact: underflow | inexact = 03.
tf f16_mul -- $'0400 3800\n0401 3800\n' $'0400 3800 0200 00\n0401 3800 0200 03'
# 1/0 = +inf with infinite (08); 0/0 is invalid: the default NaN FE00.
tf f16_div -- $'3C00 0000\n0000 0000\n' $'3C00 0000 7C00 08\n0000 0000 FE00 10'
# sqrt(4) = 2 exactly; sqrt(-1) is invalid -> FE00.
tf f16_sqrt -- $'4400\nBC00\n' $'4400 4000 00\nBC00 FE00 10'
# 1 * 1 + 1 = 2, exact.
tf f16_mulAdd -- $'3C00 3C00 3C00\n' '3C00 3C00 3C00 4000 00'
# bf16: 0x3B80 is 2^-8 (exponent field 119); 1 + 2^-8 is half an ulp (2^-7)
# above 1: near_even keeps 3F80 (even), max goes up to 3F81.
tf bf16_add -- $'3F80 3B80\n' '3F80 3B80 3F80 01'
tf bf16_add -rmax -- $'3F80 3B80\n' '3F80 3B80 3F81 01'
# fp32: 0x33800000 is 2^-24 (exponent field 103), half an ulp of 1.
tf f32_add -- $'3F800000 33800000\n' '3F800000 33800000 3F800000 01'
tf f32_add -rmax -- $'3F800000 33800000\n' '3F800000 33800000 3F800001 01'
# The largest fp32 times 2 overflows to +inf.
tf f32_mul -- $'7F7FFFFF 40000000\n' '7F7FFFFF 40000000 7F800000 05'

# ---- comparisons: booleans are one digit -----------------------------------
tf f16_eq -- $'3C00 3C00\n8000 0000\n' $'3C00 3C00 1 00\n8000 0000 1 00' # -0 == +0
tf f16_lt -- $'3C00 4000\n' '3C00 4000 1 00'
tf f16_le -- $'4000 3C00\n' '4000 3C00 0 00'
# A quiet NaN: eq and lt_quiet are quiet; lt and eq_signaling raise invalid.
tf f16_eq -- $'7E00 3C00\n' '7E00 3C00 0 00'
tf f16_lt_quiet -- $'7E00 3C00\n' '7E00 3C00 0 00'
tf f16_lt -- $'7E00 3C00\n' '7E00 3C00 0 10'
tf f16_eq_signaling -- $'7E00 3C00\n' '7E00 3C00 0 10'
# A signaling NaN (0x7D00: fraction's top bit clear) raises invalid even in eq.
tf f16_eq -- $'7D00 3C00\n' '7D00 3C00 0 10'

# ---- conversions between formats ---------------------------------------------
# 0x387FC000: exponent field 112 (2^-15), fraction 0x7FC000 = 1 - 2^-9:
# (2 - 2^-9) * 2^-15 = 1023 * 2^-24, the subnormal 0x03FF, exact.
tf f32_to_f16 -- $'387FC000\n' '387FC000 03FF 00'
# 0x387FE000 = (2 - 2^-10) * 2^-15 = 1023.5 * 2^-24: a tie, even 1024 = 0x0400
# (the smallest normal).  With unbounded exponent the value has 11 bits and
# stays below 2^-14, so it is tiny both before and after rounding: 03.
tf f32_to_f16 -- $'387FE000\n' '387FE000 0400 03'
tf f32_to_f16 -tininessbefore -- $'387FE000\n' '387FE000 0400 03'
# 0x387FF000 = (2 - 2^-11) * 2^-15 = 1023.75 * 2^-24 -> 0x0400, inexact.
# After rounding to 11 bits with unbounded exponent it is 2^-14, not tiny:
# 01.  Before rounding it is below 2^-14: tiny, so 03.
tf f32_to_f16 -- $'387FF000\n' '387FF000 0400 01'
tf f32_to_f16 -tininessafter -- $'387FF000\n' '387FF000 0400 01'
tf f32_to_f16 -tininessbefore -- $'387FF000\n' '387FF000 0400 03'
# 0x477FF000 = (2 - 2^-11) * 2^15 = 65520: a tie between 65504 (odd
# fraction 0x3FF) and 2^16 (even, overflow): inf, 05.  Toward zero it is
# 65504 and no overflow (the rounded value does not exceed the largest): 01.
tf f32_to_f16 -- $'477FF000\n' '477FF000 7C00 05'
tf f32_to_f16 -rminMag -- $'477FF000\n' '477FF000 7BFF 01'
# 0x477FE000 = 65504 exactly.
tf f32_to_f16 -- $'477FE000\n' '477FE000 7BFF 00'
# The signaling NaN 0x7F800001 is quieted; its payload (fraction bit 0)
# does not reach fp16's 9 payload bits: 7E00, invalid.  The quiet NaN
# FFC00000 keeps its sign: FE00, no flag.
tf f32_to_f16 -- $'7F800001\nFFC00000\n' $'7F800001 7E00 10\nFFC00000 FE00 00'
# 0x3555: exponent field 13 (2^-2), fraction 0x155 -> fp32 exponent field 125
# (0x7D), fraction 0x155 << 13 = 0x2AA000: 0x3EAAA000, exact.
# 0x0001 = 2^-24 -> exponent field 103: 0x33800000.
tf f16_to_f32 -- $'3555\n0001\n' $'3555 3EAAA000 00\n0001 33800000 00'
# The signaling NaN 0x7D00 (payload bit 8) is quieted, the payload moving up
# 13 bits to bit 21: 0x7FC00000 | 0x200000 = 0x7FE00000, invalid.
tf f16_to_f32 -- $'7D00\n' '7D00 7FE00000 10'
# 0x3F808000 = 1 + 2^-8, half a bf16 ulp above 1: near_even 3F80;
# near_maxMag, max and odd 3F81; min 3F80.
tf f32_to_bf16 -- $'3F808000\n' '3F808000 3F80 01'
tf f32_to_bf16 -rnear_maxMag -- $'3F808000\n' '3F808000 3F81 01'
tf f32_to_bf16 -rodd -- $'3F808000\n' '3F808000 3F81 01'
tf f32_to_bf16 -rmin -- $'3F808000\n' '3F808000 3F80 01'
# 0x3F818000 = 1 + 2^-7 + 2^-8: a tie between 3F81 (odd) and 3F82 (even).
tf f32_to_bf16 -- $'3F818000\n' '3F818000 3F82 01'
tf f32_to_bf16 -rodd -- $'3F818000\n' '3F818000 3F81 01'
# fp16 <-> bf16: 1.0; 1 + 2^-7 is 0x3C08 in fp16 (fraction 8 of 1024), exact;
# bf16 0x4780 = 2^16 overflows fp16; fp16 1 + 2^-10 is far below half a bf16
# ulp above 1: 3F80, inexact.
tf f16_to_bf16 -- $'3C00\n3C01\n' $'3C00 3F80 00\n3C01 3F80 01'
tf bf16_to_f16 -- $'3F81\n4780\n' $'3F81 3C08 00\n4780 7C00 05'
# fp16 <-> double: 0x3FF0020000000000 = 1 + 2^-11, half an fp16 ulp above 1.
tf f16_to_f64 -- $'3C00\n' '3C00 3FF0000000000000 00'
tf f64_to_f16 -- $'3FF0020000000000\n' '3FF0020000000000 3C00 01'
tf f64_to_f16 -rmax -- $'3FF0020000000000\n' '3FF0020000000000 3C01 01'

# ---- rounding to integers -----------------------------------------------------
# 0x3E00 = 1.5: near_even 2 (0x4000); minMag 1 (0x3C00).  Inexact only with
# -exact (TestFloat's default is -notexact).  0x4100 = 2.5: near_even 2,
# near_maxMag 3 (0x4200).
tf f16_roundToInt -- $'3E00\n4100\n' $'3E00 4000 00\n4100 4000 00'
tf f16_roundToInt -exact -- $'3E00\n' '3E00 4000 01'
tf f16_roundToInt -rminMag -- $'3E00\n' '3E00 3C00 00'
tf f16_roundToInt -rnear_maxMag -- $'4100\n' '4100 4200 00'
tf f16_to_i32 -- $'3E00\nBC00\n' $'3E00 00000002 00\nBC00 FFFFFFFF 00'
tf f16_to_i32 -exact -- $'3E00\n' '3E00 00000002 01'
tf f16_to_i32 -rminMag -- $'3E00\n' '3E00 00000001 00'
# The _r_minMag variants ignore -r.
tf f16_to_i32_r_minMag -rnear_even -- $'3E00\n' '3E00 00000001 00'
# +inf to int32 is invalid: x86's integer indefinite 0x80000000.  -1 to
# uint32 is invalid too: 0xFFFFFFFF.
tf f16_to_i32 -- $'7C00\n' '7C00 80000000 10'
tf f16_to_ui32 -- $'BC00\n' 'BC00 FFFFFFFF 10'
tf f16_to_i64 -- $'C000\n' 'C000 FFFFFFFFFFFFFFFE 00'
# 2049 = 2^11 + 1: a tie between 2048 (0x6800: exponent field 26) and 2050.
# -1 -> 0xBC00.  65536 and 2^32 - 1 overflow fp16.
tf i32_to_f16 -- $'00000801\nFFFFFFFF\n00010000\n' \
    $'00000801 6800 01\nFFFFFFFF BC00 00\n00010000 7C00 05'
tf ui32_to_f16 -- $'FFFFFFFF\n' 'FFFFFFFF 7C00 05'
tf i64_to_f16 -- $'0000000000000001\n' '0000000000000001 3C00 00'

# ---- empty input is fine ---------------------------------------------------------
tf f16_add -- '' ''

# ---- bad input: exit 2, the line number, earlier answers written ------------------
run --stdin $'3C00 3C00\n3C00\n4000 4000\n' "$A" emu testfloat f16_add
expect_status 2
expect_out '3C00 3C00 4000 00'
expect_err_has 'ampscope emu testfloat: line 2: expected 2 operands, got 1'
[[ $(printf '%s\n' "$ERR" | wc -l) == 1 ]] || fail "one-line message"

run --stdin $'3C00 3C00\n3C00 4000\n3C0G 3C00\n' "$A" emu testfloat f16_add
expect_status 2
expect_out $'3C00 3C00 4000 00\n3C00 4000 4200 00' # 1 + 2 = 3 = 0x4200
expect_err_has 'line 3:'
expect_err_has '3C0G'

run --stdin $'3C00 13C00\n' "$A" emu testfloat f16_add
expect_status 2
expect_err_has 'line 1:'
expect_err_has 'too wide'
run --stdin $'100000000\n' "$A" emu testfloat f32_to_f16 # 2^32: 33 bits
expect_status 2
expect_err_has 'too wide'
run --stdin $'FFFFFFFF\n' "$A" emu testfloat f32_to_f16 # fits
expect_status 0
run --stdin $'10000000000000000\n' "$A" emu testfloat f64_to_f16 # 2^64
expect_status 2
expect_err_has 'too wide'
run --stdin $'0x3C00 3C00\n' "$A" emu testfloat f16_add # TestFloat writes no prefix
expect_status 2
run --stdin $'3C00 3C00\n\n' "$A" emu testfloat f16_add # a blank line is a short line
expect_status 2
expect_out '3C00 3C00 4000 00'
expect_err_has 'line 2: expected 2 operands, got 0'
run --stdin $'3C00 3C00 3C00\n3C00 3C00\n' "$A" emu testfloat f16_mulAdd
expect_status 2
expect_err_has 'line 2: expected 3 operands, got 2'

# ---- bad command lines: exit 2 ---------------------------------------------------
run --stdin $'3C00 3C00\n' "$A" emu testfloat f16_frobnicate
expect_status 2
expect_err_has "unknown function 'f16_frobnicate'"
expect_out ''
run --stdin $'3C00 3C00\n' "$A" emu testfloat f16_add -rnearest
expect_status 2
expect_err_has "unknown rounding mode 'nearest'"
run --stdin $'3C00 3C00\n' "$A" emu testfloat f16_add -bogus
expect_status 2
run --stdin $'3C00 3C00\n' "$A" emu testfloat
expect_status 2
run --stdin $'3C00 3C00\n' "$A" emu testfloat f16_add f16_sub
expect_status 2

finish
