/* main.c — the `memgrad` command-line driver. The only code that talks to the terminal: it
 * reads files, runs the pipeline as a flat list of calls, prints diagnostics with the source
 * line and a caret, and chooses exit codes (0 ok, 1 error in the model or build, 2 usage). */
#include "clock.h"
#include "arena.h"
#include "autodiff.h"
#include "backend.h"
#include "budget.h"
#include "frontend.h"
#include "plan.h"
#include "read_file.h"
#include "microbatch.h"
#include "excerpt.h"
#include "out_files.h"
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
    "planning options (compile, plan, sweep, dot):\n"
    "  --budget B           workspace cap (not sweep): bytes with a unit (B, KiB, MiB, GiB, KB, MB,\n"
    "                       GB) or a percentage of the store-all workspace (40%)\n"
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
    "  --cache-dir DIR      plan cache (default $XDG_CACHE_HOME/memgrad or ~/.cache/memgrad)\n"
    "  --no-cache           neither read nor write the plan cache (both accepted by every\n"
    "                       command but cache, which takes --cache-dir; check, arena and\n"
    "                       --graph cache nothing)\n"
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
    "                       one, but RV64GC/RV32GC, double-float ABI, for a RISC-V Linux triple)\n"
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

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "memgrad: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry 'memgrad --help'.\n");
    return 2;
}

typedef struct source {
    const char *path;
    char *text;
    size_t len;
} source;

/* The file read (a model or a graph; "-" was made /dev/stdin), named in messages as cc names it:
 * "<stdin>:3:7: error: ..." rather than /dev/stdin (review19). */
static int read_source(const char *path, source *s)
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
static void print_diag_as(const source *src, const mg_diag *d, const char *kind)
{
    if (d->loc.line <= 0) {
        fprintf(stderr, "%s: %s: %s\n", src ? src->path : "memgrad", kind, d->msg);
        return;
    }
    fprintf(stderr, "%s:%d:%d: %s: %s\n", src->path, d->loc.line, d->loc.col, kind, d->msg);
    mg_print_excerpt(stderr, src->text, src->len, d->loc.line, d->loc.col);
}

static void print_diag(const source *src, const mg_diag *d) { print_diag_as(src, d, "error"); }

/* Writes n bytes of text to the file tmp; errors name path, the file the user asked for, and the
 * reason: write(2)'s own errno (through stdio a failed write left only the stream's error flag,
 * and errno could be anything by the fclose that found nothing left to write). */
static int write_file(const char *path, const char *tmp, const char *text, size_t n)
{
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0666), err = fd < 0 ? errno : mg_write_all(fd, text, n);
    if (fd >= 0 && close(fd) != 0 && !err) err = errno;
    if (err) fprintf(stderr, "memgrad: cannot write %s: %s\n", path, strerror(err));
    return err != 0;
}

/* Report files (--svg, --trace): checked before planning (mg_out_check), each written by its
 * writer to a temporary file, and all put in place only when all are written, like compile's
 * outputs. */
typedef void (*report_writer)(FILE *out, const void *ctx);

static int write_report_outs(mg_out_file *f, const report_writer *write, const void *ctx, int n)
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
        rc = write_file(f[i].path, f[i].tmp, text, len);
        free(text);
    }
    if (!rc) rc = mg_out_commit(f, n);
    mg_out_end(f, n);
    return rc;
}

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

typedef struct options {
    const char *model, *out, *header, *budget, *triple, *cpu, *emit_llvm, *solver_name, *time_limit_text, *format;
    const char *graph; /* plan --graph FILE.json */
    const char *points_text, *cache_dir, *micro_text;
    const char *svg, *trace; /* plan --svg / --trace, sweep --svg */
    const char *name;        /* compile --name: the C names' prefix instead of the model's name */
    int report_file_to_stdout; /* --svg or --trace is - (or names the file stdout is): that file is the
                                  standard output, alone */
    int points, no_cache, from_cache, exact_bytes, no_fuse;
    int opt_level, print_ir, print_joint, verify;
    int micro_batches; /* --micro-batches: 0 auto, 1 never split, k */
    mg_solver solver;
    double time_limit;
} options;

/* compile --name: a C identifier the generated names can begin with, held to the rules of a
 * `model` line (parser.c): at most 127 characters, none of mg_model_name_reserved's, in the
 * parser's words. 1 (after a usage error) when name is not one. */
static int bad_model_name(const char *name)
{
    size_t n = strlen(name);
    int ident = (name[0] < '0' || name[0] > '9') &&
                strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == n;
    if (!ident)
        return usage_error("--name '%s' is not a C identifier: a model's name is letters, digits and '_', not "
                           "beginning with a digit", name) != 0;
    if (n > 127) {
        fprintf(stderr, "memgrad: --name: name too long (%zu characters; at most 127)\nTry 'memgrad --help'.\n", n);
        return 1;
    }
    if (mg_model_name_reserved(name)) {
        fprintf(stderr, "memgrad: --name '%s' would give the generated code reserved C names such as '%s_forward': a "
                "model's name may not begin or end with '_' or contain '__'\nTry 'memgrad --help'.\n", name, name);
        return 1;
    }
    return 0;
}

/* Which commands take an option, for the error when another is given it ("unknown option
 * '--budget'" for sweep read as if memgrad had no such option); NULL: none. */
