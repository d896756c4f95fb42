/* plan_split.c — planning with micro-batches: when no plan of the whole batch meets the budget,
 * or the one that does recomputes, the same planning on the micro-batched joint graphs
 * (microbatch.c), k = 2, 4, 8, ... parts.
 *
 * Why it exists: a store/recompute schedule cannot go below the bytes one backward op needs at
 * once; running the per-sample prefix in parts divides those bytes. The planner itself knows
 * nothing of it: each k is an ordinary graph planned by mg_plan_program. The cheapest plan
 * (FLOPs executed) that fits wins, fewer parts unless more are clearly cheaper: splitting costs
 * the slices and concatenations it adds, and smaller GEMMs. Percentages refer to the whole batch's store-all
 * workspace, and the minimum feasible budget is the least over k = 1, 2, 4, ... up to the first
 * k that does not lower it. More parts are tried while they lower it, up to split graphs of
 * MG_PARTS_AUTO_MAX_NODES nodes (MG_PARTS_UNMET_MAX_NODES where the whole batch misses the
 * budget; --max-split-ops), a bound on the planner's time only: the backend specialises each distinct step once (codegen.c's step
 * functions), so the k parts cost little more to compile than one (cnn_fmnist: 2.3 s whole,
 * 2.2 s in 8 parts of 189 nodes, 3.4 s in 32 parts of 677; unet_small in 4 parts of 588 nodes:
 * 4.7 s), and planning 128 parts of cnn_fmnist (2,629 nodes) takes under a second. */
#include "bn_lower.h"
#include "clock.h"
#include "microbatch.h"

#include <math.h>
#include <stdint.h>

enum { MAX_COUNTS = 64 };

/* The bytes one step of g's training step needs at once (mg_working_set_bound): no plan of g,
 * whatever its budget, has a smaller workspace. */
static int64_t step_floor(const mg_graph *g)
{
    mg_problem *pr = mg_problem_from_graph(g, MG_PLAN_TRAIN);
    int64_t b = mg_working_set_bound(pr);
    mg_problem_free(pr);
    return b;
}

/* The plans of g split into k parts under the absolute budget (INT64_MAX: none), within what
 * is left at `end` of rq's time limit (--time-limit bounds the whole solve, every part count
 * together: with nothing left, exact returns auto's plan); out->graph
 * stays NULL when the split graph has more than max_nodes nodes, or (*floored set) when
 * floored_from > 0 and one step of it needs at least floored_from bytes (step_floor): then no
 * plan of it is below floored_from, and nothing is planned. */
static mg_status plan_parts(const mg_graph *g, int k, int cap_convs, const mg_plan_request *rq, int64_t budget,
                            int max_nodes, int64_t floored_from, int *floored, double end, mg_planned *out,
                            mg_diag *d)
{
    *out = (mg_planned){0};
    if (floored) *floored = 0;
    mg_graph *gk;
    if (mg_split_graph(g, k, cap_convs, &gk, d)) return MG_ERR;
    if (gk->n > max_nodes) {
        out->parts_not_tried = k;
        out->parts_not_tried_ops = gk->n;
        out->parts_max_nodes = max_nodes;
        mg_graph_free(gk);
        return MG_OK;
    }
    if (floored_from > 0 && step_floor(gk) >= floored_from) {
        mg_graph_free(gk);
        *floored = 1;
        return MG_OK;
    }
    mg_budget b = {0, 0, budget};
    mg_plan_request r = *rq;
    r.budget = budget == INT64_MAX ? NULL : &b;
    double left = end - mg_seconds();
    r.time_limit = left > 0 ? left : 0;
    if (mg_plan_program(gk, &r, out, d)) {
        mg_graph_free(gk);
        return MG_ERR;
    }
    out->graph = gk;
    out->micro_batches = k;
    out->convs_uncapped = !cap_convs;
    return MG_OK;
}

/* The part count the search left out, its operations and the limit they passed, from one plan to
 * the one that replaces it. */
static void carry_not_tried(mg_planned *to, const mg_planned *from)
{
    to->parts_not_tried = from->parts_not_tried;
    to->parts_not_tried_ops = from->parts_not_tried_ops;
    to->parts_max_nodes = from->parts_max_nodes;
}

/* The most operations of a split graph the search over part counts plans by itself (plan.h), where
 * the whole batch meets the budget (unmet 0) or misses it. */
static int max_split_nodes(const mg_plan_request *rq, int unmet)
{
    int asked = rq->parts_max_nodes[unmet];
    return asked > 0 ? asked : unmet ? MG_PARTS_UNMET_MAX_NODES : MG_PARTS_AUTO_MAX_NODES;
}

