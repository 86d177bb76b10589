#!/usr/bin/env bash
# cli_train_nets.sh: `ampscope train` on the nets that are graphs: a short
# resnet and transformer run in every mode write a whole record with
# PyTorch's tensor names (BatchNorm's running statistics among them), the
# transformer's accuracy is per token; their size options are checked, and
# missing text data is refused (exit 2) naming the path and what to do.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
A=$AMPSCOPE
common=(--backend cpu --no-progress)
tiny_tf=(--net transformer --width 16 --depth 1 --heads 2 --context 8 --batch 4 --subset 64)
tiny_rn=(--net resnet --width 4 --batch 4 --subset 32)

for mode in O0 O1 O2 O3; do
    run "$A" train "${tiny_tf[@]}" --mode $mode --steps 3 --out "$TMP/tf-$mode" "${common[@]}"
    expect_status 0
    expect_out_has "transformer $mode"
    run "$A" train "${tiny_rn[@]}" --mode $mode --steps 2 --out "$TMP/rn-$mode" "${common[@]}"
    expect_status 0
    expect_out_has "resnet $mode"
done
# tensors.csv names PyTorch's modules; the checkpoint holds the buffers
grep -q '^0,h.0.attn.c_attn,weight_grad,' "$TMP/tf-O2/tensors.csv" || fail "no h.0.attn.c_attn row"
grep -q '^0,wte,weight,' "$TMP/tf-O2/tensors.csv" || fail "no wte row"
grep -q 'layer2.0.downsample.0' "$TMP/rn-O2/tensors.csv" || fail "no downsample row"
grep -aq 'layer1.0.bn1.running_var' "$TMP/rn-O2/checkpoint.safetensors" || fail "no running_var"
# an epoch of the transformer: the test accuracy is a fraction of tokens
run "$A" train "${tiny_tf[@]}" --epochs 1 --out "$TMP/tf-epoch" "${common[@]}"
expect_status 0
# the held-out loss and bits per character (loss / ln 2) in the summary and eval.csv
expect_out_has 'bits per character'
loss=$(tail -n 1 "$TMP/tf-epoch/eval.csv" | cut -d, -f3)
bpc=$(printf '%s\n' "$OUT" | sed -n 's/.*(\([0-9.]*\) bits per character).*/\1/p')
awk -v l="$loss" -v b="$bpc" 'BEGIN { exit !(b != "" && (l / log(2) - b) ^ 2 < 1e-8) }' ||
    fail "bits per character $bpc is not $loss / ln 2"
acc=$(tail -n 1 "$TMP/tf-epoch/eval.csv" | cut -d, -f4)
awk -v a="$acc" 'BEGIN { exit !(a >= 0 && a <= 1) }' || fail "per-token accuracy $acc"
# resume with the same sizes goes on; BatchNorm's buffers come back
run "$A" train --resume "$TMP/rn-O2" --steps 4 "${common[@]}"
expect_status 0
[[ $(tail -n 1 "$TMP/rn-O2/steps.csv" | cut -d, -f1) == 3 ]] || fail "resnet resume"

# ---- bad sizes and data: exit 2, one line, nothing written ----
bad() {
    local want=$1
    shift
    run "$A" train "$@" "${common[@]}"
    expect_status 2
    expect_err_has "$want"
    [[ $(printf '%s\n' "$ERR" | wc -l) == 1 ]] || fail "more than one line: $ERR"
}
bad 'apply to the transformer only, not mlp' --net mlp --heads 2 --out "$TMP/b1"
bad 'a multiple of --heads 3' --net transformer --width 16 --heads 3 --out "$TMP/b2"
bad '--context' --net transformer --context 1 --out "$TMP/b3"
bad '--dropout' --net transformer --dropout 1.5 --out "$TMP/b4"
bad 'install fortunes or give --data DIR' --net transformer --data "$TMP/nothing" --out "$TMP/b5"
bad "embedding-accumulation" --net transformer --embedding-accumulation fp8 --out "$TMP/b6"
bad 'out of range for resnet' --net resnet --depth 5 --out "$TMP/b7"
for d in b1 b2 b3 b4 b5 b6 b7; do [[ ! -e $TMP/$d ]] || fail "$d was created"; done
finish
