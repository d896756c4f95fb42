/* test_gradcheck.c — every op's gradient against central finite differences, in f64.
 *
 * Each case is a small model compiled by the real memgrad binary into a shared object. The
 * analytic gradients come from NAME_train_step; the numeric ones from NAME_forward, which
 * returns the loss (declared as an output) in full f64 precision, evaluated at p ± h for
 * every element of every parameter. Cases cover each op, numpy broadcasting on both operands,
 * fan-out (a value read by several ops) and constants. The cases compile at -O0: they check the
 * derivatives the compiler emits, which no optimisation level changes, and LLVM's -O3 on the
 * kernels took over 80% of the suite's time (1.5 s a model, 3.5 s under ASan); the end-to-end
 * suites compile at the default -O3. */
#include "testutil.h"

#include <check.h>
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct desc {
    const char *name; int dtype; int rank; int64_t shape[8]; size_t offset; size_t bytes;
} desc;

typedef float (*train_fn)(const void *, void *, const void *const *, void *);
typedef void (*forward_fn)(const void *, const void *const *, void *const *, void *);
typedef void (*init_fn)(void *, uint64_t);
/* models with state (batch_norm, dropout) */
typedef float (*train_state_fn)(const void *, void *, const void *const *, void *, void *);
typedef void (*forward_state_fn)(const void *, const void *, const void *const *, void *const *, void *);
typedef void (*init_state_fn)(void *);

typedef struct gcase {
    const char *name;
    const char *body; /* statements after 'model NAME'; must end with loss = ..., output loss, minimize loss */
} gcase;

/* memgrad compile options of a case: -O0 (above), the split batch_norm forced into parts */
static const char *case_options(const gcase *c)
{
    return strcmp(c->name, "batch_norm_parts") == 0 ? "-O0 --micro-batches 2" : "-O0";
}

