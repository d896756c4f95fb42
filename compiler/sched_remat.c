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
 * Values are freed after their last use; with `lazy`, a value past its last use stays while a
 * droppable value it feeds is still needed, as the first thing dropped when memory is short
 * (so recomputing that value need not recompute its whole ancestry). Before a target runs, the
 * dropped values it needs are collected and everything they read is locked, so preparing one
 * target never drops what it is about to read (no thrashing). The cost of dropping a value
 * counts the dropped inputs it would have to bring back too (DTR's evicted neighbourhood).
 * With an unbounded cap nothing is ever dropped: that is the store-all schedule.
 *
 * The scheduler sees only the planning problem (problem.c): inputs, bytes, costs, and which
 * values may be dropped; it knows nothing of ops or shapes. */
#include "plan.h"
#include "score_heap.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct sim {
    const mg_problem *pr;
    const mg_sched_opts *o;
    mg_plan_builder b;     /* the plan so far, where each value is, the live bytes */
    int now;               /* position of the current target */
    int target_now;        /* the current target */
    int ntargets, nfwd_targets;
    int *use_start, *uses; /* per node: positions of the targets that read it (CSR) */
    int *uptr;             /* per node: first use not yet passed */
    int *lock;             /* per node: > 0 while an op being prepared needs it */
    int *cand, *cand_pos, ncand; /* resident evictable values */
    mg_score_ent *heap; /* candidates by (possibly stale) score */
    int nheap, capheap;
    int *ver;              /* per node: the version its valid heap entry carries */
    char *parked;          /* per node: its heap entry was popped while it was locked; it is
                              refiled when it is unlocked (not after every eviction: near a wide
                              node hundreds are locked, and re-pushing them all for each eviction
                              was most of the scheduler's time) */
    int *stack, *stack_in; /* recomputation stack: node and next input to ensure */
    int *order, *mark, stamp; /* the dropped values one target needs, inputs first; visit marks */
    double *rc;            /* per dropped node: what bringing it back cost when it was dropped */
    double rc_cap;         /* no recomputation costs more than running every target once */
    int *zlast;            /* per node: last target position reading an evictable consumer of it */
    int *out_start, *out;  /* CSR: the consumers of each node */
    int64_t step_limit;
    double *jitter;        /* per node: the restart's factor on its score (NULL: none) */
    double *rest;          /* per target position i: the cost of the targets after it, each once
                              (with flops_limit: what the schedule must still execute at least) */
    int64_t below, above;  /* caps in [below, above) make the same choices (mg_schedule_range) */
    int nonneg;            /* every cost >= 0: a value's recompute cost is at least its own (fit) */
} sim;

static int next_use(const sim *s, int v)
{
    int k = s->use_start[v] + s->uptr[v];
    return k < s->use_start[v + 1] ? s->uses[k] : INT32_MAX;
}

static void heap_push(sim *s, mg_score_ent e)
{
    if (s->nheap == s->capheap) {
        s->capheap = s->capheap ? 2 * s->capheap : 256;
        s->heap = realloc(s->heap, (size_t)s->capheap * sizeof *s->heap);
        if (!s->heap) abort();
    }
    mg_score_push(s->heap, &s->nheap, e);
}

static double score(const sim *s, int v);

/* (Re)files candidate v under its score now. Scores only grow as time passes and values are
 * dropped; whatever can lower one (a use passed, an input brought back) refiles the value. */
static void refile(sim *s, int v)
{
    if (s->cand_pos[v] < 0) return;
    heap_push(s, (mg_score_ent){score(s, v), v, ++s->ver[v]});
}

static void cand_add(sim *s, int v)
{
    s->cand_pos[v] = s->ncand;
    s->cand[s->ncand++] = v;
    refile(s, v);
}

static void cand_remove(sim *s, int v)
{
    int i = s->cand_pos[v], last = s->cand[--s->ncand];
    s->cand[i] = last;
    s->cand_pos[last] = i;
    s->cand_pos[v] = -1;
}

