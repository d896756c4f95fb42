/* sched_remat.c — the scheduler: it simulates a generated function op by op, in graph order,
 * under a cap on live workspace bytes, and records what it does as plan steps.
 *
 * Every needed op is a "target", run once in graph order (forward ops, then backward ops).
 * Before a target runs, its inputs must be resident; an input that was dropped earlier is
 * recomputed first, recursively, from whatever is still resident (inputs, parameters and
 * constants always are). When a new buffer would take the live bytes over the cap, the
 * scheduler drops a resident forward value that the current op does not need, chosen by the
 * eviction policy from what the static schedule knows: its recomputation cost, its size and
 * how far away its next use is. Backward values are computed exactly once and never dropped.
 * Values are freed after their last use. With an unbounded cap nothing is ever dropped: that
 * is the store-all schedule.
 *
 * Values the caller owns are written in place where possible: parameter gradients straight
 * into the grads blob, forward outputs straight into the caller's output buffers, with an
 * explicit copy (or zero fill) at the end where that is not possible. */
#include "plan.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void *xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n ? n : 1, sz);
    if (!p) abort();
    return p;
}

static int64_t align_up(int64_t x) { return (x + MG_ALIGN - 1) / MG_ALIGN * MG_ALIGN; }

static int is_leaf(mg_op op) { return op == MG_OP_INPUT || op == MG_OP_PARAM || op == MG_OP_CONST; }

void mg_plan_free(mg_plan *p)
{
    if (!p) return;
    free(p->steps);
    free(p->bufs);
    free(p);
}

typedef struct sim {
    const mg_graph *g;
    const mg_sched_opts *o;
    mg_plan *p;
    int capsteps, capbufs;
    int64_t live;          /* bytes of workspace buffers resident now */
    int now;               /* position of the current target */
    int ntargets, nfwd_targets;
    int64_t *bytes;        /* per node: workspace bytes of its value (0: lives elsewhere) */
    mg_place *where;       /* per node: where its value is now (mem NONE: not resident) */
    mg_place *home;        /* per node: fixed caller-owned place (leaves, pinned values) */
    int *last_read;        /* per node: last step that read the resident instance */
    int *use_start, *uses; /* per node: positions of the targets that read it (CSR) */
    int *uptr;             /* per node: first use not yet passed */
    int *lock;             /* per node: > 0 while an op being prepared needs it */
    char *evictable;       /* per node: forward value the scheduler may drop */
    char *keep_to_end;     /* per node: read after the last op (result, copy sources) */
    int *cand, *cand_pos, ncand; /* resident evictable values */
    int *stack, *stack_in; /* recomputation stack: node and next input to ensure */
    int64_t step_limit;
    int failed;
} sim;

static int add_step(sim *s, mg_step st)
{
    mg_plan *p = s->p;
    if (p->nsteps == s->capsteps) {
        s->capsteps = s->capsteps ? 2 * s->capsteps : 256;
        p->steps = realloc(p->steps, (size_t)s->capsteps * sizeof *p->steps);
        if (!p->steps) abort();
    }
    p->steps[p->nsteps] = st;
    return p->nsteps++;
}

static int add_buffer(sim *s, int64_t bytes, int step, int node)
{
    mg_plan *p = s->p;
    if (p->nbufs == s->capbufs) {
        s->capbufs = s->capbufs ? 2 * s->capbufs : 256;
        p->bufs = realloc(p->bufs, (size_t)s->capbufs * sizeof *p->bufs);
        if (!p->bufs) abort();
    }
    p->bufs[p->nbufs] = (mg_buffer){align_up(bytes), step, step, -1, node};
    return p->nbufs++;
}

static int next_use(const sim *s, int v)
{
    int k = s->use_start[v] + s->uptr[v];
    return k < s->use_start[v + 1] ? s->uses[k] : INT32_MAX;
}

static void cand_add(sim *s, int v)
{
    s->cand_pos[v] = s->ncand;
    s->cand[s->ncand++] = v;
}

static void cand_remove(sim *s, int v)
{
    int i = s->cand_pos[v], last = s->cand[--s->ncand];
    s->cand[i] = last;
    s->cand_pos[last] = i;
    s->cand_pos[v] = -1;
}