/* A plan executing `flops` is worth more parts than b's: it executes fewer FLOPs by more than
 * CLEARLY (1%) of one step (FLOPs do not count what each part costs: its kernel calls, smaller
 * GEMMs). */
static const double CLEARLY = 0.01;
static int cheaper_than(double flops, const mg_planned *b)
{
    return !b->train || flops < b->train->flops_executed - CLEARLY * b->train->flops_once;
}

static int cheaper(const mg_planned *a, const mg_planned *b) { return cheaper_than(a->train->flops_executed, b); }

/* The minimum is wanted of the search (MG_MIN_AS_PLANNED: only to say why no plan meets the
 * budget). */
static int min_wanted(const mg_plan_request *rq, const mg_planned *out)
{
    return rq->want_min_feasible == MG_MIN_YES || (rq->want_min_feasible && !out->train);
}

/* A graph in parts gives its convolutions 1/k of their scratch (microbatch.c): that is what lets
 * the smallest budgets be met, but the smaller blocks run slower (cnn_fmnist at 50% in 4 parts:
 * 86 ms a step against 60 ms with the whole batch's blocks, for 0.4 MiB of an 18 MiB workspace).
 * So the chosen part count is planned once more with the convolutions' whole scratch, and that
 * plan is kept when it meets the budget and executes no more FLOPs (within 1% of one step, as
 * `cheaper` says) than the cheapest plan of the search: out's, or least (the FLOPs executed by
 * another part count's plan that out's was preferred to, within 1% too; INFINITY: none), as the
 * two allowances do not add up (unet_small at 36% of its store-all: 4 parts recompute nothing,
 * 2 parts 0.67%, chosen, and 2 parts with the whole scratch 1.17%, taken until 2026-12-07). The
 * figures stay those of the search (the minimum is the capped graphs', and the part count it
 * left out). */
static mg_status prefer_uncapped(const mg_graph *g, const mg_plan_request *rq, double end, double least,
                                 mg_planned *out, mg_diag *d)
{
    if (out->micro_batches < 2 || !out->train || out->convs_uncapped || !mg_microbatch_convs_capped(out->graph))
        return MG_OK;
    /* Not where the plan recomputes more than CLEARLY of a step: the same graph with more
     * scratch has never come within CLEARLY of it there, and its solve costs as much as the
     * first (resnet18_64 at 40/33/25/20% of its store-all: 1.90/4.61/11.88/23.00% recomputed,
     * with the whole scratch 2.99/7.45/25.11% and no plan; unet_small at 15 and 10% likewise;
     * the plans kept with it recompute at most 0.42% before it). resnet18_64's `plan` at 25%:
     * about a fifth of its CPU. */
    if (out->train->flops_executed > (1 + CLEARLY) * out->train->flops_once) return MG_OK;
    mg_plan_request r = *rq;
    r.want_min_feasible = 0;
    /* a minimum search runs only where no plan meets the budget, for a plan at the budget: none
     * below it is wanted (resnet18_64 in 16 parts at 1.02 times its minimum: 1.3 s searching
     * down to 6.36 MB, above the budget, for nothing) */
    r.min_feasible_below = out->budget_bytes < INT64_MAX ? out->budget_bytes + 1 : 0;
    mg_planned p;
    if (plan_parts(g, out->micro_batches, 0, &r, out->budget_bytes, INT32_MAX, 0, NULL, end, &p, d)) return MG_ERR;
    if (least > out->train->flops_executed) least = out->train->flops_executed;
    if (!p.train || cheaper_than(least, &p)) {
        mg_planned_free(&p);
        return MG_OK;
    }
    /* The bound and the claim are for the batch in these parts, both graphs of it: each graph's
     * own holds for its plans only, and the capped graph's plan may be the cheaper (a plan in 2
     * parts said optimal at 0.50% recomputed, its bound 0.50%, where the capped graph's plan
     * recomputed nothing). So the bound is the lesser of the two, and the plan is optimal where
     * it meets that, or where it is optimal in its graph and no dearer than the other's optimum. */
    double flops = p.train->flops_executed;
    if (out->flops_lower_bound < p.flops_lower_bound) p.flops_lower_bound = out->flops_lower_bound;
    int opt = p.optimal == 1 && out->optimal == 1 && flops <= out->train->flops_executed;
    p.optimal = opt || (p.flops_lower_bound >= 0 && flops <= p.flops_lower_bound) ? 1 : -1;
    p.store_all_bytes = out->store_all_bytes;
    p.budget_bytes = out->budget_bytes;
    p.min_feasible_bytes = out->min_feasible_bytes;
    carry_not_tried(&p, out);
    p.solve_seconds += out->solve_seconds;
    mg_planned_free(out);
    *out = p;
    return MG_OK;
}

