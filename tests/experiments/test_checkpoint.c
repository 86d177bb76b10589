/* test_checkpoint: checkpoints (checkpoint.c) on the cpu backend: a
 * checkpoint reads back bit for bit; format 2 carries zlib's CRC-32 of its
 * tensor data, tensor after tensor by name (checked here with zlib itself,
 * the reference), which ckpt_load and ckpt_load_weights verify; format 1
 * files are refused; --init refuses a NaN or an infinity, naming the tensor
 * and the index. */
#define _XOPEN_SOURCE 700 /* mkdtemp */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "check_main.h"
#include "checkpoint.h"
#include "model.h"
#include "nets.h"
#include "safetensors.h"
#include "util.h"

static char dir[64];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/ampscope-ckpt-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void) { ut_remove_tree(dir); }

/* simplenet, width 4, depth 2, O0, SGD with momentum: fc1.weight [4, 4],
 * fc1.bias [4], fc2.weight [4, 4], fc2.bias [4] and their momentum buffers */
typedef struct fixture {
    ak_backend *b;
    net_def net;
    prec_plan plan;
    model *m;
} fixture;

static void build(fixture *f, uint64_t seed)
{
    char msg[256];
    f->b = ak_open("cpu", msg, sizeof msg);
    ck_assert_msg(f->b != NULL, "%s", msg);
    const net_size size = {.width = 4, .depth = 2};
    ck_assert_int_eq(net_build("simplenet", &size, &f->net, msg, sizeof msg), 0);
    prec_options o;
    prec_options_default(&o, PREC_O0, AK_F16);
    prec_plan_make(&o, &f->net, &f->plan);
    ck_assert_int_eq(model_create(f->b, &f->net, &f->plan, 2, &f->m, msg, sizeof msg), 0);
    ck_assert_int_eq(model_alloc_optimizer(f->m, true, false), 0);
    ck_assert_int_eq(model_init_weights(f->m, seed), 0);
}

static void destroy(fixture *f)
{
    model_free(f->m);
    ak_close(f->b);
}

static ckpt_state some_state(void)
{
    ckpt_state s;
    memset(&s, 0, sizeof s);
    s.step = 7;
    s.epoch = 1;
    s.batch = 3;
    s.sr_index = 280;
    s.skips = 2;
    s.scale_used = 0x1p15f;
    s.opt.step = 5;
    /* a double scale past fp32's maximum (DeepSpeed's Python float): the fp32 one is inf */
    s.scaler.master_scale = 0x1p128;
    s.scaler.scale = INFINITY;
    s.scaler.inv_scale = 0x1p-128f;
    s.scaler.hysteresis_left = 1;
    s.scaler.steps = 7;
    s.scaler.overflows = 2;
    s.scaler.skipped = 2;
    snprintf(s.run.net, sizeof s.run.net, "simplenet");
    snprintf(s.run.mode, sizeof s.run.mode, "O0");
    snprintf(s.run.dtype, sizeof s.run.dtype, "fp16");
    s.run.batch = 2;
    s.run.lr = 0.01f;
    s.run.seed = 3;
    return s;
}

static void path_of(char *out, size_t len, const char *name)
{
    snprintf(out, len, "%s/%s", dir, name);
}

/* Rewrites the safetensors file in into out with metadata key set to value
 * (NULL: removed; a key it lacks: added), the tensors as they are; data
 * (when given) replaces tensor `tensor`'s bytes. */
static void rewrite(const char *in, const char *out, const char *key, const char *value,
                    const char *tensor, const void *data)
{
    char msg[512];
    st_file *f = st_open(in, msg, sizeof msg);
    ck_assert_msg(f != NULL, "%s", msg);
    st_tensor t[16];
    st_pair md[64];
    const size_t n = st_count(f);
    size_t n_md = 0;
    bool done = false;
    for (size_t i = 0; i < n; i++) {
        t[i] = *st_at(f, i);
        if (tensor && strcmp(t[i].name, tensor) == 0) t[i].data = data;
    }
    for (size_t i = 0; i < st_metadata_count(f); i++) {
        md[n_md] = *st_metadata_at(f, i);
        if (strcmp(md[n_md].key, key) == 0) {
            done = true;
            if (!value) continue;
            md[n_md].value = value;
        }
        n_md++;
    }
    if (!done && value) md[n_md++] = (st_pair){key, value};
    ck_assert_msg(st_write(out, t, n, md, n_md, msg, sizeof msg) == 0, "%s", msg);
    st_close(f);
}

