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

/* col[(c*KH + i)*KW + j][oh*OW + ow] = x[c][oh*stride - pad + i*dil][ow*stride - pad + j*dil],
 * 0 in the padding; x is one group of one image (Cg planes of H x W). */
static void SFX(mgk_im2col)(int64_t Cg, int64_t H, int64_t W, int64_t KH, int64_t KW, int64_t OH,
                            int64_t OW, int64_t stride, int64_t pad, int64_t dil, const T *restrict x,
                            T *restrict col)
{
    for (int64_t i = 0; i < KH; i++) {
        int64_t oh0, oh1;
        SFX(mgk_valid)(H, OH, stride, i * dil - pad, &oh0, &oh1);
        for (int64_t j = 0; j < KW; j++) {
            int64_t offw = j * dil - pad, ow0, ow1;
            SFX(mgk_valid)(W, OW, stride, offw, &ow0, &ow1);
            for (int64_t c = 0; c < Cg; c++) {
                T *row = col + ((c * KH + i) * KW + j) * OH * OW;
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

/* The adjoint of im2col: dx (zeroed here) += col scattered back, in a fixed order. */
static void SFX(mgk_col2im)(int64_t Cg, int64_t H, int64_t W, int64_t KH, int64_t KW, int64_t OH,
                            int64_t OW, int64_t stride, int64_t pad, int64_t dil, const T *restrict col,
                            T *restrict dx)
{
    memset(dx, 0, (size_t)(Cg * H * W) * sizeof(T));
    for (int64_t c = 0; c < Cg; c++)
        for (int64_t i = 0; i < KH; i++) {
            int64_t oh0, oh1;
            SFX(mgk_valid)(H, OH, stride, i * dil - pad, &oh0, &oh1);
            for (int64_t j = 0; j < KW; j++) {
                int64_t offw = j * dil - pad, ow0, ow1;
                SFX(mgk_valid)(W, OW, stride, offw, &ow0, &ow1);
                const T *row = col + ((c * KH + i) * KW + j) * OH * OW;
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

/* y[N,Co,OH,OW] = conv2d(x[N,C,H,W], w[Co,C/groups,KH,KW]) */
void SFX(mgk_conv2d)(MGK_GEOM_PARAMS, const T *x, const T *w, T *y, void *scratch)
{
    mgk_conv_geom g = MGK_GEOM_INIT;
    int64_t Cg = C / groups, Cog = Co / groups, K = Cg * KH * KW, P = OH * OW;
    int direct = mgk_conv_direct(&g);
    T *col = (T *)mgk_conv_align64(scratch);
    void *gs = direct ? (void *)col : (void *)((char *)col + mgk_gemm_roundup(K * P * (int64_t)sizeof(T), 64));
    for (int64_t n = 0; n < N; n++)
        for (int64_t gr = 0; gr < groups; gr++) {
            const T *xg = x + (n * C + gr * Cg) * H * W;
            const T *b = xg;
            if (!direct) {
                SFX(mgk_im2col)(Cg, H, W, KH, KW, OH, OW, stride, pad, dil, xg, col);
                b = col;
            }
            SFX(mgk_gemm)(Cog, P, K, w + gr * Cog * K, K, 0, b, P, 0, y + (n * Co + gr * Cog) * P, P, 0, gs);
        }
}

/* dx[N,C,H,W] from dy[N,Co,OH,OW] and w: per image and group, dcol = w_g^T dy_g, then col2im */
void SFX(mgk_conv2d_grad_input)(MGK_GEOM_PARAMS, const T *dy, const T *w, T *dx, void *scratch)
{
    mgk_conv_geom g = MGK_GEOM_INIT;
    int64_t Cg = C / groups, Cog = Co / groups, K = Cg * KH * KW, P = OH * OW;
    int direct = mgk_conv_direct(&g);
    T *col = (T *)mgk_conv_align64(scratch);
    void *gs = direct ? (void *)col : (void *)((char *)col + mgk_gemm_roundup(K * P * (int64_t)sizeof(T), 64));
    for (int64_t n = 0; n < N; n++)
        for (int64_t gr = 0; gr < groups; gr++) {
            T *dxg = dx + (n * C + gr * Cg) * H * W;
            T *out = direct ? dxg : col;
            SFX(mgk_gemm)(K, P, Cog, w + gr * Cog * K, K, 1, dy + (n * Co + gr * Cog) * P, P, 0, out, P, 0, gs);
            if (!direct) SFX(mgk_col2im)(Cg, H, W, KH, KW, OH, OW, stride, pad, dil, col, dxg);
        }
}

/* dw[Co,C/groups,KH,KW] = sum over images of dy_g im2col(x_g)^T, images in order */
void SFX(mgk_conv2d_grad_weight)(MGK_GEOM_PARAMS, const T *x, const T *dy, T *dw, void *scratch)
{
    mgk_conv_geom g = MGK_GEOM_INIT;
    int64_t Cg = C / groups, Cog = Co / groups, K = Cg * KH * KW, P = OH * OW;
    int direct = mgk_conv_direct(&g);
    T *col = (T *)mgk_conv_align64(scratch);
    void *gs = direct ? (void *)col : (void *)((char *)col + mgk_gemm_roundup(K * P * (int64_t)sizeof(T), 64));
    for (int64_t n = 0; n < N; n++)
        for (int64_t gr = 0; gr < groups; gr++) {
            const T *xg = x + (n * C + gr * Cg) * H * W;
            const T *b = xg;
            if (!direct) {
                SFX(mgk_im2col)(Cg, H, W, KH, KW, OH, OW, stride, pad, dil, xg, col);
                b = col;
            }
            SFX(mgk_gemm)(Cog, K, P, dy + (n * Co + gr * Cog) * P, P, 0, b, P, 1, dw + gr * Cog * K, K, n > 0, gs);
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
