/* test_options.c: options as data (experiments/options.h, train_options.h).
 * The strict number parsing, one table row setting its field from text with
 * the option named in every message, train's table filling a train_options
 * option by option (the options kept as given, in order), and topt_finish
 * resolving what depends on the rest in a fixed order.  Expected values
 * are written out by hand. */
#include <check.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "check_main.h"
#include "options.h"
#include "train_options.h"

#define ASSERT_MSG(msg, part)                                                                      \
    ck_assert_msg(strstr((msg), (part)) != NULL, "'%s' lacks '%s'", msg, part)

START_TEST(decimal_is_strict)
{
    double v = 0;
    ck_assert_int_eq(opt_parse_decimal("0.5", &v), 0);
    ck_assert(v == 0.5);
    ck_assert_int_eq(opt_parse_decimal("-1e-3", &v), 0);
    ck_assert(v == -1e-3);
    ck_assert_int_eq(opt_parse_decimal("inf", &v), 0);
    ck_assert(isinf(v) && v > 0);
    ck_assert_int_eq(opt_parse_decimal("1e400", &v), 0); /* rounds to infinity as strtod does */
    ck_assert(isinf(v));
    /* no empty text, surrounding space, trailing characters or hex floats */
    static const char *const bad[] = {"", " 1", "1 ", "1x", "0x1p3", "--1", "1e", "."};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(opt_parse_decimal(bad[i], &v) == OPT_EINPUT, "'%s' was accepted", bad[i]);
}
END_TEST

START_TEST(integers_in_range)
{
    int64_t v = 0;
    ck_assert_int_eq(opt_parse_int("-7", -10, 10, &v), 0);
    ck_assert_int_eq(v, -7);
    ck_assert_int_eq(opt_parse_int("10", -10, 10, &v), 0);
    ck_assert_int_eq(opt_parse_int("11", -10, 10, &v), OPT_EINPUT);
    ck_assert_int_eq(opt_parse_int("-11", -10, 10, &v), OPT_EINPUT);
    ck_assert_int_eq(opt_parse_int("1.0", -10, 10, &v), OPT_EINPUT);
    ck_assert_int_eq(opt_parse_int("9223372036854775808", INT64_MIN, INT64_MAX, &v), OPT_EINPUT);
    uint64_t u = 0;
    ck_assert_int_eq(opt_parse_uint("18446744073709551615", UINT64_MAX, &u), 0);
    ck_assert(u == UINT64_MAX);
    ck_assert_int_eq(opt_parse_uint("-1", UINT64_MAX, &u), OPT_EINPUT);
}
END_TEST

/* A table of one's own: every kind sets its field, a bad value is refused
 * naming the option and its range, and nothing is written then. */
typedef struct toy {
    int64_t n;
    double x;
    bool on, flag;
    int pick;
    const char *path;
} toy;
static const char *const colours[] = {"red", "green", "blue", NULL};
static const opt_spec toy_table[] = {
    {.name = "n", .kind = OPT_I64, .offset = offsetof(toy, n), .imin = 1, .imax = 100},
    {.name = "x",
     .kind = OPT_DOUBLE,
     .offset = offsetof(toy, x),
     .rmin = 0,
     .rmax = 1,
     .open_min = true},
    {.name = "on", .kind = OPT_ONOFF, .offset = offsetof(toy, on)},
    {.name = "flag", .kind = OPT_FLAG, .offset = offsetof(toy, flag)},
    {.name = "colour", .kind = OPT_CHOICE, .offset = offsetof(toy, pick), .choices = colours},
    {.name = "file", .kind = OPT_PATH, .offset = offsetof(toy, path)},
    {.name = NULL},
};

