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
 * After the walks, the polish (mg_polish_schedule, at the end of this file) edits the best
 * plan's schedule itself: what no weights make the eviction scheduler do.
 *
 * The walk is judged by cost alone: its schedules are not placed in the arena as it goes.
 * Placing is what is dear (resnet50: ~10 ms when it fits, ~20 ms when it misses, against
 * ~0.3 ms for a schedule that gives up as soon as it cannot be cheaper), and near the minimum
 * budget which schedule will fit is told by nothing cheaper than placing (the same peak of live
 * bytes both fits and misses), while a walk that only crosses schedules that fit gets stuck
 * where a walk through some that miss reaches cheaper ones that fit again (resnet50 at its
 * minimum: 1.1856 of running every op once, placing every move, against 1.1664). Only its
 * start is placed first, and at the end its last RING schedules, newest first, until one fits
 * (placements besides the max_schedules schedules). A start that misses the budget by little
 * (at most 1/FAR of it) has its cap lowered in small steps (1/STEP of the budget, at most FIT
 * schedules) until it fits, and walks a third as far (layered DAGs, whose arena adds waste above
 * the cap); one that misses by more is not walked from (resnet50 at its minimum: by 9-14%).
 * When every last schedule misses (on layered DAGs the arena's waste grows along the walk:
 * layered_n1000 at 0.9 of its peak, 16 KB over at its end), the walk is bisected between its
 * start, which fits, and the earliest state known to miss, for the latest state found that fits
 * (at most BISECT schedules and placements; layered_n1000 at 0.9: 1.0572 to 1.0371). A walk
 * that had to lower its cap places only its newest schedule at the end: the others would miss
 * as it did. Only a plan that fits is returned, and the caller verifies the one it keeps. */
#include "plan.h"

#include <stdlib.h>

enum { WUP = 4, RING = 3, FIT = 8, STEP = 400, FAR = 20, SHORT = 3, BISECT = 8, REPAIRS = 4 };

typedef struct cand {
    double flops; /* what recomputing it costs in the current schedule */
    int v;
} cand;

typedef struct move {
    int v;
    double f; /* the factor its weight was multiplied by */
} move;

static int by_flops_asc(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->flops != y->flops) return x->flops < y->flops ? -1 : 1;
    return (x->v > y->v) - (x->v < y->v);
}

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
static mg_status place(mg_plan *p, int64_t budget, mg_plan **best, int *taken, mg_arena_scratch *scratch, mg_diag *d)
{
    *taken = 0;
    if (mg_arena_assign_in(p, budget, scratch, d)) return MG_ERR;
    if (p->workspace_bytes <= budget && (!*best || p->flops_executed < (*best)->flops_executed)) {
        mg_plan_free(*best);
        *best = p;
        *taken = 1;
    }
    return MG_OK;
}

/* Schedules under o->cap with the current weights and places the schedule within budget; while
 * it misses by at most 1/FAR of the budget, lowers o->cap by the miss, at most 1/STEP of the
 * budget at a time (a schedule a little below often places, as in sched_variants.c's mg_sv_fit), and tries
 * again, at most FIT schedules (each counted in *left). *out: the placed schedule that fits, or
 * NULL. */
static mg_status start_fit(const mg_problem *pr, mg_sched_opts *o, int64_t budget, int *left, mg_plan **out,
                           mg_arena_scratch *scratch, mg_diag *d)
{
    *out = NULL;
    for (int it = 0; it < FIT && *left > 0 && o->cap > 0; it++) {
        mg_plan *p;
        (*left)--;
        if (mg_schedule(pr, o, &p, d)) return MG_ERR;
        if (!p) return MG_OK;
        if (mg_arena_assign_in(p, budget, scratch, d)) {
            mg_plan_free(p);
            return MG_ERR;
        }
        if (p->workspace_bytes <= budget) {
            *out = p;
            return MG_OK;
        }
        int64_t over = p->workspace_bytes - budget;
        if (over > budget / FAR) { /* far from it: the walk would stay far too */
            mg_plan_free(p);
            return MG_OK;
        }
        o->cap = mg_cap_after_miss(o->cap, p, over, budget / STEP);
        mg_plan_free(p);
    }
    return MG_OK;
}

