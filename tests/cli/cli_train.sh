#!/usr/bin/env bash
# cli_train.sh: `ampscope train` on the cpu: a short mlp run writes a complete
# record; bad options and data are refused (exit 2) before any work; a
# diverging run exits 3 with its rows kept; SIGTERM stops after a whole step
# with the record complete up to it.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
A=$AMPSCOPE
common=(--backend cpu --no-progress)

# ---- a short run and its record ----
run "$A" train --net mlp --mode O2 --dtype fp16 --loss-scale pytorch --steps 30 --subset 640 \
    --stats-every 10 --hist-every 20 --out "$TMP/run" "${common[@]}"
expect_status 0
expect_out_has 'mlp O2 fp16: 30 steps'
for f in run.json steps.csv tensors.csv updates.csv hist.csv eval.csv; do
    [[ -s $TMP/run/$f ]] || fail "no $f"
done
[[ $(head -n 1 "$TMP/run/steps.csv") == 'step,epoch,loss,loss_scale,found_inf,skipped,lr' ]] ||
    fail "steps.csv header"
# one row per step, 0..29, in order
[[ $(tail -n +2 "$TMP/run/steps.csv" | cut -d, -f1 | tr '\n' ' ') == "$(seq -s ' ' 0 29) " ]] ||
    fail "steps.csv does not hold steps 0..29 once each"
# the pytorch preset starts at 2^16
[[ $(sed -n 2p "$TMP/run/steps.csv" | cut -d, -f4) == 65536 ]] || fail "initial scale is not 65536"
# statistics at steps 0, 10, 20: 3 param layers x 4 kinds + 2 relu layers x 2 kinds per step
[[ $(tail -n +2 "$TMP/run/tensors.csv" | wc -l) == $((3 * (3 * 4 + 2 * 2))) ]] || fail "tensors.csv rows"
[[ $(tail -n +2 "$TMP/run/updates.csv" | cut -d, -f1 | sort -u | tr '\n' ' ') == '0 10 20 ' ]] ||
    fail "updates.csv steps"
grep -q '"backend": "cpu"' "$TMP/run/run.json" || fail "run.json backend"
grep -q '"end_time": "' "$TMP/run/run.json" || fail "run.json has no end time"
# 640 samples / batch 64 = 10 steps an epoch: evaluations after steps 10, 20, 30
[[ $(tail -n +2 "$TMP/run/eval.csv" | cut -d, -f2 | tr '\n' ' ') == '10 20 30 ' ]] || fail "eval.csv rows"
# the gradient trace: a row per step with the step's scale and found_inf; its count is every
# activation gradient (64 rows x (256 + 256 + 256 + 256 + 10) outputs) and every weight
# gradient (784 x 256 + 256 + 256 x 256 + 256 + 256 x 10 + 10); the histogram adds up to it
CHECKS=$((CHECKS + 1))
[[ $(head -n 1 "$TMP/run/trace.csv") == 'step,loss_scale,found_inf,count,zero,nonfinite,amax' ]] ||
    fail "trace.csv header"
[[ $(tail -n +2 "$TMP/run/trace.csv" | cut -d, -f1-3) == $(tail -n +2 "$TMP/run/steps.csv" | cut -d, -f1,4,5) ]] ||
    fail "trace.csv steps, scales or found_inf differ from steps.csv"
[[ $(tail -n +2 "$TMP/run/trace.csv" | cut -d, -f4 | sort -u) == $((64 * 1034 + 269322)) ]] ||
    fail "trace.csv count: $(tail -n +2 "$TMP/run/trace.csv" | cut -d, -f4 | sort -u | tr '\n' ' ')"
[[ $(awk -F, 'NR > 1 && $1 == 7 { n += $3 } END { print n }' "$TMP/run/trace_hist.csv") == \
    $((64 * 1034 + 269322)) ]] || fail "trace_hist.csv of step 7 does not add up to the count"
awk -F, 'NR > 1 && !($7 > 0) { exit 1 }' "$TMP/run/trace.csv" || fail "a trace row has amax <= 0"

# the same seed gives the same losses, bit for bit
run "$A" train --net mlp --mode O2 --dtype fp16 --loss-scale pytorch --steps 30 --subset 640 \
    --stats-every 10 --hist-every 20 --out "$TMP/again" "${common[@]}"
