/* arena.c — static offset assignment: gives every buffer an offset in one arena so that no two
 * buffers live at the same time share a byte, and the arena (max offset+size) is small. This
 * file is the driver and the public API (arena.h; plan.h's mg_arena_assign*): it runs the
 * arena's passes, which have files of their own (shared through arena_internal.h).
 *
 * Why it exists: the workspace a generated step needs is this arena; every byte above the peak
 * of live bytes (the lower bound) is waste the user pays for, and under a budget it decides
 * whether a plan fits at all.
 *
 * How, cheapest first:
 *  1. Greedy placements (arena_greedy.c): up to MG_ARENA_GREEDY_MAX buffers the greedy orders,
 *     above MG_ARENA_SCAN_FROM also a linear scan in time order, the better kept, and above
 *     MG_ARENA_GREEDY_MAX the linear scan alone. (Up to 2026-12-03 the scan alone took over at
 *     20000: mlp_deep's plans in 32 parts have 20,000-25,500 buffers, where the scan wasted
 *     8-31% above the peak of live bytes and the greedy orders reach the peak on nearly every
 *     one, at 5-7 ms against 2-3 ms.)
 *  2. When that misses the target (the capacity asked for, else the lower bound), an exact
 *     depth-first branch and bound in the manner of MiniMalloc (arena_search.c), on up to
 *     MG_ARENA_SEARCH_MAX buffers (the planner's: MG_ARENA_PLAN_SEARCH_MAX). Without a
 *     capacity, a failed search at the lower bound is followed by bisection (the command) or
 *     given up (the planner). Every placement the search finds is compacted as the greedy's
 *     are (arena_greedy.c; it stops at the first that meets its target, often with room below
 *     the top).
 * The search is bounded by wall-clock time (the `arena` command) or by a deterministic effort
 * count (the planner, so that plans do not depend on the machine's speed).
 * A caller that places plan after plan may keep an mg_arena_scratch (mg_arena_assign_in): each
 * placement's tables are then cut from memory kept from the last, not allocated afresh. */
#include "arena_internal.h"
#include "clock.h"

#include <math.h>

enum {
    MG_ARENA_GREEDY_MAX = 40000, /* buffers; above this the linear scan takes over */
    MG_ARENA_SCAN_FROM = 20000,  /* buffers; above this the linear scan runs too, the better kept */
};
static const int64_t plan_work_limit = 4000000;
static const double FIT_SHARE = 1.0;   /* mg_arena_assign's search effort (~30 ms) */

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) abort();
    return p;
}

/* A caller's scratch (mg_arena_assign_in): every table of a placement is cut from one block
 * kept from placement to placement, so the placements a planner makes one after the other work
 * in pages already mapped (freeing and allocating them again had glibc trim the heap top and
 * the kernel map fresh pages each time). What does not fit the block this time is allocated
 * apart, and the block grows to what was asked for when the placement ends. P NULL: malloc. */
struct mg_arena_scratch {
    char *block;
    size_t cap, used, asked;
    void **extra; /* allocated apart this time */
    size_t nextra, capextra;
};

mg_arena_scratch *mg_arena_scratch_new(void)
{
    return mg_xcalloc(1, sizeof(mg_arena_scratch));
}

void mg_arena_scratch_free(mg_arena_scratch *P)
{
    if (!P) return;
    for (size_t i = 0; i < P->nextra; i++) free(P->extra[i]);
    free(P->extra);
    free(P->block);
    free(P);
}

void *mg_arena_pal(mg_arena_scratch *P, size_t n)
{
    if (!P) return xmalloc(n);
    n = (n + 63) & ~(size_t)63;
    P->asked += n;
    if (n <= P->cap - P->used) {
        void *p = P->block + P->used;
        P->used += n;
        return p;
    }
    if (P->nextra == P->capextra) {
        P->capextra = P->capextra ? 2 * P->capextra : 16;
        P->extra = realloc(P->extra, P->capextra * sizeof *P->extra);
        if (!P->extra) abort();
    }
    return P->extra[P->nextra++] = xmalloc(n);
}

void *mg_arena_pcal(mg_arena_scratch *P, size_t count, size_t size)
{
    if (!P) return mg_xcalloc(count, size);
    void *p = mg_arena_pal(P, count * size);
    memset(p, 0, count * size);
    return p;
}

/* After a placement: everything given back; the block grown to hold the next like it. */
static void scratch_reset(mg_arena_scratch *P)
{
    if (!P) return;
    for (size_t i = 0; i < P->nextra; i++) free(P->extra[i]);
    P->nextra = 0;
    if (P->asked > P->cap) {
        free(P->block);
        P->cap = P->asked + P->asked / 4;
        P->block = xmalloc(P->cap);
    }
    P->used = P->asked = 0;
}

int64_t mg_arena_lower_bound(const mg_interval *iv, int n)
{
    live_set ls;
    mg_arena_live_set_init(&ls, iv, n, NULL);
    int64_t lb = ls.lower_bound;
    mg_arena_live_set_free(&ls);
    return lb;
}

