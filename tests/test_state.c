/* test_state.c — models with state: batch_norm's running statistics and dropout's masks.
 *
 * The planner may compute a forward op several times in one training step (recomputation under
 * a budget). These tests compile models at store-all and at the minimum feasible budget, check
 * in the plan JSON that the batch_norm / dropout nodes really are recomputed there, and then
 * show that the running statistics move exactly once per step (byte for byte the same as
 * store-all, and equal to a hand-computed reference), that recomputed dropout masks are the
 * same (bit-identical gradients), that masks change from step to step, and that the inference
 * forward uses the running statistics and no dropout. */
#include "memgrad_rt.h"
#include "testutil.h"

#include <check.h>
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef mg_tensor_desc desc;
typedef float (*train_fn)(const void *, void *, const void *const *, void *, void *);
typedef void (*forward_fn)(const void *, const void *, const void *const *, void *const *, void *);
typedef void (*init_fn)(void *, uint64_t);
typedef void (*init_state_fn)(void *);

/* How many nodes of op `op` the plan computes more than once (from nodes[] and tensors[]). */
static int recomputed_ops(const char *json, const char *op)
{
    char key[64];
    int count = 0;
    snprintf(key, sizeof key, "\"op\": \"%s\"", op);
    for (const char *p = strstr(json, key); p; p = strstr(p + 1, key)) {
        const char *id = p;
        while (id > json && strncmp(id, "{\"id\": ", 7)) id--;
        int node = atoi(id + 7);
        char t[96];
        snprintf(t, sizeof t, "{\"node\": %d, \"decision\": \"recomputed\", \"computes\": ", node);
        const char *q = strstr(json, t);
        if (q && atoi(q + strlen(t)) >= 2) count++;
    }
    return count;
}

/* A model compiled at one budget, loaded, with its blobs. */
typedef struct built {
    void *h;
    train_fn train;
    forward_fn fwd, fwd_train;
    size_t pbytes, sbytes, wbytes;
    void *params, *grads, *state, *ws;
    const desc *sdesc;
    int nstate;
} built;

static void build(built *b, const char *dir, const char *tag, const char *model, const char *src, const char *budget)
{
    char opts[128], *log = NULL, hpath[4300];
    snprintf(opts, sizeof opts, budget ? "--budget %s --micro-batches 1" : "", budget);
    b->h = tu_build_model(dir, tag, src, opts, &log);
    ck_assert_msg(b->h != NULL, "compile at %s failed:\n%s", budget ? budget : "store-all", log ? log : "");
    free(log);
    snprintf(hpath, sizeof hpath, "%s/%s.h", dir, tag);
    char *hdr = tu_read(hpath);
    ck_assert_int_eq(tu_header_figure(hdr, "_HAS_STATE"), 1);
    b->pbytes = (size_t)tu_header_figure(hdr, "_PARAM_BYTES");
    b->sbytes = (size_t)tu_header_figure(hdr, "_STATE_BYTES");
    b->wbytes = (size_t)tu_header_figure(hdr, "_WORKSPACE_BYTES");
    b->nstate = (int)tu_header_figure(hdr, "_NUM_STATE");
    free(hdr);
    b->train = (train_fn)tu_sym(b->h, model, "train_step");
    b->fwd = (forward_fn)tu_sym(b->h, model, "forward");
    b->fwd_train = (forward_fn)tu_sym(b->h, model, "forward_train");
    b->sdesc = tu_sym(b->h, model, "state_desc");
    b->params = malloc(b->pbytes);
    b->grads = malloc(b->pbytes);
    b->state = malloc(b->sbytes);
    b->ws = malloc(b->wbytes + 1);
    ((init_fn)tu_sym(b->h, model, "init_params"))(b->params, 7);
    memset(b->grads, 0xa5, b->pbytes); /* the alignment gaps compare equal too */
    memset(b->state, 0xee, b->sbytes);
    ((init_state_fn)tu_sym(b->h, model, "init_state"))(b->state);
    memset(b->ws, 0xff, b->wbytes + 1);
}

static void unbuild(built *b)
{
    free(b->params);
    free(b->grads);
    free(b->state);
    free(b->ws);
    dlclose(b->h);
}

static void sgd(built *b, float lr)
{
    float *p = b->params;
    const float *g = b->grads;
    for (size_t i = 0; i < b->pbytes / 4; i++) p[i] -= lr * g[i];
}

/* Plans src at store-all (the JSON's minimum feasible budget into minb) and at that minimum;
 * returns how many `op` nodes the minimum plan recomputes. The whole batch (batch_norm runs as
 * bn_stats and bn_apply whole or in parts, bn_lower.c; test_microbatch checks that their state is
 * the same). */
