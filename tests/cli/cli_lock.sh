#!/usr/bin/env bash
# cli_lock.sh: one writer per record folder (analyze/record_lock.h).  Two
# writers of one folder started together: exactly one runs, the other exits 2
# at once with one line naming the holder's pid (train, sweep, report,
# reproduce; a --resume of a run being written); a lock file left by a dead
# process blocks nobody; a lock held by another program is named as such.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
A=$AMPSCOPE
# long enough to be stopped by the test (SIGTERM), not to end by itself
long=(--net mlp --steps 100000 --subset 6400 --backend cpu --no-progress)

# lock_text DIR: the lock file's text, or "none"
lock_text() { cat "$1/.ampscope.lock" 2>/dev/null || echo none; }

# wait_lock DIR KIND PID: until DIR's lock names `ampscope KIND PID` (at most 60 s)
wait_lock() {
    local i
    for ((i = 0; i < 600; i++)); do
        [[ $(lock_text "$1") == "ampscope $2 $3" ]] && return 0
        sleep 0.1
    done
    fail "$1: the lock never named ampscope $2 $3 (it holds: $(lock_text "$1"))"
}

# wait_rows FILE: until FILE has a row after its header (at most 120 s): the writer is past
# its setup and stops on SIGTERM after a whole step
wait_rows() {
    local i
    for ((i = 0; i < 1200; i++)); do
        (($({ wc -l <"$1"; } 2>/dev/null || echo 0) >= 2)) && return 0
        sleep 0.1
    done
    fail "$1 never got a row"
}

# together NAME KIND DIR CMD...: starts two copies of CMD at once.  The first to end must have
# exited 2 with one line on stderr naming the other copy as the holder; the other copy holds
# the lock (its text names it) until it is stopped with SIGTERM (once READY, when set, names a
# file with rows).
together() {
    local name=$1 kind=$2 dir=$3
    shift 3
    "$@" >"$TMP/$name-a.out" 2>"$TMP/$name-a.err" &
    local pa=$!
    "$@" >"$TMP/$name-b.out" 2>"$TMP/$name-b.err" &
    local pb=$!
    local first="" status=0
    wait -n -p first "$pa" "$pb" || status=$?
    local other=$pb side=a
    if [[ $first != "$pa" ]]; then
        other=$pa
        side=b
    fi
    LAST_CMD="$* (two at once)"
    OUT=$(cat "$TMP/$name-$side.out")
    ERR=$(cat "$TMP/$name-$side.err")
    STATUS=$status
    expect_status 2
    expect_err_has "is in use by ampscope $kind (pid $other); wait for it or stop it"
    CHECKS=$((CHECKS + 1))
    [[ $(wc -l <"$TMP/$name-$side.err") == 1 ]] || fail "the refused writer printed more than one line"
    wait_lock "$dir" "$kind" "$other"
    [[ -z ${READY-} ]] || wait_rows "$READY"
    kill -TERM "$other" 2>/dev/null || true
    wait "$other" || true
}

# a pid no process has: a child that has been reaped
bash -c 'exit 0' &
dead=$!
wait "$dead"

# ---- train: two writers of one new folder ----
READY=$TMP/t/steps.csv together train train "$TMP/t" "$A" train "${long[@]}" --out "$TMP/t"
# SIGTERM stops the holder after a whole step: the record is its, whole
[[ -s $TMP/t/steps.csv && -s $TMP/t/checkpoint.safetensors ]] || fail "the holder left no record"
CHECKS=$((CHECKS + 1))
# its rows are one writer's: steps 0, 1, 2 ... once each
[[ $(tail -n +2 "$TMP/t/steps.csv" | cut -d, -f1 | sort -n | uniq -d | wc -l) == 0 ]] ||
    fail "steps.csv has a step twice"

