/* amp_lists.h: the frameworks' own precision lists as presets, applied to a
 * precision plan's options (nets.h prec_options), and the user's edits of
 * the lists.
 *
 * A preset is data (amp_lists_data.c): each framework's op names as its
 * source spells them, each in one of four lists (low precision, fp32,
 * promote to the widest input, follow the input), the modes it applies in,
 * and the ampscope op class it maps to, or none.  Names with no op class are
 * kept in the data, so the record can say what was left out.
 *
 *   pytorch    autocast's CUDA lists (aten/src/ATen/autocast_mode.h, .cpp)
 *   apex       amp O1's patched functions (apex/amp/lists/: functional_, torch_,
 * tensor_overrides.py); O2/O3 from apex/amp/frontend.py and _initialize.py paddle     paddle.amp's
 * white/black lists (python/paddle/amp/amp_lists.py) and the gray list
 * (python/paddle/static/amp/fp16_lists.py) mindspore  mindspore.train.amp's AMP_WHITE_LIST (O1),
 * AMP_BLACK_LIST and the loss cast to fp32 (O2), to_float(float16) (O3)
 *
 * Applying a preset (amp_lists_apply) replaces the table's default lists:
 * for every op class the preset lists in the run's mode, every row of the
 * layer table with that op class is white (low) or black (fp32); a class no
 * row has yet (the loss; a layer still to come) is kept by name in
 * prec_options.named and applies to the row once it exists, with no change
 * here.  Where two of a framework's names map one class to different lists,
 * fp32 wins over low, and low over promote/follow (Paddle checks its black
 * list first; layer_norm is in its black and gray lists).  Promote and follow
 * set neither list: an op in no list runs in the widest format of its inputs,
 * which for one input is that input's (autocast's and Paddle's gray ops; the
 * residual add of an fp16 and an fp32 branch runs in fp32), except where the
 * framework keeps everything unlisted in fp32 (MindSpore's O1: its white ops
 * cast their outputs back to fp32), where every class not white is black.
 * It also sets keep_batchnorm_fp32 to the framework's default for the mode.
 *
 * The user's edits come after the preset, whatever their order on the
 * command line (amp_lists_edit): --white-list A,B adds classes to the white
 * list (and takes them off the black one), --black-list the reverse, and
 * -NAME takes a class off that list only, leaving it in no list: it then
 * follows its input (--white-list -relu after --amp-lists mindspore).
 */
#ifndef AMPSCOPE_AMP_LISTS_H
#define AMPSCOPE_AMP_LISTS_H

#include <stdbool.h>
#include <stddef.h>

#include "nets.h"

/* The four lists a framework puts an op in. */
typedef enum amp_list {
    AMP_LOW,     /* cast to the low format (autocast lower_precision_fp, Apex FP16_FUNCS, white) */
    AMP_FP32,    /* cast to fp32 (autocast fp32, Apex FP32_FUNCS, black) */
    AMP_PROMOTE, /* the widest of its inputs' formats (autocast promote, Apex CASTS) */
    AMP_FOLLOW   /* its inputs' format (Paddle's gray list) */
} amp_list;

/* Modes a row applies in (bit 1 << prec_mode). */
#define AMP_O1  (1u << PREC_O1)
#define AMP_O2  (1u << PREC_O2)
#define AMP_O3  (1u << PREC_O3)
#define AMP_ALL (AMP_O1 | AMP_O2 | AMP_O3)

/* One op of a framework's lists. */
typedef struct amp_op {
    const char *name;     /* as the framework's source spells it: "layer_norm", "nn.Dense" */
    amp_list list;        /* the list it is in */
    unsigned modes;       /* AMP_O1 ... : where the list applies */
    const char *op_class; /* ampscope's op class, or NULL where ampscope has none */
} amp_op;

typedef struct amp_preset {
    const char *name;   /* "pytorch" */
    const char *source; /* the files read: repository, path, commit */
    const amp_op *ops;
    int n_ops;
    /* O1: what an op in no list does: AMP_FOLLOW (autocast, Apex, Paddle:
     * its inputs' format, the widest when they differ) or AMP_FP32 (MindSpore) */
    amp_list unlisted_o1;
    bool keep_batchnorm_fp32[4]; /* the framework's default in O0..O3 */
    const char *keep_note;       /* where that default comes from */
} amp_preset;

extern const amp_preset amp_presets[];
extern const int amp_preset_count;

/* The preset named name, or NULL. */
const amp_preset *amp_preset_find(const char *name);
/* "pytorch, apex, paddle, mindspore" */
const char *amp_preset_names(void);
/* The op classes a list may name, in a message's order: the layer table's,
 * then those still to come ("batchnorm", ..., "loss"); each once. */
void amp_class_names(char *buf, size_t len);
/* Whether name is an op class a list may name. */
bool amp_class_known(const char *name);

/* Applies the named preset to o for o->mode (set by prec_options_default
 * first): replaces the white and black lists, sets keep_batchnorm_fp32 and
 * o->amp_preset.  0, or -1 with "--amp-lists: unknown preset 'x' (expected
 * pytorch, apex, paddle, mindspore)" in msg, o unchanged. */
int amp_lists_apply(prec_options *o, const char *preset, char *msg, size_t msg_len);
/* One --white-list (white) or --black-list text: comma-separated classes,
 * each added, or taken off the list with a leading '-'.  0, or -1 naming the
 * option and the unknown or empty item in msg, o unchanged. */
int amp_lists_edit(prec_options *o, const char *list, bool white, char *msg, size_t msg_len);

/* Where a class stands in o: 1 white, -1 black, 0 neither (for a class a
 * row has, that row's lists; otherwise the name kept in o->named). */
int amp_class_list(const prec_options *o, const char *op_class);

/* "white linear, conv; black softmax, loss": o's lists by op class, each
 * class once (for run.json). */
void amp_lists_describe(const prec_options *o, char *buf, size_t len);
/* The names of preset's lists that apply in mode but map to no op class,
 * "fp32: acos, asin, ...; low: prelu, ...", for run.json. */
void amp_lists_unmapped(const amp_preset *p, prec_mode mode, char *buf, size_t len);

#endif
