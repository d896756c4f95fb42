/* sched_rc.c — a recompute-aware eviction scheduler, for graphs where one step reads many
 * values from far back (Moccasin's layered DAGs: a node with 44 inputs spread over the whole
 * order). It exists beside sched_remat.c because of how the two bring dropped values back.
 *
 * sched_remat.c collects every dropped value a target needs and locks everything they read for
 * the whole preparation: safe from thrashing, but the lock set is the union of the inputs of
 * the whole recomputation, and near a wide node that alone exceeds tight caps. Here a target's
 * dropped inputs are brought back one at a time, each recursively the same way, and only the
 * inputs of the nodes on the current recursion path are locked: what one input's recomputation
 * needed is free to go (last) while the next one is recomputed. The inputs with the largest
 * recomputation (bytes of dropped ancestors) come first, while the least is held (Sethi and
 * Ullman's order). The values the preparation still needs are not locked but count as used
 * now, so the policy drops them last; a value dropped anyway is brought back again (the step
 * limit bounds that, and a preparation recomputing more than twice its closure fails early).
 * A value's next use follows dropped consumers transitively. Values stay resident after their
 * last read until room is needed (a buffer ends at its last read, so that costs nothing), and
 * are dropped first then. With opts->rc == 2 the cost of dropping a value also counts the
 * ancestors that no target reads by its next use (they will be gone, so bringing it back then
 * recomputes them too): a value read again far ahead is kept rather than its whole ancestry
 * recomputed for it.
 *
 * Like sched_remat.c it sees only the planning problem, runs targets in order under opts->cap
 * and returns MG_OK with *out NULL when the cap cannot be met. opts->keep is not supported
 * (checkpointing is sched_remat.c's). */
#include "plan.h"
#include "score_heap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct rc_sim {
    const mg_problem *pr;
    const mg_sched_opts *o;
    mg_plan_builder b;
    int now, ntargets, cur; /* the current target: its position and node */
    int *use_start, *uses, *uptr; /* per node: positions of the targets that read it, the next one */
    int *out_start, *out;         /* CSR: the consumers of each node */
    int *lock;                    /* per node: reads by nodes on the recursion path */
    int *need;                    /* per node: reads still to come in the current preparation */
    int *ut;                      /* per resident node: its use_time, when ut_valid */
    double *fc; int *fc_at;       /* per node: future_cost, and the use time it was computed for */
    char *ut_valid;
    int *touched, ntouched;       /* nodes whose need was set in the current preparation */
    int *res, *res_pos, nres;     /* resident evictable workspace values */
    double *rc, rc_cap;           /* per dropped node: the cost of bringing it back when dropped */
    int *mark, stamp;             /* visit marks of the closure walks */
    int *walk;                    /* the closure walk's stack */
    int64_t *est;                 /* per node: bytes of its dropped closure (input ordering) */
    int *frame_v, *frame_k, *frame_ord, *ord; /* the recursion: node, next input, its order */
    int64_t step_limit, prep_limit; /* on all steps, and on the current preparation's */
    int64_t below, above;         /* the largest live-plus-need met that fit the cap, the least that did not */
    double *sc; int *sc_at, epoch; /* per resident node: its score, valid while sc_at is the epoch */
    mg_score_ent *heap;          /* scored residents by (score, node); see make_room */
    int nheap, capheap, *ver;     /* per node: the version its live heap entry carries */
    int *dirty, ndirty, full;     /* nodes whose score was forgotten since the heap was built; all of them */
    char *in_dirty;
    mg_score_ent *held;            /* locked entries popped during one choice, pushed back after it */
    double *rest;                 /* per target position i: the cost of the targets after it, each once */
} rc_sim;

/* A value's score changes when the position of the target under way does (a new epoch), when
 * its use_time may (its cache is forgotten, or the preparation stops needing it), and when an
 * input of it is dropped or brought back (its recompute cost). */
static void forget_score(rc_sim *s, int v)
{
    s->sc_at[v] = -1;
    if (!s->full && s->res_pos[v] >= 0 && !s->in_dirty[v]) { /* (compute files a new resident) */
        s->in_dirty[v] = 1;
        s->dirty[s->ndirty++] = v;
    }
}

