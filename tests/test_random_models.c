/* test_random_models.c — bit-identical gradients on random models, a differential test.
 *
 * Why it exists: memgrad promises that the loss and every gradient byte are the same whatever
 * the budget, the solver and the micro-batch count, and that every budget from the minimum
 * feasible one that `plan` reports up is met. The other suites check that on a few fixed
 * models (test_microbatch.c, test_state.c); the planner, the micro-batching rewrite and the
 * fused code generation have many more paths than those models take. Here a generator makes
 * small random models from a seed — dense layers, sequences with attention, convolutional nets,
 * residuals, diamonds, long skips, values read by many later ops, shared weights, repeat blocks
 * and defs, batch_norm and dropout, f32 and f64 — and each is compiled by the real `memgrad`
 * at store-all and at several budgets (75%, 50%, 30%, the minimum feasible, one between),
 * whole (`--micro-batches 1`) and forced into parts, unfused and with `sqrt`, all with
 * `--verify`. Each object is linked with `cc harness.c v.o -lm` (one program per object, as a
 * user does), runs one training step, NAME_forward (and NAME_forward_train with state) and
 * writes the loss, every gradient byte, the state and the outputs; every variant must give the
 * store-all bytes. The harness also runs each step twice on differently filled workspaces (a
 * read of uninitialised workspace shows), and checks guard bytes after the workspace, the
 * gradients, the state and the outputs, that the params and inputs are not written, and that
 * NAME_forward stays in its NAME_FORWARD_WORKSPACE_BYTES.
 *
 * ctest runs a fixed set of seeds (fewer under the sanitizers). By hand, as an exploration:
 *   MG_RANDOM_SEED=1000 MG_RANDOM_COUNT=300 MG_RANDOM_OPT=-O0 MG_RANDOM_LOG=/tmp/rand.log \
 *   MG_RANDOM_KEEP=/tmp/rand-failures CK_DEFAULT_TIMEOUT=3000 build/tests/test_random_models
 * runs seeds 1000..1299, appends every failure (seed, variant, command, what differed) to the
 * log and keeps each failing model as KEEP/seedN.mg. MG_RANDOM_SEEDS="5 17 40" runs a list.
 * MG_RANDOM_PRINT=N prints the model of seed N and exits; MG_RANDOM_FILE=m.mg runs every variant
 * on that model instead of a generated one (its name must be rm). MG_RANDOM_OPT=-O3 compiles at
 * another level (default -O0; "mix" picks one by seed), MG_RANDOM_EXACT=1 adds a --solver exact
 * variant, MG_RANDOM_SWEEP=N plans N more budgets between the minimum and store-all (none may be
 * refused).
 */
#include "testutil.h"

#include <check.h>
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* ------------------------------------------------------------------------------------------ */
/* A growing string */

typedef struct sbuf {
    char *s;
    size_t n, cap;
} sbuf;

static void sb_vprintf(sbuf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int k = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (b->n + (size_t)k + 1 > b->cap) {
        b->cap = (b->n + (size_t)k + 1) * 2;
        b->s = realloc(b->s, b->cap);
    }
    vsnprintf(b->s + b->n, (size_t)k + 1, fmt, ap);
    b->n += (size_t)k;
}

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(b, fmt, ap);
    va_end(ap);
}

static const char *sb_str(sbuf *b)
{
    if (!b->s) sb_printf(b, "%s", "");
    return b->s;
}

/* ------------------------------------------------------------------------------------------ */
/* The generator */

enum { MAXV = 256 };

typedef struct gval {
    char name[24];
    int rank;
    int64_t d[4];
} gval;

typedef struct gen {
    uint64_t rng;
    const char *dt; /* "f32" or "f64" */
    int B;
    sbuf defs, body;
    gval v[MAXV];
    int nv;
    int cur;               /* the value the next op extends */
    int nparams, nvals, ninputs, nlabels, ndefs;
    int state, dropout;    /* the model has batch_norm / dropout */
    int big;               /* larger shapes: GEMMs over several blocks, convolutions in chunks */
    int deep;              /* more ops and longer repeats: past the exact search's 64 values */
    int64_t lim, maxhw;    /* at most lim elements in an image value, maxhw its height or width */
    int dense_defs[4];     /* def names made for dense blocks (index), -1 none */
    int ndense_defs;
    int conv_def;          /* a conv block def made, -1 none */
    char *shared_w[64];    /* dense weights a later linear may share, with their in/out widths */
    int64_t shared_in[64], shared_out[64];
    int nshared;
    char outputs[8][24];
    int noutputs;
} gen;

