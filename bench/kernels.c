/* kernels.c — GFLOP/s of memgrad's GEMM and convolution kernels at the shapes the reference
 * models run them at (the PyTorch side is bench/torch_kernels.py, with the same case names).
 *
 * Why a separate driver: the step time of a model mixes every kernel; this one isolates the two
 * that carry the FLOPs. It includes the kernel sources the way tests/test_gemm.c does; run.sh
 * compiles it with clang-19 -O3 -march=native, which is what a generated module does with the
 * kernel bitcode (host CPU, O3). Each case is warmed up, then timed in batches of calls long
 * enough for the clock; one line per case: "NAME ms_per_call gflops" (the median batch).
 *   usage: kernels [MIN_SECONDS_PER_CASE] [FILTER_SUBSTRING]    (env MG_BENCH_CLOCK=cpu: CPU time)
 */
#define _POSIX_C_SOURCE 200112L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../runtime/kernels/conv.c"
#include "../runtime/kernels/gemm.c"

void mgk_gemm_batched_f32(int64_t d0, int64_t d1, int64_t d2, int64_t d3, int64_t sa0, int64_t sa1,
                          int64_t sa2, int64_t sa3, int64_t sb0, int64_t sb1, int64_t sb2, int64_t sb3,
                          int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, int transA,
                          const float *B, int64_t ldb, int transB, float *C, void *scratch);

/* One case: a GEMM (batch 1), a stack of GEMMs (batch b0 x b1) or a convolution kernel. */
typedef struct {
    const char *name;
    int kind; /* 0 gemm, 1 batched gemm, 2 conv fwd, 3 conv input grad, 4 conv weight grad */
    int64_t b0, b1, M, N, K;
    int ta, tb, beta;
    mgk_conv_geom g;
} bcase;

#define GEMM(name, M, N, K, ta, tb) {name, 0, 1, 1, M, N, K, ta, tb, 0, {0}}
#define BMM(name, b0, b1, M, N, K, ta, tb) {name, 1, b0, b1, M, N, K, ta, tb, 0, {0}}
/* conv: batch, C, H (= W), Co, kernel, stride, pad; OH from the usual formula */
#define CONV(name, kind, n, c, h, co, k, s, p)                                                     \
    {name, kind, 0, 0, 0, 0, 0, 0, 0, 0,                                                           \
     {n, c, h, h, co, k, k, ((h) + 2 * (p) - (k)) / (s) + 1, ((h) + 2 * (p) - (k)) / (s) + 1, s, p, 1, 1}}

