/* test_repro_notes.c: the report's notes on numbers are computed
 * (experiments/reproduce/fp_note.c, formats.c).  Bit patterns classified
 * against their fields read by hand; each note against its result's class,
 * flags and error; then the formats study itself, written into a scratch
 * folder: every worked example's row of examples.csv against facts derived
 * by hand (0x045E: exponent field 1, so normal; 2049 is a tie between 2048
 * and 2050 and goes to 2048, the even significand), each note against the
 * CSV's own class and relative_error columns, and the page showing the bit
 * patterns as written (0x045E, never 1118). */
#define _XOPEN_SOURCE 700
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "csv.h"
#include "repro_notes_deep.h"
#include "reproduce/reproduce_internal.h"
#include "util.h"

#define ASSERT_HAS(text, part)                                                                     \
    ck_assert_msg(strstr((text), (part)) != NULL, "'%s' lacks '%s'", text, part)

/* Patterns read by hand: fp16 is sign | 5 exponent bits | 10 fraction
 * bits, bf16 sign | 8 | 7, fp32 sign | 8 | 23. */
START_TEST(classes_from_the_fields)
{
    static const struct {
        fpe_format_id f;
        uint32_t bits;
        repro_fp_class cls;
        int sig;
    } cases[] = {
        {FPE_FMT_F16, 0x0000, REPRO_FP_ZERO, 0},
        {FPE_FMT_F16, 0x8000, REPRO_FP_ZERO, 0},
        {FPE_FMT_F16, 0x0001, REPRO_FP_SUBNORMAL, 1},  /* 2^-24 */
        {FPE_FMT_F16, 0x0011, REPRO_FP_SUBNORMAL, 5},  /* fraction 10001b */
        {FPE_FMT_F16, 0x03FF, REPRO_FP_SUBNORMAL, 10}, /* fraction all ones */
        {FPE_FMT_F16, 0x0400, REPRO_FP_NORMAL, 11},    /* 2^-14: field 1 */
        {FPE_FMT_F16, 0x045E, REPRO_FP_NORMAL, 11},    /* field 1, fraction 0x05E */
        {FPE_FMT_F16, 0x7BFF, REPRO_FP_NORMAL, 11},    /* 65504: field 30 */
        {FPE_FMT_F16, 0x7C00, REPRO_FP_INF, 0},
        {FPE_FMT_F16, 0xFC00, REPRO_FP_INF, 0},
        {FPE_FMT_F16, 0x7E00, REPRO_FP_NAN, 0},
        {FPE_FMT_F16, 0x7C01, REPRO_FP_NAN, 0},
        {FPE_FMT_BF16, 0x007F, REPRO_FP_SUBNORMAL, 7},
        {FPE_FMT_BF16, 0x0080, REPRO_FP_NORMAL, 8},
        {FPE_FMT_BF16, 0x7F80, REPRO_FP_INF, 0},
        {FPE_FMT_F32, 0x00000001, REPRO_FP_SUBNORMAL, 1},
        {FPE_FMT_F32, 0x00800000, REPRO_FP_NORMAL, 24},
        {FPE_FMT_F32, 0x7FC00000, REPRO_FP_NAN, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int sig = -1;
        ck_assert_msg(repro_fp_classify(cases[i].f, cases[i].bits, &sig) == cases[i].cls &&
                          sig == cases[i].sig,
                      "case %zu (0x%X): class %d, %d bits", i, (unsigned)cases[i].bits,
                      (int)repro_fp_classify(cases[i].f, cases[i].bits, NULL), sig);
    }
    ck_assert_uint_eq(repro_fp_max_bits(FPE_FMT_F16), 0x7BFF);
    ck_assert_uint_eq(repro_fp_max_bits(FPE_FMT_BF16), 0x7F7F);
    ck_assert_uint_eq(repro_fp_max_bits(FPE_FMT_F32), 0x7F7FFFFF);
    ck_assert_uint_eq(repro_fp_one_bits(FPE_FMT_F16), 0x3C00);
    ck_assert_uint_eq(repro_fp_one_bits(FPE_FMT_BF16), 0x3F80);
}
END_TEST

static void note_of(uint32_t bits, double exact, uint8_t flags, char *note, size_t len)
{
    repro_fp_result r;
    repro_fp_describe(FPE_FMT_F16, bits, exact, flags, &r);
    repro_fp_note(&r, note, len);
    ck_assert_msg(!strchr(note, ','), "a note with a comma breaks its CSV row: %s", note);
}

/* The note says what the class, flags and numbers say, and nothing else. */
START_TEST(notes_from_class_flags_and_error)
{
    char note[256];
    /* 0x045E = 1118 * 2^-24 = 6.663799285888672e-05; against 6.666666e-05 the
     * relative error is 4.30e-04 (by hand: 2.867e-08 / 6.667e-05) */
    note_of(0x045E, 0.00006666666, FPE_FLAG_INEXACT, note, sizeof note);
    ck_assert_str_eq(note, "normal: 11 significant bits; rounded: relative error 0.00043");
    note_of(0x0001, 0x1p-24, 0, note, sizeof note);
    ck_assert_str_eq(note, "subnormal: 1 significant bit of 11; exact");
    note_of(0x0011, 17 * 0x1p-24, 0, note, sizeof note);
    ck_assert_str_eq(note, "subnormal: 5 significant bits of 11; exact");
    note_of(0x0000, 0x1p-25, FPE_FLAG_INEXACT | FPE_FLAG_UNDERFLOW, note, sizeof note);
    ck_assert_str_eq(note, "zero; underflow: rounded to 0 (the smallest subnormal is 2^-24)");
    note_of(0x7C00, 65520, FPE_FLAG_INEXACT | FPE_FLAG_OVERFLOW, note, sizeof note);
    ck_assert_str_eq(note, "infinity; overflow: rounded past the largest finite fp16 (65504)");
    note_of(0x3C00, 1, 0, note, sizeof note);
    ck_assert_str_eq(note, "normal: 11 significant bits; exact");
}
END_TEST

/* A column of row i of t. */
static const char *field(const csv_table *t, size_t i, const char *col)
{
    const int k = csv_table_column(t, col);
    ck_assert_msg(k >= 0, "no column %s", col);
    return t->fields[i * t->cols + (size_t)k];
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s", path);
    char *text = calloc(1, 1 << 20);
    ck_assert_ptr_nonnull(text);
    ck_assert(fread(text, 1, (1 << 20) - 1, f) > 0);
    fclose(f);
    return text;
}

START_TEST(formats_study_rows)
{
    char dir[] = "/tmp/ampscope-notes-XXXXXX", path[256], msg[512];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    repro_options o = {.out_dir = dir};
    repro_study s = {.o = &o};
    s.rep = rp_open(dir, "notes", msg, sizeof msg);
    ck_assert_ptr_nonnull(s.rep);
    repro_study_formats(&s);
    ck_assert_int_eq(s.failures, 0);
    const int rc = rp_close(s.rep, msg, sizeof msg);
    ck_assert_msg(rc == RP_OK, "%s", msg);

    /* each worked example, derived by hand */
    static const struct {
        const char *input, *bits, *cls, *sig, *rel, *says;
    } want[] = {
        /* field 1: the normal just above 2^-14; rounding, not underflow */
        {"6.666666e-05", "0x045E", "normal", "11", "0.00043", "rounded"},
        /* 1e-6 / 2^-24 = 16.78 -> 17 = 10001b: a subnormal of 5 bits; |17 - 16.78| / 16.78 */
        {"1e-06", "0x0011", "subnormal", "5", "0.0133", "subnormal: 5 significant bits of 11"},
        /* 65520 is halfway from 65504 to 65536 = 2^16: a tie to even overflows */
        {"65520", "0x7C00", "infinity", "0", "inf", "overflow"},
        /* half of 2^-24: a tie between 0 (even) and 0x0001 */
        {"2^-25", "0x0000", "zero", "0", "1", "underflow: rounded to 0"},
        /* 2049 is a tie between 2048 and 2050 (ulp 2 above 2^11); 2048's significand is even */
        {"2048 + 1", "0x6800", "normal", "11", "0.000488", "the update is lost (w + dw = w)"},
        /* 2048 exact */
        {"2047 + 1", "0x6800", "normal", "11", "0",
         "exact; |w|/|dw| = 2047 < 2^11: the update "
         "lands"},
    };
    csv_table t;
    snprintf(path, sizeof path, "%s/examples.csv", dir);
    ck_assert_msg(csv_table_read(path, "examples.csv", &t, msg, sizeof msg) == 0, "%s", msg);
    ck_assert_uint_eq(t.rows - 1, sizeof want / sizeof *want);
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        const size_t row = i + 1;
        const char *note = field(&t, row, "note"), *cls = field(&t, row, "class");
        ck_assert_str_eq(field(&t, row, "input"), want[i].input);
        ck_assert_str_eq(field(&t, row, "fp16_bits"), want[i].bits);
        ck_assert_str_eq(cls, want[i].cls);
        ck_assert_str_eq(field(&t, row, "significant_bits"), want[i].sig);
        ck_assert_str_eq(field(&t, row, "relative_error"), want[i].rel);
        ASSERT_HAS(note, want[i].says);
        /* the note agrees with its own row: class first, its relative error */
        ck_assert_msg(strncmp(note, cls, strlen(cls)) == 0, "'%s' is not about a %s", note, cls);
        const double rel = strtod(field(&t, row, "relative_error"), NULL);
        if (rel > 0 && isfinite(rel) && strcmp(cls, "zero") != 0) {
            char said[64];
            snprintf(said, sizeof said, "relative error %.2g", rel);
            ASSERT_HAS(note, said);
        }
        if (strcmp(cls, "normal") == 0) ck_assert_ptr_null(strstr(note, "subnormal"));
    }
    csv_table_free(&t);

    /* the page: bit patterns as written, the facts beside the standards' */
    snprintf(path, sizeof path, "%s/index.html", dir);
    char *page = slurp(path);
    ASSERT_HAS(page, "<td>0x045E</td>");
    ck_assert_ptr_null(strstr(page, ">1118<"));
    ASSERT_HAS(page, "fp16: 11 significant bits, min subnormal 2^-24, min normal 2^-14, max 65504");
    ASSERT_HAS(page, "bf16: 8 significant bits, min subnormal 2^-133, min normal 2^-126");
    ASSERT_HAS(page, "None: every value agrees with the standards");
    free(page);
    ut_remove_tree(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("repro_notes");
    TCase *tc = tcase_create("notes");
    tcase_add_test(tc, classes_from_the_fields);
    tcase_add_test(tc, notes_from_class_flags_and_error);
    tcase_add_test(tc, formats_study_rows);
    suite_add_tcase(s, tc);
    repro_notes_deep(s);
    return ts_run_suite(s);
}
