#!/usr/bin/env bash
# bench/gpu/run.sh [checks|bench|all]: issue 7's GPU work in one call on a
# lent H100, from what bench/gpu/build.sh prepared (carry build-gpu-carry).
#
#   checks  every gpu-labelled test (cuda against the cpu reference), the
#           exhaustive intrinsics comparison, the tensor-core probe
#   bench   bench kernels --backend cuda; bench train on simplenet (cuda,
#           with --tf32 --log) and lenet5 (cpu and cuda); the PyTorch
#           baseline (bench/torch_simplenet.py)
#
# Each part fits in one 10-minute call.  Logs and CSV go to $OUT (or
# ./gpu-out); a summary table is printed last.
set -uo pipefail
part=${1:-all}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
carry=build-gpu-carry
out=${OUT:-$root/gpu-out}
mkdir -p "$out"
[[ -d $carry/bin ]] || { echo "run.sh: no $carry (run bench/gpu/build.sh here first)" >&2; exit 2; }
case $part in checks | bench | all) ;; *) echo "run.sh: unknown part '$part'" >&2; exit 2 ;; esac
if [[ ! -d /tmp/ampscope-libs/lib ]]; then
    mkdir -p /tmp/ampscope-libs && tar -C /tmp/ampscope-libs -xJf "$carry/libs.tar.xz"
fi
export LD_LIBRARY_PATH=/tmp/ampscope-libs/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
A=$carry/bin/ampscope
declare -a summary=()
note() { summary+=("$1"); }

{
    date -u +"%Y-%m-%d %H:%M UTC"
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total --format=csv
    "$A" --version
} 2>&1 | tee "$out/device.txt"

if [[ $part == checks || $part == all ]]; then
    : >"$out/checks.log"
    start=$SECONDS
    build-gpu-carry/bin/gpu_intrinsics --op all --csv "$out/intrinsics.csv" >"$out/intrinsics.txt" 2>&1
    note "$(printf '%-32s exit %3d  %4d s' "gpu_intrinsics (all inputs)" $? $((SECONDS - start)))"
    start=$SECONDS
    build-gpu-carry/bin/gpu_tc_probe --csv "$out/tc_probe.csv" >"$out/tc_probe.txt" 2>&1
    note "$(printf '%-32s exit %3d  %4d s' "gpu_tc_probe" $? $((SECONDS - start)))"
    while IFS=$'\t' read -r -a t; do
        name=${t[0]}
        case $name in gpu_intrinsics_* | gpu_tc_probe*) continue ;; esac
        start=$SECONDS
        timeout 300 "${t[@]:1}" >>"$out/checks.log" 2>&1
        rc=$?
        echo "== $name: exit $rc ($((SECONDS - start)) s)" >>"$out/checks.log"
        note "$(printf '%-32s exit %3d  %4d s' "$name" "$rc" $((SECONDS - start)))"
    done <"$carry/tests.txt"
fi

if [[ $part == bench || $part == all ]]; then
    log=$out/bench.log
    : >"$log"
    bench() {
        local name=$1
        shift
        local start=$SECONDS
        echo "== $name: $*" >>"$log"
        timeout 240 "$@" >>"$log" 2>&1
        local rc=$?
        note "$(printf '%-32s exit %3d  %4d s' "$name" "$rc" $((SECONDS - start)))"
    }
    bench "kernels cuda" "$A" bench kernels --backend cuda
    bench "train simplenet cuda" "$A" bench train --net simplenet --backend cuda --tf32 --log \
        --steps 200
    bench "train lenet5 cuda" "$A" bench train --net lenet5 --backend cuda --data "$carry/data"
    bench "train lenet5 cpu" "$A" bench train --net lenet5 --backend cpu --data "$carry/data" \
        --steps 30
    bench "pytorch baseline" python3 bench/torch_simplenet.py
fi

echo
echo "==== bench/gpu/run.sh $part: summary ===="
printf '  %s\n' "${summary[@]}"
[[ -f $out/bench.log ]] && grep -E '^(O[0-3]|O2\+log|fp32|tf32|amp-|ampscope bench|PyTorch)' \
    "$out/bench.log" | cut -c1-120
exit 0
