/* solve_exact.c — the exact solver: Checkmate's mixed-integer program (Jain et al., MLSys 2020)
 * for the problem's memory model, solved by COIN-OR CBC (Debian's coinor-libcbc-dev).
 *
 * The targets run in graph order, one stage each. Stage t may first recompute dropped forward
 * values (in graph order), then runs its target. Variables, per stage t:
 *   R[t,v]  binary   v is computed in stage t (fixed to 1 for the stage's own target; only
 *                    evictable values are ever recomputed)
 *   S[t,v]  binary   v is resident when stage t begins (it was computed or kept in stage t-1)
 *   U[t,k]  real     workspace bytes live once k has been computed in stage t
 *   F[t,i,k] real    i is freed after k in stage t (at most when nothing later needs it)
 * minimise sum cost[v] R[t,v] subject to: an op's inputs are resident or computed before it in
 * the stage; what is resident was resident or computed in the previous stage; every U, plus the
 * op's scratch, stays under the cap. F can be continuous: for fixed R and S its best value is
 * 0 or 1 anyway. "Optimal" therefore means optimal among schedules that run the targets in
 * graph order and a stage's recomputations in graph order, under a cap on peak live bytes —
 * the class Checkmate's optimum refers to; the arena may still add waste on top.
 *
 * The plan is rebuilt from R and S alone, freeing every value right after its last read, so its
 * peak is never above what the program accounted for. */
#include "clock.h"
#include "lp_cbc.h"
#include "plan.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The program's shape: stages, which values each stage may compute, and the users of each
 * value; R and S hold column numbers (-1: no such variable) indexed [stage * n + node]. */
typedef struct model {
    const mg_problem *pr;
    int n, T;
    int *tg, *pos;           /* stage -> target, node -> stage (-1 for leaves) */
    int64_t *mem;            /* workspace bytes of a node's value (0: caller memory or leaf) */
    int *R, *S;
    int *use_start, *users;  /* CSR: the targets that read each node */
} model;

static int ws(const model *md, int v) { return md->pos[v] >= 0 && md->mem[v] > 0; }

static void model_free(model *md)
{
    free(md->tg);
    free(md->pos);
    free(md->mem);
    free(md->R);
    free(md->S);
    free(md->use_start);
    free(md->users);
}

/* 0 when the problem is too big to write down (the caller says so). */
static int model_init(model *md, const mg_problem *pr, size_t max_vars)
{
    int n = pr->n;
    *md = (model){.pr = pr, .n = n};
    md->tg = mg_xcalloc((size_t)n, sizeof *md->tg);
    md->pos = mg_xcalloc((size_t)n, sizeof *md->pos);
    md->mem = mg_xcalloc((size_t)n, sizeof *md->mem);
    for (int v = 0; v < n; v++) {
        md->pos[v] = -1;
        if (!pr->target[v]) continue;
        md->pos[v] = md->T;
        md->tg[md->T++] = v;
        if (pr->home[v].mem == MG_MEM_NONE) md->mem[v] = pr->bytes[v];
    }
    if ((size_t)md->T * (size_t)n > max_vars) return 0;
    md->use_start = mg_xcalloc((size_t)n + 1, sizeof *md->use_start);
    for (int j = 0; j < n; j++)
        if (pr->target[j])
            for (int k = pr->in_start[j]; k < pr->in_start[j + 1]; k++) md->use_start[pr->in[k] + 1]++;
    for (int v = 0; v < n; v++) md->use_start[v + 1] += md->use_start[v];
    md->users = mg_xcalloc((size_t)md->use_start[n] + 1, sizeof *md->users);
    int *fill = mg_xcalloc((size_t)n, sizeof *fill);
    for (int j = 0; j < n; j++)
        if (pr->target[j])
            for (int k = pr->in_start[j]; k < pr->in_start[j + 1]; k++) {
                int u = pr->in[k];
                md->users[md->use_start[u] + fill[u]++] = j;
            }
    free(fill);
    size_t cells = (size_t)md->T * (size_t)n;
    md->R = malloc(cells * sizeof *md->R);
    md->S = malloc(cells * sizeof *md->S);
    if (!md->R || !md->S) abort();
    memset(md->R, 0xff, cells * sizeof *md->R);
    memset(md->S, 0xff, cells * sizeof *md->S);
    return 1;
}

static int Rc(const model *md, int t, int v) { return md->R[(size_t)t * md->n + v]; }
static int Sc(const model *md, int t, int v) { return t < md->T ? md->S[(size_t)t * md->n + v] : -1; }

/* Writes the program down; costs are scaled by cscale and bytes by the cap. A value gets
 * variables in stage t only while something at stage t or later may still read it: a target
 * of a later stage, or a value recomputed in this stage that is itself still needed. */
