#!/usr/bin/env bash
# soak_sweep.sh: a small sweep (4 mlp runs, 2 at a time, a checkpoint every 4
# steps) is killed with SIGKILL at random moments, AMPSCOPE_SOAK_KILLS times
# in all, and the same `sweep` command is given again after each kill (its
# runs die with it; a run without its done.json marker is redone from
# scratch, a finished one is kept).  When a sweep finishes before its next
# kill, it is checked and a new one starts in a new folder.  Each finished
# sweep is checked against one that was never killed:
#   - the same run folders; each run's logs byte for byte the same (every
#     completed step's rows once, nothing after the last step) and its
#     checkpoint.safetensors bit-identical (cmp);
#   - summary.csv the same but for its wall_seconds column;
#   - nothing half-written: no temporary file anywhere, every CSV line with
#     the header's field count and a newline, sweep.json and every done.json
#     parse (checked after every kill too).
# Kill delays (T: the clean sweep's time): every other one short, in
# [20 ms, T / kills] (start-up, the first steps), the others in
# [T / kills, 0.7 T] (later steps, checkpoints, markers, the summary).
set -euo pipefail
source "$(dirname "$0")/../cli/lib.sh"
source "$(dirname "$0")/soak_lib.sh"
A=$AMPSCOPE
JSON_CHECK=${2:?usage: $0 PATH-TO-ampscope PATH-TO-soak_json_check}
soak_setup soak_sweep 12

STEPS=20
SHARED=(--net mlp --mode O2 --dtype fp16 --steps $STEPS --subset 1280 --stats-every 5 --hist-every 10
    --checkpoint-every 4 --scale-window 5 --backend cpu)
GRID="loss_scale=pytorch,megatron seed=1,2"
LOGS=(steps.csv tensors.csv updates.csv hist.csv eval.csv trace.csv trace_hist.csv)
sweep() { "$A" sweep --grid "$GRID" "${SHARED[@]}" --jobs 2 --out "$1"; }
# summary.csv without wall_seconds (the 9th column, after the 2 axes)
no_wall() { awk -F, -v OFS=, '{ $9 = ""; print }' "$1"; }

# a finished sweep's folder against the clean one
check_sweep() {
    local dir=$1 r f
    CHECKS=$((CHECKS + 1))
    [[ $(ls "$TMP/ref/runs") == $(ls "$dir/runs") ]] || fail "run folders: $(ls "$dir/runs" | tr '\n' ' ')"
    for r in $(ls "$TMP/ref/runs"); do
        for f in "${LOGS[@]}" checkpoint.safetensors; do
            CHECKS=$((CHECKS + 1))
            cmp -s "$TMP/ref/runs/$r/$f" "$dir/runs/$r/$f" || fail "$r/$f differs from the clean sweep's"
        done
        for f in "${LOGS[@]}"; do
            csv_ok "$dir/runs/$r/$f"
        done
        steps_once "$dir/runs/$r/steps.csv" 1 $STEPS
        for f in tensors.csv updates.csv hist.csv trace_hist.csv; do
            steps_bounded "$dir/runs/$r/$f" 1 $STEPS
        done
        json_ok "$dir/runs/$r/done.json" "$dir/runs/$r/run.json"
        CHECKS=$((CHECKS + 1))
        grep -q '"status": "ok"' "$dir/runs/$r/done.json" || fail "$r: done.json is not ok"
    done
    csv_ok "$dir/summary.csv"
    CHECKS=$((CHECKS + 1))
    [[ $(no_wall "$dir/summary.csv") == $(no_wall "$TMP/ref/summary.csv") ]] ||
        fail "summary.csv differs from the clean sweep's: $(cat "$dir/summary.csv")"
    json_ok "$dir/sweep.json"
    no_tmp "$dir"
}

# ---- the clean sweep ----
t0=$(now_ms)
run sweep "$TMP/ref"
expect_status 0
expect_out_has 'sweep: 4 runs: 4 ok, 0 diverged, 0 failed, 0 not run'
ref_ms=$(($(now_ms) - t0))
short_ms=$((ref_ms / KILLS))
((short_ms > 40)) || short_ms=40
echo "soak_sweep: the clean sweep took $ref_ms ms; kills come 20..$short_ms ms after a start," \
    "or up to $((ref_ms * 7 / 10)) ms, by turns"

# ---- killed and given again ----
kills=0 attempts=0 partial=0 stale=0 orphans=0 reused=0 rounds=1
dir=$TMP/killed-1
while ((kills < KILLS && attempts < 4 * KILLS)); do
    attempts=$((attempts + 1))
    # not through the function: $! must be the sweep itself, not a subshell
    "$A" sweep --grid "$GRID" "${SHARED[@]}" --jobs 2 --out "$dir" >>"$TMP/killed.out" \
        2>>"$TMP/killed.err" &
    pid=$!
    if ((attempts % 2)); then
        sleep_ms $((20 + RANDOM % (short_ms - 19)))
    else
        sleep_ms $((short_ms + RANDOM % (ref_ms * 7 / 10 - short_ms + 1)))
    fi
    runs=$(children_of "$pid")
    kill_and_reap "$pid"
    if ((status != 137)); then
        # it finished first: check it, go on with a new sweep
        CHECKS=$((CHECKS + 1))
        ((status == 0)) || fail "sweep $rounds ended with exit status $status"
        check_sweep "$dir"
        rounds=$((rounds + 1))
        dir=$TMP/killed-$rounds
        continue
    fi
    kills=$((kills + 1))
    # its trainers die with it (PR_SET_PDEATHSIG); wait for them before looking
    [[ -n $runs ]] && orphans=$((orphans + $(wc -w <<<"$runs")))
    wait_gone $runs
    # (a kill before the sweep made its folder leaves none: find fails there)
    reused=$((reused + $({ find "$dir" -name done.json 2>/dev/null || true; } | wc -l)))
    [[ -f $dir/sweep.json ]] && json_ok "$dir/sweep.json"
    markers=$(find "$dir" -name done.json 2>/dev/null || true)
    [[ -n $markers ]] && json_ok $markers
    partial=$((partial + $(partial_lines "$dir")))
    stale=$((stale + $(tmp_count "$dir")))
done
run sweep "$dir"
expect_status 0
expect_out_has 'sweep: 4 runs: 4 ok, 0 diverged, 0 failed, 0 not run'
check_sweep "$dir"
CHECKS=$((CHECKS + 1))
((kills == KILLS)) || fail "only $kills of $KILLS kills landed in $attempts starts"

echo "soak_sweep: survived $kills SIGKILLs (seed $SEED, $attempts starts, $rounds sweeps;" \
    "$orphans trainers died with their sweep; $reused finished runs kept across kills):" \
    "$partial CSV files with a cut line and $stale temporary files were left by kills and are" \
    "gone; nothing lost"
finish
