#!/usr/bin/env bash
# cli_resume_options.sh: one parsed form of train's options.  `--key=value`
# and `--key value` record the same run.json "given" list and train the same
# steps; `--resume DIR` rebuilds the options from that list and refuses (exit
# 2, one line naming the option, not a byte of the folder changed) every
# option that would change the run, --out, --init and a second --resume; the
# allowed ones (--steps/--epochs extending the run, --checkpoint-every,
# --no-progress) are recorded in "resumes" with the step they apply from,
# and the extended run is bit for bit the run trained that long at once.  A
# record without "given" (older) or with a damaged one is refused.  A sweep
# records its points the same way (its --key=value options overflowed a list).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
A=$AMPSCOPE
# simplenet on synthetic data: 64 samples / batch 8 = 8 steps an epoch
net=(--net simplenet --width 16 --batch 8 --samples 64)
LOGS=(steps.csv tensors.csv updates.csv hist.csv trace.csv trace_hist.csv checkpoint.safetensors)

# the steps of "resumes", one line
resume_steps() { sed -n 's/^ *"step": \([0-9]*\),$/\1/p' "$1" | tr '\n' ' '; }
same_logs() {
    local f
    for f in "${LOGS[@]}"; do
        CHECKS=$((CHECKS + 1))
        cmp -s "$1/$f" "$2/$f" || fail "$3: $f differs"
    done
}
# every file's name and checksum under a folder
snapshot() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum); }

# ---- --key=value and --key value: one record, the same steps ----
run "$A" train "${net[@]}" --mode=O2 --dtype=fp16 --loss-scale=pytorch --lr=0.001 \
    --steps=6 --checkpoint-every=3 --seed=7 --backend=cpu --no-progress --out="$TMP/eq"
expect_status 0
run "$A" train "${net[@]}" --mode O2 --dtype fp16 --loss-scale pytorch --lr 0.001 \
    --steps 6 --checkpoint-every 3 --seed 7 --backend cpu --no-progress --out "$TMP/sp"
expect_status 0
want='--net simplenet --width 16 --batch 8 --samples 64 --mode O2 --dtype fp16 --loss-scale pytorch --lr 0.001 --steps 6 --checkpoint-every 3 --seed 7 --backend cpu --no-progress '
check "given (--key=value)" "$(run_json_list "$TMP/eq/run.json")" "$want"
check "given (--key value)" "$(run_json_list "$TMP/sp/run.json")" "$want"
check "no resumes yet" "$(resume_steps "$TMP/eq/run.json")" ""
same_logs "$TMP/eq" "$TMP/sp" "--key=value against --key value"

# a text run.json cannot hold (not UTF-8): refused before anything is created, both forms
for form in "--data=$TMP/"$'\xff' "--white-list "$'li\xffnear'; do
    # shellcheck disable=SC2086 # the form is one or two words
    run "$A" train "${net[@]}" $form --steps 2 --backend cpu --out "$TMP/utf8-run"
    expect_status 2
    expect_err_has ': the value is not valid UTF-8 (run.json records it as given)'
    CHECKS=$((CHECKS + 1))
    [[ ! -e $TMP/utf8-run ]] || fail "$form: the folder was created"
done
run "$A" sweep --grid "seed=1,2" --out "$TMP/utf8-sweep" --net=simplenet "--data=$TMP/"$'\xff'
expect_status 2
expect_err_has '--data: the value is not valid UTF-8'
CHECKS=$((CHECKS + 1))
[[ ! -e $TMP/utf8-sweep ]] || fail "sweep: the folder was created"

# ---- refused on --resume: exit 2, one line naming the option, nothing changed ----
before=$(snapshot "$TMP/eq")
refused() {
    local want=$1
    shift
    run "$A" train --resume "$TMP/eq" "$@"
    expect_status 2
    expect_err_has "$want"
    CHECKS=$((CHECKS + 2))
    [[ $(printf '%s\n' "$ERR" | wc -l) == 1 ]] || fail "not one line"
    [[ $(snapshot "$TMP/eq") == "$before" ]] || fail "the folder changed"
}
refused '--lr cannot change on a resumed run (run.json has 0.001)' --lr 0.01
refused '--lr cannot change on a resumed run (run.json has 0.001)' --lr=0.01
refused '--seed cannot change on a resumed run (run.json has 7)' --seed 1
refused '--mode cannot change on a resumed run (run.json has O2)' --mode O3
refused '--dtype cannot change' --dtype bf16
refused '--loss-scale cannot change' --loss-scale dynamic
refused '--net cannot change' --net mlp
refused '--width cannot change' --width 32
refused '--batch cannot change' --batch 4
refused '--backend cannot change' --backend auto
refused '--subset cannot change on a resumed run (run.json does not give it' --subset 32
refused '--optimizer cannot change' --optimizer adam
refused '--scale-window cannot change' --scale-window 4
refused '--fault cannot change' --fault zero-grads@all
refused '--stats-every cannot change' --stats-every 1
refused '--out cannot be given with --resume' --out "$TMP/other"
refused '--out cannot be given with --resume' --out="$TMP/eq"
refused '--init cannot be given with --resume' --init "$TMP/sp/checkpoint.safetensors"
refused '--resume is given twice' --resume "$TMP/sp"
refused '--resume is given twice' --resume="$TMP/eq"
refused '--steps 5 would shorten the run (run.json has 6)' --steps 5
refused '--steps 2 would shorten the run (run.json has 6)' --steps=2
refused '--epochs cannot change on a resumed run whose length run.json gives as --steps 6' --epochs 3
refused '--steps wants an integer' --steps 0
refused "unknown option '--frobnicate'" --frobnicate 1
# a refusal after an allowed option changes nothing either
refused '--lr cannot change' --steps 12 --lr 0.5
refused '--steps 4 would shorten' --no-progress --steps 4

