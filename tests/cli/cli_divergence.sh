#!/usr/bin/env bash
# cli_divergence.sh: how a training run ends when it diverges (exit 3, the cause and the step
# in stderr and run.json's end_reason), in every mode, with the expectations worked out by hand
# from the rules (experiments/train_limits.c) and the frameworks' sources:
#   (a) a non-finite loss with --loss-scale none ends the run in O1, O2 and O3 as in O0;
#   (b) NaN reaching the stored weights (--fault nan-weights): the fp32 masters, the fp32
#       weights of O0/O1, the fp16/bf16 weights of O3;
#   (c) a healthy run sitting at its floor goes on: no framework stops on clean steps;
#   (d) ampscope's rule counts overflowing steps in a row only, K = --diverge-after or the
#       scaler's default;
#   (e) DeepSpeed's rule: an overflow at the minimum scale (raise_error_at_min_scale);
#   (f) MindSpore's DynamicLossScaleManager: more than 1000 overflows in a row;
#   (g) run.json's divergence_rule names the rule each policy runs under;
#   (h) bad --diverge-after values: exit 2, one line, nothing created.
# simplenet (synthetic data, MSE, plain SGD): no evaluation, fast steps.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
A=$AMPSCOPE
SN=(--net simplenet --width 64 --batch 32 --samples 256 --dtype fp16 --backend cpu
    --no-progress --stats-every 0 --hist-every 0 --trace-every 0)
rows() { echo $(($(wc -l <"$1/steps.csv") - 1)); }
# a run that must stop: exit 3, the reason on stderr and in run.json, `rows` steps logged
diverges() {
    local what=$1 dir=$2 want_rows=$3 reason=$4
    expect_status 3
    expect_err_has "diverged: $reason"
    check "$what: rows" "$(rows "$dir")" "$want_rows"
    CHECKS=$((CHECKS + 1))
    grep -qF "\"end_reason\": \"diverged: $reason" "$dir/run.json" ||
        fail "$what: run.json's end_reason lacks: $reason"
}
# a run that must go to its end
completes() {
    local what=$1 dir=$2 want_rows=$3
    expect_status 0
    check "$what: rows" "$(rows "$dir")" "$want_rows"
    CHECKS=$((CHECKS + 1))
    ! grep -q '"end_reason"' "$dir/run.json" || fail "$what: an end_reason in run.json"
}

# ---- (a) a NaN loss at step 3 with no loss scaling: nothing skips the step, so the run ends
# there in every mode (before issue 15 only O0 did; O1-O3 went on with NaN weights, exit 0)
for m in O1 O2 O3; do
    run "$A" train "${SN[@]}" --mode $m --loss-scale none --steps 10 --fault nonfinite-loss@3 \
        --out "$TMP/a-$m"
    diverges "(a) $m" "$TMP/a-$m" 4 "the loss is nan at step 3 in $m with no loss scaling"
done
# an infinite loss the same way, and O0 as before (with a loss scale too: O0 has nothing to skip
# a NaN loss's step with)
run "$A" train "${SN[@]}" --mode O2 --loss-scale none --steps 10 --fault inf-loss@2 --out "$TMP/a-inf"
diverges "(a) inf" "$TMP/a-inf" 3 "the loss is inf at step 2 in O2 with no loss scaling"
run "$A" train "${SN[@]}" --mode O0 --loss-scale none --steps 10 --fault nonfinite-loss@0 \
    --out "$TMP/a-O0"
diverges "(a) O0" "$TMP/a-O0" 1 "the loss is nan at step 0 in O0 with no loss scaling"
run "$A" train "${SN[@]}" --mode O0 --loss-scale pytorch --steps 10 --fault nonfinite-loss@1 \
    --out "$TMP/a-O0-scaled"
diverges "(a) O0 scaled" "$TMP/a-O0-scaled" 2 "the loss is nan at step 1 in O0 (try a smaller --lr)"
# with a loss scale outside O0 the step is skipped and the run goes on (cli_faults (a))
run "$A" train "${SN[@]}" --mode O2 --loss-scale pytorch --steps 6 --fault nonfinite-loss@3 \
    --out "$TMP/a-scaled"