expect_status 0
cmp -s "$TMP/run/steps.csv" "$TMP/again/steps.csv" || fail "two runs with one seed differ"

# ---- lost updates: O3 fp16 weights lose nearly every update of lr 1e-4; O2's fp32 masters far fewer ----
for m in O3 O2; do
    run "$A" train --net simplenet --width 64 --batch 32 --samples 256 --mode $m --dtype fp16 --lr 1e-4 \
        --steps 4 --stats-every 1 --out "$TMP/sn-$m" "${common[@]}"
    expect_status 0
done
lost() { awk -F, 'NR > 1 && $1 == 3 { l += $5; n += $4 } END { printf "%.4f", l / n }' "$1/updates.csv"; }
o3=$(lost "$TMP/sn-O3")
o2=$(lost "$TMP/sn-O2")
awk -v a="$o3" -v b="$o2" 'BEGIN { exit !(a > 0.9 && b < a / 2) }' ||
    fail "lost-update fractions: O3 $o3, O2 $o2 (expected O3 > 0.9 and O2 < O3 / 2)"

# ---- bad input: exit 2, one line, nothing trained ----
bad() {
    local want=$1
    shift
    run "$A" train "$@" "${common[@]}"
    expect_status 2
    expect_err_has "$want"
    [[ $(printf '%s\n' "$ERR" | grep -c 'ampscope train:') -ge 1 ]] || fail "no one-line message"
}
bad 'unknown net' --net vgg --out "$TMP/x1"
bad '--mode wants O0, O1, O2 or O3' --net mlp --mode O5 --out "$TMP/x2"
bad '--dtype wants fp16 or bf16' --net mlp --dtype fp8 --out "$TMP/x3"
bad 'unknown policy' --net mlp --loss-scale tensorflow --out "$TMP/x4"
bad '--scale-window' --net mlp --loss-scale dynamic --scale-window 0 --out "$TMP/x5"
bad '--growth-factor' --net mlp --loss-scale dynamic --growth-factor 1 --out "$TMP/x6"
bad "no layer 'fc9'" --net mlp --layer-precision fc9=fp32 --out "$TMP/x7"
bad "unknown option '--frobnicate'" --net mlp --frobnicate 3 --out "$TMP/x8"
bad '--out DIR is required' --net mlp
bad '--batch wants an integer' --net mlp --batch 0 --out "$TMP/x9"
bad '--lr wants a number' --net mlp --lr -1 --out "$TMP/x10"
bad 'already holds a run' --net mlp --out "$TMP/run"
mkdir -p "$TMP/empty"
bad 'install dataset-fashion-mnist or give --data DIR' --net mlp --data "$TMP/empty" --out "$TMP/x11"
printf 'not idx' | gzip >"$TMP/empty/train-images-idx3-ubyte.gz"
cp /usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz "$TMP/empty/" 2>/dev/null || true
bad 'train-images-idx3-ubyte.gz' --net mlp --data "$TMP/empty" --out "$TMP/x12"
[[ ! -e $TMP/x1/steps.csv && ! -e $TMP/x12/steps.csv ]] || fail "a refused run left a record"

# ---- divergence: exit 3, rows kept ----
run "$A" train --net mlp --mode O0 --lr 100000 --steps 50 --subset 640 --out "$TMP/div" "${common[@]}"
expect_status 3
expect_err_has 'diverged'
[[ $(tail -n +2 "$TMP/div/steps.csv" | wc -l) -ge 1 ]] || fail "the diverged run kept no rows"

# ---- SIGTERM: the step finishes, the record is complete ----
"$A" train --net lenet5 --mode O0 --steps 100000 --subset 3200 --out "$TMP/sig" "${common[@]}" \
    >"$TMP/sig.out" 2>"$TMP/sig.err" &
pid=$!
for _ in $(seq 1 100); do
    [[ -f $TMP/sig/steps.csv && $(wc -l <"$TMP/sig/steps.csv") -ge 5 ]] && break
    sleep 0.1
done
kill -TERM $pid
status=0
wait $pid || status=$?
CHECKS=$((CHECKS + 1))
[[ $status == 1 ]] || fail "SIGTERM: exit status $status, expected 1"
grep -q 'interrupted by signal 15' "$TMP/sig.err" || fail "SIGTERM: no message"
[[ $(tail -c 1 "$TMP/sig/steps.csv" | od -An -c | tr -d ' ') == '\n' ]] || fail "steps.csv ends mid-line"
rows=$(tail -n +2 "$TMP/sig/steps.csv" | wc -l)
[[ $(tail -n +2 "$TMP/sig/steps.csv" | cut -d, -f1 | tr '\n' ' ') == "$(seq -s ' ' 0 $((rows - 1))) " ]] ||
    fail "SIGTERM: steps.csv rows are not 0..$((rows - 1))"
