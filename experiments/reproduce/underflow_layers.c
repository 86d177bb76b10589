/* underflow_layers.c: underflow at scale 1, per layer, for every net: the
 * fraction of each layer's activation and weight gradients that an fp16
 * cast at scale 1 flushes to zero (tensors.csv's flushed, the emulator's
 * classification of every element), with its fp32 zeros and the MindSpore
 * article's [2^-32, 2^-20) band (hist.csv), beside SSD's 31% and
 * MindSpore's 68% / 4%.  Every net trained in fp32 (O0), statistics for
 * fp16. */
#include "reproduce_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"
#include "report.h"

/* The literature's fractions (REFERENCES.md): Micikevicius et al. 2018,
 * Fig. 3 (SSD); the MindSpore AMP article's one layer. */
static const double ssd_flushed = 0.31, ms_zero = 0.68, ms_band = 0.04;

#define N_NETS 5
static const char *const nets[N_NETS] = {"mlp", "lenet5", "deepmlp", "resnet", "transformer"};

/* The fp32 run of net i: the underflow and loss-scaling studies' runs, or a
 * short probe for the nets no other study trains.  The run's name in run. */
static int train_net(repro_study *s, int i, char *run, size_t len)
{
    const repro_plan *p = s->plan;
    switch (i) {
    case 0: snprintf(run, len, "mlp-o0"); return repro_train_mlp_o0(s);
    case 1: snprintf(run, len, "lenet5-o0"); return repro_train_lenet5_o0(s);
    case 2: repro_deep_run_name(run, len, 0, 1); return repro_train_deep(s, 0, 1);
    default: break;
    }
    /* statistics at the first step and halfway */
    char every[32];
    snprintf(every, sizeof every, "%d",
             atoi(p->probe_steps) / 2 > 0 ? atoi(p->probe_steps) / 2 : 1);
    snprintf(run, len, "%s-o0", nets[i]);
    return repro_train(s, run, NULL, "net", nets[i], "mode", "O0", "steps", p->probe_steps, "batch",
                       p->probe_batch, "stats-every", every, "hist-every", every, "trace-every",
                       "0", "seed", "1", NULL);
}

/* One layer's gradients of one kind over every recorded step. */
typedef struct layer_sum {
    char layer[REC_NAME_MAX];
    rec_kind kind;
    double count, zero, flushed, band;
} layer_sum;

/* The sums per layer and kind (activation and weight gradients), in the
 * order tensors.csv first names them (the net's, input first).  *out
 * malloc'ed.  0, or -1 with the reason in s->msg. */
static int layer_sums(repro_study *s, const char *run, layer_sum **out, size_t *n_out)
{
    char p[4096];
    rec_tensor_row *t = NULL;
    rec_hist_row *h = NULL;
    size_t nt = 0, nh = 0, n = 0;
    *out = NULL;
    repro_run_file(s, p, sizeof p, run, REC_TENSORS_CSV);
    if (rec_read_tensors(p, &t, &nt, s->msg, sizeof s->msg) != 0) return -1;
    repro_run_file(s, p, sizeof p, run, REC_HIST_CSV);
    layer_sum *sums = calloc(nt ? nt : 1, sizeof *sums);
    if (!sums || rec_read_hist(p, &h, &nh, s->msg, sizeof s->msg) != 0) {
        if (!sums) snprintf(s->msg, sizeof s->msg, "out of memory");
        free(t);
        free(sums);
        return -1;
    }
    for (size_t i = 0; i < nt; i++) {
        if (t[i].kind != REC_ACTIVATION_GRAD && t[i].kind != REC_WEIGHT_GRAD) continue;
        size_t j = 0;
        while (j < n && !(sums[j].kind == t[i].kind && strcmp(sums[j].layer, t[i].layer) == 0))
            j++;
        if (j == n) {
            snprintf(sums[n].layer, sizeof sums[n].layer, "%s", t[i].layer);
            sums[n++].kind = t[i].kind;
        }
        sums[j].count += (double)t[i].count;
        sums[j].zero += (double)(t[i].count - t[i].nonzero - t[i].nonfinite);
        sums[j].flushed += (double)t[i].flushed;
    }
    for (size_t i = 0; i < nh; i++)
        if (h[i].bin >= AK_HIST_BIN(-32) && h[i].bin < AK_HIST_BIN(-20))
            for (size_t j = 0; j < n; j++)
                if (sums[j].kind == h[i].kind && strcmp(sums[j].layer, h[i].layer) == 0)
                    sums[j].band += (double)h[i].count;
    free(t);
    free(h);
    if (n == 0) {
        free(sums);
        repro_run_file(s, p, sizeof p, run, REC_TENSORS_CSV);
        snprintf(s->msg, sizeof s->msg, "%.900s has no gradient rows", p);
        return -1;
    }
    *out = sums;
    *n_out = n;
    return 0;
}