/* Takes the search's last success when it checks out and beats *top, compacted. */
static int try_result(const search *s, const live_set *ls, int64_t *top, int64_t *best)
{
    int64_t t = mg_arena_search_result(s);
    if (t < 0 || t >= *top) return 0;
    for (int u = 0; u < s->m; u++) best[s->live[u]] = s->sol[u];
    *top = mg_arena_compact_placement(ls, best, t);
    return 1;
}

/* bisect: without a capacity, bisect between the lower bound and the best found when the
 * bound is not met (the command); else all the effort goes to the bound (the planner, which
 * calls this many times and mostly has plans that meet it). fallback (the planner's budget;
 * INT64_MAX: none): when the search misses the bound and the arena is still above fallback, a
 * second search with as much effort again aims at fallback, a target often far easier to meet
 * than the bound. */
static int64_t place_with_limits(mg_interval *iv, int n, const mg_arena_opts *opts, int search_max, int bisect,
                                 int compact_large, int64_t fallback, mg_arena_stats *st, mg_arena_scratch *P)
{
    mg_arena_stats stats = {.same_lo = INT64_MIN, .same_hi = INT64_MAX};
    for (int i = 0; i < n; i++) iv[i].offset = 0;
    live_set ls;
    mg_arena_live_set_init(&ls, iv, n, P);
    int m = ls.m;
    int64_t *best = mg_arena_pcal(P, (size_t)m, sizeof *best);
    int64_t top = INT64_MAX;
    /* compact_large: the command compacts a large placement it will not search: resnet18_64's in 16
     * parts, 7.93 -> 6.33% above the peak on average (26 of 4,813-7,591 buffers, up to 11.33 ->
     * 6.28%). Not the planner's: its choices are tuned to these placements, and better ones moved
     * its plans both ways (compacting every large placement, or those within 2% of the budget:
     * resnet18_64 at 1.10 times its minimum 69.76 -> 52.4 / 55.3% recomputed, but at 1.05 times
     * 63.88 -> 96.8 / 80.8%, its minimum search 4,922,432 -> 4,987,968 bytes, +0.7 s CPU at 75%);
     * the planner compacts only the near misses it rescues at the end of a solve (planner.c).
     * Not where the command searches (up to MG_ARENA_SEARCH_MAX): its bisection, started lower,
     * ended higher on bench/data/arena_large's 3,470 buffers (11.90 -> 14.53% in 10 s). */
    if (m <= MG_ARENA_GREEDY_MAX)
        top = mg_arena_greedy_best(&ls, best, m > MG_ARENA_SCAN_FROM, compact_large && m > search_max);
    if (m > MG_ARENA_SCAN_FROM && top > ls.lower_bound) {
        int64_t *scan = mg_arena_pal(P, (size_t)m * sizeof *scan);
        int64_t t = mg_arena_linear_scan(&ls, scan);
        if (t < top) {
            top = t;
            memcpy(best, scan, (size_t)m * sizeof *best);
        }
        pfree(P, scan);
    }
    stats.lower_bound = ls.lower_bound;
    stats.greedy_bytes = top;
    /* the first target: the capacity, or the lower bound when there is none or the capacity
     * is below it (then the arena is made as small as it goes) */
    int64_t cap = opts->capacity;
    int64_t goal = cap == INT64_MAX || cap < ls.lower_bound ? ls.lower_bound : cap;
    int proven_infeasible_below = 0; /* 1: nothing smaller than top fits */
    if (top > goal && m <= search_max && opts->time_limit > 0 && opts->work_limit > 0) {
        search s;
        if (mg_arena_search_init(&s, &ls)) {
            stats.searched = 1;
            double end = mg_seconds() + opts->time_limit;
            int64_t proven = -1; /* the largest arena proven not to fit */
            int64_t lo = goal;   /* the largest arena that failed or was given up on */
            /* half of the effort for a capacity (what is left goes to coming close when it
             * is out of reach), a quarter for the lower bound, all for the planner */
            int r;
            /* (the comparisons with fallback below and in its search bound the fallbacks that
             * give this very placement, stats.same_lo/hi) */
            int over = top > fallback, above = over && fallback > goal;
            if (!bisect && opts->work_limit != INT64_MAX) {
                if (!over) stats.same_lo = top;
                else if (!above) stats.same_hi = goal < top - 1 ? goal : top - 1;
                else stats.same_lo = goal + 1, stats.same_hi = top - 1;
            }
            if (!bisect && above && opts->work_limit != INT64_MAX) {
                /* the planner, whose budget the greedy missed: first the budget (a target far
                 * easier than the bound, and all the planner needs) with a share of the effort;
                 * only when that succeeds does the rest go to the bound. Most placements that
                 * miss the budget at first miss it whatever the effort (the bound is out of
                 * reach), and these now cost a fraction of what they did. */
                r = mg_arena_probe(&s, fallback, FIT_SHARE, end, opts->work_limit);
                stats.same_lo = fallback; /* (the search's range reaches up only) */
                if (s.cap_hi < stats.same_hi) stats.same_hi = s.cap_hi;
                if (r == FOUND && try_result(&s, &ls, &top, best) && top > goal && mg_seconds() < end &&
                    mg_arena_probe(&s, goal, 1.0, end, opts->work_limit) == FOUND)
                    try_result(&s, &ls, &top, best);
                r = STOPPED;
            } else {
                r = mg_arena_probe(&s, goal, !bisect ? 1.0 : goal == ls.lower_bound ? 0.25 : 0.5, end,
                                   opts->work_limit);
                if (r == FOUND) try_result(&s, &ls, &top, best);
                if (r == NOTFOUND) proven = lo;
            }
            /* bisection between what failed and what fits, each probe with half of what is
             * left */
            while (bisect && r != FOUND && top - lo > 1 && mg_seconds() < end && s.work < opts->work_limit) {
                int64_t mid = lo + (top - lo) / 2;
                r = mg_arena_probe(&s, mid, 0.5, end, opts->work_limit);
                if (r == FOUND) {
                    if (!try_result(&s, &ls, &top, best)) break;
                    r = STOPPED; /* go on below */
                } else {
                    lo = mid;
                    if (r == NOTFOUND) proven = mid;
                }
            }
            if (proven >= 0 && top - proven == 1) proven_infeasible_below = 1;
            stats.nodes = s.total_nodes;
            mg_arena_search_free(&s);
        }
    }
    for (int i = 0; i < m; i++) iv[ls.idx[i]].offset = best[i];
    stats.arena_bytes = top;
    stats.optimal = top == ls.lower_bound || proven_infeasible_below;
    pfree(P, best);
    mg_arena_live_set_free(&ls);
    if (st) *st = stats;
    return top;
}

