/* problem.c — turns one generated function of a model into the planning problem the scheduler
 * solves: which ops it must run, what each value costs in bytes and FLOPs, what may be
 * recomputed (forward values only: every backward op runs exactly once), and which values the
 * caller's memory holds. Parameter gradients are written straight into the grads blob and
 * forward outputs straight into the caller's output buffers, with an explicit copy (or zero
 * fill) after the last op where that is not possible. A problem's hash (what the solvers read of
 * it) keys the plan cache's entries of imported graphs, which have no model to hash. */
#include "plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

static int is_leaf(mg_op op) { return op == MG_OP_INPUT || op == MG_OP_PARAM || op == MG_OP_CONST; }

mg_problem *mg_problem_alloc(int n, int nedges)
{
    mg_problem *p = mg_xcalloc(1, sizeof *p);
    p->n = n;
    p->in_start = mg_xcalloc((size_t)n + 1, sizeof *p->in_start);
    p->in = mg_xcalloc((size_t)nedges + 1, sizeof *p->in);
    p->bytes = mg_xcalloc((size_t)n, sizeof *p->bytes);
    p->scratch = mg_xcalloc((size_t)n, sizeof *p->scratch);
    p->cost = mg_xcalloc((size_t)n, sizeof *p->cost);
    p->target = mg_xcalloc((size_t)n, 1);
    p->evictable = mg_xcalloc((size_t)n, 1);
    p->keep_to_end = mg_xcalloc((size_t)n, 1);
    p->home = mg_xcalloc((size_t)n, sizeof *p->home);
    p->final = mg_xcalloc(1, sizeof *p->final);
    p->result = -1;
    return p;
}

void mg_problem_free(mg_problem *p)
{
    if (!p) return;
    free(p->in_start);
    free(p->in);
    free(p->bytes);
    free(p->scratch);
    free(p->cost);
    free(p->target);
    free(p->evictable);
    free(p->keep_to_end);
    free(p->home);
    free(p->final);
    free(p->part);
    if (p->names)
        for (int i = 0; i < p->n; i++) free(p->names[i]);
    free(p->names);
    free(p);
}

/* Steps are hashed as they lie in memory: every field is written (mg_pb_compute, the problems'
 * final copies) and the struct has no padding to hold stray bytes. */
_Static_assert(sizeof(mg_step) ==
                   2 * sizeof(int) + (MG_MAX_INPUTS + 1) * sizeof(mg_place) + 2 * sizeof(int) + sizeof(int64_t),
               "mg_step has padding: hash it field by field");
_Static_assert(sizeof(mg_place) == 2 * sizeof(int) + sizeof(int64_t), "mg_place has padding");

uint64_t mg_problem_hash(const mg_problem *pr)
{
    XXH64_state_t *st = XXH64_createState();
    if (!st) abort();
    XXH64_reset(st, 0x70726f626c656d31ULL);
    int n = pr->n;
    int64_t head[6] = {n, pr->nfwd, pr->result, pr->nfinal, (int64_t)pr->kind, pr->in_start[n]};
    XXH64_update(st, head, sizeof head);
    uint64_t model = pr->g ? mg_graph_hash(pr->g) : 0; /* (imported graphs have none) */
    XXH64_update(st, &model, sizeof model);
    XXH64_update(st, pr->in_start, ((size_t)n + 1) * sizeof *pr->in_start);
    XXH64_update(st, pr->in, (size_t)pr->in_start[n] * sizeof *pr->in);
    XXH64_update(st, pr->bytes, (size_t)n * sizeof *pr->bytes);
    XXH64_update(st, pr->scratch, (size_t)n * sizeof *pr->scratch);
    XXH64_update(st, pr->cost, (size_t)n * sizeof *pr->cost);
    XXH64_update(st, pr->target, (size_t)n);
    XXH64_update(st, pr->evictable, (size_t)n);
    XXH64_update(st, pr->keep_to_end, (size_t)n);
    XXH64_update(st, pr->home, (size_t)n * sizeof *pr->home);
    XXH64_update(st, pr->final, (size_t)pr->nfinal * sizeof *pr->final);
    uint64_t h = XXH64_digest(st);
    XXH64_freeState(st);
    return h;
}

static int64_t align_up(int64_t x) { return (x + MG_ALIGN - 1) / MG_ALIGN * MG_ALIGN; }

