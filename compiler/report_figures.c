/* report_figures.c — every figure a report shows, computed once from the plan.
 *
 * The text report, the JSON, the SVG timeline, the trace and the DOT graph all read one
 * mg_report_figures, so no figure exists in two versions. Besides the summary (overhead,
 * allocator waste, byte totals) it derives, for the training step, one row per computed value
 * in schedule order with what the plan decided for it (kept for the backward pass, recomputed
 * k more times, freed before the backward pass, a backward value, or written to caller memory)
 * and its workspace buffers (one per live range), and the bytes live at every step.
 * Contract: reads the graph and the plans, never changes them; the figures point into both,
 * so they must outlive it. */
#include "report.h"
#include "backend.h"

#include <stdlib.h>
#include <string.h>

const char *const mg_decision_names[] = {"kept", "recomputed", "freed early", "backward", "caller"};

double mg_recompute_overhead(double once, double executed)
{
    return once > 0 ? (executed - once) / once : 0.0;
}

double mg_allocator_waste(int64_t workspace, int64_t peak)
{
    return peak > 0 ? (double)workspace / (double)peak - 1.0 : 0.0;
}

const char *mg_report_tensor_name(const mg_graph *g, int node, char *buf, size_t len)
{
    const mg_node *n = &g->nodes[node];
    if (n->name) return n->name; /* whole: copied into a 64-byte buf, a name past 63 bytes lost its
                                    end in the trace, the SVG and the DOT, so names that differ
                                    only there came out the same */
    snprintf(buf, len, "%s#%d", mg_ops[n->op].name, node);
    return buf;
}

const char *mg_report_min_note(int64_t workspace, int64_t min_feasible)
{
    /* (a plan at the minimum can need less: layered_n250's at 116,330 bytes places in 104,820,
     * and a budget of 104,820 is still refused: the solve there finds no plan) */
    return min_feasible >= 0 && workspace < min_feasible
               ? ": every budget from here up gets a plan (this plan needs less, yet a smaller budget may be "
                 "refused: the schedulers are not monotone in their cap)"
               : "";
}

