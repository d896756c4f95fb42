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
 *              restarts of the eviction policies with perturbed scores (small problems): the
 *              variants, sched_variants.c; and of sqrt; where the best is above the proven lower
 *              bound, a local search over the eviction score weights of the cheapest variants
 *              (sched_improve.c). All are scheduled first (cheap); only the cheapest are
 *              placed, each fitted to the budget by lowering the scheduler's cap below its peak
 *              by whatever the arena added on top of the live bytes; for a step in parts, the
 *              plan part by part (sched_parts.c); and, where the problem is small enough, the
 *              exact search over (stage, resident set) (sched_search.c),
 *              whose plan is optimal. Never worse than sqrt or store-all where they fit.
 *   exact      store-all when it fits; otherwise Checkmate's MILP (solve_exact.c) within the
 *              time limit, started from auto's plan: the better of the two is returned, and it
 *              is marked optimal when the search finished at the budget itself.
 *
 * The minimum feasible budget is found by bisection over budgets with the same machinery
 * (min_search.c), independently of the budget asked (so every budget names the same minimum; under auto, on a
 * thread of its own beside the solve at the budget, as is the lower bound); a budget the
 * direct search misses but that is at or above that minimum gets the minimum's plan, so
 * "infeasible" is only ever said of budgets below a budget we have a verified plan for. */
#include "clock.h"
#include "min_search.h"
#include "sched_variants.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>

const char *const mg_solver_names[] = {"auto", "store-all", "sqrt", "exact"};

/* The lower bound at a budget (bound_step.c and bound_cut.c, the larger, per order: bound_compute), computed on a
 * thread of its own while auto's solve schedules and places its variants, which do not read it
 * (resnet50 at its minimum: 0.06 s); the solve waits for it before the walks (memo_bound). The
 * thread then also analyses the chain and fills the chain DP's tables for the cap mg_sv_chain_fit
 * will ask at the end of the solve (0.03 s there), when they are handed to the solve's memo.
 * In a step in parts it first starts solve_pinned's thread, where the bound shows it is wanted. */
typedef struct pinned_job pinned_job; /* (below, at solve_pinned) */
static void pinned_start(pinned_job *j, double once, double bound);

typedef struct bound_job {
    const mg_problem *pr;
    int64_t budget, store_all;
    double once, bound; /* in: every op once; out: that and what bound_compute proves beyond it */
    double others;      /* out: what plans in the other orders of a step in parts recompute at least
                           (bound_compute; INFINITY where there are none) */
    mg_chain *chain;    /* out (thread): the chain analysed, its tables filled for table_cap */
    int64_t table_cap;
    pinned_job *pinned; /* in (or NULL): started once the bound is in, where it shows it is wanted */
    pthread_t th;
    int running;
} bound_job;

/* The larger of the two arguments (bound_step.c, bound_cut.c) for the schedules that run the
 * targets in `order` (NULL: the graph's); the second only with `cut`, and not where the first
 * reaches `enough` (the caller takes no more). */
static double order_bound(const mg_problem *pr, int64_t budget, const int *order, int cut, double enough)
{
    double forced = mg_step_bound_in(pr, budget, order);
    if (!cut || forced >= enough) return forced;
    double x = mg_cut_bound_in(pr, budget, order);
    return x > forced ? x : forced;
}

/* A step in parts that may run in other orders takes the cut bound only up to this many targets:
 * above, the other orders' bounds come out at about the parts' own and take longer than the rest
 * (the transformer in 8 parts, 4,089 nodes: 0.75 s for 16.63% of every op once, the parts' 16.61%). */
enum { ORDERS_CUT_TARGETS = 600 };

/* Both arguments assume the targets run in the graph's order, which the whole-step schedulers
 * keep; a step in parts planned part by part (sched_parts.c) runs them in another, and there a
 * plan can recompute less than the graph's order allows (a 12-layer chain in 2 parts at 1.5
 * times its minimum: 15,077,376 FLOPs recomputed against the cut bound's 15,957,745, which
 * until 2026-12-06 was taken as proven, and the plan said optimal). So in a step in parts the
 * bound is the least over the orders its plans may take, and at least the parts' own
 * (bound_parts.c), which holds in any order that keeps each part's own. */
static void bound_compute(bound_job *b)
{
    int *orders[2];
    int k = mg_parts_orders(b->pr, orders), targets = 0;
    for (int v = 0; v < b->pr->n; v++) targets += b->pr->target[v] != 0;
    int cut = k == 0 || targets <= ORDERS_CUT_TARGETS;
    double whole = order_bound(b->pr, b->budget, NULL, cut, INFINITY), parts = mg_parts_bound(b->pr, b->budget);
    b->others = INFINITY;
    for (int i = 0; i < k; i++) { /* (worked out only where it may matter: else the parts', which holds too) */
        double x = whole > parts && b->others > parts
                       ? order_bound(b->pr, b->budget, orders[i], cut, b->others < whole ? b->others : whole)
                       : parts;
        if (x < b->others) b->others = x;
        free(orders[i]);
    }
    if (b->others < whole) whole = b->others;
    b->bound = b->once + (parts > whole ? parts : whole);
}

double mg_lower_bound(const mg_problem *pr, int64_t budget)
{
    bound_job b = {.pr = pr, .budget = budget};
    bound_compute(&b);
    return b.bound;
}

/* bound_compute, then the pinned solve started on its own thread where b has one (pinned_start:
 * where the bound proves enough), for auto and exact alike: run after the solve instead, it is
 * cut short at the plan's cost, where a task's walks can still go below it (a step in 2 parts,
 * 207,240 FLOPs under exact against auto's 207,048). */
static void bound_then_pinned(bound_job *b)
{
    bound_compute(b);
    if (b->pinned) pinned_start(b->pinned, b->once, b->bound);
}

static void *bound_thread(void *job)
{
    bound_job *b = job;
    bound_then_pinned(b);
    b->chain = mg_chain_analyse(b->pr);
    if (b->chain) {
        b->table_cap = mg_sv_chain_table_cap(b->budget, b->store_all);
        mg_chain_cost(b->chain, b->table_cap, b->table_cap); /* (fills the tables) */
    }
    return NULL;
}

/* What one solve knows beside the searches' memo: the lower bound. */
typedef struct solve_memo {
    mg_search_memo s;   /* the exact search's findings, the chain DP's tables (sched_variants.c) */
    double lower_bound; /* proven for every plan under the budget solved for (0: none) */
    double graph_cap;   /* what a bound in the graph's order alone (the relaxed program) may raise it
                           to: every op once and bound_job's others (0: not known, nothing) */
    bound_job *pending; /* lower_bound is still being computed there (memo_bound) */
} solve_memo;

/* memo->lower_bound, once its thread (if any) has finished. */
static double memo_bound(solve_memo *memo)
{
    if (memo->pending && memo->pending->running) {
        if (pthread_join(memo->pending->th, NULL)) abort();
        memo->pending->running = 0;
        memo->lower_bound = memo->pending->bound;
        memo->graph_cap = memo->pending->once + memo->pending->others;
        memo->s.chain_tried = 1; /* (as mg_sv_chain_fit would analyse it, and fill the tables for its cap) */
        memo->s.chain = memo->pending->chain;
        memo->s.chain_table_cap = memo->s.chain ? memo->pending->table_cap : 0;
    }
    return memo->lower_bound;
}

enum { IMPROVE_SEEDS = 3 };
/* The improvement search (sched_improve.c) runs where auto's best plan is more than IMPROVE_GAP
 * above the lower bound, from the IMPROVE_SEEDS cheapest variants of sched_remat.c whose
 * schedules cost at most IMPROVE_SLACK more than that plan (where sched_rc.c's are far cheaper,
 * as on layered DAGs, it never catches up), each with mg_improve_schedules(pr) schedules (none
 * above 3500 nodes; sched_improve.c). A walk that stops short of its schedules (its
 * start missed the budget far, or a round kept nothing) hands the rest to the next seed's walk:
 * resnet50 at its minimum, whose first seed's start misses far, walks its second seed twice as
 * far, 1.1664 to 1.1543, where it was still getting cheaper when it ran out. */
