/* sched_lns.h — large neighbourhood search over a plan's schedule: windows of target positions
 * re-solved exactly (a Checkmate-style program over the window alone, by CBC), the rest of the
 * schedule kept. An experiment (bench/lns_plan.c), not one of auto's stages: see
 * docs/planner.md, "Windows re-solved exactly". */
#ifndef MG_SCHED_LNS_H
#define MG_SCHED_LNS_H
#include "plan.h"

/* The outcome of one window. */
typedef struct mg_lns_window_result {
    int solved;        /* CBC gave an answer (a schedule, or a proof there is none cheaper) */
    int improved;      /* *seq was replaced by a cheaper schedule within cap */
    int proven;        /* CBC finished: nothing in the window's class is cheaper than what it returned */
    double old_cost, new_cost; /* the window's recomputation cost, before and after */
    int vars, rows;    /* the program's size */
} mg_lns_window_result;

/* Re-solves the part of the compute sequence seq[0..*T) (every node computed at each step,
 * as mg_polish_schedule reads a plan: each computation's buffer lives from its step to its last
 * read before the next computation of the same node) that runs between target positions a and
 * b - 1 (the recomputations before target a included), under cap on the peak of live bytes:
 * what is resident when the window starts may be kept or dropped, what the steps after the
 * window read must be resident when it ends, and inside, any evictable value may be recomputed
 * (in graph order within a target's stage). When CBC finds a cheaper window within time_limit
 * seconds, seq (room for max_T entries) and *T are replaced. The rest of the schedule keeps its
 * steps; its live bytes never rise (what is resident across the window's ends is what it was,
 * or less). Only problems without final steps. CBC starts from the current window (where it is
 * in the program's class) and looks for windows at most as dear (res->new_cost: what it found);
 * only a cheaper one replaces it. check: CBC is not given the current window, so where that is
 * in the program's class it must find one at most as dear itself (a test of the program). */
mg_status mg_lns_window(const mg_problem *pr, int *seq, int *T, int max_T, int a, int b, int64_t cap,
                        double time_limit, int check, const char *free_vals, mg_lns_window_result *res,
                        mg_diag *d);

#endif
