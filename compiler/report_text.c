/* report_text.c — the plan as a report for a terminal: a summary of the figures, one row per
 * tensor of the training step in schedule order (its .mg name and line, op, type, bytes, what
 * the plan decided, its live ranges and arena offsets), then a strip of the bytes live over
 * time that fits the terminal. Everything shown comes from mg_report_figures; sizes are human
 * units (exact byte counts in parentheses in the summary) unless exact_bytes asks for numbers. */
#include "report.h"
#include "microbatch.h"

#include <stdlib.h>
#include <string.h>

static const char *sz(int64_t v, int exact, char *buf, int len)
{
    if (exact) snprintf(buf, (size_t)len, "%lld", (long long)v);
    else mg_human_bytes(v, buf, len);
    return buf;
}

/* "5.1 MiB (5316736 bytes)", or "5316736 bytes" with exact numbers. */
static void figure(FILE *out, const char *label, int64_t v, int exact, const char *tail)
{
    char h[32];
    if (exact) fprintf(out, "  %-19s %lld %s%s\n", label, (long long)v, mg_bytes_word(v), tail);
    else
        fprintf(out, "  %-19s %s (%lld %s)%s\n", label, mg_human_bytes(v, h, sizeof h), (long long)v, mg_bytes_word(v),
                tail);
}

static const char *flops_str(double v, int exact, char *buf, size_t len)
{
    static const char *const unit[] = {"", "k", "M", "G", "T", "P"};
    int i = 0;
    if (exact) {
        snprintf(buf, len, "%.0f", v);
        return buf;
    }
    while (v >= 1000 && i < 5) v /= 1000, i++;
    if (i == 0) snprintf(buf, len, "%.0f FLOP", v); /* whole operations: "288 FLOP", not "288.00 FLOP" */
    else snprintf(buf, len, "%.2f %sFLOP", v, unit[i]);
    return buf;
}

