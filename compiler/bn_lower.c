/* bn_lower.c — a whole-batch batch_norm as its statistics, then the normalisation: IR -> IR,
 * after the micro-batching rewrite (microbatch.c), before the planner.
 *
 * Why it exists: autodiff differentiates batch_norm into three ops that each read x and work
 * out the batch statistics again (batch_norm_grad_input and _grad_scale both sum x and its
 * squared deviations, _grad_input and _grad_scale both sum dy * xhat, _grad_shift sums dy),
 * and a recomputed batch_norm sums x twice more. Those sums run one chain of additions in
 * double per channel, in a fixed order (bit-identical in parts): latency, not arithmetic, and
 * most of batch_norm's time (a profile of resnet18_64's step: 13.6% in batch_norm's kernels,
 * 8.5% in the statistics). Here each is the ops the micro-batching rewrite gives a batch_norm
 * split into parts, on one part: bn_stats and bn_stats_acc make the statistics (an f64[2,C]
 * forward value the planner keeps or makes again, a few KiB), bn_apply normalises; the backward
 * sums once (bn_grad_sums: sum dy, sum dy * xhat), bn_grad_apply makes dx, bn_grad_param the
 * scale's and shift's gradients from the sums. The kernels add in the very order of the
 * whole-batch ones (runtime/kernels/stateful_impl.h), so every value keeps its bits. */
#include "bn_lower.h"

#include <stdlib.h>
#include <string.h>

/* the backward sums of one batch_norm input x against one gradient dy (with eps) */
typedef struct {
    int x, dy, sums; /* ids in g; sums in the new graph, -1 until made */
    double eps;
} grad_group;

typedef struct {
    const mg_graph *g;
    mg_graph *ng;
    int *map;   /* g's node -> the new graph's */
    int *stats; /* g's node x -> the f64[2,C] statistics of x in the new graph, or -1 */
    grad_group *grp;
    int ngrp;
    mg_diag *d;
    int failed;
} lower;

/* A node like t (mg_graph_add_like) with op and inputs (ids in the new graph); a new op's type is
 * inferred (from t's: bn_grad_param's dtype is preset). */
static int add_from(lower *L, const mg_node *t, mg_op op, int nin, const int *in, const char *name)
{
    if (L->failed) return -1;
    int id = mg_graph_add_like(L->ng, t, op, nin, in, name);
    if (op != t->op && mg_infer_type(L->ng, id, L->d)) {
        L->failed = 1;
        return -1;
    }
    return id;
}

static int dy_of(const mg_node *t)
{
    return t->op == MG_OP_BATCH_NORM_GRAD_INPUT ? t->in[2] : t->op == MG_OP_BATCH_NORM_GRAD_SCALE ? t->in[1] : t->in[0];
}

/* The group of batch_norm gradient v (its sums), or -1 when it stays as it is: an input with no
 * batch_norm before it, or a _shift whose dy no _input or _scale reads (it sums dy alone). */
static int group_of(lower *L, int v)
{
    const mg_graph *g = L->g;
    const mg_node *t = &g->nodes[v];
    int dy = dy_of(t);
    if (t->op == MG_OP_BATCH_NORM_GRAD_SHIFT) { /* sum dy: the same bits in any group of this dy */
        for (int i = 0; i < L->ngrp; i++)
            if (L->grp[i].dy == dy) return i;
        return -1;
    }
    if (L->stats[t->in[0]] < 0) return -1;
    for (int i = 0; i < L->ngrp; i++)
        if (L->grp[i].x == t->in[0] && L->grp[i].dy == dy && L->grp[i].eps == t->fattr) return i;
    return -1;
}

static void lower_forward(lower *L, int v, int ordinal)
{
    const mg_node *t = &L->g->nodes[v];
    int x = L->map[t->in[0]];
    mg_node s = *t;
    memset(s.iattr, 0, sizeof s.iattr);
    s.iattr[0] = (int)t->type.shape.dim[0]; /* the whole batch, in one part */
    int st = L->stats[t->in[0]];
    if (st < 0) { /* (two batch_norms of one x share its statistics) */
        int first = add_from(L, &s, MG_OP_BN_STATS, 1, &x, NULL);
        s.iattr[1] = 1;
        int in[2] = {x, first};
        st = L->stats[t->in[0]] = add_from(L, &s, MG_OP_BN_STATS_ACC, 2, in, NULL);
    }
    s.iattr[1] = ordinal;
    s.iattr[2] = 0;
    int in[4] = {x, L->map[t->in[1]], L->map[t->in[2]], st};
    L->map[v] = add_from(L, &s, MG_OP_BN_APPLY, 4, in, t->name);
}

static void lower_backward(lower *L, int v, int grp)
{
    const mg_node *t = &L->g->nodes[v];
    grad_group *gr = &L->grp[grp];
    mg_node s = *t;
    memset(s.iattr, 0, sizeof s.iattr);
    s.iattr[0] = (int)L->g->nodes[gr->x].type.shape.dim[0];
    s.fattr = gr->eps;
    if (gr->sums < 0) {
        int in[3] = {L->map[gr->x], L->map[gr->dy], L->stats[gr->x]};
        gr->sums = add_from(L, &s, MG_OP_BN_GRAD_SUMS, 3, in, NULL);
    }
    if (t->op == MG_OP_BATCH_NORM_GRAD_INPUT) {
        int in[4] = {L->map[t->in[0]], L->map[t->in[1]], L->map[t->in[2]], gr->sums};
        L->map[v] = add_from(L, &s, MG_OP_BN_GRAD_APPLY, 4, in, t->name);
        return;
    }
    s.iattr[1] = t->op == MG_OP_BATCH_NORM_GRAD_SCALE ? 3 : 2; /* the row of the sums */
    L->map[v] = add_from(L, &s, MG_OP_BN_GRAD_PARAM, 1, &gr->sums, t->name);
}