/* Drops the resident workspace value v: its buffer ends at the last step that read it. */
static void release(sim *s, int v)
{
    mg_place *w = &s->where[v];
    if (w->mem != MG_MEM_WS) return;
    mg_buffer *b = &s->p->bufs[w->index];
    b->last = s->last_read[v] > b->first ? s->last_read[v] : b->first;
    s->live -= b->bytes;
    if (s->cand_pos[v] >= 0) cand_remove(s, v);
    w->mem = MG_MEM_NONE;
}

/* The cost of bringing v back: its own FLOPs and those of its inputs that are gone too. */
static double recompute_cost(const sim *s, int v)
{
    const mg_node *n = &s->g->nodes[v];
    double c = mg_node_flops(s->g, v) + 1;
    for (int k = 0; k < n->ninputs; k++)
        if (s->where[n->in[k]].mem == MG_MEM_NONE) c += mg_node_flops(s->g, n->in[k]);
    return c;
}

/* Drops values until need more bytes fit under the cap; 0 when that is impossible. */
static int make_room(sim *s, int64_t need)
{
    while (s->live + need > s->o->cap) {
        int best = -1;
        double best_score = 0;
        for (int i = 0; i < s->ncand; i++) {
            int v = s->cand[i];
            if (s->lock[v]) continue;
            double dist = (double)next_use(s, v) - s->now + 1, size = (double)s->bytes[v], score;
            switch (s->o->policy) {
            case MG_EVICT_SIZE_DIST: score = 1.0 / (size * dist); break;
            case MG_EVICT_COST_SIZE: score = recompute_cost(s, v) / size; break;
            case MG_EVICT_COST_SIZE_DIST2: score = recompute_cost(s, v) / (size * dist * dist); break;
            default: score = recompute_cost(s, v) / (size * dist); break;
            }
            if (best < 0 || score < best_score) {
                best = v;
                best_score = score;
            }
        }
        if (best < 0) return 0;
        release(s, best);
    }
    return 1;
}

/* Runs node v now (its inputs resident and locked): allocates its output, evicting if needed. */
static int compute(sim *s, int v, int recompute)
{
    const mg_graph *g = s->g;
    const mg_node *n = &g->nodes[v];
    int64_t scratch = n->op == MG_OP_MATMUL ? mg_matmul_scratch_bytes(g, v) : 0;
    if (s->p->nsteps >= s->step_limit) return 0;
    if (!make_room(s, s->bytes[v] + scratch)) return 0;
    mg_step st = {MG_STEP_COMPUTE, v, s->home[v], {{0}}, -1, recompute};
    for (int k = 0; k < n->ninputs; k++) st.in[k] = s->where[n->in[k]];
    int step = add_step(s, st);
    mg_step *sp = &s->p->steps[step];
    if (scratch) sp->scratch = add_buffer(s, scratch, step, -1);
    if (s->bytes[v]) {
        sp->out = (mg_place){MG_MEM_WS, add_buffer(s, s->bytes[v], step, v), 0};
        s->live += s->bytes[v];
        if (s->evictable[v]) cand_add(s, v);
    }
    s->where[v] = sp->out;
    s->last_read[v] = step;
    for (int k = 0; k < n->ninputs; k++) s->last_read[n->in[k]] = step;
    s->p->flops_executed += mg_node_flops(g, v);
    return 1;
}

/* Makes every input of target t resident and locked, recomputing dropped ones depth first. */
static int ensure_inputs(sim *s, int t)
{
    const mg_graph *g = s->g;
    int sp = 0;
    s->stack[sp] = t;
    s->stack_in[sp++] = 0;
    while (sp > 0) {
        int v = s->stack[sp - 1], k = s->stack_in[sp - 1];
        const mg_node *n = &g->nodes[v];
        if (k < n->ninputs) {
            s->stack_in[sp - 1]++;
            int u = n->in[k];
            if (s->where[u].mem != MG_MEM_NONE) {
                s->lock[u]++;
            } else {
                s->stack[sp] = u;
                s->stack_in[sp++] = 0;
            }
            continue;
        }
        sp--;
        if (v == t) return 1; /* inputs ready; the caller runs t */
        if (!compute(s, v, 1)) return 0;
        for (int j = 0; j < n->ninputs; j++) s->lock[n->in[j]]--;
        s->lock[v]++;
    }
    return 1;
}

