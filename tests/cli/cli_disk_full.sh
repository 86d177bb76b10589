#!/usr/bin/env bash
# cli_disk_full.sh: the commands on a full disk.  A small tmpfs is mounted in a private mount
# namespace (unshare -rm; exit 77 where the machine allows none), records are made in it while
# there is room, then it is filled and train, report (over the earlier report), sweep (over the
# earlier sweep), grad and recommend (over their earlier files) write into it.  Each exits 1 with
# "No space left on device" and the path, in one line without an internal function name, and
# every file that was whole before is byte for byte the same after, with no temporary file left.
set -euo pipefail

if [[ -z ${AMPSCOPE_DISK_FULL_NS-} ]]; then
    probe=$(mktemp -d)
    if ! unshare -rm sh -c "mount -t tmpfs -o size=1m tmpfs '$probe'" 2>/dev/null; then
        rmdir "$probe"
        echo "skipped: no tmpfs can be mounted in a private mount namespace here"
        exit 77
    fi
    rmdir "$probe"
    AMPSCOPE_DISK_FULL_NS=1 exec unshare -rm bash "$0" "$@"
fi

source "$(dirname "$0")/lib.sh"
A=$AMPSCOPE
M=$TMP/m
mkdir "$M"
mount -t tmpfs -o size=48m tmpfs "$M"
trap 'umount "$M" 2>/dev/null; rm -rf "$TMP"' EXIT
common=(--backend cpu --no-progress)
small=(--net mlp --mode O2 --dtype fp16 --loss-scale pytorch --steps 4 --subset 256)
grid=(--grid "mode=O0,O2" --net mlp --dtype fp16 --steps 4 --subset 256)
INTERNAL='(^|[^A-Za-z0-9_-])(ak|rec|rp|an|af|st|ds|ckpt|train|topt|sw|opt|model|net|prec|cli|ut|repro)_[a-z0-9_]+:'

# ---- while there is room: a run, a report of it, a sweep, gradients, a recommendation ----
run "$A" train "${small[@]}" --out "$M/run" "${common[@]}"
expect_status 0
run "$A" report "$M/run" --out "$M/rep"
HAVE_GNUPLOT=0
command -v gnuplot >/dev/null && HAVE_GNUPLOT=1
if ((HAVE_GNUPLOT)); then
    expect_status 0
    figure_ok "$M/rep" loss
fi
run "$A" sweep "${grid[@]}" --out "$M/sw" "${common[@]}"
expect_status 0
run "$A" grad --net mlp --init "$M/run/checkpoint.safetensors" --samples 0:2 --out "$M/g.st" \
    --backend cpu
expect_status 0
run "$A" recommend "$M/run" --csv "$M/rec.csv"
expect_status 0

# the checksum of every file in the tmpfs, before it is filled
sums() { (cd "$M" && find . -type f ! -name fill -print0 | sort -z | xargs -0 md5sum); }
before=$(sums)

# ---- fill it: dd stops at ENOSPC ----
dd if=/dev/zero of="$M/fill" bs=4k 2>/dev/null || true
[[ $(df -k --output=avail "$M" | tail -1 | tr -d ' ') == 0 ]] || fail "the tmpfs is not full"

# full PATH CMD...: exit 1, one line naming PATH with the errno text, no internal name
full() {
    local path=$1
    shift
    run "$@"
    expect_status 1
    expect_err_has "No space left on device"
    expect_err_has "$path"
    CHECKS=$((CHECKS + 1))
    [[ $(printf '%s\n' "$ERR" | wc -l) == 1 ]] || fail "not one line on stderr"
    CHECKS=$((CHECKS + 1))
    ! grep -qE "$INTERNAL" <<<"$ERR" || fail "the message names an internal function"
}

full "$M/run2" "$A" train "${small[@]}" --out "$M/run2" "${common[@]}"
full "$M/rep/" "$A" report "$M/run" --out "$M/rep"
full "$M/sw/summary.csv" "$A" sweep "${grid[@]}" --out "$M/sw" "${common[@]}"
full "$M/sw2/sweep.json" "$A" sweep "${grid[@]}" --out "$M/sw2" "${common[@]}"
full "$M/g.st" "$A" grad --net mlp --init "$M/run/checkpoint.safetensors" --samples 0:3 \
    --out "$M/g.st" --backend cpu
full "$M/rec.csv" "$A" recommend "$M/run" --csv "$M/rec.csv" --grid "windows=10,20"

# ---- every whole file is still whole (the same bytes), and nothing half-written is left ----
CHECKS=$((CHECKS + 1))
after=$(sums)
diff <(echo "$before") <(echo "$after") | grep '^<' >"$TMP/changed" || true
[[ ! -s $TMP/changed ]] || fail "files changed or lost on the full disk: $(cat "$TMP/changed")"
CHECKS=$((CHECKS + 1))
left=$(cd "$M" && find . -name '*.tmp.*')
[[ -z $left ]] || fail "temporary files left: $left"
if ((HAVE_GNUPLOT)); then
    figure_ok "$M/rep" loss
    figure_ok "$M/rep" scale
fi

# ---- room again: the report is written whole over the old one ----
rm "$M/fill"
run "$A" report "$M/run" --out "$M/rep"
if ((HAVE_GNUPLOT)); then
    expect_status 0
    figure_ok "$M/rep" loss
fi

finish