static const char *kind_label(rec_kind k)
{
    return k == REC_ACTIVATION_GRAD ? "activation gradients" : "weight gradients";
}

/* A net's gradients of one kind: the fraction flushed over all its layers
 * and its worst layer (the fraction flushed there, its zeros and band). */
typedef struct net_sum {
    size_t layers;
    double flushed; /* of all the net's values of the kind */
    char layer[REC_NAME_MAX];
    double top, top_zero, top_band;
} net_sum;

/* The CSV files, and ns[net][0] (activation gradients), ns[net][1]
 * (weight gradients).  false with the reason in s->msg. */
static bool write_csvs(repro_study *s, const char runs[N_NETS][64], net_sum ns[N_NETS][2])
{
    repro_csv all = {.ok = false}, sum = {.ok = false}, fig[2] = {{.ok = false}, {.ok = false}};
    if (!repro_csv_open(s, &all, "underflow_layers.csv",
                        "net,run,layer,position,gradients,count,zero_frac_of_all,"
                        "flushed_frac_of_all,flushed_frac_of_nonzero,"
                        "frac_of_all_in_2^-32_to_2^-20") ||
        !repro_csv_open(s, &sum, "underflow_layers_summary.csv",
                        "net,gradients,layers,flushed_frac_of_all,max_layer_flushed_frac_of_all,"
                        "max_layer") ||
        !repro_csv_open(s, &fig[0], "underflow_layers_act.csv", "x,y,series") ||
        !repro_csv_open(s, &fig[1], "underflow_layers_wgt.csv", "x,y,series")) {
        repro_csv_abort(&all);
        repro_csv_abort(&sum);
        repro_csv_abort(&fig[0]);
        return false;
    }
    for (int i = 0; i < N_NETS; i++) {
        layer_sum *ls;
        size_t n;
        if (layer_sums(s, runs[i], &ls, &n) != 0) {
            repro_csv_abort(&all);
            repro_csv_abort(&sum);
            repro_csv_abort(&fig[0]);
            repro_csv_abort(&fig[1]);
            return false;
        }
        for (int k = 0; k < 2; k++) {
            const rec_kind kind = k == 0 ? REC_ACTIVATION_GRAD : REC_WEIGHT_GRAD;
            size_t layers = 0, pos = 0;
            for (size_t j = 0; j < n; j++)
                layers += ls[j].kind == kind;
            net_sum *t = &ns[i][k];
            *t = (net_sum){.layers = layers, .top = -1};
            double count = 0, flushed = 0;
            for (size_t j = 0; j < n; j++) {
                const layer_sum *l = &ls[j];
                if (l->kind != kind) continue;
                const double nonzero = l->count - l->zero;
                const double f = l->flushed / l->count;
                pos++;
                repro_csv_row(&all, "%s,%s,%s,%zu,%s,%.0f,%.6f,%.6f,%.6f,%.6f", nets[i], runs[i],
                              l->layer, pos, kind_label(kind), l->count, l->zero / l->count, f,
                              nonzero > 0 ? l->flushed / nonzero : 0.0, l->band / l->count);
                /* x: the layer's depth, 0 at the input and 1 at the output */
                repro_csv_row(&fig[k], "%.4f,%.4f,%s",
                              layers > 1 ? (double)(pos - 1) / (layers - 1) : 0.0, 100 * f,
                              nets[i]);
                count += l->count;
                flushed += l->flushed;
                if (f > t->top) {
                    t->top = f;
                    t->top_zero = l->zero / l->count;
                    t->top_band = l->band / l->count;
                    snprintf(t->layer, sizeof t->layer, "%s", l->layer);
                }
            }
            t->flushed = count > 0 ? flushed / count : NAN;
            if (layers)
                repro_csv_row(&sum, "%s,%s,%zu,%.6f,%.6f,%s", nets[i], kind_label(kind), layers,
                              t->flushed, t->top, t->layer);
        }
        free(ls);
    }
    /* the literature's line beside the activation gradients */
    repro_csv_row(&fig[0], "0,%.1f,SSD (Micikevicius 2018)", 100 * ssd_flushed);
    repro_csv_row(&fig[0], "1,%.1f,SSD (Micikevicius 2018)", 100 * ssd_flushed);
    const bool ok1 = repro_csv_close(s, &all), ok2 = repro_csv_close(s, &sum);
    const bool ok3 = repro_csv_close(s, &fig[0]), ok4 = repro_csv_close(s, &fig[1]);
    return ok1 && ok2 && ok3 && ok4;
}

