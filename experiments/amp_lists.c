/* amp_lists.c: the frameworks' presets applied to a plan's options, the
 * user's edits of the lists, and their description for the record
 * (amp_lists.h; the presets' data is amp_lists_data.c). */
#include "amp_lists.h"

#include <stdio.h>
#include <string.h>

#include "atomic_file.h" /* ut_fail */

/* Op classes a list may name before a row of the layer table has them: the
 * layers still to come and the loss (which is no row). */
static const char *const future_classes[] = {"batchnorm",   "layernorm", "softmax",
                                             "log_softmax", "matmul",    "embedding",
                                             "add",         "dropout",   "loss"};
#define N_FUTURE ((int)(sizeof future_classes / sizeof future_classes[0]))

/* The i-th op class of the vocabulary, each once: the table's in its order,
 * then the future ones no row has yet; NULL past the end. */
static const char *class_at(int i)
{
    int seen = 0;
    for (int k = 0; k < layer_count; k++) {
        bool before = false;
        for (int j = 0; j < k && !before; j++)
            before = strcmp(layer_table[j]->op_class, layer_table[k]->op_class) == 0;
        if (!before && seen++ == i) return layer_table[k]->op_class;
    }
    for (int f = 0; f < N_FUTURE; f++) {
        bool in_table = false;
        for (int k = 0; k < layer_count && !in_table; k++)
            in_table = strcmp(layer_table[k]->op_class, future_classes[f]) == 0;
        if (!in_table && seen++ == i) return future_classes[f];
    }
    return NULL;
}

bool amp_class_known(const char *name)
{
    for (int i = 0; name && class_at(i); i++)
        if (strcmp(class_at(i), name) == 0) return true;
    return false;
}

void amp_class_names(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; class_at(i) && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", class_at(i));
}

const amp_preset *amp_preset_find(const char *name)
{
    for (int i = 0; name && i < amp_preset_count; i++)
        if (strcmp(amp_presets[i].name, name) == 0) return &amp_presets[i];
    return NULL;
}

const char *amp_preset_names(void) { return "pytorch, apex, paddle, mindspore"; }

/* o's entry for a class no row has, or NULL; add: make one (NULL when full). */
static struct prec_named *named_entry(prec_options *o, const char *op_class, bool add)
{
    for (int i = 0; i < o->n_named; i++)
        if (strcmp(o->named[i].op_class, op_class) == 0) return &o->named[i];
    if (!add || o->n_named == PREC_MAX_NAMED) return NULL;
    struct prec_named *e = &o->named[o->n_named++];
    memset(e, 0, sizeof *e);
    snprintf(e->op_class, sizeof e->op_class, "%s", op_class);
    return e;
}

/* Puts a class on the white list, the black one, or neither: every row of
 * that class, or the name when no row has it.  The vocabulary has fewer
 * classes than PREC_MAX_NAMED, so a name always finds room. */
static void set_class(prec_options *o, const char *op_class, bool white, bool black)
{
    bool row = false;
    for (int k = 0; k < layer_count; k++)
        if (strcmp(layer_table[k]->op_class, op_class) == 0) {
            o->white[k] = white;
            o->black[k] = black;
            row = true;
        }
    if (row) return;
    struct prec_named *e = named_entry(o, op_class, white || black);
    if (e) {
        e->white = white;
        e->black = black;
    }
}

int amp_class_list(const prec_options *o, const char *op_class)
{
    for (int k = 0; k < layer_count; k++)
        if (strcmp(layer_table[k]->op_class, op_class) == 0)
            return o->white[k] ? 1 : o->black[k] ? -1 : 0;
    for (int i = 0; i < o->n_named; i++)
        if (strcmp(o->named[i].op_class, op_class) == 0)
            return o->named[i].white ? 1 : o->named[i].black ? -1 : 0;
    return 0;
}

/* The list a preset puts a class in for mode: fp32 over low over the rest
 * (Paddle checks its black list first). */
static amp_list preset_list(const amp_preset *p, prec_mode mode, const char *op_class)
{
    amp_list best = AMP_FOLLOW;
    bool listed = false;
    for (int i = 0; i < p->n_ops; i++) {
        const amp_op *op = &p->ops[i];
        if (!op->op_class || !(op->modes & (1u << mode)) || strcmp(op->op_class, op_class) != 0)
            continue;
        listed = true;
        if (op->list == AMP_FP32) best = AMP_FP32;
        if (op->list == AMP_LOW && best != AMP_FP32) best = AMP_LOW;
    }
    if (!listed && mode == PREC_O1) return p->unlisted_o1;
    return best;
}

