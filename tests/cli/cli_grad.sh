#!/usr/bin/env bash
# cli_grad.sh: `ampscope grad` on the cpu.  Gradients at a checkpoint written
# by `ampscope train` hold every parameter under its name, in F32 (the O3
# format in O3) with PyTorch's shapes; the same command gives the same bytes;
# the batch's gradient is the mean of its samples' gradients; a hand-worked
# case (zero weights on a tiny IDX data set: only fc3.bias has a gradient,
# mean(softmax - onehot) = 0.1 - [label = j] / COUNT) picks the right samples;
# every bad input exits 2 with its message.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
A=$AMPSCOPE
common=(--backend cpu)

# ---- safetensors by hand -------------------------------------------------------
# header_of FILE: the JSON header.
header_of() {
    local n
    n=$(od -An -t u8 -N 8 "$1" | tr -d ' ')
    head -c $((8 + n)) "$1" | tail -c "$n"
}
# floats_of FILE [NAME]: the F32 elements of tensor NAME (all tensors'
# bytes when no name), one per line.
floats_of() {
    local n begin end
    n=$(od -An -t u8 -N 8 "$1" | tr -d ' ')
    if [[ -z ${2-} ]]; then
        tail -c +$((9 + n)) "$1" | od -An -v -t f4 -w4
        return
    fi
    read -r begin end < <(header_of "$1" | grep -o "\"$2\":{[^}]*}" |
        sed 's/.*"data_offsets":\[\([0-9]*\),\([0-9]*\)\].*/\1 \2/')
    tail -c +$((9 + n + begin)) "$1" | head -c $((end - begin)) | od -An -v -t f4 -w4
}
# expect_tensors FILE DTYPE NAME=SHAPE...: exactly these tensors, each with
# this dtype and shape (as "256,784").
expect_tensors() {
    local file=$1 dtype=$2 header spec
    shift 2
    header=$(header_of "$file")
    CHECKS=$((CHECKS + 1))
    for spec; do
        [[ $header == *"\"${spec%%=*}\":{\"dtype\":\"$dtype\",\"shape\":[${spec#*=}],"* ]] ||
            fail "$file: no $dtype tensor ${spec%%=*} of shape [${spec#*=}] in $header"
    done
    [[ $(grep -o '"dtype"' <<<"$header" | wc -l) == $# ]] || fail "$file: not exactly $# tensors"
}
# make_init FILE NAME:DTYPE:SHAPE...: a safetensors file of zeros.
make_init() {
    local file=$1 header='{' sep='' off=0 spec name dtype shape n
    shift
    for spec; do
        IFS=: read -r name dtype shape <<<"$spec"
        n=$([[ $dtype == F32 ]] && echo 4 || echo 2)
        for d in ${shape//,/ }; do n=$((n * d)); done
        header+="$sep\"$name\":{\"dtype\":\"$dtype\",\"shape\":[$shape],\"data_offsets\":[$off,$((off + n))]}"
        off=$((off + n))
        sep=,
    done
    header+='}'
    while ((${#header} % 8)); do header+=' '; done
    local len=${#header}
    printf "$(printf '\\%03o' $((len & 255)) $((len >> 8 & 255)) 0 0 0 0 0 0)" >"$file"
    printf '%s' "$header" >>"$file"
    head -c "$off" /dev/zero >>"$file"
}

MLP=(fc1.weight=256,784 fc1.bias=256 fc2.weight=256,256 fc2.bias=256 fc3.weight=10,256 fc3.bias=10)
LENET=(conv1.weight=6,1,5,5 conv1.bias=6 conv2.weight=16,6,5,5 conv2.bias=16 fc1.weight=120,400
    fc1.bias=120 fc2.weight=84,120 fc2.bias=84 fc3.weight=10,84 fc3.bias=10)

# ---- gradients at a checkpoint written by train ------------------------------------
run "$A" train --net mlp --steps 3 --subset 640 --no-progress --out "$TMP/mlp" "${common[@]}"
expect_status 0
run "$A" grad --net mlp --init "$TMP/mlp/checkpoint.safetensors" --samples 0:2 --out "$TMP/g02" "${common[@]}"
expect_status 0
expect_out_has 'mlp O0: loss '
expect_out_has 'over samples 0..1 (2); gradients of 6 tensors'
expect_tensors "$TMP/g02" F32 "${MLP[@]}"
# the same command, the same bytes
run "$A" grad --net mlp --init "$TMP/mlp/checkpoint.safetensors" --samples=0:2 --out "$TMP/again" "${common[@]}"
expect_status 0
cmp -s "$TMP/g02" "$TMP/again" || fail "the same command gave different gradients"
# the loss is averaged over the batch: grad(0:2) = (grad(0:1) + grad(1:1)) / 2, to fp32 rounding
run "$A" grad --net mlp --init "$TMP/mlp/checkpoint.safetensors" --samples 0:1 --out "$TMP/g01" "${common[@]}"
expect_status 0
run "$A" grad --net mlp --init "$TMP/mlp/checkpoint.safetensors" --samples 1:1 --out "$TMP/g11" "${common[@]}"
expect_status 0
cmp -s "$TMP/g01" "$TMP/g02" && fail "--samples 0:1 and 0:2 gave the same gradients"
cmp -s "$TMP/g01" "$TMP/g11" && fail "--samples 0:1 and 1:1 gave the same gradients"
paste <(floats_of "$TMP/g02") <(floats_of "$TMP/g01") <(floats_of "$TMP/g11") | awk '
    { a[NR] = $1; b[NR] = ($2 + $3) / 2; m = (($1 < 0 ? -$1 : $1) > m) ? ($1 < 0 ? -$1 : $1) : m }
    END { if (NR != 269322 || m == 0) { print "elements " NR ", max " m; exit 1 }
          for (i = 1; i <= NR; i++) { d = a[i] - b[i]; if ((d < 0 ? -d : d) > 1e-5 * m) {
              print "element " i ": " a[i] " vs mean " b[i]; exit 1 } } }' >"$TMP/mean.txt" ||
    fail "grad(0:2) is not the mean of grad(0:1) and grad(1:1): $(cat "$TMP/mean.txt")"
# O2 keeps fp32 gradients for its master weights; O3's are in its format
run "$A" grad --net mlp --mode O2 --dtype bf16 --init "$TMP/mlp/checkpoint.safetensors" --samples 0:2 \
    --out "$TMP/o2" "${common[@]}"
expect_status 0
expect_out_has 'mlp O2 bf16: loss '
expect_tensors "$TMP/o2" F32 "${MLP[@]}"
run "$A" grad --net mlp --mode O3 --dtype fp16 --init "$TMP/mlp/checkpoint.safetensors" --samples 0:2 \
    --out "$TMP/o3" "${common[@]}"
expect_status 0
expect_tensors "$TMP/o3" F16 "${MLP[@]}"

# simplenet: the synthetic samples of --seed
run "$A" train --net simplenet --width 8 --depth 2 --batch 4 --steps 1 --no-progress --out "$TMP/sn" "${common[@]}"
expect_status 0
sn=(--net simplenet --width 8 --depth 2 --init "$TMP/sn/checkpoint.safetensors" --samples 2:3)
run "$A" grad "${sn[@]}" --out "$TMP/s1" "${common[@]}"
expect_status 0
expect_tensors "$TMP/s1" F32 fc1.weight=8,8 fc1.bias=8 fc2.weight=8,8 fc2.bias=8
run "$A" grad "${sn[@]}" --seed 2 --out "$TMP/s2" "${common[@]}"
expect_status 0
cmp -s "$TMP/s1" "$TMP/s2" && fail "simplenet: --seed 2 gave the gradients of --seed 1"

# ---- by hand: zero weights on three images labelled 0, 3, 7 --------------------------
# Every activation is 0, the logits are 0, softmax is 0.1 everywhere: dL/dlogits =
# (0.1 - onehot) / COUNT, and only fc3.bias, its sum over the batch, is nonzero.
mkdir -p "$TMP/tiny"
{
    printf '\0\0\10\3\0\0\0\3\0\0\0\34\0\0\0\34'
    head -c $((3 * 784)) /dev/zero | tr '\0' '\200'
} >"$TMP/tiny/train-images-idx3-ubyte"
printf '\0\0\10\1\0\0\0\3\0\3\7' >"$TMP/tiny/train-labels-idx1-ubyte"
make_init "$TMP/zero-mlp" fc1.weight:BF16:256,784 fc1.bias:F32:256 fc2.weight:F16:256,256 \
    fc2.bias:F32:256 fc3.weight:F32:10,256 fc3.bias:F32:10
make_init "$TMP/zero-lenet" conv1.weight:F32:6,1,5,5 conv1.bias:F32:6 conv2.weight:F32:16,6,5,5 \
    conv2.bias:F32:16 fc1.weight:F32:120,400 fc1.bias:F32:120 fc2.weight:F32:84,120 fc2.bias:F32:84 \
    fc3.weight:F32:10,84 fc3.bias:F32:10
# want_bias FILE V0..V9: fc3.bias is V (to 1e-6), every other gradient is zero.
want_bias() {
    local file=$1
    shift
    CHECKS=$((CHECKS + 1))
    [[ $(floats_of "$file" fc3.bias | awk -v want="$*" '
        BEGIN { n = split(want, w, " ") }
        { d = $1 - w[NR]; if ((d < 0 ? -d : d) > 1e-6) bad = bad " " NR - 1 ":" $1 }
        END { print (NR == n && bad == "") ? "ok" : "got" bad }') == ok ]] || fail "$file: fc3.bias"
    [[ $(floats_of "$file" | awk '$1 != 0' | wc -l) == 10 ]] || fail "$file: gradients besides fc3.bias"
}
run "$A" grad --net mlp --init "$TMP/zero-mlp" --data "$TMP/tiny" --samples 1:2 --out "$TMP/h1" "${common[@]}"
expect_status 0
expect_out_has 'loss 2.302585' # ln 10
want_bias "$TMP/h1" 0.1 0.1 0.1 -0.4 0.1 0.1 0.1 -0.4 0.1 0.1
run "$A" grad --net mlp --init "$TMP/zero-mlp" --data "$TMP/tiny" --samples 0:3 --out "$TMP/h2" "${common[@]}"
expect_status 0
want_bias "$TMP/h2" -0.2333333 0.1 0.1 -0.2333333 0.1 0.1 0.1 -0.2333333 0.1 0.1
run "$A" grad --net lenet5 --init "$TMP/zero-lenet" --data "$TMP/tiny" --samples 2:1 --out "$TMP/h3" "${common[@]}"
expect_status 0
expect_out_has 'over samples 2..2 (1); gradients of 10 tensors'
expect_tensors "$TMP/h3" F32 "${LENET[@]}"
want_bias "$TMP/h3" 0.1 0.1 0.1 0.1 0.1 0.1 0.1 -0.9 0.1 0.1

# ---- bad input: exit 2, one line ----
bad() {
    local want=$1
    shift
    run "$A" grad "$@"
    expect_status 2
    expect_err_has "$want"
    [[ $(printf '%s\n' "$ERR" | wc -l) == 1 && $ERR == 'ampscope grad: '* ]] || fail "not one line"
}
ok=(--init "$TMP/zero-mlp" --data "$TMP/tiny" --out "$TMP/x" "${common[@]}")
bad '--net NET is required' --samples 0:1 "${ok[@]}"
bad "unknown net 'vgg'" --net vgg --samples 0:1 "${ok[@]}"
bad '--init FILE.safetensors is required' --net mlp --samples 0:1 --out "$TMP/x"
bad '--samples FIRST:COUNT is required' --net mlp "${ok[@]}"
bad '--out G.safetensors is required' --net mlp --samples 0:1 --init "$TMP/zero-mlp"
for s in 5 1:x -1:2 1:2:3; do
    bad "--samples wants FIRST:COUNT (e.g. 0:32), got '$s'" --net mlp --samples "$s" "${ok[@]}"
done
bad '--samples 0:0: COUNT must be in [1, 1048576]' --net mlp --samples 0:0 "${ok[@]}"
bad '--samples 0:1048577: COUNT must be in' --net mlp --samples 0:1048577 "${ok[@]}"
bad '--samples 2:2 asks for samples 2..3, but the training set has 3' --net mlp --samples 2:2 "${ok[@]}"
bad "simplenet's samples end at 16777215" --net simplenet --width 8 --samples 16777215:2 "${ok[@]}"
bad "unknown option '--frobnicate'" --net mlp --samples 0:1 --frobnicate 1 "${ok[@]}"
bad "unexpected argument 'extra'" --net mlp --samples 0:1 extra "${ok[@]}"
bad "--mode wants O0, O1, O2 or O3, got 'O5'" --net mlp --samples 0:1 --mode O5 "${ok[@]}"
bad "--dtype wants fp16 or bf16, got 'fp8'" --net mlp --samples 0:1 --dtype fp8 "${ok[@]}"
bad '--width wants an integer in [1, 65536]' --net simplenet --width 0 --samples 0:1 "${ok[@]}"
bad 'do not apply to mlp' --net mlp --width 8 --samples 0:1 "${ok[@]}"
bad 'option --net needs a value' --net
bad "--init $TMP/none: No such file" --net mlp --samples 0:1 --init "$TMP/none" --out "$TMP/x"
bad "--out $TMP/no/g: no directory $TMP/no" --net mlp --samples 0:1 --init "$TMP/zero-mlp" \
    --out "$TMP/no/g"
printf 'not a safetensors file' >"$TMP/junk"
bad "$TMP/junk" --net mlp --samples 0:1 --init "$TMP/junk" --data "$TMP/tiny" --out "$TMP/x" "${common[@]}"
bad 'conv1.weight' --net lenet5 --samples 0:1 --init "$TMP/zero-mlp" --data "$TMP/tiny" --out "$TMP/x" \
    "${common[@]}"
bad 'fc1.weight' --net mlp --samples 0:1 --init "$TMP/zero-lenet" --data "$TMP/tiny" --out "$TMP/x" \
    "${common[@]}"
mkdir -p "$TMP/empty"
bad 'install dataset-fashion-mnist or give --data DIR' --net mlp --samples 0:1 --init "$TMP/zero-mlp" \
    --data "$TMP/empty" --out "$TMP/x" "${common[@]}"
bad "backend" --net mlp --samples 0:1 "${ok[@]}" --backend nope
[[ ! -e $TMP/x ]] || fail "a refused command wrote its --out"

# ---- --init with a NaN or an infinity: bad input, naming the tensor and the index ----
# poke FILE TENSOR-OFFSET BYTES: BYTES (octal escapes) at that offset of make_init's data
poke() {
    local n
    n=$(od -An -t u8 -N 8 "$1" | tr -d ' ')
    # shellcheck disable=SC2059
    printf "$3" | dd of="$1" bs=1 seek=$((8 + n + $2)) conv=notrunc status=none
}
# zero-mlp's data: fc1.weight (BF16, 401408 bytes), fc1.bias (F32, 1024), fc2.weight (F16,
# 131072), fc2.bias (F32, 1024), ...
cp "$TMP/zero-mlp" "$TMP/nan-mlp"
poke "$TMP/nan-mlp" $((401408 + 1024 + 131072 + 17 * 4)) '\0\0\300\177' # fp32 NaN
bad "$TMP/nan-mlp: tensor fc2.bias has nan at index 17" --net mlp --samples 0:1 \
    --init "$TMP/nan-mlp" --data "$TMP/tiny" --out "$TMP/x" "${common[@]}"
cp "$TMP/zero-mlp" "$TMP/inf-mlp"
poke "$TMP/inf-mlp" $((3 * 2)) '\200\177' # bf16 +inf
bad "$TMP/inf-mlp: tensor fc1.weight has inf at index 3" --net mlp --samples 0:1 \
    --init "$TMP/inf-mlp" --data "$TMP/tiny" --out "$TMP/x" "${common[@]}"
cp "$TMP/zero-mlp" "$TMP/ninf-mlp"
poke "$TMP/ninf-mlp" $((401408 + 1024 + 65535 * 2)) '\0\374' # fp16 -inf, the last element
bad "$TMP/ninf-mlp: tensor fc2.weight has -inf at index 65535" --net mlp --samples 0:1 \
    --init "$TMP/ninf-mlp" --data "$TMP/tiny" --out "$TMP/x" "${common[@]}"
[[ ! -e $TMP/x ]] || fail "a refused command wrote its --out"
# train --init too (simplenet: its data are drawn, not read)
make_init "$TMP/nan-sn" fc1.weight:F32:8,8 fc1.bias:F32:8 fc2.weight:F32:8,8 fc2.bias:F32:8
poke "$TMP/nan-sn" $((256 + 32 + 5 * 4)) '\0\0\300\377' # fp32 -NaN
run "$A" train --net simplenet --width 8 --depth 2 --steps 1 --init "$TMP/nan-sn" --out "$TMP/t" \
    "${common[@]}" --no-progress
expect_status 2
expect_err_has "--init: $TMP/nan-sn: tensor fc2.weight has nan at index 5"
[[ $(printf '%s\n' "$ERR" | wc -l) == 1 ]] || fail "not one line"
# a checkpoint whose tensor data do not match their checksum
cp "$TMP/mlp/checkpoint.safetensors" "$TMP/flipped"
printf '\1' | dd of="$TMP/flipped" bs=1 seek=$(($(stat -c %s "$TMP/flipped") - 1)) conv=notrunc status=none
bad "$TMP/flipped: the tensor data's CRC-32 is" --net mlp --samples 0:1 --init "$TMP/flipped" \
    --data "$TMP/tiny" --out "$TMP/x" "${common[@]}"

finish
