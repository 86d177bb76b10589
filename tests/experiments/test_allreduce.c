/* test_allreduce.c: the low-precision ring all-reduce (experiments/allreduce/allreduce.h) on
 * hand-worked cases.  Every expected value is worked out below from the formats (fp16: 11
 * bits, smallest subnormal 2^-24, largest finite 65504; bf16: 8 bits, fp32's range) and the
 * ring's order (chunk c starts at rank c), never computed by the code under test; the fp32
 * case is held to the hardware's own float additions in the same order. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "allreduce.h"
#include "check_main.h"

static uint32_t bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

/* a plain sum (no scaling) in format f, for the ring's order alone */
static ar_config sum_config(fpe_format_id f)
{
    ar_config c = {"sum", FPE_FMT_F32, f, AR_ORDER_CAST_FIRST, 1, 0, "test"};
    return c;
}

static int reduce(const ar_config *c, int world, size_t n, const float *const *grads, float *out,
                  ar_stats *st)
{
    char msg[256] = "";
    ar_call call = {.config = c, .world = world, .n = n, .grads = grads};
    const int status = ar_reduce(&call, out, st, msg, sizeof msg);
    ck_assert_msg(status == AR_OK, "ar_reduce: %s", msg);
    return status;
}

/* World 3, fp16, the same three values on every element: x0 = 1, x1 = x2 = 2^-11.  With n = 3
 * each element is its own chunk, so element c's sum starts at rank c:
 *   element 0: (1 + 2^-11) + 2^-11: 1 + 2^-11 is a tie between 1 and 1 + 2^-10, to even: 1,
 *              and again: 1
 *   element 1: (2^-11 + 2^-11) + 1 = 2^-10 + 1, exact: 1 + 2^-10
 *   element 2: (2^-11 + 1) + 2^-11: 1, then 1
 * The exact sum is 1 + 2^-10: elements 0 and 2 are off by 2^-10. */
START_TEST(order_changes_bits)
{
    const float a[3] = {1, 1, 1}, b[3] = {0x1p-11f, 0x1p-11f, 0x1p-11f};
    const float *g[3] = {a, b, b};
    float out[3];
    ar_stats st;
    const ar_config c = sum_config(FPE_FMT_F16);
    reduce(&c, 3, 3, g, out, &st);
    ck_assert_float_eq(out[0], 1.0f);
    ck_assert_float_eq(out[1], 1.0f + 0x1p-10f);
    ck_assert_float_eq(out[2], 1.0f);
    ck_assert_double_eq(st.max_abs_error, 0x1p-10);
    ck_assert_uint_eq(st.elements, 3);
    ck_assert_uint_eq(st.inputs_nonzero, 9);
    ck_assert_int_eq(st.found_inf, 0);
    /* world 2, n = 1: chunk 0 = [0, 0), chunk 1 = [0, 1), so the sum starts at rank 1:
     * ranks (2^-11, 1): 1 + 2^-11 = 1 (tie to even); ranks (1, 2^-11): the same sum, 1 */
    const float *g2[2] = {b, a};
    reduce(&c, 2, 1, g2, out, NULL);
    ck_assert_float_eq(out[0], 1.0f);
}
END_TEST

/* fp32 without scaling: the ring is a sequential sum in the ring's order, checked against the
 * hardware's float additions (chunk c = [floor(c n / N), floor((c + 1) n / N))). */
START_TEST(f32_ring_is_sequential_sum)
{
    enum { N = 5, n = 13 };
    float data[N][n];
    const float *g[N];
    for (int r = 0; r < N; r++) {
        for (int i = 0; i < n; i++)
            data[r][i] = (float)((r * 7 + i * 3) % 11 - 5) * 0.1f + (float)r * 1e-7f;
        g[r] = data[r];
    }
    float out[n];
    const ar_config c = sum_config(FPE_FMT_F32);
    reduce(&c, N, n, g, out, NULL);
    for (int ch = 0; ch < N; ch++)
        for (int i = ch * n / N; i < (ch + 1) * n / N; i++) {
            volatile float s = data[ch][i];
            for (int k = 1; k < N; k++)
                s = s + data[(ch + k) % N][i];
            ck_assert_msg(bits(out[i]) == bits(s), "element %d: %a, sequential %a", i, out[i],
                          (double)s);
        }
}
END_TEST

/* pytorch-fp16-hook, 4 ranks of 2^-23: the cast keeps it (subnormal, 2 x 2^-24), the division
 * by 4 (x 0.25, exact in fp32) gives 2^-25, a tie between 0 and 2^-24: to even, 0.  Every
 * message flushes, the sum is 0.  With 2^-22 the quotient is 2^-24 (subnormal, kept) and the
 * sum 4 x 2^-24 = 2^-22.  bf16 keeps 2^-25 (a normal number there): the sum is 2^-23. */