static const double IMPROVE_GAP = 0.001, IMPROVE_SLACK = 0.05;

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
 * as many where that waste is above the target (mg_waste_target), as each edit kept holds more
 * live bytes in the room the arena left (resnet18_64 at 25%, in 4 parts of 633 nodes: workspace /
 * peak live 1.029 to 1.012 with 50 rather than 10, 17.39% to 17.36% over every op once, +0.7 s). */
static const double IMPROVE_POLISH = 4e6, IMPROVE_POLISH_GAP = 0.0005;
enum { IMPROVE_POLISH_MIN = 8, IMPROVE_POLISH_MAX = 100, IMPROVE_POLISH_WASTE = 5 };
static int improve_polish_plans(const mg_problem *pr, const mg_plan *best, double lower_bound)
{
    double n = pr->n > 0 ? pr->n : 1, k = IMPROVE_POLISH / (n * n);
    if (k < IMPROVE_POLISH_MIN) return 0;
    if (mg_plan_wastes(best, mg_waste_target)) return (int)(k * IMPROVE_POLISH_WASTE);
    if (best->workspace_bytes > best->peak_live_bytes) return (int)k; /* each edit placed: dear */
    double f = lower_bound > 0 ? (best->flops_executed / lower_bound - 1) / IMPROVE_POLISH_GAP : 1;
    return (int)(k * (f < 1 ? 1 : f > IMPROVE_POLISH_MAX ? IMPROVE_POLISH_MAX : f));
}

/* Chen's checkpoints: every ceil(sqrt(n))-th of the n forward values the scheduler may drop,
 * two ways. `values` counts every such value; `layers` leaves out the batch statistics of a
 * lowered batch_norm (bn_stats, bn_stats_acc: f64[2,C] running sums beside a layer's output, a
 * checkpoint that splits no segment), NULL where the graph has none. --solver sqrt is Chen's
 * plan over the layers (resnet18_64 at 75%: 29.77%, where over every value its plan missed the
 * budget); auto tries both (with the layers' set alone, resnet18_64 in 8 parts at 20% had no
 * plan at all: test_part_checkpoints), the minimum search the values'. */
typedef struct sqrt_sets {
    char *values, *layers;
} sqrt_sets;

static int bn_statistic(const mg_problem *pr, int v)
{
    return pr->g && (pr->g->nodes[v].op == MG_OP_BN_STATS || pr->g->nodes[v].op == MG_OP_BN_STATS_ACC);
}

static char *sqrt_checkpoints_of(const mg_problem *pr, int layers)
{
    char *keep = calloc((size_t)pr->n + 1, 1);
    if (!keep) abort();
    int n = 0;
    for (int i = 0; i < pr->nfwd && i < pr->n; i++) keep[i] = pr->evictable[i] && !(layers && bn_statistic(pr, i));
    for (int i = 0; i < pr->nfwd && i < pr->n; i++) n += keep[i];
    int k = (int)ceil(sqrt((double)n)), seen = 0;
    for (int i = 0; i < pr->nfwd && i < pr->n; i++) keep[i] = keep[i] && ++seen % (k ? k : 1) == 0;
    return keep;
}

static sqrt_sets sqrt_checkpoints(const mg_problem *pr)
{
    sqrt_sets s = {sqrt_checkpoints_of(pr, 0), NULL};
    for (int i = 0; i < pr->nfwd && i < pr->n; i++)
        if (pr->evictable[i] && bn_statistic(pr, i)) {
            s.layers = sqrt_checkpoints_of(pr, 1);
            break;
        }
    return s;
}

static void sqrt_sets_free(sqrt_sets *s)
{
    free(s->values);
    free(s->layers);
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

/* The plan of one solver under budget, or NULL (and MG_OK) when it has none that fits. *optimal
 * is set when the exact search's plan, found under the budget itself, is among the candidates:
 * then the cheapest candidate is optimal. pre: NULL, or (auto only) the variants already
 * scheduled under budget (mg_variants_schedule; npre of them, taken over). ceiling: the cost of
 * a plan already had elsewhere (INFINITY: none); variants costing no less, unplaced, are not
 * fitted. */
static mg_status solve_at_pre(const mg_problem *pr, mg_solver solver, int64_t budget, const sqrt_sets *chk,
                              solve_memo *memo, mg_near_misses *nm, mg_variant *pre, int npre, double ceiling,
                              mg_plan **out, int *optimal, mg_diag *d)
{
    *out = NULL;
    *optimal = 0;
    mg_sched_opts all = {.cap = INT64_MAX, .policy = MG_EVICT_COST_SIZE_DIST};
    mg_plan *p = NULL;
    if (solver == MG_SOLVER_STORE_ALL) { /* (mg_solve has tried store-all before auto) */
        if (mg_sv_build(pr, &all, &p, d)) return MG_ERR;
        if (p->workspace_bytes <= budget) {
            *out = p;
            return MG_OK;
        }
        mg_plan_free(p);
        return MG_OK;
    }
    if (solver == MG_SOLVER_SQRT || solver == MG_SOLVER_AUTO) { /* (sqrt_sets) */
        const char *sets[] = {solver == MG_SOLVER_SQRT && chk->layers ? chk->layers : chk->values,
                              solver == MG_SOLVER_AUTO ? chk->layers : NULL};
        for (int k = 0; k < 2 && sets[k]; k++) {
            mg_sched_opts o = {.cap = INT64_MAX, .policy = MG_EVICT_COST_SIZE_DIST, .keep = sets[k]};
            if (mg_sv_build(pr, &o, &p, d)) {
                for (int i = 0; i < npre; i++) mg_variant_free(&pre[i]);
                mg_plan_free(*out);
                *out = NULL;
                return MG_ERR;
            }
            if (p->workspace_bytes <= budget) mg_sv_keep_better(out, p);
            else mg_plan_free(p);
        }
        if (solver == MG_SOLVER_SQRT) return MG_OK;
    }
    /* the variants cheapest first, each fitted to the budget; fitting only adds cost, so once a
     * variant's unfitted schedule costs no less than the best fitted plan (or the ceiling), none
     * later can win */
    mg_variant own[MG_VARIANTS_MAX], *v = pre ? pre : own;
    int nv = pre ? npre : mg_variants_schedule(pr, budget, v, MG_VARIANTS + mg_variants_restarts(pr), d);
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
        if (st || (*out && v[i].p->flops_executed >= (*out)->flops_executed) || v[i].p->flops_executed >= ceiling) {
            mg_variant_free(&v[i]);
            continue;
        }
        int at_budget = 0;
        mg_plan *first = mg_variant_take(pr, &v[i]), *again = plan_copy(first);
        if ((st = mg_sv_fit(pr, &v[i].o, budget, &memo->s, first, 0, &mm, nm, &p, &at_budget, d))) {
            mg_plan_free(again);
            continue;
        }
        if (!p || !at_budget) { /* the arena missed the budget at first: aim it at the budget, from the
                                   same schedule (not made again) */
            mg_sv_keep_better(out, p);
            if ((st = mg_sv_fit(pr, &v[i].o, budget, &memo->s, again, 2, &mm, nm, &p, NULL, d))) continue;
        } else {
            mg_plan_free(again);
        }
        mg_sv_keep_better(out, p);
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
        if (mg_improve_schedules(pr) > 0 && seeds[i].cost <= (*out)->flops_executed * (1 + IMPROVE_SLACK)) {
            spare += mg_improve_schedules(pr);
            st = mg_improve_schedule_n(pr, &seeds[i].o, budget, &spare, out, d);
        }
    }
    /* then edits of the best schedule itself (sched_improve.c's polish) */
    if (!st && solver == MG_SOLVER_AUTO && *out && (*out)->flops_executed > memo->lower_bound * (1 + IMPROVE_GAP) &&
        improve_polish_plans(pr, *out, memo->lower_bound) > 0)
        st = mg_polish_schedule(pr, budget, improve_polish_plans(pr, *out, memo->lower_bound), out, d);
    if (!st && solver == MG_SOLVER_AUTO) { /* the chain DP: optimal checkpointing where the graph is a chain */
        if ((st = mg_sv_chain_fit(pr, budget, &memo->s, *out, 1, &p, d)) == MG_OK) mg_sv_keep_better(out, p);
    }
    if (!st && solver == MG_SOLVER_AUTO && pr->part) { /* a step in parts, part by part (sched_parts.c) */
        if ((st = mg_parts_schedule(pr, budget, mg_solve_part, NULL, &p, d)) == MG_OK) mg_sv_keep_better(out, p);
    }
    if (!st) { /* the exact search last: optimal where the problem is small enough */
        int at_budget = 0;
        if (!(st = mg_sv_fit(pr, NULL, budget, &memo->s, NULL, 1, NULL, NULL, &p, &at_budget, d))) {
            if (p && at_budget && !pr->part) *optimal = 1; /* (in parts, of the graph's order only) */
            mg_sv_keep_better(out, p);
        }
    }
    if (nm && (st || *optimal)) mg_sv_near_misses_free(nm);
    if (st) {
        mg_plan_free(*out);
        *out = NULL;
    }
    return st;
}