static const char *commands_taking(const char *a)
{
    static const struct { const char *opt, *cmds; } tab[] = {
        {"-o", "compile"}, {"--header", "compile"}, {"--target", "compile"}, {"--cpu", "compile"},
        {"--emit-llvm", "compile"}, {"--no-fuse", "compile"}, {"--name", "compile"}, {"-O0", "compile"}, {"-O1", "compile"},
        {"-O2", "compile"}, {"-O3", "compile"}, {"--budget", "compile, plan and dot"},
        {"--verify", "compile, plan and dot"}, {"--solver", "compile, plan, sweep and dot"},
        {"--micro-batches", "compile, plan, sweep and dot"}, {"--time-limit", "compile, plan, sweep, dot and arena"},
        {"--points", "sweep"}, {"--format", "plan, sweep and arena"}, {"--graph", "plan and sweep"},
        {"--svg", "plan and sweep"}, {"--trace", "plan"}, {"--bytes", "plan"}, {"--print-ir", "check"},
        {"--print-joint", "check"}, {"--capacity", "arena"}, {"--clear", "cache"},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (!strcmp(a, tab[i].opt)) return tab[i].cmds;
    return NULL;
}

static int parse_options(int argc, char **argv, options *o, const char *cmd)
{
    memset(o, 0, sizeof *o);
    o->opt_level = 3;
    int is_compile = !strcmp(cmd, "compile"), is_check = !strcmp(cmd, "check"), is_sweep = !strcmp(cmd, "sweep");
    int is_dot = !strcmp(cmd, "dot"), is_plan = !strcmp(cmd, "plan") || is_sweep || is_dot;
    int is_plan_only = !strcmp(cmd, "plan");
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char **slot = NULL;
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
        } else if (a[0] == '-' && a[1]) {
            const char *takers = commands_taking(a);
            if (takers) {
                fprintf(stderr, "memgrad: unknown option '%s' for %s (%s %s it)\n", a, cmd, takers,
                        strchr(takers, ' ') ? "take" : "takes");
                fprintf(stderr, "Try 'memgrad --help'.\n");
                return 2;
            }
            return usage_error("unknown option '%s'", a);
        } else if (!o->model) {
            o->model = a;
            continue;
        } else {
            return usage_error("unexpected argument '%s' (one model file at a time)", a);
        }
        if (i + 1 >= argc || !argv[i + 1][0]) return usage_error("option '%s' needs a value", a);
        /* An option given twice: the last wins, as with cc (a script may append an override), but
         * not for a file: two outputs named for one option would write only the last (a build
         * expecting the first would find it missing or stale), and two --graph files are two
         * inputs, like two models. The same file twice is no conflict. */
        int is_file = slot == &o->out || slot == &o->header || slot == &o->emit_llvm || slot == &o->svg ||
                      slot == &o->trace || slot == &o->graph;
        if (is_file && *slot && strcmp(*slot, argv[i + 1])) {
            fprintf(stderr, "memgrad: %s given twice ('%s', then '%s'): it names one file; give it once\n", a, *slot,
                    argv[i + 1]);
            fprintf(stderr, "Try 'memgrad --help'.\n");
            return 2;
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
        return usage_error("%s", "check: --print-ir and --print-joint each print the graph; give one of them");
    if (o->graph && o->model) return usage_error("%s", "plan: give a model file or --graph FILE.json, not both");
    if (is_plan_only && o->graph && (o->svg || o->trace))
        return usage_error("%s", "plan: --svg and --trace report on models, not on --graph");
    if (is_plan_only && o->graph && o->exact_bytes)
        return usage_error("%s", "plan: --bytes is for a model's report; --graph's gives the exact numbers already");
    if (o->graph && o->micro_text)
        return usage_error("%s: --micro-batches splits a model's batch; a --graph has none", cmd);
    if (!o->model && !o->graph)
        return usage_error(!strcmp(cmd, "plan") || !strcmp(cmd, "sweep")
                               ? "%s: no model file given (MODEL.mg, or --graph FILE.json)"
                               : "%s: no model file given",
                           cmd);
    if (is_compile && !o->out) return usage_error("%s", "compile: no output file given (-o FILE.o)");
    if (o->name && bad_model_name(o->name)) return 2;
    if (o->budget) {
        mg_budget b;
        char err[256];
        if (!mg_budget_parse(o->budget, &b, err, sizeof err)) return usage_error("%s", err);
    }
    if (o->solver_name) {
        int k = 0;
        while (k <= MG_SOLVER_EXACT && strcmp(o->solver_name, mg_solver_names[k])) k++;
        if (k > MG_SOLVER_EXACT)
            return usage_error("unknown solver '%s' (use auto, exact, sqrt or store-all)", o->solver_name);
        o->solver = (mg_solver)k;
    }
    o->time_limit = 60;
    if (o->time_limit_text) {
        char *end;
        o->time_limit = strtod(o->time_limit_text, &end);
        if (!mg_plain_decimal(o->time_limit_text, end) || *end || !(o->time_limit > 0) || o->time_limit > 1e6)
            /* (the upper limit said: 1e7 was refused as not "a positive number of seconds") */
            return usage_error("--time-limit wants a number of seconds above 0 and at most 1e6, got '%s'", o->time_limit_text);
    }
    if (o->format && strcmp(o->format, "text") && strcmp(o->format, "json") && (!is_sweep || strcmp(o->format, "csv")))
        return usage_error(is_sweep ? "unknown format '%s' (use text, csv or json)" : "unknown format '%s' (use text or json)",
                           o->format);
    if (o->micro_text) {
        char *end;
        long v = strtol(o->micro_text, &end, 10);
        if (!strcmp(o->micro_text, "auto")) v = 0;
        else if (!mg_plain_decimal(o->micro_text, end) || *end || v < 1 || v > 4096)
            return usage_error("--micro-batches wants auto or a whole number from 1 to 4096, got '%s'", o->micro_text);
        o->micro_batches = (int)v;
    }
    o->points = 8;
    if (o->points_text) {
        char *end;
        long v = strtol(o->points_text, &end, 10);
        if (!mg_plain_decimal(o->points_text, end) || *end || v < 2 || v > 1000)
            return usage_error("--points wants a whole number from 2 to 1000, got '%s'", o->points_text);
        o->points = (int)v;
    }
    return 0;
}

/* The pipeline: parse, differentiate, plan both functions. */
typedef struct compiled {
    source src;
    mg_graph *g;
    mg_planned plan;
    mg_program prog;
} compiled;

static void compiled_free(compiled *c)
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
static int plannable(const compiled *c)
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
    print_diag(&c->src, &d);
    return 1;
}

/* check and compile: a warning at each param the minimized loss does not depend on (declared
 * and never used, or used only by outputs): its gradient is zero at every step, which a model
 * author meant rarely, like a C compiler's unused variable. The model is still valid. */
