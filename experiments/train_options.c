/* train_options.c: one of train's options set by name from its text, and the defaults
 * resolved at the end (see train_options.h; the table is train_options_table.c). */
#include "train_options.h"

#include <stdio.h>
#include <string.h>

#include "util.h"

#include "amp_lists.h"
#include "loss_scale.h"

/* A refusal: the message (ut_fail), then this module's status. */
#define fail(msg, msg_len, ...) ut_fail(msg, msg_len, TRAIN_EINPUT, __VA_ARGS__)

int topt_set(train_options *o, const char *name, const char *text, char *msg, size_t msg_len)
{
    const opt_spec *row = opt_find(topt_table, name);
    if (!row) return fail(msg, msg_len, "unknown option '--%s'", name);
    if (opt_takes_value(row) && (!text || !*text))
        return fail(msg, msg_len, "option --%s needs a value", name);
    if (text && !rec_run_text_ok(text))
        return fail(msg, msg_len,
                    "--%s: the value is not valid UTF-8 (run.json records it as given)", name);
    if (!row->deferred && opt_set(row, o, text, msg, msg_len) != 0) return TRAIN_EINPUT;
    if (o->n_given == TRAIN_MAX_GIVEN)
        return fail(msg, msg_len, "more than %d options", TRAIN_MAX_GIVEN);
    o->given[o->n_given].key = row->name;
    o->given[o->n_given].text = opt_takes_value(row) ? text : NULL;
    o->n_given++;
    return TRAIN_OK;
}

const char *topt_given(const train_options *o, const char *name)
{
    for (int i = o->n_given - 1; i >= 0; i--)
        if (strcmp(o->given[i].key, name) == 0) return o->given[i].text;
    return NULL;
}

/* A deferred option, when it was given, set now by its row; *given whether it was. */
static int set_later(train_options *o, const char *name, bool *given, char *msg, size_t msg_len)
{
    const char *text = topt_given(o, name);
    if (given) *given = text != NULL;
    if (!text) return TRAIN_OK;
    return opt_set(opt_find(topt_table, name), o, text, msg, msg_len) != 0 ? TRAIN_EINPUT
                                                                           : TRAIN_OK;
}

/* on|off of an option without a field of its own */
static int onoff(const char *name, const char *text, bool *out, char *msg, size_t msg_len)
{
    opt_spec row = *opt_find(topt_table, name);
    row.offset = 0;
    return opt_set(&row, out, text, msg, msg_len) != 0 ? TRAIN_EINPUT : TRAIN_OK;
}

/* The scaler: the preset, then its overrides in a fixed order.  Which
 * message wins when several are wrong is part of the interface (the tests
 * read it), so the order is kept as it always was. */
static int finish_scaler(train_options *o, char *msg, size_t msg_len)
{
    ak_scaler_config *cfg = &o->scaler;
    const char *preset = topt_given(o, "loss-scale");
    char why[512];
    if (ak_scaler_preset(preset ? preset : "none", cfg, why, sizeof why) != 0)
        return fail(msg, msg_len, "%s", why);
    int rc = TRAIN_OK;
    if (topt_given(o, "scale")) {
        if (cfg->kind != AK_SCALER_FIXED)
            return fail(msg, msg_len, "--scale needs --loss-scale fixed");
        rc = set_later(o, "scale", NULL, msg, msg_len);
    }
    const char *rule_name = topt_given(o, "scale-rule");
    if (rule_name) {
        ak_scaler_rule rule;
        if (ak_scaler_rule_from_name(rule_name, &rule) != 0) {
            char list[256];
            return fail(
                msg, msg_len, "--scale-rule wants %s, got '%s'",
                opt_choice_list(opt_find(topt_table, "scale-rule")->choices, list, sizeof list),
                rule_name);
        }
        cfg->rule = rule;
    }
    bool init = false, factor = false, growth = false, backoff = false, window = false,
         hysteresis = false;
    if (!rc) rc = set_later(o, "init-scale", &init, msg, msg_len);
    if (!rc) {
        rc = set_later(o, "scale-factor", &factor, msg, msg_len);
        if (!rc && factor) cfg->backoff_factor = 1.0 / cfg->growth_factor;
    }
    if (!rc) rc = set_later(o, "growth-factor", &growth, msg, msg_len);
    if (!rc) rc = set_later(o, "backoff-factor", &backoff, msg, msg_len);
    /* a framework with one scale factor divides by it: the growth factor is the backoff's */
    if (!rc && backoff && cfg->backoff_divides)
        return fail(msg, msg_len,
                    "--backoff-factor: the %s policy divides by its one scale factor, as its "
                    "framework does; set that factor with --scale-factor F",
                    preset ? preset : "none");
    if (!rc && growth && cfg->backoff_divides) cfg->backoff_factor = 1.0 / cfg->growth_factor;
    if (!rc) rc = set_later(o, "scale-window", &window, msg, msg_len);
    if (!rc) rc = set_later(o, "hysteresis", &hysteresis, msg, msg_len);
    if (!rc) rc = set_later(o, "consecutive-hysteresis", NULL, msg, msg_len);
    if (!rc) rc = set_later(o, "min-scale", NULL, msg, msg_len);
    if (!rc) rc = set_later(o, "max-scale", NULL, msg, msg_len);
    if (!rc) rc = set_later(o, "refuse-nonfinite-growth", NULL, msg, msg_len);
    if (!rc) rc = set_later(o, "drop-overflow-update", NULL, msg, msg_len);
    if (!rc && (window || hysteresis || growth || backoff || factor || init) &&
        cfg->kind != AK_SCALER_DYNAMIC)
        return fail(msg, msg_len,
                    "the dynamic-scaler options need --loss-scale dynamic or a preset");
    if (!rc && ak_scaler_validate(cfg, why, sizeof why) != 0) return fail(msg, msg_len, "%s", why);
    if (!rc) o->scaler_name = preset ? preset : "none";
    return rc;
}

