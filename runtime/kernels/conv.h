/* conv.h — the contract between the compiler and the convolution kernels (conv.c).
 *
 * A convolution is lowered per image (or per few small images, mgk_conv_batch) and per group to
 * the blocked GEMM of gemm.c: the input patch matrix ("im2col", Cg*kh*kw rows by OH*OW columns
 * per image) is built in the caller's scratch, in blocks of at most MGK_CONV_PATCH_BYTES,
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

/* The patch matrix in chunks. The patch matrix of a large image is bigger than the image itself
 * (Cg*KH*KW rows by OH*OW columns: 9x the input plane for a 3x3 convolution), and the planner
 * must find it room next to the step's operands, so a kernel builds at most
 * MGK_CONV_PATCH_BYTES of it at a time: a block of `rows` patch rows by `cols` columns (pixels),
 * multiplied before the next block is built. Each is the whole axis, or a multiple of 256 =
 * MGK_GEMM_KC so that a block boundary on a GEMM's reduction axis (the forward's patch rows, the
 * weight gradient's pixels) falls on a boundary of the GEMM's own K blocks: every element is then
 * summed in exactly the order of one GEMM over the whole matrix, and the chunked kernels are
 * bit-identical to unchunked ones (conv_impl.h says how the input gradient's col2im keeps its
 * order). Direct 1x1 convolutions build no patches and are not chunked. The cap is a macro only
 * so that a test can shrink it; the kernels and the planner must see the same value. */
#ifndef MGK_CONV_PATCH_BYTES
#define MGK_CONV_PATCH_BYTES (1 << 20)
#endif
typedef struct mgk_conv_chunk {
    int64_t rows, cols;
} mgk_conv_chunk;

static inline mgk_conv_chunk mgk_conv_chunking(const mgk_conv_geom *g, int64_t elem)
{
    enum { Q = MGK_GEMM_KC };
    int64_t K = g->C / g->groups * g->KH * g->KW, P = g->OH * g->OW * mgk_conv_batch(g);
    int64_t cap = MGK_CONV_PATCH_BYTES / elem;
    mgk_conv_chunk ch = {K, P};
    if (mgk_conv_direct(g) || K * P <= cap) return ch;
    if (P > Q) { /* columns first: keep whole patch rows while a block of Q columns fits */
        int64_t c = cap / K / Q * Q;
        ch.cols = c < Q ? Q : c;
        if (ch.cols > P) ch.cols = P;
    }
    if (K > Q && K * ch.cols > cap) {
        int64_t r = cap / ch.cols / Q * Q;
        ch.rows = r < Q ? Q : r;
        if (ch.rows > K) ch.rows = K;
    }
    return ch;
}

/* Bytes of scratch one call of the given kernel needs: one block of the patch matrix (none when
 * direct), and when a GEMM takes more than one image the output (forward) or the output gradient
 * (backward) of those images gathered into one matrix, each rounded to 64 bytes; and the GEMM's
 * packing buffers for one block. */
static inline int64_t mgk_conv_scratch_bytes(int kind, const mgk_conv_geom *g, int64_t elem)
{
    int64_t nb = mgk_conv_batch(g);
    int64_t p = g->OH * g->OW * nb, cog = g->Co / g->groups;
    mgk_conv_chunk ch = mgk_conv_chunking(g, elem);
    int64_t col = mgk_conv_direct(g) ? 0 : mgk_gemm_roundup(ch.rows * ch.cols * elem, 64);
    int64_t gather = nb > 1 ? mgk_gemm_roundup(cog * p * elem, 64) : 0;
    int64_t gemm = kind == MGK_CONV_FWD ? mgk_gemm_scratch_bytes(cog, ch.cols, ch.rows, elem)
                 : kind == MGK_CONV_DX  ? mgk_gemm_scratch_bytes(ch.rows, ch.cols, cog, elem)
                                        : mgk_gemm_scratch_bytes(cog, ch.rows, ch.cols, elem);
    return col + gather + gemm + 64;
}
#endif
