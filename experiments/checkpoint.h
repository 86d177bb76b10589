/* checkpoint.h: a model's weights and a run's state in safetensors files.
 *
 * Names follow PyTorch: the weights the model computes with under the
 * parameter's own name ("fc1.weight": fp32 in O0/O1, the fp16/bf16 model copy
 * in O2, the low-precision weights in O3), the fp32 master weights of O2 as
 * "master.fc1.weight", and the optimizer state as torch.optim names it:
 * "optimizer.fc1.weight.momentum_buffer" (momentum), ".exp_avg" and
 * ".exp_avg_sq" (Adam).  The metadata hold the step, the data position, the
 * optimizer's step state and the loss scaler's state, every float as a C99
 * hex float so it reads back bit for bit, and (format 2) "data_crc32": zlib's
 * CRC-32 of the tensor data, tensor after tensor in the order of their names,
 * as 8 lowercase hex digits.
 */
#ifndef AMPSCOPE_CHECKPOINT_H
#define AMPSCOPE_CHECKPOINT_H

#include <stdint.h>

#include "kernels.h"
#include "model.h"

/* The run that wrote a checkpoint, as its run.json has the options
 * resolved (metadata "run.net", ...): a resume checks that the two agree. */
typedef struct ckpt_run {
    char net[32], mode[8], dtype[8];
    int64_t batch;
    float lr;
    uint64_t seed;
} ckpt_run;

/* Where a run stands after its last completed step. */
typedef struct ckpt_state {
    int64_t step;      /* steps completed (the next step's number) */
    int64_t epoch;     /* the epoch of the next step */
    int64_t batch;     /* the next step's batch within its epoch */
    uint64_t sr_index; /* the optimizer's next stochastic-rounding index */
    int64_t skips;     /* skipped steps so far */
    float scale_used;  /* the scale the next step multiplies its loss by */
    ak_opt_state opt;  /* host copies */
    ak_scaler_state scaler;
    ckpt_run run;
} ckpt_state;

/* Writes every stored copy of every parameter, the optimizer buffers and
 * state to path, atomically.  0, or -1 with the reason in msg. */
int ckpt_save(const char *path, model *m, const ckpt_state *s, char *msg, size_t msg_len);
/* Reads a checkpoint written by ckpt_save for the same net and precision
 * plan into m and *s: format 2 (a format 1 file, without a checksum, is
 * refused), the checksum of its tensor data verified, every tensor there
 * with its dtype and shape.  0, or -1 (a bad or mismatched file; the
 * message names the file and the tensor).  The metadata's values are
 * checked against the run by the caller (train_verify.c). */
int ckpt_load(const char *path, model *m, ckpt_state *s, char *msg, size_t msg_len);

/* --init: starts from the weights in path (e.g. exported from PyTorch with
 * safetensors.torch.save_file): for each parameter the tensor of its name
 * with its shape, in F32, F16 or BF16; its value is written to every stored
 * copy (rounded to nearest even where a copy is narrower).  Other tensors in
 * the file are ignored.  A NaN or an infinity is refused ("PATH: tensor
 * fc1.weight has nan at index 17", the index counted row-major from 0), and
 * so is a file whose "data_crc32" (an ampscope checkpoint) does not match
 * its data.  0, or -1 with the reason. */
int ckpt_load_weights(const char *path, model *m, char *msg, size_t msg_len);

/* Writes each parameter's gradient, as the optimizer reads it (fp32, or the
 * O3 format), under the parameter's name (ampscope grad).  0 or -1. */
int ckpt_save_grads(const char *path, model *m, char *msg, size_t msg_len);
/* Writes every buffer (BatchNorm's running_mean and running_var: fp32, as
 * the last forward left them) under its name (ampscope grad
 * --running-stats).  0 or -1. */
int ckpt_save_buffers(const char *path, model *m, char *msg, size_t msg_len);

#endif
