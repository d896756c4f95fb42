/* test_kernels.c — the transformer kernels with tricky indexing (runtime/kernels/ops.c and
 * gemm.c), compiled natively (and so under ASan + UBSan in the sanitizer build, which the
 * bitcode the compiler embeds is not).
 *
 * Why it exists: gradient checks compare a kernel with its own forward, so a forward that
 * permutes the wrong axes, or reads the wrong matrix of a broadcast batch, can pass them. Here
 * random geometries run against naive loops in double: the N-d transpose, batched GEMM with
 * broadcast batch strides (scratch at a misaligned start with guard bytes after it), softmax
 * and log_softmax on an inner axis, layer_norm and its two gradients; and the accuracy of the
 * vectorisable f32 exp and erf (vmath.h) over the float range.
 */
#include "testutil.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/kernels/gemm.c"
#include "../runtime/kernels/ops.c"

static uint64_t rs = 0x2545F4914F6CDD1DULL;
static uint64_t rnext(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return rs;
}
static int64_t rint_(int64_t lo, int64_t hi) { return lo + (int64_t)(rnext() % (uint64_t)(hi - lo + 1)); }
static double rval(void) { return (double)(rnext() >> 11) / 9007199254740992.0 * 2 - 1; }

/* each loop iteration its own geometry (Check may fork before every test) */
static void seed(int i) { rs = 0x2545F4914F6CDD1DULL ^ ((uint64_t)i + 1) * 0x9E3779B97F4A7C15ULL; }

static double *rand_d(int64_t n)
{
    double *p = malloc((size_t)(n ? n : 1) * sizeof *p);
    for (int64_t i = 0; i < n; i++) p[i] = rval();
    return p;
}

static void close_to(double got, double ref, double tol, const char *what, int64_t i)
{
    ck_assert_msg(fabs(got - ref) <= tol * (1 + fabs(ref)), "%s[%lld]: %.17g vs %.17g", what, (long long)i, got, ref);
}

