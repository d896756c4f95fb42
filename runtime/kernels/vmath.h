/* vmath.h — exp and erf for f32 kernels, written so that loops over them vectorise.
 *
 * libm's expf and erff are calls the vectoriser cannot see through: a GELU over a transformer's
 * feed-forward activations spent more time in erff than in its matmuls. These are branch-free
 * (selects only), built from polynomials evaluated with explicit fused multiply-adds, so every
 * build and every target that has FMA gives the same bits (tests/test_kernels.c measures their
 * error over the whole float range against double-precision libm: exp within 1 ulp, erf within
 * 2). f64 kernels keep libm's exp and erf, which the gradient checks rely on.
 *
 * exp: x = n ln2 + r with |r| <= ln2/2 (ln2 split in two so r is exact), Cephes' degree-6
 * polynomial for e^r, and 2^n applied in two halves so subnormal results come out right.
 * erf: |x| < 0.9375: x P(x^2); up to 3.92: 1 - e^Q(|x|), Q a fit of log(erfc); beyond, 1
 * (erfc(3.92) is below half an ulp of 1). Both fits are least squares on Chebyshev nodes. */
#ifndef MG_KERNELS_VMATH_H
#define MG_KERNELS_VMATH_H
#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float mgk_pow2if(int32_t n) /* 2^n for n in [-126, 127] */
{
    uint32_t bits = (uint32_t)(n + 127) << 23;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline float mgk_expf(float x)
{
    float xc = x < -104.0f ? -104.0f : x > 89.0f ? 89.0f : x; /* NaN passes through to the end */
    float n = floorf(fmaf(xc, 1.44269504088896341f, 0.5f));
    float r = fmaf(n, -0.693359375f, xc);
    r = fmaf(n, 2.12194440e-4f, r);
    float z = r * r;
    float p = fmaf(1.9875691500e-4f, r, 1.3981999507e-3f);
    p = fmaf(p, r, 8.3334519073e-3f);
    p = fmaf(p, r, 4.1665795894e-2f);
    p = fmaf(p, r, 1.6666665459e-1f);
    p = fmaf(p, r, 5.0000001201e-1f);
    p = fmaf(p, z, r) + 1.0f;
    int32_t k = (int32_t)n, k1 = k / 2;
    float y = p * mgk_pow2if(k1) * mgk_pow2if(k - k1);
    y = x > 88.72283935546875f ? INFINITY : y;
    y = x < -103.97208404541015625f ? 0.0f : y;
    return x != x ? x : y;
}

static inline float mgk_erff(float x)
{
    float t = fabsf(x), s = x * x;
    /* |x| < 0.9375 */
    float a = fmaf(8.291218285108107e-05f, s, -8.124385110747096e-04f);
    a = fmaf(a, s, 5.199459333088018e-03f);
    a = fmaf(a, s, -2.685878719277772e-02f);
    a = fmaf(a, s, 1.1283685032700043e-01f);
    a = fmaf(a, s, -3.7612633103971826e-01f);
    a = fmaf(a, s, 1.283791665793068e-01f); /* 2/sqrt(pi) - 1: x + x a keeps the last rounding small */
    a = fmaf(a, x, x);
    /* 0.9375 <= |x| <= 3.92, in u = |x| - 2.42875 */
    float tc = t < 0.9375f ? 0.9375f : t > 3.92f ? 3.92f : t;
    float u = tc - 2.42875f;
    float q = fmaf(-5.68376777706392e-08f, u, -3.007627736929807e-08f);
    q = fmaf(q, u, 1.955766351012668e-06f);
    q = fmaf(q, u, -1.4064504023824267e-05f);
    q = fmaf(q, u, 8.354225722163475e-05f);
    q = fmaf(q, u, -4.549844776653747e-04f);
    q = fmaf(q, u, 2.321520949073215e-03f);
    q = fmaf(q, u, -1.1497283053659494e-02f);
    q = fmaf(q, u, -9.41505319427019e-01f);
    q = fmaf(q, u, -5.2183444345899455f);
    q = fmaf(q, u, -7.430224520403612f);
    float b = copysignf(1.0f - mgk_expf(q), x);
    float r = t < 0.9375f ? a : t <= 3.92f ? b : copysignf(1.0f, x);
    return x != x ? x : r;
}
#endif
