/* plan_verify.c — the independent plan checker. It replays a plan step by step and checks,
 * without trusting how the plan was made: every input of a step is resident (computed
 * earlier and not yet freed, or caller-owned and already written), every buffer is written by
 * the step that starts it and holds that value, no two buffers live at the same step overlap in
 * the arena, every buffer fits in the workspace, each parameter gradient and output is written
 * exactly once, backward ops run once (only forward ops may be recomputed, and recomputations
 * are marked), and the workspace, the peak live bytes and the FLOPs executed and once are what
 * the plan claims. */
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

static int is_ws_value(const mg_problem *pr, int v) { return pr->target[v] && pr->home[v].mem == MG_MEM_NONE; }

/* Whether value v lives in a part of an output, as the problem says (problem.c: an operand of a
 * concatenation returned whole, computed in its place there), and pl is that place. */
static int in_output_part(const mg_problem *pr, const mg_place *pl, int v)
{
    const mg_graph *g = pr->g;
    const mg_place *h = &pr->home[v];
    if (h->mem != MG_MEM_OUTPUT || pl->mem != MG_MEM_OUTPUT || h->index != pl->index || h->offset != pl->offset ||
        h->index < 0 || h->index >= g->noutputs || g->outputs[h->index].node == v)
        return 0;
    return h->offset >= 0 && h->offset + (int64_t)mg_node_bytes(g, v) <= (int64_t)mg_node_bytes(g, g->outputs[h->index].node);
}

/* For model plans: the place a step reads a caller-memory value from is that value's. */
static mg_status check_caller_place(const mg_problem *pr, const int64_t *poff, const int *grad_node, const int *out_node,
                                    const mg_place *pl, int v, int s, mg_diag *d)
{
    const mg_graph *g = pr->g;
    const mg_node *vn = &g->nodes[v];
    mg_loc loc = vn->loc;
    switch (pl->mem) {
    case MG_MEM_INPUT:
        if (vn->op != MG_OP_INPUT || vn->index != pl->index)
            return mg_diag_set(d, loc, "plan: step %d reads %%%d from input %d", s, v, pl->index);
        return MG_OK;
    case MG_MEM_PARAMS:
        if (vn->op != MG_OP_PARAM || vn->index != pl->index || poff[vn->index] != pl->offset)
            return mg_diag_set(d, loc, "plan: step %d reads %%%d from the wrong parameter", s, v);
        return MG_OK;
    case MG_MEM_CONST:
        if (vn->op != MG_OP_CONST) return mg_diag_set(d, loc, "plan: step %d reads %%%d as a constant", s, v);
        return MG_OK;
    case MG_MEM_GRADS:
        if (pl->index < 0 || pl->index >= g->nparams || grad_node[pl->index] != v)
            return mg_diag_set(d, loc, "plan: step %d reads %%%d from a gradient not holding it", s, v);
        return MG_OK;
    case MG_MEM_OUTPUT:
        if (in_output_part(pr, pl, v)) return MG_OK;
        if (pl->index < 0 || pl->index >= g->noutputs || out_node[pl->index] != v || pl->offset != 0)
            return mg_diag_set(d, loc, "plan: step %d reads %%%d from an output not holding it", s, v);
        return MG_OK;
    default: return mg_diag_set(d, loc, "plan: step %d reads %%%d from the wrong place", s, v);
    }
}

