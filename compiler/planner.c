/* planner.c — the solvers: turns a budget into the two plans a model needs (the training step
 * and the forward pass), each scheduled, placed in the arena and verified.
 *
 *   store-all  every value computed once and kept until its last use (the 100% point).
 *   sqrt       Chen et al. 2016: keep every ceil(sqrt(n))-th forward value as a checkpoint,
 *              drop the rest after the forward pass, recompute each segment when the backward
 *              pass reaches it. It ignores the budget; its plan is used only when it fits.
 *   auto       store-all when it fits (zero overhead, so optimal); otherwise the cheapest of
 *              the budget-driven schedules under every eviction policy (with lazy and eager
 *              freeing), of sched_rc.c's recompute-aware scheduler, of
 *              restarts of the eviction policies with perturbed scores (small problems), and of
 *              sqrt; where the best is above the proven lower bound, a local search over the
 *              eviction score weights of the cheapest variants (sched_improve.c). All are
 *              scheduled first (cheap); only the cheapest are
 *              placed, each fitted to the budget by lowering the scheduler's cap below its peak
 *              by whatever the arena added on top of the live bytes; and, where the problem
 *              is small enough, the exact search over (stage, resident set) (sched_search.c),
 *              whose plan is optimal. Never worse than sqrt or store-all where they fit.
 *   exact      store-all when it fits; otherwise Checkmate's MILP (solve_exact.c) within the
 *              time limit, started from auto's plan: the better of the two is returned, and it
 *              is marked optimal when the search finished at the budget itself.
 *
 * The minimum feasible budget is found by bisection over budgets with the same machinery,
 * independently of the budget asked (so every budget names the same minimum; under auto, on a
 * thread of its own beside the solve at the budget, as is the lower bound); a budget the
 * direct search misses but that is at or above that minimum gets the minimum's plan, so
 * "infeasible" is only ever said of budgets below a budget we have a verified plan for. */
#include "clock.h"
#include "place_memo.h"
#include "plan.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>

const char *const mg_solver_names[] = {"auto", "store-all", "sqrt", "exact"};

/* States the exact search of `auto` may visit before it leaves a problem to the heuristics. */
enum { SEARCH_STATES = 50000 };

/* The lower bound at a budget (bound_step.c and bound_cut.c: the larger holds), computed on a
 * thread of its own while auto's solve schedules and places its variants, which do not read it
 * (resnet50 at its minimum: 0.06 s); the solve waits for it before the walks (memo_bound). The
 * thread then also analyses the chain and fills the chain DP's tables for the cap chain_fit
 * will ask at the end of the solve (0.03 s there), when they are handed to the solve's memo. */
typedef struct bound_job {
    const mg_problem *pr;
    int64_t budget, store_all;
    double once, bound; /* in: every op once; out: that and the larger of the two arguments */
    mg_chain *chain;    /* out (thread): the chain analysed, its tables filled for table_cap */
    int64_t table_cap;
    pthread_t th;
    int running;
} bound_job;

static void bound_compute(bound_job *b)
{
    double forced = mg_step_bound(b->pr, b->budget), cut = mg_cut_bound(b->pr, b->budget);
    b->bound = b->once + (forced > cut ? forced : cut);
}

/* chain_fit's first table cap for a budget: 1/8 above it (or store-all), where the DP's plans
 * may still fit once placed. */
static int64_t chain_table_cap(int64_t budget, int64_t store_all)
{
    int64_t want = budget < store_all ? budget : store_all, cap = want + want / 8;
    return cap > store_all ? store_all : cap;
}

static void *bound_thread(void *job)
{
    bound_job *b = job;
    bound_compute(b);
    b->chain = mg_chain_analyse(b->pr);
    if (b->chain) {
        b->table_cap = chain_table_cap(b->budget, b->store_all);
        mg_chain_cost(b->chain, b->table_cap, b->table_cap); /* (fills the tables) */
    }
    return NULL;
}

/* What one mg_solve has learnt from the exact search, so it does not search in vain twice. */
typedef struct search_memo {
    int64_t infeasible_cap; /* a finished search found no schedule under this cap (-1: none) */
    int too_big;            /* the search ran out of states: the problem is left to the heuristics */
    int chain_tried;        /* the chain DP (sched_chain.c): analysed yet, */
    mg_chain *chain;        /* its stages and tables (NULL: the problem is not a chain), */
    int64_t chain_table_cap;/* and the largest cap its tables are built for (0: none yet) */
    int64_t store_all;      /* the store-all workspace */
    double lower_bound;     /* proven for every plan under the budget solved for (0: none) */
    bound_job *pending;     /* lower_bound is still being computed there (memo_bound) */
} search_memo;

