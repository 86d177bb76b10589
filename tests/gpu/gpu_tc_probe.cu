/* gpu_tc_probe: how cuBLAS accumulates fp16 and bf16 GEMMs on the GPU's
 * tensor cores, and how well the model of kernels/elem/tc_dot.h reproduces it.
 *
 *   gpu_tc_probe [--dots N] [--seed S] [--csv FILE] [--host PRESET]
 *
 * For fp16 and then bf16 inputs (fp32 C, CUBLAS_COMPUTE_32F, the default
 * math mode, which lets cuBLAS use tensor cores):
 *   1. the features of tests/gpu/tc_infer.c, from crafted dot products: each
 *      is one element of a 16 x 16 x k GEMM (k padded with zeros to a
 *      multiple of 16) whose row 0 of A and column 0 of B hold the vectors,
 *      everything else zero, and C[0][0] = c with beta = 1;
 *   2. N (default 100000) random dot products, spread over k = 16 .. 4096,
 *      as the elements of 64 x 64 x k GEMMs with random A, B and C (random
 *      signs, significands and exponents), each compared bit for bit with
 *      the model: with the inferred parameters (when the features name a
 *      model) and with the "h100" preset.  Where the probe finds that C is
 *      added after the products, the model's dot starts from 0 and C is
 *      added in fp32 (RNE) afterwards, as cuBLAS's epilogue would.
 * --csv FILE writes one row per format and k:
 *   format,k,dots,exact_inferred,exact_h100,block,extra_bits,round,c_in_block
 * (exact_inferred is -1 when the features name no model).
 * --host PRESET runs everything on the CPU with the model PRESET ("v100",
 * "a100", "h100") in place of cuBLAS: no GPU needed, and every count must be
 * complete (exit 1 otherwise) - the check of the program's own plumbing.
 * Exit status: 0 done (the counts are the result, not a verdict), 1 a CUDA
 * or cuBLAS error, 2 bad arguments, 77 no CUDA device. */
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "elem/tc_dot.h"
#include "tc_infer.h"

