# common.gp: what every ampscope figure script shares (each loads it from its own folder).
# Sets up CSV reading and the PNG terminal; a script then plots and runs @draw_svg_too.

if (!exists("in") || !exists("out")) {
    exit error "set the input CSV and the output name: gnuplot -e \"in='FILE.csv';out='NAME'\" SCRIPT.gp"
}
if (!exists("title")) title = ""
if (!exists("xlabel")) xlabel = ""
if (!exists("ylabel")) ylabel = ""

# Columns are read by name from the header row.  An empty field (a fraction
# whose denominator was 0) and a filtered-out point (NaN) are missing data,
# so a series' line runs on across them instead of breaking.
set datafile separator ","
set datafile columnheaders
set datafile missing NaN
set encoding utf8

# User text is printed as given: enhanced mode would turn "weight_grad" into a subscript.
set title title noenhanced
set xlabel xlabel noenhanced
set ylabel ylabel noenhanced
set style line 81 lt 1 lw 1 lc rgb "#e4e4e4"
set grid back ls 81
set border lc rgb "#555555"
set key below horizontal noenhanced samplen 2 spacing 1.1
# Colour-blind-safe colours (Okabe and Ito) for the series, in order.
set linetype 1 lc rgb "#0072b2" lw 1.5 pt 7 ps 0.5
set linetype 2 lc rgb "#e69f00" lw 1.5 pt 5 ps 0.5
set linetype 3 lc rgb "#009e73" lw 1.5 pt 9 ps 0.6
set linetype 4 lc rgb "#cc79a7" lw 1.5 pt 11 ps 0.6
set linetype 5 lc rgb "#56b4e9" lw 1.5 pt 13 ps 0.6
set linetype 6 lc rgb "#d55e00" lw 1.5 pt 3 ps 0.6
set linetype 7 lc rgb "#000000" lw 1.5 pt 1 ps 0.6
set linetype 8 lc rgb "#f0e442" lw 1.5 pt 2 ps 0.6
set linetype cycle 8

fig_size = "size 960,540"
fig_font = "font \"DejaVu Sans,10\""
# ampscope sets out_tmp (".tmp.<pid>") to draw into temporary files that it renames over
# out.png and out.svg once each is whole; by hand it is empty and the figures are written at once.
if (!exists("out_tmp")) out_tmp = ""
eval "set terminal pngcairo " . fig_size . " " . fig_font . " enhanced background rgb \"white\""
set output out . ".png" . out_tmp
draw_svg_too = "set output; eval \"set terminal svg \" . fig_size . \" \" . fig_font . \" enhanced dynamic background rgb 'white'\"; set output out . \".svg\" . out_tmp; replot; set output"

# The distinct values of a text column, in order of first appearance, kept as
# "|v1|v2|...|" so that a value may hold spaces (not "|"):
#   series = "|"; stats in using (series = add_distinct(series, strcol("series")), 0) nooutput
#   n = list_size(series); list_item(series, i) is the i-th (1-based), list_index(series, v) its index.
add_distinct(list, v) = strstrt(list, "|" . v . "|") ? list : list . v . "|"
_bars(s) = strstrt(s, "|") ? 1 + _bars(s[strstrt(s, "|") + 1:]) : 0
_rest(s) = s[strstrt(s, "|") + 1:]
list_size(list) = _bars(list) - 1
list_item(list, i) = i <= 1 ? _rest(list)[1:strstrt(_rest(list), "|") - 1] : list_item(_rest(list), i - 1)
list_index(list, v) = strstrt(list, "|" . v . "|") ? _bars(list[1:strstrt(list, "|" . v . "|")]) : NaN
