/* main.c — the `memgrad` command-line driver. With driver.c, cmd_sweep.c and cmd_arena.c the
 * only code that talks to the terminal: it parses the options, runs the pipeline as a flat list
 * of calls (check, plan, dot, compile, cache), and chooses exit codes (0 ok, 1 error in the
 * model or build, 2 usage). */
#include "driver.h"

#include "clock.h"
#include "frontend.h"
#include "budget.h"
#include "excerpt.h"
#include "report.h"
#include "write_all.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <signal.h>
#include <unistd.h>

#ifndef MG_VERSION
#define MG_VERSION "0.1.0"
#endif

static const char *usage_text =
    "usage: memgrad <command> [options]\n"
    "\n"
    "commands:\n"
    "  compile MODEL.mg -o OUT.o [--header OUT.h] [options]\n"
    "                       compile the model's training step, forward pass and parameter\n"
    "                       initialiser to a native object file (and a C header)\n"
    "  check MODEL.mg [--print-ir | --print-joint]\n"
    "                       parse, type-check and differentiate; optionally print the IR\n"
    "  plan MODEL.mg [--budget B] [--solver S] [--format text|json]\n"
    "                [--bytes] [--svg FILE] [--trace FILE]\n"
    "  plan --graph FILE.json [...]\n"
    "                       plan the training step under a budget and report it: the figures,\n"
    "                       one row per tensor (decision, live steps, arena offset) and a memory\n"
    "                       strip as wide as the terminal (json: the whole plan, see\n"
    "                       docs/plan-json.md); --graph plans a benchmark graph (Checkmate\n"
    "                       node-link JSON or a layered DAG). See docs/reports.md\n"
    "  sweep MODEL.mg | --graph FILE.json [--points N] [--solver S] [--format text|csv|json]\n"
    "                [--svg FILE]\n"
    "                       the trade-off from the minimum feasible budget to store-all\n"
    "  dot MODEL.mg [--budget B] [--solver S]\n"
    "                       the joint graph as Graphviz DOT, nodes coloured by the plan's decision\n"
    "  arena FILE.csv [--capacity BYTES] [--format text|json] [--time-limit SECONDS]\n"
    "                       place a list of buffers (CSV id,lower,upper,size, each live on\n"
    "                       [lower, upper)) in one arena and say how big it is, whether it fits\n"
    "                       the capacity and whether that is optimal\n"
    "  cache [--cache-dir DIR] [--clear]\n"
    "                       the plan cache's entries, bytes and maximum size (256 MiB, or\n"
    "                       $MEMGRAD_CACHE_MAX_SIZE: 1GiB, 0 for none; the least recently used\n"
    "                       entries are removed beyond it); --clear removes its entries\n"
    "\n"
    "An option's value is the next argument or follows '=' (--budget 40% or --budget=40%); --\n"
    "ends the options (memgrad plan -- -m.mg).\n"
    "\n"
    "planning options (compile, plan, sweep, dot):\n"
    "  --budget B           workspace cap (not sweep): bytes (200000, or with a unit: B, KiB, MiB,\n"
    "                       GiB, KB, MB, GB) or a percentage of the store-all workspace (40%)\n"
    "  --solver S           auto (default: the cheapest plan found fast), store-all, sqrt (Chen\n"
    "                       et al. checkpoints), exact (Checkmate's MILP solved by CBC: a proven\n"
    "                       optimum for small graphs, else the best plan and bound in the time)\n"
    "  --time-limit SEC     --solver exact: time for auto's plan, the bound and the MILP search,\n"
    "                       both functions and every micro-batch count together; the minimum\n"
    "                       budget's search comes on top (default 60; sweep: for each budget)\n"
    "  --verify             run the plan verifier once more on what is emitted and report it\n"
    "                       (compile, plan, dot)\n"
    "  --micro-batches K    run the per-sample layers (x @ w on the batch rows, convolutions,\n"
    "                       pooling, elementwise ops up to the first op that mixes samples;\n"
    "                       batch_norm's statistics and the weight gradients are carried from\n"
    "                       part to part) in K parts of the batch; auto\n"
    "                       (default) splits when no plan of the whole batch meets the budget\n"
    "                       or the one that does recomputes, and parts execute fewer FLOPs;\n"
    "                       1 never; gradients are bit-identical either way\n"
    "  --max-split-ops N    with --micro-batches auto: the most operations of a split training\n"
    "                       step the search over part counts plans (default 20000, or 40000 when\n"
    "                       no plan of the whole batch meets the budget): more may find cheaper\n"
    "                       plans or smaller minimums for large models, in more time\n"
    "  --cache-dir DIR      plan cache (default $XDG_CACHE_HOME/memgrad or ~/.cache/memgrad)\n"
    "  --no-cache           neither read nor write the plan cache (both accepted by every\n"
    "                       command but cache, which takes --cache-dir; check and arena\n"
    "                       cache nothing); not with --cache-dir, which it would leave unused\n"
    "  --points N           sweep: number of budgets, 2 to 1000 (default 8; fewer when the\n"
    "                       minimum and store-all are fewer bytes apart)\n"
    "\n"
    "report options (plan, sweep):\n"
    "  --format F           plan: text (default) or json (the whole plan, docs/plan-json.md);\n"
    "                       sweep: text, csv or json (one row per budget, docs/reports.md)\n"
    "  --graph FILE.json    plan or sweep a benchmark graph (Checkmate node-link JSON, a layered\n"
    "                       DAG) instead of a model; costs in the graph's own unit\n"
    "  --bytes              plan: exact numbers (bytes, FLOPs) instead of KiB/MiB and GFLOP\n"
    "                       in the text report\n"
    "  --svg FILE           plan: the training step's memory timeline as SVG; sweep: the\n"
    "                       overhead/budget curve of auto and sqrt, store-all marked\n"
    "  --trace FILE         plan: Chrome Trace Event JSON (Perfetto, chrome://tracing)\n"
    "                       Report files are written whole (temporary file, then rename; a\n"
    "                       device or FIFO such as /dev/stdout is written into) and never over\n"
    "                       the model\n"
    "\n"
    "arena options:\n"
    "  --capacity BYTES     arena size to fit: bytes, or with a unit (1MiB); default none, as small\n"
    "                       as it goes. Exit status 0 whether or not it fits\n"
    "  --format text|json   json adds every buffer's offset\n"
    "  --time-limit SEC     limit on the exact search after the greedy placement (default 10)\n"
    "\n"
    "cache options:\n"
    "  --clear              remove the plan cache's entries (only memgrad's own files)\n"
    "\n"
    "check options:\n"
    "  --print-ir           print the forward IR, one line per value\n"
    "  --print-joint        print the forward+backward graph with the parameter gradients\n"
    "\n"
    "compile options:\n"
    "  -o FILE              object file to write (required)\n"
    "  --header FILE        C header to write alongside\n"
    "  --target TRIPLE      target triple (default: this machine)\n"
    "  --cpu NAME           target CPU (default: this machine's; with --target LLVM's generic\n"
    "                       one, but RV64GC/RV32GC, double-float ABI, for a RISC-V Linux triple);\n"
    "                       native: this machine's CPU and its features, also with --target\n"
    "  -O0 .. -O3           optimisation level (default -O3)\n"
    "  --emit-llvm FILE     also write the optimised LLVM IR as text\n"
    "  --name NAME          name the symbols, macros and header guard NAME_... instead of after\n"
    "                       the model's `model` line (a C identifier, as there): two budgets of\n"
    "                       one model link into one program\n"
    "  --no-fuse            one kernel call per step: no fused loops for chains of\n"
    "                       elementwise ops whose intermediates the plan frees at once\n"
    "\n"
    "model files (.mg; the README has the whole format):\n"
    "  functions            relu tanh sigmoid exp log gelu sum mean softmax log_softmax\n"
    "                       layer_norm cross_entropy embedding mse matmul conv2d max_pool2d\n"
    "                       avg_pool2d global_avg_pool reshape flatten transpose concat slice\n"
    "                       upsample_nearest conv_transpose2d batch_norm dropout; a @ b on\n"
    "                       stacks of matrices broadcasts their leading axes\n"
    "  attributes           keyword arguments, last: conv2d(x, w, stride=2, pad=1,\n"
    "                       dilation=1, groups=1), max_pool2d(x, kernel=2, stride=2, pad=0),\n"
    "                       reshape(x, shape=[128, -1]), softmax(x, axis=-1) (log_softmax too),\n"
    "                       gelu(x, approx=0) (1: tanh form), layer_norm(x, g, b, eps=1e-5),\n"
    "                       transpose(x, perm=[0, 2, 1, 3]), cross_entropy(z, y, axis=-1),\n"
    "                       concat(a, b, axis=0) (2 to 16 tensors), slice(x, axis=0, start=0,\n"
    "                       end=LEN, step=1), upsample_nearest(x, scale=2),\n"
    "                       conv_transpose2d(x, w, stride=1, pad=0, output_pad=0, dilation=1,\n"
    "                       groups=1), batch_norm(x, g, b, eps=1e-5, momentum=0.1),\n"
    "                       dropout(x, p=0.5, seed=0)\n"
    "  state                batch_norm and dropout give the model a state blob: the header adds\n"
    "                       NAME_init_state, and train_step/forward take a state argument\n"
    "  constants            const D = 256, then D in shapes, repeat counts, attributes and\n"
    "                       expressions (integer + - * /)\n"
    "  blocks               def block(x, c_in, c_out) { ... return h }, called as block(x, 1, 32);\n"
    "                       params inside are named per call (block.0.w, block.1.w)\n"
    "\n"
    "  -h, --help           this text;  --version  the version\n"
    "\n"
    "An option given twice takes its last value, as cc does (--budget 40% --budget 30%: 30%);\n"
    "but -o, --header, --emit-llvm, --svg, --trace and --graph each name one file, and naming\n"
    "two different files with one of them is an error (exit 2). A file named - is the standard\n"
    "output (-o, --header, --emit-llvm, --svg, --trace) or input (the model, --graph, arena's\n"
    "FILE.csv); plan and sweep print no report when --svg or --trace is - (or names the file\n"
    "the standard output is: /dev/stdout), so the standard output is that file alone.\n";