/* prefer_uncapped; on an error out is freed and emptied, as mg_plan_split promises. */
static mg_status finish(const mg_graph *g, const mg_plan_request *rq, double end, double least, mg_planned *out,
                        mg_diag *d)
{
    if (!prefer_uncapped(g, rq, end, least, out, d)) return MG_OK;
    mg_planned_free(out);
    *out = (mg_planned){0};
    return MG_ERR;
}

mg_status mg_split_graph(const mg_graph *g, int k, int cap_convs, mg_graph **out, mg_diag *d)
{
    *out = NULL;
    mg_graph *gk = NULL, *lowered;
    if (k >= 2 && mg_microbatch_ex(g, k, cap_convs, &gk, d)) return MG_ERR;
    if (mg_bn_lower(gk ? gk : g, &lowered, d)) {
        mg_graph_free(gk);
        return MG_ERR;
    }
    if (lowered && lowered->n > MG_PLAN_MAX_NODES) { /* (more than the planner takes: the whole-batch ops) */
        mg_graph_free(lowered);
        lowered = NULL;
    }
    if (lowered) {
        mg_graph_free(gk);
        gk = lowered;
    }
    *out = gk;
    return MG_OK;
}

uint64_t mg_plan_split_cache_key(const mg_graph *g, const mg_plan_request *rq, int micro_batches)
{
    uint64_t key = mg_plan_cache_key(g, rq); /* the default (0) keeps mg_plan_cache_key's */
    return micro_batches ? key ^ (0x9e3779b97f4a7c15ULL * (uint64_t)micro_batches) : key;
}

/* The least minimum over the part counts k = 2, 4, ... below `parts` (powers of two, as the
 * search of mg_plan_split tries them), each searched only below the least so far, from minf (the
 * whole batch's; < 0: none) into *below (0: none). Only the minimum is sought: no budget. */
static mg_status least_below(const mg_graph *g, const mg_plan_request *rq, int parts, int64_t minf, double end,
                             int64_t *below, mg_diag *d)
{
    mg_diag why = {0};
    int ks[MAX_COUNTS], nk = mg_microbatch_counts(g, ks, MAX_COUNTS, &why);
    for (int i = 0; i < nk && ks[i] < parts; i++) {
        int k = ks[i], floored;
        if (k & (k - 1)) continue;
        mg_plan_request r = *rq;
        r.want_min_feasible = MG_MIN_YES; /* (compile's too: with no budget it would search nothing) */
        r.min_feasible_below = minf > 0 ? minf : 0;
        mg_planned p;
        if (plan_parts(g, k, 1, &r, INT64_MAX, max_split_nodes(rq, 0), r.min_feasible_below, &floored, end, &p, d))
            return MG_ERR;
        if (!p.graph && !floored) break; /* (as mg_plan_split: too many nodes) */
        if (p.min_feasible_bytes >= 0 && (minf < 0 || p.min_feasible_bytes < minf)) minf = p.min_feasible_bytes;
        mg_planned_free(&p);
    }
    *below = minf > 0 ? minf : 0;
    return MG_OK;
}