/* v, a concatenation along axis 0 homed at dst: its operands lie one after another there, and
 * those it alone reads are computed in their places (a step in parts: each part's logits go
 * straight into the caller's output, where the concatenation of every part's held them all in
 * the workspace, 4 MiB of the transformer's); the copy of an operand onto itself is skipped
 * (codegen.c). uses: how many times each value is read or returned. */
static void home_concat_operands(const mg_graph *g, mg_problem *p, const int *uses, int v, mg_place dst)
{
    const mg_node *nd = &g->nodes[v];
    if (nd->op != MG_OP_CONCAT || nd->iattr[0] != 0) return;
    for (int k = 0; k < nd->ninputs; k++) {
        int u = nd->in[k];
        if (!is_leaf(g->nodes[u].op) && p->home[u].mem == MG_MEM_NONE && uses[u] == 1) {
            p->home[u] = dst;
            home_concat_operands(g, p, uses, u, dst);
        }
        dst.offset += (int64_t)mg_node_bytes(g, u);
    }
}

mg_problem *mg_problem_from_graph(const mg_graph *g, mg_plan_kind kind)
{
    int n = kind == MG_PLAN_TRAIN ? g->n : g->nforward, nedges = 0;
    for (int i = 0; i < n; i++) nedges += g->nodes[i].ninputs;
    mg_problem *p = mg_problem_alloc(n, nedges);
    p->g = g;
    p->kind = kind;
    p->nfwd = g->nforward;
    free(p->final);
    p->final = mg_xcalloc((size_t)(g->nparams + g->noutputs) + 1, sizeof *p->final);
    for (int i = 0; i < n; i++) {
        const mg_node *nd = &g->nodes[i];
        p->in_start[i + 1] = p->in_start[i] + nd->ninputs;
        for (int k = 0; k < nd->ninputs; k++) p->in[p->in_start[i] + k] = nd->in[k];
        if (nd->micro_batch && !p->part) p->part = mg_xcalloc((size_t)n, sizeof *p->part);
        if (p->part) p->part[i] = nd->micro_batch;
    }

    /* roots: what the function must produce; then everything they depend on */
    char *needed = mg_xcalloc((size_t)n, 1);
    if (kind == MG_PLAN_TRAIN) {
        needed[g->loss] = 1;
        for (int i = 0; i < g->nparams; i++)
            if (g->param_grads[i] >= 0) needed[g->param_grads[i]] = 1;
    } else {
        for (int i = 0; i < g->noutputs; i++) needed[g->outputs[i].node] = 1;
    }
    mg_graph_mark_needed(g, n, needed);

    /* fixed places: leaves, and values written straight into caller memory */
    int64_t *poff = mg_xcalloc((size_t)g->nparams + 1, sizeof *poff);
    mg_param_layout(g, poff);
    for (int i = 0; i < n; i++) {
        const mg_node *nd = &g->nodes[i];
        if (nd->op == MG_OP_INPUT) p->home[i] = (mg_place){MG_MEM_INPUT, nd->index, 0};
        else if (nd->op == MG_OP_PARAM) p->home[i] = (mg_place){MG_MEM_PARAMS, nd->index, poff[nd->index]};
        else if (nd->op == MG_OP_CONST) p->home[i] = (mg_place){MG_MEM_CONST, 0, 0};
    }
    if (kind == MG_PLAN_TRAIN) {
        /* how many times each value is read, returned or is a gradient */
        int *uses = mg_xcalloc((size_t)n, sizeof *uses);
        for (int i = 0; i < n; i++)
            for (int k = 0; k < g->nodes[i].ninputs; k++) uses[g->nodes[i].in[k]]++;
        for (int i = 0; i < g->nparams; i++)
            if (g->param_grads[i] >= 0) uses[g->param_grads[i]]++;
        for (int i = 0; i < g->noutputs; i++) uses[g->outputs[i].node]++;
        uses[g->loss]++;
        for (int i = 0; i < g->nparams; i++) {
            int gi = g->param_grads[i];
            mg_place dst = {MG_MEM_GRADS, i, poff[i]};
            if (gi < 0) {
                p->final[p->nfinal++] = (mg_step){MG_STEP_ZERO, g->params[i], dst, {{0}}, -1, 0, 0};
            } else if (!is_leaf(g->nodes[gi].op) && p->home[gi].mem == MG_MEM_NONE) {
                p->home[gi] = dst;
                /* a gradient summed over micro-batches (microbatch.c): the partial sums before it,
                 * each read by the next alone, are written into the gradient too, each adding to
                 * the one before in place (codegen's copy_acc sees the same place) */
                for (int v = gi; mg_op_accumulates(g->nodes[v].op);) {
                    int u = g->nodes[v].in[g->nodes[v].ninputs - 1];
                    if (is_leaf(g->nodes[u].op) || p->home[u].mem != MG_MEM_NONE || uses[u] != 1) break;
                    p->home[u] = dst;
                    v = u;
                }
            } else {
                p->final[p->nfinal++] = (mg_step){MG_STEP_COPY, gi, dst, {{0}}, -1, 0, 0};
                p->keep_to_end[gi] = 1;
            }
        }
        p->result = g->loss;
        p->keep_to_end[g->loss] = 1;
        free(uses);
    } else {
        int *uses = mg_xcalloc((size_t)n, sizeof *uses); /* (by what the function runs) */
        for (int i = 0; i < n; i++)
            for (int k = 0; needed[i] && k < g->nodes[i].ninputs; k++) uses[g->nodes[i].in[k]]++;
        for (int i = 0; i < g->noutputs; i++) uses[g->outputs[i].node]++;
        for (int i = 0; i < g->noutputs; i++) {
            int o = g->outputs[i].node;
            mg_place dst = {MG_MEM_OUTPUT, i, 0};
            if (!is_leaf(g->nodes[o].op) && p->home[o].mem == MG_MEM_NONE) {
                p->home[o] = dst;
                home_concat_operands(g, p, uses, o, dst);
            } else {
                p->final[p->nfinal++] = (mg_step){MG_STEP_COPY, o, dst, {{0}}, -1, 0, 0};
                p->keep_to_end[o] = 1;
            }
        }
        free(uses);
    }
    for (int i = 0; i < n; i++) {
        const mg_node *nd = &g->nodes[i];
        if (is_leaf(nd->op) || !needed[i]) continue;
        p->target[i] = 1;
        p->cost[i] = mg_node_flops(g, i);
        p->scratch[i] = mg_node_scratch_bytes(g, i);
        if (p->home[i].mem == MG_MEM_NONE) p->bytes[i] = align_up((int64_t)mg_node_bytes(g, i));
        p->evictable[i] = p->bytes[i] && i < g->nforward && !p->keep_to_end[i];
    }
    free(needed);
    free(poff);
    return p;
}

