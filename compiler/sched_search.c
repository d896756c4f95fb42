/* sched_search.c — the cheapest schedule of a small problem by best-first search, so that
 * `auto` is optimal wherever the search space is small (chains of a few layers, small blocks)
 * instead of only good.
 *
 * A state is (the next target, which workspace values are resident). From a state the
 * schedule may run the target, recompute a dropped forward value whose inputs are resident, or
 * drop a resident forward value; a step fits when the resident bytes plus its output and
 * scratch stay under the cap. After a target runs, values nothing can read any more are freed.
 * Dijkstra over these states (costs are the steps' FLOPs) finds the least total cost; it gives
 * up past a state budget and then says so, and the heuristic scheduler's plan stands. Unlike
 * the exact MILP, this search does not fix the order of recomputations within a stage. */
#include "plan.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

enum { MAX_VALUES = 64 };

typedef struct state {
    uint64_t mask;
    int64_t live; /* bytes of the resident values */
    int t, parent, action; /* action: v+1 computes v, -(v+1) drops v, 0 for the start */
    double dist;
    int done;
} state;

typedef struct search {
    const mg_problem *pr;
    int n, T, W;
    int *tg, *pos, *bit, *node_of_bit;
    uint64_t *dead_after; /* per stage: values nothing reads or recomputes after it */
    state *st;
    int nst, capst;
    int *table; /* open addressing: state index + 1, 0 empty */
    size_t tcap;
    double *hd; /* heap of (dist, state) */
    int *hs;
    int hn, hcap;
} search;

