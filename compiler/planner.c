/* planner.c — the solvers: turns a budget into the two plans a model needs (the training step
 * and the forward pass), each scheduled, placed in the arena and verified.
 *
 *   store-all  every value computed once and kept until its last use (the 100% point).
 *   sqrt       Chen et al. 2016: keep every ceil(sqrt(n))-th forward value as a checkpoint,
 *              drop the rest after the forward pass, recompute each segment when the backward
 *              pass reaches it. It ignores the budget; its plan is used only when it fits.
 *   auto       store-all when it fits (zero overhead, so optimal); otherwise the cheapest of
 *              the budget-driven schedules under every eviction policy (with lazy and eager
 *              freeing) and of sqrt. All are scheduled first (cheap); only the cheapest are
 *              placed, each fitted to the budget by lowering the scheduler's cap below its peak
 *              by whatever the arena added on top of the live bytes. Never worse than sqrt or
 *              store-all where they fit.
 *   exact      not implemented yet: refused with a clear error.
 *
 * The minimum feasible budget is found by bisection over budgets with the same machinery; a
 * budget the direct search misses but that is above that minimum gets the minimum's plan, so
 * "infeasible" is only ever said of budgets below a budget we have a verified plan for. */
#include "clock.h"
#include "plan.h"

#include <math.h>
#include <stdlib.h>

const char *const mg_solver_names[] = {"auto", "store-all", "sqrt", "exact"};

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

/* A plan under opts whose workspace, allocator waste included, is at most budget. first, when
 * not NULL, is the (unplaced) schedule under opts at cap budget, already made by the caller;
 * fit takes it over. */
static mg_status fit(const mg_problem *pr, mg_sched_opts opts, int64_t budget, mg_plan *first, mg_plan **out, mg_diag *d)
{
    *out = NULL;
    int64_t cap = budget;
    for (int it = 0; it < 16 && cap > 0; it++) {
        opts.cap = cap;
        mg_plan *p = it == 0 ? first : NULL;
        if (!p && mg_schedule(pr, &opts, &p, d)) return MG_ERR;
        if (!p) return MG_OK;
        if (mg_arena_assign(p, d)) {
            mg_plan_free(p);
            return MG_ERR;
        }
        if (p->workspace_bytes <= budget) {
            *out = p;
            return MG_OK;
        }
        /* every cap from the schedule's peak up gives this very schedule: go below the peak */
        int64_t over = p->workspace_bytes - budget;
        cap -= over > MG_ALIGN ? over : MG_ALIGN;
        if (cap > p->peak_live_bytes - MG_ALIGN) cap = p->peak_live_bytes - MG_ALIGN;
        mg_plan_free(p);
    }
    return MG_OK;
}

/* The budget-driven schedules auto tries: every eviction policy, with lazy and eager freeing. */
enum { NVARIANTS = 2 * MG_EVICT_NPOLICIES };
typedef struct variant {
    mg_sched_opts o;
    mg_plan *p; /* its schedule at cap budget (not yet placed), or NULL when it has none */
} variant;

static int variant_cmp(const void *a, const void *b)
{
    const mg_plan *p = ((const variant *)a)->p, *q = ((const variant *)b)->p;
    if (!p || !q) return !p - !q;
    if (p->flops_executed != q->flops_executed) return p->flops_executed < q->flops_executed ? -1 : 1;
    if (p->peak_live_bytes != q->peak_live_bytes) return p->peak_live_bytes < q->peak_live_bytes ? -1 : 1;
    return 0;
}

/* Schedules every variant at cap budget (scheduling is cheap; placing is not) and sorts them,
 * cheapest first; returns how many have a schedule. */
