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

# the same seed gives the same losses, bit for bit
run "$A" train --net mlp --mode O2 --dtype fp16 --loss-scale pytorch --steps 30 --subset 640 \
    --stats-every 10 --hist-every 20 --out "$TMP/again" "${common[@]}"
expect_status 0
cmp -s "$TMP/run/steps.csv" "$TMP/again/steps.csv" || fail "two runs with one seed differ"

# ---- bad input: exit 2, one line, nothing trained ----
bad() {
    local want=$1
    shift
    run "$A" train "$@" "${common[@]}"
    expect_status 2
    expect_err_has "$want"
    [[ $(printf '%s\n' "$ERR" | grep -c 'ampscope train:') -ge 1 ]] || fail "no one-line message"
}
bad 'unknown net' --net resnet --out "$TMP/x1"
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

finish