/* The terminal's width: $COLUMNS, else the terminal's, else 80. */
static int terminal_width(void)
{
    const char *c = getenv("COLUMNS");
    long v = c ? strtol(c, NULL, 10) : 0;
    if (v >= 20 && v <= 1000) return (int)v;
    struct winsize ws;
    if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20) return ws.ws_col;
    return 80;
}

/* compile --name: a C identifier the generated names can begin with, held to the rules of a
 * `model` line (parser.c): at most 127 characters, none of mg_model_name_reserved's, in the
 * parser's words. 1 (after a usage error) when name is not one. */
static int bad_model_name(const char *name)
{
    size_t n = strlen(name);
    int ident = (name[0] < '0' || name[0] > '9') &&
                strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == n;
    if (!ident)
        return mg_drv_usage_error("--name '%s' is not a C identifier: a model's name is letters, digits and '_', not "
                           "beginning with a digit", name) != 0;
    if (n > 127) {
        return mg_drv_usage_error("--name: name too long (%zu characters; at most 127)", n) != 0;
    }
    if (mg_model_name_reserved(name)) {
        return mg_drv_usage_error("--name '%s' would give the generated code reserved C names such as '%s_forward': "
                                  "a model's name may not begin or end with '_' or contain '__'", name, name) != 0;
    }
    return 0;
}

/* Whether text is a plain decimal whole number (no sign, spaces or hex) from lo to hi: *v. */
static int whole_in(const char *text, long lo, long hi, long *v)
{
    char *end;
    *v = strtol(text, &end, 10);
    return mg_plain_decimal(text, end) && !*end && *v >= lo && *v <= hi;
}