static void formulate(model *md, mg_lp *m, int64_t cap, double cscale)
{
    const mg_problem *pr = md->pr;
    int n = md->n, T = md->T;
    double B = (double)cap;
    char *need = mg_xcalloc((size_t)n, 1);
    for (int t = 0; t < T; t++) {
        for (int v = n - 1; v >= 0; v--) {
            int p = md->pos[v];
            if (p < 0 || p > t) continue;
            need[v] = pr->keep_to_end[v];
            for (int z = md->use_start[v]; z < md->use_start[v + 1] && !need[v]; z++) {
                int j = md->users[z];
                need[v] = md->pos[j] >= t || (md->R[(size_t)t * n + j] >= 0 && need[j]);
            }
            if (p == t) md->R[(size_t)t * n + v] = mg_lp_col(m, 1, 1, pr->cost[v] / cscale, 1);
            else if (pr->evictable[v] && md->mem[v] > 0 && need[v])
                md->R[(size_t)t * n + v] = mg_lp_col(m, 0, 1, pr->cost[v] / cscale, 1);
            if (p < t && md->mem[v] > 0 && need[v]) {
                double lo = pr->keep_to_end[v] ? 1 : 0; /* read after the last target: never dropped */
                md->S[(size_t)t * n + v] = mg_lp_col(m, lo, 1, 0, 1);
            }
        }
    }
    free(need);
    for (int t = 0; t < T; t++) {
        /* inputs are resident or computed first; residency carries over from stage to stage */
        for (int v = 0; v < n; v++) {
            int rk = Rc(md, t, v);
            if (rk >= 0)
                for (int k = pr->in_start[v]; k < pr->in_start[v + 1]; k++) {
                    int u = pr->in[k];
                    if (!ws(md, u)) continue; /* leaves and values in caller memory stay readable */
                    int r = mg_lp_row(m, -DBL_MAX, 0);
                    mg_lp_coef(m, r, rk, 1);
                    mg_lp_coef(m, r, Rc(md, t, u), -1);
                    mg_lp_coef(m, r, Sc(md, t, u), -1);
                }
            int s1 = Sc(md, t + 1, v);
            if (s1 >= 0) {
                int r = mg_lp_row(m, -DBL_MAX, 0);
                mg_lp_coef(m, r, s1, 1);
                mg_lp_coef(m, r, Sc(md, t, v), -1);
                mg_lp_coef(m, r, Rc(md, t, v), -1);
            }
        }
        /* memory, op by op in graph order */
        int prevU = -1, prevk = -1;
        for (int k = 0; k < n; k++) {
            int rk = Rc(md, t, k);
            if (rk < 0) continue;
            int U = mg_lp_col(m, 0, pr->scratch[k] ? DBL_MAX : 1, 0, 0);
            int r = mg_lp_row(m, 0, 0);
            mg_lp_coef(m, r, U, 1);
            mg_lp_coef(m, r, rk, -(double)md->mem[k] / B);
            if (prevU < 0) {
                for (int v = 0; v < n; v++) mg_lp_coef(m, r, Sc(md, t, v), -(double)md->mem[v] / B);
            } else {
                mg_lp_coef(m, r, prevU, -1);
                /* frees after prevk: its inputs and itself */
                int rp = Rc(md, t, prevk);
                for (int q = pr->in_start[prevk]; q <= pr->in_start[prevk + 1]; q++) {
                    int i = q < pr->in_start[prevk + 1] ? pr->in[q] : prevk, dup = 0;
                    for (int z = pr->in_start[prevk]; z < q; z++) dup |= pr->in[z] == i;
                    if (dup || !ws(md, i) || pr->keep_to_end[i]) continue;
                    int F = mg_lp_col(m, 0, 1, 0, 0);
                    mg_lp_coef(m, r, F, (double)md->mem[i] / B);
                    int f1 = mg_lp_row(m, -DBL_MAX, 0);
                    mg_lp_coef(m, f1, F, 1);
                    mg_lp_coef(m, f1, rp, -1);
                    int s1 = Sc(md, t + 1, i);
                    if (s1 >= 0) {
                        int f2 = mg_lp_row(m, -DBL_MAX, 1);
                        mg_lp_coef(m, f2, F, 1);
                        mg_lp_coef(m, f2, s1, 1);
                    }
                    for (int z = md->use_start[i]; z < md->use_start[i + 1]; z++) {
                        int j = md->users[z], rj = j > prevk ? Rc(md, t, j) : -1;
                        if (rj < 0) continue;
                        int f3 = mg_lp_row(m, -DBL_MAX, 1);
                        mg_lp_coef(m, f3, F, 1);
                        mg_lp_coef(m, f3, rj, 1);
                    }
                }
            }
            if (pr->scratch[k]) {
                int rs = mg_lp_row(m, -DBL_MAX, 1);
                mg_lp_coef(m, rs, U, 1);
                mg_lp_coef(m, rs, rk, (double)pr->scratch[k] / B);
            }
            prevU = U;
            prevk = k;
        }
    }
}

/* Replays R and S as a plan, freeing each value after its last read in its stage unless the
 * next stage keeps it. NULL if the solution is inconsistent (an input not resident). */
static mg_plan *rebuild(const model *md, const double *x)
{
    const mg_problem *pr = md->pr;
    int n = md->n, T = md->T;
    mg_plan_builder b;
    mg_pb_init(&b, pr);
    char *done = mg_xcalloc((size_t)n, 1);
    int ok = 1;
    for (int t = 0; t < T && ok; t++) {
        for (int k = 0; k < n && ok; k++) {
            int rk = Rc(md, t, k);
            if (rk < 0 || x[rk] < 0.5) continue;
            if (b.where[k].mem != MG_MEM_NONE && md->pos[k] < t) continue; /* still resident */
            for (int q = pr->in_start[k]; q < pr->in_start[k + 1]; q++) ok &= b.where[pr->in[q]].mem != MG_MEM_NONE;
            if (!ok) break;
            mg_pb_compute(&b, k, done[k]);
            done[k] = 1;
            for (int q = pr->in_start[k]; q <= pr->in_start[k + 1]; q++) {
                int i = q < pr->in_start[k + 1] ? pr->in[q] : k;
                if (!ws(md, i) || pr->keep_to_end[i]) continue;
                int s1 = Sc(md, t + 1, i), later = s1 >= 0 && x[s1] > 0.5; /* kept for a later stage */
                for (int z = md->use_start[i]; z < md->use_start[i + 1] && !later; z++) {
                    int j = md->users[z], rj = j > k ? Rc(md, t, j) : -1;
                    later = rj >= 0 && x[rj] > 0.5;
                }
                if (!later) mg_pb_release(&b, i);
            }
        }
        for (int v = 0; v < n && ok; v++) {
            int s1 = Sc(md, t + 1, v);
            if (ws(md, v) && !pr->keep_to_end[v] && (s1 < 0 || x[s1] < 0.5)) mg_pb_release(&b, v);
        }
    }
    free(done);
    if (!ok) {
        mg_pb_discard(&b);
        return NULL;
    }
    return mg_pb_finish(&b);
}

mg_status mg_solve_exact(const mg_problem *pr, int64_t cap, double time_limit, double cutoff, mg_exact_result *out,
                         mg_diag *d)
{
    *out = (mg_exact_result){.plan = NULL, .lower_bound = -1};
    model md;
    if (!model_init(&md, pr, (size_t)4 << 20)) {
        int T = md.T;
        model_free(&md);
        return mg_diag_set(d, (mg_loc){0},
                           "--solver exact: %d ops make a program too large to solve exactly (the limit is "
                           "about 2000); use --solver auto",
                           T);
    }
    double cscale = 0;
    for (int v = 0; v < pr->n; v++)
        if (pr->target[v] && pr->cost[v] > cscale) cscale = pr->cost[v];
    if (cscale <= 0) cscale = 1;
    mg_lp m = {0};
    formulate(&md, &m, cap > 0 ? cap : 1, cscale);
    double *x = mg_xcalloc((size_t)m.ncols, sizeof *x);
    mg_lp_outcome r;
    double end = mg_seconds() + time_limit, scaled_cutoff = cutoff < 1e300 ? cutoff / cscale * (1 - 1e-9) : HUGE_VAL;
    mg_status st = mg_lp_solve(&m, time_limit, scaled_cutoff, 0, MG_LP_SOLVE, &r, x, d);
    if (!st && r.crashed && !r.timed_out && end - mg_seconds() > 0.1) /* once more, the way that avoids CBC's known crashes */
        st = mg_lp_solve(&m, end - mg_seconds(), scaled_cutoff, 1, MG_LP_SOLVE, &r, x, d);
    mg_lp_free(&m);
    if (!st && r.crashed) {
        out->crashed = 1;
        out->timed_out = r.timed_out;
    } else if (!st) {
        out->proven = r.proven;
        out->infeasible = r.infeasible;
        if (r.infeasible) out->lower_bound = cutoff < 1e300 ? cutoff : -1;
        else if (r.bound > -1e29 && r.bound < 1e29) out->lower_bound = (r.bound > 0 ? r.bound : 0) * cscale * (1 - 1e-9);
        if (cutoff < 1e300 && out->lower_bound > cutoff) out->lower_bound = cutoff;
        if (r.has_x) {
            out->plan = rebuild(&md, x);
            if (!out->plan) st = mg_diag_set(d, (mg_loc){0}, "internal error: the exact solver's schedule reads a dropped value");
            else if (r.proven) out->lower_bound = out->plan->flops_executed; /* exact sums, not scaled */
            else if (out->lower_bound > out->plan->flops_executed) out->lower_bound = out->plan->flops_executed;
        }
    }
    free(x);
    model_free(&md);
    return st;
}

