#!/usr/bin/env bash
# cli_bench_train.sh: `ampscope bench train --backend cpu --quick`: a CSV row
# per mode and dtype with a positive time per step, O0 the baseline (ratio
# 1), a pass/miss against issue 4's target on the O2 rows; the table; the
# other nets (resnet, transformer, deepmlp: issue 16); --clock; bad options
# exit 2.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
A=$AMPSCOPE

run "$A" bench train --backend cpu --quick --csv
expect_status 0
header=backend,device,net,mode,dtype,loss_scale,batch,steps,seconds_per_step,samples_per_second,baseline,ratio,target,status,skipped,final_loss
[[ $(head -n 1 <<<"$OUT") == "$header" ]] || fail "CSV header"
# backend,device,net,mode,dtype,loss_scale,batch,steps: the device name is
# quoted and may hold commas, so the fields are counted from the end
rows=$(tail -n +2 <<<"$OUT" | awk -F, '{ n = NF; print $(n-13) "," $(n-12) "," $(n-11) "," $(n-10) "," $(n-9) "," $(n-8) }')
want='mlp,O0,fp32,none,64,10
mlp,O1,fp16,pytorch,64,10
mlp,O1,bf16,none,64,10
mlp,O2,fp16,pytorch,64,10
mlp,O2,bf16,none,64,10
mlp,O3,fp16,pytorch,64,10
mlp,O3,bf16,none,64,10'
CHECKS=$((CHECKS + 1))
[[ $rows == "$want" ]] || fail "rows: $rows"
tail -n +2 <<<"$OUT" | awk -F, '
    { n = NF; s = $(n-7); r = $(n-6); base = $(n-5); ratio = $(n-4); target = $(n-3); status = $(n-2)
      loss = $n; mode = $(n-12)
      if (!(s > 0) || !(r > 0)) { print NR ": time " s ", rate " r; exit 1 }
      if (mode == "O0" && (base != "" || ratio != "1.0000")) { print "O0 baseline " base " " ratio; exit 1 }
      if (mode != "O0" && (base != "O0" || !(ratio > 0))) { print NR ": ratio " ratio; exit 1 }
      want_target = mode == "O2" ? "1.50" : ""
      if (target != want_target) { print NR ": target " target; exit 1 }
      if (mode == "O2" && status != "pass" && status != "miss") { print NR ": status " status; exit 1 }
      if (mode != "O2" && status != "") { print NR ": status " status; exit 1 }
      if (!(loss > 0 && loss < 10)) { print NR ": loss " loss; exit 1 } }' >"$TMP/check" ||
    fail "CSV values: $(cat "$TMP/check")"
[[ $(tail -n +2 <<<"$OUT" | cut -d, -f1 | sort -u) == cpu ]] || fail "backend column"

# the table, another net, --steps
run "$A" bench train --backend cpu --quick --net lenet5 --steps 2
expect_status 0
expect_out_has 'ampscope bench train: lenet5 on cpu'
expect_out_has '2 steps per mode'
[[ $(grep -cE '^O[0-3] +(fp32|fp16|bf16) ' <<<"$OUT") == 7 ]] || fail "table rows"
grep -qE '^O2 +fp16 .*<=1.50 +(pass|miss)' <<<"$OUT" || fail "no O2 target in the table"
run "$A" bench train --backend cpu --quick --csv --net simplenet --width 32 --depth 2 --batch 8 --steps 3
expect_status 0
[[ $(tail -n +2 <<<"$OUT" | grep -c ',simplenet,O[0-3],.*,8,3,') == 7 ]] || fail "simplenet rows"

