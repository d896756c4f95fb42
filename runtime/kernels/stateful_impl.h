/* stateful_impl.h — batch_norm and dropout kernel bodies, instantiated by stateful.c for
 * T = float and T = double. Tensors are [N, C, S] (S = H*W, or 1 for [N, C] inputs);
 * channel c of sample n is the contiguous run x[(n*C + c)*S .. +S). */

/* The sums of a batch_norm kernel, in the one order every one of them adds in, whole batch or
 * part after part (bit-identical either way): sample after sample, each sample's run of S values
 * of the channel summed in 8 lanes (value i in lane i % 8), the lanes added in one fixed tree,
 * and that added to the sum so far. (One chain of S additions in double ran at one addition per
 * 4 cycles: most of batch_norm's time, and the lanes run in vector registers.) The lanes and
 * their tree: stateful.c. */

/* s plus the values of channel c */
static double SFX(mgk_bn_sum)(int64_t N, int64_t C, int64_t S, const T *restrict x, int64_t c, double s)
{
    for (int64_t n = 0; n < N; n++) {
        const T *p = x + (n * C + c) * S;
        double a[BN_LANES] = {0};
        int64_t i = 0;
        for (; i + BN_LANES <= S; i += BN_LANES)
            for (int j = 0; j < BN_LANES; j++) a[j] += (double)p[i + j];
        for (int j = 0; i < S; i++, j++) a[j] += (double)p[i];
        s += mgk_bn_tree(a);
    }
    return s;
}

/* q plus the squared deviations of channel c from mu */
static double SFX(mgk_bn_sqdev)(int64_t N, int64_t C, int64_t S, const T *restrict x, int64_t c, double mu, double q)
{
    for (int64_t n = 0; n < N; n++) {
        const T *p = x + (n * C + c) * S;
        double a[BN_LANES] = {0};
        int64_t i = 0;
        for (; i + BN_LANES <= S; i += BN_LANES)
            for (int j = 0; j < BN_LANES; j++) {
                double e = (double)p[i + j] - mu;
                a[j] += e * e;
            }
        for (int j = 0; i < S; i++, j++) {
            double e = (double)p[i] - mu;
            a[j] += e * e;
        }
        q += mgk_bn_tree(a);
    }
    return q;
}

/* *sd plus the values of channel c of dy, *sdx plus those of dy * (x - mu) * rs */
static void SFX(mgk_bn_dsums)(int64_t N, int64_t C, int64_t S, const T *restrict x, const T *restrict dy, int64_t c,
                              double mu, double rs, double *sd, double *sdx)
{
    for (int64_t n = 0; n < N; n++) {
        const T *p = x + (n * C + c) * S, *pd = dy + (n * C + c) * S;
        double a[BN_LANES] = {0}, b[BN_LANES] = {0};
        int64_t i = 0;
        for (; i + BN_LANES <= S; i += BN_LANES)
            for (int j = 0; j < BN_LANES; j++) {
                a[j] += (double)pd[i + j];
                b[j] += (double)pd[i + j] * (((double)p[i + j] - mu) * rs);
            }
        for (int j = 0; i < S; i++, j++) {
            a[j] += (double)pd[i];
            b[j] += (double)pd[i] * (((double)p[i] - mu) * rs);
        }
        *sd += mgk_bn_tree(a);
        *sdx += mgk_bn_tree(b);
    }
}

/* mean and 1/sqrt(biased variance + eps) of channel c, two passes in double, fixed order */
static void SFX(mgk_bn_channel)(int64_t N, int64_t C, int64_t S, const T *restrict x, int64_t c, double eps,
                                double *mean, double *var, double *rstd)
{
    double cnt = (double)(N * S), s = SFX(mgk_bn_sum)(N, C, S, x, c, 0), mu = s / cnt;
    double q = SFX(mgk_bn_sqdev)(N, C, S, x, c, mu, 0);
    *mean = mu;
    *var = q / cnt;
    *rstd = 1.0 / sqrt(q / cnt + eps);
}

/* Channel c of y = (x - mean) * rstd * g + b, and (rm not NULL) the running statistics moved
 * towards mean and the unbiased variance of cnt values: batch_norm's and bn_apply's one body. */
static void SFX(mgk_bn_normalize)(int64_t N, int64_t C, int64_t S, const T *restrict x, const T *restrict g,
                                  const T *restrict b, int64_t c, double mu, double var, double rs, double cnt,
                                  double momentum, T *restrict rm, T *restrict rv, T *restrict y)
{
    T m = (T)mu, sc = (T)(rs * (double)g[c]), sh = b[c];
    for (int64_t n = 0; n < N; n++) {
        const T *p = x + (n * C + c) * S;
        T *q = y + (n * C + c) * S;
        for (int64_t i = 0; i < S; i++) q[i] = (p[i] - m) * sc + sh;
    }
    if (rm) {
        rm[c] = (T)((1.0 - momentum) * (double)rm[c] + momentum * mu);
        rv[c] = (T)((1.0 - momentum) * (double)rv[c] + momentum * var * cnt / (cnt - 1.0));
    }
}

