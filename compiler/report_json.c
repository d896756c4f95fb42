/* report_json.c — the whole plan as JSON (schema: docs/plan-json.md), so an outside tool can
 * re-check it: every joint-graph node, both schedules step by step with arena offsets and the
 * frees that follow each step, the plan's figures and every tensor's decision. The figures come
 * from mg_report_figures (report_figures.c), which every other report reads too; nothing here
 * computes a figure of its own. */
#include "report.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct sbuf {
    char *s;
    size_t n, cap;
} sbuf;

static void put(sbuf *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
        va_end(ap);
        if (k >= 0 && (size_t)k < b->cap - b->n) {
            b->n += (size_t)k;
            return;
        }
        b->cap = b->cap * 2 + (size_t)(k > 0 ? k : 0) + 256;
        b->s = realloc(b->s, b->cap);
        if (!b->s) abort();
    }
}

void mg_cost_text(double v, char out[MG_COST_TEXT_MAX])
{
    snprintf(out, MG_COST_TEXT_MAX, "%.0f", v);
    for (int prec = 15; prec <= 17 && strtod(out, NULL) != v; prec++) snprintf(out, MG_COST_TEXT_MAX, "%.*g", prec, v);
}

/* A cost as a JSON number that reads back as the same double (a benchmark graph's cost_cpu 0.4
 * printed as 0 by "%.0f" summed into a flops_once of 1, so the nodes' costs no longer added up
 * to the plan's). */
static void put_num(sbuf *b, double v)
{
    char s[MG_COST_TEXT_MAX];
    mg_cost_text(v, s);
    put(b, "%s", s);
}

/* s as a JSON string: mg_json_escape (report_escape.c), as every report writes names */
static void put_str(sbuf *b, const char *s)
{
    size_t n = mg_json_escape(NULL, 0, s);
    char *e = malloc(n + 1);
    if (!e) abort();
    mg_json_escape(e, n + 1, s);
    put(b, "%s", e);
    free(e);
}

static const char *mem_name(mg_mem m)
{
    static const char *const names[] = {"none", "workspace", "params", "grads", "input", "output", "const"};
    return names[m];
}

static void put_place(sbuf *b, const mg_plan *p, const mg_place *pl)
{
    put(b, "{\"mem\": \"%s\"", mem_name(pl->mem));
    if (pl->mem == MG_MEM_WS)
        put(b, ", \"buffer\": %d, \"offset\": %lld", pl->index, (long long)p->bufs[pl->index].offset);
    else if (pl->mem == MG_MEM_PARAMS || pl->mem == MG_MEM_GRADS)
        put(b, ", \"index\": %d, \"offset\": %lld", pl->index, (long long)pl->offset);
    else if (pl->mem == MG_MEM_INPUT)
        put(b, ", \"index\": %d", pl->index);
    else if (pl->mem == MG_MEM_OUTPUT)
        put(b, ", \"index\": %d, \"offset\": %lld", pl->index, (long long)pl->offset);
    put(b, "}");
}

/* The frees after each step: buffers whose lifetime ends there, bucketed by step. */
static void put_schedule(sbuf *b, const mg_plan *p)
{
    const mg_graph *g = p->g;
    int *start = calloc((size_t)p->nsteps + 2, sizeof *start), *ids = malloc(((size_t)p->nbufs + 1) * sizeof *ids);
    if (!start || !ids) abort();
    for (int i = 0; i < p->nbufs; i++) start[p->bufs[i].last + 1]++;
    for (int s = 0; s < p->nsteps; s++) start[s + 1] += start[s];
    int *fill = calloc((size_t)p->nsteps + 1, sizeof *fill);
    if (!fill) abort();
    for (int i = 0; i < p->nbufs; i++) ids[start[p->bufs[i].last] + fill[p->bufs[i].last]++] = i;
    free(fill);
    put(b, "{\"workspace_bytes\": %lld, \"peak_live_bytes\": %lld, \"flops_once\": ", (long long)p->workspace_bytes,
        (long long)p->peak_live_bytes);
    put_num(b, p->flops_once);
    put(b, ", \"flops_executed\": ");
    put_num(b, p->flops_executed);
    put(b, ",\n");
    put(b, "   \"buffers\": [");
    for (int i = 0; i < p->nbufs; i++) {
        const mg_buffer *bf = &p->bufs[i];
        put(b, "%s\n    {\"id\": %d, \"node\": %d, \"bytes\": %lld, \"offset\": %lld, \"first\": %d, \"last\": %d}",
            i ? "," : "", i, bf->node, (long long)bf->bytes, (long long)bf->offset, bf->first, bf->last);
    }
    put(b, "],\n   \"steps\": [");
    for (int s = 0; s < p->nsteps; s++) {
        const mg_step *st = &p->steps[s];
        const char *kind = st->kind == MG_STEP_ZERO   ? "zero"
                           : st->kind == MG_STEP_COPY ? "copy"
                           : st->recompute            ? "recompute"
                                                      : "compute";
        put(b, "%s\n    {\"step\": %d, \"kind\": \"%s\", \"node\": %d, \"out\": ", s ? "," : "", s, kind, st->node);
        put_place(b, p, &st->out);
        if (g) { /* imported graphs' nodes may have more inputs than a step records */
            int nin = st->kind == MG_STEP_COMPUTE ? g->nodes[st->node].ninputs : st->kind == MG_STEP_COPY ? 1 : 0;
            put(b, ", \"in\": [");
            for (int k = 0; k < nin; k++) {
                if (k) put(b, ", ");
                put_place(b, p, &st->in[k]);
            }
            put(b, "]");
        }
        if (st->scratch >= 0)
            put(b, ", \"scratch\": {\"buffer\": %d, \"offset\": %lld, \"bytes\": %lld, \"cap\": %lld}", st->scratch,
                (long long)p->bufs[st->scratch].offset, (long long)p->bufs[st->scratch].bytes,
                (long long)(g ? mg_step_scratch_cap(g, st) : 0));
        put(b, ", \"frees\": [");
        for (int k = start[s]; k < start[s + 1]; k++) put(b, "%s%d", k > start[s] ? ", " : "", ids[k]);
        put(b, "]}");
    }
    put(b, "]}");
    free(start);
    free(ids);
}

