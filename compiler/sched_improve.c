/* sched_improve.c — a local search over the eviction scheduler's per-value score weights
 * (mg_sched_opts.weight), for the budgets where the greedy policies are furthest from the
 * optimum: near the minimum feasible budget the eviction scheduler drops a value that a later
 * recomputation would have started from (it cannot see that far ahead), and then replays long
 * stretches of the forward pass from the start, once per backward block (resnet50 at its
 * minimum: its stem recomputed 8 times).
 *
 * From a variant's schedule, each move multiplies the weight of one value the schedule
 * recomputes by WUP (kept longer: later replays can start from it) or by 1/WUP (dropped
 * sooner: room for another), reschedules, and keeps the move when the schedule is cheaper
 * (first improvement; a value can be moved again: WUP^2 and so on). Values are tried by what
 * keeping them would have saved, an estimate: each of their recomputations with the
 * recomputations it needed first. After a full round without an improvement, a round of moves
 * by WUP^2 and 1/WUP^2 (an improvement there goes back to WUP); the walk stops after
 * max_schedules schedules or when that round keeps none too. WUP is 4, not 16 as before: finer
 * steps go further in the same schedules (resnet50 at its minimum: 1.1664 against 1.1733 and
 * more schedules), and the coarser round keeps what 16 found where 4 stops short (layered_n500
 * at 0.9 of its peak: 1.0082 without it, 1.0081). Deterministic: no clock, no randomness.
 *
 * The walk is judged by cost alone: its schedules are not placed in the arena as it goes.
 * Placing is what is dear (resnet50: ~10 ms when it fits, ~20 ms when it misses, against
 * ~0.3 ms for a schedule that gives up as soon as it cannot be cheaper), and near the minimum
 * budget which schedule will fit is told by nothing cheaper than placing (the same peak of live
 * bytes both fits and misses), while a walk that only crosses schedules that fit gets stuck
 * where a walk through some that miss reaches cheaper ones that fit again (resnet50 at its
 * minimum: 1.1856 of running every op once, placing every move, against 1.1664). Only its
 * start is placed first (a walk from a start that misses is not made), and at the end its last
 * RING schedules, newest first, until one fits (placements besides the
 * max_schedules schedules; the walk's states before them seldom fit where these miss: resnet50
 * at 4.6 GB, all miss by the same 0.7 GB); only a plan that fits is returned, and the caller
 * verifies the one it keeps. */
#include "plan.h"

#include <math.h>
#include <stdlib.h>

enum { WUP = 4, RING = 3 };

typedef struct cand {
    double flops; /* what recomputing it costs in the current schedule */
    int v;
} cand;

static int by_flops_desc(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->flops != y->flops) return x->flops < y->flops ? 1 : -1;
    return (x->v > y->v) - (x->v < y->v);
}

/* The values p recomputes, by what keeping them would have saved, most first: each
 * recomputation of v counts the cost of v and of the values recomputed for it (its inputs'
 * latest instances, when those were recomputations too). Returns how many. */
static int recomputed(const mg_problem *pr, const mg_plan *p, cand *c, double *chain, double *acc)
{
    int nc = 0;
    for (int v = 0; v < pr->n; v++) acc[v] = chain[v] = 0;
    for (int s = 0; s < p->nsteps; s++) {
        const mg_step *st = &p->steps[s];
        if (st->kind != MG_STEP_COMPUTE) continue;
        int v = st->node;
        if (!st->recompute) {
            chain[v] = 0;
            continue;
        }
        double cc = pr->cost[v];
        for (int k = pr->in_start[v]; k < pr->in_start[v + 1]; k++) cc += chain[pr->in[k]];
        chain[v] = cc;
        acc[v] += cc;
    }
    for (int v = 0; v < pr->n; v++)
        if (acc[v] > 0) c[nc++] = (cand){acc[v], v};
    qsort(c, (size_t)nc, sizeof *c, by_flops_desc);
    return nc;
}

/* Places p within budget, and when it fits there and is cheaper than *best, it becomes *best
 * (*taken: p is now owned there). */
