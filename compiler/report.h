/* report.h — what plans look like to people and to other tools. Reports only read a plan. */
#ifndef MG_REPORT_H
#define MG_REPORT_H
#include "plan.h"

typedef struct mg_plan_report_info {
    const char *solver;   /* the solver asked for */
    uint64_t model_hash;
} mg_plan_report_info;

/* report_json.c: the whole plan as JSON (docs/plan-json.md), malloc'd. */
char *mg_plan_json(const mg_graph *g, const mg_planned *p, const mg_plan_report_info *info);
/* report_json.c: the plan of an imported graph (one schedule, named "train") as JSON. */
char *mg_problem_plan_json(const mg_problem *pr, const mg_solution *sol, int64_t budget, double seconds,
                           const char *solver);
#endif
