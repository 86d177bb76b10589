/* data.h: the training data: Fashion-MNIST read from IDX files (gzip'd or
 * plain), synthetic Gaussian data for SimpleNet, text for a character-level
 * language model (Debian's fortunes), seeded shuffling and batch gathering
 * into caller-provided host buffers.
 *
 * Errors.  Every function that can fail returns 0 (DS_OK) or a negative DS_E*
 * code after writing one line into msg (msg may be NULL; it is truncated to
 * msg_len), naming the file and the problem:
 *   "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz: truncated:
 *    expected 7840000 bytes of pixels, got 1000".
 * DS_ENOENT and DS_EFORMAT are the user's input (a missing or corrupt
 * dataset: the program exits 2); the others are not.  Nothing here prints,
 * exits or aborts (GSL's error handler is never reached: see data.c).
 *
 * Numbers.  A pixel byte x becomes the float (float)x / 255.0f (one IEEE
 * division, correctly rounded), so 0 -> 0.0f and 255 -> 1.0f exactly.
 * Synthetic values and permutations come from GSL's MT19937 generator and
 * gsl_ran_gaussian_ziggurat / gsl_ran_shuffle, seeded by ds_seed32() below,
 * so they are the same on every machine with the same GSL (the ziggurat's
 * rare wedge and tail steps call exp and log: a libm rounding those
 * differently could in principle move one draw).
 */
#ifndef AMPSCOPE_DATA_H
#define AMPSCOPE_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- status codes -------------------------------------------------------- */
#define DS_OK     0
#define DS_EINVAL (-1) /* a bad argument from the caller (NULL, zero size, bad option) */
#define DS_ENOENT (-2) /* the data directory or a file in it is missing */
/* a file is there but is not what it must be (magic, dims, length, gzip
 * stream, label values, image/label counts) */
#define DS_EFORMAT (-3)
#define DS_EIO     (-4) /* reading failed (an I/O error, not the file's content) */
#define DS_ENOMEM  (-5) /* an allocation failed */

/* Where Debian's dataset-fashion-mnist package installs the files. */
#define DS_FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"
#define DS_CLASSES           10 /* labels are 0..9 */

typedef enum ds_split { DS_TRAIN = 0, DS_TEST = 1 } ds_split;
const char *ds_split_name(ds_split split); /* "train", "test"; "?" otherwise */

/* ---- a data set ------------------------------------------------------------ */
/* A loaded data set, in host memory.  The public fields describe one sample
 * as ds_gather writes it; the storage behind them is the loader's and
 * differs by kind (bytes for images, so that 60000 samples take 47 MB, not
 * 188 MB of floats; floats for synthetic data).  Read-only for callers. */
typedef struct ds_dataset {
    char name[48];     /* "fashion-mnist train", "synthetic" */
    size_t count;      /* samples */
    size_t channels;   /* shape of one gathered input: [channels, height, width] */
    size_t height;     /* images: rows + 2 pad; synthetic: 1 */
    size_t width;      /* images: cols + 2 pad; synthetic: in_dim */
    size_t features;   /* channels * height * width: floats per input */
    size_t classes;    /* 10 for labelled images, DS_TEXT_VOCAB for text, 0 for synthetic data */
    size_t label_dim;  /* int32 labels per sample: 1 for images, context for text, 0: none */
    size_t target_dim; /* floats per target: 0 for labelled images and text */
    int32_t *labels;   /* count * label_dim labels in 0..classes-1 (images), or NULL */
    float *targets;    /* count * target_dim floats, or NULL */
    /* storage: exactly one of pixels / inputs / tokens is non-NULL */
    uint8_t *pixels;   /* count * rows * cols bytes, as in the file */
    size_t rows, cols; /* the file's image size */
    size_t pad;        /* zero pixels added on each side when gathering */
    float *inputs;     /* count * features floats (synthetic) */
    uint8_t *tokens;   /* text: the split's n_tokens token ids (labels NULL: they are tokens) */
    size_t n_tokens;
    size_t stride;     /* text: sample i is the window tokens[i * stride ... + context] */
    char *images_path; /* the files read (NULL for synthetic; text: the directory), for the run
                          record */
    char *labels_path;
} ds_dataset;

