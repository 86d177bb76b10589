#!/usr/bin/env bash
# cli_faults.sh: `train --fault` (testing) against each loss-scale policy, with
# the expectations worked out by hand from the frameworks' rules
# (../shared/REFERENCES.md, kernels/loss_scale.c):
#   (a) a non-finite loss on chosen steps: those steps are found and skipped,
#       the scale backs off as the policy says, every other step updates;
#   (b) gradients that overflow on every step: the scale falls to its floor
#       (or to 0 where there is none) and the run stops with exit 3 and its
#       reason in run.json, within a bounded number of steps;
#   (c) a scale that would grow past fp32's maximum: refused (PyTorch,
#       MindSpore amp), capped (Apex), taken by an fp32 scale (Paddle,
#       Megatron, Keras) where the run stops with exit 3 before any step uses
#       inf, or taken by a Python float (DeepSpeed, MindSpore's manager) where
#       the fp32 scale applied is inf and the run goes on; the record says which.
# Plus the --fault syntax's rejections and a resumed run keeping its faults.
# simplenet (synthetic data, MSE, plain SGD): no evaluation, fast steps.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
A=$AMPSCOPE
SN=(--net simplenet --width 64 --batch 32 --samples 256 --mode O2 --dtype fp16 --backend cpu
    --no-progress --stats-every 0 --hist-every 0 --trace-every 0)
# the steps.csv column $2 (1-based) of every row, space-separated
col() { tail -n +2 "$1/steps.csv" | cut -d, -f"$2" | tr '\n' ' '; }
# "v v v ..." n times
rep() { local i s=""; for ((i = 0; i < $2; i++)); do s+="$1 "; done; printf '%s' "$s"; }
# a power of two as steps.csv prints it (%.9g) and as messages do (%g), from awk's doubles
g9() { awk "BEGIN { printf \"%.9g\", $1 }"; }
g6() { awk "BEGIN { printf \"%g\", $1 }"; }
check() {
    CHECKS=$((CHECKS + 1))
    [[ $2 == "$3" ]] || fail "$1: got '$2', expected '$3'"
}

# ---- (a) a non-finite loss on steps 3 and 7 ----
# the scale the 10 steps multiply by: pytorch, paddle and mindspore-amp halve at each overflow
# (2^16, then 2^15 from step 4, 2^14 from step 8); deepspeed and megatron (hysteresis 2, refilled
# only at growth) spend the first overflow and halve at the second; fixed stays at 128.
# megatron starts at 2^16 here: its own 2^32 overflows fp16 gradients on every step
declare -A want_a=(
    [pytorch]="$(rep 65536 4)$(rep 32768 4)$(rep 16384 2)"
    [paddle]="$(rep 65536 4)$(rep 32768 4)$(rep 16384 2)"
    [mindspore-amp]="$(rep 65536 4)$(rep 32768 4)$(rep 16384 2)"
    [deepspeed]="$(rep 65536 8)$(rep 32768 2)"
    [megatron]="$(rep 65536 8)$(rep 32768 2)"
    [fixed]="$(rep 128 10)"
)
for p in pytorch paddle mindspore-amp deepspeed megatron fixed; do
    init=()
    [[ $p == megatron ]] && init=(--init-scale 65536)
    run "$A" train "${SN[@]}" --loss-scale $p "${init[@]}" --steps 10 --fault nonfinite-loss@3,7 \
        --out "$TMP/a-$p"
    expect_status 0
    check "(a) $p: scales" "$(col "$TMP/a-$p" 4)" "${want_a[$p]}"
    check "(a) $p: found_inf" "$(col "$TMP/a-$p" 5)" "0 0 0 1 0 0 0 1 0 0 "
    check "(a) $p: skipped" "$(col "$TMP/a-$p" 6)" "0 0 0 1 0 0 0 1 0 0 "
    check "(a) $p: NaN losses" "$(col "$TMP/a-$p" 3 | tr ' ' '\n' | grep -n nan | cut -d: -f1 | tr '\n' ' ')" "4 8 "