mg_status mg_bn_lower(const mg_graph *g, mg_graph **out, mg_diag *d)
{
    *out = NULL;
    int n = g->n, nbn = 0, split = 0;
    for (int v = 0; v < n; v++) {
        nbn += g->nodes[v].op == MG_OP_BATCH_NORM;
        split |= g->nodes[v].micro_batch > 0;
    }
    if (!nbn) return MG_OK;
    lower L = {g, mg_graph_new(), NULL, NULL, NULL, 0, d, 0};
    L.map = mg_xcalloc((size_t)n, sizeof *L.map);
    L.stats = mg_xcalloc((size_t)n, sizeof *L.stats);
    L.grp = mg_xcalloc((size_t)n, sizeof *L.grp);
    for (int v = 0; v < n; v++) L.map[v] = L.stats[v] = -1;
    /* the groups of sums, from the _input and _scale gradients of an x some batch_norm normalises */
    char *normalised = mg_xcalloc((size_t)n, 1);
    for (int v = 0; v < n; v++) {
        const mg_node *t = &g->nodes[v];
        if (t->op == MG_OP_BATCH_NORM) normalised[t->in[0]] = 1;
        if ((t->op != MG_OP_BATCH_NORM_GRAD_INPUT && t->op != MG_OP_BATCH_NORM_GRAD_SCALE) || !normalised[t->in[0]])
            continue;
        int i = 0;
        while (i < L.ngrp && !(L.grp[i].x == t->in[0] && L.grp[i].dy == dy_of(t) && L.grp[i].eps == t->fattr)) i++;
        if (i == L.ngrp) L.grp[L.ngrp++] = (grad_group){t->in[0], dy_of(t), -1, t->fattr};
    }
    free(normalised);
    mg_graph *ng = L.ng;
    ng->model_name = mg_graph_intern(ng, g->model_name);
    for (int v = 0, ordinal = 0; v < n && !L.failed; v++) {
        const mg_node *t = &g->nodes[v];
        if (v == g->nforward) ng->nforward = ng->n;
        if (t->op == MG_OP_BATCH_NORM) {
            /* the running statistics' owner and its place among them (mg_state_layout): in a
             * graph in parts microbatch.c numbered every batch_norm; a whole graph's go in node
             * order */
            lower_forward(&L, v, split ? t->iattr[1] : ordinal++);
            continue;
        }
        int grp = t->op == MG_OP_BATCH_NORM_GRAD_INPUT || t->op == MG_OP_BATCH_NORM_GRAD_SCALE ||
                          t->op == MG_OP_BATCH_NORM_GRAD_SHIFT
                      ? group_of(&L, v)
                      : -1;
        if (grp >= 0) {
            lower_backward(&L, v, grp);
            continue;
        }
        int in[MG_MAX_INPUTS];
        for (int k = 0; k < t->ninputs; k++) in[k] = L.map[t->in[k]];
        L.map[v] = add_from(&L, t, t->op, t->ninputs, in, t->name);
        /* the dropout whose mask it regenerates (masks are keyed by the dropout's node: a model
         * with batch_norms before a dropout draws other masks than before 2026-12-07) */
        if (t->op == MG_OP_DROPOUT_GRAD && !L.failed) ng->nodes[L.map[v]].iattr[1] = L.map[t->iattr[1]];
    }
    if (g->nforward >= n) ng->nforward = ng->n;
    mg_status st = MG_ERR;
    if (!L.failed) {
        ng->ninputs = g->ninputs;
        ng->nparams = g->nparams;
        ng->noutputs = g->noutputs;
        ng->inputs = mg_xcalloc((size_t)g->ninputs, sizeof *ng->inputs);
        ng->params = mg_xcalloc((size_t)g->nparams, sizeof *ng->params);
        ng->param_grads = mg_xcalloc((size_t)g->nparams, sizeof *ng->param_grads);
        ng->outputs = mg_xcalloc((size_t)g->noutputs, sizeof *ng->outputs);
        for (int i = 0; i < g->ninputs; i++) ng->inputs[i] = L.map[g->inputs[i]];
        for (int i = 0; i < g->nparams; i++) {
            ng->params[i] = L.map[g->params[i]];
            ng->param_grads[i] = g->param_grads && g->param_grads[i] >= 0 ? L.map[g->param_grads[i]] : -1;
        }
        for (int i = 0; i < g->noutputs; i++) {
            ng->outputs[i].name = mg_graph_intern(ng, g->outputs[i].name);
            ng->outputs[i].node = L.map[g->outputs[i].node];
        }
        ng->loss = g->loss >= 0 ? L.map[g->loss] : -1;
        st = mg_graph_verify(ng, d);
    }
    free(L.map);
    free(L.stats);
    free(L.grp);
    if (st) {
        mg_graph_free(ng);
        return MG_ERR;
    }
    *out = ng;
    return MG_OK;
}
