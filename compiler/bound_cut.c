/* bound_cut.c — a lower bound on what any schedule recomputes, from the memory at single steps
 * and what must be rebuilt after them (mg_cut_bound). planner.c's own bound counts each value
 * that cannot stay resident across a step once, and the excess of one step; near the minimum
 * budget of resnet50 that leaves most of the cost unseen: at a backward step of its conv2 stage
 * only ~400 MiB of forward values fit beside what the step needs, so the values read in the
 * next steps, and their inputs back to whatever was kept, are all rebuilt, and again at the
 * next such step.
 *
 * The argument. Targets run in order; at target i the live bytes are at most the budget, and
 * the bytes the step itself needs (its output, scratch and workspace inputs, and the values
 * that may not be dropped and are live across it) leave `slack` for everything else. Take a
 * window (i, j]: N, the values computed before i that some target in (i, j] reads. Each v in N
 * is read at such a target, so it is live there: either its buffer was written before target i
 * and is live at i (buffers have no holes), or v was computed again in a gap between i and that
 * target. A value computed again read its inputs at that step: each was live at i, or computed
 * again in the window before it. So with s_v = "v is computed again in the window" and t_v =
 * "v is live at i or computed again in the window" (t_v = 1 for v in N):
 *   s_v <= t_v,  s_v <= t_u for each workspace input u of v,  sum over (t_v - s_v) bytes <= slack
 * (a value with t_v = 1 and s_v = 0 is live at i), and the window recomputes at least
 * sum cost[v] s_v. For any lambda >= 0, min sum (cost - lambda bytes) s + lambda bytes t over
 * the constraints other than the memory row, minus lambda slack, is at most that (Lagrange);
 * the minimum is a minimum cut (the constraints are all "x <= y", a closure problem). Values
 * that are live at i anyway (the step's inputs, values that may not be dropped and are live
 * across it) take no bytes of the slack; values that may not be dropped cannot be recomputed
 * (s = 0). Windows (i, j] and (i', j'] with j <= i' recompute in disjoint gaps, so their figures
 * add: a dynamic program over the windows between candidate steps (those where the values live
 * across do not all fit) takes the best sum. The Lagrangian is the window's linear relaxation:
 * where half of one large value would fit beside the step, it prices half its recomputation, but
 * a value is live at the step or not. So the windows the best sum takes are then solved in
 * integers (a small branch and bound over "v live at the step or not", its nodes bounded by
 * their Lagrangians) and the sum taken again, until its windows are all solved so (unet at 40%
 * of Checkmate's graphs: 1.1136 -> 1.1175 of every op once; resnet50 at its minimum 1.1000 ->
 * 1.1052). In integers a window also counts the steps that rebuild its values, beside what stays
 * live from the window's step (rebuilds_fit). tests/test_optimal.c (bounds) checks it against the
 * brute-force optimum of random problems, and on problems where only the integers prove the
 * optimum. In a step in parts, where swapping parts maps a window onto itself, the branch and
 * bound also runs on the parts in order (sym_runs). mg_cut_bound_chained also links the best
 * sum's windows by what each keeps live at its start (the chained windows, below;
 * solve_exact.c's bound runs it, auto does not: ~0.45 s on resnet50), and hands the chain's
 * steps to solve_exact.c, which solves that chain in integers (mg_chain_milp_bound). */
#include "plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Dinic's maximum flow on a small graph with real capacities. */
typedef struct flow {
    int n, m, cap_m;
    int *head, *next, *to;
    double *c;
    int *level, *it, *queue;
} flow;

static void flow_reset(flow *f, int n)
{
    f->n = n;
    f->m = 0;
    for (int v = 0; v < n; v++) f->head[v] = -1;
}

static void flow_edge(flow *f, int a, int b, double c)
{
    if (f->m + 2 > f->cap_m) {
        f->cap_m = f->cap_m ? 2 * f->cap_m : 1024;
        f->next = realloc(f->next, (size_t)f->cap_m * sizeof *f->next);
        f->to = realloc(f->to, (size_t)f->cap_m * sizeof *f->to);
        f->c = realloc(f->c, (size_t)f->cap_m * sizeof *f->c);
        if (!f->next || !f->to || !f->c) abort();
    }
    f->to[f->m] = b, f->c[f->m] = c, f->next[f->m] = f->head[a], f->head[a] = f->m++;
    f->to[f->m] = a, f->c[f->m] = 0, f->next[f->m] = f->head[b], f->head[b] = f->m++;
}

static void flow_free(flow *f)
{
    free(f->head);
    free(f->next);
    free(f->to);
    free(f->c);
    free(f->level);
    free(f->it);
    free(f->queue);
}

static const double EPS = 1e-9;

/* Problems of more than MAX_TARGETS targets get no bound here (its windows are cuts over most of
 * the graph). 600 until 2026-12-06, when layered_n1000 once took a second more; now it takes
 * 0.35 s, resnet18_64's 1,079 nodes in 8 parts 0.07-0.16 s (planner.c takes it up to 600
 * targets where a step in parts may run in other orders). The chained bound (exact only,
 * dearer) keeps CHAIN_MAX_TARGETS. At most MAX_CAND candidate steps and LAMBDA_STEPS
 * bisections of lambda per window: resnet50 at its minimum 40,572 in ~0.03 s (64 and 10:
 * 41,123 in 0.25 s; 16 and 8: 37,345). A window's branch and bound expands at most BB_WORK /
 * (its values) nodes, within [BB_NODES_MIN, BB_NODES_MAX], and the best sum is taken again
 * at most BB_ROUNDS times. 12 nodes left unet's windows short of their integer optimum (at
 * 40%: (42, 66] at 3,082 of 3,100 FLOP units; at 90% the bound 1.0086 -> 1.0113 of every op
 * once with 100); resnet50's windows, of hundreds of values, gained at most 0.0001 from 100
 * nodes for up to 0.04 s more CPU (at 40%), so the count falls with the window's size (this
 * rule: at most 5 ms more on any Checkmate row). More rounds (30) changed no row.
 * mg_cut_bound_chained takes WIDE_CAND candidates (resnet50 at its minimum, with the chain:
 * 42,982 -> 43,863; 28, 36, 40 or 64: the same 43,863). */
enum { MAX_TARGETS = 5000, CHAIN_MAX_TARGETS = 600, MAX_CAND = 24, LAMBDA_STEPS = 8, BB_WORK = 4000,
       BB_NODES_MIN = 12, BB_NODES_MAX = 100, BB_ROUNDS = 8, WIDE_CAND = 32 };

/* Levels from s by BFS over edges with capacity left. With t >= 0 it stops as soon as t has
 * its level: every vertex nearer to s than t has its level by then, and the vertices not
 * labelled yet (-1) are as much dead ends for flow_dfs's paths to t as they would be at a
 * level at or past t's, so the augmenting paths are the same. Returns whether t was reached
 * (t < 0: 0, the levels complete). */
static int flow_bfs(flow *f, int s, int t)
{
    const double *c = f->c;
    const int *next = f->next, *to = f->to, *head = f->head;
    int *level = f->level, *queue = f->queue;
    for (int v = 0; v < f->n; v++) level[v] = -1;
    int qh = 0, qt = 0;
    queue[qt++] = s;
    level[s] = 0;
    while (qh < qt) {
        int v = queue[qh++];
        for (int e = head[v]; e >= 0; e = next[e])
            if (c[e] > EPS && level[to[e]] < 0) {
                level[to[e]] = level[v] + 1;
                if (to[e] == t) return 1;
                queue[qt++] = to[e];
            }
    }
    return 0;
}

static double flow_dfs(flow *f, int v, int t, double pushed)
{
    if (v == t) return pushed;
    for (; f->it[v] >= 0; f->it[v] = f->next[f->it[v]]) {
        int e = f->it[v], w = f->to[e];
        if (f->c[e] <= EPS || f->level[w] != f->level[v] + 1) continue;
        double got = flow_dfs(f, w, t, pushed < f->c[e] ? pushed : f->c[e]);
        if (got > 0) {
            f->c[e] -= got;
            f->c[e ^ 1] += got;
            return got;
        }
    }
    return 0;
}

/* The maximum flow from s to t; afterwards level[v] >= 0 marks the source side of a minimum cut
 * (the last BFS, which did not reach t, labelled every vertex s reaches). */
