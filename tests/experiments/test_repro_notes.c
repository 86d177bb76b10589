/* test_repro_notes.c: the report's notes on numbers are computed
 * (experiments/reproduce/fp_note.c, formats.c).  Bit patterns classified
 * against their fields read by hand; each note against its result's class,
 * flags and error; then the formats study itself, written into a scratch
 * folder: every worked example's row of examples.csv against facts derived
 * by hand (0x045E: exponent field 1, so normal; 2049 is a tie between 2048
 * and 2050 and goes to 2048, the even significand), each note against the
 * CSV's own class and relative_error columns, and the page showing the bit
 * patterns as written (0x045E, never 1118).  Then the new nets' sections
 * (fp32list.c, batchnorm.c, embedding.c, bf16.c) at the smoke size: every
 * number their sentences state is the field of the CSV they cite, and each
 * derived column (a difference, a fraction, a mean over layers) agrees with
 * the columns it is derived from. */
#define _XOPEN_SOURCE 700
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* The field col of the row whose column key is value. */
static const char *row_field(const csv_table *t, const char *key, const char *value,
                             const char *col)
{
    for (size_t i = 1; i < t->rows; i++)
        if (strcmp(field(t, i, key), value) == 0) return field(t, i, col);
    ck_abort_msg("no row %s=%s", key, value);
    return NULL;
}

static double num(const char *text)
{
    char *end;
    const double x = strtod(text, &end);
    ck_assert_msg(end != text && *end == '\0', "'%s' is not a number", text);
    return x;
}

