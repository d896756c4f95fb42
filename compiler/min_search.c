/* min_search.c — the minimum feasible budget: a bisection over budgets (the first variant that
 * fits at each), then a descent that places every variant just below the least budget found, a
 * ladder of schedules made under caps below (or above) the least plan's peak, and walks where
 * that plan still wastes. It depends on
 * the problem (and `below`, `floor`) alone, never on the budget asked, so every budget names the
 * same minimum; the solve (planner.c) runs it beside the solve at the budget, on a thread of its
 * own. */
#include "min_search.h"
#include "sched_variants.h"

#include <stdlib.h>

/* The caller wants the search to end now (mg_min_search_job.stop). */
static int stopped(const atomic_int *stop) { return stop && atomic_load(stop) == MG_SEARCH_STOP; }

/* ... or now that hi, the least workspace found (found), is far below the budget. Asked only
 * where hi is still the bisection's: the descent's lower hi would leave out the walks at the
 * bisection's least that the solve runs where the budget is near that (solve_below). */
static int stop_asked(const mg_min_search_job *a, int found, int64_t hi)
{
    int asked = a->stop ? atomic_load(a->stop) : MG_SEARCH_ON;
    return asked == MG_SEARCH_STOP || (asked == MG_SEARCH_STOP_FAR && found && mg_far_above_min(hi, a->budget));
}

/* Some plan within budget: the first variant, most frugal first, that schedules under it and
 * still fits once placed. */
static mg_status feasible_at(const mg_problem *pr, int64_t budget, mg_search_memo *memo, mg_probe_memo *pm,
                             mg_place_memo *mm, const mg_sched_scratch *z, mg_plan **out, mg_diag *d)
{
    static const mg_evict_policy tight[] = {MG_EVICT_SIZE_DIST, MG_EVICT_COST_SIZE_DIST, MG_EVICT_COST_SIZE,
                                            MG_EVICT_COST_SIZE_DIST2, MG_EVICT_COST_SIZE_SQRTDIST};
    *out = NULL;
    mg_status st = MG_OK;
    enum { N = MG_VARIANTS_BASE + MG_VARIANTS_RC }; /* (the fit variants save cost, not bytes) */
    for (int j = 0; j < N && !*out && !st; j++) {
        int i = (j + MG_VARIANTS_BASE) % N; /* sched_rc.c's first: the most frugal where it matters */
        mg_sched_opts o = mg_variant_opts(i, budget, tight[i % MG_EVICT_NPOLICIES]);
        mg_sv_use_scratch(&o, z);
        mg_plan *p;
        if (mg_sv_schedule_memo(pr, &o, i, pm, &p, d)) st = MG_ERR;
        else if (p && mg_sv_fit(pr, &o, budget, memo, p, 1, mm, NULL, out, NULL, d)) st = MG_ERR;
    }
    if (!st && !*out && mg_sv_chain_fit(pr, budget, memo, NULL, 0, out, d)) st = MG_ERR;
    if (!st && !*out && mg_sv_fit(pr, NULL, budget, memo, NULL, 1, mm, NULL, out, NULL, d)) /* last: the exact search */
        st = MG_ERR;
    return st;
}

/* The descent after the bisection. The bisection's probes take the first variant that fits
 * (feasible_at), but the solve at a budget tries every variant, restarts among them, and keeps
 * the cheapest that fits, so it found plans below the minimum the bisection named, and the
 * bisection's plan at its minimum was often poorly placed (resnet18_64 in 16 parts: 5,379,136
 * bytes for a peak of 4,769,856, while a restart under a budget of 5,242,880 placed 4,990,016
 * for a peak of 4,727,872). So, from the bisection's minimum hi, every variant of the solve
 * (mg_variants_schedule) is scheduled just below hi and placed; the least placed workspace that
 * fits is the new minimum, and the step is repeated from there while it goes down (at most
 * DESCENT_ROUNDS times), with only the first DESCENT_KEEP variants that fitted in the step
 * before (the same variant often wins again: resnet18_64 in 8 parts, one restart three times).
 * Picking by placed workspace picks the schedules whose lifetimes place well. Cheap enough:
 * the variants are placed in order of their peak live bytes (what the arena cannot go below),
 * none whose peak is at or above the least workspace found once DESCENT_KEEP have fitted, and
 * one that misses has its cap lowered by what it missed by, at most DESCENT_TRIES - 1 times.
 * It depends only on the problem and hi, never on the budget asked. Where the least plan still
 * wastes more than mg_waste_target, the ladder (descend_ladder) tries schedules made under caps
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
    const mg_plan *p = ((const mg_variant *)a)->p, *q = ((const mg_variant *)b)->p;
    if (p->peak_live_bytes != q->peak_live_bytes) return p->peak_live_bytes < q->peak_live_bytes ? -1 : 1;
    return mg_variant_cmp(a, b);
}

/* Variant o's schedule p (at cap budget; taken over) placed within budget, its cap lowered
 * when it misses; *out is NULL when no try fits. */