static void warn_unused_params(const compiled *c)
{
    const mg_graph *g = c->g;
    if (g->loss < 0) return;
    char *used = calloc((size_t)g->n + 1, 1);
    if (!used) abort();
    used[g->loss] = 1;
    for (int v = g->loss; v >= 0; v--) /* inputs precede their users */
        if (used[v])
            for (int k = 0; k < g->nodes[v].ninputs; k++) used[g->nodes[v].in[k]] = 1;
    for (int i = 0; i < g->nparams; i++) {
        const mg_node *p = &g->nodes[g->params[i]];
        if (used[g->params[i]]) continue;
        mg_diag d = {.loc = p->loc};
        snprintf(d.msg, sizeof d.msg, "the loss does not depend on param '%s': its gradient is zero at every step",
                 p->name ? p->name : "?");
        print_diag_as(&c->src, &d, "warning");
    }
    free(used);
}

/* Parses and differentiates; to_plan: the model must be one the planner takes. */
static int run_frontend(const char *path, compiled *c, int to_plan)
{
    mg_diag d = {0};
    memset(c, 0, sizeof *c);
    if (read_source(path, &c->src)) return 1;
    int parsed = 0;
    if (!(parsed = !mg_parse(c->src.path, c->src.text, c->src.len, &c->g, &d)) || mg_autodiff(c->g, &d)) {
        print_diag(&c->src, &d);
        size_t i = 0; /* a JSON file where a model was expected: most likely a benchmark graph */
        while (!parsed && i < c->src.len && strchr(" \t\r\n", c->src.text[i])) i++;
        if (!parsed && i < c->src.len && c->src.text[i] == '{')
            fprintf(stderr, "%s: note: this looks like JSON, not a model (.mg); `plan --graph FILE` and `sweep "
                            "--graph FILE` take a benchmark graph (node-link JSON)\n", c->src.path);
        return 1;
    }
    return to_plan ? plannable(c) : 0;
}

/* The plan cache's directory: --cache-dir, else $XDG_CACHE_HOME/memgrad, else ~/.cache/memgrad
 * into out; 0 when there is no home to put it in, -1 (after a warning) for a path too long to
 * open (it was cut, and mkdir -p made a directory of the cut name). */
static int cache_path(const char *given, char *out, size_t cap)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    if (given) n = snprintf(out, cap, "%s", given);
    else if (xdg && xdg[0] == '/') n = snprintf(out, cap, "%s/memgrad", xdg);
    else if (home && home[0]) n = snprintf(out, cap, "%s/.cache/memgrad", home);
    else return 0;
    if (n < 0 || (size_t)n + 32 > cap) { /* (room for an entry's name; the system opens no longer path) */
        fprintf(stderr, "memgrad: warning: %s '%.60s...' is too long a path (%d bytes): plans are not cached\n",
                given ? "--cache-dir" : "the plan cache", given ? given : xdg && xdg[0] == '/' ? xdg : home, n);
        return -1;
    }
    return 1;
}

/* 1 when the cache directory out names something other than a directory: a file, FILE/sub
 * (under a file) or a dangling symlink, which no mkdir makes. A directory not made yet is fine. */
static int cache_path_unusable(const char *out)
{
    struct stat st, ls;
    int found = stat(out, &st) == 0;
    return (found && !S_ISDIR(st.st_mode)) || (!found && errno == ENOTDIR) || (!found && lstat(out, &ls) == 0);
}

/* The plan cache's directory (cache_path); 0 with --no-cache or when there is no home to put it
 * in. A --cache-dir that names something other than a directory is said to be unusable (a
 * warning: planning goes on uncached), where it silently cached nothing; so is a path too long
 * to open, and the default place (its being a file cached nothing, unsaid). */
static int cache_dir(const options *o, char *out, size_t cap)
{
    if (o->no_cache || cache_path(o->cache_dir, out, cap) <= 0) return 0;
    if (cache_path_unusable(out)) {
        fprintf(stderr, "memgrad: warning: %s '%s' is not a directory: plans are not cached\n",
                o->cache_dir ? "--cache-dir" : "the plan cache", out);
        return 0;
    }
    return 1;
}

/* The bound on the cache directory's bytes: MEMGRAD_CACHE_MAX_SIZE (a size as --capacity takes
 * it, 1GiB; 0 for none), else MG_PLAN_CACHE_MAX_BYTES. A value it cannot read is a warning and
 * the default: a typo must not turn the bound off. */