mg_status mg_report_figures_make(const mg_graph *g, const mg_planned *p, const mg_plan_report_info *info,
                                 mg_report_figures *f, mg_diag *d)
{
    memset(f, 0, sizeof *f);
    if (!g || !p->train || !p->forward) return mg_diag_set(d, (mg_loc){0}, "report: no plan to report on");
    const mg_plan *t = p->train;
    f->g = g;
    f->p = p;
    f->solver = info->solver;
    f->model_hash = info->model_hash;
    f->from_cache = info->from_cache;
    f->optimal = p->optimal;
    f->solve_seconds = p->solve_seconds;
    f->budget_bytes = p->budget_bytes;
    f->workspace_bytes = p->workspace_bytes;
    f->peak_live_bytes = t->peak_live_bytes > p->forward->peak_live_bytes ? t->peak_live_bytes : p->forward->peak_live_bytes;
    f->store_all_bytes = p->store_all_bytes;
    f->min_feasible_bytes = p->min_feasible_bytes;
    f->param_bytes = f->grad_bytes = mg_param_layout(g, NULL);
    for (int i = 0; i < g->ninputs; i++) f->input_bytes += (int64_t)mg_node_bytes(g, g->inputs[i]);
    f->allocator_waste = mg_allocator_waste(f->workspace_bytes, f->peak_live_bytes);
    f->flops_once = t->flops_once;
    f->flops_executed = t->flops_executed;
    f->recompute_overhead = mg_recompute_overhead(t->flops_once, t->flops_executed);
    f->flops_lower_bound = p->flops_lower_bound >= 0 ? p->flops_lower_bound : t->flops_once;

    /* rows: one per value a compute step writes, in the order of the first such step */
    f->row_of_node = malloc((size_t)g->n * sizeof *f->row_of_node);
    f->rows = mg_xcalloc((size_t)g->n, sizeof *f->rows);
    if (!f->row_of_node) abort();
    for (int i = 0; i < g->n; i++) f->row_of_node[i] = -1;
    f->first_backward_step = t->nsteps;
    f->step_backward = mg_xcalloc((size_t)t->nsteps + 1, 1);
    for (int s = 0; s < t->nsteps; s++)
        f->step_backward[s] = t->steps[s].node >= g->nforward || t->steps[s].kind == MG_STEP_ZERO;
    f->fused_chains = mg_fuse_count(t, g, &f->fused_steps);
    f->fused_chains_fwd = mg_fuse_count(f->p->forward, g, &f->fused_steps_fwd);
    /* first pass: how many workspace buffers each value gets, to size the rows exactly */
    int *nws = mg_xcalloc((size_t)g->n, sizeof *nws);
    for (int s = 0; s < t->nsteps; s++)
        if (t->steps[s].kind == MG_STEP_COMPUTE && t->steps[s].out.mem == MG_MEM_WS) nws[t->steps[s].node]++;
    for (int s = 0; s < t->nsteps; s++) {
        const mg_step *st = &t->steps[s];
        if (st->kind != MG_STEP_COMPUTE) continue;
        if (st->recompute) f->recompute_steps++;
        if (st->node >= g->nforward && s < f->first_backward_step) f->first_backward_step = s;
        int r = f->row_of_node[st->node];
        if (r < 0) {
            r = f->row_of_node[st->node] = f->nrows++;
            f->rows[r].node = st->node;
            f->rows[r].first_step = s;
            f->rows[r].bufs = mg_xcalloc((size_t)nws[st->node], sizeof(int));
        }
        mg_tensor_row *row = &f->rows[r];
        row->computes++;
        if (st->out.mem == MG_MEM_WS) row->bufs[row->nbufs++] = st->out.index;
    }
    free(nws);
    /* backward[s]: the steps of backward nodes before step s. A forward value is kept when its
     * buffer lives across one of them; not merely when it lives past the first: in a step in
     * parts whose parts each run their backward pass after their forward pass, a later part's
     * forward values come after it, and one freed two steps on was called kept (mlp at 43,904
     * bytes) */
    int *backward = mg_xcalloc((size_t)t->nsteps + 1, sizeof *backward);
    for (int s = 0; s < t->nsteps; s++)
        backward[s + 1] = backward[s] + (t->steps[s].kind == MG_STEP_COMPUTE && t->steps[s].node >= g->nforward);
    for (int r = 0; r < f->nrows; r++) {
        mg_tensor_row *row = &f->rows[r];
        int across = 0;
        for (int k = 0; k < row->nbufs; k++) {
            const mg_buffer *b = &t->bufs[row->bufs[k]];
            if (backward[b->last + 1] > backward[b->first + 1]) across = 1;
        }
        if (row->computes > 1) row->decision = MG_DECIDE_RECOMPUTED;
        else if (!row->nbufs) row->decision = MG_DECIDE_CALLER;
        else if (row->node >= g->nforward) row->decision = MG_DECIDE_BACKWARD;
        else if (across) row->decision = MG_DECIDE_KEPT;
        else row->decision = MG_DECIDE_FREED;
        if (row->decision == MG_DECIDE_RECOMPUTED) f->recomputed_tensors++;
    }
    free(backward);

    /* bytes live at every step, and the arena's high-water mark so far */
    f->live_bytes = mg_xcalloc((size_t)t->nsteps + 1, sizeof *f->live_bytes);
    f->high_water = mg_xcalloc((size_t)t->nsteps + 1, sizeof *f->high_water);
    for (int i = 0; i < t->nbufs; i++) {
        const mg_buffer *b = &t->bufs[i];
        f->live_bytes[b->first] += b->bytes;
        f->live_bytes[b->last + 1] -= b->bytes;
        if (b->offset + b->bytes > f->high_water[b->first]) f->high_water[b->first] = b->offset + b->bytes;
    }
    for (int s = 1; s < t->nsteps; s++) {
        f->live_bytes[s] += f->live_bytes[s - 1];
        if (f->high_water[s - 1] > f->high_water[s]) f->high_water[s] = f->high_water[s - 1];
    }
    return MG_OK;
}

void mg_report_figures_free(mg_report_figures *f)
{
    for (int r = 0; r < f->nrows; r++) free(f->rows[r].bufs);
    free(f->rows);
    free(f->row_of_node);
    free(f->live_bytes);
    free(f->high_water);
    free(f->step_backward);
    memset(f, 0, sizeof *f);
}
