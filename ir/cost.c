/* cost.c — the cost model the planner weighs recomputation with: floating-point operations
 * per node, counted the usual way (a multiply-add is 2, an elementwise op 1 per element,
 * transcendental functions a few). Leaves cost nothing: they are never computed. */
#include "ir.h"

double mg_node_flops(const mg_graph *g, int id)
{
    const mg_node *n = &g->nodes[id];
    double out = (double)mg_shape_numel(&n->type.shape);
    double in0 = n->ninputs > 0 ? (double)mg_shape_numel(&g->nodes[n->in[0]].type.shape) : 0;
    switch (n->op) {
    case MG_OP_INPUT:
    case MG_OP_PARAM:
    case MG_OP_CONST: return 0;
    case MG_OP_MATMUL:
    case MG_OP_MATMUL_ACC: {
        const mg_shape *a = &g->nodes[n->in[0]].type.shape;
        double k = (double)(n->iattr[0] ? a->dim[a->rank - 2] : a->dim[a->rank - 1]);
        return 2.0 * out * k;
    }
    case MG_OP_CONV2D: { /* 2 * out * (C_in/groups * kh * kw) */
        const mg_shape *w = &g->nodes[n->in[1]].type.shape;
        return 2.0 * out * (double)(w->dim[1] * w->dim[2] * w->dim[3]);
    }
    case MG_OP_CONV2D_GRAD_INPUT: { /* as the forward: 2 * dy * (C_in/groups * kh * kw) */
        const mg_shape *w = &g->nodes[n->in[1]].type.shape;
        return 2.0 * in0 * (double)(w->dim[1] * w->dim[2] * w->dim[3]);
    }
    case MG_OP_CONV2D_GRAD_WEIGHT:
    case MG_OP_CONV2D_GRAD_WEIGHT_ACC: { /* 2 * dw * N * OH * OW */
        const mg_shape *dy = &g->nodes[n->in[1]].type.shape;
        return 2.0 * out * (double)(dy->dim[0] * dy->dim[2] * dy->dim[3]);
    }
    case MG_OP_CONV_TRANSPOSE2D: { /* conv2d's input gradient: 2 * x * (C_out/groups * kh * kw) */
        const mg_shape *w = &g->nodes[n->in[1]].type.shape;
        return 2.0 * in0 * (double)(w->dim[1] * w->dim[2] * w->dim[3]);
    }
    case MG_OP_CONCAT:
    case MG_OP_SLICE:
    case MG_OP_SLICE_GRAD:
    case MG_OP_UPSAMPLE_NEAREST: return out;   /* copies (slice_grad: zeros and a copy) */
    case MG_OP_UPSAMPLE_NEAREST_GRAD: return in0; /* one add per upstream element */
    case MG_OP_MAX_POOL2D:
    case MG_OP_AVG_POOL2D: return out * (double)n->iattr[0] * (double)n->iattr[0];
    case MG_OP_MAX_POOL2D_GRAD:
    case MG_OP_AVG_POOL2D_GRAD: {
        const mg_shape *dy = &g->nodes[n->in[n->ninputs - 1]].type.shape;
        return (double)mg_shape_numel(dy) * (double)n->iattr[0] * (double)n->iattr[0];
    }
    case MG_OP_GLOBAL_AVG_POOL: return in0;
    case MG_OP_RESHAPE:
    case MG_OP_FLATTEN: return 0;
    case MG_OP_TRANSPOSE:
    case MG_OP_EMBEDDING: return out;
    case MG_OP_EMBEDDING_GRAD:
    case MG_OP_EMBEDDING_GRAD_ACC: return (double)mg_shape_numel(&g->nodes[n->in[1]].type.shape);
    case MG_OP_TANH:
    case MG_OP_SIGMOID:
    case MG_OP_EXP:
    case MG_OP_LOG: return 4.0 * out;
    case MG_OP_SUM:
    case MG_OP_MEAN:
    case MG_OP_SUM_TO:
    case MG_OP_SUM_TO_ACC: return in0;
    case MG_OP_SOFTMAX:
    case MG_OP_LOG_SOFTMAX: return 5.0 * out;
    case MG_OP_LOG_SOFTMAX_GRAD: return 6.0 * out;
    case MG_OP_LAYER_NORM: return 8.0 * out;
    case MG_OP_LAYER_NORM_GRAD_INPUT: return 14.0 * out;
    case MG_OP_LAYER_NORM_GRAD_SCALE:
    case MG_OP_LAYER_NORM_GRAD_SCALE_ACC: return 8.0 * in0;
    case MG_OP_GELU: return 8.0 * out;
    case MG_OP_GELU_GRAD: return 12.0 * out;
    case MG_OP_BATCH_NORM: return 8.0 * out;
    case MG_OP_BATCH_NORM_GRAD_INPUT: return 14.0 * out;
    case MG_OP_BATCH_NORM_GRAD_SCALE: return 8.0 * in0;
    case MG_OP_BN_STATS:
    case MG_OP_BN_STATS_ACC: return 3.0 * in0;
    case MG_OP_BN_APPLY: return 2.0 * out;
    case MG_OP_BN_GRAD_SUMS: return 5.0 * in0;
    case MG_OP_BN_GRAD_APPLY: return 9.0 * out;
    case MG_OP_DROPOUT:
    case MG_OP_DROPOUT_GRAD: return 6.0 * out;
    case MG_OP_SOFTMAX_GRAD: return 4.0 * out;
    case MG_OP_CROSS_ENTROPY:
    case MG_OP_XENT_SUM:
    case MG_OP_XENT_SUM_ACC: return 5.0 * in0;
    case MG_OP_XENT_GRAD: return 5.0 * out;
    case MG_OP_MSE: return 3.0 * in0;
    case MG_OP_MSE_GRAD:
    case MG_OP_TANH_GRAD:
    case MG_OP_SIGMOID_GRAD: return 3.0 * out;
    default: return out;
    }
}
