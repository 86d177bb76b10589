/* test_safetensors: write/read round trips for every dtype, a file built
 * byte by byte, and every kind of corruption the reader must reject. */
#define _XOPEN_SOURCE 700 /* mkdtemp, ftruncate */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_main.h"
#include "files.h" /* dir_entries, ASSERT_MSG */
#include "scratch.h"
#include "safetensors.h"

/* A safetensors file by hand: the little-endian length of header (or
 * length when it is not ~0), the header, then data. */
static void write_raw(const char *path, uint64_t length, const char *header, const void *data,
                      size_t data_len)
{
    const size_t n = strlen(header);
    if (length == ~(uint64_t)0) length = n;
    unsigned char le[8];
    for (int b = 0; b < 8; b++)
        le[b] = (unsigned char)(length >> (8 * b));
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fwrite(le, 1, 8, f);
    fwrite(header, 1, n, f);
    if (data_len) fwrite(data, 1, data_len, f);
    fclose(f);
}

/* ---- dtypes --------------------------------------------------------------------------------- */
START_TEST(dtype_tables)
{
    static const char *names[ST_DTYPES] = {"BOOL", "U8",  "I8",  "F8_E5M2", "F8_E4M3",
                                           "I16",  "U16", "F16", "BF16",    "I32",
                                           "U32",  "F32", "I64", "U64",     "F64"};
    static const size_t sizes[ST_DTYPES] = {1, 1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 8, 8, 8};
    for (int i = 0; i < ST_DTYPES; i++) {
        ck_assert_str_eq(st_dtype_name((st_dtype)i), names[i]);
        ck_assert_uint_eq(st_dtype_size((st_dtype)i), sizes[i]);
        st_dtype d;
        ck_assert_int_eq(st_dtype_parse(names[i], &d), AN_OK);
        ck_assert_int_eq(d, i);
    }
    st_dtype d;
    ck_assert_ptr_null(st_dtype_name((st_dtype)ST_DTYPES));
    ck_assert_uint_eq(st_dtype_size((st_dtype)-1), 0);
    ck_assert_int_eq(st_dtype_parse("f32", &d), AN_EINVAL);
    ck_assert_int_eq(st_dtype_parse("F4", &d), AN_EINVAL);
    ck_assert_int_eq(st_dtype_from_ak(AK_BF16, &d), AN_OK);
    ck_assert_int_eq(d, ST_BF16);
    ak_dtype a;
    ck_assert_int_eq(st_dtype_to_ak(ST_F16, &a), AN_OK);
    ck_assert_int_eq(a, AK_F16);
    ck_assert_int_eq(st_dtype_to_ak(ST_F64, &a), AN_EINVAL);
    ck_assert_int_eq(st_dtype_from_ak((ak_dtype)7, &d), AN_EINVAL);
}
END_TEST

