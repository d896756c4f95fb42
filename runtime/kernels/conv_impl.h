/* conv_impl.h — convolution and pooling kernel bodies, instantiated by conv.c for T = float
 * and T = double; SFX(name) appends the type suffix. */

/* The outputs o in [*lo, *hi) of an axis whose input index o*stride + off lies in [0, n). */
static inline void SFX(mgk_valid)(int64_t n, int64_t out, int64_t stride, int64_t off, int64_t *lo, int64_t *hi)
{
    int64_t l = off >= 0 ? 0 : (-off + stride - 1) / stride;
    int64_t h = n - 1 - off < 0 ? 0 : (n - 1 - off) / stride + 1;
    if (h > out) h = out;
    if (l > h) l = h;
    *lo = l;
    *hi = h;
}

/* col[((c*KH + i)*KW + j) * ld + oh*OW + ow] = x[c][oh*stride - pad + i*dil][ow*stride - pad + j*dil],
 * 0 in the padding; x is one group of one image (Cg planes of H x W), ld >= OH*OW the row stride
 * of the patch matrix (several images' columns side by side). */
static void SFX(mgk_im2col)(int64_t Cg, int64_t H, int64_t W, int64_t KH, int64_t KW, int64_t OH,
                            int64_t OW, int64_t stride, int64_t pad, int64_t dil, const T *restrict x,
                            T *restrict col, int64_t ld)
{
    for (int64_t i = 0; i < KH; i++) {
        int64_t oh0, oh1;
        SFX(mgk_valid)(H, OH, stride, i * dil - pad, &oh0, &oh1);
        for (int64_t j = 0; j < KW; j++) {
            int64_t offw = j * dil - pad, ow0, ow1;
            SFX(mgk_valid)(W, OW, stride, offw, &ow0, &ow1);
            for (int64_t c = 0; c < Cg; c++) {
                T *row = col + ((c * KH + i) * KW + j) * ld;
                memset(row, 0, (size_t)(oh0 * OW) * sizeof(T));
                for (int64_t oh = oh0; oh < oh1; oh++) {
                    const T *in = x + (c * H + oh * stride + i * dil - pad) * W;
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

/* The adjoint of im2col (same ld): dx (zeroed here) += col scattered back, in a fixed order. */
static void SFX(mgk_col2im)(int64_t Cg, int64_t H, int64_t W, int64_t KH, int64_t KW, int64_t OH,
                            int64_t OW, int64_t stride, int64_t pad, int64_t dil, const T *restrict col,
                            int64_t ld, T *restrict dx)
{
    memset(dx, 0, (size_t)(Cg * H * W) * sizeof(T));
    for (int64_t c = 0; c < Cg; c++)
        for (int64_t i = 0; i < KH; i++) {
            int64_t oh0, oh1;
            SFX(mgk_valid)(H, OH, stride, i * dil - pad, &oh0, &oh1);
            for (int64_t j = 0; j < KW; j++) {
                int64_t offw = j * dil - pad, ow0, ow1;
                SFX(mgk_valid)(W, OW, stride, offw, &ow0, &ow1);
                const T *row = col + ((c * KH + i) * KW + j) * ld;
                for (int64_t oh = oh0; oh < oh1; oh++) {
                    const T *in = row + oh * OW;
                    T *out = dx + (c * H + oh * stride + i * dil - pad) * W;
                    if (stride == 1)
                        for (int64_t ow = ow0; ow < ow1; ow++) out[ow + offw] += in[ow];
                    else
                        for (int64_t ow = ow0; ow < ow1; ow++) out[ow * stride + offw] += in[ow];
                }
            }
        }
}

/* The scratch of a convolution kernel (sizes: mgk_conv_scratch_bytes): the patch matrix of up
 * to nb images, the gathered output (gradient) of nb > 1 images, then the GEMM's buffers. */
typedef struct {
    T *col, *gather;
    void *gemm;
    int64_t nb;
} SFX(mgk_conv_scratch);

static SFX(mgk_conv_scratch) SFX(mgk_conv_carve)(const mgk_conv_geom *g, void *scratch)
{
    SFX(mgk_conv_scratch) s;
    int64_t K = g->C / g->groups * g->KH * g->KW, cols = g->OH * g->OW * mgk_conv_batch(g);
    s.nb = mgk_conv_batch(g);
    s.col = (T *)mgk_conv_align64(scratch);
    char *next = (char *)s.col + (mgk_conv_direct(g) ? 0 : mgk_gemm_roundup(K * cols * (int64_t)sizeof(T), 64));
    s.gather = (T *)next;
    if (s.nb > 1) next += mgk_gemm_roundup(g->Co / g->groups * cols * (int64_t)sizeof(T), 64);
    s.gemm = next;
    return s;
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

/* y[N,Co,OH,OW] = conv2d(x[N,C,H,W], w[Co,C/groups,KH,KW]); nb images per GEMM (conv.h) */
void SFX(mgk_conv2d)(MGK_GEOM_PARAMS, const T *x, const T *w, T *y, void *scratch)
{
    mgk_conv_geom g = MGK_GEOM_INIT;
    int64_t Cg = C / groups, Cog = Co / groups, K = Cg * KH * KW, P = OH * OW;
    int direct = mgk_conv_direct(&g);
    SFX(mgk_conv_scratch) s = SFX(mgk_conv_carve)(&g, scratch);
    for (int64_t n0 = 0; n0 < N; n0 += s.nb) {
        int64_t nbb = mgk_gemm_min64(s.nb, N - n0), cols = nbb * P;
        for (int64_t gr = 0; gr < groups; gr++) {
            const T *b = x + (n0 * C + gr * Cg) * H * W; /* direct: nbb == 1 */
            if (!direct) {
                for (int64_t i = 0; i < nbb; i++)
                    SFX(mgk_im2col)(Cg, H, W, KH, KW, OH, OW, stride, pad, dil, x + ((n0 + i) * C + gr * Cg) * H * W,
                                    s.col + i * P, cols);
                b = s.col;
            }
            T *yg = y + (n0 * Co + gr * Cog) * P;
            SFX(mgk_gemm)(Cog, cols, K, w + gr * Cog * K, K, 0, b, cols, 0, nbb > 1 ? s.gather : yg, cols, 0, s.gemm);
            if (nbb > 1) SFX(mgk_conv_regroup)(nbb, Cog, P, s.gather, yg, Co * P, 0);
        }
    }
}

/* dx[N,C,H,W] from dy[N,Co,OH,OW] and w: per nb images and group, dcol = w_g^T dy_g, then col2im */
void SFX(mgk_conv2d_grad_input)(MGK_GEOM_PARAMS, const T *dy, const T *w, T *dx, void *scratch)
{
    mgk_conv_geom g = MGK_GEOM_INIT;
    int64_t Cg = C / groups, Cog = Co / groups, K = Cg * KH * KW, P = OH * OW;
    int direct = mgk_conv_direct(&g);
    SFX(mgk_conv_scratch) s = SFX(mgk_conv_carve)(&g, scratch);
    for (int64_t n0 = 0; n0 < N; n0 += s.nb) {
        int64_t nbb = mgk_gemm_min64(s.nb, N - n0), cols = nbb * P;
        for (int64_t gr = 0; gr < groups; gr++) {
            T *dxg = dx + (n0 * C + gr * Cg) * H * W; /* direct: nbb == 1 */
            const T *dyg = dy + (n0 * Co + gr * Cog) * P;
            if (nbb > 1) {
                SFX(mgk_conv_regroup)(nbb, Cog, P, s.gather, (T *)dyg, Co * P, 1);
                dyg = s.gather;
            }
            T *out = direct ? dxg : s.col;
            SFX(mgk_gemm)(K, cols, Cog, w + gr * Cog * K, K, 1, dyg, cols, 0, out, cols, 0, s.gemm);
            if (!direct)
                for (int64_t i = 0; i < nbb; i++)
                    SFX(mgk_col2im)(Cg, H, W, KH, KW, OH, OW, stride, pad, dil, s.col + i * P, cols,
                                    dx + ((n0 + i) * C + gr * Cg) * H * W);
        }
    }
}

/* dw[Co,C/groups,KH,KW] = sum over images of dy_g im2col(x_g)^T: nb images per GEMM, whose K
 * runs over their columns; the groups of images in order */
void SFX(mgk_conv2d_grad_weight)(MGK_GEOM_PARAMS, const T *x, const T *dy, T *dw, void *scratch)
{
    mgk_conv_geom g = MGK_GEOM_INIT;
    int64_t Cg = C / groups, Cog = Co / groups, K = Cg * KH * KW, P = OH * OW;
    int direct = mgk_conv_direct(&g);
    SFX(mgk_conv_scratch) s = SFX(mgk_conv_carve)(&g, scratch);
    for (int64_t n0 = 0; n0 < N; n0 += s.nb) {
        int64_t nbb = mgk_gemm_min64(s.nb, N - n0), cols = nbb * P;
        for (int64_t gr = 0; gr < groups; gr++) {
            const T *b = x + (n0 * C + gr * Cg) * H * W; /* direct: nbb == 1 */
            if (!direct) {
                for (int64_t i = 0; i < nbb; i++)
                    SFX(mgk_im2col)(Cg, H, W, KH, KW, OH, OW, stride, pad, dil, x + ((n0 + i) * C + gr * Cg) * H * W,
                                    s.col + i * P, cols);
                b = s.col;
            }
            const T *dyg = dy + (n0 * Co + gr * Cog) * P;
            if (nbb > 1) {
                SFX(mgk_conv_regroup)(nbb, Cog, P, s.gather, (T *)dyg, Co * P, 1);
                dyg = s.gather;
            }
            SFX(mgk_gemm)(Cog, K, cols, dyg, cols, 0, b, cols, 1, dw + gr * Cog * K, K, n0 > 0, s.gemm);
        }
    }
}

/* Pooling over planes = N*C planes of H x W, windows K x K. */
void SFX(mgk_max_pool2d)(int64_t planes, int64_t H, int64_t W, int64_t OH, int64_t OW, int64_t K,
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

void SFX(mgk_max_pool2d_grad)(int64_t planes, int64_t H, int64_t W, int64_t OH, int64_t OW, int64_t K,
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
