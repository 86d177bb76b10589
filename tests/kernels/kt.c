/* kt.c: shared helpers of the kernels/ tests (see kt.h). */
#define _POSIX_C_SOURCE 200809L /* fork, waitpid */
#include "kt.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

ak_backend *kt_open_cpu(void)
{
    char msg[512];
    ak_backend *b = ak_open("cpu", msg, sizeof msg);
    ck_assert_msg(b != NULL, "ak_open(cpu): %s", msg);
    return b;
}

ak_backend *kt_open_cuda(void)
{
    char msg[512];
    ak_backend *b = ak_open("cuda", msg, sizeof msg);
    if (!b) printf("%s\n", msg);
    return b;
}

/* The probe runs in a child process: CUDA cannot be used in a process
 * forked after it was initialised, and Check forks every test from this
 * (parent) process. */
void kt_require_cuda_or_skip(void)
{
    fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
        ak_backend *b = kt_open_cuda();
        if (b) ak_close(b);
        fflush(stdout);
        _exit(b ? 0 : 77);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
        printf("could not probe for a CUDA device (fork/waitpid failed)\n");
        exit(1);
    }
    if (WEXITSTATUS(status) != 0) {
        printf("no usable CUDA device: skipped\n");
        exit(77);
    }
}

void kt_open_both(ak_backend **cpu, ak_backend **gpu)
{
    *cpu = kt_open_cpu();
    *gpu = kt_open_cuda();
    ck_assert_msg(*gpu != NULL, "cuda did not open");
}

void kt_close_both(ak_backend *cpu, ak_backend *gpu)
{
    ak_close(cpu);
    ak_close(gpu);
}

/* Where kt_open_both_around opens the backends: Check's fixtures take no
 * arguments. */
static ak_backend **around_cpu, **around_gpu;
static void open_around(void) { kt_open_both(around_cpu, around_gpu); }
static void close_around(void) { kt_close_both(*around_cpu, *around_gpu); }

void kt_open_both_around(TCase *tc, ak_backend **cpu, ak_backend **gpu)
{
    around_cpu = cpu;
    around_gpu = gpu;
    tcase_add_checked_fixture(tc, open_around, close_around);
}

kt_buf kt_buf_alloc(ak_backend *b, size_t n, ak_dtype dtype)
{
    kt_buf buf;
    memset(&buf, 0, sizeof buf);
    buf.b = b;
    buf.bytes = n * ak_dtype_size(dtype);
    void *p = NULL;
    int rc = ak_alloc(b, buf.bytes + 2 * KT_GUARD, &p);
    ck_assert_msg(rc == AK_OK, "ak_alloc: %s", ak_error(b));
    buf.base = (unsigned char *)p;
    unsigned char *guard = malloc(KT_GUARD);
    ck_assert_ptr_nonnull(guard);
    memset(guard, KT_SENTINEL, KT_GUARD);
    ck_assert_int_eq(ak_to_device(b, buf.base, guard, KT_GUARD), AK_OK);
    ck_assert_int_eq(ak_to_device(b, buf.base + KT_GUARD + buf.bytes, guard, KT_GUARD), AK_OK);
    free(guard);
    ck_assert_int_eq(ak_zero(b, buf.base + KT_GUARD, buf.bytes), AK_OK);
    buf.t = ak_tensor_of(buf.base + KT_GUARD, n, dtype);
    return buf;
}

void kt_buf_upload(kt_buf *buf, const void *host)
{
    int rc = ak_to_device(buf->b, buf->t.data, host, buf->bytes);
    ck_assert_msg(rc == AK_OK, "ak_to_device: %s", ak_error(buf->b));
}

void kt_buf_download(kt_buf *buf, void *host)
{
    int rc = ak_to_host(buf->b, host, buf->t.data, buf->bytes);
    ck_assert_msg(rc == AK_OK, "ak_to_host: %s", ak_error(buf->b));
}