START_TEST(predivision_flushes)
{
    const float v[1] = {0x1p-23f};
    const float *g[4] = {v, v, v, v};
    float out[1];
    ar_stats st;
    reduce(ar_preset("pytorch-fp16-hook"), 4, 1, g, out, &st);
    ck_assert_float_eq(out[0], 0.0f);
    ck_assert_uint_eq(st.flushed_prescale, 4);
    ck_assert_uint_eq(st.flushed_cast, 0);
    ck_assert_uint_eq(st.zero_results, 1);
    ck_assert_double_eq(st.max_abs_error, 0x1p-23);
    ck_assert_double_eq(st.rel_l2_error, 1.0);

    reduce(ar_preset("pytorch-bf16-hook"), 4, 1, g, out, &st);
    ck_assert_float_eq(out[0], 0x1p-23f);
    ck_assert_uint_eq(st.flushed_prescale + st.flushed_cast, 0);
    ck_assert_double_eq(st.max_abs_error, 0);

    reduce(ar_preset("pytorch-fp32"), 4, 1, g, out, &st);
    ck_assert_float_eq(out[0], 0x1p-23f);

    const float w[1] = {0x1p-22f};
    const float *h[4] = {w, w, w, w};
    reduce(ar_preset("pytorch-fp16-hook"), 4, 1, h, out, &st);
    ck_assert_float_eq(out[0], 0x1p-22f);
    ck_assert_uint_eq(st.flushed_prescale, 0);
    ck_assert_uint_eq(st.subnormal_messages, 4);
    ck_assert_uint_eq(st.subnormal_results, 1); /* 2^-22 < 2^-14: subnormal in fp16 */
}
END_TEST

/* The cast's own flush: 2^-26 is below half of fp16's 2^-24, so the cast gives 0 before any
 * division (pytorch-fp16-hook, world 1: no scaling). */
START_TEST(cast_flushes)
{
    const float v[2] = {0x1p-26f, 0x1p-25f};
    const float *g[1] = {v};
    float out[2];
    ar_stats st;
    reduce(ar_preset("pytorch-fp16-hook"), 1, 2, g, out, &st);
    ck_assert_float_eq(out[0], 0.0f);
    ck_assert_float_eq(out[1], 0.0f); /* 2^-25: the tie, to even 0 */
    ck_assert_uint_eq(st.flushed_cast, 2);
    ck_assert_uint_eq(st.flushed_prescale, 0);
}
END_TEST

/* Where the division sits changes bits.  fp16, world 2, g = 5 x 2^-26 = 1.25 x 2^-24 on both:
 *   cast first:  RN16(1.25 x 2^-24) = 2^-24; x 0.5 = 2^-25, the tie: 0; the sum 0
 *   scale first: 1.25 x 2^-25 in fp32, RN16(0.625 x 2^-24) = 2^-24; the sum 2^-23 */
START_TEST(cast_then_divide_against_divide_then_cast)
{
    const float v[1] = {0x5p-26f};
    const float *g[2] = {v, v};
    float out[1];
    ar_config c = *ar_preset("pytorch-fp16-hook");
    reduce(&c, 2, 1, g, out, NULL);
    ck_assert_float_eq(out[0], 0.0f);
    c.order = AR_ORDER_SCALE_FIRST;
    reduce(&c, 2, 1, g, out, NULL);
    ck_assert_float_eq(out[0], 0x1p-23f);
}
END_TEST

/* Two ranks of 40000 (exact in fp16: 1250 x 32).  Summed in fp16, 80000 > 65504: inf, though
 * each message is finite.  PyTorch's hook divides first (20000 + 20000 = 40000: finite); Apex
 * divides after the fp16 sum (inf x 0.5 = inf); DeepSpeed with communication_data_type fp32
 * sums in fp32 (80000), halves it (40000) and copies it back to fp16 exactly. */
