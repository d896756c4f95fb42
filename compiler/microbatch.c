/* microbatch.c — the micro-batching rewrite: IR -> IR, between autodiff and the planner.
 *
 * Why it exists: the backward op of a model's first layers can alone need more workspace than a
 * budget allows (cnn_fmnist: relu_grad over f32[128,32,28,28] reads y and dy and writes dx,
 * 36.8 MiB with the rest, which is also its store-all workspace), and no choice of what to keep
 * or recompute lowers that. Running those layers on parts of the batch does. This pass builds
 * the joint graph that does so; the planner and the backend see an ordinary graph.
 *
 * The prefix R: forward ops reachable from the batch inputs (the inputs whose axis 0 is the
 * batch, N) through ops where sample n of the result depends only on sample n of the batched
 * operands (convolutions, pooling, elementwise ops whose other operands have no batch axis,
 * reshapes that keep axis 0, ...), and whose other operands do not depend on R. It ends at the
 * first op that mixes samples (matmul over the batch rows, reductions, cross_entropy).
 * The block B: backward ops of the same per-sample kind that read a value of R or B, and the
 * parameter-gradient reductions over the batch that read them (sum_to, conv2d_grad_weight);
 * then, back from B, the per-sample backward ops that only B reads (unet_small: the input
 * gradient of the 1x1 output convolution, which reads xent_grad's whole result; computed whole
 * it held 2 MiB and kept the minimum at 8.6 MiB in 4 parts, split 25% = 6.6 MiB is met).
 *
 * The new graph, in order: the forward values that do not depend on R; for each micro-batch
 * c = 0..k-1 a copy of R on samples [c*N/k, (c+1)*N/k), reading slices of the batch inputs; the
 * concatenations of the values of R used whole later; the rest of the forward graph; the
 * backward values B needs; for each c a copy of B (values from outside read as slices), where
 * each reduction of chunk c > 0 continues into chunk c-1's result through sum_to_acc or
 * conv2d_grad_weight_acc (the kernels add in the very order of one call over the whole batch);
 * the concatenations of B's values used whole later; the rest of the backward graph.
 * Convolutions are split only at multiples of the images one GEMM takes (mgk_conv_batch), so
 * every kernel call of a copy is one of the calls the whole-batch kernel makes (unet_small's
 * 8x8 bottleneck takes 2 images per GEMM: at most 4 parts of its batch of 8).
 * Not split: prefixes that end at batch_norm. resnet18_64's minimum, 12.0 MiB (45.3% of its
 * 26.5 MiB store-all), is its stem's backward: batch_norm_grad_input reads x and dy and writes
 * dx, three f32[16,64,32,32] of 4 MiB; 25% (6.6 MiB) needs the stem in parts, so batch_norm
 * across them. The kernels (stateful_impl.h) sum each channel in double, sample after sample,
 * so a split can be bit-identical: per part, carry the double sums (forward: sum x, then with
 * the mean sum (x-mean)^2; backward: sum dy and sum dy*xhat, which are also the shift's and the
 * scale's gradients, bit for bit) into the next part in an f64 tensor, then normalise each
 * part; the running statistics move once, from the last part's sums. Not done yet: it needs ops
 * for those steps, their state entries (layout.c) and their inference-mode code.
 * requires: g after autodiff; maintains: g untouched. */
#include "microbatch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n ? n : 1, sz);
    if (!p) abort();
    return p;
}

static int is_leaf(mg_op op) { return op == MG_OP_INPUT || op == MG_OP_PARAM || op == MG_OP_CONST; }

/* Whether op n works sample by sample along axis 0 (of extent N); if so, batched[k] says which
 * operands carry the batch axis (the others broadcast over it). */
