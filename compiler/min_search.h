/* min_search.h — the minimum feasible budget's search (min_search.c), which planner.c runs. */
#ifndef MG_MIN_SEARCH_H
#define MG_MIN_SEARCH_H
#include "plan.h"

/* The minimum search's inputs and results (mg_min_search), apart so that it may run on a thread
 * of its own beside the solve at the budget, which it does not depend on. */
typedef struct mg_min_search_job {
    const mg_problem *pr;
    int64_t budget, below, floor, store_all;
    int searching;
    const char *keep;
    /* out: the least budget with a plan (hi; found: it has one, else `below` with none under
     * it), its plan (best) and the cheapest plan within the budget seen (cheap, which may be
     * best); the bisection's least (bisected: hi before the descent; -1 where nothing was found);
     * where the descent found hi, the variant whose schedule placed there (descended: 1, seed);
     * st and d as a planner call's */
    int64_t hi, bisected;
    int descended;
    mg_sched_opts seed;
    int found;
    mg_plan *best, *cheap;
    mg_status st;
    mg_diag d;
} mg_min_search_job;

/* The least budget with a plan, searched between a proven lower bound and store-all (or
 * `below`: only a plan under it matters; floor: a plan within it ends the search); fills r's
 * outputs. */
void mg_min_search(mg_min_search_job *r);

#endif
