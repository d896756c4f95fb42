/* ir.h — memgrad's intermediate representation: a typed SSA graph.
 *
 * A graph is an array of nodes in topological order (every input of node i has an id < i).
 * Each node is one operator from ops.def applied to earlier nodes and has one result with a
 * static dtype and shape. Leaves are model inputs, parameters and scalar constants. The
 * frontend builds the forward graph; autodiff appends the backward nodes to the same graph
 * (the "joint graph"). The IR knows nothing of files, LLVM or memory plans.
 */
#ifndef MG_IR_H
#define MG_IR_H
#include <stddef.h>
#include <stdint.h>

/* Codes match the generated headers' MG_F32/MG_F64/MG_I32. */
typedef enum { MG_F32 = 0, MG_F64 = 1, MG_I32 = 2 } mg_dtype;

enum { MG_MAX_RANK = 8, MG_MAX_INPUTS = 4, MG_MAX_IATTR = 8 };

typedef struct mg_shape {
    int rank;
    int64_t dim[MG_MAX_RANK];
} mg_shape;

typedef struct mg_type {
    mg_dtype dtype;
    mg_shape shape;
} mg_type;

typedef enum {
#define OP(e, name, nin, callable) MG_OP_##e,
#include "ops.def"
#undef OP
    MG_OP_COUNT
} mg_op;

typedef struct mg_op_info {
    const char *name;
    int ninputs;
    int callable; /* may be called as name(args) in the model format */
} mg_op_info;

extern const mg_op_info mg_ops[MG_OP_COUNT];

/* Whether op is one of micro-batching's partial sums, (..., acc) -> acc + f(...), acc its last
 * input (sum_to_acc, matmul_acc, ...). */
int mg_op_accumulates(mg_op op);

/* A place in a source file; file points at a string the caller keeps alive. */
typedef struct mg_loc {
    const char *file;
    int line, col; /* 1-based; 0 = unknown */
} mg_loc;

/* A diagnostic: library code fills one and returns an error status; only the driver prints. */
typedef struct mg_diag {
    mg_loc loc;
    char msg[1024];
} mg_diag;

typedef enum { MG_OK = 0, MG_ERR = 1 } mg_status;

