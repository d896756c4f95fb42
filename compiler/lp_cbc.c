/* lp_cbc.c — mixed-integer programs for CBC: built column by column and row by row, solved in a
 * child process so that a solver crash or a hang costs one solve, not the user's compiler.
 *
 * Why it exists: the exact solver, its bounds (solve_exact.c) and the windows re-solved exactly
 * (sched_lns.c) all write programs down the same way and run CBC the same way; this is that
 * way, once. */
#include "lp_cbc.h"

#include "clock.h"
#include "write_all.h"

#include <coin/Cbc_C_Interface.h>
#include <coin/Clp_C_Interface.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int mg_lp_col(mg_lp *m, double lb, double ub, double obj, int integer)
{
    if (m->ncols == m->capcols) {
        m->capcols = m->capcols ? 2 * m->capcols : 1024;
        m->lb = realloc(m->lb, (size_t)m->capcols * sizeof *m->lb);
        m->ub = realloc(m->ub, (size_t)m->capcols * sizeof *m->ub);
        m->obj = realloc(m->obj, (size_t)m->capcols * sizeof *m->obj);
        m->integer = realloc(m->integer, (size_t)m->capcols);
        if (!m->lb || !m->ub || !m->obj || !m->integer) abort();
    }
    m->lb[m->ncols] = lb;
    m->ub[m->ncols] = ub;
    m->obj[m->ncols] = obj;
    m->integer[m->ncols] = (char)integer;
    return m->ncols++;
}

int mg_lp_row(mg_lp *m, double lo, double hi)
{
    if (m->nrows == m->caprows) {
        m->caprows = m->caprows ? 2 * m->caprows : 1024;
        m->rlb = realloc(m->rlb, (size_t)m->caprows * sizeof *m->rlb);
        m->rub = realloc(m->rub, (size_t)m->caprows * sizeof *m->rub);
        if (!m->rlb || !m->rub) abort();
    }
    m->rlb[m->nrows] = lo;
    m->rub[m->nrows] = hi;
    return m->nrows++;
}

void mg_lp_coef(mg_lp *m, int r, int c, double v)
{
    if (c < 0 || v == 0) return;
    if (m->nnz == m->capnz) {
        m->capnz = m->capnz ? 2 * m->capnz : 4096;
        m->ti = realloc(m->ti, (size_t)m->capnz * sizeof *m->ti);
        m->tj = realloc(m->tj, (size_t)m->capnz * sizeof *m->tj);
        m->tv = realloc(m->tv, (size_t)m->capnz * sizeof *m->tv);
        if (!m->ti || !m->tj || !m->tv) abort();
    }
    m->ti[m->nnz] = r;
    m->tj[m->nnz] = c;
    m->tv[m->nnz++] = v;
}

void mg_lp_free(mg_lp *m)
{
    free(m->start);
    free(m->lb);
    free(m->ub);
    free(m->obj);
    free(m->integer);
    free(m->rlb);
    free(m->rub);
    free(m->ti);
    free(m->tj);
    free(m->tv);
}

/* m's matrix by columns, as CBC and Clp load it; free with columns_free. */
typedef struct columns {
    int *start, *idx;
    double *val;
} columns;

static columns to_columns(const mg_lp *m)
{
    columns c = {mg_xcalloc((size_t)m->ncols + 1, sizeof *c.start), mg_xcalloc((size_t)m->nnz, sizeof *c.idx),
                 mg_xcalloc((size_t)m->nnz, sizeof *c.val)};
    int *fill = mg_xcalloc((size_t)m->ncols, sizeof *fill);
    for (int k = 0; k < m->nnz; k++) c.start[m->tj[k] + 1]++;
    for (int j = 0; j < m->ncols; j++) c.start[j + 1] += c.start[j];
    for (int k = 0; k < m->nnz; k++) {
        int j = m->tj[k], at = c.start[j] + fill[j]++;
        c.idx[at] = m->ti[k];
        c.val[at] = m->tv[k];
    }
    free(fill);
    return c;
}

