/* autodiff.c — reverse-mode automatic differentiation on the IR.
 * Walks the forward nodes from the loss backwards; each node's gradient contributions to its
 * inputs are new backward nodes, summed with `add` where a value feeds several ops. Gradients
 * of broadcast operands are reduced back to the operand's shape with `sum_to`. Only values
 * that depend on a parameter get gradients. The backward nodes carry the forward node's source
 * location so reports can point at the line they came from. */
#include "autodiff.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ad {
    mg_graph *g;
    int *grad;      /* per node: id of the accumulated gradient so far, or -1 */
    char *needs;    /* per forward node: depends on a parameter */
    mg_diag *d;
    int failed;
} ad;

static int node_attr(ad *a, mg_op op, int n, const int *in, int i0, int i1, mg_loc loc)
{
    if (a->failed) return -1;
    int attr[MG_MAX_IATTR] = {i0, i1};
    int id = mg_graph_add_op(a->g, op, n, in, attr, 1.0, loc, a->d);
    if (id < 0) a->failed = 1;
    else a->g->nodes[id].phase = MG_PHASE_BACKWARD;
    return id;
}

static int node_attrs(ad *a, mg_op op, int n, const int *in, const int *iattr, mg_loc loc)
{
    if (a->failed) return -1;
    int id = mg_graph_add_op(a->g, op, n, in, iattr, 1.0, loc, a->d);
    if (id < 0) a->failed = 1;
    else a->g->nodes[id].phase = MG_PHASE_BACKWARD;
    return id;
}

/* A node with attribute iattr0 and float attribute fattr (layer_norm's eps). */
static int node_f(ad *a, mg_op op, int n, const int *in, int iattr0, double fattr, mg_loc loc)
{
    if (a->failed) return -1;
    int attr[MG_MAX_IATTR] = {iattr0};
    int id = mg_graph_add_op(a->g, op, n, in, attr, fattr, loc, a->d);
    if (id < 0) a->failed = 1;
    else a->g->nodes[id].phase = MG_PHASE_BACKWARD;
    return id;
}

static int node(ad *a, mg_op op, int n, const int *in, mg_loc loc) { return node_attr(a, op, n, in, 0, 0, loc); }

static int op1(ad *a, mg_op op, int x, mg_loc loc) { return node(a, op, 1, &x, loc); }
static int op2(ad *a, mg_op op, int x, int y, mg_loc loc)
{
    int in[2] = {x, y};
    return node(a, op, 2, in, loc);
}

/* A node whose result shape is given rather than inferred (broadcast, sum_to, reshape, the
 * gradients of conv2d and avg_pool2d), with the attributes of forward node fw (or none). */
static int shaped_n(ad *a, mg_op op, int n, const int *in, const int *iattr, const mg_shape *shape,
                    double scale, mg_loc loc)
{
    if (a->failed) return -1;
    int id = mg_graph_add_shaped(a->g, op, n, in, iattr, scale, shape, loc, a->d);
    if (id < 0) {
        a->failed = 1;
        return -1;
    }
    a->g->nodes[id].phase = MG_PHASE_BACKWARD;
    return id;
}

static int shaped(ad *a, mg_op op, int x, const mg_shape *shape, double scale, mg_loc loc)
{
    return shaped_n(a, op, 1, &x, NULL, shape, scale, loc);
}

/* Reduces gradient dy to the shape of forward value x (undoing broadcasting). */
static int unbroadcast(ad *a, int dy, int x, mg_loc loc)
{
    if (dy < 0) return -1;
    const mg_shape *sx = &a->g->nodes[x].type.shape;
    if (mg_shape_eq(&a->g->nodes[dy].type.shape, sx)) return dy;
    return shaped(a, MG_OP_SUM_TO, dy, sx, 1.0, loc);
}

static void accumulate(ad *a, int x, int contrib, mg_loc loc)
{
    if (contrib < 0 || !a->needs[x]) return;
    if (a->grad[x] < 0) a->grad[x] = contrib;
    else a->grad[x] = op2(a, MG_OP_ADD, a->grad[x], contrib, loc);
}

