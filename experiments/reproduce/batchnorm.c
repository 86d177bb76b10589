/* batchnorm.c: BatchNorm in fp16 against fp32: the resnet on Fashion-MNIST
 * in O2 fp16 with keep_batchnorm_fp32 on (Apex's and MindSpore's O2) and off
 * (Apex's O3 for BatchNorm), and O0: each BatchNorm's running variance at the
 * last step against O0's at the same step (the checkpoints), and accuracy. */
#include "reproduce_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report.h"
#include "safetensors.h"

/* Element i of t as a double (F32, F16, BF16); NaN for another dtype. */
static double elem(const st_tensor *t, uint64_t i)
{
    fpe_env env = fpe_env_default();
    switch (t->dtype) {
    case ST_F32: return fpe_f32_to_f64(&env, ((const uint32_t *)t->data)[i]);
    case ST_F16: return fpe_f16_to_f64(&env, ((const uint16_t *)t->data)[i]);
    case ST_BF16: return fpe_bf16_to_f64(&env, ((const uint16_t *)t->data)[i]);
    default: return NAN;
    }
}

static bool ends_with(const char *s, const char *tail)
{
    const size_t n = strlen(s), k = strlen(tail);
    return n >= k && strcmp(s + n - k, tail) == 0;
}

static st_file *open_ckpt(repro_study *s, const char *run)
{
    char p[4096];
    repro_run_file(s, p, sizeof p, run, REC_CHECKPOINT);
    return st_open(p, s->msg, sizeof s->msg);
}

