/* test_conv.c — the convolution and pooling kernels (runtime/kernels/conv.c), compiled natively
 * (and so under ASan + UBSan in the sanitizer build, which the bitcode the compiler embeds is not).
 *
 * Why it exists: the planner reserves exactly mgk_conv_scratch_bytes() for a convolution's
 * im2col patches and GEMM packing; a kernel that wrote past that would silently corrupt another
 * tensor of the workspace. Each random geometry (stride, padding, dilation, groups, 1x1 direct
 * and rectangular kernels) runs the three convolution kernels in f32 and f64 with the scratch at
 * a misaligned start and guard bytes after it, compares with naive loops in double, and checks
 * that a second call is bitwise identical. Pooling kernels run on exactly sized buffers against
 * naive loops too. Gradients themselves are checked end to end in test_gradcheck.c.
 */
#include "testutil.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/kernels/conv.c"
#include "../runtime/kernels/gemm.c"

static uint64_t rs = 88172645463325252ULL;
static uint64_t rnext(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return rs;
}
static int64_t rint_(int64_t lo, int64_t hi) { return lo + (int64_t)(rnext() % (uint64_t)(hi - lo + 1)); }
static double rval(void) { return (double)(rnext() >> 11) / 9007199254740992.0 * 2 - 1; }

static double get(const void *p, int64_t i, int is64) { return is64 ? ((const double *)p)[i] : ((const float *)p)[i]; }

static void *rand_buf(int64_t n, int is64)
{
    void *p = malloc((size_t)n * (is64 ? 8 : 4));
    for (int64_t i = 0; i < n; i++) {
        if (is64) ((double *)p)[i] = rval();
        else ((float *)p)[i] = (float)rval();
    }
    return p;
}

/* the IR's mg_window_out, restated so this test needs nothing but the kernels */
static int64_t mg_window_out_ref(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dil)
{
    int64_t room = in + 2 * pad - (dil * (k - 1) + 1);
    return room < 0 ? 0 : room / stride + 1;
}

enum { GUARD = 256 };

/* scratch of exactly `bytes` at an odd offset, followed by guard bytes */
static unsigned char *scratch_new(int64_t bytes, void **start)
{
    unsigned char *raw = malloc((size_t)bytes + GUARD + 8);
    memset(raw, 0x5c, (size_t)bytes + GUARD + 8);
    *start = raw + 3;
    return raw;
}
static void scratch_check(unsigned char *raw, int64_t bytes, const char *what)
{
    int64_t i = GUARD;
    while (i > 0 && raw[3 + bytes + i - 1] == 0x5c) i--;
    ck_assert_msg(i == 0, "%s wrote %lld bytes past its scratch", what, (long long)i);
    ck_assert_msg(raw[0] == 0x5c && raw[1] == 0x5c && raw[2] == 0x5c, "%s wrote before its scratch", what);
}

/* input index of output (oh, ow) and kernel tap (i, j), or -1 in the padding */
static int64_t tap(const mgk_conv_geom *g, int64_t n, int64_t c, int64_t oh, int64_t ow, int64_t i, int64_t j)
{
    int64_t ih = oh * g->stride - g->pad + i * g->dil, iw = ow * g->stride - g->pad + j * g->dil;
    if (ih < 0 || ih >= g->H || iw < 0 || iw >= g->W) return -1;
    return ((n * g->C + c) * g->H + ih) * g->W + iw;
}

/* (each check asserts once: a ck_assert per element would have Check write to its pipe per element) */
static void check_close(const void *got, const double *ref, const double *mag, int64_t n, int is64, const char *what)
{
    double u = is64 ? 1.1e-16 : 6e-8;
    int64_t i = 0;
    while (i < n && fabs(get(got, i, is64) - ref[i]) <= 64 * u * (mag[i] + 1e-30) * 16 + 1e-300) i++;
    ck_assert_msg(i == n, "%s[%lld]: %.17g vs %.17g", what, (long long)i, get(got, i, is64), ref[i]);
}

static void set(void *p, int64_t i, double v, int is64)
{
    if (is64) ((double *)p)[i] = v;
    else ((float *)p)[i] = (float)v;
}

static void gemm_any(int is64, int64_t M, int64_t N, int64_t K, const void *A, int64_t lda, int ta, const void *B,
                     int64_t ldb, int tb, void *C, int64_t ldc, int beta, void *scratch)
{
    if (is64) mgk_gemm_f64(M, N, K, A, lda, ta, B, ldb, tb, C, ldc, beta, scratch);
    else mgk_gemm_f32(M, N, K, A, lda, ta, B, ldb, tb, C, ldc, beta, scratch);
}

/* The kernels as they were before the patch matrix came in blocks (conv.h, mgk_conv_chunking),
 * restated from their definition: per group of mgk_conv_batch() images and per group, the whole
 * patch matrix (naive im2col), one GEMM, and for the input gradient a col2im that adds taps in
 * (c, i, j, oh, ow) order into zeros. The chunked kernels must match this bit for bit. */
