#!/usr/bin/env bash
# cli_world.sh: `ampscope train --world N`, data-parallel ranks simulated in one process
# (issue 20; the same under mpirun: mpi_train.sh, label mpi):
#   - 2 ranks with the fp32 all-reduce give one process's --accumulate 2 bits (a path with no
#     all-reduce at all): checkpoint and steps.csv byte for byte;
#   - the record: run.json's world and allreduce, allreduce.csv one row a step whose
#     found_inf is steps.csv's (decided after the reduction: --fault overflow-grads);
#   - the fp16 hook's messages: some gradients subnormal, none flushed by bf16;
#   - --resume extends a run to the bits of one run of the full length; a damaged
#     allreduce.csv is refused;
#   - bad input: exit 2, one line, nothing made.
#   usage: cli_world.sh PATH-TO-ampscope
set -euo pipefail
source "$(dirname "$0")/lib.sh"
A=$AMPSCOPE
T=(--net mlp --subset 1024 --backend cpu --no-progress --mode O2 --dtype fp16
    --loss-scale pytorch --batch 16)
same() { # same FILE A B
    CHECKS=$((CHECKS + 1))
    cmp -s "$2/$1" "$3/$1" || fail "$1 of $2 and $3 differ"
}
field() { grep -o "\"$2\": *[^,}]*" "$1/run.json" | head -1 | sed 's/.*: *//'; }

# ---- 2 ranks against --accumulate 2 (one BLAS thread, as a data-parallel run uses) ----
run "$A" train "${T[@]}" --steps 12 --world 2 --out "$TMP/w2"
expect_status 0
expect_out_has '2 ranks (pytorch-fp32)'
run env OPENBLAS_NUM_THREADS=1 "$A" train "${T[@]}" --steps 12 --accumulate 2 --out "$TMP/acc"
expect_status 0
same checkpoint.safetensors "$TMP/w2" "$TMP/acc"
same steps.csv "$TMP/w2" "$TMP/acc"
CHECKS=$((CHECKS + 1))
[[ $(field "$TMP/w2" world) == 2 && $(field "$TMP/w2" allreduce) == '"pytorch-fp32"' ]] ||
    fail "run.json's world/allreduce: $(field "$TMP/w2" world) $(field "$TMP/w2" allreduce)"
CHECKS=$((CHECKS + 1))
[[ ! -e $TMP/acc/allreduce.csv ]] || fail "a run of one rank wrote allreduce.csv"
CHECKS=$((CHECKS + 1))
[[ $(wc -l <"$TMP/w2/allreduce.csv") == 13 ]] || fail "allreduce.csv: not one row a step"
# the fp32 sum of two ranks: each element's error below fp32's unit roundoff of the mean
CHECKS=$((CHECKS + 1))
awk -F, 'NR > 1 && !($13 < 6e-8 && $3 > 0 && $2 > 0) { bad = 1 } END { exit bad }' \
    "$TMP/w2/allreduce.csv" || fail "the fp32 all-reduce's error: $(sed -n 2p "$TMP/w2/allreduce.csv")"

# ---- fp16 and bf16 messages; found_inf after the reduction ----
run "$A" train "${T[@]}" --steps 8 --world 4 --allreduce fp16 --fault overflow-grads@3 \
    --out "$TMP/f16"
expect_status 0
CHECKS=$((CHECKS + 1))
awk -F, 'NR > 1 { s += $6 } END { exit !(s > 0) }' "$TMP/f16/allreduce.csv" ||
    fail "no subnormal fp16 message"
CHECKS=$((CHECKS + 1))
[[ $(cut -d, -f1,5 "$TMP/f16/steps.csv" | tail -n +2 | tr '\n' ' ') == \
    $(cut -d, -f1,14 "$TMP/f16/allreduce.csv" | tail -n +2 | tr '\n' ' ') ]] ||
    fail "steps.csv's found_inf is not allreduce.csv's"
CHECKS=$((CHECKS + 1))
[[ $(sed -n 5p "$TMP/f16/allreduce.csv" | cut -d, -f1,14) == 3,1 ]] ||
    fail "the overflow of step 3 not found after the reduction"
run "$A" train "${T[@]}" --dtype bf16 --steps 4 --world 4 --allreduce megatron-bf16 \
    --out "$TMP/b16"
expect_status 0
CHECKS=$((CHECKS + 1))
awk -F, 'NR > 1 { s += $4 + $5 } END { exit !(s == 0) }' "$TMP/b16/allreduce.csv" ||
    fail "bf16 messages flushed gradients"

# ---- resume: extended to the bits of the whole run ----
run "$A" train "${T[@]}" --steps 20 --world 2 --allreduce fp16 --out "$TMP/long"
expect_status 0
run "$A" train "${T[@]}" --steps 10 --world 2 --allreduce fp16 --out "$TMP/part"
expect_status 0
run "$A" train --resume "$TMP/part" --steps 20
expect_status 0
same checkpoint.safetensors "$TMP/long" "$TMP/part"
same steps.csv "$TMP/long" "$TMP/part"
CHECKS=$((CHECKS + 1))
[[ $(cut -d, -f1-11,14 "$TMP/long/allreduce.csv") == $(cut -d, -f1-11,14 "$TMP/part/allreduce.csv") ]] ||
    fail "allreduce.csv of the resumed run differs"
# a damaged allreduce.csv: refused before anything is written
head -n 5 "$TMP/part/allreduce.csv" >"$TMP/cut" && cp "$TMP/cut" "$TMP/part/allreduce.csv"
run "$A" train --resume "$TMP/part" --steps 30
expect_status 2
expect_err_has 'allreduce.csv'

# ---- bad input ----
bad() { # bad 'message' ARGS...
    local want=$1
    shift
    run "$A" train "$@"
    expect_status 2
    expect_err_has "$want"
    CHECKS=$((CHECKS + 1))
    [[ $(grep -c . <<<"$ERR") == 1 ]] || fail "not one line: $ERR"
}
bad '--allreduce needs more than one rank' "${T[@]}" --steps 2 --allreduce fp16 --out "$TMP/x1"
bad "apex all-reduces the model's fp16 gradients, but in O1" "${T[@]}" --mode O1 --steps 2 \
    --world 2 --allreduce apex --out "$TMP/x2"
bad "--allreduce wants fp32, fp16, bf16 or one of pytorch-fp32" "${T[@]}" --world 2 \
    --allreduce nccl --out "$TMP/x3"
bad '--world' "${T[@]}" --world 0 --out "$TMP/x4"
bad '--world' "${T[@]}" --world 5000 --out "$TMP/x5"
bad 'x 128 ranks is larger than the 1024 training samples' "${T[@]}" --world 128 --out "$TMP/x6"
# (x6: the data's size is known once it is read, after the folder is taken, as for --batch)
CHECKS=$((CHECKS + 1))
ls -d "$TMP"/x[1-5] >/dev/null 2>&1 && fail "bad input made a folder: $(ls -d "$TMP"/x[1-5])" || true

finish