static void forget_consumers(rc_sim *s, int v)
{
    for (int k = s->out_start[v]; k < s->out_start[v + 1]; k++) forget_score(s, s->out[k]);
}

/* A new epoch: every score is forgotten, and the heap is rebuilt when next needed. */
static void new_epoch(rc_sim *s)
{
    s->epoch++;
    s->full = 1;
}

static int next_use(const rc_sim *s, int v)
{
    int k = s->use_start[v] + s->uptr[v];
    return k < s->use_start[v + 1] ? s->uses[k] : INT32_MAX;
}

static double recompute_cost(const rc_sim *s, int v)
{
    return mg_recompute_cost(s->pr, s->b.where, s->rc, s->rc_cap, v);
}

/* When v is read next: by the preparation under way (now), by a target, or by the
 * recomputation of a dropped value downstream of it (through dropped values only: the walk
 * stops after a few dozen) that a target still needs. */
static int use_time(rc_sim *s, int v)
{
    enum { LIMIT = 32 };
    if (s->need[v] > 0) return s->now;
    if (s->ut_valid[v]) return s->ut[v];
    int t = next_use(s, v), stamp = ++s->stamp, sp = 0, seen = 0;
    s->walk[sp++] = v;
    while (sp > 0 && seen++ < LIMIT) {
        int x = s->walk[--sp];
        for (int k = s->out_start[x]; k < s->out_start[x + 1]; k++) {
            int c = s->out[k];
            if (s->b.where[c].mem != MG_MEM_NONE || s->mark[c] == stamp) continue;
            s->mark[c] = stamp; /* dropped (or not yet computed: then it reads x later anyway) */
            int u = next_use(s, c);
            if (u < t) t = u;
            if (c >= s->cur) continue; /* not computed yet: what reads it comes later still */
            s->walk[sp++] = c;
        }
    }
    s->ut_valid[v] = 1;
    return s->ut[v] = t;
}

/* use_time is cached per resident value; it changes when a value downstream of it (through
 * dropped values) is dropped or brought back, and when a target reads it. This forgets it for
 * the resident values upstream of v, through dropped values (a bounded walk, like use_time's). */
static void forget_upstream(rc_sim *s, int v)
{
    enum { LIMIT = 32 };
    const mg_problem *pr = s->pr;
    int stamp = ++s->stamp, sp = 0, seen = 0;
    s->ut_valid[v] = 0;
    forget_score(s, v);
    s->walk[sp++] = v;
    while (sp > 0 && seen++ < LIMIT) {
        int x = s->walk[--sp];
        for (int k = pr->in_start[x]; k < pr->in_start[x + 1]; k++) {
            int u = pr->in[k];
            if (s->mark[u] == stamp) continue;
            s->mark[u] = stamp;
            s->ut_valid[u] = 0;
            forget_score(s, u);
            if (s->b.where[u].mem == MG_MEM_NONE) s->walk[sp++] = u;
        }
    }
}

/* What bringing v back at position ut will cost if nothing is kept for it: v and every ancestor
 * that no target reads at or after ut (those will have been freed by then), through such
 * ancestors only; a bounded walk, capped. */
static double future_cost(rc_sim *s, int v, int ut)
{
    enum { LIMIT = 64 };
    const mg_problem *pr = s->pr;
    int stamp = ++s->stamp, sp = 0, seen = 0;
    double c = pr->cost[v] + 1;
    s->walk[sp++] = v;
    s->mark[v] = stamp;
    while (sp > 0 && seen++ < LIMIT) {
        int x = s->walk[--sp];
        for (int k = pr->in_start[x]; k < pr->in_start[x + 1]; k++) {
            int u = pr->in[k];
            if (s->mark[u] == stamp || !pr->target[u] || !pr->evictable[u]) continue;
            s->mark[u] = stamp;
            if (s->use_start[u + 1] > s->use_start[u] && s->uses[s->use_start[u + 1] - 1] >= ut) continue;
            c += pr->cost[u] + 1;
            s->walk[sp++] = u;
        }
    }
    return c < s->rc_cap ? c : s->rc_cap;
}

