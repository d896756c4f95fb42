/* gemm.c — single-threaded matrix multiply, C = op(A) * op(B) + beta * C (contract: gemm.h).
 *
 * Why this exists: every matmul in a generated module lands here, so it has to be fast without
 * depending on a BLAS library. The file is compiled to target-independent LLVM bitcode and only
 * optimised for the host CPU once it is linked into a generated module, so it is portable C11:
 * SIMD comes from clang/GCC vector extensions, never from intrinsics headers, and the backend
 * picks the host's instructions (AVX2 + FMA, NEON, ...).
 *
 * Blocking (BLIS / GotoBLAS scheme, constants in gemm.h; mgk_gemm_capped takes smaller blocks,
 * mgk_gemm_blocking, when its caller has less scratch to give: micro-batched graphs, whose
 * GEMMs on a part of the batch get a part of the scratch, compiler/microbatch.c):
 *
 *   for jc over N by NC:
 *     for pc over K by KC:
 *       pack op(B)[pc:+KC, jc:+NC] into NR-wide micro-panels     (KC x NC panel, L3-resident)
 *       for ic over M by MC:
 *         pack op(A)[ic:+MC, pc:+KC] into MR-tall micro-panels   (MC x KC block, L2-resident)
 *         for jr over the panel by NR:                           (KC x NR micro-panel, L1)
 *           for ir over the block by MR:
 *             micro-kernel: MR x NR tile of C (+)= A micro-panel * B micro-panel
 *
 * The micro-kernel keeps the MR x NR tile of C in six 64-byte vectors (one per row, so NR = 16
 * floats or 8 doubles) and does one rank-1 update per k: one vector load of B, six broadcasts
 * of A, six multiply-adds. The backend maps a 64-byte vector onto what the host has: on AVX2
 * (16 ymm registers) each is two ymm, so the tile is the classic 6 x 16 in 12 accumulators with
 * two loads of B and six broadcasts per k; on AVX-512 it is six zmm accumulators whose FMAs take
 * A as an embedded broadcast, at about 1.4x the AVX2 speed on the same machine (bench/kernels.sh).
 * A larger tile would suit AVX-512 better but spill on AVX2, and the bitcode cannot know which
 * of the two it will be compiled for.
 *
 * Packing makes both operand streams contiguous whatever the transposition flags and strides
 * (mgk_gemm_packed takes op(B)'s panels from the caller's packer instead: a convolution's
 * patches packed straight from the image, conv_impl.h); the packed panels are zero-padded to whole tiles so the kernel always runs full tiles, and
 * partial edge tiles of C are stored row by row straight from the registers when they are
 * short (fewer than MR rows, full width) and through a stack buffer when they are narrow.
 *
 * Beta: the first K block starts from zero (beta 0) or from C (beta 1); later K blocks start
 * from C. Beta 0 never reads C, so NaNs already in C are overwritten.
 *
 * Determinism: each element of C is one chain c = c + a[i,k] * b[k,j] (a fused multiply-add
 * where the host has one) for k increasing, starting at zero (beta 0) or at C (beta 1): a K block
 * after the first, and a call with beta 1, loads the tile of C into the registers and carries
 * on. So the result does not depend on the blocking (MC, NC, KC), on the edge tiles, or on how
 * K is cut into calls: a GEMM over K split at any points into a first call with beta 0 and
 * further calls with beta 1 gives the bits of one call (micro-batching relies on it: a weight
 * gradient x^T dy, whose K is the batch, summed part after part, compiler/microbatch.c).
 *
 * Scratch: the packed op(B) panel comes first (a multiple of MGK_GEMM_NR elements, hence of 64
 * bytes, long), then the packed op(A) block, exactly as sized by mgk_gemm_scratch_bytes(); f64
 * uses NR = 8 <= MGK_GEMM_NR and so needs no more than the formula allows.
 */
#include "gemm.h"

#include <stddef.h>
#include <string.h>

/* 64-byte vectors; the reduced alignment makes every load and store through them unaligned-safe. */
typedef float mgk_v16f __attribute__((vector_size(64), aligned(4)));
typedef double mgk_v8d __attribute__((vector_size(64), aligned(8)));

enum { MGK_MR = MGK_GEMM_MR };

static void *mgk_gemm_align64(void *p)
{
    return (void *)(((uintptr_t)p + 63) & ~(uintptr_t)63);
}

