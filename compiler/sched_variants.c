/* sched_variants.c — the schedules `auto` tries at a budget (its variants: every eviction
 * policy, lazy and eager, sched_rc.c's scheduler, restarts with perturbed scores), and fitting a
 * schedule to a budget once placed: the cap is lowered by what the arena added on top of the
 * live bytes until the placed plan fits. The solve at a budget (planner.c) and the minimum
 * search (min_search.c) are built from these. */
#include "sched_variants.h"

#include <stdlib.h>

/* States the exact search of `auto` may visit before it leaves a problem to the heuristics. */
enum { SEARCH_STATES = 50000 };

/* mg_sv_chain_fit's first table cap for a budget: 1/8 above it (or store-all), where the DP's plans
 * may still fit once placed. */
int64_t mg_sv_chain_table_cap(int64_t budget, int64_t store_all)
{
    int64_t want = budget < store_all ? budget : store_all, cap = want + want / 8;
    return cap > store_all ? store_all : cap;
}

/* The eviction scheduler opts asks for: sched_remat.c's or sched_rc.c's. (sched_rc.c's variants
 * were once left out above 2500 nodes, when a preparation walked the closure of every dropped
 * input; now they cost about what sched_remat.c's do, on graphs of any size.) */
static mg_status evict_schedule(const mg_problem *pr, const mg_sched_opts *o, mg_plan **out, mg_diag *d)
{
    return o->rc ? mg_schedule_rc(pr, o, out, d) : mg_schedule(pr, o, out, d);
}

/* One schedule under cap, not yet placed: the eviction scheduler under opts, or (opts NULL) the
 * exact search. */
mg_status mg_sv_schedule(const mg_problem *pr, const mg_sched_opts *opts, int64_t cap, mg_search_memo *memo,
                         mg_plan **out, mg_diag *d)
{
    *out = NULL;
    if (opts) {
        mg_sched_opts o = *opts;
        o.cap = cap;
        return evict_schedule(pr, &o, out, d);
    }
    if (memo->too_big || cap <= memo->infeasible_cap) return MG_OK;
    int complete;
    if (mg_schedule_search(pr, cap, SEARCH_STATES, out, &complete, d)) return MG_ERR;
    if (!complete) memo->too_big = 1;
    else if (!*out) memo->infeasible_cap = cap;
    return MG_OK;
}

/* Schedules under opts and places the buffers; *out is NULL when the cap cannot be met. Only
 * the plan a solver returns is verified (in mg_solve), not every candidate it tries. */
mg_status mg_sv_build(const mg_problem *pr, const mg_sched_opts *opts, mg_plan **out, mg_diag *d)
{
    if (mg_schedule(pr, opts, out, d)) return MG_ERR;
    if (*out && mg_arena_assign(*out, d)) {
        mg_plan_free(*out);
        *out = NULL;
        return MG_ERR;
    }
    return MG_OK;
}

/* The cheapest schedules whose placements missed the budget by a little (mg_sv_fit keeps them, in
 * the solve at the budget), placed again with compaction at the end of the whole solve
 * (mg_sv_rescue_near_misses, from planner.c's solve_below). The planner's placements of more than
 * MG_ARENA_PLAN_SEARCH_MAX buffers are greedy ones only; compacting them where they are made
 * moved plans both ways (arena.c: the caps and first fits that follow depend on the sizes of the
 * misses), while at the end a rescued plan can only replace a dearer one.
 * resnet18_64 at 1.10 times its minimum: 69.76 -> 52.42% recomputed, at 1.11 times 55.30 ->
 * 51.63%; every other example at 75/50/33/25% and 1.02/1.05/1.07/1.10 times its minimum
 * unchanged. Compaction takes back 0-3.7% of the budget on these misses (20-130 ms each), so
 * only misses within 3% are kept, the 3 cheapest (resnet18_64 at 1.05 times, medians of 3 side
 * by side: 7.5 -> 8.2 s of CPU, nothing rescued; at 1.10 times 5.0 -> 4.9 s). */