/* ---- round trips ---------------------------------------------------------------------------- */
START_TEST(round_trip_every_dtype)
{
    char dir[128], path[256], msg[512];
    new_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/checkpoint.safetensors", dir);
    enum { N = ST_DTYPES + 2 };
    static const uint64_t shape23[2] = {2, 3}, shape04[2] = {0, 4};
    unsigned char data[ST_DTYPES][48];
    char names[ST_DTYPES][16];
    st_tensor t[N];
    /* Small dtypes first, so the writer has to reorder the data to align it. */
    for (int i = 0; i < ST_DTYPES; i++) {
        for (int k = 0; k < 48; k++)
            data[i][k] = (unsigned char)(k * 7 + i);
        snprintf(names[i], sizeof names[i], "layer%d.weight", i);
        t[i] = (st_tensor){names[i], (st_dtype)i, 2, shape23, data[i]};
    }
    const double scalar = 1.5;
    t[ST_DTYPES] = (st_tensor){"scalar", ST_F64, 0, NULL, &scalar};
    t[ST_DTYPES + 1] = (st_tensor){"empty", ST_F32, 2, shape04, NULL};
    const st_pair meta[2] = {{"step", "1234"}, {"scaler", "{\"scale\": 65536}"}};
    ck_assert_int_eq(st_write(path, t, N, meta, 2, msg, sizeof msg), AN_OK);
    ck_assert_int_eq(dir_entries(dir), 1);

    /* the raw layout: a padded header, then exactly the data */
    FILE *raw = fopen(path, "rb");
    unsigned char le[8];
    ck_assert_uint_eq(fread(le, 1, 8, raw), 8);
    uint64_t hlen = 0;
    for (int b = 7; b >= 0; b--)
        hlen = hlen << 8 | le[b];
    ck_assert_uint_eq(hlen % 8, 0);
    char *header = malloc(hlen + 1);
    ck_assert_uint_eq(fread(header, 1, hlen, raw), hlen);
    header[hlen] = '\0';
    ck_assert_int_eq(header[0], '{');
    const size_t json_end = strrchr(header, '}') - header;
    for (size_t k = json_end + 1; k < hlen; k++)
        ck_assert_int_eq(header[k], ' ');
    ck_assert_uint_lt(hlen - json_end - 1, 8);
    /* metadata first; the tensors in the given order */
    ck_assert_ptr_eq(strstr(header, "{\"__metadata__\":{\"step\":\"1234\""), header);
    ck_assert_ptr_nonnull(strstr(header, "\"layer0.weight\":{\"dtype\":\"BOOL\",\"shape\":[2,3],"));
    free(header);
    fseek(raw, 0, SEEK_END);
    size_t expected = 8 + hlen + 8; /* the scalar */
    for (int i = 0; i < ST_DTYPES; i++)
        expected += 6 * st_dtype_size((st_dtype)i);
    ck_assert_uint_eq((size_t)ftell(raw), expected);
    fclose(raw);

    st_file *f = st_open(path, msg, sizeof msg);
    ck_assert_msg(f != NULL, "%s", msg);
    ck_assert_uint_eq(st_count(f), N);
    for (int i = 0; i < N; i++) {
        const st_tensor *g = st_at(f, (size_t)i);
        ck_assert_str_eq(g->name, t[i].name);
        ck_assert_ptr_eq(st_find(f, t[i].name), g);
        ck_assert_int_eq(g->dtype, t[i].dtype);
        ck_assert_uint_eq(g->ndim, t[i].ndim);
        for (size_t d = 0; d < g->ndim; d++)
            ck_assert_uint_eq(g->shape[d], t[i].shape[d]);
        const uint64_t bytes = st_tensor_bytes(g);
        ck_assert_uint_eq(bytes, st_tensor_bytes(&t[i]));
        if (bytes) ck_assert_int_eq(memcmp(g->data, t[i].data, bytes), 0);
        if (bytes) ck_assert_uint_eq((uintptr_t)g->data % st_dtype_size(g->dtype), 0);
    }
    ck_assert_uint_eq(st_tensor_elements(st_find(f, "scalar")), 1);
    ck_assert_uint_eq(st_tensor_bytes(st_find(f, "empty")), 0);
    ck_assert_ptr_null(st_at(f, N));
    ck_assert_ptr_null(st_find(f, "nope"));
    ck_assert_str_eq(st_metadata_get(f, "step"), "1234");
    ck_assert_str_eq(st_metadata_get(f, "scaler"), "{\"scale\": 65536}");
    ck_assert_ptr_null(st_metadata_get(f, "nope"));
    ck_assert_uint_eq(st_metadata_count(f), 2);
    ck_assert_str_eq(st_metadata_at(f, 1)->key, "scaler");
    ck_assert_ptr_null(st_metadata_at(f, 2));
    st_close(f);
    st_close(NULL);

    /* rewriting replaces the file; no tensors, no metadata: "{}" + 6 spaces */
    ck_assert_int_eq(st_write(path, NULL, 0, NULL, 0, msg, sizeof msg), AN_OK);
    f = st_open(path, msg, sizeof msg);
    ck_assert_msg(f != NULL, "%s", msg);
    ck_assert_uint_eq(st_count(f), 0);
    ck_assert_uint_eq(st_metadata_count(f), 0);
    st_close(f);
    raw = fopen(path, "rb");
    char all[32];
    ck_assert_uint_eq(fread(all, 1, sizeof all, raw), 16);
    fclose(raw);
    ck_assert_int_eq(memcmp(all, "\x08\0\0\0\0\0\0\0{}      ", 16), 0);
}
END_TEST

/* A file as another writer might make it: header length 139 (odd, so the
 * F32 tensor lands misaligned in memory and is copied), keys in any order. */
