/* gemm.h — the contract between the compiler and the matrix-multiply kernels.
 *
 * The kernels in runtime/kernels/ are compiled to LLVM bitcode at build time and linked into
 * every generated module, where they become internal functions. They may call nothing but
 * memcpy/memset and libm, and may not allocate: any scratch memory (GEMM packing buffers) is a
 * region of the caller's workspace that the planner reserves. This header is also compiled into
 * the memgrad compiler itself so that the planner knows how much scratch each call needs.
 */
#ifndef MG_KERNELS_GEMM_H
#define MG_KERNELS_GEMM_H
#include <stdint.h>

/* Blocking parameters shared by the kernels and the planner's scratch computation. */
enum { MGK_GEMM_MC = 72, MGK_GEMM_KC = 256, MGK_GEMM_NC = 2048, MGK_GEMM_MR = 6, MGK_GEMM_NR = 16 };

static inline int64_t mgk_gemm_min64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t mgk_gemm_roundup(int64_t a, int64_t m) { return (a + m - 1) / m * m; }

/* The blocking of one GEMM: rows of op(A) per packed block (mc, a multiple of MR), K per block
 * (kc) and columns of op(B) per packed panel (nc, a multiple of MGK_GEMM_NR). Without a cap
 * (cap <= 0) they are MC, KC and NC, or the whole extent where smaller. With one, the blocks
 * shrink until the scratch (below) is at most cap bytes or they reach 64 columns, 32 of K and
 * 2 micro-tiles of rows: nc first, then kc, then mc, each halved. The blocking changes speed
 * only: every element of C is the same chain of multiply-adds whatever it is (gemm.c). */
typedef struct mgk_gemm_blocks {
    int64_t mc, kc, nc;
} mgk_gemm_blocks;

static inline mgk_gemm_blocks mgk_gemm_blocking(int64_t M, int64_t N, int64_t K, int64_t elem_size, int64_t cap)
{
    mgk_gemm_blocks b;
    b.kc = mgk_gemm_min64(K, MGK_GEMM_KC);
    b.mc = mgk_gemm_roundup(mgk_gemm_min64(M, MGK_GEMM_MC), MGK_GEMM_MR);
    b.nc = mgk_gemm_roundup(mgk_gemm_min64(N, MGK_GEMM_NC), MGK_GEMM_NR);
    if (b.kc < 1) b.kc = 1;
    if (b.mc < MGK_GEMM_MR) b.mc = MGK_GEMM_MR;
    if (b.nc < MGK_GEMM_NR) b.nc = MGK_GEMM_NR;
    while (cap > 0 && (b.mc * b.kc + b.kc * b.nc) * elem_size + 64 > cap) {
        if (b.nc > 64) b.nc = mgk_gemm_roundup(b.nc / 2, MGK_GEMM_NR);
        else if (b.kc > 32) b.kc = (b.kc + 1) / 2;
        else if (b.mc > 2 * MGK_GEMM_MR) b.mc = mgk_gemm_roundup(b.mc / 2, MGK_GEMM_MR);
        else break;
    }
    return b;
}

/* Bytes of scratch one call of mgk_gemm_capped_{f32,f64}(M, N, K, ..., cap) needs: a packed
 * block of op(A) (mc x kc) and a packed panel of op(B) (kc x nc), padded to whole micro-tiles,
 * plus 64 bytes of slack for aligning the start. */
static inline int64_t mgk_gemm_capped_scratch_bytes(int64_t M, int64_t N, int64_t K, int64_t elem_size, int64_t cap)
{
    mgk_gemm_blocks b = mgk_gemm_blocking(M, N, K, elem_size, cap);
    return (b.mc * b.kc + b.kc * b.nc) * elem_size + 64;
}

/* The scratch of mgk_gemm_{f32,f64} (no cap). */
static inline int64_t mgk_gemm_scratch_bytes(int64_t M, int64_t N, int64_t K, int64_t elem_size)
{
    return mgk_gemm_capped_scratch_bytes(M, N, K, elem_size, 0);
}

/* C[M,N] = op(A)[M,K] * op(B)[K,N] + beta * C, with beta 0 (overwrite) or 1 (accumulate).
 * Row-major storage. If transA == 0, A is M x K with row stride lda; else A is K x M (row
 * stride lda) and op(A) = A^T. Likewise B: K x N (ldb) or, transposed, N x K. C is M x N with
 * row stride ldc. Pointers are only element-aligned. scratch holds
 * mgk_gemm_scratch_bytes(M, N, K, sizeof(element)) bytes. K == 0 gives C = beta * C. */
void mgk_gemm_f32(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, int transA,
                  const float *B, int64_t ldb, int transB, float *C, int64_t ldc, int beta,
                  void *scratch);
void mgk_gemm_f64(int64_t M, int64_t N, int64_t K, const double *A, int64_t lda, int transA,
                  const double *B, int64_t ldb, int transB, double *C, int64_t ldc, int beta,
                  void *scratch);
/* The same with the blocking mgk_gemm_blocking(..., cap) gives: scratch holds
 * mgk_gemm_capped_scratch_bytes(M, N, K, sizeof(element), cap) bytes. Bit-identical results. */
void mgk_gemm_capped_f32(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, int transA,
                         const float *B, int64_t ldb, int transB, float *C, int64_t ldc, int beta,
                         void *scratch, int64_t cap);
void mgk_gemm_capped_f64(int64_t M, int64_t N, int64_t K, const double *A, int64_t lda, int transA,
                         const double *B, int64_t ldb, int transB, double *C, int64_t ldc, int beta,
                         void *scratch, int64_t cap);
/* A packer of op(B) for mgk_gemm_packed_{f32,f64}, for an op(B) that is not stored as a matrix
 * (a convolution's patch matrix, built straight from the image: conv_impl.h). It writes
 * op(B)[pc:+kc, jc:+nc] at dst as ceil(nc / NR) micro-panels of kc x NR elements, panel q (the
 * columns jc + q*NR ..) at dst + q*NR*kc, its row k at + k*NR, and zeros in the columns past nc
 * of the last panel; NR is MGK_GEMM_NR for f32 and MGK_GEMM_NR / 2 for f64 (one 64-byte vector). */
typedef void (*mgk_gemm_pack_b_fn)(const void *ctx, int64_t jc, int64_t nc, int64_t pc, int64_t kc, void *dst);

/* mgk_gemm_capped_{f32,f64} with op(B) given by a packer (called once per block of op(B), with
 * ctx) instead of a matrix: the same blocking, scratch and bits as the matrix it packs. */
void mgk_gemm_packed_f32(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, int transA,
                         mgk_gemm_pack_b_fn pack_b, const void *ctx, float *C, int64_t ldc, int beta,
                         void *scratch, int64_t cap);
void mgk_gemm_packed_f64(int64_t M, int64_t N, int64_t K, const double *A, int64_t lda, int transA,
                         mgk_gemm_pack_b_fn pack_b, const void *ctx, double *C, int64_t ldc, int beta,
                         void *scratch, int64_t cap);
#endif
