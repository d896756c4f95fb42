/* fuse.c — which steps of a plan the backend runs as one pass over the elements.
 *
 * An elementwise op whose value the plan reads only in the very next step (another elementwise
 * op of the same shape) and frees right after it is an intermediate nobody keeps: neither the
 * backward pass nor a recomputation reads it. Writing it out and reading it back costs a trip
 * through memory per op; a chain of such steps can instead run as one loop that keeps the
 * intermediates in registers and writes only the last value (codegen.c emits that loop). The
 * plan is not changed: its buffers, offsets and step numbers stay what the planner chose, the
 * fused steps just do not write the intermediates. This file decides where that is safe. */
#include "backend.h"

#include <string.h>

const char *mg_fuse_elem_fn(const mg_graph *g, int node, int *nargs)
{
    const mg_node *n = &g->nodes[node];
    if (n->type.dtype != MG_F32 && n->type.dtype != MG_F64) return NULL;
    int two = 0;
    const char *f = NULL;
    switch (n->op) {
    case MG_OP_ADD: f = "mgk_e_add", two = 1; break;
    case MG_OP_SUB: f = "mgk_e_sub", two = 1; break;
    case MG_OP_MUL: f = "mgk_e_mul", two = 1; break;
    case MG_OP_DIV: f = "mgk_e_div", two = 1; break;
    case MG_OP_NEG: f = "mgk_e_neg"; break;
    case MG_OP_RELU: f = "mgk_e_relu"; break;
    case MG_OP_TANH: f = "mgk_e_tanh"; break;
    case MG_OP_SIGMOID: f = "mgk_e_sigmoid"; break;
    case MG_OP_EXP: f = "mgk_e_exp"; break;
    case MG_OP_LOG: f = "mgk_e_log"; break;
    case MG_OP_GELU: f = n->iattr[0] ? "mgk_e_gelu_tanh" : "mgk_e_gelu"; break;
    case MG_OP_RELU_GRAD: f = "mgk_e_relu_grad", two = 1; break;
    case MG_OP_TANH_GRAD: f = "mgk_e_tanh_grad", two = 1; break;
    case MG_OP_SIGMOID_GRAD: f = "mgk_e_sigmoid_grad", two = 1; break;
    case MG_OP_GELU_GRAD: f = n->iattr[0] ? "mgk_e_gelu_tanh_grad" : "mgk_e_gelu_grad", two = 1; break;
    default: return NULL;
    }
    /* every operand has the result's dtype (no mixed-precision operands in a fused loop) */
    for (int i = 0; i < n->ninputs; i++)
        if (g->nodes[n->in[i]].type.dtype != n->type.dtype) return NULL;
    if (nargs) *nargs = two ? 2 : 1;
    return f;
}

static int same_shape(const mg_shape *a, const mg_shape *b)
{
    if (a->rank != b->rank) return 0;
    for (int i = 0; i < a->rank; i++)
        if (a->dim[i] != b->dim[i]) return 0;
    return 1;
}

/* Where a place's bytes are: a memory (with the input/output index) and a byte range. */
typedef struct span {
    int mem, index;
    int64_t lo, hi;
} span;

static span span_of(const mg_plan *pl, const mg_graph *g, const mg_place *p, int node)
{
    span s = {(int)p->mem, 0, 0, (int64_t)mg_node_bytes(g, node)};
    switch (p->mem) {
    case MG_MEM_WS: s.lo = pl->bufs[p->index].offset; break;
    case MG_MEM_PARAMS:
    case MG_MEM_GRADS: s.lo = p->offset; break;
    case MG_MEM_INPUT: s.index = p->index; break;
    case MG_MEM_OUTPUT:
        s.index = p->index;
        s.lo = p->offset;
        break;
    default: s.mem = -1; /* constants are never written */
    }
    s.hi += s.lo;
    return s;
}

/* The fused loop reads every leaf operand of element i before it writes element i of the
 * result. A leaf whose bytes the result overlaps (the arena may reuse the buffer of a leaf the
 * chain's first step read for the chain's result) is therefore fine only when it is read at the
 * same element as written: the very same bytes and the result's shape. */
static int clobbers(const mg_plan *pl, const mg_graph *g, const mg_step *out_step, const mg_step *st, int k)
{
    const mg_node *res = &g->nodes[out_step->node];
    int leaf = g->nodes[st->node].in[k];
    span o = span_of(pl, g, &out_step->out, out_step->node), l = span_of(pl, g, &st->in[k], leaf);
    if (o.mem < 0 || l.mem < 0 || o.mem != l.mem || o.index != l.index) return 0;
    if (o.hi <= l.lo || l.hi <= o.lo) return 0;
    return !(o.lo == l.lo && same_shape(&g->nodes[leaf].type.shape, &res->type.shape));
}

/* Does step t's value feed step t + 1 and nothing else, and is it freed there? */
static int links(const mg_plan *pl, const mg_graph *g, int t)
{
    const mg_step *a = &pl->steps[t], *b = &pl->steps[t + 1];
    if (a->kind != MG_STEP_COMPUTE || b->kind != MG_STEP_COMPUTE) return 0;
    if (!mg_fuse_elem_fn(g, a->node, NULL) || !mg_fuse_elem_fn(g, b->node, NULL)) return 0;
    if (a->out.mem != MG_MEM_WS) return 0; /* params, grads, outputs must be written */
    const mg_buffer *buf = &pl->bufs[a->out.index];
    if (buf->node != a->node || buf->first != t || buf->last != t + 1) return 0;
    const mg_node *na = &g->nodes[a->node], *nb = &g->nodes[b->node];
    if (na->type.dtype != nb->type.dtype || !same_shape(&na->type.shape, &nb->type.shape)) return 0;
    if (mg_shape_numel(&nb->type.shape) <= 0) return 0;
    int reads = 0;
    for (int k = 0; k < nb->ninputs; k++) {
        if (nb->in[k] != a->node) continue;
        if (b->in[k].mem != MG_MEM_WS || b->in[k].index != a->out.index) return 0;
        reads = 1;
    }
    return reads;
}

int mg_fuse_chain(const mg_plan *pl, const mg_graph *g, int s)
{
    if (!g || s < 0 || s >= pl->nsteps) return 1;
    int len = 1, leaves = g->nodes[pl->steps[s].node].ninputs;
    for (int t = s; t + 1 < pl->nsteps && len < MG_FUSE_MAX_STEPS; t++) {
        if (!links(pl, g, t)) break;
        /* the chain s..t+1: its leaves (operands that are not the previous step's value) */
        const mg_step *last = &pl->steps[t + 1];
        int n_new = 0, bad = 0;
        for (int u = s; u <= t + 1 && !bad; u++) {
            const mg_node *n = &g->nodes[pl->steps[u].node];
            for (int k = 0; k < n->ninputs; k++) {
                if (u > s && n->in[k] == pl->steps[u - 1].node) continue;
                if (u == t + 1) n_new++;
                if (clobbers(pl, g, last, &pl->steps[u], k)) bad = 1;
            }
        }
        if (bad || leaves + n_new > MG_FUSE_MAX_LEAVES) break;
        leaves += n_new;
        len++;
    }
    return len;
}

int mg_fuse_count(const mg_plan *pl, const mg_graph *g, int *steps_fused)
{
    int chains = 0, fused = 0;
    for (int s = 0; s < pl->nsteps;) {
        int len = mg_fuse_chain(pl, g, s);
        if (len > 1) {
            chains++;
            fused += len;
        }
        s += len;
    }
    if (steps_fused) *steps_fused = fused;
    return chains;
}
