/* plan_verify.c — the independent plan checker. It replays a plan step by step and checks,
 * without trusting how the plan was made: every input of a step is resident (computed
 * earlier and not yet freed, or caller-owned and already written), every buffer is written by
 * the step that starts it, no two buffers live at the same step overlap in the arena, every
 * buffer fits in the workspace, each parameter gradient is written exactly once, and the
 * peak live bytes are what the plan claims. */
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
    char *written_grad = calloc((size_t)g->nparams + 1, 1);
    char *written_out = calloc((size_t)g->noutputs + 1, 1);
    int *writer = malloc(((size_t)nb + 1) * sizeof *writer);
    ev *evs = malloc(((size_t)nb * 2 + 1) * sizeof *evs);
    int *active = malloc(((size_t)nb + 1) * sizeof *active);
    if (!written_grad || !written_out || !writer || !evs || !active) abort();
    for (int b = 0; b < nb; b++) writer[b] = -1;

    for (int b = 0; b < nb && !st; b++) {
        const mg_buffer *bf = &p->bufs[b];
        if (bf->offset < 0 || bf->bytes < 0 || bf->offset + bf->bytes > p->workspace_bytes)
            st = mg_diag_set(d, none, "plan: buffer %d [%lld, +%lld) lies outside the %lld-byte workspace",
                             b, (long long)bf->offset, (long long)bf->bytes, (long long)p->workspace_bytes);
        else if (bf->first < 0 || bf->last < bf->first || bf->last >= p->nsteps)
            st = mg_diag_set(d, none, "plan: buffer %d has an invalid lifetime [%d, %d]", b, bf->first, bf->last);
        else if (bf->node >= 0 && (size_t)bf->bytes < mg_node_bytes(g, bf->node))
            st = mg_diag_set(d, none, "plan: buffer %d is smaller than its value %%%d", b, bf->node);
    }
    for (int s = 0; s < p->nsteps && !st; s++) {
        const mg_step *sp = &p->steps[s];
        const mg_node *nd = &g->nodes[sp->node];
        /* inputs resident */
        int nin = sp->kind == MG_STEP_COMPUTE ? nd->ninputs : sp->kind == MG_STEP_COPY ? 1 : 0;
        for (int k = 0; k < nin && !st; k++) {
            int v = sp->kind == MG_STEP_COMPUTE ? nd->in[k] : sp->node;
            const mg_place *pl = &p->place[v];
            if (pl->mem == MG_MEM_WS) {
                const mg_buffer *bf = &p->bufs[pl->index];
                if (writer[pl->index] < 0 || writer[pl->index] >= s)
                    st = mg_diag_set(d, nd->loc, "plan: step %d reads %%%d before it is computed", s, v);
                else if (bf->last < s)
                    st = mg_diag_set(d, nd->loc, "plan: step %d reads %%%d after it was freed (step %d)", s, v, bf->last);
                else if (bf->node != v)
                    st = mg_diag_set(d, nd->loc, "plan: step %d reads %%%d from a buffer holding %%%d", s, v, bf->node);
            } else if (pl->mem == MG_MEM_NONE) {
                st = mg_diag_set(d, nd->loc, "plan: step %d reads %%%d, which has no place", s, v);
            } else if (pl->mem == MG_MEM_GRADS && !written_grad[pl->index]) {
                st = mg_diag_set(d, nd->loc, "plan: step %d reads gradient %d before it is written", s, pl->index);
            } else if (pl->mem == MG_MEM_OUTPUT && !written_out[pl->index]) {
                st = mg_diag_set(d, nd->loc, "plan: step %d reads output %d before it is written", s, pl->index);
            }
        }
        if (st) break;
        /* the output */
        const mg_place *o = &sp->out;
        if (o->mem == MG_MEM_WS) {
            if (o->index < 0 || o->index >= nb || p->bufs[o->index].first != s)
                st = mg_diag_set(d, nd->loc, "plan: step %d writes a buffer whose lifetime starts elsewhere", s);
            else if (writer[o->index] >= 0)
                st = mg_diag_set(d, nd->loc, "plan: buffer %d written twice (steps %d and %d)", o->index, writer[o->index], s);
            else writer[o->index] = s;
        } else if (o->mem == MG_MEM_GRADS) {
            if (written_grad[o->index]++)
                st = mg_diag_set(d, nd->loc, "plan: gradient of parameter %d written twice", o->index);
        } else if (o->mem == MG_MEM_OUTPUT) {
            if (written_out[o->index]++)
                st = mg_diag_set(d, nd->loc, "plan: output %d written twice", o->index);
        } else {
            st = mg_diag_set(d, nd->loc, "plan: step %d writes into read-only memory", s);
        }
        if (!st && sp->kind == MG_STEP_COMPUTE && o->mem == MG_MEM_WS &&
            (p->place[sp->node].mem != MG_MEM_WS || p->place[sp->node].index != o->index))
            st = mg_diag_set(d, nd->loc, "plan: step %d writes %%%d somewhere other than its place", s, sp->node);
        if (!st && sp->scratch >= 0 && (p->bufs[sp->scratch].first != s || p->bufs[sp->scratch].last != s))
            st = mg_diag_set(d, nd->loc, "plan: scratch of step %d is not live exactly at that step", s);
        if (!st && sp->scratch >= 0) writer[sp->scratch] = s;
    }
    for (int b = 0; b < nb && !st; b++)
        if (writer[b] < 0) st = mg_diag_set(d, none, "plan: buffer %d is never written", b);
    if (!st && p->kind == MG_PLAN_TRAIN)
        for (int i = 0; i < g->nparams && !st; i++)
            if (written_grad[i] != 1)
                st = mg_diag_set(d, g->nodes[g->params[i]].loc, "plan: gradient of '%s' written %d times",
                                 g->nodes[g->params[i]].name, written_grad[i]);
    if (!st && p->kind == MG_PLAN_FORWARD)
        for (int i = 0; i < g->noutputs && !st; i++)
            if (written_out[i] != 1) st = mg_diag_set(d, none, "plan: output '%s' is not written once", g->outputs[i].name);

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
    free(written_grad);
    free(written_out);
    free(writer);
    free(evs);
    free(active);
    return st;
}