static void columns_free(columns *c)
{
    free(c->start);
    free(c->idx);
    free(c->val);
}

static Cbc_Model *to_cbc(const mg_lp *m)
{
    columns c = to_columns(m);
    Cbc_Model *cbc = Cbc_newModel();
    Cbc_loadProblem(cbc, m->ncols, m->nrows, c.start, c.idx, c.val, m->lb, m->ub, m->obj, m->rlb, m->rub);
    for (int j = 0; j < m->ncols; j++)
        if (m->integer[j]) Cbc_setInteger(cbc, j);
    columns_free(&c);
    return cbc;
}

/* A lower bound on m's linear relaxation (so on m) from any row multipliers y, whether or not
 * they are optimal: for every x within the column bounds and row ranges,
 *   c.x = (c - A'y).x + y.(Ax) >= sum_j min over [lb_j, ub_j] of r_j x_j
 *                                + sum_i (y_i > 0 ? y_i rlb_i : y_i rub_i),   r = c - A'y.
 * A multiplier on an infinite side counts as 0 (still some y); a column with an infinite bound
 * on the side its reduced cost wants gives no bound (-HUGE_VAL). Summed in long double; the
 * caller keeps a margin for the rounding. This is what makes an LP stopped early, or solved to
 * a tolerance, still a proof. */
static double dual_bound(const mg_lp *m, const columns *c, const double *y_in)
{
    long double b = 0;
    double *y = mg_xcalloc((size_t)m->nrows, sizeof *y);
    for (int i = 0; i < m->nrows; i++) {
        double v = y_in[i];
        if (!isfinite(v) || (v > 0 && m->rlb[i] <= -1e300) || (v < 0 && m->rub[i] >= 1e300)) v = 0;
        y[i] = v;
        b += v > 0 ? (long double)v * m->rlb[i] : v < 0 ? (long double)v * m->rub[i] : 0;
    }
    for (int j = 0; j < m->ncols; j++) {
        long double r = m->obj[j];
        for (int k = c->start[j]; k < c->start[j + 1]; k++) r -= (long double)c->val[k] * y[c->idx[k]];
        double side = r >= 0 ? m->lb[j] : m->ub[j];
        if (r != 0 && (side <= -1e300 || side >= 1e300)) {
            free(y);
            return -HUGE_VAL;
        }
        b += r * side;
    }
    free(y);
    return (double)b;
}

/* Runs CBC in the child end of a fork. CBC (through Clp) is built with assertions that abort
 * on some numerically awkward programs (coin-or/Clp#173); in a child that costs one solve,
 * not the user's compiler process. The child writes the outcome and the solution to a pipe. */