static int per_sample(const mg_graph *g, const mg_node *n, int64_t N, char *batched)
{
    const mg_shape *o = &n->type.shape;
    if (o->rank < 1 || o->dim[0] != N || n->type.dtype == MG_I32) return 0;
    for (int k = 0; k < n->ninputs; k++) batched[k] = 1;
    switch (n->op) {
    case MG_OP_ADD:
    case MG_OP_SUB:
    case MG_OP_MUL:
    case MG_OP_DIV:
    case MG_OP_BROADCAST:
        for (int k = 0; k < n->ninputs; k++) {
            const mg_shape *s = &g->nodes[n->in[k]].type.shape;
            batched[k] = s->rank == o->rank && s->dim[0] == N;
            if (!batched[k] && s->rank == o->rank && s->dim[0] != 1) return 0;
        }
        break;
    case MG_OP_NEG:
    case MG_OP_RELU:
    case MG_OP_TANH:
    case MG_OP_SIGMOID:
    case MG_OP_EXP:
    case MG_OP_LOG:
    case MG_OP_GELU:
    case MG_OP_MAX_POOL2D:
    case MG_OP_AVG_POOL2D:
    case MG_OP_GLOBAL_AVG_POOL:
    case MG_OP_UPSAMPLE_NEAREST:
    case MG_OP_FLATTEN:
    case MG_OP_RESHAPE:
    case MG_OP_RELU_GRAD:
    case MG_OP_TANH_GRAD:
    case MG_OP_SIGMOID_GRAD:
    case MG_OP_GELU_GRAD:
    case MG_OP_MAX_POOL2D_GRAD:
    case MG_OP_AVG_POOL2D_GRAD:
    case MG_OP_UPSAMPLE_NEAREST_GRAD: break;
    case MG_OP_TRANSPOSE:
        if (n->iattr[0] != 0) return 0;
        break;
    case MG_OP_SOFTMAX:
    case MG_OP_LOG_SOFTMAX:
    case MG_OP_SOFTMAX_GRAD:
    case MG_OP_LOG_SOFTMAX_GRAD:
        if (o->rank - 1 - n->iattr[0] == 0) return 0;
        break;
    case MG_OP_CONCAT:
    case MG_OP_SLICE:
    case MG_OP_SLICE_GRAD:
        if (n->iattr[0] == 0) return 0;
        break;
    case MG_OP_CONV2D:
    case MG_OP_CONV_TRANSPOSE2D:
    case MG_OP_CONV2D_GRAD_INPUT: batched[1] = 0; break;
    case MG_OP_SUM_TO: /* a sum over other axes only */
        if (g->nodes[n->in[0]].type.shape.rank != o->rank) return 0;
        break;
    default: return 0;
    }
    for (int k = 0; k < n->ninputs; k++) {
        const mg_shape *s = &g->nodes[n->in[k]].type.shape;
        if (batched[k] && (s->rank < 1 || s->dim[0] != N)) return 0;
    }
    return 1;
}

/* What the rewrite knows of g, for any k. */
typedef struct mb_info {
    const mg_graph *g;
    int64_t N;
    char *batch_in; /* INPUT nodes whose axis 0 is the batch */
    char *R;        /* the forward prefix */
    char *dep;      /* forward: depends on R */
    char *B;        /* the per-sample backward block */
    char *acc;      /* parameter-gradient reductions of B, summed micro-batch after micro-batch */
    char *need;     /* backward values outside B that B reads (computed before it) */
    char *after;    /* backward values outside B that read B (computed after it) */
    char *cat;      /* values of R or B that are used whole: concatenated */
    char *bat;      /* n * MG_MAX_INPUTS: operand k of node v of R or B carries the batch axis */
    int nR;
} mb_info;

static void info_free(mb_info *m)
{
    free(m->batch_in);
    free(m->R);
    free(m->dep);
    free(m->B);
    free(m->acc);
    free(m->need);
    free(m->after);
    free(m->cat);
    free(m->bat);
}