void ds_free(ds_dataset *ds); /* NULL is harmless */

/* ---- IDX files: Fashion-MNIST and friends ---------------------------------- */
typedef struct ds_options {
    size_t pad;    /* zero pixels added on each side: 2 turns 28x28 into LeNet5's 32x32; at
                      most DS_MAX_PAD */
    size_t subset; /* keep the first N samples in file order (0: all; more than the file holds:
                      all).  The whole file is still read and validated. */
} ds_options;
#define DS_MAX_PAD 64

static inline ds_options ds_options_default(void)
{
    ds_options o;
    o.pad = 0;
    o.subset = 0;
    return o;
}

/* The cheap check before a run creates anything: dir (NULL: Debian's) is a
 * directory holding the training split's two files, each readable (the
 * test split and every file's content are checked by the load, in the
 * order it reads them).  DS_OK, or DS_ENOENT /
 * DS_EIO with the message the load would give. */
int ds_check_fashion_mnist(const char *dir, char *msg, size_t msg_len);

/* Loads a split of Fashion-MNIST from dir (NULL: DS_FASHION_MNIST_DIR): the
 * files {train,t10k}-{images-idx3,labels-idx1}-ubyte.gz, or the same names
 * without .gz when only those are there (both are read through zlib, which
 * passes plain files through).  Images must be 28x28.  The count is not
 * fixed (60000 train and 10000 test in the real data), so MNIST digits in
 * dir load as well.  opt NULL means ds_options_default().  *out is NULL on
 * failure. */
int ds_load_fashion_mnist(const char *dir, ds_split split, const ds_options *opt, ds_dataset **out,
                          char *msg, size_t msg_len);

/* Loads any IDX image/label pair: images_path holds unsigned-byte images
 * (magic 0x00000803: dims count, rows, cols, big-endian), labels_path
 * unsigned-byte labels (magic 0x00000801: dim count).  Checked, each with
 * its own message: the magic (element type and number of dimensions), every
 * dimension nonzero, rows == expect_rows and cols == expect_cols (0: any),
 * the byte count not overflowing, the exact length (a short file and
 * trailing bytes are both errors), the gzip stream (truncated, corrupt,
 * CRC), every label < 10, and equal image and label counts.  (Bytes after
 * the end of a gzip stream that are not another gzip stream zlib ignores:
 * "trailing bytes" means decompressed ones.) */
int ds_load_idx(const char *images_path, const char *labels_path, size_t expect_rows,
                size_t expect_cols, const ds_options *opt, ds_dataset **out, char *msg,
                size_t msg_len);

/* ---- synthetic data (SimpleNet) ---------------------------------------------- */
typedef enum ds_target_rule {
    /* targets are standard Gaussians independent of the inputs, as the
       PaddlePaddle AMP tutorial feeds SimpleNet random inputs and labels:
       the net can only memorise, which is all the precision study needs */
    DS_TARGETS_INDEPENDENT = 0,
    /* y = W x / sqrt(in_dim) + noise * e, with W a fixed [out_dim, in_dim]
       matrix of standard Gaussians and e standard Gaussian: a teacher the net
       can learn, so the loss falls towards noise^2.  Costs count * in_dim *
       out_dim multiply-adds in double at creation (seconds at 4096x4096x4096) */
    DS_TARGETS_LINEAR = 1
} ds_target_rule;

typedef struct ds_synthetic_options {
    size_t count;   /* samples */
    size_t in_dim;  /* floats per input (SimpleNet: 4096) */
    size_t out_dim; /* floats per target (SimpleNet: 4096) */
    uint64_t seed;
    ds_target_rule rule;
    double noise; /* DS_TARGETS_LINEAR: standard deviation of e (>= 0) */
} ds_synthetic_options;