static int64_t cache_max_bytes(void)
{
    const char *v = getenv("MEMGRAD_CACHE_MAX_SIZE");
    mg_budget b;
    char err[256];
    if (!v || !v[0]) return MG_PLAN_CACHE_MAX_BYTES;
    if (mg_budget_parse(v, &b, err, sizeof err) && !b.is_percent) return b.bytes;
    fprintf(stderr, "memgrad: warning: MEMGRAD_CACHE_MAX_SIZE '%s' is not a size (1GiB, 268435456; 0 for no "
            "bound): the plan cache keeps to %lld MiB\n", v, (long long)(MG_PLAN_CACHE_MAX_BYTES >> 20));
    return MG_PLAN_CACHE_MAX_BYTES;
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

/* Where the search over part counts stopped short (plan.h, MG_PARTS_AUTO_MAX_NODES), the minimum
 * feasible budget (of_min: under a budget's error, sweep) or the plan (compile's, which says
 * nothing else) is of the part counts tried: a note says so, and how to go on. */
static void parts_not_tried_note(const char *path, const mg_planned *p, int of_min)
{
    if (p->parts_not_tried <= 0) return;
    char over[48] = "the whole batch's";
    if (p->parts_not_tried > 2) snprintf(over, sizeof over, "the best of 1 to %d micro-batches", p->parts_not_tried / 2);
    fprintf(stderr,
            "%s: note: the %s is %s: in %d parts the step makes %d operations, more than the %d the search plans "
            "by itself; --micro-batches %d (or more) may %s\n",
            path, of_min ? "minimum feasible budget" : "plan", over, p->parts_not_tried, p->parts_not_tried_ops,
            p->parts_max_nodes, p->parts_not_tried, of_min ? "meet a smaller budget" : "recompute less");
}

/* The plan cache as one command uses it: its directory and memgrad's build id, each found once
 * (and each warning said once). use 0: nothing is read or written; unwritable: a plan could not
 * be written (said once; sweep's later points are still looked up, not written). */
typedef struct plan_cache {
    int use, unwritable;
    char dir[4096];
    uint64_t build_id;
} plan_cache;

static void plan_cache_open(const options *o, plan_cache *pc)
{
    pc->build_id = 0;
    pc->unwritable = 0;
    pc->use = cache_dir(o, pc->dir, sizeof pc->dir);
    /* A plan is kept for the very executable that made it; one that cannot read itself (no /proc
     * in a chroot or a container) caches nothing rather than key its plans by a build id of 0,
     * under which two different builds would serve each other theirs (review21). */
    if (pc->use && !(pc->build_id = mg_plan_cache_build_id_self())) {
        fprintf(stderr, "memgrad: warning: cannot read the memgrad executable (through /proc/self/maps) to tell "
                "its build from others: plans are not cached\n");
        pc->use = 0;
    }
}

/* rq's plans of g in micro_batches parts (--micro-batches): from the cache where it holds them,
 * else planned (mg_plan_split) and kept there; *from_cache says which. MG_ERR (d filled) when
 * planning fails. */
static mg_status plan_with_cache(plan_cache *pc, const mg_graph *g, mg_plan_request rq, int micro_batches,
                                 mg_planned *out, int *from_cache, mg_diag *d)
{
    rq.build_id = pc->build_id;
    uint64_t key = mg_plan_split_cache_key(g, &rq, micro_batches);
    /* compile takes the plan that `plan` made under the same budget, solver and options too (the
     * same plan, not planned a second time); `plan` never takes compile's, whose minimum may be
     * partial, nor sweep's points `plan`'s (which may be cheaper, from the minimum search: a
     * sweep then depended on what was planned before it) */
    uint64_t key_min = key;
    if (rq.want_min_feasible == MG_MIN_AS_PLANNED) {
        mg_plan_request with_min = rq;
        with_min.want_min_feasible = MG_MIN_YES;
        key_min = mg_plan_split_cache_key(g, &with_min, micro_batches);
    }
    *from_cache = pc->use && (mg_plan_cache_load(pc->dir, key, g, out) ||
                              (key_min != key && mg_plan_cache_load(pc->dir, key_min, g, out)));
    if (*from_cache) return MG_OK;
    if (mg_plan_split(g, &rq, micro_batches, out, d)) return MG_ERR;
    if (pc->use && !pc->unwritable && out->train && !out->note) {
        /* (a cache that cannot be written is no error but a warning: it cached nothing, unsaid,
         * and the user took the plans for cached; a plan with a note — CBC failed or was
         * stopped, so exact fell back to auto's plan — is not kept: served from the cache it
         * printed no note, and a later run never gave CBC another chance) */
        if (mg_plan_cache_store(pc->dir, key, out) != MG_OK) {
            fprintf(stderr, "memgrad: warning: cannot write the plan cache in '%s': %s (the plan is not cached)\n",
                    pc->dir, strerror(errno));
            pc->unwritable = 1;
        } else {
            /* the bound, as ccache keeps its: least recently used entries out (a prune that
             * cannot read the directory is no error either) */
            mg_plan_cache_usage gone;
            mg_diag pd = {0};
            mg_plan_cache_prune(pc->dir, cache_max_bytes(), key, &gone, &pd);
        }
    }
    return MG_OK;
}

/* Plans both functions under the options' budget and solver. A budget no plan meets is an
 * error that names the budget, the minimum feasible one and the store-all workspace.
 * want_min: MG_MIN_YES for the commands that report the minimum feasible budget, MG_MIN_AS_PLANNED
 * for compile, which emits the same plan without searching the part counts that would only lower
 * the minimum (plan.h) */
static int run_planner(options *o, compiled *c, int want_min)
{
    mg_diag d = {0};
    mg_budget b;
    char err[256];
    if (o->budget && !mg_budget_parse(o->budget, &b, err, sizeof err)) return usage_error("%s", err);
    mg_plan_request rq = {.solver = o->solver, .budget = o->budget ? &b : NULL, .time_limit = o->time_limit,
                          .want_min_feasible = want_min};
    plan_cache pc;
    plan_cache_open(o, &pc);
    if (plan_with_cache(&pc, c->g, rq, o->micro_batches, &c->plan, &o->from_cache, &d)) {
        print_diag(&c->src, &d);
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
        parts_not_tried_note(c->src.path, p, 1);
        return 1;
    }
    if (want_min == MG_MIN_AS_PLANNED) parts_not_tried_note(c->src.path, p, 0); /* (plan's report says it) */
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
static int verify_again(compiled *c)
{
    mg_diag d = {0};
    if (mg_program_verify(mg_planned_graph(&c->plan, c->g), &c->plan, &d)) {
        print_diag(&c->src, &d);
        return 1;
    }
    int nt = c->plan.train->nsteps, nf = c->plan.forward->nsteps, nb = c->plan.train->nbufs + c->plan.forward->nbufs;
    fprintf(stderr, "%s: plan verified: %d train step%s, %d forward step%s, %d buffer%s in %lld workspace %s\n",
            c->src.path, nt, mg_plural(nt), nf, mg_plural(nf), nb, mg_plural(nb),
            (long long)c->plan.workspace_bytes, mg_bytes_word(c->plan.workspace_bytes));
    return 0;
}

static int cmd_check(options *o)
{
    compiled c;
    int rc = run_frontend(o->model, &c, 0);
    if (!rc) warn_unused_params(&c);
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
         * among the forward and backward "operations") */
        int nf = 0, nb = 0, nconst = 0;
        for (int i = 0; i < c.g->n; i++) {
            mg_op op = c.g->nodes[i].op;
            if (op == MG_OP_CONST) nconst++;
            else if (op != MG_OP_INPUT && op != MG_OP_PARAM) *(i < c.g->nforward ? &nf : &nb) += 1;
        }
        printf("%s: ok: model %s, %d input%s, %d param%s, %d forward and %d backward operation%s, %d constant%s, "
               "hash 0x%016llx\n",
               c.src.path, c.g->model_name, c.g->ninputs, mg_plural(c.g->ninputs), c.g->nparams, mg_plural(c.g->nparams),
               nf, nb, mg_plural(nb), nconst, mg_plural(nconst), (unsigned long long)mg_graph_hash(c.g));
    }
    compiled_free(&c);
    return rc;
}

