/* graph.c — building graphs: node storage, the string pool, the op table, diagnostics.
 * Every allocation belongs to the mg_graph and goes when mg_graph_free is called. */
#include "ir.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const mg_op_info mg_ops[MG_OP_COUNT] = {
#define OP(e, name, nin, callable) {name, nin, callable},
#include "ops.def"
#undef OP
};

int mg_op_accumulates(mg_op op)
{
    return op == MG_OP_SUM_TO_ACC || op == MG_OP_CONV2D_GRAD_WEIGHT_ACC || op == MG_OP_MATMUL_ACC ||
           op == MG_OP_EMBEDDING_GRAD_ACC || op == MG_OP_LAYER_NORM_GRAD_SCALE_ACC;
}

mg_status mg_diag_set(mg_diag *d, mg_loc loc, const char *fmt, ...)
{
    if (d) {
        va_list ap;
        d->loc = loc;
        va_start(ap, fmt);
        vsnprintf(d->msg, sizeof d->msg, fmt, ap);
        va_end(ap);
    }
    return MG_ERR;
}

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        /* Out of memory while building a graph: nothing sensible can continue. */
        abort();
    }
    return q;
}

void *mg_xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n ? n : 1, sz);
    if (!p) abort();
    return p;
}

mg_graph *mg_graph_new(void)
{
    mg_graph *g = calloc(1, sizeof *g);
    if (!g) abort();
    g->loss = -1;
    return g;
}

void mg_graph_free(mg_graph *g)
{
    if (!g) return;
    for (int i = 0; i < g->nstrings; i++) free(g->strings[i]);
    free(g->strings);
    free(g->nodes);
    free(g->inputs);
    free(g->params);
    free(g->outputs);
    free(g->param_grads);
    free(g);
}

const char *mg_graph_intern(mg_graph *g, const char *s)
{
    if (!s) return NULL;
    if (g->nstrings == g->capstrings) {
        g->capstrings = g->capstrings ? 2 * g->capstrings : 64;
        g->strings = xrealloc(g->strings, (size_t)g->capstrings * sizeof *g->strings);
    }
    size_t n = strlen(s) + 1;
    char *c = xrealloc(NULL, n);
    memcpy(c, s, n);
    g->strings[g->nstrings++] = c;
    return c;
}

int mg_graph_add(mg_graph *g, mg_op op, int ninputs, const int *in, mg_loc loc)
{
    if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 64;
        g->nodes = xrealloc(g->nodes, (size_t)g->cap * sizeof *g->nodes);
    }
    mg_node *nd = &g->nodes[g->n];
    memset(nd, 0, sizeof *nd);
    nd->op = op;
    nd->ninputs = ninputs;
    for (int i = 0; i < ninputs; i++) nd->in[i] = in[i];
    nd->loc = loc;
    nd->index = -1;
    return g->n++;
}

int mg_graph_add_like(mg_graph *g, const mg_node *t, mg_op op, int ninputs, const int *in, const char *name)
{
    int id = mg_graph_add(g, op, ninputs, in, t->loc);
    mg_node *n = &g->nodes[id];
    memcpy(n->iattr, t->iattr, sizeof n->iattr);
    n->fattr = t->fattr;
    n->fattr2 = t->fattr2;
    n->name = mg_graph_intern(g, name);
    n->phase = t->phase;
    n->index = t->index;
    n->micro_batch = t->micro_batch;
    n->init = t->init;
    n->init_arg = t->init_arg;
    n->type = t->type;
    return id;
}

int mg_graph_add_op(mg_graph *g, mg_op op, int ninputs, const int *in, const int *iattr,
                    double fattr, mg_loc loc, mg_diag *d)
{
    return mg_graph_add_shaped(g, op, ninputs, in, iattr, fattr, NULL, loc, d);
}

int mg_graph_add_shaped(mg_graph *g, mg_op op, int ninputs, const int *in, const int *iattr,
                        double fattr, const mg_shape *shape, mg_loc loc, mg_diag *d)
{
    mg_shape want = {0};
    if (shape) want = *shape; /* shape may point into the node array, which the add can move */
    int id = mg_graph_add(g, op, ninputs, in, loc);
    if (iattr) memcpy(g->nodes[id].iattr, iattr, sizeof g->nodes[id].iattr);
    if (shape) g->nodes[id].type.shape = want;
    g->nodes[id].fattr = fattr;
    if (mg_infer_type(g, id, d) != MG_OK) {
        g->n--; /* drop the ill-typed node */
        return -1;
    }
    return id;
}

/* (nodes come after their operands: one pass from the last) */
void mg_graph_mark_needed(const mg_graph *g, int n, char *needed)
{
    for (int i = n - 1; i >= 0; i--)
        if (needed[i])
            for (int k = 0; k < g->nodes[i].ninputs; k++) needed[g->nodes[i].in[k]] = 1;
}