static mg_status plan_split(const mg_graph *g, const mg_plan_request *rq, int micro_batches, mg_planned *out, mg_diag *d)
{
    double end = mg_seconds() + rq->time_limit;
    *out = (mg_planned){0};
    if (micro_batches >= 2) { /* a count the batch cannot be split into, or into too many operations to
                                * plan (a 1,200-node model in 64 parts: 31 s, 550 MB), is refused before
                                * any planning */
        mg_graph *gk;
        if (mg_split_graph(g, micro_batches, 1, &gk, d)) return MG_ERR;
        int n = gk->n;
        mg_graph_free(gk);
        if (n > MG_PLAN_MAX_NODES)
            return mg_diag_set(d, (mg_loc){0}, "--micro-batches %d splits the training step into %d operations, more "
                               "than the %d the planner takes", micro_batches, n, MG_PLAN_MAX_NODES);
    }
    /* with --micro-batches k the whole batch's minimum and the fewer parts' (least_below) are
     * where k's search starts, searched whole for compile too: from elsewhere it can end higher
     * than the minimum `plan` reports, and compile then refused the budget `plan` met there
     * (resnet18_64 in 8 parts at 5,334,080 bytes: "the minimum ... is 5,649,472") */
    mg_plan_request first = *rq;
    if (micro_batches >= 2 && rq->want_min_feasible) first.want_min_feasible = MG_MIN_YES;
    mg_graph *whole_graph;
    if (mg_split_graph(g, 1, 1, &whole_graph, d)) return MG_ERR;
    mg_status st = mg_plan_program(whole_graph ? whole_graph : g, &first, out, d);
    if (st) {
        mg_graph_free(whole_graph);
        return st;
    }
    out->graph = whole_graph;
    out->micro_batches = 1;
    if (micro_batches == 1) return MG_OK;
    if (micro_batches >= 2) { /* exactly k parts: the whole batch's plan gave the figures */
        mg_planned whole = *out, p;
        mg_plan_request r = *rq;
        /* k's minimum search starts where the plain search (below) starts it, from the least
         * minimum of the fewer parts, so the k-part graph gets the same minimum either way (the
         * search is chaotic in its start: resnet18_64 in 16 parts, 4,990,016 bytes searched from
         * nothing, 4,922,432 from the 8 parts' 5,334,080, as `plan` found it); where it finds
         * nothing under that (more parts did not help), its own search from nothing */
        int floored = 0;
        if (rq->want_min_feasible && !(micro_batches & (micro_batches - 1)) &&
            least_below(g, rq, micro_batches, whole.min_feasible_bytes, end, &r.min_feasible_below, d)) {
            mg_planned_free(&whole);
            *out = (mg_planned){0};
            return MG_ERR;
        }
        for (int again = 0; again < 2; again++) {
            int64_t below = r.min_feasible_below;
            if (plan_parts(g, micro_batches, 1, &r, whole.budget_bytes, INT32_MAX, below, &floored, end, &p, d)) {
                mg_planned_free(&whole);
                *out = (mg_planned){0};
                return MG_ERR;
            }
            /* (compile left the search out where the plan runs every op once: no search changes it) */
            int settled = rq->want_min_feasible == MG_MIN_AS_PLANNED && p.train &&
                          p.train->flops_executed <= p.train->flops_once;
            if (below <= 0 || settled || (!floored && p.min_feasible_bytes >= 0 && p.min_feasible_bytes < below))
                break;
            mg_planned_free(&p);
            r.min_feasible_below = 0;
        }
        p.store_all_bytes = whole.store_all_bytes;
        p.budget_bytes = whole.budget_bytes;
        p.solve_seconds += whole.solve_seconds;
        mg_planned_free(&whole);
        *out = p;
        return finish(g, rq, end, INFINITY, out, d);
    }
    /* parts are tried when no plan of the whole batch fits, or when it recomputes: running the
     * per-sample layers in parts lowers the peak, and with it what must be recomputed
     * (resnet18_64 at 50%: +8.8% whole, +0.15% in 4 parts; mlp_deep at 25%: +119% whole, +25% in
     * 4 parts; and the steps ran 15-22% faster in CPU time, docs/planner.md) */
    int recomputes = out->train && out->train->flops_executed > out->train->flops_once;
    if (out->train && !recomputes && rq->want_min_feasible != MG_MIN_YES) return MG_OK;
    mg_diag why = {0};
    int ks[MAX_COUNTS], nk = mg_microbatch_counts(g, ks, MAX_COUNTS, &why);
    if (nk == 0 && !out->train) out->unsplit = why;
    int64_t minf = out->min_feasible_bytes;
    /* selecting: more parts may still give a cheaper plan (the choice does not depend on
     * want_min_feasible). minimizing: the minimum is the
     * least over k = 1, 2, 4, ... up to the first k that does not lower it, whatever the budget
     * (each k's minimum search is independent of the budget, and a k tried only because it
     * might be cheaper does not lower it), so every budget names the same minimum (but where
     * the whole batch misses the budget and more part counts are planned, max_nodes) and the k
     * that reached it meets any budget at or above it. A k's search looks only below the
     * minimum so far (mg_plan_request.min_feasible_below): nothing else could lower it. */
    int selecting = !out->train || recomputes; /* a plan of the whole batch that runs every op once is kept */
    /* split graphs up to MG_PARTS_AUTO_MAX_NODES operations; where the whole batch misses the
     * budget, up to MG_PARTS_UNMET_MAX_NODES, as the budget would be refused otherwise (plan.h) */
    int max_nodes = max_split_nodes(rq, !out->train);
    int searching = rq->solver == MG_SOLVER_AUTO || rq->solver == MG_SOLVER_EXACT;
    int minimizing = 1, misses = 0;
    double least = out->train ? out->train->flops_executed : INFINITY; /* the cheapest plan selecting met */
    for (int i = 0; i < nk; i++) {
        int k = ks[i];
        if (k & (k - 1)) continue; /* powers of two */
        mg_planned p;
        mg_plan_request r = *rq;
        r.min_feasible_below = minf > 0 ? minf : 0;
        /* only the minimum is sought: no budget (the search does not depend on it), so the
         * store-all plan stands in for a plan at the budget that would be thrown away */
        int64_t budget = selecting ? out->budget_bytes : INT64_MAX;
        /* a plan of it is wanted only where cheaper than every plan met so far (least, at most
         * out's): one no cheaper than that is neither taken (`cheaper`: a plan taken over out
         * saves CLEARLY, and least is within CLEARLY of out) nor lowers least; so the solve fits
         * no schedule costing least or more (mg_plan_request.flops_ceiling) */
        if (selecting && out->train) r.flops_ceiling = least;
        /* a k one step of which needs the minimum so far cannot lower it: where no plan of it is
         * wanted either, it is not planned, and ends the search as it would have (unet_small in 8
         * parts: 8,388,608 bytes a step against 2,883,648 in 4; cnn_fmnist in 32) */
        int floored = 0;
        if (plan_parts(g, k, 1, &r, budget, max_nodes, !selecting && minf > 0 ? minf : 0, &floored, end, &p, d)) {
            mg_planned_free(out);
            *out = (mg_planned){0};
            return MG_ERR;
        }
        if (!p.graph) { /* too many nodes to plan in reasonable time, or floored */
            /* said where it was wanted: for the minimum, or for a plan that still recomputes more
             * than CLEARLY of a step, which is all more parts could save and still be taken (the
             * chain of 1,666 layers at 50%, 0.05% in 2 parts: compile's note said 4 parts "may
             * recompute less") */
            if ((minimizing && min_wanted(rq, out)) || !out->train ||
                out->train->flops_executed > (1 + CLEARLY) * out->train->flops_once)
                carry_not_tried(out, &p);
            break;
        }
        out->solve_seconds += p.solve_seconds;
        int64_t pmin = p.min_feasible_bytes;
        int lower = minimizing && pmin >= 0 && (minf < 0 || pmin < minf);
        if (lower) minf = pmin;
        else minimizing = 0;
        if (selecting && p.train && p.train->flops_executed < least) least = p.train->flops_executed;
        if (selecting && p.train && (!out->train || cheaper(&p, out))) { /* figures stay the whole batch's */
            p.store_all_bytes = out->store_all_bytes;
            p.budget_bytes = out->budget_bytes;
            p.solve_seconds = out->solve_seconds;
            mg_planned_free(out);
            *out = p;
            misses = 0;
        } else {
            /* more parts did not make it cheaper: the search stops there, or, where the plan still
             * recomputes more than CLEARLY of a step, after one more count (the plans do not get
             * cheaper steadily with the parts: resnet18_64 at 25% of its store-all executes
             * 16.98% more FLOPs than every op once in 4 parts, 17.94% in 8 and 15.86% in 16) */
            if (selecting && out->train &&
                (misses++ || out->train->flops_executed <= (1 + CLEARLY) * out->train->flops_once))
                selecting = 0;
            mg_planned_free(&p);
        }
        if (out->train && out->train->flops_executed <= out->train->flops_once) selecting = 0; /* none is cheaper */
        /* no plan, and no progress towards one; sqrt and store-all search for no minimum unless
         * it is asked for (mg_solve), so they go on through the part counts while none has a plan
         * (a build each): without the minimum they find the plan they find with it (mlp, sqrt
         * at 362,512 bytes: 4 parts, where this gave up after 2 when it depended on the minimum) */
        if (!out->train && !lower && searching) selecting = 0;
        if (!selecting && (!min_wanted(rq, out) || !minimizing)) break;
    }
    out->min_feasible_bytes = minf;
    return finish(g, rq, end, least, out, d);
}

mg_status mg_plan_split(const mg_graph *g, const mg_plan_request *rq, int micro_batches, mg_planned *out, mg_diag *d)
{
    if (plan_split(g, rq, micro_batches, out, d)) return MG_ERR;
    if (out->train) { /* the plan chosen: its capped kernels take larger blocks where it has room */
        mg_plan_widen_scratch(out->train, mg_planned_graph(out, g));
        mg_plan_widen_scratch(out->forward, mg_planned_graph(out, g));
    }
    return MG_OK;
}