START_TEST(overflow_only_in_sum)
{
    const float v[1] = {40000};
    const float *g[2] = {v, v};
    float out[1];
    ar_stats st;
    const ar_config c = sum_config(FPE_FMT_F16);
    reduce(&c, 2, 1, g, out, &st);
    ck_assert(isinf(out[0]) && out[0] > 0);
    ck_assert_uint_eq(st.overflow_in_sum, 1);
    ck_assert_uint_eq(st.overflow_cast, 0);
    ck_assert_int_eq(st.found_inf, 1);

    reduce(ar_preset("pytorch-fp16-hook"), 2, 1, g, out, &st);
    ck_assert_float_eq(out[0], 40000.0f);
    ck_assert_int_eq(st.found_inf, 0);

    reduce(ar_preset("apex"), 2, 1, g, out, &st);
    ck_assert(isinf(out[0]));
    ck_assert_uint_eq(st.overflow_in_sum, 1);
    ck_assert_int_eq(st.found_inf, 1);

    reduce(ar_preset("deepspeed-fp32"), 2, 1, g, out, &st);
    ck_assert_float_eq(out[0], 40000.0f);
    ck_assert_int_eq(st.found_inf, 0);

    /* 70000 is inf at the cast already: an overflow of the cast, not of the sum */
    const float big[1] = {70000};
    const float *h[2] = {big, v};
    reduce(&c, 2, 1, h, out, &st);
    ck_assert_uint_eq(st.overflow_cast, 1);
    ck_assert_uint_eq(st.overflow_in_sum, 0);
    ck_assert_int_eq(st.found_inf, 1);
}
END_TEST

/* A NaN on one rank: the sum is NaN, canonical as on the GPU (fp16 0x7FFF, widened to fp32
 * 0x7FFFFFFF: fpe_env_cuda), found_inf is set, and it is no overflow. */
START_TEST(nan_propagates)
{
    const float a[2] = {1, 2}, b[2] = {NAN, 3};
    const float *g[3] = {a, b, a};
    float out[2];
    ar_stats st;
    reduce(ar_preset("pytorch-fp16-hook"), 3, 2, g, out, &st);
    ck_assert_uint_eq(bits(out[0]), 0x7FFFFFFFu);
    ck_assert(!isnan(out[1]));
    ck_assert_uint_eq(st.nonfinite_results, 1);
    ck_assert_uint_eq(st.overflow_in_sum, 0);
    ck_assert_int_eq(st.found_inf, 1);
}
END_TEST

/* World 1: the result is the value rounded to the communication format: 0.1 in fp16 is 0x2E66
 * = 1638 / 16384 = 0.0999755859375; in fp32 it is 0.1f itself. */
START_TEST(world_one)
{
    const float v[1] = {0.1f};
    const float *g[1] = {v};
    float out[1];
    reduce(ar_preset("pytorch-fp16-hook"), 1, 1, g, out, NULL);
    ck_assert_float_eq(out[0], 0.0999755859375f);
    reduce(ar_preset("pytorch-fp32"), 1, 1, g, out, NULL);
    ck_assert_float_eq(out[0], 0.1f);
    reduce(ar_preset("apex"), 1, 1, g, out, NULL); /* no post-scale at world 1 */
    ck_assert_float_eq(out[0], 0.0999755859375f);
}
END_TEST

/* The same small gradient on every rank of 2^k ranks: pytorch-fp16-hook's message is
 * RN16(g x 2^-k), flushed when g x 2^-k <= 2^-25 (the tie goes to 0).  For g = 2^-16 the
 * threshold is 2^k >= 2^9: 256 ranks keep 2^-24 each and sum to 256 x 2^-24 = 2^-16 exactly
 * (every partial sum j x 2^-24 is exact below 2^-13); 512 and 1024 ranks flush every message. */
static int constant_grad(void *ctx, int rank, size_t offset, size_t count, float *out)
{
    (void)rank, (void)offset;
    for (size_t i = 0; i < count; i++)
        out[i] = *(const float *)ctx;
    return 0;
}

START_TEST(underflow_grows_with_world)
{
    float g = 0x1p-16f, out[4];
    char msg[256];
    ar_stats st;
    const int worlds[3] = {256, 512, 1024};
    const float expect[3] = {0x1p-16f, 0, 0};
    for (int w = 0; w < 3; w++) {
        ar_call call = {.config = ar_preset("pytorch-fp16-hook"),
                        .world = worlds[w],
                        .n = 4,
                        .gen = constant_grad,
                        .gen_ctx = &g};
        ck_assert_int_eq(ar_reduce(&call, out, &st, msg, sizeof msg), AR_OK);
        for (int i = 0; i < 4; i++)
            ck_assert_float_eq(out[i], expect[w]);
        ck_assert_uint_eq(st.flushed_prescale, w == 0 ? 0 : 4u * (unsigned)worlds[w]);
        ck_assert_uint_eq(st.inputs_nonzero, 4u * (unsigned)worlds[w]);
    }
    /* bf16 at 1024 ranks keeps every message (2^-26 is normal in bf16) but its 8 bits stall the
     * sum: j x 2^-26 is exact up to j = 256 (2^-18), where the spacing is 2^-25, so each
     * further 2^-26 is half a spacing, a tie, and to even the sum stays 2^-18: a quarter of
     * the exact 2^-16. */
    ar_call call = {.config = ar_preset("pytorch-bf16-hook"),
                    .world = 1024,
                    .n = 4,
                    .gen = constant_grad,
                    .gen_ctx = &g};
    ck_assert_int_eq(ar_reduce(&call, out, &st, msg, sizeof msg), AR_OK);
    ck_assert_float_eq(out[0], 0x1p-18f);
    ck_assert_uint_eq(st.flushed_prescale, 0);
    ck_assert_double_eq(st.max_abs_error, 0x1p-16 - 0x1p-18);
}
END_TEST