float kt_buf_get_f32(kt_buf *buf)
{
    float f;
    kt_buf_download(buf, &f);
    return f;
}

bool kt_buf_guards_ok(kt_buf *buf)
{
    unsigned char g[2 * KT_GUARD];
    ck_assert_int_eq(ak_to_host(buf->b, g, buf->base, KT_GUARD), AK_OK);
    ck_assert_int_eq(ak_to_host(buf->b, g + KT_GUARD, buf->base + KT_GUARD + buf->bytes, KT_GUARD),
                     AK_OK);
    for (size_t i = 0; i < sizeof g; i++) {
        if (g[i] != KT_SENTINEL) {
            printf("guard byte %s %zu overwritten (0x%02x)\n", i < KT_GUARD ? "before" : "after",
                   i < KT_GUARD ? KT_GUARD - i : i - KT_GUARD, g[i]);
            return false;
        }
    }
    return true;
}

void kt_buf_free(kt_buf *buf)
{
    ak_free(buf->b, buf->base);
    buf->base = NULL;
}

/* n elements between one uint32_t of bits each and dt's packed width. */
static void pack(ak_dtype dt, const uint32_t *bits, size_t n, void *out)
{
    for (size_t i = 0; i < n; i++) {
        if (dt == AK_F32)
            ((uint32_t *)out)[i] = bits[i];
        else
            ((uint16_t *)out)[i] = (uint16_t)bits[i];
    }
}

static void unpack(ak_dtype dt, const void *in, size_t n, uint32_t *bits)
{
    for (size_t i = 0; i < n; i++)
        bits[i] = dt == AK_F32 ? ((const uint32_t *)in)[i] : ((const uint16_t *)in)[i];
}

void kt_buf_put(kt_buf *buf, const uint32_t *bits)
{
    if (buf->t.n == 0) return;
    void *host = malloc(buf->bytes);
    ck_assert_ptr_nonnull(host);
    pack(buf->t.dtype, bits, buf->t.n, host);
    kt_buf_upload(buf, host);
    free(host);
}

void kt_buf_get(kt_buf *buf, uint32_t *bits)
{
    if (buf->t.n == 0) return;
    void *host = malloc(buf->bytes);
    ck_assert_ptr_nonnull(host);
    kt_buf_download(buf, host);
    unpack(buf->t.dtype, host, buf->t.n, bits);
    free(host);
}

kt_twin kt_twin_alloc(ak_backend *cpu, ak_backend *gpu, size_t n, ak_dtype dtype)
{
    kt_twin t;
    t.c = kt_buf_alloc(cpu, n, dtype);
    t.g = kt_buf_alloc(gpu, n, dtype);
    return t;
}

void kt_twin_upload(kt_twin *t, const void *host)
{
    kt_buf_upload(&t->c, host);
    kt_buf_upload(&t->g, host);
}

void kt_twin_put(kt_twin *t, const uint32_t *bits)
{
    kt_buf_put(&t->c, bits);
    kt_buf_put(&t->g, bits);
}

void kt_twin_free(kt_twin *t)
{
    ck_assert_msg(kt_buf_guards_ok(&t->c), "cpu guard");
    ck_assert_msg(kt_buf_guards_ok(&t->g), "cuda guard");
    kt_buf_free(&t->c);
    kt_buf_free(&t->g);
}

size_t kt_twin_mismatches(const char *what, kt_twin *t)
{
    void *c = malloc(t->c.bytes + 1), *g = malloc(t->g.bytes + 1);
    ck_assert(c && g);
    kt_buf_download(&t->c, c);
    kt_buf_download(&t->g, g);
    const size_t bad = kt_count_mismatches(what, g, c, t->c.t.n, ak_dtype_size(t->c.t.dtype));
    free(c);
    free(g);
    return bad;
}