static double flow_max(flow *f, int s, int t)
{
    double total = 0;
    while (flow_bfs(f, s, t)) {
        for (int v = 0; v < f->n; v++) f->it[v] = f->head[v];
        double got;
        while ((got = flow_dfs(f, s, t, HUGE_VAL)) > 0) total += got;
    }
    return total;
}

typedef struct ctx {
    const mg_problem *pr;
    int n, T;
    int *pos, *tg;
    char *freeat;   /* per value, at the current step: live there anyway (no slack taken) */
    int *idx;       /* per value: its index among the window's values, -1 */
    int *vals, nv;  /* the window's values: N and their ancestors through recomputable values */
    char *inN;
    int memo_i, memo_n; /* the last window's start and count of N, and its figure */
    double memo_w;
    int integral;   /* every cost an integer (FLOPs): so is what a window recomputes */
    char *fix;      /* per window value (index q): 0 free, 1 live at the step, 2 not (branch and bound) */
    char *cur;      /* per window value: live at the step in the last closure's solution */
    char *lo_res, *hi_res; /* the same for the last solutions above and within the slack */
    const double *addT, *addS; /* NULL, or per window value: more weight on t_v = 1 and on s_v = 1
                                  (mg_chain_bound's prices of the links between windows) */
    /* rebuilds_fit's (in the windows branch_and_bound solves; rebuilds 0 elsewhere) */
    int rebuilds;            /* the window's values have first[] and lastr[] */
    int *first, *lastr;      /* per window value in N: its first and last read in the window */
    int *held, nheld;        /* values that may not be dropped, computed at or before the step */
    const int *last;         /* per value: the last target that reads it */
    int64_t budget;
    char *solfix;            /* a solution's fixes (solution_rebuilds_fit) */
    /* parts_swap's: in a step in parts, part p's nodes (from 1) in node order at
     * pnode[pstart[p] .. pstart[p + 1]), and ppos[v] v's index among its part's */
    int nparts, *pstart, *pnode, *ppos;
    int sym;                 /* the closure and the branch and bound keep the runs' order (sym_runs) */
    int *snext, *sprev;      /* per window value: the same value of the run's next / previous part, -1 */
    flow f;
} ctx;

static int ws(const ctx *c, int v) { return c->pos[v] >= 0 && c->pr->home[v].mem == MG_MEM_NONE && c->pr->bytes[v] > 0; }

/* The closure's value under lambda (the cut minus lambda * slack); *resident: the bytes it keeps
 * live at the step. */
static double closure(ctx *c, double lambda, double slack, double *resident)
{
    const mg_problem *pr = c->pr;
    int S = 2 * c->nv, K = S + 1;
    flow_reset(&c->f, 2 * c->nv + 2);
    double konst = 0, inf = 0;
    for (int q = 0; q < c->nv; q++) {
        int v = c->vals[q];
        inf += pr->cost[v] + lambda * (double)pr->bytes[v];
        if (c->addT) inf += fabs(c->addT[q]) + fabs(c->addS[q]);
    }
    inf = 4 * inf + 1;
    for (int q = 0; q < c->nv; q++) { /* node 2q: s_v, 2q+1: t_v; source side = 1 */
        int v = c->vals[q];
        double b = (double)pr->bytes[v], ws_ = pr->cost[v] - lambda * b, wt = lambda * b;
        if (c->addT) {
            wt += c->addT[q];
            ws_ += c->addS[q];
        }
        if (wt > 0) flow_edge(&c->f, 2 * q + 1, K, wt);
        else if (wt < 0) {
            konst += wt;
            flow_edge(&c->f, S, 2 * q + 1, -wt);
        }
        if (c->inN[v] || c->fix[q] == 1) flow_edge(&c->f, S, 2 * q + 1, inf);
        if (c->fix[q] == 2) flow_edge(&c->f, 2 * q + 1, 2 * q, inf); /* t_v <= s_v: not live at the step */
        if (!pr->evictable[v] || c->fix[q] == 1) { /* never recomputed (or live at the step): s_v = 0 */
            flow_edge(&c->f, 2 * q, K, inf);
            continue;
        }
        if (ws_ > 0) flow_edge(&c->f, 2 * q, K, ws_);
        else if (ws_ < 0) {
            konst += ws_;
            flow_edge(&c->f, S, 2 * q, -ws_);
        }
        flow_edge(&c->f, 2 * q, 2 * q + 1, inf);
        for (int k = pr->in_start[v]; k < pr->in_start[v + 1]; k++) {
            int u = pr->in[k];
            if (c->idx[u] >= 0) flow_edge(&c->f, 2 * q, 2 * c->idx[u] + 1, inf);
        }
        if (c->sym && c->snext[q] >= 0) flow_edge(&c->f, 2 * q, 2 * c->snext[q], inf); /* s_v <= s of the next */
    }
    double cut = flow_max(&c->f, S, K);
    *resident = 0;
    for (int q = 0; q < c->nv; q++) {
        c->cur[q] = c->f.level[2 * q + 1] >= 0 && c->f.level[2 * q] < 0;
        if (c->cur[q]) *resident += (double)pr->bytes[c->vals[q]];
    }
    return konst + cut - lambda * slack;
}

/* What the solution of the last closure recomputes (s_v on the source side), and the weights
 * c->addT / addS of its values when there are any: its objective without the memory row. */
static double recomputed(const ctx *c)
{
    double sum = 0;
    for (int q = 0; q < c->nv; q++) {
        if (c->f.level[2 * q] >= 0) sum += c->pr->cost[c->vals[q]] + (c->addS ? c->addS[q] : 0);
        if (c->addT && c->f.level[2 * q + 1] >= 0) sum += c->addT[q];
    }
    return sum;
}

/* Whether every cost of pr is an integer that a double holds exactly (a recomputation's cost is
 * then a sum of integers, and a figure may be rounded up). */
static int integral_costs(const mg_problem *pr)
{
    for (int v = 0; v < pr->n; v++)
        if (!(pr->cost[v] >= 0 && pr->cost[v] < 0x1p52 && pr->cost[v] == floor(pr->cost[v]))) return 0;
    return 1;
}

/* A figure of the floating-point Lagrangian less its rounding error (relative to `scale`, the
 * costs it summed), rounded up where every cost is an integer: 2e-16 above a window's true 0
 * is not a recomputation of 1 (a window of 0 rounded so once made a bound 1 above the optimum,
 * test_cut_bound_symmetric_random). */
static double proven(double x, double scale, int integral)
{
    x -= 1e-9 * (fabs(x) + scale);
    return x <= 0 ? 0 : integral ? ceil(x) : x;
}

/* Whether a node's fixes leave room for the steps that rebuild its values (branch_and_bound;
 * kept: the bytes of the values it fixes live).
 * A value w of N fixed not live at the step (fix 2) is recomputed in the window. Either it is
 * live at the step too, beside the values fixed live there, or it was dropped before the step
 * and is rebuilt in the window before its first read a there. That rebuild is a step of its
 * own, and its output and scratch fit the budget together with every value fixed live at the
 * window's step and read at a or later (not recomputed in the window, so its buffer lives from
 * the step to that read) and every value that may not be dropped, computed at or before the
 * step and read at a or later. The window's Lagrangian counts memory at its step only: here, in
 * the stem of a residual network in two parts, rebuilding one part's convolution with its
 * scratch leaves no room for the other part's beside the gradients held between batch_norm's
 * two passes (bench/models/resnet_stem.mg at 50%: the bound 2 -> 3 convolutions, the
 * optimum's). */
static int rebuilds_fit(const ctx *c, double slack, double kept)
{
    const mg_problem *pr = c->pr;
    if (!c->rebuilds) return 1;
    for (int q = 0; q < c->nv; q++) {
        int w = c->vals[q], a = c->first[q];
        if (c->fix[q] != 2 || !c->inN[w] || kept + (double)pr->bytes[w] <= slack) continue;
        double live = (double)pr->bytes[w] + (double)pr->scratch[w];
        for (int r = 0; r < c->nv; r++)
            if (c->fix[r] == 1 && c->inN[c->vals[r]] && c->lastr[r] >= a) live += (double)pr->bytes[c->vals[r]];
        for (int k = 0; k < c->nheld; k++)
            if (c->last[c->held[k]] >= a) live += (double)pr->bytes[c->held[k]];
        if (live > (double)c->budget) return 0;
    }
    return 1;
}