static void read_csv(const char *dir, const char *name, csv_table *t)
{
    char path[512], msg[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    ck_assert_msg(csv_table_read(path, name, t, msg, sizeof msg) == 0, "%s", msg);
}

/* The page holds the sentence built from fmt and the CSV fields. */
#define ASSERT_SAYS(page, ...)                                                                     \
    do {                                                                                           \
        char said_[512];                                                                           \
        snprintf(said_, sizeof said_, __VA_ARGS__);                                                \
        ASSERT_HAS(page, said_);                                                                   \
    } while (0)

START_TEST(new_sections_cite_their_csv)
{
    if (access("/usr/share/games/fortunes/cookie", R_OK) != 0 ||
        access("/usr/share/datasets/fashion-mnist", R_OK) != 0) {
        printf("skipped: the fortunes or dataset-fashion-mnist package is absent\n");
        return;
    }
    char dir[] = "/tmp/ampscope-sections-XXXXXX", path[256], msg[512];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/runs", dir);
    ck_assert_int_eq(mkdir(path, 0777), 0);
    repro_options o = {.out_dir = dir, .backend = "cpu", .level = REPRO_SMOKE};
    repro_study s = {.o = &o, .plan = &repro_plans[REPRO_SMOKE]};
    s.rep = rp_open(dir, "sections", msg, sizeof msg);
    ck_assert_ptr_nonnull(s.rep);
    repro_study_fp32list(&s);
    repro_study_batchnorm(&s);
    repro_study_embedding(&s);
    repro_study_bf16(&s);
    ck_assert_msg(s.failures == 0, "%s", s.msg);
    const int rc = rp_close(s.rep, msg, sizeof msg);
    ck_assert_msg(rc == RP_OK || rc == RP_ENOGNUPLOT, "%s", msg);
    snprintf(path, sizeof path, "%s/index.html", dir);
    char *page = slurp(path);
    csv_table t;

    /* the fp32 list: rows O0, lists in fp32, lists in fp16, the loss in fp16 */
    read_csv(dir, "fp32list.csv", &t);
    ck_assert_uint_eq(t.rows, 5);
    const char *fp16 = "tf-O2-fp16-lowlist", *fp32 = "tf-O2-fp16";
    for (size_t i = 1; i < t.rows; i++)
        ck_assert(fabs(num(field(&t, i, "loss_minus_O0")) -
                       (num(field(&t, i, "final_loss")) - num(field(&t, 1, "final_loss")))) <
                  1.5e-4);
    ASSERT_SAYS(
        page,
        "in fp16 the run found %s overflowing step(s), skipped %s and recorded %s "
        "non-finite value(s); with them in fp32 %s, %s and %s. Final loss %s against %s "
        "(O0 %s): %s and %s from O0.",
        row_field(&t, "run", fp16, "found_inf_steps"), row_field(&t, "run", fp16, "skipped_steps"),
        row_field(&t, "run", fp16, "nonfinite_values"),
        row_field(&t, "run", fp32, "found_inf_steps"), row_field(&t, "run", fp32, "skipped_steps"),
        row_field(&t, "run", fp32, "nonfinite_values"), row_field(&t, "run", fp16, "final_loss"),
        row_field(&t, "run", fp32, "final_loss"), row_field(&t, "run", "tf-O0", "final_loss"),
        row_field(&t, "run", fp16, "loss_minus_O0"), row_field(&t, "run", fp32, "loss_minus_O0"));
    const char *lossrun = "tf-O2-fp16-lowloss";
    ASSERT_SAYS(page,
                "the run found %s overflowing step(s) and skipped %s, against %s and %s with the "
                "loss in fp32; final loss %s (%s from O0).",
                row_field(&t, "run", lossrun, "found_inf_steps"),
                row_field(&t, "run", lossrun, "skipped_steps"),
                row_field(&t, "run", fp32, "found_inf_steps"),
                row_field(&t, "run", fp32, "skipped_steps"),
                row_field(&t, "run", lossrun, "final_loss"),
                row_field(&t, "run", lossrun, "loss_minus_O0"));
    /* 2^16 is inf in fp16: the fp16 loss's first step overflows, whatever the fp32 loss does */
    ck_assert(num(row_field(&t, "run", lossrun, "found_inf_steps")) >= 1);
    ck_assert(num(row_field(&t, "run", lossrun, "found_inf_steps")) >
              num(row_field(&t, "run", fp32, "found_inf_steps")));
    ASSERT_HAS(page, "The loss in fp16 cost overflows");
    /* ln(65504) = 16 ln 2 - ln(65536 / 65504) = 11.090355 - 0.000488 = 11.0899 (by hand) */
    ASSERT_HAS(page, "ln(65504) = 11.0899");
    csv_table_free(&t);

    /* BatchNorm: each run's mean over the per-layer rows */
    csv_table v;
    read_csv(dir, "batchnorm.csv", &t);
    read_csv(dir, "batchnorm_var.csv", &v);
    ck_assert_uint_eq(t.rows, 4);
    const char *const bn[] = {"rn-O2-keepbn", "rn-O2-fp16bn"};
    for (int r = 0; r < 2; r++) {
        double sum = 0;
        int n = 0;
        for (size_t i = 1; i < v.rows; i++)
            if (strcmp(field(&v, i, "run"), bn[r]) == 0) {
                ck_assert(strstr(field(&v, i, "layer"), ".running_var") != NULL);
                sum += num(field(&v, i, "mean_rel_err_vs_O0"));
                n++;
            }
        /* resnet: the stem's bn1 and two in each of three stages' blocks, at least 7 */
        ck_assert_int_ge(n, 7);
        const double want = sum / n,
                     got = num(row_field(&t, "run", bn[r], "mean_running_var_rel_err_vs_O0"));
        ck_assert_msg(fabs(got - want) <= 1e-3 * fabs(want) + 1e-12, "%g against %g", got, want);
    }
    ASSERT_SAYS(page,
                "by %s on average (at most %s); with BatchNorm in fp32 by %s (at most %s). Test "
                "accuracy: %s (off), %s (on), %s (O0).",
                row_field(&t, "run", bn[1], "mean_running_var_rel_err_vs_O0"),
                row_field(&t, "run", bn[1], "max_running_var_rel_err_vs_O0"),
                row_field(&t, "run", bn[0], "mean_running_var_rel_err_vs_O0"),
                row_field(&t, "run", bn[0], "max_running_var_rel_err_vs_O0"),
                row_field(&t, "run", bn[1], "test_accuracy"),
                row_field(&t, "run", bn[0], "test_accuracy"),
                row_field(&t, "run", "rn-O0", "test_accuracy"));
    /* O0 against itself */
    ck_assert_str_eq(row_field(&t, "run", "rn-O0", "mean_running_var_rel_err_vs_O0"), "0");
    csv_table_free(&t);
    csv_table_free(&v);

    /* embedding sums */
    read_csv(dir, "embedding.csv", &t);
    const char *low = "tf-O2-fp16-embedlow";
    ck_assert(fabs(num(row_field(&t, "run", low, "loss_minus_fp32_sums")) -
                   (num(row_field(&t, "run", low, "final_loss")) -
                    num(row_field(&t, "run", fp32, "final_loss")))) < 1.5e-4);
    ASSERT_SAYS(page,
                "With the sums in fp16 the final loss is %s against %s with fp32 sums: %s. wte "
                "lost %s of %s nonzero master-weight updates with fp16 sums and %s of %s with "
                "fp32 sums",
                row_field(&t, "run", low, "final_loss"), row_field(&t, "run", fp32, "final_loss"),
                row_field(&t, "run", low, "loss_minus_fp32_sums"),
                row_field(&t, "run", low, "wte_lost_updates"),
                row_field(&t, "run", low, "wte_nonzero_updates"),
                row_field(&t, "run", fp32, "wte_lost_updates"),
                row_field(&t, "run", fp32, "wte_nonzero_updates"));
    csv_table_free(&t);
    /* the probe: one batch of the run's own size, the sentence from its row */
    read_csv(dir, "embedding_probe.csv", &t);
    ck_assert_uint_eq(t.rows, 2);
    ck_assert_str_eq(field(&t, 1, "run"), fp32);
    ck_assert(num(field(&t, 1, "tokens")) == num(field(&t, 1, "windows")) * 16); /* context 16 */
    ck_assert(num(field(&t, 1, "wte_grad_differ")) <= num(field(&t, 1, "wte_grad_nonzero")));
    ck_assert(num(field(&t, 1, "top_token_count")) <= num(field(&t, 1, "tokens")));
    ASSERT_SAYS(page,
                "one batch of %s windows (%s tokens) sums into %s rows of wte, the most frequent "
                "token (byte %s) %s times. Summed in fp16, %s of the %s nonzero gradient elements "
                "of wte differ from the fp32 sums (%s of them); the relative error is %s over wte "
                "and %s over that token&#39;s row.",
                field(&t, 1, "windows"), field(&t, 1, "tokens"), field(&t, 1, "wte_rows_touched"),
                field(&t, 1, "top_token_byte"), field(&t, 1, "top_token_count"),
                field(&t, 1, "wte_grad_differ"), field(&t, 1, "wte_grad_nonzero"),
                field(&t, 1, "differ_frac_of_nonzero"), field(&t, 1, "wte_rel_l2_error"),
                field(&t, 1, "top_row_rel_l2_error"));
    csv_table_free(&t);
    read_csv(dir, "embedding.csv", &t);
    /* fp16: 11 significant bits, so below 2^-12 of the sum is lost */
    ASSERT_HAS(page, "keeps 11 significant bits, so a token&#39;s gradient below 2^-12");
    csv_table_free(&t);

    /* bf16 */
    read_csv(dir, "bf16.csv", &t);
    ck_assert_uint_eq(t.rows, 5);
    const double nz0 = num(row_field(&t, "run", "tf-O0", "nonzero_gradients"));
    for (size_t i = 1; i < t.rows; i++) {
        const double fewer = nz0 - num(field(&t, i, "nonzero_gradients"));
        ck_assert(num(field(&t, i, "zero_more_than_O0")) == fewer);
        const double got = num(field(&t, i, "zero_more_frac_of_O0_nonzero"));
        ck_assert_msg(fabs(got - fewer / nz0) <= 5e-3 * fabs(fewer / nz0), "%g against %g", got,
                      fewer / nz0);
    }
    const char *b = "tf-O2-bf16-noscale", *h = "tf-O2-fp16-noscale";
    ASSERT_SAYS(page,
                "bf16 without scaling ends at %s (%s from O0), skipped %s step(s) and has %s of "
                "O0&#39;s nonzero gradients fewer; fp16 without scaling ends at %s (%s) with %s "
                "fewer",
                row_field(&t, "run", b, "final_loss"), row_field(&t, "run", b, "loss_minus_O0"),
                row_field(&t, "run", b, "skipped_steps"),
                row_field(&t, "run", b, "zero_more_frac_of_O0_nonzero"),
                row_field(&t, "run", h, "final_loss"), row_field(&t, "run", h, "loss_minus_O0"),
                row_field(&t, "run", h, "zero_more_frac_of_O0_nonzero"));
    ASSERT_SAYS(page, "fp16 with the dynamic scale ends at %s (%s), skipped %s, with %s fewer.",
                row_field(&t, "run", fp32, "final_loss"),
                row_field(&t, "run", fp32, "loss_minus_O0"),
                row_field(&t, "run", fp32, "skipped_steps"),
                row_field(&t, "run", fp32, "zero_more_frac_of_O0_nonzero"));
    /* the runs the sections share are one run: the same final loss in every table */
    csv_table_free(&t);
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
    /* trains nine smoke runs: minutes on a busy 2-core machine */
    TCase *runs = tcase_create("sections");
    tcase_set_timeout(runs, 540);
    tcase_add_test(runs, new_sections_cite_their_csv);
    suite_add_tcase(s, runs);
    repro_notes_deep(s);
    return ts_run_suite(s);
}
