/* gemm.c — single-threaded matrix multiply, C = op(A) * op(B) + beta * C (contract: gemm.h).
 *
 * Why this exists: every matmul in a generated module lands here, so it has to be fast without
 * depending on a BLAS library. The file is compiled to target-independent LLVM bitcode and only
 * optimised for the host CPU once it is linked into a generated module, so it is portable C11:
 * SIMD comes from clang/GCC vector extensions, never from intrinsics headers, and the host's
 * instruction set (AVX2/FMA, NEON, ...) is picked by the backend.
 *
 * Blocking (BLIS / GotoBLAS scheme, constants in gemm.h):
 *
 *   for jc over N by NC:                          op(B) panel KC x NC  -> packed, lives in L3
 *     for pc over K by KC:
 *       pack op(B)[pc:+KC, jc:+NC] into NR-wide micro-panels (zero-padded to whole panels)
 *       for ic over M by MC:                      op(A) block MC x KC  -> packed, lives in L2
 *         pack op(A)[ic:+MC, pc:+KC] into MR-tall micro-panels (zero-padded)
 *         for jr over the panel by NR:            one B micro-panel KC x NR stays in L1
 *           for ir over the block by MR:
 *             micro-kernel: MR x NR tile of C += A micro-panel * B micro-panel
 *
 * The micro-kernel keeps an MR x NR tile of C in 12 vector registers (6 rows x 2 vectors; a
 * vector is 32 bytes, i.e. NR = 16 floats or 8 doubles) and performs one rank-1 update per k:
 * two vector loads of B, six broadcasts of A, twelve multiply-adds. Packing makes both operand
 * streams contiguous whatever the transposition flags and strides, and the zero padding lets the
 * kernel always run on full tiles: partial edge tiles are computed into a small stack buffer and
 * then copied (beta 0) or added (beta 1) into C.
 *
 * Beta: the first K block stores into C (beta 0) or adds to it (beta 1); later K blocks always
 * add. Beta 0 never reads C, so NaNs already in C are overwritten.
 *
 * Determinism: every element of C is the sum over K blocks, in order, of an accumulator that
 * starts at zero and adds a[i,k] * b[k,j] for k in increasing order — the same order for interior
 * and edge tiles and for every call, independent of the data.
 *
 * Scratch: the packed op(B) panel first (its size is a multiple of 64 bytes), then the packed op(A)
 * block; both fit in mgk_gemm_scratch_bytes(). f64 uses NR = 8, which only needs less.
 */
#include "gemm.h"

#include <stddef.h>
#include <string.h>

typedef float mgk_v8f __attribute__((vector_size(32), aligned(4)));
typedef double mgk_v4d __attribute__((vector_size(32), aligned(8)));

enum { MGK_MC = MGK_GEMM_MC, MGK_KC = MGK_GEMM_KC, MGK_NC = MGK_GEMM_NC, MGK_MR = MGK_GEMM_MR };

static void *mgk_gemm_align64(void *p)
{
    return (void *)(((uintptr_t)p + 63) & ~(uintptr_t)63);
}

/* MGK_GEMM_DEFINE(T, V, VL, SFX) defines mgk_gemm_SFX for element type T with vector type V of
 * VL elements; the tile is MR x NR with NR = 2 * VL. */
