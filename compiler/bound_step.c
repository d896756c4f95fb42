/* bound_step.c — the lower bounds memgrad proves itself, step by step, for every solver: the
 * least workspace any schedule needs (the minimum search starts above it), and what any schedule
 * within a budget must recompute (auto stops searching where its plan meets the bound, and
 * `optimal` and `flops_lower_bound` rest on it). bound_cut.c gives a second bound, from windows
 * of steps; planner.c takes the larger. */
#include "plan.h"

#include <stdlib.h>

typedef struct sized {
    int64_t bytes;
    int v;
} sized;
static int by_bytes_desc(const void *a, const void *b)
{
    const sized *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes < y->bytes ? 1 : -1;
    return (x->v > y->v) - (x->v < y->v); /* ties by index: the order no longer depends on qsort */
}

/* A lower bound on what any schedule within budget recomputes. Targets run in order, so at
 * target t every value t reads and writes is resident, and so is every value that may not be
 * dropped and is still to be read (backward values of models, values kept to the end). A
 * droppable value v computed before t and read after it that does not fit beside them must be
 * absent at t, so it is computed again after t: its cost is paid twice. Each such v counts
 * once. */
double mg_step_bound(const mg_problem *pr, int64_t budget) { return mg_step_bound_in(pr, budget, NULL); }

double mg_step_bound_in(const mg_problem *pr, int64_t budget, const int *order)
{
    int n = pr->n;
    if (budget == INT64_MAX) return 0;
    int *pos = malloc(((size_t)n + 1) * sizeof *pos), *last = malloc(((size_t)n + 1) * sizeof *last);
    int *tg = malloc(((size_t)n + 1) * sizeof *tg);
    sized *cand = malloc(((size_t)n + 1) * sizeof *cand);
    char *forced = calloc((size_t)n + 1, 1);
    int64_t *delta = calloc((size_t)n + 2, sizeof *delta);
    if (!pos || !last || !forced || !tg || !cand || !delta) abort();
    int T = 0, nc = 0;
    for (int v = 0; v < n; v++) {
        pos[v] = order || !pr->target[v] ? -1 : T;
        if (pr->target[v]) tg[T++] = v;
        last[v] = -1;
    }
    for (int i = 0; order && i < T; i++) pos[tg[i] = order[i]] = i;
    for (int i = 0; i < T; i++)
        for (int k = pr->in_start[tg[i]]; k < pr->in_start[tg[i] + 1]; k++) last[pr->in[k]] = i;
    for (int v = 0; v < n; v++) {
        if (pos[v] < 0 || pr->home[v].mem != MG_MEM_NONE) continue;
        if (pr->keep_to_end[v]) last[v] = T;
        if (pr->evictable[v]) cand[nc++] = (sized){pr->bytes[v], v};
        else if (last[v] > pos[v] + 1) { /* live strictly between its step and its last read */
            delta[pos[v] + 1] += pr->bytes[v];
            delta[last[v]] -= pr->bytes[v];
        }
    }
    qsort(cand, (size_t)nc, sizeof *cand, by_bytes_desc);
    int64_t across = 0; /* values never dropped that are live across step i */
    for (int i = 0; i < T; i++) {
        across += delta[i];
        int t = tg[i];
        int64_t need = across + (pr->home[t].mem == MG_MEM_NONE ? pr->bytes[t] : 0) + pr->scratch[t];
        for (int k = pr->in_start[t]; k < pr->in_start[t + 1]; k++) {
            int u = pr->in[k], dup = 0;
            for (int j = pr->in_start[t]; j < k; j++) dup |= pr->in[j] == u;
            if (dup || pos[u] < 0 || pr->home[u].mem != MG_MEM_NONE) continue;
            if (pr->evictable[u] || !(pos[u] < i && last[u] > i)) need += pr->bytes[u]; /* else counted above */
        }
        for (int c = 0; c < nc && cand[c].bytes > budget - need; c++) {
            int v = cand[c].v, in = 0;
            if (forced[v] || pos[v] >= i || last[v] <= i) continue;
            for (int k = pr->in_start[t]; k < pr->in_start[t + 1]; k++) in |= pr->in[k] == v;
            if (!in) forced[v] = 1;
        }
    }
    double cost = 0;
    for (int v = 0; v < n; v++)
        if (forced[v]) cost += pr->cost[v];
    /* and at each step, the other droppable values live across it that do not fit beside what
     * it needs are absent too: at least the cheapest bytes (by cost per byte, fractionally) that
     * cover the excess are recomputed; the largest such figure over the steps adds to the
     * forced ones (distinct values, distinct recomputations). Quadratic: small problems only. */
    double extra = 0;
    double *ratio = malloc(((size_t)n + 1) * sizeof *ratio);
    int *item = malloc(((size_t)n + 1) * sizeof *item);
    if (!ratio || !item) abort();
    for (int i = 0; i < T && T <= 2000; i++) {
        int t = tg[i], ni = 0;
        int64_t need = 0, excess;
        for (int k = pr->in_start[t]; k < pr->in_start[t + 1]; k++) {
            int u = pr->in[k], dup = 0;
            for (int j = pr->in_start[t]; j < k; j++) dup |= pr->in[j] == u;
            if (!dup && pos[u] >= 0 && pr->home[u].mem == MG_MEM_NONE) need += pr->bytes[u];
        }
        need += (pr->home[t].mem == MG_MEM_NONE ? pr->bytes[t] : 0) + pr->scratch[t];
        for (int v = 0; v < n; v++) {
            if (pos[v] < 0 || pos[v] >= i || last[v] <= i || pr->home[v].mem != MG_MEM_NONE) continue;
            int in = 0;
            for (int k = pr->in_start[t]; k < pr->in_start[t + 1]; k++) in |= pr->in[k] == v;
            if (in) continue;
            need += pr->bytes[v]; /* everything live across t, were it all resident */
            if (pr->evictable[v] && !forced[v] && pr->bytes[v] > 0) item[ni++] = v;
            else if (forced[v]) need -= pr->bytes[v]; /* absent anyway */
        }
        excess = need - budget;
        if (excess <= 0) continue;
        for (int j = 0; j < ni; j++) ratio[item[j]] = pr->cost[item[j]] / (double)pr->bytes[item[j]];
        for (int j = 1; j < ni; j++) /* insertion sort by cost per byte (few items) */
            for (int q = j; q > 0 && ratio[item[q]] < ratio[item[q - 1]]; q--) {
                int tmp = item[q];
                item[q] = item[q - 1];
                item[q - 1] = tmp;
            }
        double c = 0;
        for (int j = 0; j < ni && excess > 0; j++) {
            int v = item[j];
            if (pr->bytes[v] <= excess) {
                c += pr->cost[v];
                excess -= pr->bytes[v];
            } else {
                c += pr->cost[v] * (double)excess / (double)pr->bytes[v];
                excess = 0;
            }
        }
        if (excess > 0) c = 0; /* nothing fits at all: the budget is infeasible, no bound needed */
        if (c > extra) extra = c;
    }
    cost += extra;
    free(ratio);
    free(item);
    free(pos);
    free(last);
    free(forced);
    free(tg);
    free(cand);
    free(delta);
    return cost;
}

/* No schedule can hold less than what one step needs at once: its operands in the workspace,
 * its output and its scratch. */
int64_t mg_working_set_bound(const mg_problem *pr)
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