static mg_status place_below(const mg_problem *pr, const mg_sched_opts *o, mg_plan *p, int64_t budget,
                             double effort, mg_search_memo *memo, mg_place_memo *mm, mg_plan **out, mg_diag *d)
{
    *out = NULL;
    int64_t cap = budget;
    for (int it = 0; it < DESCENT_TRIES && p; it++) {
        /* (any target: what missed a larger budget of the descent misses this one) */
        if (mg_place_memo_place(mm, pr->placed, p, budget, budget, 1, effort, d)) {
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
        if (it + 1 < DESCENT_TRIES && cap > 0 && mg_sv_schedule(pr, o, cap, memo, &p, d)) return MG_ERR;
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
 * replaced when one places lower; v: room for MG_VARIANTS_MAX variants. Like the
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

static mg_status descend_ladder(const mg_problem *pr, mg_place_memo *mm, mg_variant *v, const mg_sched_scratch *z,
                                mg_probe_memo *fm, mg_plan **least, mg_diag *d)
{
    mg_status st = MG_OK;
    int64_t peak = (*least)->peak_live_bytes;
    mg_variant kept[LADDER_PLACE_UP]; /* the schedules of lowest peak so far, lowest first */
    int nkept = 0, room = LADDER_PLACE, up = 0;
    for (int k = 1; k <= LADDER_CAPS; k++) {
        int64_t step = (int64_t)((double)peak * LADDER_STEP * k), cap = up ? peak + step : peak - step;
        if (up && cap >= (*least)->workspace_bytes) break;
        int nv = mg_variants_schedule_in(pr, cap, v, MG_VARIANTS + mg_variants_restarts(pr), z, fm, d);
        for (int i = 0; i < nv; i++) { /* into kept (by variant_by_peak) when among the lowest */
            mg_variant x = v[i];
            for (int j = 0; j < nkept && x.p; j++)
                if (variant_by_peak(&x, &kept[j]) < 0) {
                    mg_variant t = kept[j];
                    kept[j] = x;
                    x = t;
                }
            if (x.p && nkept < room) kept[nkept++] = x;
            else mg_variant_free(&x);
        }
        if (nv == 0 && k == 1 && !up && mg_plan_wastes(*least, DESCENT_TOL_WASTE)) { /* at the floor already: up */
            up = 1;
            room = LADDER_PLACE_UP;
            k = 0;
            continue;
        }
        if (nv == 0) break; /* the floor: lower caps fail too, each run at a cost */
    }
    for (int i = 0; i < nkept; i++) {
        mg_plan *p = mg_variant_take(pr, &kept[i]);
        int64_t budget = (*least)->workspace_bytes - 1;
        if (!st && p->peak_live_bytes <= budget &&
            (st = mg_place_memo_place(mm, pr->placed, p, budget, budget, 1, 1.0, d)) == MG_OK &&
            p->workspace_bytes <= budget) {
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
static mg_status descend(const mg_problem *pr, int64_t hi, double effort, mg_search_memo *memo,
                         const mg_sched_scratch *z, const atomic_int *stop, mg_plan **out, mg_sched_opts *won_by,
                         mg_diag *d)
{
    *out = NULL;
    mg_status st = MG_OK;
    mg_place_memo mm = {.n = 0}; /* (the budgets only go down: what missed one misses the next) */
    mg_variant v[MG_VARIANTS_MAX];
    mg_probe_memo *fm = mg_xcalloc(1, sizeof *fm); /* (not the bisection's: other policies, other limits) */
    mg_sched_opts won[DESCENT_KEEP];
    int nwon = 0;
    for (int round = 0; round < DESCENT_ROUNDS && !st && !stopped(stop); round++) {
        int64_t budget = (*out ? (*out)->workspace_bytes : hi) - 1;
        int nv = 0;
        if (round == 0) {
            nv = mg_variants_schedule_in(pr, budget, v, MG_VARIANTS + mg_variants_restarts(pr), z, fm, d);
        } else { /* the variants that fitted in the step before */
            for (int w = 0; w < nwon && !st; w++) {
                mg_plan *p = NULL;
                st = mg_sv_schedule(pr, &won[w], budget, memo, &p, d);
                if (p) {
                    p->peak_live_bytes = mg_plan_peak_live(p); /* (unplaced) */
                    v[nv++] = (mg_variant){won[w], p, NULL, 0, 0};
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
                mg_variant_free(&v[i]);
            else
                st = place_below(pr, &v[i].o, mg_variant_take(pr, &v[i]), budget, effort, memo, &mm, &p, d);
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
    if (!st && !stopped(stop) && mg_plan_wastes(*out, mg_waste_target)) st = descend_ladder(pr, &mm, v, z, fm, out, d);
    free(fm);
    mg_sv_use_scratch(won_by, NULL); /* (the scratch is the caller's, and won_by outlives it) */
    return st;
}

/* The walks after the descent, where its least plan (hi bytes) still wastes more than
 * mg_waste_target of its peak: the improvement search's walks (sched_improve.c) from the
 * WALK_SEEDS cheapest of sched_remat.c's variants under hi, as the solve at a budget of hi runs
 * them; the least workspace below hi that one of them places in is the new minimum, into *out
 * (NULL: none). Why: a walk is judged by cost, and a cheaper schedule can peak far below its
 * cap, where neither the probes nor the descent (whose schedules fill the cap they are given)
 * go. layered_n250's minimum was 116,330 bytes (its plans waste 2-5%), while `plan --budget
 * 116330B` planned in 104,820 bytes from such a walk and a budget of 110,000 was refused; now
 * its minimum is 104,820, for +0.4 s a solve. Only where the plan wastes: on every other
 * Checkmate graph and layered DAG, and on the examples, the walks found nothing below the
 * minimum there (2026-12-06). Like the descent, it depends on the problem and hi alone. */
enum { WALK_SEEDS = 3 };

static mg_status walk_below(const mg_problem *pr, int64_t hi, mg_plan **out, mg_diag *d)
{
    *out = NULL;
    mg_variant v[MG_VARIANTS_MAX];
    int nv = mg_variants_schedule(pr, hi, v, MG_VARIANTS + mg_variants_restarts(pr), d), nseeds = 0, spare = 0;
    mg_status st = MG_OK;
    for (int i = 0; i < nv; i++) { /* (cheapest first) */
        if (!st && !v[i].o.rc && nseeds < WALK_SEEDS && mg_improve_schedules(pr) > 0) {
            nseeds++;
            spare += mg_improve_schedules(pr);
            mg_plan *p = NULL;
            st = mg_improve_schedule_n(pr, &v[i].o, hi, &spare, &p, d);
            if (p && p->workspace_bytes < hi &&
                (!*out || p->workspace_bytes < (*out)->workspace_bytes ||
                 (p->workspace_bytes == (*out)->workspace_bytes && p->flops_executed < (*out)->flops_executed))) {
                mg_plan_free(*out);
                *out = p;
            } else {
                mg_plan_free(p);
            }
        }
        mg_variant_free(&v[i]);
    }
    if (st) {
        mg_plan_free(*out);
        *out = NULL;
    }
    return st;
}

/* p (taken over) as the search's least plan *best, and as *cheap too where it is within budget
 * and cheaper (the least budget first on a tie); *cheap may be *best. */
static void take_least(mg_plan **best, mg_plan **cheap, mg_plan *p, int64_t budget)
{
    if (*best != *cheap) mg_plan_free(*best);
    *best = p;
    if (p->workspace_bytes <= budget &&
        (!*cheap || p->flops_executed < (*cheap)->flops_executed ||
         (p->flops_executed == (*cheap)->flops_executed && p->workspace_bytes < (*cheap)->workspace_bytes))) {
        if (*cheap != *best) mg_plan_free(*cheap);
        *cheap = p;
    }
}

/* The minimum search: a bisection over budgets between a proven lower bound and store-all (or
 * `below`); hi has a plan once `found`; stops within 0.1% (or one alignment unit) of the
 * smallest budget found (1% where a wasteful plan has the descent follow). It depends on the
 * problem and `below` only, never on the budget asked (its own memo: the solve's depends on the
 * budget), so every budget names the same minimum, and a budget at or above it gets at worst
 * the plan the search found there (the schedulers are not monotone in their cap: the solve at a
 * budget can miss where the search met a smaller one). */
void mg_min_search(mg_min_search_job *r)
{
    const mg_min_search_job *a = r;
    const mg_problem *pr = a->pr;
    int64_t budget = a->budget, below = a->below, floor = a->floor;
    int searching = a->searching;
    const char *keep = a->keep;
    r->st = MG_OK;
    r->cut_short = 0;
    mg_search_memo mmemo = {.infeasible_cap = -1, .store_all = a->store_all};
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
    if ((r->st = mg_sv_build(pr, &chk, &best, &r->d))) {
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
    mg_probe_memo pm = {.n = {0}};
    mg_place_memo bm = {.n = 0}; /* placements that missed, over all the probes */
    mg_sched_scratch z = {mg_sched_store_new(pr), mg_rc_store_new(pr)}; /* (this thread's runs only) */
    /* within 0.1% of the least budget found; within 1/DESCENT_TOL where the plan there wastes more
     * than DESCENT_TOL_WASTE, as the descent then goes on from it to placements below what the
     * probes reach, and a probe that misses costs every variant's fitting: mlp_deep in 32 parts,
     * five misses of ~0.35 s each between 149,679 and 151,734 bytes, then the descent to 141,376
     * (the same minimum and plans, `plan` 1.1-1.5 s faster) */
    while (!(r->cut_short = stop_asked(a, found, hi)) && hi - lo > MG_ALIGN && hi - lo > hi / (searching && mg_plan_wastes(best, DESCENT_TOL_WASTE) ? DESCENT_TOL : 1000)) {
        int64_t mid = first > 0 ? first : lo + (hi - lo) / 2;
        first = -1;
        mg_plan *p;
        if ((r->st = feasible_at(pr, mid, &mmemo, &pm, &bm, &z, &p, &r->d))) break;
        if (p && mid == floor) lo = p->workspace_bytes - 1; /* within floor: done */
        if (p) {
            hi = p->workspace_bytes;
            found = 1;
            take_least(&best, &cheap, p, searching ? budget : -1);
        } else {
            lo = mid;
        }
    }
    r->bisected = found ? hi : -1;
    /* the descent: from the bisection's minimum, or from `below` where the bisection found
     * nothing under it (the minimum of the fewer parts tried before, which the descent there
     * made); not where floor is met. Where the bisection's plan wastes at most mg_waste_target of
     * its peak live bytes, a quick one (DESCENT_QUICK); nor where one step alone needs hi bytes
     * (no plan can be below it: unet_small in 8 parts needs 8,388,608 bytes in one step, more
     * than the 2,883,648 of the 4 parts' minimum, `below`) */
    if (!r->st && !r->cut_short) r->cut_short = stop_asked(a, found, hi);
    if (!r->st && searching && !r->cut_short && (found || below > 0) && !(floor > 0 && hi <= floor) && ws < hi) {
        mg_plan *p;
        double effort = found && !mg_plan_wastes(best, mg_waste_target) ? DESCENT_QUICK : 1.0;
        if (!(r->st = descend(pr, hi, effort, &mmemo, &z, a->stop, &p, &r->seed, &r->d)) && p) {
            r->descended = p->workspace_bytes == p->peak_live_bytes; /* (placed with no waste) */
            hi = p->workspace_bytes;
            found = 1;
            take_least(&best, &cheap, p, budget);
        }
    }
    /* and where its least plan still wastes, the walks (walk_below) */
    if (!r->st && !r->cut_short) r->cut_short = stopped(a->stop);
    if (!r->st && searching && !r->cut_short && found && best && mg_plan_wastes(best, mg_waste_target)) {
        mg_plan *p;
        if (!(r->st = walk_below(pr, hi, &p, &r->d)) && p) {
            r->descended = 0; /* (the walk's, not the descent's variant's) */
            hi = p->workspace_bytes;
            take_least(&best, &cheap, p, budget);
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