static void summary(FILE *out, const mg_report_figures *f, int exact)
{
    const mg_planned *p = f->p;
    char tail[400], a[48], b[48], opt[48];
    /* a plan in micro-batches is proven optimal for the graph in that many parts, not for every
     * part count (docs/planner.md, what "optimal" means) */
    if (f->optimal == 1 && p && p->micro_batches > 1)
        snprintf(opt, sizeof opt, "optimal in %d micro-batches", p->micro_batches);
    else
        snprintf(opt, sizeof opt, "%s",
                 f->optimal == 1 ? "optimal" : f->optimal == 0 ? "not proven optimal" : "optimality unknown");
    fprintf(out, "model %s  hash 0x%016llx  solver %s (%s, %.3f s%s)\n", f->g->model_name,
            (unsigned long long)f->model_hash, f->solver, opt, f->solve_seconds,
            f->from_cache ? ", from the plan cache" : "");
    figure(out, "params", f->param_bytes, exact, "");
    figure(out, "grads", f->grad_bytes, exact, "");
    figure(out, "inputs", f->input_bytes, exact, "");
    if (f->budget_bytes != INT64_MAX) figure(out, "budget", f->budget_bytes, exact, "");
    tail[0] = 0;
    if (f->budget_bytes != INT64_MAX && f->budget_bytes > 0) {
        /* (two significant digits below 1%: mlp under 1 GiB read "0.0% of the budget") */
        double pct = 100.0 * (double)f->workspace_bytes / (double)f->budget_bytes;
        snprintf(tail, sizeof tail, pct > 0 && pct < 1 ? ", %.2g%% of the budget" : ", %.1f%% of the budget", pct);
    }
    figure(out, "workspace", f->workspace_bytes, exact, tail);
    /* (the whole batch's, what percentages refer to: a plan in parts may need more, as its slices
     * and concatenations take room of their own) */
    figure(out, "store-all", f->store_all_bytes, exact, p && p->micro_batches > 1 ? ", of the whole batch" : "");
    if (f->min_feasible_bytes >= 0)
        figure(out, "minimum feasible", f->min_feasible_bytes, exact,
               mg_report_min_note(f->workspace_bytes, f->min_feasible_bytes));
    snprintf(tail, sizeof tail, ", allocator waste %.2f%%", 100.0 * f->allocator_waste);
    figure(out, "peak live", f->peak_live_bytes, exact, tail);
    /* (the FLOPs line below is the training step's: a forward pass that recomputes says so here) */
    tail[0] = 0;
    if (p->forward->flops_executed > p->forward->flops_once)
        snprintf(tail, sizeof tail, ", recomputing: %s executed, %s once (+%.2f%%)",
                 flops_str(p->forward->flops_executed, exact, a, sizeof a), flops_str(p->forward->flops_once, exact, b, sizeof b),
                 100.0 * (p->forward->flops_executed - p->forward->flops_once) / p->forward->flops_once);
    figure(out, "forward workspace", p->forward->workspace_bytes, exact, tail);
    if (p->micro_batches > 1) { /* compiler/microbatch.c */
        const mg_node *x = mg_microbatch_batch_input(f->g); /* (inputs[0] may be a scalar) */
        long long part = x ? x->type.shape.dim[0] / p->micro_batches : 0;
        /* the training step's convolutions that run in smaller blocks: those the arena had no room
         * beside for larger ones (plan_scratch.c) */
        int capped = 0, small = 0;
        for (int s = 0; s < p->train->nsteps; s++) {
            const mg_step *st = &p->train->steps[s];
            int conv = st->kind == MG_STEP_COMPUTE && st->scratch >= 0 && f->g->nodes[st->node].op != MG_OP_MATMUL &&
                       f->g->nodes[st->node].op != MG_OP_MATMUL_ACC && mg_node_scratch_cap(f->g, st->node) > 0;
            capped += conv;
            small += conv && mg_step_scratch_cap(f->g, st) > 0;
        }
        char blocks[96] = "";
        if (capped)
            snprintf(blocks, sizeof blocks, ", convolutions in smaller blocks (less scratch) at %d of their %d steps",
                     small, capped);
        fprintf(out, "  %-19s %d: the per-sample layers run on %lld sample%s at a time%s\n", "micro-batches",
                p->micro_batches, part, mg_plural(part), blocks);
    }
    /* (the minimum and the plan above are the best of the part counts tried: say where that
     * stopped short, and how to go on) */
    if (p->parts_not_tried > 0 && p->parts_not_tried_ops > MG_PLAN_MAX_NODES)
        fprintf(out, "  %-19s not tried from %d parts up (%d parts: %d operations, more than the %d the planner "
                "takes)\n", "micro-batches", p->parts_not_tried, p->parts_not_tried, p->parts_not_tried_ops,
                MG_PLAN_MAX_NODES);
    else if (p->parts_not_tried > 0)
        fprintf(out, "  %-19s not tried from %d parts up (%d parts: %d operations, more than the %d the search "
                "plans by itself; --micro-batches %d or --max-split-ops %d plans them)\n", "micro-batches",
                p->parts_not_tried, p->parts_not_tried, p->parts_not_tried_ops, p->parts_max_nodes, p->parts_not_tried,
                p->parts_not_tried_ops);
    fprintf(out, "  %-19s %s once, %s executed, recompute overhead %.2f%%\n", "FLOPs",
            flops_str(f->flops_once, exact, a, sizeof a), flops_str(f->flops_executed, exact, b, sizeof b),
            100.0 * f->recompute_overhead);
    /* (a plan in parts: the bound, like "optimal", is the split graph's, for that many parts, not
     * for every part count; docs/plan-json.md) */
    tail[0] = 0;
    if (p->micro_batches > 1) snprintf(tail, sizeof tail, " for the batch in %d parts", p->micro_batches);
    if (f->flops_lower_bound > f->flops_once) {
        /* (two significant digits below 0.01%: the transformer at 89,553,883 bytes read "within
         * 0.00%" of a bound it is 0.0041% above, and not optimal) */
        double gap = 100.0 * (f->flops_executed - f->flops_lower_bound) / f->flops_lower_bound;
        fprintf(out, gap > 0 && gap < 0.01 ? "  %-19s %s proven%s; the plan is within %.2g%% of it\n"
                                           : "  %-19s %s proven%s; the plan is within %.2f%% of it\n",
                "FLOPs lower bound", flops_str(f->flops_lower_bound, exact, a, sizeof a), tail, gap);
    }
    fprintf(out, "  %-19s %d recomputation step%s of %d tensor%s\n", "recomputed", f->recompute_steps,
            mg_plural(f->recompute_steps), f->recomputed_tensors, mg_plural(f->recomputed_tensors));
    fprintf(out, "  %-19s %d elementwise chain%s of %d steps run as one loop each (forward: %d of %d)\n", "fused",
            f->fused_chains, mg_plural(f->fused_chains), f->fused_steps, f->fused_chains_fwd, f->fused_steps_fwd);
    fprintf(out, "  %-19s %d train (backward from step %d), %d forward\n", "steps", p->train->nsteps,
            f->first_backward_step, p->forward->nsteps);
}

