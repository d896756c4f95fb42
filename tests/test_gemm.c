/* test_gemm.c — unit tests for the GEMM kernels (runtime/kernels/gemm.c), compiled natively.
 *
 * Every case is compared with a naive triple loop accumulated in higher precision (double for
 * f32, long double for f64) against the usual forward error bound
 * |C - ref| <= 2 (K + 4) u (sum_k |a_ik b_kj| + beta |C0_ij|), u the unit roundoff.
 * Each case also checks that the padding columns of C (between N and ldc) are untouched, that
 * beta 0 overwrites NaNs, that scratch is used only within mgk_gemm_scratch_bytes() of a
 * misaligned start, and that a second call gives bitwise identical results. A GEMM whose K is
 * cut into calls (beta 0, then beta 1) must give the bits of one call (test_k_split_bit_identical).
 */
#include "testutil.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/kernels/gemm.c"

/* Deterministic xorshift generator, so failures are reproducible. */
static uint64_t rng_state;
static uint64_t rng_next(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}
static int64_t rng_int(int64_t n) { return (int64_t)(rng_next() % (uint64_t)n); } /* [0, n) */
static double rng_val(void) { return (double)(rng_next() >> 11) / 9007199254740992.0 * 2 - 1; }

/* Element access for either precision. */
static double get(const void *p, int64_t i, int is64)
{
    return is64 ? ((const double *)p)[i] : ((const float *)p)[i];
}
static void set(void *p, int64_t i, double v, int is64)
{
    if (is64) ((double *)p)[i] = v;
    else ((float *)p)[i] = (float)v;
}

/* Like ck_assert_msg, but without Check's per-call bookkeeping (which is slow in hot loops). */
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) ck_abort_msg(__VA_ARGS__);                                                    \
    } while (0)

enum { CANARY_BYTES = 64 };
static const unsigned char CANARY = 0xA5;