/* A cost that reads back as the same double (as report_json.c writes them): a --graph's costs
 * are its own unit and may have a fraction, which "%.0f" rounded (0.4 + 0.4 printed as 1) */
static void print_cost(double v)
{
    char s[320]; /* (the longest "%.0f" of a double: 309 digits) */
    snprintf(s, sizeof s, "%.0f", v);
    for (int prec = 15; prec <= 17 && strtod(s, NULL) != v; prec++) snprintf(s, sizeof s, "%.*g", prec, v);
    fputs(s, stdout);
}

/* plan --graph: a benchmark graph instead of a model; one schedule, costs in the graph's units. */
static int cmd_plan_graph(options *o)
{
    source src;
    if (read_source(o->graph, &src)) return 1;
    mg_diag d = {0};
    mg_problem *pr = NULL;
    mg_budget b;
    char err[256], h[32];
    int rc = 0;
    if (o->budget && !mg_budget_parse(o->budget, &b, err, sizeof err)) rc = usage_error("%s", err);
    if (!rc && mg_problem_from_json(src.path, src.text, src.len, &pr, &d)) {
        print_diag(&src, &d);
        rc = 1;
    }
    mg_solution all = {0}, sol = {0};
    double t0 = mg_seconds();
    if (!rc && mg_solve(pr, MG_SOLVER_STORE_ALL, INT64_MAX, 0, 0, &all, &d)) {
        print_diag(&src, &d);
        rc = 1;
    }
    int64_t budget = INT64_MAX;
    if (!rc) {
        budget = o->budget ? mg_budget_bytes(&b, all.store_all_bytes) : INT64_MAX;
        if (mg_solve(pr, o->solver, budget, 1, o->time_limit, &sol, &d)) {
            print_diag(&src, &d);
            rc = 1;
        }
    }
    double secs = mg_seconds() - t0;
    if (!rc && sol.note) fprintf(stderr, "%s: note: %s\n", src.path, sol.note);
    if (!rc && !sol.plan) {
        no_plan_error(src.path, o->solver, budget, sol.min_feasible_bytes, all.store_all_bytes, 0);
        rc = 1;
    } else if (!rc && o->format && !strcmp(o->format, "json")) {
        char *j = mg_problem_plan_json(pr, &sol, budget, secs, mg_solver_names[o->solver]);
        fputs(j, stdout);
        free(j);
    } else if (!rc) {
        const mg_plan *t = sol.plan;
        int edges = pr->in_start[pr->n];
        printf("graph %s: %d node%s, %d edge%s  solver %s (%s, %.3f s)\n", src.path, pr->n, mg_plural(pr->n),
               edges, mg_plural(edges), mg_solver_names[o->solver],
               sol.optimal == 1 ? "optimal" : "optimality unknown", secs);
        if (budget != INT64_MAX)
            printf("  budget              %s (%lld %s)\n", mg_human_bytes(budget, h, sizeof h), (long long)budget,
                   mg_bytes_word(budget));
        printf("  workspace           %s (%lld %s)\n", mg_human_bytes(t->workspace_bytes, h, sizeof h),
               (long long)t->workspace_bytes, mg_bytes_word(t->workspace_bytes));
        printf("  peak live           %s (%lld %s)\n", mg_human_bytes(t->peak_live_bytes, h, sizeof h),
               (long long)t->peak_live_bytes, mg_bytes_word(t->peak_live_bytes));
        printf("  store-all           %s (%lld %s)\n", mg_human_bytes(all.store_all_bytes, h, sizeof h),
               (long long)all.store_all_bytes, mg_bytes_word(all.store_all_bytes));
        printf("  minimum feasible    %s (%lld %s)\n", mg_human_bytes(sol.min_feasible_bytes, h, sizeof h),
               (long long)sol.min_feasible_bytes, mg_bytes_word(sol.min_feasible_bytes));
        fputs("  cost                ", stdout);
        print_cost(t->flops_once);
        fputs(" once, ", stdout);
        print_cost(t->flops_executed);
        printf(" executed, recompute overhead %.2f%%\n", 100.0 * mg_recompute_overhead(t->flops_once, t->flops_executed));
        if (sol.lower_bound > t->flops_once) {
            fputs("  lower bound         ", stdout);
            print_cost(sol.lower_bound);
            printf(" proven; the plan is within %.2f%% of it\n",
                   100.0 * (t->flops_executed - sol.lower_bound) / sol.lower_bound);
        }
        printf("  steps               %d\n", t->nsteps);
    }
    if (!rc && o->verify) {
        if (mg_plan_verify(sol.plan, pr, &d)) {
            print_diag(&src, &d);
            rc = 1;
        } else {
            fprintf(stderr, "%s: plan verified: %d step%s, %d buffer%s in %lld workspace %s\n", src.path,
                    sol.plan->nsteps, mg_plural(sol.plan->nsteps), sol.plan->nbufs, mg_plural(sol.plan->nbufs),
                    (long long)sol.plan->workspace_bytes, mg_bytes_word(sol.plan->workspace_bytes));
        }
    }
    mg_plan_free(all.plan);
    mg_plan_free(sol.plan);
    mg_problem_free(pr);
    free(src.text);
    return rc;
}

static void write_svg(FILE *out, const void *f) { mg_report_svg(out, f); }
static void write_trace(FILE *out, const void *f) { mg_report_trace(out, f); }

/* The plan of a model and its figures, which every report reads. */
static int plan_figures(options *o, compiled *c, mg_report_figures *f)
{
    int rc = run_frontend(o->model, c, 1);
    if (!rc) rc = run_planner(o, c, MG_MIN_YES);
    if (!rc) {
        mg_diag d = {0};
        mg_plan_report_info info = {mg_solver_names[o->solver], mg_graph_hash(c->g), o->from_cache};
        if (mg_report_figures_make(mg_planned_graph(&c->plan, c->g), &c->plan, &info, f, &d)) {
            print_diag(&c->src, &d);
            rc = 1;
        }
    }
    return rc;
}