static double score(rc_sim *s, int v)
{
    int ut = use_time(s, v);
    if (ut == INT32_MAX) return -1; /* nothing will read it: dropped first, at no cost */
    double dist = (double)ut - s->now + 1, size = (double)s->pr->bytes[v] + 1;
    if (s->o->rc == 2) { /* the future cost too, where it exceeds what is known now */
        if (s->fc_at[v] != ut) {
            s->fc[v] = future_cost(s, v, ut);
            s->fc_at[v] = ut;
        }
        double now_cost = recompute_cost(s, v), c = s->fc[v] > now_cost ? s->fc[v] : now_cost;
        return mg_evict_score(s->o->policy, c, size, dist);
    }
    return mg_evict_score(s->o->policy, recompute_cost(s, v), size, dist);
}

static void res_remove(rc_sim *s, int v)
{
    int i = s->res_pos[v], last = s->res[--s->nres];
    s->res[i] = last;
    s->res_pos[last] = i;
    s->res_pos[v] = -1;
}

static void release(rc_sim *s, int v)
{
    if (s->b.where[v].mem != MG_MEM_WS) return;
    s->rc[v] = recompute_cost(s, v);
    mg_pb_release(&s->b, v);
    forget_upstream(s, v);
    forget_consumers(s, v);
    if (s->res_pos[v] >= 0) res_remove(s, v);
}

/* An entry is live while its node is resident, its score valid and the entry its latest. */
static int live(const rc_sim *s, const mg_score_ent *e)
{
    return s->res_pos[e->node] >= 0 && s->sc_at[e->node] == s->epoch && s->ver[e->node] == e->ver;
}

static void heap_push(rc_sim *s, mg_score_ent e)
{
    if (s->nheap == s->capheap) { /* at most one live entry a node: dropping the rest makes room */
        int m = 0;
        for (int i = 0; i < s->nheap; i++)
            if (live(s, &s->heap[i])) s->heap[m++] = s->heap[i];
        s->nheap = m;
        mg_score_heapify(s->heap, s->nheap);
    }
    mg_score_push(s->heap, &s->nheap, e);
}

static mg_score_ent scored(rc_sim *s, int v)
{
    s->sc[v] = score(s, v);
    s->sc_at[v] = s->epoch;
    return (mg_score_ent){s->sc[v], v, ++s->ver[v]};
}

/* Scores the unlocked residents whose score is not valid and files them: the residents the scan
 * of every resident before each choice scored, at the same moments, so every score and every
 * choice is the scan's (scoring has no effect on other values' scores). After a new epoch that
 * is every resident, and the heap is built afresh; in between only the forgotten ones (the
 * dirty list), so a choice costs a heap pop instead of a scan. On the 5,000-step relu chain at
 * 10%, sched_rc.c made 7.2 million choices among 143 residents on average (a billion visits)
 * but scored only 51 million times; sched_rc.c's share of the samples fell by a third, and the
 * solve from 13.3 to 12.0 s (median of 3, both builds interleaved, a loaded machine). */
static void refresh(rc_sim *s)
{
    int m = 0;
    if (s->full) {
        while (s->ndirty > 0) s->in_dirty[s->dirty[--s->ndirty]] = 0;
        s->nheap = 0;
        for (int i = 0; i < s->nres; i++) {
            int v = s->res[i];
            if (s->lock[v]) {
                s->in_dirty[v] = 1;
                s->dirty[s->ndirty++] = v;
            } else {
                s->heap[s->nheap++] = scored(s, v);
            }
        }
        mg_score_heapify(s->heap, s->nheap);
        s->full = 0;
        return;
    }
    for (int i = 0; i < s->ndirty; i++) {
        int v = s->dirty[i];
        if (s->res_pos[v] < 0 || s->sc_at[v] == s->epoch) {
            s->in_dirty[v] = 0;
        } else if (s->lock[v]) {
            s->dirty[m++] = v; /* scored once unlocked */
        } else {
            s->in_dirty[v] = 0;
            heap_push(s, scored(s, v));
        }
    }
    s->ndirty = m;
}

/* Drops unlocked resident values, least score first (ties: the least node), until need more
 * bytes fit under the cap. Scores are never NaN (dist >= 1, size >= 1, cost finite), so the
 * heap's least live unlocked entry is the least of a scan. */