static mg_status analyse(const mg_graph *g, mb_info *m, mg_diag *why)
{
    memset(m, 0, sizeof *m);
    m->g = g;
    int n = g->n, nf = g->nforward;
    mg_loc none = {0};
    m->batch_in = xcalloc((size_t)n, 1);
    m->R = xcalloc((size_t)n, 1);
    m->dep = xcalloc((size_t)n, 1);
    m->B = xcalloc((size_t)n, 1);
    m->acc = xcalloc((size_t)n, 1);
    m->need = xcalloc((size_t)n, 1);
    m->cat = xcalloc((size_t)n, 1);
    m->bat = xcalloc((size_t)n * MG_MAX_INPUTS, 1);
    if (!g->param_grads || g->loss < 0) return mg_diag_set(why, none, "micro-batching needs the joint graph of a training step");
    for (int i = 0; i < g->ninputs; i++) {
        const mg_node *in = &g->nodes[g->inputs[i]];
        if (in->type.shape.rank >= 1) {
            m->N = in->type.shape.dim[0];
            break;
        }
    }
    if (m->N < 2) return mg_diag_set(why, none, "the model has no batch of two or more samples to split");
    for (int i = 0; i < g->ninputs; i++) {
        const mg_node *in = &g->nodes[g->inputs[i]];
        if (in->type.shape.rank >= 1 && in->type.shape.dim[0] == m->N) m->batch_in[g->inputs[i]] = 1;
    }
    for (int v = 0; v < n; v++)
        if (g->nodes[v].op == MG_OP_DROPOUT) /* its masks are keyed by node and element */
            return mg_diag_set(why, g->nodes[v].loc, "not split into micro-batches: the model has dropout, whose masks "
                               "are keyed by node and element");
    /* R, in order: a per-sample op whose batched operands are in R or batch inputs (one at least)
     * and whose other operands do not depend on R */
    int stop = -1;
    for (int v = 0; v < nf; v++) {
        const mg_node *nd = &g->nodes[v];
        if (is_leaf(nd->op)) continue;
        char *bt = &m->bat[(size_t)v * MG_MAX_INPUTS];
        int reads = 0, ok = per_sample(g, nd, m->N, bt);
        for (int k = 0; k < nd->ninputs; k++) {
            int u = nd->in[k];
            m->dep[v] |= m->dep[u];
            reads |= m->R[u] || m->batch_in[u];
            if (bt[k] ? !(m->R[u] || m->batch_in[u]) : m->dep[u]) ok = 0;
        }
        if (ok && reads) {
            m->R[v] = m->dep[v] = 1;
            m->nR++;
        } else if (reads && stop < 0) {
            stop = v;
        }
        if (reads && !ok && nd->op == MG_OP_BATCH_NORM)
            return mg_diag_set(why, nd->loc, "not split into micro-batches: the per-sample layers end at batch_norm, "
                               "whose statistics are over the whole batch");
    }
    if (!m->nR) {
        if (stop < 0) return mg_diag_set(why, none, "no op reads the batch inputs sample by sample");
        return mg_diag_set(why, g->nodes[stop].loc, "not split into micro-batches: the first op on the batch, %s, mixes "
                           "the samples", mg_ops[g->nodes[stop].op].name);
    }
    /* B and the reductions, in order */
    char *ps = xcalloc((size_t)n, 1); /* per-sample backward ops (bat holds their batched operands) */
    for (int v = nf; v < n; v++) {
        const mg_node *nd = &g->nodes[v];
        char *bt = &m->bat[(size_t)v * MG_MAX_INPUTS];
        int reads = 0;
        if (is_leaf(nd->op)) continue;
        if (per_sample(g, nd, m->N, bt)) {
            for (int k = 0; k < nd->ninputs; k++) reads |= bt[k] && (m->R[nd->in[k]] || m->B[nd->in[k]]);
            m->B[v] = (char)reads;
            ps[v] = 1;
            continue;
        }
        memset(bt, 0, MG_MAX_INPUTS);
        if (nd->op == MG_OP_SUM_TO) {
            /* the batch axis summed; the output keeps another axis of extent > 1, so the kernel's
             * innermost run of summed elements never reaches across samples (mgk_sum_to) */
            const mg_shape *s = &g->nodes[nd->in[0]].type.shape;
            bt[0] = s->rank >= 1 && s->dim[0] == m->N && mg_shape_numel(&nd->type.shape) > 1;
        } else if (nd->op == MG_OP_CONV2D_GRAD_WEIGHT) {
            bt[0] = bt[1] = 1;
        }
        for (int k = 0; k < nd->ninputs; k++) {
            reads |= bt[k] && (m->R[nd->in[k]] || m->B[nd->in[k]]);
            if (bt[k] && g->nodes[nd->in[k]].type.shape.dim[0] != m->N) bt[0] = bt[1] = reads = 0;
        }
        m->acc[v] = (char)reads;
    }
    /* B grows back over the per-sample backward ops that only B reads, each sample by sample (the
     * input gradient of a last per-sample layer whose dy comes from an op that mixes the samples:
     * unet_small's conv2d_grad_input of the 1x1 output convolution, 2 MiB whole otherwise). Their
     * batched operands from outside are read as slices, like B's. */
    int *uses = xcalloc((size_t)n, sizeof *uses), *inb = xcalloc((size_t)n, sizeof *inb);
    for (int v = 0; v < n; v++)
        for (int k = 0; k < g->nodes[v].ninputs; k++) {
            int u = g->nodes[v].in[k];
            uses[u]++;
            inb[u] += (m->B[v] || m->acc[v]) && m->bat[(size_t)v * MG_MAX_INPUTS + k];
        }
    for (int i = 0; i < g->noutputs; i++) uses[g->outputs[i].node]++;
    for (int i = 0; i < g->nparams; i++)
        if (g->param_grads[i] >= 0) uses[g->param_grads[i]]++;
    for (int v = n - 1; v >= nf; v--) {
        const mg_node *nd = &g->nodes[v];
        if (!ps[v] || m->B[v] || !uses[v] || inb[v] < uses[v]) continue;
        m->B[v] = 1;
        for (int k = 0; k < nd->ninputs; k++)
            inb[nd->in[k]] += m->bat[(size_t)v * MG_MAX_INPUTS + k];
    }
    free(uses);
    free(inb);
    free(ps);
    /* which values are used whole (concatenated), and the order constraints of the backward */
    char *after = m->after = xcalloc((size_t)n, 1);
    mg_status st = MG_OK;
    for (int v = 0; v < n && !st; v++) {
        const mg_node *nd = &g->nodes[v];
        int inblock = m->R[v] || m->B[v] || m->acc[v];
        for (int k = 0; k < nd->ninputs; k++) {
            int u = nd->in[k];
            if (m->acc[u] && (m->B[v] || m->acc[v]))
                st = mg_diag_set(why, nd->loc, "not split into micro-batches: a parameter gradient of the per-sample "
                                 "layers is read inside them");
            if ((m->R[u] && !(m->R[v] || m->B[v] || m->acc[v])) || (m->B[u] && !(m->B[v] || m->acc[v])))
                m->cat[u] = 1;
            if (m->R[u] && (m->B[v] || m->acc[v]) && !m->bat[(size_t)v * MG_MAX_INPUTS + k])
                m->cat[u] = 1; /* read whole by a block op (broadcast): concatenated in the forward part */
            if (m->B[u] && (m->B[v] || m->acc[v]) && !m->bat[(size_t)v * MG_MAX_INPUTS + k] && !st)
                st = mg_diag_set(why, nd->loc, "not split into micro-batches: a per-sample gradient is read whole by "
                                 "another per-sample op");
            if (v >= nf && !inblock && (m->B[u] || m->acc[u] || after[u])) after[v] = 1;
        }
    }
    for (int i = 0; i < g->noutputs; i++)
        if (m->R[g->outputs[i].node] || m->B[g->outputs[i].node]) m->cat[g->outputs[i].node] = 1;
    for (int i = 0; i < g->nparams; i++)
        if (g->param_grads[i] >= 0 && m->B[g->param_grads[i]]) m->cat[g->param_grads[i]] = 1;
    for (int v = n - 1; v >= nf && !st; v--) {
        const mg_node *nd = &g->nodes[v];
        if (!(m->B[v] || m->acc[v] || m->need[v])) continue;
        for (int k = 0; k < nd->ninputs; k++) {
            int u = nd->in[k];
            if (u >= nf && !m->B[u] && !m->acc[u]) m->need[u] = 1;
        }
    }
    for (int v = nf; v < n && !st; v++)
        if (m->need[v] && after[v])
            st = mg_diag_set(why, g->nodes[v].loc, "not split into micro-batches: the backward of the per-sample layers "
                             "both feeds and reads this %s", mg_ops[g->nodes[v].op].name);
    return st;
}