static void unchunked(int kind, const mgk_conv_geom *g, int is64, const void *x, const void *w, const void *dy,
                      void *out)
{
    int64_t es = is64 ? 8 : 4, Cg = g->C / g->groups, Cog = g->Co / g->groups, K = Cg * g->KH * g->KW;
    int64_t P = g->OH * g->OW, nb = mgk_conv_batch(g);
    void *col = malloc((size_t)(K * nb * P * es)), *m = malloc((size_t)(Cog * nb * P * es));
    void *gs = malloc((size_t)mgk_gemm_scratch_bytes(K > Cog ? K : Cog, K > nb * P ? K : nb * P,
                                                     K > nb * P ? K : nb * P, es));
    if (kind == MGK_CONV_DX) memset(out, 0, (size_t)(g->N * g->C * g->H * g->W * es));
    for (int64_t n0 = 0; n0 < g->N; n0 += nb) {
        int64_t nbb = g->N - n0 < nb ? g->N - n0 : nb, cols = nbb * P;
        for (int64_t gr = 0; gr < g->groups; gr++) {
            for (int64_t b = 0; b < nbb; b++) /* patches, and dy gathered as [Cog, cols] */
                for (int64_t p = 0; p < P; p++) {
                    for (int64_t r = 0; r < K; r++) {
                        int64_t xi = tap(g, n0 + b, gr * Cg + r / (g->KH * g->KW), p / g->OW, p % g->OW,
                                         r / g->KW % g->KH, r % g->KW);
                        set(col, r * cols + b * P + p, xi < 0 ? 0 : get(x, xi, is64), is64);
                    }
                    for (int64_t co = 0; co < Cog; co++)
                        set(m, co * cols + b * P + p, get(dy, ((n0 + b) * g->Co + gr * Cog + co) * P + p, is64), is64);
                }
            const char *wg = (const char *)w + gr * Cog * K * es;
            if (kind == MGK_CONV_FWD) {
                gemm_any(is64, Cog, cols, K, wg, K, 0, col, cols, 0, m, cols, 0, gs);
                for (int64_t b = 0; b < nbb; b++)
                    for (int64_t co = 0; co < Cog; co++)
                        for (int64_t p = 0; p < P; p++)
                            set(out, ((n0 + b) * g->Co + gr * Cog + co) * P + p, get(m, co * cols + b * P + p, is64),
                                is64);
            } else if (kind == MGK_CONV_DW) {
                gemm_any(is64, Cog, K, cols, m, cols, 0, col, cols, 1, (char *)out + gr * Cog * K * es, K, n0 > 0, gs);
            } else {
                gemm_any(is64, K, cols, Cog, wg, K, 1, m, cols, 0, col, cols, 0, gs);
                for (int64_t b = 0; b < nbb; b++)
                    for (int64_t r = 0; r < K; r++)
                        for (int64_t p = 0; p < P; p++) {
                            int64_t xi = tap(g, n0 + b, gr * Cg + r / (g->KH * g->KW), p / g->OW, p % g->OW,
                                             r / g->KW % g->KH, r % g->KW);
                            if (xi >= 0) set(out, xi, get(out, xi, is64) + get(col, r * cols + b * P + p, is64), is64);
                        }
            }
        }
    }
    free(col), free(m), free(gs);
}

/* Runs the three kernels on geometry g (twice each, scratch exactly as declared, guard bytes),
 * compares with naive loops in double, and if `bitwise` with the unchunked kernels bit for bit. */
static void conv_case(const mgk_conv_geom *gp, int is64, int bitwise)
{
    mgk_conv_geom g = *gp;
    int64_t Cg = g.C / g.groups, Cog = g.Co / g.groups, es = is64 ? 8 : 4;
    int64_t nx = g.N * g.C * g.H * g.W, nw = g.Co * Cg * g.KH * g.KW, ny = g.N * g.Co * g.OH * g.OW;
    void *x = rand_buf(nx, is64), *w = rand_buf(nw, is64), *dy = rand_buf(ny, is64);
    void *y = rand_buf(ny, is64), *dx = rand_buf(nx, is64), *dw = rand_buf(nw, is64);
    double *ry = calloc((size_t)ny, 8), *my = calloc((size_t)ny, 8), *rdx = calloc((size_t)nx, 8),
           *mdx = calloc((size_t)nx, 8), *rdw = calloc((size_t)nw, 8), *mdw = calloc((size_t)nw, 8);
    for (int64_t n = 0; n < g.N; n++)
        for (int64_t co = 0; co < g.Co; co++)
            for (int64_t oh = 0; oh < g.OH; oh++)
                for (int64_t ow = 0; ow < g.OW; ow++) {
                    int64_t yi = ((n * g.Co + co) * g.OH + oh) * g.OW + ow, gr = co / Cog;
                    for (int64_t c = 0; c < Cg; c++)
                        for (int64_t i = 0; i < g.KH; i++)
                            for (int64_t j = 0; j < g.KW; j++) {
                                int64_t xi = tap(&g, n, gr * Cg + c, oh, ow, i, j);
                                if (xi < 0) continue;
                                int64_t wi = ((co * Cg + c) * g.KH + i) * g.KW + j;
                                double a = get(x, xi, is64), b = get(w, wi, is64), d = get(dy, yi, is64);
                                ry[yi] += a * b, my[yi] += fabs(a * b);
                                rdx[xi] += b * d, mdx[xi] += fabs(b * d);
                                rdw[wi] += a * d, mdw[wi] += fabs(a * d);
                            }
                }
    const char *names[3] = {"conv2d", "conv2d_grad_input", "conv2d_grad_weight"};
    for (int kind = 0; kind < 3; kind++) {
        int64_t bytes = mgk_conv_scratch_bytes(kind, &g, es);
        void *s;
        unsigned char *raw = scratch_new(bytes, &s);
        void *out = kind == 0 ? y : kind == 1 ? dx : dw;
        int64_t nout = kind == 0 ? ny : kind == 1 ? nx : nw;
        for (int rep = 0; rep < 2; rep++) {
            void *first = NULL;
            if (rep) {
                first = malloc((size_t)(nout * es));
                memcpy(first, out, (size_t)(nout * es));
            }
#define GEOM g.N, g.C, g.H, g.W, g.Co, g.KH, g.KW, g.OH, g.OW, g.stride, g.pad, g.dil, g.groups
            if (is64) {
                if (kind == 0) mgk_conv2d_f64(GEOM, x, w, y, s);
                else if (kind == 1) mgk_conv2d_grad_input_f64(GEOM, dy, w, dx, s);
                else mgk_conv2d_grad_weight_f64(GEOM, x, dy, dw, s);
            } else {
                if (kind == 0) mgk_conv2d_f32(GEOM, x, w, y, s);
                else if (kind == 1) mgk_conv2d_grad_input_f32(GEOM, dy, w, dx, s);
                else mgk_conv2d_grad_weight_f32(GEOM, x, dy, dw, s);
            }
            scratch_check(raw, bytes, names[kind]);
            if (rep) {
                ck_assert_msg(!memcmp(first, out, (size_t)(nout * es)), "%s is not deterministic", names[kind]);
                free(first);
            }
        }
        free(raw);
        if (bitwise) {
            void *ref = malloc((size_t)(nout * es));
            unchunked(kind, &g, is64, x, w, dy, ref);
            int64_t i = 0;
            while (i < nout && !memcmp((char *)ref + i * es, (char *)out + i * es, (size_t)es)) i++;
            ck_assert_msg(i == nout, "%s %s[%lld]: %.17g, unchunked %.17g", is64 ? "f64" : "f32", names[kind],
                          (long long)i, get(out, i, is64), get(ref, i, is64));
            free(ref);
        }
    }
    check_close(y, ry, my, ny, is64, "conv2d");
    check_close(dx, rdx, mdx, nx, is64, "conv2d_grad_input");
    check_close(dw, rdw, mdw, nw, is64, "conv2d_grad_weight");
    free(x), free(w), free(dy), free(y), free(dx), free(dw);
    free(ry), free(my), free(rdx), free(mdx), free(rdw), free(mdw);
}

