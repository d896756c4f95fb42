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

/* Bytes of scratch one call of mgk_gemm_{f32,f64}(M, N, K, ...) needs: a packed block of
 * op(A) (up to MC x KC) and a packed panel of op(B) (up to KC x NC), padded to whole
 * micro-tiles, plus 64 bytes of slack for aligning the start. */
static inline int64_t mgk_gemm_scratch_bytes(int64_t M, int64_t N, int64_t K, int64_t elem_size)
{
    int64_t kc = mgk_gemm_min64(K, MGK_GEMM_KC);
    int64_t mc = mgk_gemm_roundup(mgk_gemm_min64(M, MGK_GEMM_MC), MGK_GEMM_MR);
    int64_t nc = mgk_gemm_roundup(mgk_gemm_min64(N, MGK_GEMM_NC), MGK_GEMM_NR);
    if (kc < 1) kc = 1;
    return (mc * kc + kc * nc) * elem_size + 64;
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
#endif
