/* plan_verify.c — the independent plan checker. It replays a plan step by step and checks,
 * without trusting how the plan was made: every input of a step is resident (computed
 * earlier and not yet freed, or caller-owned and already written), every buffer is written by
 * the step that starts it and holds that value, no two buffers live at the same step overlap in
 * the arena, every buffer fits in the workspace, each parameter gradient and output is written
 * exactly once, backward ops run once (only forward ops may be recomputed, and recomputations
 * are marked), and the workspace, the peak live bytes and the FLOPs executed are what the plan
 * claims. */
#include "plan.h"

#include <stdlib.h>

typedef struct ev {
    int step, kind, buf; /* kind 0 = end (after step-1), 1 = start */
} ev;

static int cmp_ev(const void *a, const void *b)
{
    const ev *x = a, *y = b;
    if (x->step != y->step) return x->step < y->step ? -1 : 1;
    return x->kind - y->kind; /* what ended before a step goes before what starts at it */
}

mg_status mg_plan_verify(const mg_plan *p, mg_diag *d)
{
    const mg_graph *g = p->g;
    mg_loc none = {0};
    mg_status st = MG_OK;
    int nb = p->nbufs;
    int *grad_node = malloc(((size_t)g->nparams + 1) * sizeof *grad_node);
    int *out_node = malloc(((size_t)g->noutputs + 1) * sizeof *out_node);
    int64_t *poff = malloc(((size_t)g->nparams + 1) * sizeof *poff);
    int *computed = calloc((size_t)g->n + 1, sizeof *computed);
    int *writer = malloc(((size_t)nb + 1) * sizeof *writer);
    ev *evs = malloc(((size_t)nb * 2 + 1) * sizeof *evs);
    int *active = malloc(((size_t)nb + 1) * sizeof *active);
    if (!grad_node || !out_node || !poff || !computed || !writer || !evs || !active) abort();
    for (int b = 0; b < nb; b++) writer[b] = -1;
    for (int i = 0; i < g->nparams; i++) grad_node[i] = -1;
    for (int i = 0; i < g->noutputs; i++) out_node[i] = -1;
    mg_param_layout(g, poff);
    double flops = 0;
    int64_t ws_end = 0;

    for (int b = 0; b < nb && !st; b++) {
        const mg_buffer *bf = &p->bufs[b];
        if (bf->offset < 0 || bf->bytes < 0 || bf->offset + bf->bytes > p->workspace_bytes)
            st = mg_diag_set(d, none, "plan: buffer %d [%lld, +%lld) lies outside the %lld-byte workspace",
                             b, (long long)bf->offset, (long long)bf->bytes, (long long)p->workspace_bytes);
        else if (bf->first < 0 || bf->last < bf->first || bf->last >= p->nsteps)
            st = mg_diag_set(d, none, "plan: buffer %d has an invalid lifetime [%d, %d]", b, bf->first, bf->last);
        else if (bf->node >= 0 && (size_t)bf->bytes < mg_node_bytes(g, bf->node))
            st = mg_diag_set(d, none, "plan: buffer %d is smaller than its value %%%d", b, bf->node);
        else if (bf->offset + bf->bytes > ws_end)
            ws_end = bf->offset + bf->bytes;
    }
    if (!st && ws_end != p->workspace_bytes)
        st = mg_diag_set(d, none, "plan: buffers end at %lld bytes, the plan claims a %lld-byte workspace",
                         (long long)ws_end, (long long)p->workspace_bytes);
    for (int s = 0; s < p->nsteps && !st; s++) {
        const mg_step *sp = &p->steps[s];
        if (sp->node < 0 || sp->node >= g->n) {
            st = mg_diag_set(d, none, "plan: step %d names no node", s);
            break;
        }
        const mg_node *nd = &g->nodes[sp->node];
        /* inputs resident: each read place holds that value now */
        int nin = sp->kind == MG_STEP_COMPUTE ? nd->ninputs : sp->kind == MG_STEP_COPY ? 1 : 0;
        for (int k = 0; k < nin && !st; k++) {
            int v = sp->kind == MG_STEP_COMPUTE ? nd->in[k] : sp->node;
            const mg_node *vn = &g->nodes[v];
            const mg_place *pl = &sp->in[k];
            switch (pl->mem) {
            case MG_MEM_WS: {
                const mg_buffer *bf = pl->index >= 0 && pl->index < nb ? &p->bufs[pl->index] : NULL;
                if (!bf || bf->node != v)
                    st = mg_diag_set(d, nd->loc, "plan: step %d reads %%%d from a buffer that does not hold it", s, v);
                else if (writer[pl->index] < 0 || writer[pl->index] >= s)
                    st = mg_diag_set(d, nd->loc, "plan: step %d reads %%%d before it is computed", s, v);
                else if (bf->last < s)
                    st = mg_diag_set(d, nd->loc, "plan: step %d reads %%%d after it was freed (step %d)", s, v, bf->last);
                break;
            }
            case MG_MEM_INPUT:
                if (vn->op != MG_OP_INPUT || vn->index != pl->index)
                    st = mg_diag_set(d, nd->loc, "plan: step %d reads %%%d from input %d", s, v, pl->index);
                break;
            case MG_MEM_PARAMS:
                if (vn->op != MG_OP_PARAM || vn->index != pl->index || poff[vn->index] != pl->offset)
                    st = mg_diag_set(d, nd->loc, "plan: step %d reads %%%d from the wrong parameter", s, v);
                break;
            case MG_MEM_CONST:
                if (vn->op != MG_OP_CONST) st = mg_diag_set(d, nd->loc, "plan: step %d reads %%%d as a constant", s, v);
                break;
            case MG_MEM_GRADS:
                if (pl->index < 0 || pl->index >= g->nparams || grad_node[pl->index] != v)
                    st = mg_diag_set(d, nd->loc, "plan: step %d reads %%%d from a gradient not holding it", s, v);
                break;
            case MG_MEM_OUTPUT:
                if (pl->index < 0 || pl->index >= g->noutputs || out_node[pl->index] != v)
                    st = mg_diag_set(d, nd->loc, "plan: step %d reads %%%d from an output not holding it", s, v);
                break;
            default: st = mg_diag_set(d, nd->loc, "plan: step %d reads %%%d, which has no place", s, v);
            }
        }
        if (st) break;
        /* what is computed: backward ops exactly once, recomputations marked as such */
        if (sp->kind == MG_STEP_COMPUTE) {
            if (mg_ops[nd->op].ninputs == 0)
                st = mg_diag_set(d, nd->loc, "plan: step %d computes a leaf", s);
            else if (computed[sp->node] && sp->node >= g->nforward)
                st = mg_diag_set(d, nd->loc, "plan: backward op %%%d runs twice", sp->node);
            else if (sp->recompute != (computed[sp->node] > 0))
                st = mg_diag_set(d, nd->loc, "plan: step %d is %smarked as a recomputation", s, sp->recompute ? "" : "not ");
            computed[sp->node]++;
            flops += mg_node_flops(g, sp->node);
        }
        if (st) break;
        /* the output */
        const mg_place *o = &sp->out;
        int want = sp->kind == MG_STEP_ZERO ? -1 : sp->node;
        if (o->mem == MG_MEM_WS) {
            if (sp->kind != MG_STEP_COMPUTE || o->index < 0 || o->index >= nb || p->bufs[o->index].first != s)
                st = mg_diag_set(d, nd->loc, "plan: step %d writes a buffer whose lifetime starts elsewhere", s);
            else if (p->bufs[o->index].node != sp->node)
                st = mg_diag_set(d, nd->loc, "plan: step %d writes %%%d into a buffer meant for %%%d", s, sp->node,
                                 p->bufs[o->index].node);
            else if (writer[o->index] >= 0)
                st = mg_diag_set(d, nd->loc, "plan: buffer %d written twice (steps %d and %d)", o->index, writer[o->index], s);
            else writer[o->index] = s;
        } else if (o->mem == MG_MEM_GRADS) {
            if (o->index < 0 || o->index >= g->nparams || poff[o->index] != o->offset ||
                (p->kind == MG_PLAN_TRAIN ? g->param_grads[o->index] : -2) != want)
                st = mg_diag_set(d, nd->loc, "plan: step %d writes the wrong value into gradient %d", s, o->index);
            else if (grad_node[o->index] != -1)
                st = mg_diag_set(d, nd->loc, "plan: gradient of parameter %d written twice", o->index);
            else grad_node[o->index] = sp->kind == MG_STEP_ZERO ? -3 : sp->node;
        } else if (o->mem == MG_MEM_OUTPUT) {
            if (o->index < 0 || o->index >= g->noutputs || g->outputs[o->index].node != want)
                st = mg_diag_set(d, nd->loc, "plan: step %d writes the wrong value into output %d", s, o->index);
            else if (out_node[o->index] != -1)
                st = mg_diag_set(d, nd->loc, "plan: output %d written twice", o->index);
            else out_node[o->index] = sp->node;
        } else {
            st = mg_diag_set(d, nd->loc, "plan: step %d writes into read-only memory", s);
        }
        if (!st && sp->scratch >= 0 &&
            (sp->scratch >= nb || p->bufs[sp->scratch].first != s || p->bufs[sp->scratch].last != s))
            st = mg_diag_set(d, nd->loc, "plan: scratch of step %d is not live exactly at that step", s);
        if (!st && sp->scratch >= 0) writer[sp->scratch] = s;
    }
    for (int b = 0; b < nb && !st; b++)
        if (writer[b] < 0) st = mg_diag_set(d, none, "plan: buffer %d is never written", b);
    if (!st && p->kind == MG_PLAN_TRAIN) {
        for (int i = 0; i < g->nparams && !st; i++)
            if (grad_node[i] == -1)
                st = mg_diag_set(d, g->nodes[g->params[i]].loc, "plan: gradient of '%s' is never written",
                                 g->nodes[g->params[i]].name);
        const mg_place *r = &p->result_at;
        const mg_node *ln = &g->nodes[g->loss];
        int leaf = mg_ops[ln->op].ninputs == 0;
        int ok = p->result == g->loss &&
                 (r->mem == MG_MEM_WS ? r->index >= 0 && r->index < nb && p->bufs[r->index].node == g->loss &&
                                            p->bufs[r->index].last == p->nsteps - 1
                  : r->mem == MG_MEM_INPUT  ? ln->op == MG_OP_INPUT && ln->index == r->index
                  : r->mem == MG_MEM_PARAMS ? ln->op == MG_OP_PARAM && ln->index == r->index
                  : r->mem == MG_MEM_CONST  ? ln->op == MG_OP_CONST
                                            : 0);
        if (!st && (!ok || (!leaf && !computed[g->loss])))
            st = mg_diag_set(d, none, "plan: the loss is not resident when the step returns it");
    }
    if (!st && p->kind == MG_PLAN_FORWARD)
        for (int i = 0; i < g->noutputs && !st; i++)
            if (out_node[i] == -1) st = mg_diag_set(d, none, "plan: output '%s' is never written", g->outputs[i].name);
    if (!st && (flops > p->flops_executed * (1 + 1e-12) + 0.5 || flops < p->flops_executed * (1 - 1e-12) - 0.5))
        st = mg_diag_set(d, none, "plan: the steps execute %.0f FLOPs, the plan claims %.0f", flops, p->flops_executed);

    /* overlap and peak: sweep lifetimes, comparing each starting buffer with the live ones */
    if (!st) {
        int ne = 0, na = 0;
        int64_t live = 0, peak = 0;
        for (int b = 0; b < nb; b++) {
            evs[ne++] = (ev){p->bufs[b].first, 1, b};
            evs[ne++] = (ev){p->bufs[b].last + 1, 0, b};
        }
        qsort(evs, (size_t)ne, sizeof *evs, cmp_ev);
        for (int e = 0; e < ne && !st; e++) {
            const mg_buffer *bf = &p->bufs[evs[e].buf];
            if (evs[e].kind == 0) {
                for (int k = 0; k < na; k++)
                    if (active[k] == evs[e].buf) {
                        active[k] = active[--na];
                        break;
                    }
                live -= bf->bytes;
                continue;
            }
            for (int k = 0; k < na && !st; k++) {
                const mg_buffer *o = &p->bufs[active[k]];
                if (bf->offset < o->offset + o->bytes && o->offset < bf->offset + bf->bytes)
                    st = mg_diag_set(d, none, "plan: buffers %d and %d overlap in the arena while both live",
                                     evs[e].buf, active[k]);
            }
            active[na++] = evs[e].buf;
            live += bf->bytes;
            if (live > peak) peak = live;
        }
        if (!st && peak != p->peak_live_bytes)
            st = mg_diag_set(d, none, "plan: peak live bytes are %lld, the plan claims %lld", (long long)peak,
                             (long long)p->peak_live_bytes);
    }
    free(grad_node);
    free(out_node);
    free(poff);
    free(computed);
    free(writer);
    free(evs);
    free(active);
    return st;
}
