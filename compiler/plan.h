/* plan.h — memory plans: the schedule of a generated function and where every value lives.
 *
 * A plan is a list of steps (compute a node, copy a value, zero a gradient) and a set of
 * workspace buffers, each live over an inclusive range of steps and placed at a byte offset in
 * the one workspace arena. Values that are not in the workspace live in caller-owned memory:
 * the params blob, the grads blob, an input or output buffer, or a constant in the object. */
#ifndef MG_PLAN_H
#define MG_PLAN_H
#include "ir.h"

enum { MG_ALIGN = 64 }; /* every buffer and parameter starts on a cache line */

typedef enum { MG_MEM_NONE, MG_MEM_WS, MG_MEM_PARAMS, MG_MEM_GRADS, MG_MEM_INPUT, MG_MEM_OUTPUT,
               MG_MEM_CONST } mg_mem;

typedef struct mg_place {
    mg_mem mem;
    int index;      /* MG_MEM_INPUT / MG_MEM_OUTPUT: position; MG_MEM_WS: buffer id */
    int64_t offset; /* byte offset in the params/grads blob (WS offsets live in the buffer) */
} mg_place;

typedef enum { MG_STEP_COMPUTE, MG_STEP_COPY, MG_STEP_ZERO } mg_step_kind;

typedef struct mg_step {
    mg_step_kind kind;
    int node;        /* COMPUTE: the node; COPY: the source node; ZERO: the parameter node */
    mg_place out;    /* where the result is written */
    int scratch;     /* workspace buffer for kernel scratch (GEMM packing), or -1 */
} mg_step;

typedef struct mg_buffer {
    int64_t bytes;   /* rounded up to MG_ALIGN */
    int first, last; /* steps during which it is live, inclusive */
    int64_t offset;  /* in the workspace; -1 until the arena places it */
    int node;        /* the value it holds, or -1 for scratch */
} mg_buffer;

typedef enum { MG_PLAN_TRAIN, MG_PLAN_FORWARD } mg_plan_kind;

typedef struct mg_plan {
    const mg_graph *g;
    mg_plan_kind kind;
    mg_step *steps;
    int nsteps;
    mg_place *place;     /* per graph node */
    mg_buffer *bufs;
    int nbufs;
    int64_t workspace_bytes, peak_live_bytes;
    int result;          /* TRAIN: the loss node, whose value the step returns */
} mg_plan;

/* Parameter layout in the params/grads blobs: offsets (aligned) and the total size. */
int64_t mg_param_layout(const mg_graph *g, int64_t *offsets);

/* sched_storeall.c: the store-all schedule (every value computed once, in graph order, freed
 * after its last use), with buffers sized but not yet placed. */
mg_status mg_schedule_store_all(const mg_graph *g, mg_plan_kind kind, mg_plan **out, mg_diag *d);
void mg_plan_free(mg_plan *p);

/* arena.c: gives every buffer an offset (no two buffers live at the same step overlap) and
 * sets workspace_bytes and peak_live_bytes. */
mg_status mg_arena_assign(mg_plan *p, mg_diag *d);

/* plan_verify.c: the independent checker; replays the schedule. */
mg_status mg_plan_verify(const mg_plan *p, mg_diag *d);

/* GEMM scratch bytes for a matmul node (the kernels' contract). */
int64_t mg_matmul_scratch_bytes(const mg_graph *g, int node);
#endif