START_TEST(round_trip_and_crc)
{
    fixture a, b;
    build(&a, 1);
    build(&b, 2);
    char path[128], msg[512];
    path_of(path, sizeof path, "ckpt.safetensors");
    const ckpt_state s = some_state();
    ck_assert_msg(ckpt_save(path, a.m, &s, msg, sizeof msg) == 0, "%s", msg);
    ckpt_state got;
    ck_assert_msg(ckpt_load(path, b.m, &got, msg, sizeof msg) == 0, "%s", msg);
    ck_assert_int_eq(got.step, 7);
    ck_assert_int_eq(got.epoch, 1);
    ck_assert_int_eq(got.batch, 3);
    ck_assert_uint_eq(got.sr_index, 280);
    ck_assert_int_eq(got.skips, 2);
    ck_assert(got.scale_used == 0x1p15f && got.scaler.inv_scale == 0x1p-128f);
    ck_assert(got.scaler.master_scale == 0x1p128 && got.scaler.scale == INFINITY);
    ck_assert_int_eq(got.scaler.overflows, 2);
    ck_assert_str_eq(got.run.net, "simplenet");
    ck_assert_str_eq(got.run.mode, "O0");
    ck_assert_str_eq(got.run.dtype, "fp16");
    ck_assert_int_eq(got.run.batch, 2);
    ck_assert(got.run.lr == 0.01f);
    ck_assert_uint_eq(got.run.seed, 3);
    for (int i = 0; i < a.m->n_params; i++) {
        float wa[16], wb[16];
        ck_assert_int_eq(model_get_param(a.m, &a.m->params[i], wa), 0);
        ck_assert_int_eq(model_get_param(b.m, &b.m->params[i], wb), 0);
        ck_assert_int_eq(memcmp(wa, wb, a.m->params[i].n * sizeof(float)), 0);
    }

    /* format 2, and the CRC-32 of the tensors' bytes in the order of their names */
    st_file *f = st_open(path, msg, sizeof msg);
    ck_assert_ptr_nonnull(f);
    ck_assert_str_eq(st_metadata_get(f, "format"), "2");
    const char *order[] = {"fc1.bias",
                           "fc1.weight",
                           "fc2.bias",
                           "fc2.weight",
                           "optimizer.fc1.bias.momentum_buffer",
                           "optimizer.fc1.weight.momentum_buffer",
                           "optimizer.fc2.bias.momentum_buffer",
                           "optimizer.fc2.weight.momentum_buffer"};
    ck_assert_uint_eq(st_count(f), 8);
    uLong crc = crc32(0L, Z_NULL, 0);
    for (size_t i = 0; i < 8; i++) {
        const st_tensor *t = st_find(f, order[i]);
        ck_assert_msg(t != NULL, "%s", order[i]);
        crc = crc32(crc, t->data, (uInt)st_tensor_bytes(t));
    }
    char want[16];
    snprintf(want, sizeof want, "%08lx", crc);
    ck_assert_str_eq(st_metadata_get(f, "data_crc32"), want);
    st_close(f);
    destroy(&a);
    destroy(&b);
}
END_TEST

