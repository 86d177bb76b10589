/* fpe_inline.h: how the emulator's inline core is compiled.  FPE_INLINE
 * marks a function that must be inlined into its caller and, under nvcc,
 * run on both host and device, so the cpu loops and the CUDA kernels round
 * with the same code; FPE_NOINLINE keeps a rarely taken general path out of
 * line (FPE_HIDDEN below).  Included by philox.h, fpe_internal.h and, through them, by every
 * inline header above emulate/ (kernels/elem/, kernels/loss_scale.h). */
#ifndef AMPSCOPE_FPE_INLINE_H
#define AMPSCOPE_FPE_INLINE_H

/* FPE_HIDDEN: a function the library's files share but the shared library does not export
 * (the exports are exactly fpe.h's names: install_check). */
#if defined(__GNUC__) && !defined(__CUDACC__)
#define FPE_HIDDEN __attribute__((visibility("hidden")))
#else
#define FPE_HIDDEN
#endif

#if defined(__CUDACC__)
#define FPE_INLINE   static __forceinline__ __host__ __device__
#define FPE_NOINLINE static __noinline__ __host__ __device__
#else
#define FPE_INLINE   static inline __attribute__((always_inline))
#define FPE_NOINLINE static __attribute__((noinline))
#endif

#endif