static uint64_t g_next(gen *g)
{
    uint64_t z = (g->rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int rn(gen *g, int n) { return n <= 1 ? 0 : (int)(g_next(g) % (uint64_t)n); }
static int chance(gen *g, int percent) { return rn(g, 100) < percent; }
static int pick(gen *g, const int *xs, int n) { return xs[rn(g, n)]; }

static int64_t numel(const gval *v)
{
    int64_t e = 1;
    for (int i = 0; i < v->rank; i++) e *= v->d[i];
    return e;
}

/* a new value of the given shape; returns its index (the name is tK) */
static int new_val(gen *g, int rank, int64_t d0, int64_t d1, int64_t d2, int64_t d3)
{
    if (g->nv >= MAXV) abort(); /* (no model comes near) */
    gval *v = &g->v[g->nv];
    snprintf(v->name, sizeof v->name, "t%d", g->nvals++);
    v->rank = rank;
    v->d[0] = d0, v->d[1] = d1, v->d[2] = d2, v->d[3] = d3;
    return g->nv++;
}

static int like(gen *g, int i) { return new_val(g, g->v[i].rank, g->v[i].d[0], g->v[i].d[1], g->v[i].d[2], g->v[i].d[3]); }

static const char *N(gen *g, int i) { return g->v[i].name; }

/* the shape as text, B for the batch axis (the constant) */
static const char *shape_text(gen *g, int rank, const int64_t *d, char *buf, size_t cap)
{
    size_t n = 0;
    n += (size_t)snprintf(buf + n, cap - n, "[");
    for (int i = 0; i < rank; i++) {
        if (i == 0 && d[0] == g->B) n += (size_t)snprintf(buf + n, cap - n, "B");
        else n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? ", " : "", (long long)d[i]);
    }
    snprintf(buf + n, cap - n, "]");
    return buf;
}

/* declares a param of dt; returns its name (static ring) */
static const char *param(gen *g, const char *init, int rank, int64_t d0, int64_t d1, int64_t d2, int64_t d3)
{
    static char names[8][24];
    static int k;
    char *nm = names[k++ % 8], sh[96];
    int64_t d[4] = {d0, d1, d2, d3};
    snprintf(nm, 24, "p%d", g->nparams++);
    size_t n = (size_t)snprintf(sh, sizeof sh, "[");
    for (int i = 0; i < rank; i++) n += (size_t)snprintf(sh + n, sizeof sh - n, "%s%lld", i ? ", " : "", (long long)d[i]);
    snprintf(sh + n, sizeof sh - n, "]");
    sb_printf(&g->body, "param %s: %s%s = %s\n", nm, g->dt, sh, init);
    return nm;
}

static const char *winit(gen *g)
{
    static const char *inits[] = {"he", "xavier", "normal(0.2)", "uniform(0.3)"};
    return inits[rn(g, 4)];
}

static const char *binit(gen *g) { return chance(g, 50) ? "zeros" : "normal(0.1)"; }

/* an earlier value of exactly this shape other than i (-1 none) */
static int same_shape(gen *g, int i)
{
    int cand[MAXV], n = 0;
    for (int j = 0; j < g->nv; j++) {
        if (j == i || g->v[j].rank != g->v[i].rank) continue;
        if (memcmp(g->v[j].d, g->v[i].d, sizeof(int64_t) * (size_t)g->v[i].rank)) continue;
        cand[n++] = j;
    }
    return n ? cand[rn(g, n)] : -1;
}

static int widths[] = {8, 12, 16, 24, 32, 48, 64};
static int big_widths[] = {64, 96, 128, 320, 192, 80, 48}; /* 320: K past one GEMM block (KC 256) */

/* a width among the first n (smaller first) */
static int64_t wpick(gen *g, int n) { return pick(g, g->big ? big_widths : widths, n); }

/* elementwise: activations and scalar arithmetic, any rank */
static void op_act(gen *g)
{
    int c = g->cur, r = like(g, c);
    const char *x = N(g, c);
    switch (rn(g, 13)) {
    case 0: sb_printf(&g->body, "%s = relu(%s)\n", N(g, r), x); break;
    case 1: sb_printf(&g->body, "%s = tanh(%s)\n", N(g, r), x); break;
    case 2: sb_printf(&g->body, "%s = sigmoid(%s)\n", N(g, r), x); break;
    case 3: sb_printf(&g->body, "%s = gelu(%s)\n", N(g, r), x); break;
    case 4: sb_printf(&g->body, "%s = gelu(%s, approx=1)\n", N(g, r), x); break;
    case 5: sb_printf(&g->body, "%s = exp(tanh(%s)) - 1\n", N(g, r), x); break;
    case 6: sb_printf(&g->body, "%s = log(%s * %s + 1)\n", N(g, r), x, x); break;
    case 7: sb_printf(&g->body, "%s = %s / (%s * %s + 1)\n", N(g, r), x, x, x); break;
    case 8: sb_printf(&g->body, "%s = 0.5 * %s - 0.25\n", N(g, r), x); break;
    case 9: sb_printf(&g->body, "%s = -%s\n", N(g, r), x); break;
    case 10: sb_printf(&g->body, "%s = relu(%s) - relu(-%s) * 0.1\n", N(g, r), x, x); break;
    case 11: sb_printf(&g->body, "%s = tanh(%s) * sigmoid(%s)\n", N(g, r), x, x); break;
    default: sb_printf(&g->body, "%s = 1 - sigmoid(%s * 2)\n", N(g, r), x); break;
    }
    g->cur = r;
}

/* a residual, gate or difference with an earlier value of the same shape (a diamond or a long
 * skip); else an activation */
static void op_join(gen *g)
{
    int c = g->cur, e = same_shape(g, c);
    if (e < 0) {
        op_act(g);
        return;
    }
    int r = like(g, c);
    switch (rn(g, 5)) {
    case 0:
    case 1: sb_printf(&g->body, "%s = %s + %s\n", N(g, r), N(g, c), N(g, e)); break;
    case 2: sb_printf(&g->body, "%s = %s * sigmoid(%s)\n", N(g, r), N(g, c), N(g, e)); break;
    case 3: sb_printf(&g->body, "%s = %s - 0.5 * %s\n", N(g, r), N(g, e), N(g, c)); break;
    default: sb_printf(&g->body, "%s = tanh(%s) * %s + %s\n", N(g, r), N(g, c), N(g, e), N(g, c)); break;
    }
    g->cur = r;
}

/* a learned scale or shift broadcast over the last axis (dense, seq) or per channel (images) */
static void op_affine(gen *g)
{
    int c = g->cur, r = like(g, c);
    const gval *v = &g->v[c];
    const char *init = chance(g, 50) ? "ones" : "normal(0.5)", *p;
    int kind = rn(g, 10);
    if (kind == 0) p = param(g, init, 0, 0, 0, 0, 0); /* a scalar: its gradient sums every element */
    else if (kind == 1 && v->rank >= 3) /* one per position of the trailing axes, broadcast over the batch */
        p = v->rank == 3 ? param(g, init, 2, v->d[1], 1, 0, 0) : param(g, init, 3, 1, v->d[2], v->d[3], 0);
    else if (kind == 2 && v->rank == 2) p = param(g, init, 2, 1, v->d[1], 0, 0);
    else p = v->rank == 4 ? param(g, init, 3, v->d[1], 1, 1, 0) : param(g, init, 1, v->d[v->rank - 1], 0, 0, 0);
    sb_printf(&g->body, "%s = %s %s %s\n", N(g, r), N(g, c), chance(g, 50) ? "*" : "+", p);
    g->cur = r;
}

static void op_dropout(gen *g)
{
    if (chance(g, 50)) return op_act(g); /* rarer: a model with dropout is never split */
    int c = g->cur, r = like(g, c);
    const char *p = chance(g, 50) ? "0.25" : "0.5"; /* (one draw per statement: argument order is unspecified) */
    sb_printf(&g->body, "%s = dropout(%s, p=%s, seed=%d)\n", N(g, r), N(g, c), p, rn(g, 100));
    g->dropout = g->state = 1;
    g->cur = r;
}

/* ---- dense [B, D] and sequences [B, T, D]: ops on the last axis ---- */

/* a linear layer on the last axis, sometimes reusing an earlier weight of the right shape */

static void op_linear(gen *g)
{
    int c = g->cur;
    gval *v = &g->v[c];
    int64_t D = v->d[v->rank - 1], F = wpick(g, 7);
    const char *w = NULL;
    char wbuf[24];
    for (int i = 0; i < g->nshared && !w; i++)
        if (g->shared_in[i] == D && chance(g, 40)) {
            w = g->shared_w[i];
            F = g->shared_out[i];
        }
    int transposed = 0;
    if (!w) {
        transposed = chance(g, 15); /* x @ transpose(w): the GEMM with B transposed */
        w = transposed ? param(g, winit(g), 2, F, D, 0, 0) : param(g, winit(g), 2, D, F, 0, 0);
        if (!transposed && g->nshared < 64) {
            g->shared_w[g->nshared] = strdup(w);
            g->shared_in[g->nshared] = D;
            g->shared_out[g->nshared++] = F;
        }
    }
    snprintf(wbuf, sizeof wbuf, "%s", w);
    int r = v->rank == 2 ? new_val(g, 2, v->d[0], F, 0, 0) : new_val(g, 3, v->d[0], v->d[1], F, 0);
    v = &g->v[c];
    char wt[64];
    if (transposed) snprintf(wt, sizeof wt, "transpose(%s, perm=[1, 0])", wbuf);
    else snprintf(wt, sizeof wt, "%s", wbuf);
    if (chance(g, 70)) {
        const char *b = param(g, binit(g), 1, F, 0, 0, 0);
        static const char *acts[] = {"relu", "tanh", "sigmoid", "gelu", ""};
        const char *a = acts[rn(g, 5)];
        if (*a) sb_printf(&g->body, "%s = %s(%s @ %s + %s)\n", N(g, r), a, N(g, c), wt, b);
        else sb_printf(&g->body, "%s = %s @ %s + %s\n", N(g, r), N(g, c), wt, b);
    }
    else sb_printf(&g->body, "%s = matmul(%s, %s)\n", N(g, r), N(g, c), wt);
    g->cur = r;
}

static void op_layer_norm(gen *g)
{
    int c = g->cur, r = like(g, c);
    int64_t D = g->v[c].d[g->v[c].rank - 1];
    char sc[24];
    snprintf(sc, sizeof sc, "%s", param(g, chance(g, 60) ? "ones" : "normal(0.5)", 1, D, 0, 0, 0));
    const char *sh = param(g, binit(g), 1, D, 0, 0, 0);
    if (chance(g, 30)) sb_printf(&g->body, "%s = layer_norm(%s, %s, %s, eps=0.01)\n", N(g, r), N(g, c), sc, sh);
    else sb_printf(&g->body, "%s = layer_norm(%s, %s, %s)\n", N(g, r), N(g, c), sc, sh);
    g->cur = r;
}

/* batch_norm on [B, C] or [B, C, H, W] (state) */
static void op_batch_norm(gen *g)
{
    int c = g->cur;
    if (g->v[c].rank == 3) return op_layer_norm(g);
    int r = like(g, c);
    int64_t C = g->v[c].d[1];
    char sc[24];
    snprintf(sc, sizeof sc, "%s", param(g, chance(g, 60) ? "ones" : "normal(0.5)", 1, C, 0, 0, 0));
    const char *sh = param(g, binit(g), 1, C, 0, 0, 0);
    if (chance(g, 30)) sb_printf(&g->body, "%s = batch_norm(%s, %s, %s, eps=0.001, momentum=0.5)\n", N(g, r), N(g, c), sc, sh);
    else sb_printf(&g->body, "%s = batch_norm(%s, %s, %s)\n", N(g, r), N(g, c), sc, sh);
    g->state = 1;
    g->cur = r;
}

static void op_softmax(gen *g)
{
    int c = g->cur, r = like(g, c), rank = g->v[c].rank;
    const char *f = chance(g, 70) ? "softmax" : "log_softmax";
    int axis = chance(g, 70) ? -1 : rn(g, rank); /* axis 0 mixes the samples */
    if (axis == -1) sb_printf(&g->body, "%s = %s(%s)\n", N(g, r), f, N(g, c));
    else sb_printf(&g->body, "%s = %s(%s, axis=%d)\n", N(g, r), f, N(g, c), axis);
    if (!strcmp(f, "log_softmax")) { /* keep it bounded */
        int r2 = like(g, r);
        sb_printf(&g->body, "%s = tanh(%s)\n", N(g, r2), N(g, r));
        r = r2;
    }
    g->cur = r;
}

/* concat on the last axis (or the channel axis of images) with an earlier value or itself */
static void op_concat(gen *g)
{
    int c = g->cur, rank = g->v[c].rank, axis = rank == 4 ? 1 : rank - 1;
    int cand[MAXV], n = 0;
    for (int j = 0; j < g->nv; j++) {
        if (j == c || g->v[j].rank != rank) continue;
        int ok = 1;
        for (int a = 0; a < rank; a++) ok &= a == axis || g->v[j].d[a] == g->v[c].d[a];
        if (ok && g->v[j].d[axis] + g->v[c].d[axis] <= (g->big ? 400 : 96)) cand[n++] = j;
    }
    int e = n ? cand[rn(g, n)] : -1;
    if (e < 0 && g->v[c].d[axis] * 2 > (g->big ? 400 : 96)) return op_act(g);
    int64_t add = e >= 0 ? g->v[e].d[axis] : g->v[c].d[axis];
    int r = like(g, c);
    g->v[r].d[axis] += add;
    int neg = chance(g, 30);
    if (e >= 0) {
        if (chance(g, 50)) sb_printf(&g->body, "%s = concat(%s, %s, axis=%d)\n", N(g, r), N(g, c), N(g, e), neg ? axis - rank : axis);
        else sb_printf(&g->body, "%s = concat(%s, %s, axis=%d)\n", N(g, r), N(g, e), N(g, c), neg ? axis - rank : axis);
    }
    else sb_printf(&g->body, "%s = concat(%s, %s * %s, axis=%d)\n", N(g, r), N(g, c), N(g, c), N(g, c), axis);
    g->cur = r;
}

static void op_slice(gen *g)
{
    int c = g->cur, rank = g->v[c].rank;
    int axis = rank == 4 ? 1 + rn(g, 3) : rank == 3 ? 1 + rn(g, 2) : 1;
    int64_t L = g->v[c].d[axis];
    if (L < 4) return op_act(g);
    int64_t start = rn(g, (int)(L / 2)), step = 1 + rn(g, 2), end = L - rn(g, (int)(L / 4) + 1);
    int64_t len = (end - start + step - 1) / step;
    if (len < 2) return op_act(g);
    int r = like(g, c);
    g->v[r].d[axis] = len;
    sb_printf(&g->body, "%s = slice(%s, axis=%d, start=%lld, end=%lld, step=%lld)\n", N(g, r), N(g, c), axis,
              (long long)start, (long long)end, (long long)step);
    g->cur = r;
}

/* mixing the samples: softmax over the batch axis or a [B, B] matmul on the transposed batch */
static void op_mix(gen *g)
{
    int c = g->cur;
    if (g->v[c].rank != 2 || chance(g, 30)) {
        int r = like(g, c);
        sb_printf(&g->body, "%s = %s * softmax(%s, axis=0)\n", N(g, r), N(g, c), N(g, c));
        g->cur = r;
        return;
    }
    const char *w = param(g, "normal(0.2)", 2, g->B, g->B, 0, 0);
    int r = like(g, c);
    sb_printf(&g->body, "%s = transpose(transpose(%s, perm=[1, 0]) @ %s, perm=[1, 0]) + %s\n", N(g, r), N(g, c), w, N(g, c));
    g->cur = r;
}

/* [B, D] as [B*2, D/2] rows through a linear layer and back */
static void op_rows(gen *g)
{
    int c = g->cur;
    gval *v = &g->v[c];
    if (v->rank == 3) {
        int64_t T = v->d[1], D = v->d[2], F = wpick(g, 5);
        const char *w = param(g, winit(g), 2, D, F, 0, 0);
        int r = new_val(g, 3, g->B, T, F, 0);
        sb_printf(&g->body, "%s = reshape(tanh(reshape(%s, shape=[B * %lld, %lld]) @ %s), shape=[B, %lld, %lld])\n", N(g, r),
                  N(g, c), (long long)T, (long long)D, w, (long long)T, (long long)F);
        g->cur = r;
        return;
    }
    int64_t D = v->d[1];
    if (D % 2) return op_linear(g);
    int64_t F = wpick(g, 4);
    const char *w = param(g, winit(g), 2, D / 2, F, 0, 0);
    int r = new_val(g, 2, g->B, 2 * F, 0, 0);
    sb_printf(&g->body, "%s = reshape(relu(reshape(%s, shape=[B * 2, %lld]) @ %s), shape=[B, -1])\n", N(g, r), N(g, c),
              (long long)(D / 2), w);
    g->cur = r;
}

/* [B, D] to a sequence [B, T, D/T] */
static void op_to_seq(gen *g)
{
    int c = g->cur;
    int64_t D = g->v[c].d[1];
    int T = D % 4 == 0 && D >= 16 ? 4 : D % 2 == 0 ? 2 : 0;
    if (!T) return op_linear(g);
    int r = new_val(g, 3, g->B, T, D / T, 0);
    sb_printf(&g->body, "%s = reshape(%s, shape=[B, %d, %lld])\n", N(g, r), N(g, c), T, (long long)(D / T));
    g->cur = r;
}

/* attention on a sequence [B, T, D]: one head or two, a diamond of q, k, v */
static void op_attention(gen *g)
{
    int c = g->cur;
    int64_t T = g->v[c].d[1], D = g->v[c].d[2];
    int64_t A = chance(g, 50) ? 8 : 16;
    char wq[24], wk[24], wv[24];
    snprintf(wq, 24, "%s", param(g, "xavier", 2, D, A, 0, 0));
    snprintf(wk, 24, "%s", param(g, "xavier", 2, D, A, 0, 0));
    snprintf(wv, 24, "%s", param(g, "xavier", 2, D, A, 0, 0));
    int q = new_val(g, 3, g->B, T, A, 0), k = new_val(g, 3, g->B, T, A, 0), v = new_val(g, 3, g->B, T, A, 0);
    sb_printf(&g->body, "%s = %s @ %s\n%s = %s @ %s\n%s = %s @ %s\n", N(g, q), N(g, c), wq, N(g, k), N(g, c), wk, N(g, v),
              N(g, c), wv);
    int o = new_val(g, 3, g->B, T, A, 0);
    if (chance(g, 50)) {
        int a = new_val(g, 3, g->B, T, T, 0);
        sb_printf(&g->body, "%s = softmax(%s @ transpose(%s, perm=[0, 2, 1]) * 0.25)\n%s = %s @ %s\n", N(g, a), N(g, q),
                  N(g, k), N(g, o), N(g, a), N(g, v));
    }
    else {
        int64_t H = 2, DH = A / 2;
        sb_printf(&g->body,
                  "%s = reshape(transpose(softmax(transpose(reshape(%s, shape=[B, %lld, %lld, %lld]), perm=[0, 2, 1, 3]) @ "
                  "transpose(reshape(%s, shape=[B, %lld, %lld, %lld]), perm=[0, 2, 3, 1]) * 0.3) @ "
                  "transpose(reshape(%s, shape=[B, %lld, %lld, %lld]), perm=[0, 2, 1, 3]), perm=[0, 2, 1, 3]), shape=[B, %lld, %lld])\n",
                  N(g, o), N(g, q), (long long)T, (long long)H, (long long)DH, N(g, k), (long long)T, (long long)H,
                  (long long)DH, N(g, v), (long long)T, (long long)H, (long long)DH, (long long)T, (long long)A);
    }
    if (A == D && chance(g, 70)) {
        int r = new_val(g, 3, g->B, T, A, 0);
        sb_printf(&g->body, "%s = %s + %s\n", N(g, r), N(g, c), N(g, o));
        o = r;
    }
    g->cur = o;
}

/* a sequence back to [B, D]: flattened, or pooled over T by a matmul */
static void op_from_seq(gen *g)
{
    int c = g->cur;
    int64_t T = g->v[c].d[1], D = g->v[c].d[2];
    if (chance(g, 50) && T * D <= 256) {
        int r = new_val(g, 2, g->B, T * D, 0, 0);
        sb_printf(&g->body, "%s = flatten(%s)\n", N(g, r), N(g, c));
        g->cur = r;
        return;
    }
    const char *w = param(g, "normal(0.3)", 2, T, 1, 0, 0);
    int r = new_val(g, 2, g->B, D, 0, 0);
    sb_printf(&g->body, "%s = reshape(transpose(%s, perm=[0, 2, 1]) @ %s, shape=[B, %lld])\n", N(g, r), N(g, c), w, (long long)D);
    g->cur = r;
}

/* a sequence transposed: [B, T, D] to [B, D, T] (a linear layer then mixes positions) */
static void op_seq_transpose(gen *g)
{
    int c = g->cur;
    int r = new_val(g, 3, g->B, g->v[c].d[2], g->v[c].d[1], 0);
    sb_printf(&g->body, "%s = transpose(%s, perm=[0, 2, 1])\n", N(g, r), N(g, c));
    g->cur = r;
}

/* a def block on the last axis (dense, seq), called at its width: residual or gated */
static void op_dense_def(gen *g)
{
    int c = g->cur;
    int64_t D = g->v[c].d[g->v[c].rank - 1];
    int k;
    if (g->ndense_defs && chance(g, 60)) k = g->dense_defs[rn(g, g->ndense_defs)];
    else if (g->ndense_defs < 4) {
        k = g->ndefs++;
        g->dense_defs[g->ndense_defs++] = k;
        switch (rn(g, 3)) {
        case 0:
            sb_printf(&g->defs, "def blk%d(x, d) {\n  param w: %s[d, d] = xavier\n  param b: %s[d] = %s\n  return x + relu(x @ w + b)\n}\n",
                      k, g->dt, g->dt, binit(g));
            break;
        case 1:
            sb_printf(&g->defs, "def blk%d(x, d) {\n  param w: %s[d, d] = normal(0.2)\n  g = sigmoid(x @ w)\n  return x * g + tanh(x) * (1 - g)\n}\n",
                      k, g->dt);
            break;
        default:
            sb_printf(&g->defs,
                      "def blk%d(x, d) {\n  param g: %s[d] = ones\n  param b: %s[d] = zeros\n  param w1: %s[d, d * 2] = he\n"
                      "  param w2: %s[d * 2, d] = xavier\n  return x + gelu(layer_norm(x, g, b) @ w1) @ w2\n}\n",
                      k, g->dt, g->dt, g->dt, g->dt);
            break;
        }
    }
    else k = g->dense_defs[rn(g, g->ndense_defs)];
    int r = like(g, c);
    sb_printf(&g->body, "%s = blk%d(%s, %lld)\n", N(g, r), k, N(g, c), (long long)D);
    g->cur = r;
}

/* a repeat block on the current value, shape-preserving; params inside get .i suffixes */
static void op_repeat(gen *g)
{
    int c = g->cur;
    gval *v = &g->v[c];
    int n = g->deep ? 3 + rn(g, 10) : 2 + rn(g, 2);
    int r = like(g, c);
    const char *h = N(g, r);
    sb_printf(&g->body, "%s = %s\nrepeat %d {\n", h, N(g, c), n);
    if (v->rank == 4) {
        int64_t C = v->d[1];
        sb_printf(&g->body, "  param rw%d: %s[%lld, %lld, 3, 3] = he\n  %s = relu(conv2d(%s, rw%d, pad=1)) + %s\n", g->nparams,
                  g->dt, (long long)C, (long long)C, h, h, g->nparams, h);
    }
    else {
        int64_t D = v->d[v->rank - 1];
        sb_printf(&g->body, "  param rw%d: %s[%lld, %lld] = xavier\n  param rb%d: %s[%lld] = %s\n  %s = tanh(%s @ rw%d + rb%d) + %s\n",
                  g->nparams, g->dt, (long long)D, (long long)D, g->nparams, g->dt, (long long)D, binit(g), h, h,
                  g->nparams, g->nparams, h);
    }
    g->nparams++;
    sb_printf(&g->body, "}\n");
    g->cur = r;
}

/* ---- images [B, C, H, W] ---- */

/* a convolution's output size, 0 where the kernel does not fit */
static int64_t conv_out(int64_t H, int k, int s, int p, int d)
{
    return H + 2 * p < d * (k - 1) + 1 ? 0 : (H + 2 * p - d * (k - 1) - 1) / s + 1;
}

static void op_conv(gen *g)
{
    int c = g->cur;
    gval *v = &g->v[c];
    int64_t C = v->d[1], H = v->d[2], W = v->d[3];
    static const int couts[] = {2, 4, 6, 8, 12, 16}, big_couts[] = {8, 16, 24, 32, 12, 16};
    for (int tries = 0; tries < 20; tries++) {
        int k = 1 + rn(g, 3), s = chance(g, 25) ? 2 : 1, p = rn(g, k == 1 ? 1 : 2), d = k > 1 && chance(g, 20) ? 2 : 1;
        int64_t Co = pick(g, g->big ? big_couts : couts, 6);
        int groups = 1;
        if (chance(g, 25)) {
            int gs[] = {2, 3, 4, (int)C};
            int gg = gs[rn(g, 4)];
            if (C % gg == 0 && Co % gg == 0) groups = gg;
        }
        int64_t OH = conv_out(H, k, s, p, d), OW = conv_out(W, k, s, p, d);
        if (OH < 1 || OW < 1 || Co * OH * OW * g->B > g->lim) continue;
        const char *w = param(g, chance(g, 70) ? "he" : "normal(0.3)", 4, Co, C / groups, k, k);
        char wn[24], attrs[96] = "";
        snprintf(wn, sizeof wn, "%s", w);
        size_t n = 0;
        if (s != 1) n += (size_t)snprintf(attrs + n, sizeof attrs - n, ", stride=%d", s);
        if (p) n += (size_t)snprintf(attrs + n, sizeof attrs - n, ", pad=%d", p);
        if (d != 1) n += (size_t)snprintf(attrs + n, sizeof attrs - n, ", dilation=%d", d);
        if (groups != 1) n += (size_t)snprintf(attrs + n, sizeof attrs - n, ", groups=%d", groups);
        int r = new_val(g, 4, g->B, Co, OH, OW);
        if (chance(g, 60)) {
            const char *b = param(g, binit(g), 3, Co, 1, 1, 0);
            static const char *acts[] = {"relu", "tanh", "gelu", ""};
            const char *a = acts[rn(g, 4)];
            if (*a) sb_printf(&g->body, "%s = %s(conv2d(%s, %s%s) + %s)\n", N(g, r), a, N(g, c), wn, attrs, b);
            else sb_printf(&g->body, "%s = conv2d(%s, %s%s) + %s\n", N(g, r), N(g, c), wn, attrs, b);
        }
        else sb_printf(&g->body, "%s = conv2d(%s, %s%s)\n", N(g, r), N(g, c), wn, attrs);
        g->cur = r;
        return;
    }
    op_act(g);
}

static void op_pool(gen *g)
{
    int c = g->cur;
    gval *v = &g->v[c];
    int64_t H = v->d[2], W = v->d[3];
    if (H < 2 || W < 2) return op_act(g);
    int k = H >= 3 && W >= 3 && chance(g, 30) ? 3 : 2, s = chance(g, 30) ? 1 : k == 3 ? 2 : 2, p = chance(g, 25) ? 1 : 0;
    if (p > k / 2) p = 0;
    int64_t OH = conv_out(H, k, s, p, 1), OW = conv_out(W, k, s, p, 1);
    if (OH < 1 || OW < 1) return op_act(g);
    int r = new_val(g, 4, g->B, v->d[1], OH, OW);
    const char *f = chance(g, 55) ? "max_pool2d" : "avg_pool2d";
    char attrs[64] = "";
    size_t n = 0;
    if (s != k || chance(g, 30)) n += (size_t)snprintf(attrs + n, sizeof attrs - n, ", stride=%d", s);
    if (p) snprintf(attrs + n, sizeof attrs - n, ", pad=%d", p);
    sb_printf(&g->body, "%s = %s(%s, kernel=%d%s)\n", N(g, r), f, N(g, c), k, attrs);
    g->cur = r;
}

static void op_upsample(gen *g)
{
    int c = g->cur;
    gval *v = &g->v[c];
    if (v->d[2] * 2 > g->maxhw || v->d[3] * 2 > g->maxhw || numel(v) * 4 > g->lim) return op_pool(g);
    int r = new_val(g, 4, g->B, v->d[1], v->d[2] * 2, v->d[3] * 2);
    sb_printf(&g->body, "%s = upsample_nearest(%s)\n", N(g, r), N(g, c));
    g->cur = r;
}

static void op_conv_t(gen *g)
{
    int c = g->cur;
    gval *v = &g->v[c];
    int64_t C = v->d[1], H = v->d[2], W = v->d[3];
    int s = 2, k = chance(g, 60) ? 2 : 3, p = k == 3 ? 1 : 0, op = k == 3 ? 1 : 0;
    int64_t Co = chance(g, 50) ? C : (C > 2 ? C / 2 : C);
    int64_t OH = (H - 1) * s - 2 * p + (k - 1) + op + 1, OW = (W - 1) * s - 2 * p + (k - 1) + op + 1;
    if (OH > g->maxhw || OW > g->maxhw || Co * OH * OW * g->B > g->lim) return op_conv(g);
    const char *w = param(g, "he", 4, C, Co, k, k);
    int r = new_val(g, 4, g->B, Co, OH, OW);
    if (p) sb_printf(&g->body, "%s = conv_transpose2d(%s, %s, stride=2, pad=1, output_pad=1)\n", N(g, r), N(g, c), w);
    else sb_printf(&g->body, "%s = conv_transpose2d(%s, %s, stride=2)\n", N(g, r), N(g, c), w);
    g->cur = r;
}

/* layer_norm over the channels: NCHW to NHWC and back */
static void op_channel_ln(gen *g)
{
    int c = g->cur;
    int64_t C = g->v[c].d[1];
    char sc[24];
    snprintf(sc, sizeof sc, "%s", param(g, "ones", 1, C, 0, 0, 0));
    const char *sh = param(g, "zeros", 1, C, 0, 0, 0);
    int r = like(g, c);
    sb_printf(&g->body, "%s = transpose(layer_norm(transpose(%s, perm=[0, 2, 3, 1]), %s, %s), perm=[0, 3, 1, 2])\n", N(g, r),
              N(g, c), sc, sh);
    g->cur = r;
}

static void op_conv_def(gen *g)
{
    int c = g->cur;
    int64_t C = g->v[c].d[1];
    if (g->conv_def < 0) {
        g->conv_def = g->ndefs++;
        sb_printf(&g->defs,
                  "def cblk%d(x, c) {\n  param w: %s[c, c, 3, 3] = he\n  param b: %s[c, 1, 1] = zeros\n"
                  "  return relu(conv2d(x, w, pad=1) + b) + x\n}\n",
                  g->conv_def, g->dt, g->dt);
    }
    int r = like(g, c);
    sb_printf(&g->body, "%s = cblk%d(%s, %lld)\n", N(g, r), g->conv_def, N(g, c), (long long)C);
    g->cur = r;
}

/* images to [B, D]: global average pooling or flatten */
static void op_from_img(gen *g)
{
    int c = g->cur;
    gval *v = &g->v[c];
    if (v->d[1] * v->d[2] * v->d[3] <= (g->big ? 2048 : 192) && chance(g, 50)) {
        int r = new_val(g, 2, g->B, v->d[1] * v->d[2] * v->d[3], 0, 0);
        sb_printf(&g->body, "%s = flatten(%s)\n", N(g, r), N(g, c));
        g->cur = r;
        return;
    }
    int r = new_val(g, 2, g->B, v->d[1], 0, 0);
    sb_printf(&g->body, "%s = global_avg_pool(%s)\n", N(g, r), N(g, c));
    g->cur = r;
}

/* ---- the batch axis itself: ops a split must see mixing (or not mixing) the samples ---- */

/* the samples rotated by half the batch: slices of the batch axis joined the other way round */
static void op_rotate(gen *g)
{
    int c = g->cur;
    if (g->B % 2) return op_act(g);
    int r = like(g, c);
    sb_printf(&g->body, "%s = concat(slice(%s, axis=0, start=%d), slice(%s, axis=0, end=%d), axis=0)\n", N(g, r), N(g, c), g->B / 2,
              N(g, c), g->B / 2);
    g->cur = r;
}

/* [B, D] as [B/2, 2D]: rows of two samples each through a linear layer, and back */
static void op_pairs(gen *g)
{
    int c = g->cur;
    if (g->B % 2 || g->v[c].rank != 2) return op_linear(g);
    int64_t D = g->v[c].d[1], F = wpick(g, 4);
    const char *w = param(g, winit(g), 2, 2 * D, 2 * F, 0, 0);
    int r = new_val(g, 2, g->B, F, 0, 0);
    sb_printf(&g->body, "%s = reshape(tanh(reshape(%s, shape=[%d, %lld]) @ %s), shape=[B, %lld])\n", N(g, r), N(g, c), g->B / 2,
              (long long)(2 * D), w, (long long)F);
    g->cur = r;
}

/* a param with the batch's length on axis 0: a weight per sample */
static void op_batch_param(gen *g)
{
    int c = g->cur;
    gval *v = &g->v[c];
    const char *p = v->rank == 2   ? param(g, "normal(0.5)", 2, g->B, chance(g, 50) ? 1 : v->d[1], 0, 0)
                    : v->rank == 3 ? param(g, "normal(0.5)", 3, g->B, 1, v->d[2], 0)
                                   : param(g, "normal(0.5)", 4, g->B, 1, 1, 1);
    int r = like(g, c);
    sb_printf(&g->body, "%s = %s * %s\n", N(g, r), N(g, c), p);
    g->cur = r;
}

/* a second batch input of the value's shape, joined to it */
static void op_extra_input(gen *g, sbuf *inputs)
{
    int c = g->cur;
    char sh[96];
    sb_printf(inputs, "input z%d: %s%s\n", g->ninputs, g->dt, shape_text(g, g->v[c].rank, g->v[c].d, sh, sizeof sh));
    int r = like(g, c);
    sb_printf(&g->body, "%s = %s %s z%d\n", N(g, r), N(g, c), chance(g, 50) ? "+" : "*", g->ninputs++);
    g->cur = r;
}

/* an input f32[B] that is no batch input: a scale per feature, on a last axis as long as the
 * batch (by the rule "every input with the first input's axis 0 is a batch input" the split
 * would cut it) */
static void op_feature_input(gen *g, sbuf *inputs)
{
    int c = g->cur;
    gval *v = &g->v[c];
    if (v->rank == 4) return op_act(g);
    int src = c;
    if (v->d[v->rank - 1] != g->B) {
        const char *w = param(g, winit(g), 2, v->d[v->rank - 1], g->B, 0, 0);
        src = v->rank == 2 ? new_val(g, 2, g->B, g->B, 0, 0) : new_val(g, 3, g->B, g->v[c].d[1], g->B, 0);
        sb_printf(&g->body, "%s = %s @ %s\n", N(g, src), N(g, c), w);
    }
    sb_printf(inputs, "input f%d: %s[B]\n", g->ninputs, g->dt);
    int r = like(g, src);
    sb_printf(&g->body, "%s = %s * f%d\n", N(g, r), N(g, src), g->ninputs++);
    g->cur = r;
}

/* a sequence with its batch axis moved: [T, B, D] through a linear layer and back */
static void op_seq_batch_transpose(gen *g)
{
    int c = g->cur;
    int64_t T = g->v[c].d[1], D = g->v[c].d[2], F = wpick(g, 4);
    const char *w = param(g, winit(g), 2, D, F, 0, 0);
    int r = new_val(g, 3, g->B, T, F, 0);
    sb_printf(&g->body, "%s = transpose(relu(transpose(%s, perm=[1, 0, 2]) @ %s), perm=[1, 0, 2])\n", N(g, r), N(g, c), w);
    g->cur = r;
}

static void op_batch_games(gen *g, sbuf *inputs)
{
    int rank = g->v[g->cur].rank;
    switch (rn(g, 6)) {
    case 0: op_rotate(g); break;
    case 1: rank == 2 ? op_pairs(g) : op_rotate(g); break;
    case 2: op_batch_param(g); break;
    case 3: op_extra_input(g, inputs); break;
    case 4: op_feature_input(g, inputs); break;
    default: rank == 3 ? op_seq_batch_transpose(g) : op_extra_input(g, inputs); break;
    }
}

/* ---- a whole model ---- */

typedef void (*op_fn)(gen *);

static void step(gen *g, sbuf *inputs)
{
    int rank = g->v[g->cur].rank;
    /* sometimes branch from an earlier value of the same family (a diamond when joined) */
    if (chance(g, 20)) {
        int cand[MAXV], n = 0;
        for (int j = 0; j < g->nv; j++)
            if (g->v[j].rank == rank && g->v[j].d[0] == g->B) cand[n++] = j;
        if (n) g->cur = cand[rn(g, n)];
    }
    if (chance(g, 7)) return op_batch_games(g, inputs);
    int x = rn(g, 100);
    if (rank == 2) {
        if (x < 22) op_linear(g);
        else if (x < 36) op_act(g);
        else if (x < 50) op_join(g);
        else if (x < 54) op_affine(g);
        else if (x < 59) op_layer_norm(g);
        else if (x < 63) op_batch_norm(g);
        else if (x < 67) op_softmax(g);
        else if (x < 72) op_concat(g);
        else if (x < 75) op_slice(g);
        else if (x < 78) op_mix(g);
        else if (x < 82) op_rows(g);
        else if (x < 86) op_to_seq(g);
        else if (x < 92) op_dense_def(g);
        else if (x < 96) op_repeat(g);
        else if (x < 97) op_dropout(g);
        else op_act(g);
    }
    else if (rank == 3) {
        if (x < 20) op_linear(g);
        else if (x < 32) op_act(g);
        else if (x < 44) op_join(g);
        else if (x < 50) op_layer_norm(g);
        else if (x < 62) op_attention(g);
        else if (x < 66) op_softmax(g);
        else if (x < 70) op_concat(g);
        else if (x < 73) op_slice(g);
        else if (x < 78) op_rows(g);
        else if (x < 82) op_seq_transpose(g);
        else if (x < 88) op_from_seq(g);
        else if (x < 93) op_dense_def(g);
        else if (x < 97) op_repeat(g);
        else op_affine(g);
    }
    else {
        if (x < 26) op_conv(g);
        else if (x < 36) op_act(g);
        else if (x < 46) op_join(g);
        else if (x < 50) op_affine(g);
        else if (x < 57) op_batch_norm(g);
        else if (x < 65) op_pool(g);
        else if (x < 70) op_concat(g);
        else if (x < 73) op_slice(g);
        else if (x < 76) op_upsample(g);
        else if (x < 80) op_conv_t(g);
        else if (x < 83) op_channel_ln(g);
        else if (x < 87) op_conv_def(g);
        else if (x < 90) op_repeat(g);
        else if (x < 92) op_softmax(g);
        else if (x < 96) op_from_img(g);
        else if (x < 97) op_dropout(g);
        else op_act(g);
    }
}

/* whether name is read: named anywhere but as the left side of its own bindings */
static int is_read(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        if (!end) end = line + strlen(line);
        const char *l = line + strspn(line, " ");
        int binds = !strncmp(l, name, n) && !strncmp(l + n, " = ", 3);
        if (!binds)
            for (const char *p = line; p + n <= end; p++)
                if (!strncmp(p, name, n) && (p == line || !(isalnum((unsigned char)p[-1]) || p[-1] == '_' || p[-1] == '.')) &&
                    !(isalnum((unsigned char)p[n]) || p[n] == '_'))
                    return 1;
        line = *end ? end + 1 : end;
    }
    return 0;
}