static const gcase cases[] = {
    {"matmul", "param a: f64[3,5] = normal(1)\nparam b: f64[5,4] = normal(1)\n"
               "loss = sum(tanh(a @ b))\n"},
    {"add_bcast", "param a: f64[3,4] = normal(1)\nparam b: f64[4] = normal(1)\nparam c: f64[3,1] = normal(1)\n"
                  "loss = sum(tanh(a + b + c))\n"},
    {"sub_bcast", "param a: f64[2,3,4] = normal(1)\nparam b: f64[3,1] = normal(1)\n"
                  "loss = sum(sigmoid(b - a))\n"},
    {"mul_bcast", "param a: f64[2,3,4] = normal(1)\nparam b: f64[3,1] = normal(1)\nparam s: f64[] = normal(1)\n"
                  "loss = sum(tanh(a * b * s))\n"},
    {"div_bcast", "param a: f64[3,4] = normal(1)\nparam b: f64[4] = normal(1)\n"
                  "loss = sum(tanh(a / (b * b + 1)))\n"},
    {"neg", "param a: f64[5] = normal(1)\nloss = sum(exp(-a))\n"},
    {"relu", "param a: f64[4,6] = normal(1)\nparam w: f64[6,3] = normal(1)\nloss = sum(tanh(relu(a) @ w))\n"},
    {"tanh", "param a: f64[7] = normal(1)\nloss = sum(tanh(a) * tanh(a))\n"},
    {"sigmoid", "param a: f64[7] = normal(1)\nloss = sum(sigmoid(a) * sigmoid(2 * a))\n"},
    {"exp", "param a: f64[2,3] = normal(0.5)\nloss = mean(exp(a) * a)\n"},
    {"log", "param a: f64[2,3] = normal(1)\nloss = sum(log(a * a + 1))\n"},
    {"sum_mean", "param a: f64[3,3] = normal(1)\nloss = sum(a) * mean(a * a)\n"},
    {"softmax", "param a: f64[3,5] = normal(1)\ninput t: f64[3,5]\nloss = sum(softmax(a) * t)\n"},
    {"cross_entropy", "input x: f64[6,4]\ninput y: i32[6]\nparam w: f64[4,3] = normal(1)\nparam b: f64[3] = normal(1)\n"
                      "loss = cross_entropy(x @ w + b, y)\n"},
    {"mse_pred", "input x: f64[5,3]\ninput t: f64[5,2]\nparam w: f64[3,2] = normal(1)\nloss = mse(tanh(x @ w), t)\n"},
    {"mse_target", "input x: f64[4,3]\nparam t: f64[4,3] = normal(1)\nloss = mse(x, t * t)\n"},
    {"fan_out", "param a: f64[3,3] = normal(1)\nparam w: f64[3,3] = normal(1)\n"
                "h = tanh(a @ w)\nloss = sum(h * h + h @ w - h)\n"},
    {"rebind_chain", "input x: f64[4,5]\nparam w: f64[5,5] = normal(0.5)\nh = x\nrepeat 3 {\n  h = tanh(h @ w + h)\n}\n"
                     "loss = mean(h * h)\n"},
    {"repeat_params", "input x: f64[4,3]\ninput y: i32[4]\nh = x\nrepeat 2 {\n param w: f64[3,3] = xavier\n param b: f64[3] = normal(0.1)\n"
                      " h = sigmoid(h @ w + b)\n}\nloss = cross_entropy(h, y)\n"},
    {"conv2d", "param x: f64[2,3,5,5] = normal(1)\nparam w: f64[4,3,3,3] = normal(0.5)\n"
               "loss = sum(tanh(conv2d(x, w, pad=1)))\n"},
    {"conv2d_stride_dilation", "param x: f64[1,2,9,8] = normal(1)\nparam w: f64[3,2,3,3] = normal(0.5)\n"
                               "loss = sum(tanh(conv2d(x, w, stride=2, pad=2, dilation=2)))\n"},
    {"conv2d_groups", "param x: f64[2,4,5,5] = normal(1)\nparam w: f64[6,2,3,3] = normal(0.5)\n"
                      "loss = sum(tanh(conv2d(x, w, stride=2, pad=1, groups=2)))\n"},
    {"conv2d_depthwise_rect", "param x: f64[1,3,6,5] = normal(1)\nparam w: f64[3,1,2,3] = normal(0.5)\n"
                              "loss = sum(tanh(conv2d(x, w, stride=2, pad=1, groups=3)))\n"},
    {"conv2d_1x1", "param x: f64[2,3,4,4] = normal(1)\nparam w: f64[5,3,1,1] = normal(0.5)\n"
                   "loss = sum(tanh(conv2d(x, w)))\n"},
    {"conv2d_bias_chain", "input x: f64[2,2,6,6]\ninput y: i32[2]\nconst C = 3\n"
                          "param w: f64[C,2,3,3] = normal(0.5)\nparam b: f64[C,1,1] = normal(0.1)\n"
                          "param v: f64[C,C,3,3] = normal(0.3)\nparam u: f64[C * 3 * 3, 3] = normal(0.3)\n"
                          "h = relu(conv2d(x, w) + b)\nh = conv2d(h, v, pad=1)\n"
                          "loss = cross_entropy(flatten(max_pool2d(h, kernel=2, stride=1)) @ u, y)\n"},
    {"max_pool2d", "param x: f64[2,3,6,6] = normal(1)\nloss = sum(tanh(max_pool2d(x, kernel=2)) * max_pool2d(x, kernel=2))\n"},
    {"max_pool2d_pad_overlap", "param x: f64[1,2,7,7] = normal(1)\n"
                               "loss = sum(sigmoid(max_pool2d(x, kernel=3, stride=2, pad=1)))\n"},
    {"avg_pool2d", "param x: f64[2,2,7,7] = normal(1)\n"
                   "loss = sum(tanh(avg_pool2d(x, kernel=3, stride=2, pad=1)))\n"},
    {"global_avg_pool", "param x: f64[2,3,4,5] = normal(1)\nloss = sum(tanh(global_avg_pool(x * x)))\n"},
    {"reshape_flatten", "param x: f64[2,3,4] = normal(1)\nparam w: f64[12,2] = normal(1)\n"
                        "h = reshape(x, shape=[-1, 4, 3])\nloss = sum(tanh(flatten(h * h) @ w)) + sum(reshape(x, shape=[24]))\n"},
    {"def_blocks", "input x: f64[2,2,5,5]\n"
                   "def unit(x, c_in, c_out) {\n param w: f64[c_out, c_in, 3, 3] = normal(0.4)\n"
                   " param b: f64[c_out, 1, 1] = normal(0.1)\n return tanh(conv2d(x, w, pad=1) + b)\n}\n"
                   "h = unit(x, 2, 3)\nrepeat 2 {\n h = unit(h, 3, 3) + h\n}\n"
                   "loss = mean(global_avg_pool(h * h)) + sum(avg_pool2d(h, kernel=2, stride=1))\n"},
    {"softmax_axis0", "param a: f64[4,3] = normal(1)\ninput t: f64[4,3]\nloss = sum(softmax(a, axis=0) * t)\n"},
    {"softmax_axis_mid", "param a: f64[2,4,3] = normal(1)\ninput t: f64[2,4,3]\n"
                         "loss = sum(softmax(a, axis=-2) * t) + sum(softmax(a, axis=2) * t * t)\n"},
    {"log_softmax", "param a: f64[3,5] = normal(1)\ninput t: f64[3,5]\nloss = sum(log_softmax(a) * t)\n"},
    {"log_softmax_axis1", "param a: f64[2,3,4] = normal(1)\ninput t: f64[2,3,4]\n"
                          "loss = sum(tanh(log_softmax(a, axis=1)) * t)\n"},
    {"layer_norm", "param x: f64[3,5] = normal(1)\nparam g: f64[5] = normal(1)\nparam b: f64[5] = normal(1)\n"
                   "input t: f64[3,5]\nloss = sum(tanh(layer_norm(x, g, b)) * t)\n"},
    {"layer_norm_3d_eps", "param x: f64[2,3,4] = normal(1)\nparam g: f64[4] = normal(1)\nparam b: f64[4] = normal(1)\n"
                          "input t: f64[2,3,4]\nloss = sum(sigmoid(layer_norm(x * x, g, b, eps=0.01)) * t)\n"},
    {"gelu", "param a: f64[3,4] = normal(1.5)\nloss = sum(gelu(a) * tanh(a))\n"},
    {"gelu_tanh", "param a: f64[3,4] = normal(1.5)\nloss = sum(gelu(a, approx=1) * tanh(a))\n"},
    {"transpose", "param a: f64[2,3,4] = normal(1)\ninput t: f64[4,2,3]\n"
                  "loss = sum(tanh(transpose(a, perm=[2, 0, 1])) * t) + sum(transpose(a, perm=[0, 2, 1]) * transpose(a, perm=[0, 2, 1]))\n"},
    {"transpose_4d", "param a: f64[2,3,1,4] = normal(1)\ninput t: f64[3,2,4,1]\n"
                     "loss = sum(sigmoid(transpose(a, perm=[1, 0, 3, 2])) * t)\n"},
    {"bmm_broadcast", "param a: f64[2,3,4,5] = normal(1)\nparam b: f64[3,5,2] = normal(1)\n"
                      "loss = sum(tanh(a @ b))\n"},
    {"bmm_stack_matrix", "param a: f64[2,3,4] = normal(1)\nparam w: f64[4,5] = normal(1)\nloss = sum(tanh(a @ w))\n"},
    {"bmm_matrix_stack", "param a: f64[3,4] = normal(1)\nparam b: f64[2,4,5] = normal(1)\nloss = sum(tanh(a @ b))\n"},
    {"bmm_size1_batch", "param a: f64[2,1,3,4] = normal(1)\nparam b: f64[1,3,4,2] = normal(1)\nloss = sum(tanh(a @ b))\n"},
    {"attention", "param q: f64[2,2,3,4] = normal(1)\nparam k: f64[2,2,3,4] = normal(1)\nparam v: f64[2,2,3,4] = normal(1)\n"
                  "s = softmax(q @ transpose(k, perm=[0, 1, 3, 2]) * 0.5)\nloss = sum(tanh(s @ v))\n"},
    {"embedding", "input ids: i32[2,5]\nparam tab: f64[4,3] = normal(1)\ninput t: f64[2,5,3]\n"
                  "loss = sum(tanh(embedding(ids, tab)) * t)\n"},
    {"cross_entropy_seq", "input x: f64[2,3,4]\ninput y: i32[2,3]\nparam w: f64[4,3] = normal(1)\n"
                          "loss = cross_entropy(x @ w, y)\n"},
    {"cross_entropy_pixels", "input x: f64[2,3,2,2]\ninput y: i32[2,2,2]\nparam w: f64[3,3,1,1] = normal(1)\n"
                             "loss = cross_entropy(transpose(conv2d(x, w), perm=[0, 2, 3, 1]), y)\n"},
    {"concat", "param a: f64[2,3,2,2] = normal(1)\nparam b: f64[2,2,2,2] = normal(1)\ninput t: f64[2,5,2,2]\n"
               "loss = sum(tanh(concat(a, b * b, axis=1)) * t) + sum(concat(a, a, axis=-1) * concat(a, a, axis=3))\n"},
    {"concat_many", "param a: f64[2,3] = normal(1)\nparam b: f64[1,3] = normal(1)\ninput t: f64[9,3]\n"
                    "loss = sum(tanh(concat(a, b, a, b, b * a, b, axis=0)) * t)\n"},
    {"slice", "param a: f64[2,6,3] = normal(1)\ninput t: f64[2,2,3]\n"
              "loss = sum(tanh(slice(a, axis=1, start=1, end=-1, step=3)) * t) + sum(slice(a, axis=-1, start=-2) * slice(a, axis=2, end=2))\n"},
    {"upsample_nearest", "param a: f64[2,2,3,2] = normal(1)\ninput t: f64[2,2,6,4]\ninput u: f64[2,2,9,6]\n"
                         "loss = sum(tanh(upsample_nearest(a)) * t) + sum(sigmoid(upsample_nearest(a * a, scale=3)) * u)\n"},
    {"conv_transpose2d", "param x: f64[2,3,3,3] = normal(1)\nparam w: f64[3,2,2,2] = normal(0.5)\n"
                         "loss = sum(tanh(conv_transpose2d(x, w, stride=2)))\n"},
    {"conv_transpose2d_pad_outpad", "param x: f64[1,2,3,4] = normal(1)\nparam w: f64[2,3,3,3] = normal(0.5)\ninput t: f64[1,3,6,8]\n"
                                    "loss = sum(tanh(conv_transpose2d(x, w, stride=2, pad=1, output_pad=1)) * t)\n"},
    {"conv_transpose2d_groups_dilation", "param x: f64[2,4,3,3] = normal(1)\nparam w: f64[4,3,2,3] = normal(0.5)\n"
                                         "loss = sum(tanh(conv_transpose2d(x, w, groups=2, dilation=2, pad=1)))\n"},
    {"cross_entropy_axis1", "input x: f64[2,3,2,2]\ninput y: i32[2,2,2]\nparam w: f64[3,3,1,1] = normal(1)\n"
                            "loss = cross_entropy(conv2d(x, w), y, axis=1)\n"},
    {"cross_entropy_axis0", "param a: f64[3,4] = normal(1)\ninput y: i32[4]\nloss = cross_entropy(a * a, y, axis=-2)\n"},
    /* training-mode ops: the numeric side evaluates NAME_forward_train (batch statistics, the
     * dropout mask of the step train_step used) */
    {"batch_norm", "param x: f64[3,2,2,3] = normal(1)\nparam g: f64[2] = normal(1)\nparam b: f64[2] = normal(1)\n"
                   "input t: f64[3,2,2,3]\nloss = sum(tanh(batch_norm(x, g, b)) * t)\n"},
    {"batch_norm_2d_eps", "param x: f64[5,3] = normal(1)\nparam g: f64[3] = normal(1)\nparam b: f64[3] = normal(1)\n"
                          "input t: f64[5,3]\nloss = sum(sigmoid(batch_norm(x * x, g, b, eps=0.01, momentum=0.5)) * t)\n"},
    {"dropout_bn", "param x: f64[4,3,2,2] = normal(1)\nparam g: f64[3] = normal(1)\nparam b: f64[3] = normal(1)\n"
                   "input t: f64[4,3,2,2]\nloss = sum(tanh(dropout(batch_norm(x, g, b), p=0.25)) * t)"
                   " + sum(dropout(x * x, p=0.4, seed=3))\n"},
    /* batch_norm split into micro-batches (microbatch.c): two stages of bn_stats / bn_apply,
     * bn_grad_sums / bn_grad_apply / bn_grad_param, on 2 parts of the batch of 4 */
    {"batch_norm_parts", "input x: f64[4,2,3,3]\nparam p: f64[1,2,3,3] = normal(1)\nparam g: f64[2] = normal(1)\n"
                         "param b: f64[2] = normal(1)\nparam g2: f64[2] = normal(1)\nparam b2: f64[2] = normal(1)\n"
                         "input t: f64[4,2,3,3]\n"
                         "loss = sum(tanh(batch_norm(tanh(batch_norm(x * p, g, b)), g2, b2, eps=0.01)) * t)\n"},
    {"scalar_param", "param s: f64[] = normal(1)\nparam a: f64[2,2] = normal(1)\nloss = sum(tanh(a - s)) / s\n"},
    /* more steps than codegen.c emits in one function (CHUNK_STEPS, 512): forward (602 steps)
     * and train_step (1,505) each run as calls to several chunk functions */
    {"long_chain", "input x: f64[2,2]\nh = x\nrepeat 300 {\n  param w: f64[2,2] = normal(1)\n  h = tanh(h @ w)\n}\n"
                   "loss = sum(h * h)\n"},
};

