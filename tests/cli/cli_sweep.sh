#!/usr/bin/env bash
# cli_sweep.sh: `ampscope sweep` on local processes: a tiny grid of MLP runs
# (--jobs 2), its summary checked against the run records by awk; a rerun
# reuses every finished run; a sweep killed midway and rerun redoes only the
# unfinished runs and ends with the clean sweep's results; a run that fails
# or crashes is recorded as failed and the others go on; bad input exits 2
# before anything is created.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
A=$AMPSCOPE

# the options every run shares: 20 steps of the MLP, the scale grows every 5
# overflow-free steps
SHARED=(--net mlp --steps 20 --subset 512 --stats-every 5 --hist-every 0 --backend cpu
    --loss-scale pytorch --scale-window 5)
GRID="mode=O2,O3 scale_factor=2,4"
NAMES=(0-O2-2 1-O2-4 2-O3-2 3-O3-4)

# ---- a clean sweep ----
run "$A" sweep --grid "$GRID" "${SHARED[@]}" --out "$TMP/s" --jobs 2
expect_status 0
expect_out_has 'sweep: 4 runs: 4 ok, 0 diverged, 0 failed, 0 not run'
expect_err_has 'sweep: 4 runs: 0 done before, 4 to train, 2 at a time'
expect_err_has '[4/4]'
S=$TMP/s/summary.csv
CHECKS=$((CHECKS + 1))
[[ $(head -1 "$S") == "mode,scale_factor,final_loss,test_accuracy,skipped_steps,final_scale,mean_underflow_frac,lost_update_frac,wall_seconds,status,reason" ]] ||
    fail "summary header: $(head -1 "$S")"
CHECKS=$((CHECKS + 1))
[[ $(wc -l <"$S") == 5 ]] || fail "summary rows: $(cat "$S")"
CHECKS=$((CHECKS + 1))
[[ $(cut -d, -f1,2,10,11 "$S" | tail -n +2 | tr '\n' ' ') == "O2,2,ok, O2,4,ok, O3,2,ok, O3,4,ok, " ]] ||
    fail "summary order or status: $(cat "$S")"
[[ -s $TMP/s/sweep.json ]] || fail "no sweep.json"
for k in 0 1 2 3; do
    d=$TMP/s/runs/${NAMES[k]}
    CHECKS=$((CHECKS + 1))
    grep -q '"status": "ok"' "$d/done.json" || fail "${NAMES[k]}: no ok marker"
    # each column from the record, computed here by awk
    want=$(awk -F, '
        FILENAME ~ /steps.csv$/ && FNR > 1 { loss[++n] = $3; skipped += $6; scale = $4 }
        FILENAME ~ /eval.csv$/ && FNR > 1 { acc = $4 }
        FILENAME ~ /tensors.csv$/ && FNR > 1 && $3 == "activation_grad" && $10 != "" { u += $10; un++ }
        FILENAME ~ /updates.csv$/ && FNR > 1 { lost += $5; nz += $4 }
        END {
            tail = int(n / 10); if (tail == 0) tail = 1
            for (i = n - tail + 1; i <= n; i++) s += loss[i]
            printf "%.9g,%.9g,%d,%.9g,", s / tail, acc, skipped, scale
            if (un) printf "%.9g,", u / un; else printf ","
            if (nz) printf "%.9g", lost / nz
        }' "$d/steps.csv" "$d/eval.csv" "$d/tensors.csv" "$d/updates.csv")
    got=$(sed -n "$((k + 2))p" "$S" | cut -d, -f3-8)
    # the losses are fp32 printed to 9 digits: awk's sum of the printed
    # values may differ from the sum of the floats in the last digit
    awk -F, -v g="$got" -v w="$want" 'BEGIN {
        ng = split(g, a, ","); nw = split(w, b, ",")
        if (ng != nw) exit 1
        for (i = 1; i <= ng; i++) {
            if (a[i] == b[i]) continue
            d = a[i] - b[i]; if (d < 0) d = -d
            m = b[i] < 0 ? -b[i] : b[i]
            if (a[i] == "" || b[i] == "" || d > 1e-7 * m) exit 1
        }
    }' || fail "${NAMES[k]}: summary $got, record $want"
