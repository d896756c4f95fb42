/* sched_lns.c — windows of a schedule re-solved exactly, for a large neighbourhood search.
 *
 * auto's improvement stages (sched_improve.c) move by reweighting the eviction scheduler or by
 * editing one recomputation at a time, so a schedule that needs several changes at once to get
 * cheaper (hold a different checkpoint across a stretch of the backward pass and recompute other
 * values around it) is out of their reach. Here a stretch of target positions [a, b) of a
 * schedule is cut out and re-solved by a mixed-integer program over that stretch alone, with the
 * rest of the schedule fixed: Checkmate's formulation (solve_exact.c explains it; the same
 * variables R, S, U, F) over the window's stages only, with two boundary conditions:
 *   - S at the first stage may be 1 only for values resident when the window starts (their
 *     buffer, written before it, is still live there);
 *   - every value the steps after the window read before computing it again is resident when it
 *     ends (kept or computed in the last stage, and not freed there).
 * The program's optimum is then the cheapest window in its class (recomputations in graph order
 * within a stage) that joins the two ends. The schedule is read as its sequence of computed
 * nodes (mg_polish_schedule's view): each computation's buffer lives from its step to its last
 * read before the node is computed again. Before the window, a value the new window no longer
 * reads ends at its last read there; after it, the resident values are the same; so the live
 * bytes outside the window never rise, and inside the program counts them at every step (it
 * holds a value at least as long as the sequence does).
 *
 * This is a research tool (bench/lns_plan.c drives it over windows of auto's plan); auto does
 * not run it. CBC runs in a child process (lp_cbc.c). */
#include "sched_lns.h"

#include "lp_cbc.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the sequence view of a schedule ------------------------------------------------------ */
static int ws(const mg_problem *pr, int v)
{
    return pr->target[v] && pr->home[v].mem == MG_MEM_NONE && pr->bytes[v] > 0;
}

static int reads(const mg_problem *pr, int v, int u)
{
    for (int k = pr->in_start[v]; k < pr->in_start[v + 1]; k++)
        if (pr->in[k] == u) return 1;
    return 0;
}

/* 1 when the instance of v alive before step `from` (computed before it) is read at or after
 * from before v is computed again, or is kept to the end. */
static int read_on(const mg_problem *pr, const int *seq, int T, int from, int v)
{
    for (int j = from; j < T; j++) {
        if (seq[j] == v) return 0;
        if (reads(pr, seq[j], v)) return 1;
    }
    return v == pr->result || pr->keep_to_end[v];
}

/* The order a stage's ops are counted and run in: a topological order of the ops that may run
 * in it (Rrow[v] >= 0) that keeps the order of seg[0..nseg) (the current schedule's steps of the
 * stage) and is otherwise graph order. Checkmate's graph order alone excludes schedules the
 * eviction scheduler makes: it recomputes a block's shortcut before its main branch where that
 * holds less (resnet50 at its minimum: 6 stages, where graph order goes over the budget), so a
 * window holding auto's steps would be outside the program. Fills ord, returns its length. */
static int stage_order(const mg_problem *pr, const int *Rrow, const int *seg, int nseg, int *ord, int *indeg,
                       int *pred, char *done)
{
    int n = pr->n, cnt = 0;
    for (int v = 0; v < n; v++) {
        pred[v] = -1;
        done[v] = 0;
    }
    for (int i = 0, last = -1; i < nseg; i++)
        if (Rrow[seg[i]] >= 0) {
            if (last >= 0 && pred[seg[i]] < 0) pred[seg[i]] = last;
            last = seg[i];
        }
    int members = 0;
    for (int v = 0; v < n; v++) {
        indeg[v] = 0;
        if (Rrow[v] < 0) continue;
        members++;
        for (int k = pr->in_start[v]; k < pr->in_start[v + 1]; k++) {
            int u = pr->in[k], dup = 0;
            for (int z = pr->in_start[v]; z < k; z++) dup |= pr->in[z] == u;
            if (!dup && Rrow[u] >= 0) indeg[v]++;
        }
        if (pred[v] >= 0 && !reads(pr, v, pred[v])) indeg[v]++;
    }
    while (cnt < members) {
        int v = 0;
        while (v < n && (Rrow[v] < 0 || done[v] || indeg[v] > 0)) v++;
        if (v == n) break; /* a cycle through the kept order: graph order instead */
        done[v] = 1;
        ord[cnt++] = v;
        for (int w = v + 1; w < n; w++)
            if (Rrow[w] >= 0 && !done[w] && reads(pr, w, v)) indeg[w]--;
        for (int w = 0; w < n; w++)
            if (pred[w] == v && !done[w] && !reads(pr, w, v)) indeg[w]--;
    }
    if (cnt < members) {
        cnt = 0;
        for (int v = 0; v < n; v++)
            if (Rrow[v] >= 0) ord[cnt++] = v;
    }
    return cnt;
}