int64_t mg_arena_place_ex(mg_interval *iv, int n, const mg_arena_opts *opts, mg_arena_stats *st)
{
    return place_with_limits(iv, n, opts, MG_ARENA_SEARCH_MAX, 1, 1, INT64_MAX, st, NULL);
}

int64_t mg_arena_place(mg_interval *iv, int n, int64_t capacity, double time_limit_seconds, int *optimal)
{
    mg_arena_opts o = {capacity, time_limit_seconds, INT64_MAX};
    mg_arena_stats st;
    int64_t r = mg_arena_place_ex(iv, n, &o, &st);
    if (optimal) *optimal = st.optimal;
    return r;
}

mg_status mg_arena_assign(mg_plan *p, mg_diag *d)
{
    return mg_arena_assign_within(p, INT64_MAX, d);
}

mg_status mg_arena_assign_within(mg_plan *p, int64_t capacity, mg_diag *d)
{
    return mg_arena_assign_in(p, capacity, NULL, d);
}

mg_status mg_arena_assign_in(mg_plan *p, int64_t capacity, mg_arena_scratch *P, mg_diag *d)
{
    return mg_arena_assign_same(p, capacity, P, NULL, d);
}

mg_status mg_arena_assign_same(mg_plan *p, int64_t capacity, mg_arena_scratch *P, int64_t same[2], mg_diag *d)
{
    return mg_arena_assign_effort(p, capacity, 1.0, P, same, d);
}

/* mg_arena_assign_effort and mg_arena_assign_compacted */
static void assign(mg_plan *p, int64_t capacity, double effort, int compact_large, mg_arena_scratch *P, int64_t same[2])
{
    int n = p->nbufs;
    mg_interval *iv = mg_arena_pal(P, (size_t)n * sizeof *iv);
    for (int i = 0; i < n; i++)
        iv[i] = (mg_interval){p->bufs[i].first, (int64_t)p->bufs[i].last + 1, p->bufs[i].bytes, 0};
    /* the effort limit alone (about 30 ms optimised, 0.3 s under the sanitizers), no clock: a
     * backstop of 3 s of wall clock could stop a search on a very loaded machine, and so give
     * another placement and another plan */
    mg_arena_opts o = {INT64_MAX, INFINITY, (int64_t)((double)plan_work_limit * effort)};
    mg_arena_stats st;
    p->workspace_bytes = place_with_limits(iv, n, &o, MG_ARENA_PLAN_SEARCH_MAX, 0, compact_large, capacity, &st, P);
    if (same) {
        same[0] = st.same_lo;
        same[1] = st.same_hi;
    }
    for (int i = 0; i < n; i++) p->bufs[i].offset = iv[i].offset;
    pfree(P, iv);
    scratch_reset(P);
    p->peak_live_bytes = mg_plan_peak_live(p);
}

mg_status mg_arena_assign_effort(mg_plan *p, int64_t capacity, double effort, mg_arena_scratch *P, int64_t same[2],
                                 mg_diag *d)
{
    assign(p, capacity, effort, 0, P, same);
    (void)d;
    return MG_OK;
}

mg_status mg_arena_assign_compacted(mg_plan *p, int64_t capacity, mg_diag *d)
{
    assign(p, capacity, 1.0, 1, NULL, NULL);
    (void)d;
    return MG_OK;
}