/* k is a count the kernels allow: it divides N, and every convolution of R and B keeps its
 * groups of images per GEMM whole (*conv: the first that would be cut, else -1). */
static int count_ok(const mb_info *m, int64_t k, int *conv)
{
    *conv = -1;
    if (k < 2 || m->N % k) return 0;
    int64_t part = m->N / k;
    for (int v = 0; v < m->g->n; v++) {
        mg_op op = m->g->nodes[v].op;
        if (!(m->R[v] || m->B[v] || m->acc[v])) continue;
        if (op != MG_OP_CONV2D && op != MG_OP_CONV_TRANSPOSE2D && op != MG_OP_CONV2D_GRAD_INPUT &&
            op != MG_OP_CONV2D_GRAD_WEIGHT)
            continue;
        mgk_conv_geom geom = mg_conv_geom(m->g, v);
        if (part % mgk_conv_batch(&geom)) {
            *conv = v;
            return 0;
        }
    }
    return 1;
}

int mg_microbatch_counts(const mg_graph *g, int *ks, int max, mg_diag *why)
{
    mb_info m;
    int nk = 0;
    if (!analyse(g, &m, why)) {
        for (int64_t k = 2; k <= m.N && nk < max; k++)
            if (count_ok(&m, k, &(int){0})) ks[nk++] = (int)k;
        if (!nk) mg_diag_set(why, (mg_loc){0}, "no micro-batch count divides the batch of %lld into whole GEMM groups",
                             (long long)m.N);
    }
    info_free(&m);
    return nk;
}

