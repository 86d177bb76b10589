# heatmap.gp: a grid of values as coloured cells with the value written in each.
#   gnuplot -e "in='grid.csv';out='grid';xlabel='scale factor';ylabel='scale window'" plots/heatmap.gp
# Columns: x, y, value.  x and y are labels (text or numbers), placed in order of first
# appearance; a missing (x, y) pair is left blank, an empty value is drawn as a blank cell.
# Variables: in, out (required); title, xlabel, ylabel, cblabel; fmt (the printf format of
# the cell labels, default "%.3g").  Draws out.png and out.svg.

# common.gp lies beside this script (ARG0), wherever gnuplot was started.
_dir(p, a) = strstrt(p, "/") ? _dir(p[strstrt(p, "/") + 1:], a . p[1:strstrt(p, "/")]) : a
load _dir(ARG0, "") . "common.gp"
if (!exists("cblabel")) cblabel = ""
if (!exists("fmt")) fmt = "%.3g"
set cblabel cblabel noenhanced

xs = "|"
ys = "|"
stats in using (xs = add_distinct(xs, strcol("x")), ys = add_distinct(ys, strcol("y")), 0) nooutput
nx = list_size(xs)
ny = list_size(ys)
# the value range, before the axis ranges below would filter the values as y
stats in using (column("value")) nooutput
vmin = STATS_min
vspan = STATS_max > STATS_min ? STATS_max - STATS_min : 1

set xrange [0.5:nx + 0.5]
set yrange [0.5:ny + 0.5]
set xtics () scale 0 noenhanced
set ytics () scale 0 noenhanced
do for [i = 1:nx] { set xtics add (list_item(xs, i) i) }
do for [i = 1:ny] { set ytics add (list_item(ys, i) i) }
set grid noxtics noytics
set key off
set palette defined (0 "#f7fbff", 0.5 "#6baed6", 1 "#08306b")
set style fill solid 1.0 noborder

cell_x = "list_index(xs, strcol(\"x\"))"
cell_y = "list_index(ys, strcol(\"y\"))"
# A label is dark on light cells and light on dark ones.
ink(v) = (v - vmin) / vspan > 0.55 ? 0xffffff : 0x222222
plot in using (@cell_x):(@cell_y):(0.5):(0.5):(column("value")) with boxxyerror fc palette, \
     in using (@cell_x):(@cell_y):(sprintf(fmt, column("value"))):(ink(column("value"))) \
         with labels font ",9" tc rgb variable
@draw_svg_too