START_TEST(test_conv_kernels)
{
    rs += (uint64_t)_i * 7919;
    for (int is64 = 0; is64 < 2; is64++) {
        mgk_conv_geom g;
        g.groups = rint_(1, 3);
        g.C = g.groups * rint_(1, 3);
        g.Co = g.groups * rint_(1, 3);
        /* every fifth geometry has more images than one GEMM takes (conv.h, mgk_conv_batch) */
        g.N = _i % 5 == 1 ? rint_(4, 9) : rint_(1, 3);
        g.KH = rint_(1, 4);
        g.KW = rint_(1, 4);
        g.stride = rint_(1, 3);
        g.pad = rint_(0, 2);
        g.dil = rint_(1, 2);
        if (_i % 4 == 0) g.KH = g.KW = 1, g.stride = 1, g.pad = 0; /* the direct path */
        g.H = g.dil * (g.KH - 1) + 1 + rint_(0, _i % 5 == 1 ? 12 : 7);
        g.W = g.dil * (g.KW - 1) + 1 + rint_(0, _i % 5 == 1 ? 12 : 7);
        g.OH = mg_window_out_ref(g.H, g.KH, g.stride, g.pad, g.dil);
        g.OW = mg_window_out_ref(g.W, g.KW, g.stride, g.pad, g.dil);
        conv_case(&g, is64, _i % 8 == 1);
    }
}
END_TEST

/* Geometries whose patch matrix is larger than MGK_CONV_PATCH_BYTES, so the uncapped kernels
 * build it in blocks (conv.h): _i 0-3 split the pixels (a block boundary inside an output row or
 * whole output rows, a last partial block, two images), 4-5 also the patch rows (fewer than
 * MGK_CONV_MIN_COLS columns fit), 6-7 the patch rows of several small images per GEMM; random
 * stride, padding, dilation and groups, f32 and f64. Each must equal the unchunked kernels bit
 * for bit, and the test checks that it really is blocked the intended way. */
START_TEST(test_conv_chunks)
{
    rs += (uint64_t)_i * 15485863;
    for (int is64 = 0; is64 < 2; is64++) {
        int64_t es = is64 ? 8 : 4, cap = MGK_CONV_PATCH_BYTES / es;
        mgk_conv_geom g;
        g.groups = rint_(1, 2);
        g.Co = g.groups * rint_(1, 3);
        g.stride = rint_(1, 2);
        g.pad = rint_(0, 2);
        g.dil = rint_(1, 2);
        g.KH = rint_(2, 3);
        g.KW = rint_(1, 3);
        int64_t kk = g.KH * g.KW, K, ext_h = g.dil * (g.KH - 1) + 1 - 2 * g.pad,
                ext_w = g.dil * (g.KW - 1) + 1 - 2 * g.pad;
        if (_i < 4) { /* pixels in blocks: K * P > cap, K * MIN_COLS <= cap */
            K = cap / 256 / 2 + rint_(0, cap / 256 / 2);
            g.N = 1 + _i % 2;
            int64_t oh = rint_(17, 40), ow = cap / K / oh + 1 + rint_(0, 300 / oh);
            g.H = (oh - 1) * g.stride + ext_h, g.W = (ow - 1) * g.stride + ext_w;
        } else if (_i < 6) { /* rows in blocks too: K * MIN_COLS > cap */
            K = cap / MGK_CONV_MIN_COLS + 1 + rint_(0, 200);
            g.N = 1;
            int64_t oh = rint_(16, 20), ow = rint_(17, 22);
            g.H = (oh - 1) * g.stride + ext_h, g.W = (ow - 1) * g.stride + ext_w;
        } else { /* small images, several per GEMM, rows in blocks */
            g.N = rint_(9, 13);
            int64_t oh = rint_(2, 4), ow = rint_(3, 4), nb = (128 + oh * ow - 1) / (oh * ow);
            int64_t cols = (nb < g.N ? nb : g.N) * oh * ow;
            K = cap / (cols < MGK_CONV_MIN_COLS ? cols : MGK_CONV_MIN_COLS) + 1 + rint_(0, 300);
            g.H = (oh - 1) * g.stride + ext_h, g.W = (ow - 1) * g.stride + ext_w;
        }
        if (g.H < ext_h + 2 * g.pad) g.H = ext_h + 2 * g.pad; /* at least one tap inside */
        if (g.W < ext_w + 2 * g.pad) g.W = ext_w + 2 * g.pad;
        g.C = g.groups * ((K + kk - 1) / kk);
        g.OH = mg_window_out_ref(g.H, g.KH, g.stride, g.pad, g.dil);
        g.OW = mg_window_out_ref(g.W, g.KW, g.stride, g.pad, g.dil);
        mgk_conv_chunk ch = mgk_conv_chunking(MGK_CONV_FWD, &g, es, 0);
        int64_t Kg = g.C / g.groups * kk, cols = g.OH * g.OW * mgk_conv_batch(&g);
        ck_assert_msg(ch.rows * ch.cols <= cap && ch.gemm_cap == 0, "a block of %lld x %lld", (long long)ch.rows,
                      (long long)ch.cols);
        if (_i < 4)
            ck_assert_msg(ch.rows == Kg && ch.cols < cols && cols % ch.cols, "pixels not split: %lld/%lld",
                          (long long)ch.cols, (long long)cols);
        else
            ck_assert_msg(ch.rows < Kg && Kg % ch.rows && (_i < 6 ? ch.cols < cols : mgk_conv_batch(&g) > 1),
                          "rows not split: %lld/%lld, cols %lld/%lld", (long long)ch.rows, (long long)Kg,
                          (long long)ch.cols, (long long)cols);
        conv_case(&g, is64, 1);
    }
}
END_TEST

/* One kernel with the given blocks, scratch exactly mgk_conv_chunk_scratch_bytes at an odd start
 * with guard bytes after it. */