mg_status mg_autodiff(mg_graph *g, mg_diag *d)
{
    int nf = g->nforward = g->n;
    if (g->loss < 0) return mg_diag_set(d, (mg_loc){0}, "nothing to differentiate: no 'minimize'");
    ad a = {g, NULL, NULL, d, 0};
    a.grad = malloc((size_t)nf * sizeof *a.grad);
    a.needs = calloc((size_t)nf, 1);
    if (!a.grad || !a.needs) abort();
    for (int i = 0; i < nf; i++) {
        const mg_node *n = &g->nodes[i];
        a.grad[i] = -1;
        a.needs[i] = n->op == MG_OP_PARAM;
        for (int k = 0; k < n->ninputs; k++) a.needs[i] |= a.needs[n->in[k]];
    }
    /* seed: d loss / d loss = 1 */
    const mg_node *L = &g->nodes[g->loss];
    int one = mg_graph_add(g, MG_OP_CONST, 0, NULL, L->loc);
    g->nodes[one].fattr = 1.0;
    g->nodes[one].type.dtype = L->type.dtype;
    g->nodes[one].phase = MG_PHASE_BACKWARD;
    if (a.needs[g->loss]) a.grad[g->loss] = one;

    for (int i = g->loss; i >= 0 && !a.failed; i--) {
        int dy = a.grad[i];
        if (dy < 0) continue;
        mg_node n = g->nodes[i]; /* copy: adding nodes may move the array */
        mg_loc loc = n.loc;
        if (n.name && !g->nodes[dy].name && g->nodes[dy].phase == MG_PHASE_BACKWARD) {
            char nm[300];
            snprintf(nm, sizeof nm, "d_%s", n.name);
            g->nodes[dy].name = mg_graph_intern(g, nm);
        }
        int x = n.ninputs > 0 ? n.in[0] : -1, y = n.ninputs > 1 ? n.in[1] : -1;
        switch (n.op) {
        case MG_OP_INPUT:
        case MG_OP_PARAM:
        case MG_OP_CONST:
            break;
        case MG_OP_ADD:
            if (a.needs[x]) accumulate(&a, x, unbroadcast(&a, dy, x, loc), loc);
            if (a.needs[y]) accumulate(&a, y, unbroadcast(&a, dy, y, loc), loc);
            break;
        case MG_OP_SUB:
            if (a.needs[x]) accumulate(&a, x, unbroadcast(&a, dy, x, loc), loc);
            if (a.needs[y]) accumulate(&a, y, op1(&a, MG_OP_NEG, unbroadcast(&a, dy, y, loc), loc), loc);
            break;
        case MG_OP_MUL:
            if (a.needs[x]) accumulate(&a, x, unbroadcast(&a, op2(&a, MG_OP_MUL, dy, y, loc), x, loc), loc);
            if (a.needs[y]) accumulate(&a, y, unbroadcast(&a, op2(&a, MG_OP_MUL, dy, x, loc), y, loc), loc);
            break;
        case MG_OP_DIV:
            /* z = x / y: dx = dy / y; dy_ = -(dy * z) / y */
            if (a.needs[x]) accumulate(&a, x, unbroadcast(&a, op2(&a, MG_OP_DIV, dy, y, loc), x, loc), loc);
            if (a.needs[y]) {
                int t = op2(&a, MG_OP_DIV, op2(&a, MG_OP_MUL, dy, i, loc), y, loc);
                accumulate(&a, y, op1(&a, MG_OP_NEG, unbroadcast(&a, t, y, loc), loc), loc);
            }
            break;
        case MG_OP_NEG:
            accumulate(&a, x, op1(&a, MG_OP_NEG, dy, loc), loc);
            break;
        case MG_OP_MATMUL: {
            /* C = A @ B (no transposes in forward graphs): dA = dC @ B^T, dB = A^T @ dC, each
             * summed over the batch axes its operand was broadcast along. When B is one matrix
             * under a stack A, dB is one GEMM over all rows of A and dC viewed as matrices. */
            mg_shape sx = g->nodes[x].type.shape, sy = g->nodes[y].type.shape;
            int dyb[2] = {dy, y}, xdy[2] = {x, dy};
            if (a.needs[y] && sy.rank == 2 && sx.rank > 2) {
                int64_t K = sx.dim[sx.rank - 1], N = sy.dim[1], rows = mg_shape_numel(&sx) / (K ? K : 1);
                mg_shape s2x = {2, {rows, K}}, s2dy = {2, {rows, N}};
                int in[2] = {shaped(&a, MG_OP_RESHAPE, x, &s2x, 1.0, loc), shaped(&a, MG_OP_RESHAPE, dy, &s2dy, 1.0, loc)};
                if (!a.failed) accumulate(&a, y, node_attr(&a, MG_OP_MATMUL, 2, in, 1, 0, loc), loc);
            } else if (a.needs[y])
                accumulate(&a, y, unbroadcast(&a, node_attr(&a, MG_OP_MATMUL, 2, xdy, 1, 0, loc), y, loc), loc);
            if (a.needs[x]) accumulate(&a, x, unbroadcast(&a, node_attr(&a, MG_OP_MATMUL, 2, dyb, 0, 1, loc), x, loc), loc);
            break;
        }
        case MG_OP_EMBEDDING: {
            /* ids are integers: only the table gets a gradient */
            mg_shape st = g->nodes[y].type.shape;
            int idy[2] = {x, dy};
            if (a.needs[y]) accumulate(&a, y, shaped_n(&a, MG_OP_EMBEDDING_GRAD, 2, idy, NULL, &st, 1.0, loc), loc);
            break;
        }
        case MG_OP_TRANSPOSE: {
            int inv[MG_MAX_IATTR] = {0};
            for (int k = 0; k < n.type.shape.rank; k++) inv[n.iattr[k]] = k;
            accumulate(&a, x, node_attrs(&a, MG_OP_TRANSPOSE, 1, &dy, inv, loc), loc);
            break;
        }
        case MG_OP_RELU: accumulate(&a, x, op2(&a, MG_OP_RELU_GRAD, i, dy, loc), loc); break;
        case MG_OP_TANH: accumulate(&a, x, op2(&a, MG_OP_TANH_GRAD, i, dy, loc), loc); break;
        case MG_OP_SIGMOID: accumulate(&a, x, op2(&a, MG_OP_SIGMOID_GRAD, i, dy, loc), loc); break;
        case MG_OP_EXP: accumulate(&a, x, op2(&a, MG_OP_MUL, dy, i, loc), loc); break;
        case MG_OP_LOG: accumulate(&a, x, op2(&a, MG_OP_DIV, dy, x, loc), loc); break;
        case MG_OP_SOFTMAX:
        case MG_OP_LOG_SOFTMAX: {
            int ydy[2] = {i, dy};
            mg_op gop = n.op == MG_OP_SOFTMAX ? MG_OP_SOFTMAX_GRAD : MG_OP_LOG_SOFTMAX_GRAD;
            accumulate(&a, x, node_attr(&a, gop, 2, ydy, n.iattr[0], 0, loc), loc);
            break;
        }
        case MG_OP_GELU: {
            int xdy[2] = {x, dy};
            accumulate(&a, x, node_attr(&a, MG_OP_GELU_GRAD, 2, xdy, n.iattr[0], 0, loc), loc);
            break;
        }
        case MG_OP_LAYER_NORM: {
            /* y = (x - mean) / sqrt(var + eps) * scale + shift over the last axis; the backward
             * ops recompute the row statistics from x rather than keeping them */
            int b = n.in[2];
            if (a.needs[y]) {
                int in[2] = {x, dy};
                accumulate(&a, y, node_f(&a, MG_OP_LAYER_NORM_GRAD_SCALE, 2, in, 0, n.fattr, loc), loc);
            }
            if (a.needs[b]) accumulate(&a, b, unbroadcast(&a, dy, b, loc), loc);
            if (a.needs[x]) {
                int in[3] = {x, y, dy};
                accumulate(&a, x, node_f(&a, MG_OP_LAYER_NORM_GRAD_INPUT, 3, in, 0, n.fattr, loc), loc);
            }
            break;
        }
        case MG_OP_BATCH_NORM: {
            /* as layer_norm, per channel over N (and H, W); the backward ops recompute the batch
             * statistics from x */
            int b = n.in[2], xgd[3] = {x, y, dy}, xd[2] = {x, dy};
            if (a.needs[y]) accumulate(&a, y, node_f(&a, MG_OP_BATCH_NORM_GRAD_SCALE, 2, xd, 0, n.fattr, loc), loc);
            if (a.needs[b]) accumulate(&a, b, node_f(&a, MG_OP_BATCH_NORM_GRAD_SHIFT, 1, &dy, 0, 1.0, loc), loc);
            if (a.needs[x]) accumulate(&a, x, node_f(&a, MG_OP_BATCH_NORM_GRAD_INPUT, 3, xgd, 0, n.fattr, loc), loc);
            break;
        }
        case MG_OP_DROPOUT: { /* the same mask, regenerated from (seed, step, this node) */
            int attr[MG_MAX_IATTR] = {n.iattr[0], i};
            int id = a.failed ? -1 : mg_graph_add_op(g, MG_OP_DROPOUT_GRAD, 1, &dy, attr, n.fattr, loc, d);
            if (id < 0) a.failed = 1;
            else g->nodes[id].phase = MG_PHASE_BACKWARD;
            accumulate(&a, x, id, loc);
            break;
        }
        case MG_OP_SUM:
        case MG_OP_MEAN: {
            const mg_shape *sx = &g->nodes[x].type.shape;
            double scale = n.op == MG_OP_MEAN ? 1.0 / (double)mg_shape_numel(sx) : 1.0;
            accumulate(&a, x, shaped(&a, MG_OP_BROADCAST, dy, sx, scale, loc), loc);
            break;
        }
        case MG_OP_CROSS_ENTROPY: {
            int in[3] = {x, y, dy};
            accumulate(&a, x, node_attr(&a, MG_OP_XENT_GRAD, 3, in, n.iattr[0], 0, loc), loc);
            break;
        }
        case MG_OP_CONCAT: /* each operand's gradient is its slice of dy */
            for (int k = 0, off = 0; k < n.ninputs; k++) {
                int len = (int)g->nodes[n.in[k]].type.shape.dim[n.iattr[0]];
                int sl[MG_MAX_IATTR] = {n.iattr[0], off, off + len, 1};
                if (a.needs[n.in[k]]) accumulate(&a, n.in[k], node_attrs(&a, MG_OP_SLICE, 1, &dy, sl, loc), loc);
                off += len;
            }
            break;
        case MG_OP_SLICE: {
            mg_shape sx = g->nodes[x].type.shape;
            accumulate(&a, x, shaped_n(&a, MG_OP_SLICE_GRAD, 1, &dy, n.iattr, &sx, 1.0, loc), loc);
            break;
        }
        case MG_OP_UPSAMPLE_NEAREST:
            accumulate(&a, x, node_attrs(&a, MG_OP_UPSAMPLE_NEAREST_GRAD, 1, &dy, n.iattr, loc), loc);
            break;
        case MG_OP_CONV_TRANSPOSE2D: {
            /* the adjoint of conv2d: dx = conv2d(dy, w), dw = conv2d_grad_weight with x and dy swapped */
            mg_shape sw = g->nodes[y].type.shape;
            int cv[MG_MAX_IATTR] = {n.iattr[0], n.iattr[1], n.iattr[2], n.iattr[3]}, dyw[2] = {dy, y}, dyx[2] = {dy, x};
            if (a.needs[y]) accumulate(&a, y, shaped_n(&a, MG_OP_CONV2D_GRAD_WEIGHT, 2, dyx, cv, &sw, 1.0, loc), loc);
            if (a.needs[x]) accumulate(&a, x, node_attrs(&a, MG_OP_CONV2D, 2, dyw, cv, loc), loc);
            break;
        }
        case MG_OP_MSE: {
            int in[3] = {x, y, dy};
            if (a.needs[x]) accumulate(&a, x, node(&a, MG_OP_MSE_GRAD, 3, in, loc), loc);
            if (a.needs[y]) accumulate(&a, y, node_attr(&a, MG_OP_MSE_GRAD, 3, in, -1, 0, loc), loc);
            break;
        }
        case MG_OP_CONV2D: {
            /* copies: adding nodes may move the array. The weight gradient is emitted before the
             * input gradient (here and for every op with a parameter-sized gradient): the
             * backward pass runs in graph order, so the small gradient is taken while only dy
             * and x are resident, not beside the new input-sized dx; x (often recomputed) can
             * then go before dx is allocated. On unet_small this lowered the minimum feasible
             * budget from 13.3 to 10.0 MiB. Each gradient's own sum is unchanged, so results
             * are bit-identical. */
            mg_shape sx = g->nodes[x].type.shape, sw = g->nodes[y].type.shape;
            int dyw[2] = {dy, y}, xdy[2] = {x, dy};
            if (a.needs[y])
                accumulate(&a, y, shaped_n(&a, MG_OP_CONV2D_GRAD_WEIGHT, 2, xdy, n.iattr, &sw, 1.0, loc), loc);
            if (a.needs[x])
                accumulate(&a, x, shaped_n(&a, MG_OP_CONV2D_GRAD_INPUT, 2, dyw, n.iattr, &sx, 1.0, loc), loc);
            break;
        }
        case MG_OP_MAX_POOL2D: {
            int xdy[2] = {x, dy};
            accumulate(&a, x, node_attrs(&a, MG_OP_MAX_POOL2D_GRAD, 2, xdy, n.iattr, loc), loc);
            break;
        }
        case MG_OP_AVG_POOL2D: {
            mg_shape sx = g->nodes[x].type.shape;
            accumulate(&a, x, shaped_n(&a, MG_OP_AVG_POOL2D_GRAD, 1, &dy, n.iattr, &sx, 1.0, loc), loc);
            break;
        }
        case MG_OP_GLOBAL_AVG_POOL: {
            /* dx = broadcast(reshape(dy, [N,C,1,1])) / (H*W) */
            mg_shape sx = g->nodes[x].type.shape;
            mg_shape s4 = {4, {sx.dim[0], sx.dim[1], 1, 1}};
            int r = shaped(&a, MG_OP_RESHAPE, dy, &s4, 1.0, loc);
            accumulate(&a, x, shaped(&a, MG_OP_BROADCAST, r, &sx, 1.0 / (double)(sx.dim[2] * sx.dim[3]), loc), loc);
            break;
        }
        case MG_OP_RESHAPE:
        case MG_OP_FLATTEN: {
            mg_shape sx = g->nodes[x].type.shape;
            accumulate(&a, x, shaped(&a, MG_OP_RESHAPE, dy, &sx, 1.0, loc), loc);
            break;
        }
        default:
            mg_diag_set(d, loc, "internal error: no gradient rule for '%s'", mg_ops[n.op].name);
            a.failed = 1;
        }
    }
    if (!a.failed) {
        g->param_grads = malloc((size_t)(g->nparams ? g->nparams : 1) * sizeof *g->param_grads);
        if (!g->param_grads) abort();
        for (int i = 0; i < g->nparams; i++) g->param_grads[i] = a.grad[g->params[i]];
    }
    free(a.grad);
    free(a.needs);
    if (a.failed) return MG_ERR;
    return mg_graph_verify(g, d);
}
