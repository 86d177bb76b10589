/* test_csv: the CSV reader of analyze/ and plots/ (csv.c): the line source
 * (numbers, offsets, cut-short and NUL lines), splitting and columns, the
 * whole-file table and its messages, and typed fields whose errors name
 * file, line and column.  Every test works in a fresh directory under a
 * mkdtemp base that the fixture removes; expected texts are written out by
 * hand. */
#define _XOPEN_SOURCE 700 /* mkdtemp, nftw */
#include <check.h>
#include <errno.h>
#include <math.h>

#include "check_main.h"
#include "csv.h"
#include "files.h"
#include "scratch.h"

/* put_file with the length given, so that the text may hold a NUL. */
static void put_bytes(const char *path, const char *bytes, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(bytes, 1, n, f), n);
    fclose(f);
}

/* The bytes of a string literal, a NUL inside it included. */
#define BYTES(lit) lit, sizeof lit - 1

START_TEST(reader_lines)
{
    char dir[128], path[256];
    new_dir(dir, sizeof dir);
    path_in(path, sizeof path, dir, "a.csv");
    put_bytes(path, BYTES("x,y\n1,2\n\n3\0,4\n5,6"));
    csv_reader r;
    ck_assert_int_eq(csv_open(&r, path), AN_OK);
    ck_assert(csv_next(&r));
    ck_assert_str_eq(r.line, "x,y");
    ck_assert_uint_eq(r.len, 3);
    ck_assert_uint_eq(r.line_no, 1);
    ck_assert_int_eq(r.offset, 0);
    ck_assert_int_eq(r.end, 4);
    ck_assert(r.complete && !r.has_nul);
    ck_assert(csv_next(&r));
    ck_assert_str_eq(r.line, "1,2");
    ck_assert_int_eq(r.offset, 4);
    ck_assert(csv_next(&r)); /* a blank line is a line */
    ck_assert_str_eq(r.line, "");
    ck_assert_uint_eq(r.line_no, 3);
    ck_assert_int_eq(r.offset, 8);
    ck_assert(csv_next(&r));
    ck_assert_uint_eq(r.len, 4);
    ck_assert(r.complete && r.has_nul);
    ck_assert(csv_next(&r)); /* cut short: no newline */
    ck_assert_str_eq(r.line, "5,6");
    ck_assert_uint_eq(r.line_no, 5);
    ck_assert_int_eq(r.offset, 14);
    ck_assert_int_eq(r.end, 17);
    ck_assert(!r.complete && !r.has_nul);
    ck_assert(!csv_next(&r));
    ck_assert_int_eq(r.end, 17); /* the end leaves the last line as it was */
    ck_assert(!csv_error(&r));
    csv_close(&r);

    path_in(path, sizeof path, dir, "none.csv");
    errno = 0;
    ck_assert_int_eq(csv_open(&r, path), AN_EIO);
    ck_assert_int_eq(errno, ENOENT);
    csv_close(&r); /* harmless */
}
END_TEST

START_TEST(split_and_columns)
{
    ck_assert_uint_eq(csv_count_fields(""), 1);
    ck_assert_uint_eq(csv_count_fields("a,,b,"), 4);
    char line[] = "step,layer,,amax";
    char *f[3];
    ck_assert_uint_eq(csv_split(line, f, 3), 4); /* all counted, 3 kept */
    ck_assert_str_eq(f[0], "step");
    ck_assert_str_eq(f[1], "layer");
    ck_assert_str_eq(f[2], "");
    ck_assert_int_eq(csv_column("step,epoch,loss", "step"), 0);
    ck_assert_int_eq(csv_column("step,epoch,loss", "loss"), 2);
    ck_assert_int_eq(csv_column("step,epoch,loss", "los"), -1);
    ck_assert_int_eq(csv_column("step,epoch,loss", "epoch,loss"), -1);
    char *have[] = {"x", "y"};
    char out[64];
    csv_missing_columns(have, 2, "x,y", out, sizeof out);
    ck_assert_str_eq(out, "");
    csv_missing_columns(have, 2, "x,series", out, sizeof out);
    ck_assert_str_eq(out, "'series'");
    csv_missing_columns(have, 1, "x,y,series", out, sizeof out);
    ck_assert_str_eq(out, "'y', 'series'");
}
END_TEST

START_TEST(table_reads)
{
    char dir[128], path[256], msg[512];
    new_dir(dir, sizeof dir);
    path_in(path, sizeof path, dir, "t.csv");
    /* CRLF, a blank line, a last line without its newline */
    put_file(path, "x,y,series\r\n1,2,a\r\n\r\n\n3,,b");
    csv_table t;
    ck_assert_int_eq(csv_table_read(path, "t.csv", &t, msg, sizeof msg), AN_OK);
    ck_assert_uint_eq(t.rows, 3);
    ck_assert_uint_eq(t.cols, 3);
    ck_assert_str_eq(t.fields[2], "series");
    ck_assert_str_eq(t.fields[3], "1");
    ck_assert_str_eq(t.fields[5], "a");
    ck_assert_str_eq(t.fields[6], "3");
    ck_assert_str_eq(t.fields[7], "");
    ck_assert_int_eq(csv_table_column(&t, "series"), 2);
    ck_assert_int_eq(csv_table_column(&t, "z"), -1);
    csv_table_free(&t);
    ck_assert_ptr_null(t.text);

    put_file(path, "x,y\n");
    ck_assert_int_eq(csv_table_read(path, "t.csv", &t, msg, sizeof msg), AN_OK);
    ck_assert_uint_eq(t.rows, 1);
    csv_table_free(&t);
}
END_TEST

