#!/usr/bin/env bash
# compare.sh: does this tree still do what BASE did, bit for bit?
#
#   tests/behaviour/compare.sh [BASE_REF] [WORK_DIR]
#
# Builds BASE_REF (default: the commit before the house redesign, 2e0e76a)
# in a git worktree and this working tree, both without CUDA, runs the same
# commands with each (`reproduce --smoke`, a few `train` runs covering every
# mode, the optimizers, stochastic rounding, accumulation, clipping, a
# resume, `grad`, `report`, `recommend`, a local `sweep`, `emu` and
# `bench --help`), and compares every file they wrote and everything they
# printed, byte for byte, after removing what must differ: times, dates,
# the git revision, the paths of the two work folders.
# Exit 0 when everything matches (but for the paths listed, with the reason,
# in tests/behaviour/expected_differences.txt); 1 with the differing files named.
# It takes about 4 minutes on 2 cores.  Not a ctest: the base is a
# moving choice (pick the last commit whose behaviour you mean to keep).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
base=${1:-2e0e76a}
work=${2:-$(mktemp -d /tmp/ampscope-behaviour.XXXXXX)}
jobs=$(nproc)
mkdir -p "$work"
echo "compare.sh: base $base, work folder $work"

build() { # build SRC DIR
    cmake -S "$1" -B "$2" -DAMPSCOPE_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$2.configure.log" 2>&1 ||
        { cat "$2.configure.log"; return 1; }
    cmake --build "$2" -j"$jobs" --target ampscope >"$2.build.log" 2>&1 ||
        { tail -40 "$2.build.log"; return 1; }
}

if [[ ! -x $work/base-build/ampscope ]]; then
    rm -rf "$work/base-src"
    git -C "$root" worktree add --detach "$work/base-src" "$base" >/dev/null 2>&1 ||
        { git -C "$root" worktree prune; git -C "$root" worktree add --detach "$work/base-src" "$base"; }
    build "$work/base-src" "$work/base-build"
fi
build "$root" "$work/new-build"

# run_all AMPSCOPE OUT: every command, its stdout/stderr/status in OUT/log/
run_all() {
    local A=$1 O=$2 n=0
    rm -rf "$O"
    mkdir -p "$O/log" "$O/runs"
    r() { # r NAME ARGS...
        local name=$1
        shift
        set +e
        (cd "$O" && "$A" "$@" <"${R_IN:-/dev/null}" >"log/$name.out" 2>"log/$name.err")
        echo $? >"$O/log/$name.status"
        set -e
    }
    r reproduce reproduce --smoke --no-progress --out rep
    r lenet5-o2 train --net lenet5 --mode O2 --dtype fp16 --loss-scale pytorch --steps 30 \
        --subset 512 --stats-every 5 --hist-every 10 --no-progress --out runs/lenet5-o2
    r mlp-o3-sr train --net mlp --mode O3 --dtype bf16 --stochastic-rounding on --steps 25 \
        --subset 512 --optimizer adamw --weight-decay 0.01 --no-progress --out runs/mlp-o3-sr
    r mlp-o1-acc train --net mlp --mode O1 --dtype fp16 --loss-scale mindspore-amp --trace-every 1 --accumulate 2 \
        --clip-norm 1 --optimizer momentum --nesterov on --steps 20 --subset 512 --no-progress \
        --out runs/mlp-o1-acc
    r simplenet-o3 train --net simplenet --width 64 --depth 3 --mode O3 --lr 1e-3 --steps 20 \
        --loss-scale deepspeed --stats-every 1 --no-progress --out runs/simplenet-o3
    r simplenet-fault train --net simplenet --width 32 --mode O2 --loss-scale apex --steps 12 \
        --fault overflow-grads@3-5+nonfinite-loss@8 --no-progress --out runs/simplenet-fault
    r stop train --net mlp --mode O2 --dtype bf16 --steps 10 --checkpoint-every 5 --subset 512 \
        --loss-scale paddle --no-progress --out runs/resumed
    r resume train --resume runs/resumed --steps 20 --no-progress
    r grad grad --net lenet5 --init runs/lenet5-o2/checkpoint.safetensors --samples 0:4 --out grad.safetensors
    r grad-mlp grad --net mlp --mode O3 --dtype bf16 --init runs/mlp-o3-sr/checkpoint.safetensors --samples 3:5 --out grad-mlp.safetensors
    r report report runs/lenet5-o2 runs/mlp-o3-sr --out report
    r recommend recommend runs/lenet5-o2
    r recommend-csv recommend runs/mlp-o1-acc --csv recommend.csv
    r sweep sweep --grid "mode=O2,O3 scale_factor=2,4" --net mlp --steps 10 --subset 256 \
        --loss-scale pytorch --no-progress --out sweep --jobs 2
    r sweep-report report sweep --axes scale_factor,mode --out sweep-report
    r eval emu eval fp16 from-f32 0.00006666666
    r eval2 emu eval bf16 add 1 0x3B80 --round max
    printf '7BFF 4000\n0001 3800\n' >"$O/tf.in"
    R_IN=tf.in r testfloat emu testfloat f16_mul -rminMag
    r verify emu verify --exhaustive --op f16_mul --first 0x3C00:0x3C01 --round all
    r bad-option train --net mlp --frobnicate 1 --out runs/bad
    r bad-value train --net mlp --mode O7 --out runs/bad2
    for c in "" emu train grad report reproduce sweep recommend bench version; do
        n=$((n + 1))
        r "help$n" help $c
    done
    for c in "bench emu" "bench kernels" "bench train" "bench sweep" "emu eval" "emu verify" "emu testfloat"; do
        n=$((n + 1))
        r "help$n" $c --help
    done
    r version --version
}