static int parse_options(int argc, char **argv, mg_drv_options *o, const char *cmd)
{
    memset(o, 0, sizeof *o);
    o->opt_level = 3;
    int is_compile = !strcmp(cmd, "compile"), is_check = !strcmp(cmd, "check"), is_sweep = !strcmp(cmd, "sweep");
    int is_dot = !strcmp(cmd, "dot"), is_plan = !strcmp(cmd, "plan") || is_sweep || is_dot;
    int is_plan_only = !strcmp(cmd, "plan");
    int operands = 0; /* after "--" every argument is the model, as POSIX utilities take it */
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char **slot = NULL;
        if (!operands && !strcmp(a, "--")) {
            operands = 1;
            continue;
        }
        if (operands || a[0] != '-' || !a[1]) { /* the model ("-": the standard input) */
            if (o->model) return mg_drv_usage_error("unexpected argument '%s' (one model file at a time)", a);
            o->model = a;
            continue;
        }
        if (is_compile && !strcmp(a, "-o")) slot = &o->out;
        else if (is_compile && !strcmp(a, "--header")) slot = &o->header;
        else if ((is_compile || (is_plan && !is_sweep)) && !strcmp(a, "--budget")) slot = &o->budget;
        else if (is_sweep && !strcmp(a, "--points")) slot = &o->points_text;
        else if (is_compile && !strcmp(a, "--target")) slot = &o->triple;
        else if (is_compile && !strcmp(a, "--cpu")) slot = &o->cpu;
        else if (is_compile && !strcmp(a, "--emit-llvm")) slot = &o->emit_llvm;
        else if (is_compile && !strcmp(a, "--name")) slot = &o->name;
        else if ((is_compile || is_plan) && !strcmp(a, "--solver")) slot = &o->solver_name;
        else if ((is_compile || is_plan) && !strcmp(a, "--time-limit")) slot = &o->time_limit_text;
        else if ((is_compile || is_plan) && !strcmp(a, "--micro-batches")) slot = &o->micro_text;
        else if ((is_compile || is_plan) && !strcmp(a, "--max-split-ops")) slot = &o->max_split_text;
        else if (is_plan && !is_dot && !strcmp(a, "--format")) slot = &o->format;
        else if (is_plan && !is_dot && !strcmp(a, "--graph")) slot = &o->graph;
        else if ((is_plan_only || is_sweep) && !strcmp(a, "--svg")) slot = &o->svg;
        else if (is_plan_only && !strcmp(a, "--trace")) slot = &o->trace;
        else if (is_plan_only && !strcmp(a, "--bytes")) {
            o->exact_bytes = 1;
            continue;
        }
        else if (is_compile && !strcmp(a, "--no-fuse")) {
            o->no_fuse = 1;
            continue;
        }
        else if (!strcmp(a, "--cache-dir")) slot = &o->cache_dir;
        else if (!strcmp(a, "--no-cache")) {
            o->no_cache = 1;
            continue;
        }
        else if ((is_compile || (is_plan && !is_sweep)) && !strcmp(a, "--verify")) {
            o->verify = 1;
            continue;
        }
        else if (is_compile && a[0] == '-' && a[1] == 'O' && a[2] >= '0' && a[2] <= '3' && !a[3]) {
            o->opt_level = a[2] - '0';
            continue;
        } else if (is_check && !strcmp(a, "--print-ir")) {
            o->print_ir = 1;
            continue;
        } else if (is_check && !strcmp(a, "--print-joint")) {
            o->print_joint = 1;
            continue;
        } else {
            return mg_drv_unknown_option(a, cmd);
        }
        if (mg_drv_needs_value(argc, argv, i)) return 2;
        /* An option given twice: the last wins, as with cc (a script may append an override), but
         * not for a file: two outputs named for one option would write only the last (a build
         * expecting the first would find it missing or stale), and two --graph files are two
         * inputs, like two models. The same file twice is no conflict (a.o, then ./a.o). */
        int is_file = slot == &o->out || slot == &o->header || slot == &o->emit_llvm || slot == &o->svg ||
                      slot == &o->trace || slot == &o->graph;
        if (is_file && *slot && !mg_out_same_file(*slot, argv[i + 1])) {
            return mg_drv_usage_error("%s given twice ('%s', then '%s'): it names one file; give it once", a, *slot,
                                      argv[i + 1]);
        }
        *slot = argv[++i];
    }
    /* "-" is the standard input or output, as for cc and most tools (it made a file named "-") */
    const char **outs[] = {&o->out, &o->header, &o->emit_llvm, &o->svg, &o->trace};
    for (size_t k = 0; k < sizeof outs / sizeof outs[0]; k++)
        if (*outs[k] && !strcmp(*outs[k], "-")) {
            *outs[k] = "/dev/stdout";
            /* plan's and sweep's report is not printed then: `plan m.mg --svg - > m.svg` wrote the
             * text report and the SVG after it, neither usable (review19) */
            if (outs[k] == &o->svg || outs[k] == &o->trace) o->report_file_to_stdout = 1;
        }
    /* and so is any name of the file the standard output is (/dev/stdout, /dev/fd/1, the file
     * `> FILE` opened): `plan --svg /dev/stdout > m.svg` wrote the report and the SVG after it */
    struct stat so, sp;
    if (fstat(STDOUT_FILENO, &so) == 0)
        for (int k = 0; k < 2; k++) {
            const char *report = k ? o->trace : o->svg;
            if (report && stat(report, &sp) == 0 && sp.st_dev == so.st_dev && sp.st_ino == so.st_ino)
                o->report_file_to_stdout = 1;
        }
    if (o->model && !strcmp(o->model, "-")) o->model = "/dev/stdin";
    if (o->graph && !strcmp(o->graph, "-")) o->graph = "/dev/stdin";
    if (o->print_ir && o->print_joint)
        return mg_drv_usage_error("%s", "check: --print-ir and --print-joint each print the graph; give one of them");
    if (o->graph && o->model) return mg_drv_usage_error("%s", "plan: give a model file or --graph FILE.json, not both");
    if (is_plan_only && o->graph && (o->svg || o->trace))
        return mg_drv_usage_error("%s", "plan: --svg and --trace report on models, not on --graph");
    if (o->exact_bytes && o->format && !strcmp(o->format, "json"))
        return mg_drv_usage_error("%s", "plan: --bytes is for the text report; --format json gives the exact numbers "
                                        "already");
    if (is_plan_only && o->graph && o->exact_bytes)
        return mg_drv_usage_error("%s", "plan: --bytes is for a model's report; --graph's gives the exact numbers already");
    if (o->graph && o->micro_text)
        return mg_drv_usage_error("%s: --micro-batches splits a model's batch; a --graph has none", cmd);
    /* --no-cache reads and writes no cache, so a --cache-dir beside it named a directory nothing
     * went to, and was accepted without a word (a script meaning to cache there cached nothing) */
    if (o->no_cache && o->cache_dir)
        return mg_drv_usage_error("%s: --cache-dir has no effect with --no-cache (which neither reads nor writes the "
                                  "plan cache); give one of them", cmd);
    if (!o->model && !o->graph)
        return mg_drv_usage_error(!strcmp(cmd, "plan") || !strcmp(cmd, "sweep")
                               ? "%s: no model file given (MODEL.mg, or --graph FILE.json)"
                               : "%s: no model file given",
                           cmd);
    if (is_compile && !o->out) return mg_drv_usage_error("%s", "compile: no output file given (-o FILE.o)");
    if (o->name && bad_model_name(o->name)) return 2;
    if (o->budget) {
        mg_budget b;
        char err[256];
        if (!mg_budget_parse(o->budget, &b, err, sizeof err)) return mg_drv_usage_error("%s", err);
    }
    if (o->solver_name) {
        int k = 0;
        while (k <= MG_SOLVER_EXACT && strcmp(o->solver_name, mg_solver_names[k])) k++;
        if (k > MG_SOLVER_EXACT)
            return mg_drv_usage_error("unknown solver '%s' (use auto, exact, sqrt or store-all)", o->solver_name);
        o->solver = (mg_solver)k;
    }
    o->time_limit = 60;
    if (o->time_limit_text) {
        char *end;
        o->time_limit = strtod(o->time_limit_text, &end);
        if (!mg_plain_decimal(o->time_limit_text, end) || *end || !(o->time_limit > 0) || o->time_limit > 1e6)
            /* (the upper limit said: 1e7 was refused as not "a positive number of seconds") */
            return mg_drv_usage_error("--time-limit wants a number of seconds above 0 and at most 1e6, got '%s'", o->time_limit_text);
        /* only exact's search has a time to spend: auto, sqrt and store-all took it and ignored it */
        if (o->solver != MG_SOLVER_EXACT)
            return mg_drv_usage_error("%s: --time-limit is --solver exact's time; %s takes no time limit", cmd,
                                      mg_solver_names[o->solver]);
    }
    if (o->format && strcmp(o->format, "text") && strcmp(o->format, "json") && (!is_sweep || strcmp(o->format, "csv")))
        return mg_drv_usage_error(is_sweep ? "unknown format '%s' (use text, csv or json)" : "unknown format '%s' (use text or json)",
                           o->format);
    if (o->micro_text) {
        long v = 0;
        if (strcmp(o->micro_text, "auto") && !whole_in(o->micro_text, 1, 4096, &v))
            return mg_drv_usage_error("--micro-batches wants auto or a whole number from 1 to 4096, got '%s'", o->micro_text);
        o->micro_batches = (int)v;
    }
    if (o->max_split_text) {
        long v;
        if (!whole_in(o->max_split_text, 1, MG_PLAN_MAX_NODES, &v))
            return mg_drv_usage_error("--max-split-ops wants a whole number from 1 to %d, got '%s'", MG_PLAN_MAX_NODES,
                                      o->max_split_text);
        if (o->graph) return mg_drv_usage_error("%s: --max-split-ops bounds the split of a model's batch; a --graph has none", cmd);
        /* (only the search over part counts has a limit: a part count asked for is planned whatever its size) */
        if (o->micro_batches > 0)
            return mg_drv_usage_error("%s: --max-split-ops bounds the search over part counts, which --micro-batches %d "
                                      "replaces; give one of them", cmd, o->micro_batches);
        o->max_split_ops = (int)v;
    }
    o->points = 8;
    if (o->points_text) {
        long v;
        if (!whole_in(o->points_text, 2, 1000, &v))
            return mg_drv_usage_error("--points wants a whole number from 2 to 1000, got '%s'", o->points_text);
        o->points = (int)v;
    }
    return 0;
}