/* ---- the relaxed program: a lower bound for every schedule -------------------------------
 * Checkmate's program bounds only its own class (recomputations in graph order within a
 * stage, memory op by op); memgrad's own bound (planner.c) looks at one step at a time. This
 * program is a relaxation of every schedule of the memory model: per target position k (the
 * targets run in order) and workspace value v,
 *   P[v,k] binary  v is resident while target k runs
 *   E[v,k] binary  v is computed again between targets k and k+1 (evictable values only)
 * subject to
 *   P[v,pos v] = 1, and P[u,k] = 1 for every u target k reads (and to the end if u is kept);
 *   P[v,k+1] <= P[v,k] + E[v,k]      resident at k+1: resident at k, or computed in between;
 *   E[v,k] <= P[u,k] + E[u,k]        for each input u of v: u was there when v was computed,
 *                                    so it was resident at k or computed in the same gap;
 *   sum_v bytes[v] P[v,k] + scratch of target k <= cap;
 * minimising sum cost[v] E[v,k]. Every schedule under cap gives a solution of no greater cost:
 * set P from what is resident at each target and E[v,k] = 1 when v is computed in gap k at
 * least once (each such gap costs cost[v] at least); the constraints hold as argued beside
 * them. Only gaps where a recomputation can still matter get variables: v is useful in gap k
 * only while k < the last target reading v, or while an evictable value reading v is useful
 * (G below); a recomputation after that feeds nothing a target reads, so leaving it out of
 * the mapping keeps every constraint.
 *
 * Memory inside a gap. "Resident at target k" means a buffer of v is live at target k's step;
 * buffers are live from the step that writes them to their last read, without holes. So if w
 * is resident at targets k and k+1 and not computed in gap k (K[w,k] = 1), the same buffer is
 * live at every step of gap k. For each k and w that may be resident at both,
 *   K[w,k] >= P[w,k] + P[w,k+1] - E[w,k] - 1   (K continuous in [0,1]),
 *   M[k] >= sum_w bytes[w] K[w,k],  M[k] <= cap (those buffers are live at target k too);
 * and for each v that may be computed in gap k, with u over its distinct workspace inputs,
 *   M[k] + (bytes[v] + scratch[v] + sum_u bytes[u]) E[v,k] - sum_u bytes[u] K[u,k] <= cap.
 * Mapping a schedule as above with K[w,k] = 1 exactly when w's buffer spans gap k (and M[k]
 * their bytes): the first two hold; for the third, when v is computed in gap k, at that step
 * v's output and scratch are live, so is each input u (it is read there), and so is every w
 * with K[w,k] = 1; v is not among those (E[v,k] = 1) and an input u is counted once, in M[k]
 * or in its own term (the two terms cancel when K[u,k] = 1): the left side is at most that
 * step's live bytes, at most the peak, at most cap. When v is not computed there, the left
 * side is at most M[k] <= cap. Rows that cannot bind (everything that may be held plus the
 * step fits) are left out. What stays uncounted: values computed earlier in the same gap and
 * still held (the order of recomputations within a gap is free), and values resident at only
 * one of the two targets. Every workspace value's buffer counts at least its bytes, so rounding
 * up to MG_ALIGN only adds to the true peak.
 *
 * Paths back to the inputs. The rows above hold for every schedule, but their linear
 * relaxation is weak where cheap values sit between expensive ones (mlp_deep: h = tanh(z + b),
 * z = h' @ w): it keeps z "3% resident" all along and recomputes 3% of z + b and of h in each of
 * 30 gaps, paying for the cheap ops only, and its value was 0.0005 of the optimum's recomputed
 * cost; only CBC's cuts, given 20 s and more, closed that. Valid inequalities close most of it:
 * for a recomputable v, a path c_1 .. c_L of inputs (c_1 an input of v, c_{i+1} one of c_i,
 * each c_i < c_L recomputable), a target b that reads v and a position a, pos v < a < b:
 *   P[v,b] <= P[v,a] + sum_i P[c_i,a] + sum_{a<=k<b} E[c_L,k].
 * Proof, for a schedule mapped as above: say v is resident at b and not at a. Then its buffer at
 * b was written after target a (buffers have no holes, and pos v < a), in some gap k in [a,b)
 * (a target step writes only its own target, and pos v <= a). That step read c_1, so c_1's
 * buffer was live there: written before target a, so resident at a (P[c_1,a] = 1), or written
 * in a gap in [a,k]. In the latter case c_1 was recomputed there, which read c_2, and so on:
 * either some c_i is resident at a, or c_L was computed in a gap in [a,b) (E[c_L,k'] = 1 for
 * that gap, which is within c_L's horizon: horizons only grow towards inputs). On mlp_deep at
 * 50% the rows raise the linear relaxation from 0.0005 to 0.90 of the optimum's recomputed cost
 * and CBC closes the rest at the root in a few seconds (the plan is then proven optimal).
 *
 * Any bound CBC proves for this program, even when stopped early, is therefore a bound on every
 * schedule, with caveats found the hard way: CBC 2.10's preprocessing "proved" 349 on a program
 * with a feasible solution of 343 (checked row by row; tests/test_optimal.c keeps that problem),
 * and so did its knapsack cover cuts with preprocessing off once the path rows were added (the
 * program with every P and E fixed to that schedule's values is feasible, Clp says; with
 * knapsack cuts off CBC finds 343). Both are turned off here, and so are CBC's primal
 * heuristics (only the bound is wanted; the feasibility pump took half of a 20 s run on
 * mlp_deep's program).
 *
 * Large programs (those that get no memory rows: mobilenet, resnet50) are not given to CBC:
 * it did not get through its root LP and cuts within the limit there and was stopped with no
 * bound (mobilenet at its minimum with 24 s). Their linear relaxation alone is solved by Clp's
 * dual simplex in rounds, stopped on the wall clock, and the bound is proven from the row
 * multipliers it has reached (lp_cbc.c's dual_bound): mobilenet at its minimum, 1.0748 when Clp finishes. */
