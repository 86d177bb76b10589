#!/usr/bin/env bash
# mpi_train.sh: `ampscope train` data-parallel (label mpi; issue 20).
#   - 2 and 4 MPI ranks give the bits (checkpoint, steps.csv, allreduce.csv's counters) of
#     the same world simulated in one process (--world N): fp32, fp16 and bf16 all-reduces;
#   - 2 ranks with the fp32 all-reduce give the weights of one process that sums the same two
#     micro-batches (--accumulate 2), a path that uses no all-reduce code at all;
#   - SIGTERM to mpirun: the ranks stop after the same step, the record is complete up to it,
#     and --resume on 2 ranks ends with the uninterrupted run's bits;
#   - a rank killed (SIGKILL): mpirun ends the run with an error naming it, and the record
#     resumes from its last checkpoint to the same bits;
#   - bad input: one line from the ranks, exit 2 (--world against mpirun's size, a resume on
#     another number of ranks, a preset the mode cannot use).
#   usage: mpi_train.sh PATH-TO-ampscope PATH-TO-mpirun
set -euo pipefail
source "$(dirname "$0")/lib.sh"
A=$AMPSCOPE
MPIRUN=${2:-mpirun}
command -v "$MPIRUN" >/dev/null || {
    echo "mpi_train: no $MPIRUN" >&2
    exit 77
}
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
MPI=("$MPIRUN" --allow-run-as-root --oversubscribe -x ASAN_OPTIONS)

T=(--net mlp --subset 1024 --backend cpu --no-progress --stats-every 5 --trace-every 1)
same() { # same FILE A B: byte for byte
    CHECKS=$((CHECKS + 1))
    cmp -s "$2/$1" "$3/$1" || fail "$1 of $2 and $3 differ: $(cmp "$2/$1" "$3/$1" 2>&1 | head -1)"
}
# allreduce.csv without its error columns (the exact reference is summed differently over
# MPI: allreduce.h), which must then be equal
counters() { cut -d, -f1-11,14 "$1/allreduce.csv"; }
same_counters() {
    CHECKS=$((CHECKS + 1))
    [[ $(counters "$1") == $(counters "$2") ]] || fail "allreduce.csv counters of $1 and $2 differ"
}

# ---- MPI ranks against the simulated world ----
for spec in "2 O1 fp16 fp32" "2 O2 fp16 fp16" "4 O2 fp16 apex" "4 O2 bf16 bf16" \
    "4 O3 bf16 megatron-bf16"; do
    read -r n mode dtype how <<<"$spec"
    opts=("${T[@]}" --mode "$mode" --dtype "$dtype" --loss-scale pytorch --batch 16 --steps 12
        --allreduce "$how")
    run "${MPI[@]}" -np "$n" "$A" train "${opts[@]}" --out "$TMP/m-$n-$how"
    expect_status 0
    expect_out_has "$n ranks"
    run "$A" train "${opts[@]}" --world "$n" --out "$TMP/s-$n-$how"
    expect_status 0
    same checkpoint.safetensors "$TMP/m-$n-$how" "$TMP/s-$n-$how"
    same steps.csv "$TMP/m-$n-$how" "$TMP/s-$n-$how"
    same tensors.csv "$TMP/m-$n-$how" "$TMP/s-$n-$how"
    same trace.csv "$TMP/m-$n-$how" "$TMP/s-$n-$how"
    same_counters "$TMP/m-$n-$how" "$TMP/s-$n-$how"
    CHECKS=$((CHECKS + 1))
    [[ $(wc -l <"$TMP/m-$n-$how/allreduce.csv") == 13 ]] || fail "allreduce.csv rows of $how"
done
# the fp16 hook's messages are fp16: some of the mlp's gradients flush or are subnormal
CHECKS=$((CHECKS + 1))
awk -F, 'NR > 1 { s += $6 } END { exit !(s > 0) }' "$TMP/m-2-fp16/allreduce.csv" ||
    fail "no subnormal fp16 message in the fp16 all-reduce"

# ---- 2 ranks, fp32, against one process summing the same micro-batches ----
# (one BLAS thread, as every rank has: OpenBLAS's sgemm may order a product's terms by its
# thread count, kernels.h ak_cpu_set_threads)
opts=("${T[@]}" --mode O2 --dtype fp16 --loss-scale pytorch --batch 16 --steps 12)
run env OPENBLAS_NUM_THREADS=1 "$A" train "${opts[@]}" --accumulate 2 --out "$TMP/acc"
expect_status 0
CHECKS=$((CHECKS + 1))
cmp -s "$TMP/acc/checkpoint.safetensors" "$TMP/m-2-fp32/checkpoint.safetensors" &&
    fail "the O1 and O2 runs were not different runs" || true
