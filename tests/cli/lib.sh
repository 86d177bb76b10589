# lib.sh: helpers for the CLI tests, sourced by each tests/cli/*.sh.
#
#   run [--stdin TEXT] CMD...   runs CMD, setting OUT, ERR (text) and STATUS
#   expect_status N             STATUS is N
#   expect_out TEXT             OUT is exactly TEXT
#   expect_out_has TEXT         OUT contains TEXT
#   expect_err_has TEXT         ERR contains TEXT
#   links_exist DIR             every href/src of DIR/index.html names a file in DIR
#   figure_ok DIR NAME          DIR/NAME.png is a PNG of some size, DIR/NAME.svg an SVG
#   finish                      prints a summary; exits 1 if anything failed
#   run_json_list FILE [N]      run.json's "given" strings (or the N-th resume's), one line
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

# every href/src of DIR/index.html but #anchors names a file in DIR
links_exist() {
    local dir=$1 link
    CHECKS=$((CHECKS + 1))
    while read -r link; do
        [[ -e $dir/$link ]] || fail "index.html links to missing $link"
    done < <(grep -o -E '(href|src)="[^"#][^"]*"' "$dir/index.html" | sed -E 's/^[a-z]+="//; s/"$//')
}

# DIR/NAME.png is a PNG of some size, DIR/NAME.svg an SVG document
figure_ok() {
    local dir=$1 name=$2
    CHECKS=$((CHECKS + 1))
    [[ $(head -c 8 "$dir/$name.png" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] ||
        fail "$name.png is not a PNG"
    (($(stat -c %s "$dir/$name.png") > 2000)) || fail "$name.png is too small"
    head -c 100 "$dir/$name.svg" | grep -q -E '^(<\?xml|<svg)' || fail "$name.svg does not start as SVG"
    [[ $(tail -c 20 "$dir/$name.svg" | tr -d '\n ') == *'</svg>' ]] || fail "$name.svg does not end with </svg>"
}

# ---- sweeps (cli_sweep, mpi_sweep) ----
# summary.csv FILE without its wall_seconds column (the 9th), which no two
# sweeps share
no_wall() { awk -F, -v OFS=, '{ $9 = ""; print }' "$1"; }

# mtimes DIR: the modification time of each run's done.json, for the run
# names in NAMES (the caller's grid), "none" where a run is not done
mtimes() { for n in "${NAMES[@]}"; do stat -c %y "$1/runs/$n/done.json" 2>/dev/null || echo none; done; }

# not_redone BEFORE AFTER: mtimes before and after a resumed sweep; every run
# that was done before keeps its done.json
not_redone() {
    local k b
    CHECKS=$((CHECKS + 1))
    for k in "${!NAMES[@]}"; do
        b=$(sed -n "$((k + 1))p" <<<"$1")
        [[ $b == none || $b == $(sed -n "$((k + 1))p" <<<"$2") ]] || fail "${NAMES[k]} was redone"
    done
}

# run.json's "given" list (or, with N, the N-th entry of "resumes"'s), as written with an
# indent of 2: the strings on one line, each followed by a space
run_json_list() {
    awk -v want="${2:-given}" '
        want == "given" && /^  "given": \[/ { f = 1; next }
        want != "given" && /^      "given": \[/ { if (n++ == want) { f = 1; next } }
        f && /^ *\],?$/ { exit }
        f { sub(/^ *"/, ""); sub(/",?$/, ""); printf "%s ", $0 }' "$1"
}

# check NAME GOT WANT: one check that GOT is WANT
check() {
    CHECKS=$((CHECKS + 1))
    [[ $2 == "$3" ]] || fail "$1: got '$2', expected '$3'"
}
# the steps.csv column $2 (1-based) of every row of run folder $1, space-separated
col() { tail -n +2 "$1/steps.csv" | cut -d, -f"$2" | tr '\n' ' '; }
# "v v v ..." n times
rep() { local i s=""; for ((i = 0; i < $2; i++)); do s+="$1 "; done; printf '%s' "$s"; }
# a number (e.g. a power of two) as steps.csv prints it (%.9g) and as messages do (%g)
g9() { awk "BEGIN { printf \"%.9g\", $1 }"; }
g6() { awk "BEGIN { printf \"%g\", $1 }"; }