static int cmd_plan(options *o)
{
    if (o->graph) return cmd_plan_graph(o);
    mg_out_file outs[2] = {{.flag = "--svg", .path = o->svg}, {.flag = "--trace", .path = o->trace}};
    const report_writer writers[2] = {write_svg, write_trace};
    int rc = mg_out_check(o->model, outs, 2);
    if (rc) return rc;
    compiled c;
    mg_report_figures f = {0};
    rc = plan_figures(o, &c, &f);
    if (!rc && !o->report_file_to_stdout) {
        if (o->format && !strcmp(o->format, "json")) {
            char *j = mg_plan_json(&f);
            fputs(j, stdout);
            free(j);
        } else {
            mg_report_text(stdout, &f, terminal_width(), o->exact_bytes);
        }
    }
    if (!rc && o->verify) rc = verify_again(&c);
    if (!rc) rc = write_report_outs(outs, writers, &f, 2);
    mg_report_figures_free(&f);
    compiled_free(&c);
    return rc;
}

/* dot: the joint graph as Graphviz DOT, coloured by the plan's decisions. */
static int cmd_dot(options *o)
{
    compiled c;
    mg_report_figures f = {0};
    int rc = plan_figures(o, &c, &f);
    if (!rc) mg_report_dot(stdout, &f);
    if (!rc && o->verify) rc = verify_again(&c);
    mg_report_figures_free(&f);
    compiled_free(&c);
    return rc;
}

/* sweep: the budget/overhead trade-off from the minimum feasible budget to store-all. */
typedef mg_sweep_point sweep_point;

/* s as a JSON string: what names a --graph file, whose path may hold quotes and backslashes */
static void json_string(const char *s)
{
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p == '"' || *p == '\\') printf("\\%c", *p);
        else if (*p < 0x20) printf("\\u%04x", *p);
        else putchar(*p);
    putchar('"');
}

/* A point's part count as the reports give it: 1 for a plan of the whole batch (and a --graph's) */
static int parts_of(const sweep_point *q) { return q->parts > 1 ? q->parts : 1; }