# ---- --resume while another process writes the run ----
"$A" train --resume "$TMP/t" --steps 100000 --no-progress >/dev/null 2>"$TMP/resume.err" &
holder=$!
wait_lock "$TMP/t" train "$holder"
before=$(sha256sum "$TMP/t/run.json" | cut -d' ' -f1)
run "$A" train --resume "$TMP/t" --no-progress
expect_status 2
expect_err_has "--resume $TMP/t is in use by ampscope train (pid $holder)"
run "$A" train "${long[@]}" --out "$TMP/t" --force
expect_status 2
expect_err_has "(pid $holder)"
kill -TERM "$holder"
wait "$holder" || true
CHECKS=$((CHECKS + 1))
[[ -s $TMP/t/run.json ]] || fail "run.json is gone"

# ---- a stale lock (its process is dead) blocks nobody ----
mkdir "$TMP/stale"
printf 'ampscope train %d\n' "$dead" >"$TMP/stale/.ampscope.lock"
run "$A" train --net mlp --steps 3 --subset 640 --backend cpu --no-progress --out "$TMP/stale"
expect_status 0
CHECKS=$((CHECKS + 1))
[[ $(lock_text "$TMP/stale") =~ ^ampscope\ train\ [0-9]+$ && $(lock_text "$TMP/stale") != "ampscope train $dead" ]] ||
    fail "the stale lock was not taken over: $(lock_text "$TMP/stale")"
# and the finished run's own lock file does not block its resume
run "$A" train --resume "$TMP/stale" --steps 5 --no-progress
expect_status 0

# ---- a lock held by a program that is not ampscope (no text): named as such ----
mkdir "$TMP/other"
flock "$TMP/other/.ampscope.lock" sleep 30 &
flocker=$!
for ((i = 0; i < 100; i++)); do
    flock -n "$TMP/other/.ampscope.lock" true 2>/dev/null || break
    sleep 0.1
done
run "$A" train --net mlp --steps 3 --backend cpu --no-progress --out "$TMP/other"
expect_status 2
expect_err_has "--out $TMP/other is in use by another process (it holds $TMP/other/.ampscope.lock)"
kill "$flocker" 2>/dev/null || true
wait "$flocker" 2>/dev/null || true

# ---- sweep: two sweeps of one folder; each run holds its own folder too ----
together sweep sweep "$TMP/sw" "$A" sweep --grid "seed=1,2" "${long[@]}" --out "$TMP/sw"
mkdir "$TMP/sw-stale"
printf 'ampscope sweep %d\n' "$dead" >"$TMP/sw-stale/.ampscope.lock"
run "$A" sweep --grid "seed=1" --net mlp --steps 2 --subset 640 --backend cpu --out "$TMP/sw-stale" \
    --no-progress
expect_status 0
expect_out_has 'sweep: 1 runs: 1 ok'

# ---- report: gnuplot slowed down, so that the first report still holds the folder ----
run "$A" train --net mlp --steps 3 --subset 640 --backend cpu --no-progress --out "$TMP/r"
expect_status 0
# a gnuplot that answers --version 3 s late (the report asks it when it opens): the first report
# holds the folder that long
mkdir "$TMP/bin"
printf '#!/bin/sh\n[ "$1" = --version ] && sleep 3\necho "gnuplot 5.4 patchlevel 4"\n' >"$TMP/bin/gnuplot"
chmod +x "$TMP/bin/gnuplot"
together report report "$TMP/rep" env PATH="$TMP/bin:$PATH" "$A" report "$TMP/r" --out "$TMP/rep"
mkdir "$TMP/rep-stale"
printf 'ampscope report %d\n' "$dead" >"$TMP/rep-stale/.ampscope.lock"
run "$A" report "$TMP/r" --out "$TMP/rep-stale"
CHECKS=$((CHECKS + 1))
[[ $ERR != *'in use'* && -s $TMP/rep-stale/index.html ]] ||
    fail "the report behind a stale lock was not written"

# ---- reproduce ----
together reproduce reproduce "$TMP/repro" "$A" reproduce --smoke --no-progress --out "$TMP/repro"
mkdir "$TMP/repro-stale"
printf 'ampscope reproduce %d\n' "$dead" >"$TMP/repro-stale/.ampscope.lock"
"$A" reproduce --smoke --no-progress --out "$TMP/repro-stale" >/dev/null 2>&1 &
holder=$!
wait_lock "$TMP/repro-stale" reproduce "$holder"
kill -TERM "$holder"
wait "$holder" || true

finish