/* The bytes of v's step when it is computed between targets: its output, its scratch and its
 * distinct workspace inputs. */
static double gap_step(const mg_problem *pr, const int *pos, int v)
{
    double step = (double)pr->bytes[v] + (double)pr->scratch[v];
    for (int q = pr->in_start[v]; q < pr->in_start[v + 1]; q++) {
        int u = pr->in[q], dup = 0;
        for (int z = pr->in_start[v]; z < q; z++) dup |= pr->in[z] == u;
        if (!dup && pos[u] >= 0 && pr->home[u].mem == MG_MEM_NONE) step += (double)pr->bytes[u];
    }
    return step;
}

/* CHAIN_ITERS: the subgradient steps of mg_cut_bound_chained, which the relaxed bound (not the
 * linear relaxation alone) also takes: resnet50 at its minimum 42,695 -> 43,863 of 405,670
 * recomputed, in ~0.45 s (50: 43,809; 200: 43,863 in 0.9 s). Of the other Checkmate rows,
 * with 2 s runs, it beat the relaxed program's bound on segnet 50% and vgg19 80% only. */
enum { PATH_DEPTH = 2, PATH_NNZ = 300000, CHAIN_ITERS = 100 };
/* the share of the relaxed bound's time for the chained windows in integers (chain_milp) */
static const double CHAIN_SHARE = 0.4;

/* ---- the chained windows in integers ------------------------------------------------------
 * bound_cut.c's chain (mg_cut_bound_chained): steps c_1 < .. < c_m, window k = (c_k, c_k+1]
 * (the last to the end); per window and value v computed before c_k and not live there anyway
 * (an input of target c_k, or a value that may not be dropped and is live across it), binaries
 *   T[k,v]  v is live at c_k or computed again in window k   (1 when a target of the window reads v)
 *   s[k,v]  v is computed again in window k                  (0 when v may not be dropped)
 * with s <= T, s[k,v] <= T[k,u] for each input u of v in the window, sum bytes (T - s) <= the
 * slack of c_k (the cap less what target c_k needs anyway), and the links
 * T[k+1,v] - s[k+1,v] <= T[k,v]; minimising sum cost[v] s[k,v]. The argument is bound_cut.c's
 * (its chain comment): every schedule under cap maps to a solution costing at most what it
 * recomputes. bound_cut.c prices the links by a Lagrangian and solves each window alone; CBC
 * solves the program itself, which is at least as high: resnet50 at its minimum, over the 8
 * steps of bound_cut.c's chain, 45,010 (proven, ~5 s) against the Lagrangian's 43,863. More
 * steps make the program a finer relaxation (its optimum never falls when a step is added:
 * a solution with the step maps to one without it, each window's values as the union) but its
 * linear relaxation weaker: with 9 steps (290 added) 47,180 proven in ~20 s; with 21, CBC's
 * bound stayed at 37,652 after 120 s. So steps are added one at a time (mg_chain_milp_bound),
 * each kept when CBC proves a higher figure. */