double mg_recompute_cost(const mg_problem *pr, const mg_place *where, const double *rc, double cap, int v)
{
    double c = pr->cost[v] + 1;
    for (int k = pr->in_start[v]; k < pr->in_start[v + 1]; k++)
        if (where[pr->in[k]].mem == MG_MEM_NONE) c += rc[pr->in[k]];
    return c < cap ? c : cap;
}

static double recompute_cost(const sim *s, int v)
{
    return mg_recompute_cost(s->pr, s->b.where, s->rc, s->rc_cap, v);
}

/* Drops the resident workspace value v: its buffer ends at the last step that read it. */
static void release(sim *s, int v)
{
    if (s->b.where[v].mem != MG_MEM_WS) return;
    s->rc[v] = recompute_cost(s, v);
    mg_pb_release(&s->b, v);
    if (s->cand_pos[v] >= 0) cand_remove(s, v);
}

/* When v will be read next: by a target, or, for a value kept after its last use (lazy), by
 * the recomputation of a dropped value it feeds that a target still needs. */
static int use_time(const sim *s, int v)
{
    int t = next_use(s, v);
    if (t != INT32_MAX || !s->o->lazy) return t;
    for (int k = s->out_start[v]; k < s->out_start[v + 1]; k++) {
        int c = s->out[k];
        if (s->b.where[c].mem == MG_MEM_NONE) {
            int u = next_use(s, c);
            if (u < t) t = u;
        }
    }
    return t;
}

double mg_evict_score(mg_evict_policy policy, double cost, double size, double dist)
{
    switch (policy) {
    case MG_EVICT_SIZE_DIST: return 1.0 / (size * dist);
    case MG_EVICT_COST_SIZE: return cost / size;
    case MG_EVICT_COST_SIZE_DIST2: return cost / (size * dist * dist);
    case MG_EVICT_COST_SIZE_SQRTDIST: return cost / (size * sqrt(dist));
    default: return cost / (size * dist);
    }
}

/* The eviction score of candidate v under the policy: the lower, the sooner it is dropped. */
static double policy_score(const sim *s, int v)
{
    double dist = (double)use_time(s, v) - s->now + 1, size = (double)s->pr->bytes[v] + 1;
    return mg_evict_score(s->o->policy, recompute_cost(s, v), size, dist);
}

static double score(const sim *s, int v)
{
    double sc = s->jitter ? policy_score(s, v) * s->jitter[v] : policy_score(s, v);
    return s->o->weight ? sc * s->o->weight[v] : sc;
}