static int schedule_variants(const mg_problem *pr, int64_t budget, variant *v, mg_diag *d)
{
    int n = 0;
    for (int i = 0; i < NVARIANTS; i++) {
        v[i].o = (mg_sched_opts){budget, (mg_evict_policy)(i % MG_EVICT_NPOLICIES), NULL, i < MG_EVICT_NPOLICIES};
        v[i].p = NULL;
        if (mg_schedule(pr, &v[i].o, &v[i].p, d)) v[i].p = NULL;
        if (v[i].p) {
            /* peak live bytes without placing: what the arena cannot go below */
            mg_plan *p = v[i].p;
            int64_t *delta = calloc((size_t)p->nsteps + 1, sizeof *delta), live = 0, peak = 0;
            if (!delta) abort();
            for (int b = 0; b < p->nbufs; b++) {
                delta[p->bufs[b].first] += p->bufs[b].bytes;
                delta[p->bufs[b].last + 1] -= p->bufs[b].bytes;
            }
            for (int s = 0; s < p->nsteps; s++) {
                live += delta[s];
                if (live > peak) peak = live;
            }
            free(delta);
            p->peak_live_bytes = peak;
            n++;
        }
    }
    qsort(v, NVARIANTS, sizeof *v, variant_cmp);
    return n;
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

/* The plan of one solver under budget, or NULL (and MG_OK) when it has none that fits. */
static mg_status solve_at(const mg_problem *pr, mg_solver solver, int64_t budget, const char *sqrt_keep, mg_plan **out,
                          mg_diag *d)
{
    *out = NULL;
    mg_sched_opts all = {INT64_MAX, MG_EVICT_COST_SIZE_DIST, NULL, 0};
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
        mg_sched_opts chk = {INT64_MAX, MG_EVICT_COST_SIZE_DIST, sqrt_keep, 0};
        if (build(pr, &chk, &p, d)) return MG_ERR;
        if (p->workspace_bytes <= budget) *out = p;
        else mg_plan_free(p);
        if (solver == MG_SOLVER_SQRT) return MG_OK;
    }
    /* the variants cheapest first, each fitted to the budget; fitting only adds cost, so once a
     * variant's unfitted schedule costs no less than the best fitted plan, none later can win */
    variant v[NVARIANTS];
    int nv = schedule_variants(pr, budget, v, d);
    mg_status st = MG_OK;
    for (int i = 0; i < nv; i++) {
        if (st || (*out && v[i].p->flops_executed >= (*out)->flops_executed)) {
            mg_plan_free(v[i].p);
            continue;
        }
        if ((st = fit(pr, v[i].o, budget, v[i].p, &p, d))) continue;
        keep_better(out, p);
    }
    if (st) {
        mg_plan_free(*out);
        *out = NULL;
    }
    return st;
}

/* No schedule can hold less than what one step needs at once: its operands in the workspace,
 * its output and its scratch. */
static int64_t working_set_bound(const mg_problem *pr)
{
    int64_t best = 0;
    for (int v = 0; v < pr->n; v++) {
        if (!pr->target[v]) continue;
        int64_t need = pr->bytes[v] + pr->scratch[v];
        for (int k = pr->in_start[v]; k < pr->in_start[v + 1]; k++) {
            int u = pr->in[k];
            int dup = 0;
            for (int j = pr->in_start[v]; j < k; j++) dup |= pr->in[j] == u;
            if (!dup && pr->target[u] && pr->home[u].mem == MG_MEM_NONE) need += pr->bytes[u];
        }
        if (need > best) best = need;
    }
    return best;
}

/* Some plan within budget: the first variant, most frugal first, that schedules under it and
 * still fits once placed. */
static mg_status feasible_at(const mg_problem *pr, int64_t budget, mg_plan **out, mg_diag *d)
{
    static const mg_evict_policy tight[] = {MG_EVICT_SIZE_DIST, MG_EVICT_COST_SIZE_DIST, MG_EVICT_COST_SIZE,
                                            MG_EVICT_COST_SIZE_DIST2, MG_EVICT_COST_SIZE_SQRTDIST};
    *out = NULL;
    for (int i = 0; i < NVARIANTS && !*out; i++) {
        mg_sched_opts o = {budget, tight[i % MG_EVICT_NPOLICIES], NULL, i < MG_EVICT_NPOLICIES};
        mg_plan *p;
        if (mg_schedule(pr, &o, &p, d)) return MG_ERR;
        if (p && fit(pr, o, budget, p, out, d)) return MG_ERR;
    }
    return MG_OK;
}

