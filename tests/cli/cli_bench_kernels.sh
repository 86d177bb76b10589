#!/usr/bin/env bash
# cli_bench_kernels.sh: `ampscope bench kernels` on the cpu backend runs every
# row and writes well-formed CSV; bad options are refused with one line and
# exit status 2.  Rates are not tested (a benchmark, not a test).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
A=$AMPSCOPE

run "$A" bench kernels --backend cpu --quick --elements 65536 --csv
expect_status 0
expect_err_empty
header='backend,device,kernel,variant,elements,seconds,rate,unit,baseline,baseline_rate,ratio,target,status'
[[ $(printf '%s\n' "$OUT" | head -n 1) == "$header" ]] || fail "CSV header"
rows=$(printf '%s\n' "$OUT" | tail -n +2)
# 13 fields (the device name is quoted and may hold commas: drop it first), positive rates
bad=$(printf '%s\n' "$rows" | sed 's/,"[^"]*",/,DEVICE,/' | awk -F, 'NF != 13 || !($7 > 0)' | wc -l)
[[ $bad == 0 ]] || fail "$bad malformed CSV rows"
for want in ',copy,fp32,' ',cast,fp32->fp16 near_even,' ',emu-chop,fp32->fp16 stoch_prop,' \
    ',cast,fp16->fp32,' ',unscale_check,fp32 50 tensors,' ',stats,fp32 to fp16' \
    ',update,adamw' ',gemm-ceiling,fp32 32F' ',gemm,fp32 32F 256^3,'; do
    expect_out_has "$want"
done

run "$A" bench kernels --backend cpu --quick --elements 65536 --no-gemm
expect_status 0
expect_out_has 'backend cpu'
expect_out_has 'emu-chop'

run "$A" bench kernels --backend tpu
expect_status 2
expect_err_has "unknown backend 'tpu'"
run "$A" bench kernels --elements 12
expect_status 2
expect_err_has '--elements wants an integer'
run "$A" bench kernels --frobnicate
expect_status 2
expect_err_has "unknown argument '--frobnicate'"
# without a GPU, asking for cuda is a clear error (skipped where a GPU exists)
if ! command -v nvidia-smi >/dev/null 2>&1; then
    run "$A" bench kernels --backend cuda
    expect_status 2
    expect_err_has 'cuda: '
fi

finish
