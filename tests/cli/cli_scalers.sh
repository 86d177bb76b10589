#!/usr/bin/env bash
# cli_scalers.sh: the loss-scale presets that name a framework's real
# defaults and number types, through `train` (kernels/loss_scale.c has each
# rule's source).  Clean steps come from --fault zero-grads, overflows from
# --fault overflow-grads; every expected scale column is worked out by hand
# from the framework's rule (the column is the scale each step multiplies
# by, before its update):
#   deepspeed-zero            DynamicLossScaler(): 2^32, no hysteresis, a Python float
#                             that passes fp32's maximum and comes back (the run goes on)
#   deepspeed-fp16-optimizer  FP16_Optimizer: the first growth after window + 1 clean steps
#   paddle-static             update_loss_scaling: x 0.8f every 2 overflows, growth to inf
#                             refused
#   tf-keras2                 floor 1 and growth to inf refused (Keras 3: neither)
#   pytorch vs dynamic        x 1.7: PyTorch's double factor against ampscope's fp32 product
# Plus `train --help` listing them, run.json's record of the preset and its
# source, and --backoff-factor refused where the framework has one factor.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
A=$AMPSCOPE
SN=(--net simplenet --width 64 --batch 32 --samples 256 --mode O2 --dtype fp16 --backend cpu
    --no-progress --stats-every 0 --hist-every 0 --trace-every 0)
has() { # has NAME FILE PATTERN
    CHECKS=$((CHECKS + 1))
    grep -q -- "$3" "$2" || fail "$1: $2 has no '$3'"
}

# ---- the presets are listed ----
run "$A" train --help
expect_status 0
for p in deepspeed-zero deepspeed-fp16-optimizer paddle-static tf-keras2; do
    expect_out_has "$p"
done

# ---- deepspeed-zero: 2^32, window 2, no hysteresis, an overflow at step 2 ----
# good = steps since the last overflow, growth at its multiples of 2:
# steps 0 1 | 2 (O) | 3 4 5 6 7 -> used 2^32 2^32 2^33 2^32 2^32 2^33 2^33 2^34
run "$A" train "${SN[@]}" --loss-scale deepspeed-zero --scale-window 2 --steps 8 \
    --fault zero-grads@0,1,3,4,5,6,7+overflow-grads@2 --out "$TMP/zero"
expect_status 0
check "deepspeed-zero: scales" "$(col "$TMP/zero" 4)" \
    "$(g9 2^32) $(g9 2^32) $(g9 2^33) $(g9 2^32) $(g9 2^32) $(g9 2^33) $(g9 2^33) $(g9 2^34) "
check "deepspeed-zero: skipped" "$(col "$TMP/zero" 6)" "0 0 1 0 0 0 0 0 "
has "deepspeed-zero" "$TMP/zero/run.json" '"loss-scale": "deepspeed-zero"'
has "deepspeed-zero" "$TMP/zero/run.json" '"scaler_source": "deepspeed/runtime/fp16/loss_scaler.py'
has "deepspeed-zero" "$TMP/zero/run.json" '"scaler_arithmetic": "double: '

# ---- deepspeed-zero past fp32's maximum: the double goes on ----
# window 1 from 2^126: steps 0 and 1 are clean (zero-grads) and grow to 2^127, then 2^128,
# which fp32 cannot hold: step 2 multiplies by inf, overflows, and the Python float halves back
# to 2^127; step 3 at 2^127 overflows fp16 again: 2^126.  DeepSpeed raises only at its minimum.
S126=85070591730234615865843651857942052864
run "$A" train "${SN[@]}" --loss-scale deepspeed-zero --init-scale $S126 --scale-window 1 \
    --steps 5 --fault zero-grads@0,1 --out "$TMP/zero-top"
expect_status 0
check "deepspeed-zero top: scales" "$(col "$TMP/zero-top" 4)" \
    "$(g9 2^126) $(g9 2^127) inf $(g9 2^127) $(g9 2^126) "
