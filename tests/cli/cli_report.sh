#!/usr/bin/env bash
# cli_report.sh: `ampscope report` on a short mlp run: the page, its figures
# (valid PNG and SVG) and links; a run without a column loses only the
# figures that need it (exit 1, a note naming file and column); no gnuplot on
# PATH (exit 1, how to install it, the CSV still written); bad input (exit 2).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
A=$AMPSCOPE

# 960 samples: 15 steps an epoch, so two evaluations (each reads the whole test set)
run "$A" train --net mlp --mode O2 --dtype fp16 --loss-scale pytorch --steps 30 --subset 960 \
    --stats-every 10 --hist-every 10 --backend cpu --no-progress --out "$TMP/run"
expect_status 0

HAVE_GNUPLOT=0
command -v gnuplot >/dev/null && HAVE_GNUPLOT=1

# ---- a report of one run ----
run "$A" report "$TMP/run" --out "$TMP/rep" --title 'mlp <O2> & co'
if ((HAVE_GNUPLOT)); then
    expect_status 0
    expect_out "$TMP/rep/index.html"
    expect_err_empty # progress lines only on a terminal
    for f in loss accuracy scale hist_activation_grad hist_weight_grad flushed_fc1 flushed_relu1 \
        updates_fc1 updates_fc3; do
        figure_ok "$TMP/rep" $f
    done
    grep -q '<img src="loss.png"' "$TMP/rep/index.html" || fail "no loss figure on the page"
    ! grep -q 'Left out' "$TMP/rep/index.html" || fail "a good run had something left out"
else
    expect_status 1
    expect_err_has 'apt-get install gnuplot-nox'
fi
for f in index.html runs.csv loss.csv scale.csv plots/lines.gp plots/common.gp; do
    [[ -s $TMP/rep/$f ]] || fail "no $f"
done
grep -q '<title>mlp &lt;O2&gt; &amp; co</title>' "$TMP/rep/index.html" || fail "title not escaped"
[[ $(sed -n 2p "$TMP/rep/runs.csv" | cut -d, -f1-7) == 'run,mlp,O2,fp16,pytorch,cpu,30' ]] ||
    fail "runs.csv row: $(sed -n 2p "$TMP/rep/runs.csv")"
# loss.csv holds steps.csv's step and loss, row for row
[[ $(tail -n +2 "$TMP/rep/loss.csv" | cut -d, -f1,2) == $(tail -n +2 "$TMP/run/steps.csv" | cut -d, -f1,3) ]] ||
    fail "loss.csv differs from steps.csv"
links_exist "$TMP/rep"

# a figure redraws by hand from the report folder with the command on the page
if ((HAVE_GNUPLOT)); then
    rm "$TMP/rep/loss.png" "$TMP/rep/loss.svg"
    (cd "$TMP/rep" && gnuplot -e "in='loss.csv';out='loss'" plots/lines.gp 2>/dev/null) ||
        fail "lines.gp by hand"
    figure_ok "$TMP/rep" loss
fi

# ---- a run without a column: only its figures from that file are left out ----
cp -r "$TMP/run" "$TMP/nocol"
cut -d, -f1-3,5- "$TMP/run/steps.csv" >"$TMP/nocol/steps.csv" # drops loss_scale
run "$A" report "$TMP/run" "$TMP/nocol" --out "$TMP/rep2"
expect_status 1
expect_err_has 'left out'
grep -q 'nocol/steps.csv: no column &#39;loss_scale&#39;' "$TMP/rep2/index.html" ||
    fail "no note naming steps.csv and loss_scale"
[[ $(grep -c ',nocol$' "$TMP/rep2/loss.csv" || true) == 0 ]] || fail "the bad run is in loss.csv"
[[ $(grep -c ',nocol$' "$TMP/rep2/accuracy.csv") -ge 1 ]] || fail "the bad run lost its accuracy"
((HAVE_GNUPLOT)) && figure_ok "$TMP/rep2" loss && figure_ok "$TMP/rep2" accuracy
links_exist "$TMP/rep2"

# ---- no gnuplot on PATH ----
mkdir "$TMP/emptybin"
run env PATH="$TMP/emptybin" "$A" report "$TMP/run" --out "$TMP/rep3"
expect_status 1
expect_err_has 'gnuplot is not on PATH'
expect_err_has 'apt-get install gnuplot-nox'
[[ -s $TMP/rep3/runs.csv && -s $TMP/rep3/loss.csv && -s $TMP/rep3/plots/lines.gp ]] ||
    fail "no gnuplot: the CSV files were not written"
[[ ! -e $TMP/rep3/loss.png ]] || fail "no gnuplot, yet a PNG"
grep -q '<table>' "$TMP/rep3/index.html" || fail "no gnuplot: no table"
links_exist "$TMP/rep3"

# ---- help ----
run "$A" report --help
expect_status 0
expect_out_has 'usage: ampscope report RUN_DIR... --out DIR'
run "$A" help report
expect_status 0
expect_out_has 'usage: ampscope report'
run "$A" help
expect_out_has 'report'

# ---- bad input: exit 2, one line, nothing written ----
bad() {
    local want=$1
    shift
    run "$A" report "$@"
    expect_status 2
    expect_err_has "$want"
    [[ $(printf '%s\n' "$ERR" | wc -l) == 1 && $ERR == 'ampscope report: '* ]] || fail "no one-line message"
}
bad 'no RUN_DIR given' --out "$TMP/x1"
bad 'no RUN_DIR given'
bad '--out DIR is required' "$TMP/run"
bad "RUN_DIR $TMP/nosuch: no such directory" "$TMP/nosuch" --out "$TMP/x2"
bad "RUN_DIR $TMP/run/steps.csv: no such directory" "$TMP/run/steps.csv" --out "$TMP/x3"
bad "unknown option '--frobnicate'" "$TMP/run" --frobnicate 3 --out "$TMP/x4"
bad '--out' "$TMP/run" --out
bad "--out $TMP/run is RUN_DIR $TMP/run" "$TMP/run" --out "$TMP/run"
[[ ! -e $TMP/x1 && ! -e $TMP/x2 && ! -e $TMP/x3 && ! -e $TMP/x4 ]] || fail "a refused report wrote files"
[[ ! -e $TMP/run/index.html ]] || fail "a report was written into the run"

finish
