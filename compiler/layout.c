/* layout.c — sizes and places every plan shares, whatever the schedule: where each parameter
 * (and its gradient) sits in the caller's blobs, and how much scratch a GEMM or convolution step needs. */
#include "plan.h"
#include "conv.h"

#include <stdio.h>

static int64_t align_up(int64_t x) { return (x + MG_ALIGN - 1) / MG_ALIGN * MG_ALIGN; }

int64_t mg_param_layout(const mg_graph *g, int64_t *offsets)
{
    int64_t off = 0;
    for (int i = 0; i < g->nparams; i++) {
        if (offsets) offsets[i] = off;
        off += align_up((int64_t)mg_node_bytes(g, g->params[i]));
    }
    return off;
}

/* Whether forward node n holds a batch_norm's running statistics, and its ordinal among the
 * model's batch_norms: a batch_norm, or the first part's bn_apply of one split into micro-batches
 * (microbatch.c gives both the original ordinal in iattr[1], so the split graph's entries come in
 * the whole graph's order; a graph never split has them all 0 and keeps the node order). */
static int bn_owner(const mg_node *n, int *ordinal)
{
    *ordinal = n->iattr[1];
    return n->op == MG_OP_BATCH_NORM || (n->op == MG_OP_BN_APPLY && n->iattr[2] == 0);
}

int mg_state_layout(const mg_graph *g, mg_state_entry *entries, int64_t *total)
{
    int k = 0, any = 0, nbn = 0, ord;
    int64_t off = 0;
    int nf = g->nforward ? g->nforward : g->n;
    for (int i = 0; i < nf; i++) {
        any |= g->nodes[i].op == MG_OP_DROPOUT;
        nbn += bn_owner(&g->nodes[i], &ord);
    }
    /* the owners by ordinal, then node order (a selection: models have tens of batch_norms) */
    int last_ord = -1, last_node = -1;
    for (int done = 0; done < nbn; done++) {
        int best = -1, best_ord = 0;
        for (int i = 0; i < nf; i++) {
            if (!bn_owner(&g->nodes[i], &ord)) continue;
            if (ord < last_ord || (ord == last_ord && i <= last_node)) continue;
            if (best < 0 || ord < best_ord) best = i, best_ord = ord;
        }
        last_ord = best_ord;
        last_node = best;
        const mg_node *n = &g->nodes[best];
        int64_t bytes = (int64_t)mg_node_bytes(g, n->in[1]);
        for (int j = 0; j < 2; j++) {
            if (entries) entries[k] = (mg_state_entry){j ? MG_STATE_RUNNING_VAR : MG_STATE_RUNNING_MEAN, best, off, bytes};
            k++;
            off += align_up(bytes);
        }
    }
    if (k || any) {
        if (entries) entries[k] = (mg_state_entry){MG_STATE_STEP, -1, off, 4};
        k++;
        off += align_up(4);
    }
    if (total) *total = off;
    return k;
}

const char *mg_state_name(const mg_graph *g, const mg_state_entry *e, char *buf, size_t len)
{
    if (e->kind == MG_STATE_STEP) {
        snprintf(buf, len, "step");
        return buf;
    }
    /* Named after the scale when that is a param or input (their names are unique) used by no
     * earlier batch_norm; else "batch_norm#K", the K-th batch_norm ('#' is in no .mg name), so
     * that every entry of NAME_state_desc has its own name. */
    const char *what = e->kind == MG_STATE_RUNNING_MEAN ? "running_mean" : "running_var";
    int scale = g->nodes[e->node].in[1], ordinal = 0, shared = 0, mine, ord;
    bn_owner(&g->nodes[e->node], &mine);
    for (int i = 0; i < g->n; i++) /* the owners before this one in mg_state_layout's order */
        if (i != e->node && bn_owner(&g->nodes[i], &ord) && (ord < mine || (ord == mine && i < e->node))) {
            ordinal++;
            shared |= g->nodes[i].in[1] == scale;
        }
    const mg_node *sc = &g->nodes[scale];
    if (sc->name && (sc->op == MG_OP_PARAM || sc->op == MG_OP_INPUT) && !shared)
        snprintf(buf, len, "%s.%s", sc->name, what);
    else
        snprintf(buf, len, "batch_norm#%d.%s", ordinal, what);
    return buf;
}

