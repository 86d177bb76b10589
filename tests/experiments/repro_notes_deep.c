/* repro_notes_deep.c (part of test_repro_notes): the loss-scaling and
 * per-layer underflow sections' sentences, computed from records written
 * here by hand (finished runs, which the studies reuse instead of
 * training): every number in the page's text derived by hand from those
 * records, and each against the CSV the section writes. */
#define _XOPEN_SOURCE 700
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "csv.h"
#include "record.h"
#include "repro_notes_deep.h"
#include "reproduce/reproduce_internal.h"
#include "util.h"

#define HAS(text, part) ck_assert_msg(strstr((text), (part)) != NULL, "page lacks '%s'", part)

static void put(const char *dir, const char *run, const char *file, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/runs/%s/%s", dir, run, file);
    FILE *f = fopen(p, "w");
    ck_assert_msg(f != NULL, "%s", p);
    fputs(text, f);
    fclose(f);
}

/* A finished run: run.json with an end time, wall_seconds, and files. */
static void fake_run(const char *dir, const char *run)
{
    char p[512], msg[256];
    snprintf(p, sizeof p, "%s/runs/%s", dir, run);
    ck_assert_int_eq(mkdir(p, 0777), 0);
    rec_run *r = rec_run_new("0", "test", "cpu", "test");
    rec_run_set_start(r, 1000);
    rec_run_set_end(r, 2000);
    snprintf(p, sizeof p, "%s/runs/%s/%s", dir, run, REC_RUN_JSON);
    ck_assert_msg(rec_run_write(r, p, msg, sizeof msg) == 0, "%s", msg);
    rec_run_free(r);
    put(dir, run, "wall_seconds", "1.0\n");
}

/* One step of loss (float-exact halves and quarters) and an evaluation. */
static void steps_eval(const char *dir, const char *run, const char *loss, const char *acc)
{
    char t[512];
    snprintf(t, sizeof t, "%s\n0,0,%s,1,0,0,0.0001\n", REC_STEPS_HEADER, loss);
    put(dir, run, REC_STEPS_CSV, t);
    snprintf(t, sizeof t, "%s\n1,0,%s,%s\n", REC_EVAL_HEADER, loss, acc);
    put(dir, run, REC_EVAL_CSV, t);
}

/* tensors.csv rows: layer, kind, count, nonzero, flushed (one step) */
static void tensors(const char *dir, const char *run, const char *rows)
{
    char t[4096];
    snprintf(t, sizeof t, "%s\n%s", REC_TENSORS_HEADER, rows);
    put(dir, run, REC_TENSORS_CSV, t);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s", path);
    char *text = calloc(1, 1 << 21);
    ck_assert_ptr_nonnull(text);
    ck_assert(fread(text, 1, (1 << 21) - 1, f) > 0);
    fclose(f);
    return text;
}

static const char *field(const csv_table *t, size_t row, const char *col)
{
    const int k = csv_table_column(t, col);
    ck_assert_msg(k >= 0, "no column %s", col);
    return t->fields[row * t->cols + (size_t)k];
}

/* Runs one study over the records in dir; the page's text. */
static char *study(const char *dir, void (*fn)(repro_study *))
{
    char msg[512];
    repro_options o = {.out_dir = dir, .level = REPRO_SMOKE};
    repro_study s = {.o = &o, .plan = &repro_plans[REPRO_SMOKE]};
    s.rep = rp_open(dir, "notes", msg, sizeof msg);
    ck_assert_ptr_nonnull(s.rep);
    fn(&s);
    ck_assert_msg(s.failures == 0, "%s", s.msg);
    rp_close(s.rep, msg, sizeof msg); /* no gnuplot is not a failure here */
    char p[512];
    snprintf(p, sizeof p, "%s/index.html", dir);
    return slurp(p);
}

/* Nine runs: weight gradients of 1000 values each, per setting:
 *   fp32:      100 zero, 600 more an fp16 cast flushes: 10% and 70% zero
 *   no scale:  700 zero as stored (fp16):               70%
 *   dynamic:   120 zero as stored:                      12%
 * losses per seed: fp32 1, 1.25, 1.5 (mean 1.25); no scale 1.75, 2, 2.25
 * (mean 2: 0.75 above each twin); dynamic 1, 1.25, 1.75 (mean 1.3333: 0,
 * 0, 0.25 from each twin); accuracy 0.5, 0.25, 0.5. */