static mg_status chain_milp(const mg_problem *pr, int64_t cap, const int *steps, int nsteps, double time_limit,
                            double *bound, int *proven, mg_diag *d)
{
    *bound = -1;
    *proven = 0;
    int n = pr->n, T = 0;
    int *pos = mg_xcalloc((size_t)n + 1, sizeof *pos), *tg = mg_xcalloc((size_t)n + 1, sizeof *tg);
    int *last = mg_xcalloc((size_t)n + 1, sizeof *last);
    for (int v = 0; v < n; v++) {
        pos[v] = pr->target[v] ? T : -1;
        if (pr->target[v]) tg[T++] = v;
        last[v] = -1;
    }
    for (int i = 0; i < T; i++)
        for (int z = pr->in_start[tg[i]]; z < pr->in_start[tg[i] + 1]; z++) last[pr->in[z]] = i;
    for (int v = 0; v < n; v++)
        if (pos[v] >= 0 && pr->keep_to_end[v]) last[v] = T;
#define CW(v) (pos[v] >= 0 && pr->home[v].mem == MG_MEM_NONE && pr->bytes[v] > 0)
    int m = 0, *c = mg_xcalloc((size_t)nsteps + 2, sizeof *c);
    for (int k = 0; k < nsteps; k++)
        if (steps[k] >= 0 && steps[k] < T && (m == 0 || steps[k] > c[m - 1])) c[m++] = steps[k];
    c[m] = T;
    /* Tc / Sc: the columns of window k's values, [k * n + v] (-1: not in the window) */
    int *Tc = mg_xcalloc((size_t)(m + 1) * (size_t)n + 1, sizeof *Tc), *Sc = mg_xcalloc((size_t)(m + 1) * (size_t)n + 1, sizeof *Sc);
    char *freeat = mg_xcalloc((size_t)n + 1, 1), *inN = mg_xcalloc((size_t)n + 1, 1);
    int *queue = mg_xcalloc((size_t)n + 1, sizeof *queue);
    double cscale = 0;
    for (int v = 0; v < n; v++)
        if (pos[v] >= 0 && pr->cost[v] > cscale) cscale = pr->cost[v];
    if (cscale <= 0) cscale = 1;
    /* bytes in units of cap / 1024. CBC's time to prove resnet50's chain varies with the scale
     * (its tolerances are absolute): in units of the cap, as the relaxed program counts them, not
     * within 10 s twice; of cap / 1024, 1 MiB, cap / 4000, 4312 or 16384: about 5 s; of cap /
     * 4096 not within 10 s either. */
    double B = (double)(cap > 0 ? cap : 1), U = B / 1024;
    mg_lp mp = {0};
    mg_status st = MG_OK;
    int ok = m > 0;
    for (size_t z = 0; z < (size_t)(m + 1) * (size_t)n; z++) Tc[z] = Sc[z] = -1;
    for (int k = m - 1; k >= 0 && ok; k--) { /* last window first: a window holds what the next links */
        int i = c[k], j = c[k + 1], t = tg[i], nq = 0;
        double need = (pr->home[t].mem == MG_MEM_NONE ? (double)pr->bytes[t] : 0) + (double)pr->scratch[t];
        for (int v = 0; v < n; v++) {
            int in = 0;
            for (int z = pr->in_start[t]; z < pr->in_start[t + 1]; z++) in |= pr->in[z] == v;
            freeat[v] = CW(v) && ((in && v != t) || (pos[v] < i && last[v] > i && !pr->evictable[v]));
            if (freeat[v]) need += (double)pr->bytes[v];
        }
        if (need > B) { /* no schedule fits: nothing to bound */
            ok = 0;
            break;
        }
        for (int v = 0; v < n; v++) {
            inN[v] = 0;
            if (!CW(v) || pos[v] >= i || freeat[v]) continue;
            for (int z = i + 1; z <= j && z < T && !inN[v]; z++)
                for (int y = pr->in_start[tg[z]]; y < pr->in_start[tg[z] + 1]; y++) inN[v] |= pr->in[y] == v;
            if (inN[v] || Tc[(size_t)(k + 1) * n + v] >= 0) queue[nq++] = v, Tc[(size_t)k * n + v] = 0;
        }
        for (int q = 0; q < nq; q++) { /* their ancestors through values that may be recomputed */
            int v = queue[q];
            if (!pr->evictable[v]) continue;
            for (int z = pr->in_start[v]; z < pr->in_start[v + 1]; z++) {
                int u = pr->in[z];
                if (!CW(u) || freeat[u] || Tc[(size_t)k * n + u] >= 0) continue;
                Tc[(size_t)k * n + u] = 0;
                queue[nq++] = u;
            }
        }
        int rmem = mg_lp_row(&mp, -DBL_MAX, (B - need) / U);
        for (int q = 0; q < nq; q++) {
            int v = queue[q];
            int tc = mg_lp_col(&mp, inN[v] ? 1 : 0, 1, 0, 1), sc = mg_lp_col(&mp, 0, pr->evictable[v] ? 1 : 0, pr->cost[v] / cscale, 1);
            Tc[(size_t)k * n + v] = tc;
            Sc[(size_t)k * n + v] = sc;
            mg_lp_coef(&mp, rmem, tc, (double)pr->bytes[v] / U);
            mg_lp_coef(&mp, rmem, sc, -(double)pr->bytes[v] / U);
            int r = mg_lp_row(&mp, -DBL_MAX, 0); /* s - T <= 0 */
            mg_lp_coef(&mp, r, sc, 1);
            mg_lp_coef(&mp, r, tc, -1);
        }
        for (int q = 0; q < nq; q++) { /* s_v - T_u <= 0 for each input u in the window */
            int v = queue[q];
            for (int z = pr->in_start[v]; z < pr->in_start[v + 1]; z++) {
                int u = pr->in[z], dup = 0;
                for (int y = pr->in_start[v]; y < z; y++) dup |= pr->in[y] == u;
                if (dup || Tc[(size_t)k * n + u] < 0) continue;
                int r = mg_lp_row(&mp, -DBL_MAX, 0);
                mg_lp_coef(&mp, r, Sc[(size_t)k * n + v], 1);
                mg_lp_coef(&mp, r, Tc[(size_t)k * n + u], -1);
            }
        }
        if (k + 1 < m) /* the links: T[k+1,v] - s[k+1,v] - T[k,v] <= 0 */
            for (int v = 0; v < n; v++) {
                if (Tc[(size_t)(k + 1) * n + v] < 0 || Tc[(size_t)k * n + v] < 0) continue;
                int r = mg_lp_row(&mp, -DBL_MAX, 0);
                mg_lp_coef(&mp, r, Tc[(size_t)(k + 1) * n + v], 1);
                mg_lp_coef(&mp, r, Sc[(size_t)(k + 1) * n + v], -1);
                mg_lp_coef(&mp, r, Tc[(size_t)k * n + v], -1);
            }
    }
#undef CW
    if (ok && mp.ncols > 0) {
        mg_lp_outcome r;
        double *x = mg_xcalloc((size_t)mp.ncols, sizeof *x);
        st = mg_lp_solve(&mp, time_limit, HUGE_VAL, 0, MG_LP_BOUND, &r, x, d);
        if (!st && !r.crashed && !r.infeasible && r.bound > -1e29 && r.bound < 1e29)
            *bound = r.bound > 0 ? r.bound * cscale * (1 - 1e-6) : 0, *proven = r.proven; /* (CBC's tolerances) */
        free(x);
    }
    mg_lp_free(&mp);
    free(pos);
    free(tg);
    free(last);
    free(c);
    free(Tc);
    free(Sc);
    free(freeat);
    free(inN);
    free(queue);
    return st;
}

mg_status mg_chain_milp_bound(const mg_problem *pr, int64_t cap, double time_limit, double *bound, mg_diag *d)
{
    int T = 0;
    for (int v = 0; v < pr->n; v++) T += pr->target[v] != 0;
    *bound = -1;
    if (T == 0) return MG_OK;
    int *starts = mg_xcalloc((size_t)T + 2, sizeof *starts), *tryset = mg_xcalloc((size_t)T + 2, sizeof *tryset);
    int ns = 0, proven = 0;
    char *tried = mg_xcalloc((size_t)T + 1, 1);
    double t0 = mg_seconds(), stop = t0 + time_limit, x;
    double best = mg_cut_bound_chain_steps(pr, cap, CHAIN_ITERS, starts, &ns);
    mg_status st = MG_OK;
    if (ns > 0 && !(st = chain_milp(pr, cap, starts, ns, stop - mg_seconds(), &x, &proven, d)) && x > best) best = x;
    /* More steps, one at a time, each kept when CBC proves a higher figure within a few times
     * what the first solve took: a step splitting the widest window (the most targets under one
     * memory row) at 3/4, 1/2 or 1/4 of it (resnet50 at its minimum, the window (180, 318]
     * with 280, 290, 230, 260 added: 47,260, 47,180, 45,895, 45,435 against 45,010; 200 adds
     * nothing), until each such split has been tried. */
    double each = 4 * (mg_seconds() - t0) + 1;
    for (int more = 1; more && !st && proven && ns > 0;) {
        more = 0;
        int k = -1; /* the widest window with an untried split */
        for (int z = 0; z < ns; z++) {
            int a = starts[z], b = z + 1 < ns ? starts[z + 1] : T, fresh = 0;
            for (int f = 3; f >= 1; f--) fresh |= !tried[a + (b - a) * f / 4];
            if (b - a >= 4 && fresh && (k < 0 || b - a > (k + 1 < ns ? starts[k + 1] : T) - starts[k])) k = z;
        }
        for (int f = 3; f >= 1 && k >= 0 && !more && !st; f--) {
            int a = starts[k], b = k + 1 < ns ? starts[k + 1] : T, at = a + (b - a) * f / 4, nt = 0, pv;
            if (tried[at]) continue;
            tried[at] = 1;
            double left = stop - mg_seconds();
            if (left < 0.5) break;
            for (int z = 0; z < ns; z++) {
                if (z == k + 1) tryset[nt++] = at;
                tryset[nt++] = starts[z];
            }
            if (k + 1 == ns) tryset[nt++] = at;
            st = chain_milp(pr, cap, tryset, nt, left < each ? left : each, &x, &pv, d);
            if (!st && pv && x > best) {
                best = x;
                memcpy(starts, tryset, (size_t)nt * sizeof *starts);
                ns = nt;
            }
            more = 1; /* (a split tried: look for the widest window again) */
        }
    }
    free(starts);
    free(tryset);
    free(tried);
    if (!st) *bound = best;
    return st;
}