/* A tensor's live ranges and offsets; past four ranges, the first two, the last and the count. */
static void row_ranges(const mg_plan *t, const mg_tensor_row *row, int exact, char *live, size_t nlive, char *offs,
                       size_t noffs)
{
    size_t ln = 0, on = 0;
    live[0] = offs[0] = '\0';
    for (int k = 0; k < row->nbufs; k++) {
        const mg_buffer *b = &t->bufs[row->bufs[k]];
        char o[32];
        int shown = row->nbufs <= 4 || k < 2 || k == row->nbufs - 1;
        if (!shown) {
            if (k == 2 && ln < nlive) ln += (size_t)snprintf(live + ln, nlive - ln, ",...");
            if (k == 2 && on < noffs) on += (size_t)snprintf(offs + on, noffs - on, ", ...");
            continue;
        }
        if (ln < nlive) ln += (size_t)snprintf(live + ln, nlive - ln, "%s%d-%d", k ? "," : "", b->first, b->last);
        if (on < noffs)
            on += (size_t)snprintf(offs + on, noffs - on, "%s%s", k ? ", " : "", sz(b->offset, exact, o, sizeof o));
    }
    if (row->nbufs > 4 && ln < nlive) snprintf(live + ln, nlive - ln, " (%d)", row->nbufs);
}

/* One row's text columns (the live ranges and offsets are row_ranges'). */
typedef struct {
    char namebuf[64], type[96], line[16], dec[32];
    const char *name, *op;
} row_text;

static void row_columns(const mg_graph *g, const mg_tensor_row *row, row_text *c)
{
    const mg_node *n = &g->nodes[row->node];
    char shape[80];
    c->name = mg_report_tensor_name(g, row->node, c->namebuf, sizeof c->namebuf);
    snprintf(c->type, sizeof c->type, "%s%s", mg_dtype_name(n->type.dtype), mg_shape_str(&n->type.shape, shape, sizeof shape));
    if (n->loc.line > 0) snprintf(c->line, sizeof c->line, "%d", n->loc.line);
    else snprintf(c->line, sizeof c->line, "-");
    if (row->decision == MG_DECIDE_RECOMPUTED) snprintf(c->dec, sizeof c->dec, "recomputed \xc3\x97%d", row->computes - 1);
    else snprintf(c->dec, sizeof c->dec, "%s", mg_decision_names[row->decision]);
    c->op = mg_ops[n->op].name;
}

/* Widens a column to fit s, up to cap columns. */
static void widen(int *w, const char *s, int cap)
{
    int n = (int)strlen(s);
    if (n > cap) n = cap;
    if (n > *w) *w = n;
}

/* Each column is as wide as its widest entry: a tensor recomputed twice has live ranges like
 * "13-52,1139-1304,1350-1351"; names, ops and types run long too (names and types widen the
 * column up to 40: one long name does not push every row right). "recomputed ×2" pads one
 * column short: × is two bytes of UTF-8 for one column. */
