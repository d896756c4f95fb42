/* conv_impl.h — convolution and pooling kernel bodies, instantiated by conv.c for T = float
 * and T = double; SFX(name) appends the type suffix. */

/* The outputs o in [*lo, *hi) of an axis whose input index o*stride + off lies in [0, n). */
static inline void SFX(mgk_valid)(int64_t n, int64_t out, int64_t stride, int64_t off, int64_t *lo, int64_t *hi)
{
    int64_t l, h;
    if (stride == 1) { /* the common case, without divisions (this runs once per patch row) */
        l = off >= 0 ? 0 : -off;
        h = n - off < 0 ? 0 : n - off;
    } else {
        l = off >= 0 ? 0 : (-off + stride - 1) / stride;
        h = n - 1 - off < 0 ? 0 : (n - 1 - off) / stride + 1;
    }
    if (h > out) h = out;
    if (l > h) l = h;
    *lo = l;
    *hi = h;
}

/* Patch rows [r0, r1) over the OH output rows from oh_s on (all their pixels) of one group of one image, the loops ordered for speed on
 * small images (the blocks below handle any pixels but cost up to 2x more per element on 14x14):
 * col[(r - r0) * ld + oh*OW + ow] for r = (c*KH + i)*KW + j = x[c][oh*stride - pad + i*dil][ow*stride - pad + j*dil]. */
static void SFX(mgk_im2col_full)(int64_t r0, int64_t r1, int64_t oh_s, int64_t H, int64_t W, int64_t KH, int64_t KW, int64_t OH,
                                 int64_t OW, int64_t stride, int64_t pad, int64_t dil, const T *restrict x,
                                 T *restrict col, int64_t ld)
{
    int64_t c0 = r0 / (KH * KW), c1 = (r1 - 1) / (KH * KW) + 1;
    for (int64_t i = 0; i < KH; i++) {
        int64_t oh0, oh1;
        SFX(mgk_valid)(H, OH, stride, oh_s * stride + i * dil - pad, &oh0, &oh1);
        for (int64_t j = 0; j < KW; j++) {
            int64_t offw = j * dil - pad, ow0, ow1;
            SFX(mgk_valid)(W, OW, stride, offw, &ow0, &ow1);
            for (int64_t c = c0; c < c1; c++) {
                int64_t r = (c * KH + i) * KW + j;
                if (r < r0 || r >= r1) continue;
                T *row = col + (r - r0) * ld;
                memset(row, 0, (size_t)(oh0 * OW) * sizeof(T));
                for (int64_t oh = oh0; oh < oh1; oh++) {
                    const T *in = x + (c * H + (oh_s + oh) * stride + i * dil - pad) * W;
                    T *out = row + oh * OW;
                    for (int64_t ow = 0; ow < ow0; ow++) out[ow] = 0;
                    if (stride == 1)
                        for (int64_t ow = ow0; ow < ow1; ow++) out[ow] = in[ow + offw];
                    else
                        for (int64_t ow = ow0; ow < ow1; ow++) out[ow] = in[ow * stride + offw];
                    for (int64_t ow = ow1; ow < OW; ow++) out[ow] = 0;
                }
                memset(row + oh1 * OW, 0, (size_t)((OH - oh1) * OW) * sizeof(T));
            }
        }
    }
}

/* The adjoint of mgk_im2col_full: dx (zeroed by the caller) += col, in (c, i, j, oh, ow) order
 * (for each element of dx, the rows in increasing order). */
static void SFX(mgk_col2im_full)(int64_t r0, int64_t r1, int64_t oh_s, int64_t H, int64_t W, int64_t KH, int64_t KW, int64_t OH,
                                 int64_t OW, int64_t stride, int64_t pad, int64_t dil, const T *restrict col,
                                 int64_t ld, T *restrict dx)
{
    for (int64_t c = r0 / (KH * KW); c <= (r1 - 1) / (KH * KW); c++)
        for (int64_t i = 0; i < KH; i++) {
            int64_t oh0, oh1;
            SFX(mgk_valid)(H, OH, stride, oh_s * stride + i * dil - pad, &oh0, &oh1);
            for (int64_t j = 0; j < KW; j++) {
                int64_t offw = j * dil - pad, ow0, ow1;
                SFX(mgk_valid)(W, OW, stride, offw, &ow0, &ow1);
                int64_t r = (c * KH + i) * KW + j;
                if (r < r0 || r >= r1) continue;
                const T *row = col + (r - r0) * ld;
                for (int64_t oh = oh0; oh < oh1; oh++) {
                    const T *in = row + oh * OW;
                    T *out = dx + (c * H + (oh_s + oh) * stride + i * dil - pad) * W;
                    if (stride == 1)
                        for (int64_t ow = ow0; ow < ow1; ow++) out[ow + offw] += in[ow];
                    else
                        for (int64_t ow = ow0; ow < ow1; ow++) out[ow * stride + offw] += in[ow];
                }
            }
        }
}

/* The patch rows [r0, r1) and pixels [p0, p1) (flattened oh*OW + ow) of one group of one image
 * x (Cg planes of H x W): col[(r - r0) * ld + p - p0] = x[c][oh*stride - pad + i*dil][ow*stride -
 * pad + j*dil] for patch row r = (c*KH + i)*KW + j, 0 in the padding. */