done
# an infinite loss the same way
run "$A" train "${SN[@]}" --loss-scale pytorch --steps 6 --fault inf-loss@2 --out "$TMP/a-inf"
expect_status 0
check "(a) inf-loss: losses" "$(col "$TMP/a-inf" 3 | cut -d' ' -f3)" "inf"
check "(a) inf-loss: skipped" "$(col "$TMP/a-inf" 6)" "0 0 1 0 0 0 "
# a skipped step is no update: the same as a step whose gradients are all zero (plain SGD moves
# nothing), so step 4's loss is the one after a zero-gradient step 3, and not the one after a
# real step 3; the steps before agree bit for bit with a run without faults
run "$A" train "${SN[@]}" --loss-scale pytorch --steps 10 --fault zero-grads@3 --out "$TMP/a-zero"
expect_status 0
run "$A" train "${SN[@]}" --loss-scale pytorch --steps 10 --out "$TMP/a-clean"
expect_status 0
check "(a) skipped step 3 = zero-gradient step 3: step 4's loss" \
    "$(col "$TMP/a-pytorch" 3 | cut -d' ' -f5)" "$(col "$TMP/a-zero" 3 | cut -d' ' -f5)"
check "(a) steps 0-2 as without faults" "$(col "$TMP/a-pytorch" 3 | cut -d' ' -f1-3)" \
    "$(col "$TMP/a-clean" 3 | cut -d' ' -f1-3)"
CHECKS=$((CHECKS + 1))
[[ $(col "$TMP/a-pytorch" 3 | cut -d' ' -f5) != "$(col "$TMP/a-clean" 3 | cut -d' ' -f5)" ]] ||
    fail "(a) step 4's loss is the same whether step 3 updated or not"

# ---- (b) gradients that overflow on every step, --diverge-after 5 ----
# rows: the steps run; scale: the last step's; the run stops when the scale has been at its
# floor for 5 steps (pytorch, apex, paddle, keras: no floor, so at 0: fp32 halvings from 2^16
# reach 2^-149 after 165 and 0 at the 166th, step 165, then steps 165..169; keras from 2^15
# one step sooner; mindspore-manager: 2^24 -> 1 at step 23, then 23..27; mindspore-amp: 2^16 ->
# 1 at step 15; megatron: 2^32, the first overflow spends the hysteresis, 1 at step 32), or,
# for deepspeed, at the first overflow at its minimum 1 (2^16: hysteresis at step 0, halvings
# 1..16, step 17 raises, as DeepSpeed does); apex keeps a Python float: its halvings from 2^16
# reach 2^-1074 (the smallest double) after 1090 and 0 at the 1091st, step 1090, then steps
# 1090..1094 (its fp32 scale applied is 0 from step 166); fixed and none: 5 overflows in a row
declare -A rows_b=([pytorch]=170 [apex]=1095 [paddle]=170 [keras]=169 [mindspore-manager]=28
    [mindspore-amp]=20 [deepspeed]=18 [megatron]=37 [fixed]=5 [none]=5)
declare -A scale_b=([pytorch]=0 [apex]=0 [paddle]=0 [keras]=0 [mindspore-manager]=1
    [mindspore-amp]=1 [deepspeed]=1 [megatron]=1 [fixed]=128 [none]=1)
declare -A why_b=([pytorch]='fell to 0 (the policy has no floor)' [apex]='fell to 0'
    [paddle]='fell to 0' [keras]='fell to 0' [mindspore-manager]='stayed at --min-scale 1 for 5'
    [mindspore-amp]='stayed at --min-scale 1 for 5' [megatron]='stayed at --min-scale 1 for 5'
    [deepspeed]="DeepSpeed raises 'Current loss scale already at minimum"
    [fixed]='overflowed on 5 steps in a row at the fixed loss scale 128'
    [none]='overflowed on 5 steps in a row with no loss scaling')