START_TEST(empty_and_bad_arguments)
{
    char msg[256];
    float out[1];
    ar_stats st;
    const float v[1] = {1};
    const float *g[2] = {v, NULL};
    ar_call call = {.config = ar_preset("pytorch-fp32"), .world = 2, .n = 0, .grads = g};
    ck_assert_int_eq(ar_reduce(&call, NULL, &st, msg, sizeof msg), AR_OK);
    ck_assert_uint_eq(st.elements, 0);
    ck_assert_int_eq(st.found_inf, 0);

    call.n = 1;
    ck_assert_int_eq(ar_reduce(&call, out, &st, msg, sizeof msg), AR_EINPUT);
    ck_assert_str_eq(msg, "all-reduce: rank 1's gradient is NULL");
    call.world = 0;
    ck_assert_int_eq(ar_reduce(&call, out, &st, msg, sizeof msg), AR_EINPUT);
    ck_assert_str_eq(msg, "all-reduce: world size 0 is not in [1, 1048576]");
    call.world = 1;
    call.grads = NULL;
    ck_assert_int_eq(ar_reduce(&call, out, &st, msg, sizeof msg), AR_EINPUT);
    ck_assert_str_eq(msg, "all-reduce: no gradients (grads or gen)");
    call.grads = g;
    ck_assert_int_eq(ar_reduce(&call, NULL, &st, msg, sizeof msg), AR_EINPUT);
    ck_assert_str_eq(msg, "all-reduce: no output buffer");
    call.config = NULL;
    ck_assert_int_eq(ar_reduce(&call, out, &st, msg, sizeof msg), AR_EINPUT);
    ck_assert_str_eq(msg, "all-reduce: no configuration");
    ar_config c = *ar_preset("apex");
    c.pre = -2;
    call.config = &c;
    ck_assert_int_eq(ar_reduce(&call, out, &st, msg, sizeof msg), AR_EINPUT);
    ck_assert_str_eq(msg, "all-reduce: pre-divide factor -2 is not 0 (the world size) or positive");
    ck_assert_int_eq(ar_reduce(NULL, out, &st, msg, sizeof msg), AR_EINPUT);
}
END_TEST

START_TEST(presets_complete)
{
    int rows = 0;
    for (const ar_config *p = ar_presets; p->name; p++, rows++) {
        ck_assert_ptr_eq(ar_preset(p->name), p);
        ck_assert_msg(p->source && strlen(p->source) > 20, "%s: no source", p->name);
    }
    ck_assert_int_eq(rows, 12);
    ck_assert_ptr_null(ar_preset("horovod"));
    ck_assert_ptr_nonnull(strstr(ar_preset_names(), "pytorch-fp32, pytorch-fp16-hook, "));
    /* the hooks average with a pre-division, Apex and DeepSpeed's defaults after the sum */
    ck_assert_double_eq(ar_preset("pytorch-fp16-hook")->pre, 0);
    ck_assert_int_eq(ar_preset("apex")->post, 1);
    ck_assert_int_eq(ar_preset("apex-fp32")->comm, FPE_FMT_F32);
    ck_assert_int_eq(ar_preset("megatron-bf16")->grad, FPE_FMT_BF16);
}
END_TEST

/* Loss scaling: the errors are in unscaled units.  fp16 sum of 3 ranks, scale 1024: ranks
 * (1024, 1024 x 2^-11, 1024 x 2^-11) give the first test's element 0 scaled: 1024, exact
 * 1024 (1 + 2^-10); the error 2^-10 unscaled. */