/* Inputs are standard Gaussians, stored as floats: input element k of
 * sample i is draw i*in_dim + k of a generator seeded with
 * ds_seed32(seed, DS_STREAM_INPUTS, 0), each draw being
 * gsl_ran_gaussian_ziggurat(rng, 1.0) rounded to float.  The float draw
 * i*out_dim + r of DS_STREAM_TARGETS is e, target element r of sample i
 * under the independent rule.  Under the linear rule, row r of W is draws
 * r*in_dim .. r*in_dim + in_dim-1 of DS_STREAM_MAP (doubles, not rounded),
 * and the target is (float)(s / sqrt(in_dim) + noise * e), s the sum of
 * W[r][k] * x[k] over k = 0, 1, ... in double with x the stored floats.
 * So the first N samples do not depend on count, and the inputs do not
 * depend on out_dim or the rule.  Memory: count * (in_dim + out_dim) floats. */
int ds_synthetic(const ds_synthetic_options *opt, ds_dataset **out, char *msg, size_t msg_len);

/* ---- text: a character-level language model (Debian's fortunes) ---------------------
 * Source.  The plain-text files of Debian's `fortunes` package (1:1.99.1-7.3
 * in Debian 12), a fixed list in a fixed order, ds_fortunes_files: cookie,
 * definitions, fortunes, humorists, literature, people, platitudes, science,
 * songs-poems, tao (the ten whose bytes are all ASCII: 1136525 bytes in
 * all); never the .dat index files or the .u8 links.  The files are read
 * whole and concatenated in that order, byte for byte (nothing added
 * between them: each ends with a newline, and fortunes are separated by
 * lines holding "%").
 *
 * Tokens.  A fixed character vocabulary, the same on every machine: one
 * token per byte of the files,
 *   id 0      any other byte (control characters, DEL, bytes 128..255),
 *   id 1      tab (9),
 *   id 2      newline (10),
 *   id 3..97  the printable ASCII characters ' ' (32) .. '~' (126), in
 *             order: id = byte - 29.
 * As the files listed are ASCII, a token is a character and a byte: bits per
 * character (ds_bits_per_char) are bits per byte.
 *
 * Split.  Of the n tokens of the concatenation, the last floor(n / 10) are
 * the held-out split (DS_TEST, named "validation"), the rest the training
 * split (DS_TRAIN).  Each split is cut into windows on its own: none spans
 * the boundary.
 *
 * Samples.  Sample i of a split is the window of context + 1 tokens starting
 * at token i * stride of the split; count = floor((n_split - context - 1) /
 * stride) + 1 windows (the tokens after the last window are unused).
 * ds_gather writes the first context ids as floats (exact integers: the
 * model's input batch is fp32) into x, features = width = context, and the
 * next token at each position (ids 1..context of the window) as context
 * int32 labels: label_dim = context, classes = DS_TEXT_VOCAB. */
#define DS_FORTUNES_DIR     "/usr/share/games/fortunes"
#define DS_FORTUNES_NFILES  10
#define DS_TEXT_VOCAB       98
#define DS_TEXT_MAX_CONTEXT 65536
#define DS_TEXT_MAX_BYTES   ((size_t)1 << 30) /* all files together */
extern const char *const ds_fortunes_files[DS_FORTUNES_NFILES];

typedef struct ds_text_options {
    size_t context; /* tokens per input, 1..DS_TEXT_MAX_CONTEXT */
    size_t stride;  /* tokens between window starts (0: context, windows that do not overlap);
                       at most context */
    size_t subset;  /* keep the first N windows (0: all; more than there are: all) */
} ds_text_options;

/* The token id of a byte, and back: the byte of id 1..97, or -1 for id 0
 * ("other") and ids outside the vocabulary. */
int ds_text_token(uint8_t byte);
int ds_text_byte(int id);

/* Bits per character from a mean cross-entropy in nats per token:
 * nats / ln 2 (one token is one character and one byte of the files). */
double ds_bits_per_char(double mean_nats);

/* The cheap check before a run: dir (NULL: DS_FORTUNES_DIR) is a directory
 * and every listed file opens for reading.  DS_OK, or DS_ENOENT / DS_EIO
 * with the message the load would give (naming the path, and the package
 * when dir is Debian's). */
int ds_check_text(const char *dir, char *msg, size_t msg_len);