static mg_status solve_at(const mg_problem *pr, mg_solver solver, int64_t budget, const sqrt_sets *chk,
                          solve_memo *memo, mg_near_misses *nm, mg_plan **out, int *optimal, mg_diag *d)
{
    return solve_at_pre(pr, solver, budget, chk, memo, nm, NULL, 0, INFINITY, out, optimal, d);
}

mg_status mg_solve_part(void *ctx, const mg_problem *q, int64_t cap, mg_plan **out, mg_diag *d)
{
    (void)ctx;
    *out = NULL;
    mg_sched_opts all = {.cap = INT64_MAX, .policy = MG_EVICT_COST_SIZE_DIST};
    mg_plan *sa = NULL;
    if (mg_sv_build(q, &all, &sa, d)) return MG_ERR;
    if (sa->workspace_bytes <= cap) {
        *out = sa;
        return MG_OK;
    }
    double forced = mg_step_bound(q, cap), cut = mg_cut_bound(q, cap);
    solve_memo memo = {.s = {.infeasible_cap = -1, .store_all = sa->workspace_bytes},
                       .lower_bound = sa->flops_once + (cut > forced ? cut : forced)};
    sqrt_sets keep = sqrt_checkpoints(q);
    int optimal = 0;
    mg_status st = solve_at(q, MG_SOLVER_AUTO, cap, &keep, &memo, NULL, out, &optimal, d);
    mg_chain_free(memo.s.chain);
    mg_plan_free(sa);
    sqrt_sets_free(&keep);
    return st;
}

/* Whether the walks could gain anything on *out (as solve_at: none without a search, or without a
 * plan above the bound by more than IMPROVE_GAP). */
static int walks_can_gain(const mg_problem *pr, const solve_memo *memo, const mg_plan *out)
{
    return mg_improve_schedules(pr) > 0 && out && out->flops_executed > memo->lower_bound * (1 + IMPROVE_GAP);
}

/* The polish at `at` of *out where walks there made it cheaper than `before`. */
static mg_status polish_walked(const mg_problem *pr, int64_t at, double before, solve_memo *memo, mg_plan **out,
                               mg_diag *d)
{
    if ((*out)->flops_executed < before && (*out)->flops_executed > memo->lower_bound * (1 + IMPROVE_GAP) &&
        improve_polish_plans(pr, *out, memo->lower_bound) > 0)
        return mg_polish_schedule(pr, at, improve_polish_plans(pr, *out, memo->lower_bound), out, d);
    return MG_OK;
}

/* The improvement search of solve_at at a smaller budget `at` (from the variants there), into
 * *out (a plan within a budget of at least `at`). */
static mg_status improve_below(const mg_problem *pr, int64_t at, solve_memo *memo, mg_plan **out, mg_diag *d)
{
    if (!walks_can_gain(pr, memo, *out)) return MG_OK;
    mg_variant v[MG_VARIANTS_MAX];
    double before = (*out)->flops_executed; /* (the walks keep only a cheaper plan) */
    int nv = mg_variants_schedule(pr, at, v, MG_VARIANTS + mg_variants_restarts(pr), d), nseeds = 0, spare = 0;
    mg_status st = MG_OK;
    for (int i = 0; i < nv; i++) {
        if (!st && !v[i].o.rc && nseeds < IMPROVE_SEEDS && walks_can_gain(pr, memo, *out) &&
            v[i].p->flops_executed <= (*out)->flops_executed * (1 + IMPROVE_SLACK)) {
            nseeds++;
            spare += mg_improve_schedules(pr);
            st = mg_improve_schedule_n(pr, &v[i].o, at, &spare, out, d);
        }
        mg_variant_free(&v[i]);
    }
    /* a plan from the walks here: the polish at `at` too, as solve_at would have run it there
     * (resnet50 at 4.6 GB: 1.1543 from the walks at its minimum, 1.1518 polished) */
    return st ? st : polish_walked(pr, at, before, memo, out, d);
}

/* The walk of improve_below from one variant o (not sched_rc.c's) whose schedule under its cap
 * places within `at`, and the polish. */
static mg_status improve_from(const mg_problem *pr, const mg_sched_opts *o, int64_t at, solve_memo *memo,
                              mg_plan **out, mg_diag *d)
{
    if (o->rc || !walks_can_gain(pr, memo, *out)) return MG_OK;
    double before = (*out)->flops_executed;
    int spare = mg_improve_schedules(pr);
    mg_status st = mg_improve_schedule_n(pr, o, at, &spare, out, d);
    return st ? st : polish_walked(pr, at, before, memo, out, d);
}

/* The exact solver under budget, auto's plan as the incumbent. The program caps peak live
 * bytes; when the arena adds waste on top, the cap is lowered and the program solved again, and
 * then optimality is no longer proven. lower_bound is the bound at the budget itself. */
static mg_status solve_exact_at(const mg_problem *pr, int64_t budget, double time_limit, const sqrt_sets *chk,
                                solve_memo *memo, mg_near_misses *nm, mg_solution *out, mg_diag *d)
{
    double end = mg_seconds() + time_limit;
    mg_plan *best = NULL;
    if (solve_at(pr, MG_SOLVER_AUTO, budget, chk, memo, nm, &best, &out->optimal, d)) return MG_ERR;
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
    if (relaxed > memo->graph_cap) relaxed = memo->graph_cap; /* (a bound in the graph's order: bound_compute) */
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
         * they settle `optimal` within that class but never raise lower_bound. Not in a step in
         * parts, whose plans often run part by part, outside the class (as the exact search's
         * proof, solve_at): a plan in 2 parts said optimal at 14,341 FLOPs under 2,207 bytes,
         * where a plan part by part executes 14,005 in 2,176 */
        int claim = it == 0 && r.proven && !pr->part;
        if (claim && !r.plan && best) out->optimal = out->optimal_in_class = 1; /* nothing beats auto's */
        if (!r.plan) break;
        if (r.plan->workspace_bytes <= budget) {
            if (claim) out->optimal = out->optimal_in_class = 1;
            mg_sv_keep_better(&best, r.plan);
            break;
        }
        int64_t over = r.plan->workspace_bytes - budget;
        cap -= over > MG_ALIGN ? over : MG_ALIGN;
        mg_plan_free(r.plan);
    }
    out->plan = best;
    return MG_OK;
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
 * times (72.64 / 69.76% -> 63.88%): the one rung that does that runs there anyway
 * (NEAR_MIN_RUNG_ONE). */
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
/* Past NEAR_MIN, where the rungs do not all run (NEAR_MIN_RUNGS_SAVED), the one at 2% above the
 * minimum does: every budget from 2% to 10% above the minimum then has its plan to choose from
 * (resnet18_64 in 16 parts: 72.64% at 1.07 times its minimum, 69.76% at 1.08 and 1.09 times,
 * against 63.88% from 1.02 to 1.06 times; now 63.88% at 1.02-1.09 times). One solve more:
 * +0.1-0.3 s of CPU on mlp_deep, unet_small and the transformer at 1.06-1.10 times their
 * minimum, 1.9 -> 2.9 s on layered_n1000 at 0.8 of its peak (1.073 times its minimum), none of
 * them cheaper for it (2026-12-05). The rung at 4% gave resnet18_64 nothing there. */
enum { NEAR_MIN_RUNG_ONE = 2 };
static const double NEAR_MIN_RUNG_GAP = 0.02;

