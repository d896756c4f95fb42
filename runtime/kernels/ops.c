/* ops.c — every kernel but GEMM, for f32 and f64 (ops_impl.h is instantiated once per type).
 *
 * Compiled to LLVM bitcode at build time and linked into each generated module, where calls
 * with constant shapes get inlined and specialised. Like all kernels these may call only
 * memcpy/memset and libm, keep no state, and allocate nothing. Reductions run in a fixed order
 * with double accumulators, so results are deterministic and do not depend on the schedule.
 * Broadcasting kernels take a collapsed 4-D iteration space with per-operand element strides
 * (0 on broadcast axes); the compiler does the collapsing. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "vmath.h"

/* The element functions (ops_impl.h) stay external so that fused loops can call them, and are
 * always inlined where they are called, so that every loop over them vectorises: exp or erf
 * make them too big for the inliner's own judgement. */
#if defined(__clang__)
#define MGK_ELEM __attribute__((always_inline))
#else
#define MGK_ELEM
#endif

void mgk_copy(int64_t bytes, const void *src, void *dst) { memmove(dst, src, (size_t)bytes); }
void mgk_zero(int64_t bytes, void *dst) { memset(dst, 0, (size_t)bytes); }

/* Copies n0 x n1 blocks of `bytes` bytes; block (i0, i1) goes from src + i0*s0 + i1*s1 to
 * dst + doff + i0*d0 + i1*d1 (all in bytes), after zeroing the first zero_bytes of dst. concat
 * (one call per operand), slice and slice's gradient (a scatter into zeros) are such copies. */
void mgk_copy_blocks(int64_t n0, int64_t n1, int64_t bytes, const char *src, int64_t s0, int64_t s1, char *dst,
                     int64_t doff, int64_t d0, int64_t d1, int64_t zero_bytes)
{
    if (zero_bytes > 0) memset(dst, 0, (size_t)zero_bytes);
    for (int64_t i0 = 0; i0 < n0; i0++)
        for (int64_t i1 = 0; i1 < n1; i1++)
            memcpy(dst + doff + i0 * d0 + i1 * d1, src + i0 * s0 + i1 * s1, (size_t)bytes);
}

/* Counter-based random numbers for parameter initialisation: element i of stream s under
 * seed k is a pure function of (k, s, i) (splitmix64 finaliser over a Weyl sequence). */
static uint64_t mgk_mix(uint64_t seed, uint64_t stream, uint64_t i)
{
    uint64_t z = seed * 0x9E3779B97F4A7C15ULL ^ (stream + 1) * 0xD1B54A32D192ED03ULL;
    z += (i + 1) * 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* uniform in (0, 1] */
static double mgk_unit(uint64_t seed, uint64_t stream, uint64_t i)
{
    return ((double)(mgk_mix(seed, stream, i) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
}

static double mgk_draw(int kind, double arg, double fan_in, double fan_out, uint64_t seed,
                       uint64_t stream, int64_t i)
{
    const double two_pi = 6.283185307179586;
    double u1 = mgk_unit(seed, stream, 2 * (uint64_t)i), u2 = mgk_unit(seed, stream, 2 * (uint64_t)i + 1);
    double gauss = sqrt(-2.0 * log(u1)) * cos(two_pi * u2);
    switch (kind) {
    case 0: return 0.0;                                   /* zeros */
    case 1: return 1.0;                                   /* ones */
    case 2: return gauss * sqrt(2.0 / fan_in);            /* he (normal, fan-in) */
    case 3: return (2.0 * u1 - 1.0) * sqrt(6.0 / (fan_in + fan_out)); /* xavier (uniform) */
    case 4: return gauss * arg;                           /* normal(std) */
    default: return (2.0 * u1 - 1.0) * arg;               /* uniform(a) */
    }
}

#define T float
#define SFX(name) name##_f32
#define M(fn) fn##f
#define MX_EXP mgk_expf /* vectorisable (vmath.h) */
#define MX_ERF mgk_erff
#include "ops_impl.h"
#undef T
#undef SFX
#undef M
#undef MX_EXP
#undef MX_ERF

#define T double
#define SFX(name) name##_f64
#define M(fn) fn
#define MX_EXP exp
#define MX_ERF erf
#include "ops_impl.h"
#undef T
#undef SFX
#undef M
#undef MX_EXP
#undef MX_ERF
