# scatter.gp: predicted against measured values, with the line y = x and a +-20% band.
#   gnuplot -e "in='validation.csv';out='validation';xlabel='predicted skips';ylabel='measured skips'" plots/scatter.gp
# Columns: predicted, measured, label (written beside each point; may be empty).
# A point inside the band has |measured - predicted| <= 0.2 * predicted.
# Variables: in, out (required); title, xlabel (default "predicted"), ylabel (default
# "measured"); band (the band's half-width as a fraction, default 0.2).  Draws out.png
# and out.svg.

# common.gp lies beside this script (ARG0), wherever gnuplot was started.
_dir(p, a) = strstrt(p, "/") ? _dir(p[strstrt(p, "/") + 1:], a . p[1:strstrt(p, "/")]) : a
load _dir(ARG0, "") . "common.gp"
if (xlabel eq "") { set xlabel "predicted" }
if (ylabel eq "") { set ylabel "measured" }
if (!exists("band")) band = 0.2
band = band + 0.0

stats in using (column("predicted")) nooutput
top = STATS_max
stats in using (column("measured")) nooutput
top = STATS_max > top ? STATS_max : top
top = top > 0 ? top * 1.1 : 1
set xrange [0:top]
set yrange [0:top]
set size ratio -1
set key inside left top

set style fill transparent solid 0.25 noborder
plot '+' using 1:((1 - band) * $1):((1 + band) * $1) with filledcurves lc rgb "#88c0e0" \
         title sprintf("within ±%g%%", 100 * band), \
     x with lines lc rgb "#555555" dt 2 title "measured = predicted", \
     in using (column("predicted")):(column("measured")) with points lt 1 pt 7 ps 1 title "", \
     in using (column("predicted")):(column("measured")):(strcol("label")) \
         with labels left offset 0.8, 0.4 font ",9" noenhanced title ""
@draw_svg_too