/* memo->lower_bound, once its thread (if any) has finished. */
static double memo_bound(search_memo *memo)
{
    if (memo->pending && memo->pending->running) {
        if (pthread_join(memo->pending->th, NULL)) abort();
        memo->pending->running = 0;
        memo->lower_bound = memo->pending->bound;
        memo->chain_tried = 1; /* (as chain_fit would analyse it, and fill the tables for its cap) */
        memo->chain = memo->pending->chain;
        memo->chain_table_cap = memo->chain ? memo->pending->table_cap : 0;
    }
    return memo->lower_bound;
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
static mg_status schedule(const mg_problem *pr, const mg_sched_opts *opts, int64_t cap, search_memo *memo,
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
static mg_status build(const mg_problem *pr, const mg_sched_opts *opts, mg_plan **out, mg_diag *d)
{
    if (mg_schedule(pr, opts, out, d)) return MG_ERR;
    if (*out && mg_arena_assign(*out, d)) {
        mg_plan_free(*out);
        *out = NULL;
        return MG_ERR;
    }
    return MG_OK;
}

/* The cheapest schedules whose placements missed the budget by a little (fit keeps them, in the
 * solve at the budget), placed again with compaction at the end of the whole solve
 * (rescue_near_misses, from solve_below). The planner's placements of more than
 * MG_ARENA_PLAN_SEARCH_MAX buffers are greedy ones only; compacting them where they are made
 * moved plans both ways (arena.c: the caps and first fits that follow depend on the sizes of the
 * misses), while at the end a rescued plan can only replace a dearer one.
 * resnet18_64 at 1.10 times its minimum: 69.76 -> 52.42% recomputed, at 1.11 times 55.30 ->
 * 51.63%; every other example at 75/50/33/25% and 1.02/1.05/1.07/1.10 times its minimum
 * unchanged. Compaction takes back 0-3.7% of the budget on these misses (20-130 ms each), so
 * only misses within 3% are kept, the 3 cheapest (resnet18_64 at 1.05 times, medians of 3 side
 * by side: 7.5 -> 8.2 s of CPU, nothing rescued; at 1.10 times 5.0 -> 4.9 s). */
enum { NEAR_MISSES = 3 };
static const double NEAR_MISS_SHARE = 0.03; /* of the budget */
typedef struct near_misses {
    mg_plan *p[NEAR_MISSES]; /* cheapest first */
    uint64_t h[NEAR_MISSES]; /* their buffers' hashes (the same buffers place alike) */
    int n;
} near_misses;

/* Keeps p in nm (NULL: none) when it is among the cheapest near misses, else frees it. */
static void near_miss_keep(near_misses *nm, mg_plan *p, int64_t budget)
{
    if (!nm || p->nbufs <= MG_ARENA_PLAN_SEARCH_MAX || p->peak_live_bytes > budget ||
        (double)(p->workspace_bytes - budget) > NEAR_MISS_SHARE * (double)budget ||
        (nm->n == NEAR_MISSES && p->flops_executed >= nm->p[NEAR_MISSES - 1]->flops_executed)) {
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
    if (nm->n == NEAR_MISSES) mg_plan_free(nm->p[--nm->n]);
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
 * already made by the caller; fit takes it over. aim: the arena, when it misses the peak live
 * bytes, searches again for a placement within the budget before the cap is lowered (else the
 * cap is lowered at once: the scheduler is not monotone in its cap, so that is sometimes
 * cheaper; auto tries both); aim 2 also lowers the cap in small steps (1/400 of the budget), as
 * a schedule a little below the budget often places where one far below costs much more.
 * Where the cap lowered by a whole miss leaves the variant no schedule at all, it goes halfway
 * back to the cap that missed, while the two are more than 1/400 of the budget apart (not under
 * aim 1, the minimum search's probes: minimums stay as they were). resnet18_64 in 16 parts at 1.08
 * times its minimum: every variant's schedule under the budget placed 12-20% above it, and the
 * cap less that miss was below all its schedules, so no variant fitted and the plan was the
 * minimum's, +99.96%; halfway back fits, +69.76% (and +75.19% -> +45.78% at 1.12 times). */
static mg_status fit(const mg_problem *pr, const mg_sched_opts *opts, int64_t budget, search_memo *memo, mg_plan *first,
                     int aim, mg_place_memo *mm, near_misses *nm, mg_plan **out, int *at_budget, mg_diag *d)
{
    *out = NULL;
    int64_t cap = budget, missed = -1, dead = 0; /* the lowest cap whose schedule missed; a cap with none */
    for (int it = 0; it < 16 && cap > 0; it++) {
        mg_plan *p = it == 0 ? first : NULL;
        if (!p && schedule(pr, opts, cap, memo, &p, d)) return MG_ERR;
        if (!p && (aim == 1 || missed < 0 || missed - cap <= budget / 400)) return MG_OK;
        if (!p) { /* lowered by the whole miss, the cap fell below every schedule: halfway back */
            dead = cap;
            cap = dead + (missed - dead) / 2;
            continue;
        }
        if (mg_place_memo_place(mm, p, budget, aim ? budget : INT64_MAX, 0, 1.0, d)) {
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

/* Keeps the better of *best and p (fewer FLOPs, then a smaller workspace); frees the other. */
static void keep_better(mg_plan **best, mg_plan *p)
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

static void near_misses_free(near_misses *nm)
{
    for (int i = 0; i < nm->n; i++) mg_plan_free(nm->p[i]);
    nm->n = 0;
}

/* Of nm's schedules cheaper than `unfilled` (what *out cost before sched_refill.c's refill),
 * those that fit once compacted, refilled; the cheapest of them and *out is kept. Frees nm's
 * plans. */
static void rescue_near_misses(near_misses *nm, const mg_problem *pr, int64_t budget, double unfilled,
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
        keep_better(out, p);
    }
    nm->n = 0;
}

/* The chain DP's plan within budget (allocator waste included), or NULL: the cap is lowered
 * by what the arena added until the plan fits. With probe, caps above the budget are tried
 * for a cheaper plan that still fits (not needed when only feasibility is asked). */
static mg_status chain_fit(const mg_problem *pr, int64_t budget, search_memo *memo, const mg_plan *beat, int probe,
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
        memo->chain_table_cap = chain_table_cap(budget, memo->store_all);
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
            keep_better(&best, p);
        } else {
            hi = mid;
            mg_plan_free(p);
        }
    }
    *out = best;
    return MG_OK;
}

/* The budget-driven schedules auto tries: every eviction policy, with lazy and eager freeing;
 * sched_rc.c's scheduler under the policies that do best there (layered DAGs); then, on problems
 * small enough that scheduling is cheap, restarts of the eviction policies with perturbed
 * scores (mg_sched_opts.seed): as many as keep restarts x nodes near RESTART_WORK. */
enum { NRC = 5, NBASE = 2 * MG_EVICT_NPOLICIES, NFIT = NBASE, NVARIANTS = NBASE + NRC + NFIT, MAX_RESTARTS = 64,
       RESTART_WORK = 20000, IMPROVE_SEEDS = 3, IMPROVE_SCHEDULES = 600, IMPROVE_MIN = 60, IMPROVE_WORK = 210000 };
/* The improvement search (sched_improve.c) runs where auto's best plan is more than IMPROVE_GAP
 * above the lower bound, from the IMPROVE_SEEDS cheapest variants of sched_remat.c whose
 * schedules cost at most IMPROVE_SLACK more than that plan (where sched_rc.c's are far cheaper,
 * as on layered DAGs, it never catches up), each with up to IMPROVE_SCHEDULES schedules, fewer
 * on large problems (IMPROVE_WORK / nodes), and not at all where that is below IMPROVE_MIN
 * (above 3500 nodes: a search that short seldom finds anything, and each schedule is dear).
 * (600, not 300: the search no longer places the schedules it walks through, only the last
 * few, and a schedule that can no longer win stops early, so each costs ~0.3 ms on resnet50;
 * at its minimum: 1.1856 to 1.1664 of running every op once. IMPROVE_MIN doubled with
 * IMPROVE_WORK: still no search above 3500 nodes.) A walk that stops short of its schedules (its
 * start missed the budget far, or a round kept nothing) hands the rest to the next seed's walk:
 * resnet50 at its minimum, whose first seed's start misses far, walks its second seed twice as
 * far, 1.1664 to 1.1543, where it was still getting cheaper when it ran out. */
static const double IMPROVE_GAP = 0.001, IMPROVE_SLACK = 0.05;
static const struct { mg_evict_policy policy; int rc; } rc_variants[NRC] = {
    {MG_EVICT_COST_SIZE_DIST, 1}, {MG_EVICT_COST_SIZE_SQRTDIST, 1}, {MG_EVICT_COST_SIZE, 1},
    {MG_EVICT_COST_SIZE_DIST, 2}, {MG_EVICT_COST_SIZE_SQRTDIST, 2}};

static int improve_schedules(const mg_problem *pr)
{
    int k = IMPROVE_WORK / (pr->n > 0 ? pr->n : 1);
    return k < IMPROVE_MIN ? 0 : k > IMPROVE_SCHEDULES ? IMPROVE_SCHEDULES : k;
}

/* The polish's schedules (sched_improve.c's mg_polish_schedule): each is built whole, so as many
 * as keep plans x nodes^2 near IMPROVE_POLISH (unet: 793, resnet50: 32), and none where that
 * is below IMPROVE_POLISH_MIN (above 700 nodes: layered_n1000 at 0.9 of its peak, 1.0371 to
 * 1.0370 for 10% more time, its placements being dear). Where the plan is far above the lower
 * bound, more: that many times its distance over IMPROVE_POLISH_GAP (at most IMPROVE_POLISH_MAX
 * times), as there is more to find and the polish stops by itself after a round without an
 * edit (resnet50 at its minimum, 4.4% above the bound: 2,840, of which it uses ~2,400 in
 * ~15 ms, 1.1543 to 1.1518 of running every op once; the 32 of before found nothing); not
 * where the arena placed the plan with waste, as the polish then places every edit it keeps
 * (layered_n500 at 0.8 of its peak: 1,600 would take 1 s more); but IMPROVE_POLISH_WASTE times
 * as many where that waste is above the target (DESCENT_WASTE), as each edit kept holds more
 * live bytes in the room the arena left (resnet18_64 at 25%, in 4 parts of 633 nodes: workspace /
 * peak live 1.029 to 1.012 with 50 rather than 10, 17.39% to 17.36% over every op once, +0.7 s). */
static const double IMPROVE_POLISH = 4e6, IMPROVE_POLISH_GAP = 0.0005;
enum { IMPROVE_POLISH_MIN = 8, IMPROVE_POLISH_MAX = 100, IMPROVE_POLISH_WASTE = 5 };
static const double DESCENT_WASTE = 0.02; /* the target for workspace / peak live: 1.02 */
/* A plan the arena placed with more waste than `share` of its peak live bytes. */
static int wastes(const mg_plan *p, double share)
{
    return p && (double)p->workspace_bytes > (1 + share) * (double)p->peak_live_bytes;
}
static int improve_polish_plans(const mg_problem *pr, const mg_plan *best, double lower_bound)
{
    double n = pr->n > 0 ? pr->n : 1, k = IMPROVE_POLISH / (n * n);
    if (k < IMPROVE_POLISH_MIN) return 0;
    if (wastes(best, DESCENT_WASTE)) return (int)(k * IMPROVE_POLISH_WASTE);
    if (best->workspace_bytes > best->peak_live_bytes) return (int)k; /* each edit placed: dear */
    double f = lower_bound > 0 ? (best->flops_executed / lower_bound - 1) / IMPROVE_POLISH_GAP : 1;
    return (int)(k * (f < 1 ? 1 : f > IMPROVE_POLISH_MAX ? IMPROVE_POLISH_MAX : f));
}

static int restarts_for(const mg_problem *pr)
{
    int k = RESTART_WORK / (pr->n > 0 ? pr->n : 1);
    return k > MAX_RESTARTS ? MAX_RESTARTS : k;
}

/* Variant i under budget (i >= NVARIANTS: a restart); policy: the policy of sched_remat.c's
 * unperturbed variants, by i. The last NFIT are the first NBASE again, each dropping the cheapest
 * value that alone covers an excess when the policy's choice costs more (mg_sched_opts.fit). */
static mg_sched_opts variant_opts(int i, int64_t budget, mg_evict_policy policy)
{
    mg_sched_opts o = {.cap = budget, .policy = policy};
    if (i >= NBASE + NRC && i < NVARIANTS) {
        o = variant_opts(i - NBASE - NRC, budget, policy);
        o.fit = 1;
    } else if (i < NBASE) {
        o.lazy = i < MG_EVICT_NPOLICIES;
    } else if (i < NBASE + NRC) {
        o.policy = rc_variants[i - NBASE].policy;
        o.rc = rc_variants[i - NBASE].rc;
    } else {
        o.policy = (mg_evict_policy)(i % MG_EVICT_NPOLICIES);
        o.lazy = (i / MG_EVICT_NPOLICIES) % 2;
        o.seed = (uint64_t)(i - NVARIANTS + 1);
    }
    return o;
}
/* A variant's schedule is kept as its compute steps (mg_pb_replay) until it is placed: a
 * problem's ~25 variants are all scheduled before any is placed, and their plans take over 100
 * bytes a step (a 60-layer perceptron in 32 parts, 13,739 operations: 394 of the 456 MB of heap
 * `plan` peaked at were variants' plans waiting, 4.5 MB each, two threads' worth; now 133 MB). */
typedef struct variant {
    mg_sched_opts o;
    mg_plan *p;     /* its schedule at cap budget (not yet placed), or NULL when it has none; while
                       seq is set, its figures only (no steps nor buffers: variant_take) */
    int *seq, nseq; /* NULL, or p's compute steps */
    uint64_t hash;  /* with seq: p's buffers' hash (mg_plan_buffers_hash) */
} variant;

/* Keeps v's schedule as its compute steps and its plan's figures. */
static void variant_shrink(variant *v)
{
    v->hash = mg_plan_buffers_hash(v->p);
    v->seq = mg_xcalloc((size_t)v->p->nsteps + 1, sizeof *v->seq);
    v->nseq = mg_plan_compute_steps(v->p, v->seq);
    free(v->p->steps);
    free(v->p->bufs);
    v->p->steps = NULL;
    v->p->bufs = NULL;
}

/* v's schedule as a whole plan, which the caller takes over (v has none after). */
static mg_plan *variant_take(const mg_problem *pr, variant *v)
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
    *v = (variant){v->o, NULL, NULL, 0, 0};
    return p;
}

static void variant_free(variant *v)
{
    mg_plan_free(v->p);
    free(v->seq);
    *v = (variant){v->o, NULL, NULL, 0, 0};
}

static int variant_cmp(const void *a, const void *b)
{
    const mg_plan *p = ((const variant *)a)->p, *q = ((const variant *)b)->p;
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

/* The schedulers' scratch (mg_sched_store, mg_rc_store) of one thread's runs, kept from run to
 * run of one problem: the minimum search's (min_search), ~150-250 runs on the long chains, each
 * of which allocated ~30 arrays of n afresh (and its plan's steps, grown by realloc to the step
 * limit on a failing run: 170,064 steps on the 5,000-step relu chain). NULL fields: none. */
typedef struct sched_scratch {
    mg_sched_store *remat;
    mg_rc_store *rc;
} sched_scratch;

typedef struct probe_memo probe_memo;
static mg_status schedule_memo(const mg_problem *pr, const mg_sched_opts *o, int j, probe_memo *pm, mg_plan **out,
                               mg_diag *d);

static void use_scratch(mg_sched_opts *o, const sched_scratch *z)
{
    o->store = z ? z->remat : NULL;
    o->rc_store = z ? z->rc : NULL;
}

/* Schedules every variant at cap budget (scheduling is cheap; placing is not) and sorts them,
 * cheapest first; returns how many have a schedule. sched_rc.c's variants run first: where
 * policies thrash they are the cheap ones, so the limit above cuts the others early. z: the
 * scratch the runs use (NULL: none), kept in each variant's opts; fm: a memo of the failing runs
 * (schedule_memo; NULL: none). */
static int schedule_variants_in(const mg_problem *pr, int64_t budget, variant *v, int nvariants,
                                const sched_scratch *z, probe_memo *fm, mg_diag *d)
{
    int n = 0;
    double best = 0;
    for (int i = 0; i < nvariants; i++) v[i] = (variant){.p = NULL};
    for (int j = 0; j < nvariants; j++) {
        /* j runs sched_rc.c's variants (NBASE..NBASE+NRC-1) first, then the base ones, then the
         * rest (fit variants, restarts) in their own order: i covers 0..nvariants-1 once each */
        int i = j < NRC ? NBASE + j : j < NBASE + NRC ? j - NRC : j;
        v[i].o = variant_opts(i, budget, (mg_evict_policy)(i % MG_EVICT_NPOLICIES));
        v[i].o.flops_limit = best > 0 ? HOPELESS * best : 0;
        use_scratch(&v[i].o, z);
        v[i].p = NULL;
        if (fm ? schedule_memo(pr, &v[i].o, i, fm, &v[i].p, d) : evict_schedule(pr, &v[i].o, &v[i].p, d)) v[i].p = NULL;
        v[i].o.flops_limit = 0; /* fitting it reschedules without the limit */
        if (v[i].p && (best == 0 || v[i].p->flops_executed < best)) best = v[i].p->flops_executed;
        if (v[i].p) {
            set_unplaced_peak(v[i].p);
            variant_shrink(&v[i]);
            n++;
        }
    }
    qsort(v, (size_t)nvariants, sizeof *v, variant_cmp);
    /* restarts often make a schedule another variant made: keep one of each (placing is not cheap) */
    for (int i = 1, last = 0; i < n; i++) {
        const mg_plan *p = v[i].p, *q = v[last].p;
        if (p->flops_executed == q->flops_executed && p->peak_live_bytes == q->peak_live_bytes &&
            p->nsteps == q->nsteps && p->nbufs == q->nbufs && v[i].hash == v[last].hash) {
            variant_free(&v[i]);
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

/* schedule_variants_in with scratch of its own, for its runs only (the variants' opts leave
 * without it): its ~25 runs no longer each grow a plan's steps by realloc from scratch (on the
 * 2,500-step relu chain at 10%, 3% of `plan`'s CPU, and as much again in page faults). */
static int schedule_variants(const mg_problem *pr, int64_t budget, variant *v, int nvariants, mg_diag *d)
{
    sched_scratch z = {mg_sched_store_new(pr), mg_rc_store_new(pr)};
    int nv = schedule_variants_in(pr, budget, v, nvariants, &z, NULL, d);
    for (int i = 0; i < nvariants; i++) use_scratch(&v[i].o, NULL);
    mg_sched_store_free(z.remat);
    mg_rc_store_free(z.rc);
    return nv;
}

/* Chen's checkpoints: every ceil(sqrt(n))-th of the n forward values the scheduler may drop. */
static char *sqrt_checkpoints(const mg_problem *pr)
{
    char *keep = calloc((size_t)pr->n + 1, 1);
    if (!keep) abort();
    int n = 0;
    for (int i = 0; i < pr->nfwd && i < pr->n; i++) n += pr->evictable[i];
    int k = (int)ceil(sqrt((double)n)), seen = 0;
    for (int i = 0; i < pr->nfwd && i < pr->n; i++)
        if (pr->evictable[i] && ++seen % (k ? k : 1) == 0) keep[i] = 1;
    return keep;
}

/* The plan of one solver under budget, or NULL (and MG_OK) when it has none that fits. *optimal
 * is set when the exact search's plan, found under the budget itself, is among the candidates:
 * then the cheapest candidate is optimal. */
static mg_status solve_at(const mg_problem *pr, mg_solver solver, int64_t budget, const char *sqrt_keep,
                          search_memo *memo, near_misses *nm, mg_plan **out, int *optimal, mg_diag *d)
{
    *out = NULL;
    *optimal = 0;
    mg_sched_opts all = {.cap = INT64_MAX, .policy = MG_EVICT_COST_SIZE_DIST};
    mg_plan *p = NULL;
    if (solver == MG_SOLVER_STORE_ALL) { /* (mg_solve has tried store-all before auto) */
        if (build(pr, &all, &p, d)) return MG_ERR;
        if (p->workspace_bytes <= budget) {
            *out = p;
            return MG_OK;
        }
        mg_plan_free(p);
        return MG_OK;
    }
    if (solver == MG_SOLVER_SQRT || solver == MG_SOLVER_AUTO) {
        mg_sched_opts chk = {.cap = INT64_MAX, .policy = MG_EVICT_COST_SIZE_DIST, .keep = sqrt_keep};
        if (build(pr, &chk, &p, d)) return MG_ERR;
        if (p->workspace_bytes <= budget) *out = p;
        else mg_plan_free(p);
        if (solver == MG_SOLVER_SQRT) return MG_OK;
    }
    /* the variants cheapest first, each fitted to the budget; fitting only adds cost, so once a
     * variant's unfitted schedule costs no less than the best fitted plan, none later can win */
    variant v[NVARIANTS + MAX_RESTARTS];
    int nv = schedule_variants(pr, budget, v, NVARIANTS + restarts_for(pr), d);
    mg_status st = MG_OK;
    struct seed {
        mg_sched_opts o;
        double cost; /* its schedule's, unplaced */
    } seeds[IMPROVE_SEEDS]; /* the cheapest of sched_remat.c's variants */
    int nseeds = 0;
    for (int i = 0; i < nv && nseeds < IMPROVE_SEEDS; i++)
        if (!v[i].o.rc)
            seeds[nseeds++] = (struct seed){v[i].o, v[i].p->flops_executed};
    mg_place_memo mm = {.n = 0}; /* the variants' placements that missed */
    for (int i = 0; i < nv; i++) {
        if (st || (*out && v[i].p->flops_executed >= (*out)->flops_executed)) {
            variant_free(&v[i]);
            continue;
        }
        int at_budget = 0;
        if ((st = fit(pr, &v[i].o, budget, memo, variant_take(pr, &v[i]), 0, &mm, nm, &p, &at_budget, d))) continue;
        if (!p || !at_budget) { /* the arena missed the budget at first: aim it at the budget */
            keep_better(out, p);
            if ((st = fit(pr, &v[i].o, budget, memo, NULL, 2, &mm, nm, &p, NULL, d))) continue;
        }
        keep_better(out, p);
    }
    /* where the best plan is above the bound proven for every plan: a local search over the
     * eviction score weights of those variants (sched_improve.c) */
    memo_bound(memo);
    int spare = 0; /* schedules the walks before left unused */
    for (int i = 0; i < nseeds && !st && solver == MG_SOLVER_AUTO && *out &&
                    (*out)->flops_executed > memo->lower_bound * (1 + IMPROVE_GAP);
         i++) {
        /* a seed whose schedule misses the budget once placed walks too: the walk lowers its cap
         * until its start fits, unless that misses far (sched_improve.c: resnet50 at its minimum,
         * by 9-14%), and bisects its way back when its end misses (layered_n1000 at 0.9 of its
         * peak: 1.0572 without it, 1.0371) */
        if (improve_schedules(pr) > 0 && seeds[i].cost <= (*out)->flops_executed * (1 + IMPROVE_SLACK)) {
            spare += improve_schedules(pr);
            st = mg_improve_schedule_n(pr, &seeds[i].o, budget, &spare, out, d);
        }
    }
    /* then edits of the best schedule itself (sched_improve.c's polish) */
    if (!st && solver == MG_SOLVER_AUTO && *out && (*out)->flops_executed > memo->lower_bound * (1 + IMPROVE_GAP) &&
        improve_polish_plans(pr, *out, memo->lower_bound) > 0)
        st = mg_polish_schedule(pr, budget, improve_polish_plans(pr, *out, memo->lower_bound), out, d);
    if (!st && solver == MG_SOLVER_AUTO) { /* the chain DP: optimal checkpointing where the graph is a chain */
        if ((st = chain_fit(pr, budget, memo, *out, 1, &p, d)) == MG_OK) keep_better(out, p);
    }
    if (!st) { /* the exact search last: optimal where the problem is small enough */
        int at_budget = 0;
        if (!(st = fit(pr, NULL, budget, memo, NULL, 1, NULL, NULL, &p, &at_budget, d))) {
            if (p && at_budget) *optimal = 1;
            keep_better(out, p);
        }
    }
    if (nm && (st || *optimal)) near_misses_free(nm);
    if (st) {
        mg_plan_free(*out);
        *out = NULL;
    }
    return st;
}

/* Whether the walks could gain anything on *out (as solve_at: none without a search, or without a
 * plan above the bound by more than IMPROVE_GAP). */
static int walks_can_gain(const mg_problem *pr, const search_memo *memo, const mg_plan *out)
{
    return improve_schedules(pr) > 0 && out && out->flops_executed > memo->lower_bound * (1 + IMPROVE_GAP);
}

/* The polish at `at` of *out where walks there made it cheaper than `before`. */
static mg_status polish_walked(const mg_problem *pr, int64_t at, double before, search_memo *memo, mg_plan **out,
                               mg_diag *d)
{
    if ((*out)->flops_executed < before && (*out)->flops_executed > memo->lower_bound * (1 + IMPROVE_GAP) &&
        improve_polish_plans(pr, *out, memo->lower_bound) > 0)
        return mg_polish_schedule(pr, at, improve_polish_plans(pr, *out, memo->lower_bound), out, d);
    return MG_OK;
}

/* The improvement search of solve_at at a smaller budget `at` (from the variants there), into
 * *out (a plan within a budget of at least `at`). */
static mg_status improve_below(const mg_problem *pr, int64_t at, search_memo *memo, mg_plan **out, mg_diag *d)
{
    if (!walks_can_gain(pr, memo, *out)) return MG_OK;
    variant v[NVARIANTS + MAX_RESTARTS];
    double before = (*out)->flops_executed; /* (the walks keep only a cheaper plan) */
    int nv = schedule_variants(pr, at, v, NVARIANTS + restarts_for(pr), d), nseeds = 0, spare = 0;
    mg_status st = MG_OK;
    for (int i = 0; i < nv; i++) {
        if (!st && !v[i].o.rc && nseeds < IMPROVE_SEEDS && walks_can_gain(pr, memo, *out) &&
            v[i].p->flops_executed <= (*out)->flops_executed * (1 + IMPROVE_SLACK)) {
            nseeds++;
            spare += improve_schedules(pr);
            st = mg_improve_schedule_n(pr, &v[i].o, at, &spare, out, d);
        }
        variant_free(&v[i]);
    }
    /* a plan from the walks here: the polish at `at` too, as solve_at would have run it there
     * (resnet50 at 4.6 GB: 1.1543 from the walks at its minimum, 1.1518 polished) */
    return st ? st : polish_walked(pr, at, before, memo, out, d);
}

/* The walk of improve_below from one variant o (not sched_rc.c's) whose schedule under its cap
 * places within `at`, and the polish. */
static mg_status improve_from(const mg_problem *pr, const mg_sched_opts *o, int64_t at, search_memo *memo,
                              mg_plan **out, mg_diag *d)
{
    if (o->rc || !walks_can_gain(pr, memo, *out)) return MG_OK;
    double before = (*out)->flops_executed;
    int spare = improve_schedules(pr);
    mg_status st = mg_improve_schedule_n(pr, o, at, &spare, out, d);
    return st ? st : polish_walked(pr, at, before, memo, out, d);
}

/* The exact solver under budget, auto's plan as the incumbent. The program caps peak live
 * bytes; when the arena adds waste on top, the cap is lowered and the program solved again, and
 * then optimality is no longer proven. lower_bound is the bound at the budget itself. */
static mg_status solve_exact_at(const mg_problem *pr, int64_t budget, double time_limit, const char *sqrt_keep,
                                search_memo *memo, mg_solution *out, mg_diag *d)
{
    double end = mg_seconds() + time_limit;
    mg_plan *best = NULL;
    if (solve_at(pr, MG_SOLVER_AUTO, budget, sqrt_keep, memo, NULL, &best, &out->optimal, d)) return MG_ERR;
    if (out->optimal) { /* the exact search already settled it */
        out->plan = best;
        return MG_OK;
    }
    out->optimal = -1;
    /* most of the time for the relaxed program (solve_exact.c): its bound holds for every
     * schedule, not only for the MILP's class, and it is often stronger than memgrad's own; CBC
     * needs most of a 30 s run to get through the root of the examples' programs. When it
     * proves auto's plan optimal, the MILP has nothing left to find; else it gets the rest
     * (auto's plan was the MILP's best on every example and all but two Checkmate rows). */
    double relaxed, remain = end - mg_seconds();
    if (remain <= 0) { /* no time left (the later part counts of a split, plan_split.c): auto's plan */
        out->plan = best;
        return MG_OK;
    }
    if (mg_relaxed_bound_below(pr, budget, remain * 0.8, best ? best->flops_executed : HUGE_VAL, &relaxed, d)) {
        mg_plan_free(best);
        return MG_ERR;
    }
    if (relaxed > out->lower_bound) out->lower_bound = relaxed;
    if (best && out->lower_bound >= best->flops_executed) {
        out->plan = best; /* mg_solve says it is optimal */
        return MG_OK;
    }
    int64_t cap = budget;
    for (int it = 0; it < 8 && cap > 0; it++) {
        double left = end - mg_seconds();
        if (left <= 0) break;
        mg_exact_result r;
        if (mg_solve_exact(pr, cap, left, best ? best->flops_executed : HUGE_VAL, &r, d) ||
            (r.plan && mg_arena_assign(r.plan, d))) {
            mg_plan_free(r.plan);
            mg_plan_free(best);
            return MG_ERR;
        }
        if (r.crashed) {
            out->note = r.timed_out ? "the MILP solver (CBC) did not stop at the time limit and was stopped; the plan "
                                      "is auto's, optimality unknown"
                                    : "the MILP solver (CBC) failed on this program; the plan is auto's, optimality "
                                      "unknown";
            break;
        }
        /* the MILP's bound and its proofs hold only for the schedules of its class (targets
         * and each stage's recomputations in graph order), not for every plan auto may find:
         * they settle `optimal` within that class but never raise lower_bound */
        if (it == 0 && r.proven && !r.plan && best) out->optimal = out->optimal_in_class = 1; /* nothing beats auto's */
        if (!r.plan) break;
        if (r.plan->workspace_bytes <= budget) {
            if (it == 0 && r.proven) out->optimal = out->optimal_in_class = 1;
            keep_better(&best, r.plan);
            break;
        }
        int64_t over = r.plan->workspace_bytes - budget;
        cap -= over > MG_ALIGN ? over : MG_ALIGN;
        mg_plan_free(r.plan);
    }
    out->plan = best;
    return MG_OK;
}

/* What the bisection learns of the variants it runs: each run reports the caps it behaves
 * identically under (mg_schedule_range, mg_schedule_rc_range), so a later probe whose budget falls in such a range
 * where the variant found no schedule skips it. Near the minimum the bisection's probes are
 * closer together than the footprints the scheduler compares with the cap, so most failing runs
 * there would only repeat. (Runs that found a schedule are not kept: a later probe rarely falls
 * in their range, and copying their plans cost more than it saved.) The descent keeps one too
 * for the variants schedule_variants_in runs (restarts included), where the ladder's caps, 1%
 * of the peak apart, fall within one failing run's range: the tanh chain of 1,666 layers, peak
 * 312,448 bytes, 3,124 bytes apart, where the range is about one 8,192-byte value wide, and 24
 * of its 25 variants fail each rung (0.9 s a rung, 4 rungs). A run given up on past its
 * flops_limit fails the same under a lower limit too, so the limit is kept with the range. */
enum { FAILS_MAX = 8, NMEMO = NVARIANTS + MAX_RESTARTS };
typedef struct probe_memo {
    int64_t lo[NMEMO][FAILS_MAX], hi[NMEMO][FAILS_MAX]; /* variant j: no schedule under any cap in [lo, hi) */
    double limit[NMEMO][FAILS_MAX];                      /* under its flops_limit (0: none) or any lower one */
    int n[NMEMO], next[NMEMO];                           /* ranges kept, and the one replaced next when full */
} probe_memo;

/* Variant j (0..NMEMO-1) under opts->cap, unless a run already failed under it. */
static mg_status schedule_memo(const mg_problem *pr, const mg_sched_opts *o, int j, probe_memo *pm, mg_plan **out,
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
    int k = pm->n[j] < FAILS_MAX ? pm->n[j]++ : pm->next[j]++ % FAILS_MAX; /* full: the oldest makes room */
    pm->lo[j][k] = range[0];
    pm->hi[j][k] = range[1];
    pm->limit[j][k] = o->flops_limit;
    return MG_OK;
}

/* Some plan within budget: the first variant, most frugal first, that schedules under it and
 * still fits once placed. */
static mg_status feasible_at(const mg_problem *pr, int64_t budget, search_memo *memo, probe_memo *pm,
                             mg_place_memo *mm, const sched_scratch *z, mg_plan **out, mg_diag *d)
{
    static const mg_evict_policy tight[] = {MG_EVICT_SIZE_DIST, MG_EVICT_COST_SIZE_DIST, MG_EVICT_COST_SIZE,
                                            MG_EVICT_COST_SIZE_DIST2, MG_EVICT_COST_SIZE_SQRTDIST};
    *out = NULL;
    mg_status st = MG_OK;
    for (int j = 0; j < NBASE + NRC && !*out && !st; j++) { /* (the fit variants save cost, not bytes) */
        int i = (j + NBASE) % (NBASE + NRC); /* sched_rc.c's first: the most frugal where it matters */
        mg_sched_opts o = variant_opts(i, budget, tight[i % MG_EVICT_NPOLICIES]);
        use_scratch(&o, z);
        mg_plan *p;
        if (schedule_memo(pr, &o, i, pm, &p, d)) st = MG_ERR;
        else if (p && fit(pr, &o, budget, memo, p, 1, mm, NULL, out, NULL, d)) st = MG_ERR;
    }
    if (!st && !*out && chain_fit(pr, budget, memo, NULL, 0, out, d)) st = MG_ERR;
    if (!st && !*out && fit(pr, NULL, budget, memo, NULL, 1, mm, NULL, out, NULL, d)) st = MG_ERR; /* last: the exact search */
    return st;
}

/* The descent after the bisection. The bisection's probes take the first variant that fits
 * (feasible_at), but the solve at a budget tries every variant, restarts among them, and keeps
 * the cheapest that fits, so it found plans below the minimum the bisection named, and the
 * bisection's plan at its minimum was often poorly placed (resnet18_64 in 16 parts: 5,379,136
 * bytes for a peak of 4,769,856, while a restart under a budget of 5,242,880 placed 4,990,016
 * for a peak of 4,727,872). So, from the bisection's minimum hi, every variant of the solve
 * (schedule_variants) is scheduled just below hi and placed; the least placed workspace that
 * fits is the new minimum, and the step is repeated from there while it goes down (at most
 * DESCENT_ROUNDS times), with only the first DESCENT_KEEP variants that fitted in the step
 * before (the same variant often wins again: resnet18_64 in 8 parts, one restart three times).
 * Picking by placed workspace picks the schedules whose lifetimes place well. Cheap enough:
 * the variants are placed in order of their peak live bytes (what the arena cannot go below),
 * none whose peak is at or above the least workspace found once DESCENT_KEEP have fitted, and
 * one that misses has its cap lowered by what it missed by, at most DESCENT_TRIES - 1 times.
 * It depends only on the problem and hi, never on the budget asked. Where the least plan still
 * wastes more than DESCENT_WASTE, the ladder (descend_ladder) tries schedules made under caps
 * well below its peak. */
enum { DESCENT_ROUNDS = 4, DESCENT_TRIES = 3, DESCENT_KEEP = 3, DESCENT_TOL = 100 };
static const double DESCENT_TOL_WASTE = 0.05;
/* Where the bisection's plan places without waste the descent once seemed useless, and did not
 * run; but the bisection takes the first variant that fits, and others place lower: resnet50's
 * bisection named 4,521,459,712 bytes while the solve at a budget met 4,315,938,816, so `plan
 * --budget 4.4GB` planned in 4,345,561,088 and said the minimum was 4,521,459,712. There the
 * descent's time is placements that miss: most variants' schedules place 9-17% above their
 * peak live bytes whatever the arena's search, which spends its whole effort before it gives
 * up, while those that place at their peak are found within an eighth of it (0.31-0.53 of 4
 * million items). So that descent searches with DESCENT_QUICK of the effort: the same minimums
 * as the whole effort but on layered_n250 (116,330 bytes, 114,799 with it), +0.15 s a resnet50
 * solve (with the whole effort +0.3 s). */
static const double DESCENT_QUICK = 0.25;

static int variant_by_peak(const void *a, const void *b)
{
    const mg_plan *p = ((const variant *)a)->p, *q = ((const variant *)b)->p;
    if (p->peak_live_bytes != q->peak_live_bytes) return p->peak_live_bytes < q->peak_live_bytes ? -1 : 1;
    return variant_cmp(a, b);
}

/* Variant o's schedule p (at cap budget; taken over) placed within budget, its cap lowered
 * when it misses; *out is NULL when no try fits. */
static mg_status place_below(const mg_problem *pr, const mg_sched_opts *o, mg_plan *p, int64_t budget,
                             double effort, search_memo *memo, mg_place_memo *mm, mg_plan **out, mg_diag *d)
{
    *out = NULL;
    int64_t cap = budget;
    for (int it = 0; it < DESCENT_TRIES && p; it++) {
        /* (any target: what missed a larger budget of the descent misses this one) */
        if (mg_place_memo_place(mm, p, budget, budget, 1, effort, d)) {
            mg_plan_free(p);
            return MG_ERR;
        }
        if (p->workspace_bytes <= budget) {
            *out = p;
            return MG_OK;
        }
        cap = mg_cap_after_miss(cap, p, p->workspace_bytes - budget, INT64_MAX);
        mg_plan_free(p);
        p = NULL;
        if (it + 1 < DESCENT_TRIES && cap > 0 && schedule(pr, o, cap, memo, &p, d)) return MG_ERR;
    }
    mg_plan_free(p);
    return MG_OK;
}

/* The ladder after the descent's rounds. Their budgets go down by one byte from the least
 * workspace found, and the scheduler fills the cap it is given, so their schedules peak near
 * that workspace and, with the arena's waste on top, seldom place below it; a schedule made
 * under a cap well below it peaks lower and may place lower. That is why a budget above the
 * minimum placed lower than the minimum: resnet18_64 in 16 parts, under a budget of 5,242,880
 * a restart's first schedule missed by 465,984 bytes, and fit scheduled it again under the
 * budget less that, 4,776,896: peak 4,727,872, placed in 4,990,016, where the descent had
 * stopped at 5,183,552. The descent never tried that restart: it has no schedule under
 * 5,334,079, where the descent began, nor under 4,800,679, but has under 4,774,009 and
 * 5,254,069 (the scheduler is not monotone in its cap; which variant meets which cap is
 * erratic). The lowest placements come from schedules made near the lowest cap a variant meets
 * at all. So every variant is scheduled under caps LADDER_STEP, 2 LADDER_STEP, ... (at most
 * LADDER_CAPS) of the least plan's peak live bytes below that peak, until a cap where none has
 * a schedule (near that floor failing runs are not cheap: a rung costs about as much as three
 * placements); the LADDER_PLACE schedules of lowest peak are placed once each within the
 * least workspace (their caps are low already). resnet18_64 in 16 parts: 5,183,552 ->
 * 4,922,432 bytes (peak 4,720,704: 1.067 -> 1.043 of it), +0.25 s of a 2 s `plan`. *least is
 * replaced when one places lower; v: room for NVARIANTS + MAX_RESTARTS variants. Like the
 * descent, it depends only on the problem and where the descent started.
 * Where no variant has a schedule even under the first cap below the least plan's peak, that
 * plan sits at the scheduler's floor already, and the ladder goes up instead: caps LADDER_STEP,
 * 2 LADDER_STEP, ... above the peak, below the least workspace (the room its waste leaves), and
 * the LADDER_PLACE_UP schedules of lowest peak are placed, as near the floor the lowest peaks
 * place no better than the others; only where that plan wastes more than DESCENT_TOL_WASTE
 * (layered_n250, 2-5%: 116,330 -> 116,310 bytes for +0.19 s a solve). `plan --micro-batches 16` of resnet18_64, whose descent
 * started from its own bisection (not from the 8 parts' minimum, as `plan` alone does): the
 * least plan, 5,313,600 bytes, peaked at 4,720,704, under which no variant schedules at all;
 * up: 4,990,016 bytes, its sixth schedule of lowest peak (4,727,872). */
enum { LADDER_CAPS = 4, LADDER_PLACE = 2, LADDER_PLACE_UP = 8 };
static const double LADDER_STEP = 0.01;

static mg_status descend_ladder(const mg_problem *pr, mg_place_memo *mm, variant *v, const sched_scratch *z,
                                probe_memo *fm, mg_plan **least, mg_diag *d)
{
    mg_status st = MG_OK;
    int64_t peak = (*least)->peak_live_bytes;
    variant kept[LADDER_PLACE_UP]; /* the schedules of lowest peak so far, lowest first */
    int nkept = 0, room = LADDER_PLACE, up = 0;
    for (int k = 1; k <= LADDER_CAPS; k++) {
        int64_t step = (int64_t)((double)peak * LADDER_STEP * k), cap = up ? peak + step : peak - step;
        if (up && cap >= (*least)->workspace_bytes) break;
        int nv = schedule_variants_in(pr, cap, v, NVARIANTS + restarts_for(pr), z, fm, d);
        for (int i = 0; i < nv; i++) { /* into kept (by variant_by_peak) when among the lowest */
            variant x = v[i];
            for (int j = 0; j < nkept && x.p; j++)
                if (variant_by_peak(&x, &kept[j]) < 0) {
                    variant t = kept[j];
                    kept[j] = x;
                    x = t;
                }
            if (x.p && nkept < room) kept[nkept++] = x;
            else variant_free(&x);
        }
        if (nv == 0 && k == 1 && !up && wastes(*least, DESCENT_TOL_WASTE)) { /* at the floor already: up */
            up = 1;
            room = LADDER_PLACE_UP;
            k = 0;
            continue;
        }
        if (nv == 0) break; /* the floor: lower caps fail too, each run at a cost */
    }
    for (int i = 0; i < nkept; i++) {
        mg_plan *p = variant_take(pr, &kept[i]);
        int64_t budget = (*least)->workspace_bytes - 1;
        if (!st && p->peak_live_bytes <= budget &&
            (st = mg_place_memo_place(mm, p, budget, budget, 1, 1.0, d)) == MG_OK && p->workspace_bytes <= budget) {
            mg_plan_free(*least);
            *least = p;
        } else {
            mg_plan_free(p);
        }
    }
    return st;
}

/* The least placed workspace below hi the descent finds, into *out (NULL: none), and the variant
 * that made it, its cap that of the step (*won_by; set where *out is); its placements search with
 * effort times the arena's usual effort. */
static mg_status descend(const mg_problem *pr, int64_t hi, double effort, search_memo *memo,
                         const sched_scratch *z, mg_plan **out, mg_sched_opts *won_by, mg_diag *d)
{
    *out = NULL;
    mg_status st = MG_OK;
    mg_place_memo mm = {.n = 0}; /* (the budgets only go down: what missed one misses the next) */
    variant v[NVARIANTS + MAX_RESTARTS];
    probe_memo *fm = mg_xcalloc(1, sizeof *fm); /* (not the bisection's: other policies, other limits) */
    mg_sched_opts won[DESCENT_KEEP];
    int nwon = 0;
    for (int round = 0; round < DESCENT_ROUNDS && !st; round++) {
        int64_t budget = (*out ? (*out)->workspace_bytes : hi) - 1;
        int nv = 0;
        if (round == 0) {
            nv = schedule_variants_in(pr, budget, v, NVARIANTS + restarts_for(pr), z, fm, d);
        } else { /* the variants that fitted in the step before */
            for (int w = 0; w < nwon && !st; w++) {
                mg_plan *p = NULL;
                st = schedule(pr, &won[w], budget, memo, &p, d);
                if (p) {
                    set_unplaced_peak(p);
                    v[nv++] = (variant){won[w], p, NULL, 0, 0};
                }
            }
        }
        qsort(v, (size_t)nv, sizeof *v, variant_by_peak);
        mg_plan *least = NULL;
        mg_sched_opts least_by = {0};
        nwon = 0;
        for (int i = 0; i < nv; i++) {
            mg_plan *p = NULL;
            if (st || (least && v[i].p->peak_live_bytes >= least->workspace_bytes && nwon == DESCENT_KEEP))
                variant_free(&v[i]);
            else
                st = place_below(pr, &v[i].o, variant_take(pr, &v[i]), budget, effort, memo, &mm, &p, d);
            if (p && nwon < DESCENT_KEEP) won[nwon++] = v[i].o;
            if (p && (!least || p->workspace_bytes < least->workspace_bytes ||
                      (p->workspace_bytes == least->workspace_bytes && p->flops_executed < least->flops_executed))) {
                mg_plan_free(least);
                least = p;
                least_by = v[i].o;
                least_by.cap = budget;
            } else {
                mg_plan_free(p);
            }
        }
        if (st || !least) {
            mg_plan_free(least);
            break;
        }
        mg_plan_free(*out);
        *out = least;
        *won_by = least_by;
    }
    if (!st && wastes(*out, DESCENT_WASTE)) st = descend_ladder(pr, &mm, v, z, fm, out, d);
    free(fm);
    use_scratch(won_by, NULL); /* (the scratch is the caller's, and won_by outlives it) */
    return st;
}

/* How far above the minimum feasible budget improve_below runs, and near_min_rungs' budgets
 * (NEAR_MIN_RUNG_AT) lie. */
static const double NEAR_MIN = 0.05;
/* Past NEAR_MIN, up to NEAR_MIN_RUNGS_UP_TO above the minimum, the rungs run too where the solve
 * found no plan, or one that recomputes at least NEAR_MIN_RUNGS_SAVED of what the plan at the
 * minimum recomputes: the solve there did little better than the minimum's plan, which a budget
 * just past NEAR_MIN got where every budget within it got the rungs' (resnet18_64 in 16 parts: 63.88% up to 1.05 times
 * its minimum, 99.96% at 1.06 times, now 63.88%; the transformer at 1.06 times 92.26 -> 77.76%,
 * against 94.28% at its minimum). Not everywhere up to 10%: the rungs cost about twice the solve
 * again (resnet18_64 at 1.06 times 3.3 -> 7.8 s of CPU, mlp_deep 0.8 -> 2.7 s), and run on
 * every budget there they found nothing on unet_small, mlp_deep and the transformer at 1.08 and
 * 1.10 times, nor on layered_n1000 at 0.8 of its peak (1.074 times its minimum; 2.6 -> 7.9 s of
 * CPU, 1.193 where its minimum's plan costs 1.4136). They do improve resnet18_64 at 1.07-1.10
 * times (72.64 / 69.76% -> 63.88%), which this leaves out. */
static const double NEAR_MIN_RUNGS_UP_TO = 0.10, NEAR_MIN_RUNGS_SAVED = 0.9;

/* Near the minimum the solve's plan swings with the budget: the schedules are fitted to caps that
 * the arena's waste moves, and a cap a little lower can give a far cheaper plan (transformer
 * 1.01 / 1.02 / 1.03 times its minimum: 77.8%, 77.8%, 92.3% recomputed; resnet18_64 at 1.03
 * times: 128.9%, where the solve at 1.02 times finds 83.1%). So a budget within
 * NEAR_MIN_RUNGS_UP_TO above the minimum also gets the solve at fixed budgets above the minimum that lie below it
 * (NEAR_MIN_RUNG_AT), each plan fitting the budget too, the cheapest kept: a budget near the
 * minimum then tries every rung a smaller one tried. With two rungs evenly between the minimum
 * and the budget instead (up to 2026-12-04), transformer 77.8% from 1.01 to 1.05 times its
 * minimum (92.3% at 1.03-1.05 without rungs), but resnet18_64 63.88% at 1.02 and 1.03 times and
 * 87.94 / 99.96 / 84.53 / 84.53 / 87.94% at 1.025 / 1.035 / 1.04 / 1.045 / 1.05 times; with
 * the fixed rungs, 63.88% at all of those, for up to 3 rungs more (1.05 times: 6.0 -> 9.2 s
 * of CPU; 1.01 times: 5.5 -> 4.5 s, one rung fewer). The solve at the minimum
 * itself only where the solve at the budget found no plan (the minimum search's would be taken):
 * elsewhere improve_below has walked there already, and over the examples and resnet50 at 1.01-1.05
 * times their minimum that solve never found a cheaper plan (resnet18_64: 1.0-1.3 s a budget for
 * nothing). Not where the plan is within NEAR_MIN_RUNG_GAP of the proven lower bound: the
 * Checkmate graphs near their minimum (vgg19 at 80%, unet and mobilenet at 40%), where the rungs
 * found nothing and doubled the time. The rungs run side by side (near_min_rungs). */
static const double NEAR_MIN_RUNG_AT[] = {0.005, 0.01, 0.02, 0.03, 0.04};
enum { NEAR_MIN_RUNGS_MAX = 1 + sizeof NEAR_MIN_RUNG_AT / sizeof NEAR_MIN_RUNG_AT[0] };
static const double NEAR_MIN_RUNG_GAP = 0.02;

/* One rung's solve. A rung on a thread of its own has its own search memo: a copy of the solve's
 * (the memo is a cache the solves write to: the exact search's findings, the chain DP's tables),
 * the chain analysed again and its tables built for the same cap, so each rung finds the plan
 * it would have found with the rungs run one after another. */
typedef struct rung_job {
    const mg_problem *pr;
    int64_t budget;
    const char *keep;
    search_memo *memo;
    search_memo own;
    mg_plan *plan;
    mg_status st;
    mg_diag d;
    pthread_t th;
    int threaded;
} rung_job;

static void *rung_solve(void *arg)
{
    rung_job *j = arg;
    int optimal = 0;
    j->st = solve_at(j->pr, MG_SOLVER_AUTO, j->budget, j->keep, j->memo, NULL, &j->plan, &optimal, &j->d);
    return NULL;
}

/* The rungs between from and budget: from itself where there is no plan yet (*out NULL), and
 * the budgets NEAR_MIN_RUNG_AT above the minimum hi that lie between them, the first on this thread and the others each on a thread of their own (side
 * by side where cores are free; sharing one core, they take as long as in turn), their plans
 * taken in order of budget. */
static mg_status near_min_rungs(const mg_problem *pr, int64_t hi, int64_t from, int64_t budget, const char *keep,
                                search_memo *memo, mg_plan **out, mg_diag *d)
{
    rung_job job[NEAR_MIN_RUNGS_MAX];
    int n = 0;
    if (!*out) job[n++] = (rung_job){.budget = from};
    for (int r = 0; r + 1 < NEAR_MIN_RUNGS_MAX; r++) {
        int64_t b = (int64_t)((double)hi * (1 + NEAR_MIN_RUNG_AT[r]));
        if (b >= budget) break;
        if (b > from) job[n++] = (rung_job){.budget = b};
    }
    memo_bound(memo); /* (the copies take its bound, and no thread of its own) */
    for (int r = 0; r < n; r++) {
        job[r].pr = pr;
        job[r].keep = keep;
        job[r].memo = memo;
        if (r == 0) continue;
        job[r].own = *memo;
        job[r].own.chain_tried = 0;
        job[r].own.chain = NULL;
        job[r].memo = &job[r].own;
        job[r].threaded = pthread_create(&job[r].th, NULL, rung_solve, &job[r]) == 0;
    }
    if (n == 0) return MG_OK;
    rung_solve(&job[0]);
    mg_status st = MG_OK;
    for (int r = 0; r < n; r++) {
        if (r > 0) {
            if (!job[r].threaded) rung_solve(&job[r]);
            else if (pthread_join(job[r].th, NULL)) abort();
            mg_chain_free(job[r].own.chain);
        }
        mg_plan *p = job[r].plan;
        if (!st && job[r].st) {
            st = job[r].st;
            *d = job[r].d;
        }
        if (!st && p && (!*out || p->flops_executed < (*out)->flops_executed)) {
            mg_plan_free(*out);
            *out = p;
        } else {
            mg_plan_free(p);
        }
    }
    return st;
}

/* The minimum search's inputs and results (min_search), apart so that it may run on a thread
 * of its own beside the solve at the budget, which it does not depend on. */
typedef struct min_search_job {
    const mg_problem *pr;
    int64_t budget, below, floor, store_all;
    int searching;
    const char *keep;
    /* out: the least budget with a plan (hi; found: it has one, else `below` with none under
     * it), its plan (best) and the cheapest plan within the budget seen (cheap, which may be
     * best); the bisection's least (bisected: hi before the descent; -1 where nothing was found);
     * where the descent found hi, the variant whose schedule placed there (descended: 1, seed);
     * st and d as a planner call's */
    int64_t hi, bisected;
    int descended;
    mg_sched_opts seed;
    int found;
    mg_plan *best, *cheap;
    mg_status st;
    mg_diag d;
} min_search_job;

/* The minimum search: a bisection over budgets between a proven lower bound and store-all (or
 * `below`); hi has a plan once `found`; stops within 0.1% (or one alignment unit) of the
 * smallest budget found (1% where a wasteful plan has the descent follow). It depends on the
 * problem and `below` only, never on the budget asked (its own memo: the solve's depends on the
 * budget), so every budget names the same minimum, and a budget at or above it gets at worst
 * the plan the search found there (the schedulers are not monotone in their cap: the solve at a
 * budget can miss where the search met a smaller one). */
static void min_search(min_search_job *r)
{
    const min_search_job *a = r;
    const mg_problem *pr = a->pr;
    int64_t budget = a->budget, below = a->below, floor = a->floor;
    int searching = a->searching;
    const char *keep = a->keep;
    r->st = MG_OK;
    search_memo mmemo = {-1, 0, 0, NULL, 0, a->store_all, 0, NULL}; /* (it reads no lower bound) */
    int64_t ws = mg_working_set_bound(pr), lo = ws, hi = a->store_all;
    int found = 1; /* store-all */
    mg_plan *best = NULL;
    if (lo > 0) lo -= 1; /* lo is infeasible by convention; the bound itself may be met */
    /* the scheduler is not monotone in its cap: a plan the bisection finds under a smaller
     * budget can be cheaper than the one found under the budget; the cheapest that fits
     * the budget is kept (cheap, owned apart from best unless they are the same plan) */
    mg_plan *cheap = NULL;
    /* Chen's checkpoints: a plan of fixed size that the solve of auto tries at every budget
     * (resnet18_64 in 16 parts: 4,990,016 bytes where the bisection alone stopped at 5,248,064) */
    mg_sched_opts chk = {.cap = INT64_MAX, .policy = MG_EVICT_COST_SIZE_DIST, .keep = keep};
    if ((r->st = build(pr, &chk, &best, &r->d))) {
        mg_chain_free(mmemo.chain);
        return;
    }
    if (best->workspace_bytes < hi && (below <= 0 || best->workspace_bytes < below)) {
        hi = best->workspace_bytes;
        if (searching && hi <= budget) cheap = best;
    } else {
        mg_plan_free(best);
        best = NULL;
    }
    /* below: only a plan under it matters; the first probe is just under it (within the
     * stopping tolerance), and where that misses the search stops there */
    int64_t first = -1;
    if (below > 0 && below < hi) {
        hi = below;
        found = 0;
        int64_t tol = hi / 1000 > MG_ALIGN ? hi / 1000 : MG_ALIGN;
        if (hi - tol > lo) first = hi - tol;
    }
    if (floor > 0 && floor >= hi) lo = hi; /* nothing to search: hi is within floor already */
    else if (floor > lo && floor < hi) first = floor;
    probe_memo pm = {.n = {0}};
    mg_place_memo bm = {.n = 0}; /* placements that missed, over all the probes */
    sched_scratch z = {mg_sched_store_new(pr), mg_rc_store_new(pr)}; /* (this thread's runs only) */
    /* within 0.1% of the least budget found; within 1/DESCENT_TOL where the plan there wastes more
     * than DESCENT_TOL_WASTE, as the descent then goes on from it to placements below what the
     * probes reach, and a probe that misses costs every variant's fitting: mlp_deep in 32 parts,
     * five misses of ~0.35 s each between 149,679 and 151,734 bytes, then the descent to 141,376
     * (the same minimum and plans, `plan` 1.1-1.5 s faster) */
    while (hi - lo > MG_ALIGN && hi - lo > hi / (searching && wastes(best, DESCENT_TOL_WASTE) ? DESCENT_TOL : 1000)) {
        int64_t mid = first > 0 ? first : lo + (hi - lo) / 2;
        first = -1;
        mg_plan *p;
        if ((r->st = feasible_at(pr, mid, &mmemo, &pm, &bm, &z, &p, &r->d))) break;
        if (p && mid == floor) lo = p->workspace_bytes - 1; /* within floor: done */
        if (p) {
            hi = p->workspace_bytes;
            found = 1;
            if (best != cheap) mg_plan_free(best);
            best = p;
            if (searching && p->workspace_bytes <= budget &&
                (!cheap || p->flops_executed < cheap->flops_executed ||
                 (p->flops_executed == cheap->flops_executed && p->workspace_bytes < cheap->workspace_bytes))) {
                if (cheap != best) mg_plan_free(cheap);
                cheap = p;
            }
        } else {
            lo = mid;
        }
    }
    r->bisected = found ? hi : -1;
    /* the descent: from the bisection's minimum, or from `below` where the bisection found
     * nothing under it (the minimum of the fewer parts tried before, which the descent there
     * made); not where floor is met. Where the bisection's plan wastes at most DESCENT_WASTE of
     * its peak live bytes, a quick one (DESCENT_QUICK); nor where one step alone needs hi bytes
     * (no plan can be below it: unet_small in 8 parts needs 8,388,608 bytes in one step, more
     * than the 2,883,648 of the 4 parts' minimum, `below`) */
    if (!r->st && searching && (found || below > 0) && !(floor > 0 && hi <= floor) && ws < hi) {
        mg_plan *p;
        double effort = found && !wastes(best, DESCENT_WASTE) ? DESCENT_QUICK : 1.0;
        if (!(r->st = descend(pr, hi, effort, &mmemo, &z, &p, &r->seed, &r->d)) && p) {
            r->descended = p->workspace_bytes == p->peak_live_bytes; /* (placed with no waste) */
            hi = p->workspace_bytes;
            found = 1;
            if (best != cheap) mg_plan_free(best);
            best = p;
            if (p->workspace_bytes <= budget &&
                (!cheap || p->flops_executed < cheap->flops_executed ||
                 (p->flops_executed == cheap->flops_executed && p->workspace_bytes < cheap->workspace_bytes))) {
                if (cheap != best) mg_plan_free(cheap);
                cheap = p;
            }
        }
    }
    mg_chain_free(mmemo.chain);
    mg_sched_store_free(z.remat);
    mg_rc_store_free(z.rc);
    r->hi = hi;
    r->found = found;
    r->best = best;
    r->cheap = cheap;
}

static void *min_search_thread(void *job)
{
    min_search((min_search_job *)job);
    return NULL;
}

/* mg_solve; below > 0: the minimum search looks only below `below` bytes (mg_plan_request.
 * min_feasible_below) and, finding nothing there, reports `below` itself. floor > 0: a minimum
 * at or under floor is as good as any (the forward pass's under the training step's: the
 * program needs the larger), so a plan within floor ends the search, and it reports that plan's
 * workspace. */
static mg_status solve_below(const mg_problem *pr, mg_solver solver, int64_t budget, int want_min, int64_t below,
                             int64_t floor, double time_limit, mg_solution *out, mg_diag *d)
{
    *out = (mg_solution){.min_feasible_bytes = -1, .optimal = -1, .lower_bound = -1};
    char *keep = sqrt_checkpoints(pr);
    mg_status st = MG_OK;
    mg_plan *sa = NULL;
    mg_sched_opts all = {.cap = INT64_MAX, .policy = MG_EVICT_COST_SIZE_DIST};
    search_memo memo = {-1, 0, 0, NULL, 0, 0, 0, NULL};
    near_misses nm = {.n = 0}; /* the solve at the budget's, rescued last */
    min_search_job job = {0};
    pthread_t th;
    int threaded = 0; /* the minimum search is running on thread th */
    if ((st = build(pr, &all, &sa, d))) goto done;
    out->store_all_bytes = sa->workspace_bytes;
    memo.store_all = sa->workspace_bytes;
    /* every op at least once, and what no schedule within the budget avoids (nothing where
     * store-all fits: then every op once is the optimum) */
    out->lower_bound = sa->flops_once;
    bound_job bj = {.pr = pr, .budget = budget, .store_all = memo.store_all, .once = out->lower_bound,
                    .bound = out->lower_bound};
    if (sa->workspace_bytes > budget) { /* two different arguments (bound_step.c, bound_cut.c): the larger holds */
        if (solver == MG_SOLVER_AUTO && pthread_create(&bj.th, NULL, bound_thread, &bj) == 0) {
            bj.running = 1; /* (auto's solve waits for it before its walks: memo_bound) */
            memo.pending = &bj;
        } else {
            bound_compute(&bj);
            out->lower_bound = bj.bound;
        }
    }
    memo.lower_bound = out->lower_bound; /* (every op once until the thread's is in: memo_bound) */
    int searching = solver == MG_SOLVER_AUTO || solver == MG_SOLVER_EXACT;
    job = (min_search_job){.pr = pr, .budget = budget, .below = below, .floor = floor, .store_all = memo.store_all,
                           .searching = searching, .keep = keep};
    /* where the minimum is asked for anyway, its search runs on a thread of its own beside auto's
     * solve at the budget (neither reads what the other writes: the same plans, in about the
     * time of the longer where a second core is free; resnet50 at its minimum: the solve ~0.55 s,
     * the search ~0.25 s) */
    if (want_min && solver == MG_SOLVER_AUTO && sa->workspace_bytes > budget)
        threaded = pthread_create(&th, NULL, min_search_thread, &job) == 0;
    if (sa->workspace_bytes <= budget && solver != MG_SOLVER_SQRT) {
        out->plan = sa;
        sa = NULL;
    } else if (solver == MG_SOLVER_EXACT) {
        if ((st = solve_exact_at(pr, budget, time_limit, keep, &memo, out, d))) goto done;
    } else {
        int opt = 0;
        if ((st = solve_at(pr, solver, budget, keep, &memo, &nm, &out->plan, &opt, d))) goto done;
        if (opt) out->optimal = 1;
        out->lower_bound = memo_bound(&memo); /* (the thread's, where it ran) */
    }
    if (!st && (want_min || (!out->plan && searching))) { /* the minimum search (min_search) */
        if (!threaded) min_search(&job);
        else if (pthread_join(th, NULL) == 0) threaded = 0;
        else abort();
        if (job.st) {
            st = job.st;
            *d = job.d;
        }
        int64_t hi = job.hi;
        int found = job.found;
        mg_plan *best = job.best, *cheap = job.cheap;
        double min_exec = best ? best->flops_executed : -1; /* (the plan at the minimum: near_min_rungs) */
        if (best != cheap) mg_plan_free(best);
        best = NULL;
        out->min_feasible_bytes = hi; /* (`below` itself when nothing was found under it) */
        /* a budget from the minimum to a little above it: a walk from the variant whose schedule
         * the descent placed at the minimum. There most variants' schedules place far above
         * their peak (resnet50: 9-17%), and the walks start only from those that miss by at most
         * 5%, while that one placed at its peak (resnet50 at its minimum: 1.2279 -> 1.1952 of
         * running every op once) */
        int walks = solver == MG_SOLVER_AUTO || solver == MG_SOLVER_EXACT; /* (exact: from the MILP's plan) */
        if (!st && found && job.descended && walks && out->optimal != 1 && hi <= budget &&
            (double)(budget - hi) <= NEAR_MIN * (double)hi)
            st = improve_from(pr, &job.seed, hi, &memo, &out->plan, d);
        /* a budget a little above the minimum: the improvement search at the minimum too, whose
         * plans fit this budget as well; it runs even where the search at the budget improved
         * the plan, which can stay dearer than at the minimum (resnet50 at 4.6 GB: 1.1852 of
         * running every op once from its own walks, 1.1543 at the minimum, 4.52 GB; 4.7 GB had
         * 1.2176 against 1.1856 when this was first written). And a little above the bisection's
         * least budget, where the descent went below it, the same there: the plans swing with
         * the budget, and a cheap one there is lost to budgets above it (resnet50: the descent's
         * minimum 4,315,938,816, 1.2279 then; at the bisection's 4,521,459,712 1.1518, and at
         * 4.61 GB 1.1834 from the solve at the budget and the minimum's) */
        const int64_t at[2] = {hi, job.bisected};
        for (int k = 0; k < 2; k++)
            if (!st && found && walks && out->plan && out->optimal != 1 && at[k] > 0 &&
                (k == 0 || at[1] != at[0]) && at[k] < budget && (double)(budget - at[k]) <= NEAR_MIN * (double)at[k])
                st = improve_below(pr, at[k], &memo, &out->plan, d);
        /* and the whole solve at budgets between the minimum and this one (near_min_rungs), whose
         * plans fit it as well; from the bisection's least where that is below the budget and the
         * solve found a plan: the descent below it reaches placements the solve's rarely meet,
         * whose arena searches spend their whole effort and miss (layered_n250 at 0.8 of its
         * peak: rungs from the descent's 116,330 bytes took 3.6 s and found nothing cheaper,
         * from the bisection's 116,800 1.2 s and 1.0633, as before). exact too: without them, near the
 * minimum of a model in parts it planned dearer than auto (resnet18_64 at 1.03 times its
 * minimum: 84.53% against 63.88%) */
        int64_t from = out->plan && job.bisected > hi && job.bisected < budget ? job.bisected : hi;
        double above = (double)(budget - hi) / (double)hi;
        if (!st && found && walks && out->optimal != 1 && hi < budget && above <= NEAR_MIN_RUNGS_UP_TO &&
            (!out->plan ||
             (out->plan->flops_executed > memo.lower_bound * (1 + NEAR_MIN_RUNG_GAP) &&
              (above <= NEAR_MIN ||
               (min_exec > out->plan->flops_once && out->plan->flops_executed - out->plan->flops_once >=
                                                         NEAR_MIN_RUNGS_SAVED * (min_exec - out->plan->flops_once))))))
            st = near_min_rungs(pr, hi, from, budget, keep, &memo, &out->plan, d);
        if (!st && cheap && out->plan && cheap->flops_executed < out->plan->flops_executed && out->optimal != 1) {
            mg_plan_free(out->plan); /* (an optimal plan cannot be beaten; the test is for safety) */
            out->plan = cheap;
            cheap = NULL;
        }
        if (!st && !out->plan && found && hi <= budget && searching) { /* the search's plan at the minimum */
            if (cheap) out->plan = cheap;
            else st = solve_at(pr, MG_SOLVER_STORE_ALL, INT64_MAX, keep, &memo, NULL, &out->plan, &(int){0}, d);
            cheap = NULL;
        }
        mg_plan_free(cheap);
    }
    /* the plan's recomputations whose values can stay in the arena's holes are left out
     * (sched_refill.c): the same workspace, fewer FLOPs (not sqrt's baseline, nor a plan
     * already proven optimal) */
    double unfilled = out->plan ? out->plan->flops_executed : INFINITY;
    if (!st && out->plan && (solver == MG_SOLVER_AUTO || solver == MG_SOLVER_EXACT) && out->optimal != 1)
        mg_plan_refill(out->plan, pr);
    /* last, the near misses of the solve at the budget that fit once compacted, refilled too
     * (rescue_near_misses). Not earlier: the walks and rungs above run or not by what the plan
     * costs. Nor judged before the refill: a compacted arena has fewer holes to refill, and
     * resnet18_64 at 1.07 times its minimum went 72.64 -> 83.02% (a rescued plan 0.3% cheaper
     * before the refill, 6% dearer after it). */
    if (!st && out->optimal != 1) rescue_near_misses(&nm, pr, budget, unfilled, &out->plan, d);
    if (!st && out->plan && mg_plan_verify(out->plan, pr, d)) st = MG_ERR;
    if (!st && out->plan && out->plan->flops_executed == out->plan->flops_once)
        out->optimal = 1, out->optimal_in_class = 0; /* nothing recomputed: no plan executes fewer FLOPs */
    if (!st && out->plan && out->plan->flops_executed <= out->lower_bound)
        out->optimal = 1, out->optimal_in_class = 0; /* it recomputes only what the bound proves every plan must */
    if (!st && out->plan && out->optimal == 1 && !out->optimal_in_class) out->lower_bound = out->plan->flops_executed;
    if (!st && out->plan && out->lower_bound > out->plan->flops_executed)
        out->lower_bound = out->plan->flops_executed; /* rounding in the relaxed program's scaled sums */
done:
    memo_bound(&memo);
    if (threaded) { /* (the solve failed: the search's results are dropped) */
        if (pthread_join(th, NULL)) abort();
        if (job.best != job.cheap) mg_plan_free(job.best);
        mg_plan_free(job.cheap);
    }
    near_misses_free(&nm);
    mg_chain_free(memo.chain);
    mg_plan_free(sa);
    free(keep);
    if (st) {
        mg_plan_free(out->plan);
        out->plan = NULL;
    }
    return st;
}

mg_status mg_solve(const mg_problem *pr, mg_solver solver, int64_t budget, int want_min, double time_limit,
                   mg_solution *out, mg_diag *d)
{
    return solve_below(pr, solver, budget, want_min, 0, 0, time_limit, out, d);
}

/* A copy of p (its steps and buffers; the graph is shared). */
static mg_plan *plan_copy(const mg_plan *p)
{
    mg_plan *c = malloc(sizeof *c);
    if (!c) abort();
    *c = *p;
    c->steps = malloc(((size_t)p->nsteps + 1) * sizeof *c->steps);
    c->bufs = malloc(((size_t)p->nbufs + 1) * sizeof *c->bufs);
    if (!c->steps || !c->bufs) abort();
    for (int i = 0; i < p->nsteps; i++) c->steps[i] = p->steps[i];
    for (int i = 0; i < p->nbufs; i++) c->bufs[i] = p->bufs[i];
    return c;
}

mg_status mg_solve_from(const mg_problem *pr, mg_solver solver, int64_t budget, int want_min, double time_limit,
                        const mg_plan *incumbent, mg_solution *out, mg_diag *d)
{
    if (mg_solve(pr, solver, budget, want_min, time_limit, out, d)) return MG_ERR;
    if (!incumbent || (solver != MG_SOLVER_AUTO && solver != MG_SOLVER_EXACT) || out->optimal == 1 ||
        incumbent->workspace_bytes > budget || (out->plan && incumbent->flops_executed >= out->plan->flops_executed))
        return MG_OK;
    mg_plan *c = plan_copy(incumbent);
    if (mg_plan_verify(c, pr, d)) { /* not a plan of this problem */
        mg_plan_free(c);
        mg_plan_free(out->plan);
        out->plan = NULL;
        return MG_ERR;
    }
    mg_plan_free(out->plan);
    out->plan = c;
    if (out->lower_bound > c->flops_executed) out->lower_bound = c->flops_executed;
    if (c->flops_executed <= out->lower_bound || c->flops_executed == c->flops_once)
        out->optimal = 1, out->optimal_in_class = 0;
    return MG_OK;
}

void mg_planned_free(mg_planned *p)
{
    mg_plan_free(p->train);
    mg_plan_free(p->forward);
    p->train = p->forward = NULL;
    mg_graph_free(p->graph); /* a micro-batched graph (plan_split.c) */
    p->graph = NULL;
}

mg_status mg_plan_program(const mg_graph *g, const mg_plan_request *rq, mg_planned *out, mg_diag *d)
{
    double t0 = mg_seconds();
    *out = (mg_planned){.budget_bytes = INT64_MAX, .min_feasible_bytes = -1, .optimal = -1, .flops_lower_bound = -1};
    mg_problem *pt = mg_problem_from_graph(g, MG_PLAN_TRAIN), *pf = mg_problem_from_graph(g, MG_PLAN_FORWARD);
    mg_solution st_all, sf_all, ts = {0}, fs = {0};
    mg_status st = MG_OK;
    /* the store-all workspace (of both functions) is what percentages refer to */
    if ((st = mg_solve(pt, MG_SOLVER_STORE_ALL, INT64_MAX, 0, 0, &st_all, d))) goto done;
    if ((st = mg_solve(pf, MG_SOLVER_STORE_ALL, INT64_MAX, 0, 0, &sf_all, d))) {
        mg_plan_free(st_all.plan);
        goto done;
    }
    out->store_all_bytes = st_all.store_all_bytes > sf_all.store_all_bytes ? st_all.store_all_bytes : sf_all.store_all_bytes;
    int64_t budget = rq->budget ? mg_budget_bytes(rq->budget, out->store_all_bytes) : INT64_MAX;
    out->budget_bytes = budget;
    if (budget >= out->store_all_bytes && rq->solver != MG_SOLVER_SQRT && rq->want_min_feasible != MG_MIN_YES) {
        ts = st_all;
        fs = sf_all;
        ts.optimal = fs.optimal = 1;
    } else {
        mg_plan_free(st_all.plan);
        mg_plan_free(sf_all.plan);
        /* the time limit is for both functions; the training step gets most of it */
        double t1 = mg_seconds();
        int64_t below = rq->min_feasible_below;
        if ((st = solve_below(pt, rq->solver, budget, rq->want_min_feasible, below, 0, rq->time_limit * 0.8, &ts, d)))
            goto done;
        double left = rq->time_limit - (mg_seconds() - t1);
        /* the forward pass's minimum matters only above the training step's */
        if ((st = solve_below(pf, rq->solver, budget, rq->want_min_feasible, below, ts.min_feasible_bytes,
                              left > rq->time_limit * 0.2 ? left : rq->time_limit * 0.2, &fs, d)))
            goto done;
        /* a budget one function misses: the minimum is the larger of both functions' (the one
         * that met it did not search for its own unless asked; the solve is repeated with the
         * search, on this failing path only) */
        for (int f = 0; f < 2 && !rq->want_min_feasible && (!ts.plan || !fs.plan); f++) {
            mg_solution *s = f ? &fs : &ts;
            if (!s->plan || s->min_feasible_bytes >= 0) continue;
            mg_solution again;
            if ((st = solve_below(f ? pf : pt, rq->solver, budget, 1, below, f ? ts.min_feasible_bytes : 0,
                                  rq->time_limit * 0.2, &again, d)))
                goto done;
            mg_plan_free(s->plan);
            *s = again;
        }
    }
    /* the program's minimum: both functions must fit (the minimum search of each is independent
     * of the budget, so this is too; a plan whose workspace is below it does not lower it: the
     * solve at a budget that small need not find that plan again) */
    if (ts.min_feasible_bytes >= 0 || fs.min_feasible_bytes >= 0)
        out->min_feasible_bytes = ts.min_feasible_bytes > fs.min_feasible_bytes ? ts.min_feasible_bytes : fs.min_feasible_bytes;
    if (ts.plan && fs.plan) {
        out->train = ts.plan;
        out->forward = fs.plan;
        ts.plan = fs.plan = NULL;
        out->workspace_bytes = out->train->workspace_bytes > out->forward->workspace_bytes ? out->train->workspace_bytes
                                                                                           : out->forward->workspace_bytes;
        out->optimal = ts.optimal == 1 && fs.optimal == 1 ? 1 : -1;
        out->flops_lower_bound = ts.lower_bound;
        out->note = ts.note ? ts.note : fs.note;
    }
done:
    mg_plan_free(ts.plan);
    mg_plan_free(fs.plan);
    mg_problem_free(pt);
    mg_problem_free(pf);
    out->solve_seconds = mg_seconds() - t0;
    if (st) mg_planned_free(out);
    return st;
}

mg_status mg_program_verify(const mg_graph *g, const mg_planned *p, mg_diag *d)
{
    mg_problem *pt = mg_problem_from_graph(g, MG_PLAN_TRAIN), *pf = mg_problem_from_graph(g, MG_PLAN_FORWARD);
    mg_status st = mg_plan_verify(p->train, pt, d) || mg_plan_verify(p->forward, pf, d) ? MG_ERR : MG_OK;
    mg_problem_free(pt);
    mg_problem_free(pf);
    return st;
}