static void SFX(mgk_im2col)(int64_t H, int64_t W, int64_t KH, int64_t KW, int64_t OH, int64_t OW,
                            int64_t stride, int64_t pad, int64_t dil, int64_t r0, int64_t r1, int64_t p0,
                            int64_t p1, const T *restrict x, T *restrict col, int64_t ld)
{
    int64_t c = r0 / (KH * KW), i = r0 / KW % KH, j = r0 % KW; /* of row r, counted along */
    for (int64_t r = r0; r < r1; r++, j = j + 1 < KW ? j + 1 : 0, i = j ? i : i + 1 < KH ? i + 1 : 0, c = j || i ? c : c + 1) {
        int64_t offh = i * dil - pad, offw = j * dil - pad, oh0, oh1, ow0, ow1;
        SFX(mgk_valid)(H, OH, stride, offh, &oh0, &oh1);
        SFX(mgk_valid)(W, OW, stride, offw, &ow0, &ow1);
        T *row = col + (r - r0) * ld; /* row[p - p0] */
        int64_t z = p1 < oh0 * OW ? p1 : oh0 * OW; /* output rows above the image, then below */
        if (z > p0) memset(row, 0, (size_t)(z - p0) * sizeof(T));
        z = p0 > oh1 * OW ? p0 : oh1 * OW;
        if (z < p1) memset(row + (z - p0), 0, (size_t)(p1 - z) * sizeof(T));
        for (int64_t oh = p0 / OW > oh0 ? p0 / OW : oh0; oh < oh1 && oh * OW < p1; oh++) {
            /* pixels [a, b) of output row oh, at out[0 ..] */
            int64_t a = p0 > oh * OW ? p0 - oh * OW : 0, b = p1 < (oh + 1) * OW ? p1 - oh * OW : OW;
            T *out = row + (oh * OW + a - p0);
            const T *in = x + (c * H + oh * stride + offh) * W;
            if (a == 0 && b == OW) { /* a whole output row (all but the block's first and last) */
                for (int64_t ow = 0; ow < ow0; ow++) out[ow] = 0;
                if (stride == 1)
                    for (int64_t ow = ow0; ow < ow1; ow++) out[ow] = in[ow + offw];
                else
                    for (int64_t ow = ow0; ow < ow1; ow++) out[ow] = in[ow * stride + offw];
                for (int64_t ow = ow1; ow < OW; ow++) out[ow] = 0;
                continue;
            }
            int64_t lo = ow0 > a ? ow0 : a, hi = ow1 < b ? ow1 : b;
            if (lo > b) lo = b;
            if (hi < lo) hi = lo;
            for (int64_t ow = a; ow < lo; ow++) out[ow - a] = 0;
            if (stride == 1)
                for (int64_t ow = lo; ow < hi; ow++) out[ow - a] = in[ow + offw];
            else
                for (int64_t ow = lo; ow < hi; ow++) out[ow - a] = in[ow * stride + offw];
            for (int64_t ow = hi; ow < b; ow++) out[ow - a] = 0;
        }
    }
}

/* The adjoint of im2col over the same block (same arguments): dx += the block scattered back,
 * patch rows in increasing order. dx is zeroed by the caller before the first block. */
static void SFX(mgk_col2im)(int64_t H, int64_t W, int64_t KH, int64_t KW, int64_t OH, int64_t OW,
                            int64_t stride, int64_t pad, int64_t dil, int64_t r0, int64_t r1, int64_t p0,
                            int64_t p1, const T *restrict col, int64_t ld, T *restrict dx)
{
    int64_t c = r0 / (KH * KW), i = r0 / KW % KH, j = r0 % KW;
    for (int64_t r = r0; r < r1; r++, j = j + 1 < KW ? j + 1 : 0, i = j ? i : i + 1 < KH ? i + 1 : 0, c = j || i ? c : c + 1) {
        int64_t offh = i * dil - pad, offw = j * dil - pad, oh0, oh1, ow0, ow1;
        SFX(mgk_valid)(H, OH, stride, offh, &oh0, &oh1);
        SFX(mgk_valid)(W, OW, stride, offw, &ow0, &ow1);
        for (int64_t oh = p0 / OW > oh0 ? p0 / OW : oh0; oh < oh1 && oh * OW < p1; oh++) {
            int64_t a = p0 > oh * OW ? p0 - oh * OW : 0, b = p1 < (oh + 1) * OW ? p1 - oh * OW : OW;
            int64_t lo = ow0 > a ? ow0 : a, hi = ow1 < b ? ow1 : b;
            const T *in = col + (r - r0) * ld + (oh * OW + a - p0); /* in[ow - a] */
            T *out = dx + (c * H + oh * stride + offh) * W;
            if (a == 0) { /* (a whole row, or the block's last) */
                if (stride == 1)
                    for (int64_t ow = lo; ow < hi; ow++) out[ow + offw] += in[ow];
                else
                    for (int64_t ow = lo; ow < hi; ow++) out[ow * stride + offw] += in[ow];
                continue;
            }
            if (stride == 1)
                for (int64_t ow = lo; ow < hi; ow++) out[ow + offw] += in[ow - a];
            else
                for (int64_t ow = lo; ow < hi; ow++) out[ow * stride + offw] += in[ow - a];
        }
    }
}