/* Up to WALK_SCHEDULES schedules a walk, fewer on large problems (WALK_WORK / nodes), and none
 * where that is below WALK_MIN (above 3500 nodes: a walk that short seldom finds anything, and
 * each schedule is dear). (600, not 300: the walk no longer places the schedules it goes
 * through, only the last few, and a schedule that can no longer win stops early, so each costs
 * ~0.3 ms on resnet50; at its minimum: 1.1856 to 1.1664 of running every op once. WALK_MIN
 * doubled with WALK_WORK: still no walk above 3500 nodes.) */
enum { WALK_SCHEDULES = 600, WALK_MIN = 60, WALK_WORK = 210000 };

int mg_improve_schedules(const mg_problem *pr)
{
    int k = WALK_WORK / (pr->n > 0 ? pr->n : 1);
    return k < WALK_MIN ? 0 : k > WALK_SCHEDULES ? WALK_SCHEDULES : k;
}

mg_status mg_improve_schedule(const mg_problem *pr, const mg_sched_opts *opts, int64_t budget, int max_schedules,
                              mg_plan **best, mg_diag *d)
{
    return mg_improve_schedule_n(pr, opts, budget, &max_schedules, best, d);
}

mg_status mg_improve_schedule_n(const mg_problem *pr, const mg_sched_opts *opts, int64_t budget, int *schedules,
                                mg_plan **best, mg_diag *d)
{
    int n = pr->n, max_schedules = *schedules, left = max_schedules;
    double *w = malloc(((size_t)n + 1) * sizeof *w), *acc = malloc(((size_t)n + 1) * sizeof *acc);
    double *chain = malloc(((size_t)n + 1) * sizeof *chain);
    cand *c = malloc(((size_t)n + 1) * sizeof *c);
    move *kept_moves = malloc(((size_t)max_schedules + 1) * sizeof *kept_moves);
    if (!w || !acc || !c || !chain || !kept_moves) abort();
    for (int v = 0; v < n; v++) w[v] = 1;
    mg_sched_opts o = *opts;
    o.weight = w;
    o.flops_limit = 0;
    mg_sched_store *store = o.store ? NULL : mg_sched_store_new(pr); /* the walk's schedules share it */
    if (store) o.store = store;
    mg_arena_scratch *scratch = mg_arena_scratch_new(); /* and its placements this */
    mg_status st = MG_OK;
    mg_plan *ring[RING] = {NULL}; /* the walk's last schedules, unplaced, ring[0] the newest */
    int nk = 0;                   /* kept moves: the walk's state k is the start with the first k */
    /* the start, placed first and fitted: where it misses, the walk near it would end in
     * schedules that miss too (layered DAGs, whose arena adds waste above the cap), so the cap
     * is lowered in small steps until it fits (none: no walk) */
    if ((st = start_fit(pr, &o, budget, &left, &ring[0], scratch, d)) || !ring[0]) goto done;
    int lowered = o.cap < opts->cap;
    if (lowered) left /= SHORT; /* its cap lowered: a shorter walk */
    int start = 0; /* where the start is in the ring (RING: gone) */
    /* candidates in turn; after a kept move the list is rebuilt and scanned from its top again
     * (the values worth keeping change with the schedule): stop when a whole round keeps none,
     * at WUP and then at WUP^2 */
    int nc = recomputed(pr, ring[0], c, chain, acc), pos = 0, phase = 0; /* phase 1: moves by WUP^2 */
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
                kept_moves[nk++] = (move){v, f};
                kept = 1;
            } else {
                mg_plan_free(p);
                w[v] /= f; /* exact: f is a power of 2 */
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
    int miss = nk + 1; /* the earliest state placed that missed the budget */
    for (int i = 0; i < RING && ring[i]; i++) {
        if (*best && ring[i]->flops_executed >= (*best)->flops_executed) break;
        int taken = 0;
        if (lowered && i > 0 && i != start) continue; /* would miss as the newest did: bisected below */
        if (i == start) { /* placed already, and it fits */
            mg_plan_free(*best);
            *best = ring[i];
            taken = 1;
        } else if ((st = place(ring[i], budget, best, &taken, scratch, d))) {
            break;
        }
        if (taken) {
            ring[i] = NULL;
            break;
        }
        if (ring[i]->workspace_bytes > budget) miss = nk - i;
    }
    /* every one missed (layered DAGs: the arena's waste grows along the walk, 2 KB at its start
     * and 18 KB at its end on layered_n500 at 0.8 of its peak): bisect the walk between its
     * start, which fits, and the earliest state known to miss, for a later state that fits
     * (the weights rebuilt from the kept moves, exactly). Fitting is not monotone along the
     * walk; the bisection ends at some state that fits next to one that misses. */
    for (int lo = 0, it = 0; !st && miss <= nk && miss - lo > 1 && it < BISECT; it++) {
        int mid = lo + (miss - lo) / 2;
        for (int v = 0; v < n; v++) w[v] = 1;
        for (int k = 0; k < mid; k++) w[kept_moves[k].v] *= kept_moves[k].f;
        mg_sched_opts lim = o;
        lim.flops_limit = *best ? (*best)->flops_executed : 0; /* a state that cannot win counts as missing */
        mg_plan *p;
        int taken = 0;
        if ((st = mg_schedule(pr, &lim, &p, d))) break;
        if (p && (!*best || p->flops_executed < (*best)->flops_executed) && !(st = place(p, budget, best, &taken, scratch, d)) &&
            taken)
            lo = mid;
        else
            miss = mid;
        if (!taken) mg_plan_free(p);
    }
done:
    *schedules = left > 0 ? left : 0;
    for (int i = 0; i < RING; i++) mg_plan_free(ring[i]);
    mg_sched_store_free(store);
    mg_arena_scratch_free(scratch);
    free(w);
    free(acc);
    free(chain);
    free(c);
    free(kept_moves);
    return st;
}

