/* data.h: the training data: Fashion-MNIST read from IDX files (gzip'd or
 * plain), synthetic Gaussian data for SimpleNet, seeded shuffling and batch
 * gathering into caller-provided host buffers.
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
    size_t classes;    /* 10 for labelled images, 0 for synthetic data */
    size_t target_dim; /* floats per target: 0 for labelled images */
    int32_t *labels;   /* count labels in 0..classes-1, or NULL */
    float *targets;    /* count * target_dim floats, or NULL */
    /* storage: exactly one of pixels / inputs is non-NULL */
    uint8_t *pixels;   /* count * rows * cols bytes, as in the file */
    size_t rows, cols; /* the file's image size */
    size_t pad;        /* zero pixels added on each side when gathering */
    float *inputs;     /* count * features floats (synthetic) */
    char *images_path; /* the files read (NULL for synthetic), for the run record */
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
 *            (images: pixels scaled as above, the pad border zero);
 *   labels:  n int32 labels (only for a data set with labels);
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