static int plan_min(const char *dir, const char *src, const char *op, char *minb, size_t n)
{
    char *out = NULL, mpath[4300];
    snprintf(mpath, sizeof mpath, "%s/plan.mg", dir);
    ck_assert(tu_write(mpath, src) == 0);
    ck_assert_int_eq(tu_memgrad(&out, "plan '%s' --format json --no-cache --micro-batches 1", mpath), 0);
    long long all = tu_json_figure(out, "store_all_workspace_bytes"), minf = tu_json_figure(out, "min_feasible_bytes");
    ck_assert_int_eq(recomputed_ops(out, op), 0);
    free(out);
    ck_assert_msg(minf > 0 && minf < all, "minimum %lld, store-all %lld", minf, all);
    snprintf(minb, n, "%lldB", minf);
    ck_assert_int_eq(tu_memgrad(&out, "plan '%s' --budget %s --format json --no-cache --micro-batches 1", mpath, minb),
                     0);
    int k = recomputed_ops(out, op);
    free(out);
    return k;
}

/* bn0 normalises the input itself, so its batch statistics are known to the test; three
 * conv + batch_norm + relu residual blocks follow. */
static const char *bn_src =
    "model bn\n"
    "input x: f32[8,4,8,8]\ninput y: i32[8]\n"
    "param g0: f32[4] = normal(1)\nparam b0: f32[4] = normal(0.1)\n"
    "h = batch_norm(x, g0, b0, momentum=0.3)\n"
    "n0 = h\n"
    "repeat 3 {\n"
    "  param w: f32[4,4,3,3] = he\n  param g: f32[4] = normal(1)\n  param b: f32[4] = normal(0.1)\n"
    "  h = relu(batch_norm(conv2d(h, w, pad=1), g, b)) + h\n"
    "}\n"
    "param wo: f32[4,3] = xavier\n"
    "loss = cross_entropy(global_avg_pool(h) @ wo, y)\n"
    "output n0\nminimize loss\n";

