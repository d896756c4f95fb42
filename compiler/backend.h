/* backend.h — native code and the C header for a planned model. */
#ifndef MG_BACKEND_H
#define MG_BACKEND_H
#include "plan.h"

typedef struct mg_target {
    const char *triple;   /* NULL: the host's */
    const char *cpu;      /* NULL: the host CPU (or "generic" with an explicit triple); "native": the
                             host CPU with its features, whatever the triple */
    const char *features; /* NULL: the host CPU's (or none with an explicit triple) */
    int opt_level;        /* 0..3 */
    int no_fuse;          /* 1: every step its own kernel call (no fused elementwise loops) */
} mg_target;

/* The generated functions and data of one model. */
typedef struct mg_program {
    const mg_graph *g;        /* the joint graph the plans are of (micro-batched or the model's) */
    const mg_graph *model;    /* the model's own joint graph (its hash), NULL: g */
    const mg_plan *train;     /* NAME_train_step */
    const mg_plan *forward;   /* NAME_forward */
    int64_t workspace_bytes;  /* what both functions need: the max of the two plans */
    int64_t param_bytes;
    int micro_batches;        /* the batch's parts in g (0 or 1: not split) */
} mg_program;

/* codegen.c's output, in memory: the object file's bytes and, where asked for, the optimised
 * LLVM IR as text (NUL-terminated). The driver writes them, so that a full disk is an error
 * naming the user's file: LLVM's own file streams abort the process there ("LLVM ERROR: IO
 * failure on output stream"). */
typedef struct mg_emitted {
    char *obj, *ll;
    size_t obj_len, ll_len;
    /* what the object was compiled for, as the backend took it: the (normalised) target triple,
     * the CPU's name and the features given beside it (NULL: the CPU's own, or this machine's
     * where host_features); host_cpu: the CPU is this machine's (the default, --cpu native) */
    char *triple, *cpu, *features;
    int host_cpu, host_features;
} mg_emitted;

/* codegen.c: the object of p for t into *out (and the IR where want_ll); on an error *out is
 * empty. */
mg_status mg_emit_object(const mg_program *p, const mg_target *t, int want_ll, mg_emitted *out, mg_diag *d);
void mg_emitted_free(mg_emitted *e);

/* codegen.c: generates a trivial function for t. An unknown CPU makes LLVM print a warning
 * and, on some targets, abort the process: callers run this in a child process first. */
mg_status mg_target_probe(const mg_target *t, mg_diag *d);

/* fuse.c: elementwise chains the backend runs as one loop. */
enum { MG_FUSE_MAX_STEPS = 16, MG_FUSE_MAX_LEAVES = 7 };
/* The element function ("mgk_e_relu", without the dtype suffix) of an op the fused loops
 * handle, and its number of arguments; NULL for other ops. */
const char *mg_fuse_elem_fn(const mg_graph *g, int node, int *nargs);
/* How many steps from step s on run as one pass (1: step s alone). */
int mg_fuse_chain(const mg_plan *pl, const mg_graph *g, int s);
/* The number of chains of two or more steps in the plan; *steps_fused (if not NULL) gets the
 * steps they cover. */
int mg_fuse_count(const mg_plan *pl, const mg_graph *g, int *steps_fused);

/* program_hash.c: the hash of what p's object does with the caller's memory (the model, the
 * sizes, both plans), which its header repeats as NAME_PLAN_HASH and the object holds as
 * NAME_plan_hash. */
uint64_t mg_program_hash(const mg_program *p);
/* program_hash.c: the hash of one plan's steps (their places) and buffers (their lifetimes and
 * offsets), field by field; NULL has one of its own. Two plans with one digest are one plan. */
uint64_t mg_plan_digest(const mg_plan *p);

/* header.c: the C header text for p, malloc'd; the caller frees it. e: the object compiled for p
 * (the target and CPU its opening comment names); object, header: the -o and --header paths,
 * whose file names the opening comment gives (NULL: none). */
char *mg_header_text(const mg_program *p, const mg_emitted *e, const char *object, const char *header);
#endif
