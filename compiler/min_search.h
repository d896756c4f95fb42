/* min_search.h — the minimum feasible budget's search (min_search.c), which planner.c runs. */
#ifndef MG_MIN_SEARCH_H
#define MG_MIN_SEARCH_H
#include "plan.h"

#include <stdatomic.h>

/* What the caller wants of a minimum search while it runs (mg_min_search_job.stop): all of it, its
 * end at the next probe, or its end once it has found a plan far below the budget
 * (mg_far_above_min), where nothing more it could find would be taken into the plan. */
enum { MG_SEARCH_ON = 0, MG_SEARCH_STOP = 1, MG_SEARCH_STOP_FAR = 2 };

/* The budget is so far above hi, the least workspace the minimum search found, that the solve
 * takes nothing from the search into its plan (planner.c, solve_below: the walks and rungs run
 * within 10% of the minimum, the search's cheapest plan is taken within 25%). Over the examples,
 * bench/ models, the Checkmate graphs, the layered DAGs and 155 random models at 4-14 budgets
 * each (2,637 solves where both had a plan, 2,203 of them more than 25% above the minimum;
 * 2026-12-07), the search's plan was taken twice: within 5% of the minimum, and 16% above it
 * (resnet18_64 at 35% of its store-all, the whole batch: 1.1227 against 1.1558 of running every
 * op once). */
static inline int mg_far_above_min(int64_t hi, int64_t budget)
{
    return (double)budget - (double)hi > 0.25 * (double)hi;
}

/* The minimum search's inputs and results (mg_min_search), apart so that it may run on a thread
 * of its own beside the solve at the budget, which it does not depend on. */
typedef struct mg_min_search_job {
    const mg_problem *pr;
    int64_t budget, below, floor, store_all;
    int searching;
    const char *keep;
    const atomic_int *stop; /* NULL, or an MG_SEARCH_* the caller may change while the search runs */
    /* out: the least budget with a plan (hi; found: it has one, else `below` with none under
     * it), its plan (best) and the cheapest plan within the budget seen (cheap, which may be
     * best); the bisection's least (bisected: hi before the descent; -1 where nothing was found);
     * where the descent found hi, the variant whose schedule placed there (descended: 1, seed);
     * st and d as a planner call's */
    int64_t hi, bisected;
    int descended;
    mg_sched_opts seed;
    int found;
    int cut_short; /* it ended as stop asked, before it would have: hi is only a plan's workspace */
    mg_plan *best, *cheap;
    mg_status st;
    mg_diag d;
} mg_min_search_job;

/* The least budget with a plan, searched between a proven lower bound and store-all (or
 * `below`: only a plan under it matters; floor: a plan within it ends the search); fills r's
 * outputs. */
void mg_min_search(mg_min_search_job *r);

#endif