/* rebuilds_fit of the last closure's solution (every value of N live at the step or not), under
 * the node's fixes. */
static int solution_rebuilds_fit(ctx *c, double slack)
{
    if (!c->rebuilds) return 1;
    char *node = c->fix;
    double kept = 0;
    for (int q = 0; q < c->nv; q++) {
        c->solfix[q] = c->cur[q] ? 1 : 2;
        if (c->cur[q]) kept += (double)c->pr->bytes[c->vals[q]];
    }
    c->fix = c->solfix;
    int ok = rebuilds_fit(c, slack, kept);
    c->fix = node;
    return ok;
}

/* The Lagrangian bound of the window's values under c->fix: the best over `steps` values of
 * lambda, bisected in log scale between lo and hi on the bytes kept; *primal:
 * the least recomputation of a solution met that keeps within the slack (HUGE_VAL: none),
 * c->lo_res / hi_res the last solutions above and within it (*have_lo, *have_hi: whether there
 * were any). Any lambda gives a bound: the range only decides how good. */
static double lagrange(ctx *c, double slack, double lo, double hi, int steps, double *primal, int *have_lo, int *have_hi)
{
    double best = c->addT ? -HUGE_VAL : 0; /* (with the links' prices a window may be below 0) */
    *primal = HUGE_VAL;
    *have_lo = *have_hi = 0;
    for (int it = 0; it < steps; it++) {
        double mid = (lo + hi) / 2, resident, val = closure(c, exp(mid), slack, &resident);
        if (val > best) best = val;
        if (resident > slack) {
            lo = mid;
            memcpy(c->lo_res, c->cur, (size_t)c->nv);
            *have_lo = 1;
        } else {
            hi = mid;
            memcpy(c->hi_res, c->cur, (size_t)c->nv);
            *have_hi = 1;
            double r = recomputed(c);
            if (r < *primal && solution_rebuilds_fit(c, slack)) *primal = r;
        }
    }
    return best;
}

/* Node v with parts a and b swapped: the other part's node at v's index among its part's (-1:
 * that part has none there); v itself when of neither. */
static int swapped(const ctx *c, int v, int a, int b)
{
    int p = c->pr->part[v], o = p == a ? b : p == b ? a : 0;
    if (!o) return v;
    int k = c->ppos[v];
    return k < c->pstart[o + 1] - c->pstart[o] ? c->pnode[c->pstart[o] + k] : -1;
}

/* Whether swapping parts a and b maps the window's program (no fixes) onto itself: each window
 * value onto a window value of the same bytes, cost, flags and weights, and its inputs among
 * the window's values, in order, onto the image's. */
static int parts_swap(const ctx *c, int a, int b)
{
    const mg_problem *pr = c->pr;
    for (int q = 0; q < c->nv; q++) {
        int v = c->vals[q], w = swapped(c, v, a, b), r = w >= 0 ? c->idx[w] : -1;
        if (r < 0 || pr->bytes[w] != pr->bytes[v] || pr->cost[w] != pr->cost[v] ||
            pr->evictable[w] != pr->evictable[v] || c->inN[w] != c->inN[v])
            return 0;
        if (c->addT && (c->addT[r] != c->addT[q] || c->addS[r] != c->addS[q])) return 0;
        for (int x = pr->in_start[v], y = pr->in_start[w];; x++, y++) {
            while (x < pr->in_start[v + 1] && c->idx[pr->in[x]] < 0) x++;
            while (y < pr->in_start[w + 1] && c->idx[pr->in[y]] < 0) y++;
            int endx = x == pr->in_start[v + 1], endy = y == pr->in_start[w + 1];
            if (endx || endy) {
                if (endx != endy) return 0;
                break;
            }
            if (swapped(c, pr->in[x], a, b) != pr->in[y]) return 0;
        }
    }
    return 1;
}

/* The symmetry of a window in parts. Where swapping each two neighbouring parts of a run maps
 * the window's program onto itself (parts_swap), so does every order of the run's parts (those
 * swaps make every permutation), and any solution has one as cheap in which, of one value of
 * N per part at the same index (the largest recomputable), the parts that keep it live at the
 * step come first in the run. Links those values from part to part (snext, sprev: the closure
 * then asks s_v <= s of the next, and a branch fixing one fixes the rest of the run's order,
 * order_fixes) and returns whether some run has two parts or more. Of eight parts' equal
 * convolutions three fit beside a step: branching on each, the 100 nodes do not close the
 * window; on how many are kept (the order), two do (resnet18_64 at 25% of store-all: its
 * window (994, 1014] 182.9 -> 192.8 MFLOP, the integer optimum). */
static int sym_runs(ctx *c)
{
    int any = 0;
    for (int q = 0; q < c->nv; q++) c->snext[q] = c->sprev[q] = -1;
    if (!c->pstart) return 0;
    for (int a = 1, b; a < c->nparts; a = b + 1) {
        b = a;
        while (b < c->nparts && parts_swap(c, b, b + 1)) b++;
        int rep = -1;
        for (int q = 0; q < c->nv && b > a; q++) {
            int v = c->vals[q];
            if (c->pr->part[v] == a && c->inN[v] && c->pr->evictable[v] &&
                (rep < 0 || c->pr->bytes[v] > c->pr->bytes[c->vals[rep]]))
                rep = q;
        }
        for (int p = a; rep >= 0 && p < b; p++) {
            int r = c->idx[c->pnode[c->pstart[p + 1] + c->ppos[c->vals[rep]]]];
            c->snext[rep] = r;
            c->sprev[r] = rep;
            rep = r;
            any = 1;
        }
    }
    return any;
}

/* Under c->sym, value q fixed live at the step (side 1) fixes its run's values of the parts
 * before it live too, fixed not live (2) those after it not live; 0 where a fix contradicts. */
static int order_fixes(ctx *c, int q, int side)
{
    if (!c->sym) return 1;
    for (int r = side == 1 ? c->sprev[q] : c->snext[q]; r >= 0; r = side == 1 ? c->sprev[r] : c->snext[r]) {
        if (c->fix[r] && c->fix[r] != side) return 0;
        c->fix[r] = (char)side;
    }
    return 1;
}

/* The nodes a window of nv values may expand (BB_WORK above). */
static int bb_nodes(int nv)
{
    int k = nv > 0 ? BB_WORK / nv : BB_NODES_MAX;
    return k < BB_NODES_MIN ? BB_NODES_MIN : k > BB_NODES_MAX ? BB_NODES_MAX : k;
}

/* Branch and bound on the window's program in integers (the Lagrangian alone is its linear
 * relaxation: where one large value would fit half, it prices half its recomputation). A node
 * fixes values live at the step or not; its bound is its Lagrangian, at least its parent's (a
 * subset of the parent's solutions); the window's bound is the least over the open nodes and
 * the best solution met (the optimum is one of them). At most bb_nodes() nodes are expanded,
 * each branching on the largest free value that the solutions either side of the slack
 * disagree on. The root is the window's Lagrangian (root, its best solution within the slack
 * `primal`, c->lo_res / hi_res as lagrange left them); every node bisects lambda in [lo, hi]. */