echo "compare.sh: running the base"
run_all "$work/base-build/ampscope" "$work/base-out"
echo "compare.sh: running this tree"
run_all "$work/new-build/ampscope" "$work/new-out"

# normalize FILE: what may differ between two runs of one program
normalize() {
    local f=$1
    case $f in
    */wall_seconds | */*.log) : >"$f" ;;
    *.png | *.svg) : ;; # compared as they are
    *) sed -i -E \
        -e 's#/tmp/ampscope-behaviour\.[A-Za-z0-9]+/(base|new)-(out|build)#WORK#g' \
        -e "s#$work/(base|new)-(out|build)#WORK#g" \
        -e 's#"(start_time|end_time|git_revision|saved_at)": "[^"]*"#"\1": "-"#g' \
        -e 's#"(wall_seconds|seconds|seconds_per_step|step_seconds)": [0-9.e+-]+#"\1": 0#g' \
        -e 's#[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z#DATE#g' \
        -e 's#(ampscope [0-9.]+) \([0-9a-f]{7,}\)#\1 (REV)#g' \
        "$f" ;;
    esac
}
# modes.csv and summary.csv carry times per step: drop those columns
drop_time_columns() {
    local f=$1 cols
    cols=$(head -1 "$f" | tr ',' '\n' | grep -nE 'seconds|speedup|wall|time' | cut -d: -f1 | paste -sd, - || true)
    [[ -n $cols ]] || return 0
    cut -d, --complement -f"$cols" "$f" >"$f.cut" && mv "$f.cut" "$f"
}
for side in base new; do
    # the record lock names its last writer's pid (analyze/record_lock.h): not an output
    find "$work/$side-out" -name .ampscope.lock -delete
    while IFS= read -r -d '' f; do
        normalize "$f"
        case $f in *.csv) drop_time_columns "$f" ;; esac
    done < <(find "$work/$side-out" -type f -print0)
    # the report's pages print step times in the mode table, and the summary's times
    # (the mode table's last two cells: seconds per step and speedup; the
    # sweep summary's wall time, the cell before the status)
    find "$work/$side-out" -name index.html -exec sed -i -E \
        -e 's#^(<tr><td>O[0-3]</td><td>(fp32|fp16|bf16)</td>.*)<td class="num">[^<]*</td><td class="num">[^<]*</td></tr>$#\1<td>T</td><td>T</td></tr>#' \
        -e 's#<td class="num">[^<]*</td>(<td>(ok|failed|diverged|running|pending)</td>)#<td>T</td>\1#' {} +
    # the progress/timing lines of the log
    find "$work/$side-out/log" -type f -exec sed -i -E \
        -e 's#[0-9]+(\.[0-9]+)? (s|ms|us|steps/s)\b#T \2#g' {} +
done

# what may differ on purpose (expected_differences.txt), listed apart
expected=$(sed -e 's/#.*//' -e 's/[[:space:]].*//' -e '/^$/d' "$root/tests/behaviour/expected_differences.txt")
diff -r -q "$work/base-out" "$work/new-out" >"$work/diff.txt" || true
status=0
: >"$work/unexpected.txt"
while IFS= read -r line; do
    file=$(sed -E "s#^Files $work/base-out/([^ ]+) and .*#\1#" <<<"$line")
    if [[ $file != "$line" ]] && grep -qxF "$file" <<<"$expected"; then
        echo "compare.sh: differs as expected: $file ($(grep -F "$file" "$root/tests/behaviour/expected_differences.txt" | sed -E 's/^[^[:space:]]+[[:space:]]+//'))"
    else
        echo "$line" >>"$work/unexpected.txt"
    fi
done <"$work/diff.txt"
if [[ -s $work/unexpected.txt ]]; then
    status=1
    echo "compare.sh: DIFFERENT:"
    cat "$work/unexpected.txt"
    echo "(diff -r $work/base-out $work/new-out for the details)"
else
    echo "compare.sh: SAME: $(find "$work/new-out" -type f | wc -l) files byte-identical after normalisation, but for the expected differences above"
fi
exit $status