/* The rewrite's state: new ids of g's values whole (map: values outside R and B, cat: the
 * concatenations, acc: the reductions' last partial sums) and per micro-batch (cl: copies of
 * R and B, and slices of values from outside). */
typedef struct mb_build {
    const mb_info *m;
    mg_graph *ng;
    int k;
    int64_t part;
    int *map, *cat, *cl, *sl;
    mg_diag *d;
    int failed;
} mb_build;

static int add_like(mb_build *b, const mg_node *t, mg_op op, int nin, const int *in, int64_t dim0, const char *name,
                    mg_phase ph)
{
    if (b->failed) return -1;
    mg_graph *ng = b->ng;
    int id = mg_graph_add(ng, op, nin, in, t->loc);
    mg_node *n = &ng->nodes[id];
    memcpy(n->iattr, t->iattr, sizeof n->iattr);
    n->fattr = t->fattr;
    n->fattr2 = t->fattr2;
    n->name = mg_graph_intern(ng, name);
    n->phase = ph;
    n->index = t->index;
    n->init = t->init;
    n->init_arg = t->init_arg;
    n->type = t->type;
    if (dim0 > 0) n->type.shape.dim[0] = dim0;
    if (!is_leaf(op) && mg_infer_type(ng, id, b->d)) {
        b->failed = 1;
        return -1;
    }
    return id;
}

static const char *chunk_name(const mg_node *t, int c, char *buf, size_t len)
{
    if (!t->name) return NULL;
    snprintf(buf, len, "%s@mb%d", t->name, c);
    return buf;
}

/* g's value u whole in the new graph. */
static int whole(mb_build *b, int u)
{
    const mb_info *m = b->m;
    int id = m->R[u] || m->B[u] ? b->cat[u] : b->map[u];
    if (id < 0 && !b->failed) {
        b->failed = 1;
        mg_diag_set(b->d, b->m->g->nodes[u].loc, "internal error: micro-batching lost value %%%d", u);
    }
    return id;
}

/* Micro-batch c of g's value u: its copy, or a slice of it made now (and reused). */
static int chunk(mb_build *b, int c, int u, mg_phase ph)
{
    int n = b->m->g->n;
    if (b->cl[c * n + u] >= 0) return b->cl[c * n + u];
    if (b->sl[c * n + u] >= 0) return b->sl[c * n + u];
    const mg_node *t = &b->m->g->nodes[u];
    int src = whole(b, u);
    if (src < 0) return -1;
    char nm[300];
    mg_node s = *t;
    memset(s.iattr, 0, sizeof s.iattr);
    s.iattr[0] = 0;
    s.iattr[1] = (int)(c * b->part);
    s.iattr[2] = (int)((c + 1) * b->part);
    s.iattr[3] = 1;
    s.fattr = s.fattr2 = 0;
    s.index = -1;
    return b->sl[c * n + u] = add_like(b, &s, MG_OP_SLICE, 1, &src, 0, chunk_name(t, c, nm, sizeof nm), ph);
}