START_TEST(loss_scaling_sentences)
{
    char dir[] = "/tmp/ampscope-deep-XXXXXX", p[512], msg[512];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(p, sizeof p, "%s/runs", dir);
    ck_assert_int_eq(mkdir(p, 0777), 0);
    static const char *const losses[3][3] = {
        {"1", "1.25", "1.5"}, {"1.75", "2", "2.25"}, {"1", "1.25", "1.75"}};
    static const char *const accs[3] = {"0.5", "0.25", "0.5"};
    static const char *const rows[3] = {
        "0,fc1,weight_grad,fp16,1,1000,900,0,600,0.666666667,0,0,0,0,0.1,0.5\n",
        "0,fc1,weight_grad,fp16,1,1000,300,0,0,0,0,0,0,0,0.7,0.5\n",
        "0,fc1,weight_grad,fp16,1,1000,880,0,0,0,0,0,0,0,0.12,0.5\n"};
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 3; k++) {
            char run[64];
            repro_deep_run_name(run, sizeof run, i, k + 1);
            fake_run(dir, run);
            steps_eval(dir, run, losses[i][k], accs[i]);
            tensors(dir, run, rows[i]);
            put(dir, run, REC_HIST_CSV,
                REC_HIST_HEADER "\n0,fc1,weight_grad,zero,100\n0,fc1,weight_grad,-30,900\n");
        }
    char *page = study(dir, repro_study_loss_scaling);
    HAS(page, "In fp16 without scaling 70.0% of its weight gradients are zero, against 12.0% "
              "with dynamic scaling; fp32&#39;s gradients are 10.0% zero, and cast to fp16 at "
              "scale 1 would be 70.0% zero.");
    HAS(page, "fp32 1.2500, fp16 without scaling 2.0000, fp16 with dynamic scaling 1.3333; "
              "test accuracy 50.00%, 25.00%, 50.00%.");
    HAS(page, "REPRODUCED: loss scaling matters on this net");
    /* per seed: 0.75 each without scaling; 0, 0, 0.25 with dynamic scaling */
    HAS(page, "seeds 1-3: without scaling +0.7500, +0.7500, +0.7500; with dynamic scaling "
              "+0.0000, +0.0000, +0.2500. Over the seeds: without scaling +0.7500 from fp32&#39;s "
              "mean (fp32&#39;s seeds 1.0000-1.5000, without scaling 1.7500-2.2500); with dynamic "
              "scaling +0.0833. Dynamic scaling ends nearer fp32 than no scaling does.");
    free(page);
    /* the CSV says the same, run by run */
    csv_table t;
    snprintf(p, sizeof p, "%s/loss_scaling.csv", dir);
    ck_assert_msg(csv_table_read(p, "loss_scaling.csv", &t, msg, sizeof msg) == 0, "%s", msg);
    ck_assert_uint_eq(t.rows, 10);
    ck_assert_str_eq(field(&t, 1, "run"), "deepmlp-o0-s1");
    ck_assert_str_eq(field(&t, 1, "wgrad_zero_frac_of_all"), "0.100000");
    ck_assert_str_eq(field(&t, 1, "wgrad_zero_in_fp16_frac_of_all"), "0.700000");
    ck_assert_str_eq(field(&t, 5, "final_loss"), "2.000000");
    ck_assert_str_eq(field(&t, 9, "wgrad_zero_in_fp16_frac_of_all"), "0.120000");
    csv_table_free(&t);

    /* seed 1 without scaling ends where its fp32 twin does (gap 0, dynamic's
     * 0): not shown */
    char run[64];
    repro_deep_run_name(run, sizeof run, 1, 1);
    steps_eval(dir, run, "1", "0.25");
    page = study(dir, repro_study_loss_scaling);
    HAS(page, "NOT SHOWN at this size");
    HAS(page, "without scaling +0.0000, +0.7500, +0.7500;");
    free(page);
    ut_remove_tree(dir);
}
END_TEST

/* Five nets' fp32 runs; activation and weight gradients of 1000 values per
 * layer.  deepmlp's fc1 activation gradients: 400 flushed of 1000 (40%, 9
 * points above SSD's 31%), 100 zero (10%: 58 points below MindSpore's
 * 68%), 250 in [2^-32, 2^-20) (25%: 21 points above 4%).  Per net, of all
 * its activation / weight gradients: deepmlp (400 + 200) / 2000 = 30% and
 * 500 / 1000 = 50%; every other net 1 / 1000 = 0.10% and 0.00%. */
