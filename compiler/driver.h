/* driver.h — what the `memgrad` executable's command files share (main.c, driver.c,
 * cmd_sweep.c, cmd_cache.c, cmd_arena.c): the options, the model read and planned, diagnostics printed with the source line,
 * report files written whole, and the plan cache as a command uses it.
 *
 * Why it exists: each command file talks to the terminal the same way; this is driver code, not
 * library code (it prints and picks exit codes), and no library file includes it. */
#ifndef MG_DRIVER_H
#define MG_DRIVER_H
#include "backend.h"
#include "out_files.h"
#include "plan.h"

#include <stdint.h>
#include <stdio.h>

/* A file read (a model or a graph), named in messages as cc names it ("<stdin>" for "-"). */
typedef struct mg_drv_source {
    const char *path;
    char *text;
    size_t len;
} mg_drv_source;

/* Report files (--svg, --trace): checked before planning (mg_out_check), each written by its
 * writer to a temporary file, and all put in place only when all are written, like compile's
 * outputs. */
typedef void (*mg_drv_report_writer)(FILE *out, const void *ctx);

/* The options of compile, check, plan, sweep and dot, as main.c parses them. */
typedef struct mg_drv_options {
    const char *model, *out, *header, *budget, *triple, *cpu, *emit_llvm, *solver_name, *time_limit_text, *format;
    const char *graph; /* plan --graph FILE.json */
    const char *points_text, *cache_dir, *micro_text, *max_split_text;
    const char *svg, *trace; /* plan --svg / --trace, sweep --svg */
    const char *name;        /* compile --name: the C names' prefix instead of the model's name */
    int report_file_to_stdout; /* --svg or --trace is - (or names the file stdout is): that file is the
                                  standard output, alone */
    int points, no_cache, from_cache, exact_bytes, no_fuse;
    int opt_level, print_ir, print_joint, verify;
    int micro_batches; /* --micro-batches: 0 auto, 1 never split, k */
    int max_split_ops; /* --max-split-ops: 0 the planner's limits (plan.h, MG_PARTS_AUTO_MAX_NODES) */
    mg_solver solver;
    double time_limit;
} mg_drv_options;

/* The pipeline: parse, differentiate, plan both functions. */
typedef struct mg_drv_compiled {
    mg_drv_source src;
    mg_graph *g;
    mg_planned plan;
    mg_program prog;
} mg_drv_compiled;

/* The plan cache as one command uses it: its directory and memgrad's build id, each found once
 * (and each warning said once). use 0: nothing is read or written; unwritable: a plan could not
 * be written (said once; sweep's later points are still looked up, not written). */
typedef struct mg_drv_plan_cache {
    int use, unwritable;
    char dir[4096];
    uint64_t build_id;
} mg_drv_plan_cache;

/* "memgrad: MESSAGE" (printf's fmt and arguments) and the --help hint on stderr; returns 2 (usage). */
int mg_drv_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The usage error for an option a the command cmd does not take: it names the commands that
 * take it, or the option a typo most likely meant. Returns 2. */
int mg_drv_unknown_option(const char *a, const char *cmd);
/* 0 when argv[i], an option that takes a value, has one after it; else the usage error (nothing
 * follows, it is empty, or it is an option: `--solver --no-cache`) and 2. */
int mg_drv_needs_value(int argc, char **argv, int i);
/* argv with every "--option=value" of an option that takes a value made two arguments, as
 * getopt_long takes them, into *out (malloc'd, NULL-terminated; its strings are argv's and the
 * option table's; the caller frees the array). 2 after the usage error for a flag given a value
 * ("--verify=1"). An option no command has is left whole, for its command's error; nothing after
 * "--" is split. */
int mg_drv_split_equals(int argc, char **argv, char ***out);
/* Reads path (at most 256 MiB) into s; 1 after an error message. */
int mg_drv_read_source(const char *path, mg_drv_source *s);
/* file:line:col: KIND: message, then the source line and a caret (src NULL or no line: no excerpt) */
void mg_drv_print_diag_as(const mg_drv_source *src, const mg_diag *d, const char *kind);
void mg_drv_print_diag(const mg_drv_source *src, const mg_diag *d); /* (KIND error) */
/* Writes n bytes to the file tmp; an error names path and write(2)'s reason. 1 on error. */
int mg_drv_write_file(const char *path, const char *tmp, const char *text, size_t n);
/* The n report files f (those with a path), each by its writer, put in place together. 1 on error. */
int mg_drv_write_report_outs(mg_out_file *f, const mg_drv_report_writer *write, const void *ctx, int n);

/* Reads, parses and differentiates the model at path into c (to_plan: it must also be one the
 * planner takes); 1 after the diagnostic. mg_drv_compiled_free frees c in every case. */
int mg_drv_run_frontend(const char *path, mg_drv_compiled *c, int to_plan);
void mg_drv_compiled_free(mg_drv_compiled *c);

/* The note where the search over part counts stopped short (nothing where it did not). */
void mg_drv_parts_not_tried_note(const char *path, const mg_planned *p, int of_min);
/* A cost on stdout that reads back as the same double. */
void mg_drv_print_cost(double v);

/* cmd_cache.c: the plan cache as the options ask for it (pc->use 0: --no-cache, or unusable, warned). */
void mg_drv_plan_cache_open(const mg_drv_options *o, mg_drv_plan_cache *pc);
/* rq's plans of g: from the cache (*from_cache 1) or planned and kept there. MG_ERR: d filled. */
mg_status mg_drv_plan_with_cache(mg_drv_plan_cache *pc, const mg_graph *g, mg_plan_request rq, int micro_batches,
                                 mg_planned *out, int *from_cache, mg_diag *d);

/* plan --graph's and sweep --graph's solution of pr under rq (mg_solve_from, the budget resolved
 * into *budget: a percentage against the store-all workspace): from the cache (*from_cache 1;
 * *seconds those of the solve that made it) or solved and kept there (*seconds since started,
 * the caller's start of its planning). MG_ERR: d filled. */
mg_status mg_drv_solve_with_cache(mg_drv_plan_cache *pc, const mg_problem *pr, mg_solve_request rq, double started,
                                  mg_solution *out, int64_t *budget, double *seconds, int *from_cache, mg_diag *d);

/* The commands that live in files of their own; each returns the exit code (0 ok, 1 error, 2 usage). */
int mg_cmd_sweep(mg_drv_options *o);         /* cmd_sweep.c */
int mg_cmd_cache(int argc, char **argv);      /* cmd_cache.c; argv[0] is its first option */
int mg_cmd_arena(int argc, char **argv);      /* cmd_arena.c; argv[0] is "arena" */
#endif
