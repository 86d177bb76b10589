/* safetensors.h: reading and writing safetensors files
 * (https://huggingface.co/docs/safetensors), the format of checkpoints and
 * of weights exchanged with PyTorch.
 *
 * The format: an 8-byte little-endian header length N; N bytes of JSON,
 *   {"__metadata__": {"key": "value", ...},
 *    "fc1.weight": {"dtype": "F32", "shape": [120, 400], "data_offsets": [0, 192000]}, ...}
 * starting with '{' and padded with spaces; then the byte buffer, which the
 * tensors' [begin, end) offsets (relative to it) cover exactly: no gaps, no
 * overlaps, nothing after the last.  Elements are little-endian, row-major.
 * Metadata is an optional string -> string map.
 *
 * st_open validates all of it (errors name the file and the tensor) and
 * holds the whole file in memory; st_write writes atomically (af_begin ...
 * af_commit).  This code assumes a little-endian host.
 *
 * Errors as in atomic_file.h: an AN_* status (AN_EFORMAT for a malformed
 * file) and a message in msg.
 */
#ifndef AMPSCOPE_SAFETENSORS_H
#define AMPSCOPE_SAFETENSORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atomic_file.h"
#include "kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The element types with whole-byte elements. */
typedef enum st_dtype {
    ST_BOOL = 0,
    ST_U8,
    ST_I8,
    ST_F8_E5M2,
    ST_F8_E4M3,
    ST_I16,
    ST_U16,
    ST_F16,
    ST_BF16,
    ST_I32,
    ST_U32,
    ST_F32,
    ST_I64,
    ST_U64,
    ST_F64
} st_dtype;
#define ST_DTYPES 15

const char *st_dtype_name(st_dtype dt);             /* "F32", ...; NULL for an invalid id */
size_t st_dtype_size(st_dtype dt);                  /* bytes per element; 0 for an invalid id */
int st_dtype_parse(const char *name, st_dtype *dt); /* AN_OK or AN_EINVAL */
/* fp16 <-> F16, bf16 <-> BF16, fp32 <-> F32; AN_EINVAL for any other. */
int st_dtype_from_ak(ak_dtype a, st_dtype *dt);
int st_dtype_to_ak(st_dtype dt, ak_dtype *a);

/* A tensor: given to st_write, or found in an open file (then the pointers
 * point into the st_file and live as long as it does). */
typedef struct st_tensor {
    const char *name;
    st_dtype dtype;
    size_t ndim;           /* 0 for a scalar */
    const uint64_t *shape; /* ndim dimensions, outermost first */
    const void *data;      /* elements, row-major; in a file, aligned to the element size */
} st_tensor;

uint64_t st_tensor_elements(const st_tensor *t); /* product of the shape (1 for a scalar) */
uint64_t st_tensor_bytes(const st_tensor *t);    /* elements * element size */

typedef struct st_pair {
    const char *key;
    const char *value;
} st_pair;

/* Writes n tensors and n_metadata metadata pairs (metadata may be NULL when
 * n_metadata is 0) to path, atomically.  The header lists the tensors in the
 * given order; their data are laid out by element size, largest first (in
 * the given order otherwise), so that every tensor of the file is aligned.
 * AN_EINVAL for a NULL or repeated name, "__metadata__" as a tensor name, a
 * repeated metadata key, invalid UTF-8, an invalid dtype, a size that
 * overflows, or NULL data for a nonempty tensor. */
int st_write(const char *path, const st_tensor *tensors, size_t n, const st_pair *metadata,
             size_t n_metadata, char *msg, size_t msg_len);

typedef struct st_file st_file;

/* Reads and validates path: NULL with the reason in msg on failure. */
st_file *st_open(const char *path, char *msg, size_t msg_len);
void st_close(st_file *f); /* NULL is harmless */

/* The tensor named name, or NULL. */
const st_tensor *st_find(const st_file *f, const char *name);
size_t st_count(const st_file *f);
const st_tensor *st_at(const st_file *f, size_t i); /* in the header's order; NULL past the end */
/* The metadata value of key, or NULL. */
const char *st_metadata_get(const st_file *f, const char *key);
size_t st_metadata_count(const st_file *f);
const st_pair *st_metadata_at(const st_file *f, size_t i);

/* The tensor named name, checked against the dtype and shape a caller
 * expects (a checkpoint being loaded into a net): AN_EFORMAT "PATH: tensor
 * 'fc1.weight' has shape [120, 400], expected [120, 401]" on a mismatch or
 * when it is missing.  *t points into f. */
int st_expect(const st_file *f, const char *name, st_dtype dtype, size_t ndim,
              const uint64_t *shape, const st_tensor **t, char *msg, size_t msg_len);

#ifdef __cplusplus
}
#endif
#endif