static void run_blocked(int kind, int is64, const mgk_conv_geom *gp, const void *x, const void *w, const void *dy,
                        void *out, mgk_conv_chunk ch)
{
    mgk_conv_geom g = *gp;
    int64_t bytes = mgk_conv_chunk_scratch_bytes(kind, &g, is64 ? 8 : 4, ch);
    void *s;
    unsigned char *raw = scratch_new(bytes, &s);
    if (is64) {
        if (kind == MGK_CONV_FWD) mgk_conv2d_blocked_f64(GEOM, x, w, out, s, ch);
        else if (kind == MGK_CONV_DX) mgk_conv2d_grad_input_blocked_f64(GEOM, dy, w, out, s, ch);
        else mgk_conv2d_dw_f64(GEOM, x, dy, out, s, 0, ch);
    } else {
        if (kind == MGK_CONV_FWD) mgk_conv2d_blocked_f32(GEOM, x, w, out, s, ch);
        else if (kind == MGK_CONV_DX) mgk_conv2d_grad_input_blocked_f32(GEOM, dy, w, out, s, ch);
        else mgk_conv2d_dw_f32(GEOM, x, dy, out, s, 0, ch);
    }
    scratch_check(raw, bytes, "a convolution kernel with given blocks");
    free(raw);
}

/* Bit-identity needs no rule on the blocks: patch blocks of any rows and columns (1, 7, 100,
 * 300, the whole axis, random; boundaries inside output rows and across images), with the GEMM
 * capped or not, give the three kernels' unchunked bits exactly, f32 and f64: the forward's and
 * the weight gradient's GEMMs continue each element's chain over K (gemm.c), and the input
 * gradient's col2im adds each element's taps in increasing patch row (conv_impl.h). Random
 * stride, padding, dilation, groups; _i % 3 == 2: small images, several per GEMM. */
START_TEST(test_conv_odd_blocks)
{
    rs += (uint64_t)_i * 40503;
    for (int is64 = 0; is64 < 2; is64++) {
        int64_t es = is64 ? 8 : 4;
        mgk_conv_geom g;
        g.groups = rint_(1, 2);
        g.Co = g.groups * rint_(1, 4);
        g.C = g.groups * rint_(3, 12);
        g.KH = rint_(1, 3), g.KW = rint_(2, 3), g.stride = rint_(1, 2), g.pad = rint_(0, 2), g.dil = rint_(1, 2);
        int small = _i % 3 == 2, side = small ? rint_(2, 5) : rint_(9, 20);
        g.N = small ? rint_(5, 12) : rint_(1, 2);
        g.H = g.dil * (g.KH - 1) + 1 + side, g.W = g.dil * (g.KW - 1) + 1 + side + rint_(0, 3);
        g.OH = mg_window_out_ref(g.H, g.KH, g.stride, g.pad, g.dil);
        g.OW = mg_window_out_ref(g.W, g.KW, g.stride, g.pad, g.dil);
        int64_t K = g.C / g.groups * g.KH * g.KW, P = g.OH * g.OW * mgk_conv_batch(&g);
        int64_t nx = g.N * g.C * g.H * g.W, nw = g.Co * (g.C / g.groups) * g.KH * g.KW, ny = g.N * g.Co * g.OH * g.OW;
        int64_t nout[3] = {ny, nx, nw};
        void *x = rand_buf(nx, is64), *w = rand_buf(nw, is64), *dy = rand_buf(ny, is64);
        const int64_t sizes[] = {1, 7, 100, 300};
        for (int kind = 0; kind < 3; kind++) {
            void *ref = malloc((size_t)(nout[kind] * es)), *got = malloc((size_t)(nout[kind] * es));
            unchunked(kind, &g, is64, x, w, dy, ref);
            for (int t = 0; t < 7; t++) {
                mgk_conv_chunk ch;
                ch.rows = t < 4 ? sizes[t] : t == 4 ? K : rint_(1, K);
                ch.cols = t < 4 ? sizes[3 - t] : t == 5 ? P : rint_(1, P);
                ch.rows = ch.rows > K ? K : ch.rows;
                ch.cols = ch.cols > P ? P : ch.cols;
                ch.gemm_cap = t % 2 ? 0 : rint_(1, 40000); /* (capped: smaller GEMM blocks) */
                memset(got, 0xa5, (size_t)(nout[kind] * es)); /* (nothing may depend on it) */
                run_blocked(kind, is64, &g, x, w, dy, got, ch);
                int64_t i = 0;
                while (i < nout[kind] && !memcmp((char *)ref + i * es, (char *)got + i * es, (size_t)es)) i++;
                ck_assert_msg(i == nout[kind], "%s kind %d, blocks %lld x %lld of %lld x %lld: [%lld] %.17g, unchunked %.17g",
                              is64 ? "f64" : "f32", kind, (long long)ch.rows, (long long)ch.cols, (long long)K,
                              (long long)P, (long long)i, get(got, i, is64), get(ref, i, is64));
            }
            free(ref), free(got);
        }
        free(x), free(w), free(dy);
    }
}
END_TEST

/* The patch panels packed straight from the images (conv_impl.h: mgk_conv_pack_b, the forward's,
 * and mgk_conv_pack_bt, the weight gradient's, transposed; the kernels use them on images at most
 * 8 pixels wide) against the patch block built by im2col and packed by the GEMM, on any width,
 * stride, padding and dilation, any block of patch rows and columns (across images) and GEMM
 * blocks: the same bits. */