/* The polish: edits of the schedule itself, where the walk above moves only the scheduler's
 * weights. A schedule is its compute steps in order: each step reads the latest instance of its
 * inputs, and every instance lives until its last read (as mg_pb_release records it). One edit
 * drops a recomputation (the value's earlier instance then lives on to those reads) and repairs
 * the first step over the cap, again and again (at most REPAIRS times), by recomputing one
 * value live across it and not read there right before its next read: of those after which
 * the first step over the cap comes later (or none is), the cheapest schedule. unet (Checkmate)
 * at 40%: keeping block4_conv3 across the backward pass and recomputing batch_normalization_1
 * and up_sampling2d_1 instead, 1.1359 to 1.1327, which the walk did not reach. A schedule that
 * fits the cap and is cheaper becomes the current one, and the edits go on from the next
 * recomputation, round and round, until a whole round keeps none (or max_plans schedules are
 * judged). Only then is the newest placed, and while it misses the budget the ones before it
 * (at most RING): a placement costs thousands of repairs judged. Where the arena placed the
 * plan with waste above its peak of live bytes, each is placed as it is kept instead (layered
 * DAGs: judged by the cap alone, layered_n500 at 0.8 of its peak went to 1.0558 in schedules
 * none of which fitted once placed, and kept 1.0880). Edits and repairs are judged without
 * building their plans (mg_seq_first_over; only a schedule kept is built), the repairs cheapest
 * first, so the dearer ones are not judged at all once one is picked. (resnet50 at its
 * minimum: 1.1543 to 1.1518 of running every op once in ~2,400 schedules judged, ~15 ms; the
 * polish that built and placed every edit and built every repair, from the first
 * recomputation again after each edit, had reached 1.1524 in 3,200, ~0.2 s.) */

/* live[s]: the bytes of p's buffers live at step s; returns the first step over cap, or -1. */
static int first_over(const mg_plan *p, int64_t cap, int64_t *live)
{
    for (int s = 0; s <= p->nsteps; s++) live[s] = 0;
    for (int b = 0; b < p->nbufs; b++) {
        live[p->bufs[b].first] += p->bufs[b].bytes;
        live[p->bufs[b].last + 1] -= p->bufs[b].bytes;
    }
    int over = -1;
    for (int s = 0; s < p->nsteps; s++) {
        if (s) live[s] += live[s - 1];
        if (live[s] > cap && over < 0) over = s;
    }
    return over;
}

