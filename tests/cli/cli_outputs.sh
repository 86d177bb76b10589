#!/usr/bin/env bash
# cli_outputs.sh: outputs never overwrite inputs or records (analyze/record_lock.h).  For every
# command with an output (train, grad, recommend, report, sweep, reproduce): an output that is
# one of its inputs, that lies inside an input, a training run, a sweep or a reproduce folder it
# does not own, an existing folder holding another record or foreign files, a missing parent:
# exit 2, one line naming the problem, and no file changed (checksums before and after).
# --force says in one line what it removes, removes only ampscope's files, never an input, is
# refused over foreign files and with --resume, and is not recorded in run.json.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
A=$AMPSCOPE
W=$TMP/w
mkdir "$W"
short=(--net mlp --steps 3 --subset 640 --backend cpu --no-progress)

# every path, kind and size under W, then every file's checksum
snap() { (cd "$W" && find . -printf '%p %y %s\n' | sort && find . -type f -print0 | sort -z | xargs -0 -r sha256sum); }

# refused TEXT CMD...: exit 2, one line containing TEXT, nothing under W changed
refused() {
    local want=$1 before
    shift
    before=$(snap)
    run "$@"
    expect_status 2
    expect_err_has "$want"
    CHECKS=$((CHECKS + 2))
    [[ $(wc -l <"$TMP/err") == 1 ]] || fail "more than one line on stderr"
    [[ $(snap) == "$before" ]] || fail "files changed: $(diff <(echo "$before") <(snap) | head -5)"
}

# ---- the records the cases aim at ----
run "$A" train "${short[@]}" --out "$W/run"
expect_status 0
run "$A" train "${short[@]}" --seed 2 --out "$W/run2"
expect_status 0
run "$A" sweep --grid "seed=1" "${short[@]}" --out "$W/sweep"
expect_status 0
run "$A" report "$W/run" --out "$W/rep"
mkdir "$W/foreign" "$W/data" "$W/empty"
echo notes >"$W/foreign/notes.txt"
echo idx >"$W/data/train-images-idx3-ubyte"
echo text >"$W/file.txt"
cp "$W/run/checkpoint.safetensors" "$W/ck.safetensors"
ln -s "$W/run/trace.csv" "$W/link.csv"
# a run stopped before its first step: run.json, no steps.csv yet
mkdir "$W/half"
cp "$W/run/run.json" "$W/half/"
# a foreign file deep in a sweep's run
mkdir "$W/sweep-foreign"
cp -r "$W/sweep/." "$W/sweep-foreign/"
echo mine >"$W/sweep-foreign/runs/0-1/my-notes.txt"
SW=$W/sweep/runs/0-1

# ---- train ----
refused "--out $W/run already holds a run: give --resume $W/run" "$A" train "${short[@]}" --out "$W/run"
refused "--out $W/half already holds a run" "$A" train "${short[@]}" --out "$W/half"
refused "--out $W/run/sub lies inside a training run ($W/run)" "$A" train "${short[@]}" --out "$W/run/sub"
refused "--out $W/sweep holds a sweep folder: give --force" "$A" train "${short[@]}" --out "$W/sweep"
refused "--out $SW lies inside a sweep folder ($W/sweep)" "$A" train "${short[@]}" --out "$SW"
refused "--out $W/sweep/runs/new lies inside a sweep folder" "$A" train "${short[@]}" --out "$W/sweep/runs/new"
refused "--resume $SW lies inside a sweep folder" "$A" train --resume "$SW" --no-progress
refused "--out $W/rep holds a report: give --force" "$A" train "${short[@]}" --out "$W/rep"
refused "--out $W/foreign holds notes.txt, which ampscope did not write: choose another folder" \
    "$A" train "${short[@]}" --out "$W/foreign"
refused "--out $W/foreign holds notes.txt, which ampscope did not write: --force removes only" \
    "$A" train "${short[@]}" --out "$W/foreign" --force
refused "--out $W/sweep-foreign holds runs/0-1/my-notes.txt, which ampscope did not write" \
    "$A" train "${short[@]}" --out "$W/sweep-foreign" --force
refused "--out $W/run: --force would remove --init $W/run/checkpoint.safetensors" \
    "$A" train "${short[@]}" --init "$W/run/checkpoint.safetensors" --out "$W/run" --force
refused "--force and --resume" "$A" train --resume "$W/run" --force
refused "--out $W/nope/x: no folder $W/nope (make it first)" "$A" train "${short[@]}" --out "$W/nope/x"
refused "--out $W/file.txt: not a directory" "$A" train "${short[@]}" --out "$W/file.txt"
refused "--out $W/data is --data $W/data" "$A" train "${short[@]}" --data "$W/data" --out "$W/data"
refused "--out $W/data/run lies inside --data $W/data" "$A" train "${short[@]}" --data "$W/data" \
    --out "$W/data/run"

# ---- grad ----
g=(--net mlp --samples 0:2 --backend cpu)
refused "--out $W/ck.safetensors is --init $W/ck.safetensors" "$A" grad "${g[@]}" --init "$W/ck.safetensors" \
    --out "$W/ck.safetensors"
refused "--out $W/run/checkpoint.safetensors is --init" "$A" grad "${g[@]}" \
    --init "$W/run/checkpoint.safetensors" --out "$W/run/checkpoint.safetensors"
refused "--out $W/run/g.safetensors lies inside a training run" "$A" grad "${g[@]}" \
    --init "$W/ck.safetensors" --out "$W/run/g.safetensors"