START_TEST(test_conv_fused_pack)
{
    rs += (uint64_t)_i * 7919;
    for (int is64 = 0; is64 < 2; is64++) {
        int64_t es = is64 ? 8 : 4;
        mgk_conv_geom g;
        g.groups = 1, g.C = rint_(1, 6), g.Co = rint_(1, 13), g.N = rint_(1, 6);
        g.KH = rint_(1, 4), g.KW = rint_(1, 4), g.stride = rint_(1, 3), g.pad = rint_(0, 2), g.dil = rint_(1, 2);
        g.H = g.dil * (g.KH - 1) + 1 + rint_(0, 9), g.W = g.dil * (g.KW - 1) + 1 + rint_(0, _i % 2 ? 40 : 9);
        g.OH = mg_window_out_ref(g.H, g.KH, g.stride, g.pad, g.dil);
        g.OW = mg_window_out_ref(g.W, g.KW, g.stride, g.pad, g.dil);
        int64_t K = g.C * g.KH * g.KW, cols = g.N * g.OH * g.OW;
        int64_t r0 = rint_(0, K - 1), rn = rint_(1, K - r0), p0 = rint_(0, cols - 1), pn = rint_(1, cols - p0);
        int64_t cap = _i % 3 ? rint_(1, 40000) : 0;
        void *x = rand_buf(g.N * g.C * g.H * g.W, is64), *w = rand_buf(g.Co * K, is64);
        void *col = malloc((size_t)(rn * pn * es)), *want = malloc((size_t)(g.Co * pn * es));
        void *got = malloc((size_t)(g.Co * pn * es));
        void *gs = malloc((size_t)mgk_gemm_capped_scratch_bytes(g.Co, pn, rn, es, cap));
        if (is64) {
            mgk_conv_block_f64(&g, g.N, r0, r0 + rn, p0, p0 + pn, x, g.C * g.H * g.W, col, 0);
            mgk_gemm_capped_f64(g.Co, pn, rn, (double *)w + r0, K, 0, col, pn, 0, want, pn, 0, gs, cap);
            mgk_conv_pack_ctx_f64 cx = {&g, x, g.C * g.H * g.W, r0, p0};
            mgk_gemm_packed_f64(g.Co, pn, rn, (double *)w + r0, K, 0, mgk_conv_pack_b_f64, &cx, got, pn, 0, gs, cap);
        } else {
            mgk_conv_block_f32(&g, g.N, r0, r0 + rn, p0, p0 + pn, x, g.C * g.H * g.W, col, 0);
            mgk_gemm_capped_f32(g.Co, pn, rn, (float *)w + r0, K, 0, col, pn, 0, want, pn, 0, gs, cap);
            mgk_conv_pack_ctx_f32 cx = {&g, x, g.C * g.H * g.W, r0, p0};
            mgk_gemm_packed_f32(g.Co, pn, rn, (float *)w + r0, K, 0, mgk_conv_pack_b_f32, &cx, got, pn, 0, gs, cap);
        }
        /* the weight gradient's: op(B) = the block transposed (where the tap table holds the image) */
        void *dy = rand_buf(g.Co * pn, is64), *dwant = malloc((size_t)(g.Co * rn * es)), *dgot = malloc((size_t)(g.Co * rn * es));
        void *gt = malloc((size_t)mgk_gemm_capped_scratch_bytes(g.Co, rn, pn, es, cap));
        int tab = g.KH * g.KW * g.OH * g.OW <= MGK_CONV_TAP_TABLE;
        if (is64 && tab) {
            mgk_gemm_capped_f64(g.Co, rn, pn, dy, pn, 0, col, pn, 1, dwant, rn, 0, gt, cap);
            mgk_conv_pack_ctx_f64 cx = {&g, x, g.C * g.H * g.W, r0, p0};
            mgk_gemm_packed_f64(g.Co, rn, pn, dy, pn, 0, mgk_conv_pack_bt_f64, &cx, dgot, rn, 0, gt, cap);
        } else if (tab) {
            mgk_gemm_capped_f32(g.Co, rn, pn, dy, pn, 0, col, pn, 1, dwant, rn, 0, gt, cap);
            mgk_conv_pack_ctx_f32 cx = {&g, x, g.C * g.H * g.W, r0, p0};
            mgk_gemm_packed_f32(g.Co, rn, pn, dy, pn, 0, mgk_conv_pack_bt_f32, &cx, dgot, rn, 0, gt, cap);
        }
        ck_assert_msg(!tab || !memcmp(dwant, dgot, (size_t)(g.Co * rn * es)), "%s: weight gradient's packing, %lldx%lld image",
                      is64 ? "f64" : "f32", (long long)g.H, (long long)g.W);
        free(dy), free(dwant), free(dgot), free(gt);
        ck_assert_msg(!memcmp(want, got, (size_t)(g.Co * pn * es)),
                      "%s: %lldx%lld image, %lldx%lld kernel, stride %lld pad %lld dil %lld, rows %lld+%lld, columns %lld+%lld",
                      is64 ? "f64" : "f32", (long long)g.H, (long long)g.W, (long long)g.KH, (long long)g.KW,
                      (long long)g.stride, (long long)g.pad, (long long)g.dil, (long long)r0, (long long)rn,
                      (long long)p0, (long long)pn);
        free(x), free(w), free(col), free(want), free(got), free(gs);
    }
}
END_TEST

/* The capped kernels (mgk_conv2d*_capped, the micro-batched graph's): for caps from a few KiB to
 * above the uncapped scratch, the scratch they declare is at most the cap (or the floor's, when
 * the cap is below what the smallest blocks need), they stay inside it, and their results are
 * the uncapped kernels' bits; without a cap they are the uncapped kernels. */