mg_status mg_relaxed_bound(const mg_problem *pr, int64_t cap, double time_limit, double *bound, mg_diag *d)
{
    return mg_relaxed_bound_below(pr, cap, time_limit, HUGE_VAL, bound, d);
}

static mg_status relaxed_bound(const mg_problem *pr, int64_t cap, double time_limit, double cutoff, int lp_only,
                               double *bound, mg_diag *d);
static mg_status relaxed_window(const mg_problem *pr, int64_t cap, int p, int glast, double time_limit, double cutoff,
                                int lp_only, double *bound, mg_diag *d);

mg_status mg_relaxed_bound_below(const mg_problem *pr, int64_t cap, double time_limit, double cutoff, double *bound,
                                 mg_diag *d)
{
    return relaxed_bound(pr, cap, time_limit, cutoff, 0, bound, d);
}

mg_status mg_relaxed_lp_bound(const mg_problem *pr, int64_t cap, double time_limit, double *bound, mg_diag *d)
{
    return relaxed_bound(pr, cap, time_limit, HUGE_VAL, 1, bound, d);
}

/* lp_only: the linear relaxation alone (Clp), as on programs too large for CBC's root */
static mg_status relaxed_bound(const mg_problem *pr, int64_t cap, double time_limit, double cutoff, int lp_only,
                               double *bound, mg_diag *d)
{
    *bound = -1;
    int T = 0;
    double once = 0, end = mg_seconds() + time_limit;
    for (int v = 0; v < pr->n; v++)
        if (pr->target[v]) T++, once += pr->cost[v];
    mg_status st = MG_OK;
    double chained = -1; /* bound_cut.c's windows, chained, in integers: another argument, the larger holds */
    if (!lp_only && T > 0 && !(st = mg_chain_milp_bound(pr, cap, CHAIN_SHARE * time_limit, &chained, d)) && chained >= 0)
        chained += once;
    if (!st && T > 0) {
        double rec, left = end - mg_seconds();
        st = relaxed_window(pr, cap, 0, T - 1, left, cutoff < 1e300 ? cutoff - once : HUGE_VAL, lp_only, &rec, d);
        if (!st && rec >= 0) *bound = cutoff < 1e300 && rec >= cutoff - once ? cutoff : once + rec;
    }
    if (!st && chained > once && chained > *bound) *bound = chained < cutoff ? chained : cutoff;
    return st;
}

mg_status mg_relaxed_window_bound(const mg_problem *pr, int64_t cap, int first, int last, double time_limit,
                                  double cutoff, double *bound, mg_diag *d)
{
    return relaxed_window(pr, cap, first, last - 1, time_limit, cutoff, 0, bound, d);
}

/* The relaxed program over target positions p .. plast = min(glast + 1, T - 1), counting the
 * recomputations of gaps p .. glast only; what is resident at p is free (whatever fits, as at
 * the first position of the whole program). *bound: a bound on what those gaps recompute
 * (beyond every op once), at most cutoff (HUGE_VAL: none), -1 when none was proven. */