/* The plan under budget of pr with every value gathered from the parts of a step in parts
 * (mg_part_gathers: the concatenation of every part's values that a whole-batch op reads) kept
 * from when it is made to its last read, into *out (NULL: none, or no such value). Why: the
 * schedulers drop such a value as cheap to bring back while its parts' values are resident, and
 * once those are dropped too, bringing it back runs every part's prefix again (resnet18_64 in
 * 8 parts at 25% of its store-all: the stem's convolution recomputed 41 times, where the
 * backward pass needs it twice a part, to rebuild the concatenation layer3 reads). Keeping it is
 * a restriction, not always cheaper (in 4 parts at 50%: 1.17% against 0.82%; at 33%: 10.85%
 * against 8.95%), so this is a second solve of pr, with pr's lower bound (which holds for this
 * plan too), and the cheaper plan is kept.
 * Where the plan recomputes at most PINNED_GAP of a step, it is not run (it costs as much as the
 * first solve). */
static const double PINNED_GAP = 0.01;

/* *q: pr with the values gathered from its parts not evictable; returns q's evictable flags,
 * which the caller frees (q owns nothing else: it shares the rest with pr), or NULL where pr
 * has no such value (then *q is untouched). */
static char *pinned_problem(const mg_problem *pr, mg_problem *q)
{
    if (!pr->part) return NULL;
    char *evictable = mg_xcalloc((size_t)pr->n + 1, 1);
    if (!mg_part_gathers(pr, evictable)) {
        free(evictable);
        return NULL;
    }
    for (int v = 0; v < pr->n; v++) evictable[v] = pr->evictable[v] && !evictable[v];
    *q = *pr;
    q->evictable = evictable;
    return evictable;
}

/* q's plan under budget into *out, from its variants v[0..nv) scheduled under budget (taken over);
 * kept: the cost of the plan kept from the tasks before (solve_at_pre's ceiling). */
static mg_status solve_pinned_one(const mg_problem *q, int64_t budget, int64_t store_all, double lower_bound,
                                  mg_variant *v, int nv, double kept, mg_plan **out, mg_diag *d)
{
    sqrt_sets keep = sqrt_checkpoints(q);
    solve_memo memo = {.s = {.infeasible_cap = -1, .store_all = store_all}, .lower_bound = lower_bound};
    int optimal = 0;
    mg_plan *p = NULL;
    mg_status st = solve_at_pre(q, MG_SOLVER_AUTO, budget, &keep, &memo, NULL, v, nv, kept, &p, &optimal, d);
    if (!st && p) mg_plan_refill(p, q);
    mg_chain_free(memo.s.chain);
    sqrt_sets_free(&keep);
    if (st) mg_plan_free(p);
    else mg_sv_keep_better(out, p);
    return st;
}

/* After that plan, pr with the parts' values of one class of checkpoints kept in place of the
 * gathered values (mg_part_checkpoints: a value of every part that all of the part's later
 * forward pass depends on; the PINNED_CHECKPOINTS best distinct classes, each on its own), and
 * the cheapest plan is kept. Why: at every batch_norm barrier of the backward pass (its
 * statistics over every part) each part's forward values are needed again, and the schedulers,
 * seeing each part's checkpoint as cheap to bring back, drop it, so that each stage rebuilds
 * every part from its input (resnet18_64 in 16 parts at 25% of its store-all: 15.86%
 * recomputed). Which class helps depends on the budget and the part count (at 33%, in 8 parts,
 * the max-pool's output, third by its cost per byte: 7.91% -> 4.63%; in 16 parts at 25% the
 * first residual block's output: 13.55%), and two kept at once are dearer, so each is a solve of
 * its own. Kept beside the gathered values (as first written), two classes gave less: 14.39% and
 * 6.03% at 25% and 33%; three on their own take 1-2.4 s more of resnet18_64's `plan` (33%: 10.4
 * -> 11.9 s, 20%: 6.3 -> 8.6 s, side by side). Five, not three (2026-12-06): the classes of
 * least cost per byte, early in the part (layer1's outputs), win most often in 4 and 8 parts,
 * and the fourth and fifth are those; resnet18_64 in 8 parts at 25% 15.93% -> 11.88%, and the
 * plan at 21-27% 1.4-3.5 points cheaper, for 25-50% more CPU (at 25% 10.0 -> 15.2 s); a sixth,
 * where there is one, never won (docs/planner.md). */
enum { PINNED_CHECKPOINTS = 5 };

/* The solves of solve_pinned are independent (each its own problem, memo and plan; they share
 * only pr, which no solve writes), so they are tasks that any thread with nothing else to do
 * takes in turn: the pinned thread, and the solve's own thread once it reaches keep_pinned,
 * where it used to wait for them (resnet18_64 at 33% of its store-all: the first solve done,
 * one core idle for ~2 s in each part count while the four ran one after another). The plan is
 * the one of solve_pinned's order whatever the timing: the results are judged in the tasks'
 * order and kept as they were one after another (the cheapest, the lower task on a tie), and
 * those of tasks that would not have run (an earlier plan within IMPROVE_GAP of the bound, or an
 * error) are dropped. A task is not started where the tasks before it, all done, already end the
 * series.
 * The order is the classes' last first, the gathered values' task last: the later classes (of
 * least cost per byte, early in the part) win most often. A task whose cheapest variant,
 * scheduled but not yet placed, costs no less than the plan kept from the tasks before it is
 * not solved further, as most of a solve is placing its variants and fitting only adds cost
 * (the walks could take it lower, but never did: resnet18_64 at 19-50% of its store-all, every
 * plan the same); so a task, its variants scheduled, waits until the tasks before it are done.
 * resnet18_64 at 33%: 20 of its 29 pinned solves cut short, 16.4 -> 8.1 s of CPU
 * (docs/planner.md). */
enum { PINNED_TASKS = 1 + PINNED_CHECKPOINTS };

typedef struct pinned_tasks {
    const mg_problem *pr;
    int64_t budget, store_all;
    double lower_bound;
    double ceiling;                 /* a plan had elsewhere: tasks' plans costing no less are not wanted */
    int n;                          /* tasks: 0 the gathered values kept, 1.. a class each (0: none) */
    char *ev[PINNED_TASKS];         /* each task's evictable flags */
    pthread_mutex_t mu;             /* guards next, stop and the results' done */
    pthread_cond_t judged;          /* signalled when a task is done, or on stop */
    int next, stop;                 /* the next task to take (its place in the order); stop: take none */
    struct pinned_result {
        mg_plan *plan;
        mg_status st;
        mg_diag d;
        int done, cut; /* cut: not solved further (a plan before it is as cheap as its variants) */
    } res[PINNED_TASKS];
} pinned_tasks;

/* The task judged k-th: the classes' last first, the gathered values' (task 0) last. */
static int pinned_task(const pinned_tasks *t, int k) { return t->n - 1 - k; }

/* The tasks of solve_pinned on pr (none where pr has no gathered value). */
static void pinned_tasks_init(pinned_tasks *t, const mg_problem *pr, int64_t budget, int64_t store_all,
                              double lower_bound, double ceiling)
{
    *t = (pinned_tasks){.pr = pr, .budget = budget, .store_all = store_all, .lower_bound = lower_bound,
                        .ceiling = ceiling};
    if (pthread_mutex_init(&t->mu, NULL) || pthread_cond_init(&t->judged, NULL)) abort();
    mg_problem q;
    char *evictable = pinned_problem(pr, &q);
    if (!evictable) return;
    t->ev[t->n++] = evictable;
    char *mark = mg_xcalloc((size_t)pr->n + 1, 1);
    int nclasses = mg_part_checkpoints(pr, PINNED_CHECKPOINTS, mark);
    for (int k = 1; k <= nclasses && t->n < PINNED_TASKS; k++) {
        char *ev = mg_xcalloc((size_t)pr->n + 1, 1);
        for (int v = 0; v < pr->n; v++) ev[v] = pr->evictable[v] && mark[v] != k;
        t->ev[t->n++] = ev;
    }
    free(mark);
}

/* Whether a plan executing flops ends the series: none after it can be cheaper by enough. */
static int pinned_enough(const pinned_tasks *t, double flops) { return flops <= t->lower_bound * (1 + IMPROVE_GAP); }