/* Runs one C = op(A) op(B) + beta C case and checks it; ldX_pad is added to the minimal stride. */
static void check_case(int is64, int64_t M, int64_t N, int64_t K, int ta, int tb, int beta,
                       int64_t lda_pad, int64_t ldb_pad, int64_t ldc_pad)
{
    size_t es = is64 ? sizeof(double) : sizeof(float);
    int64_t arows = ta ? K : M, acols = ta ? M : K, brows = tb ? N : K, bcols = tb ? K : N;
    int64_t lda = acols + lda_pad, ldb = bcols + ldb_pad, ldc = N + ldc_pad;
    /* Buffers end exactly where the matrices do (for ASan); A, B and C start one element into
     * theirs, so they are not vector-aligned. */
    char *bufA = malloc((size_t)(arows * lda + 1) * es);
    char *bufB = malloc((size_t)(brows * ldb + 1) * es);
    char *bufC = malloc((size_t)(M * ldc + 1) * es);
    void *A = bufA + es, *B = bufB + es, *C = bufC + es;
    void *C0 = malloc((size_t)(M * ldc + 1) * es), *C1 = malloc((size_t)(M * ldc + 1) * es);
    ck_assert(bufA && bufB && bufC && C0 && C1);
    for (int64_t i = 0; i < arows * lda; i++) set(A, i, rng_val(), is64);
    for (int64_t i = 0; i < brows * ldb; i++) set(B, i, rng_val(), is64);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < ldc; j++)
            /* Padding holds a sentinel; with beta 0 the live part holds NaN, which must vanish. */
            set(C, i * ldc + j, j >= N ? 12345.0 : beta ? rng_val() : NAN, is64);
    memcpy(C0, C, (size_t)(M * ldc) * es);

    /* Scratch starts at a deliberately misaligned address and is followed by a canary. */
    int64_t bytes = mgk_gemm_scratch_bytes(M, N, K, (int64_t)es);
    size_t mis = (size_t)rng_int(64);
    unsigned char *raw = malloc(mis + (size_t)bytes + CANARY_BYTES);
    ck_assert(raw);
    memset(raw, 0xFF, mis + (size_t)bytes); /* NaN bytes: stale scratch must never leak in */
    memset(raw + mis + bytes, CANARY, CANARY_BYTES);

    if (is64)
        mgk_gemm_f64(M, N, K, A, lda, ta, B, ldb, tb, C, ldc, beta, raw + mis);
    else
        mgk_gemm_f32(M, N, K, A, lda, ta, B, ldb, tb, C, ldc, beta, raw + mis);
    for (int i = 0; i < CANARY_BYTES; i++)
        CHECK(raw[mis + bytes + i] == CANARY, "scratch overrun M=%ld N=%ld K=%ld", (long)M,
              (long)N, (long)K);

    /* Reference: op(A) and op(B)^T copied to contiguous rows, dot products in higher precision. */
    double *opa = malloc(((size_t)(M * K) + 1) * sizeof(double));
    double *opbt = malloc(((size_t)(N * K) + 1) * sizeof(double));
    ck_assert(opa && opbt);
    for (int64_t i = 0; i < M; i++)
        for (int64_t k = 0; k < K; k++)
            opa[i * K + k] = get(A, ta ? k * lda + i : i * lda + k, is64);
    for (int64_t j = 0; j < N; j++)
        for (int64_t k = 0; k < K; k++)
            opbt[j * K + k] = get(B, tb ? j * ldb + k : k * ldb + j, is64);
    double u = is64 ? 1.1102230246251565e-16 : 5.9604644775390625e-08;
    for (int64_t i = 0; i < M; i++) {
        for (int64_t j = 0; j < ldc; j++) {
            double got = get(C, i * ldc + j, is64);
            if (j >= N) {
                CHECK(got == 12345.0, "padding of C modified at (%ld,%ld)", (long)i, (long)j);
                continue;
            }
            const double *ai = opa + i * K, *bj = opbt + j * K;
            long double ref = 0, mag = 0;
            if (is64) {
                for (int64_t k = 0; k < K; k++) {
                    long double ab = (long double)ai[k] * bj[k];
                    ref += ab;
                    mag += fabsl(ab);
                }
            } else { /* float products are exact in double; the double sum is accurate enough */
                double r = 0, m = 0;
                for (int64_t k = 0; k < K; k++) {
                    r += ai[k] * bj[k];
                    m += fabs(ai[k] * bj[k]);
                }
                ref = r;
                mag = m;
            }
            if (beta) {
                double c0 = get(C0, i * ldc + j, is64);
                ref += c0;
                mag += fabs(c0);
            }
            double tol = 2.0 * (double)(K + 4) * u * (double)mag;
            CHECK(isfinite(got) && fabs(got - (double)ref) <= tol,
                  "%s M=%ld N=%ld K=%ld tA=%d tB=%d beta=%d lda=%ld ldb=%ld ldc=%ld: "
                  "C[%ld,%ld] = %.17g, expected %.17g (tol %.3g)",
                  is64 ? "f64" : "f32", (long)M, (long)N, (long)K, ta, tb, beta, (long)lda,
                  (long)ldb, (long)ldc, (long)i, (long)j, got, (double)ref, tol);
        }
    }
    free(opa); free(opbt);

    /* Determinism: the same inputs give bitwise the same C. */
    memcpy(C1, C0, (size_t)(M * ldc) * es);
    memset(raw, 0x7F, mis + (size_t)bytes); /* different stale scratch */
    if (is64)
        mgk_gemm_f64(M, N, K, A, lda, ta, B, ldb, tb, C1, ldc, beta, raw + mis);
    else
        mgk_gemm_f32(M, N, K, A, lda, ta, B, ldb, tb, C1, ldc, beta, raw + mis);
    ck_assert_msg(memcmp(C, C1, (size_t)(M * ldc) * es) == 0, "second call differs");

    free(bufA); free(bufB); free(bufC); free(C0); free(C1); free(raw);
}