static void sweep_print(const options *o, const char *what, int64_t all, int64_t minf, const sweep_point *pt, int n)
{
    const char *fmt = o->format ? o->format : "text";
    const char *solver = mg_solver_names[o->solver];
    if (!strcmp(fmt, "json")) {
        printf("{\"format\": \"memgrad-sweep\", \"version\": 1, \"model\": ");
        json_string(what);
        printf(", \"solver\": \"%s\", \"store_all_workspace_bytes\": %lld, \"min_feasible_bytes\": %lld, "
               "\"points\": [",
               solver, (long long)all, (long long)minf);
        for (int i = 0; i < n; i++) {
            printf("%s\n  {\"budget_bytes\": %lld, \"fits\": %s", i ? "," : "", (long long)pt[i].budget,
                   pt[i].fits ? "true" : "false");
            if (pt[i].fits) {
                printf(", \"workspace_bytes\": %lld, \"peak_live_bytes\": %lld, \"flops_once\": ",
                       (long long)pt[i].workspace, (long long)pt[i].peak);
                print_cost(pt[i].once);
                printf(", \"flops_executed\": ");
                print_cost(pt[i].executed);
                printf(", \"recompute_overhead\": %.6f", mg_recompute_overhead(pt[i].once, pt[i].executed));
            }
            if (pt[i].fits && !o->graph) printf(", \"micro_batches\": %d", parts_of(&pt[i]));
            printf(", \"solve_seconds\": %.6f, \"from_cache\": %s}", pt[i].seconds, pt[i].from_cache ? "true" : "false");
        }
        printf("]}\n");
        return;
    }
    int csv = !strcmp(fmt, "csv");
    if (csv)
        printf("budget_bytes,percent_of_store_all,fits,workspace_bytes,peak_live_bytes,recompute_overhead,solve_seconds,"
               "micro_batches,from_cache\n");
    else
        printf("%s  solver %s  store-all %lld %s, minimum feasible %lld %s\n%14s %7s %14s %14s %10s %9s%s\n", what,
               solver, (long long)all, mg_bytes_word(all), (long long)minf, mg_bytes_word(minf), "budget", "%",
               "workspace", "peak live", "overhead", "seconds", o->graph ? "" : "  parts");
    int cached = 0;
    for (int i = 0; i < n; i++) {
        const sweep_point *q = &pt[i];
        cached += q->from_cache;
        /* (a store-all workspace of 0 bytes, a step that keeps nothing in the workspace: its one
         * budget is all of it, 100%, not 0%) */
        double pct = all > 0 ? 100.0 * (double)q->budget / (double)all : 100.0;
        double ovh = 100.0 * mg_recompute_overhead(q->once, q->executed);
        if (csv && q->fits)
            printf("%lld,%.2f,1,%lld,%lld,%.6f,%.6f,%d,%d\n", (long long)q->budget, pct, (long long)q->workspace,
                   (long long)q->peak, ovh / 100, q->seconds, parts_of(q), q->from_cache);
        else if (csv)
            printf("%lld,%.2f,0,,,,%.6f,,%d\n", (long long)q->budget, pct, q->seconds, q->from_cache);
        else if (q->fits) {
            printf("%14lld %6.1f%% %14lld %14lld %9.2f%% %9.3f", (long long)q->budget, pct, (long long)q->workspace,
                   (long long)q->peak, ovh, q->seconds);
            if (!o->graph) printf(" %6d", parts_of(q)); /* (a --graph has no batch to split) */
            putchar('\n');
        } else
            printf("%14lld %6.1f%% %14s %14s %10s %9.3f\n", (long long)q->budget, pct, "no plan", "", "", q->seconds);
    }
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

static int cmd_sweep(options *o)
{
    mg_out_file svg_out = {.flag = "--svg", .path = o->svg};
    int rc = mg_out_check(o->model ? o->model : o->graph, &svg_out, 1);
    if (rc) return rc;
    source src = {0};
    compiled c = {0};
    mg_problem *pr = NULL;
    mg_diag d = {0};
    if (o->graph) {
        if (read_source(o->graph, &src)) return 1;
        if (mg_problem_from_json(src.path, src.text, src.len, &pr, &d)) {
            print_diag(&src, &d);
            free(src.text);
            return 1;
        }
    } else if (run_frontend(o->model, &c, 1)) {
        compiled_free(&c);
        return 1;
    }
    const source *where = o->graph ? &src : &c.src;
    plan_cache pc = {0}; /* (a model's plans are cached as plan's are; a --graph's are not) */
    if (!o->graph) plan_cache_open(o, &pc);
    /* the ends of the curve: store-all and the minimum feasible budget (of auto) */
    int64_t all = 0, minf = 0;
    if (pr) {
        mg_solution s;
        if (mg_solve(pr, MG_SOLVER_AUTO, INT64_MAX, 1, 0, &s, &d)) rc = 1;
        all = s.store_all_bytes;
        minf = s.min_feasible_bytes;
        mg_plan_free(s.plan);
    } else {
        mg_plan_request rq = {.solver = MG_SOLVER_AUTO, .time_limit = o->time_limit, .want_min_feasible = MG_MIN_YES};
        int cached; /* (`plan MODEL`'s plan) */
        if (plan_with_cache(&pc, c.g, rq, o->micro_batches, &c.plan, &cached, &d)) rc = 1;
        all = c.plan.store_all_bytes;
        minf = c.plan.min_feasible_bytes;
        if (!rc) parts_not_tried_note(c.src.path, &c.plan, 1);
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
    if (!pts) abort();
    for (int k = 0; k < ncurves; k++) {
        /* each point's plan passes on to the next, which takes it where it is cheaper (a benchmark
         * graph's through mg_solve_from; a model's program, whose part count may differ, whole,
         * where its recompute overhead is lower): the overhead never rises with the budget */
        mg_plan *prev = NULL;
        mg_planned prevp = {0};
        for (int i = 0; i < npoints && !rc; i++) {
            sweep_point *q = &pts[k * o->points + i];
            q->budget = budgets[i];
            mg_budget b = {0, 0, q->budget};
            if (pr) {
                double t0 = mg_seconds();
                mg_solution s;
                if (mg_solve_from(pr, solvers[k], q->budget, 0, o->time_limit, prev, &s, &d)) rc = 1;
                else if ((q->fits = s.plan != NULL)) {
                    q->workspace = s.plan->workspace_bytes;
                    q->peak = s.plan->peak_live_bytes;
                    q->once = s.plan->flops_once;
                    q->executed = s.plan->flops_executed;
                    mg_plan_free(prev);
                    prev = s.plan; /* (no plan on an error) */
                }
                q->seconds = mg_seconds() - t0;
            } else {
                mg_plan_request rq = {.solver = solvers[k], .budget = &b, .time_limit = o->time_limit};
                if (plan_with_cache(&pc, c.g, rq, o->micro_batches, &c.plan, &q->from_cache, &d)) rc = 1;
                /* its planning's seconds, as `plan` reports them (from the cache: those of the
                 * planning that made it), whichever plan the point keeps */
                q->seconds = c.plan.solve_seconds;
                if (rc)
                    mg_planned_free(&c.plan);
                else if (prevp.train && (!c.plan.train || overhead_below(prevp.train, c.plan.train)))
                    mg_planned_free(&c.plan); /* (prevp's workspace is under the smaller budget before) */
                else {
                    mg_planned_free(&prevp);
                    prevp = c.plan;
                }
                c.plan = (mg_planned){0};
                if (!rc && (q->fits = prevp.train != NULL)) {
                    q->workspace = prevp.workspace_bytes;
                    q->peak = prevp.train->peak_live_bytes;
                    q->once = prevp.train->flops_once;
                    q->executed = prevp.train->flops_executed;
                    q->parts = prevp.micro_batches;
                }
            }
        }
        mg_plan_free(prev);
        mg_planned_free(&prevp);
    }
    const char *what = pr ? src.path : c.g->model_name;
    if (rc) print_diag(where, &d);
    else if (!o->report_file_to_stdout) sweep_print(o, what, all, minf, pt, npoints);
    if (!rc && o->svg) {
        /* the store-all point: no recomputation at the store-all workspace */
        sweep_point sa = {all, all, all, 1, 1, 0, 1, 1, 0};
        mg_sweep_curve curves[4];
        int n = 0;
        for (int k = 0; k < ncurves; k++)
            if (solvers[k] != MG_SOLVER_STORE_ALL) /* (store-all's curve is its one point, drawn below) */
                curves[n++] = (mg_sweep_curve){mg_solver_names[solvers[k]], pts + k * o->points, npoints};
        curves[n++] = (mg_sweep_curve){"store-all", &sa, 1};
        sweep_svg_ctx ctx = {what, all, minf, curves, n};
        const report_writer writer = write_sweep_svg;
        rc = write_report_outs(&svg_out, &writer, &ctx, 1);
    }
    free(pts);
    free(budgets);
    mg_problem_free(pr);
    free(src.text);
    compiled_free(&c);
    return rc;
}

/* An explicit --target/--cpu is tried in a child process first: LLVM answers an unknown CPU
 * with a warning and, on some targets, an abort, neither of which may reach the user as such.
 * A value LLVM refuses is a usage error (exit 2), like any other bad option value. */
static int check_target(const options *o)
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
        if (o->cpu && (strstr(msg, "is not a recognized") || !WIFEXITED(status)))
            fprintf(stderr, "memgrad: error: unknown CPU '%s' for target %s (LLVM: %s)\n", o->cpu,
                    o->triple ? o->triple : "of this machine", msg);
        else
            fprintf(stderr, "memgrad: error: %s\n", msg[0] ? msg : "the target cannot be used");
        fprintf(stderr, "Try 'memgrad --help'.\n");
        return 2;
    }
    return 0;
}

