/* table.c: the report's tables: the CSV files it writes into its folder
 * (a figure's data, a table), and rp_table_csv, a CSV shown on the page
 * (decimal numbers to 4 significant digits, the linked file keeping them
 * all; bit patterns such as 0x045E as written).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic_file.h"
#include "csv.h"
#include "report_internal.h"

#define TABLE_ROWS 200 /* rows of a CSV shown on the page; all are in the linked file */

int rp_write_csv(rp_report *r, const char *name, sbuf *text, const char *figure)
{
    char why[WHY_MAX];
    char *path = rp_join_path(r->dir, name);
    int rc = !path || text->failed ? AN_ENOMEM : af_write(path, text->p, text->n, why, sizeof why);
    if (rc == AN_ENOMEM) snprintf(why, sizeof why, "%s: out of memory", name);
    free(path);
    if (rc != AN_OK) {
        rp_io_failed(r, why);
        rp_missing(r, figure, why);
        return RP_EIO;
    }
    return RP_OK;
}

/* Whether field is written in hexadecimal ("0x045E", a bit pattern):
 * strtod reads it as a number, and an E digit would pass for an exponent. */
static bool is_hex(const char *field)
{
    if (*field == '+' || *field == '-') field++;
    return field[0] == '0' && (field[1] == 'x' || field[1] == 'X');
}

/* A decimal number shown with 4 significant digits (the CSV keeps them
 * all); integers, hexadecimal bit patterns, text and non-finite values as
 * written. */
static void sb_cell(sbuf *b, const char *field)
{
    char *end;
    errno = 0;
    const double v = strtod(field, &end);
    const bool number = *field && *end == '\0' && errno == 0 && !is_hex(field);
    if (number && isfinite(v) && strpbrk(field, ".eE")) {
        char shown[32];
        snprintf(shown, sizeof shown, "%.4g", v);
        sb_add(b, "<td class=\"num\">");
        sb_html(b, shown);
    } else {
        sb_add(b, number ? "<td class=\"num\">" : "<td>");
        sb_html(b, field);
    }
    sb_add(b, "</td>");
}

int rp_table_csv(rp_report *r, const char *caption, const char *csv_name)
{
    if (!r) return RP_EINVAL;
    const char *what = caption && *caption ? caption : csv_name ? csv_name : "a table";
    if (!csv_name || !*csv_name) {
        rp_missing(r, what, "rp_table_csv: no CSV file named");
        return RP_EINVAL;
    }
    char why[WHY_MAX];
    char *path = rp_join_path(r->dir, csv_name);
    csv_table c;
    const int rc = path ? csv_table_read(path, csv_name, &c, why, sizeof why) : -1;
    if (!path) snprintf(why, sizeof why, "%s: out of memory", csv_name);
    free(path);
    if (rc != 0) {
        char w[WHY_MAX + 64];
        snprintf(w, sizeof w, "table %s", what);
        rp_missing(r, w, why);
        return RP_EPARTIAL;
    }
    sbuf *b = &r->body;
    sb_add(b, "<figure class=\"table\"><figcaption>");
    sb_html(b, caption ? caption : "");
    sb_add(b, " <span class=\"files\">(<a href=\"");
    sb_url(b, csv_name);
    sb_add(b, "\">CSV</a>)</span></figcaption>\n<div class=\"scroll\"><table>\n<tr>");
    for (size_t k = 0; k < c.cols; k++) {
        sb_add(b, "<th>");
        sb_html(b, c.fields[k]);
        sb_add(b, "</th>");
    }
    sb_add(b, "</tr>\n");
    const size_t shown = c.rows - 1 < TABLE_ROWS ? c.rows - 1 : TABLE_ROWS;
    for (size_t i = 1; i <= shown; i++) {
        sb_add(b, "<tr>");
        for (size_t k = 0; k < c.cols; k++)
            sb_cell(b, c.fields[i * c.cols + k]);
        sb_add(b, "</tr>\n");
    }
    sb_add(b, "</table></div>\n");
    if (shown < c.rows - 1)
        sb_printf(b, "<p class=\"small\">The first %zu of %zu rows; all are in the CSV.</p>\n",
                  shown, c.rows - 1);
    sb_add(b, "</figure>\n");
    csv_table_free(&c);
    return RP_OK;
}
