/* conv.h — the contract between the compiler and the convolution kernels (conv.c).
 *
 * A convolution is lowered per image (or per few small images, mgk_conv_batch) and per group to
 * the blocked GEMM of gemm.c: the input patch matrix ("im2col", Cg*kh*kw rows by OH*OW columns
 * per image) is built in the caller's scratch, in blocks of at most MGK_CONV_PATCH_BYTES,
 * multiplied by the group's weights, and for the input gradient the patch-gradient matrix is
 * scattered back ("col2im"). A 1x1 convolution with stride 1 and no padding reads the input
 * directly and needs no patch matrix. On images at most 8 pixels wide the forward and the weight
 * gradient build no block either: the GEMM's packing reads the patches straight from the image
 * (conv_impl.h, mgk_conv_pack_b/_bt), and the input gradient's blocks go through a table of
 * every pixel's taps (conv.c); their scratch is reserved as below all the same (the block's part
 * unused), so that the sizes do not depend on the path. Like gemm.h this header is also compiled
 * into the compiler, so the planner reserves exactly the scratch each kernel call uses.
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

/* The patch matrix in blocks. The patch matrix of a large image is bigger than the image itself
 * (Cg*KH*KW rows by OH*OW columns: 9x the input plane for a 3x3 convolution), and the planner
 * must find it room next to the step's operands, so a kernel builds a block of `rows` patch rows
 * by `cols` columns (pixels) at a time and multiplies it before building the next. Any block
 * bounds give the same bits: each element of a GEMM's result is one chain of multiply-adds over
 * K however K is cut into calls (gemm.c), so the forward's blocks of patch rows and the weight
 * gradient's blocks of pixels continue the chains of one GEMM over the whole matrix, and the
 * input gradient's col2im adds every element's taps in the order of one col2im whatever the
 * blocks (conv_impl.h). So the blocks are chosen for speed and scratch alone (tests/test_conv.c
 * proves the bits with blocks of 1, 7, 100, 300 ... rows and columns):
 *   - whole patch rows and as many columns as fit, whole output rows when one fits (im2col is
 *     fastest on whole rows); below MGK_CONV_MIN_COLS columns, blocks of that many columns
 *     (narrower GEMMs waste their tiles) and as many patch rows as fit;
 *   - a call without a cap (cap <= 0, mgk_conv2d_*: the whole-batch graph) takes blocks of at
 *     most MGK_CONV_PATCH_BYTES and the GEMM's usual blocks;
 *   - a capped call (mgk_conv2d_*_capped: the convolutions of a graph in micro-batches,
 *     compiler/microbatch.c) takes the largest patch block, and GEMM blocks of at most as many
 *     bytes (mgk_gemm_blocking), that keep its whole scratch within cap: the patch limit runs
 *     down from min(cap, MGK_CONV_PATCH_BYTES) by eighths until it does, or until it reaches
 *     MGK_CONV_MIN_PATCH bytes (a floor: the scratch of such a call is still what
 *     mgk_conv_capped_scratch_bytes says, only above the cap).
 * Direct 1x1 convolutions build no patches; capped, their GEMM is. The default is a macro so
 * that a test can shrink it; the kernels and the planner must see the same value. */
#ifndef MGK_CONV_PATCH_BYTES
#define MGK_CONV_PATCH_BYTES (1 << 20)
#endif
enum { MGK_CONV_MIN_COLS = 64, MGK_CONV_MIN_PATCH = 2048 };
typedef struct mgk_conv_chunk {
    int64_t rows, cols; /* a block of the patch matrix */
    int64_t gemm_cap;   /* the GEMM's scratch cap (mgk_gemm_blocking; 0: its usual blocks) */
} mgk_conv_chunk;

/* The blocks of a patch matrix (rows and columns of one GEMM) for at most `elems` elements. */
static inline mgk_conv_chunk mgk_conv_blocks(const mgk_conv_geom *g, int64_t elems)
{
    int64_t K = g->C / g->groups * g->KH * g->KW, P = g->OH * g->OW * mgk_conv_batch(g);
    mgk_conv_chunk ch = {K, P, 0};
    if (mgk_conv_direct(g) || K * P <= elems) return ch;
    int64_t c = elems / K;
    if (c >= MGK_CONV_MIN_COLS) { /* whole patch rows (c < P here) */
        ch.cols = c >= g->OW ? c / g->OW * g->OW : c;
        return ch;
    }
    ch.cols = P < MGK_CONV_MIN_COLS ? P : MGK_CONV_MIN_COLS;
    ch.rows = elems / ch.cols < 1 ? 1 : elems / ch.cols; /* < K: K * cols > elems */
    return ch;
}