/* check and compile: the frontend's warnings; then a warning at each param the minimized loss
 * does not depend on (declared and never used, or used only by outputs): its gradient is zero at
 * every step, which a model author meant rarely, like a C compiler's unused variable; and at each
 * input nothing reads. The model is still valid. */
static void warn_at(const mg_drv_compiled *c, int node, const char *fmt)
{
    const mg_node *n = &c->g->nodes[node];
    mg_diag d = {.loc = n->loc};
    snprintf(d.msg, sizeof d.msg, fmt, n->name ? n->name : "?");
    mg_drv_print_diag_as(&c->src, &d, "warning");
}

static void warn_unused(const mg_drv_compiled *c)
{
    const mg_graph *g = c->g;
    /* first the parser's own (a declaration hiding a name), in source order */
    for (int i = 0; i < g->nwarnings; i++) mg_drv_print_diag_as(&c->src, &g->warnings[i], "warning");
    if (g->warnings_dropped)
        fprintf(stderr, "%s: warning: more declarations hide names; the first %d are shown\n", c->src.path,
                MG_MAX_WARNINGS);
    if (g->loss < 0) return;
    char *used = calloc((size_t)g->n + 1, 1);
    if (!used) abort();
    used[g->loss] = 1;
    mg_graph_mark_needed(g, g->loss + 1, used);
    for (int i = 0; i < g->nparams; i++)
        if (!used[g->params[i]])
            warn_at(c, g->params[i], "the loss does not depend on param '%s': its gradient is zero at every step");
    /* and an input neither the loss nor an output reads (it said nothing; review) */
    for (int i = 0; i < g->noutputs; i++) used[g->outputs[i].node] = 1;
    mg_graph_mark_needed(g, g->nforward, used);
    for (int i = 0; i < g->ninputs; i++)
        if (!used[g->inputs[i]])
            warn_at(c, g->inputs[i], "neither the loss nor an output reads input '%s': the step ignores it");
    free(used);
}

/* No plan meets the budget: below the minimum feasible budget, the error names it and the
 * store-all workspace; else the solver found none (a baseline may miss budgets auto meets). The
 * same words for a model and for plan --graph. */
