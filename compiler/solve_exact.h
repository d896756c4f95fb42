/* solve_exact.h — what solve_exact.c offers the planner beyond plan.h: the relaxed program's
 * bound given a schedule already known, so that CBC can prune against it. */
#ifndef MG_SOLVE_EXACT_H
#define MG_SOLVE_EXACT_H

#include "plan.h"

/* mg_relaxed_bound with cutoff, the cost of a schedule of prob known to fit cap (HUGE_VAL:
 * none): CBC discards what cannot come below it, and the bound is at most cutoff, cutoff
 * itself when CBC proves that nothing in the relaxed program costs less (the schedule is then
 * optimal). */
mg_status mg_relaxed_bound_below(const mg_problem *prob, int64_t cap, double time_limit, double cutoff, double *bound,
                                 mg_diag *d);

#endif