int mg_seq_first_over(const mg_problem *pr, const int *seq, int T, int64_t cap, int *inst, int *last, int64_t *live,
                      int *end)
{
    for (int v = 0; v < pr->n; v++) inst[v] = -1;
    for (int s = 0; s <= T; s++) live[s] = 0;
    for (int s = 0; s < T; s++) {
        int v = seq[s];
        end[s] = -1;
        for (int k = pr->in_start[v]; k < pr->in_start[v + 1]; k++) {
            int u = pr->in[k];
            if (inst[u] < 0 && pr->home[u].mem == MG_MEM_NONE) return -2;
            last[u] = s;
        }
        if (inst[v] >= 0) { /* the earlier instance ends at its last read */
            end[inst[v]] = last[v];
            live[last[v] + 1] -= pr->bytes[v];
        }
        if (pr->scratch[v] > 0) {
            live[s] += pr->scratch[v];
            live[s + 1] -= pr->scratch[v];
        }
        if (pr->home[v].mem == MG_MEM_NONE) {
            inst[v] = s;
            last[v] = s;
            live[s] += pr->bytes[v];
        }
    }
    int res = pr->result;
    if (res >= 0 && inst[res] >= 0) last[res] = T - 1;
    for (int v = 0; v < pr->n; v++)
        if (inst[v] >= 0) {
            end[inst[v]] = last[v];
            live[last[v] + 1] -= pr->bytes[v];
        }
    int64_t cur = 0;
    for (int s = 0; s < T; s++) {
        cur += live[s];
        if (cur > cap) return s;
    }
    return -1;
}

static int reads(const mg_problem *pr, int v, int u)
{
    for (int k = pr->in_start[v]; k < pr->in_start[v + 1]; k++)
        if (pr->in[k] == u) return 1;
    return 0;
}