static void build_uses(sim *s, const int *targets)
{
    const mg_graph *g = s->g;
    int n = g->n;
    s->use_start = xcalloc((size_t)n + 1, sizeof *s->use_start);
    for (int i = 0; i < s->ntargets; i++) {
        const mg_node *nd = &g->nodes[targets[i]];
        for (int k = 0; k < nd->ninputs; k++) s->use_start[nd->in[k] + 1]++;
    }
    for (int v = 0; v < n; v++) s->use_start[v + 1] += s->use_start[v];
    s->uses = xcalloc((size_t)s->use_start[n] + 1, sizeof *s->uses);
    int *fill = xcalloc((size_t)n, sizeof *fill);
    for (int i = 0; i < s->ntargets; i++) {
        const mg_node *nd = &g->nodes[targets[i]];
        for (int k = 0; k < nd->ninputs; k++) {
            int u = nd->in[k];
            s->uses[s->use_start[u] + fill[u]++] = i;
        }
    }
    free(fill);
}

/* After target at position pos read its inputs: pass their uses, free what is dead, and, when
 * checkpointing, drop unmarked forward values that only the backward pass still needs. */
static void after_target(sim *s, int t, int pos)
{
    const mg_node *n = &s->g->nodes[t];
    for (int k = 0; k < n->ninputs; k++) {
        int u = n->in[k];
        s->lock[u]--;
        while (next_use(s, u) <= pos) s->uptr[u]++;
    }
    for (int k = 0; k <= n->ninputs; k++) {
        int u = k < n->ninputs ? n->in[k] : t;
        if (s->where[u].mem != MG_MEM_WS || s->keep_to_end[u]) continue;
        int nu = next_use(s, u);
        if (nu == INT32_MAX || (s->o->keep && !s->o->keep[u] && s->evictable[u] && pos < s->nfwd_targets &&
                                nu >= s->nfwd_targets))
            release(s, u);
    }
}