static int make_room(rc_sim *s, int64_t need)
{
    for (;;) {
        /* the cap is read only here: every cap in [below, above) makes the same choices */
        int64_t x = s->b.live + need;
        if (x <= s->o->cap) {
            if (x > s->below) s->below = x;
            break;
        }
        if (x < s->above) s->above = x;
        refresh(s);
        int best = -1, nheld = 0;
        while (s->nheap > 0) {
            mg_score_ent e = mg_score_pop(s->heap, &s->nheap);
            if (!live(s, &e)) continue;
            if (s->lock[e.node]) {
                s->held[nheld++] = e;
                continue;
            }
            best = e.node;
            break;
        }
        while (nheld > 0) heap_push(s, s->held[--nheld]);
        if (best < 0) return 0;
        release(s, best);
    }
    return 1;
}

static int compute(rc_sim *s, int v, int recompute)
{
    const mg_problem *pr = s->pr;
    if (s->b.p->nsteps >= s->step_limit || (recompute && s->b.p->nsteps >= s->prep_limit)) return 0;
    /* past the limit, or sure to pass it (every later target still runs once, and the one being
     * prepared): such a schedule is given up on anyway, giving up early only saves time */
    if (s->o->flops_limit > 0 &&
        s->b.p->flops_executed + pr->cost[v] + (recompute ? pr->cost[s->cur] : 0) + s->rest[s->now] >
            s->o->flops_limit)
        return 0;
    if (!make_room(s, pr->bytes[v] + pr->scratch[v])) return 0;
    mg_pb_compute(&s->b, v, recompute);
    forget_upstream(s, v);
    forget_consumers(s, v);
    if (s->b.where[v].mem == MG_MEM_WS && pr->evictable[v] && !pr->keep_to_end[v]) {
        s->res_pos[v] = s->nres;
        s->res[s->nres++] = v;
        forget_score(s, v); /* (it was not resident when forget_upstream forgot it) */
    }
    for (int k = pr->in_start[v]; k < pr->in_start[v + 1]; k++)
        if (s->need[pr->in[k]] > 0 && --s->need[pr->in[k]] == 0) forget_score(s, pr->in[k]);
    return 1;
}

/* Walks the dropped values t needs (through dropped values, down to resident ones): sets how
 * often the walk's nodes are read in it (need) and, per dropped value, the bytes of its own
 * dropped closure (est; shared ancestors counted in each, a rough order key). */
static void plan_preparation(rc_sim *s, int t)
{
    const mg_problem *pr = s->pr;
    int stamp = ++s->stamp, sp = 0, walked = 0;
    s->walk[sp++] = t;
    s->mark[t] = stamp;
    while (sp > 0) {
        int v = s->walk[--sp];
        walked++;
        for (int k = pr->in_start[v]; k < pr->in_start[v + 1]; k++) {
            int u = pr->in[k];
            if (s->need[u]++ == 0) s->touched[s->ntouched++] = u;
            if (s->b.where[u].mem == MG_MEM_NONE && s->mark[u] != stamp) {
                s->mark[u] = stamp;
                s->walk[sp++] = u;
            }
        }
    }
    /* a preparation that recomputes its values more than twice over is thrashing: the cap is
     * too tight for this policy (failing early keeps infeasible caps cheap to try) */
    s->prep_limit = s->b.p->nsteps + 2 * (int64_t)walked + 16;
    new_epoch(s); /* a new target position, new needs: every score afresh */
}

/* Bytes of u's dropped closure, the walk stopping after limit nodes (enough to order by). */
static int64_t closure_bytes(rc_sim *s, int u)
{
    const mg_problem *pr = s->pr;
    enum { LIMIT = 256 };
    int stamp = ++s->stamp, sp = 0, seen = 0;
    int64_t bytes = 0;
    s->walk[sp++] = u;
    s->mark[u] = stamp;
    while (sp > 0 && seen < LIMIT) {
        int v = s->walk[--sp];
        seen++;
        bytes += pr->bytes[v];
        for (int k = pr->in_start[v]; k < pr->in_start[v + 1]; k++) {
            int w = pr->in[k];
            if (s->b.where[w].mem == MG_MEM_NONE && s->mark[w] != stamp) {
                s->mark[w] = stamp;
                s->walk[sp++] = w;
            }
        }
    }
    return bytes;
}

