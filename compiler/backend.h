/* backend.h — native code and the C header for a planned model. */
#ifndef MG_BACKEND_H
#define MG_BACKEND_H
#include "plan.h"

typedef struct mg_target {
    const char *triple;   /* NULL: the host's */
    const char *cpu;      /* NULL: the host CPU (or "generic" with an explicit triple) */
    const char *features; /* NULL: the host CPU's (or none with an explicit triple) */
    int opt_level;        /* 0..3 */
} mg_target;

/* The generated functions and data of one model. */
typedef struct mg_program {
    const mg_graph *g;        /* the joint graph */
    const mg_plan *train;     /* NAME_train_step */
    const mg_plan *forward;   /* NAME_forward */
    int64_t workspace_bytes;  /* what both functions need: the max of the two plans */
    int64_t param_bytes;
} mg_program;

/* codegen.c: emits an object file at obj_path (and, if ll_path is not NULL, the optimised
 * LLVM IR as text). */
mg_status mg_emit_object(const mg_program *p, const mg_target *t, const char *obj_path,
                         const char *ll_path, mg_diag *d);

/* codegen.c: generates a trivial function for t. An unknown CPU makes LLVM print a warning
 * and, on some targets, abort the process: callers run this in a child process first. */
mg_status mg_target_probe(const mg_target *t, mg_diag *d);

/* header.c: the C header text for p, malloc'd; the caller frees it. */
char *mg_header_text(const mg_program *p);
#endif