/* The tasks judged before the k-th, all done, judged as pinned_finish does (called with mu held):
 * 0 where one is not done; else 1, with *ended where they end the series, and *kept the cost of
 * the plan they keep (INFINITY: none). */
static int pinned_judged_before(const pinned_tasks *t, int k, int *ended, double *kept)
{
    *ended = 0;
    *kept = INFINITY;
    for (int j = 0; j < k; j++) {
        const struct pinned_result *r = &t->res[pinned_task(t, j)];
        if (!r->done) return 0;
        if (r->st) {
            *ended = 1;
            return 1;
        }
        if (r->cut || !r->plan) continue;
        if (r->plan->flops_executed < *kept) *kept = r->plan->flops_executed;
        if (pinned_enough(t, *kept)) {
            *ended = 1;
            return 1;
        }
    }
    return 1;
}

/* Takes and solves tasks until none is left. */
static void pinned_work(pinned_tasks *t)
{
    for (;;) {
        if (pthread_mutex_lock(&t->mu)) abort();
        int k = t->next, ended = 0;
        double kept;
        if (!t->stop && k < t->n) pinned_judged_before(t, k, &ended, &kept);
        if (t->stop || k >= t->n || ended) {
            if (pthread_mutex_unlock(&t->mu)) abort();
            return;
        }
        t->next++;
        if (pthread_mutex_unlock(&t->mu)) abort();
        int i = pinned_task(t, k);
        mg_problem q = *t->pr;
        q.evictable = t->ev[i];
        mg_variant v[MG_VARIANTS_MAX];
        mg_diag d = {0};
        int nv = mg_variants_schedule(&q, t->budget, v, MG_VARIANTS + mg_variants_restarts(&q), &d);
        double least = nv > 0 ? v[0].p->flops_executed : INFINITY; /* (cheapest first) */
        /* judged once the tasks before it are (they were all taken before it, so they end) */
        if (pthread_mutex_lock(&t->mu)) abort();
        while (!t->stop && !pinned_judged_before(t, k, &ended, &kept))
            if (pthread_cond_wait(&t->judged, &t->mu)) abort();
        if (t->ceiling < kept) kept = t->ceiling; /* (not for pinned_enough: no plan of the series) */
        int cut = t->stop || ended || (kept < INFINITY && least >= kept);
        if (pthread_mutex_unlock(&t->mu)) abort();
        mg_plan *p = NULL;
        mg_status st = MG_OK;
        if (cut) {
            for (int j = 0; j < nv; j++) mg_variant_free(&v[j]);
        } else {
            st = solve_pinned_one(&q, t->budget, t->store_all, t->lower_bound, v, nv, kept, &p, &d);
        }
        if (pthread_mutex_lock(&t->mu)) abort();
        t->res[i] = (struct pinned_result){.plan = p, .st = st, .d = d, .done = 1, .cut = cut};
        if (pthread_cond_broadcast(&t->judged) || pthread_mutex_unlock(&t->mu)) abort();
    }
}

/* No task is started after this (their results are not wanted). */
static void pinned_stop(pinned_tasks *t)
{
    if (pthread_mutex_lock(&t->mu)) abort();
    t->stop = 1;
    if (pthread_cond_broadcast(&t->judged) || pthread_mutex_unlock(&t->mu)) abort();
}

/* The tasks' results judged in their order, as if they ran one after another, into *out (NULL:
 * none); frees the tasks, whose threads have all been joined. A task not done was never taken:
 * the series ended before it, or the tasks were stopped (and the caller drops *out). */
static mg_status pinned_finish(pinned_tasks *t, mg_plan **out, mg_diag *d)
{
    *out = NULL;
    mg_status st = MG_OK;
    int from = -1; /* the task *out is of */
    for (int k = 0; k < t->n; k++) {
        int i = pinned_task(t, k);
        struct pinned_result *r = &t->res[i];
        if (!r->done || (*out && pinned_enough(t, (*out)->flops_executed))) break;
        if ((st = r->st)) {
            *d = r->d;
            break;
        }
        if (r->cut || !r->plan) continue;
        const mg_plan *p = r->plan, *o = *out;
        if (!o || p->flops_executed < o->flops_executed ||
            (p->flops_executed == o->flops_executed &&
             (p->workspace_bytes < o->workspace_bytes || (p->workspace_bytes == o->workspace_bytes && i < from)))) {
            mg_plan_free(*out);
            *out = r->plan;
            r->plan = NULL;
            from = i;
        }
    }
    for (int i = 0; i < t->n; i++) {
        mg_plan_free(t->res[i].plan);
        free(t->ev[i]);
    }
    if (pthread_mutex_destroy(&t->mu) || pthread_cond_destroy(&t->judged)) abort();
    if (st) {
        mg_plan_free(*out);
        *out = NULL;
    }
    return st;
}

static void *pinned_helper(void *arg)
{
    pinned_work(arg);
    return NULL;
}

/* The solves of solve_pinned, here and on a helper thread, into *out (NULL: none, or no such
 * value). */
static mg_status solve_pinned(const mg_problem *pr, int64_t budget, int64_t store_all, double lower_bound,
                              double ceiling, mg_plan **out, mg_diag *d)
{
    pinned_tasks t;
    pinned_tasks_init(&t, pr, budget, store_all, lower_bound, ceiling);
    pthread_t th;
    int helped = t.n > 1 && pthread_create(&th, NULL, pinned_helper, &t) == 0;
    pinned_work(&t);
    if (helped && pthread_join(th, NULL)) abort();
    return pinned_finish(&t, out, d);
}

/* solve_pinned on a thread of its own, beside the solve at the budget: where the lower bound
 * already proves more than PINNED_GAP of a step recomputed, every plan at the budget does, so
 * keep_pinned will want it (resnet18_64 at 33% of its store-all, in 16 parts: the bound proves
 * 2.08%). Its plan is the one solve_pinned would make after the first solve: the same problem,
 * budget and bound. resnet18_64's `plan` at 33%: 6.9 s of wall clock with the second solve after
 * the first, 5.1 s beside it, the same CPU time (medians of 3). The solve's thread takes the
 * tasks left when it reaches keep_pinned (pinned_tasks). */
struct pinned_job {
    const mg_problem *pr;
    int64_t budget, store_all;
    double ceiling; /* a plan costing that or more is not wanted (solve_below's) */
    pinned_tasks t; /* (pinned_start) */
    pthread_t th;
    int started; /* running on th (pinned_start), until keep_pinned or solve_below's end joins it */
};

static void pinned_start(pinned_job *j, double once, double bound)
{
    if (bound <= (1 + PINNED_GAP) * once) return;
    pinned_tasks_init(&j->t, j->pr, j->budget, j->store_all, bound, j->ceiling);
    j->started = j->t.n > 0 && pthread_create(&j->th, NULL, pinned_helper, &j->t) == 0;
    mg_plan *none;
    if (!j->started) pinned_finish(&j->t, &none, &(mg_diag){0}); /* (no task run: nothing) */
}

/* The thread's plan and status into *p and the return (a thread never started: none); help: this
 * thread takes the tasks left too, else none is started any more (the plan is not wanted). */
static mg_status pinned_join(pinned_job *j, int help, mg_plan **p, mg_diag *d)
{
    *p = NULL;
    if (!j || !j->started) return MG_OK;
    if (help) pinned_work(&j->t);
    else pinned_stop(&j->t);
    if (pthread_join(j->th, NULL)) abort();
    j->started = 0;
    return pinned_finish(&j->t, p, d);
}

/* *plan (a plan under budget) replaced by solve_pinned's where that is cheaper; not run where *plan
 * recomputes at most PINNED_GAP of a step, or no more than lower_bound proves every plan must.
 * From pj's thread where it was started (pj: NULL or never started, solved here). ceiling: the
 * cost of a plan had elsewhere, which its plan must beat too (INFINITY: none); solved here, the
 * tasks cut short at that or at *plan's (solve_pinned). */