/* The scratch of a convolution kernel with blocks ch (sizes: mgk_conv_chunk_scratch_bytes): one
 * block of the patch matrix, the gathered output (gradient) of nb > 1 images, then the GEMM's
 * buffers. */
typedef struct {
    T *col, *gather;
    void *gemm;
    int64_t nb;
    mgk_conv_chunk ch;
} SFX(mgk_conv_scratch);

static SFX(mgk_conv_scratch) SFX(mgk_conv_carve)(const mgk_conv_geom *g, void *scratch, mgk_conv_chunk ch)
{
    SFX(mgk_conv_scratch) s;
    int64_t cols = g->OH * g->OW * mgk_conv_batch(g);
    s.nb = mgk_conv_batch(g);
    s.ch = ch;
    s.col = (T *)mgk_conv_align64(scratch);
    char *next = (char *)s.col + (mgk_conv_direct(g) ? 0 : mgk_gemm_roundup(s.ch.rows * s.ch.cols * (int64_t)sizeof(T), 64));
    s.gather = (T *)next;
    if (s.nb > 1) next += mgk_gemm_roundup(g->Co / g->groups * cols * (int64_t)sizeof(T), 64);
    s.gemm = next;
    return s;
}

/* Builds (im2col) or scatters back (col2im) the block of patch rows [r0, r1) and columns
 * [p0, p1) of nbb images side by side (image i's pixels are columns i*P ..), at col with row
 * stride p1 - p0; xg is image n0's group, images xs elements apart. */
static void SFX(mgk_conv_block)(const mgk_conv_geom *g, int64_t nbb, int64_t r0, int64_t r1, int64_t p0,
                                int64_t p1, T *xg, int64_t xs, T *col, int back)
{
    int64_t P = g->OH * g->OW;
    if (mgk_conv_tabled(g)) { /* small images: each patch row through the tap table, image by image */
        int32_t off[MGK_CONV_TAP_TABLE];
        mgk_conv_tap_table(g, off);
        int64_t KK = g->KH * g->KW, HW = g->H * g->W;
        /* row r outer: an element of x (dx) is read (added to) once per patch row, in increasing
         * r, as by the row copies below */
        for (int64_t r = r0; r < r1; r++) {
            const int32_t *o = off + r % KK * P;
            T *row = col + (r - r0) * (p1 - p0);
            for (int64_t m = p0 / P; m * P < p1; m++) { /* pixels q in [a, b) of image m: row[m*P + q - p0] */
                T *xm = xg + m * xs + r / KK * HW;
                int64_t a = p0 > m * P ? p0 - m * P : 0, b = p1 < (m + 1) * P ? p1 - m * P : P, e = m * P - p0;
                if (back) {
                    for (int64_t q = a; q < b; q++)
                        if (o[q] >= 0) xm[o[q]] += row[e + q];
                } else {
                    for (int64_t q = a; q < b; q++) row[e + q] = o[q] < 0 ? 0 : xm[o[q]];
                }
            }
        }
        return;
    }
    for (int64_t i = p0 / P; i < nbb && i * P < p1; i++) {
        int64_t a = p0 > i * P ? p0 - i * P : 0, b = p1 < (i + 1) * P ? p1 - i * P : P;
        T *c = col + (i * P + a - p0);
        if (a % g->OW == 0 && (b % g->OW == 0 || b == P)) { /* whole output rows a/OW .. */
            int64_t oh_s = a / g->OW, ohn = (b - a + g->OW - 1) / g->OW;
            if (back)
                SFX(mgk_col2im_full)(r0, r1, oh_s, g->H, g->W, g->KH, g->KW, ohn, g->OW, g->stride, g->pad,
                                     g->dil, c, p1 - p0, xg + i * xs);
            else
                SFX(mgk_im2col_full)(r0, r1, oh_s, g->H, g->W, g->KH, g->KW, ohn, g->OW, g->stride, g->pad,
                                     g->dil, xg + i * xs, c, p1 - p0);
        } else if (back)
            SFX(mgk_col2im)(g->H, g->W, g->KH, g->KW, g->OH, g->OW, g->stride, g->pad, g->dil, r0, r1, a, b, c, p1 - p0,
                            xg + i * xs);
        else
            SFX(mgk_im2col)(g->H, g->W, g->KH, g->KW, g->OH, g->OW, g->stride, g->pad, g->dil, r0, r1, a, b, xg + i * xs,
                            c, p1 - p0);
    }
}

/* Copies rows of P elements between the [Cog, nbb*P] matrix m (image b's columns at b*P) and the
 * nbb images' [Cog, P] planes at t (image stride ts): to_m 1 gathers, 0 scatters. */
static void SFX(mgk_conv_regroup)(int64_t nbb, int64_t Cog, int64_t P, T *m, T *t, int64_t ts, int to_m)
{
    for (int64_t co = 0; co < Cog; co++)
        for (int64_t b = 0; b < nbb; b++) {
            T *mp = m + co * nbb * P + b * P, *tp = t + b * ts + co * P;
            if (to_m) memcpy(mp, tp, (size_t)P * sizeof(T));
            else memcpy(tp, mp, (size_t)P * sizeof(T));
        }
}

