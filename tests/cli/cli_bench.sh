#!/usr/bin/env bash
# cli_bench.sh: `ampscope bench emu` runs, checks its references and writes
# well-formed CSV.  The rates themselves are not tested (a benchmark, not a
# test); a disagreement between the emulator and MPFR or F16C is an error.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
A=$AMPSCOPE

run "$A" bench emu --quick --csv
expect_status 0
expect_err_empty
header='kind,operation,format,mode,implementation,rate,unit,target,status,versus,ratio'
[[ $(printf '%s\n' "$OUT" | head -n 1) == "$header" ]] || fail "CSV header"
rows=$(printf '%s\n' "$OUT" | tail -n +2)
# Every row has 11 fields and a positive rate.
bad=$(printf '%s\n' "$rows" | awk -F, 'NF != 11 || !($6 > 0)' | wc -l)
[[ $bad == 0 ]] || fail "$bad malformed CSV rows"
for want in 'scalar,add,fp16,near_even,mpfr,' 'scalar,add,fp16,near_even,emulator,' \
    'scalar,mul,bf16,stoch_prop,emulator,' 'scalar,fma,fp32,near_even,emulator,' \
    'scalar,sqrt,bf16,near_even,emulator,' 'array,f32->f16,fp16,minMag,emulator,' \
    'array,f32->bf16,bf16,stoch_prop,emulator,'; do
    expect_out_has "$want"
done
# Targets carry pass or miss.
bad=$(printf '%s\n' "$rows" | awk -F, '$8 != "" && $9 != "pass" && $9 != "miss"' | wc -l)
[[ $bad == 0 ]] || fail "rows with a target but no pass/miss"

run "$A" bench emu --quick
expect_status 0
expect_out_has 'x'  # ratios
expect_out_has 'vs mpfr'
expect_out_has 'array rounding f32 -> fp16/bf16 (issue 19)'

# The array table alone, as CSV: the library agreed with the code before issue 19 on every
# row (else the status is 1), every mode and input set is there, rates are positive.
run "$A" bench emu --chop --quick --csv
expect_status 0
expect_err_empty
header='format,inputs,mode,variant,before,after,after/before,hardware,hw_rate,after/hw,target'
[[ $(printf '%s\n' "$OUT" | head -n 1) == "$header" ]] || fail "chop CSV header"
rows=$(printf '%s\n' "$OUT" | tail -n +2)
[[ $(printf '%s\n' "$rows" | wc -l) == 72 ]] || fail "chop CSV: not 72 rows"
bad=$(printf '%s\n' "$rows" | awk -F, 'NF != 11 || !($5 > 0) || !($6 > 0)' | wc -l)
[[ $bad == 0 ]] || fail "$bad malformed chop CSV rows"
for want in 'fp16,gradient,near_even,-,' 'bf16,fp16-normal,stoch_equal,+counts,' \
    'fp16,gradient,min,+counts,' 'bf16,gradient,stoch_prop,fpe_chop_f32,'; do
    expect_out_has "$want"
done

# The array-arithmetic table (issue 19), as CSV: the array call agreed with the scalar loop on
# every row (else the status is 1); 6 operations x 2 formats x 3 modes x 2 input sets.
run "$A" bench emu --array --quick --csv
expect_status 0
expect_err_empty
[[ $(printf '%s\n' "$OUT" | head -n 1) == 'operation,format,mode,inputs,loop,array,array/loop,target,status' ]] ||
    fail "array CSV header"
rows=$(printf '%s\n' "$OUT" | tail -n +2)
[[ $(printf '%s\n' "$rows" | wc -l) == 72 ]] || fail "array CSV: not 72 rows"
bad=$(printf '%s\n' "$rows" | awk -F, 'NF != 9 || !($5 > 0) || !($6 > 0) || ($9 != "pass" && $9 != "miss")' | wc -l)
[[ $bad == 0 ]] || fail "$bad malformed array CSV rows"
expect_out_has 'fma,bf16,stoch_prop,gradient,'
expect_out_has 'sqrt,fp16,minMag,normal,'

# The scalar div, sqrt, fma, mul and add table alone, as CSV: the library agreed with the code
# before issue 19 on every result and flag (else the status is 1); 5 ops x 3 formats x 2 input
# sets x 8 modes; the targeted rows (normal inputs, deterministic modes; of mul, fp16's and
# fp32's, of add, fp32's) say pass or miss, with their target (2.1, fp16 mul 1.5, fp32 1.4).
run "$A" bench emu --scalar --quick --csv
expect_status 0
expect_err_empty
header='operation,format,inputs,mode,before,after,after/before,target,status'
[[ $(printf '%s\n' "$OUT" | head -n 1) == "$header" ]] || fail "scalar CSV header"
rows=$(printf '%s\n' "$OUT" | tail -n +2)
[[ $(printf '%s\n' "$rows" | wc -l) == 240 ]] || fail "scalar CSV: not 240 rows"
bad=$(printf '%s\n' "$rows" | awk -F, 'NF != 9 || !($5 > 0) || !($6 > 0) || $9 == "DIFFER" ||
    ($8 != "" && $9 != "pass" && $9 != "miss")' | wc -l)
[[ $bad == 0 ]] || fail "$bad malformed scalar CSV rows"
for want in 'div,fp16,normal,near_even,' 'fma,fp32,edge,stoch_prop,' 'sqrt,bf16,normal,odd,' \
    'mul,fp32,edge,min,' 'add,bf16,edge,odd,'; do
    expect_out_has "$want"
done
targets=$(printf '%s\n' "$rows" | awk -F, '($1 == "mul" || $1 == "add") && $8 != "" {
    print $1 "," $2 "," $3 "," $8}' | sort -u | tr '\n' ' ')
[[ $targets == 'add,fp32,normal,1.4 mul,fp16,normal,1.5 mul,fp32,normal,1.4 ' ]] ||
    fail "mul and add targets: $targets"

# bench allreduce: a header and 12 rows (the fp32 loop and three presets at 2, 8, 64 ranks),
# each with a positive rate and a ratio to the loop; bad --elements exits 2 with one line.
run "$A" bench allreduce --quick --csv
expect_status 0
expect_err_empty
[[ $(printf '%s\n' "$OUT" | head -n 1) == 'what,comm,ranks,elements,seconds,mb_per_s,vs_loop,vs_mpi' ]] ||
    fail "allreduce CSV header"
rows=$(printf '%s\n' "$OUT" | tail -n +2)
[[ $(printf '%s\n' "$rows" | wc -l) == 12 ]] || fail "allreduce rows: $rows"
bad=$(printf '%s\n' "$rows" | awk -F, 'NF != 8 || !($6 > 0) || !($7 > 0)' | wc -l)
[[ $bad == 0 ]] || fail "$bad malformed allreduce rows"
for want in 'fp32 loop,fp32,64,4096,' 'pytorch-fp16-hook,fp16,2,4096,' 'pytorch-bf16-hook,bf16,8,'; do
    expect_out_has "$want"
done
run "$A" bench allreduce --elements 3
expect_status 2
expect_err_has '--elements wants an integer in [64, 4194304]'

finish
