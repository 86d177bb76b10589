#!/usr/bin/env bash
# cli_grad.sh: `ampscope grad` on the cpu.  Gradients at a checkpoint written
# by `ampscope train` hold every parameter under its name, in F32 (the O3
# format in O3) with PyTorch's shapes; the same command gives the same bytes;
# the batch's gradient is the mean of its samples' gradients; a hand-worked
# case (zero weights on a tiny IDX data set: only fc3.bias has a gradient,
# mean(softmax - onehot) = 0.1 - [label = j] / COUNT) picks the right samples;
# every bad input exits 2 with its message.  The graph nets: resnet's and the
# transformer's tensors under torchvision's and nanoGPT's names, deepmlp's;
# by hand, resnet's fc.bias and BatchNorm's running statistics after the
# training forward (momentum 0.1: 0.9 * the --init value + 0.1 * the batch's),
# and the transformer's windows of a tiny text (lm_head's gradient is
# 1/98 - the share of each next token among COUNT * context labels).
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
want_bias() { want_only fc3.bias "$@"; }
# want_only TENSOR FILE V...: TENSOR is V (to 1e-6), every other gradient is zero.
want_only() {
    local name=$1 file=$2
    shift 2
    CHECKS=$((CHECKS + 1))
    [[ $(floats_of "$file" "$name" | awk -v want="$*" '
        BEGIN { n = split(want, w, " ") }
        { d = $1 - w[NR]; if ((d < 0 ? -d : d) > 1e-6) bad = bad " " NR - 1 ":" $1 }
        END { print (NR == n && bad == "") ? "ok" : "got" bad }') == ok ]] || fail "$file: $name"
    [[ $(floats_of "$file" | awk '$1 != 0' | wc -l) == $# ]] || fail "$file: gradients besides $name"
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

# ---- the graph nets: resnet, deepmlp, transformer --------------------------------------
# resnet at width 4: torchvision's BasicBlock names, 29 parameters, 18 running statistics
bn() { local n; for n in weight bias; do printf '%s.%s=%s\n' "$1" "$n" "$2"; done; }
stats() { local n; for n in running_mean running_var; do printf '%s.%s=%s\n' "$1" "$n" "$2"; done; }
mapfile -t RESNET < <(
    echo conv1.weight=4,1,3,3
    bn bn1 4
    echo layer1.0.conv1.weight=4,4,3,3
    bn layer1.0.bn1 4
    echo layer1.0.conv2.weight=4,4,3,3
    bn layer1.0.bn2 4
    for s in 2:8:4 3:16:8; do
        IFS=: read -r st c cin <<<"$s"
        echo "layer$st.0.conv1.weight=$c,$cin,3,3"
        bn "layer$st.0.bn1" "$c"
        echo "layer$st.0.conv2.weight=$c,$c,3,3"
        bn "layer$st.0.bn2" "$c"
        echo "layer$st.0.downsample.0.weight=$c,$cin,1,1"
        bn "layer$st.0.downsample.1" "$c"
    done
    echo fc.weight=10,16
    echo fc.bias=10
)
mapfile -t RESNET_STATS < <(
    for l in bn1=4 layer1.0.bn1=4 layer1.0.bn2=4 layer2.0.bn1=8 layer2.0.bn2=8 \
        layer2.0.downsample.1=8 layer3.0.bn1=16 layer3.0.bn2=16 layer3.0.downsample.1=16; do
        stats "${l%=*}" "${l#*=}"
    done
)
rn=(--net resnet --width 4)
run "$A" train "${rn[@]}" --steps 1 --subset 64 --no-progress --out "$TMP/rn" "${common[@]}"
expect_status 0
run "$A" grad "${rn[@]}" --init "$TMP/rn/checkpoint.safetensors" --samples 0:2 --out "$TMP/rg" \
    --running-stats "$TMP/rs" "${common[@]}"
expect_status 0
expect_out_has 'resnet O0: loss '
expect_out_has 'gradients of 29 tensors'
expect_out_has "running statistics of 18 tensors in $TMP/rs"
expect_tensors "$TMP/rg" F32 "${RESNET[@]}"
expect_tensors "$TMP/rs" F32 "${RESNET_STATS[@]}"
# by hand: zero weights but bn1's running_var (first in the file) all 1 and running_mean 2;
# every conv output is 0, so the batch's mean and variance are 0: running_mean becomes
# 0.9 * 2 = 1.8, running_var 0.9 * 1 = 0.9; the logits are 0, only fc.bias has a gradient
init=(bn1.running_var:F32:4 bn1.running_mean:F32:4)
for t in "${RESNET[@]}" "${RESNET_STATS[@]}"; do
    [[ $t == bn1.running_* ]] || init+=("${t%%=*}:F32:${t#*=}")
done
make_init "$TMP/zero-resnet" "${init[@]}"
for k in 0 1 2 3; do
    poke "$TMP/zero-resnet" $((4 * k)) '\0\0\200\77'      # 1.0f
    poke "$TMP/zero-resnet" $((16 + 4 * k)) '\0\0\0\100' # 2.0f
done
run "$A" grad "${rn[@]}" --init "$TMP/zero-resnet" --data "$TMP/tiny" --samples 1:2 --out "$TMP/rh" \
    --running-stats "$TMP/rhs" "${common[@]}"
expect_status 0
expect_out_has 'loss 2.302585'
want_only fc.bias "$TMP/rh" 0.1 0.1 0.1 -0.4 0.1 0.1 0.1 -0.4 0.1 0.1
CHECKS=$((CHECKS + 1))
[[ $(floats_of "$TMP/rhs" bn1.running_mean | awk '{ printf "%.6f ", $1 }') == '1.800000 1.800000 1.800000 1.800000 ' &&
    $(floats_of "$TMP/rhs" bn1.running_var | awk '{ printf "%.6f ", $1 }') == '0.900000 0.900000 0.900000 0.900000 ' &&
    $(floats_of "$TMP/rhs" layer1.0.bn1.running_var | awk '$1 != 0' | wc -l) == 0 ]] ||
    fail "running statistics after the forward: $(floats_of "$TMP/rhs" | head -8 | tr '\n' ' ')"

# deepmlp (depth 3: fc3 is its head) on the same tiny images, by hand
run "$A" train --net deepmlp --width 8 --depth 3 --steps 1 --subset 64 --no-progress --out "$TMP/dm" \
    "${common[@]}"
expect_status 0
run "$A" grad --net deepmlp --width 8 --depth 3 --init "$TMP/dm/checkpoint.safetensors" --samples 0:2 \
    --out "$TMP/dg" "${common[@]}"
expect_status 0
expect_tensors "$TMP/dg" F32 fc1.weight=8,784 fc1.bias=8 fc2.weight=8,8 fc2.bias=8 fc3.weight=10,8 fc3.bias=10
make_init "$TMP/zero-dm" fc1.weight:F32:8,784 fc1.bias:F32:8 fc2.weight:F32:8,8 fc2.bias:F32:8 \
    fc3.weight:F32:10,8 fc3.bias:F32:10
run "$A" grad --net deepmlp --width 8 --depth 3 --init "$TMP/zero-dm" --data "$TMP/tiny" --samples 0:3 \
    --out "$TMP/dh" "${common[@]}"
expect_status 0
want_bias "$TMP/dh" -0.2333333 0.1 0.1 -0.2333333 0.1 0.1 0.1 -0.2333333 0.1 0.1

# the transformer: nanoGPT's names; its samples are the text's windows
TF=(wte.weight=98,4 wpe.weight=2,4 h.0.ln_1.weight=4 h.0.ln_1.bias=4 h.0.attn.c_attn.weight=12,4
    h.0.attn.c_attn.bias=12 h.0.attn.c_proj.weight=4,4 h.0.attn.c_proj.bias=4 h.0.ln_2.weight=4
    h.0.ln_2.bias=4 h.0.mlp.c_fc.weight=16,4 h.0.mlp.c_fc.bias=16 h.0.mlp.c_proj.weight=4,16
    h.0.mlp.c_proj.bias=4 ln_f.weight=4 ln_f.bias=4 lm_head.weight=98,4)
tf=(--net transformer --width 4 --depth 1 --heads 1 --context 2)
run "$A" train "${tf[@]}" --steps 1 --subset 64 --no-progress --out "$TMP/tf" "${common[@]}"
expect_status 0
run "$A" grad "${tf[@]}" --init "$TMP/tf/checkpoint.safetensors" --samples 5:3 --out "$TMP/tg" "${common[@]}"
expect_status 0
expect_out_has 'transformer O0: loss '
expect_out_has 'over samples 5..7 (3); gradients of 17 tensors'
expect_tensors "$TMP/tg" F32 "${TF[@]}"
# by hand: ten files of "xy\n" (30 tokens; the last 3 held out, 27 for training, 13
# windows of 2 + 1 from tokens 0, 2, 4, ...); zero weights but ln_f.bias[0] = 1 (first in
# the file): every token's final features are (1, 0, 0, 0), the logits 0 (loss ln 98), and
# lm_head.weight[v][0]'s gradient is 1/98 - (labels that are v) / (COUNT * 2)
mkdir -p "$TMP/text"
for f in cookie definitions fortunes humorists literature people platitudes science songs-poems tao; do
    printf 'xy\n' >"$TMP/text/$f"
done
init=(ln_f.bias:F32:4)
for t in "${TF[@]}"; do
    [[ $t == ln_f.bias=* ]] || init+=("${t%%=*}:F32:${t#*=}")
done
make_init "$TMP/zero-tf" "${init[@]}"
poke "$TMP/zero-tf" 0 '\0\0\200\77'
# lm_head.weight's column 0 at ids x = 91, y = 92, newline = 2: want[id] = 1/98 - share
column0() { floats_of "$1" lm_head.weight | awk 'NR % 4 == 1'; }
want_column() { # FILE ID=SHARE...: column 0 is 1/98 - share (to 1e-6)
    local file=$1
    shift
    CHECKS=$((CHECKS + 1))
    [[ $(column0 "$file" | awk -v spec="$*" '
        BEGIN { n = split(spec, s, " "); for (i = 1; i <= n; i++) { split(s[i], kv, "="); share[kv[1]] = kv[2] } }
        { id = NR - 1; want = 1 / 98 - (id in share ? share[id] : 0); d = $1 - want
          if ((d < 0 ? -d : d) > 1e-6) bad = bad " " id ":" $1 }
        END { print (NR == 98 && bad == "") ? "ok" : "got" bad }') == ok ]] || fail "$file: lm_head.weight[:, 0]"
    [[ $(floats_of "$file" | awk '$1 != 0' | wc -l) == 98 ]] || fail "$file: gradients besides lm_head's column 0"
}
# window 0 "xy\n": labels y, newline
run "$A" grad "${tf[@]}" --init "$TMP/zero-tf" --data "$TMP/text" --samples 0:1 --out "$TMP/th0" "${common[@]}"
expect_status 0
expect_out_has 'loss 4.584967' # ln 98
want_column "$TMP/th0" 92=0.5 2=0.5
# windows 1 "\nxy" and 2 "y\nx": labels x, y, newline, x
run "$A" grad "${tf[@]}" --init "$TMP/zero-tf" --data "$TMP/text" --samples 1:2 --out "$TMP/th1" "${common[@]}"
expect_status 0
want_column "$TMP/th1" 91=0.5 92=0.25 2=0.25

# ---- the graph nets' bad input ----
okr=(--init "$TMP/zero-resnet" --data "$TMP/tiny" --out "$TMP/x" "${common[@]}")
okt=(--init "$TMP/zero-tf" --data "$TMP/text" --out "$TMP/x" "${common[@]}")
bad '--running-stats: mlp has no running statistics (resnet has)' --net mlp --samples 0:1 \
    --running-stats "$TMP/y" "${ok[@]}"
bad '--running-stats: transformer has no running statistics' "${tf[@]}" --samples 0:1 \
    --running-stats "$TMP/y" "${okt[@]}"
bad "--running-stats $TMP/x is also --out: give another file" "${rn[@]}" --samples 0:1 \
    --running-stats "$TMP/x" "${okr[@]}"
bad "--running-stats $TMP/no/s: no directory $TMP/no" "${rn[@]}" --samples 0:1 \
    --running-stats "$TMP/no/s" "${okr[@]}"
bad '--heads, --context and --dropout apply to the transformer only, not resnet' "${rn[@]}" \
    --heads 2 --samples 0:1 "${okr[@]}"
bad '--context wants an integer in [2, 1024]' "${tf[@]}" --context 1 --samples 0:1 "${okt[@]}"
bad '--heads wants an integer in [1, 64]' "${tf[@]}" --heads 0 --samples 0:1 "${okt[@]}"
bad '--width 5: the transformer wants at most 1024 features, a multiple of --heads 2' \
    --net transformer --width 5 --heads 2 --samples 0:1 "${okt[@]}"
bad '--depth 5 is out of range for resnet (1 to 4 blocks a stage)' --net resnet --depth 5 \
    --samples 0:1 "${okr[@]}"
bad '--samples 12:2 asks for samples 12..13, but the training set has 13' "${tf[@]}" \
    --samples 12:2 "${okt[@]}"
bad 'install fortunes or give --data DIR' "${tf[@]}" --samples 0:1 --init "$TMP/zero-tf" \
    --data "$TMP/empty" --out "$TMP/x" "${common[@]}"
bad "no tensor 'wte.weight'" "${tf[@]}" --samples 0:1 --init "$TMP/zero-resnet" --data "$TMP/text" \
    --out "$TMP/x" "${common[@]}"
bad "no tensor 'conv1.weight'" "${rn[@]}" --samples 0:1 --init "$TMP/zero-tf" --data "$TMP/tiny" --out "$TMP/x" \
    "${common[@]}"
[[ ! -e $TMP/x && ! -e $TMP/y ]] || fail "a refused command wrote its --out or --running-stats"

finish
