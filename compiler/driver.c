/* driver.c — what the `memgrad` command files share: usage errors, reading the model or graph,
 * printing diagnostics with the source line and a caret, writing report files whole, and
 * running the frontend (driver.h).
 *
 * Why it exists: main.c and the cmd_*.c files must say things the same way; this is driver code
 * (it prints), kept out of the library. */
#include "driver.h"

#include "autodiff.h"
#include "excerpt.h"
#include "frontend.h"
#include "read_file.h"
#include "report.h"
#include "write_all.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int mg_drv_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "memgrad: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nTry 'memgrad --help'.\n");
    va_end(ap);
    return 2;
}

/* Every option of every command: the commands that take it (NULL: all of them) and whether it
 * takes a value. For the errors: an option another command takes, a typo, a value left out. */
static const struct option_row {
    const char *opt, *cmds;
    int value;
} options[] = {
    {"-o", "compile", 1}, {"--header", "compile", 1}, {"--target", "compile", 1}, {"--cpu", "compile", 1},
    {"--emit-llvm", "compile", 1}, {"--no-fuse", "compile", 0}, {"--name", "compile", 1}, {"-O0", "compile", 0},
    {"-O1", "compile", 0}, {"-O2", "compile", 0}, {"-O3", "compile", 0}, {"--budget", "compile, plan and dot", 1},
    {"--verify", "compile, plan and dot", 0}, {"--solver", "compile, plan, sweep and dot", 1},
    {"--micro-batches", "compile, plan, sweep and dot", 1}, {"--max-split-ops", "compile, plan, sweep and dot", 1},
    {"--time-limit", "compile, plan, sweep, dot and arena", 1},
    {"--points", "sweep", 1}, {"--format", "plan, sweep and arena", 1}, {"--graph", "plan and sweep", 1},
    {"--svg", "plan and sweep", 1}, {"--trace", "plan", 1}, {"--bytes", "plan", 0}, {"--print-ir", "check", 0},
    {"--print-joint", "check", 0}, {"--capacity", "arena", 1}, {"--clear", "cache", 0},
    {"--cache-dir", NULL, 1}, {"--no-cache", NULL, 0}, {"--help", NULL, 0}, {"--version", NULL, 0},
};
enum { NOPTIONS = sizeof options / sizeof options[0] };

/* The option whose name is the len bytes at a; NULL: none is. */
static const struct option_row *option_named(const char *a, size_t len)
{
    for (int i = 0; i < NOPTIONS; i++)
        if (strlen(options[i].opt) == len && !strncmp(a, options[i].opt, len)) return &options[i];
    return NULL;
}

/* The edit distance of a and b (insertions, deletions, substitutions) up to 2; 3 for anything
 * further: options are short, and a suggestion further off is no help. */
static int edits(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    if (na > 40 || nb > 40 || (na > nb ? na - nb : nb - na) > 2) return 3;
    int row[41], prev[41];
    for (size_t j = 0; j <= nb; j++) prev[j] = (int)j;
    for (size_t i = 1; i <= na; i++) {
        row[0] = (int)i;
        for (size_t j = 1; j <= nb; j++) {
            int sub = prev[j - 1] + (a[i - 1] != b[j - 1]), del = prev[j] + 1, ins = row[j - 1] + 1;
            row[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, row, sizeof row);
    }
    return prev[nb] < 3 ? prev[nb] : 3;
}

int mg_drv_unknown_option(const char *a, const char *cmd)
{
    const struct option_row *r = option_named(a, strlen(a));
    if (r && r->cmds)
        return mg_drv_usage_error("unknown option '%s' for %s (%s %s it)", a, cmd, r->cmds,
                                  strchr(r->cmds, ' ') ? "take" : "takes");
    if (access(a, F_OK) == 0) /* a file whose name begins with '-' */
        return mg_drv_usage_error("%s: unknown option '%s' (for the file of that name: memgrad %s -- %s)", cmd, a,
                                  cmd, a);
    /* the nearest option, where it is 1 edit away (2 for a longer name) and nearer than any
     * other ("--budegt", "-budget", "--point"); none for a short one */
    const char *near = NULL;
    int best = 3, ties = 0;
    for (int i = 0; i < NOPTIONS && !r; i++) { /* (none for an option every command takes) */
        int e = edits(a, options[i].opt);
        if (e < best) best = e, near = options[i].opt, ties = 0;
        else if (e == best) ties++;
    }
    size_t len = strlen(a);
    if (near && !ties && len >= 4 && best <= (len > 5 ? 2 : 1)) /* ("-v" is no typo of "-o") */
        return mg_drv_usage_error("%s: unknown option '%s' (did you mean '%s'?)", cmd, a, near);
    return mg_drv_usage_error("%s: unknown option '%s'", cmd, a);
}

int mg_drv_needs_value(int argc, char **argv, int i)
{
    const char *v = i + 1 < argc ? argv[i + 1] : "";
    if (v[0] && !option_named(v, strlen(v))) return 0;
    return mg_drv_usage_error("option '%s' needs a value%s", argv[i], v[0] ? " (the next argument is an option)" : "");
}

int mg_drv_split_equals(int argc, char **argv, char ***out)
{
    *out = NULL;
    char **v = malloc(((size_t)argc * 2 + 1) * sizeof *v);
    if (!v) abort();
    int n = 0;
    int operands = 0; /* (after "--" nothing is an option) */
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *eq = strchr(a, '=');
        operands |= !strcmp(a, "--");
        const struct option_row *r = !operands && a[0] == '-' && a[1] == '-' && eq ? option_named(a, (size_t)(eq - a)) : NULL;
        if (!r) {
            v[n++] = argv[i];
            continue;
        }
        if (!r->value) {
            free(v);
            return mg_drv_usage_error("option '%s' takes no value (given '%s')", r->opt, a);
        }
        v[n++] = (char *)r->opt; /* (the table's name; the value is argv's own bytes after the '=') */
        v[n++] = (char *)eq + 1;
    }
    v[n] = NULL;
    *out = v;
    return 0;
}

