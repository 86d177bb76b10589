#!/usr/bin/env bash
# cli_resume_damage.sh: `ampscope train --resume` on a damaged record.  A run
# killed after step 23 whose last checkpoint is step 20 (its logs hold rows
# past the checkpoint, as a kill leaves them) resumes to the uninterrupted
# run's record; each kind of damage to a copy of it (logs cut short or
# edited, run.json edited, the checkpoint's metadata absurd, its tensor
# bytes flipped, the file cut short, a format-1 file) is refused with exit
# 2 and one line naming the file, and the folder is left exactly as it was.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
export LC_ALL=C
A=$AMPSCOPE

# the deepspeed rule with a floor, a cap, hysteresis 2 and overflows at steps 3, 4, 5 and 9:
# every counter of the scaler moves; 640 samples / 64 = 10 steps an epoch
opts=(--net mlp --mode O2 --dtype fp16 --loss-scale dynamic --scale-rule deepspeed
    --init-scale 65536 --min-scale 1 --max-scale 16777216 --scale-window 4 --hysteresis 2
    --fault overflow-grads@3,4,5,9 --subset 640 --stats-every 5 --hist-every 10 --backend cpu
    --no-progress)
run "$A" train "${opts[@]}" --steps 24 --out "$TMP/full"
expect_status 0
run "$A" train "${opts[@]}" --steps 20 --out "$TMP/c20"
expect_status 0
# the killed run: the 24-step run's logs and run.json, the checkpoint of step 20
cp -r "$TMP/full" "$TMP/base"
cp "$TMP/c20/checkpoint.safetensors" "$TMP/base/checkpoint.safetensors"

# ---- the undamaged record resumes, cut back to step 20, into the uninterrupted run ----
cp -r "$TMP/base" "$TMP/ok"
run "$A" train --resume "$TMP/ok"
expect_status 0
for f in steps.csv tensors.csv updates.csv hist.csv eval.csv trace.csv trace_hist.csv \
    checkpoint.safetensors; do
    CHECKS=$((CHECKS + 1))
    cmp -s "$TMP/full/$f" "$TMP/ok/$f" || fail "resumed: $f differs from the uninterrupted run"
done

# ---- tools ----
# every file's name and bytes (a lock file the run may leave aside)
fingerprint() {
    (cd "$1" && find . -type f ! -name '*lock*' -print0 | sort -z | xargs -0 sha256sum)
}

# le64 N: N as 8 little-endian bytes
le64() {
    local i
    for i in 0 1 2 3 4 5 6 7; do
        # shellcheck disable=SC2059
        printf "\\x$(printf %02x $((($1 >> (8 * i)) & 255)))"
    done
}