check "deepspeed-zero top: skipped" "$(col "$TMP/zero-top" 6)" "0 0 1 1 1 "
has "deepspeed-zero top" "$TMP/zero-top/run.json" \
    '"scaler_nonfinite_growth": "taken: the scale is a Python float'
CHECKS=$((CHECKS + 1))
grep -q '"end_reason"' "$TMP/zero-top/run.json" && fail "deepspeed-zero top: an end_reason"

# the checkpoint keeps the double (scaler.master_scale): stopped after step 1 with 2^128 (inf in
# fp32) and resumed, the run is the uninterrupted one
run "$A" train "${SN[@]}" --loss-scale deepspeed-zero --init-scale $S126 --scale-window 1 \
    --steps 2 --fault zero-grads@0,1 --out "$TMP/zero-top2"
expect_status 0
run "$A" train --resume "$TMP/zero-top2" --steps 5
expect_status 0
check "deepspeed-zero top, resumed at inf: scales" "$(col "$TMP/zero-top2" 4)" \
    "$(g9 2^126) $(g9 2^127) inf $(g9 2^127) $(g9 2^126) "

# ---- deepspeed-fp16-optimizer: window 2, overflow at step 3 ----
# stable_interval = steps since the last overflow - 1; growth when it is a positive multiple
# of 2: after clean steps 0 1 2 (the third), then at step 3 (O) back; then after 4 5 6 and 8
run "$A" train "${SN[@]}" --loss-scale deepspeed-fp16-optimizer --scale-window 2 --steps 9 \
    --fault zero-grads@0,1,2,4,5,6,7,8+overflow-grads@3 --out "$TMP/fp16opt"
expect_status 0
check "deepspeed-fp16-optimizer: scales" "$(col "$TMP/fp16opt" 4)" \
    "65536 65536 65536 131072 65536 65536 65536 131072 131072 "
# the deepspeed preset on the same steps grows at 2, 4, ... steps since the last overflow:
# after step 1; hysteresis 2 absorbs the overflow at 3 (the count restarts), then after 5 and 7
#   2^16 2^16 2^17 2^17 2^17 2^17 2^18 2^18 2^19
run "$A" train "${SN[@]}" --loss-scale deepspeed --scale-window 2 --steps 9 \
    --fault zero-grads@0,1,2,4,5,6,7,8+overflow-grads@3 --out "$TMP/ds"
expect_status 0
check "deepspeed, same steps: scales" "$(col "$TMP/ds" 4)" \
    "65536 65536 131072 131072 131072 131072 262144 262144 524288 "

# ---- paddle-static: x 0.8f after every 2 overflows in a row, from 4 ----
# 0.8f = 0x1.99999ap-1; 4 * 0.8f = 3.2000000476837158 (exact); then each fp32 product rounded
# to nearest: 2.56000018, 2.0480001, 1.63840008, 1.31072009 (%.9g); 1.31072009 * 0.8f < 1 is
# floored to 1 by the op (it is not reached in 12 steps)
run "$A" train "${SN[@]}" --loss-scale paddle-static --init-scale 4 --steps 12 \
    --fault overflow-grads@all --out "$TMP/pstatic"
expect_status 0
check "paddle-static: scales" "$(col "$TMP/pstatic" 4)" \
    "4 4 3.20000005 3.20000005 2.56000018 2.56000018 2.0480001 2.0480001 1.63840008 1.63840008 1.31072009 1.31072009 "
has "paddle-static" "$TMP/pstatic/run.json" '"scaler_source": "python/paddle/static/amp/decorator.py'
# growth to inf refused: 2^126 -> 2^127, then 2^128 is kept at 2^127
run "$A" train "${SN[@]}" --loss-scale paddle-static --init-scale $S126 --scale-window 1 \
    --steps 4 --fault zero-grads@all --out "$TMP/pstatic-top"
expect_status 0
check "paddle-static top: refused" "$(col "$TMP/pstatic-top" 4)" \
    "$(g9 2^126) $(g9 2^127) $(g9 2^127) $(g9 2^127) "