static void child_solve(const mg_lp *m, double time_limit, double cutoff, int cautious, enum mg_lp_mode bound_only, int fd)
{
    double end = mg_seconds() + time_limit; /* loading the program into CBC counts too */
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) { /* CBC's assertion messages are not the user's business: the parent reports */
        dup2(null, 1);
        dup2(null, 2);
    }
    if (bound_only == MG_LP_RELAXED) { /* the linear relaxation only, by Clp (see dual_bound) */
        columns c = to_columns(m);
        Clp_Simplex *clp = Clp_newModel();
        Clp_setLogLevel(clp, 0);
        Clp_loadProblem(clp, m->ncols, m->nrows, c.start, c.idx, c.val, m->lb, m->ub, m->obj, m->rlb, m->rub);
        /* the dual simplex in rounds of iterations, so that it stops on the wall clock (Clp's
         * own limit counts CPU time, and the machine may be shared); each round starts from
         * the last one's basis, and its multipliers are a bound wherever it stopped */
        double aim = end - 0.15 * time_limit - 0.5;
        int chunk = 500; /* doubled while a round takes under a second: each round starts anew */
        for (;;) {
            double t0 = mg_seconds();
            Clp_setMaximumIterations(clp, chunk);
            Clp_dual(clp, 0);
            if (Clp_status(clp) != 3 || mg_seconds() >= aim) break;
            if (mg_seconds() - t0 < 1 && chunk < 1 << 24) chunk *= 2;
        }
        mg_lp_outcome r = {0};
        r.bound = dual_bound(m, &c, Clp_dualRowSolution(clp));
        Clp_deleteModel(clp);
        columns_free(&c);
        _exit(mg_write_all(fd, &r, sizeof r) ? 1 : 0);
    }
    Cbc_Model *cbc = to_cbc(m);
    if (cautious) Cbc_setParameter(cbc, "preprocess", "off"); /* where the known assertions fire */
    Cbc_setLogLevel(cbc, 0);
    Cbc_setParameter(cbc, "log", "0");
    Cbc_setParameter(cbc, "slog", "0");
    Cbc_setParameter(cbc, "timeMode", "elapsed"); /* the limit is the user's wall clock, not CPU time */
    /* CBC reads its clock only between phases and overruns by a few seconds: aim short (on
     * large programs without preprocessing a round of root cuts took 7 s past the aim) */
    double left = (bound_only && m->nnz > 100000 ? 0.6 : 0.85) * (end - mg_seconds()) - 0.5;
    Cbc_setMaximumSeconds(cbc, left > 0.2 ? left : 0.2);
    Cbc_setAllowableGap(cbc, 1e-9);
    Cbc_setAllowableFractionGap(cbc, 1e-9);
    if (cutoff < 1e300) Cbc_setCutoff(cbc, cutoff);
    if (m->start) { /* its integer columns: CBC completes the rest */
        int ns = 0;
        int *si = mg_xcalloc((size_t)m->ncols + 1, sizeof *si);
        double *sv = mg_xcalloc((size_t)m->ncols + 1, sizeof *sv);
        for (int j = 0; j < m->ncols; j++)
            if (m->integer[j]) {
                si[ns] = j;
                sv[ns++] = m->start[j];
            }
        Cbc_setMIPStartI(cbc, ns, si, sv);
        free(si);
        free(sv);
    }
    if (bound_only) { /* the relaxed program: its bound must be a bound (see mg_relaxed_bound) */
        Cbc_setParameter(cbc, "heuristicsOnOff", "off");
        Cbc_setParameter(cbc, "preprocess", "off");
        Cbc_setParameter(cbc, "knapsackCuts", "off");
    }
    Cbc_solve(cbc);
    mg_lp_outcome r = {0};
    r.proven = Cbc_isProvenOptimal(cbc) || Cbc_isProvenInfeasible(cbc);
    r.infeasible = Cbc_isProvenInfeasible(cbc);
    r.bound = Cbc_getBestPossibleObjValue(cbc);
    const double *x = Cbc_numberSavedSolutions(cbc) > 0 || r.proven ? Cbc_bestSolution(cbc) : NULL;
    r.has_x = x != NULL && !r.infeasible;
    int ok = !mg_write_all(fd, &r, sizeof r) && (!r.has_x || !mg_write_all(fd, x, (size_t)m->ncols * sizeof *x));
    _exit(ok ? 0 : 1);
}

/* Solves m in a child process; r->crashed when the child died or overran its time limit by
 * more than a grace period (then it is killed: 10% and up to 4 s more, a quarter of the limit
 * plus 0.5 s on short limits). x receives the solution when r->has_x. Nothing is solved, and
 * r says nothing (no bound, no solution, not crashed), with less than MG_LP_MIN_SECONDS seconds. */
