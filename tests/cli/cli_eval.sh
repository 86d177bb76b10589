#!/usr/bin/env bash
# cli_eval.sh: `ampscope emu eval`, the calculator for people.
#
# Expected bits worked out by hand in the comments, never by running ampscope.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
A=$AMPSCOPE

# ev ARGS... :: EXPECTED-SUBSTRINGS...: status 0 and each substring in stdout.
ev() {
    local args=()
    while [[ $1 != '::' ]]; do
        args+=("$1")
        shift
    done
    shift
    run "$A" emu eval "${args[@]}"
    expect_status 0
    local want
    for want in "$@"; do
        expect_out_has "$want"
    done
}

# The issue's example.  0.00006666666 lies in [2^-14, 2^-13), where the fp16
# ulp is 2^-24: 0.00006666666 * 2^24 = 1118.48..., so 1118 * 2^-24 =
# 6.6637992858886719e-05, normal: exponent field 1, fraction 1118 - 1024 = 94
# = 0x5E -> 0x045E, inexact.  (The fp32 step in between is far from a tie.)
ev fp16 from-f32 0.00006666666 :: 'result  0x045E' '6.6637992858886719e-05' 'normal' 'inexact'
# 1 + 1 = 2 = 0x4000, no flags.
ev fp16 add 1 1 :: 'result  0x4000' 'flags   none'
ev fp16 add -1 -1 :: 'result  0xC000'
# 65504 + 65504 overflows to +inf.
ev fp16 add 0x7BFF 0x7BFF :: 'result  0x7C00' 'inf' 'overflow inexact'
# 65504 * 2 toward zero is 65504 (0x7BFF); both option spellings.
ev fp16 mul 0x7BFF 2 --round minMag :: 'result  0x7BFF' 'overflow inexact'
ev fp16 mul 0x7BFF 2 --round=rz :: 'result  0x7BFF'
# 3.140625 = 11.001001b = 1.1001001b * 2: 8 significant bits, exact in bf16:
# exponent field 128, fraction 1001001b = 0x49 -> 0x4049.
ev bf16 from-f64 3.140625 :: 'result  0x4049' 'flags   none'
# sqrt(-1): invalid, the x86 default NaN 0xFE00; canonical NaN 0x7FFF.
ev fp16 sqrt -1 :: 'result  0xFE00' 'NaN (quiet)' 'invalid'
ev fp16 sqrt -1 --nan canonical :: 'result  0x7FFF' 'invalid'
# --nan cuda: canonical results, but bf16 -> fp32 keeps the NaN's bits (a
# 16-bit shift, as cvt.f32.bf16 on sm_90): the signaling 0x7F81 stays
# 0x7F810000; fp16 -> fp32 gives the canonical 0x7FFFFFFF.
ev bf16 to-f32 0x7F81 --nan cuda :: 'result  0x7F810000'
ev bf16 to-f32 0x7F81 --nan canonical :: 'result  0x7FFFFFFF'
ev fp16 to-f32 0x7E01 --nan cuda :: 'result  0x7FFFFFFF'
ev fp16 sqrt -1 --nan cuda :: 'result  0x7FFF' 'invalid'
ev fp16 lt 1 2 :: 'true'
ev fp16 eq nan nan :: 'false'
# fp32 1 + 2^-24 (0x33800000) is a tie: near_even 1, max 1 + 2^-23.
ev fp32 add 1 0x33800000 :: 'result  0x3F800000' 'inexact'
ev fp32 add 1 0x33800000 --round max :: 'result  0x3F800001'
# 1e-8 is below 2^-25 (about 2.98e-8), half the smallest subnormal: zero,
# underflow and inexact.  65520 rounds to +inf (a tie, to even).
ev fp16 from-f64 1e-8 :: 'result  0x0000' 'zero' 'underflow inexact'
ev fp16 from-f64 65520 :: 'result  0x7C00' 'overflow inexact'
ev fp16 from-f64 -inf :: 'result  0xFC00' 'inf' 'flags   none'
# 2^-14 * 2^-6 = 2^-20 = 16 * 2^-24: the subnormal 0x0010, exact.  With --ftz
# the subnormal result is flushed to +0, raising underflow and inexact.
ev fp16 mul 0x0400 0x2400 :: 'result  0x0010' 'subnormal' 'flags   none'
ev fp16 mul 0x0400 0x2400 --ftz :: 'result  0x0000' 'underflow inexact'
ev fp16 round-to-int 2.5 :: 'result  0x4000' 'flags   none'
ev fp16 round-to-int 2.5 --exact :: 'result  0x4000' 'inexact'
# -1.5 to int32 in near_even is -2: 0xFFFFFFFE.
ev fp16 to-i32 -1.5 :: 'result  0xFFFFFFFE' '-2'
# 2049 = 2^11 + 1 is a tie: 2048 = 0x6800.
ev fp16 from-i32 2049 :: 'result  0x6800' 'inexact'
ev fp16 fma 0x3C00 0x3C00 0x3C00 :: 'result  0x4000'
ev fp16 to-fp32 0x3555 :: 'result  0x3EAAA000'
ev bf16 to-f16 0x3F81 :: 'result  0x3C08'
ev fp16 add -- -1 1 :: 'result  0x0000'

# ---- rejected: exit 2, a one-line message, nothing guessed ---------------------
rejected() {
    run "$A" emu eval "$@"
    expect_status 2
    expect_out ''
    [[ $(printf '%s\n' "$ERR" | wc -l) == 1 ]] || fail "one-line message"
}
rejected fp16 add 1.5x 1
expect_err_has "'1.5x'"
rejected fp16 add 0x12345 1
expect_err_has 'too wide'
rejected fp16 add '' 1
rejected fp16 add ' 1' 1
rejected fp16 add '1 ' 1
rejected fp16 add -0x3C00 1
rejected fp16 add 0x1p3 1   # a C99 hex float, not a bit pattern
rejected fp16 add 0x 1
rejected fp16 add 'nan(' 1
rejected fp99 add 1 1
expect_err_has "unknown format 'fp99'"
rejected fp16 frobnicate 1
rejected fp16 add 1
expect_err_has 'takes 2 operands, got 1'
rejected fp16 add 1 2 3
rejected fp16 add 1 1 --round bogus
rejected fp16 add 1 1 --round
rejected fp16 add 1 1 --tininess sometimes
rejected fp16 add 1 1 --bogus
rejected fp16 from-i32 1.5
rejected fp16 from-i32 2147483648 # 2^31 is not an int32
rejected fp16 from-ui32 -1
rejected fp32 to-f32 1
rejected fp16

finish
