#!/usr/bin/env bash
# mpi_verify.sh: `ampscope emu verify --exhaustive` on 2 MPI ranks (label mpi):
# the slices of cli_verify.sh under mpirun give the same counts as one process
# (the ranks' shares summed on rank 0, nothing checked twice or missed); an odd
# slice size, so that the ranks' shares differ; bad input: one line, exit 2.
#   usage: mpi_verify.sh PATH-TO-ampscope PATH-TO-mpirun
set -euo pipefail
source "$(dirname "$0")/lib.sh"
A=$AMPSCOPE
MPIRUN=${2:-mpirun}
command -v "$MPIRUN" >/dev/null || {
    echo "mpi_verify: no $MPIRUN" >&2
    exit 77
}
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 # OpenMPI's own, at exit
MPI=("$MPIRUN" --allow-run-as-root --oversubscribe -x ASAN_OPTIONS -np 2)

# the counts lines without the header, which names the number of ranks
counts() { grep 'checked' <<<"$1"; }

for args in "--op f16_mul --round all --first 0x3C00:0x3C03" \
    "--op f16_mul --round all --first 0x3C00:0x3C04" \
    "--op f32_to_bf16 --first 0x3F80:0x3F80" \
    "--op bf16_add --round near_even --tininess before --first 0x0000:0x0002"; do
    # shellcheck disable=SC2086 # the arguments are words
    run "$A" emu verify --exhaustive $args
    expect_status 0
    local_out=$OUT
    # shellcheck disable=SC2086
    run "${MPI[@]}" "$A" emu verify --exhaustive $args
    expect_status 0
    expect_out_has 'on 2 ranks:'
    CHECKS=$((CHECKS + 1))
    [[ $(counts "$OUT") == "$(counts "$local_out")" ]] || fail "counts differ from one process"
done
# by hand: 5 first operands x 65536 = 327680 per mode and rule, 12 of them
run "${MPI[@]}" "$A" emu verify --exhaustive --op f16_mul --first 0x3C00:0x3C04
expect_out_has 'total 3932160 checked, 0 mismatches'

# bad input: rank 0 says it once, exit 2
run "${MPI[@]}" "$A" emu verify --exhaustive --op f16_fma
CHECKS=$((CHECKS + 1))
[[ $STATUS != 0 ]] || fail "bad op accepted"
expect_err_has "unknown op 'f16_fma'"
CHECKS=$((CHECKS + 1))
[[ $(grep -c "unknown op" <<<"$ERR") == 1 ]] || fail "the message is not said once"
CHECKS=$((CHECKS + 1))
[[ -z $OUT ]] || fail "stdout not empty"

finish