static void add_output(gen *g, const char *name)
{
    for (int i = 0; i < g->noutputs; i++)
        if (!strcmp(g->outputs[i], name)) return;
    if (g->noutputs < 8 && strlen(name) < 24) memcpy(g->outputs[g->noutputs++], name, strlen(name) + 1);
}

/* the loss on the current value, an auxiliary term from an earlier one sometimes */
static void finish(gen *g, sbuf *inputs)
{
    int c = g->cur;
    gval *v = &g->v[c];
    char sh[96], term[512];
    int K = 2 + rn(g, 9);
    int kind = rn(g, 10);
    if (v->rank == 4 && kind < 5) { /* per-pixel cross-entropy over the class axis */
        const char *w = param(g, "he", 4, K, v->d[1], 1, 1);
        char wn[24];
        snprintf(wn, sizeof wn, "%s", w);
        const char *b = param(g, "zeros", 3, K, 1, 1, 0);
        int r = new_val(g, 4, g->B, K, v->d[2], v->d[3]);
        sb_printf(&g->body, "%s = conv2d(%s, %s) + %s\n", N(g, r), N(g, c), wn, b);
        sb_printf(inputs, "input y%d_m%d: i32[B, %lld, %lld]\n", g->nlabels, K, (long long)v->d[2], (long long)v->d[3]);
        snprintf(term, sizeof term, "cross_entropy(%s, y%d_m%d, axis=1)", N(g, r), g->nlabels++, K);
        add_output(g, N(g, r));
    }
    else if (v->rank == 3 && kind < 5) { /* cross-entropy over every position */
        const char *w = param(g, "xavier", 2, v->d[2], K, 0, 0);
        char wn[24];
        snprintf(wn, sizeof wn, "%s", w);
        int r = new_val(g, 3, g->B, v->d[1], K, 0);
        sb_printf(&g->body, "%s = %s @ %s\n", N(g, r), N(g, c), wn);
        sb_printf(inputs, "input y%d_m%d: i32[B, %lld]\n", g->nlabels, K, (long long)v->d[1]);
        snprintf(term, sizeof term, "cross_entropy(%s, y%d_m%d)", N(g, r), g->nlabels++, K);
        add_output(g, N(g, r));
    }
    else if (kind < 6 && v->rank == 2) { /* classification */
        const char *w = param(g, "xavier", 2, v->d[1], K, 0, 0);
        char wn[24];
        snprintf(wn, sizeof wn, "%s", w);
        const char *b = param(g, "zeros", 1, K, 0, 0, 0);
        int r = new_val(g, 2, g->B, K, 0, 0);
        sb_printf(&g->body, "%s = %s @ %s + %s\n", N(g, r), N(g, c), wn, b);
        sb_printf(inputs, "input y%d_m%d: i32[B]\n", g->nlabels, K);
        snprintf(term, sizeof term, "cross_entropy(%s, y%d_m%d)", N(g, r), g->nlabels++, K);
        add_output(g, N(g, r));
    }
    else if (kind < 8) { /* regression against a target input */
        sb_printf(inputs, "input target%d: %s%s\n", g->ninputs++, g->dt, shape_text(g, v->rank, v->d, sh, sizeof sh));
        snprintf(term, sizeof term, "mse(%s, target%d)", N(g, c), g->ninputs - 1);
        add_output(g, N(g, c));
    }
    else if (kind < 9) {
        snprintf(term, sizeof term, "mean(%s * %s)", N(g, c), N(g, c));
        add_output(g, N(g, c));
    }
    else {
        snprintf(term, sizeof term, "sum(tanh(%s)) * 0.01", N(g, c));
        add_output(g, N(g, c));
    }
    /* an auxiliary term from an earlier value (a long skip to the loss) */
    char aux[128] = "";
    if (chance(g, 30) && g->nv > 3) {
        int e = 1 + rn(g, g->nv - 2);
        if (e != c) snprintf(aux, sizeof aux, " + 0.1 * mean(%s * %s)", N(g, e), N(g, e));
    }
    sb_printf(&g->body, "loss = %s%s\n", term, aux);
    /* every value nothing reads (a branch left open) joins the loss, or now and then becomes an
     * output, so that no generated op is dead */
    int first = 0;
    for (int i = 1; i < g->nv; i++) {
        if (g->v[i].name[0] != 't' || is_read(sb_str(&g->body), g->v[i].name)) continue;
        if (chance(g, 20) && g->noutputs < 8) add_output(g, g->v[i].name);
        else {
            sb_printf(&g->body, "%s 0.01 * mean(%s * %s)", first ? " +" : "loss = loss +", g->v[i].name, g->v[i].name);
            first = 1;
        }
    }
    if (first) sb_printf(&g->body, "\n");
    if (chance(g, 30)) add_output(g, "loss");
    if (chance(g, 25) && g->nv > 2) add_output(g, N(g, 1 + rn(g, g->nv - 1)));
}