/* The file read (a model or a graph; "-" was made /dev/stdin), named in messages as cc names it:
 * "<stdin>:3:7: error: ..." rather than /dev/stdin (review19). */
int mg_drv_read_source(const char *path, mg_drv_source *s)
{
    s->path = strcmp(path, "/dev/stdin") ? path : "<stdin>";
    mg_diag d = {0};
    /* at most 256 MiB: no model or graph is that large */
    if (mg_read_file(path, (size_t)1 << 28, &s->text, &s->len, &d)) {
        fprintf(stderr, "memgrad: %s\n", d.msg);
        return 1;
    }
    return 0;
}

/* file:line:col: KIND: message (KIND error or warning), then the source line and a caret under
 * the column. */
void mg_drv_print_diag_as(const mg_drv_source *src, const mg_diag *d, const char *kind)
{
    if (d->loc.line <= 0) {
        fprintf(stderr, "%s: %s: %s\n", src ? src->path : "memgrad", kind, d->msg);
        return;
    }
    fprintf(stderr, "%s:%d:%d: %s: %s\n", src->path, d->loc.line, d->loc.col, kind, d->msg);
    mg_print_excerpt(stderr, src->text, src->len, d->loc.line, d->loc.col);
}

void mg_drv_print_diag(const mg_drv_source *src, const mg_diag *d) { mg_drv_print_diag_as(src, d, "error"); }

/* Writes n bytes of text to the file tmp; errors name path, the file the user asked for, and the
 * reason: write(2)'s own errno (through stdio a failed write left only the stream's error flag,
 * and errno could be anything by the fclose that found nothing left to write). */
int mg_drv_write_file(const char *path, const char *tmp, const char *text, size_t n)
{
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0666), err = fd < 0 ? errno : mg_write_all(fd, text, n);
    if (fd >= 0 && close(fd) != 0 && !err) err = errno;
    if (err) fprintf(stderr, "memgrad: cannot write %s: %s\n", path, strerror(err));
    return err != 0;
}

int mg_drv_write_report_outs(mg_out_file *f, const mg_drv_report_writer *write, const void *ctx, int n)
{
    int rc = mg_out_begin(f, n);
    for (int i = 0; i < n && !rc; i++) {
        if (!f[i].path) continue;
        /* in memory first, then write_file: a failed write says why */
        char *text = NULL;
        size_t len = 0;
        FILE *fp = open_memstream(&text, &len);
        if (!fp) abort();
        write[i](fp, ctx);
        if (fclose(fp) != 0) abort(); /* (memory only) */
        rc = mg_drv_write_file(f[i].path, f[i].tmp, text, len);
        free(text);
    }
    if (!rc) rc = mg_out_commit(f, n);
    mg_out_end(f, n);
    return rc;
}

void mg_drv_compiled_free(mg_drv_compiled *c)
{
    mg_planned_free(&c->plan);
    mg_graph_free(c->g);
    free(c->src.text);
}