static void tensor_rows(FILE *out, const mg_report_figures *f, int exact)
{
    const mg_graph *g = f->g;
    const mg_plan *t = f->p->train;
    char live[256], offs[256], bytes[32];
    row_text c;
    int name_w = 16, op_w = 14, type_w = 22, live_w = 20;
    for (int r = 0; r < f->nrows; r++) {
        row_columns(g, &f->rows[r], &c);
        row_ranges(t, &f->rows[r], exact, live, sizeof live, offs, sizeof offs);
        widen(&name_w, c.name, 40);
        widen(&op_w, c.op, (int)sizeof live);
        widen(&type_w, c.type, 40);
        widen(&live_w, live, (int)sizeof live);
    }
    fprintf(out, "\ntensors of the training step, in schedule order (live: steps, inclusive)\n");
    fprintf(out, "%5s  %-*s %5s  %-*s %-*s %10s  %-15s %-*s %s\n", "step", name_w, "tensor", "line", op_w, "op", type_w,
            "type", "bytes", "decision", live_w, "live", "offset");
    for (int r = 0; r < f->nrows; r++) {
        const mg_tensor_row *row = &f->rows[r];
        row_columns(g, row, &c);
        fprintf(out, "%5d  %-*s %5s  %-*s %-*s %10s  %-*s ", row->first_step, name_w, c.name, c.line, op_w, c.op, type_w,
                c.type, sz((int64_t)mg_node_bytes(g, row->node), exact, bytes, sizeof bytes),
                15 + (row->decision == MG_DECIDE_RECOMPUTED), c.dec);
        if (!row->nbufs) {
            fprintf(out, "(caller memory)\n");
            continue;
        }
        row_ranges(t, row, exact, live, sizeof live, offs, sizeof offs);
        fprintf(out, "%-*s %s\n", live_w, live, offs);
    }
}

/* The bytes live over the training step, one column per group of steps, `width` wide; below it
 * F marks forward steps, B backward ones (a group: the phase of most of its steps, as the trace
 * gives each step's), and R a group with a recomputation. */
static void strip(FILE *out, const mg_report_figures *f, int width, int exact)
{
    enum { H = 8 };
    const mg_plan *t = f->p->train;
    int n = t->nsteps, label = 12;
    int cols = width - label - 1;
    if (cols < 10) cols = 10;
    if (cols > n) cols = n;
    if (cols <= 0) return;
    int64_t top = f->workspace_bytes;
    if (f->budget_bytes != INT64_MAX && f->budget_bytes > top) top = f->budget_bytes;
    if (top <= 0) top = 1;
    int64_t *v = calloc((size_t)cols, sizeof *v);
    char *mark = calloc((size_t)cols + 1, 1);
    if (!v || !mark) abort();
    for (int c = 0; c < cols; c++) {
        int s0 = (int)((int64_t)c * n / cols), s1 = (int)((int64_t)(c + 1) * n / cols);
        /* (each step's phase: a plan in parts runs later parts' forward steps after the first
         * backward step, and all of them read B) */
        int back = 0;
        for (int s = s0; s < s1; s++) back += f->step_backward[s];
        mark[c] = 2 * back > s1 - s0 || (2 * back == s1 - s0 && f->step_backward[s0]) ? 'B' : 'F';
        for (int s = s0; s < s1; s++) {
            if (f->live_bytes[s] > v[c]) v[c] = f->live_bytes[s];
            if (t->steps[s].kind == MG_STEP_COMPUTE && t->steps[s].recompute) mark[c] = 'R';
        }
    }
    int budget_row = -1;
    if (f->budget_bytes != INT64_MAX) budget_row = H - 1 - (int)((double)f->budget_bytes / (double)top * H - 0.5);
    char h[32];
    fprintf(out, "\nlive bytes over the %d step%s, up to %d a column\n", n, mg_plural(n), (n + cols - 1) / cols);
    for (int r = 0; r < H; r++) {
        double lo = (double)top * (H - 1 - r) / H, mid = lo + (double)top / H / 2;
        if (r == 0) fprintf(out, "%*s |", label - 2, sz(top, exact, h, sizeof h));
        else if (r == H - 1) fprintf(out, "%*s |", label - 2, "0");
        else fprintf(out, "%*s |", label - 2, "");
        for (int c = 0; c < cols; c++)
            fputc((double)v[c] >= mid ? '#' : r == budget_row ? '-' : ' ', out);
        fputc('\n', out);
    }
    fprintf(out, "%*s +", label - 2, "");
    for (int c = 0; c < cols; c++) fputc('-', out);
    fprintf(out, "\n%*s  %s\n", label - 2, "", mark);
    fprintf(out, "# live - budget F fwd B bwd R recompute\n");
    free(v);
    free(mark);
}

void mg_report_text(FILE *out, const mg_report_figures *f, int width, int exact_bytes)
{
    summary(out, f, exact_bytes);
    tensor_rows(out, f, exact_bytes);
    strip(out, f, width, exact_bytes);
}