/* The restart's factors: splitmix64 of (seed, node) mapped to [1/2, 2), log-uniformly. */
static double *restart_factors(uint64_t seed, int n)
{
    double *f = mg_xcalloc((size_t)n + 1, sizeof *f);
    for (int v = 0; v < n; v++) {
        uint64_t z = seed * 0x9e3779b97f4a7c15ULL + (uint64_t)v * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        z ^= z >> 31;
        f[v] = exp2((double)(z >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    }
    return f;
}

/* One read of v by an op being prepared is done; a candidate parked while locked is refiled. */
static void unlock(sim *s, int v)
{
    if (--s->lock[v] == 0 && s->parked[v]) {
        s->parked[v] = 0;
        refile(s, v);
    }
}

/* Drops values until need more bytes fit under the cap; 0 when that is impossible. The victim
 * is the unlocked candidate of least score: heap entries are lower bounds of their scores, so
 * the top is rescored and refiled until it stays on top. */
static int make_room(sim *s, int64_t need)
{
    const mg_problem *pr = s->pr;
    int ok = 1;
    for (;;) {
        int64_t x = s->b.live + need; /* the cap is compared with this, and (fit) x - bytes, only */
        if (!ok) break;
        if (x <= s->o->cap) {
            if (x > s->below) s->below = x;
            break;
        }
        if (x < s->above) s->above = x;
        ok = 0;
        while (s->nheap > 0) {
            mg_score_ent e = mg_score_pop(s->heap, &s->nheap);
            int v = e.node;
            if (e.ver != s->ver[v] || s->cand_pos[v] < 0) continue; /* stale */
            if (s->lock[v]) {
                s->parked[v] = 1;
                continue;
            }
            double sc = score(s, v);
            if (sc > e.key && s->nheap > 0 && sc > s->heap[0].key) {
                heap_push(s, (mg_score_ent){sc, v, ++s->ver[v]});
                continue;
            }
            if (s->o->fit) { /* the cheapest single value that covers the excess, if cheaper */
                double best = recompute_cost(s, v);
                int w = v;
                for (int i = 0; i < s->ncand; i++) {
                    int c = s->cand[i];
                    if (s->lock[c] || c == v) continue;
                    int64_t y = s->b.live + need - pr->bytes[c]; /* bytes < excess iff cap < y */
                    if (s->o->cap < y) {
                        if (y < s->above) s->above = y;
                        continue;
                    }
                    if (y > s->below) s->below = y;
                    /* mg_recompute_cost adds nothing negative to cost + 1, then caps: when that
                     * alone is no less than best, so is the sum (on the 5,000-step relu chain at
                     * 10%, 397 million candidates in 1.7 million fit scans, most of them cut here) */
                    double own = pr->cost[c] + 1;
                    if (s->nonneg && (own < s->rc_cap ? own : s->rc_cap) >= best) continue;
                    double rc = recompute_cost(s, c);
                    if (rc < best) {
                        best = rc;
                        w = c;
                    }
                }
                if (w != v) refile(s, v); /* (its entry was popped) */
                v = w;
            }
            release(s, v);
            ok = 1;
            break;
        }
    }
    return ok;
}

/* Runs node v now (its inputs resident and locked): allocates its output, evicting if needed. */
static int compute(sim *s, int v, int recompute)
{
    const mg_problem *pr = s->pr;
    if (s->b.p->nsteps >= s->step_limit) return 0;
    /* past the limit, or sure to pass it: every target after this one still runs at least once
     * (and the one being prepared, when this is a recomputation); a schedule that would pass
     * the limit is given up on, so giving up early changes nothing but the time spent */
    if (s->o->flops_limit > 0 &&
        s->b.p->flops_executed + pr->cost[v] + (recompute ? pr->cost[s->target_now] : 0) + s->rest[s->now] >
            s->o->flops_limit)
        return 0;
    if (!make_room(s, pr->bytes[v] + pr->scratch[v])) return 0;
    mg_pb_compute(&s->b, v, recompute);
    if (s->b.where[v].mem == MG_MEM_WS && pr->evictable[v]) cand_add(s, v);
    if (recompute) /* cheaper to drop what reads v now; and (lazy) what v reads is needed later */
        for (int k = s->out_start[v]; k < s->out_start[v + 1]; k++) refile(s, s->out[k]);
    if (recompute && s->o->lazy)
        for (int k = pr->in_start[v]; k < pr->in_start[v + 1]; k++) refile(s, pr->in[k]);
    return 1;
}

/* Makes every input of target t resident and locked. First the dropped values t needs are
 * collected (depth first, through dropped values only, down to resident ones), and every value
 * they and t read is locked once per read; then they are recomputed inputs first, each
 * unlocking its inputs. So nothing this preparation still needs is dropped during it, and
 * each value is recomputed at most once per target. */
static int ensure_inputs(sim *s, int t)
{
    const mg_problem *pr = s->pr;
    int sp = 0, nr = 0, stamp = ++s->stamp;
    s->stack[sp] = t;
    s->stack_in[sp++] = 0;
    s->mark[t] = stamp;
    while (sp > 0) {
        int v = s->stack[sp - 1], k = s->stack_in[sp - 1];
        if (k < pr->in_start[v + 1] - pr->in_start[v]) {
            s->stack_in[sp - 1]++;
            int u = pr->in[pr->in_start[v] + k];
            s->lock[u]++;
            if (s->b.where[u].mem == MG_MEM_NONE && s->mark[u] != stamp) {
                s->mark[u] = stamp;
                s->stack[sp] = u;
                s->stack_in[sp++] = 0;
            }
            continue;
        }
        sp--;
        if (v != t) s->order[nr++] = v;
    }
    for (int i = 0; i < nr; i++) {
        int v = s->order[i];
        if (!compute(s, v, 1)) return 0;
        for (int j = pr->in_start[v]; j < pr->in_start[v + 1]; j++) unlock(s, pr->in[j]);
    }
    return 1;
}

/* After target at position pos read its inputs: pass their uses, free what is dead, and, when
 * checkpointing, drop unmarked forward values that only the backward pass still needs. */
static void after_target(sim *s, int t, int pos)
{
    const mg_problem *pr = s->pr;
    int a = pr->in_start[t], b = pr->in_start[t + 1];
    for (int k = a; k < b; k++) {
        int u = pr->in[k];
        unlock(s, u);
        while (next_use(s, u) <= pos) s->uptr[u]++;
        refile(s, u);
    }
    for (int k = a; k <= b; k++) {
        int u = k < b ? pr->in[k] : t;
        if (s->b.where[u].mem != MG_MEM_WS || pr->keep_to_end[u]) continue;
        int nu = next_use(s, u);
        if (nu == INT32_MAX && s->o->lazy && pr->evictable[u] && s->zlast[u] > pos) continue; /* may help recompute */
        if (nu == INT32_MAX || (s->o->keep && !s->o->keep[u] && pr->evictable[u] && pos < s->nfwd_targets &&
                                nu >= s->nfwd_targets)) {
            release(s, u);
            if (nu == INT32_MAX && s->o->lazy) /* u is dead: so are the values kept only to recompute it */
                for (int j = pr->in_start[u]; j < pr->in_start[u + 1]; j++) {
                    int w = pr->in[j];
                    if (s->b.where[w].mem == MG_MEM_WS && !pr->keep_to_end[w] && s->zlast[w] <= pos &&
                        next_use(s, w) == INT32_MAX && !s->lock[w])
                        release(s, w);
                }
        }
    }
}

mg_status mg_schedule(const mg_problem *pr, const mg_sched_opts *opts, mg_plan **out, mg_diag *d)
{
    return mg_schedule_range(pr, opts, out, NULL, d);
}

/* What the simulation builds before it starts, the same for every schedule of the problem
 * (the targets, their reads, the consumers of each value), and the arrays it works in. */
struct mg_sched_store {
    const mg_problem *pr;
    mg_sched_index ix;
    int *zlast;             /* per node: last target position reading an evictable consumer of it */
    int nonneg;             /* every cost >= 0 (not NaN) */
    /* scratch, cleared for each schedule */
    int *uptr, *lock, *cand, *cand_pos, *ver, *stack, *stack_in, *order, *mark;
    char *parked;
    double *rc;
    mg_score_ent *heap;
    int capheap;
    double *jitter;         /* restart_factors(jitter_seed), kept for the next schedule */
    uint64_t jitter_seed;
    mg_pb_store pb;
    int busy;
};

void mg_sched_index_init(mg_sched_index *x, const mg_problem *pr)
{
    int n = pr->n;
    *x = (mg_sched_index){0};
    x->targets = mg_xcalloc((size_t)n + 1, sizeof *x->targets);
    for (int i = 0; i < n; i++) {
        if (!pr->target[i]) continue;
        if (i < pr->nfwd) x->nfwd_targets++;
        x->targets[x->ntargets++] = i;
    }
    x->rest = mg_xcalloc((size_t)x->ntargets + 1, sizeof *x->rest);
    for (int i = x->ntargets - 1; i > 0; i--) x->rest[i - 1] = x->rest[i] + pr->cost[x->targets[i]];
    /* the reads of each node by the targets, in target order */
    x->use_start = mg_xcalloc((size_t)n + 1, sizeof *x->use_start);
    for (int i = 0; i < x->ntargets; i++)
        for (int k = pr->in_start[x->targets[i]]; k < pr->in_start[x->targets[i] + 1]; k++) x->use_start[pr->in[k] + 1]++;
    for (int v = 0; v < n; v++) x->use_start[v + 1] += x->use_start[v];
    x->uses = mg_xcalloc((size_t)x->use_start[n] + 1, sizeof *x->uses);
    int *fill = mg_xcalloc((size_t)n + 1, sizeof *fill);
    for (int i = 0; i < x->ntargets; i++)
        for (int k = pr->in_start[x->targets[i]]; k < pr->in_start[x->targets[i] + 1]; k++) {
            int u = pr->in[k];
            x->uses[x->use_start[u] + fill[u]++] = i;
        }
    /* the consumers of each node */
    x->out_start = mg_xcalloc((size_t)n + 1, sizeof *x->out_start);
    x->out = mg_xcalloc((size_t)pr->in_start[n] + 1, sizeof *x->out);
    for (int k = 0; k < pr->in_start[n]; k++) x->out_start[pr->in[k] + 1]++;
    for (int v = 0; v < n; v++) x->out_start[v + 1] += x->out_start[v];
    for (int v = 0; v <= n; v++) fill[v] = 0;
    for (int c = 0; c < n; c++)
        for (int k = pr->in_start[c]; k < pr->in_start[c + 1]; k++) x->out[x->out_start[pr->in[k]] + fill[pr->in[k]]++] = c;
    free(fill);
}

void mg_sched_index_free(mg_sched_index *x)
{
    free(x->targets);
    free(x->rest);
    free(x->use_start);
    free(x->uses);
    free(x->out_start);
    free(x->out);
    *x = (mg_sched_index){0};
}

mg_sched_store *mg_sched_store_new(const mg_problem *pr)
{
    int n = pr->n;
    mg_sched_store *z = mg_xcalloc(1, sizeof *z);
    z->pr = pr;
    mg_sched_index_init(&z->ix, pr);
    z->nonneg = 1;
    for (int v = 0; v < n; v++)
        if (!(pr->cost[v] >= 0)) z->nonneg = 0;
    z->zlast = mg_xcalloc((size_t)n + 1, sizeof *z->zlast);
    for (int v = 0; v < n; v++) z->zlast[v] = -1;
    for (int c = 0; c < n; c++) {
        int last = z->ix.use_start[c + 1] > z->ix.use_start[c] ? z->ix.uses[z->ix.use_start[c + 1] - 1] : -1;
        if (!pr->evictable[c]) continue;
        for (int k = pr->in_start[c]; k < pr->in_start[c + 1]; k++)
            if (last > z->zlast[pr->in[k]]) z->zlast[pr->in[k]] = last;
    }
    z->uptr = mg_xcalloc((size_t)n + 1, sizeof *z->uptr);
    z->lock = mg_xcalloc((size_t)n + 1, sizeof *z->lock);
    z->cand = mg_xcalloc((size_t)n + 1, sizeof *z->cand);
    z->cand_pos = mg_xcalloc((size_t)n + 1, sizeof *z->cand_pos);
    z->ver = mg_xcalloc((size_t)n + 1, sizeof *z->ver);
    z->parked = mg_xcalloc((size_t)n + 1, 1);
    z->stack = mg_xcalloc((size_t)n + 1, sizeof *z->stack);
    z->stack_in = mg_xcalloc((size_t)n + 1, sizeof *z->stack_in);
    z->order = mg_xcalloc((size_t)n + 1, sizeof *z->order);
    z->mark = mg_xcalloc((size_t)n + 1, sizeof *z->mark);
    z->rc = mg_xcalloc((size_t)n + 1, sizeof *z->rc);
    return z;
}

void mg_sched_store_free(mg_sched_store *z)
{
    if (!z) return;
    mg_sched_index_free(&z->ix);
    free(z->zlast);
    free(z->uptr);
    free(z->lock);
    free(z->cand);
    free(z->cand_pos);
    free(z->ver);
    free(z->parked);
    free(z->stack);
    free(z->stack_in);
    free(z->order);
    free(z->mark);
    free(z->rc);
    free(z->heap);
    free(z->jitter);
    mg_pb_store_free(&z->pb);
    free(z);
}

mg_status mg_schedule_range(const mg_problem *pr, const mg_sched_opts *opts, mg_plan **out, int64_t range[2],
                            mg_diag *d)
{
    int n = pr->n;
    *out = NULL;
    /* the caller's store when it is for this problem and free, else one for this schedule only */
    mg_sched_store *z = opts->store && opts->store->pr == pr && !opts->store->busy ? opts->store : NULL;
    mg_sched_store *own = z ? NULL : mg_sched_store_new(pr);
    if (!z) z = own;
    z->busy = 1;
    size_t n1 = (size_t)n + 1;
    memset(z->uptr, 0, n1 * sizeof *z->uptr);
    memset(z->lock, 0, n1 * sizeof *z->lock);
    memset(z->ver, 0, n1 * sizeof *z->ver);
    memset(z->parked, 0, n1);
    memset(z->mark, 0, n1 * sizeof *z->mark);
    memset(z->rc, 0, n1 * sizeof *z->rc);
    for (int i = 0; i < n; i++) z->cand_pos[i] = -1;
    if (opts->seed && (!z->jitter || z->jitter_seed != opts->seed)) {
        free(z->jitter);
        z->jitter = restart_factors(opts->seed, n);
        z->jitter_seed = opts->seed;
    }
    sim s = {.pr = pr, .o = opts, .below = INT64_MIN, .above = INT64_MAX};
    mg_pb_init_in(&s.b, pr, own ? NULL : &z->pb);
    s.uptr = z->uptr;
    s.lock = z->lock;
    s.cand = z->cand;
    s.cand_pos = z->cand_pos;
    s.ver = z->ver;
    s.parked = z->parked;
    s.stack = z->stack;
    s.stack_in = z->stack_in;
    s.order = z->order;
    s.mark = z->mark;
    s.rc = z->rc;
    s.heap = z->heap;
    s.capheap = z->capheap;
    s.jitter = opts->seed ? z->jitter : NULL;
    s.ntargets = z->ix.ntargets;
    s.nfwd_targets = z->ix.nfwd_targets;
    const int *targets = z->ix.targets;
    s.rc_cap = s.b.p->flops_once + n;
    s.rest = z->ix.rest;
    s.nonneg = z->nonneg;
    s.use_start = z->ix.use_start;
    s.uses = z->ix.uses;
    s.out_start = z->ix.out_start;
    s.out = z->ix.out;
    s.zlast = z->zlast;
    /* a generous bound on recomputation, so pathological graphs fail instead of running away */
    s.step_limit = (int64_t)s.ntargets * 8 + 10000;
    mg_pb_reserve(&s.b, s.step_limit + pr->nfinal + 1);

    int ok = 1;
    for (int i = 0; i < s.ntargets && ok; i++) {
        s.now = i;
        int t = targets[i];
        s.target_now = t;
        ok = ensure_inputs(&s, t) && compute(&s, t, 0);
        if (ok) after_target(&s, t, i);
    }
    if (ok) *out = mg_pb_finish(&s.b);
    else mg_pb_discard(&s.b);
    if (range) {
        range[0] = s.below;
        range[1] = s.above;
    }
    z->heap = s.heap; /* (grown by heap_push) */
    z->capheap = s.capheap;
    z->busy = 0;
    mg_sched_store_free(own);
    (void)d;
    return MG_OK;
}