/* What the planner takes (README, "Limits"): a training step of at most MG_PLAN_MAX_NODES
 * operations, forward and backward, whose values add up to at most 2^52 bytes. Planning time
 * grows faster than the graph (about a minute at 60,000 operations), and with these limits
 * every int64_t sum of sizes stays below 2^63 with each value counted 2,000 times over. `check`
 * takes larger models (the parser's limits). The error is at the operation past the limit (a
 * backward one at the forward operation it differentiates). A batch split into parts is held to
 * the same count (plan_split.c). */
static int plannable(const mg_drv_compiled *c)
{
    const mg_graph *g = c->g;
    double bytes = 0;
    int at = g->n > MG_PLAN_MAX_NODES ? MG_PLAN_MAX_NODES : -1;
    for (int i = 0; i < g->n && at < 0; i++)
        if ((bytes += (double)mg_node_bytes(g, i)) > 0x1p52) at = i;
    if (at < 0) return 0;
    mg_diag d = {0};
    if (g->n > MG_PLAN_MAX_NODES)
        mg_diag_set(&d, g->nodes[at].loc, "model too large to plan: its training step has %d operations (%d forward, "
                    "%d backward), more than %d; the first one past the limit comes from here", g->n, g->nforward,
                    g->n - g->nforward, MG_PLAN_MAX_NODES);
    else
        mg_diag_set(&d, g->nodes[at].loc, "model too large to plan: the values of its training step add up to "
                    "more than 2^52 bytes (4 PiB) with this '%s'%s", mg_ops[g->nodes[at].op].name,
                    at < g->nforward ? "" : " (in its gradient)");
    mg_drv_print_diag(&c->src, &d);
    return 1;
}

/* Parses and differentiates; to_plan: the model must be one the planner takes. */
int mg_drv_run_frontend(const char *path, mg_drv_compiled *c, int to_plan)
{
    mg_diag d = {0};
    memset(c, 0, sizeof *c);
    if (mg_drv_read_source(path, &c->src)) return 1;
    int parsed = 0;
    if (!(parsed = !mg_parse(c->src.path, c->src.text, c->src.len, &c->g, &d)) || mg_autodiff(c->g, &d)) {
        mg_drv_print_diag(&c->src, &d);
        size_t i = 0; /* a JSON file where a model was expected: most likely a benchmark graph */
        while (!parsed && i < c->src.len && strchr(" \t\r\n", c->src.text[i])) i++;
        if (!parsed && i < c->src.len && c->src.text[i] == '{')
            fprintf(stderr, "%s: note: this looks like JSON, not a model (.mg); `plan --graph FILE` and `sweep "
                            "--graph FILE` take a benchmark graph (node-link JSON)\n", c->src.path);
        return 1;
    }
    return to_plan ? plannable(c) : 0;
}

/* Where the search over part counts stopped short (plan.h, MG_PARTS_AUTO_MAX_NODES), the minimum
 * feasible budget (of_min: under a budget's error, sweep) or the plan (compile's, which says
 * nothing else) is of the part counts tried: a note says so, and how to go on. */
void mg_drv_parts_not_tried_note(const char *path, const mg_planned *p, int of_min)
{
    if (p->parts_not_tried <= 0) return;
    char over[48] = "the whole batch's";
    if (p->parts_not_tried > 2) snprintf(over, sizeof over, "the best of 1 to %d micro-batches", p->parts_not_tried / 2);
    if (p->parts_not_tried_ops > MG_PLAN_MAX_NODES) { /* (neither option would plan it: no advice) */
        fprintf(stderr, "%s: note: the %s is %s: in %d parts the step would make %d operations, more than the %d the "
                "planner takes\n", path, of_min ? "minimum feasible budget" : "plan", over, p->parts_not_tried,
                p->parts_not_tried_ops, MG_PLAN_MAX_NODES);
        return;
    }
    fprintf(stderr,
            "%s: note: the %s is %s: in %d parts the step makes %d operations, more than the %d the search plans "
            "by itself; --micro-batches %d (or more, or --max-split-ops %d) may %s\n",
            path, of_min ? "minimum feasible budget" : "plan", over, p->parts_not_tried, p->parts_not_tried_ops,
            p->parts_max_nodes, p->parts_not_tried, p->parts_not_tried_ops, of_min ? "meet a smaller budget" : "recompute less");
}

void mg_drv_print_cost(double v)
{
    char s[MG_COST_TEXT_MAX];
    mg_cost_text(v, s);
    fputs(s, stdout);
}