START_TEST(hand_made_file)
{
    char dir[128], path[256], msg[512];
    new_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/hand.safetensors", dir);
    const char *header = "{\"b\":{\"shape\":[],\"dtype\":\"BF16\",\"data_offsets\":[8,10]},"
                         "\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                         "\"__metadata__\":{\"format\":\"pt\"}}";
    ck_assert_uint_eq(strlen(header), 139);
    /* w = [1.0f, -2.0f], b = bf16 1.0 (0x3F80), little-endian */
    const unsigned char data[10] = {0x00, 0x00, 0x80, 0x3F, 0x00, 0x00, 0x00, 0xC0, 0x80, 0x3F};
    write_raw(path, ~(uint64_t)0, header, data, sizeof data);
    st_file *f = st_open(path, msg, sizeof msg);
    ck_assert_msg(f != NULL, "%s", msg);
    ck_assert_uint_eq(st_count(f), 2);
    ck_assert_str_eq(st_at(f, 0)->name, "b");
    const st_tensor *w = st_find(f, "w");
    ck_assert_int_eq(w->dtype, ST_F32);
    ck_assert_uint_eq(w->ndim, 1);
    ck_assert_uint_eq(w->shape[0], 2);
    ck_assert_uint_eq((uintptr_t)w->data % 4, 0);
    const float *wv = w->data;
    ck_assert(wv[0] == 1.0f && wv[1] == -2.0f);
    const st_tensor *b = st_find(f, "b");
    ck_assert_int_eq(b->dtype, ST_BF16);
    ck_assert_uint_eq(b->ndim, 0);
    ck_assert_uint_eq(*(const uint16_t *)b->data, 0x3F80);
    ck_assert_str_eq(st_metadata_get(f, "format"), "pt");

    const st_tensor *got;
    const uint64_t two = 2, three = 3;
    ck_assert_int_eq(st_expect(f, "w", ST_F32, 1, &two, &got, msg, sizeof msg), AN_OK);
    ck_assert_ptr_eq(got, w);
    ck_assert_int_eq(st_expect(f, "w", ST_F32, 1, &three, &got, msg, sizeof msg), AN_EFORMAT);
    ASSERT_MSG(msg, "hand.safetensors: tensor 'w' has shape [2], expected [3]");
    ck_assert_int_eq(st_expect(f, "w", ST_F16, 1, &two, &got, msg, sizeof msg), AN_EFORMAT);
    ASSERT_MSG(msg, "tensor 'w' is F32, expected F16");
    ck_assert_int_eq(st_expect(f, "b", ST_BF16, 1, &two, &got, msg, sizeof msg), AN_EFORMAT);
    ASSERT_MSG(msg, "tensor 'b' has shape [], expected [2]");
    ck_assert_int_eq(st_expect(f, "fc1.weight", ST_F32, 1, &two, &got, msg, sizeof msg),
                     AN_EFORMAT);
    ASSERT_MSG(msg, "no tensor 'fc1.weight'");
    st_close(f);
}
END_TEST

/* ---- corruptions ----------------------------------------------------------------------------- */
static void expect_bad(const char *dir, uint64_t length, const char *header, const void *data,
                       size_t data_len, const char *part)
{
    char path[256], msg[512];
    snprintf(path, sizeof path, "%s/bad.safetensors", dir);
    write_raw(path, length, header, data, data_len);
    msg[0] = '\0';
    st_file *f = st_open(path, msg, sizeof msg);
    ck_assert_msg(f == NULL, "accepted: %s", header);
    ASSERT_MSG(msg, path);
    ASSERT_MSG(msg, part);
}

#define ANY (~(uint64_t)0)
#define T(name, dtype, shape, offsets)                                                             \
    "\"" name "\":{\"dtype\":\"" dtype "\",\"shape\":" shape ",\"data_offsets\":" offsets "}"