/* v's input slots in the order they are brought back: the largest dropped closure first (est:
 * -1 for the inputs resident now). With one dropped input there is nothing to order, and its
 * closure is not walked (on a long chain that walk was most of a preparation). */
static void order_inputs(rc_sim *s, int v, int *ord)
{
    const mg_problem *pr = s->pr;
    int a = pr->in_start[v], m = pr->in_start[v + 1] - a, ndropped = 0;
    for (int i = 0; i < m; i++) ndropped += s->b.where[pr->in[a + i]].mem == MG_MEM_NONE;
    for (int i = 0; i < m; i++) {
        int u = pr->in[a + i];
        s->est[a + i] = s->b.where[u].mem != MG_MEM_NONE ? -1 : ndropped > 1 ? closure_bytes(s, u) : 0;
        int j = i;
        for (; j > 0 && s->est[a + ord[j - 1]] < s->est[a + i]; j--) ord[j] = ord[j - 1];
        ord[j] = i;
    }
}

/* Brings every input of target t back and locks each read (the recursion is iterative: a frame
 * per node being prepared). Each node on the path locks its resident inputs when entered, and
 * each dropped one once it is back; a node, once computed, unlocks its inputs. */
static int prepare(rc_sim *s, int t)
{
    const mg_problem *pr = s->pr;
    int sp = 0, ordtop = 0, ok = 1;
    plan_preparation(s, t);
    s->frame_v[sp] = t;
    s->frame_k[sp] = -1;
    s->frame_ord[sp++] = 0;
    while (sp > 0 && ok) {
        int v = s->frame_v[sp - 1], a = pr->in_start[v], m = pr->in_start[v + 1] - a;
        int *ord = s->ord + s->frame_ord[sp - 1];
        if (s->frame_k[sp - 1] < 0) { /* entered: lock what is here, order what is not */
            for (int k = a; k < a + m; k++)
                if (s->b.where[pr->in[k]].mem != MG_MEM_NONE) s->lock[pr->in[k]]++;
            order_inputs(s, v, ord);
            ordtop = s->frame_ord[sp - 1] + m;
            s->frame_k[sp - 1] = 0;
        }
        int k = s->frame_k[sp - 1];
        if (k < m) {
            int slot = ord[k], u = pr->in[a + slot];
            if (s->est[a + slot] < 0) { /* resident at entry: locked then */
                s->frame_k[sp - 1]++;
                continue;
            }
            if (s->b.where[u].mem != MG_MEM_NONE) { /* back (or brought back by a sibling) */
                s->lock[u]++;
                s->frame_k[sp - 1]++;
                continue;
            }
            s->frame_v[sp] = u; /* bring u back first; this slot is revisited after */
            s->frame_k[sp] = -1;
            s->frame_ord[sp++] = ordtop;
            continue;
        }
        sp--;
        if (v == t) break;
        ok = compute(s, v, 1);
        for (int j = a; j < a + m; j++) s->lock[pr->in[j]]--;
        ordtop = s->frame_ord[sp - 1] + (pr->in_start[s->frame_v[sp - 1] + 1] - pr->in_start[s->frame_v[sp - 1]]);
    }
    return ok;
}

/* After target t at position pos: unlock its inputs, pass their uses, clear the preparation's
 * needs, and free the values that must not be dropped once nothing reads them any more. */
static void after_target(rc_sim *s, int t, int pos)
{
    const mg_problem *pr = s->pr;
    for (int k = pr->in_start[t]; k < pr->in_start[t + 1]; k++) {
        int u = pr->in[k];
        s->lock[u]--;
        while (next_use(s, u) <= pos) s->uptr[u]++;
        s->ut_valid[u] = 0;
    }
    while (s->ntouched > 0) s->need[s->touched[--s->ntouched]] = 0;
    for (int k = pr->in_start[t]; k <= pr->in_start[t + 1]; k++) {
        int u = k < pr->in_start[t + 1] ? pr->in[k] : t;
        if (s->b.where[u].mem == MG_MEM_WS && !pr->keep_to_end[u] && next_use(s, u) == INT32_MAX &&
            (!pr->evictable[u] || use_time(s, u) == INT32_MAX))
            release(s, u);
    }
    new_epoch(s);
}

