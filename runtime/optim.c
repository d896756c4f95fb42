/* optim.c — SGD and Adam/AdamW over a generated module's params and grads blobs.
 *
 * Why this exists: the generated training step only produces gradients; every application then
 * needs the same optimizer loop over the blobs, and getting it subtly different from PyTorch
 * (momentum initialisation, bias correction, where weight decay enters) makes results hard to
 * compare. These follow torch.optim.SGD (dampening 0) and torch.optim.Adam / AdamW (amsgrad
 * off) exactly. The per-tensor walk is driven by the generated desc table so that f32 and f64
 * parameters can share one blob; arithmetic is done in double and stored back in the tensor's
 * dtype (for f32 that can differ from PyTorch's float arithmetic in the last bit).
 */
#include "memgrad_rt.h"

#include <math.h>

/* Element accessors: one code path for f32 and f64 tensors (the dtype branch is per tensor and
 * perfectly predictable). */
static inline double ld(const void *base, size_t off, int f64, size_t i)
{
    const char *p = (const char *)base + off;
    return f64 ? ((const double *)(const void *)p)[i] : (double)((const float *)(const void *)p)[i];
}

static inline void st(void *base, size_t off, int f64, size_t i, double x)
{
    char *p = (char *)base + off;
    if (f64)
        ((double *)(void *)p)[i] = x;
    else
        ((float *)(void *)p)[i] = (float)x;
}

/* Elements in a tensor we update, or 0 for a dtype we skip. */
static size_t float_elems(const mg_tensor_desc *d, int *f64)
{
    if (d->dtype == MG_F32) {
        *f64 = 0;
        return d->bytes / sizeof(float);
    }
    if (d->dtype == MG_F64) {
        *f64 = 1;
        return d->bytes / sizeof(double);
    }
    return 0;
}

/* A setting that is a number from 0 up (NaN fails every comparison). */
static int nonneg(double x) { return x >= 0 && isfinite(x); }

/* The blobs every optimizer reads and writes are there; with no tensors (a model without
 * params: NAME_PARAM_BYTES is 0, and malloc(0) may be NULL) there is nothing to read. */
static int blobs_ok(const mg_tensor_desc *descs, int n, const void *params, const void *grads)
{
    return n == 0 || (n > 0 && descs && params && grads);
}

mg_rt_status mg_sgd_step(const mg_tensor_desc *descs, int n, void *params, const void *grads,
                         void *velocity, const mg_sgd_config *cfg)
{
    if (!cfg || !blobs_ok(descs, n, params, grads)) return MG_RT_ERR_ARG;
    const double lr = cfg->lr, mom = cfg->momentum, wd = cfg->weight_decay;
    if (!nonneg(lr) || !nonneg(mom) || !nonneg(wd) || (cfg->nesterov && mom == 0)) return MG_RT_ERR_CONFIG;
    const int use_v = mom != 0.0;
    if (use_v && !velocity && n > 0) return MG_RT_ERR_ARG;

    for (int t = 0; t < n; t++) {
        int f64;
        size_t cnt = float_elems(&descs[t], &f64), off = descs[t].offset;
        for (size_t i = 0; i < cnt; i++) {
            double p = ld(params, off, f64, i);
            double d = ld(grads, off, f64, i) + wd * p;
            if (use_v) {
                double v = mom * ld(velocity, off, f64, i) + d;
                st(velocity, off, f64, i, v);
                d = cfg->nesterov ? d + mom * v : v;
            }
            st(params, off, f64, i, p - lr * d);
        }
    }
    return MG_RT_OK;
}

mg_rt_status mg_adam_step(const mg_tensor_desc *descs, int n, void *params, const void *grads,
                          mg_adam_state *s, const mg_adam_config *cfg)
{
    if (!cfg || !s || (n > 0 && (!s->m || !s->v)) || !blobs_ok(descs, n, params, grads)) return MG_RT_ERR_ARG;
    const double lr = cfg->lr, b1 = cfg->beta1, b2 = cfg->beta2, eps = cfg->eps;
    if (!nonneg(lr) || !nonneg(cfg->weight_decay) || !(b1 >= 0 && b1 < 1) || !(b2 >= 0 && b2 < 1) ||
        !(eps > 0 && isfinite(eps)))
        return MG_RT_ERR_CONFIG;
    const double decay = 1.0 - lr * cfg->weight_decay;

    s->step++;
    const double bc1 = 1.0 - pow(b1, (double)s->step);
    const double bc2_sqrt = sqrt(1.0 - pow(b2, (double)s->step));
    const double step_size = lr / bc1;

    for (int t = 0; t < n; t++) {
        int f64;
        size_t cnt = float_elems(&descs[t], &f64), off = descs[t].offset;
        for (size_t i = 0; i < cnt; i++) {
            double g = ld(grads, off, f64, i);
            double p = ld(params, off, f64, i) * decay;
            double m = b1 * ld(s->m, off, f64, i) + (1.0 - b1) * g;
            double v = b2 * ld(s->v, off, f64, i) + (1.0 - b2) * g * g;
            st(s->m, off, f64, i, m);
            st(s->v, off, f64, i, v);
            st(params, off, f64, i, p - step_size * m / (sqrt(v) / bc2_sqrt + eps));
        }
    }
    return MG_RT_OK;
}

mg_adam_config mg_adam_defaults(double lr)
{
    mg_adam_config c = { .lr = lr, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.0 };
    return c;
}
