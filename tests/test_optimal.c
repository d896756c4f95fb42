/* test_optimal.c — the planner against an independent optimum. A brute-force reference here
 * searches every schedule of a small problem (Dijkstra over "which stage, which values are
 * resident"), knowing nothing of the planner's heuristics or of the MILP. On chains of uniform
 * and uneven widths, at budgets from store-all down to where nothing fits, `auto` must reach
 * that optimum and say so, and `exact` (the MILP) must reach it and say it is optimal; on small
 * random training-like DAGs `auto` must reach it and `exact` may never claim to beat it. */
#include "autodiff.h"
#include "frontend.h"
#include "plan.h"
#include "testutil.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the reference: Dijkstra over (next target, resident workspace values) ----------------
 * Before target t runs, any evictable value computed earlier may be recomputed (its inputs
 * resident) and any resident evictable value dropped, in any order; a step fits when the
 * resident bytes, its output and its scratch fit the cap. After the target runs, values no
 * later target reads and that cannot be recomputed are freed. The cost is the sum of the
 * costs of every step run. */

typedef struct ref {
    const mg_problem *pr;
    int T, W;
    int *tg, *pos, *bit;   /* stage -> target; node -> stage; node -> bit of its value (-1: none) */
    uint32_t *dead_after;  /* per stage: non-evictable values that no later stage reads */
    int64_t cap;
} ref;

typedef struct entry {
    uint64_t key;  /* (t << 32 | mask) + 1; 0 = empty */
    double dist;
    int done;
} entry;

typedef struct table {
    entry *e;
    size_t cap, n;
} table;

static entry *slot(table *h, uint64_t key)
{
    if (2 * (h->n + 1) > h->cap) {
        table g = {calloc(h->cap ? 2 * h->cap : 1 << 16, sizeof(entry)), h->cap ? 2 * h->cap : 1 << 16, 0};
        ck_assert_ptr_nonnull(g.e);
        for (size_t i = 0; i < h->cap; i++)
            if (h->e[i].key) *slot(&g, h->e[i].key) = h->e[i];
        g.n = h->n;
        free(h->e);
        *h = g;
    }
    size_t i = (size_t)(key * 0x9e3779b97f4a7c15ULL) & (h->cap - 1);
    while (h->e[i].key && h->e[i].key != key) i = (i + 1) & (h->cap - 1);
    if (!h->e[i].key) {
        h->e[i] = (entry){key, INFINITY, 0};
        h->n++;
    }
    return &h->e[i];
}

typedef struct heap {
    double *d;
    uint64_t *k;
    size_t n, cap;
} heap;

