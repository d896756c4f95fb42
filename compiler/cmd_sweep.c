/* cmd_sweep.c — the `memgrad sweep` command: the trade-off curve of budget against recompute
 * overhead, from the minimum feasible budget to store-all, for a model or a benchmark graph.
 *
 * Why it exists: users choose a budget from the curve; each point is a plan as `plan` makes
 * it (from the plan cache where it holds one). Driver code: it prints and picks exit codes. */
#include "driver.h"

#include "budget.h" /* mg_bytes_word */
#include "clock.h"
#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef mg_sweep_point sweep_point;

/* s as a CSV field (RFC 4180): quoted, its quotes doubled; nothing for NULL */
static void csv_string(const char *s)
{
    if (!s) return;
    putchar('"');
    for (; *s; s++) {
        if (*s == '"') putchar('"');
        putchar(*s);
    }
    putchar('"');
}

/* A point's part count as the reports give it: 1 for a plan of the whole batch (and a --graph's) */
static int parts_of(const sweep_point *q) { return q->parts > 1 ? q->parts : 1; }

/* The text table's column widths: each column as wide as its widest value and at least as wide as
 * it has always been (14 for a byte count: up to 99 TB every sweep looks as it did). They were
 * fixed, and a 15-digit byte count (a --graph of 2^50 bytes, a model of a few hundred TB) pushed
 * every column after it off its heading. */
typedef struct sweep_widths {
    int budget, workspace, peak, overhead, seconds;
} sweep_widths;

static int at_least(int w, int n) { return n > w ? n : w; }

static sweep_widths widths_of(const sweep_point *pt, int n)
{
    sweep_widths w = {14, 14, 14, 10, 9};
    for (int i = 0; i < n; i++) {
        const sweep_point *q = &pt[i];
        w.budget = at_least(w.budget, snprintf(NULL, 0, "%lld", (long long)q->budget));
        w.seconds = at_least(w.seconds, snprintf(NULL, 0, "%.3f", q->seconds));
        if (!q->fits) continue;
        w.workspace = at_least(w.workspace, snprintf(NULL, 0, "%lld", (long long)q->workspace));
        w.peak = at_least(w.peak, snprintf(NULL, 0, "%lld", (long long)q->peak));
        w.overhead = at_least(w.overhead, snprintf(NULL, 0, "%.2f%%", 100.0 * mg_recompute_overhead(q->once, q->executed)));
    }
    return w;
}