/* The model of a seed, as text (malloc'd). */
static char *gen_model(uint64_t seed)
{
    gen G = {0}, *g = &G;
    g->rng = seed * 0x2545f4914f6cdd1dULL + 12345;
    g->conv_def = -1;
    g->dt = chance(g, 20) ? "f64" : "f32";
    int family = rn(g, 10); /* 0-3 dense, 4-5 sequences, 6-9 images */
    g->big = chance(g, 12);
    g->deep = chance(g, 20);
    g->lim = g->big ? 300000 : 40000;
    g->maxhw = g->big ? 32 : 16;
    static const int dense_b[] = {4, 8, 12, 12, 16, 16, 24}, big_dense_b[] = {24, 32, 48, 48, 64, 24, 32};
    static const int img_b[] = {2, 4, 4, 8, 8, 16}, big_img_b[] = {8, 16, 8, 16, 8, 16};
    sbuf inputs = {0};
    if (family < 4) {
        g->B = pick(g, g->big ? big_dense_b : dense_b, 7);
        int64_t D = wpick(g, 7);
        int x = new_val(g, 2, g->B, D, 0, 0);
        sb_printf(&inputs, "input %s: %s[B, %lld]\n", N(g, x), g->dt, (long long)D);
        g->cur = x;
    }
    else if (family < 6) {
        g->B = pick(g, g->big ? big_dense_b : dense_b, 7);
        int64_t T = 2 + rn(g, g->big ? 15 : 7), D = wpick(g, 4);
        if (chance(g, 50)) { /* token ids through an embedding */
            int V = 10 + rn(g, 40);
            sb_printf(&inputs, "input ids_m%d: i32[B, %lld]\n", V, (long long)T);
            const char *tab = param(g, "normal(0.5)", 2, V, D, 0, 0);
            char tn[24];
            snprintf(tn, sizeof tn, "%s", tab);
            int x = new_val(g, 3, g->B, T, D, 0);
            if (chance(g, 50)) {
                const char *pos = param(g, "normal(0.1)", 2, T, D, 0, 0);
                sb_printf(&g->body, "%s = embedding(ids_m%d, %s) + %s\n", N(g, x), V, tn, pos);
            }
            else sb_printf(&g->body, "%s = embedding(ids_m%d, %s)\n", N(g, x), V, tn);
            g->cur = x;
        }
        else {
            int x = new_val(g, 3, g->B, T, D, 0);
            sb_printf(&inputs, "input %s: %s[B, %lld, %lld]\n", N(g, x), g->dt, (long long)T, (long long)D);
            g->cur = x;
        }
    }
    else {
        g->B = pick(g, g->big ? big_img_b : img_b, 6);
        int64_t C = 1 + rn(g, 4), H = (g->big ? 12 : 4) + rn(g, 9), W = chance(g, 70) ? H : (g->big ? 12 : 4) + rn(g, 9);
        int x = new_val(g, 4, g->B, C, H, W);
        sb_printf(&inputs, "input %s: %s[B, %lld, %lld, %lld]\n", N(g, x), g->dt, (long long)C, (long long)H, (long long)W);
        g->cur = x;
    }
    int nops = g->deep ? 15 + rn(g, 20) : 3 + rn(g, 14);
    /* mostly a layer the split runs in parts first (a model whose first op on the batch is not
     * one is never split) */
    if (chance(g, 70)) g->v[g->cur].rank == 4 ? op_conv(g) : op_linear(g);
    for (int i = 0; i < nops; i++) step(g, &inputs);
    finish(g, &inputs);
    sbuf m = {0};
    sb_printf(&m, "# random model, seed %llu\nmodel rm\nconst B = %d\n%s%s%s", (unsigned long long)seed, g->B, sb_str(&inputs),
              sb_str(&g->defs), sb_str(&g->body));
    for (int i = 0; i < g->noutputs; i++) sb_printf(&m, "output %s\n", g->outputs[i]);
    sb_printf(&m, "minimize loss\n");
    free(inputs.s);
    free(g->defs.s);
    free(g->body.s);
    for (int i = 0; i < g->nshared; i++) free((void *)g->shared_w[i]);
    g->nshared = 0;
    return m.s;
}