static int cmd_compile(options *o)
{
    mg_out_file outs[3] = {{.flag = "-o", .path = o->out}, {.flag = "--header", .path = o->header},
                           {.flag = "--emit-llvm", .path = o->emit_llvm}};
    int rc = mg_out_check(o->model, outs, 3);
    if (rc) return rc;
    int target_rc = check_target(o);
    if (target_rc) return target_rc;
    compiled c;
    rc = run_frontend(o->model, &c, 1);
    if (!rc) warn_unused_params(&c);
    /* --name renames the model before planning, so that a micro-batched graph made from it (and
     * so the object's symbols and the header) take the new name; the structural hash, and so the
     * plan cache's key, leave the name out */
    if (!rc && o->name) c.g->model_name = mg_graph_intern(c.g, o->name);
    if (!rc) rc = run_planner(o, &c, MG_MIN_AS_PLANNED);
    if (!rc && o->verify) rc = verify_again(&c);
    /* Every output goes to a temporary file first; all are put in place only when all are
     * written, so a failure leaves the user's old files as they were and no partial set behind. */
    if (!rc) rc = mg_out_begin(outs, 3);
    if (!rc) {
        mg_diag d = {0};
        mg_target t = {o->triple, o->cpu, NULL, o->opt_level, o->no_fuse};
        mg_emitted e;
        if (mg_emit_object(&c.prog, &t, o->emit_llvm != NULL, &e, &d)) {
            print_diag(&c.src, &d);
            rc = 1;
        } else {
            rc = write_file(o->out, outs[0].tmp, e.obj, e.obj_len);
            if (!rc && o->emit_llvm) rc = write_file(o->emit_llvm, outs[2].tmp, e.ll, e.ll_len);
            mg_emitted_free(&e);
        }
    }
    if (!rc && o->header) {
        char *h = mg_header_text(&c.prog, o->out, o->header);
        rc = write_file(o->header, outs[1].tmp, h, strlen(h));
        free(h);
    }
    if (!rc) rc = mg_out_commit(outs, 3);
    mg_out_end(outs, 3);
    compiled_free(&c);
    return rc;
}

/* memgrad cache [--cache-dir DIR] [--clear]: what the plan cache holds and its bound, as
 * `ccache -s`; --clear removes memgrad's entries (and writers' temporaries), nothing else in the
 * directory, as `ccache -C`. */
static int cmd_cache(int argc, char **argv)
{
    const char *given = NULL;
    int clear = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--clear")) clear = 1;
        else if (!strcmp(argv[i], "--cache-dir")) {
            if (i + 1 >= argc || !argv[i + 1][0]) return usage_error("option '%s' needs a value", argv[i]);
            given = argv[++i];
        } else if (!strcmp(argv[i], "--no-cache"))
            return usage_error("%s", "cache: --no-cache turns the cache off for the commands that plan; "
                                     "`memgrad cache` shows (or --clear clears) it");
        else if (argv[i][0] == '-' && argv[i][1]) {
            const char *takers = commands_taking(argv[i]);
            if (takers) {
                fprintf(stderr, "memgrad: unknown option '%s' for cache (%s %s it)\nTry 'memgrad --help'.\n", argv[i],
                        takers, strchr(takers, ' ') ? "take" : "takes");
                return 2;
            }
            return usage_error("cache: unknown option '%s'", argv[i]);
        } else
            return usage_error("cache: unexpected argument '%s' (the directory is given with --cache-dir DIR)", argv[i]);
    }
    char dir[4096];
    int have = cache_path(given, dir, sizeof dir);
    if (have < 0) return 1;
    if (have == 0) {
        fprintf(stderr, "memgrad: cache: no cache directory: neither XDG_CACHE_HOME nor HOME is set (give --cache-dir DIR)\n");
        return 1;
    }
    if (cache_path_unusable(dir)) {
        fprintf(stderr, "memgrad: cache: '%s' is not a directory\n", dir);
        return 1;
    }
    mg_plan_cache_usage u;
    mg_diag d = {0};
    char h[32];
    if (clear) {
        int rc = mg_plan_cache_clear(dir, &u, &d) ? 1 : 0;
        if (!rc || u.files) /* (not "removed 0 entries" above "cannot read the plan cache") */
            printf("plan cache %s: removed %lld entr%s (%s, %lld %s)\n", dir, (long long)u.entries,
                   u.entries == 1 ? "y" : "ies", mg_human_bytes(u.bytes, h, sizeof h), (long long)u.bytes,
                   mg_bytes_word(u.bytes));
        if (rc) fprintf(stderr, "memgrad: %s\n", d.msg);
        return rc;
    }
    if (mg_plan_cache_stats(dir, &u, &d)) {
        fprintf(stderr, "memgrad: %s\n", d.msg);
        return 1;
    }
    int64_t max = cache_max_bytes();
    printf("plan cache %s\n", dir);
    printf("  entries       %lld", (long long)u.entries);
    if (u.files > u.entries)
        printf(" (and %lld being written)", (long long)(u.files - u.entries));
    printf("\n  size          %s (%lld %s)\n", mg_human_bytes(u.bytes, h, sizeof h), (long long)u.bytes,
           mg_bytes_word(u.bytes));
    if (max > 0)
        printf("  maximum size  %s (%lld %s), least recently used entries removed beyond it\n",
               mg_human_bytes(max, h, sizeof h), (long long)max, mg_bytes_word(max));
    else
        printf("  maximum size  none (MEMGRAD_CACHE_MAX_SIZE=0)\n");
    return 0;
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
        strcmp(cmd, "dot") && strcmp(cmd, "arena") && strcmp(cmd, "cache"))
        return usage_error("unknown command '%s'", cmd); /* (before --help: `memgrad bogus --help` is an error) */
    for (int i = 2; i < argc; i++) /* (after a command as before one, as cc and git take them) */
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(usage_text, stdout);
            return 0;
        } else if (!strcmp(argv[i], "--version")) {
            return print_version();
        }
    options o;
    if (!strcmp(cmd, "arena")) return mg_cmd_arena(argc - 1, argv + 1);
    if (!strcmp(cmd, "cache")) return cmd_cache(argc - 2, argv + 2);
    int rc = parse_options(argc - 2, argv + 2, &o, cmd);
    if (rc) return rc;
    if (!strcmp(cmd, "compile")) return cmd_compile(&o);
    if (!strcmp(cmd, "check")) return cmd_check(&o);
    if (!strcmp(cmd, "sweep")) return cmd_sweep(&o);
    if (!strcmp(cmd, "dot")) return cmd_dot(&o);
    return cmd_plan(&o);
}

int main(int argc, char **argv)
{
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
