# scale.gp: loss-scale trajectories, one per series, with the skipped steps marked.
#   gnuplot -e "in='scale.csv';out='scale';title='Loss scale'" plots/scale.gp
# Columns: step, scale (the factor the step's loss was multiplied by), skipped (1 when
# the step's update was skipped for a non-finite gradient, else 0), series.
# Variables: in, out (required); title, xlabel (default "step"), ylabel (default
# "loss scale").  The y axis is log2.  Draws out.png and out.svg.

# common.gp lies beside this script (ARG0), wherever gnuplot was started.
_dir(p, a) = strstrt(p, "/") ? _dir(p[strstrt(p, "/") + 1:], a . p[1:strstrt(p, "/")]) : a
load _dir(ARG0, "") . "common.gp"
if (xlabel eq "") { set xlabel "step" }
if (ylabel eq "") { set ylabel "loss scale" }

set logscale y 2
set format y "2^{%L}"
# A scale held for the whole run must not hide in the border.
set offsets 0, 0, graph 0.05, graph 0.05
series = "|"
stats in using (series = add_distinct(series, strcol("series")), 0) nooutput
n = list_size(series)
array name[n]
do for [i = 1:n] { name[i] = list_item(series, i) }

# The scale holds from its step to the next: steps, not a straight line.
plot for [i = 1:n] in \
         using (column("step")):(strcol("series") eq name[i] ? column("scale") : NaN) \
         with steps lt i title name[i], \
     for [i = 1:n] in \
         using (column("step")): \
               (strcol("series") eq name[i] && column("skipped") > 0 ? column("scale") : NaN) \
         with points lt i pt 6 ps 1.2 notitle, \
     NaN with points lc rgb "#555555" pt 6 ps 1.2 title "skipped step"
@draw_svg_too
