# lib.sh: helpers for the CLI tests, sourced by each tests/cli/*.sh.
#
#   run [--stdin TEXT] CMD...   runs CMD, setting OUT, ERR (text) and STATUS
#   expect_status N             STATUS is N
#   expect_out TEXT             OUT is exactly TEXT
#   expect_out_has TEXT         OUT contains TEXT
#   expect_err_has TEXT         ERR contains TEXT
#   finish                      prints a summary; exits 1 if anything failed
#
# A failed expectation is reported with the command and the test goes on, so
# one run shows every difference.

AMPSCOPE=${1:?usage: $0 PATH-TO-ampscope}
[[ -x $AMPSCOPE ]] || { echo "not an executable: $AMPSCOPE" >&2; exit 1; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
CHECKS=0
FAILURES=0
LAST_CMD=""

run() {
    local input=""
    if [[ ${1-} == --stdin ]]; then
        input=$2
        shift 2
    fi
    LAST_CMD="$*"
    STATUS=0
    printf '%s' "$input" >"$TMP/in"
    "$@" <"$TMP/in" >"$TMP/out" 2>"$TMP/err" || STATUS=$?
    OUT=$(cat "$TMP/out")
    ERR=$(cat "$TMP/err")
}

fail() {
    FAILURES=$((FAILURES + 1))
    printf 'FAIL: %s\n  command: %s\n  stdout: %s\n  stderr: %s\n' "$1" "$LAST_CMD" "$OUT" "$ERR" >&2
}

expect_status() {
    CHECKS=$((CHECKS + 1))
    [[ $STATUS == "$1" ]] || fail "exit status $STATUS, expected $1"
}

expect_out() {
    CHECKS=$((CHECKS + 1))
    [[ $OUT == "$1" ]] || fail "stdout differs; expected: $1"
}

expect_out_has() {
    CHECKS=$((CHECKS + 1))
    [[ $OUT == *"$1"* ]] || fail "stdout lacks: $1"
}

expect_err_has() {
    CHECKS=$((CHECKS + 1))
    [[ $ERR == *"$1"* ]] || fail "stderr lacks: $1"
}

expect_err_empty() {
    CHECKS=$((CHECKS + 1))
    [[ -z $ERR ]] || fail "stderr not empty"
}

finish() {
    if ((FAILURES > 0)); then
        echo "$(basename "$0"): $FAILURES of $CHECKS checks failed" >&2
        exit 1
    fi
    echo "$(basename "$0"): all $CHECKS checks passed"
}