START_TEST(test_transpose)
{
    seed(_i);
    int rank = (int)rint_(1, 6);
    int64_t dim[6] = {1, 1, 1, 1, 1, 1}, n = 1;
    int perm[6];
    for (int i = 0; i < rank; i++) {
        dim[i] = rint_(1, 4);
        n *= dim[i];
        perm[i] = i;
    }
    for (int i = rank - 1; i > 0; i--) {
        int j = (int)rint_(0, i), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    int64_t instr[6], od[6] = {1, 1, 1, 1, 1, 1}, os[6] = {0};
    for (int i = rank - 1, acc = 1; i >= 0; i--) {
        instr[i] = acc;
        acc *= (int)dim[i];
    }
    for (int i = 0; i < rank; i++) {
        od[6 - rank + i] = dim[perm[i]];
        os[6 - rank + i] = instr[perm[i]];
    }
    double *x = rand_d(n), *y = malloc((size_t)n * sizeof *y);
    mgk_transpose_f64(od[0], od[1], od[2], od[3], od[4], od[5], x, os[0], os[1], os[2], os[3], os[4], os[5], y);
    /* naive: output multi-index -> input offset */
    for (int64_t o = 0; o < n; o++) {
        int64_t rem = o, off = 0;
        for (int i = rank - 1; i >= 0; i--) {
            int64_t idx = rem % dim[perm[i]];
            rem /= dim[perm[i]];
            off += idx * instr[perm[i]];
        }
        ck_assert_msg(y[o] == x[off], "transpose rank %d: element %lld", rank, (long long)o);
    }
    free(x);
    free(y);
}
END_TEST

START_TEST(test_gemm_batched)
{
    seed(_i);
    /* batch [B0, B1]; A broadcast along one axis, B along the other (or neither) */
    int64_t B0 = rint_(1, 3), B1 = rint_(1, 3), M = rint_(1, 20), N = rint_(1, 40), K = rint_(1, 30);
    int ta = (int)rint_(0, 1), tb = (int)rint_(0, 1), mode = _i % 3;
    int64_t a0 = mode == 1 ? 1 : B0, a1 = B1, b0 = B0, b1 = mode == 2 ? 1 : B1;
    int64_t ma = M * K, mb = K * N;
    double *A = rand_d(a0 * a1 * ma), *Bm = rand_d(b0 * b1 * mb);
    float *Af = malloc((size_t)(a0 * a1 * ma) * 4), *Bf = malloc((size_t)(b0 * b1 * mb) * 4);
    for (int64_t i = 0; i < a0 * a1 * ma; i++) Af[i] = (float)A[i];
    for (int64_t i = 0; i < b0 * b1 * mb; i++) Bf[i] = (float)Bm[i];
    int64_t sa0 = a0 > 1 ? a1 * ma : 0, sa1 = a1 > 1 ? ma : 0, sb0 = b0 > 1 ? b1 * mb : 0, sb1 = b1 > 1 ? mb : 0;
    int64_t lda = ta ? M : K, ldb = tb ? K : N;
    int64_t sbytes = mgk_gemm_scratch_bytes(M, N, K, 8);
    unsigned char *raw = malloc((size_t)sbytes + 300);
    memset(raw, 0x5c, (size_t)sbytes + 300);
    double *C = malloc((size_t)(B0 * B1 * M * N) * 8);
    float *Cf = malloc((size_t)(B0 * B1 * M * N) * 4);
    mgk_gemm_batched_f64(1, 1, B0, B1, 0, 0, sa0, sa1, 0, 0, sb0, sb1, M, N, K, A, lda, ta, Bm, ldb, tb, C, raw + 3);
    mgk_gemm_batched_f32(1, 1, B0, B1, 0, 0, sa0, sa1, 0, 0, sb0, sb1, M, N, K, Af, lda, ta, Bf, ldb, tb, Cf, raw + 3);
    for (int64_t i = 0; i < 256; i++) ck_assert_msg(raw[3 + sbytes + i] == 0x5c, "batched gemm wrote past its scratch");
    for (int64_t i0 = 0; i0 < B0; i0++)
        for (int64_t i1 = 0; i1 < B1; i1++) {
            const double *pa = A + i0 * sa0 + i1 * sa1, *pb = Bm + i0 * sb0 + i1 * sb1;
            int64_t c0 = (i0 * B1 + i1) * M * N;
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) {
                    double s = 0;
                    for (int64_t k = 0; k < K; k++)
                        s += (ta ? pa[k * lda + i] : pa[i * lda + k]) * (tb ? pb[j * ldb + k] : pb[k * ldb + j]);
                    close_to(C[c0 + i * N + j], s, 1e-13, "gemm_batched_f64", c0 + i * N + j);
                    close_to(Cf[c0 + i * N + j], s, 1e-5 * (double)K, "gemm_batched_f32", c0 + i * N + j);
                }
        }
    free(A), free(Bm), free(Af), free(Bf), free(C), free(Cf), free(raw);
}
END_TEST

START_TEST(test_softmax_axis)
{
    seed(_i);
    int64_t outer = rint_(1, 4), n = rint_(1, 9), inner = rint_(1, 5), tot = outer * n * inner;
    double *x = rand_d(tot), *y = malloc((size_t)tot * 8), *ly = malloc((size_t)tot * 8);
    double *dy = rand_d(tot), *dx = malloc((size_t)tot * 8), *ldx = malloc((size_t)tot * 8);
    for (int64_t i = 0; i < tot; i++) x[i] *= 5;
    mgk_softmax_f64(outer, n, inner, x, y);
    mgk_log_softmax_f64(outer, n, inner, x, ly);
    mgk_softmax_grad_f64(outer, n, inner, y, dy, dx);
    mgk_log_softmax_grad_f64(outer, n, inner, ly, dy, ldx);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            double s = 0, sdy = 0, sydy = 0;
            for (int64_t c = 0; c < n; c++) s += exp(x[(o * n + c) * inner + i]);
            for (int64_t c = 0; c < n; c++) {
                int64_t k = (o * n + c) * inner + i;
                sdy += dy[k];
                sydy += dy[k] * exp(x[k]) / s;
            }
            for (int64_t c = 0; c < n; c++) {
                int64_t k = (o * n + c) * inner + i;
                double p = exp(x[k]) / s;
                close_to(y[k], p, 1e-14, "softmax", k);
                close_to(ly[k], x[k] - log(s), 1e-14, "log_softmax", k);
                close_to(dx[k], p * (dy[k] - sydy), 1e-13, "softmax_grad", k);
                close_to(ldx[k], dy[k] - p * sdy, 1e-13, "log_softmax_grad", k);
            }
        }
    free(x), free(y), free(ly), free(dy), free(dx), free(ldx);
}
END_TEST