START_TEST(test_conv_capped)
{
    rs += (uint64_t)_i * 1299709;
    for (int is64 = 0; is64 < 2; is64++) {
        int64_t es = is64 ? 8 : 4;
        mgk_conv_geom g;
        g.groups = rint_(1, 2);
        g.Co = g.groups * rint_(1, 24);
        g.C = g.groups * rint_(1, 24);
        g.KH = rint_(1, 3), g.KW = rint_(1, 3), g.stride = rint_(1, 2), g.pad = rint_(0, 1), g.dil = 1;
        if (_i % 4 == 0) g.KH = g.KW = 1, g.stride = 1, g.pad = 0; /* the direct path */
        int small = _i % 4 == 3, side = small ? rint_(1, 4) : rint_(8, 40);
        g.N = small ? rint_(5, 20) : rint_(1, 2);
        g.H = g.KH + side, g.W = g.KW + side;
        g.OH = mg_window_out_ref(g.H, g.KH, g.stride, g.pad, g.dil);
        g.OW = mg_window_out_ref(g.W, g.KW, g.stride, g.pad, g.dil);
        int64_t nx = g.N * g.C * g.H * g.W, nw = g.Co * (g.C / g.groups) * g.KH * g.KW, ny = g.N * g.Co * g.OH * g.OW;
        int64_t nout[3] = {ny, nx, nw};
        void *x = rand_buf(nx, is64), *w = rand_buf(nw, is64), *dy = rand_buf(ny, is64);
        for (int kind = 0; kind < 3; kind++) {
            int64_t full = mgk_conv_scratch_bytes(kind, &g, es);
            mgk_conv_chunk c0 = mgk_conv_chunking(kind, &g, es, 0), cmin = mgk_conv_chunking(kind, &g, es, 1);
            int64_t floor = mgk_conv_chunk_scratch_bytes(kind, &g, es, cmin);
            ck_assert_int_eq(mgk_conv_capped_scratch_bytes(kind, &g, es, 0), full);
            ck_assert_int_eq(mgk_conv_capped_scratch_bytes(kind, &g, es, 1), floor);
            ck_assert_msg(c0.gemm_cap == 0 && cmin.gemm_cap == MGK_CONV_MIN_PATCH, "gemm caps %lld, %lld",
                          (long long)c0.gemm_cap, (long long)cmin.gemm_cap);
            void *ref = malloc((size_t)(nout[kind] * es)), *got = malloc((size_t)(nout[kind] * es));
            run_blocked(kind, is64, &g, x, w, dy, ref, c0);
            for (int t = 0; t < 5; t++) {
                int64_t cap = t == 0 ? 1 : t == 4 ? full + rint_(0, 1000) : rint_(4096, full > 8192 ? full : 8192);
                int64_t bytes = mgk_conv_capped_scratch_bytes(kind, &g, es, cap);
                ck_assert_msg(bytes <= cap || bytes == floor, "kind %d: %lld bytes for a cap of %lld (floor %lld)",
                              kind, (long long)bytes, (long long)cap, (long long)floor);
                if (cap >= full) ck_assert_int_le(bytes, full);
                void *s;
                unsigned char *raw = scratch_new(bytes, &s);
                memset(got, 0xa5, (size_t)(nout[kind] * es));
#define CAPPED(SFX)                                                                                    \
    (kind == MGK_CONV_FWD ? mgk_conv2d_capped_##SFX(GEOM, x, w, got, s, cap)                          \
     : kind == MGK_CONV_DX ? mgk_conv2d_grad_input_capped_##SFX(GEOM, dy, w, got, s, cap)            \
                           : mgk_conv2d_grad_weight_capped_##SFX(GEOM, x, dy, got, s, cap))
                if (is64) CAPPED(f64);
                else CAPPED(f32);
#undef CAPPED
                scratch_check(raw, bytes, "a capped convolution kernel");
                free(raw);
                int64_t i = 0;
                while (i < nout[kind] && !memcmp((char *)ref + i * es, (char *)got + i * es, (size_t)es)) i++;
                ck_assert_msg(i == nout[kind], "%s kind %d, cap %lld: [%lld] %.17g, uncapped %.17g", is64 ? "f64" : "f32",
                              kind, (long long)cap, (long long)i, get(got, i, is64), get(ref, i, is64));
            }
            free(ref), free(got);
        }
        free(x), free(w), free(dy);
    }
}
END_TEST

/* The micro-batched training step (compiler/microbatch.c) computes a weight gradient in parts of
 * the batch: the first part by mgk_conv2d_grad_weight, the others by mgk_conv2d_grad_weight_acc
 * into the same dw. Cut at multiples of the images one GEMM takes (mgk_conv_batch), that must be
 * the bits of one call over the whole batch: random geometries (small images several per GEMM,
 * large ones with the patch matrix in blocks, the direct 1x1 path), 2 or 3 parts, f32 and f64. */
START_TEST(test_conv_grad_weight_acc)
{
    rs += (uint64_t)_i * 2654435761u;
    for (int is64 = 0; is64 < 2; is64++) {
        int64_t es = is64 ? 8 : 4;
        mgk_conv_geom g;
        g.groups = rint_(1, 2);
        g.C = g.groups * rint_(1, 3);
        g.Co = g.groups * rint_(1, 3);
        g.KH = rint_(1, 3), g.KW = rint_(1, 3), g.stride = rint_(1, 2), g.pad = rint_(0, 1), g.dil = 1;
        if (_i % 4 == 0) g.KH = g.KW = 1, g.stride = 1, g.pad = 0; /* the direct path */
        int64_t side = _i % 4 == 1 ? rint_(20, 30) : rint_(3, 8); /* _i % 4 == 1: one image per GEMM, 400+ pixels */
        if (_i % 8 == 5) g.C = g.groups * 60;                     /* a patch matrix in blocks */
        g.H = g.KH + side, g.W = g.KW + side;
        g.OH = mg_window_out_ref(g.H, g.KH, g.stride, g.pad, g.dil);
        g.OW = mg_window_out_ref(g.W, g.KW, g.stride, g.pad, g.dil);
        g.N = 64; /* a batch of up to 64 images, cut at multiples of nb */
        int64_t nb = mgk_conv_batch(&g), parts = rint_(2, 3), unit = nb;
        int64_t per = rint_(1, 3);
        g.N = unit * per * parts;
        ck_assert_int_eq(mgk_conv_batch(&g), nb);
        int64_t nx = g.N * g.C * g.H * g.W, ny = g.N * g.Co * g.OH * g.OW, nw = g.Co * g.C / g.groups * g.KH * g.KW;
        void *x = rand_buf(nx, is64), *dy = rand_buf(ny, is64), *whole = rand_buf(nw, is64), *split = rand_buf(nw, is64);
        void *s;
        unsigned char *raw = scratch_new(mgk_conv_scratch_bytes(MGK_CONV_DW, &g, es), &s);
        if (is64) mgk_conv2d_grad_weight_f64(GEOM, x, dy, whole, s);
        else mgk_conv2d_grad_weight_f32(GEOM, x, dy, whole, s);
        free(raw);
        mgk_conv_geom pg = g;
        pg.N = g.N / parts;
        ck_assert_int_eq(mgk_conv_batch(&pg), nb);
        raw = scratch_new(mgk_conv_scratch_bytes(MGK_CONV_DW, &pg, es), &s);
        for (int64_t k = 0; k < parts; k++) {
            const char *xp = (const char *)x + k * pg.N * g.C * g.H * g.W * es;
            const char *dyp = (const char *)dy + k * pg.N * g.Co * g.OH * g.OW * es;
#define PGEOM pg.N, pg.C, pg.H, pg.W, pg.Co, pg.KH, pg.KW, pg.OH, pg.OW, pg.stride, pg.pad, pg.dil, pg.groups
            if (is64) (k ? mgk_conv2d_grad_weight_acc_f64 : mgk_conv2d_grad_weight_f64)(PGEOM, (const double *)xp,
                                                                                       (const double *)dyp, split, s);
            else (k ? mgk_conv2d_grad_weight_acc_f32 : mgk_conv2d_grad_weight_f32)(PGEOM, (const float *)xp,
                                                                                   (const float *)dyp, split, s);
            scratch_check(raw, mgk_conv_scratch_bytes(MGK_CONV_DW, &pg, es), "conv2d_grad_weight_acc");
        }
        free(raw);
        int64_t i = 0;
        while (i < nw && !memcmp((char *)whole + i * es, (char *)split + i * es, (size_t)es)) i++;
        ck_assert_msg(i == nw, "%s dw[%lld] in %lld parts (nb %lld): %.17g, one call %.17g", is64 ? "f64" : "f32",
                      (long long)i, (long long)parts, (long long)nb, get(split, i, is64), get(whole, i, is64));
        free(x), free(dy), free(whole), free(split);
    }
}
END_TEST

/* Max pooling's 2x2 windows at stride 2 (conv_impl.h, mgk_max_pool2d_2x2 and _grad_2x2) against
 * the general loops, bit for bit, in f32 and f64, on odd and even sides, ties, NaNs, infinities
 * and gradients of -0 (the general path adds dy to a zeroed dx: 0 + -0 is +0). */
START_TEST(test_max_pool_2x2)
{
    rs += (uint64_t)_i * 2749;
    for (int is64 = 0; is64 < 2; is64++) {
        int64_t es = is64 ? 8 : 4, P = rint_(1, 5), H = rint_(1, 13), W = rint_(1, 13);
        int64_t OH = mg_window_out_ref(H, 2, 2, 0, 1), OW = mg_window_out_ref(W, 2, 2, 0, 1);
        static const double special[] = {0.0, -0.0, 1.0, 1.0, INFINITY, -INFINITY, NAN};
        void *x = rand_buf(P * H * W, is64), *dy = rand_buf(P * OH * OW + 1, is64);
        for (int64_t k = 0; k < P * H * W; k++)
            if (rnext() % 3 == 0) set(x, k, special[rnext() % 7], is64);
        for (int64_t k = 0; k < P * OH * OW; k++)
            if (rnext() % 4 == 0) set(dy, k, rnext() % 2 ? -0.0 : 0.0, is64);
        size_t ny = (size_t)(P * OH * OW + 1) * (size_t)es, nx = (size_t)(P * H * W) * (size_t)es;
        unsigned char *y1 = malloc(ny), *y2 = malloc(ny), *dx1 = malloc(nx + 1), *dx2 = malloc(nx + 1);
        memset(y1, 0x5a, ny), memset(y2, 0x5a, ny), memset(dx1, 0x5a, nx + 1), memset(dx2, 0x5a, nx + 1);
        if (is64) {
            mgk_max_pool2d_f64(P, H, W, OH, OW, 2, 2, 0, x, (double *)y1);
            mgk_max_pool2d_any_f64(P, H, W, OH, OW, 2, 2, 0, x, (double *)y2);
            mgk_max_pool2d_grad_f64(P, H, W, OH, OW, 2, 2, 0, x, dy, (double *)dx1);
            mgk_max_pool2d_grad_any_f64(P, H, W, OH, OW, 2, 2, 0, x, dy, (double *)dx2);
        } else {
            mgk_max_pool2d_f32(P, H, W, OH, OW, 2, 2, 0, x, (float *)y1);
            mgk_max_pool2d_any_f32(P, H, W, OH, OW, 2, 2, 0, x, (float *)y2);
            mgk_max_pool2d_grad_f32(P, H, W, OH, OW, 2, 2, 0, x, dy, (float *)dx1);
            mgk_max_pool2d_grad_any_f32(P, H, W, OH, OW, 2, 2, 0, x, dy, (float *)dx2);
        }
        ck_assert_msg(!memcmp(y1, y2, ny), "%s max_pool2d 2x2 on %lldx%lld differs", is64 ? "f64" : "f32", (long long)H,
                      (long long)W);
        ck_assert_msg(!memcmp(dx1, dx2, nx + 1), "%s max_pool2d_grad 2x2 on %lldx%lld differs", is64 ? "f64" : "f32",
                      (long long)H, (long long)W);
        free(x), free(dy), free(y1), free(y2), free(dx1), free(dx2);
    }
}
END_TEST

/* Cutting a batch anywhere gives the whole batch's bits, not only at multiples of the images one
 * GEMM takes (mgk_conv_batch only changes which columns share a GEMM): parts of any sizes, run
 * by the capped kernels as a micro-batched graph runs them, give each image's output and input
 * gradient exactly as one uncapped call over the batch, and the weight gradient summed part
 * after part (grad_weight, then grad_weight_acc) exactly as one call. Small images (several per
 * GEMM) and larger ones, f32 and f64. */
START_TEST(test_conv_any_cut)
{
    rs += (uint64_t)_i * 6700417;
    for (int is64 = 0; is64 < 2; is64++) {
        int64_t es = is64 ? 8 : 4;
        mgk_conv_geom g;
        g.groups = rint_(1, 2);
        g.C = g.groups * rint_(1, 6);
        g.Co = g.groups * rint_(1, 6);
        g.KH = rint_(1, 3), g.KW = rint_(1, 3), g.stride = rint_(1, 2), g.pad = rint_(0, 1), g.dil = 1;
        int64_t side = _i % 3 == 2 ? rint_(10, 16) : rint_(1, 5);
        g.H = g.KH + side, g.W = g.KW + side;
        g.OH = mg_window_out_ref(g.H, g.KH, g.stride, g.pad, g.dil);
        g.OW = mg_window_out_ref(g.W, g.KW, g.stride, g.pad, g.dil);
        g.N = rint_(5, 24);
        int64_t nx = g.N * g.C * g.H * g.W, ny = g.N * g.Co * g.OH * g.OW, nw = g.Co * g.C / g.groups * g.KH * g.KW;
        int64_t sx = nx / g.N, sy = ny / g.N;
        void *x = rand_buf(nx, is64), *w = rand_buf(nw, is64), *dy = rand_buf(ny, is64);
        void *whole[3] = {malloc((size_t)(ny * es)), malloc((size_t)(nx * es)), malloc((size_t)(nw * es))};
        void *split[3] = {malloc((size_t)(ny * es)), malloc((size_t)(nx * es)), malloc((size_t)(nw * es))};
        for (int kind = 0; kind < 3; kind++)
            run_blocked(kind, is64, &g, x, w, dy, whole[kind], mgk_conv_chunking(kind, &g, es, 0));
        int64_t cut[4] = {0, rint_(1, g.N - 2), 0, g.N}; /* two or three parts, any sizes */
        cut[2] = _i % 2 ? cut[1] + rint_(1, g.N - 1 - cut[1]) : g.N;
        int parts = cut[2] == g.N ? 2 : 3;
        if (parts == 2) cut[2] = g.N;
        for (int k = 0; k < parts; k++) {
            mgk_conv_geom pg = g;
            pg.N = cut[k + 1] - cut[k];
            const char *xp = (const char *)x + cut[k] * sx * es, *dyp = (const char *)dy + cut[k] * sy * es;
            for (int kind = 0; kind < 3; kind++) {
                int64_t full = mgk_conv_scratch_bytes(kind, &pg, es), cap = full / parts < 4096 ? 4096 : full / parts;
                void *s;
                unsigned char *raw = scratch_new(mgk_conv_capped_scratch_bytes(kind, &pg, es, cap), &s);
                char *out = (char *)split[kind] + (kind == 0 ? cut[k] * sy * es : kind == 1 ? cut[k] * sx * es : 0);
#define PG pg.N, pg.C, pg.H, pg.W, pg.Co, pg.KH, pg.KW, pg.OH, pg.OW, pg.stride, pg.pad, pg.dil, pg.groups
                if (is64) {
                    if (kind == 0) mgk_conv2d_capped_f64(PG, (const double *)xp, w, (double *)out, s, cap);
                    else if (kind == 1) mgk_conv2d_grad_input_capped_f64(PG, (const double *)dyp, w, (double *)out, s, cap);
                    else (k ? mgk_conv2d_grad_weight_acc_capped_f64 : mgk_conv2d_grad_weight_capped_f64)(
                        PG, (const double *)xp, (const double *)dyp, (double *)out, s, cap);
                } else {
                    if (kind == 0) mgk_conv2d_capped_f32(PG, (const float *)xp, w, (float *)out, s, cap);
                    else if (kind == 1) mgk_conv2d_grad_input_capped_f32(PG, (const float *)dyp, w, (float *)out, s, cap);
                    else (k ? mgk_conv2d_grad_weight_acc_capped_f32 : mgk_conv2d_grad_weight_capped_f32)(
                        PG, (const float *)xp, (const float *)dyp, (float *)out, s, cap);
                }
#undef PG
                scratch_check(raw, mgk_conv_capped_scratch_bytes(kind, &pg, es, cap), "a convolution on a part");
                free(raw);
            }
        }
        int64_t n[3] = {ny, nx, nw};
        for (int kind = 0; kind < 3; kind++) {
            int64_t i = 0;
            while (i < n[kind] && !memcmp((char *)whole[kind] + i * es, (char *)split[kind] + i * es, (size_t)es)) i++;
            ck_assert_msg(i == n[kind], "%s kind %d, N %lld cut at %lld, %lld (nb %lld): [%lld] %.17g, one call %.17g",
                          is64 ? "f64" : "f32", kind, (long long)g.N, (long long)cut[1], (long long)cut[2],
                          (long long)mgk_conv_batch(&g), (long long)i, get(split[kind], i, is64),
                          get(whole[kind], i, is64));
            free(whole[kind]), free(split[kind]);
        }
        free(x), free(w), free(dy);
    }
}
END_TEST

START_TEST(test_pool_kernels)
{
    rs += (uint64_t)_i * 104729;
    int64_t P = rint_(1, 4), K = rint_(1, 4), stride = rint_(1, 3), pad = rint_(0, K / 2);
    int64_t H = K + rint_(0, 6), W = K + rint_(0, 6);
    int64_t OH = mg_window_out_ref(H, K, stride, pad, 1), OW = mg_window_out_ref(W, K, stride, pad, 1);
    double *x = rand_buf(P * H * W, 1), *dy = rand_buf(P * OH * OW, 1);
    double *y = malloc((size_t)(P * OH * OW) * 8), *dx = malloc((size_t)(P * H * W) * 8);
    double *rdx = calloc((size_t)(P * H * W), 8);
    mgk_max_pool2d_f64(P, H, W, OH, OW, K, stride, pad, x, y);
    mgk_max_pool2d_grad_f64(P, H, W, OH, OW, K, stride, pad, x, dy, dx);
    for (int64_t p = 0; p < P; p++)
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                double best = -INFINITY;
                int64_t arg = -1;
                for (int64_t i = 0; i < K; i++)
                    for (int64_t j = 0; j < K; j++) {
                        int64_t ih = oh * stride - pad + i, iw = ow * stride - pad + j;
                        if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                        if (x[(p * H + ih) * W + iw] > best) best = x[(p * H + ih) * W + iw], arg = (p * H + ih) * W + iw;
                    }
                ck_assert(y[(p * OH + oh) * OW + ow] == best);
                rdx[arg] += dy[(p * OH + oh) * OW + ow];
            }
    for (int64_t i = 0; i < P * H * W; i++) ck_assert(dx[i] == rdx[i]);
    mgk_avg_pool2d_f64(P, H, W, OH, OW, K, stride, pad, x, y);
    mgk_avg_pool2d_grad_f64(P, H, W, OH, OW, K, stride, pad, dy, dx);
    memset(rdx, 0, (size_t)(P * H * W) * 8);
    for (int64_t p = 0; p < P; p++)
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                double s = 0;
                for (int64_t i = 0; i < K; i++)
                    for (int64_t j = 0; j < K; j++) {
                        int64_t ih = oh * stride - pad + i, iw = ow * stride - pad + j;
                        if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                        s += x[(p * H + ih) * W + iw];
                        rdx[(p * H + ih) * W + iw] += dy[(p * OH + oh) * OW + ow] / (double)(K * K);
                    }
                ck_assert(fabs(y[(p * OH + oh) * OW + ow] - s / (double)(K * K)) < 1e-14);
            }
    for (int64_t i = 0; i < P * H * W; i++) ck_assert(fabs(dx[i] - rdx[i]) < 1e-14);
    free(x), free(dy), free(y), free(dx), free(rdx);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("conv");
    TCase *tc = tcase_create("kernels");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_conv_kernels, 0, 40);
    tcase_add_loop_test(tc, test_pool_kernels, 0, 40);
    tcase_add_loop_test(tc, test_max_pool_2x2, 0, 40);
    tcase_add_loop_test(tc, test_conv_chunks, 0, 8);
    tcase_add_loop_test(tc, test_conv_odd_blocks, 0, 12);
    tcase_add_loop_test(tc, test_conv_fused_pack, 0, 60);
    tcase_add_loop_test(tc, test_conv_capped, 0, 16);
    tcase_add_loop_test(tc, test_conv_any_cut, 0, 12);
    tcase_add_loop_test(tc, test_conv_grad_weight_acc, 0, 16);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
