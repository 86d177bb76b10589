/* run_fixtures.h: two hand-written run directories for the report's tests
 * (test_runs, test_report): run "a" (O2, the pytorch scaler, a skipped
 * step, layers fc1 and relu1) and run "b" (O0, layer fc1), with the
 * numbers the expected figures' CSV files are worked out from. */
#ifndef AMPSCOPE_TESTS_PLOTS_RUN_FIXTURES_H
#define AMPSCOPE_TESTS_PLOTS_RUN_FIXTURES_H

#include "record.h"
#include "report_testing.h"

static const char steps_a[] = "step,epoch,loss,loss_scale,found_inf,skipped,lr\n"
                              "0,0,2.5,65536,0,0,0.01\n"
                              "1,0,2,65536,1,1,0.01\n"
                              "2,0,1.5,32768,0,0,0.01\n";

static const char eval_a[] = "epoch,step,test_loss,test_accuracy\n"
                             "0,3,1.25,0.75\n";

#define TENSORS_HEADER                                                                             \
    "step,layer,kind,dtype,scale,count,nonzero,nonfinite,flushed,flushed_frac_of_nonzero,"         \
    "subnormal,subnormal_frac_of_nonzero,overflowed,overflow_frac_of_nonzero,zero_frac_of_count,"  \
    "amax\n"

static const char tensors_a[] =
    TENSORS_HEADER "0,fc1,weight,fp16,65536,8,8,0,0,0,0,0,0,0,0,1\n"
                   "0,fc1,weight_grad,fp16,65536,8,8,0,2,0.25,1,0.125,0,0,0,0.5\n"
                   "0,fc1,activation_grad,fp16,65536,4,4,0,1,0.25,0,0,0,0,0,0.25\n"
                   "0,relu1,activation_grad,fp16,65536,4,2,0,0,0,0,0,0,0,0.5,0.25\n"
                   "2,fc1,weight_grad,fp16,32768,8,8,0,4,0.5,0,0,0,0,0,0.5\n"
                   "2,fc1,activation_grad,fp16,32768,4,0,0,0,,0,,0,,1,0\n";

static const char updates_a[] =
    "step,layer,elements,nonzero_updates,lost,lost_frac_of_nonzero,rel_update_error,"
    "predicted_lost,predicted_lost_frac_of_nonzero,skipped\n"
    "0,fc1,8,8,2,0.25,0.01,3,0.375,0\n"
    "2,fc1,8,8,1,0.125,0.01,1,0.125,0\n";

static const char hist_a[] = "step,layer,kind,bin,count\n"
                             "0,fc1,activation_grad,-20,3\n"
                             "2,fc1,activation_grad,zero,1\n"
                             "2,fc1,activation_grad,-20,2\n"
                             "2,relu1,activation_grad,-10,4\n"
                             "2,relu1,activation_grad,-20,5\n"
                             "2,fc1,weight_grad,-8,8\n";

static inline void write_run_json(const char *dir, const char *mode, const char *loss_scale)
{
    char path[1024], msg[512];
    rec_run *info = rec_run_new("0.1.0", "abc1234", "cpu", "test machine");
    ck_assert_ptr_nonnull(info);
    ck_assert_int_eq(rec_run_set_string(info, "net", "mlp"), AN_OK);
    ck_assert_int_eq(rec_run_set_string(info, "mode", mode), AN_OK);
    ck_assert_int_eq(rec_run_set_string(info, "dtype", "fp16"), AN_OK);
    if (loss_scale) ck_assert_int_eq(rec_run_set_string(info, "loss-scale", loss_scale), AN_OK);
    ck_assert_int_eq(rec_run_set_int(info, "batch", 4), AN_OK);
    rec_run_set_start(info, 1700000000);
    path_in(path, sizeof path, dir, "run.json");
    ck_assert_int_eq(rec_run_write(info, path, msg, sizeof msg), AN_OK);
    rec_run_free(info);
}

/* Run "a": O2 with the pytorch scaler, one skipped step, layers fc1 and relu1. */
static inline void make_run_a(const char *dir)
{
    ck_assert_int_eq(mkdir(dir, 0777), 0);
    write_run_json(dir, "O2", "pytorch");
    put_in(dir, "steps.csv", steps_a);
    put_in(dir, "eval.csv", eval_a);
    put_in(dir, "tensors.csv", tensors_a);
    put_in(dir, "updates.csv", updates_a);
    put_in(dir, "hist.csv", hist_a);
}

/* Run "b": O0, no scaler, two steps, layer fc1 only. */
static inline void make_run_b(const char *dir)
{
    ck_assert_int_eq(mkdir(dir, 0777), 0);
    write_run_json(dir, "O0", NULL);
    put_in(dir, "steps.csv",
           "step,epoch,loss,loss_scale,found_inf,skipped,lr\n"
           "0,0,2.25,1,0,0,0.01\n"
           "1,0,1.75,1,0,0,0.01\n");
    put_in(dir, "eval.csv",
           "epoch,step,test_loss,test_accuracy\n"
           "0,2,1.5,0.5\n"
           "1,4,1,0.625\n");
    put_in(dir, "tensors.csv",
           TENSORS_HEADER "1,fc1,weight_grad,fp16,1,8,8,0,1,0.125,0,0,0,0,0,2\n");
    put_in(dir, "updates.csv",
           "step,layer,elements,nonzero_updates,lost,lost_frac_of_nonzero,rel_update_error,"
           "predicted_lost,predicted_lost_frac_of_nonzero,skipped\n"
           "1,fc1,8,8,0,0,0,0,0,0\n");
    put_in(dir, "hist.csv",
           "step,layer,kind,bin,count\n"
           "1,fc1,activation_grad,-3,2\n"
           "1,fc1,weight_grad,-5,6\n"
           "1,fc1,weight_grad,zero,2\n");
}

/* The two runs in dir/a, dir/b and a report folder dir/out. */
static inline void make_runs(const char *dir, char *a, char *b, char *out, size_t len)
{
    path_in(a, len, dir, "a");
    path_in(b, len, dir, "b");
    path_in(out, len, dir, "out");
    make_run_a(a);
    make_run_b(b);
}

#endif