/* Training mode: y = (x - mean) * rstd * g + b with the batch statistics. When rm and rv are
 * not NULL the running statistics move towards them (PyTorch's rule, unbiased variance):
 * r = (1 - momentum) * r + momentum * stat. The compiler passes them on exactly one call per
 * training step, so a recomputation of the op leaves them alone. */
void SFX(mgk_batch_norm)(int64_t N, int64_t C, int64_t S, const T *restrict x, const T *restrict g,
                         const T *restrict b, double eps, double momentum, T *restrict rm, T *restrict rv,
                         T *restrict y)
{
    double cnt = (double)(N * S);
    for (int64_t c = 0; c < C; c++) {
        double mu, var, rs;
        SFX(mgk_bn_channel)(N, C, S, x, c, eps, &mu, &var, &rs);
        SFX(mgk_bn_normalize)(N, C, S, x, g, b, c, mu, var, rs, cnt, momentum, rm, rv, y);
    }
}

/* Inference: the running statistics instead of the batch's. */
void SFX(mgk_batch_norm_eval)(int64_t N, int64_t C, int64_t S, const T *restrict x, const T *restrict g,
                              const T *restrict b, double eps, const T *restrict rm, const T *restrict rv,
                              T *restrict y)
{
    for (int64_t c = 0; c < C; c++) {
        double rs = 1.0 / sqrt((double)rv[c] + eps);
        T m = rm[c], sc = (T)(rs * (double)g[c]), sh = b[c];
        for (int64_t n = 0; n < N; n++) {
            const T *p = x + (n * C + c) * S;
            T *q = y + (n * C + c) * S;
            for (int64_t i = 0; i < S; i++) q[i] = (p[i] - m) * sc + sh;
        }
    }
}

/* dx = g * rstd * (dy - mean(dy) - xhat * mean(dy * xhat)), means over the channel's N*S values */
void SFX(mgk_batch_norm_grad_input)(int64_t N, int64_t C, int64_t S, const T *restrict x, const T *restrict g,
                                    const T *restrict dy, double eps, T *restrict dx)
{
    double cnt = (double)(N * S);
    for (int64_t c = 0; c < C; c++) {
        double mu, var, rs, sd = 0, sdx = 0;
        SFX(mgk_bn_channel)(N, C, S, x, c, eps, &mu, &var, &rs);
        SFX(mgk_bn_dsums)(N, C, S, x, dy, c, mu, rs, &sd, &sdx);
        double md = sd / cnt, mdx = sdx / cnt, k = (double)g[c] * rs;
        for (int64_t n = 0; n < N; n++) {
            const T *p = x + (n * C + c) * S, *pd = dy + (n * C + c) * S;
            T *q = dx + (n * C + c) * S;
            for (int64_t i = 0; i < S; i++) q[i] = (T)(k * ((double)pd[i] - md - ((double)p[i] - mu) * rs * mdx));
        }
    }
}

/* dg[c] = sum of dy * xhat over the channel */
void SFX(mgk_batch_norm_grad_scale)(int64_t N, int64_t C, int64_t S, const T *restrict x, const T *restrict dy,
                                    double eps, T *restrict dg)
{
    for (int64_t c = 0; c < C; c++) {
        double mu, var, rs, sd = 0, acc = 0;
        SFX(mgk_bn_channel)(N, C, S, x, c, eps, &mu, &var, &rs);
        SFX(mgk_bn_dsums)(N, C, S, x, dy, c, mu, rs, &sd, &acc);
        dg[c] = (T)acc;
    }
}

/* db[c] = sum of dy over the channel */
void SFX(mgk_batch_norm_grad_shift)(int64_t N, int64_t C, int64_t S, const T *restrict dy, T *restrict db)
{
    for (int64_t c = 0; c < C; c++) {
        db[c] = (T)SFX(mgk_bn_sum)(N, C, S, dy, c, 0);
    }
}

/* batch_norm over a batch in parts (the micro-batching rewrite, compiler/microbatch.c). x is
 * one part [N, C, S] of a batch of Nt samples; the statistics travel from part to part in double,
 * so each channel's sums take the very additions of the whole-batch kernels above, sample after
 * sample: st = [sum x; sum (x - mean)^2] ([2, C]); gs = those two rows, then [sum dy;
 * sum dy * xhat] ([4, C]). */

