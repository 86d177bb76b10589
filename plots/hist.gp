# hist.gp: log2-magnitude histograms, one per series, over the ranges of fp16 and bf16.
#   gnuplot -e "in='hist_weight_grad.csv';out='hist_weight_grad';title='Weight gradients'" plots/hist.gp
# Columns: bin, count, series.  bin is e for the binade 2^e <= |x| < 2^(e+1); a row whose
# bin is not a number ("zero", "nonfinite") is counted in its series' total but not drawn.
# y is the fraction of the series' total count.  Shaded: fp16's subnormal [2^-24, 2^-14)
# and normal [2^-14, 2^16) ranges; lines: where bf16's subnormals (2^-133) and normals
# (2^-126) start, drawn when they fall inside the data's range.
# Variables: in, out (required); title, xlabel (default "log2 |x|"), ylabel (default
# "fraction of values"); logy (0 or 1); shift (default 0): log2 of a loss scale S, the ranges
# then drawn where x*S meets them (at x = 2^(edge - shift)).  Draws out.png and out.svg.

# common.gp lies beside this script (ARG0), wherever gnuplot was started.
_dir(p, a) = strstrt(p, "/") ? _dir(p[strstrt(p, "/") + 1:], a . p[1:strstrt(p, "/")]) : a
load _dir(ARG0, "") . "common.gp"
if (xlabel eq "") { set xlabel "|x|" }
if (ylabel eq "") { set ylabel "fraction of values" }
if (!exists("logy")) logy = 0
if (logy == 1) { set logscale y }
if (!exists("shift")) shift = 0
shift = shift + 0

series = "|"
stats in using (series = add_distinct(series, strcol("series")), 0) nooutput
n = list_size(series)
array name[n]
array total[n]
do for [i = 1:n] {
    name[i] = list_item(series, i)
    stats in using (strcol("series") eq name[i] ? column("count") : 0) nooutput
    total[i] = STATS_sum
}
stats in using (column("bin")) nooutput
# (no numeric bin at all, say only zeros: stats leaves STATS_min undefined)
lo = exists("STATS_min") ? floor(STATS_min) - 2 : floor(-26 - shift)
hi = exists("STATS_max") ? ceil(STATS_max) + 3 : ceil(-12 - shift)
# Always show the whole of fp16's subnormal range and where its normals start.
lo = (lo > floor(-26 - shift)) ? floor(-26 - shift) : lo
hi = (hi < ceil(-12 - shift)) ? ceil(-12 - shift) : hi
set xrange [lo:hi]
set yrange [0:*]
if (!exists("STATS_min")) {
    set yrange [0:1]
    set label 2 "no nonzero finite value" at graph 0.5, graph 0.5 center front
}
set xtics 4 format "2^{%g}"
set mxtics 4

fp16_sub_lo = -24 - shift; fp16_norm_lo = -14 - shift; fp16_norm_hi = 16 - shift
bf16_sub_lo = -133 - shift; bf16_norm_lo = -126 - shift; bf16_norm_hi = 128 - shift
# the keys: the formats' own ranges, and with a shift where x*S meets them
at_scale = shift == 0 ? "" : sprintf(" (x*2^%g)", shift)
clip(x) = x < lo ? lo : (x > hi ? hi : x)
set object 1 rect from clip(fp16_sub_lo), graph 0 to clip(fp16_norm_lo), graph 1 \
    back fc rgb "#fde0c5" fs solid 1.0 noborder
set object 2 rect from clip(fp16_norm_lo), graph 0 to clip(fp16_norm_hi), graph 1 \
    back fc rgb "#e3f1e0" fs solid 1.0 noborder
if (bf16_sub_lo > lo && bf16_sub_lo < hi) {
    set arrow 1 from bf16_sub_lo, graph 0 to bf16_sub_lo, graph 1 nohead dt 3 lc rgb "#7a3e9d"
}
if (bf16_norm_lo > lo && bf16_norm_lo < hi) {
    set arrow 2 from bf16_norm_lo, graph 0 to bf16_norm_lo, graph 1 nohead dt 2 lc rgb "#7a3e9d"
}
bf16_in_view = bf16_norm_lo > lo
bf16_key = sprintf("bf16 normal from 2^-126%s%s", at_scale, bf16_in_view ? "" : " (off the left)")

set boxwidth 1.0 absolute
set style fill transparent solid 0.35 border
# The bin [2^e, 2^(e+1)) is drawn from e to e+1.
plot NaN with boxes fc rgb "#fde0c5" fs solid 1.0 noborder title "fp16 subnormal 2^-24..2^-14" . at_scale, \
     NaN with boxes fc rgb "#e3f1e0" fs solid 1.0 noborder title "fp16 normal 2^-14..2^16" . at_scale, \
     NaN with lines dt 2 lc rgb "#7a3e9d" title bf16_key, \
     for [i = 1:n] in \
         using (column("bin") + 0.5):(strcol("series") eq name[i] ? column("count") / total[i] : NaN) \
         with boxes lt i title name[i]
@draw_svg_too