void repro_study_underflow_layers(repro_study *s)
{
    rp_section(s->rep, "underflow-layers", "Underflow at scale 1, per layer, for every net");
    char runs[N_NETS][64];
    for (int i = 0; i < N_NETS; i++)
        if (train_net(s, i, runs[i], sizeof runs[i]) != 0) {
            repro_section_failed(s, "the fp32 runs of the per-layer underflow study");
            return;
        }
    net_sum ns[N_NETS][2];
    if (!write_csvs(s, runs, ns)) {
        repro_section_failed(s, "underflow_layers.csv");
        return;
    }
    /* the worst layer of each kind over every net */
    int w[2] = {0, 0};
    for (int k = 0; k < 2; k++)
        for (int i = 1; i < N_NETS; i++)
            if (ns[i][k].top > ns[w[k]][k].top) w[k] = i;
    const net_sum *a = &ns[w[0]][0], *g = &ns[w[1]][1];
    char literature[512], ours[1536], diff[1024], per_net[768] = "";
    for (int i = 0; i < N_NETS; i++) {
        const size_t used = strlen(per_net);
        snprintf(per_net + used, sizeof per_net - used, "%s%s %.2f%% and %.2f%%", i ? "; " : "",
                 nets[i], 100 * ns[i][0].flushed, 100 * ns[i][1].flushed);
    }
    snprintf(literature, sizeof literature,
             "Micikevicius et al. 2018, Fig. 3 (Multibox SSD): a plain fp16 cast zeroes about "
             "%.0f%% of the activation gradients beyond those already zero. The MindSpore AMP "
             "article: in one layer %.0f%% of the activation gradients are zero and about %.0f%% "
             "lie in [2^-32, 2^-20].",
             100 * ssd_flushed, 100 * ms_zero, 100 * ms_band);
    snprintf(ours, sizeof ours,
             "Each net trained in fp32 (O0) with statistics for fp16 at scale 1 over every "
             "recorded step (runs %s, %s, %s, %s, %s). Flushed by an fp16 cast, of all "
             "activation and of all weight gradients: %s. The most in one layer: %.1f%% of "
             "%s's %s activation gradients (%.1f%% are zero in fp32, %.1f%% lie in [2^-32, "
             "2^-20)) and %.1f%% of %s's %s weight gradients.",
             runs[0], runs[1], runs[2], runs[3], runs[4], per_net, 100 * a->top, nets[w[0]],
             a->layer, 100 * a->top_zero, 100 * a->top_band, 100 * g->top, nets[w[1]], g->layer);
    snprintf(diff, sizeof diff,
             "The worst layer's activation gradients: %+.1f points from SSD's %.0f%% flushed; "
             "its zeros %+.1f and its band %+.1f points from MindSpore's layer. %s",
             100 * (a->top - ssd_flushed), 100 * ssd_flushed, 100 * (a->top_zero - ms_zero),
             100 * (a->top_band - ms_band),
             a->top >= ssd_flushed ? "At least as many as in SSD: this net's underflow bites."
                                   : "Fewer than in SSD in every layer of every net.");
    rp_claim(s->rep,
             "A plain fp16 cast at scale 1 flushes a net's small gradients to zero, and how many "
             "depends on the layer.",
             literature, ours, diff);
    const char *av[] = {"title=Activation gradients an fp16 cast at scale 1 flushes, per layer",
                        "xlabel=depth (0: the first layer, 1: the last)", "ylabel=% of all values",
                        "points=1", NULL};
    rp_figure(s->rep, "lines.gp", "underflow_layers_act",
              "Activation gradients flushed per layer, beside SSD's 31%", av);
    const char *wv[] = {"title=Weight gradients an fp16 cast at scale 1 flushes, per layer",
                        "xlabel=depth (0: the first layer, 1: the last)", "ylabel=% of all values",
                        "points=1", NULL};
    rp_figure(s->rep, "lines.gp", "underflow_layers_wgt", "Weight gradients flushed per layer", wv);
    rp_table_csv(s->rep, "Per net: the fraction flushed over all its layers, and its worst layer",
                 "underflow_layers_summary.csv");
    rp_table_csv(s->rep, "Per layer (position 1: the input's side)", "underflow_layers.csv");
}