mg_status mg_schedule_rc(const mg_problem *pr, const mg_sched_opts *opts, mg_plan **out, mg_diag *d)
{
    return mg_schedule_rc_range(pr, opts, out, NULL, d);
}

/* What a run builds before it starts, the same for every schedule of the problem (the targets,
 * their reads, the consumers of each value), and the arrays it works in: ~30 arrays of n nodes,
 * which a run allocated afresh (fresh pages each, under ASan fresh mappings) where a caller
 * that schedules one problem many times (the minimum search: ~15 runs a probe) now clears
 * them. A run clears every array it reads before writing, so a schedule is the same with or
 * without a store. */
struct mg_rc_store {
    const mg_problem *pr;
    mg_sched_index ix; /* (nfwd_targets unused) */
    /* scratch, cleared for each schedule */
    int *uptr, *lock, *need, *ut, *fc_at, *touched, *res, *res_pos, *mark, *walk, *frame_v, *frame_k,
        *frame_ord, *ord, *sc_at, *ver, *dirty;
    double *fc, *rc, *sc;
    int64_t *est;
    char *ut_valid, *in_dirty;
    mg_score_ent *heap, *held; /* (read only below what a run pushed: not cleared) */
    int capheap;
    mg_pb_store pb;
    int busy;
};

/* What scratch_arrays does to each array (sched_rc's cleared scratch): allocate it zeroed, clear
 * it, or free it. */
enum scratch_op { SCRATCH_ALLOC, SCRATCH_CLEAR, SCRATCH_FREE };

static void *scratch_op(void *p, size_t bytes, enum scratch_op op)
{
    if (op == SCRATCH_ALLOC) return mg_xcalloc(1, bytes);
    if (op == SCRATCH_CLEAR) return memset(p, 0, bytes);
    free(p);
    return NULL;
}

/* The store's scratch, cleared for each schedule, listed once for its allocation, its clearing
 * and its freeing (each array apart, so that the sanitizers see each one's bounds). n1: nodes
 * + 1; e1: edges + 1 (unused when freeing). */
static void scratch_arrays(mg_rc_store *z, size_t n1, size_t e1, enum scratch_op op)
{
    z->uptr = scratch_op(z->uptr, n1 * sizeof *z->uptr, op);
    z->lock = scratch_op(z->lock, n1 * sizeof *z->lock, op);
    z->need = scratch_op(z->need, n1 * sizeof *z->need, op);
    z->ut = scratch_op(z->ut, n1 * sizeof *z->ut, op);
    z->fc = scratch_op(z->fc, n1 * sizeof *z->fc, op);
    z->fc_at = scratch_op(z->fc_at, n1 * sizeof *z->fc_at, op);
    z->ut_valid = scratch_op(z->ut_valid, n1 * sizeof *z->ut_valid, op);
    z->touched = scratch_op(z->touched, n1 * sizeof *z->touched, op);
    z->res = scratch_op(z->res, n1 * sizeof *z->res, op);
    z->res_pos = scratch_op(z->res_pos, n1 * sizeof *z->res_pos, op);
    z->rc = scratch_op(z->rc, n1 * sizeof *z->rc, op);
    z->mark = scratch_op(z->mark, n1 * sizeof *z->mark, op);
    z->walk = scratch_op(z->walk, n1 * sizeof *z->walk, op);
    z->est = scratch_op(z->est, e1 * sizeof *z->est, op);
    z->frame_v = scratch_op(z->frame_v, n1 * sizeof *z->frame_v, op);
    z->frame_k = scratch_op(z->frame_k, n1 * sizeof *z->frame_k, op);
    z->frame_ord = scratch_op(z->frame_ord, n1 * sizeof *z->frame_ord, op);
    z->ord = scratch_op(z->ord, e1 * sizeof *z->ord, op);
    z->sc = scratch_op(z->sc, n1 * sizeof *z->sc, op);
    z->sc_at = scratch_op(z->sc_at, n1 * sizeof *z->sc_at, op);
    z->ver = scratch_op(z->ver, n1 * sizeof *z->ver, op);
    z->dirty = scratch_op(z->dirty, n1 * sizeof *z->dirty, op);
    z->in_dirty = scratch_op(z->in_dirty, n1 * sizeof *z->in_dirty, op);
}

