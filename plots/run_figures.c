/* run_figures.c: the figures of rp_add_runs, every run overlaid where the
 * figure allows it: the training loss and test accuracy, the loss scale
 * with the skipped steps, the gradients' log2 histograms at the last
 * recorded step, and per layer the gradients flushed to zero and the
 * weight updates lost to rounding.  Each writes its CSV and draws it
 * through rp_figure_from; a run without the table a figure needs is a note.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_internal.h"

/* ---- training curves and the loss scale ---- */
int rp_training_figures(rp_report *r, run_data *runs, size_t n)
{
    rp_section(r, "training", "Training");
    sbuf loss = {0}, acc = {0};
    bool any_loss = false, any_acc = false;
    sb_add(&loss, "x,y,series\n");
    sb_add(&acc, "x,y,series\n");
    for (size_t i = 0; i < n; i++) {
        const run_data *run = &runs[i];
        if (run->t[REC_STEPS].rc == AN_OK) {
            const rec_step_row *s = ROWS(run, REC_STEPS, rec_step_row);
            for (size_t k = 0; k < run->t[REC_STEPS].n; k++) {
                sb_printf(&loss, "%lld,", (long long)s[k].step);
                sb_num(&loss, s[k].loss, 9);
                sb_printf(&loss, ",%s\n", run->label);
            }
            any_loss = true;
        }
        if (run->t[REC_EVAL].rc == AN_OK) {
            const rec_eval_row *e = ROWS(run, REC_EVAL, rec_eval_row);
            for (size_t k = 0; k < run->t[REC_EVAL].n; k++) {
                sb_printf(&acc, "%lld,", (long long)e[k].epoch);
                sb_num(&acc, e[k].test_accuracy, 9);
                sb_printf(&acc, ",%s\n", run->label);
            }
            any_acc = true;
        }
    }
    rp_note_unread(r, runs, n, REC_STEPS, "the training-loss figure");
    const char *lv[] = {"title=Training loss", "xlabel=step", "ylabel=loss (per batch)", NULL};
    int rc = rp_figure_from(r, &loss, any_loss, "lines.gp", "loss",
                            "The training loss of every step (steps.csv: loss).", lv);
    rp_note_unread(r, runs, n, REC_EVAL, "the test-accuracy figure");
    const char *av[] = {"title=Test accuracy", "xlabel=epoch (eval.csv, from 0)",
                        "ylabel=test accuracy", "points=1", NULL};
    rc = rp_worse(rc,
                  rp_figure_from(r, &acc, any_acc, "lines.gp", "accuracy",
                                 "Test accuracy after each epoch (eval.csv: test_accuracy).", av));
    sb_free(&loss);
    sb_free(&acc);

    rp_section(r, "loss-scale", "Loss scale");
    sbuf sc = {0};
    bool any = false;
    sb_add(&sc, "step,scale,skipped,series\n");
    for (size_t i = 0; i < n; i++) {
        const run_data *run = &runs[i];
        if (run->t[REC_STEPS].rc != AN_OK) continue;
        const rec_step_row *s = ROWS(run, REC_STEPS, rec_step_row);
        for (size_t k = 0; k < run->t[REC_STEPS].n; k++) {
            sb_printf(&sc, "%lld,", (long long)s[k].step);
            sb_num(&sc, s[k].loss_scale, 9);
            sb_printf(&sc, ",%d,%s\n", s[k].skipped ? 1 : 0, run->label);
        }
        any = true;
    }
    rp_note_unread(r, runs, n, REC_STEPS, "the loss-scale figure");
    const char *sv[] = {"title=Loss scale", NULL};
    rc = rp_worse(rc, rp_figure_from(r, &sc, any, "scale.gp", "scale",
                                     "The scale each step's loss was multiplied by (steps.csv: "
                                     "loss_scale); circles mark the steps whose update was skipped "
                                     "for a non-finite gradient (skipped).",
                                     sv));
    sb_free(&sc);
    return rc;
}

/* ---- per layer ---- */
typedef struct name_list {
    char (*names)[REC_NAME_MAX];
    size_t n, cap;
} name_list;

static bool names_add(name_list *l, const char *name)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->names[i], name) == 0) return true;
    if (l->n == l->cap) {
        const size_t cap = l->cap ? 2 * l->cap : 16;
        void *p = realloc(l->names, cap * sizeof *l->names);
        if (!p) return false;
        l->names = p;
        l->cap = cap;
    }
    snprintf(l->names[l->n++], REC_NAME_MAX, "%s", name);
    return true;
}

static bool is_grad(rec_kind k) { return k == REC_ACTIVATION_GRAD || k == REC_WEIGHT_GRAD; }