/* ------------------------------------------------------------------------------------------ */
/* The harness: one program per compiled object, `cc -include V.h harness.c V.o -lm`. It writes
 * records (name, dtype, bytes) of the loss, the gradient blob and each gradient, the state, the
 * outputs of NAME_forward (and of NAME_forward_train) to argv[1]; exit status 0, or 2-6 with a
 * line saying what broke. */
static const char *harness_src =
    "#include <math.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
    "enum { G = 4096 };\n"
    "static uint64_t s;\n"
    "static uint64_t nx(void) { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return s; }\n"
    "static FILE *bin;\n"
    "static void rec(const char *kind, const char *name, int dtype, const void *p, size_t n) {\n"
    "  char nm[300]; snprintf(nm, sizeof nm, \"%s:%s\", kind, name);\n"
    "  uint32_t l = (uint32_t)strlen(nm); int32_t dt = dtype; uint64_t nb = n;\n"
    "  fwrite(&l, 4, 1, bin); fwrite(nm, 1, l, bin); fwrite(&dt, 4, 1, bin); fwrite(&nb, 8, 1, bin); fwrite(p, 1, n, bin);\n"
    "}\n"
    "static int all_are(const unsigned char *p, size_t n, unsigned char v) { for (size_t i = 0; i < n; i++) if (p[i] != v) return 0; return 1; }\n"
    "static unsigned char *gmalloc(size_t n, int fill) { unsigned char *p = malloc(n + G); memset(p, fill, n); memset(p + n, 0x5c, G); return p; }\n"
    "#define GUARD(p, n, what) do { if (!all_are((const unsigned char *)(p) + (n), G, 0x5c)) { printf(\"written past the end of %s\\n\", what); return 4; } } while (0)\n"
    "#if RM_HAS_STATE\n"
    "#define TRAIN(p, g, in, ws, st) rm_train_step(p, g, in, ws, st)\n"
    "#define FWD(p, st, in, out, ws) rm_forward(p, st, in, out, ws)\n"
    "#else\n"
    "#define TRAIN(p, g, in, ws, st) rm_train_step(p, g, in, ws)\n"
    "#define FWD(p, st, in, out, ws) rm_forward(p, in, out, ws)\n"
    "#endif\n"
    "int main(int argc, char **argv) {\n"
    "  if (argc < 2) return 9;\n"
    "  if (rm_plan_hash != RM_PLAN_HASH) { printf(\"the object's plan hash is not its header's\\n\"); return 2; }\n"
    "  size_t PB = RM_PARAM_BYTES, WS = RM_WORKSPACE_BYTES, FWS = RM_FORWARD_WORKSPACE_BYTES;\n"
    "  if (FWS > WS) { printf(\"forward workspace %zu above the workspace %zu\\n\", FWS, WS); return 5; }\n"
    "  unsigned char *params = gmalloc(PB, 0), *pcopy = malloc(PB + 1);\n"
    "  rm_init_params(params, 7);\n"
    "  memcpy(pcopy, params, PB);\n"
    "  const void *in[RM_NUM_INPUTS + 1]; unsigned char *incopy[RM_NUM_INPUTS + 1];\n"
    "  for (int i = 0; i < RM_NUM_INPUTS; i++) {\n"
    "    const mg_tensor_desc *d = &rm_inputs_desc[i];\n"
    "    unsigned char *b = gmalloc(d->bytes, 0);\n"
    "    s = 0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1) + 1;\n"
    "    size_t n = d->dtype == MG_F64 ? d->bytes / 8 : d->bytes / 4;\n"
    "    const char *m = strstr(d->name, \"_m\");\n"
    "    long mod = m ? atol(m + 2) : 1;\n"
    "    for (size_t k = 0; k < n; k++) {\n"
    "      double u = (double)(nx() >> 11) / 9007199254740992.0 * 2 - 1;\n"
    "      if (d->dtype == MG_F32) ((float *)b)[k] = (float)u;\n"
    "      else if (d->dtype == MG_F64) ((double *)b)[k] = u;\n"
    "      else ((int32_t *)b)[k] = (int32_t)(nx() % (uint64_t)(mod > 0 ? mod : 1));\n"
    "    }\n"
    "    in[i] = b; incopy[i] = malloc(d->bytes + 1); memcpy(incopy[i], b, d->bytes);\n"
    "  }\n"
    "  unsigned char *ws = gmalloc(WS, 0xff), *grads = gmalloc(PB, 0xa5), *grads2 = gmalloc(PB, 0x11);\n"
    "#if RM_HAS_STATE\n"
    "  size_t SB = RM_STATE_BYTES;\n"
    "  unsigned char *state = gmalloc(SB, 0), *state2 = gmalloc(SB, 0);\n"
    "  rm_init_state(state); memcpy(state2, state, SB);\n"
    "#else\n"
    "  unsigned char *state = NULL, *state2 = NULL; size_t SB = 0;\n"
    "#endif\n"
    "  float loss = TRAIN(params, grads, in, ws, state);\n"
    "  GUARD(ws, WS, \"the workspace (train_step)\"); GUARD(grads, PB, \"the gradients\");\n"
    "  if (state) GUARD(state, SB, \"the state\");\n"
    "  memset(ws, 0x00, WS);\n"
    "  float loss2 = TRAIN(params, grads2, in, ws, state2);\n"
    "  if (memcmp(&loss, &loss2, 4) || memcmp(grads, grads2, PB) || (state && memcmp(state, state2, SB))) {\n"
    "    printf(\"two steps on differently filled workspaces differ (loss %.9g and %.9g)\\n\", loss, loss2); return 3; }\n"
    "  if (memcmp(params, pcopy, PB)) { printf(\"train_step wrote the params\\n\"); return 6; }\n"
    "  for (int i = 0; i < RM_NUM_INPUTS; i++) if (memcmp(in[i], incopy[i], rm_inputs_desc[i].bytes)) { printf(\"train_step wrote input %s\\n\", rm_inputs_desc[i].name); return 6; }\n"
    "  bin = fopen(argv[1], \"wb\");\n"
    "  if (!bin) return 9;\n"
    "  rec(\"loss\", \"\", 0, &loss, 4);\n"
    "  rec(\"gradblob\", \"\", -1, grads, PB);\n"
    "  for (int i = 0; i < RM_NUM_PARAMS; i++) rec(\"grad\", rm_params_desc[i].name, rm_params_desc[i].dtype, grads + rm_params_desc[i].offset, rm_params_desc[i].bytes);\n"
    "#if RM_HAS_STATE\n"
    "  for (int i = 0; i < RM_NUM_STATE; i++) rec(\"state\", rm_state_desc[i].name, rm_state_desc[i].dtype, state + rm_state_desc[i].offset, rm_state_desc[i].bytes);\n"
    "#endif\n"
    "  void *out[RM_NUM_OUTPUTS + 1];\n"
    "  for (int pass = 0; pass < 1 + RM_HAS_STATE; pass++) {\n"
    "    for (int i = 0; i < RM_NUM_OUTPUTS; i++) out[i] = gmalloc(rm_outputs_desc[i].bytes, 0xa5);\n"
    "    memset(ws, 0xff, FWS); memset(ws + FWS, 0x3c, WS - FWS);\n"
    "#if RM_HAS_STATE\n"
    "    if (pass) rm_forward_train(params, state, in, out, ws); else\n"
    "#endif\n"
    "    FWD(params, state, in, out, ws);\n"
    "    if (!all_are(ws + FWS, WS - FWS, 0x3c)) { printf(\"forward wrote past its %zu bytes of workspace\\n\", FWS); return 5; }\n"
    "    GUARD(ws, WS, \"the workspace (forward)\");\n"
    "    for (int i = 0; i < RM_NUM_OUTPUTS; i++) { GUARD(out[i], rm_outputs_desc[i].bytes, rm_outputs_desc[i].name);\n"
    "      rec(pass ? \"forward_train\" : \"forward\", rm_outputs_desc[i].name, rm_outputs_desc[i].dtype, out[i], rm_outputs_desc[i].bytes); free(out[i]); }\n"
    "  }\n"
    "  if (memcmp(params, pcopy, PB)) { printf(\"forward wrote the params\\n\"); return 6; }\n"
    "  if (fclose(bin)) return 9;\n"
    "  printf(\"ok %.9g\\n\", loss);\n"
    "  return 0;\n"
    "}\n";