/* Copy of node v of g for micro-batch c (R or B), or its partial sum (a reduction). */
static void emit_chunk(mb_build *b, int c, int v, mg_phase ph)
{
    const mb_info *m = b->m;
    const mg_graph *g = m->g;
    const mg_node *t = &g->nodes[v];
    int in[MG_MAX_INPUTS + 1];
    for (int k = 0; k < t->ninputs; k++)
        in[k] = m->bat[(size_t)v * MG_MAX_INPUTS + k] ? chunk(b, c, t->in[k], ph) : whole(b, t->in[k]);
    char nm[300];
    if (!m->acc[v]) {
        b->cl[c * g->n + v] = add_like(b, t, t->op, t->ninputs, in, b->part, chunk_name(t, c, nm, sizeof nm), ph);
        return;
    }
    const char *name = c == b->k - 1 ? t->name : chunk_name(t, c, nm, sizeof nm);
    int id;
    if (c == 0) {
        id = add_like(b, t, t->op, t->ninputs, in, 0, name, ph);
    } else {
        in[t->ninputs] = b->map[v]; /* the partial sum of the micro-batches before */
        id = add_like(b, t, t->op == MG_OP_SUM_TO ? MG_OP_SUM_TO_ACC : MG_OP_CONV2D_GRAD_WEIGHT_ACC, t->ninputs + 1,
                      in, 0, name, ph);
    }
    b->map[v] = id;
}

/* The concatenation of the copies of v along axis 0 (in chains of at most MG_MAX_INPUTS). */
static void emit_cat(mb_build *b, int v, mg_phase ph)
{
    const mg_graph *g = b->m->g;
    const mg_node *t = &g->nodes[v];
    mg_node s = *t;
    memset(s.iattr, 0, sizeof s.iattr);
    int at = 0, prev = -1;
    while (at < b->k && !b->failed) {
        int in[MG_MAX_INPUTS], nin = 0;
        if (prev >= 0) in[nin++] = prev;
        while (nin < MG_MAX_INPUTS && at < b->k) in[nin++] = b->cl[at++ * g->n + v];
        prev = add_like(b, &s, MG_OP_CONCAT, nin, in, 0, at == b->k ? t->name : NULL, ph);
    }
    b->cat[v] = prev;
}

static void emit_whole(mb_build *b, int v, mg_phase ph)
{
    const mg_node *t = &b->m->g->nodes[v];
    int in[MG_MAX_INPUTS];
    for (int k = 0; k < t->ninputs; k++) in[k] = whole(b, t->in[k]);
    b->map[v] = add_like(b, t, t->op, t->ninputs, in, 0, t->name, ph);
}