static void no_plan_error(const char *path, mg_solver solver, int64_t want, int64_t minf, int64_t all, int parts)
{
    char h1[32], h2[32], h3[32], with[64] = "";
    /* (a forced part count has its own minimum: mlp's is 47.9 KiB, with --micro-batches 1 its
     * store-all workspace, and the two errors must not look like one figure that changed) */
    if (parts > 0) snprintf(with, sizeof with, " with --micro-batches %d", parts);
    if (minf >= 0 && minf > want)
        fprintf(stderr,
                "%s: error: budget %s (%lld %s) is below the minimum feasible budget%s of %s (%lld %s); "
                "the store-all workspace is %s (%lld %s)\n",
                path, mg_human_bytes(want, h1, sizeof h1), (long long)want, mg_bytes_word(want), with,
                mg_human_bytes(minf, h2, sizeof h2), (long long)minf, mg_bytes_word(minf),
                mg_human_bytes(all, h3, sizeof h3), (long long)all, mg_bytes_word(all));
    else
        fprintf(stderr,
                "%s: error: solver %s finds no plan within budget %s (%lld %s); the store-all workspace is %s "
                "(%lld %s)%s\n",
                path, mg_solver_names[solver], mg_human_bytes(want, h1, sizeof h1), (long long)want, mg_bytes_word(want),
                mg_human_bytes(all, h3, sizeof h3), (long long)all, mg_bytes_word(all),
                solver == MG_SOLVER_AUTO ? "" : "; --solver auto may find one");
}

/* Plans both functions under the options' budget and solver. A budget no plan meets is an
 * error that names the budget, the minimum feasible one and the store-all workspace.
 * want_min: MG_MIN_YES for the commands that report the minimum feasible budget, MG_MIN_AS_PLANNED
 * for compile, which emits the same plan without searching the part counts that would only lower
 * the minimum (plan.h) */
static int run_planner(mg_drv_options *o, mg_drv_compiled *c, int want_min)
{
    mg_diag d = {0};
    mg_budget b;
    char err[256];
    if (o->budget && !mg_budget_parse(o->budget, &b, err, sizeof err)) return mg_drv_usage_error("%s", err);
    mg_plan_request rq = {.solver = o->solver, .budget = o->budget ? &b : NULL, .time_limit = o->time_limit,
                          .want_min_feasible = want_min, .parts_max_nodes = {o->max_split_ops, o->max_split_ops}};
    mg_drv_plan_cache pc;
    mg_drv_plan_cache_open(o, &pc);
    if (mg_drv_plan_with_cache(&pc, c->g, rq, o->micro_batches, &c->plan, &o->from_cache, &d)) {
        mg_drv_print_diag(&c->src, &d);
        return 1;
    }
    const mg_planned *p = &c->plan;
    if (p->note) fprintf(stderr, "%s: note: %s\n", c->src.path, p->note);
    if (!p->train) {
        no_plan_error(c->src.path, o->solver, p->budget_bytes, p->min_feasible_bytes, p->store_all_bytes,
                      o->micro_batches);
        if (p->unsplit.msg[0] && p->unsplit.loc.line > 0) {
            fprintf(stderr, "%s:%d:%d: note: %s\n", c->src.path, p->unsplit.loc.line, p->unsplit.loc.col,
                    p->unsplit.msg);
            /* the line it names, as under an error (it named the place alone) */
            mg_print_excerpt(stderr, c->src.text, c->src.len, p->unsplit.loc.line, p->unsplit.loc.col);
        }
        else if (p->unsplit.msg[0])
            fprintf(stderr, "%s: note: %s\n", c->src.path, p->unsplit.msg);
        mg_drv_parts_not_tried_note(c->src.path, p, 1);
        return 1;
    }
    if (want_min == MG_MIN_AS_PLANNED) mg_drv_parts_not_tried_note(c->src.path, p, 0); /* (plan's report says it) */
    c->prog.g = mg_planned_graph(p, c->g);
    c->prog.model = c->g;
    c->prog.train = p->train;
    c->prog.forward = p->forward;
    c->prog.workspace_bytes = p->workspace_bytes;
    c->prog.param_bytes = mg_param_layout(c->g, NULL);
    c->prog.micro_batches = p->micro_batches;
    return 0;
}

/* --verify: the plan verifier once more, with its verdict on stderr. (Every plan is verified
 * while it is made; this repeats it on exactly what is emitted and says so.) */
static int verify_again(mg_drv_compiled *c)
{
    mg_diag d = {0};
    if (mg_program_verify(mg_planned_graph(&c->plan, c->g), &c->plan, &d)) {
        mg_drv_print_diag(&c->src, &d);
        return 1;
    }
    int nt = c->plan.train->nsteps, nf = c->plan.forward->nsteps, nb = c->plan.train->nbufs + c->plan.forward->nbufs;
    fprintf(stderr, "%s: plan verified: %d train step%s, %d forward step%s, %d buffer%s in %lld workspace %s\n",
            c->src.path, nt, mg_plural(nt), nf, mg_plural(nf), nb, mg_plural(nb),
            (long long)c->plan.workspace_bytes, mg_bytes_word(c->plan.workspace_bytes));
    return 0;
}

static int cmd_check(mg_drv_options *o)
{
    mg_drv_compiled c;
    int rc = mg_drv_run_frontend(o->model, &c, 0);
    if (!rc) warn_unused(&c);
    if (!rc && (o->print_ir || o->print_joint)) {
        int saved = c.g->n;
        if (o->print_ir) c.g->n = c.g->nforward; /* the forward graph is a prefix of the joint one */
        int *pg = c.g->param_grads;
        if (o->print_ir) c.g->param_grads = NULL;
        char *s = mg_graph_print(c.g);
        c.g->n = saved;
        c.g->param_grads = pg;
        fputs(s, stdout);
        free(s);
    } else if (!rc) {
        /* operations are what the step computes: the inputs and params it is given and the
         * constants (the loss's seed gradient among them) are counted apart (they were counted
         * among the forward and backward "operations"); "scalar constant nodes", not "constants",
         * which read as the model's `const` declarations (names folded into shapes, no nodes) */
        int nf = 0, nb = 0, nconst = 0;
        for (int i = 0; i < c.g->n; i++) {
            mg_op op = c.g->nodes[i].op;
            if (op == MG_OP_CONST) nconst++;
            else if (op != MG_OP_INPUT && op != MG_OP_PARAM) *(i < c.g->nforward ? &nf : &nb) += 1;
        }
        printf("%s: ok: model %s, %d input%s, %d param%s, %d forward and %d backward operation%s, %d scalar constant node%s, "
               "hash 0x%016llx\n",
               c.src.path, c.g->model_name, c.g->ninputs, mg_plural(c.g->ninputs), c.g->nparams, mg_plural(c.g->nparams),
               nf, nb, mg_plural(nb), nconst, mg_plural(nconst), (unsigned long long)mg_graph_hash(c.g));
    }
    mg_drv_compiled_free(&c);
    return rc;
}