static mg_status keep_pinned(const mg_problem *pr, int64_t budget, int64_t store_all, double lower_bound,
                             pinned_job *pj, double ceiling, mg_plan **plan, mg_diag *d)
{
    int wanted = *plan && (*plan)->flops_executed > lower_bound &&
                 (*plan)->flops_executed > (1 + PINNED_GAP) * (*plan)->flops_once;
    mg_plan *p = NULL;
    mg_diag why = {0};
    mg_status st = MG_OK;
    if (pj && pj->started) /* (read once the bound's thread is joined: memo_bound) */
        st = pinned_join(pj, wanted, &p, &why);
    else if (wanted)
        st = solve_pinned(pr, budget, store_all, lower_bound, fmin(ceiling, (*plan)->flops_executed), &p, &why);
    if (!wanted) { /* (the thread's, where there is no plan or it meets the bound) */
        mg_plan_free(p);
        return MG_OK;
    }
    if (st) *d = why;
    if (!st && p && p->flops_executed < (*plan)->flops_executed) {
        mg_plan_free(*plan);
        *plan = p;
    } else {
        mg_plan_free(p);
    }
    return st;
}

/* One rung's solve. A rung on a thread of its own has its own search memo: a copy of the solve's
 * (the memo is a cache the solves write to: the exact search's findings, the chain DP's tables),
 * the chain analysed again and its tables built for the same cap, so each rung finds the plan
 * it would have found with the rungs run one after another. Its plan is wanted only where it
 * is cheaper than the plan had before the rungs (ceiling; INFINITY: none), so its pinned solves
 * are cut short at that (keep_pinned). Not its own solve: the walks from a variant costing more
 * can end below it (layered_n500 at 0.8 of its peak: 8.26% -> 8.80% recomputed, not fitting
 * those variants). */
typedef struct rung_job {
    const mg_problem *pr;
    int64_t budget;
    double ceiling;
    const sqrt_sets *keep;
    solve_memo *memo;
    solve_memo own;
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
    if (!j->st && !optimal) /* (as at the budget: solve_below) */
        j->st = keep_pinned(j->pr, j->budget, j->memo->s.store_all, j->memo->lower_bound, NULL, j->ceiling, &j->plan,
                            &j->d);
    return NULL;
}

/* The rungs between from and budget: from itself where there is no plan yet (*out NULL), and
 * the budgets NEAR_MIN_RUNG_AT above the minimum hi that lie between them, the first on this thread and the others each on a thread of their own (side
 * by side where cores are free; sharing one core, they take as long as in turn), their plans
 * taken in order of budget. */