START_TEST(corruptions_rejected)
{
    char dir[128], path[256], msg[512];
    new_dir(dir, sizeof dir);
    const unsigned char z[16] = {0};

    /* sizes and the header length */
    snprintf(path, sizeof path, "%s/short.safetensors", dir);
    FILE *s = fopen(path, "wb");
    fwrite("short", 1, 5, s);
    fclose(s);
    ck_assert_ptr_null(st_open(path, msg, sizeof msg));
    ASSERT_MSG(msg, "short.safetensors: 5 bytes is too short");
    expect_bad(dir, 1000, "{}", z, 4, "header length 1000 exceeds the 6 bytes that follow it");
    expect_bad(dir, 0, "", NULL, 0, "does not start with '{'");
    expect_bad(dir, ANY, "[]      ", NULL, 0, "does not start with '{'");
    expect_bad(dir, ANY, " {}", NULL, 0, "does not start with '{'");
    /* a length over the limit, in a sparse file big enough to hold it */
    snprintf(path, sizeof path, "%s/huge.safetensors", dir);
    write_raw(path, 100000001, "{}", NULL, 0);
    ck_assert_int_eq(truncate(path, 8 + 100000001), 0);
    ck_assert_ptr_null(st_open(path, msg, sizeof msg));
    ASSERT_MSG(msg, "header length 100000001 exceeds the limit of 100000000 bytes");
    unlink(path);

    /* the JSON */
    expect_bad(dir, ANY, "{\"a\":", NULL, 0, "header, line 1");
    expect_bad(dir, ANY, "{} x", NULL, 0, "header, line 1");
    expect_bad(dir, ANY, "{" T("a", "F32", "[1]", "[0,4]") "," T("a", "F32", "[1]", "[4,8]") "}", z,
               8, "duplicate");

    /* entries */
    expect_bad(dir, ANY, "{" T("a", "F33", "[1]", "[0,4]") "}", z, 4,
               "tensor 'a': unknown dtype 'F33'");
    expect_bad(dir, ANY, "{\"a\":{\"dtype\":5,\"shape\":[1],\"data_offsets\":[0,4]}}", z, 4,
               "tensor 'a': unknown dtype (not a string)");
    expect_bad(dir, ANY, "{\"a\":1}", NULL, 0, "tensor 'a': not an object");
    expect_bad(dir, ANY, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", z, 4,
               "tensor 'a': missing \"data_offsets\"");
    expect_bad(dir, ANY, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":0}}",
               z, 4, "tensor 'a': unexpected field \"x\"");
    expect_bad(dir, ANY, "{" T("a", "F32", "[-1]", "[0,4]") "}", z, 4,
               "tensor 'a': shape[0] is not a non-negative integer");
    expect_bad(dir, ANY, "{" T("a", "F32", "[1.0]", "[0,4]") "}", z, 4,
               "tensor 'a': shape[0] is not");
    expect_bad(dir, ANY, "{" T("a", "F32", "4", "[0,4]") "}", z, 4,
               "tensor 'a': shape is not an array");
    expect_bad(dir, ANY, "{" T("a", "F32", "[1]", "[0,4,8]") "}", z, 4,
               "tensor 'a': data_offsets is not two non-negative integers");
    expect_bad(dir, ANY, "{" T("a", "F32", "[1]", "[0,-4]") "}", z, 4, "data_offsets is not two");
    expect_bad(dir, ANY, "{" T("a", "F32", "[4294967296,4294967296,16]", "[0,4]") "}", z, 4,
               "tensor 'a': shape [4294967296, 4294967296, 16] of F32 overflows");
    expect_bad(dir, ANY, "{" T("a", "F32", "[2]", "[0,4]") "}", z, 4,
               "tensor 'a': shape [2] of F32 takes 8 bytes, data_offsets [0, 4] hold 4");
    expect_bad(dir, ANY, "{" T("a", "F32", "[0]", "[4,0]") "}", z, 4,
               "tensor 'a': data_offsets [4, 0] end before they begin");
    expect_bad(dir, ANY, "{" T("a", "F32", "[2]", "[0,8]") "}", z, 4,
               "tensor 'a': data_offsets [0, 8] go past the end of the 4-byte data buffer");

    /* the tiling of the buffer */
    expect_bad(dir, ANY, "{" T("a", "F32", "[2]", "[0,8]") "," T("b", "F32", "[2]", "[4,12]") "}",
               z, 12, "tensors 'a' [0, 8] and 'b' [4, 12] overlap");
    expect_bad(dir, ANY, "{" T("b", "F32", "[1]", "[8,12]") "," T("a", "F32", "[1]", "[0,4]") "}",
               z, 12, "bytes [4, 8) of the data buffer, before tensor 'b', belong to no tensor");
    expect_bad(dir, ANY, "{" T("a", "F32", "[1]", "[4,8]") "}", z, 8,
               "bytes [0, 4) of the data buffer, before tensor 'a'");
    expect_bad(dir, ANY, "{" T("a", "F32", "[1]", "[0,4]") "}", z, 8,
               "bytes [4, 8) at the end of the data buffer belong to no tensor");
    expect_bad(dir, ANY, "{}", z, 1, "bytes [0, 1) at the end");

    /* metadata */
    expect_bad(dir, ANY, "{\"__metadata__\":{\"k\":1}}", NULL, 0,
               "__metadata__ 'k' is not a string");
    expect_bad(dir, ANY, "{\"__metadata__\":[\"k\"]}", NULL, 0, "__metadata__ is not an object");
    expect_bad(dir, ANY, "{\"__metadata__\":{\"k\":{\"x\":\"y\"}}}", NULL, 0,
               "__metadata__ 'k' is not a string");

    snprintf(path, sizeof path, "%s/none.safetensors", dir);
    ck_assert_ptr_null(st_open(path, msg, sizeof msg));
    ASSERT_MSG(msg, "none.safetensors: cannot open: No such file or directory");
    ck_assert_ptr_null(st_open(dir, msg, sizeof msg));
    ASSERT_MSG(msg, "not a regular file");
}
END_TEST