/* Many random small shapes (0..70 in each dimension), all flag combinations, padded strides. */
static void random_small(int is64, uint64_t seed)
{
    rng_state = seed;
    for (int it = 0; it < 400; it++) {
        int64_t M = rng_int(71), N = rng_int(71), K = rng_int(71);
        int ta = it & 1, tb = (it >> 1) & 1, beta = (it >> 2) & 1;
        int64_t pa = rng_int(3) ? 0 : rng_int(9), pb = rng_int(3) ? 0 : rng_int(9);
        int64_t pc = rng_int(3) ? 0 : rng_int(9);
        check_case(is64, M, N, K, ta, tb, beta, pa, pb, pc);
    }
}

START_TEST(test_random_small_f32) { random_small(0, 0x9E3779B97F4A7C15ull); }
END_TEST
START_TEST(test_random_small_f64) { random_small(1, 0xD1B54A32D192ED03ull); }
END_TEST

/* Degenerate and tile-boundary shapes, in every flag combination: among them C tiles short of
 * MR rows at full NR width (stored straight from the registers) and narrow ones (buffered). */
START_TEST(test_edges)
{
    static const int64_t sizes[] = {0, 1, 2, 5, 6, 7, 8, 13, 15, 16, 17, 32};
    rng_state = 42 + (uint64_t)_i;
    int is64 = _i;
    for (int f = 0; f < 8; f++)
        for (int a = 0; a < 12; a++)
            for (int b = 0; b < 12; b++)
                for (int c = 0; c < 12; c += 3)
                    check_case(is64, sizes[a], sizes[b], sizes[c], f & 1, (f >> 1) & 1,
                               (f >> 2) & 1, f & 1, (f >> 1) & 1, 1);
}
END_TEST

/* K == 0: C = beta * C; beta 0 must clear NaNs. */
START_TEST(test_k_zero)
{
    float c[6] = {NAN, 1, 2, 3, NAN, 5};
    float x = 7;
    double scratch[64];
    ck_assert(mgk_gemm_scratch_bytes(2, 2, 0, sizeof(float)) <= (int64_t)sizeof scratch);
    mgk_gemm_f32(2, 2, 0, &x, 1, 0, &x, 2, 0, c, 3, 0, scratch);
    ck_assert(c[0] == 0 && c[1] == 0 && c[2] == 2 && c[3] == 0 && c[4] == 0 && c[5] == 5);
    double d[2] = {4, 5};
    double y = 1;
    mgk_gemm_f64(1, 2, 0, &y, 1, 1, &y, 1, 1, d, 2, 1, scratch);
    ck_assert(d[0] == 4 && d[1] == 5);
}
END_TEST

/* Larger than every blocking constant (MC, KC, NC), with ragged last blocks. */
START_TEST(test_large)
{
    int is64 = _i >> 2, ta = _i & 1, tb = (_i >> 1) & 1;
    rng_state = 1234567 + (uint64_t)_i;
    check_case(is64, 300, 2100, 600, ta, tb, (ta ^ tb) & 1, 3 * ta, 1, 5 * tb);
}
END_TEST

/* One GEMM over K cut into calls at the points cut[0 .. ncut) (increasing, inside (0, K)): the
 * first call with the given beta, the others accumulating (beta 1), gives C bit for bit as one
 * call over the whole of K: each element is one chain of multiply-adds over k, whatever the
 * cuts, the K blocks (KC) and the edge tiles (M, N not multiples of MR, NR). */
