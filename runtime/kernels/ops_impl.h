/* ops_impl.h — kernel bodies, instantiated by ops.c for T = float and T = double.
 * SFX(name) appends the type suffix; M(fn) picks the libm function of the right precision, and
 * MX_EXP / MX_ERF the exp and erf: vmath.h's vectorisable ones for f32, libm's for f64. */

/* Every elementwise op is one element function mgk_e_NAME (external, so it stays in the
 * bitcode) that its array kernel calls per element. The backend's fused loops (compiler/fuse.c)
 * call the same functions, so a fused chain computes each element exactly as the kernels do:
 * same operations in the same order, bit for bit. */

/* o[i0,i1,i2,i3] = a[.] OP b[.] over a collapsed 4-D space; innermost strides are 0 or 1. */
#define MGK_BINARY(name, expr)                                                                    \
    MGK_ELEM T SFX(mgk_e_##name)(T x, T y) { return expr; }                                                \
    void SFX(mgk_##name)(int64_t d0, int64_t d1, int64_t d2, int64_t d3, const T *a, int64_t sa0,       \
                   int64_t sa1, int64_t sa2, int64_t sa3, const T *b, int64_t sb0, int64_t sb1,   \
                   int64_t sb2, int64_t sb3, T *restrict o)                                       \
    {                                                                                             \
        for (int64_t i0 = 0; i0 < d0; i0++)                                                       \
            for (int64_t i1 = 0; i1 < d1; i1++)                                                   \
                for (int64_t i2 = 0; i2 < d2; i2++) {                                             \
                    const T *pa = a + i0 * sa0 + i1 * sa1 + i2 * sa2;                             \
                    const T *pb = b + i0 * sb0 + i1 * sb1 + i2 * sb2;                             \
                    T *po = o + ((i0 * d1 + i1) * d2 + i2) * d3;                                  \
                    if (sa3 == 1 && sb3 == 1)                                                     \
                        for (int64_t i = 0; i < d3; i++) { T x = pa[i], y = pb[i]; po[i] = SFX(mgk_e_##name)(x, y); } \
                    else if (sa3 == 1 && sb3 == 0) {                                              \
                        T y = pb[0];                                                              \
                        for (int64_t i = 0; i < d3; i++) { T x = pa[i]; po[i] = SFX(mgk_e_##name)(x, y); }           \
                    } else if (sa3 == 0 && sb3 == 1) {                                            \
                        T x = pa[0];                                                              \
                        for (int64_t i = 0; i < d3; i++) { T y = pb[i]; po[i] = SFX(mgk_e_##name)(x, y); }           \
                    } else                                                                        \
                        for (int64_t i = 0; i < d3; i++) {                                        \
                            T x = pa[i * sa3], y = pb[i * sb3];                                   \
                            po[i] = SFX(mgk_e_##name)(x, y);                                                         \
                        }                                                                         \
                }                                                                                 \
    }

MGK_BINARY(add, x + y)
MGK_BINARY(sub, x - y)
MGK_BINARY(mul, x * y)
MGK_BINARY(div, x / y)

#define MGK_UNARY(name, expr)                                                  \
    MGK_ELEM T SFX(mgk_e_##name)(T x) { return expr; }                                  \
    void SFX(mgk_##name)(int64_t n, const T *restrict xs, T *restrict ys)      \
    {                                                                          \
        for (int64_t i = 0; i < n; i++) ys[i] = SFX(mgk_e_##name)(xs[i]);      \
    }

MGK_UNARY(neg, -x)
MGK_UNARY(relu, x > 0 ? x : (T)0)
MGK_UNARY(tanh, M(tanh)(x))
MGK_UNARY(sigmoid, x >= 0 ? (T)1 / ((T)1 + MX_EXP(-x)) : MX_EXP(x) / ((T)1 + MX_EXP(x)))
MGK_UNARY(exp, MX_EXP(x))
MGK_UNARY(log, M(log)(x))

#define MGK_GRAD(name, expr)                                                                    \
    MGK_ELEM T SFX(mgk_e_##name)(T y, T dy) { return expr; }                                             \
    void SFX(mgk_##name)(int64_t n, const T *restrict ys, const T *restrict dys, T *restrict dx) \
    {                                                                                           \
        for (int64_t i = 0; i < n; i++) dx[i] = SFX(mgk_e_##name)(ys[i], dys[i]);               \
    }

MGK_GRAD(relu_grad, y > 0 ? dy : (T)0)
MGK_GRAD(tanh_grad, dy * ((T)1 - y * y))
MGK_GRAD(sigmoid_grad, dy * y * ((T)1 - y))

/* out[0] = scale * sum(x), accumulated in double over 8 fixed lanes */
void SFX(mgk_sum)(int64_t n, const T *restrict x, double scale, T *restrict out)
{
    double acc[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) acc[k] += (double)x[i + k];
    for (; i < n; i++) acc[i & 7] += (double)x[i];
    double s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    out[0] = (T)(s * scale);
}

/* o = scale * broadcast(x): x read with strides (0 on broadcast axes), o contiguous */
void SFX(mgk_bcast)(int64_t d0, int64_t d1, int64_t d2, int64_t d3, const T *x, int64_t s0,
                    int64_t s1, int64_t s2, int64_t s3, double scale, T *restrict o)
{
    T sc = (T)scale;
    for (int64_t i0 = 0; i0 < d0; i0++)
        for (int64_t i1 = 0; i1 < d1; i1++)
            for (int64_t i2 = 0; i2 < d2; i2++) {
                const T *px = x + i0 * s0 + i1 * s1 + i2 * s2;
                T *po = o + ((i0 * d1 + i1) * d2 + i2) * d3;
                if (s3 == 1)
                    for (int64_t i = 0; i < d3; i++) po[i] = sc * px[i];
                else
                    for (int64_t i = 0; i < d3; i++) po[i] = sc * px[i * s3];
            }
}

/* o (on elements) = sum of x over the axes where o's stride is 0; x contiguous over d0..d3 */
static void SFX(mgk_sum_to_into)(int64_t d0, int64_t d1, int64_t d2, int64_t d3, const T *restrict x,
                     int64_t s0, int64_t s1, int64_t s2, int64_t s3, T *restrict o)
{
    for (int64_t i0 = 0; i0 < d0; i0++)
        for (int64_t i1 = 0; i1 < d1; i1++)
            for (int64_t i2 = 0; i2 < d2; i2++) {
                const T *px = x + ((i0 * d1 + i1) * d2 + i2) * d3;
                T *po = o + i0 * s0 + i1 * s1 + i2 * s2;
                if (s3 == 1)
                    for (int64_t i = 0; i < d3; i++) po[i] += px[i];
                else { /* 16 running sums in double (lane l takes elements l, l + 16, ...), added in a
                        * fixed tree: one chain of d3 dependent adds was a bias gradient's whole
                        * time (cnn_fmnist's first, over 128 x 32 planes of 784). The bits depend on
                        * d3 alone, not on how the batch is cut into parts. */
                    double a[16] = {0}, acc;
                    int64_t i = 0;
                    for (; i + 16 <= d3; i += 16)
                        for (int l = 0; l < 16; l++) a[l] += (double)px[i + l];
                    for (int w = 8; w > 0; w /= 2)
                        for (int l = 0; l < w; l++) a[l] += a[l + w];
                    for (acc = a[0]; i < d3; i++) acc += (double)px[i];
                    po[0] += (T)acc;
                }
            }
}

void SFX(mgk_sum_to)(int64_t d0, int64_t d1, int64_t d2, int64_t d3, const T *restrict x,
                     int64_t s0, int64_t s1, int64_t s2, int64_t s3, T *restrict o, int64_t on)
{
    memset(o, 0, (size_t)on * sizeof(T));
    SFX(mgk_sum_to_into)(d0, d1, d2, d3, x, s0, s1, s2, s3, o);
}

/* o += sum_to(x) without zeroing o first: the outer axis (d0, the batch axis when it is summed)
 * runs outermost, so the sums over a batch cut into parts, the first by mgk_sum_to and the rest
 * by this, in order, have the bits of one mgk_sum_to over the whole batch. */
void SFX(mgk_sum_to_acc)(int64_t d0, int64_t d1, int64_t d2, int64_t d3, const T *restrict x,
                         int64_t s0, int64_t s1, int64_t s2, int64_t s3, T *restrict o, int64_t on)
{
    (void)on;
    SFX(mgk_sum_to_into)(d0, d1, d2, d3, x, s0, s1, s2, s3, o);
}

/* Softmax-like kernels work on an [outer, n, inner] view: the axis has n elements at stride
 * inner (inner = 1 for the last axis). Sums run in a fixed order in double. */
void SFX(mgk_softmax)(int64_t outer, int64_t n, int64_t inner, const T *restrict x, T *restrict y)
{
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            const T *px = x + o * n * inner + i;
            T *py = y + o * n * inner + i;
            T mx = px[0];
            for (int64_t c = 1; c < n; c++) mx = px[c * inner] > mx ? px[c * inner] : mx;
            double s = 0;
            for (int64_t c = 0; c < n; c++) {
                py[c * inner] = MX_EXP(px[c * inner] - mx);
                s += (double)py[c * inner];
            }
            T inv = (T)(1.0 / s);
            for (int64_t c = 0; c < n; c++) py[c * inner] *= inv;
        }
}

void SFX(mgk_softmax_grad)(int64_t outer, int64_t n, int64_t inner, const T *restrict y, const T *restrict dy,
                           T *restrict dx)
{
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * n * inner + i;
            const T *py = y + base, *pd = dy + base;
            double dot = 0;
            for (int64_t c = 0; c < n; c++) dot += (double)py[c * inner] * (double)pd[c * inner];
            for (int64_t c = 0; c < n; c++) dx[base + c * inner] = py[c * inner] * (pd[c * inner] - (T)dot);
        }
}

/* y = x - max - log(sum(exp(x - max))) */
void SFX(mgk_log_softmax)(int64_t outer, int64_t n, int64_t inner, const T *restrict x, T *restrict y)
{
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            const T *px = x + o * n * inner + i;
            T *py = y + o * n * inner + i;
            T mx = px[0];
            for (int64_t c = 1; c < n; c++) mx = px[c * inner] > mx ? px[c * inner] : mx;
            double s = 0;
            for (int64_t c = 0; c < n; c++) s += (double)MX_EXP(px[c * inner] - mx);
            T ls = (T)log(s);
            for (int64_t c = 0; c < n; c++) py[c * inner] = (px[c * inner] - mx) - ls;
        }
}

/* dx = dy - exp(y) * sum(dy) */
void SFX(mgk_log_softmax_grad)(int64_t outer, int64_t n, int64_t inner, const T *restrict y, const T *restrict dy,
                               T *restrict dx)
{
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * n * inner + i;
            double s = 0;
            for (int64_t c = 0; c < n; c++) s += (double)dy[base + c * inner];
            T ts = (T)s;
            for (int64_t c = 0; c < n; c++)
                dx[base + c * inner] = dy[base + c * inner] - MX_EXP(y[base + c * inner]) * ts;
        }
}

/* Mean and 1/sqrt(var + eps) of one row of D, two passes in double. */
static void SFX(mgk_row_stats)(int64_t D, const T *restrict x, double eps, double *mean, double *rstd)
{
    double s = 0, v = 0;
    for (int64_t j = 0; j < D; j++) s += (double)x[j];
    double mu = s / (double)D;
    for (int64_t j = 0; j < D; j++) {
        double e = (double)x[j] - mu;
        v += e * e;
    }
    *mean = mu;
    *rstd = 1.0 / sqrt(v / (double)D + eps);
}

/* y = (x - mean) * rstd * g + b per row of D */
void SFX(mgk_layer_norm)(int64_t rows, int64_t D, const T *restrict x, const T *restrict g, const T *restrict b,
                         double eps, T *restrict y)
{
    for (int64_t r = 0; r < rows; r++) {
        const T *px = x + r * D;
        T *py = y + r * D;
        double mu, rs;
        SFX(mgk_row_stats)(D, px, eps, &mu, &rs);
        T m = (T)mu, s = (T)rs;
        for (int64_t j = 0; j < D; j++) py[j] = (px[j] - m) * s * g[j] + b[j];
    }
}

/* dx = rstd * (gy - mean(gy) - xhat * mean(gy * xhat)) with gy = dy * g, xhat = (x - mean) * rstd */
void SFX(mgk_layer_norm_grad_input)(int64_t rows, int64_t D, const T *restrict x, const T *restrict g,
                                    const T *restrict dy, double eps, T *restrict dx)
{
    for (int64_t r = 0; r < rows; r++) {
        const T *px = x + r * D, *pd = dy + r * D;
        T *po = dx + r * D;
        double mu, rs, sg = 0, sgx = 0;
        SFX(mgk_row_stats)(D, px, eps, &mu, &rs);
        for (int64_t j = 0; j < D; j++) {
            double gy = (double)pd[j] * (double)g[j], xh = ((double)px[j] - mu) * rs;
            sg += gy;
            sgx += gy * xh;
        }
        sg /= (double)D;
        sgx /= (double)D;
        for (int64_t j = 0; j < D; j++) {
            double gy = (double)pd[j] * (double)g[j], xh = ((double)px[j] - mu) * rs;
            po[j] = (T)(rs * (gy - sg - xh * sgx));
        }
    }
}

/* dg[j] += sum over rows of dy * xhat, rows in order (a batch in parts: each part's rows in
 * turn continue the sums, the bits of one call over the whole batch) */
void SFX(mgk_layer_norm_grad_scale_acc)(int64_t rows, int64_t D, const T *restrict x, const T *restrict dy,
                                        double eps, T *restrict dg)
{
    for (int64_t r = 0; r < rows; r++) {
        const T *px = x + r * D, *pd = dy + r * D;
        double mu, rs;
        SFX(mgk_row_stats)(D, px, eps, &mu, &rs);
        T m = (T)mu, s = (T)rs;
        for (int64_t j = 0; j < D; j++) dg[j] += pd[j] * ((px[j] - m) * s);
    }
}

/* dg[j] = sum over rows of dy * xhat, rows in order */
void SFX(mgk_layer_norm_grad_scale)(int64_t rows, int64_t D, const T *restrict x, const T *restrict dy, double eps,
                                    T *restrict dg)
{
    memset(dg, 0, (size_t)D * sizeof(T));
    SFX(mgk_layer_norm_grad_scale_acc)(rows, D, x, dy, eps, dg);
}

/* gelu(x) = x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)); the tanh form replaces erf(x / sqrt 2)
 * by tanh(sqrt(2 / pi) (x + 0.044715 x^3)) */
#define MGK_SQRT1_2 0.70710678118654752440
#define MGK_SQRT2_PI 0.79788456080286535588
#define MGK_INV_SQRT_2PI 0.39894228040143267794
MGK_UNARY(gelu, (T)0.5 * x * ((T)1 + MX_ERF(x * (T)MGK_SQRT1_2)))
MGK_UNARY(gelu_tanh, (T)0.5 * x * ((T)1 + M(tanh)((T)MGK_SQRT2_PI * (x + (T)0.044715 * x * x * x))))

MGK_ELEM T SFX(mgk_e_gelu_grad)(T x, T dy)
{
    T d = (T)0.5 * ((T)1 + MX_ERF(x * (T)MGK_SQRT1_2)) + x * (T)MGK_INV_SQRT_2PI * MX_EXP((T)-0.5 * x * x);
    return dy * d;
}

void SFX(mgk_gelu_grad)(int64_t n, const T *restrict xs, const T *restrict dys, T *restrict dx)
{
    for (int64_t i = 0; i < n; i++) dx[i] = SFX(mgk_e_gelu_grad)(xs[i], dys[i]);
}

MGK_ELEM T SFX(mgk_e_gelu_tanh_grad)(T x, T dy)
{
    T t = M(tanh)((T)MGK_SQRT2_PI * (x + (T)0.044715 * x * x * x));
    T d = (T)0.5 * ((T)1 + t) + (T)0.5 * x * ((T)1 - t * t) * (T)MGK_SQRT2_PI * ((T)1 + (T)(3 * 0.044715) * x * x);
    return dy * d;
}

void SFX(mgk_gelu_tanh_grad)(int64_t n, const T *restrict xs, const T *restrict dys, T *restrict dx)
{
    for (int64_t i = 0; i < n; i++) dx[i] = SFX(mgk_e_gelu_tanh_grad)(xs[i], dys[i]);
}

/* Cross-entropy over an [outer, C, inner] view of the logits: the classes lie at stride inner
 * (1 when they are the last axis) and position (o, i) has label labels[o * inner + i]. */
/* total plus the sum over the outer * inner positions of -log softmax(logits)[label], position
 * after position in double; a label outside [0, C) gives NaN */
static double SFX(mgk_xent_total)(int64_t outer, int64_t C, int64_t inner, const T *restrict x,
                                  const int32_t *restrict labels, double total)
{
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            const T *px = x + o * C * inner + i;
            int32_t l = labels[o * inner + i];
            if (l < 0 || l >= C) {
                total = NAN;
                continue;
            }
            T mx = px[0];
            for (int64_t c = 1; c < C; c++) mx = px[c * inner] > mx ? px[c * inner] : mx;
            double s = 0;
            for (int64_t c = 0; c < C; c++) s += (double)MX_EXP(px[c * inner] - mx);
            total += log(s) + (double)mx - (double)px[l * inner];
        }
    return total;
}

/* the mean over the positions */
void SFX(mgk_xent)(int64_t outer, int64_t C, int64_t inner, const T *restrict x, const int32_t *restrict labels,
                   T *restrict out)
{
    out[0] = (T)(SFX(mgk_xent_total)(outer, C, inner, x, labels, 0) / (double)(outer * inner));
}

/* A batch in parts (microbatch.c): each part's sum continues the parts' before (prev; NULL for
 * the first), and mgk_xent_mean divides once: the very additions and division of mgk_xent. */
void SFX(mgk_xent_sum)(int64_t outer, int64_t C, int64_t inner, const T *restrict x, const int32_t *restrict labels,
                       const double *prev, double *out)
{
    out[0] = SFX(mgk_xent_total)(outer, C, inner, x, labels, prev ? prev[0] : 0);
}

void SFX(mgk_xent_mean)(int64_t count, const double *sum, T *restrict out) { out[0] = (T)(sum[0] / (double)count); }

/* count: the positions the loss is the mean over (outer * inner, or the whole batch's where x is
 * one part of it: microbatch.c) */
void SFX(mgk_xent_grad)(int64_t outer, int64_t C, int64_t inner, int64_t count, const T *restrict x,
                        const int32_t *restrict labels, const T *restrict dloss, T *restrict dx)
{
    double g = (double)dloss[0] / (double)count;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            const T *px = x + o * C * inner + i;
            T *pd = dx + o * C * inner + i;
            int32_t l = labels[o * inner + i];
            T mx = px[0];
            for (int64_t c = 1; c < C; c++) mx = px[c * inner] > mx ? px[c * inner] : mx;
            double s = 0;
            for (int64_t c = 0; c < C; c++) {
                pd[c * inner] = MX_EXP(px[c * inner] - mx);
                s += (double)pd[c * inner];
            }
            T scale = (T)(g / s);
            for (int64_t c = 0; c < C; c++) pd[c * inner] *= scale;
            if (l >= 0 && l < C) pd[l * inner] -= (T)g;
            else
                for (int64_t c = 0; c < C; c++) pd[c * inner] = NAN;
        }
}

void SFX(mgk_mse)(int64_t n, const T *restrict a, const T *restrict b, T *restrict out)
{
    double acc[4] = {0};
    for (int64_t i = 0; i < n; i++) {
        double e = (double)a[i] - (double)b[i];
        acc[i & 3] += e * e;
    }
    out[0] = (T)(((acc[0] + acc[1]) + (acc[2] + acc[3])) / (double)n);
}

/* d = sign * 2 (a - b) / n * dloss */
void SFX(mgk_mse_grad)(int64_t n, const T *restrict a, const T *restrict b, const T *restrict dloss,
                       double sign, T *restrict d)
{
    T g = (T)(sign * 2.0 * (double)dloss[0] / (double)n);
    for (int64_t i = 0; i < n; i++) d[i] = g * (a[i] - b[i]);
}

void SFX(mgk_init)(int64_t n, int kind, double arg, double fan_in, double fan_out, uint64_t seed,
                   uint64_t stream, T *restrict out)
{
    for (int64_t i = 0; i < n; i++) out[i] = (T)mgk_draw(kind, arg, fan_in, fan_out, seed, stream, i);
}

/* y = x with axes permuted, over a space collapsed to 6 axes: y contiguous, x read with the
 * element strides s (of the input axis each output axis comes from) */
void SFX(mgk_transpose)(int64_t d0, int64_t d1, int64_t d2, int64_t d3, int64_t d4, int64_t d5, const T *restrict x,
                        int64_t s0, int64_t s1, int64_t s2, int64_t s3, int64_t s4, int64_t s5, T *restrict y)
{
    for (int64_t i0 = 0; i0 < d0; i0++)
        for (int64_t i1 = 0; i1 < d1; i1++)
            for (int64_t i2 = 0; i2 < d2; i2++)
                for (int64_t i3 = 0; i3 < d3; i3++)
                    for (int64_t i4 = 0; i4 < d4; i4++) {
                        const T *px = x + i0 * s0 + i1 * s1 + i2 * s2 + i3 * s3 + i4 * s4;
                        if (s5 == 1) {
                            memcpy(y, px, (size_t)d5 * sizeof(T));
                            y += d5;
                        } else
                            for (int64_t i5 = 0; i5 < d5; i5++) *y++ = px[i5 * s5];
                    }
}

/* y[i, :] = table[ids[i], :]; an id outside [0, V) gives a row of NaN */
void SFX(mgk_embedding)(int64_t n, int64_t V, int64_t D, const int32_t *restrict ids, const T *restrict table,
                        T *restrict y)
{
    for (int64_t i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (id >= 0 && id < V) memcpy(y + i * D, table + (int64_t)id * D, (size_t)D * sizeof(T));
        else
            for (int64_t j = 0; j < D; j++) y[i * D + j] = (T)NAN;
    }
}

/* dtable[ids[i], :] += dy[i, :] for i in order (deterministic; a batch in parts: each part's
 * positions in turn, the bits of one call over the whole batch); ids outside [0, V) contribute
 * nothing */
void SFX(mgk_embedding_grad_acc)(int64_t n, int64_t V, int64_t D, const int32_t *restrict ids, const T *restrict dy,
                                 T *restrict dtable)
{
    for (int64_t i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (id < 0 || id >= V) continue;
        T *row = dtable + (int64_t)id * D;
        for (int64_t j = 0; j < D; j++) row[j] += dy[i * D + j];
    }
}

/* dtable = 0, then as mgk_embedding_grad_acc */
void SFX(mgk_embedding_grad)(int64_t n, int64_t V, int64_t D, const int32_t *restrict ids, const T *restrict dy,
                             T *restrict dtable)
{
    memset(dtable, 0, (size_t)(V * D) * sizeof(T));
    SFX(mgk_embedding_grad_acc)(n, V, D, ids, dy, dtable);
}

/* Nearest-neighbour upsampling of planes of H x W by an integer scale sc, and its gradient:
 * each input pixel's gradient is the sum of its sc x sc block, added row by row. */
void SFX(mgk_upsample_nearest)(int64_t planes, int64_t H, int64_t W, int64_t sc, const T *restrict x, T *restrict y)
{
    int64_t OW = W * sc;
    for (int64_t p = 0; p < planes * H; p++) {
        T *row = y + p * sc * OW;
        for (int64_t w = 0; w < W; w++)
            for (int64_t j = 0; j < sc; j++) row[w * sc + j] = x[p * W + w];
        for (int64_t i = 1; i < sc; i++) memcpy(row + i * OW, row, (size_t)OW * sizeof(T));
    }
}

void SFX(mgk_upsample_nearest_grad)(int64_t planes, int64_t H, int64_t W, int64_t sc, const T *restrict dy,
                                    T *restrict dx)
{
    int64_t OW = W * sc;
    for (int64_t p = 0; p < planes * H; p++)
        for (int64_t w = 0; w < W; w++) {
            const T *blk = dy + p * sc * OW + w * sc;
            double s = 0;
            for (int64_t i = 0; i < sc; i++)
                for (int64_t j = 0; j < sc; j++) s += (double)blk[i * OW + j];
            dx[p * W + w] = (T)s;
        }
}