/* The forward's op(B), the patch matrix of a block, packed straight from the images (a
 * mgk_gemm_pack_b_fn) where the images are narrow (mgk_conv_fused_pack): im2col calls memset
 * and memcpy per output row, of 2 to 8 pixels there, and the GEMM then packs the block again;
 * on ResNet's 4x4 and 2x2 stages that was a fifth of the convolution's time. The values are the
 * patch matrix's, so the product is, bit for bit. Per panel of NR columns (pixels) each tap
 * (i, j) reads NR elements at fixed offsets from the panel's first image, in or out of the
 * image whatever the channel: a table of them is made for the first panel and again only
 * where a panel starts elsewhere in its image (on images of 16 pixels or of a divisor of 16,
 * never). Wider images go through im2col, whose row copies are then long enough to be fast. */
static inline int SFX(mgk_conv_fused_pack)(const mgk_conv_geom *g) { return g->OW <= 8 && g->KH * g->KW <= 64; }

typedef struct {
    const mgk_conv_geom *g;
    const T *x;     /* the group of the block's first image */
    int64_t xs;     /* elements from one image to the next */
    int64_t r0, p0; /* the block's first patch row and column */
} SFX(mgk_conv_pack_ctx);

static void SFX(mgk_conv_pack_b)(const void *vctx, int64_t jc, int64_t nc, int64_t pc, int64_t kc, void *vdst)
{
    enum { NR = 64 / sizeof(T), TAPS = 64 };
    const SFX(mgk_conv_pack_ctx) *cx = vctx;
    const mgk_conv_geom *g = cx->g;
    const int64_t H = g->H, W = g->W, KK = g->KH * g->KW, OW = g->OW, OH = g->OH, P = OH * OW;
    int64_t off[TAPS][NR];                 /* per tap and column: the element read, from image n's x[c] */
    unsigned char ok[TAPS][NR], run[TAPS]; /* inside the image; all NR inside and consecutive */
    int64_t tab_oh = -1, tab_ow = -1, tab_w = -1; /* where the table's panel started, its width */
    T *dst = vdst;
    int64_t p = cx->p0 + jc, n = p / P, oh = p % P / OW, ow = p % OW; /* the panel's first pixel */
    for (int64_t q0 = 0; q0 < nc; q0 += NR, dst += kc * NR) {
        int64_t w = nc - q0 < NR ? nc - q0 : NR, n0 = n;
        if (oh != tab_oh || ow != tab_ow || w != tab_w) {
            tab_oh = oh, tab_ow = ow, tab_w = w;
            for (int64_t u = 0; u < KK; u++) run[u] = 1;
            for (int64_t t = 0, m = 0, h = oh, v = ow; t < NR; t++) { /* pixel (image n + m, h, v) */
                for (int64_t u = 0; u < KK; u++) {
                    int64_t ih = h * g->stride - g->pad + u / g->KW * g->dil;
                    int64_t iw = v * g->stride - g->pad + u % g->KW * g->dil;
                    ok[u][t] = t < w && ih >= 0 && ih < H && iw >= 0 && iw < W;
                    off[u][t] = ok[u][t] ? m * cx->xs + ih * W + iw : 0;
                    run[u] &= ok[u][t] && off[u][t] == off[u][0] + t;
                }
                if (++v == OW) {
                    v = 0;
                    if (++h == OH) h = 0, m++;
                }
            }
        }
        for (int64_t t = 0; t < w; t++) /* on to the next panel's first pixel */
            if (++ow == OW) {
                ow = 0;
                if (++oh == OH) oh = 0, n++;
            }
        int64_t r = cx->r0 + pc, c = r / KK, u = r % KK;
        for (int64_t k = 0; k < kc; k++) {
            T *d = dst + k * NR;
            const T *xc = cx->x + n0 * cx->xs + c * H * W;
            if (run[u])
                for (int64_t t = 0; t < NR; t++) d[t] = xc[off[u][0] + t];
            else
                for (int64_t t = 0; t < NR; t++) {
                    T e = xc[off[u][t]];
                    d[t] = ok[u][t] ? e : 0;
                }
            if (++u == KK) u = 0, c++;
        }
    }
}

/* The weight gradient's op(B), the transposed patch matrix of a block (rows: its pixels; columns:
 * its patch rows), packed straight from the images where they are small (mgk_conv_tabled:
 * ResNet's 2x2 stage spent a third of its weight gradient in im2col): each panel's row is one
 * pixel's NR taps, read through the tap table (conv.c) made once per call. */
static void SFX(mgk_conv_pack_bt)(const void *vctx, int64_t jc, int64_t nc, int64_t pc, int64_t kc, void *vdst)
{
    enum { NR = 64 / sizeof(T) };
    const SFX(mgk_conv_pack_ctx) *cx = vctx;
    const mgk_conv_geom *g = cx->g;
    const int64_t H = g->H, W = g->W, KK = g->KH * g->KW, OW = g->OW, P = g->OH * OW;
    int32_t off[MGK_CONV_TAP_TABLE];
    mgk_conv_tap_table(g, off);
    T *dst = vdst;
    for (int64_t q0 = 0; q0 < nc; q0 += NR, dst += kc * NR) {
        int64_t plane[NR], tab[NR], w = nc - q0 < NR ? nc - q0 : NR; /* per column: x[c]'s start, u * P */
        for (int64_t t = 0, r = cx->r0 + jc + q0; t < NR; t++, r++) {
            plane[t] = (t < w ? r / KK : 0) * H * W;
            tab[t] = t < w ? r % KK * P : -1;
        }
        int64_t p = cx->p0 + pc, m = p / P, q = p % P; /* the pixel of row k: image m, pixel q */
        for (int64_t k = 0; k < kc; k++) {
            const T *xm = cx->x + m * cx->xs;
            T *d = dst + k * NR;
            for (int64_t t = 0; t < NR; t++) {
                int32_t o = tab[t] < 0 ? -1 : off[tab[t] + q];
                d[t] = o < 0 ? 0 : xm[plane[t] + o];
            }
            if (++q == P) q = 0, m++;
        }
    }
}

