/* lp_cbc.h — mixed-integer programs written down column by column and row by row, and solved
 * by COIN-OR CBC (or their linear relaxation by Clp) in a child process. Shared by the exact
 * solver and its bounds (solve_exact.c) and by the windows re-solved exactly (sched_lns.c). */
#ifndef MG_LP_CBC_H
#define MG_LP_CBC_H
#include "ir.h"

#include <stdint.h>

/* A growing sparse program: column bounds, objective and integrality, row ranges, and the
 * matrix in triplets. Zero-initialise; free with mg_lp_free. */
typedef struct mg_lp {
    int ncols, nrows, nnz, capcols, caprows, capnz;
    double *lb, *ub, *obj;
    char *integer;
    double *rlb, *rub; /* -DBL_MAX / DBL_MAX: no bound on that side */
    int *ti, *tj;
    double *tv;
    double *start; /* NULL, or a value per column: CBC's first solution (its integer columns) */
} mg_lp;

int mg_lp_col(mg_lp *m, double lb, double ub, double obj, int integer); /* the new column */
int mg_lp_row(mg_lp *m, double lo, double hi);                          /* the new row */
void mg_lp_coef(mg_lp *m, int r, int c, double v); /* nothing for c < 0 or v == 0 */
void mg_lp_free(mg_lp *m);

/* out: m without its fixed columns (lb == ub), their part moved into the row bounds, and rows
 * left with no column dropped. map[j] (room for m->ncols): out's column of m's column j, or -1
 * (fixed at m->lb[j]). Returns 0 when the fixed part alone violates a row (no solution). */
int mg_lp_drop_fixed(const mg_lp *m, mg_lp *out, int *map);

/* What a solve gives back. */
typedef struct mg_lp_outcome {
    int crashed, timed_out; /* the child died, or overran its time and was killed */
    int proven, infeasible, has_x;
    double bound; /* a lower bound on the objective (-HUGE_VAL: none) */
} mg_lp_outcome;

enum mg_lp_mode {
    MG_LP_SOLVE = 0,   /* CBC: solutions and a bound */
    MG_LP_BOUND = 1,   /* CBC with its heuristics and preprocessing off: a bound that is one */
    MG_LP_RELAXED = 2, /* the linear relaxation alone, by Clp's dual simplex (a bound) */
};

/* The least time a CBC solve is started with. CBC reads its clock only between phases, and its
 * root alone can take seconds: a bound solve handed the last 0.013 s of a split model's
 * --time-limit ran 3.3 s (mlp at 30%, --time-limit 2: 3.2-4.6 s in all). Below this, no solve
 * and no result. */
#define MG_LP_MIN_SECONDS 0.25

/* Solves m in a child process, within time_limit seconds of wall clock, for solutions of
 * objective below cutoff (HUGE_VAL: any). cautious: CBC's preprocessing off (where its known
 * assertions fire). x (room for m->ncols) receives the solution when r->has_x. r->crashed
 * when the child died or overran by more than a grace period (then it is killed). Nothing is
 * solved, and r says nothing, with less than a quarter of a second. Fails only when the child
 * cannot be started (d says why). */
mg_status mg_lp_solve(const mg_lp *m, double time_limit, double cutoff, int cautious, enum mg_lp_mode mode,
                      mg_lp_outcome *r, double *x, mg_diag *d);
#endif