refused "--out $W/sweep/g.safetensors lies inside a sweep folder" "$A" grad "${g[@]}" \
    --init "$W/ck.safetensors" --out "$W/sweep/g.safetensors"

# ---- recommend ----
refused "--csv $W/run/steps.csv lies inside RUN_DIR $W/run" "$A" recommend "$W/run" --csv "$W/run/steps.csv"
refused "--csv $W/link.csv lies inside RUN_DIR $W/run" "$A" recommend "$W/run" --csv "$W/link.csv"
refused "--csv $W/run/grid.csv lies inside a training run" "$A" recommend "$W/run2" --csv "$W/run/grid.csv"
refused "--csv $SW/grid.csv lies inside a training run ($SW)" "$A" recommend "$W/run2" --csv "$SW/grid.csv"

# ---- report ----
refused "--out $W/run is RUN_DIR $W/run" "$A" report "$W/run" --out "$W/run"
refused "--out $W/run/rep lies inside RUN_DIR $W/run" "$A" report "$W/run" --out "$W/run/rep"
refused "--out $W/run2 holds a training run: give --force" "$A" report "$W/run" --out "$W/run2"
refused "--out $W/sweep holds a sweep folder" "$A" report "$W/run" --out "$W/sweep"
refused "--out $W/sweep/rep lies inside a sweep folder" "$A" report "$W/run" --out "$W/sweep/rep"
refused "--out $W/foreign holds notes.txt" "$A" report "$W/run" --out "$W/foreign" --force
refused "--out $W/nope/rep: no folder $W/nope (make it first)" "$A" report "$W/run" --out "$W/nope/rep"
refused "--out $W/file.txt: not a directory" "$A" report "$W/run" --out "$W/file.txt"
refused "--out $W/sweep is RUN_DIR $W/sweep" "$A" report "$W/sweep" --out "$W/sweep" --force
refused "--out $W/sweep: --force would remove RUN_DIR $SW" "$A" report "$SW" --out "$W/sweep" --force

# ---- sweep ----
s=(--grid "seed=1" "${short[@]}")
refused "--out $W/run holds a training run: give --force" "$A" sweep "${s[@]}" --out "$W/run"
refused "--out $W/run/sw lies inside a training run" "$A" sweep "${s[@]}" --out "$W/run/sw"
refused "--out $W/sweep holds another sweep (--grid \"seed=1\"" "$A" sweep --grid "seed=2" "${short[@]}" \
    --out "$W/sweep"
refused "--out $W/sweep/runs/sw lies inside a sweep folder" "$A" sweep "${s[@]}" --out "$W/sweep/runs/sw"
refused "--out $W/foreign holds notes.txt" "$A" sweep "${s[@]}" --out "$W/foreign" --force
refused "--out $W/nope/sw: no folder $W/nope (make it first)" "$A" sweep "${s[@]}" --out "$W/nope/sw"
refused "--out $W/data is --data $W/data" "$A" sweep "${s[@]}" --data "$W/data" --out "$W/data"

# ---- reproduce ----
refused "--out $W/run holds a training run: give --force" "$A" reproduce --smoke --out "$W/run"
refused "--out $W/sweep/x lies inside a sweep folder" "$A" reproduce --smoke --out "$W/sweep/x"
refused "--out $W/rep holds a report: give --force" "$A" reproduce --smoke --out "$W/rep"
refused "--out $W/nope/r: no folder $W/nope (make it first)" "$A" reproduce --smoke --out "$W/nope/r"
refused "--out $W/file.txt: not a directory" "$A" reproduce --smoke --out "$W/file.txt"
refused "--out $W/data is --data $W/data" "$A" reproduce --smoke --data "$W/data" --out "$W/data"

# ---- --force: one line, ampscope's files only, then the new record ----
run "$A" train "${short[@]}" --out "$W/rep" --force
expect_status 0
expect_err_has "ampscope train: --force: removed a report in $W/rep ("
CHECKS=$((CHECKS + 3))
[[ $(grep -c . "$TMP/err") == 1 ]] || fail "--force said more than one line"
[[ ! -e $W/rep/index.html && ! -e $W/rep/plots && -s $W/rep/steps.csv ]] || fail "the report was not replaced"
! grep -q force "$W/rep/run.json" || fail "run.json records --force"
# over a run: its files go, the new run's come (its steps once each)
run "$A" train "${short[@]}" --steps 2 --out "$W/run2" --force
expect_status 0
expect_err_has "--force: removed a training run in $W/run2 ("
CHECKS=$((CHECKS + 1))
[[ $(tail -n +2 "$W/run2/steps.csv" | cut -d, -f1 | tr '\n' ' ') == '0 1 ' ]] || fail "steps.csv of the new run"
# the run stopped before its first step is replaced too
run "$A" sweep "${s[@]}" --out "$W/half" --force
expect_status 0
expect_err_has "--force: removed a training run in $W/half (1 entry: run.json)"
# an empty folder: nothing to remove, nothing said
run "$A" report "$W/run" --out "$W/empty" --force
CHECKS=$((CHECKS + 1))
[[ $ERR != *'--force'* && -s $W/empty/index.html ]] || fail "report into an empty folder with --force"
# a compatible record of the same command is written again without --force
run "$A" report "$W/run" --out "$W/empty"
CHECKS=$((CHECKS + 1))
[[ $ERR != *'--force'* && -s $W/empty/index.html ]] || fail "a report over its own report"
run "$A" sweep "${s[@]}" --out "$W/sweep"
expect_status 0
expect_out_has 'sweep: 1 runs: 1 ok'

finish