static double rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (double)(*s >> 11) / 9007199254740992.0 * 2 - 1;
}

START_TEST(gradcheck)
{
    const gcase *c = &cases[_i];
    char name[64], *src, *log = NULL;
    snprintf(name, sizeof name, "g_%s", c->name);
    size_t len = strlen(c->body) + 256;
    src = malloc(len);
    snprintf(src, len, "model %s\n%soutput loss\nminimize loss\n", name, c->body);
    char *dir = tu_tmpdir();
    ck_assert_ptr_nonnull(dir);
    void *h = tu_build_model(dir, name, src, case_options(c), &log);
    ck_assert_msg(h != NULL, "building %s failed:\n%s", c->name, log ? log : "");

    const desc *pd = tu_sym(h, name, "params_desc"), *id = tu_sym(h, name, "inputs_desc");
    init_fn init = (init_fn)tu_sym(h, name, "init_params");
    train_fn train = (train_fn)tu_sym(h, name, "train_step");
    forward_fn fwd = (forward_fn)tu_sym(h, name, "forward");
    char hdrpath[4200];
    snprintf(hdrpath, sizeof hdrpath, "%s/%s.h", dir, name);
    char *hdr = tu_read(hdrpath);
    ck_assert_ptr_nonnull(hdr);
    long long ws_bytes = 0, pbytes = 0, sbytes = 0;
    int nparams = 0, ninputs = 0;
    const char *p;
    int has_state = strstr(hdr, "_HAS_STATE       1") != NULL;
    if (has_state) sbytes = tu_header_figure(hdr, "_STATE_BYTES");
    ws_bytes = tu_header_figure(hdr, "_WORKSPACE_BYTES");
    pbytes = tu_header_figure(hdr, "_PARAM_BYTES");
    ck_assert((p = strstr(hdr, "_NUM_PARAMS      ")) && sscanf(p + 17, "%d", &nparams) == 1);
    ck_assert((p = strstr(hdr, "_NUM_INPUTS      ")) && sscanf(p + 17, "%d", &ninputs) == 1);
    free(hdr);

    uint64_t seed = 12345;
    double *params = calloc(1, (size_t)pbytes), *grads = calloc(1, (size_t)pbytes);
    void *ws = malloc((size_t)ws_bytes + 1);
    init(params, 7);
    void *inputs[8] = {0};
    for (int i = 0; i < ninputs; i++) {
        inputs[i] = malloc(id[i].bytes);
        size_t n = id[i].bytes / (id[i].dtype == 2 ? 4 : 8);
        for (size_t k = 0; k < n; k++) {
            if (id[i].dtype == 2) ((int32_t *)inputs[i])[k] = (int32_t)((rnd(&seed) + 1) * 1.5); /* 0..2 */
            else ((double *)inputs[i])[k] = rnd(&seed);
        }
    }
    void *state = NULL, *state0 = NULL;
    if (has_state) {
        state = malloc((size_t)sbytes);
        state0 = malloc((size_t)sbytes);
        ((init_state_fn)tu_sym(h, name, "init_state"))(state);
        memcpy(state0, state, (size_t)sbytes);
        ((train_state_fn)(void *)train)(params, grads, (const void *const *)inputs, ws, state);
        memcpy(state, state0, (size_t)sbytes); /* the step train_step used */
    } else
        train(params, grads, (const void *const *)inputs, ws);
    forward_state_fn fwd_train = has_state ? (forward_state_fn)tu_sym(h, name, "forward_train") : NULL;
#define FWD(outs) (has_state ? fwd_train(params, state, (const void *const *)inputs, outs, ws) \
                             : fwd(params, (const void *const *)inputs, outs, ws))
    double loss = 0, worst = 0;
    void *outs[1] = {&loss};
    FWD(outs);
    ck_assert_msg(isfinite(loss), "%s: loss is %g", c->name, loss);
    for (int i = 0; i < nparams; i++) {
        size_t n = pd[i].bytes / 8;
        ck_assert_int_eq(pd[i].dtype, 1);
        for (size_t k = 0; k < n; k++) {
            double *x = (double *)((char *)params + pd[i].offset) + k;
            double x0 = *x, step = 1e-6 * fmax(1.0, fabs(x0)), lp = 0, lm = 0;
            void *op[1] = {&lp}, *om[1] = {&lm};
            *x = x0 + step;
            FWD(op);
            *x = x0 - step;
            FWD(om);
            *x = x0;
            double num = (lp - lm) / (2 * step);
            double ana = ((double *)((char *)grads + pd[i].offset))[k];
            double err = fabs(num - ana) / fmax(fmax(fabs(num), fabs(ana)), 1e-3);
            ck_assert_msg(err < 1e-6, "%s: d loss / d %s[%zu]: analytic %.12g, numeric %.12g (relative error %.3g)",
                          c->name, pd[i].name, k, ana, num, err);
            if (err > worst) worst = err;
        }
    }
