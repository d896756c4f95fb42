/* report.h — what plans look like to people and to other tools. Reports only read a plan.
 *
 * Every report (text, JSON, SVG, trace, DOT) reads the same mg_report_figures, made once by
 * mg_report_figures_make from the plan: the summary figures (overhead, waste, ...), one row per
 * tensor of the training step with its decision and live ranges, and the bytes live at every
 * step. No report computes a figure of its own. Library code writes to the FILE* it is given
 * and never prints anywhere else. */
#ifndef MG_REPORT_H
#define MG_REPORT_H
#include "plan.h"

#include <stdio.h>

/* A cost as text that reads back as the same double: "%.0f" where that does (a model's FLOPs are
 * whole), else the shortest "%.15g".."%.17g" that does (a benchmark graph's costs are its own
 * unit and may have a fraction). The longest "%.0f" of a double is 309 digits. */
enum { MG_COST_TEXT_MAX = 320 };
void mg_cost_text(double v, char out[MG_COST_TEXT_MAX]);

/* report_escape.c: names and paths in the formats the reports write, always valid UTF-8: a
 * well-formed UTF-8 sequence passes through, every other byte becomes U+FFFD (JSON: \ufffd).
 * mg_json_escape writes s as a quoted JSON string ("" for NULL) into buf, cut to cap - 1 bytes
 * and NUL-terminated, and returns its whole length, as snprintf does; mg_json_write_string
 * writes it to out. mg_xml_write_text writes s as XML text or attribute value (& < > " escaped);
 * mg_dot_write_string as the inside of a DOT "..." string. */
size_t mg_json_escape(char *buf, size_t cap, const char *s);
void mg_json_write_string(FILE *out, const char *s);
void mg_xml_write_text(FILE *out, const char *s);
void mg_dot_write_string(FILE *out, const char *s);

typedef struct mg_plan_report_info {
    const char *solver;   /* the solver asked for */
    uint64_t model_hash;
    int from_cache;       /* the plan came from the plan cache */
} mg_plan_report_info;

/* What the plan does with one value of the training step. */
typedef enum {
    MG_DECIDE_KEPT,       /* a forward value computed once and held for the backward pass */
    MG_DECIDE_RECOMPUTED, /* a forward value computed more than once */
    MG_DECIDE_FREED,      /* a forward value computed once and freed before the backward pass */
    MG_DECIDE_BACKWARD,   /* a backward value: computed once, freed after its last use */
    MG_DECIDE_CALLER      /* written into caller memory (an output or a parameter gradient) */
} mg_decision;
extern const char *const mg_decision_names[]; /* "kept", "recomputed", "freed early", "backward", "caller" */

typedef struct mg_tensor_row {
    int node;
    int first_step;       /* the step that first computes it */
    int computes;         /* how many steps compute it (recomputations included) */
    mg_decision decision;
    int *bufs, nbufs;     /* its workspace buffers (plan->bufs ids), in step order; one per live range */
} mg_tensor_row;

typedef struct mg_report_figures {
    const mg_graph *g;
    const mg_planned *p;
    const char *solver;
    uint64_t model_hash;
    int optimal, from_cache;
    double solve_seconds;
    int64_t budget_bytes;       /* INT64_MAX: none */
    int64_t workspace_bytes, peak_live_bytes, store_all_bytes, min_feasible_bytes;
    int64_t param_bytes, grad_bytes, input_bytes;
    double allocator_waste;     /* workspace / peak live - 1 */
    double flops_once, flops_executed, recompute_overhead;
    double flops_lower_bound;   /* proven: flops_once, or the exact solver's bound */
    int recompute_steps, recomputed_tensors;
    /* elementwise chains the backend fuses into one loop each (fuse.c): train and forward */
    int fused_chains, fused_steps, fused_chains_fwd, fused_steps_fwd;
    /* the training step */
    mg_tensor_row *rows;        /* one per computed value, in schedule order */
    int nrows;
    int *row_of_node;           /* g->n entries: index into rows, or -1 */
    int first_backward_step;    /* the first step of a backward node (nsteps if none) */
    /* per step: 1 in the backward phase (a backward node's step, or a zero step: it writes a
     * gradient), else 0. A plan in parts runs a part's forward steps after an earlier part's
     * backward ones, so the phase is each step's own, not "from first_backward_step on" */
    unsigned char *step_backward;
    int64_t *live_bytes;        /* per step: bytes of the buffers live at it */
    int64_t *high_water;        /* per step: the highest arena byte used by any buffer so far */
} mg_report_figures;

/* report_figures.c: computes every figure the reports show, once. */
mg_status mg_report_figures_make(const mg_graph *g, const mg_planned *p, const mg_plan_report_info *info,
                                 mg_report_figures *out, mg_diag *d);
void mg_report_figures_free(mg_report_figures *f);
/* report_figures.c: (executed - once) / once, 0 when nothing runs. */
double mg_recompute_overhead(double flops_once, double flops_executed);
/* report_figures.c: workspace / peak - 1, 0 when nothing is live. */
double mg_allocator_waste(int64_t workspace, int64_t peak);
/* report_figures.c: the tensor's name for people: its .mg name (the graph's own string, whole),
 * else "op#id" written into buf. */
const char *mg_report_tensor_name(const mg_graph *g, int node, char *buf, size_t len);
/* What the text reports add to the minimum feasible budget's line: "" or, where the plan needs
 * less than the minimum, that it does and what that does not mean. */
const char *mg_report_min_note(int64_t workspace, int64_t min_feasible);

/* report_json.c: the whole plan as JSON (docs/plan-json.md), malloc'd. */
char *mg_plan_json(const mg_report_figures *f);
/* report_json.c: the plan of an imported graph (one schedule, named "train") as JSON; from_cache:
 * it was read from the plan cache (seconds are then those of the solve that made it). */
char *mg_problem_plan_json(const mg_problem *pr, const mg_solution *sol, int64_t budget, double seconds,
                           int from_cache, const char *solver);

/* report_text.c: the report for a terminal: summary, one row per tensor, a memory strip
 * `width` columns wide. exact_bytes: byte counts instead of human units. */
void mg_report_text(FILE *out, const mg_report_figures *f, int width, int exact_bytes);

/* report_svg.c: the training step's memory timeline as SVG. */
void mg_report_svg(FILE *out, const mg_report_figures *f);

/* report_trace.c: Chrome Trace Event JSON of the training step (durations from FLOPs). */
void mg_report_trace(FILE *out, const mg_report_figures *f);

/* report_dot.c: the joint graph as Graphviz DOT, nodes coloured by decision. */
void mg_report_dot(FILE *out, const mg_report_figures *f);

/* report_svg.c: the budget / recompute-overhead curve of a sweep, one line per solver. */
typedef struct mg_sweep_point {
    int64_t budget, workspace, peak;
    double once, executed, seconds;
    int fits;
    int parts; /* into how many micro-batches the plan splits the batch (0 or 1: whole) */
    int from_cache; /* the point's plan came from the plan cache (seconds: of the planning that made it) */
    int optimal;    /* 1: the point's plan is proven optimal at its budget; -1: not known */
    int64_t planned_at; /* the budget whose planning made the plan: a smaller point's, where the
                           point keeps that plan (cheaper than its own), else its own budget */
} mg_sweep_point;
typedef struct mg_sweep_curve {
    const char *solver;
    const mg_sweep_point *pt;
    int n;
} mg_sweep_curve;
void mg_sweep_svg(FILE *out, const char *what, int64_t store_all, int64_t min_feasible, const mg_sweep_curve *curves,
                  int ncurves);
#endif