mg_status mg_plan_verify(const mg_plan *p, const mg_problem *pr, mg_diag *d)
{
    const mg_graph *g = pr->g;
    mg_loc none = {0};
    mg_status st = MG_OK;
    int nb = p->nbufs, n = pr->n, np = g ? g->nparams : 0, no = g ? g->noutputs : 0;
    int *grad_node = malloc(((size_t)np + 1) * sizeof *grad_node);
    int *out_node = malloc(((size_t)no + 1) * sizeof *out_node);
    int64_t *poff = malloc(((size_t)np + 1) * sizeof *poff);
    int *computed = calloc((size_t)n + 1, sizeof *computed);
    int *cur_buf = malloc(((size_t)n + 1) * sizeof *cur_buf);
    int *writer = malloc(((size_t)nb + 1) * sizeof *writer);
    ev *evs = malloc(((size_t)nb * 2 + 1) * sizeof *evs);
    int *active = malloc(((size_t)nb + 1) * sizeof *active);
    if (!grad_node || !out_node || !poff || !computed || !cur_buf || !writer || !evs || !active) abort();
    for (int b = 0; b < nb; b++) writer[b] = -1;
    for (int v = 0; v < n; v++) cur_buf[v] = -1;
    for (int i = 0; i < np; i++) grad_node[i] = -1;
    for (int i = 0; i < no; i++) out_node[i] = -1;
    if (g) mg_param_layout(g, poff);
    double flops = 0;
    int64_t ws_end = 0;

    if (p->g != g) st = mg_diag_set(d, none, "plan: the plan and the problem are of different models");
    for (int b = 0; b < nb && !st; b++) {
        const mg_buffer *bf = &p->bufs[b];
        if (bf->offset < 0 || bf->bytes < 0 || bf->bytes > p->workspace_bytes ||
            bf->offset > p->workspace_bytes - bf->bytes) /* (no overflow on a cached plan made up) */
            st = mg_diag_set(d, none, "plan: buffer %d [%lld, +%lld) lies outside the %lld-byte workspace",
                             b, (long long)bf->offset, (long long)bf->bytes, (long long)p->workspace_bytes);
        else if (bf->first < 0 || bf->last < bf->first || bf->last >= p->nsteps)
            st = mg_diag_set(d, none, "plan: buffer %d has an invalid lifetime [%d, %d]", b, bf->first, bf->last);
        else if (bf->node >= n || (bf->node >= 0 && bf->bytes < pr->bytes[bf->node]) ||
                 (g && bf->node >= 0 && (size_t)bf->bytes < mg_node_bytes(g, bf->node)))
            st = mg_diag_set(d, none, "plan: buffer %d is smaller than its value %%%d", b, bf->node);
        else if (bf->offset + bf->bytes > ws_end)
            ws_end = bf->offset + bf->bytes;
    }
    if (!st && ws_end != p->workspace_bytes)
        st = mg_diag_set(d, none, "plan: buffers end at %lld bytes, the plan claims a %lld-byte workspace",
                         (long long)ws_end, (long long)p->workspace_bytes);
    for (int s = 0; s < p->nsteps && !st; s++) {
        const mg_step *sp = &p->steps[s];
        int v = sp->node;
        if (v < 0 || v >= n) {
            st = mg_diag_set(d, none, "plan: step %d names no node", s);
            break;
        }
        mg_loc loc = g ? g->nodes[v].loc : none;
        if (sp->kind == MG_STEP_COMPUTE && !pr->target[v]) {
            st = mg_diag_set(d, loc, "plan: step %d computes %%%d, which the function does not compute", s, v);
            break;
        }
        if (sp->kind != MG_STEP_COMPUTE && !g) {
            st = mg_diag_set(d, none, "plan: step %d copies or zeroes in a plan of an imported graph", s);
            break;
        }
        /* inputs resident: computed before and not freed since (or caller memory) */
        int a = pr->in_start[v];
        int nin = sp->kind == MG_STEP_COMPUTE ? pr->in_start[v + 1] - a : sp->kind == MG_STEP_COPY ? 1 : 0;
        for (int k = 0; k < nin && !st; k++) {
            int u = sp->kind == MG_STEP_COPY ? v : pr->in[a + k];
            const mg_place *pl = &sp->in[k < MG_MAX_INPUTS ? k : 0];
            int checked_place = k < MG_MAX_INPUTS;
            if (is_ws_value(pr, u)) {
                int b = cur_buf[u];
                if (b < 0)
                    st = mg_diag_set(d, loc, "plan: step %d reads %%%d before it is computed", s, u);
                else if (p->bufs[b].last < s)
                    st = mg_diag_set(d, loc, "plan: step %d reads %%%d after it was freed (step %d)", s, u,
                                     p->bufs[b].last);
                else if (checked_place && (pl->mem != MG_MEM_WS || pl->index != b))
                    st = mg_diag_set(d, loc, "plan: step %d reads %%%d from a buffer that does not hold it", s, u);
            } else if (pr->target[u] && !computed[u]) {
                st = mg_diag_set(d, loc, "plan: step %d reads %%%d before it is computed", s, u);
            } else if (g && checked_place) {
                st = check_caller_place(pr, poff, grad_node, out_node, pl, u, s, d);
            }
        }
        if (st) break;
        if (sp->kind == MG_STEP_COMPUTE) {
            /* what is computed: non-evictable values exactly once, recomputations marked */
            if (computed[v] && !pr->evictable[v])
                st = mg_diag_set(d, loc, "plan: %%%d is computed twice but may not be recomputed", v);
            else if (sp->recompute != (computed[v] > 0))
                st = mg_diag_set(d, loc, "plan: step %d is %smarked as a recomputation", s, sp->recompute ? "" : "not ");
            computed[v]++;
            flops += pr->cost[v];
            if (!st && (pr->scratch[v] > 0) != (sp->scratch >= 0))
                st = mg_diag_set(d, loc, "plan: step %d %s scratch", s, sp->scratch >= 0 ? "has unexpected" : "lacks its");
            if (!st && sp->scratch >= 0 &&
                (sp->scratch >= nb || p->bufs[sp->scratch].first != s || p->bufs[sp->scratch].last != s ||
                 p->bufs[sp->scratch].bytes < pr->scratch[v] || p->bufs[sp->scratch].node != -1))
                st = mg_diag_set(d, loc, "plan: scratch of step %d is not live exactly at that step", s);
            /* a step's own cap (plan_scratch.c): its kernel's blocks need what that cap gives */
            if (!st && sp->scratch_cap &&
                (!g || sp->scratch < 0 || sp->scratch_cap < MG_CAP_NONE ||
                 p->bufs[sp->scratch].bytes < mg_node_scratch_bytes_cap(g, v, mg_step_scratch_cap(g, sp))))
                st = mg_diag_set(d, loc, "plan: step %d's kernel needs more scratch than it has", s);
            if (!st && sp->scratch >= 0) writer[sp->scratch] = s;
        }
        if (st) break;
        /* the output */
        const mg_place *o = &sp->out;
        int want = sp->kind == MG_STEP_ZERO ? -1 : v;
        if (sp->kind == MG_STEP_COMPUTE && is_ws_value(pr, v)) {
            if (o->mem != MG_MEM_WS || o->index < 0 || o->index >= nb || p->bufs[o->index].first != s)
                st = mg_diag_set(d, loc, "plan: step %d writes a buffer whose lifetime starts elsewhere", s);
            else if (p->bufs[o->index].node != v)
                st = mg_diag_set(d, loc, "plan: step %d writes %%%d into a buffer meant for %%%d", s, v,
                                 p->bufs[o->index].node);
            else if (writer[o->index] >= 0)
                st = mg_diag_set(d, loc, "plan: buffer %d written twice (steps %d and %d)", o->index, writer[o->index], s);
            else {
                writer[o->index] = s;
                cur_buf[v] = o->index;
            }
        } else if (!g) {
            st = mg_diag_set(d, loc, "plan: step %d writes outside the workspace", s);
        } else if (o->mem == MG_MEM_GRADS) {
            /* the gradient, or a partial sum of it (micro-batches: each accumulating op adds to
             * the one before, last input, in place) */
            int gv = o->index >= 0 && o->index < np && p->kind == MG_PLAN_TRAIN ? g->param_grads[o->index] : -2;
            while (gv >= 0 && gv != want && mg_op_accumulates(g->nodes[gv].op))
                gv = g->nodes[gv].in[g->nodes[gv].ninputs - 1];
            int prev = want >= 0 && mg_op_accumulates(g->nodes[want].op) ? g->nodes[want].in[g->nodes[want].ninputs - 1] : -4;
            if (o->index < 0 || o->index >= np || poff[o->index] != o->offset || gv != want)
                st = mg_diag_set(d, loc, "plan: step %d writes the wrong value into gradient %d", s, o->index);
            else if (grad_node[o->index] != -1 && grad_node[o->index] != prev)
                st = mg_diag_set(d, loc, "plan: gradient of parameter %d written twice", o->index);
            else grad_node[o->index] = sp->kind == MG_STEP_ZERO ? -3 : v;
        } else if (o->mem == MG_MEM_OUTPUT && in_output_part(pr, o, want)) {
            /* (a part of the output, which its concatenation then leaves in place) */
        } else if (o->mem == MG_MEM_OUTPUT) {
            if (o->index < 0 || o->index >= no || g->outputs[o->index].node != want || o->offset != 0)
                st = mg_diag_set(d, loc, "plan: step %d writes the wrong value into output %d", s, o->index);
            else if (out_node[o->index] != -1)
                st = mg_diag_set(d, loc, "plan: output %d written twice", o->index);
            else out_node[o->index] = v;
        } else {
            st = mg_diag_set(d, loc, "plan: step %d writes into read-only memory", s);
        }
    }
    for (int b = 0; b < nb && !st; b++)
        if (writer[b] < 0) st = mg_diag_set(d, none, "plan: buffer %d is never written", b);
    for (int v = 0; v < n && !st; v++)
        if (pr->target[v] && !computed[v])
            st = mg_diag_set(d, g ? g->nodes[v].loc : none, "plan: %%%d is never computed", v);
    if (!st && g && p->kind == MG_PLAN_TRAIN) {
        for (int i = 0; i < np && !st; i++)
            if (grad_node[i] == -1)
                st = mg_diag_set(d, g->nodes[g->params[i]].loc, "plan: gradient of '%s' is never written",
                                 g->nodes[g->params[i]].name);
            else if (grad_node[i] >= 0 && grad_node[i] != g->param_grads[i])
                st = mg_diag_set(d, g->nodes[g->params[i]].loc, "plan: gradient of '%s' ends holding a partial sum",
                                 g->nodes[g->params[i]].name);
        const mg_place *r = &p->result_at;
        const mg_node *ln = &g->nodes[g->loss];
        int ok = p->result == g->loss &&
                 (r->mem == MG_MEM_WS ? r->index >= 0 && r->index < nb && p->bufs[r->index].node == g->loss &&
                                            p->bufs[r->index].last == p->nsteps - 1
                  : r->mem == MG_MEM_INPUT  ? ln->op == MG_OP_INPUT && ln->index == r->index
                  : r->mem == MG_MEM_PARAMS ? ln->op == MG_OP_PARAM && ln->index == r->index
                  : r->mem == MG_MEM_CONST  ? ln->op == MG_OP_CONST
                                            : 0);
        if (!st && !ok) st = mg_diag_set(d, none, "plan: the loss is not resident when the step returns it");
    }
    if (!st && g && p->kind == MG_PLAN_FORWARD)
        for (int i = 0; i < no && !st; i++)
            if (out_node[i] == -1) st = mg_diag_set(d, none, "plan: output '%s' is never written", g->outputs[i].name);
    if (!st && (flops > p->flops_executed * (1 + 1e-12) + 0.5 || flops < p->flops_executed * (1 - 1e-12) - 0.5))
        st = mg_diag_set(d, none, "plan: the steps execute %.0f FLOPs, the plan claims %.0f", flops, p->flops_executed);
    double once = 0; /* (the overhead reported is executed over this) */
    for (int v = 0; v < n; v++)
        if (pr->target[v]) once += pr->cost[v];
    if (!st && (once > p->flops_once * (1 + 1e-12) + 0.5 || once < p->flops_once * (1 - 1e-12) - 0.5))
        st = mg_diag_set(d, none, "plan: every op once is %.0f FLOPs, the plan claims %.0f", once, p->flops_once);

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
    free(cur_buf);
    free(writer);
    free(evs);
    free(active);
    return st;
}