mg_status mg_lp_solve(const mg_lp *m, double time_limit, double cutoff, int cautious, enum mg_lp_mode bound_only, mg_lp_outcome *r,
                                double *x, mg_diag *d)
{
    *r = (mg_lp_outcome){.bound = -HUGE_VAL};
    if (time_limit < MG_LP_MIN_SECONDS) return MG_OK;
    r->bound = 0;
    int fd[2];
    if (pipe(fd)) return mg_diag_set(d, (mg_loc){0}, "cannot create a pipe for the MILP solver: %s", strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return mg_diag_set(d, (mg_loc){0}, "cannot start the MILP solver's process: %s", strerror(errno));
    }
    if (pid == 0) {
        close(fd[0]);
        child_solve(m, time_limit, cutoff, cautious, bound_only, fd[1]);
    }
    close(fd[1]);
    size_t want = sizeof *r, got = 0, total = sizeof *r;
    char *head = (char *)r;
    double grace = 0.5 + time_limit / 4; /* a CBC that hangs, not one a little late */
    double deadline = mg_seconds() + time_limit * 1.1 + (grace < 4 ? grace : 4);
    int killed = 0;
    for (;;) {
        int wait_ms = (int)((deadline - mg_seconds()) * 1000);
        struct pollfd p = {fd[0], POLLIN, 0};
        if (wait_ms <= 0 || poll(&p, 1, wait_ms) == 0) {
            kill(pid, SIGKILL);
            killed = 1;
            break;
        }
        char *dst = got < want ? head + got : (char *)x + (got - want);
        ssize_t k = read(fd[0], dst, total - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        got += (size_t)k;
        if (got == want && r->has_x) total = want + (size_t)m->ncols * sizeof *x;
        if (got == total) break;
    }
    close(fd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (killed || got != total || !WIFEXITED(status) || WEXITSTATUS(status) != 0) *r = (mg_lp_outcome){.crashed = 1, .timed_out = killed};
    return MG_OK;
}

int mg_lp_drop_fixed(const mg_lp *m, mg_lp *out, int *map)
{
    double *rlb = mg_xcalloc((size_t)m->nrows + 1, sizeof *rlb), *rub = mg_xcalloc((size_t)m->nrows + 1, sizeof *rub);
    int *cnt = mg_xcalloc((size_t)m->nrows + 1, sizeof *cnt), *rmap = mg_xcalloc((size_t)m->nrows + 1, sizeof *rmap);
    memcpy(rlb, m->rlb, (size_t)m->nrows * sizeof *rlb);
    memcpy(rub, m->rub, (size_t)m->nrows * sizeof *rub);
    for (int k = 0; k < m->nnz; k++) {
        int i = m->ti[k], j = m->tj[k];
        if (m->lb[j] == m->ub[j]) {
            if (rlb[i] > -DBL_MAX) rlb[i] -= m->tv[k] * m->lb[j];
            if (rub[i] < DBL_MAX) rub[i] -= m->tv[k] * m->lb[j];
        } else {
            cnt[i]++;
        }
    }
    int ok = 1;
    for (int i = 0; i < m->nrows; i++)
        if (cnt[i] == 0) ok &= rlb[i] <= 1e-7 && rub[i] >= -1e-7;
    *out = (mg_lp){0};
    for (int j = 0; j < m->ncols; j++)
        map[j] = m->lb[j] == m->ub[j] ? -1 : mg_lp_col(out, m->lb[j], m->ub[j], m->obj[j], m->integer[j]);
    for (int i = 0; i < m->nrows; i++) rmap[i] = cnt[i] == 0 ? -1 : mg_lp_row(out, rlb[i], rub[i]);
    for (int k = 0; k < m->nnz; k++)
        if (rmap[m->ti[k]] >= 0 && map[m->tj[k]] >= 0) mg_lp_coef(out, rmap[m->ti[k]], map[m->tj[k]], m->tv[k]);
    if (m->start) {
        out->start = mg_xcalloc((size_t)out->ncols + 1, sizeof *out->start);
        for (int j = 0; j < m->ncols; j++)
            if (map[j] >= 0) out->start[map[j]] = m->start[j];
    }
    free(rlb);
    free(rub);
    free(cnt);
    free(rmap);
    return ok;
}