int mg_part_gathers(const mg_problem *p, char *gathered)
{
    if (!p->part) {
        if (gathered) memset(gathered, 0, (size_t)p->n);
        return 0;
    }
    char *from = mg_xcalloc((size_t)p->n + 1, 1); /* per node: of no part, made of the parts' values */
    int count = 0;
    for (int v = 0; v < p->n; v++) {
        int first = 0, two = 0, gathers = 0; /* (the first part read, a second one, a value made of them) */
        for (int e = p->in_start[v]; !p->part[v] && e < p->in_start[v + 1]; e++) {
            int u = p->in[e], c = p->part[u];
            gathers |= from[u];
            if (c && !first) first = c;
            else if (c && c != first) two = 1;
        }
        from[v] = two || (first && gathers);
        if (gathered) gathered[v] = from[v] && p->evictable[v];
        count += from[v] && p->evictable[v];
    }
    free(from);
    return count;
}

static const double SAME_CHECKPOINT = 0.01;

int mg_part_count(const mg_problem *p)
{
    int parts = 0;
    for (int v = 0; p->part && v < p->n; v++)
        if (p->part[v] > parts) parts = p->part[v];
    return parts;
}

int mg_part_checkpoints(const mg_problem *p, int want, char *mark)
{
    memset(mark, 0, (size_t)p->n);
    if (!p->part || want <= 0) return 0;
    int n = p->nfwd < p->n ? p->nfwd : p->n, nparts = 0, npos = 0;
    for (int v = 0; v < n; v++) /* (the parts of the forward pass) */
        if (p->part[v] > nparts) nparts = p->part[v];
    int *pos = mg_xcalloc((size_t)n + 1, sizeof *pos), *last = mg_xcalloc((size_t)n + 1, sizeof *last);
    int *count = mg_xcalloc((size_t)nparts + 1, sizeof *count), *reach = mg_xcalloc((size_t)nparts + 1, sizeof *reach);
    for (int v = 0; v < n; v++) /* each forward value's place in its part's order, and its last reader's there */
        if (p->part[v]) {
            pos[v] = last[v] = count[p->part[v]]++;
            if (pos[v] + 1 > npos) npos = pos[v] + 1;
            for (int e = p->in_start[v]; e < p->in_start[v + 1]; e++)
                if (p->part[p->in[e]] == p->part[v]) last[p->in[e]] = pos[v];
        }
    char *gathered = mg_xcalloc((size_t)p->n + 1, 1), *read_by_gathered = mg_xcalloc((size_t)n + 1, 1);
    mg_part_gathers(p, gathered);
    for (int w = 0; w < p->n; w++)
        for (int e = p->in_start[w]; gathered[w] && e < p->in_start[w + 1]; e++)
            if (p->in[e] < n) read_by_gathered[p->in[e]] = 1;
    /* per place: in how many parts the value there is a checkpoint; its bytes and the part's cost up to it */
    int *ok = mg_xcalloc((size_t)npos + 1, sizeof *ok);
    double *prefix = mg_xcalloc((size_t)nparts + 1, sizeof *prefix), *score = mg_xcalloc((size_t)npos + 1, sizeof *score);
    double *before = mg_xcalloc((size_t)npos + 1, sizeof *before); /* part 1's forward cost up to each place */
    for (int v = 0; v < n; v++) {
        int c = p->part[v];
        if (!c) continue;
        prefix[c] += p->cost[v];
        if (c == 1) before[pos[v]] = prefix[c];
        /* no edge of the part's forward values passes over v, and v is read after it */
        int cut = reach[c] <= pos[v] && last[v] > pos[v];
        if (last[v] > reach[c]) reach[c] = last[v];
        if (cut && p->evictable[v] && p->bytes[v] > 0 && !read_by_gathered[v]) {
            ok[pos[v]]++;
            if (c == 1) score[pos[v]] = prefix[c] / (double)p->bytes[v];
        }
    }
    int found = 0;
    for (; found < want; found++) { /* the classes of most cost before them per byte held, best first */
        int best = -1;
        for (int j = 0; j < npos; j++)
            if (ok[j] == nparts && score[j] > 0 && (best < 0 || score[j] > score[best])) best = j;
        if (best < 0) break;
        for (int v = 0; v < n; v++)
            if (p->part[v] && pos[v] == best) mark[v] = (char)(found + 1);
        /* places with less than SAME_CHECKPOINT of the part's cost between them and this one are
         * the same checkpoint, for what rebuilding from there costs (a residual block's sum and
         * its relu) */
        for (int j = 0; j < npos; j++)
            if (fabs(before[j] - before[best]) < SAME_CHECKPOINT * prefix[1]) score[j] = 0;
    }
    free(pos), free(last), free(count), free(reach), free(gathered), free(read_by_gathered), free(ok), free(prefix),
        free(score), free(before);
    return found;
}

