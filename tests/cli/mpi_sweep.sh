#!/usr/bin/env bash
# mpi_sweep.sh: `ampscope sweep` on 2 MPI ranks (label mpi): the tiny grid of
# cli_sweep.sh under mpirun, every row of the summary there and the results
# identical to a local sweep's; both ranks trained; stopped midway (SIGTERM to
# mpirun, which passes it to the ranks) and started again, the finished runs
# are not redone and the results are the same; bad input: one line, exit 2,
# nothing created.
#   usage: mpi_sweep.sh PATH-TO-ampscope PATH-TO-mpirun
set -euo pipefail
source "$(dirname "$0")/lib.sh"
A=$AMPSCOPE
MPIRUN=${2:-mpirun}
command -v "$MPIRUN" >/dev/null || {
    echo "mpi_sweep: no $MPIRUN" >&2
    exit 77
}
# In a sanitizer build, LeakSanitizer reports what OpenMPI itself keeps at
# MPI_Finalize (none of it ours: cli_sweep checks the local path for leaks).
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
MPI=("$MPIRUN" --allow-run-as-root --oversubscribe -x ASAN_OPTIONS -np 2)

SHARED=(--net mlp --steps 20 --subset 512 --stats-every 5 --hist-every 0 --backend cpu
    --loss-scale pytorch --scale-window 5)
GRID="mode=O2,O3 scale_factor=2,4"
NAMES=(0-O2-2 1-O2-4 2-O3-2 3-O3-4)

# ---- the reference: a local sweep, one process at a time ----
run "$A" sweep --grid "$GRID" "${SHARED[@]}" --out "$TMP/local" --jobs 1 --no-progress
expect_status 0

# ---- on 2 ranks ----
run "${MPI[@]}" "$A" sweep --grid "$GRID" "${SHARED[@]}" --out "$TMP/m"
expect_status 0
expect_out_has 'sweep: 4 runs: 4 ok, 0 diverged, 0 failed, 0 not run'
expect_err_has 'sweep: 4 runs: 0 done before, 4 to train, 2 at a time (over the MPI ranks)'
expect_err_has 'on rank 1'
CHECKS=$((CHECKS + 1))
[[ $(wc -l <"$TMP/m/summary.csv") == 5 ]] || fail "summary rows: $(cat "$TMP/m/summary.csv")"
CHECKS=$((CHECKS + 1))
[[ $(no_wall "$TMP/m/summary.csv") == $(no_wall "$TMP/local/summary.csv") ]] ||
    fail "2 ranks differ from the local sweep: $(diff "$TMP/m/summary.csv" "$TMP/local/summary.csv")"
# rank 0 trains too, and rank 1 asked for work
CHECKS=$((CHECKS + 1))
ranks=$(cat "$TMP"/m/runs/*/done.json | grep -o '"rank": [0-9]*' | sort -u | tr '\n' ' ')
[[ $ranks == '"rank": 0 "rank": 1 ' ]] || fail "the ranks that trained: $ranks"
# again: everything reused
before=$(mtimes "$TMP/m")
run "${MPI[@]}" "$A" sweep --grid "$GRID" "${SHARED[@]}" --out "$TMP/m"
expect_status 0
expect_err_has '4 done before, 0 to train'
CHECKS=$((CHECKS + 1))
[[ $(mtimes "$TMP/m") == "$before" ]] || fail "a finished run was redone"

# ---- stopped midway, then the same command ----
# Longer runs (200 steps) than above, so that the SIGTERM sent when the
# first run is done finds the others unfinished: 20-step runs in forked
# children can all end between the first done.json and the signal.  Their
# reference is a local sweep of the same runs.
SHARED_K=("${SHARED[@]/#20/200}")
run "$A" sweep --grid "$GRID" "${SHARED_K[@]}" --out "$TMP/local-k" --jobs 2 --no-progress
expect_status 0
"${MPI[@]}" "$A" sweep --grid "$GRID" "${SHARED_K[@]}" --out "$TMP/k" >"$TMP/k.out" 2>"$TMP/k.err" &
pid=$!
for _ in $(seq 1200); do
    ls "$TMP"/k/runs/*/done.json >/dev/null 2>&1 && break
    sleep 0.05
done
kill -TERM $pid
STATUS=0
wait $pid || STATUS=$?
CHECKS=$((CHECKS + 1))
((STATUS != 0)) || fail "the stopped sweep exited 0"
before=$(mtimes "$TMP/k")
n_done=$(grep -vc none <<<"$before" || true)
CHECKS=$((CHECKS + 1))
((n_done >= 1 && n_done < 4)) || fail "stopped midway: $n_done runs were done"
# no row is left running: each is ok, failed (interrupted) or pending
CHECKS=$((CHECKS + 1))
! grep -q ',running' "$TMP/k/summary.csv" || fail "a row still running: $(cat "$TMP/k/summary.csv")"
sleep 0.2
CHECKS=$((CHECKS + 1))
# a run is a forked child of its rank: its command line is the sweep's
! pgrep -f -- "--out $TMP/k( |$)" >/dev/null || fail "a training outlived the stopped sweep"
run "${MPI[@]}" "$A" sweep --grid "$GRID" "${SHARED_K[@]}" --out "$TMP/k"
expect_status 0
expect_err_has "$n_done done before, $((4 - n_done)) to train"
not_redone "$before" "$(mtimes "$TMP/k")"
CHECKS=$((CHECKS + 1))
[[ $(no_wall "$TMP/k/summary.csv") == $(no_wall "$TMP/local-k/summary.csv") ]] ||
    fail "stopped and resumed differs: $(diff "$TMP/k/summary.csv" "$TMP/local-k/summary.csv")"

# ---- bad input: our one line (mpirun adds its own notice), exit 2, nothing made ----
for grid in "colour=red" "seed=" "mode=O9"; do
    run "${MPI[@]}" "$A" sweep --grid "$grid" --net mlp --out "$TMP/bad"
    expect_status 2
    CHECKS=$((CHECKS + 1))
    [[ $(grep -c '^ampscope sweep: ' <<<"$ERR") == 1 ]] || fail "not one line from the ranks"
    CHECKS=$((CHECKS + 1))
    [[ ! -e $TMP/bad ]] || fail "bad input created the sweep folder"
done
# a folder of another sweep: rank 0 refuses it before any rank trains
run "${MPI[@]}" "$A" sweep --grid "seed=1" --net mlp --out "$TMP/m"
expect_status 2
expect_err_has 'holds another sweep'
CHECKS=$((CHECKS + 1))
[[ $(grep -c '^ampscope sweep: ' <<<"$ERR") == 1 ]] || fail "not one line from the ranks"

finish
