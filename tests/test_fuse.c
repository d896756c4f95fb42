/* test_fuse.c — fused elementwise loops (compiler/fuse.c) change nothing but speed.
 *
 *  - A model whose chains broadcast (a [C,1,1] bias and a row vector against [N,C,H,W], a
 *    scalar constant) is compiled with fusion on and with --no-fuse, in f32 and in f64; one
 *    training step from the same parameters and inputs gives byte-identical loss and
 *    gradients, and the forward pass byte-identical outputs.
 *  - Fusion really happened: the -O0 IR of the fused build has fused loop nests (blocks named
 *    fuseN.loopA), the --no-fuse build none, `memgrad plan --format json` counts as many chains;
 *    the examples mlp_deep and cnn_fmnist fuse too. */
#include "testutil.h"

#include <check.h>
#include <dlfcn.h>
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

static const char *model_text =
    "model fz\n"
    "input  x: T[4, 3, 6, 6]\n"
    "input  y: i32[4]\n"
    "param  w: T[5, 3, 3, 3] = he\n"
    "param  b: T[5, 1, 1] = normal(0.5)\n"
    "param  s: T[6] = normal(1)\n"
    "param  w2: T[180, 10] = he\n"
    "param  b2: T[10] = normal(0.1)\n"
    "h = conv2d(x, w, pad=1)\n"
    "h = relu(h * s + b)\n"          /* mul (row) -> add ([C,1,1]) -> relu */
    "g = -(exp(h - b) / 2)\n"         /* sub -> exp ... div by a constant -> neg */
    "h = tanh(g + h)\n"
    "h = gelu(h * s, approx=1)\n"
    "z = flatten(sigmoid(h) - b)\n"
    "logits = z @ w2 + b2\n"
    "loss = cross_entropy(logits, y)\n"
    "output logits\n"
    "minimize loss\n";

static char *with_dtype(const char *dt)
{
    size_t n = strlen(model_text) * 2 + 1;
    char *out = malloc(n), *o = out;
    for (const char *p = model_text; *p; p++) {
        if (p[0] == 'T' && p[1] == '[') o += sprintf(o, "%s", dt);
        else *o++ = *p;
    }
    *o = 0;
    return out;
}

typedef struct run {
    float loss;
    unsigned char *grads, *logits;
    size_t param_bytes, logit_bytes;
} run;

/* Compiles src with opts, runs one training step and the forward pass on fixed inputs. */
static run run_model(const char *dir, const char *tag, const char *src, const char *opts)
{
    char *log = NULL, hpath[4300];
    void *h = tu_build_model(dir, tag, src, opts, &log);
    ck_assert_msg(h != NULL, "compile (%s) failed:\n%s", opts, log ? log : "");
    free(log);
    snprintf(hpath, sizeof hpath, "%s/%s.h", dir, tag);
    char *hdr = tu_read(hpath);
    ck_assert(hdr != NULL);
    long long ws = tu_header_figure(hdr, "_WORKSPACE_BYTES");
    run r = {0};
    r.param_bytes = (size_t)tu_header_figure(hdr, "_PARAM_BYTES");
    free(hdr);
    const desc *in = tu_sym(h, "fz", "inputs_desc"), *outd = tu_sym(h, "fz", "outputs_desc");
    void *params = malloc(r.param_bytes), *wsm = malloc((size_t)ws + 1);
    r.grads = malloc(r.param_bytes);
    r.logit_bytes = outd[0].bytes;
    r.logits = malloc(r.logit_bytes);
    memset(r.grads, 0xa5, r.param_bytes);
    ((init_fn)tu_sym(h, "fz", "init_params"))(params, 3);
    void *inputs[2];
    uint64_t s = 12345;
    for (int i = 0; i < 2; i++) {
        inputs[i] = malloc(in[i].bytes);
        size_t n = in[i].bytes / (in[i].dtype == 1 ? 8 : 4);
        for (size_t k = 0; k < n; k++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            double u = (double)(s >> 11) / 9007199254740992.0;
            if (in[i].dtype == 2) ((int32_t *)inputs[i])[k] = (int32_t)(s % 10);
            else if (in[i].dtype == 1) ((double *)inputs[i])[k] = 2 * u - 1;
            else ((float *)inputs[i])[k] = (float)(2 * u - 1);
        }
    }
    memset(wsm, 0xff, (size_t)ws + 1);
    r.loss = ((train_fn)tu_sym(h, "fz", "train_step"))(params, r.grads, (const void *const *)inputs, wsm);
    void *outs[1] = {r.logits};
    ((forward_fn)tu_sym(h, "fz", "forward"))(params, (const void *const *)inputs, outs, wsm);
    for (int i = 0; i < 2; i++) free(inputs[i]);
    free(params);
    free(wsm);
    dlclose(h);
    return r;
}

