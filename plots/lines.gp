# lines.gp: one line per series from a long CSV with the columns x, y, series.
#   gnuplot -e "in='loss.csv';out='loss';title='Training loss';xlabel='step';ylabel='loss'" plots/lines.gp
# Variables: in, out (required); title, xlabel, ylabel; logx, logy (0 or 1: a log10 axis);
# points (0 or 1: mark every point).  Draws out.png and out.svg.
# Rows may come in any order; a series' points are joined in the order of its rows; an
# empty y is skipped.

# common.gp lies beside this script (ARG0), wherever gnuplot was started.
_dir(p, a) = strstrt(p, "/") ? _dir(p[strstrt(p, "/") + 1:], a . p[1:strstrt(p, "/")]) : a
load _dir(ARG0, "") . "common.gp"
if (!exists("logx")) logx = 0
if (!exists("logy")) logy = 0
if (!exists("points")) points = 0

if (logx == 1) { set logscale x }
if (logy == 1) { set logscale y }
# A series that stays at its extreme (a fraction of 0) must not hide in the border
# (a log axis already extends to whole decades).
if (logy != 1) { set offsets 0, 0, graph 0.05, graph 0.05 }
series = "|"
stats in using (series = add_distinct(series, strcol("series")), 0) nooutput
n = list_size(series)
array name[n]
do for [i = 1:n] { name[i] = list_item(series, i) }
style = (points == 1) ? "linespoints" : "lines"

plot for [i = 1:n] in \
    using (column("x")):(strcol("series") eq name[i] ? column("y") : NaN) \
    with @style lt i title name[i]
@draw_svg_too
