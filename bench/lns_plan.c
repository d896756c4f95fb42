/* lns_plan.c — does a cheaper plan than auto's exist? A research tool, not part of the planner:
 * takes auto's plan of a benchmark graph at a budget and runs a large neighbourhood search over
 * it, each move a window of target positions re-solved exactly by CBC (compiler/sched_lns.c),
 * the result placed in the arena and verified before it is kept. Prints each window's outcome,
 * the best cost found and, per node, how often the best plan computes it against auto's.
 *
 *   lns_plan GRAPH.json BUDGET_BYTES [--width K] [--stride S] [--from P] [--to P]
 *            [--window-time SECONDS] [--time SECONDS] [--passes N] [--quiet]
 *
 * Windows [a, a + K) for a = from, from + S, ... below to (target positions; default the whole
 * schedule), in passes until a pass keeps nothing, N passes or the time is up. Exit status 0
 * when the final plan fits the budget and passes the verifier. */
#include "clock.h"
#include "plan.h"
#include "read_file.h"
#include "sched_lns.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(void)
{
    fprintf(stderr, "usage: lns_plan GRAPH.json BUDGET_BYTES [--width K] [--stride S] [--from P] [--to P]\n"
                    "                [--window-time SECONDS] [--time SECONDS] [--passes N] [--free LO:HI] [--quiet] [--check]\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 3) return usage();
    const char *file = argv[1];
    int64_t budget = strtoll(argv[2], NULL, 10);
    int64_t wcap = 0;
    int width = 12, stride = 0, from = 0, to = -1, passes = 3, quiet = 0, check = 0, flo = -1, fhi = -1;
    double wtime = 20, total = 600;
    for (int i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "--quiet")) quiet = 1;
        else if (!strcmp(argv[i], "--check")) check = 1;
        else if (i + 1 >= argc) return usage();
        else if (!strcmp(argv[i], "--width")) width = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--stride")) stride = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--from")) from = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--to")) to = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--window-time")) wtime = atof(argv[++i]);
        else if (!strcmp(argv[i], "--time")) total = atof(argv[++i]);
        else if (!strcmp(argv[i], "--passes")) passes = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--cap")) wcap = strtoll(argv[++i], NULL, 10); /* the windows' cap (default the budget) */
        else if (!strcmp(argv[i], "--free")) { /* LO:HI, node numbers */
            if (sscanf(argv[++i], "%d:%d", &flo, &fhi) != 2) return usage();
        }
        else return usage();
    }
    if (stride <= 0) stride = width / 2 > 0 ? width / 2 : 1;
    mg_diag d = {0};
    char *text = NULL;
    size_t len = 0;
    mg_problem *pr = NULL;
    if (mg_read_file(file, (size_t)1 << 28, &text, &len, &d) || mg_problem_from_json(file, text, len, &pr, &d)) {
        fprintf(stderr, "lns_plan: %s: %s\n", file, d.msg);
        return 1;
    }
    free(text);
    double t0 = mg_seconds();
    mg_solution sol = {0};
    if (mg_solve(pr, MG_SOLVER_AUTO, budget, 1, 0, &sol, &d) || !sol.plan) {
        fprintf(stderr, "lns_plan: auto found no plan: %s\n", d.msg);
        return 1;
    }
    mg_plan *best = sol.plan;
    double once = best->flops_once, auto_cost = best->flops_executed;
    printf("auto: %.0f executed, %.4f x once, workspace %lld, bound %.4f (%.2f s)\n", auto_cost, auto_cost / once,
           (long long)best->workspace_bytes, sol.lower_bound / once, mg_seconds() - t0);
    for (int s = 0; s < best->nsteps; s++)
        if (best->steps[s].kind != MG_STEP_COMPUTE) {
            fprintf(stderr, "lns_plan: the plan has copy or zero steps; not supported\n");
            return 1;
        }
    int ntg = 0;
    for (int v = 0; v < pr->n; v++) ntg += pr->target[v] != 0;
    if (to < 0 || to > ntg) to = ntg;
    int max_T = 8 * ntg + 64, T = best->nsteps;
    int *seq = malloc((size_t)max_T * sizeof *seq), *keep = malloc((size_t)max_T * sizeof *keep);
    int *first = calloc((size_t)pr->n, sizeof *first), *now = calloc((size_t)pr->n, sizeof *now);
    if (!seq || !keep || !first || !now) return 1;
    for (int s = 0; s < T; s++) seq[s] = best->steps[s].node;
    for (int s = 0; s < T; s++) first[seq[s]]++;
    char *free_vals = NULL;
    if (flo >= 0) {
        free_vals = calloc((size_t)pr->n + 1, 1);
        if (!free_vals) return 1;
        for (int v = flo; v < fhi && v < pr->n; v++) free_vals[v] = 1;
    }
    double start = mg_seconds();
    int kept_total = 0, windows = 0, proven = 0;
    for (int pass = 0; pass < passes && mg_seconds() - start < total; pass++) {
        int kept = 0;
        for (int a = from; a < to && mg_seconds() - start < total; a += stride) {
            int b = a + width < to ? a + width : to, keepT = T;
            memcpy(keep, seq, (size_t)T * sizeof *seq);
            double w0 = mg_seconds();
            mg_lns_window_result r;
            if (mg_lns_window(pr, seq, &T, max_T, a, b, wcap > 0 ? wcap : budget, wtime, check, free_vals, &r, &d)) {
                fprintf(stderr, "lns_plan: %s\n", d.msg);
                return 1;
            }
            windows++;
            proven += r.proven && !r.improved;
            const char *what = !r.solved ? "no answer (CBC failed or overran)" : r.improved ? "cheaper" : r.proven && r.new_cost > 0 ? "none cheaper (proven)" : r.proven ? "none cheaper (proven; CBC's cutoff ruled out the current window too)" : "none found";
            if (r.improved) { /* placed and verified, or undone */
                mg_plan *p = mg_pb_replay(pr, seq, T, NULL);
                int ok = p && !mg_arena_assign_within(p, budget, &d) && p->workspace_bytes <= budget &&
                         !mg_plan_verify(p, pr, &d);
                if (ok) {
                    mg_plan_free(best);
                    best = p;
                    kept++;
                    kept_total++;
                } else {
                    what = "cheaper, but it misses the budget once placed (undone)";
                    mg_plan_free(p);
                    memcpy(seq, keep, (size_t)keepT * sizeof *seq);
                    T = keepT;
                }
            }
            if (!quiet || r.improved)
                printf("window [%d, %d): %d vars, %d rows, %.1f s: %.0f -> %s (best found %.0f), plan %.0f (%.4f x once)\n", a,
                       b, r.vars, r.rows, mg_seconds() - w0, r.old_cost, what, r.new_cost, best->flops_executed,
                       best->flops_executed / once);
            fflush(stdout);
        }
        if (!kept) break;
    }
    int ok = !mg_plan_verify(best, pr, &d) && best->workspace_bytes <= budget;
    printf("best: %.0f executed, %.4f x once (auto %.4f), workspace %lld, %s; %d windows (%d proven none cheaper), "
           "%d kept, %.1f s\n",
           best->flops_executed, best->flops_executed / once, auto_cost / once, (long long)best->workspace_bytes,
           ok ? "verified" : "NOT VERIFIED", windows, proven, kept_total, mg_seconds() - start);
    for (int s = 0; s < best->nsteps; s++) now[best->steps[s].node]++;
    for (int v = 0; v < pr->n; v++)
        if (now[v] != first[v])
            printf("  %s: computed %d times (auto %d)\n", pr->names ? pr->names[v] : "?", now[v], first[v]);
    free(free_vals);
    free(seq);
    free(keep);
    free(first);
    free(now);
    mg_plan_free(best);
    mg_problem_free(pr);
    return ok ? 0 : 1;
}