/* The decision and live ranges of every value the training step computes (the figures' rows). */
static void put_tensors(sbuf *b, const mg_report_figures *f)
{
    const mg_plan *t = f->p->train;
    put(b, "  \"tensors\": [");
    for (int r = 0; r < f->nrows; r++) {
        const mg_tensor_row *row = &f->rows[r];
        put(b, "%s\n    {\"node\": %d, \"decision\": \"%s\", \"computes\": %d, \"first_step\": %d, \"ranges\": [",
            r ? "," : "", row->node, mg_decision_names[row->decision], row->computes, row->first_step);
        for (int k = 0; k < row->nbufs; k++) {
            const mg_buffer *bf = &t->bufs[row->bufs[k]];
            put(b, "%s{\"buffer\": %d, \"first\": %d, \"last\": %d, \"offset\": %lld}", k ? ", " : "", row->bufs[k],
                bf->first, bf->last, (long long)bf->offset);
        }
        put(b, "]}");
    }
    put(b, "],\n");
}

char *mg_plan_json(const mg_report_figures *f)
{
    sbuf b = {0};
    const mg_graph *g = f->g;
    const mg_planned *pl = f->p;
    put(&b, "{\n  \"format\": \"memgrad-plan\", \"version\": 1,\n  \"model\": ");
    put_str(&b, g->model_name);
    put(&b, ", \"model_hash\": \"0x%016llx\",\n", (unsigned long long)f->model_hash);
    put(&b, "  \"solver\": \"%s\", \"optimal\": %s, \"solve_seconds\": %.6f, \"from_cache\": %s,\n", f->solver,
        f->optimal == 1 ? "true" : f->optimal == 0 ? "false" : "\"unknown\"", f->solve_seconds,
        f->from_cache ? "true" : "false");
    if (f->budget_bytes == INT64_MAX) put(&b, "  \"budget_bytes\": null,");
    else put(&b, "  \"budget_bytes\": %lld,", (long long)f->budget_bytes);
    put(&b, " \"workspace_bytes\": %lld, \"peak_live_bytes\": %lld, \"allocator_waste\": %.17g,\n",
        (long long)f->workspace_bytes, (long long)f->peak_live_bytes, f->allocator_waste);
    put(&b, "  \"store_all_workspace_bytes\": %lld, ", (long long)f->store_all_bytes);
    if (f->min_feasible_bytes < 0) put(&b, "\"min_feasible_bytes\": null,\n");
    else put(&b, "\"min_feasible_bytes\": %lld,\n", (long long)f->min_feasible_bytes);
    put(&b, "  \"micro_batches\": %d, \"micro_batches_not_tried\": %d,\n", f->p->micro_batches > 1 ? f->p->micro_batches : 1,
        f->p->parts_not_tried);
    put(&b, "  \"param_bytes\": %lld, \"grad_bytes\": %lld, \"input_bytes\": %lld,\n", (long long)f->param_bytes,
        (long long)f->grad_bytes, (long long)f->input_bytes);
    put(&b, "  \"flops_once\": %.0f, \"flops_executed\": %.0f, \"recompute_overhead\": %.17g,\n", f->flops_once,
        f->flops_executed, f->recompute_overhead);
    put(&b, "  \"flops_lower_bound\": %.0f,\n", f->flops_lower_bound);
    put(&b, "  \"recompute_steps\": %d, \"recomputed_tensors\": %d,\n", f->recompute_steps, f->recomputed_tensors);
    put(&b, "  \"fused_chains\": %d, \"fused_steps\": %d, \"fused_chains_forward\": %d, \"fused_steps_forward\": %d,\n",
        f->fused_chains, f->fused_steps, f->fused_chains_fwd, f->fused_steps_fwd);
    put_tensors(&b, f);
    put(&b, "  \"nodes\": [");
    for (int i = 0; i < g->n; i++) {
        const mg_node *n = &g->nodes[i];
        put(&b, "%s\n    {\"id\": %d, \"name\": ", i ? "," : "", i);
        if (n->name) put_str(&b, n->name);
        else put(&b, "null");
        put(&b, ", \"line\": %d, \"op\": \"%s\", \"inputs\": [", n->loc.line, mg_ops[n->op].name);
        for (int k = 0; k < n->ninputs; k++) put(&b, "%s%d", k ? ", " : "", n->in[k]);
        put(&b, "], \"dtype\": \"%s\", \"shape\": [", mg_dtype_name(n->type.dtype));
        for (int k = 0; k < n->type.shape.rank; k++) put(&b, "%s%lld", k ? ", " : "", (long long)n->type.shape.dim[k]);
        put(&b, "], \"bytes\": %zu, \"flops\": %.0f, \"phase\": \"%s\"}", mg_node_bytes(g, i), mg_node_flops(g, i),
            i < g->nforward ? "forward" : "backward");
    }
    put(&b, "],\n  \"train\": ");
    put_schedule(&b, pl->train);
    put(&b, ",\n  \"forward\": ");
    put_schedule(&b, pl->forward);
    put(&b, "\n}\n");
    return b.s;
}