static const double NEAR_MISS_SHARE = 0.03; /* of the budget */

/* Keeps p in nm (NULL: none) when it is among the cheapest near misses, else frees it. */
static void near_miss_keep(mg_near_misses *nm, mg_plan *p, int64_t budget)
{
    if (!nm || p->nbufs <= MG_ARENA_PLAN_SEARCH_MAX || p->peak_live_bytes > budget ||
        (double)(p->workspace_bytes - budget) > NEAR_MISS_SHARE * (double)budget ||
        (nm->n == MG_NEAR_MISSES && p->flops_executed >= nm->p[MG_NEAR_MISSES - 1]->flops_executed)) {
        mg_plan_free(p);
        return;
    }
    uint64_t h = mg_plan_buffers_hash(p);
    for (int i = 0; i < nm->n; i++)
        if (nm->h[i] == h) { /* (the cheaper kept) */
            if (p->flops_executed >= nm->p[i]->flops_executed) {
                mg_plan_free(p);
                return;
            }
            mg_plan_free(nm->p[i]);
            for (nm->n--; i < nm->n; i++) {
                nm->p[i] = nm->p[i + 1];
                nm->h[i] = nm->h[i + 1];
            }
            break;
        }
    if (nm->n == MG_NEAR_MISSES) mg_plan_free(nm->p[--nm->n]);
    int i = nm->n++;
    for (; i > 0 && nm->p[i - 1]->flops_executed > p->flops_executed; i--) {
        nm->p[i] = nm->p[i - 1];
        nm->h[i] = nm->h[i - 1];
    }
    nm->p[i] = p;
    nm->h[i] = h;
}

/* A plan under opts (NULL: the exact search) whose workspace, allocator waste included, is at
 * most budget. first, when not NULL, is the (unplaced) schedule under opts at cap budget,
 * already made by the caller; mg_sv_fit takes it over. aim: the arena, when it misses the peak live
 * bytes, searches again for a placement within the budget before the cap is lowered (else the
 * cap is lowered at once: the scheduler is not monotone in its cap, so that is sometimes
 * cheaper; auto tries both); aim 2 also lowers the cap in small steps (1/400 of the budget), as
 * a schedule a little below the budget often places where one far below costs much more.
 * Where the cap lowered by a whole miss leaves the variant no schedule at all, it goes halfway
 * back to the cap that missed, while the two are more than 1/400 of the budget apart (not under
 * aim 1, the minimum search's probes: minimums stay as they were). resnet18_64 in 16 parts at 1.08
 * times its minimum: every variant's schedule under the budget placed 12-20% above it, and the
 * cap less that miss was below all its schedules, so no variant fitted and the plan was the
 * minimum's, +99.96%; halfway back fits, +69.76% (and +75.19% -> +45.78% at 1.12 times).
 * A schedule dearer than the caller's best plan is placed all the same: a lower cap can schedule
 * cheaper (the schedulers are not monotone in their cap), and ending the fit there (its `beat`,
 * 2026-12-05) saved 8-15% of resnet18_64's CPU but cost its plans at 20% and 24% of store-all
 * 3.3 and 0.9 points of recomputation (docs/planner.md). */