# ---- tf-keras2 against keras (Keras 3): the floor ----
# every step overflows from 4: / 2 floored at 1 (tf.keras 2), not floored (Keras 3)
run "$A" train "${SN[@]}" --loss-scale tf-keras2 --init-scale 4 --steps 5 \
    --fault overflow-grads@all --out "$TMP/tfk2"
expect_status 0
check "tf-keras2: floor 1" "$(col "$TMP/tfk2" 4)" "4 2 1 1 1 "
run "$A" train "${SN[@]}" --loss-scale keras --init-scale 4 --steps 5 \
    --fault overflow-grads@all --out "$TMP/k3"
expect_status 0
check "keras 3: no floor" "$(col "$TMP/k3" 4)" "4 2 1 0.5 0.25 "
# growth to inf: refused by tf.keras 2 (_assign_if_finite)
run "$A" train "${SN[@]}" --loss-scale tf-keras2 --init-scale $S126 --scale-window 1 --steps 4 \
    --fault zero-grads@all --out "$TMP/tfk2-top"
expect_status 0
check "tf-keras2 top: refused" "$(col "$TMP/tfk2-top" 4)" \
    "$(g9 2^126) $(g9 2^127) $(g9 2^127) $(g9 2^127) "

# ---- x 1.7: PyTorch's double factor against ampscope's fp32 product ----
# 2^16 * 1.7^k: the first four growths agree; the fifth and sixth differ in the last bit:
# PyTorch rounds 0x1.0b4468p19 * 1.7 (double) to 0x1.c65ab0p19 = 930517.5, the fp32 product
# with 1.7f = 0x1.b33334p0 gives 0x1.c65ab2p19 = 930517.562
run "$A" train "${SN[@]}" --loss-scale pytorch --scale-factor 1.7 --scale-window 1 --steps 7 \
    --fault zero-grads@all --out "$TMP/pt17"
expect_status 0
check "pytorch x1.7" "$(col "$TMP/pt17" 4)" \
    "65536 111411.203 189399.047 321978.375 547363.25 930517.5 1581879.75 "
run "$A" train "${SN[@]}" --loss-scale dynamic --scale-factor 1.7 --scale-window 1 --steps 7 \
    --fault zero-grads@all --out "$TMP/dyn17"
expect_status 0
check "dynamic x1.7" "$(col "$TMP/dyn17" 4)" \
    "65536 111411.203 189399.047 321978.375 547363.25 930517.562 1581879.88 "

# ---- one scale factor: --growth-factor moves both ways; --backoff-factor is refused ----
# deepspeed-zero x3, window 1: 2^16 -> 196608 (clean step 0), / 3 -> 65536 (overflow at 1)
run "$A" train "${SN[@]}" --loss-scale deepspeed-zero --init-scale 65536 --growth-factor 3 \
    --scale-window 1 --steps 3 --fault zero-grads@0+overflow-grads@1 --out "$TMP/ds3"
expect_status 0
check "deepspeed-zero x3" "$(col "$TMP/ds3" 4)" "65536 196608 65536 "
for p in deepspeed-zero deepspeed-fp16-optimizer tf-keras2 keras apex mindspore-amp; do
    run "$A" train "${SN[@]}" --loss-scale $p --backoff-factor 0.25 --steps 2 --out "$TMP/bf-$p"
    expect_status 2
    expect_err_has "--backoff-factor: the $p policy divides by its one scale factor"
    CHECKS=$((CHECKS + 1))
    [[ ! -e $TMP/bf-$p ]] || fail "$p --backoff-factor: created $TMP/bf-$p"
done

# ---- MindSpore's amp.DynamicLossScaler has no defaults: run.json says whose they are ----
run "$A" train "${SN[@]}" --loss-scale mindspore-amp --steps 2 --fault zero-grads@all \
    --out "$TMP/msamp"
expect_status 0
has "mindspore-amp" "$TMP/msamp/run.json" '"scaler_source": "mindspore/amp.py DynamicLossScaler.adjust; it has no defaults: 2^16, 2, 50 are the MindSpore tutorial'

finish