int rp_flushed_figures(rp_report *r, run_data *runs, size_t n)
{
    name_list layers = {0};
    bool oom = false;
    for (size_t i = 0; i < n; i++) {
        if (runs[i].t[REC_TENSORS].rc != AN_OK) continue;
        const rec_tensor_row *t = ROWS(&runs[i], REC_TENSORS, rec_tensor_row);
        for (size_t k = 0; k < runs[i].t[REC_TENSORS].n; k++)
            if (is_grad(t[k].kind)) oom = oom || !names_add(&layers, t[k].layer);
    }
    rp_paragraph(r, "Per layer, the fraction of the nonzero gradients that the cast to the run's "
                    "statistics format (tensors.csv: dtype) flushes to zero, at the loss scale "
                    "the step used (tensors.csv: flushed_frac_of_nonzero, activation_grad and "
                    "weight_grad rows). A gap is a step where the tensor had no nonzero value.");
    rp_note_unread(r, runs, n, REC_TENSORS, "the flushed-gradient figures");
    int rc = oom ? RP_EIO : RP_OK;
    if (oom) rp_missing(r, "the flushed-gradient figures", "out of memory");
    if (!layers.n && !oom) {
        rp_missing(r, "the flushed-gradient figures",
                   "no run has activation_grad or weight_grad rows in tensors.csv");
        rc = RP_EPARTIAL;
    }
    for (size_t l = 0; l < layers.n; l++) {
        sbuf text = {0};
        sb_add(&text, "x,y,series\n");
        for (size_t i = 0; i < n; i++) {
            if (runs[i].t[REC_TENSORS].rc != AN_OK) continue;
            const rec_tensor_row *t = ROWS(&runs[i], REC_TENSORS, rec_tensor_row);
            /* one series per run and kind, the rows of each together */
            for (int kind = REC_WEIGHT_GRAD; kind <= REC_ACTIVATION_GRAD; kind++)
                for (size_t k = 0; k < runs[i].t[REC_TENSORS].n; k++) {
                    if ((int)t[k].kind != kind || strcmp(t[k].layer, layers.names[l]) != 0)
                        continue;
                    sb_printf(&text, "%lld,", (long long)t[k].step);
                    sb_num(&text, t[k].flushed_frac_of_nonzero, 17);
                    sb_printf(&text, ",%s:%s\n", runs[i].label, rec_kind_name(t[k].kind));
                }
        }
        char name[128], title[160], caption[256];
        snprintf(name, sizeof name, "flushed_%s", layers.names[l]);
        snprintf(title, sizeof title, "title=%s: gradients flushed to zero", layers.names[l]);
        snprintf(caption, sizeof caption,
                 "Layer %s: the fraction of its nonzero gradients flushed to zero by the cast.",
                 layers.names[l]);
        const char *v[] = {title, "xlabel=step", "ylabel=flushed / nonzero", "points=1", NULL};
        rc = rp_worse(rc, rp_figure_from(r, &text, true, "lines.gp", name, caption, v));
        sb_free(&text);
    }
    free(layers.names);
    return rc;
}

int rp_update_figures(rp_report *r, run_data *runs, size_t n)
{
    rp_section(r, "lost-updates", "Lost updates");
    rp_paragraph(r, "Per layer, the fraction of the nonzero weight updates that rounding to the "
                    "weights' format lost entirely (updates.csv: lost_frac_of_nonzero), beside "
                    "the fraction the 2^11 rule predicts from the update's and the weight's "
                    "magnitudes (predicted_lost_frac_of_nonzero).");
    name_list layers = {0};
    bool oom = false;
    for (size_t i = 0; i < n; i++) {
        if (runs[i].t[REC_UPDATES].rc != AN_OK) continue;
        const rec_update_row *u = ROWS(&runs[i], REC_UPDATES, rec_update_row);
        for (size_t k = 0; k < runs[i].t[REC_UPDATES].n; k++)
            oom = oom || !names_add(&layers, u[k].layer);
    }
    rp_note_unread(r, runs, n, REC_UPDATES, "the lost-update figures");
    int rc = oom ? RP_EIO : RP_OK;
    if (oom) rp_missing(r, "the lost-update figures", "out of memory");
    for (size_t l = 0; l < layers.n; l++) {
        sbuf text = {0};
        sb_add(&text, "x,y,series\n");
        for (size_t i = 0; i < n; i++) {
            if (runs[i].t[REC_UPDATES].rc != AN_OK) continue;
            const rec_update_row *u = ROWS(&runs[i], REC_UPDATES, rec_update_row);
            for (int pred = 0; pred < 2; pred++)
                for (size_t k = 0; k < runs[i].t[REC_UPDATES].n; k++) {
                    if (strcmp(u[k].layer, layers.names[l]) != 0) continue;
                    sb_printf(&text, "%lld,", (long long)u[k].step);
                    sb_num(&text,
                           pred ? u[k].predicted_lost_frac_of_nonzero : u[k].lost_frac_of_nonzero,
                           17);
                    sb_printf(&text, ",%s:%s\n", runs[i].label, pred ? "predicted" : "lost");
                }
        }
        char name[128], title[160], caption[256];
        snprintf(name, sizeof name, "updates_%s", layers.names[l]);
        snprintf(title, sizeof title, "title=%s: weight updates lost to rounding", layers.names[l]);
        snprintf(caption, sizeof caption,
                 "Layer %s: lost updates, measured (lost) and predicted by the 2^11 rule "
                 "(predicted).",
                 layers.names[l]);
        const char *v[] = {title, "xlabel=step", "ylabel=lost / nonzero updates", "points=1", NULL};
        rc = rp_worse(rc, rp_figure_from(r, &text, true, "lines.gp", name, caption, v));
        sb_free(&text);
    }
    free(layers.names);
    return rc;
}