completes "(a) O2 scaled" "$TMP/a-scaled" 6

# ---- (b) NaN in the stored weights after step N's update ends the run at step N, whatever the
# loss scale (a dynamic one here: the step itself is clean)
declare -A what_b=([O0]="fp32 weights" [O1]="fp32 weights" [O2]="fp32 master weights"
    [O3]="fp16 weights (O3 keeps no fp32 master)")
for m in O0 O1 O2 O3; do
    ls=pytorch
    [[ $m == O0 ]] && ls=none
    run "$A" train "${SN[@]}" --mode $m --loss-scale $ls --steps 20 --fault nan-weights@5 \
        --out "$TMP/b-$m"
    diverges "(b) $m" "$TMP/b-$m" 6 "the ${what_b[$m]} hold a NaN or an infinity after the update of step 5"
    check "(b) $m: no overflow before" "$(col "$TMP/b-$m" 5)" "$(rep 0 6)"
done
run "$A" train "${SN[@]}" --mode O3 --dtype bf16 --loss-scale none --steps 20 \
    --fault nan-weights@0 --out "$TMP/b-bf16"
diverges "(b) O3 bf16" "$TMP/b-bf16" 1 \
    "the bf16 weights (O3 keeps no fp32 master) hold a NaN or an infinity after the update of step 0"

# ---- (c) a healthy run at the floor 1: clean steps never count, whatever the scale (before
# issue 15, 100 steps at the minimum scale, clean or not, ended these with exit 3 at step 99);
# windows 1000 and 2000: no growth in 120 steps, every step at scale 1
for p in megatron deepspeed mindspore-manager; do
    run "$A" train "${SN[@]}" --mode O2 --loss-scale $p --init-scale 1 --steps 120 \
        --out "$TMP/c-$p"
    completes "(c) $p" "$TMP/c-$p" 120
    check "(c) $p: scales" "$(col "$TMP/c-$p" 4)" "$(rep 1 120)"
    check "(c) $p: no overflow" "$(col "$TMP/c-$p" 5)" "$(rep 0 120)"
done
# and with a small --diverge-after: still only overflowing steps count
run "$A" train "${SN[@]}" --mode O2 --loss-scale mindspore-amp --init-scale 1 --diverge-after 3 \
    --steps 10 --out "$TMP/c-small"
completes "(c) --diverge-after 3" "$TMP/c-small" 10

# ---- (d) ampscope's rule: overflowing steps in a row
# --diverge-after 7, overflows at steps 2-7 (six) and 9 on: the clean step 8 starts the count
# again, the 7th in a row is step 15.  pytorch's scale: 2^16 for steps 0-2, halved by each
# overflow: 2^10 after step 7, used by steps 8 and 9, then 2^4 = 16 at step 15
run "$A" train "${SN[@]}" --mode O2 --loss-scale pytorch --diverge-after 7 --steps 50 \
    --fault overflow-grads@2-7,9-49 --out "$TMP/d-seven"
diverges "(d) 7 in a row" "$TMP/d-seven" 16 \
    "ampscope's rule: 7 overflowing steps in a row, steps 9 to 15 (the last at the dynamic loss scale 16; --diverge-after 7)"
# mindspore-amp's default K: from 2^127 to its floor 1 is 127 backoffs, K = 1 x (127 + 1) = 128:
# 120 overflows in a row (the scale reaches 1 after step 15 and stays) and clean steps after
# them go to the end (before issue 15: stopped at step 114, the 100th step ending at 1)
run "$A" train "${SN[@]}" --mode O2 --loss-scale mindspore-amp --steps 130 \
    --fault overflow-grads@0-119 --out "$TMP/d-burst"
completes "(d) burst of 120" "$TMP/d-burst" 130
check "(d) burst: steps 120-129 clean" "$(col "$TMP/d-burst" 5 | cut -d' ' -f121-130)" \
    "0 0 0 0 0 0 0 0 0 0"