/* plan --graph: a benchmark graph instead of a model; one schedule, costs in the graph's units,
 * cached as a model's plans are. */
static int cmd_plan_graph(mg_drv_options *o)
{
    mg_drv_source src;
    if (mg_drv_read_source(o->graph, &src)) return 1;
    mg_diag d = {0};
    mg_problem *pr = NULL;
    mg_budget b;
    char err[256], h[32];
    int rc = 0;
    if (o->budget && !mg_budget_parse(o->budget, &b, err, sizeof err)) rc = mg_drv_usage_error("%s", err);
    if (!rc && mg_problem_from_json(src.path, src.text, src.len, &pr, &d)) {
        mg_drv_print_diag(&src, &d);
        rc = 1;
    }
    mg_solution sol = {0};
    int64_t budget = INT64_MAX;
    double secs = 0;
    int from_cache = 0;
    if (!rc) {
        /* from the plan cache as a model's plan (an exact solve takes up to its time limit) */
        mg_drv_plan_cache pc;
        mg_drv_plan_cache_open(o, &pc);
        mg_solve_request rq = {.solver = o->solver, .budget = o->budget ? &b : NULL, .want_min = 1,
                               .time_limit = o->time_limit};
        if (mg_drv_solve_with_cache(&pc, pr, rq, mg_seconds(), &sol, &budget, &secs, &from_cache, &d)) {
            mg_drv_print_diag(&src, &d);
            rc = 1;
        }
    }
    if (!rc && sol.note) fprintf(stderr, "%s: note: %s\n", src.path, sol.note);
    if (!rc && !sol.plan) {
        no_plan_error(src.path, o->solver, budget, sol.min_feasible_bytes, sol.store_all_bytes, 0);
        rc = 1;
    } else if (!rc && o->format && !strcmp(o->format, "json")) {
        char *j = mg_problem_plan_json(pr, &sol, budget, secs, from_cache, mg_solver_names[o->solver]);
        fputs(j, stdout);
        free(j);
    } else if (!rc) {
        const mg_plan *t = sol.plan;
        int edges = pr->in_start[pr->n];
        printf("graph %s: %d node%s, %d edge%s  solver %s (%s, %.3f s%s)\n", src.path, pr->n, mg_plural(pr->n),
               edges, mg_plural(edges), mg_solver_names[o->solver],
               sol.optimal == 1 ? "optimal" : "optimality unknown", secs, from_cache ? ", from the plan cache" : "");
        if (budget != INT64_MAX)
            printf("  budget              %s (%lld %s)\n", mg_human_bytes(budget, h, sizeof h), (long long)budget,
                   mg_bytes_word(budget));
        printf("  workspace           %s (%lld %s)\n", mg_human_bytes(t->workspace_bytes, h, sizeof h),
               (long long)t->workspace_bytes, mg_bytes_word(t->workspace_bytes));
        printf("  peak live           %s (%lld %s)\n", mg_human_bytes(t->peak_live_bytes, h, sizeof h),
               (long long)t->peak_live_bytes, mg_bytes_word(t->peak_live_bytes));
        printf("  store-all           %s (%lld %s)\n", mg_human_bytes(sol.store_all_bytes, h, sizeof h),
               (long long)sol.store_all_bytes, mg_bytes_word(sol.store_all_bytes));
        printf("  minimum feasible    %s (%lld %s)%s\n", mg_human_bytes(sol.min_feasible_bytes, h, sizeof h),
               (long long)sol.min_feasible_bytes, mg_bytes_word(sol.min_feasible_bytes),
               mg_report_min_note(t->workspace_bytes, sol.min_feasible_bytes));
        fputs("  cost                ", stdout);
        mg_drv_print_cost(t->flops_once);
        fputs(" once, ", stdout);
        mg_drv_print_cost(t->flops_executed);
        printf(" executed, recompute overhead %.2f%%\n", 100.0 * mg_recompute_overhead(t->flops_once, t->flops_executed));
        if (sol.lower_bound > t->flops_once) {
            fputs("  lower bound         ", stdout);
            mg_drv_print_cost(sol.lower_bound);
            printf(" proven; the plan is within %.2f%% of it\n",
                   100.0 * (t->flops_executed - sol.lower_bound) / sol.lower_bound);
        }
        printf("  steps               %d\n", t->nsteps);
    }
    if (!rc && o->verify) {
        if (mg_plan_verify(sol.plan, pr, &d)) {
            mg_drv_print_diag(&src, &d);
            rc = 1;
        } else {
            fprintf(stderr, "%s: plan verified: %d step%s, %d buffer%s in %lld workspace %s\n", src.path,
                    sol.plan->nsteps, mg_plural(sol.plan->nsteps), sol.plan->nbufs, mg_plural(sol.plan->nbufs),
                    (long long)sol.plan->workspace_bytes, mg_bytes_word(sol.plan->workspace_bytes));
        }
    }
    mg_plan_free(sol.plan);
    mg_problem_free(pr);
    free(src.text);
    return rc;
}

static void write_svg(FILE *out, const void *f) { mg_report_svg(out, f); }
static void write_trace(FILE *out, const void *f) { mg_report_trace(out, f); }