mg_status mg_solve(const mg_problem *pr, mg_solver solver, int64_t budget, int want_min, mg_solution *out,
                   mg_diag *d)
{
    *out = (mg_solution){NULL, 0, -1, -1};
    if (solver == MG_SOLVER_EXACT)
        return mg_diag_set(d, (mg_loc){0}, "--solver exact is not implemented yet; use auto, sqrt or store-all");
    char *keep = sqrt_checkpoints(pr);
    mg_status st = MG_OK;
    mg_plan *sa = NULL;
    mg_sched_opts all = {INT64_MAX, MG_EVICT_COST_SIZE_DIST, NULL, 0};
    if ((st = build(pr, &all, &sa, d))) goto done;
    out->store_all_bytes = sa->workspace_bytes;
    if (sa->workspace_bytes <= budget && solver != MG_SOLVER_SQRT) {
        out->plan = sa;
        sa = NULL;
    } else if ((st = solve_at(pr, solver, budget, keep, &out->plan, d))) {
        goto done;
    }
    if (want_min || (!out->plan && solver == MG_SOLVER_AUTO)) {
        /* bisection over budgets between a proven lower bound and store-all; hi always has a
         * plan; stops within 0.1% (or one alignment unit) of the smallest budget found */
        int64_t lo = working_set_bound(pr), hi = out->store_all_bytes;
        mg_plan *best = NULL;
        if (lo > 0) lo -= 1; /* lo is infeasible by convention; the bound itself may be met */
        while (hi - lo > MG_ALIGN && hi - lo > hi / 1000) {
            int64_t mid = lo + (hi - lo) / 2;
            mg_plan *p;
            if ((st = feasible_at(pr, mid, &p, d))) break;
            if (p) {
                hi = p->workspace_bytes;
                mg_plan_free(best);
                best = p;
            } else {
                lo = mid;
            }
        }
        out->min_feasible_bytes = hi;
        if (!st && !out->plan && hi <= budget && solver == MG_SOLVER_AUTO) {
            if (best) out->plan = best;
            else st = solve_at(pr, MG_SOLVER_STORE_ALL, INT64_MAX, keep, &out->plan, d);
            best = NULL;
        }
        mg_plan_free(best);
    }
    if (!st && out->plan && mg_plan_verify(out->plan, pr, d)) st = MG_ERR;
    if (!st && out->plan && out->plan->flops_executed == out->plan->flops_once)
        out->optimal = 1; /* nothing recomputed: no plan executes fewer FLOPs */
done:
    mg_plan_free(sa);
    free(keep);
    if (st) {
        mg_plan_free(out->plan);
        out->plan = NULL;
    }
    return st;
}

void mg_planned_free(mg_planned *p)
{
    mg_plan_free(p->train);
    mg_plan_free(p->forward);
    p->train = p->forward = NULL;
}

mg_status mg_plan_program(const mg_graph *g, const mg_plan_request *rq, mg_planned *out, mg_diag *d)
{
    double t0 = mg_seconds();
    *out = (mg_planned){NULL, NULL, 0, INT64_MAX, 0, -1, -1, 0};
    mg_problem *pt = mg_problem_from_graph(g, MG_PLAN_TRAIN), *pf = mg_problem_from_graph(g, MG_PLAN_FORWARD);
    mg_solution st_all, sf_all, ts = {0}, fs = {0};
    mg_status st = MG_OK;
    /* the store-all workspace (of both functions) is what percentages refer to */
    if ((st = mg_solve(pt, MG_SOLVER_STORE_ALL, INT64_MAX, 0, &st_all, d))) goto done;
    if ((st = mg_solve(pf, MG_SOLVER_STORE_ALL, INT64_MAX, 0, &sf_all, d))) {
        mg_plan_free(st_all.plan);
        goto done;
    }
    out->store_all_bytes = st_all.store_all_bytes > sf_all.store_all_bytes ? st_all.store_all_bytes : sf_all.store_all_bytes;
    int64_t budget = rq->budget ? mg_budget_bytes(rq->budget, out->store_all_bytes) : INT64_MAX;
    out->budget_bytes = budget;
    if (budget >= out->store_all_bytes && rq->solver != MG_SOLVER_SQRT && !rq->want_min_feasible) {
        ts = st_all;
        fs = sf_all;
        ts.optimal = fs.optimal = 1;
    } else {
        mg_plan_free(st_all.plan);
        mg_plan_free(sf_all.plan);
        if ((st = mg_solve(pt, rq->solver, budget, rq->want_min_feasible, &ts, d)) ||
            (st = mg_solve(pf, rq->solver, budget, rq->want_min_feasible, &fs, d)))
            goto done;
    }
    if (ts.min_feasible_bytes >= 0 || fs.min_feasible_bytes >= 0)
        out->min_feasible_bytes = ts.min_feasible_bytes > fs.min_feasible_bytes ? ts.min_feasible_bytes : fs.min_feasible_bytes;
    if (ts.plan && fs.plan) {
        out->train = ts.plan;
        out->forward = fs.plan;
        ts.plan = fs.plan = NULL;
        out->workspace_bytes = out->train->workspace_bytes > out->forward->workspace_bytes ? out->train->workspace_bytes
                                                                                           : out->forward->workspace_bytes;
        out->optimal = ts.optimal == 1 && fs.optimal == 1 ? 1 : -1;
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
