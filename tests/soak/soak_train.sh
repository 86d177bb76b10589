#!/usr/bin/env bash
# soak_train.sh: a training run (mlp, O2 fp16, the pytorch policy with a short
# growth window, two injected overflows and a NaN loss, a checkpoint every 3
# steps) is killed with SIGKILL at random moments, AMPSCOPE_SOAK_KILLS times,
# and resumed each time with `train --resume` (a run killed before its first
# checkpoint starts again from step 0).  The killed run is started with its
# options as --key=value and resumed in turn with none, with the same --steps
# and --no-progress, and with another --checkpoint-every (the options a
# resume may give).  Then:
#   - every log (steps, tensors, updates, hist, eval, trace, trace_hist) is
#     byte for byte the uninterrupted run's: each completed step's rows once,
#     nothing after the last step;
#   - checkpoint.safetensors (weights, optimizer and scaler state) is
#     bit-identical to the uninterrupted run's (cmp);
#   - a CSV line cut short (made by hand before the last resume) is cut away;
#   - nothing is half-written: no temporary file is left, every CSV line has
#     the header's field count and ends with a newline, run.json parses (it
#     is also checked after every kill, before the resume);
#   - run.json's "given" is the uninterrupted run's (--key value) list, and
#     "resumes" holds only the changed --checkpoint-every, each from a step
#     of the run (the last resume gives --checkpoint-every 5: one at least).
# The kill delays are drawn from [S / 2, S + (T - S) / kills] (S: a start's
# time to its first step, T: the uninterrupted run's time), so that kills
# land in the start-up, between steps, in checkpoints and in evaluations;
# a run that finishes before its next kill all the same (the machine got
# faster) is checked too, and a new one starts in a new folder.
set -euo pipefail
source "$(dirname "$0")/../cli/lib.sh"
source "$(dirname "$0")/soak_lib.sh"
A=$AMPSCOPE
JSON_CHECK=${2:?usage: $0 PATH-TO-ampscope PATH-TO-soak_json_check}
soak_setup soak_train 16

STEPS=50
opts=(--net mlp --mode O2 --dtype fp16 --loss-scale pytorch --scale-window 4 --subset 640
    --steps $STEPS --checkpoint-every 3 --stats-every 4 --hist-every 8
    --fault overflow-grads@9,22+nonfinite-loss@31 --backend cpu --no-progress)