static double branch_and_bound(ctx *c, double slack, double lo, double hi, double root, double primal, int have_lo,
                               int have_hi)
{
    int nv = c->nv, nodes = bb_nodes(nv), cap = 2 * nodes + 1, open = 0;
    char *fixes = mg_xcalloc((size_t)cap * (size_t)nv, 1), *lo_of = mg_xcalloc((size_t)cap * (size_t)nv, 1),
         *hi_of = mg_xcalloc((size_t)cap * (size_t)nv, 1);
    double *bound = mg_xcalloc((size_t)cap, sizeof *bound), incumbent = HUGE_VAL;
    char *haslo = mg_xcalloc((size_t)cap, 1), *hashi = mg_xcalloc((size_t)cap, 1);
    bound[0] = root; /* the root: the window's Lagrangian, its solutions in c->lo_res and hi_res */
    if (primal < incumbent) incumbent = primal;
    memcpy(lo_of, c->lo_res, (size_t)nv);
    memcpy(hi_of, c->hi_res, (size_t)nv);
    haslo[0] = have_lo && have_hi;
    hashi[0] = (char)have_hi;
    open = 1;
    for (int expanded = 0; expanded < nodes && open > 0; expanded++) {
        int b = 0;
        for (int k = 1; k < open; k++)
            if (bound[k] < bound[b]) b = k;
        if (bound[b] >= incumbent * (1 - 1e-12)) break; /* nothing open beats the best solution */
        /* the branching value: free, recomputable, live above the slack and not within it */
        int pick = -1;
        if (haslo[b])
            for (int q = 0; q < nv; q++) {
                int v = c->vals[q];
                if (fixes[(size_t)b * nv + q] || !c->pr->evictable[v]) continue;
                if (lo_of[(size_t)b * nv + q] == hi_of[(size_t)b * nv + q]) continue;
                if (pick < 0 || c->pr->bytes[v] > c->pr->bytes[c->vals[pick]]) pick = q;
            }
        /* where the solutions agree, the one within the slack may still leave no room for its
         * rebuilds (rebuilds_fit): then the largest free value of N it keeps live */
        if (pick < 0 && c->rebuilds && hashi[b]) {
            memcpy(c->cur, hi_of + (size_t)b * nv, (size_t)nv);
            char *node = c->fix;
            c->fix = fixes + (size_t)b * nv;
            int ok = solution_rebuilds_fit(c, slack);
            c->fix = node;
            for (int q = 0; q < nv && !ok; q++) {
                int v = c->vals[q];
                if (fixes[(size_t)b * nv + q] || !c->pr->evictable[v] || !c->inN[v] || !hi_of[(size_t)b * nv + q])
                    continue;
                if (pick < 0 || c->pr->bytes[v] > c->pr->bytes[c->vals[pick]]) pick = q;
            }
        }
        if (pick < 0) break; /* (the node stays open: its bound holds) */
        double pb = bound[b];
        char *pf = mg_xcalloc((size_t)nv, 1);
        memcpy(pf, fixes + (size_t)b * nv, (size_t)nv);
        /* the node leaves the open list (the last takes its place) */
        open--;
        memcpy(fixes + (size_t)b * nv, fixes + (size_t)open * nv, (size_t)nv);
        memcpy(lo_of + (size_t)b * nv, lo_of + (size_t)open * nv, (size_t)nv);
        memcpy(hi_of + (size_t)b * nv, hi_of + (size_t)open * nv, (size_t)nv);
        bound[b] = bound[open];
        haslo[b] = haslo[open];
        hashi[b] = hashi[open];
        for (int side = 1; side <= 2; side++) {
            memcpy(c->fix, pf, (size_t)nv);
            c->fix[pick] = (char)side;
            if (!order_fixes(c, pick, side)) continue; /* (the run's order leaves no solution) */
            double kept = 0;
            for (int q = 0; q < nv; q++)
                if (c->fix[q] == 1) kept += (double)c->pr->bytes[c->vals[q]];
            if (kept > slack) continue; /* no solution: the values fixed live do not fit */
            if (!rebuilds_fit(c, slack, kept)) continue; /* nor the rebuilds */
            if (side == 2 && c->inN[c->vals[pick]] && !c->pr->evictable[c->vals[pick]]) continue;
            double x = lagrange(c, slack, lo, hi, LAMBDA_STEPS, &primal, &have_lo, &have_hi);
            if (primal < incumbent) incumbent = primal;
            if (x < pb) x = pb;
            if (x >= incumbent * (1 - 1e-12)) continue; /* the node's solutions are no better than one met */
            memcpy(fixes + (size_t)open * nv, c->fix, (size_t)nv);
            memcpy(lo_of + (size_t)open * nv, c->lo_res, (size_t)nv);
            memcpy(hi_of + (size_t)open * nv, c->hi_res, (size_t)nv);
            bound[open] = x;
            haslo[open] = have_lo && have_hi;
            hashi[open] = (char)have_hi;
            open++;
        }
        free(pf);
    }
    double lb = incumbent;
    for (int k = 0; k < open; k++)
        if (bound[k] < lb) lb = bound[k];
    if (lb < root) lb = root; /* (the root's Lagrangian holds for every solution) */
    memset(c->fix, 0, (size_t)nv);
    free(fixes);
    free(lo_of);
    free(hi_of);
    free(bound);
    free(haslo);
    free(hashi);
    return lb;
}

/* What the window (i, j] recomputes at least (j = T: every later read). */
static double window(ctx *c, const int64_t *need, int64_t budget, const int *reads_start, const int *reads, int i,
                     int j, int bb)
{
    const mg_problem *pr = c->pr;
    c->nv = 0;
    c->rebuilds = 0;
    /* N: values computed before i, not live at i anyway, read by a target in (i, j] */
    for (int v = 0; v < c->n; v++) {
        c->inN[v] = 0;
        if (!ws(c, v) || c->pos[v] >= i || c->freeat[v]) continue;
        for (int z = reads_start[v]; z < reads_start[v + 1] && !c->inN[v]; z++)
            c->inN[v] = reads[z] > i && reads[z] <= j;
        if (c->inN[v]) {
            c->idx[v] = c->nv;
            c->vals[c->nv++] = v;
        }
    }
    if (!c->nv) return 0;
    /* for one i, N only grows with j: the same count is the same set, and the same figure */
    if (bb) c->memo_i = -1; /* (the memo holds the Lagrangian's figures) */
    if (c->memo_i == i && c->memo_n == c->nv) {
        for (int q = 0; q < c->nv; q++) c->idx[c->vals[q]] = -1;
        return c->memo_w;
    }
    c->memo_i = i;
    c->memo_n = c->nv;
    for (int q = 0; q < c->nv; q++) { /* their ancestors through values that may be recomputed */
        int v = c->vals[q];
        if (!pr->evictable[v]) continue;
        for (int k = pr->in_start[v]; k < pr->in_start[v + 1]; k++) {
            int u = pr->in[k];
            if (!ws(c, u) || c->freeat[u] || c->idx[u] >= 0) continue;
            c->idx[u] = c->nv;
            c->vals[c->nv++] = u;
        }
    }
    if (bb) { /* rebuilds_fit's: the reads of N in the window, the values held across it */
        for (int q = 0; q < c->nv; q++) {
            int v = c->vals[q];
            c->first[q] = c->lastr[q] = -1;
            for (int z = reads_start[v]; z < reads_start[v + 1]; z++)
                if (reads[z] > i && reads[z] <= j) {
                    if (c->first[q] < 0 || reads[z] < c->first[q]) c->first[q] = reads[z];
                    if (reads[z] > c->lastr[q]) c->lastr[q] = reads[z];
                }
        }
        c->nheld = 0;
        for (int v = 0; v < c->n; v++)
            if (ws(c, v) && !pr->evictable[v] && c->idx[v] < 0 && c->pos[v] <= i && c->last[v] > i)
                c->held[c->nheld++] = v;
        c->budget = budget;
        c->rebuilds = 1;
    }
    double slack = (double)(budget - need[i]), sumc = 0, sumb = 0, best = 0;
    for (int q = 0; q < c->nv; q++) {
        sumc += pr->cost[c->vals[q]];
        sumb += (double)pr->bytes[c->vals[q]];
    }
    if (sumc > 0 && sumb > 0) {
        double primal;
        int have_lo, have_hi;
        memset(c->fix, 0, (size_t)c->nv);
        double lo = log(sumc / sumb) - 14, hi = log(sumc / sumb) + 7; /* lambda's range, log scale */
        double ordered = 0;
        if (bb && sym_runs(c)) { /* the runs' order holds for the program, not for rebuilds_fit */
            c->sym = 1;
            c->rebuilds = 0;
            ordered = lagrange(c, slack, lo, hi, LAMBDA_STEPS, &primal, &have_lo, &have_hi);
            ordered = branch_and_bound(c, slack, lo, hi, ordered, primal, have_lo, have_hi);
            c->sym = 0;
            c->rebuilds = 1;
        }
        best = lagrange(c, slack, lo, hi, LAMBDA_STEPS, &primal, &have_lo, &have_hi);
        if (bb) best = branch_and_bound(c, slack, lo, hi, best, primal, have_lo, have_hi);
        if (ordered > best) best = ordered;
    }
    for (int q = 0; q < c->nv; q++) c->idx[c->vals[q]] = -1;
    c->memo_w = proven(best, sumc, c->integral); /* (a sum of integers where every cost is one) */
    return c->memo_w;
}