/* y[N,Co,OH,OW] = conv2d(x[N,C,H,W], w[Co,C/groups,KH,KW]) with patch blocks ch; nb images per
 * GEMM (conv.h). Per block of columns, the blocks of patch rows accumulate into y in order: each
 * element of y is one chain over K, as by one GEMM (conv.h). */
static void SFX(mgk_conv2d_blocked)(MGK_GEOM_PARAMS, const T *x, const T *w, T *y, void *scratch, mgk_conv_chunk ch)
{
    mgk_conv_geom g = MGK_GEOM_INIT;
    int64_t Cg = C / groups, Cog = Co / groups, K = Cg * KH * KW, P = OH * OW;
    SFX(mgk_conv_scratch) s = SFX(mgk_conv_carve)(&g, scratch, ch);
    for (int64_t n0 = 0; n0 < N; n0 += s.nb) {
        int64_t nbb = mgk_gemm_min64(s.nb, N - n0), cols = nbb * P;
        for (int64_t gr = 0; gr < groups; gr++) {
            const T *xg = x + (n0 * C + gr * Cg) * H * W, *wg = w + gr * Cog * K;
            T *yg = y + (n0 * Co + gr * Cog) * P, *out = nbb > 1 ? s.gather : yg;
            if (mgk_conv_direct(&g)) { /* nbb == 1 */
                SFX(mgk_gemm_capped)(Cog, P, K, wg, K, 0, xg, P, 0, yg, P, 0, s.gemm, ch.gemm_cap);
                continue;
            }
            for (int64_t p0 = 0; p0 < cols; p0 += s.ch.cols) {
                int64_t pn = mgk_gemm_min64(s.ch.cols, cols - p0);
                for (int64_t r0 = 0; r0 < K; r0 += s.ch.rows) {
                    int64_t rn = mgk_gemm_min64(s.ch.rows, K - r0);
                    SFX(mgk_conv_pack_ctx) cx = {&g, xg, C * H * W, r0, p0};
                    if (SFX(mgk_conv_fused_pack)(&g)) {
                        SFX(mgk_gemm_packed)(Cog, pn, rn, wg + r0, K, 0, SFX(mgk_conv_pack_b), &cx, out + p0, cols,
                                             r0 > 0, s.gemm, ch.gemm_cap);
                        continue;
                    }
                    SFX(mgk_conv_block)(&g, nbb, r0, r0 + rn, p0, p0 + pn, (T *)xg, C * H * W, s.col, 0);
                    SFX(mgk_gemm_capped)(Cog, pn, rn, wg + r0, K, 0, s.col, pn, 0, out + p0, cols, r0 > 0, s.gemm,
                                         ch.gemm_cap);
                }
            }
            if (nbb > 1) SFX(mgk_conv_regroup)(nbb, Cog, P, s.gather, yg, Co * P, 0);
        }
    }
}

/* dx[N,C,H,W] from dy[N,Co,OH,OW] and w with patch blocks ch: per nb images and group, each
 * block of dcol = w_g^T dy_g is scattered back by col2im. An element of dx receives its taps
 * (i, j) (patch rows r = (c*KH + i)*KW + j) at strictly decreasing pixels as r increases: the
 * blocks of rows run in increasing order and, within one, the blocks of columns from the last
 * to the first, so every element gets its taps in increasing r, whatever the block bounds: the
 * order of one col2im over the whole matrix, and the sums are bit-identical to it. (Images are
 * disjoint in dx, so nb images side by side change nothing.) */
static void SFX(mgk_conv2d_grad_input_blocked)(MGK_GEOM_PARAMS, const T *dy, const T *w, T *dx, void *scratch,
                                               mgk_conv_chunk ch)
{
    mgk_conv_geom g = MGK_GEOM_INIT;
    int64_t Cg = C / groups, Cog = Co / groups, K = Cg * KH * KW, P = OH * OW;
    SFX(mgk_conv_scratch) s = SFX(mgk_conv_carve)(&g, scratch, ch);
    for (int64_t n0 = 0; n0 < N; n0 += s.nb) {
        int64_t nbb = mgk_gemm_min64(s.nb, N - n0), cols = nbb * P;
        for (int64_t gr = 0; gr < groups; gr++) {
            T *dxg = dx + (n0 * C + gr * Cg) * H * W;
            const T *dyg = dy + (n0 * Co + gr * Cog) * P, *wg = w + gr * Cog * K;
            if (mgk_conv_direct(&g)) { /* nbb == 1 */
                SFX(mgk_gemm_capped)(K, P, Cog, wg, K, 1, dyg, P, 0, dxg, P, 0, s.gemm, ch.gemm_cap);
                continue;
            }
            if (nbb > 1) {
                SFX(mgk_conv_regroup)(nbb, Cog, P, s.gather, (T *)dyg, Co * P, 1);
                dyg = s.gather;
            }
            for (int64_t i = 0; i < nbb; i++) memset(dxg + i * C * H * W, 0, (size_t)(Cg * H * W) * sizeof(T));
            for (int64_t r0 = 0; r0 < K; r0 += s.ch.rows) {
                int64_t rn = mgk_gemm_min64(s.ch.rows, K - r0);
                for (int64_t p0 = (cols - 1) / s.ch.cols * s.ch.cols; p0 >= 0; p0 -= s.ch.cols) {
                    int64_t pn = mgk_gemm_min64(s.ch.cols, cols - p0);
                    SFX(mgk_gemm_capped)(rn, pn, Cog, wg + r0, K, 1, dyg + p0, cols, 0, s.col, pn, 0, s.gemm,
                                         ch.gemm_cap);
                    SFX(mgk_conv_block)(&g, nbb, r0, r0 + rn, p0, p0 + pn, dxg, C * H * W, s.col, 1);
                }
            }
        }
    }
}