#undef FWD
    for (int i = 0; i < ninputs; i++) free(inputs[i]);
    free(state);
    free(state0);
    free(params);
    free(grads);
    free(ws);
    free(src);
    free(log);
    dlclose(h);
    tu_rmtree(dir);
    free(dir);
}
END_TEST

/* The U-Net ops against direct loops written from their definitions (PyTorch's for
 * conv_transpose2d: y[n, g*Cog + co, ih*s - p + kh*d, iw*s - p + kw*d] += x[n, ci, ih, iw] *
 * w[ci, co, kh, kw] for ci in group g), in f32 and f64; and the f32 training step's gradients
 * against the f64 one's, which covers the f32 backward kernels. */
static const char ref_body[] =
    "param x: %s[2,4,3,3] = normal(1)\nparam w: %s[4,3,3,2] = normal(0.5)\ninput lab: i32[2,6,5]\n"
    "y = conv_transpose2d(x, w, stride=2, pad=1, output_pad=1, groups=2)\n"
    "u = upsample_nearest(x, scale=2)\nc = concat(x, slice(x, axis=1, start=1, step=2), axis=1)\n"
    "loss = cross_entropy(y, lab, axis=1) + mean(tanh(u)) + mean(c * c)\n"
    "output y\noutput u\noutput c\noutput loss\nminimize loss\n";