/* c->freeat: the values live at target i anyway (its inputs, values that may not be dropped
 * and are live across it); c->idx cleared. */
static void live_anyway(ctx *c, int i, const int *last)
{
    const mg_problem *pr = c->pr;
    int t = c->tg[i];
    for (int v = 0; v < c->n; v++) {
        c->freeat[v] = 0;
        c->idx[v] = -1;
        if (!ws(c, v)) continue;
        int in = 0;
        for (int q = pr->in_start[t]; q < pr->in_start[t + 1]; q++) in |= pr->in[q] == v;
        if ((in && v != t) || (c->pos[v] < i && last[v] > i && !pr->evictable[v])) c->freeat[v] = 1;
    }
}

static double chain_bound(const mg_problem *pr, int64_t budget, const int *steps, int nsteps, int iters);

/* mg_cut_bound; chain_iters > 0: WIDE_CAND candidates, and the chain of the best sum's windows
 * (mg_cut_bound_chained) */
static double cut_bound(const mg_problem *pr, int64_t budget, const int *order, int chain_iters, int *starts_out,
                        int *nstarts_out)
{
    int n = pr->n, T = 0;
    if (budget == INT64_MAX) return 0;
    ctx c = {.pr = pr, .n = n, .memo_i = -1};
    c.pos = mg_xcalloc((size_t)n + 1, sizeof *c.pos);
    c.tg = mg_xcalloc((size_t)n + 1, sizeof *c.tg);
    for (int v = 0; v < n; v++) {
        c.pos[v] = order || !pr->target[v] ? -1 : T;
        if (pr->target[v]) c.tg[T++] = v;
    }
    for (int i = 0; order && i < T; i++) c.pos[c.tg[i] = order[i]] = i;
    c.T = T;
    c.integral = integral_costs(pr);
    double total = 0;
    int *last = mg_xcalloc((size_t)n + 1, sizeof *last), *rs = mg_xcalloc((size_t)n + 2, sizeof *rs);
    int64_t *need = mg_xcalloc((size_t)T + 1, sizeof *need);
    int *cand = mg_xcalloc((size_t)T + 2, sizeof *cand), m = 0;
    int64_t *excess = mg_xcalloc((size_t)T + 1, sizeof *excess);
    double *best = NULL;
    int *reads = NULL;
    c.last = last;
    c.freeat = mg_xcalloc((size_t)n + 1, 1);
    c.idx = mg_xcalloc((size_t)n + 1, sizeof *c.idx);
    c.vals = mg_xcalloc((size_t)n + 1, sizeof *c.vals);
    c.inN = mg_xcalloc((size_t)n + 1, 1);
    if (T > MAX_TARGETS) goto done;
    /* reads by targets (CSR, positions), and the last one */
    for (int v = 0; v < n; v++) last[v] = -1;
    for (int i = 0; i < T; i++)
        for (int k = pr->in_start[c.tg[i]]; k < pr->in_start[c.tg[i] + 1]; k++) {
            rs[pr->in[k] + 1]++;
            last[pr->in[k]] = i;
        }
    for (int v = 0; v < n; v++) rs[v + 1] += rs[v];
    reads = mg_xcalloc((size_t)rs[n] + 1, sizeof *reads);
    {
        int *fill = mg_xcalloc((size_t)n + 1, sizeof *fill);
        for (int i = 0; i < T; i++)
            for (int k = pr->in_start[c.tg[i]]; k < pr->in_start[c.tg[i] + 1]; k++)
                reads[rs[pr->in[k]] + fill[pr->in[k]]++] = i;
        free(fill);
    }
    for (int v = 0; v < n; v++)
        if (c.pos[v] >= 0 && pr->keep_to_end[v]) last[v] = T;
    /* what each step needs, and the candidate steps: where the others live across do not fit */
    for (int i = 0; i < T; i++) {
        int t = c.tg[i];
        int64_t nd = (pr->home[t].mem == MG_MEM_NONE ? pr->bytes[t] : 0) + pr->scratch[t], others = 0;
        for (int v = 0; v < n; v++) {
            c.freeat[v] = 0;
            if (!ws(&c, v)) continue;
            int in = 0;
            for (int k = pr->in_start[t]; k < pr->in_start[t + 1]; k++) in |= pr->in[k] == v;
            if (in && v != t) c.freeat[v] = 1;
            else if (c.pos[v] < i && last[v] > i && !pr->evictable[v]) c.freeat[v] = 1;
            else if (c.pos[v] < i && last[v] > i) others += pr->bytes[v];
            if (c.freeat[v]) nd += pr->bytes[v];
        }
        need[i] = nd;
        if (nd > budget) goto done; /* no schedule fits: nothing to bound */
        if (others > budget - nd) {
            excess[m] = others - (budget - nd);
            cand[m++] = i;
        }
    }
    /* too many candidates for every window between them: the MAX_CAND / 2 with the least slack
     * and the MAX_CAND / 2 with the largest excess (the windows the bound gains most from start
     * at such steps; the choice only makes the bound weaker, never wrong) */
    int max_cand = chain_iters > 0 ? WIDE_CAND : MAX_CAND;
    if (m > max_cand) {
        int *byslack = mg_xcalloc((size_t)m, sizeof *byslack), *byex = mg_xcalloc((size_t)m, sizeof *byex);
        char *pick = mg_xcalloc((size_t)T + 1, 1);
        for (int k = 0; k < m; k++) byslack[k] = byex[k] = k;
        for (int k = 1; k < m; k++) /* insertion sorts, ties by position (deterministic) */
            for (int q = k; q > 0 && budget - need[cand[byslack[q]]] < budget - need[cand[byslack[q - 1]]]; q--) {
                int x = byslack[q];
                byslack[q] = byslack[q - 1];
                byslack[q - 1] = x;
            }
        for (int k = 1; k < m; k++)
            for (int q = k; q > 0 && excess[byex[q]] > excess[byex[q - 1]]; q--) {
                int x = byex[q];
                byex[q] = byex[q - 1];
                byex[q - 1] = x;
            }
        for (int k = 0; k < max_cand / 2; k++) pick[cand[byslack[k]]] = pick[cand[byex[k]]] = 1;
        m = 0;
        for (int i = 0; i < T; i++)
            if (pick[i]) cand[m++] = i;
        free(byslack);
        free(byex);
        free(pick);
    }
    cand[m] = T; /* the end: a window (cand[k], T] takes every later read */
    int span = m; /* every window between candidates */
    /* w[k][d]: the window (cand[k], cand[k + 1 + d]], d < span; the last of a row (d = span)
     * the window (cand[k], T] */
    double *w = mg_xcalloc((size_t)(m + 1) * (size_t)(span + 1), sizeof *w);
    c.f.head = mg_xcalloc(2 * (size_t)n + 2, sizeof *c.f.head);
    c.f.level = mg_xcalloc(2 * (size_t)n + 2, sizeof *c.f.level);
    c.f.it = mg_xcalloc(2 * (size_t)n + 2, sizeof *c.f.it);
    c.f.queue = mg_xcalloc(2 * (size_t)n + 2, sizeof *c.f.queue);
    c.fix = mg_xcalloc((size_t)n + 1, 1);
    c.cur = mg_xcalloc((size_t)n + 1, 1);
    c.lo_res = mg_xcalloc((size_t)n + 1, 1);
    c.hi_res = mg_xcalloc((size_t)n + 1, 1);
    c.solfix = mg_xcalloc((size_t)n + 1, 1);
    c.first = mg_xcalloc((size_t)n + 1, sizeof *c.first);
    c.lastr = mg_xcalloc((size_t)n + 1, sizeof *c.lastr);
    c.held = mg_xcalloc((size_t)n + 1, sizeof *c.held);
    c.snext = mg_xcalloc((size_t)n + 1, sizeof *c.snext);
    c.sprev = mg_xcalloc((size_t)n + 1, sizeof *c.sprev);
    c.nparts = mg_part_count(pr);
    if (c.nparts > 1) { /* each part's nodes in node order (sym_runs) */
        c.pstart = mg_xcalloc((size_t)c.nparts + 2, sizeof *c.pstart);
        c.pnode = mg_xcalloc((size_t)n + 1, sizeof *c.pnode);
        c.ppos = mg_xcalloc((size_t)n + 1, sizeof *c.ppos);
        for (int v = 0; v < n; v++)
            if (pr->part[v] > 0) c.ppos[v] = c.pstart[pr->part[v] + 1]++;
        for (int p = 1; p <= c.nparts; p++) c.pstart[p + 1] += c.pstart[p];
        for (int v = 0; v < n; v++)
            if (pr->part[v] > 0) c.pnode[c.pstart[pr->part[v]] + c.ppos[v]] = v;
    }
    for (int k = 0; k < m; k++) {
        live_anyway(&c, cand[k], last);
        for (int d = 0; d < span && k + 1 + d < m; d++)
            w[(size_t)k * (span + 1) + d] = window(&c, need, budget, rs, reads, cand[k], cand[k + 1 + d], 0);
        w[(size_t)k * (span + 1) + span] = window(&c, need, budget, rs, reads, cand[k], T, 0);
    }
    /* best[l]: windows ending by cand[l]; from[l]: the window the best ends with (-1: none) */
    best = mg_xcalloc((size_t)m + 2, sizeof *best);
    int *from = mg_xcalloc((size_t)m + 2, sizeof *from);
    char *tight = mg_xcalloc((size_t)(m + 1) * (size_t)(span + 1), 1);
    /* The windows of the best sum, each in integers (branch_and_bound), the sum again, until its
     * windows are all in integers or after BB_ROUNDS rounds: only windows the best sum takes
     * are worth the branching (a window's figure only grows, so every sum stays a bound). */
    for (int round = 0; round <= BB_ROUNDS; round++) {
        for (int l = 1; l <= m; l++) {
            best[l] = best[l - 1];
            from[l] = -1;
            for (int k = l - 1; k >= 0; k--) {
                int d = l == m ? span : l - k - 1;
                if (l < m && d >= span) break;
                double x = best[k] + w[(size_t)k * (span + 1) + d];
                if (x > best[l]) best[l] = x, from[l] = k;
            }
        }
        if (round == BB_ROUNDS) break;
        int more = 0;
        for (int l = m; l > 0;) {
            if (from[l] < 0) {
                l--;
                continue;
            }
            int k = from[l], d = l == m ? span : l - k - 1;
            size_t at = (size_t)k * (span + 1) + d;
            if (!tight[at] && w[at] > 0) {
                live_anyway(&c, cand[k], last);
                w[at] = window(&c, need, budget, rs, reads, cand[k], l == m ? T : cand[l], 1);
                tight[at] = 1;
                more = 1;
            }
            l = k;
        }
        if (!more) break;
    }
    total = best[m];
    if (chain_iters > 0) { /* the windows of the best sum, linked (chain_bound) */
        int *starts = mg_xcalloc((size_t)m + 1, sizeof *starts), ns = 0;
        for (int l = m; l > 0;) {
            if (from[l] < 0) {
                l--;
                continue;
            }
            starts[ns++] = cand[from[l]];
            l = from[l];
        }
        for (int a = 0, b = ns - 1; a < b; a++, b--) { /* ascending */
            int x = starts[a];
            starts[a] = starts[b];
            starts[b] = x;
        }
        double x = chain_bound(pr, budget, starts, ns, chain_iters);
        if (x > total) total = x;
        if (starts_out) {
            memcpy(starts_out, starts, (size_t)ns * sizeof *starts);
            *nstarts_out = ns;
        }
        free(starts);
    }
    free(w);
    free(from);
    free(tight);
done:
    free(c.pos);
    free(c.tg);
    free(last);
    free(rs);
    free(reads);
    free(need);
    free(cand);
    free(excess);
    free(best);
    free(c.freeat);
    free(c.idx);
    free(c.vals);
    free(c.inN);
    free(c.fix);
    free(c.cur);
    free(c.lo_res);
    free(c.hi_res);
    free(c.solfix);
    free(c.first);
    free(c.lastr);
    free(c.held);
    free(c.snext);
    free(c.sprev);
    free(c.pstart);
    free(c.pnode);
    free(c.ppos);
    flow_free(&c.f);
    return total;
}