namespace {

const int kProbeDim = 16; /* the crafted GEMM: 16 x 16 x k */
const int kRandDim = 64;  /* the random GEMMs: 64 x 64 x k */

uint32_t bits_of(float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    return u;
}

float float_of(uint32_t u)
{
    float v;
    memcpy(&v, &u, 4);
    return v;
}

struct Gpu {
    const ak_tc_model *host = nullptr; /* --host: the model stands in for cuBLAS */
    cublasHandle_t handle = nullptr;
    bool failed = false;
    char what[256] = "";
};

bool cuda_ok(Gpu *g, cudaError_t e, const char *call)
{
    if (e == cudaSuccess) return true;
    if (!g->failed) snprintf(g->what, sizeof g->what, "%s: %s", call, cudaGetErrorString(e));
    g->failed = true;
    return false;
}

bool blas_ok(Gpu *g, cublasStatus_t s, const char *call)
{
    if (s == CUBLAS_STATUS_SUCCESS) return true;
    if (!g->failed) snprintf(g->what, sizeof g->what, "%s: cuBLAS status %d", call, (int)s);
    g->failed = true;
    return false;
}

/* D = A B + C, column-major: A m x k (lda m), B k x n (ldb k), C m x n. */
bool gemm(Gpu *g, fpe_format_id f, int m, int n, int k, const std::vector<uint16_t> &a,
          const std::vector<uint16_t> &b, std::vector<float> &c)
{
    if (g->host) {
        for (int j = 0; j < n; j++)
            for (int i = 0; i < m; i++) {
                float &d = c[(size_t)j * m + i];
                const uint32_t r = ak_tc_dot_k(g->host, f, a.data() + i, (size_t)m,
                                               b.data() + (size_t)j * k, 1, (size_t)k, bits_of(d));
                memcpy(&d, &r, 4);
            }
        return true;
    }
    void *da = nullptr, *db = nullptr, *dc = nullptr;
    const cudaDataType t = f == FPE_FMT_F16 ? CUDA_R_16F : CUDA_R_16BF;
    const float one = 1.0f;
    bool ok =
        cuda_ok(g, cudaMalloc(&da, a.size() * 2), "cudaMalloc A") &&
        cuda_ok(g, cudaMalloc(&db, b.size() * 2), "cudaMalloc B") &&
        cuda_ok(g, cudaMalloc(&dc, c.size() * 4), "cudaMalloc C") &&
        cuda_ok(g, cudaMemcpy(da, a.data(), a.size() * 2, cudaMemcpyHostToDevice), "A up") &&
        cuda_ok(g, cudaMemcpy(db, b.data(), b.size() * 2, cudaMemcpyHostToDevice), "B up") &&
        cuda_ok(g, cudaMemcpy(dc, c.data(), c.size() * 4, cudaMemcpyHostToDevice), "C up") &&
        blas_ok(g,
                cublasGemmEx(g->handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, da, t, m, db, t, k,
                             &one, dc, CUDA_R_32F, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                "cublasGemmEx") &&
        cuda_ok(g, cudaMemcpy(c.data(), dc, c.size() * 4, cudaMemcpyDeviceToHost), "D down");
    cudaFree(da);
    cudaFree(db);
    cudaFree(dc);
    return ok;
}

struct ProbeCtx {
    Gpu *g;
    fpe_format_id f;
};

/* tc_infer's black box: element (0, 0) of a padded 16 x 16 x k GEMM. */
extern "C" float gpu_dot(const uint16_t *a, const uint16_t *b, size_t k, float c, void *ctx)
{
    ProbeCtx *p = static_cast<ProbeCtx *>(ctx);
    if (p->g->failed) return NAN;
    const int kp = (int)((k + 15) / 16 * 16 > 16 ? (k + 15) / 16 * 16 : 16);
    std::vector<uint16_t> ha((size_t)kProbeDim * kp, 0), hb((size_t)kp * kProbeDim, 0);
    std::vector<float> hc((size_t)kProbeDim * kProbeDim, 0.0f);
    for (size_t l = 0; l < k; l++) {
        ha[l * kProbeDim] = a[l]; /* row 0 of A */
        hb[l] = b[l];             /* column 0 of B */
    }
    hc[0] = c;
    if (!gemm(p->g, p->f, kProbeDim, kProbeDim, kp, ha, hb, hc)) return NAN;
    return hc[0];
}

uint64_t next(uint64_t *s) /* splitmix64 */
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A random pattern: random sign and significand, exponent in [lo, hi]. */
uint16_t random16(uint64_t *s, fpe_format_id f, int lo, int hi)
{
    const int m = f == FPE_FMT_F16 ? 10 : 7, bias = f == FPE_FMT_F16 ? 15 : 127;
    const uint64_t r = next(s);
    const int e = lo + (int)(r % (uint64_t)(hi - lo + 1));
    return (uint16_t)((r >> 20 & 1) << 15 | (uint64_t)(e + bias) << m |
                      (r >> 32 & ((1u << m) - 1)));
}

float random32(uint64_t *s, int lo, int hi)
{
    const uint64_t r = next(s);
    const int e = lo + (int)(r % (uint64_t)(hi - lo + 1));
    const uint32_t bits =
        (uint32_t)(r >> 20 & 1) << 31 | (uint32_t)(e + 127) << 23 | (uint32_t)(r >> 32 & 0x7FFFFF);
    float v;
    memcpy(&v, &bits, 4);
    return v;
}

/* The model's element: c inside the first block, or added afterwards. */
uint32_t model_elem(const ak_tc_model *m, fpe_format_id f, const uint16_t *a, size_t inc_a,
                    const uint16_t *b, size_t k, float c, bool c_in_block)
{
    if (c_in_block) return ak_tc_dot_k(m, f, a, inc_a, b, 1, k, bits_of(c));
    const uint32_t d = ak_tc_dot_k(m, f, a, inc_a, b, 1, k, 0);
    return bits_of(float_of(d) + c); /* the fp32 epilogue, RNE */
}

bool same(uint32_t x, uint32_t y)
{
    return x == y || (std::isnan(float_of(x)) && std::isnan(float_of(y)));
}

int usage_error(const char *msg, const char *arg)
{
    fprintf(stderr, "gpu_tc_probe: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
    return 2;
}

const char *round_tag(int r)
{
    return r == FPE_RNE  ? "RNE"
           : r == FPE_RZ ? "RZ"
           : r == FPE_RD ? "RD"
           : r == FPE_RU ? "RU"
                         : "?";
}

} // namespace

int main(int argc, char **argv)
{
    long dots = 100000;
    bool host = false;
    ak_tc_model host_model;
    uint64_t seed = 20240601;
    const char *csv = nullptr;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("usage: gpu_tc_probe [--dots N] [--seed S] [--csv FILE] [--host PRESET]\n");
            return 0;
        }
        if (!strcmp(a, "--dots") || !strcmp(a, "--seed") || !strcmp(a, "--csv") ||
            !strcmp(a, "--host")) {
            if (i + 1 >= argc) return usage_error("missing value after", a);
            const char *v = argv[++i];
            if (!strcmp(a, "--host")) {
                if (ak_tc_preset(v, &host_model))
                    return usage_error("--host needs a preset: v100, a100 or h100", v);
                host = true;
                continue;
            }
            if (!strcmp(a, "--csv")) {
                csv = v;
                continue;
            }
            char *end;
            errno = 0;
            const unsigned long long x = strtoull(v, &end, 10);
            if (errno || *end || end == v || v[0] == '-')
                return usage_error(!strcmp(a, "--dots") ? "--dots needs a positive integer"
                                                        : "--seed needs an unsigned integer",
                                   v);
            if (!strcmp(a, "--dots")) {
                if (x == 0 || x > 100000000ull)
                    return usage_error("--dots must be 1 .. 100000000", v);
                dots = (long)x;
            } else {
                seed = x;
            }
            continue;
        }
        return usage_error("unknown argument", a);
    }
    FILE *out = nullptr;
    if (csv && !(out = fopen(csv, "w"))) {
        fprintf(stderr, "gpu_tc_probe: cannot write %s: %s\n", csv, strerror(errno));
        return 2;
    }
    Gpu g;
    int ndev = 0;
    if (host) {
        g.host = &host_model;
        printf("device: none, the model (block %d, extra_bits %d, round %s) in its place\n",
               host_model.block, host_model.extra_bits, round_tag(host_model.round));
    } else if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("gpu_tc_probe: no CUDA device, skipped\n");
        if (out) fclose(out);
        return 77;
    }
    if (!host) {
        cudaDeviceProp prop;
        cudaGetDeviceProperties(&prop, 0);
        if (!blas_ok(&g, cublasCreate(&g.handle), "cublasCreate") ||
            !blas_ok(&g, cublasSetMathMode(g.handle, CUBLAS_DEFAULT_MATH), "cublasSetMathMode")) {
            fprintf(stderr, "gpu_tc_probe: %s\n", g.what);
            return 1;
        }
        int ver = 0;
        cublasGetVersion(g.handle, &ver);
        printf("device: %s (sm_%d%d), cuBLAS %d\n", prop.name, prop.major, prop.minor, ver);
    }
    bool host_complete = true;
    if (out)
        fprintf(out, "format,k,dots,exact_inferred,exact_h100,block,extra_bits,round,c_in_block\n");
    ak_tc_model h100;
    ak_tc_preset("h100", &h100);
    const int ks[] = {16, 32, 64, 128, 256, 512, 1024, 4096};
    const int nks = (int)(sizeof ks / sizeof ks[0]);
    uint64_t rng = seed;
    for (int fi = 0; fi < 2; fi++) {
        const fpe_format_id f = fi ? FPE_FMT_BF16 : FPE_FMT_F16;
        const char *fname = fi ? "bf16" : "fp16";
        ProbeCtx pc = {&g, f};
        tc_features ft;
        tc_infer(f, gpu_dot, &pc, &ft);
        if (g.failed) {
            fprintf(stderr, "gpu_tc_probe: %s\n", g.what);
            return 1;
        }
        char title[64];
        snprintf(title, sizeof title, "%s inputs, fp32 accumulation:", fname);
        tc_features_print(stdout, title, &ft);
        ak_tc_model inferred;
        const bool have = tc_features_model(&ft, &inferred);
        const bool c_in = ft.c_in_block != 0; /* unknown: as the tensor core's c */
        if (have)
            printf("  model: block %d, extra_bits %d, round %s\n", inferred.block,
                   inferred.extra_bits, round_tag(inferred.round));
        else
            printf("  model: the features name none; comparing with the h100 preset only\n");
        /* exponents spread so that alignment truncates often: products over
         * about 2^24 (fp16) or 2^80 (bf16), c around the sums */
        const int lo = fi ? -20 : -6, hi = fi ? 20 : 6;
        long total = 0, total_inf = 0, total_h = 0;
        for (int ki = 0; ki < nks; ki++) {
            const int k = ks[ki];
            const long want = (dots + nks - 1) / nks;
            long done = 0, ok_inf = 0, ok_h = 0;
            while (done < want) {
                std::vector<uint16_t> a((size_t)kRandDim * k), b((size_t)k * kRandDim);
                std::vector<float> c((size_t)kRandDim * kRandDim), c0;
                for (auto &x : a)
                    x = random16(&rng, f, lo, hi);
                for (auto &x : b)
                    x = random16(&rng, f, lo, hi);
                for (auto &x : c)
                    x = random32(&rng, lo * 2, hi * 2 + 6);
                c0 = c;
                if (!gemm(&g, f, kRandDim, kRandDim, k, a, b, c)) {
                    fprintf(stderr, "gpu_tc_probe: %s\n", g.what);
                    return 1;
                }
                for (int j = 0; j < kRandDim && done < want; j++)
                    for (int i = 0; i < kRandDim && done < want; i++) {
                        const uint32_t got = bits_of(c[(size_t)j * kRandDim + i]);
                        const float cc = c0[(size_t)j * kRandDim + i];
                        const uint16_t *ar = a.data() + i, *bc = b.data() + (size_t)j * k;
                        if (have &&
                            same(got, model_elem(&inferred, f, ar, kRandDim, bc, k, cc, c_in)))
                            ok_inf++;
                        if (same(got, model_elem(&h100, f, ar, kRandDim, bc, k, cc, c_in))) ok_h++;
                        done++;
                    }
            }
            printf("  k %4d: %ld dots, bit-exact: inferred model %s%ld, h100 preset %ld\n", k, done,
                   have ? "" : "n/a ", have ? ok_inf : 0, ok_h);
            if (out)
                fprintf(out, "%s,%d,%ld,%ld,%ld,%d,%d,%s,%d\n", fname, k, done, have ? ok_inf : -1L,
                        ok_h, ft.block, ft.extra_bits, round_tag(ft.round), ft.c_in_block);
            total += done;
            total_inf += ok_inf;
            total_h += ok_h;
        }
        printf("  all k: %ld dots, bit-exact: inferred model %s%ld (%.3f%%), h100 preset %ld "
               "(%.3f%%)\n",
               total, have ? "" : "n/a ", total_inf, have ? 100.0 * total_inf / total : 0.0,
               total_h, 100.0 * total_h / total);
        if (host && !(have && total_inf == total && (host_model.block != 16 || total_h == total)))
            host_complete = false;
    }
    if (g.handle) cublasDestroy(g.handle);
    if (out && fclose(out)) {
        fprintf(stderr, "gpu_tc_probe: cannot write %s\n", csv);
        return 1;
    }
    if (!host_complete) {
        fprintf(stderr, "gpu_tc_probe: --host: the model did not reproduce itself\n");
        return 1;
    }
    return 0;
}