static void sweep_print(const mg_drv_options *o, const char *what, int64_t all, int64_t minf, const sweep_point *pt,
                        const char *const *notes, int n)
{
    const char *fmt = o->format ? o->format : "text";
    const char *solver = mg_solver_names[o->solver];
    if (!strcmp(fmt, "json")) {
        printf("{\"format\": \"memgrad-sweep\", \"version\": 1, \"model\": ");
        mg_json_write_string(stdout, what);
        printf(", \"solver\": \"%s\", \"store_all_workspace_bytes\": %lld, \"min_feasible_bytes\": %lld, "
               "\"points\": [",
               solver, (long long)all, (long long)minf);
        for (int i = 0; i < n; i++) {
            printf("%s\n  {\"budget_bytes\": %lld, \"fits\": %s", i ? "," : "", (long long)pt[i].budget,
                   pt[i].fits ? "true" : "false");
            if (pt[i].fits) {
                printf(", \"workspace_bytes\": %lld, \"peak_live_bytes\": %lld, \"flops_once\": ",
                       (long long)pt[i].workspace, (long long)pt[i].peak);
                mg_drv_print_cost(pt[i].once);
                printf(", \"flops_executed\": ");
                mg_drv_print_cost(pt[i].executed);
                printf(", \"recompute_overhead\": %.17g", mg_recompute_overhead(pt[i].once, pt[i].executed));
            }
            if (pt[i].fits && !o->graph) printf(", \"micro_batches\": %d", parts_of(&pt[i]));
            if (pt[i].fits)
                printf(", \"optimal\": %s, \"planned_at_bytes\": %lld", pt[i].optimal == 1 ? "true" : "\"unknown\"",
                       (long long)pt[i].planned_at);
            printf(", \"solve_seconds\": %.6f, \"from_cache\": %s, \"note\": ", pt[i].seconds,
                   pt[i].from_cache ? "true" : "false");
            if (notes[i]) mg_json_write_string(stdout, notes[i]);
            else printf("null");
            putchar('}');
        }
        printf("]}\n");
        return;
    }
    int csv = !strcmp(fmt, "csv");
    sweep_widths w = widths_of(pt, n);
    if (csv)
        printf("budget_bytes,percent_of_store_all,fits,workspace_bytes,peak_live_bytes,recompute_overhead,solve_seconds,"
               "micro_batches,from_cache,optimal,planned_at_bytes,note\n");
    else
        printf("%s  solver %s  store-all %lld %s, minimum feasible %lld %s\n%*s %7s %*s %*s %*s %*s%s  optimal\n",
               what, solver, (long long)all, mg_bytes_word(all), (long long)minf, mg_bytes_word(minf), w.budget,
               "budget", "%", w.workspace, "workspace", w.peak, "peak live", w.overhead, "overhead", w.seconds,
               "seconds", o->graph ? "" : "  parts");
    int cached = 0, carried = 0;
    for (int i = 0; i < n; i++) {
        const sweep_point *q = &pt[i];
        cached += q->from_cache;
        /* (a store-all workspace of 0 bytes, a step that keeps nothing in the workspace: its one
         * budget is all of it, 100%, not 0%) */
        double pct = all > 0 ? 100.0 * (double)q->budget / (double)all : 100.0;
        double ovh = 100.0 * mg_recompute_overhead(q->once, q->executed);
        if (csv && q->fits)
            printf("%lld,%.2f,1,%lld,%lld,%.17g,%.6f,%d,%d,%s,%lld,", (long long)q->budget, pct, (long long)q->workspace,
                   (long long)q->peak, ovh / 100, q->seconds, parts_of(q), q->from_cache, q->optimal == 1 ? "1" : "",
                   (long long)q->planned_at);
        else if (csv)
            printf("%lld,%.2f,0,,,,%.6f,,%d,,,", (long long)q->budget, pct, q->seconds, q->from_cache);
        if (csv) {
            csv_string(notes[i]);
            putchar('\n');
        } else if (q->fits) {
            printf("%*lld %6.1f%% %*lld %*lld %*.2f%% %*.3f", w.budget, (long long)q->budget, pct, w.workspace,
                   (long long)q->workspace, w.peak, (long long)q->peak, w.overhead - 1, ovh, w.seconds, q->seconds);
            if (!o->graph) printf(" %6d", parts_of(q)); /* (a --graph has no batch to split) */
            printf("  %s", q->optimal == 1 ? "proven" : "unknown");
            if (q->planned_at != q->budget) printf("  planned at %lld", (long long)q->planned_at), carried++;
            putchar('\n');
        } else
            printf("%*lld %6.1f%% %*s %*s %*s %*.3f\n", w.budget, (long long)q->budget, pct, w.workspace, "no plan", w.peak,
                   "", w.overhead, "", w.seconds, q->seconds);
    }
    if (!csv && carried)
        printf("(%d of %d points say 'planned at B': they keep the plan of the smaller budget B, which recomputes "
               "less than their own; `plan --budget B` gives it)\n", carried, n);
    if (!csv && cached)
        printf("(%d of %d points from the plan cache: their seconds are those of the planning that made them; "
               "--no-cache plans afresh)\n", cached, n);
}

typedef struct sweep_svg_ctx {
    const char *what;
    int64_t all, minf;
    const mg_sweep_curve *curves;
    int n;
} sweep_svg_ctx;

static void write_sweep_svg(FILE *out, const void *ctx)
{
    const sweep_svg_ctx *s = ctx;
    mg_sweep_svg(out, s->what, s->all, s->minf, s->curves, s->n);
}

/* a recomputes less than b, relative to each one's own FLOPs of running every op once: the
 * overhead the sweep prints. Plans of different part counts count their ops' FLOPs differently
 * (resnet18_64's batch norms in parts, 0.17% fewer), so a plan in parts that recomputes can
 * execute fewer FLOPs than the whole batch's store-all plan, which recomputes nothing. */
static int overhead_below(const mg_plan *a, const mg_plan *b)
{
    return a->flops_executed * b->flops_once < b->flops_executed * a->flops_once;
}