START_TEST(loss_scale_units)
{
    const float a[1] = {1024}, b[1] = {0.5f};
    const float *g[3] = {a, b, b};
    float out[1];
    ar_stats st;
    char msg[256];
    const ar_config c = sum_config(FPE_FMT_F16);
    ar_call call = {.config = &c, .world = 3, .n = 1, .grads = g, .loss_scale = 1024};
    /* n = 1, world 3: the element is chunk 2's, so the order is (x2 + x0) + x1 =
     * (0.5 + 1024) + 0.5: 1024.5 is a tie (spacing 1 at 1024), to even 1024, then 1024 again */
    ck_assert_int_eq(ar_reduce(&call, out, &st, msg, sizeof msg), AR_OK);
    ck_assert_float_eq(out[0], 1024.0f);
    ck_assert_double_eq(st.max_abs_error, 0x1p-10);
}
END_TEST

/* PyTorch divides by the world size as a product with the fp32 reciprocal.  World 3:
 * RN32(1/3) = 11184811 x 2^-25 (3 x 11184811 = 2^25 + 1).  g = 1 + 2^-22: in units of 2^-25
 * (fp32's spacing in [1/4, 1/2)) g / 3 = (2^25 + 8) / 3 = 11184813.33, correctly rounded
 * 11184813; g x RN32(1/3) = 11184813.33 x (1 + 2^-25) = 11184813.67, rounded 11184814: one ulp
 * above the true quotient.  The message is the second. */
START_TEST(division_by_reciprocal)
{
    const ar_plan p = ar_plan_make(ar_preset("pytorch-fp32"), 3);
    ck_assert_uint_eq(p.k_pre, bits(11184811 * 0x1p-25f));
    ck_assert_int_eq(p.pre_scale, 1);
    ck_assert_int_eq(p.post_scale, 0);
    const uint32_t m = ar_message(&p, 1.0f + 0x1p-22f, NULL);
    ck_assert_uint_eq(m, bits(11184814 * 0x1p-25f));
    ck_assert_uint_ne(m, bits(11184813 * 0x1p-25f));
    /* Apex's post-scale at world 4: pre 1, k_post = RN32(1/4) */
    const ar_plan a = ar_plan_make(ar_preset("apex"), 4);
    ck_assert_int_eq(a.pre_scale, 0);
    ck_assert_int_eq(a.post_scale, 1);
    ck_assert_uint_eq(a.k_post, bits(0.25f));
}
END_TEST

/* The header's claim: NCCL's sum through fp32 and back (RN16(RN32(a + b))) equals the one
 * rounding ar_add makes, since 24 >= 2p + 2 for p = 11 and 8; random pairs per format,
 * every exponent and sign (2^19 pairs), the emulator's fp32 add as the other recipe. */
START_TEST(sum_through_fp32_is_the_same)
{
    const fpe_format_id fmts[2] = {FPE_FMT_F16, FPE_FMT_BF16};
    for (int f = 0; f < 2; f++)
        for (uint64_t i = 0; i < (1u << 19); i++) {
            const uint32_t r = fpe_random_bits(11, (uint32_t)f, i);
            const uint16_t a = (uint16_t)r, b = (uint16_t)(r >> 16);
            fpe_env env = fpe_env_cuda();
            const uint32_t wa = f ? fpe_bf16_to_f32(&env, a) : fpe_f16_to_f32(&env, a);
            const uint32_t wb = f ? fpe_bf16_to_f32(&env, b) : fpe_f16_to_f32(&env, b);
            const uint32_t s32 = fpe_f32_add(&env, wa, wb);
            const uint32_t via = f ? fpe_f32_to_bf16(&env, s32) : fpe_f32_to_f16(&env, s32);
            ck_assert_msg(ar_add(fmts[f], a, b) == via, "%s 0x%04X + 0x%04X", f ? "bf16" : "fp16",
                          a, b);
        }
}
END_TEST

static Suite *allreduce_suite(void)
{
    Suite *s = suite_create("allreduce");
    TCase *tc = tcase_create("hand-worked");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, order_changes_bits);
    tcase_add_test(tc, f32_ring_is_sequential_sum);
    tcase_add_test(tc, predivision_flushes);
    tcase_add_test(tc, cast_flushes);
    tcase_add_test(tc, cast_then_divide_against_divide_then_cast);
    tcase_add_test(tc, overflow_only_in_sum);
    tcase_add_test(tc, nan_propagates);
    tcase_add_test(tc, world_one);
    tcase_add_test(tc, underflow_grows_with_world);
    tcase_add_test(tc, empty_and_bad_arguments);
    tcase_add_test(tc, presets_complete);
    tcase_add_test(tc, loss_scale_units);
    tcase_add_test(tc, division_by_reciprocal);
    tcase_add_test(tc, sum_through_fp32_is_the_same);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return ts_run_suite(allreduce_suite()); }
