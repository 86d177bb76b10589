#!/usr/bin/env bash
# cli_amp_lists.sh: --amp-lists (the frameworks' own op lists,
# experiments/amp_lists.h) through `train` and a sweep grid: an unknown preset
# and bad list edits refused (exit 2, one line, nothing created); the preset
# then --white-list relu and -OP removals as run.json records them (the lists
# by op class, written by hand from the sources: autocast keeps softmax,
# layer_norm and the losses fp32, MindSpore's O1 white-lists ReLU);
# --keep-batchnorm-fp32 and each framework's default for the mode; the loss in fp16 or
# bf16 (--white-list loss): its first step overflows at 65536 in fp16, not in bf16.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
A=$AMPSCOPE
SN=(--net simplenet --width 32 --batch 8 --samples 16 --steps 1 --backend cpu --no-progress
    --stats-every 0 --hist-every 0 --trace-every 0)
has() { # has NAME FILE TEXT
    CHECKS=$((CHECKS + 1))
    grep -qF -- "$3" "$2" || fail "$1: $2 has no '$3'"
}
one_line() {
    CHECKS=$((CHECKS + 1))
    [[ $(printf '%s\n' "$ERR" | wc -l) == 1 ]] || fail "stderr is not one line"
}
# run.json's amp_lists_applied as "white A B ... | black C D ...", each side sorted (the
# order of classes follows the layer table, which grows)
lists() {
    local v w b
    v=$(sed -n 's/.*"amp_lists_applied": "\(.*\)",*$/\1/p' "$1/run.json")
    w=${v%%; black*}
    b=${v##*; black }
    printf 'white %s| black %s' "$(tr ', ' '\n\n' <<<"${w#white }" | grep -v '^$' | sort | tr '\n' ' ')" \
        "$(tr ', ' '\n\n' <<<"$b" | grep -v '^$' | sort | tr '\n' ' ')"
}
nothing() {
    CHECKS=$((CHECKS + 1))
    [[ ! -e $1 ]] || fail "$1 was created"
}

# ---- help ----
run "$A" train --help
expect_status 0
expect_out_has "--amp-lists"
expect_out_has "--keep-batchnorm-fp32 on|off"

# ---- bad input: exit 2, one line, nothing created ----
run "$A" train "${SN[@]}" --mode O1 --amp-lists torch --out "$TMP/bad1"
expect_status 2
expect_err_has "--amp-lists wants pytorch, apex, paddle or mindspore, got 'torch'"
one_line
nothing "$TMP/bad1"
run "$A" train "${SN[@]}" --mode O1 --amp-lists pytorch --white-list softmaxx --out "$TMP/bad2"
expect_status 2
expect_err_has "unknown op 'softmaxx' in --white-list (expected linear, conv, relu"
one_line
nothing "$TMP/bad2"
run "$A" train "${SN[@]}" --mode O1 --black-list relu,,gelu --out "$TMP/bad3"
expect_status 2
expect_err_has "--black-list 'relu,,gelu': an empty op name"
one_line
nothing "$TMP/bad3"
run "$A" train "${SN[@]}" --mode O2 --keep-batchnorm-fp32 yes --out "$TMP/bad4"
expect_status 2
expect_err_has "--keep-batchnorm-fp32 wants on or off, got 'yes'"
one_line
nothing "$TMP/bad4"

# ---- pytorch, then --white-list relu: the edit comes after the preset ----
run "$A" train "${SN[@]}" --mode O1 --amp-lists pytorch --white-list relu --out "$TMP/pt"
expect_status 0
has "pytorch" "$TMP/pt/run.json" '"amp-lists": "pytorch"'
has "pytorch" "$TMP/pt/run.json" '"amp_lists_source": "pytorch/pytorch aten/src/ATen/autocast_mode.h'
check "pytorch + relu" "$(lists "$TMP/pt")" \
    "white conv linear matmul relu | black layernorm log_softmax loss softmax "
has "pytorch" "$TMP/pt/run.json" '"amp_lists_unmapped": "low: prelu, addmv, addr, einsum'
has "pytorch" "$TMP/pt/run.json" '"keep_batchnorm_fp32": "on: O1: batch_norm is in no list'
# the same with the edit given first: the preset is still the base
run "$A" train "${SN[@]}" --mode O1 --white-list relu --amp-lists pytorch --out "$TMP/pt2"
expect_status 0
check "edit first" "$(lists "$TMP/pt2")" "$(lists "$TMP/pt")"

# ---- removing from a list: -softmax off the black list, -linear off the white ----
run "$A" train "${SN[@]}" --mode O1 --amp-lists pytorch --black-list -softmax,-loss \
    --white-list -linear --out "$TMP/rm"
expect_status 0
check "removed" "$(lists "$TMP/rm")" "white conv matmul | black layernorm log_softmax "

# ---- mindspore O1: ReLU white, everything else fp32; O3 only the loss ----
run "$A" train "${SN[@]}" --mode O1 --amp-lists mindspore --out "$TMP/ms1"
expect_status 0
check "mindspore O1" "$(lists "$TMP/ms1")" "white conv linear matmul relu | black add avgpool \
batchnorm dropout embedding gelu layernorm log_softmax loss maxpool softmax "
has "mindspore O1" "$TMP/ms1/run.json" '"amp_lists_unmapped": "low: nn.LSTMCell, nn.RNNCell, nn.GRUCell, P.PReLU, P.Ger"'
run "$A" train "${SN[@]}" --mode O3 --amp-lists mindspore --out "$TMP/ms3"
expect_status 0
check "mindspore O3" "$(lists "$TMP/ms3")" "white none | black loss "
has "mindspore O3" "$TMP/ms3/run.json" '"keep_batchnorm_fp32": "off: train/amp.py _config_level'

# ---- apex O2: keep_batchnorm_fp32 on by default, off as given ----
run "$A" train "${SN[@]}" --mode O2 --amp-lists apex --out "$TMP/ax"
expect_status 0
has "apex O2" "$TMP/ax/run.json" '"keep_batchnorm_fp32": "on: frontend.py'
run "$A" train "${SN[@]}" --mode O2 --amp-lists apex --keep-batchnorm-fp32 off --out "$TMP/ax2"
expect_status 0
has "apex O2 off" "$TMP/ax2/run.json" '"keep_batchnorm_fp32": "off: as given"'
# without a preset, run.json says nothing of the lists
run "$A" train "${SN[@]}" --mode O1 --out "$TMP/none"
expect_status 0
CHECKS=$((CHECKS + 1))
grep -q 'amp_lists\|keep_batchnorm' "$TMP/none/run.json" && fail "run.json names the lists"

# ---- the loss in the low format (--white-list loss) ----
# PyTorch's initial scale 65536 rounds to inf in fp16, so the gradient of an fp16 loss
# overflows at the first step: found_inf, skipped, the scale halved to 32768, which fits;
# the recorded losses are fp16 values (4 <= loss < 8: a multiple of 2^-8).  bf16 keeps 2^16.
TF=(--net transformer --width 16 --depth 1 --heads 2 --context 8 --batch 4 --steps 3
    --backend cpu --no-progress --stats-every 0 --hist-every 0 --trace-every 0 --loss-scale pytorch)
run "$A" train "${TF[@]}" --mode O2 --white-list loss --out "$TMP/lowloss"
expect_status 0
check "fp16 loss: scale" "$(col "$TMP/lowloss" 4)" "65536 32768 32768 "
check "fp16 loss: found_inf" "$(col "$TMP/lowloss" 5)" "1 0 0 "
check "fp16 loss: skipped" "$(col "$TMP/lowloss" 6)" "1 0 0 "
CHECKS=$((CHECKS + 1))
awk -F, 'NR > 1 && ($3 * 256 != int($3 * 256) || $3 < 4 || $3 >= 8) { bad = 1 } END { exit bad }' \
    "$TMP/lowloss/steps.csv" || fail "fp16 losses are not multiples of 2^-8 in [4, 8)"
has "fp16 loss" "$TMP/lowloss/run.json" '"loss_dtype": "fp16"'
run "$A" train "${TF[@]}" --mode O2 --out "$TMP/f32loss"
expect_status 0
# (at this size the fp16 model overflows at the second step whatever the loss: only the
# first step tells the loss's format)
check "fp32 loss: first step's found_inf" "$(col "$TMP/f32loss" 5 | cut -d' ' -f1)" "0"
CHECKS=$((CHECKS + 1))
grep -q '"loss_dtype"' "$TMP/f32loss/run.json" && fail "an fp32 loss names loss_dtype"
run "$A" train "${TF[@]}" --mode O2 --dtype bf16 --white-list loss --out "$TMP/bfloss"
expect_status 0
check "bf16 loss: found_inf" "$(col "$TMP/bfloss" 5)" "0 0 0 "
has "bf16 loss" "$TMP/bfloss/run.json" '"loss_dtype": "bf16"'
# a preset keeps the loss fp32; -loss takes it off the black list, and off every list it
# stays fp32; O0 ignores the lists
run "$A" train "${TF[@]}" --mode O2 --amp-lists pytorch --black-list -loss --out "$TMP/offlist"
expect_status 0
check "loss on no list: first step's found_inf" "$(col "$TMP/offlist" 5 | cut -d' ' -f1)" "0"
CHECKS=$((CHECKS + 1))
grep -q '"loss_dtype"' "$TMP/offlist/run.json" && fail "the loss on no list ran in fp16"
run "$A" train "${TF[@]}" --mode O0 --white-list loss --out "$TMP/o0loss"
expect_status 0
CHECKS=$((CHECKS + 1))
grep -q '"loss_dtype"' "$TMP/o0loss/run.json" && fail "O0 ran the loss in a low format"
run "$A" train "${SN[@]}" --mode O2 --white-list loss --out "$TMP/mseloss"
expect_status 2
expect_err_has "--white-list loss: simplenet's mean squared error has no fp16 variant"
one_line
nothing "$TMP/mseloss"

# ---- a sweep grid over the presets ----
run "$A" sweep --grid "amp_lists=pytorch,paddle" "${SN[@]}" --mode O1 --out "$TMP/sw" --jobs 1
expect_status 0
expect_out_has "sweep: 2 runs: 2 ok"
has "sweep pytorch" "$TMP/sw/runs/0-pytorch/run.json" '"amp-lists": "pytorch"'
has "sweep paddle" "$TMP/sw/runs/1-paddle/run.json" '"amp_lists_source": "PaddlePaddle/Paddle'

finish