mg_rc_store *mg_rc_store_new(const mg_problem *pr)
{
    int n = pr->n;
    mg_rc_store *z = mg_xcalloc(1, sizeof *z);
    z->pr = pr;
    mg_sched_index_init(&z->ix, pr);
    size_t n1 = (size_t)n + 1, e1 = (size_t)pr->in_start[n] + 1;
    scratch_arrays(z, n1, e1, SCRATCH_ALLOC);
    z->capheap = 2 * n + 16;
    z->heap = mg_xcalloc((size_t)z->capheap, sizeof *z->heap);
    z->held = mg_xcalloc(n1, sizeof *z->held);
    return z;
}

void mg_rc_store_free(mg_rc_store *z)
{
    if (!z) return;
    mg_sched_index_free(&z->ix);
    scratch_arrays(z, 0, 0, SCRATCH_FREE);
    free(z->heap);
    free(z->held);
    mg_pb_store_free(&z->pb);
    free(z);
}

/* Clears z's scratch to the state mg_rc_store_new left it in. */
static void rc_store_clear(mg_rc_store *z)
{
    scratch_arrays(z, (size_t)z->pr->n + 1, (size_t)z->pr->in_start[z->pr->n] + 1, SCRATCH_CLEAR);
}

mg_status mg_schedule_rc_range(const mg_problem *pr, const mg_sched_opts *opts, mg_plan **out, int64_t range[2],
                               mg_diag *d)
{
    int n = pr->n;
    (void)d;
    *out = NULL;
    /* the caller's store when it is for this problem and free, else one for this schedule only */
    mg_rc_store *z = opts->rc_store && opts->rc_store->pr == pr && !opts->rc_store->busy ? opts->rc_store : NULL;
    mg_rc_store *own = z ? NULL : mg_rc_store_new(pr);
    if (z) rc_store_clear(z);
    else z = own;
    z->busy = 1;
    rc_sim s = {.pr = pr, .o = opts, .below = INT64_MIN, .above = INT64_MAX};
    mg_pb_init_in(&s.b, pr, own ? NULL : &z->pb);
    const int *targets = z->ix.targets;
    s.ntargets = z->ix.ntargets;
    s.rest = z->ix.rest;
    s.use_start = z->ix.use_start;
    s.uses = z->ix.uses;
    s.out_start = z->ix.out_start;
    s.out = z->ix.out;
    s.uptr = z->uptr;
    s.lock = z->lock;
    s.need = z->need;
    s.ut = z->ut;
    s.fc = z->fc;
    s.fc_at = z->fc_at;
    s.ut_valid = z->ut_valid;
    s.touched = z->touched;
    s.res = z->res;
    s.res_pos = z->res_pos;
    s.rc = z->rc;
    s.mark = z->mark;
    s.walk = z->walk;
    s.est = z->est;
    s.frame_v = z->frame_v;
    s.frame_k = z->frame_k;
    s.frame_ord = z->frame_ord;
    s.ord = z->ord;
    s.sc = z->sc;
    s.sc_at = z->sc_at;
    s.capheap = z->capheap;
    s.heap = z->heap;
    s.held = z->held;
    s.ver = z->ver;
    s.dirty = z->dirty;
    s.in_dirty = z->in_dirty;
    s.full = 1;
    for (int v = 0; v < n; v++) s.res_pos[v] = s.fc_at[v] = s.sc_at[v] = -1;
    s.rc_cap = s.b.p->flops_once + n;
    s.step_limit = (int64_t)s.ntargets * 8 + 10000; /* as sched_remat.c's */
    mg_pb_reserve(&s.b, s.step_limit + pr->nfinal + 1);

    int ok = 1;
    for (int i = 0; i < s.ntargets && ok; i++) {
        s.now = i;
        int t = s.cur = targets[i];
        ok = prepare(&s, t) && compute(&s, t, 0);
        if (ok) after_target(&s, t, i);
    }
    if (ok) *out = mg_pb_finish(&s.b);
    else mg_pb_discard(&s.b);
    if (range) {
        range[0] = s.below;
        range[1] = s.above;
    }
    z->busy = 0;
    mg_rc_store_free(own);
    return MG_OK;
}