START_TEST(a_row_sets_its_field)
{
    toy t = {.n = 5, .x = 0.5};
    char msg[256];
    ck_assert_int_eq(opt_set(opt_find(toy_table, "n"), &t, "42", msg, sizeof msg), 0);
    ck_assert_int_eq(t.n, 42);
    ck_assert_int_eq(opt_set(opt_find(toy_table, "x"), &t, "0.25", msg, sizeof msg), 0);
    ck_assert(t.x == 0.25);
    ck_assert_int_eq(opt_set(opt_find(toy_table, "on"), &t, "on", msg, sizeof msg), 0);
    ck_assert(t.on);
    ck_assert_int_eq(opt_set(opt_find(toy_table, "flag"), &t, NULL, msg, sizeof msg), 0);
    ck_assert(t.flag);
    ck_assert_int_eq(opt_set(opt_find(toy_table, "colour"), &t, "blue", msg, sizeof msg), 0);
    ck_assert_int_eq(t.pick, 2);
    ck_assert_int_eq(opt_set(opt_find(toy_table, "file"), &t, "a/b.csv", msg, sizeof msg), 0);
    ck_assert_str_eq(t.path, "a/b.csv");
    ck_assert(opt_find(toy_table, "nope") == NULL);
    ck_assert(!opt_takes_value(opt_find(toy_table, "flag")));
    ck_assert(opt_takes_value(opt_find(toy_table, "n")));

    /* refused, with the option and what it wants named; the field keeps its value */
    ck_assert_int_eq(opt_set(opt_find(toy_table, "n"), &t, "0", msg, sizeof msg), OPT_EINPUT);
    ASSERT_MSG(msg, "--n");
    ASSERT_MSG(msg, "'0'");
    ck_assert_int_eq(t.n, 42);
    ck_assert_int_eq(opt_set(opt_find(toy_table, "x"), &t, "0", msg, sizeof msg), OPT_EINPUT);
    ASSERT_MSG(msg, "--x");
    ck_assert(t.x == 0.25);
    ck_assert_int_eq(opt_set(opt_find(toy_table, "x"), &t, "nan", msg, sizeof msg), OPT_EINPUT);
    ck_assert_int_eq(opt_set(opt_find(toy_table, "on"), &t, "yes", msg, sizeof msg), OPT_EINPUT);
    ASSERT_MSG(msg, "--on");
    ck_assert_int_eq(opt_set(opt_find(toy_table, "colour"), &t, "pink", msg, sizeof msg),
                     OPT_EINPUT);
    ck_assert_str_eq(msg, "--colour wants red, green or blue, got 'pink'");
    ck_assert_int_eq(t.pick, 2);
    char buf[64];
    ck_assert_str_eq(opt_choice_list(colours, buf, sizeof buf), "red, green or blue");
}
END_TEST

START_TEST(train_options_set_by_name)
{
    train_options o;
    train_options_default(&o);
    char msg[512];
    ck_assert_int_eq(topt_set(&o, "net", "mlp", msg, sizeof msg), 0);
    ck_assert_int_eq(topt_set(&o, "lr", "0.125", msg, sizeof msg), 0);
    ck_assert_int_eq(topt_set(&o, "steps", "40", msg, sizeof msg), 0);
    ck_assert_int_eq(topt_set(&o, "seed", "7", msg, sizeof msg), 0);
    ck_assert_int_eq(topt_set(&o, "no-progress", NULL, msg, sizeof msg), 0);
    ck_assert_str_eq(o.net, "mlp");
    ck_assert(o.opt.lr == 0.125f);
    ck_assert_int_eq(o.steps, 40);
    ck_assert_uint_eq(o.seed, 7);
    ck_assert(!o.progress);
    /* kept as given, in order; a repeated option's last text wins */
    ck_assert_int_eq(o.n_given, 5);
    ck_assert_str_eq(o.given[1].key, "lr");
    ck_assert_str_eq(o.given[1].text, "0.125");
    ck_assert(o.given[4].text == NULL);
    ck_assert_int_eq(topt_set(&o, "steps", "50", msg, sizeof msg), 0);
    ck_assert_str_eq(topt_given(&o, "steps"), "50");
    ck_assert_int_eq(o.steps, 50);
    ck_assert(topt_given(&o, "batch") == NULL);

    ck_assert_int_eq(topt_set(&o, "frobnicate", "1", msg, sizeof msg), TRAIN_EINPUT);
    ck_assert_str_eq(msg, "unknown option '--frobnicate'");
    ck_assert_int_eq(topt_set(&o, "steps", "0", msg, sizeof msg), TRAIN_EINPUT);
    ASSERT_MSG(msg, "--steps");
    ck_assert_int_eq(o.steps, 50);
    ck_assert_int_eq(topt_set(&o, "lr", "-1", msg, sizeof msg), TRAIN_EINPUT);
    ASSERT_MSG(msg, "--lr");
    ck_assert(o.opt.lr == 0.125f);
}
END_TEST