/* ---- histograms ---- */
int rp_hist_figures(rp_report *r, run_data *runs, size_t n)
{
    rp_section(r, "underflow", "Underflow");
    int rc = RP_OK;
    rp_note_unread(r, runs, n, REC_HIST, "the gradient histograms");
    static const rec_kind kinds[2] = {REC_ACTIVATION_GRAD, REC_WEIGHT_GRAD};
    static const char *const titles[2] = {"Activation gradients", "Weight gradients"};
    uint64_t *sum = calloc(AK_HIST_BINS, sizeof *sum);
    if (!sum) {
        rp_missing(r, "the gradient histograms", "out of memory");
        return RP_EIO;
    }
    for (int q = 0; q < 2; q++) {
        sbuf text = {0}, zeros = {0};
        bool any = false;
        sb_add(&text, "bin,count,series\n");
        for (size_t i = 0; i < n; i++) {
            if (runs[i].t[REC_HIST].rc != AN_OK) continue;
            const rec_hist_row *h = ROWS(&runs[i], REC_HIST, rec_hist_row);
            const size_t nh = runs[i].t[REC_HIST].n;
            int64_t last = -1;
            for (size_t k = 0; k < nh; k++)
                if (h[k].kind == kinds[q] && h[k].step > last) last = h[k].step;
            if (last < 0) {
                char what[256];
                snprintf(what, sizeof what, "run %s in the %s histogram", runs[i].label,
                         rec_kind_name(kinds[q]));
                rp_missingf(r, what, "%s/%s: no %s rows", runs[i].dir, REC_HIST_CSV,
                            rec_kind_name(kinds[q]));
                continue;
            }
            /* the network's gradients of this kind: every layer's bins summed */
            memset(sum, 0, AK_HIST_BINS * sizeof *sum);
            uint64_t total = 0;
            for (size_t k = 0; k < nh; k++)
                if (h[k].kind == kinds[q] && h[k].step == last && h[k].bin >= 0 &&
                    h[k].bin < AK_HIST_BINS) {
                    sum[h[k].bin] += h[k].count;
                    total += h[k].count;
                }
            for (int b = 0; b < AK_HIST_BINS; b++) {
                char label[REC_BIN_LABEL_MAX];
                if (sum[b] && rec_hist_bin_label(b, label))
                    sb_printf(&text, "%s,%llu,%s\n", label, (unsigned long long)sum[b],
                              runs[i].label);
            }
            sb_printf(&zeros, "%s%s at step %lld: %.3g%% of %llu", any ? "; " : "", runs[i].label,
                      (long long)last,
                      total ? 100.0 * (double)sum[AK_HIST_ZERO] / (double)total : 0.0,
                      (unsigned long long)total);
            any = true;
        }
        char name[64], title[96], caption[512];
        snprintf(name, sizeof name, "hist_%s", rec_kind_name(kinds[q]));
        snprintf(title, sizeof title, "title=%s at the last recorded step", titles[q]);
        snprintf(caption, sizeof caption,
                 "log2 |%s| of all layers at each run's last histogram step (hist.csv), as a "
                 "fraction of all its values; the shaded bands are fp16's subnormal and normal "
                 "ranges.  The values are as recorded: a run with a loss scale records the "
                 "gradients of the scaled loss.",
                 rec_kind_name(kinds[q]));
        const char *v[] = {title, NULL};
        rc = rp_worse(rc, rp_figure_from(r, &text, any, "hist.gp", name, caption, v));
        if (any)
            rp_paragraphf(r, "Zeros (counted in the fractions, not drawn): %s.", sb_str(&zeros));
        sb_free(&text);
        sb_free(&zeros);
    }
    free(sum);
    return rc;
}
