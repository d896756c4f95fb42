/* verify.c — the IR verifier: checks the invariants every pass relies on, so a pass that
 * breaks the graph is caught at its exit rather than as a wrong number later.
 * requires: nothing; maintains: nothing (read-only apart from scratch re-inference). */
#include "ir.h"

#include <string.h>

mg_status mg_graph_verify(mg_graph *g, mg_diag *d)
{
    mg_loc none = {0};
    for (int i = 0; i < g->n; i++) {
        mg_node *n = &g->nodes[i];
        if ((unsigned)n->op >= MG_OP_COUNT)
            return mg_diag_set(d, n->loc, "node %%%d: invalid op %d", i, (int)n->op);
        int want = mg_ops[n->op].ninputs; /* -1: variadic, 2..MG_MAX_INPUTS */
        if (want >= 0 ? n->ninputs != want : n->ninputs < 2 || n->ninputs > MG_MAX_INPUTS)
            return mg_diag_set(d, n->loc, "node %%%d (%s): %d inputs, expected %d", i,
                               mg_ops[n->op].name, n->ninputs, want >= 0 ? want : MG_MAX_INPUTS);
        for (int k = 0; k < n->ninputs; k++)
            if (n->in[k] < 0 || n->in[k] >= i)
                return mg_diag_set(d, n->loc, "node %%%d (%s): input %d is %%%d, not an earlier node",
                                   i, mg_ops[n->op].name, k, n->in[k]);
        if (n->type.shape.rank < 0 || n->type.shape.rank > MG_MAX_RANK)
            return mg_diag_set(d, n->loc, "node %%%d: rank %d out of range", i, n->type.shape.rank);
        for (int k = 0; k < n->type.shape.rank; k++)
            if (n->type.shape.dim[k] <= 0)
                return mg_diag_set(d, n->loc, "node %%%d: dimension %d is %lld", i, k,
                                   (long long)n->type.shape.dim[k]);
        mg_type saved = n->type;
        if (mg_infer_type(g, i, d) != MG_OK) return MG_ERR;
        if (n->type.dtype != saved.dtype || !mg_shape_eq(&n->type.shape, &saved.shape)) {
            n->type = saved;
            return mg_diag_set(d, n->loc, "node %%%d (%s): stored type differs from inferred type",
                               i, mg_ops[n->op].name);
        }
    }
    for (int i = 0; i < g->ninputs; i++)
        if (g->inputs[i] < 0 || g->inputs[i] >= g->n || g->nodes[g->inputs[i]].op != MG_OP_INPUT ||
            g->nodes[g->inputs[i]].index != i)
            return mg_diag_set(d, none, "input list entry %d is broken", i);
    for (int i = 0; i < g->nparams; i++)
        if (g->params[i] < 0 || g->params[i] >= g->n || g->nodes[g->params[i]].op != MG_OP_PARAM ||
            g->nodes[g->params[i]].index != i)
            return mg_diag_set(d, none, "param list entry %d is broken", i);
    for (int i = 0; i < g->noutputs; i++)
        if (g->outputs[i].node < 0 || g->outputs[i].node >= g->n)
            return mg_diag_set(d, none, "output '%s' refers to a missing node", g->outputs[i].name);
    if (g->loss >= 0) {
        if (g->loss >= g->n || g->nodes[g->loss].type.shape.rank != 0 ||
            g->nodes[g->loss].type.dtype == MG_I32)
            return mg_diag_set(d, none, "the minimized value is not a float scalar");
    }
    if (g->param_grads) {
        for (int i = 0; i < g->nparams; i++) {
            int gi = g->param_grads[i];
            if (gi < 0) continue;
            const mg_node *p = &g->nodes[g->params[i]];
            if (gi >= g->n || g->nodes[gi].type.dtype != p->type.dtype ||
                !mg_shape_eq(&g->nodes[gi].type.shape, &p->type.shape))
                return mg_diag_set(d, p->loc, "gradient of '%s' has the wrong type", p->name);
        }
    }
    return MG_OK;
}