START_TEST(test_layer_norm)
{
    seed(_i);
    int64_t rows = rint_(1, 6), D = rint_(1, 33);
    double eps = 1e-5, *x = rand_d(rows * D), *g = rand_d(D), *b = rand_d(D), *dy = rand_d(rows * D);
    double *y = malloc((size_t)(rows * D) * 8), *dx = malloc((size_t)(rows * D) * 8), *dg = malloc((size_t)D * 8);
    double *rdg = calloc((size_t)D, 8);
    mgk_layer_norm_f64(rows, D, x, g, b, eps, y);
    mgk_layer_norm_grad_input_f64(rows, D, x, g, dy, eps, dx);
    mgk_layer_norm_grad_scale_f64(rows, D, x, dy, eps, dg);
    for (int64_t r = 0; r < rows; r++) {
        const double *px = x + r * D, *pd = dy + r * D;
        double mu = 0, var = 0, a = 0, bb = 0;
        for (int64_t j = 0; j < D; j++) mu += px[j] / (double)D;
        for (int64_t j = 0; j < D; j++) var += (px[j] - mu) * (px[j] - mu) / (double)D;
        double rs_ = 1 / sqrt(var + eps);
        for (int64_t j = 0; j < D; j++) {
            double xh = (px[j] - mu) * rs_;
            close_to(y[r * D + j], xh * g[j] + b[j], 1e-13, "layer_norm", r * D + j);
            a += pd[j] * g[j];
            bb += pd[j] * g[j] * xh;
            rdg[j] += pd[j] * xh;
        }
        for (int64_t j = 0; j < D; j++) {
            double xh = (px[j] - mu) * rs_;
            close_to(dx[r * D + j], rs_ * (pd[j] * g[j] - a / (double)D - xh * bb / (double)D), 1e-11,
                     "layer_norm_grad_input", r * D + j);
        }
    }
    for (int64_t j = 0; j < D; j++) close_to(dg[j], rdg[j], 1e-12, "layer_norm_grad_scale", j);
    free(x), free(g), free(b), free(dy), free(y), free(dx), free(dg), free(rdg);
}
END_TEST

/* mgk_sum_to over a batch cut into parts, the first part by mgk_sum_to and the rest by
 * mgk_sum_to_acc into the same output (the micro-batched step's bias gradients), has the bits of
 * one mgk_sum_to over the whole batch: the batch axis d0 is summed (stride 0) and the output
 * keeps at least one other axis (compiler/microbatch.c accumulates only such sums). */
START_TEST(test_sum_to_acc)
{
    rs += (uint64_t)_i * 7777;
    for (int is64 = 0; is64 < 2; is64++) {
        int64_t es = is64 ? 8 : 4, parts = 2 + _i % 3, d[4] = {parts * (1 + (int64_t)(rnext() % 5)), 1 + (int64_t)(rnext() % 6),
                                                           1 + (int64_t)(rnext() % 6), 2 + (int64_t)(rnext() % 40)};
        int kept = 1 + (int)(rnext() % 7); /* which of axes 1..3 the output keeps (bit mask, never none) */
        int64_t st[4] = {0, 0, 0, 0}, on = 1;
        for (int a = 3; a >= 1; a--)
            if (kept >> (a - 1) & 1) st[a] = on, on *= d[a];
        int64_t nx = d[0] * d[1] * d[2] * d[3], row = nx / d[0];
        char *x = malloc((size_t)(nx * es)), *whole = malloc((size_t)(on * es)), *split = malloc((size_t)(on * es));
        for (int64_t i = 0; i < nx; i++) {
            double v = (double)(int64_t)(rnext() % 2000001 - 1000000) / 3e5;
            if (is64) ((double *)x)[i] = v;
            else ((float *)x)[i] = (float)v;
        }
        int64_t pn = d[0] / parts;
        if (is64) {
            mgk_sum_to_f64(d[0], d[1], d[2], d[3], (double *)x, st[0], st[1], st[2], st[3], (double *)whole, on);
            for (int64_t k = 0; k < parts; k++)
                (k ? mgk_sum_to_acc_f64 : mgk_sum_to_f64)(pn, d[1], d[2], d[3], (double *)x + k * pn * row, st[0], st[1],
                                                         st[2], st[3], (double *)split, on);
        } else {
            mgk_sum_to_f32(d[0], d[1], d[2], d[3], (float *)x, st[0], st[1], st[2], st[3], (float *)whole, on);
            for (int64_t k = 0; k < parts; k++)
                (k ? mgk_sum_to_acc_f32 : mgk_sum_to_f32)(pn, d[1], d[2], d[3], (float *)x + k * pn * row, st[0], st[1],
                                                         st[2], st[3], (float *)split, on);
        }
        ck_assert_msg(!memcmp(whole, split, (size_t)(on * es)), "%s sum_to in %lld parts differs (kept axes %d)",
                      is64 ? "f64" : "f32", (long long)parts, kept);
        free(x), free(whole), free(split);
    }
}
END_TEST