/* dw[Co,C/groups,KH,KW] = sum over images of dy_g im2col(x_g)^T with patch blocks ch: nb images
 * per GEMM, whose K runs over their columns; the groups of images in order, and within them the
 * blocks of columns in order, every GEMM after the first continuing the sums: each element of dw
 * is one chain over the (image, pixel) pairs in order, whatever nb and the blocks (gemm.c). With
 * acc, the chains continue from what dw holds: a batch cut anywhere into parts, the first part
 * overwriting and the others accumulating, gives the bits of one call over the whole batch (the
 * micro-batched step, compiler/microbatch.c). */
static void SFX(mgk_conv2d_dw)(MGK_GEOM_PARAMS, const T *x, const T *dy, T *dw, void *scratch, int acc,
                               mgk_conv_chunk ch)
{
    mgk_conv_geom g = MGK_GEOM_INIT;
    int64_t Cg = C / groups, Cog = Co / groups, K = Cg * KH * KW, P = OH * OW;
    SFX(mgk_conv_scratch) s = SFX(mgk_conv_carve)(&g, scratch, ch);
    for (int64_t n0 = 0; n0 < N; n0 += s.nb) {
        int64_t nbb = mgk_gemm_min64(s.nb, N - n0), cols = nbb * P;
        for (int64_t gr = 0; gr < groups; gr++) {
            const T *xg = x + (n0 * C + gr * Cg) * H * W, *dyg = dy + (n0 * Co + gr * Cog) * P;
            T *dwg = dw + gr * Cog * K;
            if (mgk_conv_direct(&g)) { /* nbb == 1 */
                SFX(mgk_gemm_capped)(Cog, K, P, dyg, P, 0, xg, P, 1, dwg, K, acc || n0 > 0, s.gemm, ch.gemm_cap);
                continue;
            }
            if (nbb > 1) {
                SFX(mgk_conv_regroup)(nbb, Cog, P, s.gather, (T *)dyg, Co * P, 1);
                dyg = s.gather;
            }
            for (int64_t p0 = 0; p0 < cols; p0 += s.ch.cols) {
                int64_t pn = mgk_gemm_min64(s.ch.cols, cols - p0);
                for (int64_t r0 = 0; r0 < K; r0 += s.ch.rows) {
                    int64_t rn = mgk_gemm_min64(s.ch.rows, K - r0);
                    int beta = acc || n0 > 0 || p0 > 0;
                    if (mgk_conv_tabled(&g)) {
                        SFX(mgk_conv_pack_ctx) cx = {&g, xg, C * H * W, r0, p0};
                        SFX(mgk_gemm_packed)(Cog, rn, pn, dyg + p0, cols, 0, SFX(mgk_conv_pack_bt), &cx, dwg + r0, K,
                                             beta, s.gemm, ch.gemm_cap);
                        continue;
                    }
                    SFX(mgk_conv_block)(&g, nbb, r0, r0 + rn, p0, p0 + pn, (T *)xg, C * H * W, s.col, 0);
                    SFX(mgk_gemm_capped)(Cog, rn, pn, dyg + p0, cols, 0, s.col, pn, 1, dwg + r0, K, beta, s.gemm,
                                         ch.gemm_cap);
                }
            }
        }
    }
}

/* The entry points: blocks by mgk_conv_chunking (conv.h), without a cap or with one (the scratch
 * then holds mgk_conv_capped_scratch_bytes(kind, geometry, sizeof(T), cap) bytes). */
#define MGK_GEOM_ARGS N, C, H, W, Co, KH, KW, OH, OW, stride, pad, dil, groups
#define MGK_CHUNKING(kind) mgk_conv_chunking(kind, &(mgk_conv_geom)MGK_GEOM_INIT, (int64_t)sizeof(T), cap)
void SFX(mgk_conv2d_capped)(MGK_GEOM_PARAMS, const T *x, const T *w, T *y, void *scratch, int64_t cap)
{
    SFX(mgk_conv2d_blocked)(MGK_GEOM_ARGS, x, w, y, scratch, MGK_CHUNKING(MGK_CONV_FWD));
}