static const bcase cases[] = {
    /* mlp_deep: batch 256, 784 -> 16 x 1024 -> 10; backward dX = dY W^T, dW = X^T dY */
    GEMM("mlp.fwd_784x1024", 256, 1024, 784, 0, 0),
    GEMM("mlp.fwd_1024x1024", 256, 1024, 1024, 0, 0),
    GEMM("mlp.dx_1024x1024", 256, 1024, 1024, 0, 1),
    GEMM("mlp.dw_1024x1024", 1024, 1024, 256, 1, 0),
    GEMM("mlp.dw_784x1024", 784, 1024, 256, 1, 0),
    /* transformer: 8 x 128 tokens, d 256, ff 1024, vocab 1000, 4 heads x 64 */
    GEMM("tf.qkv_fwd", 1024, 256, 256, 0, 0),
    GEMM("tf.ff1_fwd", 1024, 1024, 256, 0, 0),
    GEMM("tf.ff2_fwd", 1024, 256, 1024, 0, 0),
    GEMM("tf.ff1_dx", 1024, 256, 1024, 0, 1),
    GEMM("tf.ff1_dw", 256, 1024, 1024, 1, 0),
    GEMM("tf.logits_fwd", 1024, 1000, 256, 0, 0),
    GEMM("tf.logits_dw", 256, 1000, 1024, 1, 0),
    BMM("tf.attn_qk", 8, 4, 128, 128, 64, 0, 0),
    BMM("tf.attn_av", 8, 4, 128, 64, 128, 0, 0),
    BMM("tf.attn_dp", 8, 4, 128, 128, 64, 0, 1),
    BMM("tf.attn_dv", 8, 4, 128, 64, 128, 1, 0),
    /* cnn_fmnist: batch 128; conv 3x3 1->32 on 28x28, conv 3x3 32->64 on 14x14, pad 1 */
    CONV("cnn.conv1_fwd", 2, 128, 1, 28, 32, 3, 1, 1),
    CONV("cnn.conv1_dw", 4, 128, 1, 28, 32, 3, 1, 1),
    CONV("cnn.conv2_fwd", 2, 128, 32, 14, 64, 3, 1, 1),
    CONV("cnn.conv2_dx", 3, 128, 32, 14, 64, 3, 1, 1),
    CONV("cnn.conv2_dw", 4, 128, 32, 14, 64, 3, 1, 1),
    /* resnet18_64: batch 16 x 3x64x64; stem 7x7/2, stages at 16, 8, 4, 2 pixels */
    CONV("rn.stem_fwd", 2, 16, 3, 64, 64, 7, 2, 3),
    CONV("rn.l1_fwd", 2, 16, 64, 16, 64, 3, 1, 1),
    CONV("rn.l1_dx", 3, 16, 64, 16, 64, 3, 1, 1),
    CONV("rn.l1_dw", 4, 16, 64, 16, 64, 3, 1, 1),
    CONV("rn.l3_fwd", 2, 16, 256, 4, 256, 3, 1, 1),
    CONV("rn.l3_dx", 3, 16, 256, 4, 256, 3, 1, 1),
    CONV("rn.l3_dw", 4, 16, 256, 4, 256, 3, 1, 1),
    CONV("rn.l4_fwd", 2, 16, 512, 2, 512, 3, 1, 1),
    CONV("rn.l4_dx", 3, 16, 512, 2, 512, 3, 1, 1),
    CONV("rn.l4_dw", 4, 16, 512, 2, 512, 3, 1, 1),
    /* unet_small: batch 8 x 1x64x64; levels 16/32/64, bottleneck 128 */
    CONV("unet.l1_fwd", 2, 8, 16, 64, 16, 3, 1, 1),
    CONV("unet.l1_dx", 3, 8, 16, 64, 16, 3, 1, 1),
    CONV("unet.l1_dw", 4, 8, 16, 64, 16, 3, 1, 1),
    /* the first up level's first conv (32 -> 16 channels at 64x64): the largest patch matrix */
    CONV("unet.up1_fwd", 2, 8, 32, 64, 16, 3, 1, 1),
    CONV("unet.up1_dx", 3, 8, 32, 64, 16, 3, 1, 1),
    CONV("unet.up1_dw", 4, 8, 32, 64, 16, 3, 1, 1),
    CONV("unet.bott_fwd", 2, 8, 128, 8, 128, 3, 1, 1),
};

static clockid_t clock_id = CLOCK_MONOTONIC;