int mg_cmd_sweep(mg_drv_options *o)
{
    mg_out_file svg_out = {.flag = "--svg", .path = o->svg};
    int rc = mg_out_check_input(o->model ? o->model : o->graph, o->model ? "model" : "graph", &svg_out, 1);
    if (rc) return rc;
    mg_drv_source src = {0};
    mg_drv_compiled c = {0};
    mg_problem *pr = NULL;
    mg_diag d = {0};
    if (o->graph) {
        if (mg_drv_read_source(o->graph, &src)) return 1;
        if (mg_problem_from_json(src.path, src.text, src.len, &pr, &d)) {
            mg_drv_print_diag(&src, &d);
            free(src.text);
            return 1;
        }
    } else if (mg_drv_run_frontend(o->model, &c, 1)) {
        mg_drv_compiled_free(&c);
        return 1;
    }
    const mg_drv_source *where = o->graph ? &src : &c.src;
    mg_drv_plan_cache pc = {0}; /* (a model's plans are cached as plan's are, a --graph's solutions as plan --graph's) */
    mg_drv_plan_cache_open(o, &pc);
    /* on a terminal, a line on stderr says how far the sweep is (1000 points of mlp take over a
     * minute, with nothing shown until the table); cleared before the table */
    int progress = isatty(STDERR_FILENO);
    if (progress) fprintf(stderr, "memgrad: sweep: the minimum feasible budget...");
    /* the ends of the curve: store-all and the minimum feasible budget (of auto) */
    int64_t all = 0, minf = 0;
    if (pr) {
        mg_solution s = {0};
        mg_solve_request rq = {.solver = MG_SOLVER_AUTO, .want_min = 1}; /* (`plan --graph FILE`'s solve) */
        int64_t none;
        double secs;
        int cached;
        if (mg_drv_solve_with_cache(&pc, pr, rq, mg_seconds(), &s, &none, &secs, &cached, &d)) rc = 1;
        all = s.store_all_bytes;
        minf = s.min_feasible_bytes;
        mg_plan_free(s.plan);
    } else {
        mg_plan_request rq = {.solver = MG_SOLVER_AUTO, .time_limit = o->time_limit, .want_min_feasible = MG_MIN_YES,
                              .parts_max_nodes = {o->max_split_ops, o->max_split_ops}};
        int cached; /* (`plan MODEL`'s plan) */
        if (mg_drv_plan_with_cache(&pc, c.g, rq, o->micro_batches, &c.plan, &cached, &d)) rc = 1;
        all = c.plan.store_all_bytes;
        minf = c.plan.min_feasible_bytes;
        if (!rc && progress && c.plan.parts_not_tried > 0) fprintf(stderr, "\r\033[K"); /* (the note on a line of its own) */
        if (!rc) mg_drv_parts_not_tried_note(c.src.path, &c.plan, 1);
        mg_planned_free(&c.plan);
    }
    /* the curve of the solver asked for (the table's); --svg adds auto's and sqrt's whatever it is
     * (with --solver store-all or exact it drew no auto or no sqrt curve), and the store-all point */
    mg_solver solvers[3] = {o->solver, MG_SOLVER_AUTO, MG_SOLVER_AUTO};
    int ncurves = 1;
    for (int k = 0; k < 2 && o->svg; k++) {
        mg_solver s = k ? MG_SOLVER_SQRT : MG_SOLVER_AUTO;
        if (s != o->solver) solvers[ncurves++] = s;
    }
    /* the budgets, evenly from the minimum to store-all; where they are fewer bytes apart than
     * points (a model whose minimum is its store-all workspace, a tiny graph) each is planned and
     * printed once, not --points times over */
    int npoints = 0;
    int64_t *budgets = malloc((size_t)o->points * sizeof *budgets);
    if (!budgets) abort();
    for (int i = 0; i < o->points; i++) {
        int64_t b = minf + (int64_t)((double)(all - minf) * i / (o->points - 1));
        if (!npoints || b != budgets[npoints - 1]) budgets[npoints++] = b;
    }
    sweep_point *pts = calloc((size_t)o->points * 3, sizeof *pts), *pt = pts;
    /* each point's note (CBC stopped at --time-limit or failed, exact fell back to auto's plan),
     * said as `plan` says it: a point planned with one had nothing to tell it from the others */
    const char **notes = calloc((size_t)o->points * 3, sizeof *notes);
    if (!pts || !notes) abort();
    for (int k = 0; k < ncurves; k++) {
        /* each point's plan passes on to the next, which takes it where it is cheaper (a benchmark
         * graph's through mg_solve_from; a model's program, whose part count may differ, whole,
         * where its recompute overhead is lower): the overhead never rises with the budget */
        mg_plan *prev = NULL;
        mg_planned prevp = {0};
        for (int i = 0; i < npoints && !rc; i++) {
            sweep_point *q = &pts[k * o->points + i];
            q->budget = budgets[i];
            if (progress)
                fprintf(stderr, "\r\033[Kmemgrad: sweep: %s, budget %d of %d...", mg_solver_names[solvers[k]], i + 1,
                        npoints);
            mg_budget b = {0, 0, q->budget};
            if (pr) {
                /* the point's solution keyed by the plan it was solved from too (mg_solve_from
                 * returns that one where it is cheaper), so a sweep served from the cache is the
                 * sweep solved; its seconds, from the cache, those of the solve that made it */
                mg_solution s = {0};
                mg_solve_request rq = {.solver = solvers[k], .budget = &b, .time_limit = o->time_limit,
                                       .incumbent = prev};
                int64_t at;
                if (mg_drv_solve_with_cache(&pc, pr, rq, mg_seconds(), &s, &at, &q->seconds, &q->from_cache, &d))
                    rc = 1;
                else
                    notes[k * o->points + i] = s.note;
                if (!rc && (q->fits = s.plan != NULL)) {
                    q->optimal = s.optimal == 1 ? 1 : -1;
                    q->workspace = s.plan->workspace_bytes;
                    q->peak = s.plan->peak_live_bytes;
                    q->once = s.plan->flops_once;
                    q->executed = s.plan->flops_executed;
                    /* (the point before's plan, which mg_solve_from returned where cheaper than this
                     * budget's own) */
                    int kept = prev && mg_plan_digest(prev) == mg_plan_digest(s.plan);
                    q->planned_at = kept ? q[-1].planned_at : q->budget;
                    mg_plan_free(prev);
                    prev = s.plan; /* (no plan on an error) */
                }
            } else {
                mg_plan_request rq = {.solver = solvers[k], .budget = &b, .time_limit = o->time_limit,
                                      .parts_max_nodes = {o->max_split_ops, o->max_split_ops}};
                if (mg_drv_plan_with_cache(&pc, c.g, rq, o->micro_batches, &c.plan, &q->from_cache, &d)) rc = 1;
                /* its planning's seconds, as `plan` reports them (from the cache: those of the
                 * planning that made it), whichever plan the point keeps */
                q->seconds = c.plan.solve_seconds;
                if (!rc) notes[k * o->points + i] = c.plan.note;
                if (rc)
                    mg_planned_free(&c.plan);
                else if (prevp.train && (!c.plan.train || overhead_below(prevp.train, c.plan.train))) {
                    mg_planned_free(&c.plan); /* (prevp's workspace is under the smaller budget before) */
                    /* proven at that budget, not at this one, unless it recomputes nothing */
                    q->optimal = prevp.train->flops_executed == prevp.train->flops_once ? 1 : -1;
                    q->planned_at = q[-1].planned_at;
                } else {
                    mg_planned_free(&prevp);
                    prevp = c.plan;
                    q->optimal = prevp.optimal == 1 ? 1 : -1;
                    q->planned_at = q->budget;
                }
                c.plan = (mg_planned){0};
                if (!rc && (q->fits = prevp.train != NULL)) {
                    q->workspace = prevp.workspace_bytes;
                    /* the training step's or the forward function's, the larger, as `plan` reports
                     * it (the workspace is the larger of the two: a forward pass that peaks higher,
                     * with an output the loss does not read, made the store-all point's peak 72
                     * times below its workspace) */
                    q->peak = prevp.train->peak_live_bytes > prevp.forward->peak_live_bytes ? prevp.train->peak_live_bytes
                                                                                           : prevp.forward->peak_live_bytes;
                    q->once = prevp.train->flops_once;
                    q->executed = prevp.train->flops_executed;
                    q->parts = prevp.micro_batches;
                }
            }
        }
        mg_plan_free(prev);
        mg_planned_free(&prevp);
    }
    if (progress) fprintf(stderr, "\r\033[K"); /* (the line cleared: the cursor back at its start) */
    const char *what = pr ? src.path : c.g->model_name;
    for (int k = 0; k < ncurves; k++)
        for (int i = 0; i < npoints; i++)
            if (notes[k * o->points + i])
                fprintf(stderr, "%s: note: %s at budget %lld %s: %s\n", where->path, mg_solver_names[solvers[k]],
                        (long long)budgets[i], mg_bytes_word(budgets[i]), notes[k * o->points + i]);
    if (rc) mg_drv_print_diag(where, &d);
    /* the --svg file before the table: `sweep --svg s.svg | head` ends by SIGPIPE in the table
     * and left no s.svg (as `plan`'s reports) */
    int svg_rc = 0;
    if (!rc && o->svg) {
        /* the store-all point: no recomputation at the store-all workspace */
        sweep_point sa = {.budget = all, .workspace = all, .peak = all, .once = 1, .executed = 1, .fits = 1, .parts = 1,
                          .optimal = 1};
        mg_sweep_curve curves[4];
        int n = 0;
        for (int k = 0; k < ncurves; k++)
            if (solvers[k] != MG_SOLVER_STORE_ALL) /* (store-all's curve is its one point, drawn below) */
                curves[n++] = (mg_sweep_curve){mg_solver_names[solvers[k]], pts + k * o->points, npoints};
        curves[n++] = (mg_sweep_curve){"store-all", &sa, 1};
        sweep_svg_ctx ctx = {what, all, minf, curves, n};
        const mg_drv_report_writer writer = write_sweep_svg;
        svg_rc = mg_drv_write_report_outs(&svg_out, &writer, &ctx, 1);
    }
    if (!rc && !o->report_file_to_stdout) sweep_print(o, what, all, minf, pt, notes, npoints);
    if (!rc) rc = svg_rc;
    free(pts);
    free(notes);
    free(budgets);
    mg_problem_free(pr);
    free(src.text);
    mg_drv_compiled_free(&c);
    return rc;
}