/* ------------------------------------------------------------------------------------------ */
/* The records a harness wrote, compared */

typedef struct rec {
    char name[300];
    int dtype;
    size_t n;
    const unsigned char *p;
} rec;

typedef struct recs {
    unsigned char *data;
    size_t len;
    rec r[512];
    int n;
} recs;

static int read_recs(const char *path, recs *out)
{
    FILE *f = fopen(path, "rb");
    out->n = 0;
    out->data = NULL;
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    out->data = malloc((size_t)len + 1);
    out->len = fread(out->data, 1, (size_t)len, f);
    fclose(f);
    size_t at = 0;
    while (at + 4 <= out->len && out->n < 512) {
        uint32_t l;
        int32_t dt;
        uint64_t nb;
        memcpy(&l, out->data + at, 4);
        at += 4;
        if (l >= 300 || at + l + 12 > out->len) return -1;
        rec *r = &out->r[out->n++];
        memcpy(r->name, out->data + at, l);
        r->name[l] = 0;
        at += l;
        memcpy(&dt, out->data + at, 4);
        memcpy(&nb, out->data + at + 4, 8);
        at += 12;
        if (at + nb > out->len) return -1;
        r->dtype = dt;
        r->n = nb;
        r->p = out->data + at;
        at += nb;
    }
    return at == out->len ? 0 : -1;
}