/* The plan of a model and its figures, which every report reads. */
static int plan_figures(mg_drv_options *o, mg_drv_compiled *c, mg_report_figures *f)
{
    int rc = mg_drv_run_frontend(o->model, c, 1);
    if (!rc) rc = run_planner(o, c, MG_MIN_YES);
    if (!rc) {
        mg_diag d = {0};
        mg_plan_report_info info = {mg_solver_names[o->solver], mg_graph_hash(c->g), o->from_cache};
        if (mg_report_figures_make(mg_planned_graph(&c->plan, c->g), &c->plan, &info, f, &d)) {
            mg_drv_print_diag(&c->src, &d);
            rc = 1;
        }
    }
    return rc;
}

static int cmd_plan(mg_drv_options *o)
{
    if (o->graph) return cmd_plan_graph(o);
    mg_out_file outs[2] = {{.flag = "--svg", .path = o->svg}, {.flag = "--trace", .path = o->trace}};
    const mg_drv_report_writer writers[2] = {write_svg, write_trace};
    int rc = mg_out_check(o->model, outs, 2);
    if (rc) return rc;
    mg_drv_compiled c;
    mg_report_figures f = {0};
    rc = plan_figures(o, &c, &f);
    /* the report files (once the plan is verified) before the report itself: `plan --svg m.svg |
     * head` ended by SIGPIPE in the report and left no m.svg, where a full standard output (an
     * error said at the end) left it written */
    int verify_rc = !rc && o->verify ? verify_again(&c) : 0;
    int files_rc = !rc && !verify_rc ? mg_drv_write_report_outs(outs, writers, &f, 2) : 0;
    if (!rc && !o->report_file_to_stdout) {
        if (o->format && !strcmp(o->format, "json")) {
            char *j = mg_plan_json(&f);
            fputs(j, stdout);
            free(j);
        } else {
            mg_report_text(stdout, &f, terminal_width(), o->exact_bytes);
        }
    }
    if (!rc) rc = verify_rc ? verify_rc : files_rc;
    mg_report_figures_free(&f);
    mg_drv_compiled_free(&c);
    return rc;
}

/* dot: the joint graph as Graphviz DOT, coloured by the plan's decisions. */
static int cmd_dot(mg_drv_options *o)
{
    mg_drv_compiled c;
    mg_report_figures f = {0};
    int rc = plan_figures(o, &c, &f);
    if (!rc) mg_report_dot(stdout, &f);
    if (!rc && o->verify) rc = verify_again(&c);
    mg_report_figures_free(&f);
    mg_drv_compiled_free(&c);
    return rc;
}

/* An explicit --target/--cpu is tried in a child process first: LLVM answers an unknown CPU
 * with a warning and, on some targets, an abort, neither of which may reach the user as such.
 * A value LLVM refuses is a usage error (exit 2), like any other bad option value. */
static int check_target(const mg_drv_options *o)
{
    if (!o->cpu && !o->triple) return 0;
    int fds[2];
    if (pipe(fds) != 0) return 0;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        mg_target t = {o->triple, o->cpu, NULL, o->opt_level, 0};
        mg_diag d = {0};
        if (mg_target_probe(&t, &d)) {
            fprintf(stderr, "%s\n", d.msg);
            _exit(1);
        }
        _exit(0);
    }
    close(fds[1]);
    char msg[2048] = "";
    size_t n = 0;
    ssize_t r;
    while (n + 1 < sizeof msg && (r = read(fds[0], msg + n, sizeof msg - 1 - n)) > 0) n += (size_t)r;
    msg[n] = 0;
    close(fds[0]);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) < 0) return 0;
    char *nl = strchr(msg, '\n');
    if (nl) *nl = 0;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || strstr(msg, "is not a recognized")) {
        if (o->cpu && !strcmp(o->cpu, "native") && (strstr(msg, "is not a recognized") || !WIFEXITED(status)))
            /* (this machine's CPU, on a --target of another architecture: LLVM names the CPU) */
            fprintf(stderr, "memgrad: error: --cpu native is this machine's CPU, which target %s does not have (LLVM: "
                    "%s)\n", o->triple ? o->triple : "of this machine", msg);
        else if (o->cpu && (strstr(msg, "is not a recognized") || !WIFEXITED(status)))
            fprintf(stderr, "memgrad: error: unknown CPU '%s' for target %s (LLVM: %s)\n", o->cpu,
                    o->triple ? o->triple : "of this machine", msg);
        else
            fprintf(stderr, "memgrad: error: %s\n", msg[0] ? msg : "the target cannot be used");
        fprintf(stderr, "Try 'memgrad --help'.\n");
        return 2;
    }
    return 0;
}

static int cmd_compile(mg_drv_options *o)
{
    mg_out_file outs[3] = {{.flag = "-o", .path = o->out}, {.flag = "--header", .path = o->header},
                           {.flag = "--emit-llvm", .path = o->emit_llvm}};
    int rc = mg_out_check(o->model, outs, 3);
    if (rc) return rc;
    int target_rc = check_target(o);
    if (target_rc) return target_rc;
    mg_drv_compiled c;
    rc = mg_drv_run_frontend(o->model, &c, 1);
    if (!rc) warn_unused(&c);
    /* --name renames the model before planning, so that a micro-batched graph made from it (and
     * so the object's symbols and the header) take the new name; the structural hash, and so the
     * plan cache's key, leave the name out */
    if (!rc && o->name) c.g->model_name = mg_graph_intern(c.g, o->name);
    if (!rc) rc = run_planner(o, &c, MG_MIN_AS_PLANNED);
    if (!rc && o->verify) rc = verify_again(&c);
    mg_emitted e = {0};
    char *h = NULL;
    if (!rc) {
        mg_diag d = {0};
        mg_target t = {o->triple, o->cpu, NULL, o->opt_level, o->no_fuse};
        if (mg_emit_object(&c.prog, &t, o->emit_llvm != NULL, &e, &d)) {
            mg_drv_print_diag(&c.src, &d);
            rc = 1;
        }
    }
    if (!rc && o->header) h = mg_header_text(&c.prog, &e, o->out, o->header);
    /* Every output goes to a temporary file first; all are put in place only when all are
     * written, so a failure leaves the user's old files as they were and no partial set behind.
     * The temporary files are made once everything is in memory: made before the code
     * generation (a minute for a model of 5,000 params at -O3), an interrupted compile left them
     * behind, empty (review). */
    if (!rc) rc = mg_out_begin(outs, 3);
    if (!rc) rc = mg_drv_write_file(o->out, outs[0].tmp, e.obj, e.obj_len);
    if (!rc && o->emit_llvm) rc = mg_drv_write_file(o->emit_llvm, outs[2].tmp, e.ll, e.ll_len);
    if (!rc && o->header) rc = mg_drv_write_file(o->header, outs[1].tmp, h, strlen(h));
    if (!rc) rc = mg_out_commit(outs, 3);
    mg_out_end(outs, 3);
    free(h);
    mg_emitted_free(&e);
    mg_drv_compiled_free(&c);
    return rc;
}

