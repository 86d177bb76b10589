#!/usr/bin/env bash
# bench/gpu/run.sh [checks|bench|all]: the GPU work of issues 7 and 18 in one
# call on a lent H100 or H200, from what bench/gpu/build.sh prepared (carry
# build-gpu-carry).
#
#   checks  every gpu-labelled test (cuda against the cpu reference), the
#           exhaustive intrinsics comparison, the tensor-core probe
#   bench   bench train --csv on cuda for simplenet (--tf32 --log), resnet
#           and the transformer (ampscope's rows of issue 18); the PyTorch
#           baseline bench/torch_bench.py (every net, mode and variant that
#           fits in TORCH_BUDGET_S, default 240 s; TORCH_BENCH_ARGS adds
#           its options, e.g. "--nets resnet --variants cuda-graph": eager, foreach, fused,
#           CUDA-graph capture, then torch.compile of the model and of the
#           whole step); bench/gpu/perf_table.py merging the two into
#           docs/PERFORMANCE.md's rows (perf_table.md); then bench kernels
#           on cuda and bench train on lenet5 (cpu and cuda)
#
# `bench` is sized for one 10-minute call (timeout_s 600; it writes six
# files, so that even a call stopped at its limit brings them back);
# `checks` for another.  $OUT (or ./gpu-out) brings back at most 8 files,
# so at the end the logs and CSV files go into one archive, gpu-out.tar.xz,
# beside device.txt, summary.txt and perf_table.md; the merged table and
# the summary are printed last.
set -uo pipefail
part=${1:-all}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 2
carry=build-gpu-carry
out=${OUT:-$root/gpu-out}
mkdir -p "$out"
[[ -d $carry/bin ]] || { echo "run.sh: no $carry (run bench/gpu/build.sh here first)" >&2; exit 2; }
case $part in checks | bench | all) ;; *) echo "run.sh: unknown part '$part'" >&2; exit 2 ;; esac
# this carry's libraries, unpacked afresh (not another build's left in /tmp)
libs=$(mktemp -d /tmp/ampscope-libs.XXXXXX)
tar -C "$libs" -xJf "$carry/libs.tar.xz" || { echo "run.sh: cannot unpack $carry/libs.tar.xz" >&2; exit 2; }
export LD_LIBRARY_PATH=$libs/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
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
    # ampscope's rows for issue 18, as CSV for perf_table.py (train.csv: one header a net)
    : >"$out/train.csv"
    bench_csv() {
        local name=$1
        shift
        local start=$SECONDS
        echo "== $name: $*" >>"$log"
        local csv
        csv=$(mktemp)
        timeout 240 "$@" >"$csv" 2>>"$log"
        local rc=$?
        cat "$csv" >>"$log"
        cat "$csv" >>"$out/train.csv"
        rm -f "$csv"
        note "$(printf '%-32s exit %3d  %4d s' "$name" "$rc" $((SECONDS - start)))"
    }
    bench_csv "train simplenet cuda" "$A" bench train --net simplenet --backend cuda --tf32 \
        --log --steps 200 --csv
    bench_csv "train resnet cuda" "$A" bench train --net resnet --backend cuda \
        --data "$carry/data" --csv
    bench_csv "train transformer cuda" "$A" bench train --net transformer --backend cuda \
        --data "$carry/fortunes" --csv
    # the PyTorch baseline: every variant that fits in the budget (the rest: rows 'skipped')
    budget=${TORCH_BUDGET_S:-240}
    start=$SECONDS
    echo "== pytorch baseline: bench/torch_bench.py --steps 50 --budget-s $budget" >>"$log"
    read -ra extra <<<"${TORCH_BENCH_ARGS:-}" # e.g. "--nets resnet,transformer --modes amp-fp16"
    PYTHONUNBUFFERED=1 timeout $((budget + 120)) python3 bench/torch_bench.py --steps 50 \
        --budget-s "$budget" --csv "$out/torch.csv" "${extra[@]}" >>"$log" 2>&1
    rc=$?
    note "$(printf '%-32s exit %3d  %4d s' "pytorch baseline" "$rc" $((SECONDS - start)))"
    python3 bench/gpu/perf_table.py --ampscope "$out/train.csv" --torch "$out/torch.csv" \
        --variants >"$out/perf_table.md" 2>>"$log"
    note "$(printf '%-32s exit %3d' "perf_table.py" $?)"
    bench "kernels cuda" "$A" bench kernels --backend cuda
    bench "train lenet5 cuda" "$A" bench train --net lenet5 --backend cuda --data "$carry/data"
    bench "train lenet5 cpu" "$A" bench train --net lenet5 --backend cpu --data "$carry/data" \
        --steps 30
fi

{
    echo "==== bench/gpu/run.sh $part: summary ===="
    printf '  %s\n' "${summary[@]}"
    [[ -f $out/bench.log ]] && grep -E '^(O[0-3]|O2\+log|fp32|tf32|ampscope bench)' \
        "$out/bench.log" | cut -c1-120
} >"$out/summary.txt"
# at most 8 files come back from $OUT: everything in one archive, beside the summaries
archive=$(mktemp /tmp/gpu-out.XXXXXX)
if tar -C "$out" -cJf "$archive" --exclude=gpu-out.tar.xz .; then
    find "$out" -maxdepth 1 -type f ! -name device.txt ! -name summary.txt ! -name perf_table.md \
        -delete
    mv "$archive" "$out/gpu-out.tar.xz"
fi
echo
# the merged table (perf_table.md's first part; the PyTorch variants are in the file)
[[ -f $out/perf_table.md ]] && sed '/^$/q' "$out/perf_table.md"
echo
cat "$out/summary.txt"
exit 0