static double elem(const rec *r, size_t i)
{
    if (r->dtype == 0) {
        float x;
        memcpy(&x, r->p + 4 * i, 4);
        return x;
    }
    if (r->dtype == 1) {
        double x;
        memcpy(&x, r->p + 8 * i, 8);
        return x;
    }
    if (r->dtype == 2) {
        int32_t x;
        memcpy(&x, r->p + 4 * i, 4);
        return x;
    }
    return r->p[i];
}

/* Every record of ref against v: appends a line per difference to msg; the number of them. */
static int compare_recs(const recs *ref, const recs *v, sbuf *msg)
{
    int bad = 0;
    for (int i = 0; i < ref->n; i++) {
        const rec *a = &ref->r[i], *b = NULL;
        for (int j = 0; j < v->n && !b; j++)
            if (!strcmp(v->r[j].name, a->name)) b = &v->r[j];
        if (!b || b->n != a->n) {
            sb_printf(msg, "    %s: %s\n", a->name, b ? "a different size" : "missing");
            bad++;
            continue;
        }
        if (!memcmp(a->p, b->p, a->n)) continue;
        bad++;
        size_t es = a->dtype == 1 ? 8 : a->dtype == 0 || a->dtype == 2 ? 4 : 1, ne = a->n / es, nd = 0, first = 0;
        double maxd = 0, maxa = 0;
        for (size_t k = 0; k < ne; k++) {
            if (!memcmp(a->p + k * es, b->p + k * es, es)) continue;
            if (!nd) first = k;
            nd++;
            double x = elem(a, k), y = elem(b, k), d = fabs(x - y);
            if (d > maxd || isnan(d)) maxd = d;
            if (fabs(x) > maxa) maxa = fabs(x);
        }
        sb_printf(msg, "    %s differs in %zu of %zu elements (first at %zu: %.9g, store-all %.9g), max |diff| %.3g (store-all's max |x| there %.3g)\n",
                  a->name, nd, ne, first, elem(b, first), elem(a, first), maxd, maxa);
    }
    return bad;
}

static int nonfinite(const recs *r)
{
    int n = 0;
    for (int i = 0; i < r->n; i++) {
        if (r->r[i].dtype != 0 && r->r[i].dtype != 1) continue;
        size_t es = r->r[i].dtype ? 8 : 4;
        for (size_t k = 0; k < r->r[i].n / es; k++) n += !isfinite(elem(&r->r[i], k));
    }
    return n;
}

/* ------------------------------------------------------------------------------------------ */
/* One model, every variant */

typedef struct ctx {
    uint64_t seed;
    const char *dir, *opt; /* opt: -O0 .. -O3 */
    sbuf fails, notes;
    int nfail;
} ctx;

static void failf(ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void failf(ctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sb_printf(&c->fails, "seed %llu: ", (unsigned long long)c->seed);
    sb_vprintf(&c->fails, fmt, ap);
    va_end(ap);
    c->nfail++;
}

/* at most n bytes of a command's output */
static const char *clip(const char *s, size_t n)
{
    static char buf[2200];
    snprintf(buf, sizeof buf < n + 1 ? sizeof buf : n + 1, "%s", s ? s : "");
    return buf;
}

/* `memgrad plan m.mg --format json` with extra; the minimum feasible budget and store-all
 * workspace, -1 and *why (malloc'd output) when it fails */
static int plan_min(ctx *c, const char *extra, long long *minf, long long *all, long long *parts, char **why)
{
    char *out = NULL;
    int rc = tu_memgrad(&out, "plan '%s/m.mg' --format json --no-cache %s", c->dir, extra);
    *why = NULL;
    if (rc != 0 || !strstr(out, "\"min_feasible_bytes\": ")) {
        *why = out;
        return rc ? rc : -1;
    }
    *minf = tu_json_figure(out, "min_feasible_bytes");
    *all = tu_json_figure(out, "store_all_workspace_bytes");
    *parts = tu_json_figure(out, "micro_batches");
    free(out);
    return 0;
}

enum { V_OK, V_REFUSED, V_FAILED };

/* what a failed command's exit status says beyond its number (124: timeout(1) stopped it; below 0
 * or above 128: a signal) */
static const char *how_failed(int rc) { return rc == 124 ? ", timed out" : rc > 128 || rc < 0 ? ", a signal" : ""; }

/* Compiles the model as variant tag with opts, links the harness, runs it: V_OK with its records
 * in *r, V_REFUSED (a refusal that the variant allows: a budget below min, a part count that does
 * not divide or split the batch, a baseline solver missing a budget), V_FAILED (recorded). */
static int run_variant(ctx *c, const char *tag, const char *opts, long long budget, long long min, recs *r)
{
    char *out = NULL;
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd '%s' && timeout 900 '%s' compile m.mg -o %s.o --header %s.h --no-cache --verify %s %s", c->dir,
             MG_MEMGRAD, tag, tag, c->opt, opts);
    int rc = tu_run(cmd, &out);
    if (rc != 0) {
        int below = strstr(out, "is below the minimum feasible budget") != NULL;
        int nosplit = strstr(out, "cannot split the batch") || strstr(out, "not split into micro-batches");
        int baseline = strstr(out, "finds no plan within budget") != NULL && strstr(opts, "--solver sqrt");
        if (rc == 1 && below && budget >= 0 && (min < 0 || budget < min)) {
            free(out);
            return V_REFUSED;
        }
        if (rc == 1 && (nosplit || baseline) && !below) {
            free(out);
            return V_REFUSED;
        }
        if (rc == 1 && below)
            failf(c, "%s: budget %lld B refused, at or above the minimum feasible budget %lld B that plan reported\n  $ memgrad compile m.mg %s %s\n%s\n",
                  tag, budget, min, c->opt, opts, clip(out, 1500));
        else
            failf(c, "%s: compile failed (exit status %d%s)\n  $ memgrad compile m.mg %s %s\n%s\n", tag, rc,
                  how_failed(rc), c->opt, opts, clip(out, 1500));
        free(out);
        return V_FAILED;
    }
    if (strstr(out, "a lower bound came out above")) { /* (a bound above a verified plan: planner.c) */
        failf(c, "%s: a lower bound above the plan\n  $ memgrad compile m.mg %s %s\n%s\n", tag, c->opt, opts,
              clip(out, 1500));
        free(out);
        return V_FAILED;
    }
    free(out);
    char hpath[4200];
    snprintf(hpath, sizeof hpath, "%s/%s.h", c->dir, tag);
    char *hdr = tu_read(hpath);
    long long ws = hdr ? tu_header_figure(hdr, "_WORKSPACE_BYTES") : -1;
    free(hdr);
    if (budget >= 0 && ws > budget) {
        failf(c, "%s: the workspace, %lld B, is above the budget %lld B\n  $ memgrad compile m.mg %s %s\n", tag, ws, budget, c->opt, opts);
        return V_FAILED;
    }
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' -std=c11 -O1 -include %s.h harness.c %s.o -lm -o %s.run && timeout 300 ./%s.run %s.bin",
             c->dir, MG_CC, tag, tag, tag, tag, tag);
    rc = tu_run(cmd, &out);
    if (rc != 0) {
        failf(c, "%s: the harness failed (exit status %d%s)\n  $ memgrad compile m.mg %s %s\n%s\n", tag, rc,
              how_failed(rc), c->opt, opts, clip(out, 1500));
        free(out);
        return V_FAILED;
    }
    free(out);
    snprintf(hpath, sizeof hpath, "%s/%s.bin", c->dir, tag);
    if (read_recs(hpath, r)) {
        failf(c, "%s: the harness's records are malformed\n", tag);
        return V_FAILED;
    }
    return V_OK;
}