/* The number of fused chains in the -O0 IR of src compiled with opts: calls of the step
 * functions that hold a fused loop nest (mg.fused, mg.fused.N; codegen.c emits each distinct
 * chain once and calls it where the plans run it). */
static int fused_loops(const char *dir, const char *src, const char *opts)
{
    char *out = NULL;
    const char *mg = tu_path(dir, "count.mg"), *ll = tu_path(dir, "count.ll"), *obj = tu_path(dir, "count.o");
    ck_assert(tu_write(mg, src) == 0);
    ck_assert_msg(tu_memgrad(&out, "compile '%s' -o '%s' -O0 --emit-llvm '%s' %s", mg, obj, ll, opts) == 0, "%s", out);
    free(out);
    char *ir = tu_read(ll);
    ck_assert(ir != NULL);
    int n = 0, nests = 0;
    for (const char *p = ir; (p = strstr(p, "call void @mg.fused")); p++) n++;
    for (const char *p = ir; (p = strstr(p, "\nfuse")); p++) { /* each nest in its own function */
        int id, axis;
        if (sscanf(p + 1, "fuse%d.loop%d:", &id, &axis) == 2 && id + 1 > nests) nests = id + 1;
    }
    ck_assert_int_le(nests, n);
    ck_assert_int_eq(nests > 0, n > 0);
    free(ir);
    return n;
}

static void fused_equals_unfused(const char *dt)
{
    char *dir = tu_tmpdir(), *src = with_dtype(dt);
    int loops = fused_loops(dir, src, "");
    ck_assert_int_gt(loops, 1);
    ck_assert_int_eq(fused_loops(dir, src, "--no-fuse"), 0);
    /* memgrad plan reports the chains compile fuses: one loop nest each, train and forward */
    char *out = NULL;
    ck_assert_msg(tu_memgrad(&out, "plan '%s' --format json --no-cache", tu_path(dir, "count.mg")) == 0, "%s", out);
    ck_assert_int_eq(tu_json_figure(out, "fused_chains") + tu_json_figure(out, "fused_chains_forward"), loops);
    ck_assert_int_gt(tu_json_figure(out, "fused_steps"), 2 * tu_json_figure(out, "fused_chains") - 1);
    free(out);
    run a = run_model(dir, "fused", src, "");
    run b = run_model(dir, "unfused", src, "--no-fuse");
    ck_assert_msg(a.loss == a.loss && a.loss > 0, "%s: loss %g", dt, (double)a.loss);
    ck_assert_msg(memcmp(&a.loss, &b.loss, sizeof a.loss) == 0, "%s: loss %.9g fused, %.9g unfused", dt,
                  (double)a.loss, (double)b.loss);
    ck_assert_msg(memcmp(a.grads, b.grads, a.param_bytes) == 0, "%s: gradients differ", dt);
    ck_assert_msg(memcmp(a.logits, b.logits, a.logit_bytes) == 0, "%s: forward outputs differ", dt);
    /* the fused build's gradients were written (not the 0xa5 fill) */
    unsigned char fill[64];
    memset(fill, 0xa5, sizeof fill);
    ck_assert(memcmp(a.grads, fill, sizeof fill) != 0);
    free(a.grads), free(a.logits), free(b.grads), free(b.logits);
    free(src);
    tu_rmtree(dir);
    free(dir);
}

START_TEST(test_fused_f32) { fused_equals_unfused("f32"); }
END_TEST

START_TEST(test_fused_f64) { fused_equals_unfused("f64"); }
END_TEST

START_TEST(test_examples_fuse)
{
    const char *names[2] = {"mlp_deep", "cnn_fmnist"};
    char *dir = tu_tmpdir();
    for (int i = 0; i < 2; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/examples/%s.mg", MG_SOURCE_DIR, names[i]);
        char *src = tu_read(path);
        ck_assert_msg(src != NULL, "cannot read %s", path);
        ck_assert_msg(fused_loops(dir, src, "") > 0, "%s: nothing fused", names[i]);
        free(src);
    }
    tu_rmtree(dir);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fuse");
    TCase *tc = tcase_create("fuse");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_fused_f32);
    tcase_add_test(tc, test_fused_f64);
    tcase_add_test(tc, test_examples_fuse);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