void SFX(mgk_conv2d_grad_input_capped)(MGK_GEOM_PARAMS, const T *dy, const T *w, T *dx, void *scratch, int64_t cap)
{
    SFX(mgk_conv2d_grad_input_blocked)(MGK_GEOM_ARGS, dy, w, dx, scratch, MGK_CHUNKING(MGK_CONV_DX));
}

void SFX(mgk_conv2d_grad_weight_capped)(MGK_GEOM_PARAMS, const T *x, const T *dy, T *dw, void *scratch, int64_t cap)
{
    SFX(mgk_conv2d_dw)(MGK_GEOM_ARGS, x, dy, dw, scratch, 0, MGK_CHUNKING(MGK_CONV_DW));
}

/* dw += the weight gradient of this batch (dw holds the gradient of the earlier images). */
void SFX(mgk_conv2d_grad_weight_acc_capped)(MGK_GEOM_PARAMS, const T *x, const T *dy, T *dw, void *scratch,
                                            int64_t cap)
{
    SFX(mgk_conv2d_dw)(MGK_GEOM_ARGS, x, dy, dw, scratch, 1, MGK_CHUNKING(MGK_CONV_DW));
}

void SFX(mgk_conv2d)(MGK_GEOM_PARAMS, const T *x, const T *w, T *y, void *scratch)
{
    SFX(mgk_conv2d_capped)(MGK_GEOM_ARGS, x, w, y, scratch, 0);
}

void SFX(mgk_conv2d_grad_input)(MGK_GEOM_PARAMS, const T *dy, const T *w, T *dx, void *scratch)
{
    SFX(mgk_conv2d_grad_input_capped)(MGK_GEOM_ARGS, dy, w, dx, scratch, 0);
}

void SFX(mgk_conv2d_grad_weight)(MGK_GEOM_PARAMS, const T *x, const T *dy, T *dw, void *scratch)
{
    SFX(mgk_conv2d_grad_weight_capped)(MGK_GEOM_ARGS, x, dy, dw, scratch, 0);
}

void SFX(mgk_conv2d_grad_weight_acc)(MGK_GEOM_PARAMS, const T *x, const T *dy, T *dw, void *scratch)
{
    SFX(mgk_conv2d_grad_weight_acc_capped)(MGK_GEOM_ARGS, x, dy, dw, scratch, 0);
}
#undef MGK_CHUNKING
#undef MGK_GEOM_ARGS

/* Pooling over planes = N*C planes of H x W, windows K x K. */
static void SFX(mgk_max_pool2d_any)(int64_t planes, int64_t H, int64_t W, int64_t OH, int64_t OW, int64_t K,
                                    int64_t stride, int64_t pad, const T *restrict x, T *restrict y)
{
    for (int64_t p = 0; p < planes; p++) {
        const T *xp = x + p * H * W;
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                T best = -INFINITY;
                for (int64_t i = 0; i < K; i++) {
                    int64_t ih = oh * stride - pad + i;
                    if (ih < 0 || ih >= H) continue;
                    for (int64_t j = 0; j < K; j++) {
                        int64_t iw = ow * stride - pad + j;
                        if (iw >= 0 && iw < W && xp[ih * W + iw] > best) best = xp[ih * W + iw];
                    }
                }
                y[(p * OH + oh) * OW + ow] = best;
            }
    }
}

static void SFX(mgk_max_pool2d_grad_any)(int64_t planes, int64_t H, int64_t W, int64_t OH, int64_t OW, int64_t K,
                                         int64_t stride, int64_t pad, const T *restrict x, const T *restrict dy,
                                         T *restrict dx)
{
    memset(dx, 0, (size_t)(planes * H * W) * sizeof(T));
    for (int64_t p = 0; p < planes; p++) {
        const T *xp = x + p * H * W;
        T *dp = dx + p * H * W;
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                int64_t arg = -1;
                T best = -INFINITY;
                for (int64_t i = 0; i < K; i++) {
                    int64_t ih = oh * stride - pad + i;
                    if (ih < 0 || ih >= H) continue;
                    for (int64_t j = 0; j < K; j++) {
                        int64_t iw = ow * stride - pad + j;
                        if (iw >= 0 && iw < W && (arg < 0 || xp[ih * W + iw] > best)) {
                            best = xp[ih * W + iw];
                            arg = ih * W + iw;
                        }
                    }
                }
                if (arg >= 0) dp[arg] += dy[(p * OH + oh) * OW + ow];
            }
    }
}

/* 2x2 windows at stride 2 without padding (every convnet's pooling here): the windows do not
 * overlap, so without the general loops' bounds checks and branches, which on random data
 * mispredicted about once a window (cnn_fmnist's pooling gradient was a tenth of its step). The
 * same comparisons in the same order (the first maximum of a window, strictly greater), so the
 * same bits: the gradient writes 0 + dy where the general path adds dy to a zeroed dx. */
static void SFX(mgk_max_pool2d_2x2)(int64_t planes, int64_t H, int64_t W, int64_t OH, int64_t OW,
                                    const T *restrict x, T *restrict y)
{
    for (int64_t p = 0; p < planes; p++)
        MGK_NO_VECTORIZE /* (nor this one, once the constant-width loop inside is unrolled) */
        for (int64_t oh = 0; oh < OH; oh++) {
            const T *r0 = x + (p * H + 2 * oh) * W, *r1 = r0 + W;
            T *yo = y + (p * OH + oh) * OW;
            MGK_NO_VECTORIZE
            for (int64_t ow = 0; ow < OW; ow++) {
                T best = -INFINITY, a = r0[2 * ow], b = r0[2 * ow + 1], c = r1[2 * ow], e = r1[2 * ow + 1];
                best = a > best ? a : best;
                best = b > best ? b : best;
                best = c > best ? c : best;
                yo[ow] = e > best ? e : best;
            }
        }
}