mg_status mg_sv_fit(const mg_problem *pr, const mg_sched_opts *opts, int64_t budget, mg_search_memo *memo,
                    mg_plan *first, int aim, mg_place_memo *mm, mg_near_misses *nm, mg_plan **out, int *at_budget,
                    mg_diag *d)
{
    *out = NULL;
    int64_t cap = budget, missed = -1, dead = 0; /* the lowest cap whose schedule missed; a cap with none */
    for (int it = 0; it < 16 && cap > 0; it++) {
        mg_plan *p = it == 0 ? first : NULL;
        if (!p && mg_sv_schedule(pr, opts, cap, memo, &p, d)) return MG_ERR;
        if (!p && (aim == 1 || missed < 0 || missed - cap <= budget / 400)) return MG_OK;
        if (!p) { /* lowered by the whole miss, the cap fell below every schedule: halfway back */
            dead = cap;
            cap = dead + (missed - dead) / 2;
            continue;
        }
        if (mg_place_memo_place(mm, pr->placed, p, budget, aim ? budget : INT64_MAX, 0, 1.0, d)) {
            mg_plan_free(p);
            return MG_ERR;
        }
        if (p->workspace_bytes <= budget) {
            *out = p;
            if (at_budget) *at_budget = it == 0; /* scheduled under the budget itself */
            return MG_OK;
        }
        /* aim 2: small steps, as a schedule a little below often places */
        missed = cap;
        cap = mg_cap_after_miss(cap, p, p->workspace_bytes - budget, aim == 2 ? budget / 400 : INT64_MAX);
        if (cap <= dead) cap = dead + (missed - dead) / 2;
        near_miss_keep(nm, p, budget);
    }
    return MG_OK;
}

void mg_sv_keep_better(mg_plan **best, mg_plan *p)
{
    if (!p) return;
    if (!*best || p->flops_executed < (*best)->flops_executed ||
        (p->flops_executed == (*best)->flops_executed && p->workspace_bytes < (*best)->workspace_bytes)) {
        mg_plan_free(*best);
        *best = p;
    } else {
        mg_plan_free(p);
    }
}

void mg_sv_near_misses_free(mg_near_misses *nm)
{
    for (int i = 0; i < nm->n; i++) mg_plan_free(nm->p[i]);
    nm->n = 0;
}

void mg_sv_rescue_near_misses(mg_near_misses *nm, const mg_problem *pr, int64_t budget, double unfilled,
                              mg_plan **out, mg_diag *d)
{
    for (int i = 0; i < nm->n; i++) {
        mg_plan *p = nm->p[i];
        if (p->flops_executed >= unfilled) {
            mg_plan_free(p);
            continue;
        }
        mg_arena_assign_compacted(p, budget, d);
        if (p->workspace_bytes > budget) {
            mg_plan_free(p);
            continue;
        }
        mg_plan_refill(p, pr);
        mg_sv_keep_better(out, p);
    }
    nm->n = 0;
}

/* The chain DP's plan within budget (allocator waste included), or NULL: the cap is lowered
 * by what the arena added until the plan fits. With probe, caps above the budget are tried
 * for a cheaper plan that still fits (not needed when only feasibility is asked). */