START_TEST(test_bn_running_stats_once_when_recomputed)
{
    char *dir = tu_tmpdir(), minb[64];
    int rec = plan_min(dir, bn_src, "bn_apply", minb, sizeof minb);
    ck_assert_msg(rec > 0, "no batch_norm (bn_apply) is recomputed at the minimum feasible budget %s", minb);
    built a, m;
    build(&a, dir, "a", "bn", bn_src, NULL);
    build(&m, dir, "m", "bn", bn_src, minb);
    ck_assert_int_eq((int)a.sbytes, (int)m.sbytes);
    ck_assert_int_eq(a.nstate, 9); /* 4 batch_norms x (mean, var) + step */
    ck_assert_str_eq(a.sdesc[0].name, "g0.running_mean");
    ck_assert_str_eq(a.sdesc[1].name, "g0.running_var");
    ck_assert_str_eq(a.sdesc[8].name, "step");

    enum { N = 8, C = 4, S = 64 };
    float *x = malloc(sizeof(float) * N * C * S);
    int32_t y[N];
    uint64_t s = 5;
    for (int i = 0; i < N * C * S; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        x[i] = (float)((s >> 40) % 2001) / 500.0f - 2.0f + (float)(i / S % C); /* channel c centred near c */
    }
    for (int i = 0; i < N; i++) y[i] = i % 3;
    const void *inputs[2] = {x, y};
    const int steps = 3;
    for (int k = 0; k < steps; k++) {
        float la = a.train(a.params, a.grads, inputs, a.ws, a.state);
        float lm = m.train(m.params, m.grads, inputs, m.ws, m.state);
        ck_assert_msg(isfinite(la) && memcmp(&la, &lm, sizeof la) == 0, "step %d: loss %.9g vs %.9g", k, la, lm);
        ck_assert_msg(memcmp(a.grads, m.grads, a.pbytes) == 0, "step %d: gradients differ", k);
        ck_assert_msg(memcmp(a.state, m.state, a.sbytes) == 0, "step %d: state differs from store-all", k);
        sgd(&a, 0.05f);
        sgd(&m, 0.05f);
    }
    /* the step counter counted every step once */
    ck_assert_int_eq(*(int32_t *)((char *)m.state + m.sdesc[8].offset), steps);
    /* bn0 saw the same x every step: r_k = (1 - m)^k r_0 + (1 - (1 - m)^k) stat, variance unbiased */
    const float *rm = (const float *)((char *)m.state + m.sdesc[0].offset);
    const float *rv = (const float *)((char *)m.state + m.sdesc[1].offset);
    double keep = pow(0.7, steps);
    double mean[C], var[C];
    for (int c = 0; c < C; c++) {
        double sum = 0, sq = 0;
        for (int n = 0; n < N; n++)
            for (int i = 0; i < S; i++) sum += x[(n * C + c) * S + i];
        mean[c] = sum / (N * S);
        for (int n = 0; n < N; n++)
            for (int i = 0; i < S; i++) sq += (x[(n * C + c) * S + i] - mean[c]) * (x[(n * C + c) * S + i] - mean[c]);
        var[c] = sq / (N * S);
        double want_m = (1 - keep) * mean[c], want_v = keep * 1.0 + (1 - keep) * sq / (N * S - 1);
        ck_assert_msg(fabs(rm[c] - want_m) <= 1e-5 * (1 + fabs(want_m)), "running_mean[%d] %.9g, want %.9g", c, rm[c],
                      want_m);
        ck_assert_msg(fabs(rv[c] - want_v) <= 1e-5 * (1 + fabs(want_v)), "running_var[%d] %.9g, want %.9g", c, rv[c],
                      want_v);
    }
    /* inference uses the running statistics; training mode the batch's (g0, b0: parameters 0, 1) */
    const desc *pd = tu_sym(m.h, "bn", "params_desc");
    const float *g0 = (const float *)((char *)m.params + pd[0].offset), *b0 = (const float *)((char *)m.params + pd[1].offset);
    float *out = malloc(sizeof(float) * N * C * S), *out_t = malloc(sizeof(float) * N * C * S);
    void *outs[1] = {out}, *outs_t[1] = {out_t};
    unsigned char *before = malloc(m.sbytes);
    memcpy(before, m.state, m.sbytes);
    m.fwd(m.params, m.state, inputs, outs, m.ws);
    m.fwd_train(m.params, m.state, inputs, outs_t, m.ws);
    ck_assert_msg(memcmp(before, m.state, m.sbytes) == 0, "a forward pass changed the state");
    double worst = 0, worst_t = 0;
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++)
            for (int i = 0; i < S; i++) {
                int k = (n * C + c) * S + i;
                double e = (x[k] - rm[c]) / sqrt(rv[c] + 1e-5) * g0[c] + b0[c];
                double t = (x[k] - mean[c]) / sqrt(var[c] + 1e-5) * g0[c] + b0[c];
                worst = fmax(worst, fabs(out[k] - e));
                worst_t = fmax(worst_t, fabs(out_t[k] - t));
            }
    ck_assert_msg(worst < 1e-4, "inference batch_norm off by %g", worst);
    ck_assert_msg(worst_t < 1e-4, "training-mode batch_norm off by %g", worst_t);
    /* the state blob goes through the runtime's parameter files like the params */
    char *hdr = tu_read(tu_path(dir, "m.h")), err[256];
    const char *hp = strstr(hdr, "_MODEL_HASH      0x");
    ck_assert_ptr_nonnull(hp);
    uint64_t hash = strtoull(hp + 17, NULL, 16);
    free(hdr);
    void *loaded = calloc(1, m.sbytes);
    ck_assert_int_eq(mg_params_save(tu_path(dir, "state.bin"), hash, m.state, m.sbytes, err, sizeof err), MG_RT_OK);
    ck_assert_int_eq(mg_params_load(tu_path(dir, "state.bin"), hash, loaded, m.sbytes, err, sizeof err), MG_RT_OK);
    ck_assert(memcmp(loaded, m.state, m.sbytes) == 0);
    free(loaded);
    free(before);
    free(out);
    free(out_t);
    free(x);
    unbuild(&a);
    unbuild(&m);
    tu_rmtree(dir);
    free(dir);
}
END_TEST

static const char *drop_src =
    "model dr\n"
    "input x: f32[16,64]\ninput y: i32[16]\ninput ones: f32[64,256]\n"
    "h = x\n"
    "repeat 4 {\n"
    "  param w: f32[64,64] = he\n"
    "  h = dropout(tanh(h @ w), p=0.3) + h\n"
    "}\n"
    "param wo: f32[64,5] = xavier\n"
    "loss = cross_entropy(h @ wo, y)\n"
    "d = dropout(ones, p=0.3, seed=11)\n"
    "output d\nminimize loss\n";