static void check_k_split(int is64, int64_t M, int64_t N, int64_t K, int ta, int tb, int beta, const int64_t *cut,
                          int ncut)
{
    size_t es = is64 ? sizeof(double) : sizeof(float);
    int64_t lda = ta ? M : K, ldb = tb ? K : N, ldc = N + 3;
    void *A = malloc((size_t)(K * M) * es), *B = malloc((size_t)(K * N) * es);
    void *C1 = malloc((size_t)(M * ldc) * es), *C2 = malloc((size_t)(M * ldc) * es);
    void *scratch = malloc((size_t)mgk_gemm_scratch_bytes(M, N, K, (int64_t)es));
    ck_assert(A && B && C1 && C2 && scratch);
    for (int64_t i = 0; i < K * M; i++) set(A, i, rng_val(), is64);
    for (int64_t i = 0; i < K * N; i++) set(B, i, rng_val(), is64);
    for (int64_t i = 0; i < M * ldc; i++) set(C1, i, beta ? rng_val() : NAN, is64);
    memcpy(C2, C1, (size_t)(M * ldc) * es);
    if (is64)
        mgk_gemm_f64(M, N, K, A, lda, ta, B, ldb, tb, C1, ldc, beta, scratch);
    else
        mgk_gemm_f32(M, N, K, A, lda, ta, B, ldb, tb, C1, ldc, beta, scratch);
    for (int c = 0; c <= ncut; c++) {
        int64_t k0 = c ? cut[c - 1] : 0, k1 = c < ncut ? cut[c] : K;
        ck_assert(k0 < k1);
        /* op(A)[:, k0:k1] and op(B)[k0:k1, :] */
        int64_t ao = ta ? k0 * lda : k0, bo = tb ? k0 : k0 * ldb;
        if (is64)
            mgk_gemm_f64(M, N, k1 - k0, (const double *)A + ao, lda, ta, (const double *)B + bo, ldb, tb, C2, ldc,
                         c ? 1 : beta, scratch);
        else
            mgk_gemm_f32(M, N, k1 - k0, (const float *)A + ao, lda, ta, (const float *)B + bo, ldb, tb, C2, ldc,
                         c ? 1 : beta, scratch);
    }
    for (int64_t i = 0; i < M; i++)
        ck_assert_msg(memcmp((char *)C1 + (size_t)(i * ldc) * es, (char *)C2 + (size_t)(i * ldc) * es,
                             (size_t)N * es) == 0,
                      "%s M=%ld N=%ld K=%ld tA=%d tB=%d beta=%d, %d cuts from %ld: row %ld differs from one call",
                      is64 ? "f64" : "f32", (long)M, (long)N, (long)K, ta, tb, beta, ncut, (long)cut[0], (long)i);
    free(A); free(B); free(C1); free(C2); free(scratch);
}

/* K cut at single odd points on either side of the K blocks (KC = 256), and at all of them at
 * once, in every flag combination, f32 (_i 0) and f64 (_i 1). */
START_TEST(test_k_split_bit_identical)
{
    static const int64_t cuts[] = {1, 7, 100, 255, 256, 257, 511, 600};
    int is64 = _i;
    rng_state = 777 + (uint64_t)_i;
    for (int f = 0; f < 8; f++) {
        int ta = f & 1, tb = (f >> 1) & 1, beta = (f >> 2) & 1;
        for (int c = 0; c < 8; c++) check_k_split(is64, 13, 37, 601, ta, tb, beta, &cuts[c], 1);
        check_k_split(is64, 13, 37, 601, ta, tb, beta, cuts, 8);
        check_k_split(is64, 80, 20, 260, ta, tb, beta, &cuts[1], 1); /* M past MC: two row blocks */
    }
}
END_TEST

/* mgk_gemm_capped: smaller blocks under a scratch cap (mgk_gemm_blocking), within the scratch
 * its formula gives (a canary after it), bit for bit the uncapped result. f32 (_i 0), f64 (1). */