enum { RX = 72, RW = 72, RY = 2 * 6 * 6 * 5, RU = 2 * 4 * 6 * 6, RC = 2 * 6 * 3 * 3 };

static void ref_outputs(const double *x, const double *w, const int32_t *lab, double *y, double *u, double *c,
                        double *loss)
{
    memset(y, 0, RY * sizeof *y);
    for (int n = 0; n < 2; n++)
        for (int ci = 0; ci < 4; ci++)
            for (int ih = 0; ih < 3; ih++)
                for (int iw = 0; iw < 3; iw++)
                    for (int co = 0; co < 3; co++)
                        for (int kh = 0; kh < 3; kh++)
                            for (int kw = 0; kw < 2; kw++) {
                                int oh = ih * 2 - 1 + kh, ow = iw * 2 - 1 + kw, oc = ci / 2 * 3 + co;
                                if (oh >= 0 && oh < 6 && ow >= 0 && ow < 5)
                                    y[((n * 6 + oc) * 6 + oh) * 5 + ow] +=
                                        x[((n * 4 + ci) * 3 + ih) * 3 + iw] * w[((ci * 3 + co) * 3 + kh) * 2 + kw];
                            }
    double xe = 0, tu = 0, cc = 0;
    for (int n = 0; n < 2; n++)
        for (int p = 0; p < 30; p++) {
            double mx = -INFINITY, s = 0;
            for (int k = 0; k < 6; k++) mx = fmax(mx, y[(n * 6 + k) * 30 + p]);
            for (int k = 0; k < 6; k++) s += exp(y[(n * 6 + k) * 30 + p] - mx);
            xe += log(s) + mx - y[(n * 6 + lab[n * 30 + p]) * 30 + p];
        }
    for (int pl = 0; pl < 8; pl++)
        for (int h = 0; h < 6; h++)
            for (int ww = 0; ww < 6; ww++) {
                u[(pl * 6 + h) * 6 + ww] = x[(pl * 3 + h / 2) * 3 + ww / 2];
                tu += tanh(u[(pl * 6 + h) * 6 + ww]);
            }
    for (int n = 0; n < 2; n++)
        for (int k = 0; k < 6; k++)
            for (int i = 0; i < 9; i++) {
                int src = k < 4 ? k : 1 + 2 * (k - 4);
                c[(n * 6 + k) * 9 + i] = x[(n * 4 + src) * 9 + i];
                cc += c[(n * 6 + k) * 9 + i] * c[(n * 6 + k) * 9 + i];
            }
    *loss = xe / 60 + tu / RU + cc / RC;
}

