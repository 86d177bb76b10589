#!/usr/bin/env bash
# gpu_intrinsics_args.sh: gpu_intrinsics's command line (no GPU needed): help,
# the rejection paths (status 2, one line naming the problem) and --csv in
# --host mode, whose one expected difference is worked out in
# docs/GPU_NUMERICS.md (254 bf16 NaNs widened with their payload).
set -euo pipefail
P=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# status OUT ERR of a run, without set -e stopping on a non-zero status
run() {
    set +e
    "$@" >"$TMP/out" 2>"$TMP/err"
    STATUS=$?
    set -e
}

run "$P" --help
[[ $STATUS == 0 ]] || fail "--help exits 0"
grep -q "__float2bfloat16_rd" "$TMP/out" || fail "--help lists the intrinsics"

for args in "--op nosuch" "--op __hadd:fp8" "--op" "--csv" "--bogus" "--host --op hsqrtx"; do
    run "$P" $args
    [[ $STATUS == 2 ]] || fail "'$args' exits 2 (got $STATUS)"
    [[ $(wc -l <"$TMP/err") == 1 ]] || fail "'$args': one-line message"
done
run "$P" --op nosuch
grep -q "no intrinsic named 'nosuch'" "$TMP/err" || fail "the message names the bad --op"
run "$P" --host --op __hadd --csv "$TMP/no/such/dir/x.csv"
[[ $STATUS == 2 ]] || fail "an unwritable --csv exits 2 (got $STATUS)"

# Host mode: __hadd agrees in both formats; __bfloat162float keeps NaN
# payloads on the host (h << 16), as the device does and as fpe_env_cuda's
# FPE_NAN_CUDA models: no mismatch, and the NaNs it produced keep their bits.
run "$P" --host --op __hadd --csv "$TMP/h.csv"
[[ $STATUS == 0 ]] || fail "--host --op __hadd exits 0 (got $STATUS)"
grep -q "^__hadd,fp16,host,16777216,0,0,0,0,0," "$TMP/h.csv" || fail "__hadd fp16 row: $(cat "$TMP/h.csv")"
grep -q "^__hadd,bf16,host,16777216,0,0,0,0,0," "$TMP/h.csv" || fail "__hadd bf16 row"
run "$P" --host --op __bfloat162float --csv "$TMP/b.csv"
[[ $STATUS == 0 ]] || fail "--host --op __bfloat162float exits 0 (got $STATUS)"
grep -q "^__bfloat162float,bf16,host,65536,0,0,0,0,0,7F810000 7F820000 " "$TMP/b.csv" ||
    fail "__bfloat162float row: $(cat "$TMP/b.csv")"
# A device-only intrinsic is skipped on the host, not failed.
run "$P" --host --op __hfma
[[ $STATUS == 0 ]] || fail "--host --op __hfma exits 0"
grep -q "device only" "$TMP/out" || fail "__hfma is reported device only"
# Without --host and without a GPU: skipped (77); with a GPU the run itself decides.
run "$P" --op __hadd:bf16 --quick
[[ $STATUS == 77 || $STATUS == 0 || $STATUS == 1 ]] || fail "device run status $STATUS"
echo "gpu_intrinsics_args: all checks passed"
