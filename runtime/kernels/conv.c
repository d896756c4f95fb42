/* conv.c — convolution and pooling kernels, f32 and f64 (conv_impl.h, instantiated twice).
 *
 * Convolutions go through the blocked GEMM (gemm.c) on an im2col patch matrix built in the
 * scratch the planner reserved (contract and sizes: conv.h). Every reduction runs in a fixed
 * order — over images, then groups, then GEMM blocks — so results are bit-identical however
 * often the planner recomputes a value. Pooling windows skip padding: max pooling treats it as
 * -inf (its gradient goes to the first maximum of a window), average pooling divides by the
 * full kernel area (PyTorch's count_include_pad). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "conv.h"

#define MGK_GEOM_PARAMS                                                                            \
    int64_t N, int64_t C, int64_t H, int64_t W, int64_t Co, int64_t KH, int64_t KW, int64_t OH,    \
        int64_t OW, int64_t stride, int64_t pad, int64_t dil, int64_t groups
#define MGK_GEOM_INIT {N, C, H, W, Co, KH, KW, OH, OW, stride, pad, dil, groups}

/* A table of every tap of every output pixel of one image: off[u * OH*OW + pixel] is where tap u
 * = i*KW + j of the pixel reads its input plane (ih * W + iw), or -1 in the padding. Small images
 * (conv_impl.h, mgk_conv_tabled) copy their patches through it: their rows are too short for the
 * row copies of im2col. At most MGK_CONV_TAP_TABLE entries, on the stack. */
enum { MGK_CONV_TAP_TABLE = 1024 };
static void mgk_conv_tap_table(const mgk_conv_geom *g, int32_t *off)
{
    int64_t KK = g->KH * g->KW, P = g->OH * g->OW;
    for (int64_t u = 0; u < KK; u++)
        for (int64_t q = 0; q < P; q++) {
            int64_t ih = q / g->OW * g->stride - g->pad + u / g->KW * g->dil;
            int64_t iw = q % g->OW * g->stride - g->pad + u % g->KW * g->dil;
            off[u * P + q] = ih >= 0 && ih < g->H && iw >= 0 && iw < g->W ? (int32_t)(ih * g->W + iw) : -1;
        }
}

static inline int mgk_conv_tabled(const mgk_conv_geom *g)
{
    return g->OW <= 8 && g->KH * g->KW * g->OH * g->OW <= MGK_CONV_TAP_TABLE && g->H * g->W <= INT32_MAX;
}

/* Loops the vectorizer would turn into gathers and scatters (stride-2 reads and writes), slower
 * than the scalar code on the hosts measured (max pooling's 2x2 windows, conv_impl.h). */
#ifdef __clang__
#define MGK_NO_VECTORIZE _Pragma("clang loop vectorize(disable)")
#else
#define MGK_NO_VECTORIZE
#endif

static inline void *mgk_conv_align64(void *p) { return (void *)(((uintptr_t)p + 63) & ~(uintptr_t)63); }

#define T float
#define SFX(name) name##_f32
#include "conv_impl.h"
#undef T
#undef SFX

#define T double
#define SFX(name) name##_f64
#include "conv_impl.h"
#undef T
#undef SFX