void mg_problem_node_copy(mg_problem *to, int w, const mg_problem *from, int v)
{
    to->bytes[w] = from->bytes[v];
    to->scratch[w] = from->scratch[v];
    to->cost[w] = from->cost[v];
    to->target[w] = from->target[v];
    to->evictable[w] = from->evictable[v];
    to->keep_to_end[w] = from->keep_to_end[v];
    to->home[w] = from->home[v];
}

mg_problem *mg_part_problem(const mg_problem *pr, int c, int *map)
{
    int n = 0, nedges = 0, nfwd = 0;
    for (int v = 0; v < pr->n; v++) {
        map[v] = -1;
        if (pr->part[v] != c + 1) continue;
        map[v] = n++;
        nfwd += v < pr->nfwd;
        for (int e = pr->in_start[v]; e < pr->in_start[v + 1]; e++) nedges += map[pr->in[e]] >= 0;
    }
    if (n == 0) return NULL;
    mg_problem *q = mg_problem_alloc(n, nedges);
    int e2 = 0;
    for (int v = 0; v < pr->n; v++) {
        int w = map[v];
        if (w < 0) continue;
        q->in_start[w] = e2;
        for (int e = pr->in_start[v]; e < pr->in_start[v + 1]; e++)
            if (map[pr->in[e]] >= 0) q->in[e2++] = map[pr->in[e]];
        mg_problem_node_copy(q, w, pr, v);
    }
    q->in_start[n] = e2;
    q->nfwd = nfwd;
    q->result = pr->result >= 0 ? map[pr->result] : -1;
    q->kind = pr->kind;
    return q;
}
