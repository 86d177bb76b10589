/* test_emulate_cuda: the emulator's inline core compiled by nvcc runs on the
 * GPU and gives the host's bits and flags.  Label gpu; exits 77 (skipped)
 * when no CUDA device is present. */
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "fpe_ops.h"

/* Every fp32 pattern of a strided sample, rounded to fp16 and bf16 in every
 * mode, plus Philox words. */
__global__ void convert_kernel(const uint32_t *in, uint16_t *out16, uint16_t *outb16,
                               uint8_t *flags, uint32_t *words, size_t n, int mode)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    fpe_env env = fpe_env_default();
    env.round = (uint8_t)mode;
    env.sr_seed = 0x0123456789ABCDEFull;
    env.sr_index = i;
    out16[i] = (uint16_t)fpe_convert_k(FPE_FMT_F32, FPE_FMT_F16, &env, in[i]);
    outb16[i] = (uint16_t)fpe_convert_k(FPE_FMT_F32, FPE_FMT_BF16, &env, in[i]);
    flags[i] = env.flags;
    words[i] = fpe_random_bits_inline(42, 7, i);
}

#define CUDA_OK(call)                                                                              \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_));                       \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

int main()
{
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        std::puts("no CUDA device: skipped");
        return 77;
    }
    const size_t n = (size_t)1 << 22;
    std::vector<uint32_t> in(n);
    for (size_t i = 0; i < n; i++)
        in[i] = (uint32_t)(i * 1024u + (i >> 12) * 977u); /* strides all of 2^32 */
    uint32_t *d_in, *d_words;
    uint16_t *d_16, *d_b16;
    uint8_t *d_flags;
    CUDA_OK(cudaMalloc(&d_in, n * 4));
    CUDA_OK(cudaMalloc(&d_words, n * 4));
    CUDA_OK(cudaMalloc(&d_16, n * 2));
    CUDA_OK(cudaMalloc(&d_b16, n * 2));
    CUDA_OK(cudaMalloc(&d_flags, n));
    CUDA_OK(cudaMemcpy(d_in, in.data(), n * 4, cudaMemcpyHostToDevice));
    std::vector<uint16_t> g16(n), gb16(n);
    std::vector<uint8_t> gflags(n);
    std::vector<uint32_t> gwords(n);
    long mismatches = 0;
    for (int mode = 0; mode < FPE_ROUND_COUNT; mode++) {
        convert_kernel<<<(unsigned)((n + 255) / 256), 256>>>(d_in, d_16, d_b16, d_flags, d_words, n,
                                                             mode);
        CUDA_OK(cudaGetLastError());
        CUDA_OK(cudaMemcpy(g16.data(), d_16, n * 2, cudaMemcpyDeviceToHost));
        CUDA_OK(cudaMemcpy(gb16.data(), d_b16, n * 2, cudaMemcpyDeviceToHost));
        CUDA_OK(cudaMemcpy(gflags.data(), d_flags, n, cudaMemcpyDeviceToHost));
        CUDA_OK(cudaMemcpy(gwords.data(), d_words, n * 4, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; i++) {
            fpe_env env = fpe_env_default();
            env.round = (uint8_t)mode;
            env.sr_seed = 0x0123456789ABCDEFull;
            env.sr_index = i;
            uint16_t h16 = (uint16_t)fpe_convert_k(FPE_FMT_F32, FPE_FMT_F16, &env, in[i]);
            uint16_t hb16 = (uint16_t)fpe_convert_k(FPE_FMT_F32, FPE_FMT_BF16, &env, in[i]);
            uint32_t w = fpe_random_bits(42, 7, i);
            if (h16 != g16[i] || hb16 != gb16[i] || env.flags != gflags[i] || w != gwords[i]) {
                if (mismatches++ < 10)
                    std::printf(
                        "mode %s input %08X: host %04X %04X %02X %08X, gpu %04X %04X %02X %08X\n",
                        fpe_round_name((fpe_round)mode), in[i], h16, hb16, env.flags, w, g16[i],
                        gb16[i], gflags[i], gwords[i]);
            }
        }
    }
    std::printf("%ld mismatches over %zu inputs x %d modes\n", mismatches, n, FPE_ROUND_COUNT);
    return mismatches ? 1 : 0;
}