# ---- the same values again: accepted, nothing recorded ----
cp -r "$TMP/eq" "$TMP/same"
run "$A" train --resume "$TMP/same" --lr 0.0010 --steps 6 --seed=7 --no-progress --mode O2
expect_status 0
check "same values: no resumes" "$(resume_steps "$TMP/same/run.json")" ""
check "same values: given" "$(run_json_list "$TMP/same/run.json")" "$want"
same_logs "$TMP/eq" "$TMP/same" "same values"

# ---- extended: recorded with its step, bit for bit the longer run ----
run "$A" train "${net[@]}" --mode O2 --dtype fp16 --loss-scale pytorch --lr 0.001 --steps 12 \
    --seed 7 --backend cpu --no-progress --out "$TMP/whole12"
expect_status 0
run "$A" train --resume="$TMP/eq" --steps=12 --checkpoint-every 4
expect_status 0
expect_out_has "12 steps"
check "extended: resume steps" "$(resume_steps "$TMP/eq/run.json")" "6 "
check "extended: resume 0" "$(run_json_list "$TMP/eq/run.json" 0)" "--steps 12 --checkpoint-every 4 "
check "extended: given kept" "$(run_json_list "$TMP/eq/run.json")" "$want"
grep -q '"steps": "12"' "$TMP/eq/run.json" || fail "options: steps not 12"
same_logs "$TMP/whole12" "$TMP/eq" "--steps 6 resumed with --steps 12"
# a second resume replays the first one's options (--steps 12): 12 is no shortening, 11 is
before=$(snapshot "$TMP/eq")
refused '--steps 11 would shorten the run (run.json has 12)' --steps 11
run "$A" train "${net[@]}" --mode O2 --dtype fp16 --loss-scale pytorch --lr 0.001 --steps 15 \
    --seed 7 --backend cpu --no-progress --out "$TMP/whole15"
expect_status 0
run "$A" train --resume "$TMP/eq" --steps 15 --no-progress --checkpoint-every 4
expect_status 0
check "twice: resume steps" "$(resume_steps "$TMP/eq/run.json")" "6 12 "
check "twice: resume 1" "$(run_json_list "$TMP/eq/run.json" 1)" "--steps 15 "
same_logs "$TMP/whole15" "$TMP/eq" "resumed twice to 15 steps"

# ---- by epochs: --epochs extends, --steps is refused ----
run "$A" train "${net[@]}" --mode O1 --epochs 2 --backend cpu --no-progress --out "$TMP/e2"
expect_status 0
run "$A" train "${net[@]}" --mode O1 --backend cpu --no-progress --out "$TMP/e1"
expect_status 0
before=$(snapshot "$TMP/e1")
run "$A" train --resume "$TMP/e1" --steps 16
expect_status 2
expect_err_has '--steps cannot change on a resumed run whose length run.json gives as --epochs 1 (the default)'
check "refused --steps: unchanged" "$(snapshot "$TMP/e1")" "$before"
run "$A" train --resume "$TMP/e1" --epochs=2
expect_status 0
check "epochs: resume" "$(resume_steps "$TMP/e1/run.json") $(run_json_list "$TMP/e1/run.json" 0)" \
    "8  --epochs 2 "
same_logs "$TMP/e2" "$TMP/e1" "--epochs 1 resumed with --epochs 2"

# ---- end_time is cleared while a resumed run goes on ----
run "$A" train "${net[@]}" --mode O2 --loss-scale pytorch --steps 4 --backend cpu --no-progress \
    --out "$TMP/long"
expect_status 0
grep -q '"end_time": "' "$TMP/long/run.json" || fail "no end_time after the first part"
"$A" train --resume "$TMP/long" --steps 100000000 >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 500); do
    [[ $(wc -l <"$TMP/long/steps.csv") -gt 10 ]] && break
    sleep 0.01