START_TEST(writer_rejects)
{
    char dir[128], path[256], msg[512];
    new_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/w.safetensors", dir);
    const float v[2] = {1, 2};
    const uint64_t two = 2;
    st_tensor t[2] = {{"a", ST_F32, 1, &two, v}, {"a", ST_F32, 1, &two, v}};
    ck_assert_int_eq(st_write(path, t, 2, NULL, 0, msg, sizeof msg), AN_EINVAL);
    ASSERT_MSG(msg, "tensor name 'a' given twice");
    t[1].name = "__metadata__";
    ck_assert_int_eq(st_write(path, t, 2, NULL, 0, msg, sizeof msg), AN_EINVAL);
    ASSERT_MSG(msg, "'__metadata__' is not a tensor name");
    t[1].name = NULL;
    ck_assert_int_eq(st_write(path, t, 2, NULL, 0, msg, sizeof msg), AN_EINVAL);
    ASSERT_MSG(msg, "tensor 1 has no name");
    t[1].name = "\xff";
    ck_assert_int_eq(st_write(path, t, 2, NULL, 0, msg, sizeof msg), AN_EINVAL);
    ASSERT_MSG(msg, "is not valid UTF-8");
    t[1] = (st_tensor){"b", ST_F32, 1, &two, NULL};
    ck_assert_int_eq(st_write(path, t, 2, NULL, 0, msg, sizeof msg), AN_EINVAL);
    ASSERT_MSG(msg, "tensor 'b': data is NULL");
    t[1] = (st_tensor){"b", (st_dtype)ST_DTYPES, 1, &two, v};
    ck_assert_int_eq(st_write(path, t, 2, NULL, 0, msg, sizeof msg), AN_EINVAL);
    ASSERT_MSG(msg, "tensor 'b': invalid dtype 15");
    t[1] = (st_tensor){"b", ST_F32, 1, NULL, v};
    ck_assert_int_eq(st_write(path, t, 2, NULL, 0, msg, sizeof msg), AN_EINVAL);
    ASSERT_MSG(msg, "tensor 'b': shape is NULL");
    const uint64_t huge[2] = {UINT64_MAX / 2, 4};
    t[1] = (st_tensor){"b", ST_F32, 2, huge, v};
    ck_assert_int_eq(st_write(path, t, 2, NULL, 0, msg, sizeof msg), AN_EINVAL);
    ASSERT_MSG(msg, "tensor 'b': size overflows");
    const st_pair twice[2] = {{"k", "1"}, {"k", "2"}};
    ck_assert_int_eq(st_write(path, t, 1, twice, 2, msg, sizeof msg), AN_EINVAL);
    ASSERT_MSG(msg, "metadata key 'k' given twice");
    const st_pair null_value[1] = {{"k", NULL}};
    ck_assert_int_eq(st_write(path, t, 1, null_value, 1, msg, sizeof msg), AN_EINVAL);
    ASSERT_MSG(msg, "metadata 0 has a NULL key or value");
    const st_pair bad_utf8[1] = {{"k", "\xc3\x28"}};
    ck_assert_int_eq(st_write(path, t, 1, bad_utf8, 1, msg, sizeof msg), AN_EINVAL);
    ASSERT_MSG(msg, "metadata 'k' is not valid UTF-8");
    ck_assert_int_eq(st_write(path, NULL, 1, NULL, 0, msg, sizeof msg), AN_EINVAL);
    ck_assert_int_eq(dir_entries(dir), 0); /* nothing was written */

    snprintf(path, sizeof path, "%s/missing/w.safetensors", dir);
    ck_assert_int_eq(st_write(path, t, 1, NULL, 0, msg, sizeof msg), AN_EIO);
    ASSERT_MSG(msg, path);
    ASSERT_MSG(msg, "No such file or directory");
}
END_TEST

static Suite *safetensors_suite(void)
{
    Suite *s = suite_create("analyze_safetensors");
    TCase *tc = tcase_create("safetensors");
    tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
    tcase_add_test(tc, dtype_tables);
    tcase_add_test(tc, round_trip_every_dtype);
    tcase_add_test(tc, hand_made_file);
    tcase_add_test(tc, corruptions_rejected);
    tcase_add_test(tc, writer_rejects);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return ts_run_suite(safetensors_suite()); }