static mg_status place(mg_plan *p, int64_t budget, mg_plan **best, int *taken, mg_diag *d)
{
    *taken = 0;
    if (mg_arena_assign_within(p, budget, d)) return MG_ERR;
    if (p->workspace_bytes <= budget && (!*best || p->flops_executed < (*best)->flops_executed)) {
        mg_plan_free(*best);
        *best = p;
        *taken = 1;
    }
    return MG_OK;
}

mg_status mg_improve_schedule(const mg_problem *pr, const mg_sched_opts *opts, int64_t budget, int max_schedules,
                              mg_plan **best, mg_diag *d)
{
    int n = pr->n, left = max_schedules;
    double *w = malloc(((size_t)n + 1) * sizeof *w), *acc = malloc(((size_t)n + 1) * sizeof *acc);
    double *chain = malloc(((size_t)n + 1) * sizeof *chain);
    cand *c = malloc(((size_t)n + 1) * sizeof *c);
    if (!w || !acc || !c || !chain) abort();
    for (int v = 0; v < n; v++) w[v] = 1;
    mg_sched_opts o = *opts;
    o.weight = w;
    o.flops_limit = 0;
    mg_status st = MG_OK;
    mg_plan *ring[RING] = {NULL}; /* the walk's last schedules, unplaced, ring[0] the newest */
    int nc = 0, pos = 0, phase = 0; /* phase 1: moves by WUP^2 */
    left--;
    if ((st = mg_schedule(pr, &o, &ring[0], d)) || !ring[0]) goto done;
    /* the start placed first: where it misses, the walk near it would end in schedules that
     * miss too (layered DAGs, whose arena adds waste above the cap: every walk's last schedules
     * missed), and it is not taken */
    int start = 0; /* where the start is in the ring (RING: gone) */
    if ((st = mg_arena_assign_within(ring[0], budget, d)) || ring[0]->workspace_bytes > budget) goto done;
    /* candidates in turn; after a kept move the list is rebuilt and scanned from its top again
     * (the values worth keeping change with the schedule): stop when a whole round keeps none,
     * at WUP and then at WUP^2 */
    nc = recomputed(pr, ring[0], c, chain, acc);
    for (;;) {
        if (pos >= nc && phase == 0) { /* a round without a move: the coarser steps */
            phase = 1;
            pos = 0;
        }
        if (pos >= nc || left <= 0) break;
        int v = c[pos].v, kept = 0;
        for (int dir = 0; dir < 2 && left > 0 && !kept; dir++) {
            double f = phase ? WUP * WUP : WUP;
            f = dir == 0 ? f : 1.0 / f;
            mg_sched_opts lim = o;
            lim.flops_limit = ring[0]->flops_executed; /* give up as soon as it cannot be cheaper */
            mg_plan *p;
            w[v] *= f;
            left--;
            if ((st = mg_schedule(pr, &lim, &p, d))) goto done;
            if (p && p->flops_executed < ring[0]->flops_executed) {
                mg_plan_free(ring[RING - 1]);
                for (int i = RING - 1; i > 0; i--) ring[i] = ring[i - 1];
                ring[0] = p;
                start += start < RING;
                kept = 1;
            } else {
                mg_plan_free(p);
                w[v] /= f;
            }
        }
        if (kept) {
            nc = recomputed(pr, ring[0], c, chain, acc);
            pos = phase = 0;
        } else {
            pos++;
        }
    }
    /* the walk's last schedules, newest (cheapest) first, until one fits and is cheaper than *best */
    for (int i = 0; i < RING && ring[i]; i++) {
        if (*best && ring[i]->flops_executed >= (*best)->flops_executed) break;
        int taken = 0;
        if (i == start) { /* placed already, and it fits */
            mg_plan_free(*best);
            *best = ring[i];
            taken = 1;
        } else if ((st = place(ring[i], budget, best, &taken, d))) {
            break;
        }
        if (taken) {
            ring[i] = NULL;
            break;
        }
    }
done:
    for (int i = 0; i < RING; i++) mg_plan_free(ring[i]);
    free(w);
    free(acc);
    free(chain);
    free(c);
    return st;
}