/* Loads a split of ds_fortunes_files in dir (NULL: DS_FORTUNES_DIR), named
 * "text train" or "text validation".  Errors, each naming the path: dir or a
 * file missing (DS_ENOENT), a file empty or not a regular file, the files
 * together over DS_TEXT_MAX_BYTES, or a split shorter than one window of
 * context + 1 tokens (DS_EFORMAT), a read that fails (DS_EIO, with
 * strerror).  A bad option (context 0 or too large, stride over context) is
 * DS_EINVAL.  *out is NULL on failure. */
int ds_load_text(const char *dir, ds_split split, const ds_text_options *opt, ds_dataset **out,
                 char *msg, size_t msg_len);
/* The same on any list of n_names files in dir (n_names >= 1). */
int ds_load_text_files(const char *dir, const char *const *names, size_t n_names, ds_split split,
                       const ds_text_options *opt, ds_dataset **out, char *msg, size_t msg_len);

/* ---- seeds, shuffling and batches ---------------------------------------------- */
/* The independent random streams ampscope draws from one user seed. */
enum ds_stream {
    DS_STREAM_INPUTS = 1,
    DS_STREAM_TARGETS = 2,
    DS_STREAM_MAP = 3,
    DS_STREAM_SHUFFLE = 4 /* index = epoch */
};

/* The 32-bit seed given to gsl_rng_set for (seed, stream, index):
 *   h = mix(mix(mix(seed) ^ stream) ^ index), result = h >> 32,
 * where mix is SplitMix64's step: z += 0x9e3779b97f4a7c15;
 * z = (z ^ z>>30) * 0xbf58476d1ce4e5b9; z = (z ^ z>>27) * 0x94d049bb133111eb;
 * return z ^ z>>31 (all modulo 2^64).  32 bits because MT19937 keeps only
 * those of its seed, and unsigned long is 32 bits on some machines. */
uint32_t ds_seed32(uint64_t seed, uint64_t stream, uint64_t index);

/* perm[0..n-1] becomes a permutation of 0..n-1: the identity shuffled by
 * gsl_ran_shuffle with an MT19937 generator seeded with
 * ds_seed32(seed, DS_STREAM_SHUFFLE, epoch).  The same (n, seed, epoch)
 * gives the same permutation everywhere.  n must be < 2^32. */
int ds_shuffle(size_t n, uint64_t seed, uint64_t epoch, size_t *perm, char *msg, size_t msg_len);

/* Gathers samples indices[0..n-1] of ds into host buffers, sample after
 * sample:
 *   x:       n * ds->features floats, each sample [channels, height, width]
 *            (images: pixels scaled as above, the pad border zero; text:
 *            the window's first context token ids);
 *   labels:  n * ds->label_dim int32 labels (only for a data set with
 *            labels: label_dim > 0);
 *   targets: n * ds->target_dim floats (only for a data set with targets).
 * Any of the three may be NULL to skip it; asking for labels or targets the
 * data set does not have is an error.  Every index must be < ds->count. */
int ds_gather(const ds_dataset *ds, const size_t *indices, size_t n, float *x, int32_t *labels,
              float *targets, char *msg, size_t msg_len);

/* One pass over a data set in a given order, batch by batch.  The fields
 * are public: set next to resume an epoch at a given batch. */
typedef struct ds_batcher {
    const ds_dataset *ds;
    const size_t *order; /* ds->count indices (from ds_shuffle), or NULL for file order; the
                            caller keeps it alive */
    size_t batch_size;
    bool keep_partial; /* keep a last batch smaller than batch_size (else it is dropped) */
    size_t next;       /* the batch ds_batch_next gathers next */
} ds_batcher;

/* Checks the arguments (every order[i] < ds->count) and starts at batch 0. */
int ds_batcher_init(ds_batcher *it, const ds_dataset *ds, const size_t *order, size_t batch_size,
                    bool keep_partial, char *msg, size_t msg_len);
/* Batches in one pass: count / batch_size, plus one for a kept remainder. */
size_t ds_batcher_count(const ds_batcher *it);
/* Gathers batch it->next (samples order[next*batch_size ...]) as ds_gather
 * does, sets *n to its size and advances; after the last batch *n is 0 and
 * nothing is written. */
int ds_batch_next(ds_batcher *it, float *x, int32_t *labels, float *targets, size_t *n, char *msg,
                  size_t msg_len);

#endif