# st_meta FILE SED: the JSON header of safetensors FILE through sed, its data kept
st_meta() {
    local f=$1 n hdr
    n=$(od -An -t u8 -N 8 "$f" | tr -d ' ')
    hdr=$(head -c $((8 + n)) "$f" | tail -c "$n" | sed -e "$2")
    while ((${#hdr} % 8)); do hdr+=' '; done
    { le64 ${#hdr}; printf '%s' "$hdr"; tail -c +$((9 + n)) "$f"; } >"$f.new"
    mv "$f.new" "$f"
}
# meta KEY VALUE: the checkpoint's metadata KEY set to VALUE
meta() { st_meta "$D/checkpoint.safetensors" "s/\"$1\":\"[^\"]*\"/\"$1\":\"$2\"/"; }
# flip FILE OFFSET: the byte at OFFSET inverted
flip() {
    local b
    b=$(od -An -t u1 -j "$2" -N 1 "$1" | tr -d ' ')
    # shellcheck disable=SC2059
    printf "\\x$(printf %02x $((b ^ 255)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
# the line of steps.csv (and trace.csv) holding step N is line N + 2
row() { echo $(($1 + 2)); }

DAMAGES=0
# the record damage copies, and what its resume adds
BASE=$TMP/base
RESUME_EXTRA=()
# damage NAME FILE-WORD CMD...: a fresh copy of the killed run in $D, CMD (where @D stands
# for $D) damages it, the resume is refused with one line naming FILE-WORD, and nothing in
# the folder changes
damage() {
    local name=$1 word=$2 before after
    shift 2
    DAMAGES=$((DAMAGES + 1))
    D=$TMP/d$DAMAGES
    cp -r "$BASE" "$D"
    "${@//@D/$D}"
    before=$(fingerprint "$D")
    run "$A" train --resume "$D" "${RESUME_EXTRA[@]+"${RESUME_EXTRA[@]}"}"
    CHECKS=$((CHECKS + 4))
    [[ $STATUS == 2 ]] || fail "$name: exit status $STATUS, expected 2"
    [[ $(printf '%s\n' "$ERR" | wc -l) == 1 ]] || fail "$name: not one line on stderr"
    [[ $ERR == *"$word"* ]] || fail "$name: the message does not name $word"
    after=$(fingerprint "$D")
    [[ $before == "$after" ]] || fail "$name: the folder changed"
    [[ -z ${SHOW_DAMAGE-} ]] || printf "%-50s %s\n" "$name" "$ERR" >&2
    rm -rf "$D"
}
expect_last_err_has() {
    CHECKS=$((CHECKS + 1))
    [[ $ERR == *"$1"* ]] || fail "expected the message to say: $1"
}

# ---- steps.csv ----
cut_mid() { # the file cut in the middle of line $2
    local bytes
    bytes=$(head -n $(($2 - 1)) "$1" | wc -c)
    truncate -s $((bytes + 5)) "$1"
}
damage "steps.csv cut mid-line at step 10" steps.csv cut_mid @D/steps.csv "$(row 10)"
expect_last_err_has "its last row is step 9, but the checkpoint keeps the rows through step 19"
damage "steps.csv cut mid-line at step 19" steps.csv cut_mid @D/steps.csv "$(row 19)"
damage "steps.csv cut to 16 rows" steps.csv sed -i "$(row 16),\$d" @D/steps.csv
damage "steps.csv cut to its header" steps.csv sed -i '2,$d' @D/steps.csv
expect_last_err_has "no rows"
damage "steps.csv empty" steps.csv truncate -s 0 @D/steps.csv
damage "steps.csv cut inside its header" steps.csv truncate -s 10 @D/steps.csv
damage "steps.csv removed" steps.csv rm @D/steps.csv
expect_last_err_has "missing"
damage "steps.csv: a gap (step 7 deleted)" steps.csv sed -i "$(row 7)d" @D/steps.csv
expect_last_err_has "step 8 after step 6: the rows of step 7 are missing"
damage "steps.csv: step 7 twice" steps.csv sed -i "$(row 7)p" @D/steps.csv
expect_last_err_has "step 7 appears twice"
damage "steps.csv: step 9 edited to 3" steps.csv sed -i "$(row 9)s/^9,/3,/" @D/steps.csv
expect_last_err_has "step 3 after step 8: the steps go back"
damage "steps.csv: steps 7 and 8 swapped" steps.csv \
    sed -i -e "$(row 7)h;$(row 7)d;$(row 8)G" @D/steps.csv
damage "steps.csv: step 5 edited to 50" steps.csv sed -i "$(row 5)s/^5,/50,/" @D/steps.csv
damage "steps.csv: step 0 edited to 1" steps.csv sed -i "$(row 0)s/^0,/1,/" @D/steps.csv
expect_last_err_has "the first row is step 1, expected 0"
damage "steps.csv: step 12 edited to -12" steps.csv sed -i "$(row 12)s/^12,/-12,/" @D/steps.csv
damage "steps.csv: a step that is not an integer" steps.csv \
    sed -i "$(row 6)s/^6,/6.0,/" @D/steps.csv
damage "steps.csv: header changed" steps.csv sed -i '1s/loss_scale/scale/' @D/steps.csv
expect_last_err_has "header is"
damage "steps.csv: header removed" steps.csv sed -i '1d' @D/steps.csv
damage "steps.csv: a field added" steps.csv sed -i "$(row 4)s/\$/,1/" @D/steps.csv
damage "steps.csv: a NUL byte" steps.csv sed -i "$(row 4)s/,/\\x00/" @D/steps.csv

# ---- the other logs ----
damage "trace.csv cut to 10 rows" trace.csv sed -i "$(row 10),\$d" @D/trace.csv
damage "trace.csv: step 11 twice" trace.csv sed -i "$(row 11)p" @D/trace.csv
damage "trace_hist.csv removed" trace_hist.csv rm @D/trace_hist.csv
damage "trace_hist.csv: the rows of step 4 deleted" trace_hist.csv sed -i '/^4,/d' @D/trace_hist.csv
damage "tensors.csv: the rows of step 15 deleted" tensors.csv sed -i '/^15,/d' @D/tensors.csv
expect_last_err_has "its last row is step 10, but the checkpoint keeps the rows through step 15"
damage "tensors.csv: the rows of step 5 deleted" tensors.csv sed -i '/^5,/d' @D/tensors.csv
damage "updates.csv: header changed" updates.csv sed -i '1s/lost/kept/' @D/updates.csv
damage "updates.csv: a row's step edited to 7" updates.csv \
    sed -i '/^10,/{s/^10,/7,/;}' @D/updates.csv
damage "hist.csv: the rows of step 10 moved to step 20" hist.csv sed -i 's/^10,/20,/' @D/hist.csv
damage "eval.csv: the evaluation after step 20 deleted" eval.csv sed -i '/,20,/d' @D/eval.csv
damage "eval.csv: step 10 edited to 11" eval.csv sed -i 's/^0,10,/0,11,/' @D/eval.csv

# ---- run.json ----
damage "run.json: seed removed" run.json sed -i '/"seed":/d' @D/run.json
expect_last_err_has "option 'seed' is missing"
# "options" edited alone: not what its "given" list makes (train_describe again)
damage "run.json: lr edited" run.json sed -i 's/"lr": [0-9.e-]*/"lr": 0.5/' @D/run.json
expect_last_err_has "option 'lr' is 0.5, but its options as given make it 0.00999999978"
damage "run.json: seed edited" run.json sed -i 's/"seed": 1/"seed": 7/' @D/run.json
damage "run.json: steps edited" run.json sed -i 's/"steps": "24"/"steps": "10"/' @D/run.json
damage "run.json: subset edited" run.json sed -i 's/"subset": "640"/"subset": "1280"/' @D/run.json
damage "run.json: stats-every edited" run.json \
    sed -i 's/"stats-every": "5"/"stats-every": "3"/' @D/run.json
damage "run.json: an option added" run.json sed -i 's/"seed": 1/"seed": 1, "width": 7/' @D/run.json
expect_last_err_has "option 'width' is not one its options as given make"
# "given" edited alone: the options it makes are not the ones recorded
damage "run.json: given steps edited" run.json sed -i '/"--steps",/{n;s/"24"/"10"/}' @D/run.json
expect_last_err_has "option 'steps' is 24, but its options as given make it 10"
# both edited alike: the record is consistent, the checkpoint and logs are not of that run
damage "run.json: lr given and recorded" checkpoint.safetensors \
    sed -i -e 's/"given": \[/"given": ["--lr", "0.5",/' -e 's/"lr": [0-9.e-]*/"lr": 0.5/' \
    @D/run.json
expect_last_err_has "written by a run with lr 0.00999999978, but run.json says 0.5"
damage "run.json: seed given and recorded" checkpoint.safetensors \
    sed -i -e 's/"given": \[/"given": ["--seed", "7",/' -e 's/"seed": 1/"seed": 7/' @D/run.json
damage "run.json: steps cut to 10 in both" checkpoint.safetensors \
    sed -i -e '/"--steps",/{n;s/"24"/"10"/}' -e 's/"steps": "24"/"steps": "10"/' @D/run.json
expect_last_err_has "step is 20, more than the run's steps (10)"
damage "run.json: subset edited in both" checkpoint.safetensors \
    sed -i -e '/"--subset",/{n;s/"640"/"1280"/}' -e 's/"subset": "640"/"subset": "1280"/' \
    @D/run.json
damage "run.json: stats-every edited in both" tensors.csv \
    sed -i -e '/"--stats-every",/{n;s/"5"/"3"/}' -e 's/"stats-every": "5"/"stats-every": "3"/' \
    @D/run.json
damage "run.json: start_time removed" run.json sed -i '/"start_time":/d' @D/run.json
damage "run.json: lr not finite" run.json sed -i 's/"lr": [0-9.e-]*/"lr": 1e999/' @D/run.json
damage "run.json: lr NaN" run.json sed -i 's/"lr": [0-9.e-]*/"lr": NaN/' @D/run.json
damage "run.json: cut in half" run.json truncate -s 200 @D/run.json
damage "run.json: removed" run.json rm @D/run.json

# ---- the checkpoint's metadata ----
m() { # m KEY VALUE: a damage to one metadata value
    local key=$1 value=$2
    shift 2
    damage "checkpoint: $key = $value" checkpoint.safetensors meta "$key" "$value"
}
m step 1000000000
expect_last_err_has "checkpoint.safetensors: step is 1000000000, more than the run's steps (24)"
m step -1
m step 21
expect_last_err_has "epoch 2, batch 0 do not make step 21"
m step 99999999999999999999
m step x
m epoch 5
m batch 11
m batch -3
m skips -1
m skips 5
m scaler.overflows -2
m scaler.overflows 21
m scaler.skipped 3
m scaler.steps 19
m scaler.growths 30
m scaler.backoffs -1
m scaler.overflows_in_a_row 5
m optimizer.step 17
m optimizer.beta1_pow nan
m optimizer.beta2_pow 0x1p+1
m sr_index 12345
m scaler.scale nan
expect_last_err_has "the loss scale is nan"
m scaler.scale inf
m scaler.scale -inf
m scaler.scale 0x0p+0
m scaler.scale -0x1p+15
m scaler.scale 0x1p-1
expect_last_err_has "below --min-scale 1"
m scaler.scale 0x1p+25
expect_last_err_has "above --max-scale 1.67772e+07"
m scaler.inv_scale 0x1p-14
m scale_used 0x1p+16
m scaler.skip 0x1p-1
m scaler.hysteresis_left 0
m scaler.hysteresis_left 3
m scaler.good -1
m scaler.good 21
m run.net lenet5
m run.lr 0x1p-1
m run.seed 2
m run.batch 32
m format 3
m data_crc32 zz
# the framework's own number: the dynamic policy's fp32 arithmetic keeps it equal to the
# scale (2^15 at step 20)
m scaler.master_scale nan
expect_last_err_has "scaler.master_scale is nan: not a finite scale >= 0"
m scaler.master_scale inf
m scaler.master_scale -0x1p+15
m scaler.master_scale 0x1p+14
expect_last_err_has "scaler.master_scale 16384 differs from the loss scale 32768 (the fp32"
m scaler.master_scale 0x1.0000000000001p+15
expect_last_err_has "scaler.master_scale 32768.000000000007 differs"
m scaler.master_scale x
expect_last_err_has "metadata 'scaler.master_scale' is not a number"
damage "checkpoint: scaler.master_scale removed" checkpoint.safetensors \
    st_meta @D/checkpoint.safetensors 's/"scaler.master_scale":"[^"]*",//'
expect_last_err_has "metadata 'scaler.master_scale' is missing"
damage "checkpoint: a metadata key removed" checkpoint.safetensors \
    st_meta @D/checkpoint.safetensors 's/"scaler.good":"[^"]*",//'
expect_last_err_has "metadata 'scaler.good' is missing"
damage "checkpoint: data_crc32 removed" checkpoint.safetensors \
    st_meta @D/checkpoint.safetensors 's/"data_crc32":"[^"]*",//'
# a format-1 checkpoint, as ampscope wrote them before the checksum
damage "checkpoint: format 1" checkpoint.safetensors \
    st_meta @D/checkpoint.safetensors 's/"format":"2","data_crc32":"[^"]*"/"format":"1"/'
expect_last_err_has "checkpoint format 1 carries no checksum"

# ---- the checkpoint's bytes ----
size=$(stat -c %s "$TMP/base/checkpoint.safetensors")
hdr=$(od -An -t u8 -N 8 "$TMP/base/checkpoint.safetensors" | tr -d ' ')
damage "checkpoint: the last byte flipped" checkpoint.safetensors \
    flip @D/checkpoint.safetensors $((size - 1))
expect_last_err_has "CRC-32"
damage "checkpoint: the first data byte flipped" checkpoint.safetensors \
    flip @D/checkpoint.safetensors $((8 + hdr))
damage "checkpoint: a middle byte flipped" checkpoint.safetensors \
    flip @D/checkpoint.safetensors $((size / 2))
damage "checkpoint: cut by 1000 bytes" checkpoint.safetensors \
    truncate -s $((size - 1000)) @D/checkpoint.safetensors
damage "checkpoint: cut inside its header" checkpoint.safetensors \
    truncate -s 100 @D/checkpoint.safetensors
damage "checkpoint: cut to 4 bytes" checkpoint.safetensors truncate -s 4 @D/checkpoint.safetensors
damage "checkpoint: empty" checkpoint.safetensors truncate -s 0 @D/checkpoint.safetensors

# ---- a double scale (DeepSpeed's Python float) past fp32's maximum ----
# deepspeed-zero from 2^126 with window 1 and two clean steps: 2^127, then 2^128, which is inf
# in fp32; the checkpoint of step 2 holds scaler.master_scale 2^128, scaler.scale inf and
# scaler.inv_scale (float)(1 / 2^128) = 2^-128.  It resumes; each damage is refused.
S126=85070591730234615865843651857942052864
dopts=(--net simplenet --width 64 --batch 32 --samples 256 --mode O2 --dtype fp16 --backend cpu
    --no-progress --stats-every 0 --hist-every 0 --trace-every 0 --loss-scale deepspeed-zero
    --init-scale "$S126" --scale-window 1 --fault zero-grads@0,1)
run "$A" train "${dopts[@]}" --steps 2 --out "$TMP/dbase"
expect_status 0
CHECKS=$((CHECKS + 2))
grep -q '"scaler.master_scale":"0x1p+128"' "$TMP/dbase/checkpoint.safetensors" ||
    fail "double: the checkpoint's master_scale is not 2^128"
grep -q '"scaler.scale":"inf"' "$TMP/dbase/checkpoint.safetensors" ||
    fail "double: the checkpoint's scale is not inf"
cp -r "$TMP/dbase" "$TMP/dok"
run "$A" train --resume "$TMP/dok" --steps 3
expect_status 0
BASE=$TMP/dbase
RESUME_EXTRA=(--steps 3)
m scaler.master_scale inf
expect_last_err_has "scaler.master_scale is inf: not a finite scale >= 0"
m scaler.master_scale nan
m scaler.master_scale -0x1p+128
m scaler.master_scale 0x1p+126
expect_last_err_has "the loss scale inf is not scaler.master_scale 8.5070591730234616e+37 in fp32"
m scaler.scale 0x1p+127
m scaler.scale nan
expect_last_err_has "the loss scale is nan: not a scale >= 0"
m scaler.inv_scale 0x1p-127
expect_last_err_has "scaler.inv_scale 5.87747e-39 is not 1 / scaler.master_scale 3.4028236692093846e+38 in fp32"
m scaler.inv_scale 0x0p+0
# just below the floor 1 in double, 1 in fp32: the scale passes, the double does not
damage "checkpoint: master_scale below the floor" checkpoint.safetensors \
    eval 'meta scaler.master_scale 0x1.fffffffffffffp-1 && meta scaler.scale 0x1p+0 &&
        meta scaler.inv_scale 0x1p+0 && meta scale_used 0x1p+0'
expect_last_err_has "scaler.master_scale 0.99999999999999989 is below --min-scale 1"
damage "checkpoint: scaler.master_scale removed (double)" checkpoint.safetensors \
    st_meta @D/checkpoint.safetensors 's/"scaler.master_scale":"[^"]*",//'

echo "cli_resume_damage.sh: $DAMAGES damages tried"
finish
