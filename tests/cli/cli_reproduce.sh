#!/usr/bin/env bash
# cli_reproduce.sh: `ampscope reproduce --smoke` (a few dozen steps per run):
# every figure a valid PNG and SVG, gnuplot never failed (nothing left out),
# index.html links only to files that exist; started again, it reuses the
# finished runs; bad input exits 2.  Then `ampscope recommend` on one of its
# runs, and its bad input.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
A=$AMPSCOPE

if ! command -v gnuplot >/dev/null; then
    echo "cli_reproduce: gnuplot is not installed (apt-get install gnuplot-nox)" >&2
    exit 77
fi

run "$A" reproduce --smoke --out "$TMP/rep"
expect_status 0
expect_err_has 'expect about'
expect_err_has 'lenet5-o0: training'
for f in underflow_hist lost_updates rounding_loss bf16_lost scalers grid_underflow grid_skips \
    validation fp32list_loss batchnorm_var embedding_loss bf16_loss underflow_layers_act \
    underflow_layers_wgt loss_scaling_hist deepmlp_grid_underflow deepmlp_grid_skips \
    deepmlp_validation; do
    figure_ok "$TMP/rep" $f
done
links_exist "$TMP/rep"
CHECKS=$((CHECKS + 1))
! grep -q 'Left out' "$TMP/rep/index.html" || fail "something was left out of the report"
for f in formats.csv examples.csv underflow_table.csv layer_zero.csv modes.csv scalers_table.csv \
    recommend_grid.csv validation.csv fp32list.csv batchnorm.csv batchnorm_var.csv embedding.csv \
    bf16.csv underflow_layers_summary.csv underflow_layers.csv loss_scaling.csv \
    deepmlp_recommend_grid.csv deepmlp_validation.csv; do
    CHECKS=$((CHECKS + 1))
    [[ -s $TMP/rep/$f ]] || fail "no $f"
    grep -q "href=\"$f\"" "$TMP/rep/index.html" || fail "$f is not on the page"
done
# the format facts come from the emulator: fp16's smallest subnormal, normal, max, epsilon
CHECKS=$((CHECKS + 1))
grep -q '^fp16,11,5.96046448e-08,6.10351562e-05,65504,0.0009765625,-24,-14$' "$TMP/rep/formats.csv" ||
    fail "formats.csv fp16 row: $(grep ^fp16 "$TMP/rep/formats.csv")"
CHECKS=$((CHECKS + 1))
grep -q '^65520,0x7C00,inf,' "$TMP/rep/examples.csv" || fail "65520 does not round to inf"
CHECKS=$((CHECKS + 1))
grep -q '^2048 + 1,0x6800,2048,' "$TMP/rep/examples.csv" || fail "2048 + 1 is not lost in fp16"
# the mode table has its seven rows, O0 at speedup 1
CHECKS=$((CHECKS + 1))
[[ $(wc -l <"$TMP/rep/modes.csv") == 8 ]] || fail "modes.csv: $(cat "$TMP/rep/modes.csv")"
grep -q '^O0,fp32,none,40,.*,1.000$' "$TMP/rep/modes.csv" || fail "modes.csv O0 row"

# the new nets' sections: four transformer runs in fp32list.csv (the loss in fp16 the fourth),
# four in bf16.csv, three resnet runs, the embedding probe's one row, O0's running variance
# exactly its own
CHECKS=$((CHECKS + 1))
[[ $(wc -l <"$TMP/rep/fp32list.csv") == 5 && $(wc -l <"$TMP/rep/bf16.csv") == 5 &&
    $(wc -l <"$TMP/rep/batchnorm.csv") == 4 && $(wc -l <"$TMP/rep/embedding_probe.csv") == 2 ]] ||
    fail "new sections' tables"
CHECKS=$((CHECKS + 1))
grep -Eq '^tf-O2-fp16-lowloss,O2 fp16: the loss in fp16,6,[^,]*,[^,]*,[1-9][0-9]*,[1-9][0-9]*,' "$TMP/rep/fp32list.csv" ||
    fail "fp32list.csv: the loss in fp16 did not overflow: $(grep lowloss "$TMP/rep/fp32list.csv")"
grep -q '^rn-O0,fp32 (O0),2,.*,0,0$' "$TMP/rep/batchnorm.csv" ||
    fail "batchnorm.csv O0 row: $(grep ^rn-O0 "$TMP/rep/batchnorm.csv")"