START_TEST(test_dropout_masks)
{
    char *dir = tu_tmpdir(), minb[64];
    int rec = plan_min(dir, drop_src, "dropout", minb, sizeof minb);
    ck_assert_msg(rec > 0, "no dropout is recomputed at the minimum feasible budget %s", minb);
    built a, m;
    build(&a, dir, "a", "dr", drop_src, NULL);
    build(&m, dir, "m", "dr", drop_src, minb);
    ck_assert_int_eq(a.nstate, 1);
    ck_assert_str_eq(a.sdesc[0].name, "step");

    enum { NX = 16 * 64, NO = 64 * 256 };
    float *x = malloc(sizeof(float) * NX), *ones = malloc(sizeof(float) * NO);
    int32_t y[16];
    for (int i = 0; i < NX; i++) x[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
    for (int i = 0; i < NO; i++) ones[i] = 1.0f;
    for (int i = 0; i < 16; i++) y[i] = i % 5;
    const void *inputs[3] = {x, y, ones};
    void *g1 = malloc(a.pbytes);
    for (int k = 0; k < 2; k++) {
        /* same parameters both steps: only the step counter (the masks) differs */
        float la = a.train(a.params, a.grads, inputs, a.ws, a.state);
        float lm = m.train(m.params, m.grads, inputs, m.ws, m.state);
        ck_assert_msg(isfinite(la) && memcmp(&la, &lm, sizeof la) == 0, "step %d: loss %.9g vs %.9g", k, la, lm);
        ck_assert_msg(memcmp(a.grads, m.grads, a.pbytes) == 0, "step %d: gradients differ from store-all", k);
        if (k == 0) memcpy(g1, a.grads, a.pbytes);
        else ck_assert_msg(memcmp(g1, a.grads, a.pbytes) != 0, "the masks did not change between steps");
    }
    /* the kept fraction is 1 - p, kept elements scaled by 1 / (1 - p); masks differ per step */
    float *d = malloc(sizeof(float) * NO), *d2 = malloc(sizeof(float) * NO);
    void *outs[1] = {d}, *outs2[1] = {d2};
    m.fwd_train(m.params, m.state, inputs, outs, m.ws);
    int kept = 0, same = 0;
    for (int i = 0; i < NO; i++) {
        ck_assert_msg(d[i] == 0.0f || d[i] == 1.0f / 0.7f, "d[%d] = %.9g", i, d[i]);
        kept += d[i] != 0.0f;
    }
    double frac = (double)kept / NO;
    ck_assert_msg(fabs(frac - 0.7) < 0.02, "kept fraction %.4f, want 0.7", frac);
    (*(int32_t *)((char *)m.state + m.sdesc[0].offset))++;
    m.fwd_train(m.params, m.state, inputs, outs2, m.ws);
    for (int i = 0; i < NO; i++) same += (d[i] != 0) == (d2[i] != 0);
    ck_assert_msg(same < NO * 0.7, "masks of consecutive steps agree on %d of %d elements", same, NO);
    /* inference: dropout is the identity */
    m.fwd(m.params, m.state, inputs, outs, m.ws);
    for (int i = 0; i < NO; i++) ck_assert_msg(d[i] == 1.0f, "inference d[%d] = %g", i, d[i]);
    free(d);
    free(d2);
    free(g1);
    free(x);
    free(ones);
    unbuild(&a);
    unbuild(&m);
    tu_rmtree(dir);
    free(dir);
}
END_TEST

/* A model without batch_norm or dropout keeps the stateless API. */
START_TEST(test_stateless_header)
{
    char *dir = tu_tmpdir(), *out = NULL;
    ck_assert(tu_write(tu_path(dir, "p.mg"), "model p\ninput x: f32[2,3]\nparam w: f32[3,3] = he\n"
                                              "loss = mean(relu(x @ w))\nminimize loss\n") == 0);
    ck_assert_int_eq(tu_memgrad(&out, "compile '%s' -o '%s' --header '%s'", tu_path(dir, "p.mg"), tu_path(dir, "p.o"),
                                tu_path(dir, "p.h")), 0);
    free(out);
    char *h = tu_read(tu_path(dir, "p.h"));
    ck_assert_int_eq(tu_header_figure(h, "_HAS_STATE"), 0);
    ck_assert_ptr_null(strstr(h, "STATE_BYTES"));
    ck_assert_ptr_nonnull(strstr(h, "float p_train_step(const void *params, void *grads, const void *const inputs[], "
                                    "void *workspace);"));
    free(h);
    tu_rmtree(dir);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("state");
    TCase *tc = tcase_create("state");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_bn_running_stats_once_when_recomputed);
    tcase_add_test(tc, test_dropout_masks);
    tcase_add_test(tc, test_stateless_header);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
