/* stateful.c — the kernels of the ops whose results depend on the model's state blob:
 * batch_norm (batch statistics in training, with the running statistics updated by the one
 * call the compiler marks; running statistics at inference) and dropout (a mask that is a pure
 * function of seed, step counter, op and element, so a recomputation reproduces it exactly).
 * Kept apart from ops.c so the state handling is in one place. Instantiated for f32 and f64
 * by stateful_impl.h; sums run in a fixed order in double, as everywhere. */
#include <math.h>
#include <stdint.h>
#include <string.h>

/* splitmix64's finaliser */
static uint64_t mgk_fmix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* The key of one dropout call: (seed, step, op) folded into 64 bits. */
static uint64_t mgk_dropout_key(int64_t seed, const int32_t *step, int64_t op)
{
    uint64_t k = mgk_fmix((uint64_t)seed * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL);
    k = mgk_fmix(k ^ ((uint64_t)(uint32_t)*step * 0xD1B54A32D192ED03ULL));
    return mgk_fmix(k ^ ((uint64_t)op * 0x8CB92BA72F3D8DD7ULL + 1));
}

/* Element i is kept when its 24-bit uniform draw is at least p (the same test in f32 and f64). */
static int mgk_keep(uint64_t key, int64_t i, uint32_t threshold)
{
    return (uint32_t)(mgk_fmix(key + ((uint64_t)i + 1) * 0x9E3779B97F4A7C15ULL) >> 40) >= threshold;
}

static uint32_t mgk_threshold(double p) { return (uint32_t)ceil(p * 16777216.0); }

/* The step counter: one increment per training step (uint32 arithmetic, wrapping). */
void mgk_step_advance(int32_t *step) { *step = (int32_t)((uint32_t)*step + 1u); }

/* batch_norm's sums: a sample's run of a channel in BN_LANES lanes, then the lanes in one tree
 * (stateful_impl.h) */
enum { BN_LANES = 8 };
_Static_assert(BN_LANES == 8, "mgk_bn_tree adds 8 lanes");
static double mgk_bn_tree(const double *a)
{
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

#define T float
#define SFX(name) name##_f32
#define M(fn) fn##f
#include "stateful_impl.h"
#undef T
#undef SFX
#undef M

#define T double
#define SFX(name) name##_f64
#define M(fn) fn
#include "stateful_impl.h"
#undef T
#undef SFX
#undef M