grep -q '"end_time": "' "$TMP/sig/run.json" || fail "SIGTERM: run.json has no end time"

# ---- resume: bit for bit the run that was not interrupted ----
opts=(--net mlp --mode O2 --dtype bf16 --loss-scale pytorch --stochastic-rounding on --optimizer adamw
    --subset 640 --stats-every 5 --hist-every 10 "${common[@]}")
run "$A" train "${opts[@]}" --steps 40 --out "$TMP/whole"
expect_status 0
same_record() {
    local f
    for f in steps.csv tensors.csv updates.csv hist.csv eval.csv checkpoint.safetensors; do
        CHECKS=$((CHECKS + 1))
        cmp -s "$TMP/whole/$f" "$1/$f" || fail "$2: $f differs from the uninterrupted run"
    done
}
# stopped after 23 steps (mid-epoch), resumed
run "$A" train "${opts[@]}" --steps 23 --out "$TMP/part"
expect_status 0
run "$A" train --resume "$TMP/part" --steps 40
expect_status 0
same_record "$TMP/part" "resume"
# killed with SIGKILL between checkpoints: rows past the checkpoint are dropped and redone
"$A" train "${opts[@]}" --steps 40 --checkpoint-every 7 --out "$TMP/killed" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 200); do
    [[ -f $TMP/killed/steps.csv && $(wc -l <"$TMP/killed/steps.csv") -ge 18 ]] && break
    sleep 0.02
done
kill -KILL $pid 2>/dev/null || true
wait $pid 2>/dev/null || true
# 18 rows written: the checkpoints of steps 7 and 14 exist
[[ -f $TMP/killed/checkpoint.safetensors ]] || fail "SIGKILL: no checkpoint after 18 steps"
run "$A" train --resume "$TMP/killed"
expect_status 0
same_record "$TMP/killed" "SIGKILL + resume"
# --init from a checkpoint's weights; a file without them is refused
run "$A" train --net mlp --init "$TMP/whole/checkpoint.safetensors" --steps 3 --subset 640 --out "$TMP/init" "${common[@]}"
expect_status 0
bad "no tensor 'conv1.weight'" --net lenet5 --init "$TMP/whole/checkpoint.safetensors" --steps 3 --out "$TMP/x13"
bad '--resume' --resume "$TMP/nothing-here"

# ---- accumulation and clipping ----
# 640 samples, batch 32, 2 micro-batches per update: 10 updates an epoch
run "$A" train --net mlp --mode O1 --accumulate 2 --batch 32 --clip-norm 0.5 --epochs 2 --subset 640 \
    --out "$TMP/acc" "${common[@]}"
expect_status 0
[[ $(tail -n +2 "$TMP/acc/eval.csv" | cut -d, -f2 | tr '\n' ' ') == '10 20 ' ]] || fail "--accumulate 2: steps per epoch"
# a tiny clip norm all but freezes the weights: the loss stays near its start (without
# clipping, lr 0.2 takes it from 2.30 to about 1.6 in these 20 steps)
run "$A" train --net mlp --lr 0.2 --clip-norm 1e-9 --steps 20 --subset 640 --out "$TMP/frozen" "${common[@]}"
expect_status 0
first=$(sed -n 2p "$TMP/frozen/steps.csv" | cut -d, -f3)
last=$(tail -n 1 "$TMP/frozen/steps.csv" | cut -d, -f3)
awk -v a="$first" -v b="$last" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d < 0.05) }' ||
    fail "--clip-norm 1e-9: the loss moved from $first to $last"
bad '--accumulate wants an integer' --net mlp --accumulate 0 --out "$TMP/x14"
bad '--clip-norm wants a number' --net mlp --clip-norm 0 --out "$TMP/x15"
bad 'larger than the' --net mlp --subset 64 --batch 64 --accumulate 2 --out "$TMP/x16"
[[ ! -e $TMP/x16/steps.csv ]] || fail "the refused --accumulate run left a record"

finish