done
CHECKS=$((CHECKS + 1))
grep -q '"end_time": null' "$TMP/long/run.json" || fail "end_time not cleared while resumed"
kill -TERM $pid
wait $pid || true
CHECKS=$((CHECKS + 1))
grep -q '"end_time": "' "$TMP/long/run.json" || fail "no end_time after SIGTERM"

# ---- records that cannot be resumed: refused, nothing changed ----
damaged() {
    local want=$1 dir=$2
    before=$(snapshot "$dir")
    run "$A" train --resume "$dir"
    expect_status 2
    expect_err_has "$want"
    CHECKS=$((CHECKS + 1))
    [[ $(snapshot "$dir") == "$before" ]] || fail "the folder changed"
}
cp -r "$TMP/sp" "$TMP/old"
# the format before "given": the options object only
awk '/^  "given": \[/ { skip = 1 } skip && /^  "resumes": / { skip = 0; next } !skip' \
    "$TMP/sp/run.json" >"$TMP/old/run.json"
damaged 'has no "given" list of options (written by an older ampscope): the run cannot be resumed' \
    "$TMP/old"
cp -r "$TMP/sp" "$TMP/unknown"
sed 's/"--seed",/"--frob",/' "$TMP/sp/run.json" >"$TMP/unknown/run.json"
damaged "\"given\": '--frob' is not an option of a run" "$TMP/unknown"
cp -r "$TMP/sp" "$TMP/folder"
sed 's/"--seed",/"--out",/' "$TMP/sp/run.json" >"$TMP/folder/run.json"
damaged "\"given\": '--out' is not an option of a run" "$TMP/folder"
cp -r "$TMP/sp" "$TMP/novalue"
awk '{ print } /^  "given": \[/ { n = 1 } n && /"--no-progress"/ { n = 0 }' "$TMP/sp/run.json" |
    sed '/"--no-progress"$/{N;s/"--no-progress"\n  \]/"--no-progress",\n    "--lr"\n  ]/}' \
        >"$TMP/novalue/run.json"
damaged '"given": --lr has no value' "$TMP/novalue"
cp -r "$TMP/sp" "$TMP/badvalue"
sed 's/"0.001"/"0.001x"/' "$TMP/sp/run.json" >"$TMP/badvalue/run.json"
damaged '"given": --lr wants a number' "$TMP/badvalue"
cp -r "$TMP/sp" "$TMP/notstr"
sed 's/"--seed",/7,/' "$TMP/sp/run.json" >"$TMP/notstr/run.json"
damaged '"given": item 20 is not a string' "$TMP/notstr"
cp -r "$TMP/sp" "$TMP/utf8"
sed 's/"simplenet",/"simple\xffnet",/' "$TMP/sp/run.json" >"$TMP/utf8/run.json"
damaged 'unable to decode byte 0xff' "$TMP/utf8"
cp -r "$TMP/eq" "$TMP/edited"
# an entry of "resumes" that a resume could not have given
sed 's/^        "--steps",$/        "--lr",/; s/^        "12",$/        "0.5",/' "$TMP/eq/run.json" \
    >"$TMP/edited/run.json"
damaged '"resumes" entry 0: --resume: --lr cannot change on a resumed run (run.json has 0.001)' \
    "$TMP/edited"
cp -r "$TMP/eq" "$TMP/shorter"
sed 's/^        "15"$/        "5"/' "$TMP/eq/run.json" >"$TMP/shorter/run.json"
damaged '"resumes" entry 1: --resume: --steps 5 would shorten the run (run.json has 12)' \
    "$TMP/shorter"
cp -r "$TMP/eq" "$TMP/nostep"
sed 's/"step": 12/"step": -1/' "$TMP/eq/run.json" >"$TMP/nostep/run.json"
damaged '"resumes" entry 1 has no "step" >= 0' "$TMP/nostep"

# ---- a sweep: its points through the same table, --key=value alike ----
run "$A" sweep --grid "seed=1,2" --out "$TMP/sw" --no-progress --net=simplenet --width=16 \
    --batch=8 --samples=64 --mode=O2 --loss-scale=pytorch --lr=0.001 --steps=3 --backend=cpu \
    --stats-every=1 --hist-every=1 --trace-every=1 --checkpoint-every=2
expect_status 0
check "sweep point given" "$(run_json_list "$TMP/sw/runs/0-1/run.json")" \
    "--net simplenet --width 16 --batch 8 --samples 64 --mode O2 --loss-scale pytorch --lr 0.001 --steps 3 --backend cpu --stats-every 1 --hist-every 1 --trace-every 1 --checkpoint-every 2 --seed 1 --no-progress "
run "$A" train "${net[@]}" --mode O2 --loss-scale pytorch --lr 0.001 --steps 3 --backend cpu \
    --stats-every 1 --hist-every 1 --trace-every 1 --checkpoint-every 2 --seed 2 --no-progress \
    --out "$TMP/point"
expect_status 0
same_logs "$TMP/point" "$TMP/sw/runs/1-2" "a sweep's point against train"
finish
