#!/usr/bin/env bash
# cli_basics.sh: the command table, help and --version, exit statuses.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
A=$AMPSCOPE

run "$A" --version
expect_status 0
[[ $OUT =~ ^ampscope\ [0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "--version prints 'ampscope X.Y.Z'"
run "$A" version
expect_status 0

for args in "help" "--help" "-h"; do
    run "$A" $args
    expect_status 0
    expect_out_has "emu"
    expect_out_has "bench"
done

# Every command's help, both ways, on stdout with status 0.
for cmd in "emu" "emu testfloat" "emu eval" "bench" "bench emu"; do
    run "$A" help $cmd
    expect_status 0
    expect_out_has "usage: ampscope $cmd"
    run "$A" $cmd --help
    expect_status 0
    expect_out_has "usage: ampscope $cmd"
done
run "$A" emu testfloat --help
expect_out_has "f16_mulAdd"
expect_out_has "bf16_to_f16"

# Bad input is exit status 2, with a one-line message naming the problem.
run "$A"
expect_status 2
run "$A" nosuchcommand
expect_status 2
expect_err_has "unknown command 'nosuchcommand'"
[[ $(printf '%s\n' "$ERR" | wc -l) == 1 ]] || fail "one-line message"
run "$A" help nosuchcommand
expect_status 2
# `help --help` is the program's usage, as `help` is
run "$A" help --help
expect_status 0
expect_out_has 'usage: ampscope'
run "$A" emu
expect_status 2
run "$A" emu nosuch
expect_status 2
expect_err_has "nosuch"
run "$A" bench
expect_status 2
run "$A" bench nosuch
expect_status 2
run "$A" bench emu --nosuch
expect_status 2

# A write error on stdout is a failure (1), not a silent success.
if [[ -w /dev/full ]]; then
    STATUS=0
    "$A" help >/dev/full 2>"$TMP/err" || STATUS=$?
    ERR=$(cat "$TMP/err")
    LAST_CMD="$A help >/dev/full"
    expect_status 1
    expect_err_has "writing standard output"
fi

finish