# 128 in a row: the 128th, step 127, ends it
run "$A" train "${SN[@]}" --mode O2 --loss-scale mindspore-amp --steps 140 \
    --fault overflow-grads@0-127 --out "$TMP/d-128"
diverges "(d) 128 in a row" "$TMP/d-128" 128 \
    "ampscope's rule: 128 overflowing steps in a row, steps 0 to 127 (the last at the dynamic loss scale 1; --diverge-after 128, the default)"
# a fixed scale: K = 100, the 100th overflow in a row is step 104 (from step 5)
run "$A" train "${SN[@]}" --mode O2 --loss-scale fixed --steps 200 --fault overflow-grads@5-199 \
    --out "$TMP/d-fixed"
diverges "(d) fixed" "$TMP/d-fixed" 105 \
    "ampscope's rule: 100 overflowing steps in a row, steps 5 to 104 (the last at the fixed loss scale 128; --diverge-after 100, the default)"
# a --diverge-after given applies on top of the framework's own stop: deepspeed from 2^16 would
# raise at step 17; 5 in a row end it at step 4
run "$A" train "${SN[@]}" --mode O2 --loss-scale deepspeed --diverge-after 5 --steps 50 \
    --fault overflow-grads@all --out "$TMP/d-ds5"
diverges "(d) deepspeed, 5" "$TMP/d-ds5" 5 "ampscope's rule: 5 overflowing steps in a row, steps 0 to 4"
# --diverge-after 0: ampscope's rule off; a fixed scale then goes to the end
run "$A" train "${SN[@]}" --mode O2 --loss-scale fixed --diverge-after 0 --steps 150 \
    --fault overflow-grads@all --out "$TMP/d-off"
completes "(d) --diverge-after 0" "$TMP/d-off" 150

# ---- (e) DeepSpeed's rule (DynamicLossScaler.update_scale): an overflow with the hysteresis
# spent at cur_scale == min_scale raises.  From 1: step 0's overflow spends the hysteresis
# (2 -> 1), step 1's raises
run "$A" train "${SN[@]}" --mode O2 --loss-scale deepspeed --init-scale 1 --steps 50 \
    --fault overflow-grads@all --out "$TMP/e-1"
diverges "(e) from 1" "$TMP/e-1" 2 \
    "DeepSpeed's rule: step 1 overflowed at the minimum loss scale 1; DeepSpeed raises 'Current loss scale already at minimum - cannot decrease scale anymore'"
# from 4, overflows at 3 and 5 on: step 3 spends the hysteresis (no refill by the clean step 4,
# consecutive_hysteresis is off), 5 halves to 2, 6 to 1, 7 raises; --diverge-after 0 does not
# turn the framework's rule off
run "$A" train "${SN[@]}" --mode O2 --loss-scale deepspeed --init-scale 4 --diverge-after 0 \
    --steps 50 --fault overflow-grads@3,5-49 --out "$TMP/e-4"
diverges "(e) from 4" "$TMP/e-4" 8 "DeepSpeed's rule: step 7 overflowed at the minimum loss scale 1"
check "(e) from 4: scales" "$(col "$TMP/e-4" 4)" "4 4 4 4 4 4 2 1 "

# ---- (f) MindSpore's DynamicLossScaleManager: bad_step > bad_step_max (1000) raises.  1000
# overflows in a row do not; the 1001st does (overflows from step 5: step 1005)
run "$A" train "${SN[@]}" --mode O2 --loss-scale mindspore-manager --steps 1010 \
    --fault overflow-grads@0-999 --out "$TMP/f-1000"
completes "(f) 1000 in a row" "$TMP/f-1000" 1010
run "$A" train "${SN[@]}" --mode O2 --loss-scale mindspore-manager --steps 1100 \
    --fault overflow-grads@5-1099 --out "$TMP/f-1001"