double mg_cut_bound(const mg_problem *pr, int64_t budget) { return cut_bound(pr, budget, NULL, 0, NULL, NULL); }

double mg_cut_bound_in(const mg_problem *pr, int64_t budget, const int *order)
{
    return cut_bound(pr, budget, order, 0, NULL, NULL);
}

double mg_cut_bound_chained(const mg_problem *pr, int64_t budget, int iters)
{
    return cut_bound(pr, budget, NULL, iters, NULL, NULL);
}

double mg_cut_bound_chain_steps(const mg_problem *pr, int64_t budget, int iters, int *starts, int *nstarts)
{
    *nstarts = 0;
    return cut_bound(pr, budget, NULL, iters, starts, nstarts);
}

/* ---- the chained windows (mg_cut_bound_chained) ------------------------------------------
 * The windows above are independent: what a window keeps live at its start step costs only
 * bytes there, even when nothing could have kept it live since the previous window's start.
 * The chain links them. Steps c_1 < .. < c_m (the starts of the best sum's windows), window
 * k = (c_k, c_k+1] (the last: to the end; a window only grows by taking the gaps up to the
 * next start). Per window and value v computed before c_k that is not live there anyway:
 * T[k,v] = "v is live at c_k or computed again in window k", s[k,v] = "v is computed again in
 * window k", with the window rows above (s <= T; s_v <= T_u for each input u not live anyway;
 * T = 1 for the values a target in the window reads; bytes of T - s within the slack of c_k),
 * and the link
 *   T[k+1,v] - s[k+1,v] <= T[k,v]:
 * a value live at c_k+1 and not computed again in window k+1 (T - s = 1 only so, in the mapping
 * of a schedule where T - s is "live at the step and not computed again") has a buffer written
 * before c_k+1: before c_k (then live at c_k, buffers have no holes) or in window k by a
 * recomputation (its target position is before c_k). Values live at c_k anyway need no link;
 * a window holds every value the next one links. Every schedule within the budget maps to a
 * solution costing at most what it recomputes (each window's recomputations are in its own
 * gaps). The bound is the Lagrangian dual: the links priced (mu per link) and each window's
 * memory row (lambda per window), each window then a closure (a minimum cut); mu by subgradient
 * steps (Polyak's, towards 5% above the best met; a known schedule's cost as the goal did
 * worse), lambda bisected per window as above. Any mu, lambda >= 0 give a bound; the best met
 * is kept, and the windows are then solved in integers (branch_and_bound, the prices as more
 * weights on T and s) under no prices and under the best: resnet50 at its minimum, over the
 * windows of 24 candidates, 42,695 -> 42,982 (the links priced, in integers; 41,522 in the
 * linear relaxation); over those of WIDE_CAND, 43,195 -> 43,863. Chains over more
 * steps (the over-full steps of least slack) came out lower: the subgradient steps did not get
 * near the dual's optimum in 200 (resnet50: 29,960 over 16 steps). */
typedef struct chain {
    const mg_problem *pr;
    int n, m;
    int *c;           /* the chain's steps (target positions), c[m] = T */
    int *vals;        /* per window k: its values at vals[vs[k] .. vs[k+1]) */
    int *vs;
    int *idx;         /* per window k and value v: idx[k * n + v], its index in the window or -1 */
    char *inN;        /* per window value (global index): read by a target in the window */
    double *slack;    /* per window */
    double *mu;       /* per window value of window k: the price of its link to window k + 1 */
    char *solT, *solS; /* per window value: the closure's solution at the window's best lambda */
    flow f;
} chain;

/* The closure of window k under lambda and the links' prices; its solution in T_ / S_ (per
 * window value); returns the Lagrangian (the cut minus lambda * slack) and *resident. */