# the deep MLP: nine runs (three settings, three seeds), every net's layers in the per-layer study
CHECKS=$((CHECKS + 1))
[[ $(wc -l <"$TMP/rep/loss_scaling.csv") == 10 ]] || fail "loss_scaling.csv: $(cat "$TMP/rep/loss_scaling.csv")"
CHECKS=$((CHECKS + 1))
[[ $(cut -d, -f1 "$TMP/rep/underflow_layers_summary.csv" | sort -u | tr '\n' ' ') == \
    'deepmlp lenet5 mlp net resnet transformer ' ]] || fail "underflow_layers_summary.csv nets"

# again on the same folder: every finished run is reused
run "$A" reproduce --smoke --out "$TMP/rep"
expect_status 0
expect_err_has 'mlp-O3-bf16: reusing the finished run'
# an unfinished run (no wall_seconds: killed while training) is trained again
rm "$TMP/rep/runs/mlp-O1-bf16/wall_seconds"
run "$A" reproduce --smoke --no-progress --out "$TMP/rep"
expect_status 0
CHECKS=$((CHECKS + 1))
[[ -s $TMP/rep/runs/mlp-O1-bf16/wall_seconds ]] || fail "the unfinished run was not trained again"

# SIGTERM midway: the current run's step finishes, nothing more is trained, exit 1 with how to
# go on; the same command then finishes the report
"$A" reproduce --smoke --out "$TMP/int" >"$TMP/int.out" 2>"$TMP/int.err" &
pid=$!
for _ in $(seq 100); do
    [[ -e $TMP/int/runs/mlp-o0/wall_seconds ]] && break
    sleep 0.1
done
kill -TERM $pid
STATUS=0
wait $pid || STATUS=$?
OUT=$(cat "$TMP/int.out")
ERR=$(cat "$TMP/int.err")
LAST_CMD="reproduce --smoke, SIGTERM after the first runs"
expect_status 1
expect_err_has 'run the same command again'
run "$A" reproduce --smoke --out "$TMP/int"
expect_status 0
expect_err_has 'lenet5-o0: reusing the finished run'
CHECKS=$((CHECKS + 1))
! grep -q 'Left out' "$TMP/int/index.html" || fail "the resumed report left something out"

# ---- bad input: one line, exit 2, nothing run ----
run "$A" reproduce --smoke
expect_status 2
expect_err_has '--out DIR is required'
run "$A" reproduce --quick --full --out "$TMP/x"
expect_status 2
expect_err_has 'give one of --quick, --full and --smoke'
run "$A" reproduce --smoke --backend tpu --out "$TMP/x"
expect_status 2
expect_err_has "--backend wants cpu, cuda or auto, got 'tpu'"
run "$A" reproduce --smoke --data "$TMP/nowhere" --out "$TMP/x"
expect_status 2
expect_err_has "--data $TMP/nowhere: No such file or directory"
run "$A" reproduce --smoke --steps 3 --out "$TMP/x"
expect_status 2
expect_err_has "unknown option '--steps'"
CHECKS=$((CHECKS + 1))
[[ ! -e $TMP/x ]] || fail "bad input created the output folder"

# ---- recommend on the smoke run's fp32 trace ----
run "$A" recommend "$TMP/rep/runs/mlp-o0" --grid 'factors=2,4;windows=10,20' --csv "$TMP/grid.csv"
expect_status 0
expect_out_has 'recommendation: scale_factor'
expect_out_has '<- recommended'
CHECKS=$((CHECKS + 1))
[[ $(head -1 "$TMP/grid.csv") == factor,window,* && $(wc -l <"$TMP/grid.csv") == 5 ]] ||
    fail "grid.csv: $(cat "$TMP/grid.csv")"
run "$A" recommend "$TMP/rep/runs/mlp-O0"
expect_status 2
expect_err_has 'train with --trace-every 1'
run "$A" recommend "$TMP/rep/runs/mlp-o0" --grid 'factors=1'
expect_status 2
expect_err_has '--grid'
run "$A" recommend "$TMP/rep/runs/mlp-o0" --target fp8
expect_status 2
expect_err_has '--target'
run "$A" recommend "$TMP/rep/runs/mlp-o0" --base none
expect_status 2
expect_err_has '--base none is not a dynamic scaler'
run "$A" recommend
expect_status 2
expect_err_has 'RUN_DIR is required'
run "$A" recommend "$TMP/rep/runs/mlp-o0" --bogus 1
expect_status 2
expect_err_has "unknown option '--bogus'"

finish