/* The standard output as the driver writes it: stdio's stream over write(2) calls of its own,
 * which keep the first error's errno. stdio keeps only an error flag, so a write larger than its
 * buffer that failed (`plan` or `--help` > /dev/full) was said as "cannot write the standard
 * output" without the reason: errno was long gone by the fclose that found nothing to write. */
typedef struct stdout_sink {
    int err; /* the first failed write's or close's errno; 0 */
} stdout_sink;

static ssize_t sink_write(void *cookie, const char *buf, size_t n)
{
    stdout_sink *s = cookie;
    int err = mg_write_all(STDOUT_FILENO, buf, n);
    if (!err) return (ssize_t)n;
    if (!s->err) s->err = err;
    return -1;
}

static int sink_close(void *cookie)
{
    stdout_sink *s = cookie;
    if (close(STDOUT_FILENO) == 0) return 0;
    if (!s->err) s->err = errno;
    return -1;
}

/* The command's exit status, or 1 when what it printed to stdout did not all get there (a full
 * disk, /dev/full): a report cut short must not look like a report. The reason comes from the
 * sink (sink NULL: stdio's own stdout, fclose's errno). */
static int close_stdout(int rc, const stdout_sink *sink)
{
    int bad = ferror(stdout);
    errno = 0;
    if (fclose(stdout) != 0) bad = 1;
    if (!bad) return rc;
    int err = sink && sink->err ? sink->err : errno;
    if (err) fprintf(stderr, "memgrad: cannot write the standard output: %s\n", strerror(err));
    else fprintf(stderr, "memgrad: cannot write the standard output\n");
    return rc ? rc : 1;
}

static int print_version(void)
{
    printf("memgrad %s\n", MG_VERSION);
    return 0;
}

/* The command cmd with its arguments a[0..n) (a[0] is cmd; "--option=value" already split). */
static int run_command(const char *cmd, int n, char **a)
{
    for (int i = 1; i < n && strcmp(a[i], "--"); i++) /* (after a command as before one, as cc and git take them) */
        if (!strcmp(a[i], "-h") || !strcmp(a[i], "--help")) {
            fputs(usage_text, stdout);
            return 0;
        } else if (!strcmp(a[i], "--version")) {
            return print_version();
        }
    mg_drv_options o;
    if (!strcmp(cmd, "arena")) return mg_cmd_arena(n, a);
    if (!strcmp(cmd, "cache")) return mg_cmd_cache(n - 1, a + 1);
    int rc = parse_options(n - 1, a + 1, &o, cmd);
    if (rc) return rc;
    if (!strcmp(cmd, "compile")) return cmd_compile(&o);
    if (!strcmp(cmd, "check")) return cmd_check(&o);
    if (!strcmp(cmd, "sweep")) return mg_cmd_sweep(&o);
    if (!strcmp(cmd, "dot")) return cmd_dot(&o);
    return cmd_plan(&o);
}

static int run(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage_text, stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        fputs(usage_text, stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version")) return print_version();
    if (strcmp(cmd, "compile") && strcmp(cmd, "check") && strcmp(cmd, "plan") && strcmp(cmd, "sweep") &&
        strcmp(cmd, "dot") && strcmp(cmd, "arena") && strcmp(cmd, "cache")) {
        /* (before --help: `memgrad bogus --help` is an error) */
        size_t len = strlen(cmd);
        if (cmd[0] != '-' && ((len > 3 && !strcmp(cmd + len - 3, ".mg")) || access(cmd, F_OK) == 0)) {
            /* a model where the command goes: `memgrad m.mg` */
            return mg_drv_usage_error("unknown command '%s': the command comes first, as in 'memgrad plan %s'", cmd, cmd);
        }
        return mg_drv_usage_error("unknown command '%s'", cmd);
    }
    char **args;
    int rc = mg_drv_split_equals(argc - 1, argv + 1, &args);
    if (rc) return rc;
    int n = 0;
    while (args[n]) n++;
    rc = run_command(cmd, n, args);
    free(args);
    return rc;
}

/* The library aborts where memory runs out (every allocation has an owner, and none of its
 * callers could go on without it) and where a thread cannot be joined; the process then died
 * without a word (`ulimit -v`, a model of millions of operations: exit 134 and nothing said).
 * One line says what happened before the default action. */
static void on_abort(int sig)
{
    static const char msg[] = "memgrad: aborted: out of memory (or an internal error)\n";
    ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)w;
    signal(sig, SIG_DFL);
    raise(sig);
}

int main(int argc, char **argv)
{
    signal(SIGABRT, on_abort);
#ifdef __GLIBC__
    /* The planner builds and drops thousands of schedules and arena placements of a few MB each;
     * with glibc's defaults every free trims the heap's top and the next allocation faults the
     * pages in again (resnet50 at its minimum: 8.4k page faults, solve 0.656 s; with these
     * 0.613 s, medians of 7). The program's choice, made here: the library sets no such state. */
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    mallopt(M_MMAP_THRESHOLD, 256 << 20);
#endif
    /* stdout through the sink (close_stdout's reason); line-buffered on a terminal, as stdio's */
    stdout_sink sink = {0};
    FILE *out = fopencookie(&sink, "w", (cookie_io_functions_t){.write = sink_write, .close = sink_close});
    if (out) {
        setvbuf(out, NULL, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF, BUFSIZ);
        stdout = out;
    }
    return close_stdout(run(argc, argv), out ? &sink : NULL);
}