# the same as --key=value
opts_eq=()
for ((k = 0; k < ${#opts[@]}; k++)); do
    if [[ ${opts[k + 1]-} != --* && $k -lt $((${#opts[@]} - 1)) ]]; then
        opts_eq+=("${opts[k]}=${opts[k + 1]}")
        k=$((k + 1))
    else
        opts_eq+=("${opts[k]}")
    fi
done
# what a resume may give: nothing, the same length and progress, another checkpoint cadence
resume_extras=("" "--steps=$STEPS --no-progress" "--checkpoint-every=4" "--checkpoint-every 3")
LOGS=(steps.csv tensors.csv updates.csv hist.csv eval.csv trace.csv trace_hist.csv)

# a finished run's folder against the uninterrupted run
check_run() {
    local dir=$1 f
    for f in "${LOGS[@]}" checkpoint.safetensors; do
        CHECKS=$((CHECKS + 1))
        cmp -s "$TMP/ref/$f" "$dir/$f" || fail "$f differs from the uninterrupted run's"
    done
    for f in "${LOGS[@]}"; do
        csv_ok "$dir/$f"
    done
    steps_once "$dir/steps.csv" 1 $STEPS
    steps_once "$dir/trace.csv" 1 $STEPS
    for f in tensors.csv updates.csv hist.csv trace_hist.csv; do
        steps_bounded "$dir/$f" 1 $STEPS
    done
    # 640 samples / batch 64: an evaluation after every 10 steps
    CHECKS=$((CHECKS + 1))
    [[ $(tail -n +2 "$dir/eval.csv" | cut -d, -f2 | tr '\n' ' ') == '10 20 30 40 50 ' ]] ||
        fail "eval.csv steps: $(tail -n +2 "$dir/eval.csv" | cut -d, -f2 | tr '\n' ' ')"
    # the injected faults are kept across resumes: steps 9 and 22 overflowed and 31's loss is
    # NaN, each found and skipped (the scale's own overflows, window 4, come on top)
    CHECKS=$((CHECKS + 1))
    [[ $(awk -F, 'NR > 1 && ($1 == 9 || $1 == 22 || $1 == 31) { printf "%s:%s:%s:%s ", $1, $3, $5, $6 }' \
        "$dir/steps.csv") == 9:*:1:1\ 22:*:1:1\ 31:nan:1:1\  ]] || fail "the injected faults' steps"
    json_ok "$dir/run.json"
    CHECKS=$((CHECKS + 1))
    grep -q '"end_time": "' "$dir/run.json" || fail "run.json has no end time"
    no_tmp "$dir"
    # the options as given (default: the uninterrupted run's), each resume's as the pattern says
    local want=${2:-$(run_json_list "$TMP/ref/run.json")} resumed=${3:-'^--checkpoint-every [345] $'}
    CHECKS=$((CHECKS + 1))
    [[ $(run_json_list "$dir/run.json") == "$want" ]] ||
        fail "run.json's given: $(run_json_list "$dir/run.json")"
    local n=0 step
    for step in $(sed -n 's/^ *"step": \([0-9]*\),$/\1/p' "$dir/run.json"); do
        CHECKS=$((CHECKS + 2))
        ((step <= STEPS)) || fail "a resume from step $step"
        [[ $(run_json_list "$dir/run.json" $n) =~ $resumed ]] ||
            fail "resume $n gave: $(run_json_list "$dir/run.json" $n)"
        n=$((n + 1))
    done
}

# ---- the uninterrupted run, and the time a start takes to its first step ----
t0=$(now_ms)
run "$A" train "${opts[@]}" --out "$TMP/ref"
expect_status 0
ref_ms=$(($(now_ms) - t0))
t0=$(now_ms)
run "$A" train "${opts[@]}" --steps 1 --out "$TMP/one"
expect_status 0
start_ms=$(($(now_ms) - t0))
lo_ms=$((start_ms / 2))
hi_ms=$((start_ms + (ref_ms - start_ms) / KILLS))
((hi_ms > lo_ms + 20)) || hi_ms=$((lo_ms + 20))
echo "soak_train: the uninterrupted run took $ref_ms ms, a start $start_ms ms;" \
    "kills come $lo_ms..$hi_ms ms after each start"

# a run killed before its first checkpoint (here: one made to look so, its checkpoint
# removed and a half-written one left in its place) starts again from step 0 on --resume
rm "$TMP/one/checkpoint.safetensors"
head -c 100 "$TMP/ref/checkpoint.safetensors" >"$TMP/one/checkpoint.safetensors.tmp.999999999"
run "$A" train --resume "$TMP/one" --steps $STEPS
expect_status 0
check_run "$TMP/one" "$(run_json_list "$TMP/ref/run.json")--steps 1 " "^--steps $STEPS \$"

# ---- killed and resumed ----
kills=0 attempts=0 partial=0 past=0 stale=0 fresh=0 rounds=1
dir=$TMP/killed-1
start() {
    if [[ -f $dir/run.json ]]; then
        # shellcheck disable=SC2206 # the extras are words
        local extra=(${resume_extras[attempts % ${#resume_extras[@]}]})
        "$A" train --resume="$dir" "${extra[@]}" >>"$TMP/killed.out" 2>>"$TMP/killed.err" &
    else
        fresh=$((fresh + 1))
        "$A" train "${opts_eq[@]}" --out="$dir" >>"$TMP/killed.out" 2>>"$TMP/killed.err" &
    fi
    pid=$!
}
while ((kills < KILLS && attempts < 4 * KILLS)); do
    attempts=$((attempts + 1))
    start
    sleep_ms $((lo_ms + RANDOM % (hi_ms - lo_ms + 1)))
    kill_and_reap "$pid"
    if ((status != 137)); then
        # it finished first: check it, go on with a new run
        CHECKS=$((CHECKS + 1))
        ((status == 0)) || fail "run $rounds ended with exit status $status"
        check_run "$dir"
        rounds=$((rounds + 1))
        dir=$TMP/killed-$rounds
        continue
    fi
    kills=$((kills + 1))
    # what the kill left, before the resume repairs it
    [[ -f $dir/run.json ]] && json_ok "$dir/run.json"
    partial=$((partial + $(partial_lines "$dir")))
    stale=$((stale + $(tmp_count "$dir")))
    if [[ -f $dir/checkpoint.safetensors && -f $dir/steps.csv ]]; then
        ck=$(head -c 65536 "$dir/checkpoint.safetensors" | grep -ao '"step":"[0-9]*"' | head -1 | tr -dc 0-9)
        rows=$(($(grep -c $'\n' "$dir/steps.csv") - 1))
        ((rows > ck)) && past=$((past + 1))
    fi
done
# a write cut short mid-line (what a kill inside a write(2) of a row leaves; rare in the
# loop above, so made here): the resume cuts it away with the rows past the checkpoint
printf '%s' '999,0,2.30' >>"$dir/steps.csv"
printf '%s' '999,fc1,weight' >>"$dir/tensors.csv"
partial=$((partial + 2))
# the last resume runs to the end
if [[ -f $dir/checkpoint.safetensors || -f $dir/run.json ]]; then
    run "$A" train --resume "$dir" --no-progress --steps $STEPS --checkpoint-every 5
else
    run "$A" train "${opts_eq[@]}" --out="$dir"
fi
expect_status 0
expect_out_has "mlp O2 fp16: $STEPS steps"
check_run "$dir"
CHECKS=$((CHECKS + 1))
resumes=$(grep -c '"step": ' "$dir/run.json" || true)
[[ $(run_json_list "$dir/run.json" $((resumes - 1))) == '--checkpoint-every 5 ' ]] ||
    fail "the last resume's --checkpoint-every 5 is not recorded"
CHECKS=$((CHECKS + 1))
((kills == KILLS)) || fail "only $kills of $KILLS kills landed in $attempts starts"

echo "soak_train: survived $kills SIGKILLs (seed $SEED, $attempts starts, $rounds runs, $fresh" \
    "starts from scratch):" \
    "$past left rows past their checkpoint and $partial CSV files a cut line, all cut back on" \
    "resume; $stale temporary files left by kills were removed; nothing lost; the last run's" \
    "run.json records $resumes resumes that changed an option"
finish