mg_status mg_sv_chain_fit(const mg_problem *pr, int64_t budget, mg_search_memo *memo, const mg_plan *beat, int probe,
                          mg_plan **out, mg_diag *d)
{
    *out = NULL;
    if (!memo->chain_tried) {
        memo->chain_tried = 1;
        memo->chain = mg_chain_analyse(pr);
    }
    if (!memo->chain) return MG_OK;
    /* the tables serve every cap up to theirs, in slots of about 1/4000 of it: rebuilt for a
     * larger cap or a much smaller one. They reach 1/8 above the budget: the DP rounds sizes up
     * to whole slots and counts some steps' memory generously, so a plan made for a larger cap
     * may still fit the budget once placed. */
    int64_t want = budget < memo->store_all ? budget : memo->store_all;
    if (!memo->chain_table_cap || want > memo->chain_table_cap || want + want / 8 < memo->chain_table_cap / 4 * 3)
        memo->chain_table_cap = mg_sv_chain_table_cap(budget, memo->store_all);
    int64_t cap = want, lo = 0;
    mg_plan *best = NULL;
    /* the DP knows what its plans recompute: none under the caps tried can beat `beat` */
    double once = 0;
    for (int v = 0; v < pr->n; v++) once += pr->target[v] ? pr->cost[v] : 0;
    if (beat && once + mg_chain_cost(memo->chain, memo->chain_table_cap, memo->chain_table_cap) >= beat->flops_executed)
        return MG_OK;
    for (int it = 0; it < 16 && cap > 0; it++) { /* at the budget, lowered until the placed plan fits */
        mg_plan *p;
        if (mg_chain_schedule(memo->chain, cap, memo->chain_table_cap, &p, d)) return MG_ERR;
        if (!p) break;
        if (mg_arena_assign_within(p, budget, d)) {
            mg_plan_free(p);
            return MG_ERR;
        }
        if (p->workspace_bytes <= budget) {
            best = p;
            lo = cap;
            break;
        }
        cap = mg_cap_after_miss(cap, p, p->workspace_bytes - budget, INT64_MAX);
        mg_plan_free(p);
    }
    /* then above it: the largest cap whose plan still fits (bisection; a heuristic, as fitting is
     * not monotone in the cap, but every plan kept fits) */
    int64_t hi = memo->chain_table_cap + 1;
    for (int it = 0; probe && best && it < 6 && hi - lo > MG_ALIGN; it++) {
        int64_t mid = lo + (hi - lo) / 2;
        mg_plan *p;
        if (once + mg_chain_cost(memo->chain, mid, memo->chain_table_cap) >= best->flops_executed) {
            lo = mid; /* no cheaper there: look higher */
            continue;
        }
        if (mg_chain_schedule(memo->chain, mid, memo->chain_table_cap, &p, d)) {
            mg_plan_free(best);
            return MG_ERR;
        }
        if (p && mg_arena_assign_within(p, budget, d)) {
            mg_plan_free(p);
            mg_plan_free(best);
            return MG_ERR;
        }
        if (p && p->workspace_bytes <= budget) {
            lo = mid;
            mg_sv_keep_better(&best, p);
        } else {
            hi = mid;
            mg_plan_free(p);
        }
    }
    *out = best;
    return MG_OK;
}

const double mg_waste_target = 0.02;

int mg_plan_wastes(const mg_plan *p, double share)
{
    return p && (double)p->workspace_bytes > (1 + share) * (double)p->peak_live_bytes;
}

/* sched_rc.c's variants: the policies (and its two modes) that do best there. */
static const struct { mg_evict_policy policy; int rc; } rc_variants[MG_VARIANTS_RC] = {
    {MG_EVICT_COST_SIZE_DIST, 1}, {MG_EVICT_COST_SIZE_SQRTDIST, 1}, {MG_EVICT_COST_SIZE, 1},
    {MG_EVICT_COST_SIZE_DIST, 2}, {MG_EVICT_COST_SIZE_SQRTDIST, 2}};

/* Restarts: as many as keep restarts x nodes near RESTART_WORK (at most MG_RESTARTS_MAX). */
enum { RESTART_WORK = 20000 };

int mg_variants_restarts(const mg_problem *pr)
{
    int k = RESTART_WORK / (pr->n > 0 ? pr->n : 1);
    return k > MG_RESTARTS_MAX ? MG_RESTARTS_MAX : k;
}

/* Variant i under budget (i >= MG_VARIANTS: a restart); policy: the policy of sched_remat.c's
 * unperturbed variants, by i. The last MG_VARIANTS_FIT are the first MG_VARIANTS_BASE again, each dropping the cheapest
 * value that alone covers an excess when the policy's choice costs more (mg_sched_opts.fit). */
mg_sched_opts mg_variant_opts(int i, int64_t budget, mg_evict_policy policy)
{
    mg_sched_opts o = {.cap = budget, .policy = policy};
    if (i >= MG_VARIANTS_BASE + MG_VARIANTS_RC && i < MG_VARIANTS) {
        o = mg_variant_opts(i - MG_VARIANTS_BASE - MG_VARIANTS_RC, budget, policy);
        o.fit = 1;
    } else if (i < MG_VARIANTS_BASE) {
        o.lazy = i < MG_EVICT_NPOLICIES;
    } else if (i < MG_VARIANTS_BASE + MG_VARIANTS_RC) {
        o.policy = rc_variants[i - MG_VARIANTS_BASE].policy;
        o.rc = rc_variants[i - MG_VARIANTS_BASE].rc;
    } else {
        o.policy = (mg_evict_policy)(i % MG_EVICT_NPOLICIES);
        o.lazy = (i / MG_EVICT_NPOLICIES) % 2;
        o.seed = (uint64_t)(i - MG_VARIANTS + 1);
    }
    return o;
}