int topt_finish(train_options *o, char *msg, size_t msg_len)
{
    const char *resume = topt_given(o, "resume");
    if (resume) {
        o->out_dir = resume;
        o->resume = true;
    }
    if (!o->out_dir) return fail(msg, msg_len, "--out DIR is required");
    const char *mode = topt_given(o, "mode"), *dtype = topt_given(o, "dtype");
    const int pm = prec_mode_from_name(mode ? mode : "O0");
    int index;
    if (pm < 0 && opt_choice(opt_find(topt_table, "mode"), mode, &index, msg, msg_len) != 0)
        return TRAIN_EINPUT;
    if (dtype && opt_choice(opt_find(topt_table, "dtype"), dtype, &index, msg, msg_len) != 0)
        return TRAIN_EINPUT;
    prec_options_default(&o->prec, (prec_mode)pm, dtype && index == 1 ? AK_BF16 : AK_F16);
    const char *amp = topt_given(o, "amp-lists");
    if (amp && (opt_choice(opt_find(topt_table, "amp-lists"), amp, &index, msg, msg_len) != 0 ||
                amp_lists_apply(&o->prec, amp, msg, msg_len) != 0))
        return TRAIN_EINPUT;
    const char *keep_bn = topt_given(o, "keep-batchnorm-fp32");
    if (keep_bn &&
        onoff("keep-batchnorm-fp32", keep_bn, &o->prec.keep_batchnorm_fp32, msg, msg_len) != 0)
        return TRAIN_EINPUT;
    const char *embed = topt_given(o, "embedding-accumulation");
    if (embed) {
        if (opt_choice(opt_find(topt_table, "embedding-accumulation"), embed, &index, msg,
                       msg_len) != 0)
            return TRAIN_EINPUT;
        o->prec.embed_acc_low = index == 1;
    }
    const char *stats = topt_given(o, "stats-dtype");
    if (stats) {
        static const ak_dtype types[] = {AK_F16, AK_BF16, AK_F32};
        if (opt_choice(opt_find(topt_table, "stats-dtype"), stats, &index, NULL, 0) != 0)
            return fail(msg, msg_len, "--stats-dtype wants fp16 or bf16 or fp32, got '%s'", stats);
        o->stats_dtype = types[index];
    }
    const char *optimizer = topt_given(o, "optimizer");
    if (optimizer) {
        static const ak_optimizer kinds[] = {AK_OPT_SGD, AK_OPT_MOMENTUM, AK_OPT_ADAM,
                                             AK_OPT_ADAMW};
        if (opt_choice(opt_find(topt_table, "optimizer"), optimizer, &index, msg, msg_len) != 0)
            return TRAIN_EINPUT;
        o->opt.kind = kinds[index];
    } else if (strcmp(o->net, "lenet5") == 0) {
        o->opt.kind = AK_OPT_MOMENTUM; /* the MindSpore tutorial: Momentum(lr 0.01, 0.9) */
    } else if (strcmp(o->net, "transformer") == 0) {
        o->opt.kind = AK_OPT_ADAMW; /* nanoGPT's optimizer */
    }
    if (o->opt.kind == AK_OPT_MOMENTUM && !topt_given(o, "momentum")) o->opt.momentum = 0.9f;
    if (set_later(o, "nesterov", NULL, msg, msg_len) != 0) return TRAIN_EINPUT;
    bool stochastic = false;
    const char *sr = topt_given(o, "stochastic-rounding");
    if (sr && onoff("stochastic-rounding", sr, &stochastic, msg, msg_len) != 0) return TRAIN_EINPUT;
    o->opt.round.mode = stochastic ? FPE_SR_PROP : FPE_RNE;
    o->opt.round.seed = o->seed;
    o->opt.round.stream = 1;
    if (!topt_given(o, "lr")) o->opt.lr = -1;
    return finish_scaler(o, msg, msg_len);
}