START_TEST(test_capped_bit_identical)
{
    static const int64_t caps[] = {1, 4096, 20000, 100000};
    static const int64_t shapes[][3] = {{60, 200, 300}, {13, 37, 301}, {150, 70, 40}};
    int is64 = _i;
    size_t es = is64 ? sizeof(double) : sizeof(float);
    rng_state = 4242 + (uint64_t)_i;
    for (int sh = 0; sh < 3; sh++) {
        int64_t M = shapes[sh][0], N = shapes[sh][1], K = shapes[sh][2];
        for (int f = 0; f < 8; f++) {
            int ta = f & 1, tb = (f >> 1) & 1, beta = (f >> 2) & 1;
            int64_t lda = ta ? M : K, ldb = tb ? K : N;
            void *A = malloc((size_t)(K * M) * es), *B = malloc((size_t)(K * N) * es);
            void *C0 = malloc((size_t)(M * N) * es), *C1 = malloc((size_t)(M * N) * es), *C2 = malloc((size_t)(M * N) * es);
            void *full = malloc((size_t)mgk_gemm_scratch_bytes(M, N, K, (int64_t)es));
            ck_assert(A && B && C0 && C1 && C2 && full);
            for (int64_t i = 0; i < K * M; i++) set(A, i, rng_val(), is64);
            for (int64_t i = 0; i < K * N; i++) set(B, i, rng_val(), is64);
            for (int64_t i = 0; i < M * N; i++) set(C0, i, rng_val(), is64);
            memcpy(C1, C0, (size_t)(M * N) * es);
            if (is64) mgk_gemm_f64(M, N, K, A, lda, ta, B, ldb, tb, C1, N, beta, full);
            else mgk_gemm_f32(M, N, K, A, lda, ta, B, ldb, tb, C1, N, beta, full);
            for (int c = 0; c < 4; c++) {
                int64_t bytes = mgk_gemm_capped_scratch_bytes(M, N, K, (int64_t)es, caps[c]);
                mgk_gemm_blocks bl = mgk_gemm_blocking(M, N, K, (int64_t)es, caps[c]);
                ck_assert(bytes <= caps[c] || (bl.nc <= 64 && bl.kc <= 32 && bl.mc <= 2 * MGK_GEMM_MR));
                ck_assert(bytes <= mgk_gemm_scratch_bytes(M, N, K, (int64_t)es));
                unsigned char *raw = malloc((size_t)bytes + CANARY_BYTES);
                ck_assert(raw);
                memset(raw, 0xFF, (size_t)bytes);
                memset(raw + bytes, CANARY, CANARY_BYTES);
                memcpy(C2, C0, (size_t)(M * N) * es);
                if (is64) mgk_gemm_capped_f64(M, N, K, A, lda, ta, B, ldb, tb, C2, N, beta, raw, caps[c]);
                else mgk_gemm_capped_f32(M, N, K, A, lda, ta, B, ldb, tb, C2, N, beta, raw, caps[c]);
                for (int i = 0; i < CANARY_BYTES; i++) ck_assert_msg(raw[bytes + i] == CANARY, "scratch overrun, cap %ld", (long)caps[c]);
                ck_assert_msg(memcmp(C1, C2, (size_t)(M * N) * es) == 0, "%s %ldx%ldx%ld f=%d cap %ld: differs from uncapped",
                              is64 ? "f64" : "f32", (long)M, (long)N, (long)K, f, (long)caps[c]);
                free(raw);
            }
            free(A); free(B); free(C0); free(C1); free(C2); free(full);
        }
    }
}
END_TEST

static Suite *gemm_suite(void)
{
    Suite *s = suite_create("gemm");
    TCase *small = tcase_create("small");
    tcase_set_timeout(small, 300);
    tcase_add_test(small, test_random_small_f32);
    tcase_add_test(small, test_random_small_f64);
    tcase_add_loop_test(small, test_edges, 0, 2);
    tcase_add_test(small, test_k_zero);
    tcase_add_loop_test(small, test_k_split_bit_identical, 0, 2);
    tcase_add_loop_test(small, test_capped_bit_identical, 0, 2);
    suite_add_tcase(s, small);
    TCase *large = tcase_create("large");
    tcase_set_timeout(large, 600);
    tcase_add_loop_test(large, test_large, 0, 8);
    suite_add_tcase(s, large);
    return s;
}

int main(void) { return tu_run_suite(gemm_suite()); }