for p in pytorch apex paddle keras mindspore-manager mindspore-amp deepspeed megatron fixed none; do
    run "$A" train "${SN[@]}" --loss-scale $p --steps 100000 --diverge-after 5 \
        --fault overflow-grads@all --out "$TMP/b-$p"
    expect_status 3
    expect_err_has "${why_b[$p]}"
    check "(b) $p: rows" "$(($(wc -l <"$TMP/b-$p/steps.csv") - 1))" "${rows_b[$p]}"
    check "(b) $p: last scale" "$(tail -n 1 "$TMP/b-$p/steps.csv" | cut -d, -f4)" "${scale_b[$p]}"
    check "(b) $p: every step found an overflow" "$(col "$TMP/b-$p" 5 | tr -d '1 ')" ""
    CHECKS=$((CHECKS + 1))
    grep -q "\"end_reason\": \"diverged: .*${why_b[$p]%%\'*}" "$TMP/b-$p/run.json" ||
        fail "(b) $p: run.json has no end_reason"
done
# the pytorch trajectory: step k multiplies by 2^(16-k) down to 2^-149 at step 165, then 0
check "(b) pytorch: steps 0, 16, 17, 165, 166" \
    "$(tail -n +2 "$TMP/b-pytorch/steps.csv" | sed -n '1p;17p;18p;166p;167p' | cut -d, -f4 | tr '\n' ' ')" \
    "65536 1 0.5 $(g9 2^-149) 0 "
# the policies with no floor say so in run.json, DeepSpeed's its error
CHECKS=$((CHECKS + 2))
grep -q '"scaler_floor": "none: ' "$TMP/b-pytorch/run.json" || fail "(b) pytorch: scaler_floor"
grep -q '"scaler_floor": "1: .*raise_error_at_min_scale' "$TMP/b-deepspeed/run.json" ||
    fail "(b) deepspeed: scaler_floor"
# --diverge-after 0 turns the floor rule off: the run goes the whole --steps
run "$A" train "${SN[@]}" --loss-scale mindspore-amp --steps 40 --diverge-after 0 \
    --fault overflow-grads@all --out "$TMP/b-off"
expect_status 0
check "(b) --diverge-after 0: rows" "$(($(wc -l <"$TMP/b-off/steps.csv") - 1))" 40

# ---- (c) a scale that would grow past fp32's maximum ----
# clean steps (zero-grads) with window 1 and growth 2 from 2^126: step 0 multiplies by 2^126
# and grows to 2^127; step 1's growth gives 2^128 = inf in fp32
S126=85070591730234615865843651857942052864
S127=170141183460469231731687303715884105728
for p in pytorch mindspore-amp; do
    run "$A" train "${SN[@]}" --loss-scale $p --init-scale $S126 --scale-window 1 \
        --growth-factor 2 --steps 4 --fault zero-grads@all --out "$TMP/c-$p"
    expect_status 0
    check "(c) $p: refused, kept" "$(col "$TMP/c-$p" 4)" "$(g9 2^126) $(rep "$(g9 2^127)" 3)"
    CHECKS=$((CHECKS + 1))
    grep -q '"scaler_nonfinite_growth": "refused: ' "$TMP/c-$p/run.json" ||
        fail "(c) $p: run.json does not say the growth is refused"
done
# apex: capped (--max-scale 2^127 here; its own cap 2^24 holds the same way)
run "$A" train "${SN[@]}" --loss-scale apex --init-scale $S126 --max-scale $S127 --scale-window 1 \
    --steps 4 --fault zero-grads@all --out "$TMP/c-apex"
expect_status 0
check "(c) apex: capped" "$(col "$TMP/c-apex" 4)" "$(g9 2^126) $(rep "$(g9 2^127)" 3)"
CHECKS=$((CHECKS + 1))
grep -q '"scaler_nonfinite_growth": "capped: ' "$TMP/c-apex/run.json" || fail "(c) apex: record"
run "$A" train "${SN[@]}" --loss-scale apex --init-scale 16777216 --scale-window 1 --steps 3 \
    --fault zero-grads@all --out "$TMP/c-apex24"
expect_status 0
check "(c) apex: its cap 2^24" "$(col "$TMP/c-apex24" 4)" "16777216 16777216 16777216 "
# the growth is taken: the run stops after step 1, which multiplied by 2^127; inf is never used
declare -A who_c=([paddle]="Paddle's dygraph GradScaler" [megatron]="Megatron's DynamicGradScaler"
    [keras]="Keras 3's LossScaleOptimizer")
