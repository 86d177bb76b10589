#!/usr/bin/env bash
# cli_inspect.sh: `ampscope inspect` on safetensors files written here byte by byte (printf,
# not ampscope's writer), with values chosen at the edges of fp16 and bf16 so that every
# count is worked out by hand: the table, every CSV column at several scales and both
# targets, F16/BF16/F64 tensors (F64 values that rounding to fp32 first would misclassify),
# the histogram, --plot (PNG; never over an input; no gnuplot: exit 1), and each bad input
# (exit 2, one line).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
A=$AMPSCOPE

# ---- the generator: little-endian bytes of bit patterns, and a file from a header ----
le() { # le BYTES HEX: the value HEX as BYTES little-endian bytes, as printf escapes
    local n=$1 v=$((16#${2#0x})) i s=""
    for ((i = 0; i < n; i++)); do
        s+=$(printf '\\x%02x' $(((v >> (8 * i)) & 255)))
    done
    printf '%s' "$s"
}
le16() { for v; do le 2 "$v"; done; }
le32() { for v; do le 4 "$v"; done; }
le64() { for v; do le 8 "$v"; done; }
# st FILE JSON DATA: the 8-byte header length, the JSON padded with spaces to a multiple of 8,
# then the data (printf escapes)
st() {
    local json=$2
    while (((${#json} % 8) != 0)); do json+=" "; done
    printf "$(le 8 "$(printf '%x' ${#json})")%s$3" "$json" >"$1"
}

# edges (F32, 3x4), at fp16's edges:
#   0, -0; 2^-25 (a tie: flushes to the even 0); 2^-25 (1 + 2^-23) (the subnormal 2^-24);
#   2^-14 - 2^-25 (a tie: rounds up to the normal 2^-14); the float below it (subnormal);
#   65520 - 2^-8 (rounds to 65504); 65520 (a tie: overflows); inf; NaN; 1; -3
EDGES=$(le32 0x00000000 0x80000000 0x33000000 0x33000001 0x387FE000 0x387FDFFF \
    0x477FEFFF 0x477FF000 0x7F800000 0x7FC00000 0x3F800000 0xC0400000)
# bf16_edges (F32, 6), at bf16's: 2^-134 (a tie: flushes); the float above (the subnormal
# 2^-133); 2^-126 - 2^-134 (a tie: rounds up to the normal 2^-126); the float below it
# (subnormal); 2^128 - 2^119 (a tie: overflows); the float below it (the largest bf16)
BEDGES=$(le32 0x00008000 0x00008001 0x007F8000 0x007F7FFF 0x7F7F8000 0x7F7F7FFF)
st "$TMP/e.st" '{"__metadata__":{"format":"pt"},"edges":{"dtype":"F32","shape":[3,4],"data_offsets":[0,48]},"bf16_edges":{"dtype":"F32","shape":[6],"data_offsets":[48,72]}}' "$EDGES$BEDGES"

# h (F16, 5): 2^-24 (the least subnormal), 1, 65504 (the largest), -inf, 0
# b (BF16, 2x2): 2^-133 (the least subnormal), 1, 2^128 - 2^120 (the largest), NaN
st "$TMP/hb2.st" '{"h":{"dtype":"F16","shape":[5],"data_offsets":[0,10]},"b":{"dtype":"BF16","shape":[2,2],"data_offsets":[10,18]}}' \
    "$(le16 0x0001 0x3C00 0x7BFF 0xFC00 0x0000 0x0001 0x3F80 0x7F7F 0x7FC0)"

# d (F64, 9): 2^-25 (1 + 2^-40) (subnormal in fp16; rounded to fp32 it would be 2^-25 and
# flush); 2^-25 (flushes); 65520 - 2^-30 (finite in fp16; rounded to fp32 it would be 65520
# and overflow); 2^-1000 and 2^-1074 (flush; binades outside fp32's); 2^1000 (overflows);
# 1; 0; -inf
# tiny (F64, 2): 2^-200, 2^-230: zero as fp32, but at scale 2^100 a normal and a subnormal bf16
st "$TMP/d.st" '{"d":{"dtype":"F64","shape":[9],"data_offsets":[0,72]},"tiny":{"dtype":"F64","shape":[2],"data_offsets":[72,88]}}' \
    "$(le64 0x3E60000000001000 0x3E60000000000000 0x40EFFDFFFFFFFF80 0x0170000000000000 \
        0x0000000000000001 0x7E70000000000000 0x3FF0000000000000 0x0000000000000000 \
        0xFFF0000000000000 0x3370000000000000 0x3190000000000000)"

# an I64 tensor; text; a file cut short
st "$TMP/i.st" '{"ok":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"ids":{"dtype":"I64","shape":[1],"data_offsets":[4,12]}}' \
    "$(le32 0x3F800000)$(le64 7)"
echo 'not a safetensors file' >"$TMP/text.st"
head -c 100 "$TMP/e.st" >"$TMP/cut.st"

HEADER=file,tensor,dtype,shape,target,scale,count,nonzero,nonfinite,flushed,flushed_frac_of_nonzero,subnormal,subnormal_frac_of_nonzero,overflowed,overflow_frac_of_nonzero,zero_frac_of_count,amax

# ---- fp16 at scales 1, 2^10, 2^-10 (hand-worked in the comments above) ----
# scale 1: 12 values, 2 zeros, 2 nonfinite, 8 nonzero: 2^-25 flushes; 2^-25 (1 + 2^-23) and
#   the float below 2^-14 - 2^-25 are subnormal; 65520 overflows; max |x| = 65520.
# scale 1024: 2^-15 and its neighbour are subnormal, nothing flushes, 65520 - 2^-8 and 65520
#   overflow.  scale 2^-10: 2^-35 and its neighbour flush; the two just below 2^-14 become
#   (2^-24 - 2^-35, nearer 2^-24 than 0) the subnormal 2^-24; 65520 / 1024 is normal.
# bf16_edges: in fp16 at every scale, 2^-134 .. 2^-126 flush and both near 2^128 overflow;
#   max |x| = 2^128 - 2^119.
run "$A" inspect "$TMP/e.st" --csv --scales 1,1024,0.0009765625
expect_status 0
expect_err_empty
expect_out "$HEADER
$TMP/e.st,edges,F32,3x4,fp16,1,12,8,2,1,0.125,2,0.25,1,0.125,0.166666667,65520
$TMP/e.st,edges,F32,3x4,fp16,1024,12,8,2,0,0,2,0.25,2,0.25,0.166666667,65520
$TMP/e.st,edges,F32,3x4,fp16,0.0009765625,12,8,2,2,0.25,2,0.25,0,0,0.166666667,65520
$TMP/e.st,bf16_edges,F32,6,fp16,1,6,6,0,4,0.666666667,0,0,2,0.333333333,0,3.39617753e+38
$TMP/e.st,bf16_edges,F32,6,fp16,1024,6,6,0,4,0.666666667,0,0,2,0.333333333,0,3.39617753e+38
$TMP/e.st,bf16_edges,F32,6,fp16,0.0009765625,6,6,0,4,0.666666667,0,0,2,0.333333333,0,3.39617753e+38"

# ---- bf16: edges are all normal; bf16_edges: one flushes, two subnormal, one overflows ----
run "$A" inspect "$TMP/e.st" --csv --dtype bf16
expect_status 0
expect_out "$HEADER
$TMP/e.st,edges,F32,3x4,bf16,1,12,8,2,0,0,0,0,0,0,0.166666667,65520
$TMP/e.st,bf16_edges,F32,6,bf16,1,6,6,0,1,0.166666667,2,0.333333333,1,0.166666667,0,3.39617753e+38"
# --dtype=bf16 and --scale=1 read the same
run "$A" inspect "$TMP/e.st" --csv --dtype=bf16 --scale=1
expect_status 0
expect_out_has "$TMP/e.st,bf16_edges,F32,6,bf16,1,6,6,0,1,0.166666667,2,0.333333333,1,0.166666667,0,3.39617753e+38"

# ---- stored F16 and BF16 ----
# h in fp16: 2^-24 subnormal, 65504 finite; at scale 2, 2^-23 is still subnormal and 131008
#   overflows; at scale 0.5, 2^-25 flushes (a tie).  b in fp16: 2^-133 flushes, the largest
#   bf16 overflows, NaN is nonfinite; max |x| = 2^128 - 2^120.
run "$A" inspect "$TMP/hb2.st" --csv --scales 1,2,0.5
expect_status 0
expect_out "$HEADER
$TMP/hb2.st,h,F16,5,fp16,1,5,3,1,0,0,1,0.333333333,0,0,0.2,65504
$TMP/hb2.st,h,F16,5,fp16,2,5,3,1,0,0,1,0.333333333,1,0.333333333,0.2,65504
$TMP/hb2.st,h,F16,5,fp16,0.5,5,3,1,1,0.333333333,0,0,0,0,0.2,65504
$TMP/hb2.st,b,BF16,2x2,fp16,1,4,3,1,1,0.333333333,0,0,1,0.333333333,0,3.38953139e+38
$TMP/hb2.st,b,BF16,2x2,fp16,2,4,3,1,1,0.333333333,0,0,1,0.333333333,0,3.38953139e+38
$TMP/hb2.st,b,BF16,2x2,fp16,0.5,4,3,1,1,0.333333333,0,0,1,0.333333333,0,3.38953139e+38"
# b in bf16: 2^-133 is subnormal, the largest is finite
run "$A" inspect "$TMP/hb2.st" --csv --dtype bf16
expect_out_has "$TMP/hb2.st,b,BF16,2x2,bf16,1,4,3,1,0,0,1,0.333333333,0,0,0,3.38953139e+38"

# ---- F64, classified exactly ----
# d in fp16 at scale 1: 9 values, 1 zero, 1 nonfinite, 7 nonzero; flushed: 2^-25, 2^-1000,
#   2^-1074; subnormal: 2^-25 (1 + 2^-40); overflowed: 2^1000 only; max |x| = 2^1000.
# tiny in bf16: both flush at scale 1; at scale 2^100, 2^-100 is normal, 2^-130 subnormal.
run "$A" inspect "$TMP/d.st" --csv
expect_status 0
expect_out "$HEADER
$TMP/d.st,d,F64,9,fp16,1,9,7,1,3,0.428571429,1,0.142857143,1,0.142857143,0.111111111,1.07150861e+301
$TMP/d.st,tiny,F64,2,fp16,1,2,2,0,2,1,0,0,0,0,0,6.22301528e-61"
run "$A" inspect "$TMP/d.st" --csv --dtype bf16 --scales 1,1267650600228229401496703205376
expect_status 0
expect_out_has "$TMP/d.st,tiny,F64,2,bf16,1,2,2,0,2,1,0,0,0,0,0,6.22301528e-61
$TMP/d.st,tiny,F64,2,bf16,1.2676506e+30,2,2,0,0,0,1,0.5,0,0,0,6.22301528e-61"

# ---- a scalar, the metadata, a fraction of nothing ----
# scalars (an empty shape); a tensor of zeros has no nonzero value: its fractions of the
# nonzero values are empty fields; an empty tensor (shape [0]) has no fraction at all
st "$TMP/z.st" '{"__metadata__":{"a":"b"},"zero":{"dtype":"F32","shape":[],"data_offsets":[0,4]},"half":{"dtype":"F32","shape":[],"data_offsets":[4,8]},"none":{"dtype":"F32","shape":[0],"data_offsets":[8,8]}}' \
    "$(le32 0x00000000 0x3F000000)"
run "$A" inspect "$TMP/z.st" --csv
expect_status 0
expect_out "$HEADER
$TMP/z.st,zero,F32,,fp16,1,1,0,0,0,,0,,0,,1,0
$TMP/z.st,half,F32,,fp16,1,1,1,0,0,0,0,0,0,0,0,0.5
$TMP/z.st,none,F32,0,fp16,1,0,0,0,0,,0,,0,,,0"

# ---- the histogram, long format (unscaled; bins as hist.csv's) ----
run "$A" inspect "$TMP/d.st" --csv --hist --scale 1024
expect_status 0
expect_out "file,tensor,bin,count
$TMP/d.st,d,zero,1
$TMP/d.st,d,-1074,1
$TMP/d.st,d,-1000,1
$TMP/d.st,d,-25,2
$TMP/d.st,d,0,1
$TMP/d.st,d,15,1
$TMP/d.st,d,1000,1
$TMP/d.st,d,nonfinite,1
$TMP/d.st,tiny,-230,1
$TMP/d.st,tiny,-200,1"
run "$A" inspect "$TMP/e.st" --csv --hist
expect_out "file,tensor,bin,count
$TMP/e.st,edges,zero,2
$TMP/e.st,edges,-25,2
$TMP/e.st,edges,-15,2
$TMP/e.st,edges,0,1
$TMP/e.st,edges,1,1
$TMP/e.st,edges,15,2
$TMP/e.st,edges,nonfinite,2
$TMP/e.st,bf16_edges,-134,2
$TMP/e.st,bf16_edges,-127,2
$TMP/e.st,bf16_edges,127,2"

# ---- the table ----
run "$A" inspect "$TMP/e.st" "$TMP/hb2.st" --scales 1,1024
expect_status 0
expect_out_has "$TMP/e.st: 2 tensors, cast to fp16"
expect_out_has "$TMP/hb2.st: 2 tensors, cast to fp16"
row=$(grep '^edges ' <<<"$OUT" | head -1 | tr -s ' ')
check "table row" "$row" "edges F32 3x4 1 12 16.67 12.5 25 12.5 2 65520"
row=$(grep '^b ' <<<"$OUT" | tail -1 | tr -s ' ')
check "table row at 1024" "$row" "b BF16 2x2 1024 4 0 33.33 0 33.33 1 3.38953e+38"
run "$A" inspect "$TMP/z.st"
row=$(grep '^zero ' <<<"$OUT" | tr -s ' ')
check "table row of zeros" "$row" "zero F32 1 1 100 - - - 0 0"
run "$A" inspect "$TMP/hb2.st" --hist
expect_out_has "$TMP/hb2.st: h (5 values)"
expect_out_has "  -24                   1   20.0000%"

# ---- names that need quoting in CSV ----
st "$TMP/q.st" '{"a,b \"c\"":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}' "$(le32 0x3F800000)"
run "$A" inspect "$TMP/q.st" --csv
expect_out_has "$TMP/q.st,\"a,b \"\"c\"\"\",F32,1,fp16,1,1,1,0,0,0,0,0,0,0,0,1"

# ---- bad input: exit 2, one line naming the problem ----
refused() { # refused MESSAGE ARGS...
    local want=$1
    shift
    run "$A" inspect "$@"
    expect_status 2
    expect_err_has "$want"
    [[ $(printf '%s\n' "$ERR" | wc -l) == 1 ]] || fail "one-line message"
    [[ -z $OUT ]] || fail "printed something on bad input"
}
refused "no FILE given" --csv
refused "$TMP/none.st: no such file" "$TMP/none.st"
refused "$TMP/text.st" "$TMP/text.st"
refused "$TMP/cut.st" "$TMP/cut.st"
refused "$TMP/i.st: tensor 'ids' has dtype I64" "$TMP/e.st" "$TMP/i.st"
refused "unknown option '--nosuch'" --nosuch "$TMP/e.st"
refused "--dtype wants fp16 or bf16, got 'fp32'" "$TMP/e.st" --dtype fp32
refused "--scale 0: a scale must be finite and > 0" "$TMP/e.st" --scale 0
refused "--scale -2: a scale must be finite and > 0" "$TMP/e.st" --scale -2
refused "--scale inf: a scale must be finite and > 0" "$TMP/e.st" --scale inf
refused "--scale nan: a scale must be finite and > 0" "$TMP/e.st" --scale nan
refused "--scale wants a number, got 'x'" "$TMP/e.st" --scale x
refused "--scale 1e39: not representable as fp32" "$TMP/e.st" --scale 1e39
refused "--scale 1e-50: not representable as fp32" "$TMP/e.st" --scale 1e-50
refused "--scale 0.1: not an fp32 value (the record's scale is an fp32; the nearest is 0.100000001)" \
    "$TMP/e.st" --scale 0.1
refused "--scales '1,,2': expected numbers separated by commas" "$TMP/e.st" --scales 1,,2
refused "--scales wants a number, got 'a'" "$TMP/e.st" --scales 1,a
refused "--scales -1: a scale must be finite and > 0" "$TMP/e.st" --scales 1,-1
refused "give --scale or --scales, not both" "$TMP/e.st" --scale 1 --scales 2
refused "option --scale needs a value" "$TMP/e.st" --scale
refused "--force applies to --plot DIR" "$TMP/e.st" --force

# ---- --plot ----
HAVE_GNUPLOT=0
command -v gnuplot >/dev/null && HAVE_GNUPLOT=1
run "$A" inspect "$TMP/e.st" "$TMP/d.st" --csv --plot "$TMP/plot"
if ((HAVE_GNUPLOT)); then
    expect_status 0
    expect_err_has "figures in $TMP/plot/index.html"
    for f in hist_1_edges hist_2_bf16_edges hist_3_d hist_4_tiny hist_all; do
        figure_ok "$TMP/plot" $f
    done
    links_exist "$TMP/plot"
else
    expect_status 1
    expect_err_has 'apt-get install gnuplot-nox'
fi
expect_out_has "$HEADER" # the statistics are printed before the figures are drawn
# the merged histogram is every tensor's bins summed
check "hist_all.csv" "$(grep -c ',all tensors$' "$TMP/plot/hist_all.csv")" 15
grep -q '^-25,4,all tensors$' "$TMP/plot/hist_all.csv" || fail "hist_all.csv: bin -25"
grep -q '^-1074,1,d$' "$TMP/plot/hist_3_d.csv" || fail "hist_3_d.csv: bin -1074"
# again into the same folder: refused without --force, replaced with it
run "$A" inspect "$TMP/e.st" --plot "$TMP/plot"
expect_status 2
expect_err_has "--plot $TMP/plot holds an inspect folder: give --force to replace it"
run "$A" inspect "$TMP/e.st" --plot "$TMP/plot" --force
((HAVE_GNUPLOT)) && expect_status 0
[[ ! -e $TMP/plot/hist_3_d.csv ]] || fail "--force left the old figures"
# never over an input, nor over a folder holding one, nor into a record of another command
cp "$TMP/e.st" "$TMP/e.copy"
run "$A" inspect "$TMP/e.st" --plot "$TMP/e.st"
expect_status 2
expect_err_has "--plot $TMP/e.st"
cmp -s "$TMP/e.st" "$TMP/e.copy" || fail "--plot onto an input changed it"
# an input inside an inspect folder: --force would remove it, so it is refused
cp "$TMP/e.st" "$TMP/plot/e.png"
run "$A" inspect "$TMP/plot/e.png" --plot "$TMP/plot" --force
expect_status 2
expect_err_has "--force would remove FILE $TMP/plot/e.png"
cmp -s "$TMP/plot/e.png" "$TMP/e.copy" || fail "--plot --force changed an input"
mkdir "$TMP/in2"
cp "$TMP/e.st" "$TMP/in2/e.st"
run "$A" inspect "$TMP/in2/e.st" --plot "$TMP/in2"
expect_status 2
expect_err_has "holds e.st, which ampscope did not write"
# no gnuplot on PATH: the statistics and every figure's CSV, then exit 1 saying how to install it
mkdir -p "$TMP/emptybin"
run env PATH="$TMP/emptybin" "$A" inspect "$TMP/e.st" --csv --plot "$TMP/plot-nognuplot"
expect_status 1
expect_err_has 'apt-get install gnuplot-nox'
expect_out_has "$TMP/e.st,edges,F32,3x4,fp16,1,12,8,2,1,0.125,2,0.25,1,0.125,0.166666667,65520"
[[ -s $TMP/plot-nognuplot/hist_all.csv && ! -e $TMP/plot-nognuplot/hist_all.png ]] ||
    fail "no gnuplot: hist_all.csv missing or a PNG drawn"
# a file whose only tensor is empty: nothing to draw, and that is no failure
st "$TMP/empty.st" '{"e":{"dtype":"F32","shape":[0,3],"data_offsets":[0,0]}}' ""
run "$A" inspect "$TMP/empty.st" --plot "$TMP/plot-empty"
expect_status 0
grep -q 'nothing to draw' "$TMP/plot-empty/index.html" || fail "no note that nothing was drawn"
run "$A" inspect "$TMP/e.st" --plot "$TMP/nofolder/plot"
expect_status 2
expect_err_has "no folder $TMP/nofolder"

finish