static double now(void)
{
    struct timespec ts;
    clock_gettime(clock_id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static float *rand_buf(int64_t n, uint64_t *s)
{
    float *p = aligned_alloc(64, (size_t)((n * 4 + 63) / 64 * 64));
    if (!p) abort();
    for (int64_t i = 0; i < n; i++) {
        *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
        p[i] = (float)((*s >> 40) & 0xffff) / 32768.0f - 1.0f;
    }
    return p;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double flops(const bcase *c)
{
    if (c->kind <= 1) return 2.0 * (double)(c->b0 * c->b1) * (double)c->M * (double)c->N * (double)c->K;
    const mgk_conv_geom *g = &c->g;
    return 2.0 * (double)g->N * (double)g->Co * (double)(g->OH * g->OW) * (double)(g->C / g->groups) *
           (double)(g->KH * g->KW);
}

static void run(const bcase *c, float *a, float *b, float *out, void *scratch)
{
    const mgk_conv_geom *g = &c->g;
#define G g->N, g->C, g->H, g->W, g->Co, g->KH, g->KW, g->OH, g->OW, g->stride, g->pad, g->dil, g->groups
    switch (c->kind) {
    case 0:
        mgk_gemm_f32(c->M, c->N, c->K, a, c->ta ? c->M : c->K, c->ta, b, c->tb ? c->K : c->N, c->tb, out, c->N,
                     c->beta, scratch);
        break;
    case 1:
        mgk_gemm_batched_f32(c->b0, c->b1, 1, 1, c->b1 * c->M * c->K, c->M * c->K, 0, 0, c->b1 * c->K * c->N,
                             c->K * c->N, 0, 0, c->M, c->N, c->K, a, c->ta ? c->M : c->K, c->ta, b,
                             c->tb ? c->K : c->N, c->tb, out, scratch);
        break;
    case 2: mgk_conv2d_f32(G, a, b, out, scratch); break;            /* x, w -> y */
    case 3: mgk_conv2d_grad_input_f32(G, a, b, out, scratch); break; /* dy, w -> dx */
    case 4: mgk_conv2d_grad_weight_f32(G, a, b, out, scratch); break; /* x, dy -> dw */
    }
#undef G
}

int main(int argc, char **argv)
{
    double min_secs = argc > 1 ? atof(argv[1]) : 0.3;
    const char *filter = argc > 2 ? argv[2] : "";
    /* MG_BENCH_CLOCK=cpu: this thread's CPU time instead of wall time, for comparing kernel
     * versions on a machine that others load (not for comparing with PyTorch). */
    const char *clk = getenv("MG_BENCH_CLOCK");
    if (clk && !strcmp(clk, "cpu")) clock_id = CLOCK_THREAD_CPUTIME_ID;
    uint64_t seed = 1;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const bcase *c = &cases[i];
        if (!strstr(c->name, filter)) continue;
        const mgk_conv_geom *g = &c->g;
        int64_t na, nb, no, scratch_bytes;
        if (c->kind <= 1) {
            na = c->b0 * c->b1 * c->M * c->K;
            nb = c->b0 * c->b1 * c->K * c->N;
            no = c->b0 * c->b1 * c->M * c->N;
            scratch_bytes = mgk_gemm_scratch_bytes(c->M, c->N, c->K, 4);
        } else {
            int kind = c->kind - 2;
            int64_t x = g->N * g->C * g->H * g->W, y = g->N * g->Co * g->OH * g->OW;
            int64_t w = g->Co * (g->C / g->groups) * g->KH * g->KW;
            na = kind == MGK_CONV_DX ? y : x;
            nb = kind == MGK_CONV_DW ? y : w;
            no = kind == MGK_CONV_FWD ? y : kind == MGK_CONV_DX ? x : w;
            scratch_bytes = mgk_conv_scratch_bytes(kind, g, 4);
        }
        float *a = rand_buf(na, &seed), *b = rand_buf(nb, &seed), *out = rand_buf(no, &seed);
        void *scratch = malloc((size_t)scratch_bytes);
        if (!scratch) abort();
        run(c, a, b, out, scratch); /* warm-up, and a first guess at the batch size */
        double t0 = now();
        run(c, a, b, out, scratch);
        double once = now() - t0;
        int per_batch = once > 0.02 ? 1 : (int)(0.02 / (once > 1e-7 ? once : 1e-7)) + 1;
        double times[1000];
        int nt = 0;
        double start = now();
        while (nt < 1000 && (nt < 5 || now() - start < min_secs)) {
            t0 = now();
            for (int r = 0; r < per_batch; r++) run(c, a, b, out, scratch);
            times[nt++] = (now() - t0) / per_batch;
        }
        qsort(times, (size_t)nt, sizeof times[0], cmp_double);
        double med = times[nt / 2];
        printf("%s %.4f %.2f\n", c->name, 1e3 * med, flops(c) / med / 1e9);
        fflush(stdout);
        free(a);
        free(b);
        free(out);
        free(scratch);
    }
    return 0;
}