/* Keeps v's schedule as its compute steps and its plan's figures. */
static void variant_shrink(mg_variant *v)
{
    v->hash = mg_plan_buffers_hash(v->p);
    v->seq = mg_xcalloc((size_t)v->p->nsteps + 1, sizeof *v->seq);
    v->nseq = mg_plan_compute_steps(v->p, v->seq);
    free(v->p->steps);
    free(v->p->bufs);
    v->p->steps = NULL;
    v->p->bufs = NULL;
}

mg_plan *mg_variant_take(const mg_problem *pr, mg_variant *v)
{
    mg_plan *p = v->p;
    if (v->seq) {
        mg_plan *q = mg_pb_replay(pr, v->seq, v->nseq, NULL);
        if (!q) abort(); /* (the steps of a plan: every value is computed before it is read) */
        q->peak_live_bytes = p->peak_live_bytes;
        mg_plan_free(p);
        free(v->seq);
        p = q;
    }
    *v = (mg_variant){v->o, NULL, NULL, 0, 0};
    return p;
}

void mg_variant_free(mg_variant *v)
{
    mg_plan_free(v->p);
    free(v->seq);
    *v = (mg_variant){v->o, NULL, NULL, 0, 0};
}

int mg_variant_cmp(const void *a, const void *b)
{
    const mg_plan *p = ((const mg_variant *)a)->p, *q = ((const mg_variant *)b)->p;
    if (!p || !q) return !p - !q;
    if (p->flops_executed != q->flops_executed) return p->flops_executed < q->flops_executed ? -1 : 1;
    if (p->peak_live_bytes != q->peak_live_bytes) return p->peak_live_bytes < q->peak_live_bytes ? -1 : 1;
    return 0;
}

/* A variant whose schedule costs more than HOPELESS times the cheapest schedule found before
 * it is given up on as soon as it passes that (mg_sched_opts.flops_limit): on graphs where a
 * policy thrashes (layered DAGs: 10-15x the cost, 10x the steps) that was most of auto's time.
 * Such a schedule could only win if every cheaper one failed to fit the budget once placed,
 * which is rare: fitting lowers their caps until they do. */
enum { HOPELESS = 2 };

/* Sets p's peak live bytes without placing it: what the arena cannot go below. */
static void set_unplaced_peak(mg_plan *p)
{
    p->peak_live_bytes = mg_plan_peak_live(p);
}

void mg_sv_use_scratch(mg_sched_opts *o, const mg_sched_scratch *z)
{
    o->store = z ? z->remat : NULL;
    o->rc_store = z ? z->rc : NULL;
}

/* Schedules every variant at cap budget (scheduling is cheap; placing is not) and sorts them,
 * cheapest first; returns how many have a schedule. sched_rc.c's variants run first: where
 * policies thrash they are the cheap ones, so the limit above cuts the others early. z: the
 * scratch the runs use (NULL: none), kept in each variant's opts; fm: a memo of the failing runs
 * (mg_sv_schedule_memo; NULL: none). */
