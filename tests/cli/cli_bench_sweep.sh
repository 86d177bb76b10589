#!/usr/bin/env bash
# cli_bench_sweep.sh: `ampscope bench sweep --quick --jobs-only`: a row for 1
# and for 2 local jobs, 4 runs each, the first the baseline (speedup 1.00),
# both sweeps ok and their summaries alike; the CSV form; the temporary
# folder removed; bad options exit 2 with one line and run nothing.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
A=$AMPSCOPE
export TMPDIR=$TMP # where the benchmark's temporary folder goes, to see it removed

run "$A" bench sweep --quick --jobs-only
expect_status 0
expect_out_has 'ampscope bench sweep: 4 mlp runs (mode=O2,O3 seed=1,2), 5 steps each'
expect_out_has 'MPI: --jobs-only'
rows=$(grep -E '^(jobs|ranks) ' <<<"$OUT" || true)
CHECKS=$((CHECKS + 1))
[[ $(wc -l <<<"$rows") == 2 ]] || fail "rows: $rows"
CHECKS=$((CHECKS + 1))
grep -qE '^jobs +1 +4 +[0-9]+\.[0-9]{2} +[0-9]+\.[0-9]{2} +1\.00  ok$' <<<"$rows" ||
    fail "first row: $rows"
CHECKS=$((CHECKS + 1))
grep -qE '^jobs +2 +4 +[0-9]+\.[0-9]{2} +[0-9]+\.[0-9]{2} +[0-9]+\.[0-9]{2}  ok$' <<<"$rows" ||
    fail "second row: $rows"
CHECKS=$((CHECKS + 1))
[[ -z $(ls -A "$TMP" | grep ampscope-bench-sweep || true) ]] || fail "temporary folder left"

# CSV: one count, --steps; runs/min = 60 * runs / wall
run "$A" bench sweep --quick --jobs-only --csv --ranks 1 --steps 2
expect_status 0
header=how,count,runs,steps,wall_seconds,runs_per_minute,speedup,check
CHECKS=$((CHECKS + 1))
[[ $(head -n 1 <<<"$OUT") == "$header" ]] || fail "CSV header"
CHECKS=$((CHECKS + 1))
[[ $(wc -l <<<"$OUT") == 2 ]] || fail "CSV rows"
tail -n +2 <<<"$OUT" | awk -F, '
    { if ($1 != "jobs" || $2 != 1 || $3 != 4 || $4 != 2 || $7 != "1.00" || $8 != "ok") {
          print; exit 1 }
      if (!($5 > 0)) { print "wall " $5; exit 1 }
      d = 60 * 4 / $5 - $6
      if (d < -0.01 * $6 - 0.01 || d > 0.01 * $6 + 0.01) { print "rate " $6; exit 1 } }' \
    >"$TMP/check" || fail "CSV values: $(cat "$TMP/check")"

# the rank rows, through a stand-in mpirun on PATH (the real one is mpi_sweep.sh's): one
# that runs the command itself, then one that fails
mkdir -p "$TMP/bin"
cat >"$TMP/bin/mpirun" <<'SH'
#!/usr/bin/env bash
echo "$*" >>"${TMPDIR:?}/mpirun.args"
[[ -e ${TMPDIR:?}/mpirun.fail ]] && exit 5
while [[ $1 == --* ]]; do shift; done
shift 2 # -np R
exec "$@"
SH
chmod +x "$TMP/bin/mpirun"
run env PATH="$TMP/bin:$PATH" "$A" bench sweep --quick --csv --ranks 1 --steps 2
if [[ $OUT == *'this ampscope was built without MPI'* ]] || ! grep -q ^ranks <<<"$OUT"; then
    # without MPI the rank rows are left out
    expect_status 0
    CHECKS=$((CHECKS + 1))
    [[ $(grep -c ^ranks <<<"$OUT") == 0 ]] || fail "rank rows without MPI"
else
    expect_status 0
    CHECKS=$((CHECKS + 1))
    [[ $(cut -d, -f1,2,3,4,7,8 <<<"$OUT" | tail -n +2) == "jobs,1,4,2,1.00,ok
ranks,1,4,2,1.00,ok" ]] || fail "rank rows"
    root=$([[ $(id -u) == 0 ]] && echo ' --allow-run-as-root' || true)
    want="^--oversubscribe$root -np 1 /.*ampscope sweep --grid mode=O2,O3 seed=1,2 "
    CHECKS=$((CHECKS + 2))
    grep -qE -- "$want" "$TMP/mpirun.args" || fail "mpirun's arguments: $(cat "$TMP/mpirun.args")"
    ! grep -q -- --jobs "$TMP/mpirun.args" || fail "mpirun got --jobs: $(cat "$TMP/mpirun.args")"
    # a sweep that fails: its row says so, exit 1, its files are kept
    touch "$TMP/mpirun.fail"
    run env PATH="$TMP/bin:$PATH" "$A" bench sweep --quick --csv --ranks 1 --steps 2
    expect_status 1
    expect_out_has 'ranks,1,4,2,'
    expect_out_has ',the sweep exited with status 5 (see its log)'
    expect_err_has 'a sweep failed or disagreed with the first; its files are in'
    CHECKS=$((CHECKS + 1))
    ls "$TMP"/ampscope-bench-sweep-*/jobs-1/summary.csv >/dev/null || fail "files not kept"
    rm -rf "$TMP"/ampscope-bench-sweep-* "$TMP/mpirun.fail"
fi

run "$A" bench --help
expect_status 0
expect_out_has 'sweep      `ampscope sweep` on 1, 2 jobs and MPI ranks'
run "$A" help bench sweep
expect_status 0
expect_out_has 'usage: ampscope bench sweep'

# ---- bad options: exit 2, one line, nothing run ----
bad() {
    local want=$1
    shift
    run "$A" bench sweep "$@"
    expect_status 2
    expect_err_has "$want"
    [[ $(printf '%s\n' "$ERR" | wc -l) == 1 && $ERR == 'ampscope bench sweep: '* ]] ||
        fail "not one line"
    [[ -z $OUT ]] || fail "a refused run printed rows"
}
bad "--ranks wants at most 8 counts in [1, 64], got '0'" --ranks 0
bad "--ranks wants at most 8 counts in [1, 64], got '1,,2'" --ranks 1,,2
bad "--ranks wants at most 8 counts in [1, 64], got '1,65'" --ranks 1,65
bad "got '1,2,3,4,5,6,7,8,9'" --ranks 1,2,3,4,5,6,7,8,9
bad "--ranks wants at most 8 counts in [1, 64], got 'x'" --ranks=x
bad '--steps wants an integer in [1, 100000]' --steps 0
bad "unknown option '--jobs'" --jobs 2
bad "unexpected argument 'extra'" extra
bad 'option --steps needs a value' --steps
CHECKS=$((CHECKS + 1))
[[ -z $(ls -A "$TMP" | grep ampscope-bench-sweep || true) ]] || fail "a refused run made a folder"

finish