done
# hand-worked: factor 2 never overflows in 20 steps, so the scale doubled
# after steps 5, 10 and 15: 65536 * 2^3; skipped_steps 0
CHECKS=$((CHECKS + 1))
[[ $(sed -n 2p "$S" | cut -d, -f5,6) == "0,524288" ]] || fail "O2 factor 2: $(sed -n 2p "$S")"
# the run's own train.log holds what train printed
CHECKS=$((CHECKS + 1))
grep -q "record in $TMP/s/runs/0-O2-2" "$TMP/s/runs/0-O2-2/train.log" || fail "train.log"
cp "$S" "$TMP/clean.csv"
# the markers' modification times (ns), one line per run
before=$(mtimes "$TMP/s")

# ---- the same command again: every run reused, the same summary ----
run "$A" sweep --grid "$GRID" "${SHARED[@]}" --out "$TMP/s" --jobs 2
expect_status 0
expect_err_has 'sweep: 4 runs: 4 done before, 0 to train'
expect_err_has '[4/4] 3-O3-4: ok (done before, reused)'
CHECKS=$((CHECKS + 1))
[[ $(mtimes "$TMP/s") == "$before" ]] || fail "a finished run was redone"
CHECKS=$((CHECKS + 1))
cmp -s "$S" "$TMP/clean.csv" || fail "the rerun's summary differs: $(diff "$S" "$TMP/clean.csv")"
# an unfinished run (no marker) is trained again from scratch; a file ampscope did not write
# in it is not removed: the sweep is refused, naming it
rm "$TMP/s/runs/2-O3-2/done.json"
touch "$TMP/s/runs/2-O3-2/stray"
run "$A" sweep --grid "$GRID" "${SHARED[@]}" --out "$TMP/s" --no-progress
expect_status 2
expect_err_has "--out $TMP/s holds runs/2-O3-2/stray, which ampscope did not write"
rm "$TMP/s/runs/2-O3-2/stray"
touch "$TMP/s/runs/2-O3-2/steps.csv.tmp.999999" # a killed atomic write's
run "$A" sweep --grid "$GRID" "${SHARED[@]}" --out "$TMP/s" --no-progress
expect_status 0
expect_err_empty
CHECKS=$((CHECKS + 1))
[[ -s $TMP/s/runs/2-O3-2/done.json && ! -e $TMP/s/runs/2-O3-2/steps.csv.tmp.999999 ]] ||
    fail "the unfinished run was not redone from scratch"
CHECKS=$((CHECKS + 1))
[[ $(no_wall "$S") == $(no_wall "$TMP/clean.csv") ]] || fail "the redone run differs"