mg_matmul_geom mg_matmul_geometry(const mg_graph *g, int node)
{
    const mg_node *n = &g->nodes[node];
    const mg_shape *a = &g->nodes[n->in[0]].type.shape, *b = &g->nodes[n->in[1]].type.shape;
    const mg_shape *c = &n->type.shape;
    mg_matmul_geom m;
    m.N = c->dim[c->rank - 1];
    m.K = n->iattr[0] ? a->dim[a->rank - 2] : a->dim[a->rank - 1];
    m.lda = a->dim[a->rank - 1];
    m.ldb = b->dim[b->rank - 1];
    m.flat = c->rank == 2 || (b->rank == 2 && !n->iattr[0]);
    m.M = m.flat ? mg_shape_numel(c) / (m.N ? m.N : 1) : c->dim[c->rank - 2];
    return m;
}

mgk_conv_geom mg_conv_geom(const mg_graph *g, int node)
{
    const mg_node *n = &g->nodes[node];
    /* x and w shapes: conv2d (x, w); grad_input (dy, w) with x's shape its own; grad_weight
     * (x, dy) with w's shape its own; conv_transpose2d (x, w) is grad_input with its x as dy */
    const mg_shape *x = n->op == MG_OP_CONV2D_GRAD_INPUT || n->op == MG_OP_CONV_TRANSPOSE2D
                            ? &n->type.shape : &g->nodes[n->in[0]].type.shape;
    const mg_shape *w = n->op == MG_OP_CONV2D_GRAD_WEIGHT || n->op == MG_OP_CONV2D_GRAD_WEIGHT_ACC ? &n->type.shape : &g->nodes[n->in[1]].type.shape;
    mgk_conv_geom k;
    k.N = x->dim[0];
    k.C = x->dim[1];
    k.H = x->dim[2];
    k.W = x->dim[3];
    k.Co = w->dim[0];
    k.KH = w->dim[2];
    k.KW = w->dim[3];
    k.stride = n->iattr[0];
    k.pad = n->iattr[1];
    k.dil = n->iattr[2];
    k.groups = n->iattr[3];
    k.OH = mg_window_out(k.H, k.KH, k.stride, k.pad, k.dil);
    k.OW = mg_window_out(k.W, k.KW, k.stride, k.pad, k.dil);
    return k;
}

int64_t mg_node_scratch_cap(const mg_graph *g, int node)
{
    const mg_node *n = &g->nodes[node];
    switch (n->op) {
    case MG_OP_MATMUL:
    case MG_OP_MATMUL_ACC: return mg_matmul_geometry(g, node).flat ? n->iattr[2] : 0; /* (a stack of GEMMs: whole blocks) */
    case MG_OP_CONV2D:
    case MG_OP_CONV2D_GRAD_INPUT:
    case MG_OP_CONV_TRANSPOSE2D:
    case MG_OP_CONV2D_GRAD_WEIGHT:
    case MG_OP_CONV2D_GRAD_WEIGHT_ACC: return n->iattr[5];
    default: return 0;
    }
}

int64_t mg_node_scratch_bytes_cap(const mg_graph *g, int node, int64_t cap)
{
    const mg_node *n = &g->nodes[node];
    int64_t elem = (int64_t)mg_dtype_size(n->type.dtype);
    mg_matmul_geom m;
    mgk_conv_geom k;
    switch (n->op) {
    case MG_OP_MATMUL:
    case MG_OP_MATMUL_ACC:
        m = mg_matmul_geometry(g, node);
        return align_up(mgk_gemm_capped_scratch_bytes(m.M, m.N, m.K, elem, m.flat ? cap : 0));
    case MG_OP_CONV2D:
        k = mg_conv_geom(g, node);
        return align_up(mgk_conv_capped_scratch_bytes(MGK_CONV_FWD, &k, elem, cap));
    case MG_OP_CONV2D_GRAD_INPUT:
    case MG_OP_CONV_TRANSPOSE2D:
        k = mg_conv_geom(g, node);
        return align_up(mgk_conv_capped_scratch_bytes(MGK_CONV_DX, &k, elem, cap));
    case MG_OP_CONV2D_GRAD_WEIGHT:
    case MG_OP_CONV2D_GRAD_WEIGHT_ACC:
        k = mg_conv_geom(g, node);
        return align_up(mgk_conv_capped_scratch_bytes(MGK_CONV_DW, &k, elem, cap));
    default: return 0;
    }
}

int64_t mg_node_scratch_bytes(const mg_graph *g, int node)
{
    return mg_node_scratch_bytes_cap(g, node, mg_node_scratch_cap(g, node));
}

int64_t mg_step_scratch_cap(const mg_graph *g, const mg_step *st)
{
    if (st->scratch_cap) return st->scratch_cap < 0 ? 0 : st->scratch_cap;
    return mg_node_scratch_cap(g, st->node);
}