/* Error of a float result against the double-precision reference, in units in the last place
 * of the reference rounded to float (subnormal spacing below the normal range). */
static double ulps(float got, double ref)
{
    if (isnan(ref)) return isnan(got) ? 0 : INFINITY;
    if (isinf(ref)) return got == (float)ref ? 0 : INFINITY;
    float r = fabsf((float)ref);
    double ulp = r < 1.17549435e-38f ? 0x1p-149 : (double)nextafterf(r, INFINITY) - r;
    return fabs((double)got - ref) / ulp;
}

/* vmath.h's f32 exp and erf against libm's double versions on every 509th float bit pattern
 * (8.4 million values from -inf to +inf, subnormals included), and the special values. */
START_TEST(test_vmath)
{
    double worst_exp = 0, worst_erf = 0;
    float at_exp = 0, at_erf = 0;
    for (uint64_t i = (uint64_t)_i; i < (1ull << 32); i += 509) {
        uint32_t bits = (uint32_t)i;
        float x;
        memcpy(&x, &bits, sizeof x);
        if (isnan(x)) continue;
        double e = ulps(mgk_expf(x), exp((double)x)), f = ulps(mgk_erff(x), erf((double)x));
        if (e > worst_exp) worst_exp = e, at_exp = x;
        if (f > worst_erf) worst_erf = f, at_erf = x;
    }
    ck_assert_msg(worst_exp <= 1.5, "mgk_expf is %.3f ulp off at %a", worst_exp, (double)at_exp);
    ck_assert_msg(worst_erf <= 3.0, "mgk_erff is %.3f ulp off at %a", worst_erf, (double)at_erf);
    ck_assert(isnan(mgk_expf(NAN)) && isnan(mgk_erff(NAN)));
    ck_assert(mgk_expf(INFINITY) == INFINITY && mgk_expf(-INFINITY) == 0 && mgk_expf(89.0f) == INFINITY);
    ck_assert(mgk_erff(INFINITY) == 1 && mgk_erff(-INFINITY) == -1 && mgk_erff(5.0f) == 1);
    ck_assert(mgk_erff(0.0f) == 0 && signbit(mgk_erff(-0.0f)) && mgk_expf(0.0f) == 1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels");
    TCase *tc = tcase_create("transformer");
    tcase_add_loop_test(tc, test_transpose, 0, 40);
    tcase_add_loop_test(tc, test_gemm_batched, 0, 30);
    tcase_add_loop_test(tc, test_softmax_axis, 0, 30);
    tcase_add_loop_test(tc, test_layer_norm, 0, 30);
    tcase_add_loop_test(tc, test_sum_to_acc, 0, 30);
    suite_add_tcase(s, tc);
    TCase *tm = tcase_create("vmath");
    tcase_add_loop_test(tm, test_vmath, 0, 2); /* two offsets into the bit patterns */
    suite_add_tcase(s, tm);
    return tu_run_suite(s);
}