START_TEST(underflow_layer_sentences)
{
    char dir[] = "/tmp/ampscope-layers-XXXXXX", p[512], msg[512];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(p, sizeof p, "%s/runs", dir);
    ck_assert_int_eq(mkdir(p, 0777), 0);
    const char *runs[] = {"mlp-o0", "lenet5-o0", "deepmlp-o0-s1", "resnet-o0", "transformer-o0"};
    for (int i = 0; i < 5; i++) {
        fake_run(dir, runs[i]);
        steps_eval(dir, runs[i], "1", "0.5");
        if (i == 2) {
            tensors(dir, runs[i],
                    "0,fc1,activation_grad,fp16,1,1000,900,0,400,0.444444444,0,0,0,0,0.1,0.5\n"
                    "0,fc1,weight_grad,fp16,1,1000,1000,0,500,0.5,0,0,0,0,0,0.5\n"
                    "0,fc2,activation_grad,fp16,1,1000,1000,0,200,0.2,0,0,0,0,0,0.5\n");
            put(dir, runs[i], REC_HIST_CSV,
                REC_HIST_HEADER "\n0,fc1,activation_grad,zero,100\n"
                                "0,fc1,activation_grad,-30,250\n0,fc1,activation_grad,-3,650\n");
        } else {
            tensors(dir, runs[i],
                    "0,fc1,activation_grad,fp16,1,1000,1000,0,1,0.001,0,0,0,0,0,0.5\n"
                    "0,fc1,weight_grad,fp16,1,1000,1000,0,0,0,0,0,0,0,0,0.5\n");
            put(dir, runs[i], REC_HIST_CSV, REC_HIST_HEADER "\n0,fc1,activation_grad,-3,1000\n");
        }
    }
    char *page = study(dir, repro_study_underflow_layers);
    HAS(page, "mlp 0.10% and 0.00%; lenet5 0.10% and 0.00%; deepmlp 30.00% and 50.00%; resnet "
              "0.10% and 0.00%; transformer 0.10% and 0.00%.");
    HAS(page, "The most in one layer: 40.0% of deepmlp&#39;s fc1 activation gradients (10.0% are "
              "zero in fp32, 25.0% lie in [2^-32, 2^-20)) and 50.0% of deepmlp&#39;s fc1 weight "
              "gradients.");
    HAS(page, "+9.0 points from SSD&#39;s 31% flushed; its zeros -58.0 and its band +21.0 points");
    HAS(page, "At least as many as in SSD");
    free(page);
    csv_table t;
    snprintf(p, sizeof p, "%s/underflow_layers_summary.csv", dir);
    ck_assert_msg(csv_table_read(p, "summary", &t, msg, sizeof msg) == 0, "%s", msg);
    ck_assert_uint_eq(t.rows, 11);
    ck_assert_str_eq(field(&t, 5, "net"), "deepmlp");
    ck_assert_str_eq(field(&t, 5, "flushed_frac_of_all"), "0.300000");
    ck_assert_str_eq(field(&t, 5, "max_layer"), "fc1");
    ck_assert_str_eq(field(&t, 6, "flushed_frac_of_all"), "0.500000");
    csv_table_free(&t);
    snprintf(p, sizeof p, "%s/underflow_layers.csv", dir);
    ck_assert_msg(csv_table_read(p, "layers", &t, msg, sizeof msg) == 0, "%s", msg);
    /* deepmlp's fc1 activation gradients: the row the sentence cites */
    bool seen = false;
    for (size_t i = 1; i < t.rows; i++)
        if (strcmp(field(&t, i, "net"), "deepmlp") == 0 &&
            strcmp(field(&t, i, "layer"), "fc1") == 0 &&
            strcmp(field(&t, i, "gradients"), "activation gradients") == 0) {
            ck_assert_str_eq(field(&t, i, "flushed_frac_of_all"), "0.400000");
            ck_assert_str_eq(field(&t, i, "zero_frac_of_all"), "0.100000");
            ck_assert_str_eq(field(&t, i, "frac_of_all_in_2^-32_to_2^-20"), "0.250000");
            seen = true;
        }
    ck_assert(seen);
    csv_table_free(&t);
    ut_remove_tree(dir);
}
END_TEST

void repro_notes_deep(Suite *s)
{
    TCase *tc = tcase_create("deep");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, loss_scaling_sentences);
    tcase_add_test(tc, underflow_layer_sentences);
    suite_add_tcase(s, tc);
}