#define MGK_GEMM_DEFINE(T, V, VL, SFX)                                                            \
                                                                                                  \
    enum { MGK_NR_##SFX = 2 * (VL) };                                                             \
    _Static_assert((int)MGK_NR_##SFX <= (int)MGK_GEMM_NR, "scratch formula assumes NR <= MGK_GEMM_NR");     \
                                                                                                  \
    /* Pack op(B)[0:kc, 0:nc] (B already offset to the block) into NR-wide micro-panels:          \
     * dst[p * kc * NR + k * NR + j] = op(B)[k, p * NR + j], zero beyond nc. */                   \
    static void mgk_pack_b_##SFX(int64_t kc, int64_t nc, const T *B, int64_t ldb, int transB,     \
                                 T *restrict dst)                                                 \
    {                                                                                             \
        enum { NR = MGK_NR_##SFX };                                                               \
        for (int64_t j0 = 0; j0 < nc; j0 += NR, dst += kc * NR) {                                 \
            int64_t nr = mgk_gemm_min64(NR, nc - j0);                                             \
            if (!transB && nr == NR) {                                                            \
                for (int64_t k = 0; k < kc; k++)                                                  \
                    memcpy(dst + k * NR, B + k * ldb + j0, NR * sizeof(T));                       \
            } else if (!transB) {                                                                 \
                for (int64_t k = 0; k < kc; k++) {                                                \
                    for (int64_t j = 0; j < nr; j++) dst[k * NR + j] = B[k * ldb + j0 + j];       \
                    for (int64_t j = nr; j < NR; j++) dst[k * NR + j] = 0;                        \
                }                                                                                 \
            } else {                                                                              \
                for (int64_t j = 0; j < nr; j++) {                                                \
                    const T *src = B + (j0 + j) * ldb;                                            \
                    for (int64_t k = 0; k < kc; k++) dst[k * NR + j] = src[k];                    \
                }                                                                                 \
                for (int64_t k = 0; k < kc; k++)                                                  \
                    for (int64_t j = nr; j < NR; j++) dst[k * NR + j] = 0;                        \
            }                                                                                     \
        }                                                                                         \
    }                                                                                             \
                                                                                                  \
    /* Pack op(A)[0:mc, 0:kc] into MR-tall micro-panels:                                          \
     * dst[p * kc * MR + k * MR + i] = op(A)[p * MR + i, k], zero beyond mc. */                   \
    static void mgk_pack_a_##SFX(int64_t mc, int64_t kc, const T *A, int64_t lda, int transA,     \
                                 T *restrict dst)                                                 \
    {                                                                                             \
        enum { MR = MGK_MR };                                                                     \
        for (int64_t i0 = 0; i0 < mc; i0 += MR, dst += kc * MR) {                                 \
            int64_t mr = mgk_gemm_min64(MR, mc - i0);                                             \
            if (transA) {                                                                         \
                for (int64_t k = 0; k < kc; k++) {                                                \
                    for (int64_t i = 0; i < mr; i++) dst[k * MR + i] = A[k * lda + i0 + i];       \
                    for (int64_t i = mr; i < MR; i++) dst[k * MR + i] = 0;                        \
                }                                                                                 \
            } else {                                                                              \
                for (int64_t i = 0; i < mr; i++) {                                                \
                    const T *src = A + (i0 + i) * lda;                                            \
                    for (int64_t k = 0; k < kc; k++) dst[k * MR + i] = src[k];                    \
                }                                                                                 \
                for (int64_t k = 0; k < kc; k++)                                                  \
                    for (int64_t i = mr; i < MR; i++) dst[k * MR + i] = 0;                        \
            }                                                                                     \
        }                                                                                         \
    }                                                                                             \
                                                                                                  \
    /* Micro-kernel: C[0:MR, 0:NR] (row stride ldc) = or += a (MR-tall panel) * b (NR-wide        \
     * panel) over kc steps. */                                                                   \
    static inline __attribute__((always_inline)) void mgk_kernel_##SFX(                           \
        int64_t kc, const T *restrict a, const T *restrict b, T *restrict c, int64_t ldc,         \
        int accumulate)                                                                           \
    {                                                                                             \
        V c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0}, c20 = {0}, c21 = {0};                       \
        V c30 = {0}, c31 = {0}, c40 = {0}, c41 = {0}, c50 = {0}, c51 = {0};                       \
        for (int64_t k = 0; k < kc; k++, a += MGK_MR, b += 2 * (VL)) {                            \
            V b0 = *(const V *)b, b1 = *(const V *)(b + (VL));                                    \
            T a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3], a4 = a[4], a5 = a[5];                   \
            c00 += b0 * a0; c01 += b1 * a0;                                                       \
            c10 += b0 * a1; c11 += b1 * a1;                                                       \
            c20 += b0 * a2; c21 += b1 * a2;                                                       \
            c30 += b0 * a3; c31 += b1 * a3;                                                       \
            c40 += b0 * a4; c41 += b1 * a4;                                                       \
            c50 += b0 * a5; c51 += b1 * a5;                                                       \
        }                                                                                         \
        V *r0 = (V *)c, *r1 = (V *)(c + ldc), *r2 = (V *)(c + 2 * ldc);                           \
        V *r3 = (V *)(c + 3 * ldc), *r4 = (V *)(c + 4 * ldc), *r5 = (V *)(c + 5 * ldc);           \
        if (accumulate) {                                                                         \
            c00 += r0[0]; c01 += r0[1]; c10 += r1[0]; c11 += r1[1];                               \
            c20 += r2[0]; c21 += r2[1]; c30 += r3[0]; c31 += r3[1];                               \
            c40 += r4[0]; c41 += r4[1]; c50 += r5[0]; c51 += r5[1];                               \
        }                                                                                         \
        r0[0] = c00; r0[1] = c01; r1[0] = c10; r1[1] = c11;                                       \
        r2[0] = c20; r2[1] = c21; r3[0] = c30; r3[1] = c31;                                       \
        r4[0] = c40; r4[1] = c41; r5[0] = c50; r5[1] = c51;                                       \
    }                                                                                             \
                                                                                                  \
    /* One MR x NR tile of C, of which the top-left mr x nr part is real. */                      \
    static void mgk_tile_##SFX(int64_t kc, const T *a, const T *b, T *c, int64_t ldc,             \
                               int64_t mr, int64_t nr, int accumulate)                            \
    {                                                                                             \
        enum { NR = MGK_NR_##SFX };                                                               \
        if (mr == MGK_MR && nr == NR) {                                                           \
            if (kc == MGK_KC) /* specialised copy: constant trip count */                         \
                mgk_kernel_##SFX(MGK_KC, a, b, c, ldc, accumulate);                               \
            else                                                                                  \
                mgk_kernel_##SFX(kc, a, b, c, ldc, accumulate);                                   \
            return;                                                                               \
        }                                                                                         \
        T tmp[MGK_MR * NR];                                                                       \
        mgk_kernel_##SFX(kc, a, b, tmp, NR, 0);                                                   \
        for (int64_t i = 0; i < mr; i++)                                                          \
            for (int64_t j = 0; j < nr; j++)                                                      \
                c[i * ldc + j] = accumulate ? c[i * ldc + j] + tmp[i * NR + j] : tmp[i * NR + j]; \
    }                                                                                             \
                                                                                                  \
    void mgk_gemm_##SFX(int64_t M, int64_t N, int64_t K, const T *A, int64_t lda, int transA,     \
                        const T *B, int64_t ldb, int transB, T *C, int64_t ldc, int beta,         \
                        void *scratch)                                                            \
    {                                                                                             \
        enum { NR = MGK_NR_##SFX };                                                               \
        if (M <= 0 || N <= 0) return;                                                             \
        if (K <= 0) {                                                                             \
            if (!beta)                                                                            \
                for (int64_t i = 0; i < M; i++) memset(C + i * ldc, 0, (size_t)N * sizeof(T));   \
            return;                                                                               \
        }                                                                                         \
        /* Packed B panel first: its size is a multiple of MGK_GEMM_NR elements, i.e. of 64      \
         * bytes, so the A block after it stays 64-byte aligned. */                               \
        T *pb = (T *)mgk_gemm_align64(scratch);                                                   \
        T *pa = pb + mgk_gemm_min64(K, MGK_KC) *                                                  \
                         mgk_gemm_roundup(mgk_gemm_min64(N, MGK_NC), MGK_GEMM_NR);                \
        for (int64_t jc = 0; jc < N; jc += MGK_NC) {                                              \
            int64_t nc = mgk_gemm_min64(MGK_NC, N - jc);                                          \
            for (int64_t pc = 0; pc < K; pc += MGK_KC) {                                          \
                int64_t kc = mgk_gemm_min64(MGK_KC, K - pc);                                      \
                int accumulate = pc > 0 || beta;                                                  \
                mgk_pack_b_##SFX(kc, nc, transB ? B + jc * ldb + pc : B + pc * ldb + jc, ldb,     \
                                 transB, pb);                                                     \
                for (int64_t ic = 0; ic < M; ic += MGK_MC) {                                      \
                    int64_t mc = mgk_gemm_min64(MGK_MC, M - ic);                                  \
                    mgk_pack_a_##SFX(mc, kc, transA ? A + pc * lda + ic : A + ic * lda + pc,      \
                                     lda, transA, pa);                                            \
                    for (int64_t jr = 0; jr < nc; jr += NR)                                       \
                        for (int64_t ir = 0; ir < mc; ir += MGK_MR)                               \
                            mgk_tile_##SFX(kc, pa + ir * kc, pb + jr * kc,                        \
                                           C + (ic + ir) * ldc + jc + jr, ldc,                    \
                                           mgk_gemm_min64(MGK_MR, mc - ir),                       \
                                           mgk_gemm_min64(NR, nc - jr), accumulate);              \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
    }

MGK_GEMM_DEFINE(float, mgk_v8f, 8, f32)
MGK_GEMM_DEFINE(double, mgk_v4d, 4, f64)