int amp_lists_apply(prec_options *o, const char *preset, char *msg, size_t msg_len)
{
    const amp_preset *p = amp_preset_find(preset);
    if (!p)
        return ut_fail(msg, msg_len, -1, "--amp-lists: unknown preset '%s' (expected %s)",
                       preset ? preset : "", amp_preset_names());
    memset(o->white, 0, sizeof o->white);
    memset(o->black, 0, sizeof o->black);
    o->n_named = 0;
    for (int i = 0; class_at(i); i++) {
        const amp_list l = o->mode == PREC_O0 ? AMP_FOLLOW : preset_list(p, o->mode, class_at(i));
        set_class(o, class_at(i), l == AMP_LOW, l == AMP_FP32);
    }
    o->keep_batchnorm_fp32 = p->keep_batchnorm_fp32[(unsigned)o->mode < 4 ? o->mode : 0];
    o->amp_preset = p->name;
    return 0;
}

/* One item of a list's text, "name" or "-name", into name; false when
 * it is empty or names no class. */
static bool parse_item(const char *p, size_t len, bool *remove, char name[PREC_CLASS_LEN])
{
    *remove = len > 0 && p[0] == '-';
    if (*remove) p++, len--;
    if (len == 0 || len >= PREC_CLASS_LEN) return false;
    memcpy(name, p, len);
    name[len] = '\0';
    return amp_class_known(name);
}

int amp_lists_edit(prec_options *o, const char *list, bool white, char *msg, size_t msg_len)
{
    const char *option = white ? "--white-list" : "--black-list";
    /* every item is checked before any is applied: a refusal leaves o as it was */
    for (int pass = 0; pass < 2; pass++) {
        const char *p = list ? list : "";
        do {
            const char *end = strchr(p, ',');
            const size_t len = end ? (size_t)(end - p) : strlen(p);
            bool remove;
            char name[PREC_CLASS_LEN];
            if (!parse_item(p, len, &remove, name)) {
                char expected[512];
                amp_class_names(expected, sizeof expected);
                if (len == 0 || (len == 1 && p[0] == '-'))
                    return ut_fail(msg, msg_len, -1,
                                   "%s '%s': an empty op name (give OP or -OP, comma-separated)",
                                   option, list ? list : "");
                return ut_fail(msg, msg_len, -1, "unknown op '%.*s' in %s (expected %s)", (int)len,
                               p, option, expected);
            }
            if (pass == 1) {
                const int now = amp_class_list(o, name);
                if (!remove)
                    set_class(o, name, white, !white);
                else if (white) /* off the white list; a black entry stays */
                    set_class(o, name, false, now == -1);
                else
                    set_class(o, name, now == 1, false);
            }
            p = end ? end + 1 : NULL;
        } while (p);
    }
    return 0;
}

/* Appends "SEP item" to buf at *used (the first item of a group without SEP). */
static void append(char *buf, size_t len, size_t *used, const char *sep, const char *item)
{
    if (*used < len) *used += (size_t)snprintf(buf + *used, len - *used, "%s%s", sep, item);
}

void amp_lists_describe(const prec_options *o, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int want = 1; want >= -1; want -= 2) {
        append(buf, len, &used, want == 1 ? "white" : "; black", "");
        int n = 0;
        for (int i = 0; class_at(i); i++)
            if (amp_class_list(o, class_at(i)) == want)
                append(buf, len, &used, n++ ? ", " : " ", class_at(i));
        if (n == 0) append(buf, len, &used, " none", "");
    }
}

void amp_lists_unmapped(const amp_preset *p, prec_mode mode, char *buf, size_t len)
{
    static const char *const names[] = {"low", "fp32", "promote", "follow"};
    size_t used = 0;
    buf[0] = '\0';
    for (int l = AMP_LOW; l <= AMP_FOLLOW; l++) {
        int n = 0;
        for (int i = 0; i < p->n_ops; i++) {
            const amp_op *op = &p->ops[i];
            if (op->op_class || op->list != (amp_list)l || !(op->modes & (1u << mode))) continue;
            if (n++ == 0) {
                append(buf, len, &used, used ? "; " : "", names[l]);
                append(buf, len, &used, ": ", op->name);
            } else {
                append(buf, len, &used, ", ", op->name);
            }
        }
    }
    if (used == 0) snprintf(buf, len, "none");
}
