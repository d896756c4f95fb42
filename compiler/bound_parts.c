/* bound_parts.c — a lower bound for a training step in parts (microbatch.c), part by part.
 *
 * Why it exists: bound_step.c and bound_cut.c look at the whole step, and in many parts they
 * prove next to nothing: mlp_deep at its minimum in 32 parts recomputes 283.8% more than running
 * every op once, and they proved 0.02% (a 5,000-node graph, past bound_cut.c's 600 targets).
 * Yet each part alone is a deep chain planned in a few of its activations.
 *
 * The argument: take any schedule of the whole step within the budget and keep only the steps
 * of part c's values (mg_problem.part, from mg_node.micro_batch). What part c holds at a step is
 * at most what the whole holds, so those steps are a schedule of part c's own problem within the
 * budget — its values, its ops in the same order, with the values of other parts and of no part
 * (slices' sources, weights, the partial sums of earlier parts) taken as given: such an input
 * only lets a step run more freely, so the part's problem without it is a relaxation. The
 * parts' steps are disjoint, so the whole schedule recomputes at least the sum over the parts of
 * what their own bounds prove. Parts with the same problem (all but the first and last,
 * typically) are bounded once (mg_problem_hash). Nothing in it depends on what the parts are:
 * it holds for any labelling of the nodes (tests/test_optimal.c checks it so against the brute
 * force). */
#include "plan.h"

#include <stdlib.h>

double mg_parts_bound(const mg_problem *pr, int64_t budget)
{
    if (budget == INT64_MAX || !pr->part) return 0;
    int parts = mg_part_count(pr);
    if (parts < 2) return 0;
    int *map = malloc((size_t)pr->n * sizeof *map);
    uint64_t *seen = malloc((size_t)parts * sizeof *seen);
    double *seen_bound = malloc((size_t)parts * sizeof *seen_bound);
    if (!map || !seen || !seen_bound) abort();
    int nseen = 0;
    double sum = 0;
    for (int c = 0; c < parts; c++) {
        mg_problem *q = mg_part_problem(pr, c, map);
        if (!q) continue;
        uint64_t h = mg_problem_hash(q);
        int k = 0;
        while (k < nseen && seen[k] != h) k++;
        if (k == nseen) {
            double forced = mg_step_bound(q, budget), cut = mg_cut_bound(q, budget);
            seen[nseen] = h;
            seen_bound[nseen++] = forced > cut ? forced : cut;
        }
        sum += seen_bound[k];
        mg_problem_free(q);
    }
    free(map);
    free(seen);
    free(seen_bound);
    return sum;
}
