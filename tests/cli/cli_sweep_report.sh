#!/usr/bin/env bash
# cli_sweep_report.sh: `report` and `recommend` on a sweep's folder: a tiny
# scale_factor x scale_window sweep of MLP runs gives three valid heatmaps and
# the table; --axes picks and checks the axes (exit 2 when bad, before anything
# is written); recommend chooses one of the sweep's ok runs by its measured
# outcomes; a sweep without those axes, or trace options, exit 2.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
A=$AMPSCOPE
command -v gnuplot >/dev/null || {
    echo "gnuplot is not on PATH: skipped"
    exit 77
}

SHARED=(--net mlp --mode O2 --dtype fp16 --loss-scale dynamic --steps 20 --subset 512
    --stats-every 5 --hist-every 0 --backend cpu --jobs 2)
run "$A" sweep --grid "scale_factor=2,4 scale_window=5,10" "${SHARED[@]}" --out "$TMP/s"
expect_status 0

# ---- report: the grid's first two axes by default ----
run "$A" report "$TMP/s" --out "$TMP/r"
expect_status 0
expect_out "$TMP/r/index.html"
for f in sweep_accuracy sweep_skips sweep_underflow; do
    figure_ok "$TMP/r" "$f"
    CHECKS=$((CHECKS + 1))
    # x is scale_factor, y scale_window, in grid order; one run per cell
    [[ $(cut -d, -f1,2,4 "$TMP/r/$f.csv" | tr '\n' ' ') == "x,y,runs 2,5,1 4,5,1 2,10,1 4,10,1 " ]] ||
        fail "$f.csv cells: $(cat "$TMP/r/$f.csv")"
done
CHECKS=$((CHECKS + 1))
cmp -s "$TMP/s/summary.csv" "$TMP/r/sweep_summary.csv" || fail "sweep_summary.csv differs"
links_exist "$TMP/r"
CHECKS=$((CHECKS + 1))
grep -q 'Left out' "$TMP/r/index.html" && fail "notes on a clean sweep's page"
# each cell's accuracy is the run's own (summary.csv: scale_factor=4, scale_window=5 is row 3)
CHECKS=$((CHECKS + 1))
[[ $(sed -n 3p "$TMP/r/sweep_accuracy.csv" | cut -d, -f3) == $(sed -n 4p "$TMP/s/summary.csv" | cut -d, -f4) ]] ||
    fail "accuracy cell 4,5 differs from summary.csv"

# ---- --axes: swapped ----
run "$A" report "$TMP/s" --out "$TMP/r2" --axes scale_window,scale_factor
expect_status 0
figure_ok "$TMP/r2" sweep_skips
CHECKS=$((CHECKS + 1))
[[ $(cut -d, -f1,2 "$TMP/r2/sweep_skips.csv" | tr '\n' ' ') == "x,y 5,2 10,2 5,4 10,4 " ]] ||
    fail "swapped axes: $(cat "$TMP/r2/sweep_skips.csv")"

# ---- bad --axes: exit 2, nothing written ----
for bad in "scale_factor,nope" "scale_factor,scale_factor" "status,scale_factor" "," "a,b,c"; do
    run "$A" report "$TMP/s" --out "$TMP/bad" --axes "$bad"
    expect_status 2
    expect_err_has '--axes'
    CHECKS=$((CHECKS + 1))
    [[ ! -e $TMP/bad ]] || fail "--axes $bad: the report folder was made"
    CHECKS=$((CHECKS + 1))
    (($(wc -l <<<"$ERR") == 1)) || fail "--axes $bad: more than one line on stderr"
done
run "$A" report "$TMP/s/runs/0-2-5" --out "$TMP/bad" --axes scale_factor,scale_window
expect_status 2
expect_err_has 'no RUN_DIR is a sweep'

# ---- recommend: a choice among the ok runs ----
run "$A" recommend "$TMP/s"
expect_status 0
expect_out_has 'scale_factor scale_window steps skipped skip% underflow% status'
expect_out_has '<- recommended'
expect_out_has 'recommendation: scale_factor '
CHECKS=$((CHECKS + 1))
(($(grep -c '<- recommended' <<<"$OUT") == 1)) || fail "not one recommended row"
# every listed run has its 20 steps from its steps.csv
CHECKS=$((CHECKS + 1))
(($(grep -c -E '^[0-9]+ [0-9]+ 20 ' <<<"$OUT") == 4)) || fail "steps per run"
run "$A" recommend "$TMP/s" --grid 'max-skip=0'
expect_status 0
expect_out_has 'recommendation: scale_factor '
run "$A" recommend "$TMP/s" --grid 'factors=2,4'
expect_status 2
expect_err_has 'only max-skip applies'
run "$A" recommend "$TMP/s" --target bf16
expect_status 2
expect_err_has 'not to the sweep'

# ---- a sweep without scale_factor and scale_window ----
run "$A" sweep --grid "scale_window=5,10" "${SHARED[@]}" --out "$TMP/s1"
expect_status 0
run "$A" recommend "$TMP/s1"
expect_status 2
expect_err_has 'no scale_factor axis'
# one axis: a one-row heatmap
run "$A" report "$TMP/s1" --out "$TMP/r1"
expect_status 0
figure_ok "$TMP/r1" sweep_accuracy
CHECKS=$((CHECKS + 1))
[[ $(cut -d, -f1,2 "$TMP/r1/sweep_accuracy.csv" | tr '\n' ' ') == "x,y 5,all 10,all " ]] ||
    fail "one axis: $(cat "$TMP/r1/sweep_accuracy.csv")"

finish