char *mg_problem_plan_json(const mg_problem *pr, const mg_solution *sol, int64_t budget, double seconds,
                           int from_cache, const char *solver)
{
    sbuf b = {0};
    const mg_plan *t = sol->plan;
    double fo = t->flops_once, fe = t->flops_executed;
    put(&b, "{\n  \"format\": \"memgrad-plan\", \"version\": 1, \"graph\": true,\n");
    put(&b, "  \"solver\": \"%s\", \"optimal\": %s, \"solve_seconds\": %.6f, \"from_cache\": %s,\n", solver,
        sol->optimal == 1 ? "true" : sol->optimal == 0 ? "false" : "\"unknown\"", seconds,
        from_cache ? "true" : "false");
    if (budget == INT64_MAX) put(&b, "  \"budget_bytes\": null,");
    else put(&b, "  \"budget_bytes\": %lld,", (long long)budget);
    put(&b, " \"workspace_bytes\": %lld, \"peak_live_bytes\": %lld,\n", (long long)t->workspace_bytes,
        (long long)t->peak_live_bytes);
    put(&b, "  \"store_all_workspace_bytes\": %lld, ", (long long)sol->store_all_bytes);
    if (sol->min_feasible_bytes < 0) put(&b, "\"min_feasible_bytes\": null,\n");
    else put(&b, "\"min_feasible_bytes\": %lld,\n", (long long)sol->min_feasible_bytes);
    put(&b, "  \"flops_once\": ");
    put_num(&b, fo);
    put(&b, ", \"flops_executed\": ");
    put_num(&b, fe);
    put(&b, ", \"recompute_overhead\": %.17g,\n  \"flops_lower_bound\": ", mg_recompute_overhead(fo, fe));
    put_num(&b, sol->lower_bound >= 0 ? sol->lower_bound : fo);
    put(&b, ",\n");
    put(&b, "  \"nodes\": [");
    for (int i = 0; i < pr->n; i++) {
        put(&b, "%s\n    {\"id\": %d, \"name\": ", i ? "," : "", i);
        put_str(&b, pr->names ? pr->names[i] : "");
        put(&b, ", \"inputs\": [");
        for (int k = pr->in_start[i]; k < pr->in_start[i + 1]; k++) put(&b, "%s%d", k > pr->in_start[i] ? ", " : "", pr->in[k]);
        put(&b, "], \"bytes\": %lld, \"flops\": ", (long long)pr->bytes[i]);
        put_num(&b, pr->cost[i]);
        put(&b, ", \"phase\": \"%s\"}", i < pr->nfwd ? "forward" : "backward");
    }
    put(&b, "],\n  \"train\": ");
    put_schedule(&b, t);
    put(&b, "\n}\n");
    return b.s;
}