/* The packing buffers the GEMMs of a call with blocks ch need: the most any of them needs, over
 * the shapes they take (whole blocks, the last block of rows or columns, the last group of
 * images). (Capped, a GEMM on a smaller block can choose larger blocks than a whole one's.) */
static inline int64_t mgk_conv_gemm_bytes(int kind, const mgk_conv_geom *g, int64_t elem, mgk_conv_chunk ch)
{
    int64_t K = g->C / g->groups * g->KH * g->KW, P = g->OH * g->OW, nb = mgk_conv_batch(g), cog = g->Co / g->groups;
    int64_t last = g->N % nb * P; /* the columns of the last group of images, when it is short */
    int64_t rs[2] = {ch.rows, K % ch.rows}, cs[4] = {ch.cols, nb * P % ch.cols, 0, 0}, most = 0;
    if (last) cs[2] = ch.cols < last ? ch.cols : last, cs[3] = last % ch.cols;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++) {
            int64_t r = rs[i], c = cs[j], b;
            if (!r || !c) continue;
            b = kind == MGK_CONV_FWD ? mgk_gemm_capped_scratch_bytes(cog, c, r, elem, ch.gemm_cap)
              : kind == MGK_CONV_DX  ? mgk_gemm_capped_scratch_bytes(r, c, cog, elem, ch.gemm_cap)
                                     : mgk_gemm_capped_scratch_bytes(cog, r, c, elem, ch.gemm_cap);
            most = b > most ? b : most;
        }
    return most;
}

/* Bytes of scratch one call of the given kernel needs with blocks ch: one block of the patch
 * matrix (none when direct), and when a GEMM takes more than one image the output (forward) or
 * the output gradient (backward) of those images gathered into one matrix, each rounded to 64
 * bytes; and the GEMM's packing buffers for one block; and 64 bytes to align the start. */
static inline int64_t mgk_conv_chunk_scratch_bytes(int kind, const mgk_conv_geom *g, int64_t elem, mgk_conv_chunk ch)
{
    int64_t nb = mgk_conv_batch(g);
    int64_t p = g->OH * g->OW * nb, cog = g->Co / g->groups;
    int64_t col = mgk_conv_direct(g) ? 0 : mgk_gemm_roundup(ch.rows * ch.cols * elem, 64);
    int64_t gather = nb > 1 ? mgk_gemm_roundup(cog * p * elem, 64) : 0;
    return col + gather + mgk_conv_gemm_bytes(kind, g, elem, ch) + 64;
}

/* The blocks a call of the given kernel takes under scratch cap `cap` (<= 0: no cap), see above. */
static inline mgk_conv_chunk mgk_conv_chunking(int kind, const mgk_conv_geom *g, int64_t elem, int64_t cap)
{
    if (cap <= 0) return mgk_conv_blocks(g, MGK_CONV_PATCH_BYTES / elem);
    int64_t lim = cap < MGK_CONV_PATCH_BYTES ? cap : MGK_CONV_PATCH_BYTES;
    if (lim < MGK_CONV_MIN_PATCH) lim = MGK_CONV_MIN_PATCH;
    for (;;) {
        mgk_conv_chunk ch = mgk_conv_blocks(g, lim / elem);
        ch.gemm_cap = lim;
        if (lim <= MGK_CONV_MIN_PATCH || mgk_conv_chunk_scratch_bytes(kind, g, elem, ch) <= cap) return ch;
        lim -= lim / 8;
        if (lim < MGK_CONV_MIN_PATCH) lim = MGK_CONV_MIN_PATCH;
    }
}

/* Bytes of scratch one call of mgk_conv2d*_capped_{f32,f64}(..., cap) needs (cap <= 0: of the
 * uncapped mgk_conv2d*_{f32,f64}). */
static inline int64_t mgk_conv_capped_scratch_bytes(int kind, const mgk_conv_geom *g, int64_t elem, int64_t cap)
{
    return mgk_conv_chunk_scratch_bytes(kind, g, elem, mgk_conv_chunking(kind, g, elem, cap));
}

static inline int64_t mgk_conv_scratch_bytes(int kind, const mgk_conv_geom *g, int64_t elem)
{
    return mgk_conv_capped_scratch_bytes(kind, g, elem, 0);
}
#endif