mg_status mg_diag_set(mg_diag *d, mg_loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* calloc of n elements of sz bytes (at least one element, so n = 0 gives a pointer to free);
 * aborts when memory runs out, as every builder of graphs and plans does: nothing sensible can
 * continue, and a status on every allocation would bury the passes' logic. */
void *mg_xcalloc(size_t n, size_t sz);

typedef enum { MG_INIT_ZEROS, MG_INIT_ONES, MG_INIT_HE, MG_INIT_XAVIER, MG_INIT_NORMAL,
               MG_INIT_UNIFORM } mg_init;

typedef enum { MG_PHASE_FORWARD = 0, MG_PHASE_BACKWARD = 1 } mg_phase;

typedef struct mg_node {
    mg_op op;
    int ninputs;
    int in[MG_MAX_INPUTS];
    mg_type type;
    int iattr[MG_MAX_IATTR]; /* integer attributes; their meaning per op is in ops.def */
    double fattr;
    double fattr2;    /* a second float attribute: batch_norm's momentum */
    const char *name; /* the user's name for this value, or NULL; owned by the graph */
    mg_loc loc;
    mg_phase phase;
    int index;        /* INPUT/PARAM: position in the model's input/param list */
    int micro_batch;  /* the part of the batch this value is of, counted from 1, in a graph in
                         parts (microbatch.c); 0: of no one part. The planner's bound takes each
                         part's values apart (bound_parts.c) */
    mg_init init;     /* PARAM: initializer and its argument */
    double init_arg;
} mg_node;

typedef struct mg_output {
    const char *name;
    int node;
} mg_output;

enum { MG_MAX_WARNINGS = 16 };

typedef struct mg_graph {
    const char *model_name;
    mg_node *nodes;
    int n, cap;
    int *inputs, ninputs;      /* node ids, declaration order */
    int *params, nparams;
    mg_output *outputs;
    int noutputs;
    int loss;                  /* node id of the minimized scalar, or -1 */
    int nforward;              /* nodes [0, nforward) are the forward graph */
    int *param_grads;          /* after autodiff: node id of d loss / d param[i] */
    char **strings;            /* every string the graph owns */
    int nstrings, capstrings;
    /* the frontend's warnings, in source order, for the driver to print (the model is valid):
     * the first MG_MAX_WARNINGS, and whether more were dropped */
    mg_diag warnings[MG_MAX_WARNINGS];
    int nwarnings, warnings_dropped;
} mg_graph;

mg_graph *mg_graph_new(void);
void mg_graph_free(mg_graph *g);
/* Copies s into the graph's string pool. */
const char *mg_graph_intern(mg_graph *g, const char *s);
/* Appends a node (inputs must already exist); returns its id. The type is left zeroed. */
int mg_graph_add(mg_graph *g, mg_op op, int ninputs, const int *in, mg_loc loc);
/* Appends a node like t (its attributes, name, phase, part, index, initializer and type) with op
 * and inputs in (ids in g): the rewrites' copy of a node of another graph. The type stays t's
 * until the caller infers it. */
int mg_graph_add_like(mg_graph *g, const mg_node *t, mg_op op, int ninputs, const int *in, const char *name);
/* Appends a node and infers its type; on a shape/dtype error fills d and returns -1.
 * iattr is NULL (all zero) or MG_MAX_IATTR integers. */
int mg_graph_add_op(mg_graph *g, mg_op op, int ninputs, const int *in, const int *iattr,
                    double fattr, mg_loc loc, mg_diag *d);
/* Like mg_graph_add_op for ops whose result shape is given by their creator rather than
 * inferred (broadcast, sum_to, reshape, the gradients of conv2d and avg_pool2d): inference
 * checks that shape against the operands. */
int mg_graph_add_shaped(mg_graph *g, mg_op op, int ninputs, const int *in, const int *iattr,
                        double fattr, const mg_shape *shape, mg_loc loc, mg_diag *d);
/* Marks in needed[0..n) (n: g->n, or g->nforward for the forward graph) everything the nodes
 * already marked there depend on. */
void mg_graph_mark_needed(const mg_graph *g, int n, char *needed);

/* shape.c */
size_t mg_dtype_size(mg_dtype t);
const char *mg_dtype_name(mg_dtype t);
int64_t mg_shape_numel(const mg_shape *s);
int mg_shape_eq(const mg_shape *a, const mg_shape *b);
/* Writes "[128,784]" into buf. */
const char *mg_shape_str(const mg_shape *s, char *buf, size_t len);
/* numpy broadcasting of a and b; returns 0 if they do not broadcast. */
int mg_shape_broadcast(const mg_shape *a, const mg_shape *b, mg_shape *out);
/* Infers the result type of node id (its inputs typed already); fills d on error. */
mg_status mg_infer_type(mg_graph *g, int id, mg_diag *d);
size_t mg_node_bytes(const mg_graph *g, int id);
/* Output extent of a convolution or pooling window along one axis (< 1 if none fits). */
int64_t mg_window_out(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dil);
/* cost.c: floating-point operations one evaluation of node id performs. */
double mg_node_flops(const mg_graph *g, int id);

/* verify.c: structural checks on a whole graph (ids, order, arity, types re-inferred). */
mg_status mg_graph_verify(mg_graph *g, mg_diag *d);

/* print.c: human-readable listing into a malloc'd string the caller frees. */
char *mg_graph_print(const mg_graph *g);

/* hash.c: structural hash of the forward graph (xxHash64); stable across runs and hosts. */
uint64_t mg_graph_hash(const mg_graph *g);
#endif