static void expect_table_error(const char *dir, const char *bytes, size_t n, const char *expected)
{
    char path[256], msg[512];
    path_in(path, sizeof path, dir, "bad.csv");
    put_bytes(path, bytes, n);
    csv_table t;
    ck_assert_int_ne(csv_table_read(path, "bad.csv", &t, msg, sizeof msg), AN_OK);
    ck_assert_str_eq(msg, expected);
    ck_assert_ptr_null(t.text);
    ck_assert_ptr_null(t.fields);
}

START_TEST(table_rejects)
{
    char dir[128], path[256], msg[512];
    new_dir(dir, sizeof dir);
    expect_table_error(dir, BYTES(""), "bad.csv: empty file (no header row)");
    expect_table_error(dir, BYTES("x,y\n1,2,3\n"), "bad.csv:2: expected 2 fields, got 3");
    expect_table_error(dir, BYTES("x,y\n1,2\n\n4"),
                       "bad.csv:4: expected 2 fields, got 1 (the file ends there: cut short?)");
    /* a NUL anywhere wins over a bad line before it */
    expect_table_error(dir, BYTES("x,y\n1\n2,\0"), "bad.csv: a NUL byte: not a CSV file");
    path_in(path, sizeof path, dir, "none.csv");
    csv_table t;
    ck_assert_int_eq(csv_table_read(path, "none.csv", &t, msg, sizeof msg), AN_EIO);
    ck_assert_str_eq(msg, "none.csv: cannot open: No such file or directory");
}
END_TEST

START_TEST(integers)
{
    int64_t i;
    uint64_t u;
    ck_assert(csv_parse_i64("-12", &i) && i == -12);
    ck_assert(csv_parse_i64("9223372036854775807", &i) && i == INT64_MAX);
    ck_assert(!csv_parse_i64("9223372036854775808", &i));
    ck_assert(!csv_parse_i64("", &i));
    ck_assert(!csv_parse_i64(" 1", &i));
    ck_assert(!csv_parse_i64("+1", &i));
    ck_assert(!csv_parse_i64("1x", &i));
    ck_assert(!csv_parse_i64("-", &i));
    ck_assert(csv_parse_u64("18446744073709551615", &u) && u == UINT64_MAX);
    ck_assert(!csv_parse_u64("18446744073709551616", &u));
    ck_assert(!csv_parse_u64("-1", &u));
}
END_TEST

START_TEST(typed_fields)
{
    char line[] = "-3,7,1,2,1e-45,nan,,x, 1";
    const char *columns[] = {"a", "b", "c", "d", "e", "f", "g", "h", "i"};
    char *fields[9], msg[256];
    ck_assert_uint_eq(csv_split(line, fields, 9), 9);
    const csv_row r = {"run/t.csv", 17, fields, columns, msg, sizeof msg};
    int64_t i;
    uint64_t u;
    bool b;
    int flag;
    float f;
    double d;
    ck_assert_int_eq(csv_get_count(&r, 0, &i), AN_EFORMAT);
    ck_assert_str_eq(msg, "run/t.csv:17: column 'a': '-3' is not a non-negative integer");
    ck_assert_int_eq(csv_get_count(&r, 1, &i), AN_OK);
    ck_assert_int_eq(i, 7);
    ck_assert_int_eq(csv_get_u64(&r, 0, &u), AN_EFORMAT);
    ck_assert_int_eq(csv_get_u64(&r, 1, &u), AN_OK);
    ck_assert_uint_eq(u, 7);
    ck_assert_int_eq(csv_get_bool(&r, 2, &b), AN_OK);
    ck_assert(b);
    ck_assert_int_eq(csv_get_bool(&r, 3, &b), AN_EFORMAT);
    ck_assert_str_eq(msg, "run/t.csv:17: column 'd': '2' is not 0 or 1");
    ck_assert_int_eq(csv_get_flag(&r, 2, &flag), AN_OK);
    ck_assert_int_eq(flag, 1);
    ck_assert_int_eq(csv_get_f32(&r, 4, &f), AN_OK); /* a subnormal reads back */
    ck_assert(f == 0x1p-149f);
    ck_assert_int_eq(csv_get_f64(&r, 5, &d), AN_OK);
    ck_assert(isnan(d));
    ck_assert_int_eq(csv_get_f64(&r, 6, &d), AN_EFORMAT); /* empty */
    ck_assert_int_eq(csv_get_frac(&r, 6, &d), AN_OK);     /* undefined */
    ck_assert(isnan(d));
    ck_assert_int_eq(csv_get_frac(&r, 7, &d), AN_EFORMAT);
    ck_assert_str_eq(msg, "run/t.csv:17: column 'h': 'x' is not a number");
    ck_assert_int_eq(csv_get_f32(&r, 8, &f), AN_EFORMAT); /* no leading space */
    ck_assert_str_eq(msg, "run/t.csv:17: column 'i': ' 1' is not a number");
    ck_assert_int_eq(csv_bad_field(&r, 7, "a layer name"), AN_EFORMAT);
    ck_assert_str_eq(msg, "run/t.csv:17: column 'h': 'x' is not a layer name");
}
END_TEST

static Suite *csv_suite(void)
{
    Suite *s = suite_create("analyze_csv");
    TCase *tc = tcase_create("csv");
    tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
    tcase_add_test(tc, reader_lines);
    tcase_add_test(tc, split_and_columns);
    tcase_add_test(tc, table_reads);
    tcase_add_test(tc, table_rejects);
    tcase_add_test(tc, integers);
    tcase_add_test(tc, typed_fields);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return ts_run_suite(csv_suite()); }