for p in paddle megatron keras; do
    run "$A" train "${SN[@]}" --loss-scale $p --init-scale $S126 --scale-window 1 --growth-factor 2 \
        --steps 4 --fault zero-grads@all --out "$TMP/c-$p"
    expect_status 3
    expect_err_has "at step 1 the loss scale $(g6 2^127) grew past fp32's maximum (to inf)"
    expect_err_has "${who_c[$p]}"
    check "(c) $p: scales used" "$(col "$TMP/c-$p" 4)" "$(g9 2^126) $(g9 2^127) "
    CHECKS=$((CHECKS + 3))
    grep -q '"end_reason": "diverged: at step 1 ' "$TMP/c-$p/run.json" || fail "(c) $p: end_reason"
    grep -q '"scaler_nonfinite_growth": "taken: ' "$TMP/c-$p/run.json" || fail "(c) $p: note"
    grep -qi 'inf' <(cut -d, -f4 "$TMP/c-$p/steps.csv") && fail "(c) $p: an inf scale in steps.csv"
done
# a Python float takes it and goes on: 2^128 and 2^129 are inf in fp32, and these clean
# (zero-grads) steps grow it further; an overflow would halve it back (cli_scalers.sh)
for p in mindspore-manager deepspeed; do
    run "$A" train "${SN[@]}" --loss-scale $p --init-scale $S126 --scale-window 1 --growth-factor 2 \
        --steps 4 --fault zero-grads@all --out "$TMP/c-$p"
    expect_status 0
    check "(c) $p: scales used" "$(col "$TMP/c-$p" 4)" "$(g9 2^126) $(g9 2^127) inf inf "
    CHECKS=$((CHECKS + 1))
    grep -q '"scaler_nonfinite_growth": "taken: the scale is a Python float' "$TMP/c-$p/run.json" ||
        fail "(c) $p: note"
done
# the same policy refusing it (--refuse-nonfinite-growth on, as the static-graph Paddle op does)
run "$A" train "${SN[@]}" --loss-scale paddle --refuse-nonfinite-growth on --init-scale $S126 \
    --scale-window 1 --steps 4 --fault zero-grads@all --out "$TMP/c-paddle-refuse"
expect_status 0
check "(c) paddle refusing" "$(col "$TMP/c-paddle-refuse" 4)" "$(g9 2^126) $(rep "$(g9 2^127)" 3)"

# ---- a resumed run keeps its faults (run.json's options) ----
run "$A" train "${SN[@]}" --loss-scale pytorch --steps 4 --fault nonfinite-loss@6+overflow-grads@1 \
    --out "$TMP/r"
expect_status 0
CHECKS=$((CHECKS + 1))
grep -q '"fault": "nonfinite-loss@6+overflow-grads@1"' "$TMP/r/run.json" || fail "run.json fault"
run "$A" train --resume "$TMP/r" --steps 8
expect_status 0
check "resume: skipped" "$(col "$TMP/r" 6)" "0 1 0 0 0 0 1 0 "
check "resume: NaN at step 6 only" "$(col "$TMP/r" 3 | cut -d' ' -f7)" nan

# ---- the syntax: rejected with exit 2 and one line, nothing trained ----
bad() {
    local want=$1
    shift
    run "$A" train "${SN[@]}" --steps 2 --fault "$@" --out "$TMP/bad"
    expect_status 2
    expect_err_has "$want"
    CHECKS=$((CHECKS + 1))
    [[ ! -e $TMP/bad/steps.csv ]] || fail "a refused --fault left a record"
}
bad "unknown kind 'nan-grads'" 'nan-grads@1'
bad "is not KIND@STEPS" 'nonfinite-loss'
bad "'' is not a step N" 'nonfinite-loss@'
bad "'5-3' is not a step N" 'overflow-grads@5-3'
bad "'x' is not a step N" 'overflow-grads@1,x'
bad "'-2' is not a step N" 'overflow-grads@-2'
bad "zero-grads@1,: '' is not a step N" 'zero-grads@1,' 
bad "more than 4 clauses" 'zero-grads@1+zero-grads@2+zero-grads@3+zero-grads@4+zero-grads@5'
bad "--fault: empty SPEC" ''
bad "not a step N" "overflow-grads@$(seq -s, 1 17)"

finish