void *kt_dev_alloc(ak_backend *b, size_t bytes)
{
    void *p = NULL;
    int rc = ak_alloc(b, bytes, &p);
    ck_assert_msg(rc == AK_OK, "ak_alloc: %s", ak_error(b));
    ck_assert_int_eq(ak_zero(b, p, bytes), AK_OK);
    return p;
}

void kt_dev_put(ak_backend *b, void *dst, const void *host, size_t bytes)
{
    int rc = ak_to_device(b, dst, host, bytes);
    ck_assert_msg(rc == AK_OK, "ak_to_device: %s", ak_error(b));
}

void kt_dev_get(ak_backend *b, void *host, const void *src, size_t bytes)
{
    int rc = ak_to_host(b, host, src, bytes);
    ck_assert_msg(rc == AK_OK, "ak_to_host: %s", ak_error(b));
}

void kt_dev_free(ak_backend *b, void *p) { ak_free(b, p); }

/* ---- elements on the host ------------------------------------------------------------- */
const ak_dtype kt_dtypes[3] = {AK_F16, AK_BF16, AK_F32};

uint32_t kt_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

float kt_f32_of(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

double kt_value(ak_dtype dt, uint32_t bits)
{
    fpe_env env = fpe_env_default();
    switch (dt) {
    case AK_F16: return fpe_f16_to_f64(&env, (uint16_t)bits);
    case AK_BF16: return fpe_bf16_to_f64(&env, (uint16_t)bits);
    default: return fpe_f32_to_f64(&env, bits);
    }
}

uint32_t kt_from_f64(ak_dtype dt, double d)
{
    if (isnan(d)) return kt_default_nan(dt);
    fpe_env env = fpe_env_default();
    switch (dt) {
    case AK_F16: return fpe_f64_to_f16(&env, d);
    case AK_BF16: return fpe_f64_to_bf16(&env, d);
    default: return fpe_f64_to_f32(&env, d);
    }
}

uint32_t kt_default_nan(ak_dtype dt)
{
    return dt == AK_F16 ? 0xFE00u : dt == AK_BF16 ? 0xFFC0u : 0xFFC00000u;
}

uint32_t kt_marker_nan(ak_dtype dt)
{
    return dt == AK_F32 ? 0x7FC01234u : dt == AK_F16 ? 0x7E12u : 0x7FD2u;
}

double kt_ulp(ak_dtype dt, double x)
{
    const int frac = dt == AK_F16 ? 10 : dt == AK_BF16 ? 7 : 23;
    const int emin = dt == AK_F16 ? -14 : -126;
    int e;
    frexp(fabs(x), &e); /* |x| in [2^(e-1), 2^e) */
    if (x == 0 || e - 1 < emin) e = emin + 1;
    return ldexp(1.0, e - 1 - frac);
}

int64_t kt_ulp_distance(ak_dtype dt, uint32_t a, uint32_t b)
{
    /* sign-magnitude to a signed key: consecutive elements, consecutive keys */
    const uint32_t sign = dt == AK_F32 ? 0x80000000u : 0x8000u;
    const int64_t ka = (a & sign) ? -(int64_t)(a & ~sign) : (int64_t)a;
    const int64_t kb = (b & sign) ? -(int64_t)(b & ~sign) : (int64_t)b;
    return ka > kb ? ka - kb : kb - ka;
}

bool kt_agree_within(double a, double b, double bound)
{
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    if (isinf(a) || isinf(b)) return a == b;
    return fabs(a - b) <= bound;
}

/* ---- operands ---------------------------------------------------------------------------- */
/* A value near a boundary of fmt (fp16 or bf16), as fp32 bits: the boundary
 * itself, or one fp32 ulp either side. */
static uint32_t near_boundary(ts_rng *r)
{
    static const uint32_t boundaries[] = {
        0x477FF000u, /* 65520: fp16 overflow threshold */
        0x477FE000u, /* 65504: fp16 max */
        0x33000000u, /* 2^-25: half the fp16 min subnormal */
        0x33800000u, /* 2^-24: fp16 min subnormal */
        0x38800000u, /* 2^-14: fp16 min normal */
        0x387FC000u, /* fp16 max subnormal */
        0x7F7F8000u, /* bf16 max */
        0x7F7FC000u, /* bf16 overflow threshold */
        0x00800000u, /* fp32 min normal = bf16 min normal */
        0x00010000u, /* bf16 min subnormal */
        0x00008000u, /* half of it */
        0x3F801000u, /* 1 + 2^-11: fp16 tie */
        0x3F808000u, /* 1 + 2^-8: bf16 tie */
        0x3F800000u, /* 1 */
    };
    uint32_t v = boundaries[ts_below(r, sizeof boundaries / sizeof boundaries[0])];
    switch (ts_below(r, 3)) {
    case 0: v -= 1; break;
    case 1: v += 1; break;
    default: break;
    }
    return v | (ts_below(r, 2) ? 0x80000000u : 0);
}

void kt_fill_f32_bits(ts_rng *r, uint32_t *x, size_t n)
{
    static const uint32_t specials[] = {0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u,
                                        0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0x7FA00000u,
                                        0x00000001u, 0x007FFFFFu, 0x00800000u, 0x7F7FFFFFu};
    const size_t ns = sizeof specials / sizeof specials[0];
    for (size_t i = 0; i < n; i++) {
        if (i < ns) {
            x[i] = specials[i];
            continue;
        }
        switch (ts_below(r, 4)) {
        case 0: x[i] = (uint32_t)ts_next(r); break; /* any pattern */
        case 1: x[i] = near_boundary(r); break;
        case 2: x[i] = specials[ts_below(r, (uint32_t)ns)]; break;
        default: { /* a random binade between 2^-150 and 2^128, random fraction */
            uint32_t e = ts_below(r, 256);
            x[i] = (e << 23) | ((uint32_t)ts_next(r) & 0x807FFFFFu);
            if (e == 255) x[i] &= 0xFF800000u; /* an infinity, not mostly NaNs */
        }
        }
    }
}

void kt_fill_u16_bits(ts_rng *r, fpe_format_id fmt, uint16_t *x, size_t n)
{
    const uint16_t f16s[] = {0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0x7D00,
                             0x0001, 0x03FF, 0x0400, 0x7BFF, 0x3C00};
    const uint16_t bf16s[] = {0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0x7FA0,
                              0x0001, 0x007F, 0x0080, 0x7F7F, 0x3F80};
    const uint16_t *s = fmt == FPE_FMT_F16 ? f16s : bf16s;
    const size_t ns = 11;
    for (size_t i = 0; i < n; i++) {
        if (i < ns)
            x[i] = s[i];
        else if (ts_below(r, 8) == 0)
            x[i] = (uint16_t)(s[ts_below(r, (uint32_t)ns)] ^ (ts_below(r, 2) ? 0x8000 : 0));
        else
            x[i] = (uint16_t)ts_next(r);
    }
}

void kt_fill_bits(ts_rng *r, ak_dtype dt, uint32_t *x, size_t n)
{
    if (dt == AK_F32) {
        kt_fill_f32_bits(r, x, n);
        return;
    }
    uint16_t *h = malloc(n * sizeof *h + 2);
    ck_assert_ptr_nonnull(h);
    kt_fill_u16_bits(r, (fpe_format_id)dt, h, n);
    for (size_t i = 0; i < n; i++)
        x[i] = h[i];
    free(h);
}

void kt_fill_packed(ts_rng *r, ak_dtype dt, void *x, size_t n)
{
    if (dt == AK_F32)
        kt_fill_f32_bits(r, x, n);
    else
        kt_fill_u16_bits(r, (fpe_format_id)dt, x, n);
}

void kt_fill_values(ts_rng *r, ak_dtype dt, uint32_t *x, size_t n, double scale)
{
    for (size_t i = 0; i < n; i++)
        x[i] = kt_from_f64(dt, (2.0 * ts_uniform(r) - 1.0) * scale);
}

/* ---- rounding ---------------------------------------------------------------------------- */
ak_rounding kt_rounding(fpe_round mode, uint64_t seed, uint32_t stream, uint64_t index)
{
    ak_rounding r = {mode, seed, stream, index};
    return r;
}

fpe_env kt_env_of(const ak_rounding *r, uint64_t i)
{
    fpe_env env = fpe_env_default();
    env.round = (uint8_t)r->mode;
    env.sr_seed = r->seed;
    env.sr_stream = r->stream;
    env.sr_index = r->index + i;
    return env;
}

/* ---- GEMM compute types ------------------------------------------------------------------ */
const kt_pairing kt_pairings[KT_NPAIRINGS] = {
    {AK_F32, AK_F32, AK_COMPUTE_32F},           {AK_F32, AK_F32, AK_COMPUTE_32F_FAST_16F},
    {AK_F32, AK_F32, AK_COMPUTE_32F_FAST_16BF}, {AK_F32, AK_F32, AK_COMPUTE_32F_FAST_TF32},
    {AK_F16, AK_F16, AK_COMPUTE_32F},           {AK_F16, AK_F16, AK_COMPUTE_16F},
    {AK_F16, AK_F32, AK_COMPUTE_32F},           {AK_BF16, AK_BF16, AK_COMPUTE_32F},
    {AK_BF16, AK_F32, AK_COMPUTE_32F},
};

double kt_tf32_round(double v)
{
    if (v != v || isinf(v) || v == 0) return v;
    int e;
    frexp(v, &e);
    int q = e - 1 - 10;
    if (q < -136) q = -136;
    const double r = ldexp(rint(ldexp(v, -q)), q);
    return fabs(r) >= 0x1p128 ? copysign(INFINITY, v) : r;
}

double kt_compute_input(ak_compute k, double v)
{
    fpe_env env = fpe_env_default();
    switch (k) {
    case AK_COMPUTE_32F_FAST_16F: return fpe_f16_to_f64(&env, fpe_f64_to_f16(&env, v));
    case AK_COMPUTE_32F_FAST_16BF: return fpe_bf16_to_f64(&env, fpe_f64_to_bf16(&env, v));
    case AK_COMPUTE_32F_FAST_TF32: return kt_tf32_round(v);
    default: return v;
    }
}

double kt_compute_input_error(ak_compute k)
{
    if (k == AK_COMPUTE_32F || k == AK_COMPUTE_16F) return 0;
    const int f = k == AK_COMPUTE_32F_FAST_16BF ? 7 : 10;
    return 2 * ldexp(1, -f) + ldexp(1, -2 * f);
}

double kt_compute_unit(ak_compute k) { return k == AK_COMPUTE_16F ? 0x1p-11 : 0x1p-24; }

double kt_gamma(double n, double u) { return n * u / (1 - n * u); }

bool kt_is_nan(ak_dtype dt, uint32_t bits)
{
    switch (dt) {
    case AK_F16: return fpe_f16_isnan((uint16_t)bits);
    case AK_BF16: return fpe_bf16_isnan((uint16_t)bits);
    default: return fpe_f32_isnan(bits);
    }
}

uint32_t kt_to_f32(ak_dtype from, uint32_t bits)
{
    fpe_env env = fpe_env_default();
    switch (from) {
    case AK_F16: return fpe_f16_to_f32(&env, (uint16_t)bits);
    case AK_BF16: return fpe_bf16_to_f32(&env, (uint16_t)bits);
    default: return bits;
    }
}

uint32_t kt_from_f32(fpe_env *env, ak_dtype to, uint32_t bits)
{
    switch (to) {
    case AK_F16: return fpe_f32_to_f16(env, bits);
    case AK_BF16: return fpe_f32_to_bf16(env, bits);
    default: return bits;
    }
}

uint32_t kt_convert(ak_dtype from, ak_dtype to, uint32_t bits)
{
    if (from == to) return bits;
    fpe_env env = fpe_env_default();
    if (from == AK_F16 && to == AK_BF16) return fpe_f16_to_bf16(&env, (uint16_t)bits);
    if (from == AK_BF16 && to == AK_F16) return fpe_bf16_to_f16(&env, (uint16_t)bits);
    return from == AK_F32 ? kt_from_f32(&env, to, bits) : kt_to_f32(from, bits);
}

uint32_t kt_ref_add(ak_dtype dy, ak_dtype da, ak_dtype db, uint32_t a, uint32_t b)
{
    fpe_env env = fpe_env_default();
    if (da == dy && db == dy) {
        switch (dy) {
        case AK_F16: return fpe_f16_add(&env, (uint16_t)a, (uint16_t)b);
        case AK_BF16: return fpe_bf16_add(&env, (uint16_t)a, (uint16_t)b);
        default: return fpe_f32_add(&env, a, b);
        }
    }
    const uint32_t a32 = kt_to_f32(da, a), b32 = kt_to_f32(db, b);
    if (dy == AK_F32) return fpe_f32_add(&env, a32, b32);
    const double u = kt_value(da, a), v = kt_value(db, b);
    if (isfinite(u) && isfinite(v)) {
        const double s = u + v, bv = s - u, av = s - bv;
        if ((u - av) + (v - bv) == 0.0) return kt_from_f64(dy, s);
    }
    env.round = FPE_RO;
    const uint32_t odd = fpe_f32_add(&env, a32, b32);
    env.round = FPE_RNE;
    return kt_from_f32(&env, dy, odd);
}

uint32_t *kt_bits_alloc(size_t n)
{
    uint32_t *p = calloc(n + 1, sizeof(uint32_t));
    ck_assert_ptr_nonnull(p);
    return p;
}

/* ---- checks ------------------------------------------------------------------------------ */
size_t kt_count_mismatches(const char *what, const void *got, const void *expected, size_t n,
                           size_t elem_size)
{
    size_t bad = 0;
    const unsigned char *g = got, *e = expected;
    for (size_t i = 0; i < n; i++) {
        if (memcmp(g + i * elem_size, e + i * elem_size, elem_size) == 0) continue;
        if (bad < 8) {
            uint64_t gv = 0, ev = 0;
            memcpy(&gv, g + i * elem_size, elem_size);
            memcpy(&ev, e + i * elem_size, elem_size);
            printf("%s[%zu]: got 0x%0*llx expected 0x%0*llx\n", what, i, (int)(2 * elem_size),
                   (unsigned long long)gv, (int)(2 * elem_size), (unsigned long long)ev);
        }
        bad++;
    }
    if (bad > 8) printf("%s: %zu mismatches in all\n", what, bad);
    return bad;
}

void kt_expect_error_at(const char *file, int line, ak_backend *b, int rc, int code,
                        const char *prefix, const char *text)
{
    const char *msg = ak_error(b);
    ck_assert_msg(rc == code, "%s:%d: expected %d, got %d (%s)", file, line, code, rc, msg);
    ck_assert_msg((prefix == NULL || strncmp(msg, prefix, strlen(prefix)) == 0) &&
                      strstr(msg, text) != NULL,
                  "%s:%d: message '%s' lacks '%s%s'", file, line, msg, prefix ? prefix : "", text);
}

size_t kt_bits_mismatches(const char *what, ak_dtype dt, const uint32_t *got,
                          const uint32_t *expected, size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (got[i] == expected[i]) continue;
        if (bad++ < 8)
            printf("%s (%s)[%zu]: got 0x%08x expected 0x%08x\n", what, ak_dtype_name(dt), i, got[i],
                   expected[i]);
    }
    return bad;
}