void repro_study_batchnorm(repro_study *s)
{
    const repro_net_plan *p = &repro_net_plans[s->o->level];
    rp_section(s->rep, "batchnorm", "BatchNorm in fp16 against fp32");
    static const struct {
        const char *run, *mode, *keep, *what;
    } runs[] = {
        {"rn-O0", "O0", "off", "fp32 (O0)"},
        {"rn-O2-keepbn", "O2", "on", "O2 fp16: keep_batchnorm_fp32 on"},
        {"rn-O2-fp16bn", "O2", "off", "O2 fp16: keep_batchnorm_fp32 off"},
    };
    repro_counts c[3];
    for (int i = 0; i < 3; i++)
        if (repro_train(s, runs[i].run, NULL, "net", "resnet", "width", p->rn_width, "subset",
                        p->rn_subset, "steps", p->rn_steps, "mode", runs[i].mode, "loss-scale",
                        i ? "pytorch" : "none", "keep-batchnorm-fp32", runs[i].keep, "stats-every",
                        p->stats_every, "hist-every", "0", "trace-every", "0", "seed", "1",
                        NULL) != 0 ||
            repro_count_run(s, runs[i].run, NULL, &c[i]) != 0) {
            repro_section_failed(s, "batchnorm.csv");
            return;
        }
    st_file *f[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3; i++)
        if (!(f[i] = open_ckpt(s, runs[i].run))) {
            for (int k = 0; k < i; k++)
                st_close(f[k]);
            repro_section_failed(s, "batchnorm_var.csv");
            return;
        }
    /* per BatchNorm and run: the mean and max of |v - v0| / |v0| over channels */
    repro_csv t = {.ok = false}, fig = {.ok = false};
    double worst[3] = {0, 0, 0}, mean_sum[3] = {0, 0, 0};
    int layers = 0;
    bool ok = repro_csv_open(s, &t, "batchnorm_var.csv",
                             "layer,run,dtype,channels,mean_rel_err_vs_O0,max_rel_err_vs_O0") &&
              repro_csv_open(s, &fig, "batchnorm_var_fig.csv", "x,y,series");
    for (size_t k = 0; ok && k < st_count(f[0]); k++) {
        const st_tensor *v0 = st_at(f[0], k);
        if (!ends_with(v0->name, ".running_var")) continue;
        const uint64_t n = st_tensor_elements(v0);
        for (int r = 1; r < 3; r++) {
            const st_tensor *v = st_find(f[r], v0->name);
            if (!v || st_tensor_elements(v) != n) {
                snprintf(s->msg, sizeof s->msg, "%s: the checkpoint of %s lacks %s or its shape",
                         REC_CHECKPOINT, runs[r].run, v0->name);
                ok = false;
                break;
            }
            double sum = 0, max = 0;
            for (uint64_t i = 0; i < n; i++) {
                const double a = elem(v0, i), e = fabs(elem(v, i) - a) / fabs(a);
                sum += e;
                if (!(e <= max)) max = e; /* NaN wins */
            }
            const double mean = sum / (double)n;
            repro_csv_row(&t, "%s,%s,%s,%llu,%.4g,%.4g", v0->name, runs[r].run,
                          st_dtype_name(v->dtype), (unsigned long long)n, mean, max);
            repro_csv_row(&fig, "%d,%.6g,%s", layers, mean, runs[r].run);
            mean_sum[r] += mean;
            if (!(max <= worst[r])) worst[r] = max;
        }
        layers++;
    }
    for (int i = 0; i < 3; i++)
        st_close(f[i]);
    if (ok && layers == 0) {
        snprintf(s->msg, sizeof s->msg, "%s of rn-O0 holds no running_var", REC_CHECKPOINT);
        ok = false;
    }
    if (!ok) {
        repro_csv_abort(&t);
        repro_csv_abort(&fig);
        repro_section_failed(s, "batchnorm_var.csv");
        return;
    }
    const bool t_ok = repro_csv_close(s, &t);
    if (!repro_csv_close(s, &fig) || !t_ok) {
        repro_section_failed(s, "batchnorm_var.csv");
        return;
    }
    char acc[3][32], err[3][32], mx[3][32];
    for (int i = 0; i < 3; i++) {
        snprintf(acc[i], sizeof acc[i], "%.4f", c[i].sum.test_accuracy);
        snprintf(err[i], sizeof err[i], "%.4g", mean_sum[i] / layers);
        snprintf(mx[i], sizeof mx[i], "%.4g", worst[i]);
    }
    repro_csv b = {.ok = false};
    if (!repro_csv_open(s, &b, "batchnorm.csv",
                        "run,precision,steps,test_accuracy,skipped_steps,"
                        "mean_running_var_rel_err_vs_O0,max_running_var_rel_err_vs_O0")) {
        repro_section_failed(s, "batchnorm.csv");
        return;
    }
    for (int i = 0; i < 3; i++)
        repro_csv_row(&b, "%s,%s,%lld,%s,%lld,%s,%s", runs[i].run, runs[i].what,
                      (long long)c[i].sum.steps, acc[i], (long long)c[i].sum.skipped, err[i],
                      mx[i]);
    if (!repro_csv_close(s, &b)) {
        repro_section_failed(s, "batchnorm.csv");
        return;
    }
    char ours[512], difference[1024];
    snprintf(
        ours, sizeof ours,
        "The resnet (width %s, %d BatchNorm layers) on Fashion-MNIST, %lld steps on %s "
        "samples, seed 1; O2 fp16 with PyTorch's dynamic scale. The running variance of "
        "every BatchNorm at the last step against O0's at the same step (checkpoint.safetensors), "
        "averaged over channels and then layers.",
        p->rn_width, layers, (long long)c[0].sum.steps, p->rn_subset);
    snprintf(difference, sizeof difference,
             "With BatchNorm in fp16 (keep_batchnorm_fp32 off) the running variance is off O0's "
             "by %s on average (at most %s); with BatchNorm in fp32 by %s (at most %s). Test "
             "accuracy: %s (off), %s (on), %s (O0). Both O2 runs differ from O0 in every fp16 "
             "layer, so the part BatchNorm's precision adds is the difference between the two "
             "O2 rows: %s.",
             err[2], mx[2], err[1], mx[1], acc[2], acc[1], acc[0],
             mean_sum[2] > mean_sum[1] ? "fp16 BatchNorm moved the running variance further"
                                       : "fp16 BatchNorm did not move it further at this size");
    rp_claim(s->rep,
             "BatchNorm should keep its statistics and parameters in fp32 (Apex's and "
             "MindSpore's O2 keep_batchnorm_fp32): in fp16 its running variance and its "
             "sums of squares lose precision or overflow.",
             "Apex (frontend.py: O2 keep_batchnorm_fp32=True) and MindSpore (amp.py, O2) state "
             "the rule; neither gives a measured number.",
             ours, difference);
    rp_table_csv(s->rep, "BatchNorm in fp16 or fp32: running variance and accuracy",
                 "batchnorm.csv");
    rp_table_csv(s->rep, "Per BatchNorm: running variance against O0", "batchnorm_var.csv");
    const char *v[] = {"in=batchnorm_var_fig.csv",
                       "title=Running variance: mean relative error against O0, per BatchNorm",
                       "xlabel=BatchNorm (in the checkpoint's order)",
                       "ylabel=relative error",
                       "points=1",
                       NULL};
    rp_figure(s->rep, "lines.gp", "batchnorm_var", "Running variance against O0", v);
}