/* Runs every variant of one model against its store-all step; the failures in c->fails. */
static void check_model(ctx *c, const char *src)
{
    char *out = NULL;
    ck_assert_int_eq(tu_write(tu_path(c->dir, "m.mg"), src), 0);
    ck_assert_int_eq(tu_write(tu_path(c->dir, "harness.c"), harness_src), 0);
    int rc = tu_memgrad(&out, "check '%s/m.mg'", c->dir);
    if (rc != 0) {
        failf(c, "the generator made a model memgrad rejects (exit status %d):\n%s\n", rc, clip(out, 1500));
        free(out);
        return;
    }
    free(out);
    long long minf, all, parts, min1 = -1, all1, parts1, mink[4] = {-1, -1, -1, -1}, allk;
    char *why = NULL;
    if ((rc = plan_min(c, "", &minf, &all, &parts, &why))) {
        failf(c, "plan failed (exit status %d)\n  $ memgrad plan m.mg --format json\n%s\n", rc, clip(why, 1500));
        free(why);
        return;
    }
    if ((rc = plan_min(c, "--micro-batches 1", &min1, &all1, &parts1, &why))) {
        failf(c, "plan --micro-batches 1 failed (exit status %d)\n%s\n", rc, clip(why, 1500));
        free(why);
        min1 = -1;
    }
    for (int i = 1; i < 4; i++) { /* 2, 4 and 8 parts */
        int k = 1 << i;
        char extra[64];
        snprintf(extra, sizeof extra, "--micro-batches %d", k);
        if ((rc = plan_min(c, extra, &mink[i], &allk, &parts1, &why))) {
            if (!(rc == 1 && (strstr(why, "cannot split the batch") || strstr(why, "not split into micro-batches"))))
                failf(c, "plan %s failed (exit status %d)\n%s\n", extra, rc, clip(why, 1500));
            free(why);
            mink[i] = -1;
        }
    }
    /* exploration: every budget from the minimum up is met (plan only, no compile) */
    const char *sw = getenv("MG_RANDOM_SWEEP");
    int npoints = sw && *sw ? atoi(sw) : 0;
    for (int i = 0; i < npoints && minf < all; i++) {
        long long b = i == 0 ? minf + 1 : i == 1 ? minf + 64 : minf + (all - minf) * (i - 1) / npoints;
        rc = tu_memgrad(&out, "plan '%s/m.mg' --no-cache --budget %lldB", c->dir, b);
        if (rc != 0)
            failf(c, "plan refused budget %lld B, above the minimum feasible budget %lld B it reported (exit status %d)\n"
                  "  $ memgrad plan m.mg --budget %lldB\n%s\n", b, minf, rc, b, clip(out, 1500));
        free(out);
    }
    recs ref = {0}, v = {0};
    if (run_variant(c, "ref", "", -1, -1, &ref) != V_OK) {
        free(ref.data);
        return;
    }
    int nf = nonfinite(&ref);
    if (nf) sb_printf(&c->notes, "seed %llu: %d non-finite values at store-all\n", (unsigned long long)c->seed, nf);

    typedef struct variant {
        char tag[16], opts[128];
        long long budget, min;
    } variant;
    variant vs[24];
    int nv = 0;
#define ADD(T, B, M, ...)                                                                                                  \
    do {                                                                                                                   \
        snprintf(vs[nv].tag, sizeof vs[nv].tag, "%s", T);                                                                  \
        snprintf(vs[nv].opts, sizeof vs[nv].opts, __VA_ARGS__);                                                            \
        vs[nv].budget = (B), vs[nv].min = (M);                                                                             \
        nv++;                                                                                                              \
    } while (0)
    ADD("nofuse", -1, -1, "--no-fuse");
    long long pct[3] = {75, 50, 30};
    const char *ptag[3] = {"b75", "b50", "b30"};
    for (int i = 0; i < 3; i++) {
        long long b = all * pct[i] / 100;
        if (b < all) ADD(ptag[i], b, minf, "--budget %lldB", b);
    }
    if (minf < all) {
        ADD("bmin", minf, minf, "--budget %lldB", minf);
        uint64_t h = c->seed * 0x9e3779b97f4a7c15ULL;
        long long mid = minf + (long long)((h >> 20) % (uint64_t)(all - minf));
        ADD("bmid", mid, minf, "--budget %lldB", mid);
        ADD("bmin_nofuse", minf, minf, "--budget %lldB --no-fuse", minf);
    }
    if (min1 >= 0 && min1 < all) {
        ADD("mb1_min", min1, min1, "--micro-batches 1 --budget %lldB", min1);
        ADD("mb1_mid", (min1 + all) / 2, min1, "--micro-batches 1 --budget %lldB", (min1 + all) / 2);
    }
    for (int i = 1; i < 4; i++) {
        if (mink[i] < 0) continue;
        char t[16];
        snprintf(t, sizeof t, "mb%d", 1 << i);
        ADD(t, -1, -1, "--micro-batches %d", 1 << i);
        snprintf(t, sizeof t, "mb%d_min", 1 << i);
        ADD(t, mink[i], mink[i], "--micro-batches %d --budget %lldB", 1 << i, mink[i]);
    }
    ADD("sqrt", -1, -1, "--solver sqrt");
    if (minf < all) ADD("sqrt_b50", all / 2, -1, "--solver sqrt --budget %lldB", all / 2);
    const char *ex = getenv("MG_RANDOM_EXACT"); /* exploration: CBC's plans too */
    if (ex && *ex == '1' && minf < all) ADD("exact_b50", all / 2, minf, "--solver exact --time-limit 3 --budget %lldB", all / 2);
#undef ADD
    int refused = 0, ran = 0;
    sbuf rtags = {0};
    for (int i = 0; i < nv; i++) {
        int st = run_variant(c, vs[i].tag, vs[i].opts, vs[i].budget, vs[i].min, &v);
        if (st == V_REFUSED) {
            refused++;
            sb_printf(&rtags, " %s", vs[i].tag);
        }
        if (st != V_OK) continue;
        ran++;
        sbuf d = {0};
        if (compare_recs(&ref, &v, &d))
            failf(c, "%s: not bit-identical to store-all\n  $ memgrad compile m.mg %s %s\n%s", vs[i].tag, c->opt, vs[i].opts, sb_str(&d));
        free(d.s);
        free(v.data);
        v.data = NULL;
    }
    sb_printf(&c->notes, "seed %llu: store-all %lld B, minimum %lld B (%lld parts at store-all), whole-batch minimum %lld B, "
              "2 parts %s, 4 parts %s, 8 parts %s; %d variants compared, %d refused as allowed%s\n",
              (unsigned long long)c->seed, all, minf, parts, min1, mink[1] >= 0 ? "yes" : "no", mink[2] >= 0 ? "yes" : "no",
              mink[3] >= 0 ? "yes" : "no", ran,
              refused, sb_str(&rtags));
    free(rtags.s);
    free(ref.data);
}

/* ------------------------------------------------------------------------------------------ */
/* The tests */

/* the seeds ctest runs (each passed when it was added); fewer under the sanitizers */
static const uint64_t fixed_seeds[] = {1, 2, 3};
static const int n_sanitized = 2;

static uint64_t *seeds;
static int nseeds;

static const char *opt_for(uint64_t seed)
{
    const char *o = getenv("MG_RANDOM_OPT");
    if (!o || !*o) return "-O0";
    if (!strcmp(o, "mix")) {
        static const char *os[] = {"-O0", "-O0", "-O1", "-O3"};
        return os[seed % 4];
    }
    return o;
}

START_TEST(random_model)
{
    uint64_t seed = seeds[_i];
    const char *file = getenv("MG_RANDOM_FILE"); /* a model of one's own (a reproducer) instead */
    char *src = file && *file ? tu_read(file) : gen_model(seed);
    ck_assert_msg(src != NULL, "cannot read %s", file);
    char *dir = tu_tmpdir();
    ck_assert_ptr_nonnull(dir);
    ctx c = {.seed = seed, .dir = dir, .opt = opt_for(seed)};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    check_model(&c, src);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    sb_printf(&c.notes, "seed %llu: %.1f s\n", (unsigned long long)seed, (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    const char *log = getenv("MG_RANDOM_LOG");
    FILE *lf = log && *log ? fopen(log, "a") : NULL;
    if (lf) {
        fprintf(lf, "%s", sb_str(&c.notes));
        if (c.nfail) fprintf(lf, "FAIL seed %llu (%s), %d failures:\n%s--- model:\n%s---\n", (unsigned long long)seed, c.opt, c.nfail,
                             sb_str(&c.fails), src);
        fclose(lf);
    }
    if (c.nfail) {
        const char *keep = getenv("MG_RANDOM_KEEP");
        if (keep && *keep) {
            char path[4200];
            mkdir(keep, 0777);
            snprintf(path, sizeof path, "%s/seed%llu.mg", keep, (unsigned long long)seed);
            tu_write(path, src);
        }
        fprintf(stderr, "random model seed %llu (%s): %d failures\n%s--- the model:\n%s---\n", (unsigned long long)seed, c.opt, c.nfail,
                sb_str(&c.fails), src);
    }
    tu_dir_free(&dir);
    ck_assert_msg(c.nfail == 0, "random model seed %llu (%s): %d failures (the model and every failure are on stderr); first:\n%.2500s",
                  (unsigned long long)seed, c.opt, c.nfail, sb_str(&c.fails));
    free(c.fails.s);
    free(c.notes.s);
    free(src);
}
END_TEST

int main(void)
{
    const char *p = getenv("MG_RANDOM_PRINT");
    if (p && *p) {
        char *m = gen_model(strtoull(p, NULL, 10));
        fputs(m, stdout);
        free(m);
        return 0;
    }
    const char *list = getenv("MG_RANDOM_SEEDS"), *from = getenv("MG_RANDOM_SEED"), *count = getenv("MG_RANDOM_COUNT");
    if (list && *list) {
        seeds = malloc(sizeof *seeds * 4096);
        for (char *e; *list && nseeds < 4096; list = e) {
            seeds[nseeds++] = strtoull(list, &e, 10);
            if (e == list) {
                nseeds--;
                break;
            }
        }
    }
    else if ((count && *count) || (getenv("MG_RANDOM_FILE") && *getenv("MG_RANDOM_FILE"))) {
        nseeds = count && *count ? atoi(count) : 1;
        uint64_t s0 = from && *from ? strtoull(from, NULL, 10) : 1;
        seeds = malloc(sizeof *seeds * (size_t)(nseeds + 1));
        for (int i = 0; i < nseeds; i++) seeds[i] = s0 + (uint64_t)i;
    }
    else {
        nseeds = TU_SANITIZED ? n_sanitized : (int)(sizeof fixed_seeds / sizeof *fixed_seeds);
        seeds = malloc(sizeof fixed_seeds);
        memcpy(seeds, fixed_seeds, sizeof fixed_seeds);
    }
    Suite *s = suite_create("random_models");
    TCase *tc = tcase_create("random");
    tcase_set_timeout(tc, 900); /* one model and all its variants, whatever CK_DEFAULT_TIMEOUT says */
    tcase_add_loop_test(tc, random_model, 0, nseeds);
    suite_add_tcase(s, tc);
    int rc = tu_run_suite(s);
    free(seeds);
    return rc;
}