static mg_status near_min_rungs(const mg_problem *pr, int64_t hi, int64_t from, int64_t budget, const sqrt_sets *keep,
                                int only, solve_memo *memo, mg_plan **out, mg_diag *d)
{
    rung_job job[NEAR_MIN_RUNGS_MAX];
    int n = 0;
    double ceiling = *out ? (*out)->flops_executed : INFINITY;
    if (!*out) job[n++] = (rung_job){.budget = from, .ceiling = ceiling};
    for (int r = 0; r + 1 < NEAR_MIN_RUNGS_MAX; r++) {
        if (only >= 0 && r != only) continue;
        int64_t b = (int64_t)((double)hi * (1 + NEAR_MIN_RUNG_AT[r]));
        if (b >= budget) break;
        if (b > from) job[n++] = (rung_job){.budget = b, .ceiling = ceiling};
    }
    memo_bound(memo); /* (the copies take its bound, and no thread of its own) */
    for (int r = 0; r < n; r++) {
        job[r].pr = pr;
        job[r].keep = keep;
        job[r].memo = memo;
        if (r == 0) continue;
        job[r].own = *memo;
        job[r].own.s.chain_tried = 0;
        job[r].own.s.chain = NULL;
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
            mg_chain_free(job[r].own.s.chain);
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

/* How far above a plan's cost a lower bound may come out from rounding alone (the relaxed
 * program's scaled sums, solve_exact.c); further is a mistake (solve_below). */
static const double BOUND_ROUNDING = 1e-6;

/* The minimum search of pr (job) and, in a step in parts, the same search once more with every
 * value gathered from the parts kept (pinned_problem), below the first one's minimum, where it
 * may find plans: the schedulers of pr drop such a value and bring it back by running every
 * part's prefix again, which the search's tight caps leave no room for (resnet18_64 in 16
 * parts: 4,922,432 bytes, with them kept 4,722,752, at the peak under which nothing schedules;
 * in 4 and 8 parts nothing below). Searched from store-all rather than below the first, it
 * named 4,786,240 (the bisection's probes land elsewhere), and was higher in 4 and 8 parts.
 * resnet18_64's `plan`: +0.3-0.5 s of wall clock at 1.3-3.1 s. */
typedef struct min_searches {
    mg_min_search_job job; /* pr's: where the walks near the minimum start (its hi, seed, bisected) */
    int64_t pinned_hi;     /* out: the second search's least budget with a plan where it is below
                              job's (the minimum then), else -1 */
} min_searches;

/* Both searches; where the first has no plan within the budget, job.cheap is the second's (a
 * plan of the pinned problem is one of pr: it drops less). Not where both have one: the
 * second's, placed at the search's tight caps, wasted 5.3% of its peak where it was the cheaper
 * (resnet18_64 at 25% of its store-all in 4 parts, 16.38% against 16.98%). */
static void min_search_both(min_searches *ms)
{
    mg_min_search_job *job = &ms->job;
    ms->pinned_hi = -1;
    mg_problem q;
    char *evictable = pinned_problem(job->pr, &q);
    if (!evictable) {
        mg_min_search(job);
        return;
    }
    sqrt_sets keep = sqrt_checkpoints(&q);
    mg_min_search(job);
    mg_min_search_job j = *job;
    j.pr = &q;
    j.keep = keep.values;
    j.best = j.cheap = NULL;
    j.found = 0;
    if (job->found && (j.below <= 0 || job->hi < j.below)) j.below = job->hi; /* (only a lower one matters) */
    /* (a minimum within floor is as good as any) */
    if (!job->st && !(job->found && job->floor > 0 && job->hi <= job->floor) && !job->cut_short) mg_min_search(&j);
    sqrt_sets_free(&keep);
    free(evictable);
    if (j.st && !job->st) {
        job->st = j.st;
        job->d = j.d;
    }
    if (!j.st && j.found && (!job->found || j.hi < job->hi)) ms->pinned_hi = j.hi;
    /* (best and cheap may be one plan, in either search) */
    mg_plan *cheap = job->cheap || j.st ? job->cheap : j.cheap;
    if (j.best != cheap) mg_plan_free(j.best);
    if (j.cheap != cheap && j.cheap != j.best) mg_plan_free(j.cheap);
    job->cheap = cheap;
}

static void *min_search_thread(void *ms)
{
    min_search_both((min_searches *)ms);
    return NULL;
}

/* Whether s's plan is proven optimal among every plan. The MILP's proof holds only within its
 * class (solve_exact.c): the steps after the solve at the budget (the walks and rungs, the
 * refill, the near misses, the pinned solve) may still find a cheaper plan outside it, so they
 * run under exact too, and such a plan drops the claim (a step in two parts: exact's 326 proven
 * in its class, auto's 296 with the parts one after the other; test_exact_not_dearer_than_auto). */
static int settled(const mg_solution *s) { return s->optimal == 1 && !s->optimal_in_class; }

/* mg_solve; below > 0: the minimum search looks only below `below` bytes (mg_plan_request.
 * min_feasible_below) and, finding nothing there, reports `below` itself. floor > 0: a minimum
 * at or under floor is as good as any (the forward pass's under the training step's: the
 * program needs the larger), so a plan within floor ends the search, and it reports that plan's
 * workspace. ceiling < INFINITY: only a plan executing fewer FLOPs is wanted (mg_plan_request.
 * flops_ceiling): no variant costing that is fitted, nor a pinned solve's plan kept, no plan at
 * the budget starts the minimum search where it was not asked for, and none costing that comes
 * back. */
static mg_status solve_below(const mg_problem *problem, mg_solver solver, int64_t budget, int want_min,
                             int64_t below, int64_t floor, double ceiling, double time_limit, mg_solution *out,
                             mg_diag *d)
{
    *out = (mg_solution){.min_feasible_bytes = -1, .optimal = -1, .lower_bound = -1};
    /* (the placements made, for every thread of this solve: a problem solved within another's
     * solve shares that one's) */
    mg_problem with_cache = *problem;
    mg_place_cache *placed = problem->placed ? NULL : mg_place_cache_new();
    if (placed) with_cache.placed = placed;
    const mg_problem *pr = &with_cache;
    sqrt_sets keep = sqrt_checkpoints(pr);
    mg_status st = MG_OK;
    mg_plan *sa = NULL;
    mg_sched_opts all = {.cap = INT64_MAX, .policy = MG_EVICT_COST_SIZE_DIST};
    solve_memo memo = {.s = {.infeasible_cap = -1}};
    mg_near_misses nm = {.n = 0}; /* the solve at the budget's, rescued last */
    double in_class = -1; /* what the plan the MILP proved optimal in its class executes */
    min_searches ms = {0}; /* the minimum's searches (min_search_both) */
    atomic_int stop = MG_SEARCH_ON; /* (ms.job.stop) */
    pthread_t th;
    int threaded = 0; /* the minimum search is running on thread th */
    pinned_job pj = {.pr = pr, .budget = budget, .ceiling = ceiling}; /* solve_pinned's thread (bound_thread starts it) */
    if ((st = mg_sv_build(pr, &all, &sa, d))) goto done;
    out->store_all_bytes = sa->workspace_bytes;
    memo.s.store_all = sa->workspace_bytes;
    /* every op at least once, and what no schedule within the budget avoids (nothing where
     * store-all fits: then every op once is the optimum) */
    out->lower_bound = sa->flops_once;
    bound_job bj = {.pr = pr, .budget = budget, .store_all = memo.s.store_all, .once = out->lower_bound,
                    .bound = out->lower_bound};
    pj.store_all = memo.s.store_all;
    if (pr->part && (solver == MG_SOLVER_AUTO || solver == MG_SOLVER_EXACT))
        bj.pinned = &pj; /* (a step in parts: mg_part_gathers; keep_pinned's solvers) */
    if (sa->workspace_bytes > budget) { /* two different arguments (bound_step.c, bound_cut.c): the larger holds */
        if (solver == MG_SOLVER_AUTO && pthread_create(&bj.th, NULL, bound_thread, &bj) == 0) {
            bj.running = 1; /* (auto's solve waits for it before its walks: memo_bound) */
            memo.pending = &bj;
        } else {
            bound_then_pinned(&bj);
            out->lower_bound = bj.bound;
            memo.graph_cap = bj.once + bj.others;
        }
    }
    memo.lower_bound = out->lower_bound; /* (every op once until the thread's is in: memo_bound) */
    int searching = solver == MG_SOLVER_AUTO || solver == MG_SOLVER_EXACT;
    ms.job = (mg_min_search_job){.pr = pr, .budget = budget, .below = below, .floor = floor, .store_all = memo.s.store_all,
                           .searching = searching, .keep = keep.values, .stop = &stop};
    /* where the minimum is asked for anyway, its search runs on a thread of its own beside auto's
     * solve at the budget (neither reads what the other writes: the same plans, in about the
     * time of the longer where a second core is free; resnet50 at its minimum: the solve ~0.55 s,
     * the search ~0.25 s) */
    if (want_min && solver == MG_SOLVER_AUTO && sa->workspace_bytes > budget)
        threaded = pthread_create(&th, NULL, min_search_thread, &ms) == 0;
    if (sa->workspace_bytes <= budget && solver != MG_SOLVER_SQRT) {
        out->plan = sa;
        sa = NULL;
    } else if (solver == MG_SOLVER_EXACT) {
        if ((st = solve_exact_at(pr, budget, time_limit, &keep, &memo, &nm, out, d))) goto done;
        if (out->optimal_in_class && out->plan) in_class = out->plan->flops_executed;
    } else {
        int opt = 0;
        if ((st = solve_at_pre(pr, solver, budget, &keep, &memo, &nm, NULL, 0, ceiling, &out->plan, &opt, d)))
            goto done;
        if (opt) out->optimal = 1;
        out->lower_bound = memo_bound(&memo); /* (the thread's, where it ran) */
    }
    /* compile's search (MG_MIN_AS_PLANNED) is wanted only for what it may change in the plan:
     * nothing where the plan runs every op once (the walks, rungs and polish below look for a
     * cheaper plan, and the search's own plans are taken only where they are cheaper or there is
     * none), so there it is stopped and left out (min_feasible_bytes -1), and nothing where the
     * budget is far above the minimum (mg_far_above_min), so it stops once its bisection has
     * found a plan that far below (min_feasible_bytes that plan's workspace). Either way
     * min_cut_short, and the plan is the one the whole search gives (`plan`'s). `compile`, medians
     * of 3: a chain of 1,666 matmul layers at 75% of its store-all 9.44 -> 4.43 s, at 25% 11.56 ->
     * 7.57 s; a 106-layer transformer at 50% 11.99 -> 7.66 s; resnet18_64 at 50% 4.37 -> 3.62 s. */
    if (want_min == MG_MIN_AS_PLANNED && out->plan)
        atomic_store(&stop, out->plan->flops_executed <= out->plan->flops_once ? MG_SEARCH_STOP : MG_SEARCH_STOP_FAR);
    out->min_cut_short = stop == MG_SEARCH_STOP;
    if (!st && ((want_min && stop != MG_SEARCH_STOP) || (!out->plan && searching && ceiling == INFINITY))) { /* the minimum search (min_search.c) */
        if (!threaded) min_search_both(&ms);
        else if (pthread_join(th, NULL) == 0) threaded = 0;
        else abort();
        if (ms.job.st) {
            st = ms.job.st;
            *d = ms.job.d;
        }
        int64_t hi = ms.job.hi;
        int found = ms.job.found;
        out->min_cut_short = ms.job.cut_short;
        mg_plan *best = ms.job.best, *cheap = ms.job.cheap;
        double min_exec = best ? best->flops_executed : -1; /* (the plan at the minimum: near_min_rungs) */
        if (best != cheap) mg_plan_free(best);
        best = NULL;
        /* (`below` itself when nothing was found under it; the pinned search's where it went lower,
         * while the walks below start from pr's own search) */
        out->min_feasible_bytes = ms.pinned_hi >= 0 ? ms.pinned_hi : hi;
        /* a budget from the minimum to a little above it: a walk from the variant whose schedule
         * the descent placed at the minimum. There most variants' schedules place far above
         * their peak (resnet50: 9-17%), and the walks start only from those that miss by at most
         * 5%, while that one placed at its peak (resnet50 at its minimum: 1.2279 -> 1.1952 of
         * running every op once) */
        int walks = solver == MG_SOLVER_AUTO || solver == MG_SOLVER_EXACT; /* (exact: from the MILP's plan) */
        if (!st && found && ms.job.descended && walks && !settled(out) && hi <= budget &&
            (double)(budget - hi) <= NEAR_MIN * (double)hi)
            st = improve_from(pr, &ms.job.seed, hi, &memo, &out->plan, d);
        /* a budget a little above the minimum: the improvement search at the minimum too, whose
         * plans fit this budget as well; it runs even where the search at the budget improved
         * the plan, which can stay dearer than at the minimum (resnet50 at 4.6 GB: 1.1852 of
         * running every op once from its own walks, 1.1543 at the minimum, 4.52 GB; 4.7 GB had
         * 1.2176 against 1.1856 when this was first written). And a little above the bisection's
         * least budget, where the descent went below it, the same there: the plans swing with
         * the budget, and a cheap one there is lost to budgets above it (resnet50: the descent's
         * minimum 4,315,938,816, 1.2279 then; at the bisection's 4,521,459,712 1.1518, and at
         * 4.61 GB 1.1834 from the solve at the budget and the minimum's) */
        const int64_t at[2] = {hi, ms.job.bisected};
        for (int k = 0; k < 2; k++)
            if (!st && found && walks && out->plan && !settled(out) && at[k] > 0 &&
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
        int64_t from = out->plan && ms.job.bisected > hi && ms.job.bisected < budget ? ms.job.bisected : hi;
        double above = (double)(budget - hi) / (double)hi;
        int every_rung = !out->plan || above <= NEAR_MIN ||
                         (min_exec > out->plan->flops_once &&
                          out->plan->flops_executed - out->plan->flops_once >=
                              NEAR_MIN_RUNGS_SAVED * (min_exec - out->plan->flops_once));
        if (!st && found && walks && !settled(out) && hi < budget && above <= NEAR_MIN_RUNGS_UP_TO &&
            (!out->plan || out->plan->flops_executed > memo.lower_bound * (1 + NEAR_MIN_RUNG_GAP)))
            st = near_min_rungs(pr, hi, from, budget, &keep, every_rung ? -1 : NEAR_MIN_RUNG_ONE, &memo, &out->plan,
                                d);
        if (!st && cheap && out->plan && cheap->flops_executed < out->plan->flops_executed && !settled(out) &&
            !mg_far_above_min(hi, budget)) {
            mg_plan_free(out->plan); /* (an optimal plan cannot be beaten; the test is for safety) */
            out->plan = cheap;
            cheap = NULL;
        }
        if (!st && !out->plan && searching &&
            ((found && hi <= budget) || (cheap && ms.pinned_hi >= 0 && ms.pinned_hi <= budget))) { /* the search's plan at the minimum */
            if (cheap) out->plan = cheap;
            else st = solve_at(pr, MG_SOLVER_STORE_ALL, INT64_MAX, &keep, &memo, NULL, &out->plan, &(int){0}, d);
            cheap = NULL;
        }
        mg_plan_free(cheap);
    }
    /* the plan's recomputations whose values can stay in the arena's holes are left out
     * (sched_refill.c): the same workspace, fewer FLOPs (not sqrt's baseline, nor a plan
     * already proven optimal) */
    double unfilled = out->plan ? out->plan->flops_executed : INFINITY;
    if (!st && out->plan && (solver == MG_SOLVER_AUTO || solver == MG_SOLVER_EXACT) && !settled(out))
        mg_plan_refill(out->plan, pr);
    /* last, the near misses of the solve at the budget that fit once compacted, refilled too
     * (mg_sv_rescue_near_misses). Not earlier: the walks and rungs above run or not by what the plan
     * costs. Nor judged before the refill: a compacted arena has fewer holes to refill, and
     * resnet18_64 at 1.07 times its minimum went 72.64 -> 83.02% (a rescued plan 0.3% cheaper
     * before the refill, 6% dearer after it). */
    if (!st && !settled(out)) mg_sv_rescue_near_misses(&nm, pr, budget, unfilled, &out->plan, d);
    /* in a step in parts, the solve again never dropping what is gathered from the parts
     * (solve_pinned), where the plan recomputes more than PINNED_GAP of a step */
    if (!st && searching && !settled(out))
        st = keep_pinned(pr, budget, memo.s.store_all, out->lower_bound, &pj, ceiling, &out->plan, d);
    if (!st && out->plan && out->optimal_in_class && out->plan->flops_executed < in_class)
        out->optimal = -1, out->optimal_in_class = 0; /* a cheaper plan outside the MILP's class */
    if (!st && out->plan && out->plan->flops_executed >= ceiling) { /* (not wanted) */
        mg_plan_free(out->plan);
        out->plan = NULL;
    }
    if (!st && out->plan && mg_plan_verify(out->plan, pr, d)) st = MG_ERR;
    /* a bound above a verified plan is a bound's mistake, not a proof (beyond the relaxed
     * program's rounding, below): nothing is claimed from it, and the user is told */
    if (!st && out->plan && out->lower_bound > out->plan->flops_executed * (1 + BOUND_ROUNDING)) {
        out->lower_bound = out->plan->flops_once;
        out->note = "a lower bound came out above this plan's cost, which is a mistake in memgrad's bounds "
                    "(please report it with the model): no bound or optimality is claimed";
    }
    if (!st && out->plan && out->plan->flops_executed == out->plan->flops_once)
        out->optimal = 1, out->optimal_in_class = 0; /* nothing recomputed: no plan executes fewer FLOPs */
    if (!st && out->plan && out->plan->flops_executed <= out->lower_bound)
        out->optimal = 1, out->optimal_in_class = 0; /* it recomputes only what the bound proves every plan must */
    if (!st && out->plan && out->optimal == 1 && !out->optimal_in_class) out->lower_bound = out->plan->flops_executed;
    if (!st && out->plan && out->lower_bound > out->plan->flops_executed)
        out->lower_bound = out->plan->flops_executed; /* rounding in the relaxed program's scaled sums */
done:
    memo_bound(&memo);
    mg_plan *unused = NULL;
    pinned_join(&pj, 0, &unused, &(mg_diag){0}); /* (not wanted, or the solve failed) */
    mg_plan_free(unused);
    if (threaded) { /* (the solve failed: the search's results are dropped) */
        if (pthread_join(th, NULL)) abort();
        if (ms.job.best != ms.job.cheap) mg_plan_free(ms.job.best);
        mg_plan_free(ms.job.cheap);
    }
    mg_sv_near_misses_free(&nm);
    mg_chain_free(memo.s.chain);
    mg_plan_free(sa);
    sqrt_sets_free(&keep);
    mg_place_cache_free(placed); /* (every thread that placed is joined) */
    if (st) {
        mg_plan_free(out->plan);
        out->plan = NULL;
    }
    return st;
}

mg_status mg_solve(const mg_problem *pr, mg_solver solver, int64_t budget, int want_min, double time_limit,
                   mg_solution *out, mg_diag *d)
{
    return solve_below(pr, solver, budget, want_min, 0, 0, INFINITY, time_limit, out, d);
}

mg_status mg_solve_from(const mg_problem *pr, mg_solver solver, int64_t budget, int want_min, double time_limit,
                        const mg_plan *incumbent, mg_solution *out, mg_diag *d)
{
    if (mg_solve(pr, solver, budget, want_min, time_limit, out, d)) return MG_ERR;
    if (!incumbent || (solver != MG_SOLVER_AUTO && solver != MG_SOLVER_EXACT) || settled(out) ||
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
    out->optimal = -1, out->optimal_in_class = 0; /* (a cheaper plan than one the MILP proved in its class) */
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
        double ceiling = rq->flops_ceiling > 0 ? rq->flops_ceiling : INFINITY;
        if ((st = solve_below(pt, rq->solver, budget, rq->want_min_feasible, below, 0, ceiling, rq->time_limit * 0.8,
                              &ts, d)))
            goto done;
        double left = rq->time_limit - (mg_seconds() - t1);
        /* the forward pass's minimum matters only above the training step's */
        if ((st = solve_below(pf, rq->solver, budget, rq->want_min_feasible, below, ts.min_feasible_bytes, INFINITY,
                              left > rq->time_limit * 0.2 ? left : rq->time_limit * 0.2, &fs, d)))
            goto done;
        /* compile's: where the training step's search was cut short (solve_below) and the
         * forward pass's plan may depend on its own search (it has none, or recomputes), that
         * search's floor was not the step's minimum, which can change what it finds: both again
         * with their whole searches, as `plan` runs them */
        if (rq->want_min_feasible == MG_MIN_AS_PLANNED && ts.min_cut_short &&
            !(fs.plan && fs.plan->flops_executed <= fs.plan->flops_once)) {
            mg_plan_free(ts.plan);
            mg_plan_free(fs.plan);
            ts.plan = fs.plan = NULL;
            if ((st = solve_below(pt, rq->solver, budget, MG_MIN_YES, below, 0, ceiling, rq->time_limit * 0.8, &ts,
                                  d)) ||
                (st = solve_below(pf, rq->solver, budget, MG_MIN_YES, below, ts.min_feasible_bytes, INFINITY,
                                  rq->time_limit * 0.2, &fs, d)))
                goto done;
        }
        /* a budget one function misses: the minimum is the larger of both functions' (the one
         * that met it did not search for its own unless asked; the solve is repeated with the
         * search, on this failing path only) */
        for (int f = 0; f < 2 && !rq->want_min_feasible && (!ts.plan || !fs.plan) && !(ceiling < INFINITY && !ts.plan);
             f++) {
            mg_solution *s = f ? &fs : &ts;
            if (!s->plan || s->min_feasible_bytes >= 0) continue;
            mg_solution again;
            if ((st = solve_below(f ? pf : pt, rq->solver, budget, 1, below, f ? ts.min_feasible_bytes : 0,
                                  f ? INFINITY : ceiling, rq->time_limit * 0.2, &again, d)))
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

