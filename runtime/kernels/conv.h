/* conv.h — the contract between the compiler and the convolution kernels (conv.c).
 *
 * A convolution is lowered per image (or per few small images, mgk_conv_batch) and per group to
 * the blocked GEMM of gemm.c: the input patch matrix ("im2col", Cg*kh*kw rows by OH*OW columns
 * per image) is built in the caller's scratch,
 * multiplied by the group's weights, and for the input gradient the patch-gradient matrix is
 * scattered back ("col2im"). A 1x1 convolution with stride 1 and no padding reads the input
 * directly and needs no patch matrix. Like gemm.h this header is also compiled into the
 * compiler, so the planner reserves exactly the scratch each kernel call uses.
 */
#ifndef MG_KERNELS_CONV_H
#define MG_KERNELS_CONV_H
#include "gemm.h"

/* Which kernel of a convolution: forward, input gradient or weight gradient. */
enum { MGK_CONV_FWD = 0, MGK_CONV_DX = 1, MGK_CONV_DW = 2 };

/* The geometry every convolution kernel takes, as int64 arguments in this order. */
typedef struct mgk_conv_geom {
    int64_t N, C, H, W, Co, KH, KW, OH, OW, stride, pad, dil, groups;
} mgk_conv_geom;

static inline int mgk_conv_direct(const mgk_conv_geom *g)
{
    return g->KH == 1 && g->KW == 1 && g->stride == 1 && g->pad == 0;
}

/* Images per GEMM. A GEMM over one image's OH*OW output columns wastes most of each
 * micro-tile, and repacks the whole weight matrix per image, when the image is small (ResNet's
 * last stages: 4x4 and 2x2); such convolutions put the patch columns of several images side by
 * side, up to MGK_CONV_COLS columns, and run one GEMM for all of them. Images of at least
 * MGK_CONV_COLS output pixels, and the direct 1x1 path, go one at a time as before. */
enum { MGK_CONV_COLS = 128 };
static inline int64_t mgk_conv_batch(const mgk_conv_geom *g)
{
    int64_t p = g->OH * g->OW;
    if (mgk_conv_direct(g) || p >= MGK_CONV_COLS || p < 1) return 1;
    int64_t nb = (MGK_CONV_COLS + p - 1) / p;
    return nb < g->N ? nb : g->N < 1 ? 1 : g->N;
}

/* Bytes of scratch one call of the given kernel needs: the patch matrix of mgk_conv_batch()
 * images (none when direct), and when that is more than one image the output (forward) or the
 * output gradient (backward) of those images gathered into one matrix, each rounded to 64
 * bytes; and the GEMM's packing buffers. */
static inline int64_t mgk_conv_scratch_bytes(int kind, const mgk_conv_geom *g, int64_t elem)
{
    int64_t nb = mgk_conv_batch(g);
    int64_t kc = g->C / g->groups * g->KH * g->KW, p = g->OH * g->OW * nb, cog = g->Co / g->groups;
    int64_t col = mgk_conv_direct(g) ? 0 : mgk_gemm_roundup(kc * p * elem, 64);
    int64_t gather = nb > 1 ? mgk_gemm_roundup(cog * p * elem, 64) : 0;
    int64_t gemm = kind == MGK_CONV_FWD ? mgk_gemm_scratch_bytes(cog, p, kc, elem)
                 : kind == MGK_CONV_DX  ? mgk_gemm_scratch_bytes(kc, p, cog, elem)
                                        : mgk_gemm_scratch_bytes(cog, kc, p, elem);
    return col + gather + gemm + 64;
}
#endif
