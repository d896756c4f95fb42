/* sched_storeall.c — the store-all schedule: compute every needed value once, in graph
 * order, and free it after its last use. This is the 100% point of every budget and the
 * baseline the recomputing planner is measured against. It also decides where values that
 * the caller owns are written: parameter gradients straight into the grads blob and forward
 * outputs straight into the caller's output buffers, with an explicit copy (or zero fill)
 * where that is not possible. */
#include "plan.h"
#include "gemm.h"

#include <stdlib.h>
#include <string.h>

static void *xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n ? n : 1, sz);
    if (!p) abort();
    return p;
}

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

int64_t mg_matmul_scratch_bytes(const mg_graph *g, int node)
{
    const mg_node *n = &g->nodes[node];
    const mg_shape *a = &g->nodes[n->in[0]].type.shape;
    int64_t M = n->type.shape.dim[0], N = n->type.shape.dim[1];
    int64_t K = n->iattr[0] ? a->dim[0] : a->dim[1];
    return align_up(mgk_gemm_scratch_bytes(M, N, K, (int64_t)mg_dtype_size(n->type.dtype)));
}

static int is_leaf(mg_op op) { return op == MG_OP_INPUT || op == MG_OP_PARAM || op == MG_OP_CONST; }

static int add_buffer(mg_plan *p, int *cap, int64_t bytes, int step, int node)
{
    if (p->nbufs == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        p->bufs = realloc(p->bufs, (size_t)*cap * sizeof *p->bufs);
        if (!p->bufs) abort();
    }
    p->bufs[p->nbufs] = (mg_buffer){align_up(bytes), step, step, -1, node};
    return p->nbufs++;
}

void mg_plan_free(mg_plan *p)
{
    if (!p) return;
    free(p->steps);
    free(p->place);
    free(p->bufs);
    free(p);
}

mg_status mg_schedule_store_all(const mg_graph *g, mg_plan_kind kind, mg_plan **out, mg_diag *d)
{
    int n = kind == MG_PLAN_TRAIN ? g->n : g->nforward;
    *out = NULL;
    if (kind == MG_PLAN_TRAIN && (!g->param_grads || g->loss < 0))
        return mg_diag_set(d, (mg_loc){0}, "internal error: train plan needs the joint graph");
    mg_plan *p = xcalloc(1, sizeof *p);
    p->g = g;
    p->kind = kind;
    p->result = kind == MG_PLAN_TRAIN ? g->loss : -1;
    p->place = xcalloc((size_t)g->n, sizeof *p->place);
    char *needed = xcalloc((size_t)g->n, 1);
    int64_t *poff = xcalloc((size_t)g->nparams, sizeof *poff);
    mg_param_layout(g, poff);

    /* roots: what the function must produce */
    if (kind == MG_PLAN_TRAIN) {
        needed[g->loss] = 1;
        for (int i = 0; i < g->nparams; i++)
            if (g->param_grads[i] >= 0) needed[g->param_grads[i]] = 1;
    } else {
        for (int i = 0; i < g->noutputs; i++) needed[g->outputs[i].node] = 1;
    }
    for (int i = n - 1; i >= 0; i--)
        if (needed[i])
            for (int k = 0; k < g->nodes[i].ninputs; k++) needed[g->nodes[i].in[k]] = 1;

    /* where leaves live; values pinned into caller memory */
    for (int i = 0; i < n; i++) {
        const mg_node *nd = &g->nodes[i];
        if (nd->op == MG_OP_INPUT) p->place[i] = (mg_place){MG_MEM_INPUT, nd->index, 0};
        else if (nd->op == MG_OP_PARAM) p->place[i] = (mg_place){MG_MEM_PARAMS, nd->index, poff[nd->index]};
        else if (nd->op == MG_OP_CONST) p->place[i] = (mg_place){MG_MEM_CONST, 0, 0};
    }
    int nextra = 0;
    mg_step *extra = xcalloc((size_t)(g->nparams + g->noutputs), sizeof *extra);
    if (kind == MG_PLAN_TRAIN) {
        for (int i = 0; i < g->nparams; i++) {
            int gi = g->param_grads[i];
            mg_place dst = {MG_MEM_GRADS, i, poff[i]};
            if (gi < 0) extra[nextra++] = (mg_step){MG_STEP_ZERO, g->params[i], dst, -1};
            else if (!is_leaf(g->nodes[gi].op) && p->place[gi].mem == MG_MEM_NONE) p->place[gi] = dst;
            else extra[nextra++] = (mg_step){MG_STEP_COPY, gi, dst, -1};
        }
    } else {
        for (int i = 0; i < g->noutputs; i++) {
            int o = g->outputs[i].node;
            mg_place dst = {MG_MEM_OUTPUT, i, 0};
            if (!is_leaf(g->nodes[o].op) && p->place[o].mem == MG_MEM_NONE) p->place[o] = dst;
            else extra[nextra++] = (mg_step){MG_STEP_COPY, o, dst, -1};
        }
    }

    /* steps in graph order; every unpinned computed value gets a workspace buffer */
    int cap = 0;
    p->steps = xcalloc((size_t)(n + nextra), sizeof *p->steps);
    for (int i = 0; i < n; i++) {
        if (!needed[i] || is_leaf(g->nodes[i].op)) continue;
        int s = p->nsteps++;
        if (p->place[i].mem == MG_MEM_NONE)
            p->place[i] = (mg_place){MG_MEM_WS, add_buffer(p, &cap, (int64_t)mg_node_bytes(g, i), s, i), 0};
        int scratch = -1;
        if (g->nodes[i].op == MG_OP_MATMUL)
            scratch = add_buffer(p, &cap, mg_matmul_scratch_bytes(g, i), s, -1);
        p->steps[s] = (mg_step){MG_STEP_COMPUTE, i, p->place[i], scratch};
    }
    for (int k = 0; k < nextra; k++) p->steps[p->nsteps++] = extra[k];

    /* lifetimes: a buffer lives until the last step that reads it */
    for (int s = 0; s < p->nsteps; s++) {
        const mg_step *st = &p->steps[s];
        const mg_node *nd = &g->nodes[st->node];
        if (st->kind == MG_STEP_COPY) {
            if (p->place[st->node].mem == MG_MEM_WS) p->bufs[p->place[st->node].index].last = s;
        } else if (st->kind == MG_STEP_COMPUTE) {
            for (int k = 0; k < nd->ninputs; k++) {
                const mg_place *pl = &p->place[nd->in[k]];
                if (pl->mem == MG_MEM_WS && p->bufs[pl->index].last < s) p->bufs[pl->index].last = s;
            }
        }
    }
    if (p->result >= 0 && p->place[p->result].mem == MG_MEM_WS)
        p->bufs[p->place[p->result].index].last = p->nsteps - 1;

    free(extra);
    free(needed);
    free(poff);
    *out = p;
    return MG_OK;
}