static void SFX(mgk_max_pool2d_grad_2x2)(int64_t planes, int64_t H, int64_t W, int64_t OH, int64_t OW,
                                         const T *restrict x, const T *restrict dy, T *restrict dx)
{
    if (H != 2 * OH || W != 2 * OW) /* (a last odd row or column no window covers) */
        memset(dx, 0, (size_t)(planes * H * W) * sizeof(T));
    for (int64_t p = 0; p < planes; p++)
        MGK_NO_VECTORIZE /* (nor this one, once the constant-width loop inside is unrolled) */
        for (int64_t oh = 0; oh < OH; oh++) {
            const T *r0 = x + (p * H + 2 * oh) * W, *r1 = r0 + W, *g = dy + (p * OH + oh) * OW;
            T *d0 = dx + (p * H + 2 * oh) * W, *d1 = d0 + W;
            MGK_NO_VECTORIZE
            for (int64_t ow = 0; ow < OW; ow++) {
                T a = r0[2 * ow], b = r0[2 * ow + 1], c = r1[2 * ow], e = r1[2 * ow + 1], best = a, v = (T)0 + g[ow];
                int k = 0;
                k = b > best ? 1 : k, best = b > best ? b : best;
                k = c > best ? 2 : k, best = c > best ? c : best;
                k = e > best ? 3 : k;
                d0[2 * ow] = k == 0 ? v : 0;
                d0[2 * ow + 1] = k == 1 ? v : 0;
                d1[2 * ow] = k == 2 ? v : 0;
                d1[2 * ow + 1] = k == 3 ? v : 0;
            }
        }
}

void SFX(mgk_max_pool2d)(int64_t planes, int64_t H, int64_t W, int64_t OH, int64_t OW, int64_t K,
                         int64_t stride, int64_t pad, const T *restrict x, T *restrict y)
{
    if (K == 2 && stride == 2 && pad == 0) SFX(mgk_max_pool2d_2x2)(planes, H, W, OH, OW, x, y);
    else SFX(mgk_max_pool2d_any)(planes, H, W, OH, OW, K, stride, pad, x, y);
}

void SFX(mgk_max_pool2d_grad)(int64_t planes, int64_t H, int64_t W, int64_t OH, int64_t OW, int64_t K,
                              int64_t stride, int64_t pad, const T *restrict x, const T *restrict dy,
                              T *restrict dx)
{
    if (K == 2 && stride == 2 && pad == 0) SFX(mgk_max_pool2d_grad_2x2)(planes, H, W, OH, OW, x, dy, dx);
    else SFX(mgk_max_pool2d_grad_any)(planes, H, W, OH, OW, K, stride, pad, x, dy, dx);
}

void SFX(mgk_avg_pool2d)(int64_t planes, int64_t H, int64_t W, int64_t OH, int64_t OW, int64_t K,
                         int64_t stride, int64_t pad, const T *restrict x, T *restrict y)
{
    T inv = (T)(1.0 / (double)(K * K));
    for (int64_t p = 0; p < planes; p++) {
        const T *xp = x + p * H * W;
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                T s = 0;
                for (int64_t i = 0; i < K; i++) {
                    int64_t ih = oh * stride - pad + i;
                    if (ih < 0 || ih >= H) continue;
                    for (int64_t j = 0; j < K; j++) {
                        int64_t iw = ow * stride - pad + j;
                        if (iw >= 0 && iw < W) s += xp[ih * W + iw];
                    }
                }
                y[(p * OH + oh) * OW + ow] = s * inv;
            }
    }
}

void SFX(mgk_avg_pool2d_grad)(int64_t planes, int64_t H, int64_t W, int64_t OH, int64_t OW, int64_t K,
                              int64_t stride, int64_t pad, const T *restrict dy, T *restrict dx)
{
    T inv = (T)(1.0 / (double)(K * K));
    memset(dx, 0, (size_t)(planes * H * W) * sizeof(T));
    for (int64_t p = 0; p < planes; p++) {
        T *dp = dx + p * H * W;
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                T g = dy[(p * OH + oh) * OW + ow] * inv;
                for (int64_t i = 0; i < K; i++) {
                    int64_t ih = oh * stride - pad + i;
                    if (ih < 0 || ih >= H) continue;
                    for (int64_t j = 0; j < K; j++) {
                        int64_t iw = ow * stride - pad + j;
                        if (iw >= 0 && iw < W) dp[ih * W + iw] += g;
                    }
                }
            }
    }
}

/* y[r] = mean of the len elements of row r, accumulated in double */
void SFX(mgk_row_mean)(int64_t rows, int64_t len, const T *restrict x, T *restrict y)
{
    for (int64_t r = 0; r < rows; r++) {
        double s = 0;
        for (int64_t i = 0; i < len; i++) s += (double)x[r * len + i];
        y[r] = (T)(s / (double)len);
    }
}