# ---- killed midway (SIGKILL: no goodbye), then the same command ----
"$A" sweep --grid "$GRID" "${SHARED[@]}" --out "$TMP/k" --jobs 1 2>"$TMP/k.err" &
pid=$!
for _ in $(seq 600); do
    ls "$TMP"/k/runs/*/done.json >/dev/null 2>&1 && break
    sleep 0.05
done
kill -KILL $pid
{ wait $pid; } 2>/dev/null || true
done_before=()
for n in "${NAMES[@]}"; do
    [[ -e $TMP/k/runs/$n/done.json ]] && done_before+=("$n")
done
CHECKS=$((CHECKS + 1))
((${#done_before[@]} >= 1 && ${#done_before[@]} < 4)) ||
    fail "kill midway: ${#done_before[@]} runs were done"
CHECKS=$((CHECKS + 1))
grep -q ',pending,' "$TMP/k/summary.csv" || fail "the killed sweep's summary: $(cat "$TMP/k/summary.csv")"
sleep 0.2
CHECKS=$((CHECKS + 1))
# a run is a forked child of the sweep: its command line is the sweep's
! pgrep -f -- "--out $TMP/k( |$)" >/dev/null || fail "a training outlived the killed sweep"
before=$(mtimes "$TMP/k")
run "$A" sweep --grid "$GRID" "${SHARED[@]}" --out "$TMP/k" --jobs 2
expect_status 0
expect_err_has "${#done_before[@]} done before, $((4 - ${#done_before[@]})) to train"
for n in "${done_before[@]}"; do
    expect_err_has "$n: ok (done before, reused)"
done
not_redone "$before" "$(mtimes "$TMP/k")"
CHECKS=$((CHECKS + 1))
[[ $(no_wall "$TMP/k/summary.csv") == $(no_wall "$TMP/clean.csv") ]] ||
    fail "killed and resumed differs from the clean sweep: $(diff "$TMP/k/summary.csv" "$TMP/clean.csv")"

# ---- runs that fail (a batch larger than the data) or diverge (O0 at a huge lr) ----
FAIL=(--net mlp --subset 512 --stats-every 0 --hist-every 0 --trace-every 0 --backend cpu)
run "$A" sweep --grid "batch=1024,64 lr=1000000,0.01" "${FAIL[@]}" --steps 20 --out "$TMP/f" --jobs 1
expect_status 1
expect_out_has 'sweep: 4 runs: 1 ok, 1 diverged, 2 failed, 0 not run'
expect_err_has '2 of 4 runs failed'
expect_err_has '[1/4] 0-1024-1000000: failed'
F=$TMP/f/summary.csv
CHECKS=$((CHECKS + 1))
[[ $(grep -c '^1024,[0-9.]*,,,,,,,[0-9.]*,failed,exit status 2: --batch 1024 x --accumulate 1 is larger than the 512 training samples$' "$F") == 2 ]] ||
    fail "failed rows: $(cat "$F")"
CHECKS=$((CHECKS + 1))
grep -q '^64,1000000,-\?nan,,0,1,,,[0-9.]*,diverged,diverged: the loss is -\?nan at step [0-9]* in O0' "$F" ||
    fail "diverged row: $(cat "$F")"
CHECKS=$((CHECKS + 1))
grep -q '^64,0.01,.*,ok,$' "$F" || fail "the sweep did not go on: $(cat "$F")"
CHECKS=$((CHECKS + 1))
[[ ! -e $TMP/f/runs/0-1024-1000000/done.json ]] || fail "a failed run has a marker"
CHECKS=$((CHECKS + 1))
grep -q '"status": "diverged"' "$TMP/f/runs/2-64-1000000/done.json" || fail "no diverged marker"
# again: the failed runs are tried again, the ended ones reused
run "$A" sweep --grid "batch=1024,64 lr=1000000,0.01" "${FAIL[@]}" --steps 20 --out "$TMP/f"
expect_status 1
expect_err_has '2 done before, 2 to train'
# a crash: the training process killed by a signal (SIGKILL: a sanitizer
# build would turn SIGSEGV into an exit status)
"$A" sweep --grid "steps=5000,20" "${FAIL[@]}" --out "$TMP/c" >"$TMP/c.out" 2>"$TMP/c.err" &
pid=$!
victim=""
for _ in $(seq 1000); do
    victim=$(pgrep -P $pid || true) # the sweep's only child (--jobs 1): run 0-5000
    [[ -n $victim ]] && break
    sleep 0.02
done
[[ -n $victim ]] && kill -KILL "$victim"
STATUS=0
wait $pid || STATUS=$?
OUT=""
ERR=$(cat "$TMP/c.err")
LAST_CMD="sweep --grid steps=5000,20 (run 0 killed)"
expect_status 1
expect_err_has '[1/2] 0-5000: failed'
CHECKS=$((CHECKS + 1))
grep -q '^5000,,,,,,,[0-9.]*,failed,killed by signal 9 (Killed)$' "$TMP/c/summary.csv" ||
    fail "crashed row: $(cat "$TMP/c/summary.csv")"
CHECKS=$((CHECKS + 1))
grep -q '^20,.*,ok,$' "$TMP/c/summary.csv" || fail "the sweep did not go on after the crash"

# ---- bad input: one line, exit 2, nothing created ----
bad() {
    local want=$1
    shift
    run "$A" sweep "$@"
    expect_status 2
    expect_err_has "$want"
    CHECKS=$((CHECKS + 1))
    [[ $(wc -l <<<"$ERR") == 1 ]] || fail "more than one line"
    CHECKS=$((CHECKS + 1))
    [[ ! -e $TMP/bad ]] || fail "bad input created the sweep folder"
}
bad '--grid is required' --net mlp --out "$TMP/bad"
bad '--out DIR is required' --grid "seed=1"
bad '--grid is empty' --grid " " --out "$TMP/bad"
bad "--grid: 'seed' is not AXIS=V1,V2" --grid "seed" --out "$TMP/bad"
bad "--grid: '=1' has no axis name" --grid "=1" --out "$TMP/bad"
bad "--grid: axis 'seed' has no values" --grid "mode=O2 seed=" --out "$TMP/bad"
bad "--grid: axis 'seed' has an empty value in '1,,2'" --grid "seed=1,,2" --out "$TMP/bad"
bad "--grid: axis 'seed' repeats the value '1'" --grid "seed=1,2,1" --out "$TMP/bad"
bad "--grid: axis 'scale-factor' is given twice (as 'scale_factor')" \
    --grid "scale_factor=2 scale-factor=4" --out "$TMP/bad"
bad "--grid: unknown axis 'colour': 'ampscope train' has no option --colour" \
    --grid "colour=red,blue" --out "$TMP/bad"
bad "--grid: 'out' cannot be an axis" --grid "out=a,b" --out "$TMP/bad"
bad "--grid: axis 'lr': the value '-1' starts with '-'" --grid "lr=-1" --out "$TMP/bad"
bad "--grid run 1 (mode=O2 dtype=fp8): --dtype wants fp16 or bf16, got 'fp8'" \
    --grid "mode=O2 dtype=fp16,fp8" --net mlp --out "$TMP/bad"
bad "--grid run 0 (scale_factor=2): the dynamic-scaler options need --loss-scale dynamic" \
    --grid "scale_factor=2" --net mlp --out "$TMP/bad"
bad "--grid run 0 (net=vgg): " --grid "net=vgg" --out "$TMP/bad"
bad "unknown option '--bogus'" --grid "seed=1" --bogus 3 --out "$TMP/bad"
bad "--seed is both a grid axis and a shared option" --grid "seed=1,2" --seed 3 --out "$TMP/bad"
bad "--jobs wants an integer in [1, 1024], got '0'" --grid "seed=1" --jobs 0 --out "$TMP/bad"
bad "--resume is not a sweep option" --grid "seed=1" --resume x --out "$TMP/bad"
bad "--out $TMP/nowhere/bad: no folder $TMP/nowhere (make it first)" --grid "seed=1" --net mlp --out "$TMP/nowhere/bad"
# a folder holding another sweep, or something else, is refused
run "$A" sweep --grid "mode=O2" "${SHARED[@]}" --out "$TMP/s"
expect_status 2
expect_err_has "--out $TMP/s holds another sweep (--grid \"$GRID\" --net mlp"
run "$A" sweep --grid "$GRID" "${SHARED[@]}" --steps 30 --out "$TMP/s"
expect_status 2
expect_err_has "holds another sweep"
mkdir -p "$TMP/other/runs"
run "$A" sweep --grid "seed=1" --net mlp --out "$TMP/other"
expect_status 2
expect_err_has "--out $TMP/other holds a reproduce folder: give --force to replace it"

run "$A" sweep --help
expect_status 0
expect_out_has 'usage: ampscope sweep --grid'
run "$A" help
expect_out_has 'sweep'

finish