START_TEST(finish_resolves_in_order)
{
    char msg[512];
    train_options o;
    train_options_default(&o);
    ck_assert_int_eq(topt_set(&o, "net", "lenet5", msg, sizeof msg), 0);
    ck_assert_int_eq(topt_finish(&o, msg, sizeof msg), TRAIN_EINPUT);
    ck_assert_str_eq(msg, "--out DIR is required");

    /* the scaler's overrides apply after its preset, whatever their order */
    ck_assert_int_eq(topt_set(&o, "scale-window", "123", msg, sizeof msg), 0);
    ck_assert_int_eq(topt_set(&o, "loss-scale", "pytorch", msg, sizeof msg), 0);
    ck_assert_int_eq(topt_set(&o, "mode", "O2", msg, sizeof msg), 0);
    ck_assert_int_eq(topt_set(&o, "dtype", "bf16", msg, sizeof msg), 0);
    ck_assert_int_eq(topt_set(&o, "out", "runs/x", msg, sizeof msg), 0);
    ck_assert_msg(topt_finish(&o, msg, sizeof msg) == 0, "%s", msg);
    ck_assert_int_eq(o.scaler.kind, AK_SCALER_DYNAMIC);
    ck_assert_int_eq(o.scaler.window, 123);
    ck_assert(o.scaler.init_scale == 65536.0f); /* GradScaler's init_scale 2^16 */
    ck_assert(o.scaler.growth_factor == 2.0f);
    ck_assert(o.scaler.backoff_factor == 0.5f);
    ck_assert_int_eq(o.prec.mode, PREC_O2);
    ck_assert_int_eq(o.prec.low, AK_BF16);
    /* lenet5 trains with momentum 0.9 unless told otherwise; lr left to the net (-1) */
    ck_assert_int_eq(o.opt.kind, AK_OPT_MOMENTUM);
    ck_assert(o.opt.momentum == 0.9f);
    ck_assert(o.opt.lr == -1.0f);
    ck_assert_str_eq(o.scaler_name, "pytorch");

    /* --scale-factor sets both factors */
    train_options_default(&o);
    ck_assert_int_eq(topt_set(&o, "scale-factor", "4", msg, sizeof msg), 0);
    ck_assert_int_eq(topt_set(&o, "loss-scale", "dynamic", msg, sizeof msg), 0);
    ck_assert_int_eq(topt_set(&o, "out", "runs/y", msg, sizeof msg), 0);
    ck_assert_msg(topt_finish(&o, msg, sizeof msg) == 0, "%s", msg);
    ck_assert(o.scaler.growth_factor == 4.0f);
    ck_assert(o.scaler.backoff_factor == 0.25f);
}
END_TEST

START_TEST(finish_refuses_what_does_not_fit)
{
    char msg[512];
    train_options o;
    train_options_default(&o);
    ck_assert_int_eq(topt_set(&o, "scale-window", "10", msg, sizeof msg), 0);
    ck_assert_int_eq(topt_set(&o, "out", "runs/z", msg, sizeof msg), 0);
    ck_assert_int_eq(topt_finish(&o, msg, sizeof msg), TRAIN_EINPUT);
    ck_assert_str_eq(msg, "the dynamic-scaler options need --loss-scale dynamic or a preset");

    train_options_default(&o);
    ck_assert_int_eq(topt_set(&o, "mode", "O7", msg, sizeof msg), 0); /* checked when finished */
    ck_assert_int_eq(topt_set(&o, "out", "runs/z", msg, sizeof msg), 0);
    ck_assert_int_eq(topt_finish(&o, msg, sizeof msg), TRAIN_EINPUT);
    ASSERT_MSG(msg, "--mode");
    ASSERT_MSG(msg, "'O7'");

    train_options_default(&o);
    ck_assert_int_eq(topt_set(&o, "loss-scale", "nonsense", msg, sizeof msg), 0);
    ck_assert_int_eq(topt_set(&o, "out", "runs/z", msg, sizeof msg), 0);
    ck_assert_int_eq(topt_finish(&o, msg, sizeof msg), TRAIN_EINPUT);
    ASSERT_MSG(msg, "nonsense");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("options");
    TCase *tc = tcase_create("options");
    tcase_add_test(tc, decimal_is_strict);
    tcase_add_test(tc, integers_in_range);
    tcase_add_test(tc, a_row_sets_its_field);
    tcase_add_test(tc, train_options_set_by_name);
    tcase_add_test(tc, finish_resolves_in_order);
    tcase_add_test(tc, finish_refuses_what_does_not_fit);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return ts_run_suite(suite()); }