mg_status mg_microbatch(const mg_graph *g, int k, mg_graph **out, mg_diag *d)
{
    *out = NULL;
    mb_info m;
    if (analyse(g, &m, d)) {
        info_free(&m);
        return MG_ERR;
    }
    int conv;
    if (!count_ok(&m, k, &conv)) {
        mg_status st;
        if (conv < 0) {
            st = mg_diag_set(d, (mg_loc){0}, "cannot split the batch of %lld into %d micro-batches: %d does not divide it",
                             (long long)m.N, k, k);
        } else {
            mgk_conv_geom geom = mg_conv_geom(g, conv);
            st = mg_diag_set(d, g->nodes[conv].loc,
                             "cannot split the batch of %lld into %d micro-batches: this %s takes %lld images per GEMM "
                             "(%lldx%lld outputs each), and parts of %lld would cut those groups",
                             (long long)m.N, k, mg_ops[g->nodes[conv].op].name, (long long)mgk_conv_batch(&geom),
                             (long long)geom.OH, (long long)geom.OW, (long long)(m.N / k));
        }
        info_free(&m);
        return st;
    }
    int n = g->n, nf = g->nforward;
    mb_build b = {&m, mg_graph_new(), k, m.N / k, NULL, NULL, NULL, NULL, d, 0};
    b.map = malloc((size_t)n * sizeof *b.map);
    b.cat = malloc((size_t)n * sizeof *b.cat);
    b.cl = malloc((size_t)n * (size_t)k * sizeof *b.cl);
    b.sl = malloc((size_t)n * (size_t)k * sizeof *b.sl);
    if (!b.map || !b.cat || !b.cl || !b.sl) abort();
    for (int i = 0; i < n; i++) b.map[i] = b.cat[i] = -1;
    for (int i = 0; i < n * k; i++) b.cl[i] = b.sl[i] = -1;
    mg_graph *ng = b.ng;
    ng->model_name = mg_graph_intern(ng, g->model_name);
    /* forward: what R does not depend on, R per micro-batch, R's values used whole, the rest */
    for (int v = 0; v < nf; v++)
        if (!m.dep[v]) emit_whole(&b, v, MG_PHASE_FORWARD);
    for (int c = 0; c < k; c++)
        for (int v = 0; v < nf; v++)
            if (m.R[v]) emit_chunk(&b, c, v, MG_PHASE_FORWARD);
    for (int v = 0; v < nf; v++)
        if (m.R[v] && m.cat[v]) emit_cat(&b, v, MG_PHASE_FORWARD);
    for (int v = 0; v < nf; v++)
        if (m.dep[v] && !m.R[v]) emit_whole(&b, v, MG_PHASE_FORWARD);
    ng->nforward = ng->n;
    /* backward: what B reads, B and the reductions per micro-batch, B's values used whole, the rest */
    int first = n; /* the first op of the block: what does not depend on it keeps its place before it */
    for (int v = n - 1; v >= nf; v--)
        if (m.B[v] || m.acc[v]) first = v;
    for (int v = nf; v < n; v++)
        if (m.need[v] || (v < first && !m.after[v])) emit_whole(&b, v, MG_PHASE_BACKWARD), m.need[v] = 1;
    for (int c = 0; c < k; c++)
        for (int v = nf; v < n; v++)
            if (m.B[v] || m.acc[v]) emit_chunk(&b, c, v, MG_PHASE_BACKWARD);
    for (int v = nf; v < n; v++)
        if (m.B[v] && m.cat[v]) emit_cat(&b, v, MG_PHASE_BACKWARD);
    for (int v = nf; v < n; v++)
        if (!m.need[v] && !m.B[v] && !m.acc[v]) emit_whole(&b, v, MG_PHASE_BACKWARD);
    /* the graph's lists */
    ng->ninputs = g->ninputs;
    ng->nparams = g->nparams;
    ng->noutputs = g->noutputs;
    ng->inputs = malloc((size_t)(g->ninputs ? g->ninputs : 1) * sizeof *ng->inputs);
    ng->params = malloc((size_t)(g->nparams ? g->nparams : 1) * sizeof *ng->params);
    ng->param_grads = malloc((size_t)(g->nparams ? g->nparams : 1) * sizeof *ng->param_grads);
    ng->outputs = malloc((size_t)(g->noutputs ? g->noutputs : 1) * sizeof *ng->outputs);
    if (!ng->inputs || !ng->params || !ng->param_grads || !ng->outputs) abort();
    for (int i = 0; i < g->ninputs; i++) ng->inputs[i] = b.map[g->inputs[i]];
    for (int i = 0; i < g->nparams; i++) {
        ng->params[i] = b.map[g->params[i]];
        ng->param_grads[i] = g->param_grads[i] < 0 ? -1 : whole(&b, g->param_grads[i]);
    }
    for (int i = 0; i < g->noutputs; i++) {
        ng->outputs[i].name = mg_graph_intern(ng, g->outputs[i].name);
        ng->outputs[i].node = whole(&b, g->outputs[i].node);
    }
    ng->loss = whole(&b, g->loss);
    mg_status st = b.failed ? MG_ERR : mg_graph_verify(ng, d);
    free(b.map);
    free(b.cat);
    free(b.cl);
    free(b.sl);
    info_free(&m);
    if (st) {
        mg_graph_free(ng);
        return MG_ERR;
    }
    *out = ng;
    return MG_OK;
}