# the issue-16 nets, small: resnet on Fashion-MNIST, the transformer on the
# fortunes text with its sizes, deepmlp; --clock cpu says so in the header
run "$A" bench train --backend cpu --quick --csv --net resnet --width 4 --batch 4 --steps 2
expect_status 0
[[ $(tail -n +2 <<<"$OUT" | grep -c ',resnet,O[0-3],.*,4,2,') == 7 ]] || fail "resnet rows"
if [[ -r /usr/share/games/fortunes/cookie ]]; then
    run "$A" bench train --backend cpu --quick --csv --net transformer --width 16 --depth 1 \
        --heads 2 --context 8 --batch 4 --steps 2
    expect_status 0
    [[ $(tail -n +2 <<<"$OUT" | grep -c ',transformer,O[0-3],.*,4,2,') == 7 ]] || fail "transformer rows"
    # the loss of 98 equally likely characters is ln 98 = 4.585 at the start
    tail -n +2 <<<"$OUT" | awk -F, '{ if (!($NF > 3 && $NF < 5)) exit 1 }' ||
        fail "transformer losses: $OUT"
fi
run "$A" bench train --backend cpu --quick --net deepmlp --width 16 --depth 4 --batch 8 --steps 2 --clock cpu
expect_status 0
expect_out_has 'ampscope bench train: deepmlp on cpu'
expect_out_has 'cpu time'
[[ $(grep -cE '^O[0-3] +(fp32|fp16|bf16) ' <<<"$OUT") == 7 ]] || fail "deepmlp table rows"

# --tf32 and --log add their rows: O0 tf32 against O0, O2+log against O2
# fp16 (no target on the cpu: issue 7's logging target is for the GPU)
run "$A" bench train --backend cpu --quick --csv --tf32 --log --steps 2
expect_status 0
rows=$(tail -n +2 <<<"$OUT" | awk -F, '{ n = NF; print $(n-12) "," $(n-11) "," $(n-5) "," $(n-3) }')
want='O0,fp32,,
O0,tf32,O0,
O1,fp16,O0,
O1,bf16,O0,
O2,fp16,O0,1.50
O2,bf16,O0,1.50
O3,fp16,O0,
O3,bf16,O0,
O2+log,fp16,O2,'
CHECKS=$((CHECKS + 1))
[[ $rows == "$want" ]] || fail "--tf32 --log rows: $rows"
run "$A" bench train --backend cpu --quick --tf32 --log --steps 2
expect_status 0
grep -qE '^O0 +tf32 +none .* O0 ' <<<"$OUT" || fail "no O0 tf32 row in the table"
grep -qE '^O2\+log +fp16 +pytorch .* O2 ' <<<"$OUT" || fail "no O2+log row in the table"

run "$A" bench --help
expect_status 0
expect_out_has 'train      training steps of each precision mode'
run "$A" help bench train
expect_status 0
expect_out_has 'usage: ampscope bench train'

# ---- bad options: exit 2, one line ----
bad() {
    local want=$1
    shift
    run "$A" bench train "$@"
    expect_status 2
    expect_err_has "$want"
    [[ $(printf '%s\n' "$ERR" | wc -l) == 1 && $ERR == 'ampscope bench train: '* ]] || fail "not one line"
    [[ -z $OUT ]] || fail "a refused run printed rows"
}
bad '--steps wants an integer in [1, 1000000]' --steps 0
bad '--batch wants an integer in [1, 1048576]' --batch x
bad '--width wants an integer in [1, 65536]' --net simplenet --width 0
bad "unknown net 'vgg'" --net vgg
bad 'do not apply to mlp' --net mlp --depth 2
bad "unknown backend 'nope'" --backend nope
bad "unknown option '--frobnicate'" --frobnicate 1
bad "unexpected argument 'extra'" extra
bad 'option --steps needs a value' --steps
bad '--heads wants an integer in [1, 64]' --net transformer --heads 0
bad '--context wants an integer in [2, 1024]' --net transformer --context 1
bad "--clock wants wall or cpu, got 'gpu'" --clock gpu
mkdir -p "$TMP/empty"
bad 'install dataset-fashion-mnist or give --data DIR' --data "$TMP/empty" --backend cpu
bad '--batch 1048576 is larger than the 60000 training samples' --batch 1048576 --backend cpu
bad 'install fortunes or give --data DIR' --net transformer --data "$TMP/empty" --backend cpu

finish