static size_t hash_of(uint64_t mask, int t, size_t cap)
{
    uint64_t h = (mask ^ ((uint64_t)(uint32_t)t * 0x9e3779b97f4a7c15ULL)) * 0xff51afd7ed558ccdULL;
    return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

static int *find(search *s, uint64_t mask, int t)
{
    size_t i = hash_of(mask, t, s->tcap);
    while (s->table[i] && (s->st[s->table[i] - 1].mask != mask || s->st[s->table[i] - 1].t != t))
        i = (i + 1) & (s->tcap - 1);
    return &s->table[i];
}

static void grow_table(search *s)
{
    free(s->table);
    s->tcap *= 2;
    s->table = mg_xcalloc(s->tcap, sizeof *s->table);
    for (int k = 0; k < s->nst; k++) *find(s, s->st[k].mask, s->st[k].t) = k + 1;
}

static void heap_push(search *s, double d, int k)
{
    if (s->hn == s->hcap) {
        s->hcap = s->hcap ? 2 * s->hcap : 1024;
        s->hd = realloc(s->hd, (size_t)s->hcap * sizeof *s->hd);
        s->hs = realloc(s->hs, (size_t)s->hcap * sizeof *s->hs);
        if (!s->hd || !s->hs) abort();
    }
    int i = s->hn++;
    while (i && s->hd[(i - 1) / 2] > d) {
        s->hd[i] = s->hd[(i - 1) / 2];
        s->hs[i] = s->hs[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    s->hd[i] = d;
    s->hs[i] = k;
}

static int heap_pop(search *s)
{
    int top = s->hs[0];
    double ld = s->hd[--s->hn];
    int lk = s->hs[s->hn], i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= s->hn) break;
        if (c + 1 < s->hn && s->hd[c + 1] < s->hd[c]) c++;
        if (s->hd[c] >= ld) break;
        s->hd[i] = s->hd[c];
        s->hs[i] = s->hs[c];
        i = c;
    }
    s->hd[i] = ld;
    s->hs[i] = lk;
    return top;
}

/* Records a path to (mask, t) of cost d from state parent by action; -1 past the budget. */
static int relax(search *s, uint64_t mask, int64_t live, int t, double d, int parent, int action, int max_states)
{
    int *slot = find(s, mask, t);
    if (!*slot) {
        if (s->nst >= max_states) return -1;
        if (s->nst == s->capst) {
            s->capst = s->capst ? 2 * s->capst : 4096;
            s->st = realloc(s->st, (size_t)s->capst * sizeof *s->st);
            if (!s->st) abort();
        }
        s->st[s->nst] = (state){mask, live, t, parent, action, INFINITY, 0};
        *slot = ++s->nst;
        if (2 * (size_t)s->nst > s->tcap) grow_table(s);
        slot = find(s, mask, t);
    }
    state *e = &s->st[*slot - 1];
    if (d < e->dist) {
        e->dist = d;
        e->parent = parent;
        e->action = action;
        heap_push(s, d, *slot - 1);
    }
    return 0;
}

static int ready(const search *s, int v, uint64_t mask)
{
    const mg_problem *pr = s->pr;
    for (int k = pr->in_start[v]; k < pr->in_start[v + 1]; k++) {
        int b = s->bit[pr->in[k]];
        if (b >= 0 && !(mask >> b & 1)) return 0;
    }
    return 1;
}

/* 0 when the problem has too many workspace values for a bit mask. */
static int setup(search *s, const mg_problem *pr)
{
    int n = pr->n;
    *s = (search){.pr = pr, .n = n};
    s->tg = mg_xcalloc((size_t)n, sizeof *s->tg);
    s->pos = mg_xcalloc((size_t)n, sizeof *s->pos);
    s->bit = mg_xcalloc((size_t)n, sizeof *s->bit);
    s->node_of_bit = mg_xcalloc(MAX_VALUES, sizeof *s->node_of_bit);
    for (int v = 0; v < n; v++) {
        s->pos[v] = s->bit[v] = -1;
        if (!pr->target[v]) continue;
        s->pos[v] = s->T;
        s->tg[s->T++] = v;
        if (pr->home[v].mem == MG_MEM_NONE && pr->bytes[v] > 0) {
            if (s->W == MAX_VALUES) return 0;
            s->node_of_bit[s->W] = v;
            s->bit[v] = s->W++;
        }
    }
    /* alive[v] at stage t: a later target reads v, or a value that may still be recomputed
     * and is itself alive does; keep_to_end values are always alive */
    s->dead_after = mg_xcalloc((size_t)s->T, sizeof *s->dead_after);
    char *alive = mg_xcalloc((size_t)n, 1);
    for (int t = 0; t < s->T; t++) {
        for (int v = n - 1; v >= 0; v--) {
            alive[v] = 0;
            if (s->pos[v] < 0 || s->pos[v] > t) continue;
            alive[v] = pr->keep_to_end[v];
            for (int j = v + 1; j < n && !alive[v]; j++) {
                if (s->pos[j] < 0) continue;
                int reads = 0;
                for (int k = pr->in_start[j]; k < pr->in_start[j + 1]; k++) reads |= pr->in[k] == v;
                if (reads) alive[v] = s->pos[j] > t || (pr->evictable[j] && s->bit[j] >= 0 && alive[j]);
            }
            if (!alive[v] && s->bit[v] >= 0) s->dead_after[t] |= 1ULL << s->bit[v];
        }
    }
    free(alive);
    s->tcap = 1 << 12;
    s->table = mg_xcalloc(s->tcap, sizeof *s->table);
    return 1;
}

static void teardown(search *s)
{
    free(s->tg);
    free(s->pos);
    free(s->bit);
    free(s->node_of_bit);
    free(s->dead_after);
    free(s->st);
    free(s->table);
    free(s->hd);
    free(s->hs);
}

/* Replays the path to goal with the plan builder. */
static mg_plan *replay(const search *s, int goal)
{
    const mg_problem *pr = s->pr;
    int len = 0;
    for (int k = goal; s->st[k].parent >= 0; k = s->st[k].parent) len++;
    int *actions = mg_xcalloc((size_t)len, sizeof *actions);
    for (int k = goal, i = len; s->st[k].parent >= 0; k = s->st[k].parent) actions[--i] = s->st[k].action;
    mg_plan_builder b;
    mg_pb_init(&b, pr);
    char *done = mg_xcalloc((size_t)pr->n, 1);
    for (int i = 0; i < len; i++) {
        int a = actions[i];
        if (a < 0) {
            mg_pb_release(&b, -a - 1);
            continue;
        }
        int v = a - 1, first = !done[v];
        mg_pb_compute(&b, v, !first);
        done[v] = 1;
        if (first) /* the stage's target: then what is dead is freed */
            for (int q = 0; q < s->W; q++)
                if (s->dead_after[s->pos[v]] >> q & 1) mg_pb_release(&b, s->node_of_bit[q]);
    }
    free(done);
    free(actions);
    return mg_pb_finish(&b);
}

mg_status mg_schedule_search(const mg_problem *pr, int64_t cap, int max_states, mg_plan **out, int *complete,
                             mg_diag *d)
{
    (void)d;
    *out = NULL;
    *complete = 0;
    search s;
    if (!setup(&s, pr)) {
        teardown(&s);
        return MG_OK;
    }
    int goal = -1, over = 0;
    relax(&s, 0, 0, 0, 0, -1, 0, max_states);
    while (s.hn && !over) {
        int k = heap_pop(&s);
        state cur = s.st[k];
        if (cur.done) continue;
        s.st[k].done = 1;
        if (cur.t == s.T) {
            goal = k;
            break;
        }
        int64_t live = cur.live;
        int v = s.tg[cur.t];
        int64_t out_bytes = s.bit[v] >= 0 ? pr->bytes[v] : 0;
        if (ready(&s, v, cur.mask) && live + out_bytes + pr->scratch[v] <= cap) {
            uint64_t m1 = cur.mask | (s.bit[v] >= 0 ? 1ULL << s.bit[v] : 0), m2 = m1 & ~s.dead_after[cur.t];
            int64_t l2 = live + out_bytes;
            for (uint64_t gone = m1 & ~m2; gone; gone &= gone - 1)
                l2 -= pr->bytes[s.node_of_bit[__builtin_ctzll(gone)]];
            over |= relax(&s, m2, l2, cur.t + 1, cur.dist + pr->cost[v], k, v + 1, max_states);
        }
        for (int q = 0; q < s.W && !over; q++) {
            int u = s.node_of_bit[q];
            if (!pr->evictable[u] || s.pos[u] >= cur.t) continue;
            if (cur.mask >> q & 1)
                over |= relax(&s, cur.mask & ~(1ULL << q), live - pr->bytes[u], cur.t, cur.dist, k, -(u + 1), max_states);
            else if (ready(&s, u, cur.mask) && live + pr->bytes[u] + pr->scratch[u] <= cap)
                over |= relax(&s, cur.mask | 1ULL << q, live + pr->bytes[u], cur.t, cur.dist + pr->cost[u], k, u + 1,
                              max_states);
        }
    }
    *complete = !over;
    if (goal >= 0) *out = replay(&s, goal);
    teardown(&s);
    return MG_OK;
}
