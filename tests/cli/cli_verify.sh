#!/usr/bin/env bash
# cli_verify.sh: `ampscope emu verify --exhaustive` on slices of the operand
# space (label unit).  The counts are worked out by hand: a slice of N first
# operands (or fp32 high halves) takes all 65536 second operands (low halves),
# so each mode and tininess rule checks N x 65536 cases.  Bad options: one
# line, exit 2.
#   usage: cli_verify.sh PATH-TO-ampscope
set -euo pipefail
source "$(dirname "$0")/lib.sh"
A=$AMPSCOPE
MODES=(near_even near_maxMag minMag min max odd)

# f16_mul, first operands 1.0 .. 1.0+3ulp: 4 x 65536 = 262144 per mode and rule,
# 12 x 262144 = 3145728 in all.
run "$A" emu verify --exhaustive --op f16_mul --round all --first 0x3C00:0x3C03
expect_status 0
expect_out_has 'f16_mul first operands 0x3C00..0x3C03 on 1 rank:'
for m in "${MODES[@]}"; do
    for t in after before; do
        CHECKS=$((CHECKS + 1))
        grep -Eq "^  $m +tininess=$t +262144 checked +0 mismatches\$" <<<"$OUT" ||
            fail "no line: $m $t 262144 checked 0 mismatches"
    done
done
expect_out_has 'total 3145728 checked, 0 mismatches'
CHECKS=$((CHECKS + 1))
[[ $(grep -c 'checked' <<<"$OUT") == 13 ]] || fail "expected 12 mode lines and a total"

# decimal bounds are the same slice
run "$A" emu verify --exhaustive --op f16_mul --first 15360:15363
expect_status 0
expect_out_has 'total 3145728 checked, 0 mismatches'

# f32_to_bf16 on the fp32 inputs 0x3F800000 .. 0x3F80FFFF (1.0 .. just below
# 1.0078125, every bf16 rounding case between two neighbours): 65536 each.
run "$A" emu verify --exhaustive --op f32_to_bf16 --first 0x3F80:0x3F80
expect_status 0
expect_out_has 'total 786432 checked, 0 mismatches'
expect_out_has 'odd          tininess=before        65536 checked          0 mismatches'

# one mode, one rule; f32_to_f16 through the subnormal inputs of fp32 (high halves 0, 1)
run "$A" emu verify --exhaustive --op f32_to_f16 --round rz --tininess before --first 0:1
expect_status 0
expect_out "f32_to_f16 first operands 0x0000..0x0001 on 1 rank:
  minMag       tininess=before       131072 checked          0 mismatches
  total 131072 checked, 0 mismatches"

# division (exact residual through fma) on a small slice around 3.0
run "$A" emu verify --exhaustive --op bf16_div --round all --tininess after --first 0x4040:0x4040
expect_status 0
expect_out_has 'total 393216 checked, 0 mismatches'

# help
run "$A" emu verify --help
expect_status 0
expect_out_has 'usage: ampscope emu verify --exhaustive --op OP'
run "$A" emu --help
expect_out_has 'verify'

# ---- bad input: one line on stderr, exit 2, nothing on stdout ----
bad() {
    local msg=$1
    shift
    run "$A" emu verify "$@"
    expect_status 2
    expect_err_has "$msg"
    CHECKS=$((CHECKS + 1))
    [[ -z $OUT && $(wc -l <<<"$ERR") == 1 ]] || fail "expected one line on stderr only"
}
bad '--exhaustive is required' --op f16_mul
bad "unknown op 'f16_fma'" --exhaustive --op f16_fma
bad '--op is required' --exhaustive
bad "--round takes all, near_even" --exhaustive --op f16_mul --round stoch_prop
bad "not 'sideways'" --exhaustive --op f16_mul --round sideways
bad "--tininess takes both, after or before, not 'never'" --exhaustive --op f16_mul --tininess never
bad "--first takes A:B" --exhaustive --op f16_mul --first 0x3C03:0x3C00
bad "not '0x10000:0x10000'" --exhaustive --op f16_mul --first 0x10000:0x10000
bad "not '65536:65536'" --exhaustive --op f16_mul --first 65536:65536
bad "not '0x3C00'" --exhaustive --op f16_mul --first 0x3C00
bad "not '0xZZ:1'" --exhaustive --op f16_mul --first 0xZZ:1
bad "not ':1'" --exhaustive --op f16_mul --first :1
bad "unknown option '--shard'" --exhaustive --op f16_mul --shard 0/8
bad "" --exhaustive --op

finish