static double at(const void *p, int f64, int i) { return f64 ? ((const double *)p)[i] : (double)((const float *)p)[i]; }

START_TEST(unet_ops_reference)
{
    double grads_by_type[2][RX + RW];
    for (int f64 = 0; f64 < 2; f64++) {
        const char *ty = f64 ? "f64" : "f32";
        char name[32], body[1024], src[1200], *log = NULL;
        snprintf(name, sizeof name, "ref_%s", ty);
        snprintf(body, sizeof body, ref_body, ty, ty);
        snprintf(src, sizeof src, "model %s\n%s", name, body);
        char *dir = tu_tmpdir();
        void *h = tu_build_model(dir, name, src, NULL, &log);
        ck_assert_msg(h != NULL, "building %s failed:\n%s", name, log ? log : "");
        const desc *pd = tu_sym(h, name, "params_desc");
        train_fn train = (train_fn)tu_sym(h, name, "train_step");
        forward_fn fwd = (forward_fn)tu_sym(h, name, "forward");
        size_t es = f64 ? 8 : 4;
        char hname[40];
        snprintf(hname, sizeof hname, "%s.h", name);
        char *hdr = tu_read(tu_path(dir, hname)); /* the blobs are NAME_PARAM_BYTES long, padding included */
        ck_assert_ptr_nonnull(hdr);
        size_t pbytes = (size_t)tu_header_figure(hdr, "_PARAM_BYTES");
        free(hdr);
        ck_assert_uint_ge(pbytes, pd[1].offset + RW * es);
        char *params = calloc(1, pbytes), *grads = calloc(1, pbytes);
        void *ws = malloc(1 << 20);
        double x[RX], w[RW], y[RY], u[RU], c[RC], loss, oy[RY], ou[RU], oc[RC], oloss;
        int32_t lab[60];
        uint64_t seed = 99;
        for (int i = 0; i < RX; i++) x[i] = (double)(float)rnd(&seed);
        for (int i = 0; i < RW; i++) w[i] = (double)(float)rnd(&seed);
        for (int i = 0; i < 60; i++) lab[i] = (int32_t)((rnd(&seed) + 1) * 2.99);
        for (int i = 0; i < RX + RW; i++) {
            void *dst = params + (i < RX ? pd[0].offset + (size_t)i * es : pd[1].offset + (size_t)(i - RX) * es);
            if (f64) *(double *)dst = i < RX ? x[i] : w[i - RX];
            else *(float *)dst = (float)(i < RX ? x[i] : w[i - RX]);
        }
        ref_outputs(x, w, lab, y, u, c, &loss);
        char out[4][RY * 8];
        void *outs[4] = {out[0], out[1], out[2], out[3]};
        const void *inputs[1] = {lab};
        ck_assert_int_le((long)(RY * es), (long)sizeof out[0]);
        fwd(params, inputs, outs, ws);
        double tol = f64 ? 1e-12 : 2e-5;
        for (int i = 0; i < RY; i++) oy[i] = at(out[0], f64, i);
        for (int i = 0; i < RU; i++) ou[i] = at(out[1], f64, i);
        for (int i = 0; i < RC; i++) oc[i] = at(out[2], f64, i);
        oloss = at(out[3], f64, 0);
        for (int i = 0; i < RY; i++) ck_assert_msg(fabs(oy[i] - y[i]) < tol, "%s conv_transpose2d[%d]: %.9g vs %.9g", ty, i, oy[i], y[i]);
        for (int i = 0; i < RU; i++) ck_assert_msg(fabs(ou[i] - u[i]) < tol, "%s upsample_nearest[%d]", ty, i);
        for (int i = 0; i < RC; i++) ck_assert_msg(oc[i] == c[i], "%s concat/slice[%d]: %g vs %g", ty, i, oc[i], c[i]);
        ck_assert_msg(fabs(oloss - loss) < tol, "%s loss %.12g vs %.12g", ty, oloss, loss);
        train(params, grads, inputs, ws);
        for (int i = 0; i < RX + RW; i++)
            grads_by_type[f64][i] = at(grads + (i < RX ? pd[0].offset : pd[1].offset), f64, i < RX ? i : i - RX);
        free(params);
        free(grads);
        free(ws);
        free(log);
        dlclose(h);
        tu_rmtree(dir);
        free(dir);
    }
    for (int i = 0; i < RX + RW; i++)
        ck_assert_msg(fabs(grads_by_type[0][i] - grads_by_type[1][i]) < 1e-5 * fmax(1, fabs(grads_by_type[1][i])),
                      "f32 gradient %d is %.9g, f64 %.9g", i, grads_by_type[0][i], grads_by_type[1][i]);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("gradcheck");
    TCase *tc = tcase_create("ops");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, gradcheck, 0, (int)(sizeof cases / sizeof cases[0]));
    tcase_add_test(tc, unet_ops_reference);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