static void push(heap *q, double d, uint64_t k)
{
    if (q->n == q->cap) {
        q->cap = q->cap ? 2 * q->cap : 1024;
        q->d = realloc(q->d, q->cap * sizeof *q->d);
        q->k = realloc(q->k, q->cap * sizeof *q->k);
    }
    size_t i = q->n++;
    while (i && q->d[(i - 1) / 2] > d) {
        q->d[i] = q->d[(i - 1) / 2];
        q->k[i] = q->k[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    q->d[i] = d;
    q->k[i] = k;
}

static uint64_t pop(heap *q, double *d)
{
    uint64_t top = q->k[0];
    *d = q->d[0];
    double ld = q->d[--q->n];
    uint64_t lk = q->k[q->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= q->n) break;
        if (c + 1 < q->n && q->d[c + 1] < q->d[c]) c++;
        if (q->d[c] >= ld) break;
        q->d[i] = q->d[c];
        q->k[i] = q->k[c];
        i = c;
    }
    q->d[i] = ld;
    q->k[i] = lk;
    return top;
}

static int64_t mask_bytes(const ref *r, uint32_t mask)
{
    int64_t s = 0;
    for (int v = 0; v < r->pr->n; v++)
        if (r->bit[v] >= 0 && (mask >> r->bit[v] & 1)) s += r->pr->bytes[v];
    return s;
}

static int inputs_resident(const ref *r, int v, uint32_t mask)
{
    const mg_problem *pr = r->pr;
    for (int k = pr->in_start[v]; k < pr->in_start[v + 1]; k++) {
        int b = r->bit[pr->in[k]];
        if (b >= 0 && !(mask >> b & 1)) return 0;
    }
    return 1;
}

static void relax(table *h, heap *q, int t, uint32_t mask, double d)
{
    uint64_t key = ((uint64_t)t << 32 | mask) + 1;
    entry *e = slot(h, key);
    if (d < e->dist) {
        e->dist = d;
        push(q, d, key);
    }
}

/* The least cost of any schedule under cap, or INFINITY when none fits. */
static double reference_optimum(const mg_problem *pr, int64_t cap)
{
    ref r = {.pr = pr, .cap = cap};
    int n = pr->n;
    r.tg = calloc((size_t)n, sizeof *r.tg);
    r.pos = calloc((size_t)n, sizeof *r.pos);
    r.bit = calloc((size_t)n, sizeof *r.bit);
    for (int v = 0; v < n; v++) {
        r.pos[v] = -1;
        r.bit[v] = -1;
        if (!pr->target[v]) continue;
        r.pos[v] = r.T;
        r.tg[r.T++] = v;
        if (pr->home[v].mem == MG_MEM_NONE && pr->bytes[v] > 0) r.bit[v] = r.W++;
    }
    ck_assert_msg(r.W <= 30, "the reference handles at most 30 workspace values, not %d", r.W);
    r.dead_after = calloc((size_t)r.T, sizeof *r.dead_after);
    for (int t = 0; t < r.T; t++)
        for (int v = 0; v < n; v++) {
            if (r.bit[v] < 0 || pr->evictable[v] || pr->keep_to_end[v] || r.pos[v] > t) continue;
            int later = 0;
            for (int j = 0; j < n; j++)
                if (r.pos[j] > t)
                    for (int k = pr->in_start[j]; k < pr->in_start[j + 1]; k++) later |= pr->in[k] == v;
            if (!later) r.dead_after[t] |= 1u << r.bit[v];
        }
    table h = {0};
    heap q = {0};
    relax(&h, &q, 0, 0, 0);
    double best = INFINITY;
    while (q.n) {
        double d;
        uint64_t key = pop(&q, &d);
        entry *e = slot(&h, key);
        if (e->done || d > e->dist) continue;
        e->done = 1;
        int t = (int)((key - 1) >> 32);
        uint32_t mask = (uint32_t)(key - 1);
        if (t == r.T) {
            best = d;
            break;
        }
        int64_t live = mask_bytes(&r, mask);
        /* the stage's target */
        int v = r.tg[t];
        int64_t out = r.bit[v] >= 0 ? pr->bytes[v] : 0;
        if (inputs_resident(&r, v, mask) && live + out + pr->scratch[v] <= cap) {
            uint32_t m2 = mask | (r.bit[v] >= 0 ? 1u << r.bit[v] : 0);
            relax(&h, &q, t + 1, m2 & ~r.dead_after[t], d + pr->cost[v]);
        }
        for (int u = 0; u < n; u++) {
            int b = r.bit[u];
            if (b < 0 || !pr->evictable[u] || r.pos[u] >= t) continue;
            if (mask >> b & 1) {
                relax(&h, &q, t, mask & ~(1u << b), d); /* drop */
            } else if (inputs_resident(&r, u, mask) && live + pr->bytes[u] + pr->scratch[u] <= cap) {
                relax(&h, &q, t, mask | 1u << b, d + pr->cost[u]); /* recompute */
            }
        }
    }
    free(h.e);
    free(q.d);
    free(q.k);
    free(r.tg);
    free(r.pos);
    free(r.bit);
    free(r.dead_after);
    return best;
}

/* ---- models ------------------------------------------------------------------------------ */

static mg_graph *joint(const char *src)
{
    mg_graph *g = NULL;
    mg_diag d = {0};
    ck_assert_msg(mg_parse("chain.mg", src, strlen(src), &g, &d) == MG_OK && mg_autodiff(g, &d) == MG_OK,
                  "%d:%d: %s\n%s", d.loc.line, d.loc.col, d.msg, src);
    return g;
}

/* A chain of dense layers: widths[0] -> widths[1] -> ... with act between, mse at the end. */
static void chain_model(char *buf, size_t cap, const int *widths, int nw, const char *act)
{
    size_t o = 0;
    o += (size_t)snprintf(buf + o, cap - o, "model chain\ninput x: f32[16, %d]\ninput t: f32[16, %d]\nh = x\n", widths[0],
                          widths[nw - 1]);
    for (int i = 0; i + 1 < nw; i++) {
        o += (size_t)snprintf(buf + o, cap - o, "param w%d: f32[%d, %d] = xavier\n", i, widths[i], widths[i + 1]);
        if (i + 2 < nw) o += (size_t)snprintf(buf + o, cap - o, "h = %s(h @ w%d)\n", act, i);
        else o += (size_t)snprintf(buf + o, cap - o, "y = h @ w%d\n", i);
    }
    snprintf(buf + o, cap - o, "loss = mse(y, t)\nminimize loss\n");
}

/* Plans the training step of src at store-all and at budgets down to below the minimum: auto
 * and exact must both reach the reference optimum wherever one exists. */
static void check_against_reference(const char *src)
{
    mg_graph *g = joint(src);
    mg_problem *pr = mg_problem_from_graph(g, MG_PLAN_TRAIN);
    mg_diag d = {0};
    mg_solution sa;
    ck_assert_int_eq(mg_solve(pr, MG_SOLVER_STORE_ALL, INT64_MAX, 0, 0, &sa, &d), MG_OK);
    int64_t store_all = sa.store_all_bytes;
    mg_plan_free(sa.plan);
    int feasible_points = 0;
    for (int pct = 100; pct >= 40; pct -= 3) {
        int64_t budget = store_all * pct / 100;
        double opt = reference_optimum(pr, budget);
        mg_solution ex = {0}, au;
        int run_exact = pct % 12 == 4; /* the MILP on every fourth budget: it is the slow one */
        if (run_exact) ck_assert_int_eq(mg_solve(pr, MG_SOLVER_EXACT, budget, 0, 60, &ex, &d), MG_OK);
        ck_assert_int_eq(mg_solve(pr, MG_SOLVER_AUTO, budget, 0, 0, &au, &d), MG_OK);
        if (isinf(opt)) {
            ck_assert_msg(!ex.plan && !au.plan, "%d%%: a plan within a budget the reference proves infeasible\n%s", pct, src);
            continue;
        }
        feasible_points++;
        ck_assert_msg(ex.plan || !run_exact, "%d%%: exact finds no plan; the reference costs %.0f\n%s", pct, opt, src);
        if (run_exact) {
        ck_assert_msg(ex.plan->workspace_bytes <= budget, "%d%%: exact's workspace exceeds the budget", pct);
        ck_assert_msg(ex.plan->flops_executed == opt, "%d%%: exact costs %.0f, the reference optimum %.0f\n%s", pct,
                      ex.plan->flops_executed, opt, src);
        ck_assert_msg(ex.optimal == 1, "%d%%: exact does not say it is optimal\n%s", pct, src);
        ck_assert_msg(ex.lower_bound <= opt, "%d%%: exact's lower bound %.0f exceeds the optimum %.0f", pct,
                      ex.lower_bound, opt);
        /* the MILP on its own (mg_solve skips it when the search has settled the question) */
        mg_exact_result r;
        /* 150 s is ample: CBC proves these in seconds, unless ASan and a loaded machine slow it tenfold */
        ck_assert_int_eq(mg_solve_exact(pr, budget, 150, HUGE_VAL, &r, &d), MG_OK);
        ck_assert_msg(r.proven && r.plan, "%d%%: the MILP finds no proven optimum\n%s", pct, src);
        ck_assert_msg(r.plan->flops_executed == opt && r.lower_bound == opt,
                      "%d%%: the MILP costs %.0f (bound %.0f), the reference optimum %.0f\n%s", pct,
                      r.plan->flops_executed, r.lower_bound, opt, src);
        ck_assert_int_eq(mg_arena_assign(r.plan, &d), MG_OK);
        ck_assert_msg(mg_plan_verify(r.plan, pr, &d) == MG_OK, "%d%%: the MILP's plan: %s", pct, d.msg);
        ck_assert_msg(r.plan->peak_live_bytes <= budget, "%d%%: the MILP's plan peaks above its cap", pct);
        mg_plan_free(r.plan);
        }
        ck_assert_msg(au.plan, "%d%%: auto finds no plan; the reference costs %.0f\n%s", pct, opt, src);
        ck_assert_msg(au.plan->flops_executed == opt, "%d%%: auto costs %.0f, the reference optimum %.0f\n%s", pct,
                      au.plan->flops_executed, opt, src);
        ck_assert_msg(au.optimal == 1, "%d%%: auto reached the optimum but does not say so\n%s", pct, src);
        ck_assert_msg(au.lower_bound <= opt, "%d%%: auto's lower bound %.0f exceeds the optimum %.0f", pct, au.lower_bound,
                      opt);
        mg_plan_free(ex.plan);
        mg_plan_free(au.plan);
    }
    ck_assert_msg(feasible_points >= 3, "only %d budgets were feasible; the test would prove little\n%s",
                  feasible_points, src);
    mg_problem_free(pr);
    mg_graph_free(g);
}

START_TEST(test_uniform_chain)
{
    static const int w[] = {24, 24, 24, 24, 24};
    char src[2048];
    chain_model(src, sizeof src, w, 5, "tanh");
    check_against_reference(src);
}
END_TEST

START_TEST(test_uneven_chain)
{
    static const int w[] = {32, 96, 16, 128, 40, 8};
    char src[2048];
    chain_model(src, sizeof src, w, 6, "tanh");
    check_against_reference(src);
}
END_TEST

START_TEST(test_relu_chain)
{
    static const int w[] = {8, 64, 64, 200, 16};
    char src[2048];
    chain_model(src, sizeof src, w, 5, "relu");
    check_against_reference(src);
}
END_TEST

START_TEST(test_random_problems)
{
    uint64_t seed = 12345;
    int compared = 0, relaxed_hits = 0;
    for (int k = 0; k < (TU_SANITIZED ? 4 : 12); k++) {
        mg_problem *pr = tu_random_problem(&seed, 6 + k % 4, 5 + k % 3, 0);
        mg_diag d = {0};
        mg_solution sa;
        ck_assert_int_eq(mg_solve(pr, MG_SOLVER_STORE_ALL, INT64_MAX, 0, 0, &sa, &d), MG_OK);
        for (int pct = 90; pct >= 40; pct -= 10) {
            int64_t budget = sa.store_all_bytes * pct / 100;
            double opt = reference_optimum(pr, budget);
            mg_solution au, ex = {0};
            ck_assert_int_eq(mg_solve(pr, MG_SOLVER_AUTO, budget, 0, 0, &au, &d), MG_OK);
            mg_exact_result r = {0};
            if (pct == 70) ck_assert_int_eq(mg_solve_exact(pr, budget, 30, HUGE_VAL, &r, &d), MG_OK);
            ex.plan = r.plan;
            ex.lower_bound = r.lower_bound;
            if (isinf(opt)) {
                ck_assert_msg(!au.plan && !ex.plan, "problem %d at %d%%: a plan the reference proves impossible", k, pct);
                continue;
            }
            compared++;
            ck_assert_msg(au.plan && au.plan->flops_executed == opt, "problem %d at %d%%: auto %.0f, optimum %.0f", k,
                          pct, au.plan ? au.plan->flops_executed : -1.0, opt);
            ck_assert_msg(au.lower_bound <= opt, "problem %d at %d%%: lower bound %.0f above the optimum %.0f", k, pct,
                          au.lower_bound, opt);
            double relaxed;
            ck_assert_int_eq(mg_relaxed_bound(pr, budget, 20, &relaxed, &d), MG_OK);
            ck_assert_msg(relaxed <= opt, "problem %d at %d%%: relaxed bound %.3f above the optimum %.0f", k, pct,
                          relaxed, opt);
            relaxed_hits += relaxed > au.plan->flops_once;
            /* the MILP fixes the order of recomputations, so it may only do as well or worse */
            if (ex.plan)
                ck_assert_msg(ex.plan->flops_executed >= opt && ex.lower_bound <= ex.plan->flops_executed,
                              "problem %d at %d%%: exact %.0f (bound %.0f), optimum %.0f", k, pct,
                              ex.plan->flops_executed, ex.lower_bound, opt);
            mg_plan_free(au.plan);
            mg_plan_free(ex.plan);
        }
        mg_plan_free(sa.plan);
        mg_problem_free(pr);
    }
    ck_assert_msg(compared >= (TU_SANITIZED ? 10 : 20), "only %d feasible comparisons", compared);
    ck_assert_msg(relaxed_hits >= 5, "the relaxed bound was above every op once only %d times", relaxed_hits);
}
END_TEST

/* The relaxed program (solve_exact.c) and memgrad's own bound where a fractional price of a
 * step's excess is too low: leaf x; A = f(x) (640 bytes, cost 10), S = f(x) (128, cost 3),
 * c = f(x) (256, cost 1), d = f(c) (64, cost 1), y = f(A, S) (64, cost 1, read after the end).
 * Under a cap of 1024, at d's step A, S, c and d hold 64 bytes too many, so A or S is absent
 * there and recomputed: the optimum recomputes S (3). A fractional bound takes 64 of A's 640
 * bytes (1); the relaxed program, integral, takes S, and so does the cut bound, whose windows
 * are solved in integers (bound_cut.c's branch and bound). */
enum { X, A, S, C, D, Y, N };
static mg_problem *excess_problem(void)
{
    mg_problem *p = mg_problem_alloc(N, 6);
    static const int64_t bytes[N] = {0, 640, 128, 256, 64, 64};
    static const double cost[N] = {0, 10, 3, 1, 1, 1};
    int e = 0;
    for (int v = 0; v < N; v++) {
        p->in_start[v] = e;
        if (v == A || v == S || v == C) p->in[e++] = X;
        if (v == D) p->in[e++] = C;
        if (v == Y) {
            p->in[e++] = A;
            p->in[e++] = S;
        }
        p->target[v] = v != X;
        p->evictable[v] = v != X && v != Y;
        p->bytes[v] = bytes[v];
        p->cost[v] = cost[v];
    }
    p->in_start[N] = e;
    p->nfwd = N;
    p->keep_to_end[Y] = 1;
    return p;
}

START_TEST(test_relaxed_bound_tighter)
{
    mg_problem *p = excess_problem();
    int64_t cap = 1024;
    double once = 16, opt = reference_optimum(p, cap);
    ck_assert_msg(opt == once + 3, "the reference optimum is %.1f, not %.1f", opt, once + 3);
    mg_diag d = {0};
    mg_solution before; /* store-all does not fit: the solution carries memgrad's own bound alone */
    ck_assert_int_eq(mg_solve(p, MG_SOLVER_STORE_ALL, cap, 0, 0, &before, &d), MG_OK);
    ck_assert_ptr_null(before.plan);
    double relaxed;
    ck_assert_int_eq(mg_relaxed_bound(p, cap, 20, &relaxed, &d), MG_OK);
    ck_assert_msg(relaxed > once + 1.5 && relaxed <= opt && before.lower_bound == opt,
                  "memgrad's bound %.3f, the relaxed one %.3f, the optimum %.1f", before.lower_bound, relaxed, opt);
    mg_solution ex;
    ck_assert_int_eq(mg_solve(p, MG_SOLVER_EXACT, cap, 0, 20, &ex, &d), MG_OK);
    ck_assert_msg(ex.plan && ex.plan->flops_executed == opt && ex.lower_bound >= relaxed, "exact: %.1f (bound %.3f)",
                  ex.plan ? ex.plan->flops_executed : -1.0, ex.lower_bound);
    mg_plan_free(ex.plan);
    mg_problem_free(p);
}
END_TEST

/* Problems written out as tables: node 0 is a leaf, the others targets in order. */
typedef struct trow {
    int64_t bytes, scratch;
    double cost;
    int evictable, keep, in0, in1; /* inputs: -1 for none */
} trow;

static mg_problem *table_problem(const trow *t, int n)
{
    mg_problem *p = mg_problem_alloc(n, 2 * n);
    int e = 0;
    for (int v = 0; v < n; v++) {
        p->in_start[v] = e;
        if (v == 0) continue;
        if (t[v].in0 >= 0) p->in[e++] = t[v].in0;
        if (t[v].in1 >= 0) p->in[e++] = t[v].in1;
        p->target[v] = 1;
        p->bytes[v] = t[v].bytes;
        p->scratch[v] = t[v].scratch;
        p->cost[v] = t[v].cost;
        p->evictable[v] = t[v].evictable;
        p->keep_to_end[v] = t[v].keep;
    }
    p->in_start[n] = e;
    p->nfwd = n;
    return p;
}

/* Memory inside a gap (solve_exact.c). Under a cap of 1497 the optimum recomputes v3 before
 * v10 and v4 and v6 before v11 (16 + 4 + 31 = 51 over 286). Without counting memory between
 * targets the relaxed program recomputes v2 and then v4 = f(v3, v2) just before v11, for 34:
 * but v11's inputs v10 and v6 are held through that gap, so v4's step would hold v10, v6, v3,
 * v2 and v4, 192 + 256 + 256 + 448 + 448 = 1600 bytes. Counting them, the bound is the optimum. */
static const trow gap_rows[] = {
    {0, 0, 0, 0, 0, -1, -1},     {128, 0, 21, 1, 0, 0, -1},  {448, 0, 30, 1, 0, 1, -1}, {256, 0, 16, 1, 0, 2, -1},
    {448, 0, 4, 1, 0, 3, 2},     {64, 0, 34, 1, 0, 4, -1},   {256, 0, 31, 1, 0, 5, 2},  {64, 0, 45, 0, 0, 6, -1},
    {128, 0, 1, 0, 0, 7, 2},     {512, 0, 16, 0, 0, 8, 6},   {192, 0, 28, 0, 0, 9, 3},  {512, 0, 23, 0, 0, 10, 6},
    {64, 0, 37, 0, 1, 11, 4},
};

/* The relaxed bound of the table problem rows under cap: above above, at most the reference
 * optimum, which must be opt. */
static void check_relaxed(const trow *rows, int n, int64_t cap, double opt_expected, double above)
{
    mg_problem *p = table_problem(rows, n);
    double opt = reference_optimum(p, cap), relaxed;
    ck_assert_msg(opt == opt_expected, "the reference optimum is %.0f, not %.0f", opt, opt_expected);
    mg_diag d = {0};
    ck_assert_int_eq(mg_relaxed_bound(p, cap, 20, &relaxed, &d), MG_OK);
    ck_assert_msg(relaxed > above && relaxed <= opt, "the relaxed bound is %.3f, the optimum %.0f", relaxed, opt);
    mg_problem_free(p);
}

START_TEST(test_relaxed_gap_memory)
{
    /* 320 (286 + 34) without the memory inside gaps */
    check_relaxed(gap_rows, (int)(sizeof gap_rows / sizeof *gap_rows), 1497, 337, 336.5);
}
END_TEST

/* CBC's preprocessing proved 349 for the relaxed program of this problem at a cap of 1894,
 * though the program has a solution of 343, the optimum of every schedule (auto's plan
 * recomputes v6 and v7 before v13). The relaxed program runs without it. */
static const trow preprocess_rows[] = {
    {0, 0, 0, 0, 0, -1, -1},      {256, 0, 46, 1, 0, 0, -1},    {320, 0, 13, 1, 0, 1, -1},   {256, 0, 7, 1, 0, 2, -1},
    {320, 128, 34, 1, 0, 3, -1},  {448, 0, 12, 1, 0, 4, -1},    {320, 0, 25, 1, 0, 5, -1},   {320, 192, 6, 1, 0, 6, -1},
    {256, 128, 5, 1, 0, 7, 5},    {64, 0, 19, 1, 0, 8, 5},      {128, 64, 4, 0, 0, 9, -1},   {320, 0, 40, 0, 0, 10, 4},
    {384, 256, 25, 0, 0, 11, 8},  {192, 0, 39, 0, 0, 12, 7},    {512, 0, 2, 0, 0, 13, 5},    {448, 192, 7, 0, 0, 14, 9},
    {128, 0, 28, 0, 1, 15, 6},
};

START_TEST(test_relaxed_preprocess)
{
    check_relaxed(preprocess_rows, (int)(sizeof preprocess_rows / sizeof *preprocess_rows), 1894, 343, 312);
}
END_TEST

/* The brute-force optimum of p under cap and the relaxed bound, checked never above it; 0 when
 * no schedule fits cap. k and pct name the case in the message. */
static int relaxed_within_optimum(const mg_problem *p, int64_t cap, int k, int pct, double *opt, double *relaxed)
{
    mg_diag d = {0};
    *opt = reference_optimum(p, cap);
    if (isinf(*opt)) return 0;
    ck_assert_int_eq(mg_relaxed_bound(p, cap, 20, relaxed, &d), MG_OK);
    ck_assert_msg(*relaxed <= *opt, "problem %d at %d%%: relaxed bound %.3f above the optimum %.0f", k, pct, *relaxed,
                  *opt);
    return 1;
}

/* The store-all workspace of pr (every value kept), from the planner. */
static int64_t store_all_of(const mg_problem *pr)
{
    mg_diag d = {0};
    mg_solution sa;
    ck_assert_int_eq(mg_solve(pr, MG_SOLVER_STORE_ALL, INT64_MAX, 0, 0, &sa, &d), MG_OK);
    mg_plan_free(sa.plan);
    return sa.store_all_bytes;
}

/* Random problem k of test_relaxed_random_scratch's kind (seed advanced): kernel scratch, a leaf,
 * forward values reading one or two earlier ones and backward values reading the previous one
 * and a forward value; its cost of every op once and its store-all workspace. */
static mg_problem *random_scratch_problem(uint64_t *seed, int k, double *once, int64_t *store_all)
{
    int nfwd = 5 + k % 5, nbwd = 4 + k % 4, n = nfwd + nbwd + 1;
    trow t[20] = {{0, 0, 0, 0, 0, -1, -1}};
    for (int v = 1; v < n; v++) {
        *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
        uint64_t r = *seed >> 20;
        t[v] = (trow){64 * (int64_t)(1 + r / 11 % 8), r / 5003 % 4 == 0 ? 64 * (int64_t)(1 + r / 17 % 4) : 0,
                      (double)(1 + r / 101 % 50), v <= nfwd, v == n - 1, v - 1, -1};
        if (v <= nfwd && v > 2 && r % 3 == 0) t[v].in1 = (int)(r / 3 % (uint64_t)(v - 1));
        if (v > nfwd + 1) t[v].in1 = 1 + (int)(r / 7 % (uint64_t)nfwd);
    }
    mg_problem *p = table_problem(t, n);
    *once = 0;
    for (int v = 1; v < n; v++) *once += t[v].cost;
    *store_all = store_all_of(p);
    return p;
}

/* The relaxed program against the brute force on random problems with kernel scratch, a leaf,
 * forward values reading one or two earlier ones and backward values reading the previous one
 * and a forward value: never above the optimum. */
START_TEST(test_relaxed_random_scratch)
{
    uint64_t seed = 4242;
    int compared = 0, hits = 0;
    for (int k = 0; k < (TU_SANITIZED ? 6 : 16); k++) {
        double once;
        int64_t store_all;
        mg_problem *p = random_scratch_problem(&seed, k, &once, &store_all);
        for (int pct = 90; pct >= 45; pct -= 9) {
            int64_t cap = store_all * pct / 100;
            double opt, relaxed;
            if (!relaxed_within_optimum(p, cap, k, pct, &opt, &relaxed)) continue;
            compared++;
            hits += relaxed > once + 0.5;
        }
        mg_problem_free(p);
    }
    ck_assert_msg(compared >= (TU_SANITIZED ? 12 : 30) && hits >= (TU_SANITIZED ? 8 : 20),
                  "%d comparisons, %d above every op once", compared, hits);
}
END_TEST

/* Paths back to the inputs (solve_exact.c) on random dense-like problems: an expensive value
 * reading the previous layer and the leaf (a weight), then one or two cheap values on top of it
 * (bias, activation), and gradients reading the next gradient and a layer's values; the
 * relaxed program, path rows included, is never above the brute-force optimum, and mostly on
 * it. */
START_TEST(test_relaxed_paths_random)
{
    uint64_t seed = 777;
    int compared = 0, exact = 0;
    for (int k = 0; k < (TU_SANITIZED ? 3 : 8); k++) {
        trow t[24] = {{0, 0, 0, 0, 0, -1, -1}};
        int n = 1, layer[8], nl = 3 + k % 3;
        for (int l = 0; l < nl; l++) { /* z = x @ w (expensive), then 1-2 cheap values */
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            uint64_t r = seed >> 20;
            int64_t b = 64 * (int64_t)(1 + r % 4);
            t[n] = (trow){b, 0, (double)(20 + r / 7 % 30), 1, 0, n - 1, l ? 0 : -1};
            n++;
            for (int c = 0; c < 1 + (int)(r / 13 % 2); c++, n++) t[n] = (trow){b, 0, (double)(1 + r / 17 % 2), 1, 0, n - 1, -1};
            layer[l] = n - 1;
        }
        for (int l = nl - 1; l >= 0; l--, n++) /* gradient: the next one, the layer's output and input */
            t[n] = (trow){64, 0, (double)(5 + l), 0, l == 0, l == nl - 1 ? layer[l] : n - 1,
                          l ? layer[l - 1] : layer[l]};
        mg_problem *p = table_problem(t, n);
        double once = 0;
        for (int v = 1; v < n; v++) once += t[v].cost;
        mg_diag d = {0};
        mg_solution sa;
        ck_assert_int_eq(mg_solve(p, MG_SOLVER_STORE_ALL, INT64_MAX, 0, 0, &sa, &d), MG_OK);
        mg_plan_free(sa.plan);
        for (int pct = 90; pct >= 40; pct -= 10) {
            int64_t cap = sa.store_all_bytes * pct / 100;
            double opt, relaxed;
            if (!relaxed_within_optimum(p, cap, k, pct, &opt, &relaxed)) continue;
            compared++;
            exact += relaxed > opt - 0.01 && opt > once;
            /* with a cutoff at the cost of a schedule (auto's, or 10% above it, in turn): still
             * never above the optimum */
            mg_solution au;
            ck_assert_int_eq(mg_solve(p, MG_SOLVER_AUTO, cap, 0, 0, &au, &d), MG_OK);
            ck_assert_ptr_nonnull(au.plan);
            {
                int dear = pct / 10 % 2;
                double cut = au.plan->flops_executed * (dear ? 1.1 : 1), below;
                ck_assert_int_eq(mg_relaxed_bound_below(p, cap, 20, cut, &below, &d), MG_OK);
                ck_assert_msg(below <= opt,
                              "problem %d at %d%%: bound %.3f below a cutoff of %.1f, the optimum %.0f", k, pct, below,
                              cut, opt);
            }
            mg_plan_free(au.plan);
        }
        mg_problem_free(p);
    }
    ck_assert_msg(compared >= (TU_SANITIZED ? 8 : 15) && exact >= (TU_SANITIZED ? 4 : 8),
                  "%d comparisons, %d with recomputation at the optimum", compared, exact);
}
END_TEST

/* The relaxed program's linear relaxation alone (Clp, the bound proven from its row
 * multipliers, solve_exact.c), which mg_relaxed_bound_below uses on programs too large for
 * CBC's root: on random problems like test_relaxed_random_scratch's, never above the
 * brute-force optimum, and above every op once on most of them. */
START_TEST(test_relaxed_lp_random)
{
    uint64_t seed = 9001;
    int compared = 0, hits = 0;
    for (int k = 0; k < 8; k++) {
        double once;
        int64_t store_all;
        mg_problem *p = random_scratch_problem(&seed, k, &once, &store_all);
        mg_diag d = {0};
        for (int pct = 90; pct >= 50; pct -= 5) {
            int64_t cap = store_all * pct / 100;
            double opt = reference_optimum(p, cap), lp;
            if (isinf(opt)) continue;
            ck_assert_int_eq(mg_relaxed_lp_bound(p, cap, 20, &lp, &d), MG_OK);
            ck_assert_msg(lp >= once - 1e-6 && lp <= opt, "problem %d at %d%%: LP bound %.4f, optimum %.0f, once %.0f",
                          k, pct, lp, opt, once);
            compared++;
            hits += lp > once + 0.5;
        }
        mg_problem_free(p);
    }
    ck_assert_msg(compared >= 12 && hits >= 10, "%d comparisons, %d above every op once", compared, hits);
}
END_TEST

/* Random residual-like problem k (seed advanced): forward values reading the previous one and
 * often one further back, some kept from recomputation, gradients reading the previous gradient
 * and a forward value; its cost of every op once and its store-all workspace. */
static mg_problem *residual_problem(uint64_t *seed, int k, double *once, int64_t *store_all)
{
    int nfwd = 6 + k % 5, nbwd = 5 + k % 3, n = nfwd + nbwd + 1;
    trow t[20] = {{0, 0, 0, 0, 0, -1, -1}};
    *once = 0;
    for (int v = 1; v < n; v++) {
        *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
        uint64_t r = *seed >> 20;
        t[v] = (trow){64 * (int64_t)(1 + r / 11 % 6), r / 5003 % 5 == 0 ? 64 : 0, (double)(1 + r / 101 % 40),
                      v <= nfwd && r / 7 % 8 != 0, v == n - 1, v - 1, -1};
        if (v <= nfwd && v > 2 && r % 2 == 0) t[v].in1 = 1 + (int)(r / 3 % (uint64_t)(v - 2));
        if (v > nfwd) t[v].in1 = 1 + (int)(r / 13 % (uint64_t)nfwd);
        *once += t[v].cost;
    }
    mg_problem *p = table_problem(t, n);
    *store_all = store_all_of(p);
    return p;
}

/* The cut bound of p at pct% of its store-all workspace, checked against the brute force: never
 * above what the optimum recomputes (*opt; INFINITY where no schedule fits, and then 0). k: the
 * problem's number, for the message. */
static double checked_cut_bound(const mg_problem *p, int k, int pct, double once, int64_t store_all, double *opt)
{
    int64_t cap = store_all * pct / 100;
    *opt = reference_optimum(p, cap) - once;
    if (isinf(*opt)) return 0;
    double cut = mg_cut_bound(p, cap);
    ck_assert_msg(cut >= 0 && cut <= *opt + 1e-6, "problem %d at %d%%: cut bound %.3f, the optimum recomputes %.0f", k,
                  pct, cut, *opt);
    return cut;
}

/* The cut bound (bound_cut.c) against the brute force: random problems of
 * random_scratch_problem's kind, and residual-like ones (forward values reading the previous one
 * and often one further back, some kept from recomputation, gradients reading the previous
 * gradient and one or two forward values), at caps from 90% of store-all down to where nothing
 * fits, in steps of 3% (the windows solved in integers: a fixed value's bytes either fit or
 * not). Never above the optimum's recomputation, and above 0 on many. */
START_TEST(test_cut_bound_random)
{
    uint64_t seed = 31337;
    int compared = 0, hits = 0;
    for (int k = 0; k < 64; k++) {
        double once = 0;
        int64_t store_all;
        mg_problem *p;
        if (k % 2 == 0) {
            p = random_scratch_problem(&seed, k, &once, &store_all);
        } else {
            p = residual_problem(&seed, k, &once, &store_all);
        }
        for (int pct = 90; pct >= 30; pct -= 3) {
            double opt, cut = checked_cut_bound(p, k, pct, once, store_all, &opt);
            if (isinf(opt)) break;
            compared++;
            hits += cut > 0.5;
        }
        mg_problem_free(p);
    }
    ck_assert_msg(compared >= 300 && hits >= 250, "%d comparisons, %d with a bound above every op once", compared, hits);
}
END_TEST

/* Random problem k (seed advanced) shaped like batch_norm's backward in two parts: per part an
 * input slice and a convolution with kernel scratch, statistics over both, the applied values
 * and a loss; gradients of the applied values, which may not be dropped, each part's partial
 * sums (its gradient and its convolution), their total, and the second pass: each part's input
 * gradient from the total and its convolution, then from its gradient. The convolutions are read
 * in both passes with both gradients live between them, so a convolution rebuilt there needs its
 * scratch beside them (bound_cut.c, rebuilds_fit). Its cost of every op once and its store-all
 * workspace. */
static mg_problem *barrier_problem(uint64_t *seed, int k, double *once, int64_t *store_all)
{
    enum { X1 = 1, X2, C1, C2, S1, S2, A1, A2, L, G1, G2, M1, M2, Q, D1, D2, E1, E2, N };
    trow t[N] = {{0, 0, 0, 0, 0, -1, -1}};
    uint64_t r[N];
    for (int v = 1; v < N; v++) {
        *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
        r[v] = *seed >> 20;
    }
    int64_t big = 64 * (int64_t)(3 + k % 4);
    for (int c = 0; c < 2; c++) {
        t[X1 + c] = (trow){64, 0, 1, 1, 0, 0, -1};
        t[C1 + c] = (trow){big, 64 * (int64_t)(r[C1 + c] % 9), (double)(20 + r[C1 + c] / 11 % 30), 1, 0, X1 + c, -1};
        t[A1 + c] = (trow){big, 0, (double)(1 + r[A1 + c] % 3), 1, 0, C1 + c, S2};
        t[G1 + c] = (trow){big, 0, (double)(1 + r[G1 + c] % 5), 0, 0, c ? G1 : L, A1 + c};
        t[M1 + c] = (trow){64, 0, 2, 0, 0, G1 + c, C1 + c};
        t[D1 + c] = (trow){big, 0, 3, 0, 0, Q, C1 + c};
        t[E1 + c] = (trow){big, 0, 3, 0, c == 1, D1 + c, G1 + c};
    }
    t[S1] = (trow){64, 0, 2, 1, 0, C1, -1};
    t[S2] = (trow){64, 0, 2, 1, 0, S1, C2};
    t[L] = (trow){64, 0, 5, 0, 0, A1, A2};
    t[Q] = (trow){64, 0, 2, 0, 0, M1, M2};
    if (r[Q] % 2 == 0) t[E1].in1 = X1; /* (part 1's gradient read last by its partial sums) */
    mg_problem *p = table_problem(t, N);
    *once = 0;
    for (int v = 1; v < N; v++) *once += t[v].cost;
    *store_all = store_all_of(p);
    return p;
}

/* checked_cut_bound on `count` problems of gen from seed, at caps from 90% of store-all down
 * to where nothing fits (20% at least), in steps of 2%: n[0] comparisons, n[1] of them with a
 * bound above every op once, n[2] at the optimum; *met: whether problem k0 at pct0 was. */
static void cut_bound_sweep(mg_problem *(*gen)(uint64_t *, int, double *, int64_t *), uint64_t seed, int count,
                            int n[3], int k0, int pct0, int *met)
{
    n[0] = n[1] = n[2] = 0;
    for (int k = 0; k < count; k++) {
        double once = 0;
        int64_t store_all;
        mg_problem *p = gen(&seed, k, &once, &store_all);
        for (int pct = 90; pct >= 20; pct -= 2) {
            double opt, cut = checked_cut_bound(p, k, pct, once, store_all, &opt);
            if (isinf(opt)) break;
            n[0]++;
            n[1] += cut > 0.5;
            n[2] += cut >= opt - 1e-6;
            if (k == k0 && pct == pct0) *met = cut >= opt - 1e-6;
        }
        mg_problem_free(p);
    }
}

/* The cut bound against the brute force on barrier_problem's steps, at caps from 90% of
 * store-all down to where nothing fits, in steps of 2%: never above the optimum's recomputation,
 * above 0 on most, and equal to it on a third. Where a rebuild's own step forces another
 * rebuild, the windows' rows at their step alone fall short: problem 11 at 90%, 34 where the
 * optimum recomputes 37 (107 comparisons: the bound rose on 23 with the rebuilds' rows, and met
 * the optimum on 36 rather than 33). */
START_TEST(test_cut_bound_rebuilds)
{
    int n[3], met = 0;
    cut_bound_sweep(barrier_problem, 4242, 48, n, 11, 90, &met);
    ck_assert_msg(met, "problem 11 at 90%%: the cut bound is below the optimum");
    ck_assert_msg(n[0] >= 100 && n[1] >= 50 && n[2] >= 36,
                  "%d comparisons, %d with a bound above every op once, %d at the optimum", n[0], n[1], n[2]);
}
END_TEST

/* Random problem k (seed advanced): a step in three parts that are copies of one another, as
 * micro-batching makes them. Per part an input slice x, a large value h = f(x) and y = f(h);
 * L1 = f(y1, y2) and L = f(L1, y3) of no part; a gradient G = f(L); per part g = f(G, h) and
 * d = f(g, x), which may not be dropped (the last d kept to the end). At G's step the parts'
 * h and x are read later, and swapping any two parts maps what the bound sees there onto
 * itself (bound_cut.c, sym_runs); in every fourth problem part 3's h costs one more, so only
 * parts 1 and 2 swap. Its cost of every op once and its store-all workspace. */
static mg_problem *sym_problem(uint64_t *seed, int k, double *once, int64_t *store_all)
{
    enum { X = 1, L1 = 10, L, G, D = 13, N = 19 };
    trow t[N] = {{0, 0, 0, 0, 0, -1, -1}};
    uint64_t r[6];
    for (int q = 0; q < 6; q++) {
        *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
        r[q] = *seed >> 20;
    }
    for (int c = 0; c < 3; c++) {
        int x = X + 3 * c;
        t[x] = (trow){64 * (int64_t)(1 + r[0] % 3), 0, (double)(1 + r[0] / 3 % 5), 1, 0, 0, -1};
        t[x + 1] = (trow){64 * (int64_t)(3 + r[1] % 6), 64 * (int64_t)(r[1] / 7 % 3), (double)(10 + r[1] / 21 % 40), 1,
                          0, x, -1};
        if (c == 2 && k % 4 == 3) t[x + 1].cost += 1;
        t[x + 2] = (trow){64 * (int64_t)(1 + r[2] % 3), 0, (double)(1 + r[2] / 3 % 5), 1, 0, x + 1, -1};
        t[D + 2 * c] = (trow){64, 0, (double)(1 + r[3] % 4), 0, 0, G, x + 1};
        t[D + 2 * c + 1] = (trow){64 * (int64_t)(1 + r[4] % 2), 0, 2, 0, c == 2, D + 2 * c, x};
    }
    t[L1] = (trow){64, 0, 3, 1, 0, X + 2, X + 5};
    t[L] = (trow){64, 0, 3, 1, 0, L1, X + 8};
    t[G] = (trow){64 * (int64_t)(2 + r[5] % 5), 0, 4, 0, 0, L, -1};
    mg_problem *p = table_problem(t, N);
    p->part = calloc(N, sizeof *p->part);
    ck_assert(p->part != NULL);
    for (int c = 0; c < 3; c++) {
        for (int q = 0; q < 3; q++) p->part[X + 3 * c + q] = c + 1;
        p->part[D + 2 * c] = p->part[D + 2 * c + 1] = c + 1;
    }
    *once = 0;
    for (int v = 1; v < N; v++) *once += t[v].cost;
    *store_all = store_all_of(p);
    return p;
}

/* The cut bound against the brute force on sym_problem's steps in three parts, at caps from 90%
 * of store-all down to where nothing fits, in steps of 2%: never above the optimum's
 * recomputation, whichever parts the windows find that swap (977 comparisons, 406 at the
 * optimum). Problem 28 at 56% found a window whose figure 0 came out 2e-16 and was rounded up
 * to 1: the bound 99 where the optimum recomputes 98. */
START_TEST(test_cut_bound_symmetric_random)
{
    int n[3];
    cut_bound_sweep(sym_problem, 8080, 40, n, -1, 0, NULL);
    ck_assert_msg(n[0] >= 900 && n[1] >= 900 && n[2] >= 350,
                  "%d comparisons, %d with a bound above every op once, %d at the optimum", n[0], n[1], n[2]);
}
END_TEST

/* Sixteen parts' equal values: per part c an input slice x_c (64 bytes, cost 1) and
 * h_c = f(x_c) (640 bytes, cost 100); statistics s_c = f(s_c-1, h_c) (64 bytes); a gradient
 * G = f(s_16) of 8,192 bytes that may not be dropped; per part g_c = f(G, h_c) (64 bytes, kept
 * to the end). Under a cap of 11,136 bytes, at g_1's step 2,240 bytes are left beside G, h_1 and
 * g_1, and h_2 .. h_16 and their slices are read later: at best three h and five x stay, so
 * twelve h are recomputed after it, seven of them with their x (1,207). Priced by the byte the
 * window proves 11.5 h; in integers, branching on each h, 2^15 ways to choose the h kept, of
 * which 100 nodes proved 1,160. The parts swap, so branching on how many are kept proves 1,207. */
START_TEST(test_cut_bound_symmetric_parts)
{
    enum { P = 16, N = 1 + 4 * P + 1 };
    trow t[N] = {{0, 0, 0, 0, 0, -1, -1}};
    int s = 1 + 2 * P, g = s + P, gr = g + 1;
    for (int c = 0; c < P; c++) {
        t[1 + 2 * c] = (trow){64, 0, 1, 1, 0, 0, -1};
        t[2 + 2 * c] = (trow){640, 0, 100, 1, 0, 1 + 2 * c, -1};
        t[s + c] = (trow){64, 0, 1, 1, 0, c ? s + c - 1 : 2, c ? 2 + 2 * c : -1};
        t[gr + c] = (trow){64, 0, 1, 0, 1, g, 2 + 2 * c};
    }
    t[g] = (trow){8192, 0, 1, 0, 0, s + P - 1, -1};
    mg_problem *p = table_problem(t, N);
    p->part = calloc(N, sizeof *p->part);
    ck_assert(p->part != NULL);
    for (int c = 0; c < P; c++) p->part[1 + 2 * c] = p->part[2 + 2 * c] = p->part[s + c] = p->part[gr + c] = c + 1;
    double once = 0;
    for (int v = 1; v < N; v++) once += t[v].cost;
    int64_t budget = 11136;
    double cut = mg_cut_bound(p, budget);
    mg_diag d = {0};
    mg_solution au;
    ck_assert_int_eq(mg_solve(p, MG_SOLVER_AUTO, budget, 0, 0, &au, &d), MG_OK);
    ck_assert_ptr_nonnull(au.plan);
    ck_assert_msg(cut >= 1207 - 1e-6 && once + cut <= au.plan->flops_executed,
                  "cut bound %.3f, auto's plan recomputes %.0f", cut, au.plan->flops_executed - once);
    mg_plan_free(au.plan);
    mg_problem_free(p);
}
END_TEST

/* A random step in two parts, as micro-batching makes them: a shared leaf, then the forward
 * values of part 1 and of part 2 (each reading the previous one and often one further back, some
 * kept from recomputation), then the gradients of part 1 and of part 2 (each reading the
 * previous gradient and a forward value of its part, the last kept to the end); the parts
 * labelled 1 and 2, the leaf 0. Its cost of every op once and its store-all workspace. */
static mg_problem *two_part_problem(uint64_t *seed, int k, double *once, int64_t *store_all)
{
    int nf = 3 + k % 3, nb = 3 + k % 2, n = 1 + 2 * (nf + nb);
    trow base[12], t[24] = {{0, 0, 0, 0, 0, -1, -1}};
    for (int v = 1; v <= nf + nb; v++) {
        *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
        uint64_t r = *seed >> 20;
        base[v] = (trow){64 * (int64_t)(1 + r / 11 % 6), r / 5003 % 5 == 0 ? 64 : 0, (double)(1 + r / 101 % 40),
                         v <= nf && r / 7 % 8 != 0, v == nf + nb, v - 1, -1};
        if (v <= nf && v > 2 && r % 2 == 0) base[v].in1 = 1 + (int)(r / 3 % (uint64_t)(v - 2));
        if (v > nf) base[v].in1 = 1 + (int)(r / 13 % (uint64_t)nf);
    }
    int id[2][12] = {{0}};
    for (int c = 0; c < 2; c++)
        for (int v = 1; v <= nf + nb; v++) id[c][v] = v <= nf ? 1 + c * nf + (v - 1) : 1 + 2 * nf + c * nb + (v - nf - 1);
    *once = 0;
    for (int c = 0; c < 2; c++)
        for (int v = 1; v <= nf + nb; v++) {
            trow r = base[v];
            r.in0 = r.in0 >= 0 ? id[c][r.in0] : -1;
            r.in1 = r.in1 >= 0 ? id[c][r.in1] : -1;
            t[id[c][v]] = r;
            *once += r.cost;
        }
    mg_problem *p = table_problem(t, n);
    p->part = calloc((size_t)n, sizeof *p->part);
    ck_assert(p->part != NULL);
    for (int c = 0; c < 2; c++)
        for (int v = 1; v <= nf + nb; v++) p->part[id[c][v]] = c + 1;
    *store_all = store_all_of(p);
    return p;
}

/* exact is never dearer than auto, even where the MILP proves its plan optimal in its class
 * (recomputations in graph order): auto's steps after its solve at the budget may still find a
 * cheaper plan outside that class (here, the parts run one after the other). two_part_problem's
 * first step from seed 1 at 60% of its store-all: exact returned 326 marked optimal where auto's
 * plan executes 296, and at 54% 348 against 318. A plan said optimal outright costs no more than
 * the brute force's in the graph's order. */
START_TEST(test_exact_not_dearer_than_auto)
{
    uint64_t seed = 1;
    double once = 0;
    int64_t store_all;
    mg_problem *p = two_part_problem(&seed, 0, &once, &store_all);
    for (int pct = 90; pct >= 30; pct -= 6) {
        int64_t cap = store_all * pct / 100;
        double opt = reference_optimum(p, cap);
        mg_diag d = {0};
        mg_solution au, ex;
        ck_assert_int_eq(mg_solve(p, MG_SOLVER_AUTO, cap, 0, 0, &au, &d), MG_OK);
        ck_assert_int_eq(mg_solve(p, MG_SOLVER_EXACT, cap, 0, 5, &ex, &d), MG_OK);
        if (!au.plan) { /* (the parts in other orders may fit where the graph's order does not) */
            ck_assert(isinf(opt));
            mg_plan_free(ex.plan);
            continue;
        }
        ck_assert(ex.plan != NULL);
        ck_assert_msg(ex.plan->flops_executed <= au.plan->flops_executed &&
                          (ex.optimal != 1 || ex.optimal_in_class || ex.plan->flops_executed <= opt),
                      "at %d%%: exact %.0f (optimal %d, in its class %d), auto %.0f, the optimum %.0f", pct,
                      ex.plan->flops_executed, ex.optimal, ex.optimal_in_class, au.plan->flops_executed, opt);
        mg_plan_free(au.plan);
        mg_plan_free(ex.plan);
    }
    mg_problem_free(p);
}
END_TEST

/* The bound of a step in parts (bound_parts.c) against the brute force, on random steps in two
 * parts, at caps from 90% of store-all down to where nothing fits: never above the optimum's
 * recomputation, and above 0 on many. Its argument holds for any labelling of the nodes: the
 * problems of test_cut_bound_random labelled at random (among none and parts 1-3) too. */
START_TEST(test_parts_bound_random)
{
    uint64_t seed = 2718;
    int compared = 0, hits = 0;
    for (int k = 0; k < 64; k++) {
        double once = 0;
        int64_t store_all;
        mg_problem *p;
        if (k % 4 == 3) {
            p = k % 8 == 3 ? residual_problem(&seed, k, &once, &store_all)
                           : random_scratch_problem(&seed, k, &once, &store_all);
            p->part = calloc((size_t)p->n, sizeof *p->part);
            ck_assert(p->part != NULL);
            for (int v = 0; v < p->n; v++) {
                seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
                p->part[v] = (int)(seed >> 33) % 4;
            }
        } else {
            p = two_part_problem(&seed, k, &once, &store_all);
        }
        for (int pct = 90; pct >= 20; pct -= 3) {
            int64_t cap = store_all * pct / 100;
            double opt = reference_optimum(p, cap);
            if (isinf(opt)) break;
            double parts = mg_parts_bound(p, cap);
            ck_assert_msg(parts >= 0 && once + parts <= opt + 1e-6,
                          "problem %d at %d%%: parts' bound %.3f + %.0f, optimum %.0f", k, pct, parts, once, opt);
            compared++;
            hits += parts > 0.5;
        }
        mg_problem_free(p);
    }
    ck_assert_msg(compared >= 400 && hits >= 25, "%d comparisons, %d with a bound above every op once", compared, hits);
}
END_TEST

/* The cut bound's windows in integers: leaf x0; v1 = f(x0) (64 bytes, kept to the end),
 * b1 = f(v1) and b2 = f(v1) (384 each, cost 10), h = f(v1) (640), g1 = f(h, v1),
 * g2 = f(g1, b1), g3 = f(g2, b2) (64 each, g3 to the end; all but b1 and b2 kept from
 * recomputation). Under a cap of 1164, at h's step 460 bytes are
 * left beside h and v1: b1 or b2 fits, not both, so one is recomputed (10). Priced by the byte,
 * the 308 bytes too many cost 308 / 384 of 10 (8.02): only the integer windows prove the
 * optimum, and with it auto's plan optimal. Some costs fractional (the windows are not rounded
 * up then): the same bound within 1e-6 (the multipliers are bisected). */
static const trow two_fit_rows[] = {
    {0, 0, 0, 0, 0, -1, -1},   {64, 0, 1, 0, 1, 0, -1},  {384, 0, 10, 1, 0, 1, -1}, {384, 0, 10, 1, 0, 1, -1},
    {640, 0, 1, 0, 0, 1, -1},  {64, 0, 1, 0, 0, 4, 1},   {64, 0, 1, 0, 0, 5, 2},    {64, 0, 1, 0, 1, 6, 3},
};

START_TEST(test_cut_bound_integral)
{
    for (int frac = 0; frac < 2; frac++) {
        mg_problem *p = table_problem(two_fit_rows, 8);
        if (frac) p->cost[1] = 1.5;
        double once = frac ? 25.5 : 25, opt = reference_optimum(p, 1164);
        ck_assert_msg(opt == once + 10, "the reference optimum is %.1f, not %.1f", opt, once + 10);
        double cut = mg_cut_bound(p, 1164);
        ck_assert_msg(cut <= 10 && cut >= 10 * (1 - 1e-6) && (frac || cut == 10), "cut bound %.9f, not 10", cut);
        mg_diag d = {0};
        mg_solution au;
        ck_assert_int_eq(mg_solve(p, MG_SOLVER_AUTO, 1164, 0, 0, &au, &d), MG_OK);
        ck_assert_msg(au.plan && au.plan->flops_executed == opt && au.lower_bound <= opt &&
                          au.lower_bound >= opt - 1e-5 && (frac || au.optimal == 1),
                      "auto: %.1f (bound %.9f, optimal %d), optimum %.1f", au.plan ? au.plan->flops_executed : -1.0,
                      au.lower_bound, au.optimal, opt);
        mg_plan_free(au.plan);
        mg_problem_free(p);
    }
}
END_TEST

/* The path rows make the relaxed program's linear relaxation strong where cheap values sit
 * between expensive ones (relu(h @ w + b)): CBC then proves auto's plan optimal at the root,
 * within a few seconds; without them it did not within a 30 s run (bound 15.75% against auto's
 * 15.79%). */
START_TEST(test_relaxed_paths_prove)
{
    static const char *src = "model m1\ninput x: f32[32, 64]\ninput y: i32[32]\n"
                             "param w_in: f32[64, 128] = he\nparam b_in: f32[128] = zeros\n"
                             "h = relu(x @ w_in + b_in)\nrepeat 7 {\n  param w: f32[128, 128] = he\n"
                             "  param b: f32[128] = zeros\n  h = relu(h @ w + b)\n}\n"
                             "param w_out: f32[128, 10] = he\nparam b_out: f32[10] = zeros\n"
                             "logits = h @ w_out + b_out\nloss = cross_entropy(logits, y)\nminimize loss\n";
    mg_graph *g = joint(src);
    mg_problem *pr = mg_problem_from_graph(g, MG_PLAN_TRAIN);
    mg_diag d = {0};
    mg_solution sa, au, ex;
    ck_assert_int_eq(mg_solve(pr, MG_SOLVER_STORE_ALL, INT64_MAX, 0, 0, &sa, &d), MG_OK);
    int64_t budget = sa.store_all_bytes * 3 / 4;
    ck_assert_int_eq(mg_solve(pr, MG_SOLVER_AUTO, budget, 0, 0, &au, &d), MG_OK);
    ck_assert_msg(au.plan && au.plan->flops_executed > au.plan->flops_once * 1.1 && au.optimal != 1,
                  "auto: %.0f of %.0f, optimal %d", au.plan ? au.plan->flops_executed : -1.0, au.plan->flops_once,
                  au.optimal);
    double relaxed;
    ck_assert_int_eq(mg_relaxed_bound_below(pr, budget, 120, au.plan->flops_executed, &relaxed, &d), MG_OK);
    ck_assert_msg(relaxed == au.plan->flops_executed, "relaxed bound %.1f, auto %.1f", relaxed,
                  au.plan->flops_executed);
    ck_assert_int_eq(mg_solve(pr, MG_SOLVER_EXACT, budget, 0, 120, &ex, &d), MG_OK);
    ck_assert_msg(ex.plan && ex.optimal == 1 && !ex.optimal_in_class && ex.lower_bound == ex.plan->flops_executed &&
                      ex.plan->flops_executed == au.plan->flops_executed,
                  "exact: %.0f, bound %.0f, optimal %d", ex.plan ? ex.plan->flops_executed : -1.0, ex.lower_bound,
                  ex.optimal);
    mg_plan_free(sa.plan);
    mg_plan_free(au.plan);
    mg_plan_free(ex.plan);
    mg_problem_free(pr);
    mg_graph_free(g);
}
END_TEST

/* ---- long chains: an independent dynamic program ----------------------------------------
 * A chain problem built directly: a leaf x, forward values f_1..f_n (f_i reads f_{i-1}), then
 * backward values g_n..g_1 (g_i reads g_{i+1}, f_i and f_{i-1}, as a layer's gradient reads
 * its output and its input); g_1 is read after the end. Sizes are multiples of 64 bytes.
 *
 * The reference, written here apart from the planner: R(s, t, g, m) is the least cost of the
 * recomputations that bring g_t .. g_s, holding f_{s-1}, g_{t+1} and (g) f_t, within m units.
 * Either s = t (recompute f_s unless held, then g_s), or the forward values f_s .. f_j are
 * recomputed from f_{s-1} keeping only f_j, then R(j+1, t) runs holding f_j, and then
 * R(s, j) runs with f_j dropped or still held. The first pass is the same with forward costs
 * counted once. It is checked against the brute-force reference above on short chains, and
 * `auto` against it on long ones. */

typedef struct cref {
    int n, mu;             /* stages; memory units (64 bytes) the tables reach */
    const int *x, *y;      /* units of f_i (x[0] = 0: the leaf) and of g_i (y[n+1] = 0) */
    const double *c;       /* cost of f_i */
    double *memo;          /* [first][s][t][g][m], NAN: not yet solved */
} cref;

static double *cref_slot(cref *r, int first, int s, int t, int g, int m)
{
    size_t n1 = (size_t)r->n + 2;
    return &r->memo[((((size_t)first * n1 + (size_t)s) * n1 + (size_t)t) * 2 + (size_t)g) * (size_t)(r->mu + 1) +
                    (size_t)m];
}

static double cref_solve(cref *r, int first, int s, int t, int g, int m)
{
    if (m < 0) return INFINITY;
    double *slot = cref_slot(r, first, s, t, g, m);
    if (!isnan(*slot)) return *slot;
    const int *x = r->x, *y = r->y;
    int held = x[s - 1] + y[t + 1] + (g ? x[t] : 0);
    double best = INFINITY;
    if (s == t) {
        int fits = (g || held + x[s] <= m) && x[s - 1] + x[s] + y[s + 1] + y[s] <= m;
        if (fits) best = g || first ? 0 : r->c[s];
    } else {
        double fc = 0;
        int peak = 0;
        for (int j = s; j < t; j++) {
            int step = (j > s ? x[j - 1] : 0) + x[j];
            if (step > peak) peak = step;
            if (held + peak > m) break;
            if (!first) fc += r->c[j];
            double right = cref_solve(r, first, j + 1, t, g, m - x[s - 1]);
            double drop = cref_solve(r, 0, s, j, 0, m), keep = cref_solve(r, 0, s, j, 1, m);
            double v = fc + right + (drop < keep ? drop : keep);
            if (v < best) best = v;
        }
    }
    *slot = best;
    return best;
}

/* The least total cost of the chain under cap bytes (INFINITY: nothing fits). */
static double chain_reference(const mg_problem *pr, int n, int64_t cap)
{
    int *x = calloc((size_t)n + 2, sizeof *x), *y = calloc((size_t)n + 2, sizeof *y);
    double *c = calloc((size_t)n + 2, sizeof *c), once = 0;
    for (int i = 1; i <= n; i++) {
        x[i] = (int)(pr->bytes[i] / 64);
        c[i] = pr->cost[i];
        y[i] = (int)(pr->bytes[2 * n + 1 - i] / 64);
        once += pr->cost[i] + pr->cost[2 * n + 1 - i];
    }
    cref r = {n, (int)(cap / 64), x, y, c, NULL};
    size_t cells = 2 * (size_t)(n + 2) * (size_t)(n + 2) * 2 * (size_t)(r.mu + 1);
    r.memo = malloc(cells * sizeof *r.memo);
    ck_assert_ptr_nonnull(r.memo);
    for (size_t i = 0; i < cells; i++) r.memo[i] = NAN;
    double extra = cref_solve(&r, 1, 1, n, 0, r.mu);
    free(r.memo);
    free(x);
    free(y);
    free(c);
    return extra + once;
}

/* Node 0 the leaf, 1..n the forward values, n+1.. the backward values g_n .. g_1. */
static mg_problem *chain_problem(int n, const int *xu, const int *yu, const double *cost)
{
    int N = 2 * n + 1;
    mg_problem *p = mg_problem_alloc(N, 3 * N);
    p->nfwd = n + 1;
    int e = 0;
    for (int v = 0; v < N; v++) {
        p->in_start[v] = e;
        if (v == 0) continue;
        p->target[v] = 1;
        if (v <= n) {
            p->in[e++] = v - 1;
            p->bytes[v] = 64 * (int64_t)xu[v];
            p->cost[v] = cost[v];
            p->evictable[v] = 1;
        } else {
            int i = 2 * n + 1 - v; /* g_i */
            if (v > n + 1) p->in[e++] = v - 1;
            p->in[e++] = i;
            p->in[e++] = i - 1;
            p->bytes[v] = 64 * (int64_t)yu[i];
            p->cost[v] = 2 * cost[i];
        }
    }
    p->in_start[N] = e;
    p->keep_to_end[N - 1] = 1;
    return p;
}

/* A chain of n stages: uniform (all sizes 2 units, costs 3) or uneven (seeded). */
static mg_problem *make_chain(int n, int uneven, uint64_t seed)
{
    int *x = calloc((size_t)n + 2, sizeof *x), *y = calloc((size_t)n + 2, sizeof *y);
    double *c = calloc((size_t)n + 2, sizeof *c);
    for (int i = 1; i <= n; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        uint64_t r = seed >> 24;
        x[i] = uneven ? 1 + (int)(r % 6) : 2;
        y[i] = uneven ? 1 + (int)(r / 7 % 4) : 2;
        c[i] = uneven ? (double)(1 + r / 31 % 20) : 3;
    }
    mg_problem *p = chain_problem(n, x, y, c);
    free(x);
    free(y);
    free(c);
    return p;
}


/* The DP's schedules are persistent (a value kept as a checkpoint stays until the backward
 * pass has used it), so the DP is never below the brute force; on uniform chains it is the
 * optimum. On uneven ones dropping a checkpoint early can be cheaper (e.g. n = 6 below at 68%:
 * 289 against the DP's 319), which the brute force, and auto's exact search, find. auto reaches
 * the brute-force optimum on every short chain. */
START_TEST(test_chain_reference)
{
    int compared = 0;
    for (int k = 0; k < 8; k++) {
        int n = 5 + k % 5;
        mg_problem *pr = make_chain(n, k % 4 != 0, 1000 + (uint64_t)k);
        int64_t all = store_all_of(pr);
        for (int pct = 100; pct >= 20; pct -= 8) {
            int64_t cap = all * pct / 100 / 64 * 64;
            double bf = reference_optimum(pr, cap), dp = chain_reference(pr, n, cap);
            ck_assert_msg(dp >= bf && (k % 4 != 0 || dp == bf || (isinf(bf) && isinf(dp))),
                          "chain %d (n %d) at %d%%: brute force %.0f, DP %.0f", k, n, pct, bf, dp);
            mg_diag d = {0};
            mg_solution au;
            ck_assert_int_eq(mg_solve(pr, MG_SOLVER_AUTO, cap, 0, 0, &au, &d), MG_OK);
            ck_assert_msg(isinf(bf) ? !au.plan : au.plan && au.plan->flops_executed == bf,
                          "chain %d (n %d) at %d%%: auto %.0f, optimum %.0f", k, n, pct,
                          au.plan ? au.plan->flops_executed : -1.0, bf);
            ck_assert_msg(isinf(bf) || au.lower_bound <= bf, "chain %d at %d%%: lower bound %.0f above the optimum %.0f", k,
                          pct, au.lower_bound, bf);
            mg_plan_free(au.plan);
            compared += !isinf(bf);
        }
        mg_problem_free(pr);
    }
    ck_assert_msg(compared >= 40, "only %d feasible comparisons", compared);
}
END_TEST

/* On long chains, uniform and uneven, from store-all down to where nothing fits: auto is never
 * worse than the DP reference (equal to it on uniform chains, where the DP is the optimum) and
 * has a plan wherever the DP has one; every plan verifies and fits. */
START_TEST(test_long_chains)
{
    static const int lengths[] = {16, 24, 40};
    int compared = 0;
    for (int k = 0; k < 6; k++) {
        int n = lengths[k % 3];
        mg_problem *pr = make_chain(n, k >= 3, 77 + (uint64_t)k);
        int64_t all = store_all_of(pr);
        for (int pct = 95; pct >= 10; pct -= 5) {
            int64_t cap = all * pct / 100 / 64 * 64;
            double opt = chain_reference(pr, n, cap);
            mg_diag d = {0};
            mg_solution au;
            ck_assert_int_eq(mg_solve(pr, MG_SOLVER_AUTO, cap, 0, 0, &au, &d), MG_OK);
            if (isinf(opt)) { /* (the DP's class is narrower: auto may still find a plan) */
                mg_plan_free(au.plan);
                continue;
            }
            ck_assert_msg(au.plan, "chain %d (n %d, %s) at %d%%: auto finds no plan; the optimum costs %.0f", k, n,
                          k >= 3 ? "uneven" : "uniform", pct, opt);
            ck_assert_msg(au.plan->workspace_bytes <= cap && mg_plan_verify(au.plan, pr, &d) == MG_OK,
                          "chain %d at %d%%: the plan does not fit or verify (%s)", k, pct, d.msg);
            ck_assert_msg(k >= 3 ? au.plan->flops_executed <= opt : au.plan->flops_executed == opt,
                          "chain %d (n %d, %s) at %d%%: auto costs %.0f, the DP %.0f", k, n, k >= 3 ? "uneven" : "uniform",
                          pct, au.plan->flops_executed, opt);
            mg_plan_free(au.plan);
            compared++;
        }
        mg_problem_free(pr);
    }
    ck_assert_msg(compared >= 50, "only %d feasible comparisons", compared);
}
END_TEST

/* The same problem under sched_remat.c: at d's step the policies drop A (the least cost per
 * byte, and it is read only at the end), recomputing it for 10; with fit they drop S, which
 * alone covers the 64 bytes, for 3: the optimum. */
START_TEST(test_fit_eviction)
{
    mg_problem *p = excess_problem();
    mg_diag d = {0};
    int helped = 0;
    for (int pol = 0; pol < MG_EVICT_NPOLICIES; pol++) {
        double cost[2];
        for (int fit = 0; fit < 2; fit++) {
            mg_sched_opts o = {.cap = 1024, .policy = (mg_evict_policy)pol, .fit = fit};
            mg_plan *plan;
            ck_assert_int_eq(mg_schedule(p, &o, &plan, &d), MG_OK);
            ck_assert_ptr_nonnull(plan);
            ck_assert_int_eq(mg_arena_assign(plan, &d), MG_OK);
            ck_assert_int_eq(mg_plan_verify(plan, p, &d), MG_OK);
            cost[fit] = plan->flops_executed;
            mg_plan_free(plan);
        }
        ck_assert_msg(cost[1] == 19 && cost[1] <= cost[0], "policy %d: %.0f with fit, %.0f without", pol, cost[1],
                      cost[0]);
        helped += cost[1] < cost[0];
    }
    ck_assert_msg(helped > 0, "no policy paid more without fit: the case tests nothing");
    mg_problem_free(p);
}
END_TEST

/* sched_improve.c's local search over eviction score weights, on random problems small enough
 * for the brute force: from each eviction policy's schedule (placed, within the budget) it
 * returns a verified plan within the budget, never dearer than that schedule and never below
 * the optimum; all-one weights change nothing; and it must find a cheaper plan somewhere (else
 * this tests nothing), reaching the optimum where the policy missed it at least once. */
START_TEST(test_improve_weights)
{
    uint64_t seed = 777;
    int tried = 0, helped = 0, reached = 0;
    mg_diag d = {0};
    for (int k = 0; k < 10; k++) {
        mg_problem *pr = tu_random_problem(&seed, 10 + k % 4, 8 + k % 3, 0);
        mg_solution sa;
        ck_assert_int_eq(mg_solve(pr, MG_SOLVER_STORE_ALL, INT64_MAX, 0, 0, &sa, &d), MG_OK);
        double *ones = malloc((size_t)pr->n * sizeof *ones);
        for (int v = 0; v < pr->n; v++) ones[v] = 1;
        for (int pct = 80; pct >= 40; pct -= 10) {
            int64_t budget = sa.store_all_bytes * pct / 100;
            double opt = reference_optimum(pr, budget);
            for (int i = 0; i < 2 * MG_EVICT_NPOLICIES; i++) {
                mg_sched_opts o = {.cap = budget, .policy = (mg_evict_policy)(i % MG_EVICT_NPOLICIES),
                                   .lazy = i >= MG_EVICT_NPOLICIES};
                mg_plan *plain, *w1;
                ck_assert_int_eq(mg_schedule(pr, &o, &plain, &d), MG_OK);
                if (!plain) continue;
                o.weight = ones;
                ck_assert_int_eq(mg_schedule(pr, &o, &w1, &d), MG_OK);
                ck_assert_msg(w1 && w1->flops_executed == plain->flops_executed && w1->nsteps == plain->nsteps,
                              "problem %d at %d%%, variant %d: weights of one changed the schedule", k, pct, i);
                mg_plan_free(w1);
                o.weight = NULL;
                ck_assert_int_eq(mg_arena_assign_within(plain, budget, &d), MG_OK);
                if (plain->workspace_bytes > budget) {
                    mg_plan_free(plain);
                    continue;
                }
                double before = plain->flops_executed;
                mg_plan *best = plain;
                ck_assert_int_eq(mg_improve_schedule(pr, &o, budget, 200, &best, &d), MG_OK);
                ck_assert_ptr_nonnull(best);
                ck_assert_int_eq(mg_plan_verify(best, pr, &d), MG_OK);
                ck_assert_msg(best->workspace_bytes <= budget && best->flops_executed <= before &&
                                  best->flops_executed >= opt,
                              "problem %d at %d%%, variant %d: %.0f (workspace %lld of %lld) from %.0f, optimum %.0f",
                              k, pct, i, best->flops_executed, (long long)best->workspace_bytes, (long long)budget,
                              before, opt);
                tried++;
                helped += best->flops_executed < before;
                reached += best->flops_executed == opt && before > opt;
                mg_plan_free(best);
            }
        }
        free(ones);
        mg_plan_free(sa.plan);
        mg_problem_free(pr);
    }
    ck_assert_msg(tried >= 50, "only %d schedules to improve", tried);
    ck_assert_msg(helped > 0 && reached > 0, "the search improved %d of %d schedules, reaching the optimum %d times",
                  helped, tried, reached);
}
END_TEST

/* A sweep (budgets rising from the minimum feasible one towards store-all: the lower 13 of 24
 * evenly spaced points) that passes each point's plan on to the next (mg_solve_from) never sees
 * auto's cost rise; every plan verifies and fits its budget; each point's cost is the lesser of
 * auto's own there and the previous point's plan when that fits; an incumbent over the budget
 * is never returned. Auto's own cost rises once along this sweep (from point 9 to 10: 1137 to
 * 1157), else this would test nothing. (One small problem: < 1 s, a few under ASan.) */
enum { NSWEEP_PROBLEMS = 1, SWEEP_FWD = 20, SWEEP_BWD = 15, SWEEP_POINTS = 24, SWEEP_LAST = 12 };
START_TEST(test_monotone_sweep)
{
    uint64_t seed = 9090;
    int rises = 0, points = 0;
    mg_diag d = {0};
    for (int k = 0; k < NSWEEP_PROBLEMS; k++) {
        mg_problem *pr = tu_random_problem(&seed, SWEEP_FWD + 7 * k, SWEEP_BWD + 5 * k, 0);
        mg_solution lo;
        ck_assert_int_eq(mg_solve(pr, MG_SOLVER_AUTO, 0, 1, 0, &lo, &d), MG_OK);
        ck_assert_ptr_null(lo.plan);
        ck_assert_int_gt(lo.min_feasible_bytes, 0);
        mg_plan *prev = NULL;
        double prev_own = -1;
        for (int i = 0; i <= SWEEP_LAST; i++) {
            int64_t budget = lo.min_feasible_bytes + (lo.store_all_bytes - lo.min_feasible_bytes) * i / (SWEEP_POINTS - 1);
            mg_solution own, s;
            ck_assert_int_eq(mg_solve(pr, MG_SOLVER_AUTO, budget, 0, 0, &own, &d), MG_OK);
            ck_assert_int_eq(mg_solve_from(pr, MG_SOLVER_AUTO, budget, 0, 0, prev, &s, &d), MG_OK);
            ck_assert_msg(s.plan && own.plan, "problem %d, point %d: no plan at %lld", k, i, (long long)budget);
            ck_assert_int_eq(mg_plan_verify(s.plan, pr, &d), MG_OK);
            ck_assert_int_le(s.plan->workspace_bytes, budget);
            double want = own.plan->flops_executed;
            if (prev && prev->flops_executed < want) want = prev->flops_executed;
            ck_assert_msg(s.plan->flops_executed == want, "problem %d, point %d: %.0f, own %.0f, previous %.0f", k, i,
                          s.plan->flops_executed, own.plan->flops_executed, prev ? prev->flops_executed : -1.0);
            ck_assert_msg(!prev || s.plan->flops_executed <= prev->flops_executed, "problem %d, point %d: the cost rose",
                          k, i);
            rises += prev_own >= 0 && own.plan->flops_executed > prev_own;
            points++;
            prev_own = own.plan->flops_executed;
            mg_plan_free(own.plan);
            mg_plan_free(prev);
            prev = s.plan;
        }
        /* an incumbent that does not fit is never returned */
        mg_solution s;
        int64_t tight = lo.min_feasible_bytes;
        ck_assert_int_eq(mg_solve_from(pr, MG_SOLVER_AUTO, tight, 0, 0, prev, &s, &d), MG_OK);
        ck_assert_msg(!s.plan || s.plan->workspace_bytes <= tight, "problem %d: a plan over the budget", k);
        mg_plan_free(s.plan);
        mg_plan_free(prev);
        mg_problem_free(pr);
    }
    ck_assert_msg(rises > 0, "auto's own cost never rose along %d points: the sweep tests nothing", points);
}
END_TEST

/* mg_sched_opts.flops_limit gives up on a schedule as soon as it is sure to pass the limit
 * (every later target still runs once): that must change nothing but the time. On random
 * problems, under every policy of both schedulers, a limit equal to the schedule's cost gives
 * the very same schedule, and a limit just below it gives none; a limit of the cost of running
 * every op once gives a schedule exactly where the unlimited one recomputes nothing. */
START_TEST(test_flops_limit_exact)
{
    uint64_t seed = 4242;
    int same = 0, cut = 0;
    mg_diag d = {0};
    for (int k = 0; k < 12; k++) {
        mg_problem *pr = tu_random_problem(&seed, 10 + k % 5, 8 + k % 4, 0);
        mg_solution sa;
        ck_assert_int_eq(mg_solve(pr, MG_SOLVER_STORE_ALL, INT64_MAX, 0, 0, &sa, &d), MG_OK);
        double once = sa.plan->flops_once;
        for (int pct = 90; pct >= 30; pct -= 15) {
            int64_t budget = sa.store_all_bytes * pct / 100;
            for (int i = 0; i < 2 * MG_EVICT_NPOLICIES + 3; i++) {
                mg_sched_opts o = {.cap = budget, .policy = (mg_evict_policy)(i % MG_EVICT_NPOLICIES),
                                   .lazy = i < MG_EVICT_NPOLICIES, .rc = i >= 2 * MG_EVICT_NPOLICIES ? 1 + i % 2 : 0};
                if (o.rc) o.lazy = 0;
                mg_plan *plain, *at, *below, *atonce;
                ck_assert_int_eq(o.rc ? mg_schedule_rc(pr, &o, &plain, &d) : mg_schedule(pr, &o, &plain, &d), MG_OK);
                if (!plain) continue;
                o.flops_limit = plain->flops_executed;
                ck_assert_int_eq(o.rc ? mg_schedule_rc(pr, &o, &at, &d) : mg_schedule(pr, &o, &at, &d), MG_OK);
                ck_assert_msg(at && at->nsteps == plain->nsteps && at->flops_executed == plain->flops_executed,
                              "problem %d at %d%%, variant %d: the limit %.0f, its own cost, cut the schedule", k, pct,
                              i, plain->flops_executed);
                for (int t = 0; t < at->nsteps; t++)
                    ck_assert(at->steps[t].node == plain->steps[t].node && at->steps[t].kind == plain->steps[t].kind);
                o.flops_limit = plain->flops_executed - 0.5;
                ck_assert_int_eq(o.rc ? mg_schedule_rc(pr, &o, &below, &d) : mg_schedule(pr, &o, &below, &d), MG_OK);
                ck_assert_msg(!below, "problem %d at %d%%, variant %d: a schedule above the limit", k, pct, i);
                o.flops_limit = once;
                ck_assert_int_eq(o.rc ? mg_schedule_rc(pr, &o, &atonce, &d) : mg_schedule(pr, &o, &atonce, &d), MG_OK);
                ck_assert_int_eq(!!atonce, plain->flops_executed == once);
                same++;
                cut += plain->flops_executed > once;
                mg_plan_free(plain);
                mg_plan_free(at);
                mg_plan_free(atonce);
            }
        }
        mg_plan_free(sa.plan);
        mg_problem_free(pr);
    }
    ck_assert_msg(same >= 100 && cut >= 20, "%d schedules compared, %d recomputing: the case tests little", same, cut);
}
END_TEST

/* The cut bound's windows in integers on a real graph: Checkmate's U-Net at 90% of its store-all
 * workspace. A window there needs more branch-and-bound nodes than 12 to reach its integer
 * optimum; with them the bound proves auto's plan within 0.1% of the optimum (with 12: 0.28%).
 * The bound never exceeds the plan's cost (it is a bound on every plan, this one included). */
START_TEST(test_cut_bound_unet)
{
    mg_problem *p = tu_load_graph("checkmate/unet.json");
    mg_diag d = {0};
    mg_solution sa, au;
    ck_assert_int_eq(mg_solve(p, MG_SOLVER_STORE_ALL, INT64_MAX, 0, 0, &sa, &d), MG_OK);
    mg_plan_free(sa.plan);
    int64_t budget = (int64_t)((double)sa.store_all_bytes * 0.9);
    ck_assert_int_eq(mg_solve(p, MG_SOLVER_AUTO, budget, 0, 0, &au, &d), MG_OK);
    ck_assert_ptr_nonnull(au.plan);
    double cost = au.plan->flops_executed;
    ck_assert_msg(au.lower_bound <= cost && cost <= 1.001 * au.lower_bound,
                  "auto's plan %.0f, its lower bound %.0f (%.4f of it)", cost, au.lower_bound, cost / au.lower_bound);
    mg_plan_free(au.plan);
    mg_problem_free(p);
}
END_TEST

/* The cut bound's windows chained (mg_cut_bound_chained: what a window keeps live at its start
 * was live at the previous window's start or computed again in that window) against the brute
 * force, on residual-like problems as test_cut_bound_random's (forward values reading the
 * previous one and often one further back, gradients reading the previous gradient and a
 * forward value) and random_scratch_problem's: never below the cut bound, never above the
 * optimum's recomputation, and above the cut bound on some. */
START_TEST(test_cut_bound_chained_random)
{
    uint64_t seed = 4242;
    int compared = 0, higher = 0;
    for (int k = 0; k < 96; k++) {
        double once = 0;
        int64_t store_all;
        mg_problem *p = k % 3 == 0 ? random_scratch_problem(&seed, k, &once, &store_all)
                                   : residual_problem(&seed, k, &once, &store_all);
        for (int pct = 90; pct >= 30; pct -= 3) {
            int64_t cap = store_all * pct / 100;
            double opt = reference_optimum(p, cap);
            if (isinf(opt)) break;
            double cut = mg_cut_bound(p, cap), chained = mg_cut_bound_chained(p, cap, 100);
            ck_assert_msg(chained >= cut && once + chained <= opt + 1e-6,
                          "problem %d at %d%%: chained %.3f, cut %.3f (+ %.0f), optimum %.0f", k, pct, chained, cut,
                          once, opt);
            compared++;
            higher += chained > cut + 0.5;
        }
        mg_problem_free(p);
    }
    ck_assert_msg(compared >= 400 && higher >= 2, "%d comparisons, %d above the cut bound", compared, higher);
}
END_TEST

/* The chained windows in integers (solve_exact.c, mg_chain_milp_bound) against the brute force,
 * on test_cut_bound_chained_random's kinds of problems: never below the chain's Lagrangian (CBC
 * finishes on these), never above the optimum's recomputation, and above the Lagrangian on
 * some. */
START_TEST(test_chain_milp_random)
{
    uint64_t seed = 777;
    int compared = 0, higher = 0;
    for (int k = 0; k < (TU_SANITIZED ? 12 : 40); k++) {
        double once = 0;
        int64_t store_all;
        mg_problem *p = k % 3 == 0 ? random_scratch_problem(&seed, k, &once, &store_all)
                                   : residual_problem(&seed, k, &once, &store_all);
        for (int pct = 84; pct >= 30; pct -= 6) {
            int64_t cap = store_all * pct / 100;
            double opt = reference_optimum(p, cap);
            if (isinf(opt)) break;
            double chained = mg_cut_bound_chained(p, cap, 100), milp;
            mg_diag d = {0};
            ck_assert_int_eq(mg_chain_milp_bound(p, cap, 20, &milp, &d), MG_OK);
            ck_assert_msg(milp >= chained * (1 - 1e-5) - 1e-6 && once + milp <= opt + 1e-6,
                          "problem %d at %d%%: in integers %.3f, chained %.3f (+ %.0f), optimum %.0f", k, pct, milp,
                          chained, once, opt);
            compared++;
            higher += milp > chained + 0.5;
        }
        mg_problem_free(p);
    }
    ck_assert_msg(compared >= (TU_SANITIZED ? 24 : 80) && higher >= (TU_SANITIZED ? 4 : 10),
                  "%d comparisons, %d above the Lagrangian", compared, higher);
}
END_TEST

/* The relaxed program over windows of target positions (mg_relaxed_window_bound): two windows
 * that share one position bound disjoint gaps, so their sum is never above the optimum's
 * recomputation (random problems of test_cut_bound_random's kinds, the boundary at each
 * position in turn), and a window over every position is the whole program's bound. */
START_TEST(test_relaxed_window_random)
{
    uint64_t seed = 99;
    int compared = 0, above = 0;
    for (int k = 0; k < 12; k++) {
        double once = 0;
        int64_t store_all;
        mg_problem *p = k % 2 == 0 ? random_scratch_problem(&seed, k, &once, &store_all)
                                   : residual_problem(&seed, k, &once, &store_all);
        int T = 0;
        for (int v = 0; v < p->n; v++) T += p->target[v] != 0;
        for (int pct = 70; pct >= 40; pct -= 15) {
            int64_t cap = store_all * pct / 100;
            double opt = reference_optimum(p, cap), whole, all;
            if (isinf(opt)) break;
            mg_diag d = {0};
            ck_assert_int_eq(mg_relaxed_window_bound(p, cap, 0, T - 1, 20, HUGE_VAL, &all, &d), MG_OK);
            ck_assert_int_eq(mg_relaxed_lp_bound(p, cap, 20, &whole, &d), MG_OK);
            ck_assert_msg(once + all <= opt + 1e-6 && once + all >= whole - 1e-6 * opt,
                          "problem %d at %d%%: every position %.3f (+ %.0f), the LP %.3f, optimum %.0f", k, pct, all,
                          once, whole, opt);
            for (int at = 1; at + 1 < T; at++) {
                double a, b;
                ck_assert_int_eq(mg_relaxed_window_bound(p, cap, 0, at, 20, HUGE_VAL, &a, &d), MG_OK);
                ck_assert_int_eq(mg_relaxed_window_bound(p, cap, at, T - 1, 20, HUGE_VAL, &b, &d), MG_OK);
                ck_assert_msg(a >= 0 && b >= 0 && once + a + b <= opt + 1e-6,
                              "problem %d at %d%%, split at %d: %.3f + %.3f (+ %.0f), optimum %.0f", k, pct, at, a, b,
                              once, opt);
                compared++;
                above += a + b > 0.5;
            }
        }
        mg_problem_free(p);
    }
    ck_assert_msg(compared >= 40 && above >= 20, "%d comparisons, %d above every op once", compared, above);
}
END_TEST

/* resnet50 at its minimum feasible budget: the chained windows prove more than the windows
 * alone (43,863 against 42,695 FLOP units of recomputation beyond every op once), and more
 * again in integers (45,010: CBC proves it in a few seconds), never more than auto's plan
 * recomputes. */
START_TEST(test_cut_bound_chained_resnet50)
{
    mg_problem *p = tu_load_graph("checkmate/resnet50.json");
    int64_t budget = 4521459712;
    double once = 0;
    for (int v = 0; v < p->n; v++)
        if (p->target[v]) once += p->cost[v];
    double cut = mg_cut_bound(p, budget), chained = mg_cut_bound_chained(p, budget, 100);
    mg_diag d = {0};
    mg_solution au;
    ck_assert_int_eq(mg_solve(p, MG_SOLVER_AUTO, budget, 0, 0, &au, &d), MG_OK);
    ck_assert_ptr_nonnull(au.plan);
    ck_assert_msg(chained >= cut + 1000 && once + chained <= au.plan->flops_executed,
                  "chained %.0f, cut %.0f, auto's plan %.0f over %.0f once", chained, cut, au.plan->flops_executed, once);
    double milp;
    ck_assert_int_eq(mg_chain_milp_bound(p, budget, 15, &milp, &d), MG_OK);
    /* (at least the Lagrangian's whatever the machine's load; 45,010 when CBC proves its chain
     * within the limit, about 5 s idle) */
    ck_assert_msg(milp >= chained * (1 - 1e-5) && once + milp <= au.plan->flops_executed,
                  "in integers %.0f, the Lagrangian %.0f, auto's plan %.0f over %.0f", milp, chained,
                  au.plan->flops_executed, once);
    mg_plan_free(au.plan);
    mg_problem_free(p);
}
END_TEST

static Suite *optimal_suite(void)
{
    Suite *s = suite_create("optimal");
    TCase *c = tcase_create("chains");
    tcase_set_timeout(c, 600);
    tcase_add_test(c, test_uniform_chain);
    tcase_add_test(c, test_uneven_chain);
    tcase_add_test(c, test_relu_chain);
    suite_add_tcase(s, c);
    TCase *r = tcase_create("random");
    tcase_set_timeout(r, 600);
    tcase_set_tags(r, "random");
    tcase_add_test(r, test_random_problems);
    tcase_add_test(r, test_fit_eviction);
    tcase_add_test(r, test_improve_weights);
    tcase_add_test(r, test_flops_limit_exact);
    tcase_add_test(r, test_monotone_sweep);
    suite_add_tcase(s, r);
    TCase *b = tcase_create("bounds");
    tcase_set_timeout(b, 600);
    tcase_set_tags(b, "bounds");
    tcase_add_test(b, test_relaxed_bound_tighter);
    tcase_add_test(b, test_relaxed_gap_memory);
    tcase_add_test(b, test_relaxed_preprocess);
    tcase_add_test(b, test_relaxed_random_scratch);
    tcase_add_test(b, test_cut_bound_rebuilds);
    tcase_add_test(b, test_cut_bound_symmetric_random);
    tcase_add_test(b, test_exact_not_dearer_than_auto);
    tcase_add_test(b, test_cut_bound_symmetric_parts);
    tcase_add_test(b, test_relaxed_paths_random);
    tcase_add_test(b, test_relaxed_paths_prove);
    tcase_add_test(b, test_relaxed_lp_random);
    tcase_add_test(b, test_cut_bound_random);
    tcase_add_test(b, test_parts_bound_random);
    tcase_add_test(b, test_cut_bound_integral);
    tcase_add_test(b, test_cut_bound_unet);
    tcase_add_test(b, test_cut_bound_chained_random);
    tcase_add_test(b, test_cut_bound_chained_resnet50);
    tcase_add_test(b, test_chain_milp_random);
    tcase_add_test(b, test_relaxed_window_random);
    suite_add_tcase(s, b);
    TCase *l = tcase_create("long chains");
    tcase_set_timeout(l, 600);
    tcase_add_test(l, test_chain_reference);
    tcase_add_test(l, test_long_chains);
    suite_add_tcase(s, l);
    return s;
}

int main(void) { return tu_run_suite(optimal_suite()); }