/* pass 0 adds the part's sum of x to row 0 (prev NULL: from 0), pass 1 its squared deviations
 * from the batch mean (row 0 / count, complete by then) to row 1; prev is the sums so far. */
void SFX(mgk_bn_stats)(int64_t N, int64_t C, int64_t S, int64_t Nt, int64_t pass, const T *restrict x,
                       const double *prev, double *st)
{
    double cnt = (double)(Nt * S);
    for (int64_t c = 0; c < C; c++) {
        double s = prev ? prev[c] : 0, q = prev && pass ? prev[C + c] : 0;
        if (pass == 0) s = SFX(mgk_bn_sum)(N, C, S, x, c, s);
        else q = SFX(mgk_bn_sqdev)(N, C, S, x, c, s / cnt, q);
        st[c] = s;
        st[C + c] = q;
    }
}

/* mgk_batch_norm on a part with the batch's statistics st; rm and rv (not NULL on the one call
 * the compiler marks) move as there. */
void SFX(mgk_bn_apply)(int64_t N, int64_t C, int64_t S, int64_t Nt, const T *restrict x, const T *restrict g,
                       const T *restrict b, const double *restrict st, double eps, double momentum, T *restrict rm,
                       T *restrict rv, T *restrict y)
{
    double cnt = (double)(Nt * S);
    for (int64_t c = 0; c < C; c++) {
        double mu = st[c] / cnt, q = st[C + c], var = q / cnt, rs = 1.0 / sqrt(q / cnt + eps);
        SFX(mgk_bn_normalize)(N, C, S, x, g, b, c, mu, var, rs, cnt, momentum, rm, rv, y);
    }
}

/* The backward's sums of a part: prev is st ([2, C], the first part) or the [4, C] sums so far. */
void SFX(mgk_bn_grad_sums)(int64_t N, int64_t C, int64_t S, int64_t Nt, int64_t first, const T *restrict x,
                           const T *restrict dy, const double *prev, double eps, double *gs)
{
    double cnt = (double)(Nt * S);
    for (int64_t c = 0; c < C; c++) {
        double s = prev[c], q = prev[C + c], sd = first ? 0 : prev[2 * C + c], sdx = first ? 0 : prev[3 * C + c];
        double mu = s / cnt, rs = 1.0 / sqrt(q / cnt + eps);
        SFX(mgk_bn_dsums)(N, C, S, x, dy, c, mu, rs, &sd, &sdx);
        gs[c] = s;
        gs[C + c] = q;
        gs[2 * C + c] = sd;
        gs[3 * C + c] = sdx;
    }
}

/* mgk_batch_norm_grad_input on a part, with the batch's sums gs */
void SFX(mgk_bn_grad_apply)(int64_t N, int64_t C, int64_t S, int64_t Nt, const T *restrict x, const T *restrict g,
                            const T *restrict dy, const double *restrict gs, double eps, T *restrict dx)
{
    double cnt = (double)(Nt * S);
    for (int64_t c = 0; c < C; c++) {
        double mu = gs[c] / cnt, rs = 1.0 / sqrt(gs[C + c] / cnt + eps);
        double md = gs[2 * C + c] / cnt, mdx = gs[3 * C + c] / cnt, k = (double)g[c] * rs;
        for (int64_t n = 0; n < N; n++) {
            const T *p = x + (n * C + c) * S, *pd = dy + (n * C + c) * S;
            T *o = dx + (n * C + c) * S;
            for (int64_t i = 0; i < S; i++) o[i] = (T)(k * ((double)pd[i] - md - ((double)p[i] - mu) * rs * mdx));
        }
    }
}

/* A parameter gradient from the sums: row 2 (sum dy) is the shift's, row 3 (sum dy * xhat) the
 * scale's, as mgk_batch_norm_grad_shift and _scale compute them. */
void SFX(mgk_bn_grad_param)(int64_t C, int64_t row, const double *restrict gs, T *restrict out)
{
    for (int64_t c = 0; c < C; c++) out[c] = (T)gs[row * C + c];
}

/* y = x * keep / (1 - p); the backward applies the same mask to dy (the same kernel). */
void SFX(mgk_dropout)(int64_t n, const T *restrict x, double p, int64_t seed, const int32_t *step, int64_t op,
                      T *restrict y)
{
    uint64_t key = mgk_dropout_key(seed, step, op);
    uint32_t th = mgk_threshold(p);
    T scale = (T)(1.0 / (1.0 - p));
    for (int64_t i = 0; i < n; i++) y[i] = mgk_keep(key, i, th) ? x[i] * scale : (T)0;
}
