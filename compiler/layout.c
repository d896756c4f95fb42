/* layout.c — sizes and places every plan shares, whatever the schedule: where each parameter
 * (and its gradient) sits in the caller's blobs, and how much scratch a GEMM step needs. */
#include "plan.h"
#include "gemm.h"

static int64_t align_up(int64_t x) { return (x + MG_ALIGN - 1) / MG_ALIGN * MG_ALIGN; }

int64_t mg_param_layout(const mg_graph *g, int64_t *offsets)
{
    int64_t off = 0;
    for (int i = 0; i < g->nparams; i++) {
        if (offsets) offsets[i] = off;
        off += align_up((int64_t)mg_node_bytes(g, g->params[i]));
    }
    return off;
}

int64_t mg_matmul_scratch_bytes(const mg_graph *g, int node)
{
    const mg_node *n = &g->nodes[node];
    const mg_shape *a = &g->nodes[n->in[0]].type.shape;
    int64_t M = n->type.shape.dim[0], N = n->type.shape.dim[1];
    int64_t K = n->iattr[0] ? a->dim[0] : a->dim[1];
    return align_up(mgk_gemm_scratch_bytes(M, N, K, (int64_t)mg_dtype_size(n->type.dtype)));
}