mg_status mg_lns_window(const mg_problem *pr, int *seq, int *T, int max_T, int a, int b, int64_t cap,
                        double time_limit, int check, const char *free_vals, mg_lns_window_result *res, mg_diag *d)
{
    *res = (mg_lns_window_result){0};
    int n = pr->n, Tn = *T;
    if (pr->nfinal > 0) return MG_OK;
    /* target positions, each target's first step, the window's steps [sa, sb] */
    int *pos = malloc((size_t)n * sizeof *pos), *tg = malloc((size_t)n * sizeof *tg), ntg = 0;
    if (!pos || !tg) abort();
    for (int v = 0; v < n; v++) {
        pos[v] = pr->target[v] ? ntg : -1;
        if (pr->target[v]) tg[ntg++] = v;
    }
    if (a < 0) a = 0;
    if (b > ntg) b = ntg;
    if (a >= b) {
        free(pos);
        free(tg);
        return MG_OK;
    }
    int sa = 0, sb = -1;
    char *seen = calloc((size_t)n + 1, 1);
    if (!seen) abort();
    for (int s = 0; s < Tn; s++) {
        int v = seq[s];
        if (!seen[v] && pr->target[v]) {
            if (pos[v] == a - 1) sa = s + 1;
            if (pos[v] == b - 1) sb = s;
        }
        seen[v] = 1;
    }
    free(seen);
    if (sb < sa) {
        free(pos);
        free(tg);
        return mg_diag_set(d, (mg_loc){0}, "lns: the schedule does not run the targets in order");
    }
    /* resident at the start (inI), needed at the end (inE) */
    char *inI = calloc((size_t)n + 1, 1), *inE = calloc((size_t)n + 1, 1);
    int *lastc = malloc((size_t)n * sizeof *lastc);
    if (!inI || !inE || !lastc) abort();
    for (int v = 0; v < n; v++) lastc[v] = -1;
    for (int s = 0; s < sa; s++) lastc[seq[s]] = s;
    for (int v = 0; v < n; v++) {
        if (!ws(pr, v)) continue;
        if (lastc[v] >= 0) inI[v] = (char)read_on(pr, seq, Tn, sa, v);
        if (pos[v] < b) inE[v] = (char)read_on(pr, seq, Tn, sb + 1, v);
    }
    double old = 0;
    for (int s = sa; s <= sb; s++) old += pr->cost[seq[s]];
    res->old_cost = old;
    /* the program: stage t is target position a + t */
    int K = b - a;
    /* the current schedule's values of R and S (for the values that are not free): stage t's
     * steps run from just after target a + t - 1 to target a + t */
    char *curR = NULL, *curS = NULL;
    int *segS = malloc(((size_t)K + 1) * sizeof *segS), *segE = malloc(((size_t)K + 1) * sizeof *segE);
    if (!segS || !segE) abort();
    {
        curR = calloc((size_t)K * (size_t)n + 1, 1);
        curS = calloc((size_t)K * (size_t)n + 1, 1);
        if (!curR || !curS) abort();
        for (int v = 0; v < n; v++) lastc[v] = -1;
        int s = 0;
        for (int t = 0, seg = sa; t < K; t++) {
            for (; s < seg; s++) lastc[seq[s]] = s;
            for (int v = 0; v < n; v++)
                if (lastc[v] >= 0 && ws(pr, v))
                    curS[(size_t)t * n + v] = (char)read_on(pr, seq, Tn, seg, v);
            int e = seg;
            while (e <= sb && seq[e] != tg[a + t]) e++;
            segS[t] = seg;
            segE[t] = e <= sb ? e : sb;
            for (int j = seg; j <= e && j <= sb; j++) curR[(size_t)t * n + seq[j]] = 1;
            seg = e + 1;
        }
    }
    size_t cells = (size_t)K * (size_t)n;
    int *R = malloc(cells * sizeof *R), *S = malloc(cells * sizeof *S);
    char *need = calloc((size_t)n + 1, 1);
    if (!R || !S || !need) abort();
    memset(R, 0xff, cells * sizeof *R);
    memset(S, 0xff, cells * sizeof *S);
    double cscale = 0;
    for (int v = 0; v < n; v++)
        if (pr->target[v] && pr->cost[v] > cscale) cscale = pr->cost[v];
    if (cscale <= 0) cscale = 1;
    mg_lp m = {0};
    for (int t = 0; t < K; t++) {
        int g = a + t;
        for (int v = n - 1; v >= 0; v--) {
            int p = pos[v];
            need[v] = 0;
            if (p == g) R[(size_t)t * n + v] = mg_lp_col(&m, 1, 1, pr->cost[v] / cscale, 1);
            if (p < 0 || p > g || !ws(pr, v)) continue;
            need[v] = pr->keep_to_end[v] || inE[v];
            for (int j = v + 1; j < n && !need[v]; j++) {
                if (!reads(pr, j, v)) continue;
                need[v] = (pos[j] >= g && pos[j] < b) || (R[(size_t)t * n + j] >= 0 && need[j]);
            }
            if (p == g) {
            } else if (pr->evictable[v] && need[v]) {
                double fix = free_vals && !free_vals[v] ? curR[(size_t)t * n + v] : -1;
                R[(size_t)t * n + v] = mg_lp_col(&m, fix < 0 ? 0 : fix, fix < 0 ? 1 : fix, pr->cost[v] / cscale, 1);
            }
            if (p < g && need[v] && (t > 0 || inI[v])) {
                double lo = pr->keep_to_end[v] ? 1 : 0;
                double fix = free_vals && !free_vals[v] ? curS[(size_t)t * n + v] : -1;
                if (fix >= 0 && fix < lo) fix = lo;
                S[(size_t)t * n + v] = mg_lp_col(&m, fix < 0 ? lo : fix, fix < 0 ? 1 : fix, 0, 1);
            }
        }
    }
#define RC(t, v) R[(size_t)(t) * n + (v)]
#define SC(t, v) ((t) < K ? S[(size_t)(t) * n + (v)] : -1)
#define MEM(v) (ws(pr, v) ? pr->bytes[v] : 0)
    double B = (double)cap;
    int *ord = malloc((cells + 1) * sizeof *ord), *ordstart = calloc((size_t)K + 1, sizeof *ordstart);
    int *indeg = malloc(((size_t)n + 1) * sizeof *indeg), *pred = malloc(((size_t)n + 1) * sizeof *pred);
    char *done = malloc((size_t)n + 1);
    if (!ord || !ordstart || !indeg || !pred || !done) abort();
    for (int t = 0; t < K; t++) {
        for (int v = 0; v < n; v++) {
            int rk = RC(t, v);
            if (rk >= 0)
                for (int k = pr->in_start[v]; k < pr->in_start[v + 1]; k++) {
                    int u = pr->in[k];
                    if (!ws(pr, u)) continue;
                    int r = mg_lp_row(&m, -DBL_MAX, 0);
                    mg_lp_coef(&m, r, rk, 1);
                    mg_lp_coef(&m, r, RC(t, u), -1);
                    mg_lp_coef(&m, r, SC(t, u), -1);
                }
            if (t + 1 < K) {
                int s1 = SC(t + 1, v);
                if (s1 >= 0) {
                    int r = mg_lp_row(&m, -DBL_MAX, 0);
                    mg_lp_coef(&m, r, s1, 1);
                    mg_lp_coef(&m, r, SC(t, v), -1);
                    mg_lp_coef(&m, r, RC(t, v), -1);
                }
            } else if (ws(pr, v) && inE[v]) { /* resident when the window ends */
                int r = mg_lp_row(&m, 1, DBL_MAX);
                mg_lp_coef(&m, r, SC(t, v), 1);
                mg_lp_coef(&m, r, RC(t, v), 1);
            }
        }
        /* memory, op by op in the stage's order; a value in inE is never freed in the last stage */
        int nord = stage_order(pr, R + (size_t)t * n, seq + segS[t], segE[t] - segS[t] + 1, ord + ordstart[t], indeg,
                               pred, done);
        ordstart[t + 1] = ordstart[t] + nord;
        const int *o = ord + ordstart[t];
        int prevU = -1, prevk = -1, prevo = -1;
        for (int oi = 0; oi < nord; oi++) {
            int k = o[oi];
            int rk = RC(t, k);
            /* ops fixed not to run here add and free nothing: the chain skips them */
            if (rk < 0 || m.ub[rk] == 0) continue;
            int U = mg_lp_col(&m, 0, pr->scratch[k] ? DBL_MAX : 1, 0, 0);
            int r = mg_lp_row(&m, 0, 0);
            mg_lp_coef(&m, r, U, 1);
            mg_lp_coef(&m, r, rk, -(double)MEM(k) / B);
            if (prevU < 0) {
                for (int v = 0; v < n; v++) mg_lp_coef(&m, r, SC(t, v), -(double)MEM(v) / B);
            } else {
                mg_lp_coef(&m, r, prevU, -1);
                int rp = RC(t, prevk);
                for (int q = pr->in_start[prevk]; q <= pr->in_start[prevk + 1]; q++) {
                    int i = q < pr->in_start[prevk + 1] ? pr->in[q] : prevk, dup = 0;
                    for (int z = pr->in_start[prevk]; z < q; z++) dup |= pr->in[z] == i;
                    if (dup || !ws(pr, i) || pr->keep_to_end[i]) continue;
                    if (t == K - 1 && inE[i]) continue;
                    int F = mg_lp_col(&m, 0, 1, 0, 0);
                    mg_lp_coef(&m, r, F, (double)pr->bytes[i] / B);
                    int f1 = mg_lp_row(&m, -DBL_MAX, 0);
                    mg_lp_coef(&m, f1, F, 1);
                    mg_lp_coef(&m, f1, rp, -1);
                    int s1 = SC(t + 1, i);
                    if (s1 >= 0) {
                        int f2 = mg_lp_row(&m, -DBL_MAX, 1);
                        mg_lp_coef(&m, f2, F, 1);
                        mg_lp_coef(&m, f2, s1, 1);
                    }
                    for (int oj = prevo + 1; oj < nord; oj++) {
                        int j = o[oj], rj = RC(t, j);
                        if (rj < 0 || !reads(pr, j, i)) continue;
                        int f3 = mg_lp_row(&m, -DBL_MAX, 1);
                        mg_lp_coef(&m, f3, F, 1);
                        mg_lp_coef(&m, f3, rj, 1);
                    }
                }
            }
            if (pr->scratch[k]) {
                int rs = mg_lp_row(&m, -DBL_MAX, 1);
                mg_lp_coef(&m, rs, U, 1);
                mg_lp_coef(&m, rs, rk, (double)pr->scratch[k] / B);
            }
            prevU = U;
            prevk = k;
            prevo = oi;
        }
    }
    /* CBC's first solution: the current window (where it is in the program's class) */
    m.start = check ? NULL : mg_xcalloc((size_t)m.ncols + 1, sizeof *m.start);
    for (size_t c = 0; c < cells && m.start; c++) {
        if (R[c] >= 0) m.start[R[c]] = curR[c] || m.lb[R[c]] > 0.5;
        if (S[c] >= 0) m.start[S[c]] = curS[c] || m.lb[S[c]] > 0.5;
    }
    double *x = calloc((size_t)m.ncols + 1, sizeof *x);
    if (!x) abort();
    mg_lp_outcome r;
    mg_status st = MG_OK;
    /* at most the current window's cost: the current window, CBC's first solution, is then an
     * incumbent its heuristics improve on (only a cheaper window replaces it). CBC takes the
     * cutoff less the objective's step (the gcd of its costs, when they are integers) as the
     * bound a new solution must beat, so where the costs are integers the cutoff is raised by
     * almost their gcd; when CBC still rules out the current window it has proven that none is
     * cheaper by a step (res->proven with new_cost 0) */
    double step = 0;
    for (int v = 0; v < n; v++) {
        double c = pr->cost[v];
        if (c != floor(c) || c < 0 || c > 1e15) {
            step = 0;
            break;
        }
        double x0 = step, y0 = c; /* gcd */
        while (y0 > 0) {
            double r0 = fmod(x0, y0);
            x0 = y0;
            y0 = r0;
        }
        step = x0;
    }
    double cutoff = (old + 0.999 * step) / cscale * (1 + 1e-12) + 1e-9;
    /* the fixed columns' objective, the reduced program's cutoff */
    mg_lp red;
    int *map = malloc(((size_t)m.ncols + 1) * sizeof *map);
    if (!map) abort();
    /* (without its fixed columns: a long window with few free values is mostly fixed; CBC got
     * nowhere within minutes on resnet50's whole schedule written out with them) */
    int consistent = mg_lp_drop_fixed(&m, &red, map);
    double fixed_obj = 0;
    for (int j = 0; j < m.ncols; j++)
        if (map[j] < 0) fixed_obj += m.obj[j] * m.lb[j];
    res->vars = red.ncols;
    res->rows = red.nrows;
    double *xr = calloc((size_t)red.ncols + 1, sizeof *xr);
    if (!xr) abort();
    int solved = 0;
    if (consistent) {
        st = mg_lp_solve(&red, time_limit, cutoff - fixed_obj, 0, MG_LP_SOLVE, &r, xr, d);
        solved = !st && !r.crashed && (r.has_x || r.proven);
    }
    if (solved)
        for (int j = 0; j < m.ncols; j++) x[j] = map[j] < 0 ? m.lb[j] : xr[map[j]];
    free(xr);
    free(map);
    mg_lp_free(&red);
    if (solved) {
        res->solved = 1;
        res->proven = r.proven;
        if (r.has_x) {
            /* the window's steps: each stage's computations in its order (a value still
             * resident is not computed again) */
            int nw = 0, cap_w = Tn + n * K + 1;
            int *w = malloc((size_t)cap_w * sizeof *w);
            if (!w) abort();
            double nc = 0;
            for (int t = 0; t < K; t++)
                for (int oi = ordstart[t]; oi < ordstart[t + 1]; oi++) {
                    int k = ord[oi], rk = RC(t, k);
                    if (rk < 0 || x[rk] < 0.5) continue;
                    int sk = SC(t, k);
                    if (sk >= 0 && x[sk] > 0.5) continue;
                    w[nw++] = k;
                    nc += pr->cost[k];
                }
            int newT = sa + nw + (Tn - sb - 1);
            res->new_cost = nc;
            if (nc < old && newT <= max_T) {
                int *ns = malloc((size_t)newT * sizeof *ns);
                if (!ns) abort();
                memcpy(ns, seq, (size_t)sa * sizeof *ns);
                memcpy(ns + sa, w, (size_t)nw * sizeof *ns);
                memcpy(ns + sa + nw, seq + sb + 1, (size_t)(Tn - sb - 1) * sizeof *ns);
                int *inst = mg_xcalloc((size_t)n + 1, sizeof *inst), *last = mg_xcalloc((size_t)n + 1, sizeof *last);
                int *end = mg_xcalloc((size_t)newT + 1, sizeof *end);
                int64_t *live = mg_xcalloc((size_t)newT + 1, sizeof *live);
                int over = mg_seq_first_over(pr, ns, newT, cap, inst, last, live, end);
                free(inst);
                free(last);
                free(end);
                free(live);
                if (over == -1) {
                    memcpy(seq, ns, (size_t)newT * sizeof *ns);
                    *T = newT;
                    res->improved = 1;
                } else if (over == -2) {
                    st = mg_diag_set(d, (mg_loc){0}, "lns: internal error: the window's schedule reads a value not computed");
                }
                free(ns);
            }
            free(w);
        }
    }
#undef RC
#undef SC
#undef MEM
    free(x);
    free(curR);
    free(curS);
    free(segS);
    free(segE);
    free(ord);
    free(ordstart);
    free(indeg);
    free(pred);
    free(done);
    mg_lp_free(&m);
    free(R);
    free(S);
    free(need);
    free(inI);
    free(inE);
    free(lastc);
    free(pos);
    free(tg);
    return st;
}