int mg_variants_schedule_in(const mg_problem *pr, int64_t budget, mg_variant *v, int nvariants,
                            const mg_sched_scratch *z, mg_probe_memo *fm, mg_diag *d)
{
    int n = 0;
    double best = 0;
    for (int i = 0; i < nvariants; i++) v[i] = (mg_variant){.p = NULL};
    for (int j = 0; j < nvariants; j++) {
        /* j runs sched_rc.c's variants (MG_VARIANTS_BASE..MG_VARIANTS_BASE+MG_VARIANTS_RC-1) first,
         * then the base ones, then the rest (fit variants, restarts) in their own order: i covers
         * 0..nvariants-1 once each */
        int i = j < MG_VARIANTS_RC                    ? MG_VARIANTS_BASE + j
                : j < MG_VARIANTS_BASE + MG_VARIANTS_RC ? j - MG_VARIANTS_RC
                                                        : j;
        v[i].o = mg_variant_opts(i, budget, (mg_evict_policy)(i % MG_EVICT_NPOLICIES));
        v[i].o.flops_limit = best > 0 ? HOPELESS * best : 0;
        mg_sv_use_scratch(&v[i].o, z);
        v[i].p = NULL;
        if (fm ? mg_sv_schedule_memo(pr, &v[i].o, i, fm, &v[i].p, d) : evict_schedule(pr, &v[i].o, &v[i].p, d))
            v[i].p = NULL;
        v[i].o.flops_limit = 0; /* fitting it reschedules without the limit */
        if (v[i].p && (best == 0 || v[i].p->flops_executed < best)) best = v[i].p->flops_executed;
        if (v[i].p) {
            set_unplaced_peak(v[i].p);
            variant_shrink(&v[i]);
            n++;
        }
    }
    qsort(v, (size_t)nvariants, sizeof *v, mg_variant_cmp);
    /* restarts often make a schedule another variant made: keep one of each (placing is not cheap) */
    for (int i = 1, last = 0; i < n; i++) {
        const mg_plan *p = v[i].p, *q = v[last].p;
        if (p->flops_executed == q->flops_executed && p->peak_live_bytes == q->peak_live_bytes &&
            p->nsteps == q->nsteps && p->nbufs == q->nbufs && v[i].hash == v[last].hash) {
            mg_variant_free(&v[i]);
        } else {
            last = i;
        }
    }
    int kept = 0;
    for (int i = 0; i < n; i++)
        if (v[i].p) v[kept++] = v[i];
    for (int i = kept; i < nvariants; i++) {
        v[i].p = NULL;
        v[i].seq = NULL;
    }
    return kept;
}

/* mg_variants_schedule_in with scratch of its own, for its runs only (the variants' opts leave
 * without it): its ~25 runs no longer each grow a plan's steps by realloc from scratch (on the
 * 2,500-step relu chain at 10%, 3% of `plan`'s CPU, and as much again in page faults). */
int mg_variants_schedule(const mg_problem *pr, int64_t budget, mg_variant *v, int nvariants, mg_diag *d)
{
    mg_sched_scratch z = {mg_sched_store_new(pr), mg_rc_store_new(pr)};
    int nv = mg_variants_schedule_in(pr, budget, v, nvariants, &z, NULL, d);
    for (int i = 0; i < nvariants; i++) mg_sv_use_scratch(&v[i].o, NULL);
    mg_sched_store_free(z.remat);
    mg_rc_store_free(z.rc);
    return nv;
}

/* Variant j (0..MG_VARIANTS_MAX-1) under opts->cap, unless a run already failed under it. */
mg_status mg_sv_schedule_memo(const mg_problem *pr, const mg_sched_opts *o, int j, mg_probe_memo *pm, mg_plan **out,
                              mg_diag *d)
{
    *out = NULL;
    for (int k = 0; k < pm->n[j]; k++)
        if (pm->lo[j][k] <= o->cap && o->cap < pm->hi[j][k] &&
            (pm->limit[j][k] == 0 || (o->flops_limit > 0 && o->flops_limit <= pm->limit[j][k])))
            return MG_OK;
    int64_t range[2];
    if (o->rc ? mg_schedule_rc_range(pr, o, out, range, d) : mg_schedule_range(pr, o, out, range, d)) return MG_ERR;
    if (*out) return MG_OK;
    /* full: the oldest makes room */
    int k = pm->n[j] < MG_PROBE_FAILS_MAX ? pm->n[j]++ : pm->next[j]++ % MG_PROBE_FAILS_MAX;
    pm->lo[j][k] = range[0];
    pm->hi[j][k] = range[1];
    pm->limit[j][k] = o->flops_limit;
    return MG_OK;
}