static double chain_closure(chain *ch, int k, double lambda, double *resident, char *T_, char *S_)
{
    const mg_problem *pr = ch->pr;
    int b0 = ch->vs[k], nv = ch->vs[k + 1] - b0, S = 2 * nv, K = S + 1, n = ch->n;
    flow_reset(&ch->f, 2 * nv + 2);
    double konst = 0, inf = 0;
    for (int q = 0; q < nv; q++) {
        int v = ch->vals[b0 + q];
        inf += fabs(pr->cost[v]) + lambda * (double)pr->bytes[v] + ch->mu[b0 + q];
        if (k > 0 && ch->idx[(size_t)(k - 1) * n + v] >= 0) inf += ch->mu[ch->vs[k - 1] + ch->idx[(size_t)(k - 1) * n + v]];
    }
    inf = 4 * inf + 1;
    for (int q = 0; q < nv; q++) {
        int v = ch->vals[b0 + q];
        double b = (double)pr->bytes[v];
        double in = 0; /* the price of the link into this window */
        if (k > 0 && ch->idx[(size_t)(k - 1) * n + v] >= 0) in = ch->mu[ch->vs[k - 1] + ch->idx[(size_t)(k - 1) * n + v]];
        double wT = lambda * b + in - ch->mu[b0 + q], wS = pr->cost[v] - lambda * b - in;
        int nT = 2 * q + 1, nS = 2 * q;
        if (wT > 0) flow_edge(&ch->f, nT, K, wT);
        else if (wT < 0) {
            konst += wT;
            flow_edge(&ch->f, S, nT, -wT);
        }
        if (ch->inN[b0 + q]) flow_edge(&ch->f, S, nT, inf);
        if (!pr->evictable[v]) {
            flow_edge(&ch->f, nS, K, inf);
            continue;
        }
        if (wS > 0) flow_edge(&ch->f, nS, K, wS);
        else if (wS < 0) {
            konst += wS;
            flow_edge(&ch->f, S, nS, -wS);
        }
        flow_edge(&ch->f, nS, nT, inf);
        for (int z = pr->in_start[v]; z < pr->in_start[v + 1]; z++) {
            int u = pr->in[z], qu = ch->idx[(size_t)k * n + u];
            if (qu >= 0) flow_edge(&ch->f, nS, 2 * qu + 1, inf);
        }
    }
    double cut = flow_max(&ch->f, S, K);
    *resident = 0;
    for (int q = 0; q < nv; q++) {
        T_[q] = ch->f.level[2 * q + 1] >= 0;
        S_[q] = ch->f.level[2 * q] >= 0;
        if (T_[q] && !S_[q]) *resident += (double)pr->bytes[ch->vals[b0 + q]];
    }
    return konst + cut - lambda * ch->slack[k];
}

