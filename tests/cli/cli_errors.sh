#!/usr/bin/env bash
# cli_errors.sh: the error messages of every command.  Bad input exits 2 with one line on
# stderr naming the option or path (and, for a system call, its errno text), before anything
# is created: empty option values (`--lr ''`, `--lr=`), an --out that is a file where a folder
# is wanted (report, reproduce) or a folder where a file is wanted (grad, recommend --csv), a
# --data or --init that cannot be read (train, and a sweep before its folder is made).  No
# message shows an internal function name (ak_gemm:, rec_write_json: ...).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
A=$AMPSCOPE
common=(--backend cpu --no-progress)
gcommon=(--backend cpu) # grad has no --no-progress

# a small run to report on and recommend from (needs Fashion-MNIST, as the other CLI tests)
run "$A" train --net mlp --mode O2 --dtype fp16 --loss-scale pytorch --steps 4 --subset 256 \
    --out "$TMP/run" "${common[@]}"
expect_status 0
: >"$TMP/file"
mkdir "$TMP/dir"

# one_line: the message is one line, names no internal function, has what it must
INTERNAL='(^|[^A-Za-z0-9_-])(ak|rec|rp|an|af|st|ds|ckpt|train|topt|sw|opt|model|net|prec|cli|ut|repro)_[a-z0-9_]+:'
one_line() {
    CHECKS=$((CHECKS + 1))
    [[ $(printf '%s\n' "$ERR" | wc -l) == 1 ]] || fail "not one line on stderr"
    CHECKS=$((CHECKS + 1))
    ! grep -qE "$INTERNAL" <<<"$ERR" || fail "the message names an internal function"
}

# refused WANT PATH CMD...: exit 2, one line holding WANT, and PATH not created
refused() {
    local want=$1 path=$2
    shift 2
    run "$@"
    expect_status 2
    expect_err_has "$want"
    one_line
    CHECKS=$((CHECKS + 1))
    [[ -z $path || ! -e $path ]] || fail "a refused command created $path"
}

# ---- empty option values, refused by the one option setter ----
for form in "--lr=" "--lr ''"; do
    eval "args=($form)"
    refused "option --lr needs a value" "$TMP/t1" "$A" train --net mlp --steps 2 "${args[@]}" \
        --out "$TMP/t1" "${common[@]}"
done
refused "option --out needs a value" "" "$A" train --net mlp --steps 2 --out= "${common[@]}"
refused "option --dtype needs a value" "$TMP/t1" "$A" train --net mlp --dtype '' --out "$TMP/t1" \
    "${common[@]}"
refused "option --lr needs a value" "$TMP/sw1" "$A" sweep --grid "mode=O0,O2" --net mlp \
    --steps 2 --lr= --out "$TMP/sw1" "${common[@]}"
refused "--grid: axis 'lr' has no values" "$TMP/sw1" "$A" sweep --grid "lr=" --net mlp --steps 2 \
    --out "$TMP/sw1" "${common[@]}"
refused "option --title needs a value" "$TMP/rep1" "$A" report "$TMP/run" --title '' \
    --out "$TMP/rep1"
refused "option --out needs a value" "" "$A" report "$TMP/run" --out=
refused "option --samples needs a value" "$TMP/g1" "$A" grad --net mlp \
    --init "$TMP/run/checkpoint.safetensors" --samples '' --out "$TMP/g1" "${gcommon[@]}"
refused "option --csv needs a value" "" "$A" recommend "$TMP/run" --csv=
refused "option --data needs a value" "$TMP/rp1" "$A" reproduce --smoke --data '' --out "$TMP/rp1"

# ---- an output of the wrong kind ----
refused "--out $TMP/file: not a directory" "" "$A" report "$TMP/run" --out "$TMP/file"
[[ ! -s $TMP/file ]] || fail "report wrote into the file given as --out"
refused "--out $TMP/file/sub: Not a directory" "" "$A" report "$TMP/run" --out "$TMP/file/sub"
refused "--out $TMP/file: not a directory" "" "$A" reproduce --smoke --out "$TMP/file"
refused "--out $TMP/file: not a directory" "" "$A" train --net mlp --steps 2 --out "$TMP/file" \
    "${common[@]}"
refused "--out $TMP/file/run: cannot create it: Not a directory" "" "$A" train --net mlp \
    --steps 2 --out "$TMP/file/run" "${common[@]}"
refused "--out $TMP/file: not a directory" "" "$A" sweep --grid "mode=O0,O2" --net mlp \
    --steps 2 --out "$TMP/file" "${common[@]}"
refused "--out $TMP/dir: a directory" "" "$A" grad --net mlp \
    --init "$TMP/run/checkpoint.safetensors" --samples 0:2 --out "$TMP/dir" "${gcommon[@]}"
refused "--out $TMP/nodir/g: no directory $TMP/nodir" "$TMP/nodir" "$A" grad \
    --net mlp --init "$TMP/run/checkpoint.safetensors" --samples 0:2 --out "$TMP/nodir/g" \
    "${gcommon[@]}"
refused "--csv $TMP/dir: a directory" "" "$A" recommend "$TMP/run" --csv "$TMP/dir"
refused "RUN_DIR is required" "" "$A" recommend ''
[[ -z $(ls -A "$TMP/dir") ]] || fail "a refused command wrote into $TMP/dir"

# ---- inputs that cannot be read, before any folder is made ----
refused "--data $TMP/nodata: no such directory" "$TMP/t2" "$A" train --net mlp --steps 2 \
    --data "$TMP/nodata" --out "$TMP/t2" "${common[@]}"
refused "--data $TMP/dir: has neither train-images-idx3-ubyte.gz" "$TMP/t2" "$A" train \
    --net mlp --steps 2 --data "$TMP/dir" --out "$TMP/t2" "${common[@]}"
refused "--data $TMP/nodata: no such directory" "$TMP/sw2" "$A" sweep --grid "mode=O0,O2" \
    --net mlp --steps 2 --data "$TMP/nodata" --out "$TMP/sw2" "${common[@]}"
refused "--data $TMP/nodata: No such file or directory" "$TMP/rp2" "$A" reproduce --smoke \
    --data "$TMP/nodata" --out "$TMP/rp2"
refused "--init $TMP/none.safetensors: No such file or directory" "$TMP/t3" "$A" train \
    --net mlp --steps 2 --init "$TMP/none.safetensors" --out "$TMP/t3" "${common[@]}"
refused "--init $TMP/dir: a directory" "$TMP/t3" "$A" train --net mlp --steps 2 \
    --init "$TMP/dir" --out "$TMP/t3" "${common[@]}"
refused "--init $TMP/none.safetensors: No such file or directory" "$TMP/sw3" "$A" sweep \
    --grid "mode=O0,O2" --net mlp --steps 2 --init "$TMP/none.safetensors" --out "$TMP/sw3" \
    "${common[@]}"
refused "--init $TMP/none.safetensors: No such file or directory" "$TMP/g3" "$A" grad --net mlp \
    --init "$TMP/none.safetensors" --samples 0:2 --out "$TMP/g3" "${gcommon[@]}"

# ---- a run directory without the file a command reads: the file and the errno text ----
run "$A" recommend "$TMP/dir"
expect_status 2
expect_err_has "$TMP/dir/trace.csv"
expect_err_has "No such file or directory"
one_line

finish