mg_status mg_polish_schedule(const mg_problem *pr, int64_t budget, int max_plans, mg_plan **best, mg_diag *d)
{
    if (!*best || pr->nfinal > 0) return MG_OK;
    const mg_plan *bp = *best;
    for (int s = 0; s < bp->nsteps; s++)
        if (bp->steps[s].kind != MG_STEP_COMPUTE) return MG_OK;
    int cap = 2 * bp->nsteps + 2 * REPAIRS + 2, T = bp->nsteps, left = max_plans;
    int *seq = malloc((size_t)cap * sizeof *seq), *cand = malloc((size_t)cap * sizeof *cand);
    int *trial = malloc((size_t)cap * sizeof *trial), *pick = malloc((size_t)cap * sizeof *pick);
    int64_t *live = malloc(((size_t)cap + 1) * sizeof *live);
    char *seen = malloc((size_t)pr->n + 1);
    struct cand *reps = malloc((size_t)cap * sizeof *reps); /* the repairs of one step, by cost */
    int *end = malloc(((size_t)cap + 1) * sizeof *end);
    mg_plan *cur = NULL; /* the current schedule once an edit is kept, unplaced */
    int *hist[RING], hlen[RING], nh = 0; /* the last RING schedules moved to, hist[(nh - 1) % RING] the newest */
    for (int i = 0; i < RING; i++)
        if (!(hist[i] = malloc((size_t)cap * sizeof *hist[i]))) abort();
    int *inst = malloc(((size_t)pr->n + 1) * sizeof *inst), *last = malloc(((size_t)pr->n + 1) * sizeof *last);
    if (!seq || !cand || !trial || !pick || !live || !seen || !inst || !last || !reps || !end) abort();
    mg_arena_scratch *scratch = mg_arena_scratch_new(); /* its placements' tables */
    for (int s = 0; s < T; s++) seq[s] = bp->steps[s].node;
    mg_status st = MG_OK;
    /* where the arena placed the plan with waste above its peak of live bytes (layered DAGs), a
     * schedule that fits the cap often misses the budget once placed, and edits made on top of
     * one that misses are lost: each is placed at once, as it is kept */
    int eager = bp->workspace_bytes > bp->peak_live_bytes;
    /* the recomputations in turn, round and round: after a kept edit the next is tried next
     * (the edits before it were tried a moment ago, and mostly still fail); stop when a whole
     * round keeps none */
    for (int r = 0, since = 0; since < T && left > 0 && !st; r++, since++) {
        if (r >= T) r = 0;
        if (!bp->steps[r].recompute) continue;
        int n = 0;
        for (int s = 0; s < T; s++)
            if (s != r) cand[n++] = seq[s];
        int fits = 0;
        for (int rep = 0; rep <= REPAIRS && left > 0; rep++) {
            left--;
            double cost = 0; /* the schedule's, summed as the builder sums it */
            for (int s = 0; s < n; s++) cost += pr->cost[cand[s]];
            if (cost >= bp->flops_executed) break; /* repairs only add */
            int over = mg_seq_first_over(pr, cand, n, budget, inst, last, live, end);
            if (over == -2) break;
            if (over < 0) { /* fits the cap: built and placed below */
                fits = 1;
                break;
            }
            /* the repairs of step over: each value live across it, not read there, recomputed
             * right before its next read */
            int npick = 0, nr = 0;
            for (int s = 0; s < over; s++) {
                int u = cand[s];
                if (end[s] <= over || !pr->evictable[u] || reads(pr, cand[over], u)) continue;
                double c2 = cost + pr->cost[u]; /* the repaired schedule's, exactly */
                if (c2 < bp->flops_executed) reps[nr++] = (struct cand){c2, s};
            }
            /* cheapest first (then by step): the first whose first step over the cap comes
             * later is the pick, and the dearer ones are never judged */
            qsort(reps, (size_t)nr, sizeof *reps, by_flops_asc);
            for (int i = 0; i < nr && left > 0 && n + 1 < cap && !npick; i++) {
                int u = cand[reps[i].v];
                int j = over + 1;
                while (j < n && !reads(pr, cand[j], u)) j++;
                if (j >= n) continue;
                for (int s = 0, t = 0; s <= n; s++) {
                    if (s == j) trial[t++] = u;
                    if (s < n) trial[t++] = cand[s];
                }
                left--;
                int o2 = mg_seq_first_over(pr, trial, n + 1, budget, inst, last, live, end);
                if (o2 == -1 || o2 > over) {
                    npick = n + 1;
                    for (int s = 0; s < npick; s++) pick[s] = trial[s];
                }
            }
            if (!npick) break;
            n = npick;
            for (int s = 0; s < n; s++) cand[s] = pick[s];
        }
        if (!fits) continue;
        mg_plan *p = mg_pb_replay(pr, cand, n, seen);
        if (!p) continue;
        if (p->flops_executed < bp->flops_executed && first_over(p, budget, live) < 0) {
            if (eager) { /* placed now, and kept only if it fits */
                if ((st = mg_arena_assign_in(p, budget, scratch, d))) {
                    mg_plan_free(p);
                    break;
                }
                if (p->workspace_bytes > budget) {
                    mg_plan_free(p);
                    continue;
                }
                mg_plan_free(*best);
                *best = p;
                p = NULL;
                bp = *best;
                T = n;
                for (int s = 0; s < T; s++) seq[s] = cand[s];
                r--;
                since = -1;
                continue;
            }
            /* the new current schedule, placed at the end: polish on from step r of it */
            mg_plan_free(cur);
            bp = cur = p;
            T = n;
            for (int s = 0; s < T; s++) seq[s] = hist[nh % RING][s] = cand[s];
            hlen[nh++ % RING] = T;
            r--;
            since = -1;
            continue;
        }
        mg_plan_free(p);
    }
    /* the schedules it moved to, newest (cheapest) first, until one fits the budget once placed:
     * placing is what is dear (resnet50 at its minimum: ~8 ms, against ~3 us for judging a
     * repair), and the peak of live bytes tells whether a schedule fits all but always */
    for (int i = 0; i < RING && i < nh && !st; i++) {
        mg_plan *q = i == 0 ? cur : mg_pb_replay(pr, hist[(nh - 1 - i) % RING], hlen[(nh - 1 - i) % RING], seen);
        if (i == 0) cur = NULL;
        if (q && !(st = mg_arena_assign_in(q, budget, scratch, d)) && q->workspace_bytes <= budget &&
            q->flops_executed < (*best)->flops_executed) {
            mg_plan_free(*best);
            *best = q;
            break;
        }
        mg_plan_free(q);
    }
    mg_plan_free(cur);
    for (int i = 0; i < RING; i++) free(hist[i]);
    free(seq);
    free(cand);
    free(trial);
    free(pick);
    free(live);
    free(seen);
    free(reps);
    free(end);
    free(inst);
    free(last);
    mg_arena_scratch_free(scratch);
    return st;
}