static double chain_bound(const mg_problem *pr, int64_t budget, const int *steps, int nsteps, int iters)
{
    int n = pr->n, T = 0;
    if (budget == INT64_MAX || iters <= 0) return 0;
    double result = 0;
    chain ch = {.pr = pr, .n = n};
    int *pos = mg_xcalloc((size_t)n + 1, sizeof *pos), *tg = mg_xcalloc((size_t)n + 1, sizeof *tg);
    int *last = mg_xcalloc((size_t)n + 1, sizeof *last);
    int64_t *need = mg_xcalloc((size_t)n + 1, sizeof *need);
    double *sl = mg_xcalloc((size_t)n + 1, sizeof *sl);
    char *freeat = mg_xcalloc((size_t)n + 1, 1);
    char *work = NULL;
    double *best_val = NULL;
    for (int v = 0; v < n; v++) {
        pos[v] = pr->target[v] ? T : -1;
        if (pr->target[v]) tg[T++] = v;
        last[v] = -1;
    }
    if (T > CHAIN_MAX_TARGETS || T == 0) goto out;
    for (int i = 0; i < T; i++)
        for (int z = pr->in_start[tg[i]]; z < pr->in_start[tg[i] + 1]; z++) last[pr->in[z]] = i;
    for (int v = 0; v < n; v++)
        if (pos[v] >= 0 && pr->keep_to_end[v]) last[v] = T;
#define CWS(v) (pos[v] >= 0 && pr->home[v].mem == MG_MEM_NONE && pr->bytes[v] > 0)
    /* what each step needs (as mg_cut_bound) */
    for (int i = 0; i < T; i++) {
        int t = tg[i];
        int64_t nd = (pr->home[t].mem == MG_MEM_NONE ? pr->bytes[t] : 0) + pr->scratch[t];
        for (int v = 0; v < n; v++) {
            if (!CWS(v)) continue;
            int in = 0;
            for (int z = pr->in_start[t]; z < pr->in_start[t + 1]; z++) in |= pr->in[z] == v;
            if ((in && v != t) || (pos[v] < i && last[v] > i && !pr->evictable[v])) nd += pr->bytes[v];
        }
        need[i] = nd;
        sl[i] = (double)(budget - nd);
        if (nd > budget) goto out;
    }
    /* the chain: the given steps (ascending, distinct) */
    ch.c = mg_xcalloc((size_t)nsteps + 2, sizeof *ch.c);
    for (int k = 0; k < nsteps; k++)
        if (steps[k] >= 0 && steps[k] < T && (ch.m == 0 || steps[k] > ch.c[ch.m - 1])) ch.c[ch.m++] = steps[k];
    if (ch.m == 0) goto out;
    int m = ch.m;
    ch.c[m] = T;
    ch.idx = mg_xcalloc((size_t)m * (size_t)n, sizeof *ch.idx);
    ch.vs = mg_xcalloc((size_t)m + 1, sizeof *ch.vs);
    ch.slack = mg_xcalloc((size_t)m + 1, sizeof *ch.slack);
    int capv = m * n + 1;
    ch.vals = mg_xcalloc((size_t)capv, sizeof *ch.vals);
    ch.inN = mg_xcalloc((size_t)capv, 1);
    for (size_t z = 0; z < (size_t)m * (size_t)n; z++) ch.idx[z] = -1;
    /* the windows' values, last window first (a window holds the values the next one links) */
    int *cnt = mg_xcalloc((size_t)m + 1, sizeof *cnt), *tmp = mg_xcalloc((size_t)n + 1, sizeof *tmp);
    char *tmpN = mg_xcalloc((size_t)n + 1, 1);
    int **wv = mg_xcalloc((size_t)m + 1, sizeof *wv);
    char **wN = mg_xcalloc((size_t)m + 1, sizeof *wN);
    for (int k = m - 1; k >= 0; k--) {
        int i = ch.c[k], j = ch.c[k + 1], t = tg[i], nv = 0;
        ch.slack[k] = sl[i];
        for (int v = 0; v < n; v++) {
            int in = 0;
            for (int z = pr->in_start[t]; z < pr->in_start[t + 1]; z++) in |= pr->in[z] == v;
            freeat[v] = CWS(v) && ((in && v != t) || (pos[v] < i && last[v] > i && !pr->evictable[v]));
        }
        for (int v = 0; v < n; v++) {
            tmpN[v] = 0;
            if (!CWS(v) || pos[v] >= i || freeat[v]) continue;
            for (int z = i + 1; z <= j && z < T && !tmpN[v]; z++)
                for (int y = pr->in_start[tg[z]]; y < pr->in_start[tg[z] + 1]; y++) tmpN[v] |= pr->in[y] == v;
            int linked = k + 1 < m && ch.idx[(size_t)(k + 1) * n + v] >= 0;
            if (tmpN[v] || linked) {
                ch.idx[(size_t)k * n + v] = nv;
                tmp[nv++] = v;
            }
        }
        for (int q = 0; q < nv; q++) { /* ancestors through recomputable values */
            int v = tmp[q];
            if (!pr->evictable[v]) continue;
            for (int z = pr->in_start[v]; z < pr->in_start[v + 1]; z++) {
                int u = pr->in[z];
                if (!CWS(u) || freeat[u] || ch.idx[(size_t)k * n + u] >= 0) continue;
                ch.idx[(size_t)k * n + u] = nv;
                tmpN[u] = 0;
                tmp[nv++] = u;
            }
        }
        cnt[k] = nv;
        wv[k] = mg_xcalloc((size_t)nv + 1, sizeof *wv[k]);
        wN[k] = mg_xcalloc((size_t)nv + 1, 1);
        for (int q = 0; q < nv; q++) {
            wv[k][q] = tmp[q];
            wN[k][q] = tmpN[tmp[q]];
        }
    }
    for (int k = 0; k < m; k++) {
        ch.vs[k + 1] = ch.vs[k] + cnt[k];
        memcpy(ch.vals + ch.vs[k], wv[k], (size_t)cnt[k] * sizeof *ch.vals);
        memcpy(ch.inN + ch.vs[k], wN[k], (size_t)cnt[k]);
        free(wv[k]);
        free(wN[k]);
    }
    free(wv);
    free(wN);
    free(cnt);
    free(tmp);
    free(tmpN);
    int tot = ch.vs[m], maxnv = 0;
    for (int k = 0; k < m; k++)
        if (ch.vs[k + 1] - ch.vs[k] > maxnv) maxnv = ch.vs[k + 1] - ch.vs[k];
    ch.mu = mg_xcalloc((size_t)tot + 1, sizeof *ch.mu);
    ch.solT = mg_xcalloc((size_t)tot + 1, 1);
    ch.solS = mg_xcalloc((size_t)tot + 1, 1);
    work = mg_xcalloc(2 * (size_t)maxnv + 2, 1);
    best_val = mg_xcalloc((size_t)m + 1, sizeof *best_val);
    double *lam_lo = mg_xcalloc((size_t)m + 1, sizeof *lam_lo), *lam_hi = mg_xcalloc((size_t)m + 1, sizeof *lam_hi);
    ch.f.head = mg_xcalloc(2 * (size_t)maxnv + 2, sizeof *ch.f.head);
    ch.f.level = mg_xcalloc(2 * (size_t)maxnv + 2, sizeof *ch.f.level);
    ch.f.it = mg_xcalloc(2 * (size_t)maxnv + 2, sizeof *ch.f.it);
    ch.f.queue = mg_xcalloc(2 * (size_t)maxnv + 2, sizeof *ch.f.queue);
    for (int k = 0; k < m; k++) {
        double sumc = 0, sumb = 0;
        for (int q = ch.vs[k]; q < ch.vs[k + 1]; q++) {
            sumc += pr->cost[ch.vals[q]];
            sumb += (double)pr->bytes[ch.vals[q]];
        }
        double mid = sumc > 0 && sumb > 0 ? log(sumc / sumb) : 0;
        lam_lo[k] = mid - 14;
        lam_hi[k] = mid + 7;
    }
    double theta = 1, bestL = 0, *mu_best = mg_xcalloc((size_t)tot + 1, sizeof *mu_best);
    int stall = 0;
    for (int it = 0; it < iters; it++) {
        double L = 0;
        for (int k = 0; k < m; k++) {
            int nv = ch.vs[k + 1] - ch.vs[k];
            char *Tq = work, *Sq = work + nv + 1;
            double lo = lam_lo[k], hi = lam_hi[k], bw = -HUGE_VAL, resident;
            /* lambda = 0 first (the memory row may not bind), then bisection */
            double x = chain_closure(&ch, k, 0, &resident, Tq, Sq);
            bw = x;
            memcpy(ch.solT + ch.vs[k], Tq, (size_t)nv);
            memcpy(ch.solS + ch.vs[k], Sq, (size_t)nv);
            if (resident > ch.slack[k])
                for (int s = 0; s < LAMBDA_STEPS; s++) {
                    double mid = (lo + hi) / 2;
                    x = chain_closure(&ch, k, exp(mid), &resident, Tq, Sq);
                    if (x > bw) {
                        bw = x;
                        memcpy(ch.solT + ch.vs[k], Tq, (size_t)nv);
                        memcpy(ch.solS + ch.vs[k], Sq, (size_t)nv);
                    }
                    if (resident > ch.slack[k]) lo = mid;
                    else hi = mid;
                }
            best_val[k] = bw;
            L += bw;
        }
        if (L > bestL * (1 + 1e-9)) {
            bestL = L;
            memcpy(mu_best, ch.mu, (size_t)tot * sizeof *mu_best);
            stall = 0;
        } else if (++stall >= 5) {
            theta /= 2;
            stall = 0;
        }
        /* the subgradient of the links: (T - s)[k+1] - T[k] */
        double norm = 0;
        for (int k = 0; k + 1 < m; k++)
            for (int q = 0; q < ch.vs[k + 1] - ch.vs[k]; q++) {
                int v = ch.vals[ch.vs[k] + q], q2 = ch.idx[(size_t)(k + 1) * n + v];
                if (q2 < 0) continue;
                double g = (double)(ch.solT[ch.vs[k + 1] + q2] && !ch.solS[ch.vs[k + 1] + q2]) - ch.solT[ch.vs[k] + q];
                norm += g * g;
            }
        if (norm == 0) break; /* every link holds: the windows' solutions are one solution */
        double goal = bestL * 1.05 + 1; /* (a known schedule's cost as the goal did worse) */
        double step = theta * (goal - L) / norm;
        for (int k = 0; k + 1 < m; k++)
            for (int q = 0; q < ch.vs[k + 1] - ch.vs[k]; q++) {
                int v = ch.vals[ch.vs[k] + q], q2 = ch.idx[(size_t)(k + 1) * n + v];
                if (q2 < 0) continue;
                double g = (double)(ch.solT[ch.vs[k + 1] + q2] && !ch.solS[ch.vs[k + 1] + q2]) - ch.solT[ch.vs[k] + q];
                double x = ch.mu[ch.vs[k] + q] + step * g;
                ch.mu[ch.vs[k] + q] = x > 0 ? x : 0;
            }
    }
    /* the windows in integers (branch_and_bound) under the prices met first (none) and the best */
    for (int pass = 0; pass < 2; pass++) {
        ctx c = {.pr = pr, .n = n, .T = T};
        c.idx = mg_xcalloc((size_t)n + 1, sizeof *c.idx);
        c.inN = mg_xcalloc((size_t)n + 1, 1);
        c.vals = mg_xcalloc((size_t)maxnv + 1, sizeof *c.vals);
        c.fix = mg_xcalloc((size_t)maxnv + 1, 1);
        c.cur = mg_xcalloc((size_t)maxnv + 1, 1);
        c.lo_res = mg_xcalloc((size_t)maxnv + 1, 1);
        c.hi_res = mg_xcalloc((size_t)maxnv + 1, 1);
        double *aT = mg_xcalloc((size_t)maxnv + 1, sizeof *aT), *aS = mg_xcalloc((size_t)maxnv + 1, sizeof *aS);
        c.addT = aT;
        c.addS = aS;
        c.f = ch.f;
        for (int v = 0; v < n; v++) c.idx[v] = -1;
        double sum = 0;
        for (int k = 0; k < m; k++) {
            int b0 = ch.vs[k];
            c.nv = ch.vs[k + 1] - b0;
            for (int q = 0; q < c.nv; q++) {
                int v = ch.vals[b0 + q];
                c.vals[q] = v;
                c.idx[v] = q;
                c.inN[v] = ch.inN[b0 + q];
                double in = 0;
                if (pass && k > 0 && ch.idx[(size_t)(k - 1) * n + v] >= 0)
                    in = mu_best[ch.vs[k - 1] + ch.idx[(size_t)(k - 1) * n + v]];
                aT[q] = in - (pass ? mu_best[b0 + q] : 0);
                aS[q] = -in;
            }
            double x = 0;
            if (c.nv) {
                double primal, lo = lam_lo[k], hi = lam_hi[k];
                int have_lo, have_hi;
                memset(c.fix, 0, (size_t)c.nv);
                x = lagrange(&c, ch.slack[k], lo, hi, LAMBDA_STEPS, &primal, &have_lo, &have_hi);
                x = branch_and_bound(&c, ch.slack[k], lo, hi, x, primal, have_lo, have_hi);
            }
            for (int q = 0; q < c.nv; q++) {
                c.idx[c.vals[q]] = -1;
                c.inN[c.vals[q]] = 0;
            }
            sum += x;
        }
        if (sum > bestL) bestL = sum;
        ch.f = c.f; /* (the flow's edge arrays may have grown) */
        free(c.idx);
        free(c.inN);
        free(c.vals);
        free(c.fix);
        free(c.cur);
        free(c.lo_res);
        free(c.hi_res);
        free(aT);
        free(aS);
    }
    free(mu_best);
    free(lam_lo);
    free(lam_hi);
    {
        double once = 0;
        for (int v = 0; v < n; v++) once += fabs(pr->cost[v]);
        result = proven(bestL, once, integral_costs(pr));
    }
#undef CWS
out:
    free(pos);
    free(tg);
    free(last);
    free(need);
    free(sl);
    free(freeat);
    free(work);
    free(best_val);
    free(ch.c);
    free(ch.vals);
    free(ch.vs);
    free(ch.idx);
    free(ch.inN);
    free(ch.slack);
    free(ch.mu);
    free(ch.solT);
    free(ch.solS);
    flow_free(&ch.f);
    return result;
}