START_TEST(damage_refused)
{
    fixture a;
    build(&a, 1);
    char path[128], bad[128], msg[512];
    path_of(path, sizeof path, "ckpt.safetensors");
    path_of(bad, sizeof bad, "bad.safetensors");
    const ckpt_state s = some_state();
    ck_assert_int_eq(ckpt_save(path, a.m, &s, msg, sizeof msg), 0);
    ckpt_state got;

    /* one bit of fc2.bias flipped */
    float bias[4];
    ck_assert_int_eq(model_get_param(a.m, &a.m->params[3], bias), 0);
    ck_assert_str_eq(a.m->params[3].name, "fc2.bias");
    uint32_t u;
    memcpy(&u, &bias[2], 4);
    u ^= 1u << 9;
    memcpy(&bias[2], &u, 4);
    rewrite(path, bad, "format", "2", "fc2.bias", bias);
    ck_assert_int_eq(ckpt_load(bad, a.m, &got, msg, sizeof msg), -1);
    ck_assert_msg(strstr(msg, bad) && strstr(msg, "CRC-32") && strstr(msg, "damaged"), "%s", msg);
    ck_assert_int_eq(ckpt_load_weights(bad, a.m, msg, sizeof msg), -1);
    ck_assert_msg(strstr(msg, bad) && strstr(msg, "CRC-32"), "%s", msg);

    /* the checksum edited */
    rewrite(path, bad, "data_crc32", "00000000", NULL, NULL);
    ck_assert_int_eq(ckpt_load(bad, a.m, &got, msg, sizeof msg), -1);
    ck_assert_msg(strstr(msg, "the metadata say 00000000"), "%s", msg);
    rewrite(path, bad, "data_crc32", "123", NULL, NULL);
    ck_assert_int_eq(ckpt_load(bad, a.m, &got, msg, sizeof msg), -1);
    ck_assert_msg(strstr(msg, "metadata 'data_crc32' is '123', expected 8 hex digits"), "%s", msg);

    /* format 2 without its checksum; format 1 (which had none) */
    rewrite(path, bad, "data_crc32", NULL, NULL, NULL);
    ck_assert_int_eq(ckpt_load(bad, a.m, &got, msg, sizeof msg), -1);
    ck_assert_msg(strstr(msg, "metadata 'data_crc32' is missing"), "%s", msg);
    char once[128];
    path_of(once, sizeof once, "once.safetensors");
    rewrite(bad, once, "format", "1", NULL, NULL);
    ck_assert_int_eq(ckpt_load(once, a.m, &got, msg, sizeof msg), -1);
    ck_assert_msg(strstr(msg, once) && strstr(msg, "checkpoint format 1 carries no checksum"), "%s",
                  msg);
    /* as weights for --init, a file without a checksum is fine (PyTorch writes none) */
    ck_assert_msg(ckpt_load_weights(once, a.m, msg, sizeof msg) == 0, "%s", msg);

    /* the run's identity and a step out of range */
    rewrite(path, bad, "run.seed", NULL, NULL, NULL);
    ck_assert_int_eq(ckpt_load(bad, a.m, &got, msg, sizeof msg), -1);
    ck_assert_msg(strstr(msg, "metadata 'run.seed' is missing"), "%s", msg);
    /* the scaler's double is a format-2 key like the others: a file without it is damaged */
    rewrite(path, bad, "scaler.master_scale", NULL, NULL, NULL);
    ck_assert_int_eq(ckpt_load(bad, a.m, &got, msg, sizeof msg), -1);
    ck_assert_msg(strstr(msg, "metadata 'scaler.master_scale' is missing"), "%s", msg);
    rewrite(path, bad, "step", "99999999999999999999", NULL, NULL);
    ck_assert_int_eq(ckpt_load(bad, a.m, &got, msg, sizeof msg), -1);
    ck_assert_msg(strstr(msg, "metadata 'step' is not a 64-bit integer"), "%s", msg);
    destroy(&a);
}
END_TEST

START_TEST(init_refuses_nonfinite)
{
    fixture a;
    build(&a, 1);
    char path[128], bad[128], msg[512];
    path_of(path, sizeof path, "ckpt.safetensors");
    path_of(bad, sizeof bad, "init.safetensors");
    const ckpt_state s = some_state();
    ck_assert_int_eq(ckpt_save(path, a.m, &s, msg, sizeof msg), 0);
    float w[16];
    ck_assert_str_eq(a.m->params[2].name, "fc2.weight");
    const float specials[3] = {NAN, INFINITY, -INFINITY};
    const char *names[3] = {"nan", "inf", "-inf"};
    for (int k = 0; k < 3; k++) {
        ck_assert_int_eq(model_get_param(a.m, &a.m->params[2], w), 0);
        w[13] = specials[k];
        /* a file without a checksum, as from another program */
        rewrite(path, bad, "data_crc32", NULL, "fc2.weight", w);
        ck_assert_int_eq(ckpt_load_weights(bad, a.m, msg, sizeof msg), -1);
        char want[256];
        snprintf(want, sizeof want, "%s: tensor fc2.weight has %s at index 13", bad, names[k]);
        ck_assert_str_eq(msg, want);
    }
    destroy(&a);
}
END_TEST

static Suite *checkpoint_suite(void)
{
    Suite *s = suite_create("experiments_checkpoint");
    TCase *tc = tcase_create("checkpoint");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, round_trip_and_crc);
    tcase_add_test(tc, damage_refused);
    tcase_add_test(tc, init_refuses_nonfinite);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return ts_run_suite(checkpoint_suite()); }