diverges "(f) 1001 in a row" "$TMP/f-1001" 1006 \
    "MindSpore's rule: 1001 overflowing steps in a row, steps 5 to 1005; DynamicLossScaleManager raises 'Dynamic loss scale Continuous overflow' after more than 1000 (bad_step_max)"

# ---- (g) run.json's divergence_rule, by hand: pytorch from 2^127 with no floor: 276 halvings to
# 2^-149 and one to 0, K = 278; apex from its cap 2^24: 174, K = 175; megatron: 127 to its floor
# 1, hysteresis 2, K = 256; fixed and none: 100
declare -A rule_g=(
    [pytorch]="ampscope's: 278 overflowing steps in a row end the run (exit 3): at least 100 and hysteresis 1 x (277 backoffs from"
    [apex]="ampscope's: 175 overflowing steps in a row end the run (exit 3): at least 100 and hysteresis 1 x (174 backoffs from 1.67772e+07 to 0, + 1)"
    [megatron]="ampscope's: 256 overflowing steps in a row end the run (exit 3): at least 100 and hysteresis 2 x (127 backoffs from"
    [fixed]="ampscope's: 100 overflowing steps in a row end the run (exit 3)"
    [none]="ampscope's: 100 overflowing steps in a row end the run (exit 3)"
    [deepspeed]="DeepSpeed's: an overflow at the minimum loss scale 1 ends the run (exit 3), as DynamicLossScaler's raise_error_at_min_scale does\""
    [mindspore-manager]="MindSpore's: more than 1000 overflowing steps in a row end the run (exit 3), as DynamicLossScaleManager's bad_step_max does\"")
for p in "${!rule_g[@]}"; do
    run "$A" train "${SN[@]}" --mode O2 --loss-scale $p --steps 1 --out "$TMP/g-$p"
    expect_status 0
    CHECKS=$((CHECKS + 1))
    grep -qF "\"divergence_rule\": \"${rule_g[$p]}" "$TMP/g-$p/run.json" ||
        fail "(g) $p: divergence_rule: $(grep divergence_rule "$TMP/g-$p/run.json")"
done
run "$A" train "${SN[@]}" --mode O2 --loss-scale pytorch --diverge-after 0 --steps 1 --out "$TMP/g-off"
CHECKS=$((CHECKS + 1))
grep -qF '"divergence_rule": "none: --diverge-after 0 turns ampscope'"'"'s rule off"' \
    "$TMP/g-off/run.json" || fail "(g) --diverge-after 0: $(grep divergence_rule "$TMP/g-off/run.json")"
run "$A" train "${SN[@]}" --mode O2 --loss-scale deepspeed --diverge-after 9 --steps 1 --out "$TMP/g-both"
CHECKS=$((CHECKS + 1))
grep -qF "raise_error_at_min_scale does; and ampscope's: 9 overflowing steps in a row end the run (exit 3; --diverge-after)\"" \
    "$TMP/g-both/run.json" || fail "(g) both rules: $(grep divergence_rule "$TMP/g-both/run.json")"

# ---- (h) bad --diverge-after values and a misspelt fault kind: exit 2, one line, nothing made
for v in -1 abc '' 1.5 99999999999999999999 1e3 ' 5' 0x10; do
    run "$A" train "${SN[@]}" --mode O2 --steps 2 --diverge-after "$v" --out "$TMP/h"
    expect_status 2
    if [[ -z $v ]]; then
        expect_err_has "option --diverge-after needs a value"
    else
        expect_err_has "--diverge-after wants an integer in [0, "
    fi
    CHECKS=$((CHECKS + 2))
    [[ $(wc -l <"$TMP/err") -eq 1 ]] || fail "(h) '$v': more than one line"
    [[ ! -e $TMP/h ]] || fail "(h) '$v': --out was created"
done
run "$A" train "${SN[@]}" --mode O2 --steps 2 --fault nan-weight@1 --out "$TMP/h"
expect_status 2
expect_err_has "unknown kind 'nan-weight' (expected nonfinite-loss, inf-loss, overflow-grads, zero-grads or nan-weights)"

finish