/* One VL x VL block transposed in registers: rows src + i * is (VL elements each) in, rows of
 * the transpose at dst + k * VL out. Four (three) rounds of two-vector shuffles, each swapping
 * the off-diagonal b x b blocks of every 2b x 2b block (b = VL/2, ..., 1). A weight matrix
 * packed as op(B) = W^T (the input gradient dy W^T of a matrix product) goes through here; the
 * element-by-element transpose took about a nanosecond per element, as long as 3 FLOPs' share
 * of the multiply at M = 256 and four times that in 4 parts (bench/: mlp_deep in parts). */
static inline __attribute__((always_inline)) void mgk_gemm_transpose_f32(const float *src, int64_t is, float *restrict dst)
{
    mgk_v16f r[16];
    for (int i = 0; i < 16; i++) r[i] = *(const mgk_v16f *)(src + i * is);
    for (int i = 0; i < 16; i++)
        if (!(i & 8)) {
            mgk_v16f x = r[i], y = r[i + 8];
            r[i] = __builtin_shufflevector(x, y, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);
            r[i + 8] = __builtin_shufflevector(x, y, 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
        }
    for (int i = 0; i < 16; i++)
        if (!(i & 4)) {
            mgk_v16f x = r[i], y = r[i + 4];
            r[i] = __builtin_shufflevector(x, y, 0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27);
            r[i + 4] = __builtin_shufflevector(x, y, 4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31);
        }
    for (int i = 0; i < 16; i++)
        if (!(i & 2)) {
            mgk_v16f x = r[i], y = r[i + 2];
            r[i] = __builtin_shufflevector(x, y, 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29);
            r[i + 2] = __builtin_shufflevector(x, y, 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31);
        }
    for (int i = 0; i < 16; i += 2) {
        mgk_v16f x = r[i], y = r[i + 1];
        r[i] = __builtin_shufflevector(x, y, 0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30);
        r[i + 1] = __builtin_shufflevector(x, y, 1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31);
    }
    for (int k = 0; k < 16; k++) *(mgk_v16f *)(dst + k * 16) = r[k];
}

static inline __attribute__((always_inline)) void mgk_gemm_transpose_f64(const double *src, int64_t is, double *restrict dst)
{
    mgk_v8d r[8];
    for (int i = 0; i < 8; i++) r[i] = *(const mgk_v8d *)(src + i * is);
    for (int i = 0; i < 4; i++) {
        mgk_v8d x = r[i], y = r[i + 4];
        r[i] = __builtin_shufflevector(x, y, 0, 1, 2, 3, 8, 9, 10, 11);
        r[i + 4] = __builtin_shufflevector(x, y, 4, 5, 6, 7, 12, 13, 14, 15);
    }
    for (int i = 0; i < 8; i++)
        if (!(i & 2)) {
            mgk_v8d x = r[i], y = r[i + 2];
            r[i] = __builtin_shufflevector(x, y, 0, 1, 8, 9, 4, 5, 12, 13);
            r[i + 2] = __builtin_shufflevector(x, y, 2, 3, 10, 11, 6, 7, 14, 15);
        }
    for (int i = 0; i < 8; i += 2) {
        mgk_v8d x = r[i], y = r[i + 1];
        r[i] = __builtin_shufflevector(x, y, 0, 8, 2, 10, 4, 12, 6, 14);
        r[i + 1] = __builtin_shufflevector(x, y, 1, 9, 3, 11, 5, 13, 7, 15);
    }
    for (int k = 0; k < 8; k++) *(mgk_v8d *)(dst + k * 8) = r[k];
}

/* MGK_GEMM_DEFINE(T, V, VL, SFX) defines mgk_gemm_SFX and its static helpers for element type T
 * and vector type V of VL elements; the register tile is MR x NR with NR = VL. */
#define MGK_GEMM_DEFINE(T, V, VL, SFX)                                                             \
                                                                                                   \
    enum { MGK_NR_##SFX = (VL) };                                                              \
    _Static_assert((int)MGK_NR_##SFX <= (int)MGK_GEMM_NR, "scratch formula needs NR <= GEMM_NR");  \
                                                                                                   \
    /* Pack one W-wide micro-panel of a matrix whose element (i, k) is src[i * is + k * ks]:       \
     * dst[k * W + i] = element (i, k) for i < w, and 0 for w <= i < W. */                         \
    static inline __attribute__((always_inline)) void mgk_pack_panel_##SFX(                        \
        int64_t W, int64_t w, int64_t kc, const T *src, int64_t is, int64_t ks, T *restrict dst)   \
    {                                                                                              \
        if (ks == 1) {                                                                             \
            /* Rows contiguous in src: transpose one cache line of each row at a time (reading     \
             * all w rows for every k thrashes L1 when is is a large power of two). */             \
            enum { KB = 64 / sizeof(T) };                                                          \
            int64_t k0 = 0;                                                                        \
            if (W == (VL) && w == W) /* a whole panel: VL x VL blocks in registers */              \
                for (; k0 + KB <= kc; k0 += KB) mgk_gemm_transpose_##SFX(src + k0, is, dst + k0 * W);  \
            for (; k0 + KB <= kc; k0 += KB)                                                        \
                for (int64_t i = 0; i < w; i++)                                                    \
                    for (int64_t k = k0; k < k0 + KB; k++) dst[k * W + i] = src[i * is + k];       \
            for (int64_t i = 0; i < w; i++)                                                        \
                for (int64_t k = k0; k < kc; k++) dst[k * W + i] = src[i * is + k];                \
            for (int64_t k = 0; k < kc; k++)                                                       \
                for (int64_t i = w; i < W; i++) dst[k * W + i] = 0;                                \
        } else {                                                                                   \
            for (int64_t k = 0; k < kc; k++)                                                       \
                for (int64_t i = 0; i < W; i++) dst[k * W + i] = i < w ? src[i * is + k * ks] : 0; \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    /* Pack an n x kc matrix, element (i, k) at src[i * is + k * ks], into ceil(n / W) W-wide      \
     * micro-panels of kc * W elements each. Always inlined, so W and the unit stride are          \
     * constants and every case compiles to a tight copy loop. */                                  \
    static inline __attribute__((always_inline)) void mgk_pack_##SFX(                              \
        int64_t W, int64_t n, int64_t kc, const T *src, int64_t is, int64_t ks, T *restrict dst)   \
    {                                                                                              \
        int64_t full = n / W * W;                                                                  \
        if (is == 1) { /* row k of all the panels is contiguous in src: stream it once */          \
            for (int64_t k = 0; k < kc; k++)                                                       \
                for (int64_t p = 0; p < full; p += W)                                              \
                    for (int64_t i = 0; i < W; i++) dst[p * kc + k * W + i] = src[k * ks + p + i]; \
        } else {                                                                                   \
            for (int64_t p = 0; p < full; p += W)                                                  \
                mgk_pack_panel_##SFX(W, W, kc, src + p * is, is, ks, dst + p * kc);                \
        }                                                                                          \
        if (full < n)                                                                              \
            mgk_pack_panel_##SFX(W, n - full, kc, src + full * is, is, ks, dst + full * kc);       \
    }                                                                                              \
                                                                                                   \
    /* Micro-kernel: the first mr rows (mr <= MR) of the MR x NR tile at c (row stride ldc) are  \
     * set to, or if accumulate incremented by, those rows of the product of the packed panels    \
     * a (MR x kc) and b (kc x NR); rows mr.. of c are neither read nor written. Accumulating,   \
     * the registers start from the tile of C, so each element is one chain of multiply-adds     \
     * over k whichever calls and K blocks that chain is cut into (see Determinism above). */     \
    static inline __attribute__((always_inline)) void mgk_kernel_##SFX(                            \
        int64_t kc, const T *restrict a, const T *restrict b, T *restrict c, int64_t ldc,          \
        int accumulate, int64_t mr)                                                                \
    {                                                                                              \
        V z = {0};                                                                                 \
        V c0 = accumulate && mr > 0 ? *(const V *)(c + 0 * ldc) : z;                               \
        V c1 = accumulate && mr > 1 ? *(const V *)(c + 1 * ldc) : z;                               \
        V c2 = accumulate && mr > 2 ? *(const V *)(c + 2 * ldc) : z;                               \
        V c3 = accumulate && mr > 3 ? *(const V *)(c + 3 * ldc) : z;                               \
        V c4 = accumulate && mr > 4 ? *(const V *)(c + 4 * ldc) : z;                               \
        V c5 = accumulate && mr > 5 ? *(const V *)(c + 5 * ldc) : z;                               \
        for (int64_t k = 0; k < kc; k++, a += MGK_MR, b += (VL)) {                                 \
            V b0 = *(const V *)b;                                                                  \
            c0 += b0 * a[0]; c1 += b0 * a[1]; c2 += b0 * a[2];                                     \
            c3 += b0 * a[3]; c4 += b0 * a[4]; c5 += b0 * a[5];                                     \
        }                                                                                          \
        V acc[MGK_MR] = {c0, c1, c2, c3, c4, c5};                                                  \
        for (int r = 0; r < MGK_MR; r++) {                                                         \
            if (r >= mr) break;                                                                    \
            *(V *)(c + r * ldc) = acc[r];                                                          \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    /* One MR x NR tile of C of which the top-left mr x nr part is real: whole rows are stored     \
     * straight from the registers, a partial width goes through a buffer. */                     \
    static inline __attribute__((always_inline)) void mgk_tile_##SFX(                              \
        int64_t kc, const T *a, const T *b, T *c, int64_t ldc, int64_t mr, int64_t nr,             \
        int accumulate)                                                                            \
    {                                                                                              \
        enum { NR = MGK_NR_##SFX };                                                                \
        if (mr == MGK_MR && nr == NR) {                                                            \
            mgk_kernel_##SFX(kc, a, b, c, ldc, accumulate, MGK_MR);                                \
            return;                                                                                \
        }                                                                                          \
        if (nr == NR) {                                                                            \
            mgk_kernel_##SFX(kc, a, b, c, ldc, accumulate, mr);                                    \
            return;                                                                                \
        }                                                                                          \
        T tmp[MGK_MR * NR];                                                                        \
        if (accumulate) /* the real part of the tile in, the rest zero (its results are dropped) */ \
            for (int64_t i = 0; i < MGK_MR; i++)                                                   \
                for (int64_t j = 0; j < NR; j++) tmp[i * NR + j] = i < mr && j < nr ? c[i * ldc + j] : 0; \
        mgk_kernel_##SFX(kc, a, b, tmp, NR, accumulate, MGK_MR);                                   \
        for (int64_t i = 0; i < mr; i++)                                                           \
            for (int64_t j = 0; j < nr; j++) c[i * ldc + j] = tmp[i * NR + j];                     \
    }                                                                                              \
                                                                                                   \
    /* The GEMM; op(B) from B (pack_b NULL) or from pack_b(ctx, ...). */                          \
    static inline __attribute__((always_inline)) void mgk_gemm_run_##SFX(                          \
        int64_t M, int64_t N, int64_t K, const T *A, int64_t lda, int transA, const T *B,          \
        int64_t ldb, int transB, mgk_gemm_pack_b_fn pack_b, const void *ctx, T *C, int64_t ldc,    \
        int beta, void *scratch, int64_t cap)                                                      \
    {                                                                                              \
        enum { NR = MGK_NR_##SFX };                                                                \
        if (M <= 0 || N <= 0) return;                                                              \
        if (K <= 0) {                                                                              \
            if (!beta)                                                                             \
                for (int64_t i = 0; i < M; i++) memset(C + i * ldc, 0, (size_t)N * sizeof(T));     \
            return;                                                                                \
        }                                                                                          \
        mgk_gemm_blocks bl = mgk_gemm_blocking(M, N, K, (int64_t)sizeof(T), cap);                  \
        T *pb = (T *)mgk_gemm_align64(scratch);                                                    \
        T *pa = pb + bl.kc * bl.nc;                                                                \
        for (int64_t jc = 0; jc < N; jc += bl.nc) {                                                \
            int64_t nc = mgk_gemm_min64(bl.nc, N - jc);                                            \
            for (int64_t pc = 0; pc < K; pc += bl.kc) {                                            \
                int64_t kc = mgk_gemm_min64(bl.kc, K - pc);                                        \
                int accumulate = pc > 0 || beta;                                                   \
                if (pack_b)                                                                        \
                    pack_b(ctx, jc, nc, pc, kc, pb);                                               \
                else if (transB) /* op(B)[k, j] = B[j * ldb + k] */                                \
                    mgk_pack_##SFX(NR, nc, kc, B + jc * ldb + pc, ldb, 1, pb);                     \
                else                                                                               \
                    mgk_pack_##SFX(NR, nc, kc, B + pc * ldb + jc, 1, ldb, pb);                     \
                for (int64_t ic = 0; ic < M; ic += bl.mc) {                                        \
                    int64_t mc = mgk_gemm_min64(bl.mc, M - ic);                                    \
                    if (transA) /* op(A)[i, k] = A[k * lda + i] */                                 \
                        mgk_pack_##SFX(MGK_MR, mc, kc, A + pc * lda + ic, 1, lda, pa);             \
                    else                                                                           \
                        mgk_pack_##SFX(MGK_MR, mc, kc, A + ic * lda + pc, lda, 1, pa);             \
                    for (int64_t jr = 0; jr < nc; jr += NR)                                        \
                        for (int64_t ir = 0; ir < mc; ir += MGK_MR)                                \
                            mgk_tile_##SFX(kc, pa + ir * kc, pb + jr * kc,                         \
                                           C + (ic + ir) * ldc + jc + jr, ldc,                     \
                                           mgk_gemm_min64(MGK_MR, mc - ir),                        \
                                           mgk_gemm_min64(NR, nc - jr), accumulate);               \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    void mgk_gemm_capped_##SFX(int64_t M, int64_t N, int64_t K, const T *A, int64_t lda,           \
                               int transA, const T *B, int64_t ldb, int transB, T *C, int64_t ldc, \
                               int beta, void *scratch, int64_t cap)                               \
    {                                                                                              \
        mgk_gemm_run_##SFX(M, N, K, A, lda, transA, B, ldb, transB, NULL, NULL, C, ldc, beta,     \
                           scratch, cap);                                                          \
    }                                                                                              \
                                                                                                   \
    void mgk_gemm_packed_##SFX(int64_t M, int64_t N, int64_t K, const T *A, int64_t lda,           \
                               int transA, mgk_gemm_pack_b_fn pack_b, const void *ctx, T *C,       \
                               int64_t ldc, int beta, void *scratch, int64_t cap)                  \
    {                                                                                              \
        mgk_gemm_run_##SFX(M, N, K, A, lda, transA, NULL, 0, 0, pack_b, ctx, C, ldc, beta, scratch, \
                           cap);                                                                   \
    }                                                                                              \
                                                                                                   \
    void mgk_gemm_##SFX(int64_t M, int64_t N, int64_t K, const T *A, int64_t lda, int transA,      \
                        const T *B, int64_t ldb, int transB, T *C, int64_t ldc, int beta,          \
                        void *scratch)                                                             \
    {                                                                                              \
        mgk_gemm_capped_##SFX(M, N, K, A, lda, transA, B, ldb, transB, C, ldc, beta, scratch, 0);  \
    }

MGK_GEMM_DEFINE(float, mgk_v16f, 16, f32)
MGK_GEMM_DEFINE(double, mgk_v8d, 8, f64)

/* A stack of GEMMs over a batch space collapsed to 4 axes: entry (i0..i3) multiplies A at
 * element offset sum(i * sa) by B at sum(i * sb) into the next M x N block of C. The batch
 * runs in order and reuses one scratch area. */
#define MGK_GEMM_BATCHED(T, SFX)                                                                   \
    void mgk_gemm_batched_##SFX(int64_t d0, int64_t d1, int64_t d2, int64_t d3, int64_t sa0,        \
                                int64_t sa1, int64_t sa2, int64_t sa3, int64_t sb0, int64_t sb1,    \
                                int64_t sb2, int64_t sb3, int64_t M, int64_t N, int64_t K,          \
                                const T *A, int64_t lda, int transA, const T *B, int64_t ldb,       \
                                int transB, T *C, void *scratch)                                   \
    {                                                                                              \
        T *c = C;                                                                                  \
        for (int64_t i0 = 0; i0 < d0; i0++)                                                        \
            for (int64_t i1 = 0; i1 < d1; i1++)                                                    \
                for (int64_t i2 = 0; i2 < d2; i2++)                                                \
                    for (int64_t i3 = 0; i3 < d3; i3++, c += M * N)                                \
                        mgk_gemm_##SFX(M, N, K, A + i0 * sa0 + i1 * sa1 + i2 * sa2 + i3 * sa3, lda, \
                                       transA, B + i0 * sb0 + i1 * sb1 + i2 * sb2 + i3 * sb3, ldb, \
                                       transB, c, N, 0, scratch);                                  \
    }

MGK_GEMM_BATCHED(float, f32)
MGK_GEMM_BATCHED(double, f64)
