/* sched_improve.c — a local search over the eviction scheduler's per-value score weights
 * (mg_sched_opts.weight), for the budgets where the greedy policies are furthest from the
 * optimum: near the minimum feasible budget the eviction scheduler drops a value that a later
 * recomputation would have started from (it cannot see that far ahead), and then replays long
 * stretches of the forward pass from the start, once per backward block (resnet50 at its
 * minimum: its stem recomputed 8 times).
 *
 * From a variant's schedule, each move multiplies the weight of one value the schedule
 * recomputes by WUP (kept longer: later replays can start from it) or by 1/WUP (dropped
 * sooner: room for another), reschedules, and keeps the move when the schedule is cheaper and,
 * placed in the arena, still fits the budget (first improvement). Values are tried by what
 * keeping them would have saved, an estimate: each of their recomputations with the
 * recomputations it needed first. The search stops after max_schedules schedules or a full
 * round without an improvement. Every plan it returns is placed and fits; the caller verifies
 * the one it keeps. Deterministic: no clock, no randomness.
 *
 * The effort is counted in schedules, and a placement that misses the budget counts as
 * MISS_EFFORT of them: the arena's search then runs out of effort (twice: at the peak, then
 * within the budget), ~30 ms against ~0.3 ms for a schedule of resnet50. Near the minimum
 * budget most placements miss (resnet50 at 4.6 GB: 34 of 55, nearly all the search's time),
 * and which will is not told by anything cheaper than placing (the same peak of live bytes
 * both fits and misses). */
#include "plan.h"

#include <math.h>
#include <stdlib.h>

enum { WUP = 16, MISS_EFFORT = 10 };

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

/* The schedule under o, placed, when it is cheaper than `than` and fits budget; else NULL.
 * *left is charged for the schedule, and for a placement that missed. */
static mg_status try_opts(const mg_problem *pr, const mg_sched_opts *o, int64_t budget, double than, int *left,
                          mg_plan **out, mg_diag *d)
{
    *out = NULL;
    mg_sched_opts lim = *o;
    lim.flops_limit = than; /* give up as soon as it cannot be cheaper */
    (*left)--;
    mg_plan *p;
    if (mg_schedule(pr, &lim, &p, d)) return MG_ERR;
    if (!p) return MG_OK;
    if (p->flops_executed >= than) {
        mg_plan_free(p);
        return MG_OK;
    }
    if (mg_arena_assign_within(p, budget, d)) {
        mg_plan_free(p);
        return MG_ERR;
    }
    if (p->workspace_bytes > budget) {
        *left -= MISS_EFFORT - 1; /* (one counted above) */
        mg_plan_free(p);
        return MG_OK;
    }
    *out = p;
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
    mg_plan *cur = NULL; /* the schedule the moves start from (placed, within budget) */
    int nc = 0, pos = 0;
    if ((st = try_opts(pr, &o, budget, HUGE_VAL, &left, &cur, d)) || !cur) goto done;
    /* candidates in turn; after a kept move the list is rebuilt and scanned from its top again
     * (the values worth keeping change with the schedule): stop when a whole round keeps none */
    nc = recomputed(pr, cur, c, chain, acc);
    while (pos < nc && left > 0 && !st) {
        int v = c[pos].v, kept = 0;
        for (int dir = 0; dir < 2 && left > 0 && !kept; dir++) {
            double f = dir == 0 ? WUP : 1.0 / WUP;
            w[v] *= f;
            mg_plan *p;
            if ((st = try_opts(pr, &o, budget, cur->flops_executed, &left, &p, d))) break;
            if (p) {
                mg_plan_free(cur);
                cur = p;
                kept = 1;
            } else {
                w[v] /= f;
            }
        }
        if (kept) {
            nc = recomputed(pr, cur, c, chain, acc);
            pos = 0;
        } else {
            pos++;
        }
    }
    if (!st && cur && (!*best || cur->flops_executed < (*best)->flops_executed)) {
        mg_plan_free(*best);
        *best = cur;
        cur = NULL;
    }
done:
    mg_plan_free(cur);
    free(w);
    free(acc);
    free(chain);
    free(c);
    return st;
}