static mg_status relaxed_window(const mg_problem *pr, int64_t cap, int p, int glast, double time_limit, double cutoff,
                                int lp_only, double *bound, mg_diag *d)
{
    *bound = -1;
    if (time_limit < MG_LP_MIN_SECONDS) return MG_OK; /* (not worth building: it would not be solved) */
    int n = pr->n, T = 0;
    int *pos = mg_xcalloc((size_t)n + 1, sizeof *pos), *tg = mg_xcalloc((size_t)n + 1, sizeof *tg);
    int *G = mg_xcalloc((size_t)n + 1, sizeof *G), *H = mg_xcalloc((size_t)n + 1, sizeof *H);
    int *P0 = mg_xcalloc((size_t)n + 1, sizeof *P0), *E0 = mg_xcalloc((size_t)n + 1, sizeof *E0);
    int *lo = mg_xcalloc((size_t)n + 1, sizeof *lo), *Pe = mg_xcalloc((size_t)n + 1, sizeof *Pe);
    int *Ee = mg_xcalloc((size_t)n + 1, sizeof *Ee);
    for (int v = 0; v < n; v++) {
        pos[v] = -1;
        if (!pr->target[v]) continue;
        pos[v] = T;
        tg[T++] = v;
    }
#define WS(v) (pos[v] >= 0 && pr->home[v].mem == MG_MEM_NONE && pr->bytes[v] > 0)
    /* G[v]: the last gap in which recomputing v may matter; H[v] = G[v] + 1: the last position
     * at which v's residency matters. Consumers come later in the order: fill backwards. */
    for (int v = 0; v < n; v++) G[v] = pos[v] - 1;
    for (int k = 0; k < T; k++)
        for (int q = pr->in_start[tg[k]]; q < pr->in_start[tg[k] + 1]; q++) {
            int u = pr->in[q];
            if (pos[u] >= 0 && k - 1 > G[u]) G[u] = k - 1;
        }
    for (int v = n - 1; v >= 0; v--) {
        if (!WS(v)) continue;
        if (pr->keep_to_end[v]) G[v] = T - 1;
        if (pr->evictable[v])
            for (int q = pr->in_start[v]; q < pr->in_start[v + 1]; q++) {
                int u = pr->in[q];
                if (pos[u] >= 0 && G[v] > G[u]) G[u] = G[v];
            }
    }
    /* the window: positions p .. plast, gaps p .. glast; v has P[v, lo..Pe] and E[v, lo..Ee] */
    int plast = glast + 1 < T ? glast + 1 : T - 1;
    size_t cols = 0; /* as large as the MILP's at most; skipped where that would be too large to solve */
    for (int v = 0; v < n; v++) {
        if (!WS(v)) continue;
        H[v] = G[v] + 1 < T ? G[v] + 1 : T - 1;
        if (H[v] < pos[v]) H[v] = pos[v];
        if (G[v] >= T) G[v] = T - 1;
        lo[v] = pos[v] > p ? pos[v] : p;
        Pe[v] = H[v] < plast ? H[v] : plast;
        Ee[v] = G[v] < glast ? G[v] : glast;
        if (lo[v] <= Pe[v]) cols += (size_t)(Pe[v] - lo[v] + 1) * 2;
    }
#define IN(v) (WS(v) && lo[v] <= Pe[v])
    mg_lp m = {0};
    mg_status st = MG_OK;
    if (p < 0 || p > plast || cols > (size_t)4 << 20) goto done;
    double cscale = 0;
    for (int v = 0; v < n; v++)
        if (pos[v] >= 0 && pr->cost[v] > cscale) cscale = pr->cost[v];
    if (cscale <= 0) cscale = 1;
    double B = (double)(cap > 0 ? cap : 1);
    /* columns: P[v, lo..Pe] then E[v, lo..Ee] (evictable only), contiguous per value */
    for (int v = 0; v < n; v++) {
        E0[v] = -1;
        if (!IN(v)) continue;
        P0[v] = m.ncols;
        for (int k = lo[v]; k <= Pe[v]; k++) mg_lp_col(&m, k == pos[v] || pr->keep_to_end[v] ? 1 : 0, 1, 0, 1);
        if (pr->evictable[v] && Ee[v] >= lo[v]) {
            E0[v] = m.ncols;
            for (int k = lo[v]; k <= Ee[v]; k++) mg_lp_col(&m, 0, 1, pr->cost[v] / cscale, 1);
        }
    }
#define PC(v, k) (IN(v) && (k) >= lo[v] && (k) <= Pe[v] ? P0[v] + (k) - lo[v] : -1)
#define EC(v, k) (IN(v) && E0[v] >= 0 && (k) >= lo[v] && (k) <= Ee[v] ? E0[v] + (k) - lo[v] : -1)
    int bad = 0; /* a read outside the horizon: cannot happen; no bound then rather than a wrong one */
    for (int k = p; k <= plast; k++)
        for (int q = pr->in_start[tg[k]]; q < pr->in_start[tg[k] + 1]; q++) {
            int u = pr->in[q], c = PC(u, k);
            if (!WS(u)) continue;
            if (c < 0) bad = 1;
            else m.lb[c] = 1;
        }
    for (int v = 0; v < n; v++) {
        if (!IN(v)) continue;
        for (int k = lo[v]; k < Pe[v]; k++) { /* P[v,k+1] - P[v,k] - E[v,k] <= 0 */
            int r = mg_lp_row(&m, -DBL_MAX, 0);
            mg_lp_coef(&m, r, PC(v, k + 1), 1);
            mg_lp_coef(&m, r, PC(v, k), -1);
            mg_lp_coef(&m, r, EC(v, k), -1);
        }
        if (E0[v] < 0) continue;
        for (int q = pr->in_start[v]; q < pr->in_start[v + 1]; q++) {
            int u = pr->in[q], dup = 0;
            for (int z = pr->in_start[v]; z < q; z++) dup |= pr->in[z] == u;
            if (dup || !WS(u)) continue; /* leaves and caller memory stay readable */
            for (int k = lo[v]; k <= Ee[v]; k++) { /* E[v,k] - P[u,k] - E[u,k] <= 0 */
                if (PC(u, k) < 0) bad = 1;
                int r = mg_lp_row(&m, -DBL_MAX, 0);
                mg_lp_coef(&m, r, EC(v, k), 1);
                mg_lp_coef(&m, r, PC(u, k), -1);
                mg_lp_coef(&m, r, EC(u, k), -1);
            }
        }
    }
    for (int k = p; k <= plast; k++) {
        double all = (double)pr->scratch[tg[k]];
        for (int v = 0; v < n; v++)
            if (PC(v, k) >= 0) all += (double)pr->bytes[v];
        if (all <= B) continue; /* holds whatever is resident */
        int r = mg_lp_row(&m, -DBL_MAX, 1 - (double)pr->scratch[tg[k]] / B);
        for (int v = 0; v < n; v++) mg_lp_coef(&m, r, PC(v, k), (double)pr->bytes[v] / B);
    }
    /* memory inside gap k (the comment above): K, M[k] and a row per value computed there
     * (K and M only ever want to be low, so they may be continuous) */
    int *Kc = mg_xcalloc((size_t)n + 1, sizeof *Kc);
    /* (not on large programs: mobilenet's grew from 144k to 288k nonzeros, and CBC, which did
     * not get past the root of the smaller one, overran a 15 s limit on the larger; longer
     * limits allow larger programs, up to 4 times larger from 96 s on) */
    double scale = time_limit > 24 ? (time_limit < 96 ? time_limit / 24 : 4) : 1;
    int small = m.nnz <= 100000 * scale;
    for (int k = p; k + 1 <= plast && k <= glast && small; k++) {
        double held = 0; /* the most M[k] can be */
        for (int w = 0; w < n; w++) {
            Kc[w] = -1;
            if (PC(w, k) >= 0 && PC(w, k + 1) >= 0) held += (double)pr->bytes[w];
        }
        int any = 0; /* a row that can bind: else no variables either */
        for (int v = 0; v < n && !any; v++) any = EC(v, k) >= 0 && gap_step(pr, pos, v) + held > B;
        if (!any) continue;
        int Mk = mg_lp_col(&m, 0, 1, 0, 0), rm = mg_lp_row(&m, 0, DBL_MAX); /* M[k] - sum bytes K >= 0 */
        mg_lp_coef(&m, rm, Mk, 1);
        for (int w = 0; w < n; w++) {
            if (PC(w, k) < 0 || PC(w, k + 1) < 0 || pr->bytes[w] == 0) continue;
            Kc[w] = mg_lp_col(&m, 0, 1, 0, 0);
            int r = mg_lp_row(&m, -1, DBL_MAX); /* K - P[w,k] - P[w,k+1] + E[w,k] >= -1 */
            mg_lp_coef(&m, r, Kc[w], 1);
            mg_lp_coef(&m, r, PC(w, k), -1);
            mg_lp_coef(&m, r, PC(w, k + 1), -1);
            mg_lp_coef(&m, r, EC(w, k), 1);
            mg_lp_coef(&m, rm, Kc[w], -(double)pr->bytes[w] / B);
        }
        for (int v = 0; v < n; v++) {
            if (EC(v, k) < 0) continue;
            double step = gap_step(pr, pos, v);
            if (step + held <= B) continue; /* cannot bind */
            int r = mg_lp_row(&m, -DBL_MAX, 1);
            mg_lp_coef(&m, r, Mk, 1);
            mg_lp_coef(&m, r, EC(v, k), step / B);
            for (int q = pr->in_start[v]; q < pr->in_start[v + 1]; q++) {
                int u = pr->in[q], dup = 0;
                for (int z = pr->in_start[v]; z < q; z++) dup |= pr->in[z] == u;
                if (!dup && WS(u) && Kc[u] >= 0) mg_lp_coef(&m, r, Kc[u], -(double)pr->bytes[u] / B);
            }
        }
    }
    free(Kc);
    /* paths back to the inputs (the comment above), with prefix sums S[u,k] = sum_{j<k} E[u,j]
     * (so that a row has a few terms, not one per gap): paths of up to PATH_DEPTH values when
     * the program stays within PATH_NNZ nonzeros (times scale), else shorter ones, else none */
    int *S0 = mg_xcalloc((size_t)n + 1, sizeof *S0);
    int *rstart = mg_xcalloc((size_t)n + 2, sizeof *rstart), *fill = mg_xcalloc((size_t)n + 1, sizeof *fill);
    for (int k = 0; k < T; k++) /* the targets that read each value, CSR */
        for (int q = pr->in_start[tg[k]]; q < pr->in_start[tg[k] + 1]; q++) rstart[pr->in[q] + 1]++;
    for (int v = 0; v < n; v++) rstart[v + 1] += rstart[v];
    int *readers = mg_xcalloc((size_t)rstart[n] + 1, sizeof *readers);
    for (int k = 0; k < T; k++)
        for (int q = pr->in_start[tg[k]]; q < pr->in_start[tg[k] + 1]; q++)
            readers[rstart[pr->in[q]] + fill[pr->in[q]]++] = tg[k];
    free(fill);
    int base_cols = m.ncols, base_rows = m.nrows, base_nnz = m.nnz;
    for (int depth = PATH_DEPTH; depth >= 1; depth--) {
        for (int u = 0; u < n; u++) {
            S0[u] = -1;
            if (!IN(u) || E0[u] < 0) continue;
            S0[u] = m.ncols; /* S[u,k] for k in lo+1 .. Ee+1; S[u,lo] = 0 */
            for (int k = lo[u] + 1; k <= Ee[u] + 1; k++) {
                mg_lp_col(&m, 0, k - lo[u], 0, 0); /* (at most one per gap: finite for dual_bound) */
                int r = mg_lp_row(&m, 0, 0); /* S[u,k] - S[u,k-1] - E[u,k-1] = 0 */
                mg_lp_coef(&m, r, S0[u] + k - lo[u] - 1, 1);
                if (k - 1 > lo[u]) mg_lp_coef(&m, r, S0[u] + k - lo[u] - 2, -1);
                mg_lp_coef(&m, r, EC(u, k - 1), -1);
            }
        }
#define SC(u, k) (S0[u] >= 0 && (k) > lo[u] && (k) <= Ee[u] + 1 ? S0[u] + (k) - lo[u] - 1 : -1)
        for (int v = 0; v < n && m.nnz <= PATH_NNZ * scale; v++) {
            if (!IN(v) || E0[v] < 0 || Pe[v] <= lo[v]) continue;
            for (int q = pr->in_start[v]; q < pr->in_start[v + 1]; q++) {
                int c[PATH_DEPTH], len = 0, dup = 0;
                for (int z = pr->in_start[v]; z < q; z++) dup |= pr->in[z] == pr->in[q];
                if (dup || !WS(pr->in[q])) continue;
                c[len++] = pr->in[q];
                /* on through recomputable values with a single workspace input */
                while (len < depth && pr->evictable[c[len - 1]]) {
                    int w = -1, many = 0, x = c[len - 1];
                    for (int z = pr->in_start[x]; z < pr->in_start[x + 1]; z++)
                        if (WS(pr->in[z]) && pr->in[z] != w) many |= w >= 0, w = pr->in[z];
                    if (w < 0 || many) break;
                    c[len++] = w;
                }
                /* b: the targets that read v (P[v,b] = 1), and Pe[v] when v is kept to the end;
                 * a: every position between pos v and b (within the window) */
                for (int L = 1; L <= len; L++) {
                    int u = c[L - 1];
                    for (int z = rstart[v]; z <= rstart[v + 1]; z++) {
                        int b = z < rstart[v + 1] ? pos[readers[z]] : pr->keep_to_end[v] ? Pe[v] : -1, seen = 0;
                        if (b <= pos[v] || b > Pe[v]) continue;
                        for (int y = rstart[v]; y < z; y++) seen |= pos[readers[y]] == b;
                        if (seen) continue;
                        if (S0[u] >= 0 && b > lo[u] && SC(u, b) < 0) bad = 1; /* (cannot happen either) */
                        for (int a = pos[v] + 1 > p ? pos[v] + 1 : p; a < b; a++) {
                            /* P[v,b] - S[u,b] - P[v,a] - sum_i P[c_i,a] + S[u,a] <= 0 */
                            int r = mg_lp_row(&m, -DBL_MAX, 0);
                            mg_lp_coef(&m, r, PC(v, b), 1);
                            mg_lp_coef(&m, r, SC(u, b), -1);
                            mg_lp_coef(&m, r, PC(v, a), -1);
                            for (int i = 0; i < L; i++) {
                                if (PC(c[i], a) < 0) bad = 1; /* (cannot happen: horizons grow towards inputs) */
                                mg_lp_coef(&m, r, PC(c[i], a), -1);
                            }
                            mg_lp_coef(&m, r, SC(u, a), 1);
                        }
                    }
                }
            }
        }
        if (m.nnz <= PATH_NNZ * scale) break;
        m.ncols = base_cols; /* too large: drop them and try shorter paths */
        m.nrows = base_rows;
        m.nnz = base_nnz;
    }
#undef SC
    free(S0);
    free(rstart);
    free(readers);
#undef PC
#undef EC
#undef IN
#undef WS
    if (!bad) {
        double *x = mg_xcalloc((size_t)m.ncols, sizeof *x);
        mg_lp_outcome r;
        /* (the cutoff a hair below the schedule's cost: a program that only that cost meets
         * comes out infeasible, and then the schedule is proven optimal) */
        double scut = cutoff < 1e300 ? cutoff / cscale * (1 - 1e-9) : HUGE_VAL;
        st = mg_lp_solve(&m, time_limit, scut > 0 ? scut : 0, 0, small && !lp_only ? MG_LP_BOUND : MG_LP_RELAXED, &r, x, d);
        if (!st && !r.crashed && r.infeasible && cutoff < 1e300) *bound = cutoff;
        else if (!st && !r.crashed && !r.infeasible && r.bound > -1e29 && r.bound < 1e29)
            /* (CBC's tolerances: a hair below what it reports) */
            *bound = r.bound > 0 ? r.bound * cscale * (1 - 1e-6) : 0;
        if (*bound > cutoff) *bound = cutoff;
        free(x);
    }
done:
    mg_lp_free(&m);
    free(pos);
    free(tg);
    free(G);
    free(H);
    free(P0);
    free(E0);
    free(lo);
    free(Pe);
    free(Ee);
    return st;
}