run "${MPI[@]}" -np 2 "$A" train "${opts[@]}" --out "$TMP/m-acc"
expect_status 0
same checkpoint.safetensors "$TMP/acc" "$TMP/m-acc"
same steps.csv "$TMP/acc" "$TMP/m-acc"

# ---- stopped by SIGTERM, resumed ----
long=("${T[@]}" --mode O2 --dtype fp16 --loss-scale pytorch --batch 8 --steps 400
    --allreduce fp16 --checkpoint-every 50)
run "$A" train "${long[@]}" --world 2 --out "$TMP/ref"
expect_status 0
"${MPI[@]}" -np 2 "$A" train "${long[@]}" --out "$TMP/k" >"$TMP/k.out" 2>"$TMP/k.err" &
pid=$!
for _ in $(seq 2000); do
    [[ -f $TMP/k/steps.csv && $(wc -l <"$TMP/k/steps.csv") -gt 30 ]] && break
    sleep 0.01
done
kill -TERM $pid
STATUS=0
wait $pid || STATUS=$?
CHECKS=$((CHECKS + 1))
((STATUS != 0)) || fail "the stopped run exited 0 ($(cat "$TMP/k.err"))"
rows=$(($(wc -l <"$TMP/k/steps.csv") - 1))
CHECKS=$((CHECKS + 1))
((rows > 0 && rows < 400)) || fail "stopped after $rows steps"
CHECKS=$((CHECKS + 1))
[[ $(($(wc -l <"$TMP/k/allreduce.csv") - 1)) == "$rows" ]] || fail "allreduce.csv rows != steps"
run "${MPI[@]}" -np 3 "$A" train --resume "$TMP/k"
expect_status 2
expect_err_has 'trained on 2 ranks, this resume has 3'
run "${MPI[@]}" -np 2 "$A" train --resume "$TMP/k"
expect_status 0
same checkpoint.safetensors "$TMP/ref" "$TMP/k"
same steps.csv "$TMP/ref" "$TMP/k"
same_counters "$TMP/ref" "$TMP/k"

# ---- a rank killed ----
"${MPI[@]}" -np 2 "$A" train "${long[@]}" --out "$TMP/d" >"$TMP/d.out" 2>"$TMP/d.err" &
pid=$!
victim=""
for _ in $(seq 3000); do
    if [[ -f $TMP/d/steps.csv && $(wc -l <"$TMP/d/steps.csv") -gt 120 ]]; then
        for p in $(pgrep -f -- "--out $TMP/d( |$)" || true); do
            grep -qz '^OMPI_COMM_WORLD_RANK=1$' "/proc/$p/environ" 2>/dev/null && victim=$p
        done
        [[ -n $victim ]] && break
    fi
    sleep 0.01
done
CHECKS=$((CHECKS + 1))
[[ -n $victim ]] || fail "no rank 1 to kill"
kill -KILL "$victim"
STATUS=0
wait $pid || STATUS=$?
CHECKS=$((CHECKS + 1))
((STATUS != 0)) || fail "a run with a killed rank exited 0"
CHECKS=$((CHECKS + 1))
grep -q 'rank 1' "$TMP/d.err" || fail "mpirun's message does not name rank 1: $(cat "$TMP/d.err")"
sleep 0.2
CHECKS=$((CHECKS + 1))
! pgrep -f -- "--out $TMP/d( |$)" >/dev/null || fail "a rank outlived the killed one"
run "${MPI[@]}" -np 2 "$A" train --resume "$TMP/d"
expect_status 0
same checkpoint.safetensors "$TMP/ref" "$TMP/d"
same steps.csv "$TMP/ref" "$TMP/d"

# ---- bad input: one line, exit 2 ----
check_bad() { # check_bad 'message' ARGS...
    local want=$1
    shift
    run "${MPI[@]}" -np 2 "$A" train "$@"
    expect_status 2
    expect_err_has "$want"
    CHECKS=$((CHECKS + 1))
    [[ $(grep -c '^ampscope train: ' <<<"$ERR") == 1 ]] || fail "not one line from the ranks: $ERR"
}
check_bad 'but mpirun started 2 ranks' "${T[@]}" --steps 2 --world 3 --out "$TMP/bad1"
check_bad "all-reduces the model's fp16 gradients" "${T[@]}" --steps 2 --mode O1 \
    --allreduce apex --out "$TMP/bad2"
check_bad "--allreduce wants fp32, fp16, bf16 or one of" "${T[@]}" --allreduce nccl \
    --out "$TMP/bad3"
check_bad 'already holds a run' "${T[@]}" --steps 2 --out "$TMP/ref"
CHECKS=$((CHECKS + 1))
[[ ! -e $TMP/bad1 && ! -e $TMP/bad2 && ! -e $TMP/bad3 ]] || fail "bad input made a folder"

finish