mg_status mg_schedule(const mg_graph *g, mg_plan_kind kind, const mg_sched_opts *opts, mg_plan **out, mg_diag *d)
{
    int n = kind == MG_PLAN_TRAIN ? g->n : g->nforward;
    *out = NULL;
    if (kind == MG_PLAN_TRAIN && (!g->param_grads || g->loss < 0))
        return mg_diag_set(d, (mg_loc){0}, "internal error: train plan needs the joint graph");
    mg_plan *p = xcalloc(1, sizeof *p);
    p->g = g;
    p->kind = kind;
    p->result = kind == MG_PLAN_TRAIN ? g->loss : -1;
    sim s = {.g = g, .o = opts, .p = p};
    s.bytes = xcalloc((size_t)g->n, sizeof *s.bytes);
    s.where = xcalloc((size_t)g->n, sizeof *s.where);
    s.home = xcalloc((size_t)g->n, sizeof *s.home);
    s.last_read = xcalloc((size_t)g->n, sizeof *s.last_read);
    s.uptr = xcalloc((size_t)g->n, sizeof *s.uptr);
    s.lock = xcalloc((size_t)g->n, sizeof *s.lock);
    s.evictable = xcalloc((size_t)g->n, 1);
    s.keep_to_end = xcalloc((size_t)g->n, 1);
    s.cand = xcalloc((size_t)g->n, sizeof *s.cand);
    s.cand_pos = xcalloc((size_t)g->n, sizeof *s.cand_pos);
    s.stack = xcalloc((size_t)g->n + 1, sizeof *s.stack);
    s.stack_in = xcalloc((size_t)g->n + 1, sizeof *s.stack_in);
    char *needed = xcalloc((size_t)g->n, 1);
    int *targets = xcalloc((size_t)g->n, sizeof *targets);
    int64_t *poff = xcalloc((size_t)g->nparams + 1, sizeof *poff);
    mg_step *extra = xcalloc((size_t)(g->nparams + g->noutputs) + 1, sizeof *extra);
    int nextra = 0;
    mg_param_layout(g, poff);

    /* roots: what the function must produce; then everything they depend on */
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

    /* fixed places: leaves, and values written straight into caller memory */
    for (int i = 0; i < n; i++) {
        const mg_node *nd = &g->nodes[i];
        s.cand_pos[i] = -1;
        if (nd->op == MG_OP_INPUT) s.home[i] = (mg_place){MG_MEM_INPUT, nd->index, 0};
        else if (nd->op == MG_OP_PARAM) s.home[i] = (mg_place){MG_MEM_PARAMS, nd->index, poff[nd->index]};
        else if (nd->op == MG_OP_CONST) s.home[i] = (mg_place){MG_MEM_CONST, 0, 0};
    }
    if (kind == MG_PLAN_TRAIN) {
        for (int i = 0; i < g->nparams; i++) {
            int gi = g->param_grads[i];
            mg_place dst = {MG_MEM_GRADS, i, poff[i]};
            if (gi < 0) {
                extra[nextra++] = (mg_step){MG_STEP_ZERO, g->params[i], dst, {{0}}, -1, 0};
            } else if (!is_leaf(g->nodes[gi].op) && s.home[gi].mem == MG_MEM_NONE) {
                s.home[gi] = dst;
            } else {
                extra[nextra++] = (mg_step){MG_STEP_COPY, gi, dst, {{0}}, -1, 0};
                s.keep_to_end[gi] = 1;
            }
        }
        s.keep_to_end[g->loss] = 1;
    } else {
        for (int i = 0; i < g->noutputs; i++) {
            int o = g->outputs[i].node;
            mg_place dst = {MG_MEM_OUTPUT, i, 0};
            if (!is_leaf(g->nodes[o].op) && s.home[o].mem == MG_MEM_NONE) {
                s.home[o] = dst;
            } else {
                extra[nextra++] = (mg_step){MG_STEP_COPY, o, dst, {{0}}, -1, 0};
                s.keep_to_end[o] = 1;
            }
        }
    }
    for (int i = 0; i < n; i++) {
        const mg_node *nd = &g->nodes[i];
        if (!is_leaf(nd->op) && s.home[i].mem == MG_MEM_NONE) s.bytes[i] = align_up((int64_t)mg_node_bytes(g, i));
        s.evictable[i] = s.bytes[i] && i < g->nforward && !s.keep_to_end[i];
        if (is_leaf(nd->op)) s.where[i] = s.home[i];
        if (needed[i] && !is_leaf(nd->op)) {
            if (i < g->nforward) s.nfwd_targets++;
            targets[s.ntargets++] = i;
            p->flops_once += mg_node_flops(g, i);
        }
    }
    build_uses(&s, targets);
    /* a generous bound on recomputation, so pathological graphs fail instead of running away */
    s.step_limit = (int64_t)s.ntargets * 64 + 100000;

    int ok = 1;
    for (int i = 0; i < s.ntargets && ok; i++) {
        s.now = i;
        int t = targets[i];
        ok = ensure_inputs(&s, t) && compute(&s, t, 0);
        if (ok) after_target(&s, t, i);
    }
    if (ok) {
        for (int k = 0; k < nextra; k++) {
            mg_step st = extra[k];
            if (st.kind == MG_STEP_COPY) st.in[0] = s.where[st.node];
            int step = add_step(&s, st);
            if (st.kind == MG_STEP_COPY) s.last_read[st.node] = step;
        }
        if (p->result >= 0) {
            p->result_at = s.where[p->result];
            s.last_read[p->result] = p->nsteps - 1;
        }
        for (int v = 0; v < n; v++) release(&s, v);
    }

    free(s.bytes);
    free(s.where);
    free(s.home);
    free(s.last_read);
    free(s.use_start);
    free(s.uses);
    free(s.uptr);
    free(s.lock);
    free(s.evictable);
    free(s.keep_to_end);
    free(s.cand);
    free(s.cand_pos);
    free(s.stack);
    free(s.stack_in);
    free(needed);
    free(targets);
    free(poff);
    free(extra);
    if (!ok) {
        mg_plan_free(p);
        return MG_OK;
    }
    *out = p;
    return MG_OK;
}
