/* microbatch.c — the micro-batching rewrite: IR -> IR, between autodiff and the planner.
 *
 * Why it exists: the backward op of a model's first layers can alone need more workspace than a
 * budget allows (cnn_fmnist: relu_grad over f32[128,32,28,28] reads y and dy and writes dx,
 * 36.8 MiB with the rest, which is also its store-all workspace), and no choice of what to keep
 * or recompute lowers that. Running those layers on parts of the batch does. This pass builds
 * the joint graph that does so; the planner and the backend see an ordinary graph.
 *
 * The prefix R: forward ops reachable from the batch inputs (the inputs whose axis 0 is the
 * batch, N) through ops where sample n of the result depends only on sample n of the batched
 * operands (convolutions, pooling, elementwise ops whose other operands have no batch axis,
 * reshapes, x @ w with x's rows the samples, embedding, layer_norm, ...) or through batch_norm
 * (below), and whose other operands do not depend on R. Axis 0 of such a value is the batch or
 * r rows a sample ([B*T, D] reshaped from a transformer's [B, T, D]: part c its rows
 * [c*r*N/k, (c+1)*r*N/k)); since 2026-12-05 the transformer splits so (embedding stopped it
 * before), its weights', embedding table's and norms' gradients summed part after part over
 * those rows (matmul_acc, embedding_grad_acc, layer_norm_grad_scale_acc: the kernels' additions
 * in their order). It ends at the first op that mixes
 * samples (reductions, cross_entropy), and at convolutions the parts would cut: a convolution is split
 * only at multiples of the images one GEMM takes (mgk_conv_batch; unet_small's 8x8 bottleneck
 * takes 2 images per GEMM: 8 parts of its batch of 8 end before it; resnet18_64's 2x2 layer4
 * takes all 16: it is never split). That is for speed, not bits: any cut gives the same bits
 * (tests/test_conv.c), but parts of fewer images run GEMMs of a few columns (layer4 in 16 parts:
 * 4 of a 16-wide tile), and allowing them made resnet18_64's plans 2-3x slower to find for no
 * lower minimum (5.38 MiB when at least 16 columns were kept, 5.31 with any cut, 5.25 as is).
 * The block B: backward ops of the same per-sample kind that read a value of R or B (dy @ w^T
 * among them; xent_grad, whose parts divide by the whole batch's positions, iattr[1]: it was
 * computed whole, and the whole batch's logit gradient held across every part's block, 10 KiB
 * of mlp_deep's, where a part has room for 4 activations of 32 KiB near its minimum), and the
 * parameter-gradient reductions over the batch that read them (sum_to,
 * conv2d_grad_weight, x^T @ dy: a GEMM whose K is the batch);
 * then, back from B, the per-sample backward ops that only B reads (unet_small: the input
 * gradient of the 1x1 output convolution, which reads xent_grad's whole result; computed whole
 * it held 2 MiB and kept the minimum at 8.6 MiB in 4 parts, split 25% = 6.6 MiB is met).
 *
 * The loss: a cross_entropy of R's logits and a batch input's labels runs part by part, each
 * part's sum over its positions continuing the one before in double (xent_sum, xent_sum_acc)
 * and the whole divided once (xent_mean): mgk_xent's additions in its order, so the same bits.
 * No op then reads every part's logits, and a part's backward can follow its own forward
 * (sched_parts.c: mlp at 25% of store-all recomputed 21.5% with every forward first, 0 so).
 *
 * The new graph, in order: the forward values that do not depend on R; for each micro-batch
 * c = 0..k-1 a copy of R on samples [c*N/k, (c+1)*N/k), reading slices of the batch inputs, and
 * its loss sums; the losses summed in parts; the concatenations of the values of R used whole
 * later; the rest of the forward graph; the
 * backward values B needs; for each c a copy of B (values from outside read as slices), where
 * each reduction of chunk c > 0 continues into chunk c-1's result through sum_to_acc,
 * conv2d_grad_weight_acc or matmul_acc (the kernels add in the very order of one call over the
 * whole batch: gemm.c keeps each element one chain over k however K is cut); when the result
 * is a parameter's gradient, problem.c puts the partial sums in that gradient, so they take no
 * workspace (mlp: 784 KiB each for w1);
 * the concatenations of B's values used whole later; the rest of the backward graph.
 *
 * batch_norm: its statistics are over the whole batch, so R runs in stages, each batch_norm
 * ending one: the parts of a stage in turn, then the statistics of each of its batch_norms
 * summed over the parts (bn_stats: sum x, then with the mean sum (x-mean)^2), then in the next
 * stage each part normalised with them (bn_apply). The kernels (stateful_impl.h) sum each
 * channel in double, sample after sample, and the parts carry those double sums (an f64[2,C]
 * value) from one to the next: the very additions of the whole-batch kernel, so the split is
 * bit-identical. The running statistics move once, on the first part's bn_apply of a training
 * step; mg_state_layout orders them by the batch_norm's ordinal (iattr[1]) as in the whole
 * graph. B likewise in stages ending at each batch_norm_grad_input: the sums of dy and dy*xhat
 * over the parts (bn_grad_sums, f64[4,C] with the statistics), each part's input gradient
 * (bn_grad_apply), and the scale's and shift's gradients read off those sums (bn_grad_param:
 * they are the sums batch_norm_grad_scale and _shift make, bit for bit). resnet18_64's whole-
 * batch minimum, 12.0 MiB (45.3% of its 26.5 MiB store-all), is its stem's backward
 * (batch_norm_grad_input: x, dy and dx, three f32[16,64,32,32] of 4 MiB); in 16 parts it is
 * 5.0 MiB with the convolutions' scratch capped (below), under 20%.
 * GEMM scratch: every flat matmul of a graph in k parts gets 1/k of its usual packing buffers
 * (iattr[2], mgk_gemm_capped: smaller blocks, the same bits), and every convolution 1/k of its
 * patch block and packing (iattr[5], mgk_conv2d*_capped). mlp's store-all peak is its first
 * GEMM, 128 KiB of result and 328 KiB of blocks of w1: with both, its minimum went from 456 KiB
 * (store-all) to 47.9 KiB in 16 parts of 8 rows (part_ok: at least MR rows per GEMM).
 * requires: g after autodiff; maintains: g untouched. */
#include "microbatch.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_leaf(mg_op op) { return op == MG_OP_INPUT || op == MG_OP_PARAM || op == MG_OP_CONST; }

/* Whether op n works sample by sample along axis 0; if so, batched[k] says which operands carry
 * the batch axis (the others broadcast over it). Axis 0 is the batch of N samples or a multiple
 * of it, r rows per sample, sample n rows [n*r, (n+1)*r) (a transformer's [B*T, D] rows reshaped
 * from [B, T, D]); a reshape may change r, every other op keeps its batched operands' axis 0. */
static int per_sample(const mg_graph *g, const mg_node *n, int64_t N, char *batched)
{
    const mg_shape *o = &n->type.shape;
    if (o->rank < 1 || o->dim[0] % N || o->dim[0] > INT32_MAX || n->type.dtype == MG_I32) return 0;
    for (int k = 0; k < n->ninputs; k++) batched[k] = 1;
    switch (n->op) {
    case MG_OP_ADD:
    case MG_OP_SUB:
    case MG_OP_MUL:
    case MG_OP_DIV:
    case MG_OP_BROADCAST:
        for (int k = 0; k < n->ninputs; k++) {
            const mg_shape *s = &g->nodes[n->in[k]].type.shape;
            batched[k] = s->rank == o->rank && s->dim[0] == o->dim[0];
            if (!batched[k] && s->rank == o->rank && s->dim[0] != 1) return 0;
        }
        break;
    case MG_OP_EMBEDDING: batched[1] = 0; break; /* each position's row of the table */
    case MG_OP_LAYER_NORM: /* rows: the statistics over the last axis */
    case MG_OP_LAYER_NORM_GRAD_INPUT:
        if (o->rank < 2) return 0;
        batched[1] = 0;
        batched[2] = n->op == MG_OP_LAYER_NORM_GRAD_INPUT;
        break;
    case MG_OP_NEG:
    case MG_OP_RELU:
    case MG_OP_TANH:
    case MG_OP_SIGMOID:
    case MG_OP_EXP:
    case MG_OP_LOG:
    case MG_OP_GELU:
    case MG_OP_MAX_POOL2D:
    case MG_OP_AVG_POOL2D:
    case MG_OP_GLOBAL_AVG_POOL:
    case MG_OP_UPSAMPLE_NEAREST:
    case MG_OP_FLATTEN:
    case MG_OP_RESHAPE:
    case MG_OP_RELU_GRAD:
    case MG_OP_TANH_GRAD:
    case MG_OP_SIGMOID_GRAD:
    case MG_OP_GELU_GRAD:
    case MG_OP_MAX_POOL2D_GRAD:
    case MG_OP_AVG_POOL2D_GRAD:
    case MG_OP_UPSAMPLE_NEAREST_GRAD: break;
    case MG_OP_TRANSPOSE:
        if (n->iattr[0] != 0) return 0;
        break;
    case MG_OP_SOFTMAX:
    case MG_OP_LOG_SOFTMAX:
    case MG_OP_SOFTMAX_GRAD:
    case MG_OP_LOG_SOFTMAX_GRAD:
        if (o->rank - 1 - n->iattr[0] == 0) return 0;
        break;
    case MG_OP_XENT_GRAD: /* each position's gradient reads its logits and label, and the loss's
                           * gradient over the whole batch's positions (emit_chunk sets them) */
        if (o->rank - 1 - n->iattr[0] == 0 || mg_shape_numel(o) / o->dim[o->rank - 1 - n->iattr[0]] > INT32_MAX)
            return 0;
        batched[2] = 0;
        break;
    case MG_OP_CONCAT:
    case MG_OP_SLICE:
    case MG_OP_SLICE_GRAD:
        if (n->iattr[0] == 0) return 0;
        break;
    case MG_OP_CONV2D:
    case MG_OP_CONV_TRANSPOSE2D:
    case MG_OP_CONV2D_GRAD_INPUT: batched[1] = 0; break;
    case MG_OP_MATMUL:
        /* matrices: row n of x @ w (x @ w^T: an input gradient) is row n of x times w; a stack:
         * the stack's axis 0, operands of a lower rank or of extent 1 there broadcast. Each
         * element is one chain over K whatever the rows around it (gemm.c), so bit for bit */
        if (o->rank == 2) {
            if (n->iattr[0]) return 0;
            batched[1] = 0;
            break;
        }
        for (int k = 0; k < 2; k++) {
            const mg_shape *s = &g->nodes[n->in[k]].type.shape;
            batched[k] = s->rank == o->rank && s->dim[0] == o->dim[0];
            if (!batched[k] && s->rank == o->rank && s->dim[0] != 1) return 0;
        }
        break;
    case MG_OP_SUM_TO: /* a sum over other axes only */
        if (g->nodes[n->in[0]].type.shape.rank != o->rank) return 0;
        break;
    default: return 0;
    }
    int reshape = n->op == MG_OP_RESHAPE || n->op == MG_OP_FLATTEN;
    for (int k = 0; k < n->ninputs; k++) {
        const mg_shape *s = &g->nodes[n->in[k]].type.shape;
        if (batched[k] && (s->rank < 1 || (reshape ? s->dim[0] % N != 0 : s->dim[0] != o->dim[0]))) return 0;
    }
    return 1;
}

/* The rows per sample of node v's batched axis 0 (its output's, or the operands' a reduction
 * over the batch reads), 0 where that is not a multiple of the batch. */
static int64_t rows_per_sample(const mg_graph *g, int v, int64_t N)
{
    const mg_node *nd = &g->nodes[v];
    int reduction = (nd->op == MG_OP_MATMUL && nd->iattr[0]) || nd->op == MG_OP_CONV2D_GRAD_WEIGHT;
    int64_t d0 = reduction ? g->nodes[nd->in[0]].type.shape.dim[0] : nd->type.shape.dim[0];
    return d0 % N ? 0 : d0 / N;
}

/* Whether node v runs on parts of `part` samples at the whole batch's speed: a convolution keeps
 * its groups of images per GEMM whole (mgk_conv_batch; any cut gives the same bits); and whether
 * a matrix product on the batch rows keeps at least a micro-tile of rows (MR): fewer waste most
 * of each tile, and the planner, which weighs FLOPs, would pick them for the last bytes (mlp in
 * 128 parts of one row: 21 KiB, but GEMMs of one row, and seconds to plan). */
static int part_ok(const mg_graph *g, int v, int64_t N, int64_t part)
{
    mg_op op = g->nodes[v].op;
    int64_t rows = part * rows_per_sample(g, v, N);
    if (op == MG_OP_MATMUL) return g->nodes[v].type.shape.rank != 2 || rows >= MGK_GEMM_MR;
    if (op != MG_OP_CONV2D && op != MG_OP_CONV_TRANSPOSE2D && op != MG_OP_CONV2D_GRAD_INPUT &&
        op != MG_OP_CONV2D_GRAD_WEIGHT)
        return 1;
    mgk_conv_geom geom = mg_conv_geom(g, v);
    return rows % mgk_conv_batch(&geom) == 0;
}

/* What the rewrite knows of g for k parts. */
typedef struct mb_info {
    const mg_graph *g;
    int64_t N, part;
    char *batch_in; /* INPUT nodes whose axis 0 is the batch */
    char *R;        /* the forward prefix */
    char *dep;      /* forward: depends on R */
    char *B;        /* the per-sample backward block */
    char *acc;      /* parameter-gradient reductions of B, summed micro-batch after micro-batch */
    char *need;     /* backward values outside B that B reads (computed before it) */
    char *after;    /* backward values outside B that read B (computed after it) */
    char *cat;      /* values of R or B that are used whole: concatenated */
    char *xent;     /* cross_entropy of logits of R and labels a batch input: summed part by part */
    char *bat;      /* n * MG_MAX_INPUTS: operand k of node v of R or B carries the batch axis */
    int *bn;        /* batch_norm_grad_* of B or acc: the batch_norm of R it differentiates; else -1 */
    int *level;     /* R and B: how many batch_norms (forward) or batch_norm_grad_inputs (backward)
                     * lie on the way from the batch inputs: the stages of the parts, see emission */
    int nR, cut;    /* cut: the first convolution the parts would cut, or -1 */
} mb_info;

static void info_free(mb_info *m)
{
    free(m->batch_in);
    free(m->R);
    free(m->dep);
    free(m->B);
    free(m->acc);
    free(m->need);
    free(m->after);
    free(m->cat);
    free(m->xent);
    free(m->bat);
    free(m->bn);
    free(m->level);
}

/* The batch_norm of R that backward node v (batch_norm_grad_input, _scale or _shift) differentiates,
 * or -1: the one on the same input and scale; _shift (dy only) has the dy of another of its kind. */
static int bn_of(const mg_graph *g, const mb_info *m, int v)
{
    const mg_node *nd = &g->nodes[v];
    if (nd->op == MG_OP_BATCH_NORM_GRAD_SHIFT) {
        for (int u = g->nforward; u < g->n; u++) {
            const mg_node *o = &g->nodes[u];
            if (o->op == MG_OP_BATCH_NORM_GRAD_INPUT && o->in[2] == nd->in[0]) return bn_of(g, m, u);
            if (o->op == MG_OP_BATCH_NORM_GRAD_SCALE && o->in[1] == nd->in[0]) return bn_of(g, m, u);
        }
        return -1;
    }
    int found = -1, count = 0;
    for (int u = 0; u < g->nforward; u++) {
        const mg_node *f = &g->nodes[u];
        if (f->op != MG_OP_BATCH_NORM || f->in[0] != nd->in[0] || f->fattr != nd->fattr) continue;
        if (nd->op == MG_OP_BATCH_NORM_GRAD_INPUT && f->in[1] != nd->in[1]) continue;
        found = u;
        count++;
    }
    return count == 1 && m->R[found] ? found : -1; /* (two batch_norms of one input: not told apart) */
}

static mg_status analyse(const mg_graph *g, int64_t k, mb_info *m, mg_diag *why)
{
    memset(m, 0, sizeof *m);
    m->g = g;
    m->cut = -1;
    int n = g->n, nf = g->nforward;
    mg_loc none = {0};
    m->batch_in = mg_xcalloc((size_t)n, 1);
    m->R = mg_xcalloc((size_t)n, 1);
    m->dep = mg_xcalloc((size_t)n, 1);
    m->B = mg_xcalloc((size_t)n, 1);
    m->acc = mg_xcalloc((size_t)n, 1);
    m->need = mg_xcalloc((size_t)n, 1);
    m->cat = mg_xcalloc((size_t)n, 1);
    m->xent = mg_xcalloc((size_t)n, 1);
    m->bat = mg_xcalloc((size_t)n * MG_MAX_INPUTS, 1);
    m->bn = mg_xcalloc((size_t)n, sizeof *m->bn);
    m->level = mg_xcalloc((size_t)n, sizeof *m->level);
    for (int v = 0; v < n; v++) m->bn[v] = -1;
    if (!g->param_grads || g->loss < 0) return mg_diag_set(why, none, "micro-batching needs the joint graph of a training step");
    const mg_node *first = mg_microbatch_batch_input(g);
    if (!first) return mg_diag_set(why, none, "the model has no input with a batch axis to split");
    m->N = first->type.shape.dim[0];
    if (m->N < 2) /* (a user whose first input is, say, a [1, D] table was told there is no batch) */
        return mg_diag_set(why, first->loc, "not split into micro-batches: the batch is axis 0 of the first input, and "
                           "'%s' has %lld there (the batch inputs come first, with two or more samples)", first->name ? first->name : "?",
                           (long long)m->N);
    if (m->N > INT32_MAX) /* the parts are slices of the batch inputs, whose bounds are int attributes
                            * (a batch of 10^12 made slice [1783793664:-727379968], an error at the input) */
        return mg_diag_set(why, first->loc, "not split into micro-batches: the batch of %lld samples is more than a "
                           "slice addresses (2^31 - 1)", (long long)m->N);
    if (k < 2 || m->N % k)
        return mg_diag_set(why, none, "cannot split the batch of %lld into %lld micro-batches: %lld does not divide it",
                           (long long)m->N, (long long)k, (long long)k);
    m->part = m->N / k;
    for (int i = 0; i < g->ninputs; i++) {
        const mg_node *in = &g->nodes[g->inputs[i]];
        if (in->type.shape.rank >= 1 && in->type.shape.dim[0] == m->N) m->batch_in[g->inputs[i]] = 1;
    }
    for (int v = 0; v < n; v++)
        if (g->nodes[v].op == MG_OP_DROPOUT) /* its masks are keyed by node and element */
            return mg_diag_set(why, g->nodes[v].loc, "not split into micro-batches: the model has dropout, whose masks "
                               "are keyed by node and element");
    /* R, in order: a per-sample op whose batched operands are in R or batch inputs (one at least)
     * and whose other operands do not depend on R */
    int stop = -1;
    for (int v = 0; v < nf; v++) {
        const mg_node *nd = &g->nodes[v];
        if (is_leaf(nd->op)) continue;
        char *bt = &m->bat[(size_t)v * MG_MAX_INPUTS];
        int reads = 0, ok = per_sample(g, nd, m->N, bt), isbn = nd->op == MG_OP_BATCH_NORM, lv = 0;
        if (isbn) { /* its statistics over the parts in turn (the sums carried), then each part */
            ok = nd->type.shape.dim[0] == m->N;
            bt[0] = 1, bt[1] = bt[2] = 0;
        }
        if (ok && !part_ok(g, v, m->N, m->part)) {
            ok = 0;
            if (m->cut < 0) m->cut = v;
        }
        for (int i = 0; i < nd->ninputs; i++) {
            int u = nd->in[i];
            m->dep[v] |= m->dep[u];
            reads |= m->R[u] || m->batch_in[u];
            if (bt[i] ? !(m->R[u] || m->batch_in[u]) : m->dep[u]) ok = 0;
            if (m->R[u]) {
                int l = m->level[u] + (g->nodes[u].op == MG_OP_BATCH_NORM);
                if (l > lv) lv = l;
            }
        }
        if (ok && reads) {
            m->R[v] = m->dep[v] = 1;
            m->level[v] = lv;
            m->nR++;
        } else if (reads && stop < 0) {
            stop = v;
        }
    }
    if (!m->nR) {
        if (stop < 0) return mg_diag_set(why, none, "no op reads the batch inputs sample by sample");
        if (stop == m->cut && g->nodes[stop].op == MG_OP_MATMUL)
            return mg_diag_set(why, g->nodes[stop].loc,
                               "cannot split the batch of %lld into %lld micro-batches: this matmul would run on "
                               "parts of %lld row%s, fewer than a GEMM micro-tile (%d)",
                               (long long)m->N, (long long)k, (long long)m->part, m->part == 1 ? "" : "s",
                               (int)MGK_GEMM_MR);
        if (stop == m->cut) {
            mgk_conv_geom geom = mg_conv_geom(g, stop);
            return mg_diag_set(why, g->nodes[stop].loc,
                               "cannot split the batch of %lld into %lld micro-batches: this %s takes %lld images per "
                               "GEMM (%lldx%lld outputs each), and parts of %lld would cut those groups",
                               (long long)m->N, (long long)k, mg_ops[g->nodes[stop].op].name,
                               (long long)mgk_conv_batch(&geom), (long long)geom.OH, (long long)geom.OW,
                               (long long)m->part);
        }
        return mg_diag_set(why, g->nodes[stop].loc,
                           "not split into micro-batches: the first op on the batch, %s, is not one the split runs "
                           "in parts (convolutions, matmul by the batch rows, pooling, batch_norm and elementwise "
                           "ops are)",
                           mg_ops[g->nodes[stop].op].name);
    }
    /* the losses summed part by part (above): classes off the batch axis, labels a batch input */
    for (int v = 0; v < nf; v++) {
        const mg_node *nd = &g->nodes[v];
        if (nd->op != MG_OP_CROSS_ENTROPY || !m->R[nd->in[0]] || !m->batch_in[nd->in[1]]) continue;
        const mg_shape *x = &g->nodes[nd->in[0]].type.shape;
        int ax = x->rank - 1 - nd->iattr[0];
        m->xent[v] = ax != 0 && x->dim[0] == m->N && mg_shape_numel(x) / x->dim[ax] <= INT32_MAX;
    }
    /* B and the reductions, in order */
    char *ps = mg_xcalloc((size_t)n, 1); /* per-sample backward ops (bat holds their batched operands) */
    for (int v = nf; v < n; v++) {
        const mg_node *nd = &g->nodes[v];
        char *bt = &m->bat[(size_t)v * MG_MAX_INPUTS];
        int reads = 0;
        if (is_leaf(nd->op)) continue;
        if (nd->op == MG_OP_BATCH_NORM_GRAD_INPUT || nd->op == MG_OP_BATCH_NORM_GRAD_SCALE ||
            nd->op == MG_OP_BATCH_NORM_GRAD_SHIFT) {
            /* split with the batch_norm of R they differentiate: input gradients part by part after
             * the sums over the parts, the scale's and shift's gradients from those sums */
            memset(bt, 0, MG_MAX_INPUTS);
            m->bn[v] = bn_of(g, m, v);
            if (m->bn[v] < 0) continue;
            if (nd->op == MG_OP_BATCH_NORM_GRAD_INPUT) bt[0] = bt[2] = 1;
            else bt[0] = 1, bt[1] = nd->op == MG_OP_BATCH_NORM_GRAD_SCALE;
            for (int i = 0; i < nd->ninputs; i++) reads |= bt[i] && (m->R[nd->in[i]] || m->B[nd->in[i]]);
            if (!reads) m->bn[v] = -1;
            else if (nd->op == MG_OP_BATCH_NORM_GRAD_INPUT) m->B[v] = 1;
            else m->acc[v] = 1;
            continue;
        }
        if (per_sample(g, nd, m->N, bt) && part_ok(g, v, m->N, m->part)) {
            for (int k = 0; k < nd->ninputs; k++) reads |= bt[k] && (m->R[nd->in[k]] || m->B[nd->in[k]]);
            m->B[v] = (char)reads;
            ps[v] = 1;
            continue;
        }
        memset(bt, 0, MG_MAX_INPUTS);
        if (!part_ok(g, v, m->N, m->part)) continue;
        if (nd->op == MG_OP_SUM_TO) {
            /* the batch axis summed; the output keeps another axis of extent > 1, so the kernel's
             * innermost run of summed elements never reaches across samples (mgk_sum_to) */
            const mg_shape *s = &g->nodes[nd->in[0]].type.shape;
            bt[0] = s->rank >= 1 && s->dim[0] == m->N && mg_shape_numel(&nd->type.shape) > 1;
        } else if (nd->op == MG_OP_CONV2D_GRAD_WEIGHT || nd->op == MG_OP_EMBEDDING_GRAD ||
                   (nd->op == MG_OP_LAYER_NORM_GRAD_SCALE && g->nodes[nd->in[0]].type.shape.rank >= 2)) {
            bt[0] = bt[1] = 1; /* (sums over the positions, rows in order: the parts continue them) */
        } else if (nd->op == MG_OP_MATMUL && nd->iattr[0] && !nd->iattr[1] && nd->type.shape.rank == 2 &&
                   g->nodes[nd->in[0]].type.shape.rank == 2 && g->nodes[nd->in[1]].type.shape.rank == 2) {
            bt[0] = bt[1] = 1; /* a weight gradient x^T @ dy: GEMM K is the batch, cut at the parts */
        }
        int64_t whole_bytes = 0; /* what R and B would have to hold whole for it */
        for (int k = 0; k < nd->ninputs; k++) {
            reads |= bt[k] && (m->R[nd->in[k]] || m->B[nd->in[k]]);
            if (bt[k] && (m->R[nd->in[k]] || m->B[nd->in[k]])) whole_bytes += (int64_t)mg_node_bytes(g, nd->in[k]);
            if (bt[k] && g->nodes[nd->in[k]].type.shape.dim[0] % m->N) bt[0] = bt[1] = reads = 0;
        }
        /* a weight gradient that is a parameter's gradient and nothing else has its partial sums
         * written into the caller's gradient, each adding to the one before in place (problem.c);
         * otherwise, when the partial sums, two at a time (the one before and the next), take
         * more workspace than those values whole, it is made whole from them after the parts */
        int in_place = 0, other_use = 0;
        for (int i = 0; i < g->nparams; i++) in_place |= g->param_grads[i] == v;
        for (int i = 0; i < g->noutputs; i++) other_use |= g->outputs[i].node == v;
        for (int u = v + 1; u < n; u++)
            for (int k = 0; k < g->nodes[u].ninputs; k++) other_use |= g->nodes[u].in[k] == v;
        in_place &= !other_use && v != g->loss;
        if (reads && !in_place && 2 * (int64_t)mg_node_bytes(g, v) > whole_bytes) {
            /* (an embedding table tied to a weight; a shared convolution's weight on 1x1 maps) */
            memset(bt, 0, MG_MAX_INPUTS);
            reads = 0;
        }
        m->acc[v] = (char)reads;
    }
    /* B grows back over the per-sample backward ops that only B reads, each sample by sample (the
     * input gradient of a last per-sample layer whose dy comes from an op that mixes the samples:
     * unet_small's conv2d_grad_input of the 1x1 output convolution, 2 MiB whole otherwise). Their
     * batched operands from outside are read as slices, like B's. */
    int *uses = mg_xcalloc((size_t)n, sizeof *uses), *inb = mg_xcalloc((size_t)n, sizeof *inb);
    for (int v = 0; v < n; v++)
        for (int k = 0; k < g->nodes[v].ninputs; k++) {
            int u = g->nodes[v].in[k];
            uses[u]++;
            inb[u] += (m->B[v] || m->acc[v]) && m->bat[(size_t)v * MG_MAX_INPUTS + k];
        }
    for (int i = 0; i < g->noutputs; i++) uses[g->outputs[i].node]++;
    for (int i = 0; i < g->nparams; i++)
        if (g->param_grads[i] >= 0) uses[g->param_grads[i]]++;
    for (int v = n - 1; v >= nf; v--) {
        const mg_node *nd = &g->nodes[v];
        if (!ps[v] || m->B[v] || !uses[v] || inb[v] < uses[v]) continue;
        m->B[v] = 1;
        for (int k = 0; k < nd->ninputs; k++)
            inb[nd->in[k]] += m->bat[(size_t)v * MG_MAX_INPUTS + k];
    }
    free(uses);
    free(inb);
    free(ps);
    /* the backward's stages: past each batch_norm_grad_input of B (its sums over every part first) */
    for (int v = nf; v < n; v++) {
        if (!(m->B[v] || m->acc[v])) continue;
        for (int i = 0; i < g->nodes[v].ninputs; i++) {
            int u = g->nodes[v].in[i];
            if (!m->B[u]) continue;
            int l = m->level[u] + (g->nodes[u].op == MG_OP_BATCH_NORM_GRAD_INPUT);
            if (l > m->level[v]) m->level[v] = l;
        }
    }
    /* which values are used whole (concatenated), and the order constraints of the backward */
    char *after = m->after = mg_xcalloc((size_t)n, 1);
    mg_status st = MG_OK;
    for (int v = 0; v < n && !st; v++) {
        const mg_node *nd = &g->nodes[v];
        int inblock = m->R[v] || m->B[v] || m->acc[v];
        for (int k = 0; k < nd->ninputs; k++) {
            int u = nd->in[k];
            if (m->acc[u] && (m->B[v] || m->acc[v]))
                st = mg_diag_set(why, nd->loc, "not split into micro-batches: a parameter gradient of the per-sample "
                                 "layers is read inside them");
            if ((m->R[u] && !(m->R[v] || m->B[v] || m->acc[v] || m->xent[v])) || (m->B[u] && !(m->B[v] || m->acc[v])))
                m->cat[u] = 1;
            if (m->R[u] && (m->B[v] || m->acc[v]) && !m->bat[(size_t)v * MG_MAX_INPUTS + k])
                m->cat[u] = 1; /* read whole by a block op (broadcast): concatenated in the forward part */
            if (m->B[u] && (m->B[v] || m->acc[v]) && !m->bat[(size_t)v * MG_MAX_INPUTS + k] && !st)
                st = mg_diag_set(why, nd->loc, "not split into micro-batches: a per-sample gradient is read whole by "
                                 "another per-sample op");
            if (v >= nf && !inblock && (m->B[u] || m->acc[u] || after[u])) after[v] = 1;
        }
    }
    for (int i = 0; i < g->noutputs; i++)
        if (m->R[g->outputs[i].node] || m->B[g->outputs[i].node]) m->cat[g->outputs[i].node] = 1;
    for (int i = 0; i < g->nparams; i++)
        if (g->param_grads[i] >= 0 && m->B[g->param_grads[i]]) m->cat[g->param_grads[i]] = 1;
    for (int v = n - 1; v >= nf && !st; v--) {
        const mg_node *nd = &g->nodes[v];
        if (!(m->B[v] || m->acc[v] || m->need[v])) continue;
        for (int k = 0; k < nd->ninputs; k++) {
            int u = nd->in[k];
            if (u >= nf && !m->B[u] && !m->acc[u]) m->need[u] = 1;
        }
    }
    for (int v = nf; v < n && !st; v++)
        if (m->need[v] && after[v])
            st = mg_diag_set(why, g->nodes[v].loc, "not split into micro-batches: the backward of the per-sample layers "
                             "both feeds and reads this %s", mg_ops[g->nodes[v].op].name);
    return st;
}

int mg_microbatch_counts(const mg_graph *g, int *ks, int max, mg_diag *why)
{
    mb_info m;
    int nk = 0;
    mg_status st = analyse(g, 2, &m, why); /* (why keeps the reason 2 parts are refused) */
    int64_t N = m.N;
    info_free(&m);
    if (!st && max > 0) ks[nk++] = 2;
    /* only divisors of N can be counts (analyse refuses the rest), so only they are analysed: a
     * batch of 10^6 took 10^6 analyses (1.2 s, most of an absurd model's refusal) and one of
     * 10^12, the largest dimension, would not have ended. The divisors come in pairs (d, N/d)
     * with d <= sqrt(N): the small ones ascending, then the large ones descending by d. */
    int64_t root = (int64_t)sqrt((double)N);
    while (root > 1 && root > N / root) root--;
    while (root + 1 <= N / (root + 1)) root++;
    /* an odd batch refuses 2 parts only for not dividing it: why then takes the reason of its
     * smallest divisor, which says more (a prime batch of 7 with a matmul: parts of 1 row) */
    int odd = st && N >= 2 && N % 2, tried = 0;
    for (int64_t d = 3; d <= root && nk < max; d++) {
        if (N % d) continue;
        mg_diag ignore = {0};
        if (!analyse(g, d, &m, odd && !tried++ ? why : &ignore)) ks[nk++] = (int)d;
        info_free(&m);
    }
    for (int64_t d = root; d >= 1 && nk < max; d--) {
        int64_t k = N / d;
        if (N % d || k <= root || k < 3 || k > INT32_MAX) continue;
        mg_diag ignore = {0};
        if (!analyse(g, k, &m, odd && !tried++ ? why : &ignore)) ks[nk++] = (int)k;
        info_free(&m);
    }
    if (!nk && !st) mg_diag_set(why, (mg_loc){0}, "no micro-batch count splits the batch of %lld", (long long)N);
    return nk;
}

/* The rewrite's state: new ids of g's values whole (map: values outside R and B, cat: the
 * concatenations, acc: the reductions' last partial sums) and per micro-batch (cl: copies of
 * R and B, and slices of values from outside). */
typedef struct mb_build {
    const mb_info *m;
    mg_graph *ng;
    int k;
    int64_t part;
    int *map, *cat, *cl, *sl;
    int *st, *gs, *gs_part, *ord; /* per batch_norm of R: its statistics so far, its backward's sums
                                   * so far and the last part they cover, its ordinal in g; st per
                                   * cross_entropy summed in parts: its sum so far */
    mg_diag *d;
    int failed;
} mb_build;

static int add_like(mb_build *b, const mg_node *t, mg_op op, int nin, const int *in, int64_t dim0, const char *name,
                    mg_phase ph)
{
    if (b->failed) return -1;
    mg_graph *ng = b->ng;
    int id = mg_graph_add_like(ng, t, op, nin, in, name);
    mg_node *n = &ng->nodes[id];
    n->phase = ph;
    if (dim0 > 0) n->type.shape.dim[0] = dim0;
    if (!is_leaf(op) && mg_infer_type(ng, id, b->d)) {
        b->failed = 1;
        return -1;
    }
    return id;
}

/* id, a value of micro-batch c alone (mg_node.micro_batch). */
static int of_part(mb_build *b, int id, int c)
{
    if (id >= 0) b->ng->nodes[id].micro_batch = c + 1;
    return id;
}

static const char *chunk_name(const mg_node *t, int c, char *buf, size_t len)
{
    if (!t->name) return NULL;
    snprintf(buf, len, "%s@mb%d", t->name, c);
    return buf;
}

/* g's value u whole in the new graph. */
static int whole(mb_build *b, int u)
{
    const mb_info *m = b->m;
    int id = m->R[u] || m->B[u] ? b->cat[u] : b->map[u];
    if (id < 0 && !b->failed) {
        b->failed = 1;
        mg_diag_set(b->d, b->m->g->nodes[u].loc, "internal error: micro-batching lost value %%%d", u);
    }
    return id;
}

/* Micro-batch c of g's value u: its copy, or a slice of it made now (and reused). */
static int chunk(mb_build *b, int c, int u, mg_phase ph)
{
    int n = b->m->g->n;
    if (b->cl[c * n + u] >= 0) return b->cl[c * n + u];
    if (b->sl[c * n + u] >= 0) return b->sl[c * n + u];
    const mg_node *t = &b->m->g->nodes[u];
    int src = whole(b, u);
    if (src < 0) return -1;
    char nm[300];
    mg_node s = *t;
    memset(s.iattr, 0, sizeof s.iattr);
    s.iattr[0] = 0;
    int64_t rows = b->part * (t->type.shape.dim[0] / b->m->N); /* (a multiple of the batch: per_sample) */
    s.iattr[1] = (int)(c * rows);
    s.iattr[2] = (int)((c + 1) * rows);
    s.iattr[3] = 1;
    s.fattr = s.fattr2 = 0;
    s.index = -1;
    int id = add_like(b, &s, MG_OP_SLICE, 1, &src, 0, chunk_name(t, c, nm, sizeof nm), ph);
    return b->sl[c * n + u] = of_part(b, id, c);
}

/* Copy of node v of g for micro-batch c (R or B), or its partial sum (a reduction). */
static void emit_chunk(mb_build *b, int c, int v, mg_phase ph)
{
    const mb_info *m = b->m;
    const mg_graph *g = m->g;
    const mg_node *t = &g->nodes[v];
    int in[MG_MAX_INPUTS + 1];
    for (int k = 0; k < t->ninputs; k++)
        in[k] = m->bat[(size_t)v * MG_MAX_INPUTS + k] ? chunk(b, c, t->in[k], ph) : whole(b, t->in[k]);
    char nm[300];
    if (!m->acc[v]) {
        mg_node s = *t;
        if (t->op == MG_OP_XENT_GRAD && !s.iattr[1]) /* the mean stays over the whole batch */
            s.iattr[1] = (int)(mg_shape_numel(&t->type.shape) / t->type.shape.dim[t->type.shape.rank - 1 - t->iattr[0]]);
        int id = add_like(b, &s, t->op, t->ninputs, in, b->part * (t->type.shape.dim[0] / m->N),
                          chunk_name(t, c, nm, sizeof nm), ph);
        b->cl[c * g->n + v] = of_part(b, id, c);
        return;
    }
    const char *name = c == b->k - 1 ? t->name : chunk_name(t, c, nm, sizeof nm);
    int id;
    if (c == 0) {
        id = of_part(b, add_like(b, t, t->op, t->ninputs, in, 0, name, ph), c);
    } else {
        in[t->ninputs] = b->map[v]; /* the partial sum of the micro-batches before */
        mg_op acc = t->op == MG_OP_SUM_TO                ? MG_OP_SUM_TO_ACC
                    : t->op == MG_OP_MATMUL                ? MG_OP_MATMUL_ACC
                    : t->op == MG_OP_EMBEDDING_GRAD        ? MG_OP_EMBEDDING_GRAD_ACC
                    : t->op == MG_OP_LAYER_NORM_GRAD_SCALE ? MG_OP_LAYER_NORM_GRAD_SCALE_ACC
                                                           : MG_OP_CONV2D_GRAD_WEIGHT_ACC;
        id = of_part(b, add_like(b, t, acc, t->ninputs + 1, in, 0, name, ph), c);
    }
    b->map[v] = id;
}

/* The concatenation of the copies of v along axis 0 (in chains of at most MG_MAX_INPUTS). */
static void emit_cat(mb_build *b, int v, mg_phase ph)
{
    const mg_graph *g = b->m->g;
    const mg_node *t = &g->nodes[v];
    mg_node s = *t;
    memset(s.iattr, 0, sizeof s.iattr);
    int at = 0, prev = -1;
    while (at < b->k && !b->failed) {
        int in[MG_MAX_INPUTS], nin = 0;
        if (prev >= 0) in[nin++] = prev;
        while (nin < MG_MAX_INPUTS && at < b->k) in[nin++] = b->cl[at++ * g->n + v];
        prev = add_like(b, &s, MG_OP_CONCAT, nin, in, 0, at == b->k ? t->name : NULL, ph);
    }
    b->cat[v] = prev;
}

static void emit_whole(mb_build *b, int v, mg_phase ph)
{
    const mg_node *t = &b->m->g->nodes[v];
    int in[MG_MAX_INPUTS];
    for (int k = 0; k < t->ninputs; k++) in[k] = whole(b, t->in[k]);
    b->map[v] = add_like(b, t, t->op, t->ninputs, in, 0, t->name, ph);
    if (t->op == MG_OP_BATCH_NORM && b->map[v] >= 0) b->ng->nodes[b->map[v]].iattr[1] = b->ord[v]; /* mg_state_layout */
}

/* batch_norm v of R on the parts: pass 0 adds part c's sum to its statistics, pass 1 its squared
 * deviations (b->st: the chain so far, a forward value of f64[2,C]). */
static void emit_bn_stats(mb_build *b, int c, int v, int pass)
{
    const mg_node *t = &b->m->g->nodes[v];
    mg_node s = *t;
    memset(s.iattr, 0, sizeof s.iattr);
    s.iattr[0] = (int)b->m->N;
    s.iattr[1] = pass;
    s.index = -1;
    int in[2] = {chunk(b, c, t->in[0], MG_PHASE_FORWARD), b->st[v]};
    int first = pass == 0 && c == 0;
    int id = add_like(b, &s, first ? MG_OP_BN_STATS : MG_OP_BN_STATS_ACC, first ? 1 : 2, in, 0, NULL, MG_PHASE_FORWARD);
    b->st[v] = of_part(b, id, c);
}

/* Part c of cross_entropy v's sum over the positions (b->st: the sum so far, an f64 scalar). */
static void emit_xent_sum(mb_build *b, int c, int v)
{
    const mg_node *t = &b->m->g->nodes[v];
    mg_node s = *t;
    s.index = -1;
    int in[3] = {chunk(b, c, t->in[0], MG_PHASE_FORWARD), chunk(b, c, t->in[1], MG_PHASE_FORWARD), b->st[v]};
    int id = add_like(b, &s, c ? MG_OP_XENT_SUM_ACC : MG_OP_XENT_SUM, c ? 3 : 2, in, 0, NULL, MG_PHASE_FORWARD);
    b->st[v] = of_part(b, id, c);
}

/* cross_entropy v whole: the sum over every part over the whole batch's positions. */
static void emit_xent_mean(mb_build *b, int v)
{
    const mg_node *t = &b->m->g->nodes[v];
    const mg_shape *x = &b->m->g->nodes[t->in[0]].type.shape;
    mg_node s = *t;
    memset(s.iattr, 0, sizeof s.iattr);
    s.iattr[1] = (int)(mg_shape_numel(x) / x->dim[x->rank - 1 - t->iattr[0]]);
    s.index = -1;
    b->map[v] = add_like(b, &s, MG_OP_XENT_MEAN, 1, &b->st[v], 0, t->name, MG_PHASE_FORWARD);
}

/* Part c of batch_norm v of R normalised with the batch's statistics. */
static void emit_bn_apply(mb_build *b, int c, int v)
{
    const mg_node *t = &b->m->g->nodes[v];
    mg_node s = *t;
    memset(s.iattr, 0, sizeof s.iattr);
    s.iattr[0] = (int)b->m->N;
    s.iattr[1] = b->ord[v];
    s.iattr[2] = c;
    int in[4] = {chunk(b, c, t->in[0], MG_PHASE_FORWARD), whole(b, t->in[1]), whole(b, t->in[2]), b->st[v]};
    char nm[300];
    b->cl[c * b->m->g->n + v] = of_part(
        b, add_like(b, &s, MG_OP_BN_APPLY, 4, in, b->part, chunk_name(t, c, nm, sizeof nm), MG_PHASE_FORWARD), c);
}

/* The backward sums of the batch_norm that backward node v differentiates, over part c (once per
 * part, whichever of its gradients comes first). */
static void emit_bn_grad_sums(mb_build *b, int c, int v)
{
    const mg_graph *g = b->m->g;
    const mg_node *t = &g->nodes[v];
    int f = b->m->bn[v];
    if (b->gs_part[f] >= c) return;
    int dy = t->op == MG_OP_BATCH_NORM_GRAD_INPUT ? t->in[2] : t->op == MG_OP_BATCH_NORM_GRAD_SCALE ? t->in[1] : t->in[0];
    mg_node s = *t;
    memset(s.iattr, 0, sizeof s.iattr);
    s.iattr[0] = (int)b->m->N;
    s.fattr = g->nodes[f].fattr;
    s.index = -1;
    int in[3] = {chunk(b, c, g->nodes[f].in[0], MG_PHASE_BACKWARD), chunk(b, c, dy, MG_PHASE_BACKWARD),
                 c == 0 ? b->st[f] : b->gs[f]};
    b->gs[f] = of_part(b, add_like(b, &s, MG_OP_BN_GRAD_SUMS, 3, in, 0, NULL, MG_PHASE_BACKWARD), c);
    b->gs_part[f] = c;
}

/* Part c of batch_norm_grad_input v, from the sums over every part. */
static void emit_bn_grad_apply(mb_build *b, int c, int v)
{
    const mg_node *t = &b->m->g->nodes[v];
    mg_node s = *t;
    memset(s.iattr, 0, sizeof s.iattr);
    s.iattr[0] = (int)b->m->N;
    int in[4] = {chunk(b, c, t->in[0], MG_PHASE_BACKWARD), whole(b, t->in[1]), chunk(b, c, t->in[2], MG_PHASE_BACKWARD),
                 b->gs[b->m->bn[v]]};
    char nm[300];
    b->cl[c * b->m->g->n + v] = of_part(
        b, add_like(b, &s, MG_OP_BN_GRAD_APPLY, 4, in, b->part, chunk_name(t, c, nm, sizeof nm), MG_PHASE_BACKWARD), c);
}

/* batch_norm_grad_scale or _shift v: a row of the sums over every part. */
static void emit_bn_grad_param(mb_build *b, int v)
{
    const mg_node *t = &b->m->g->nodes[v];
    mg_node s = *t;
    memset(s.iattr, 0, sizeof s.iattr);
    s.iattr[1] = t->op == MG_OP_BATCH_NORM_GRAD_SCALE ? 3 : 2;
    int in[1] = {b->gs[b->m->bn[v]]};
    b->map[v] = add_like(b, &s, MG_OP_BN_GRAD_PARAM, 1, in, 0, t->name, MG_PHASE_BACKWARD);
}

/* The convolution kernel an op runs (MGK_CONV_FWD, _DX, _DW), or -1: not a convolution. */
static int conv_kind(mg_op op)
{
    return op == MG_OP_CONV2D ? MGK_CONV_FWD
         : op == MG_OP_CONV2D_GRAD_INPUT || op == MG_OP_CONV_TRANSPOSE2D ? MGK_CONV_DX
         : op == MG_OP_CONV2D_GRAD_WEIGHT || op == MG_OP_CONV2D_GRAD_WEIGHT_ACC ? MGK_CONV_DW : -1;
}

mg_status mg_microbatch_ex(const mg_graph *g, int k, int cap_convs, mg_graph **out, mg_diag *d)
{
    *out = NULL;
    mb_info m;
    if (analyse(g, k, &m, d)) {
        info_free(&m);
        return MG_ERR;
    }
    int n = g->n, nf = g->nforward;
    mb_build b = {&m, mg_graph_new(), k, m.N / k, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, d, 0};
    b.st = mg_xcalloc((size_t)n, sizeof *b.st);
    b.gs = mg_xcalloc((size_t)n, sizeof *b.gs);
    b.gs_part = mg_xcalloc((size_t)n, sizeof *b.gs_part);
    b.ord = mg_xcalloc((size_t)n, sizeof *b.ord);
    for (int v = 0, o = 0; v < n; v++) {
        b.gs_part[v] = -1;
        if (g->nodes[v].op == MG_OP_BATCH_NORM) b.ord[v] = o++;
    }
    b.map = malloc((size_t)n * sizeof *b.map);
    b.cat = malloc((size_t)n * sizeof *b.cat);
    b.cl = malloc((size_t)n * (size_t)k * sizeof *b.cl);
    b.sl = malloc((size_t)n * (size_t)k * sizeof *b.sl);
    if (!b.map || !b.cat || !b.cl || !b.sl) abort();
    for (int i = 0; i < n; i++) b.map[i] = b.cat[i] = -1;
    for (int i = 0; i < n * k; i++) b.cl[i] = b.sl[i] = -1;
    mg_graph *ng = b.ng;
    ng->model_name = mg_graph_intern(ng, g->model_name);
    /* forward: what R does not depend on, R per micro-batch, R's values used whole, the rest */
    for (int v = 0; v < nf; v++)
        if (!m.dep[v]) emit_whole(&b, v, MG_PHASE_FORWARD);
    /* R stage by stage: a batch_norm's statistics over every part end a stage, its parts
     * normalised start the next */
    int stages = 0;
    for (int v = 0; v < nf; v++)
        if (m.R[v] && m.level[v] + (g->nodes[v].op == MG_OP_BATCH_NORM) > stages)
            stages = m.level[v] + (g->nodes[v].op == MG_OP_BATCH_NORM);
    for (int s = 0; s <= stages; s++) {
        for (int c = 0; c < k; c++) {
            for (int v = 0; v < nf; v++)
                if (m.R[v] && g->nodes[v].op == MG_OP_BATCH_NORM && m.level[v] + 1 == s) emit_bn_apply(&b, c, v);
            for (int v = 0; v < nf; v++) {
                if (!m.R[v] || m.level[v] != s) continue;
                if (g->nodes[v].op == MG_OP_BATCH_NORM) emit_bn_stats(&b, c, v, 0);
                else emit_chunk(&b, c, v, MG_PHASE_FORWARD);
            }
            for (int v = 0; v < nf; v++) /* the loss's sums once the part's logits are made */
                if (m.xent[v]) {
                    int u = g->nodes[v].in[0];
                    if (m.level[u] + (g->nodes[u].op == MG_OP_BATCH_NORM) == s) emit_xent_sum(&b, c, v);
                }
        }
        for (int v = 0; v < nf; v++)
            if (m.R[v] && g->nodes[v].op == MG_OP_BATCH_NORM && m.level[v] == s)
                for (int c = 0; c < k; c++) emit_bn_stats(&b, c, v, 1);
    }
    for (int v = 0; v < nf; v++)
        if (m.xent[v]) emit_xent_mean(&b, v);
    for (int v = 0; v < nf; v++)
        if (m.R[v] && m.cat[v]) emit_cat(&b, v, MG_PHASE_FORWARD);
    for (int v = 0; v < nf; v++)
        if (m.dep[v] && !m.R[v] && !m.xent[v]) emit_whole(&b, v, MG_PHASE_FORWARD);
    ng->nforward = ng->n;
    /* backward: what B reads, B and the reductions per micro-batch, B's values used whole, the rest */
    int first = n; /* the first op of the block: what does not depend on it keeps its place before it */
    for (int v = n - 1; v >= nf; v--)
        if (m.B[v] || m.acc[v]) first = v;
    for (int v = nf; v < n; v++)
        if (m.need[v] || (v < first && !m.after[v])) emit_whole(&b, v, MG_PHASE_BACKWARD), m.need[v] = 1;
    stages = 0;
    for (int v = nf; v < n; v++)
        if ((m.B[v] || m.acc[v]) && m.level[v] + (g->nodes[v].op == MG_OP_BATCH_NORM_GRAD_INPUT) > stages)
            stages = m.level[v] + (g->nodes[v].op == MG_OP_BATCH_NORM_GRAD_INPUT);
    for (int s = 0; s <= stages; s++) {
        for (int c = 0; c < k; c++) {
            for (int v = nf; v < n; v++)
                if (m.B[v] && g->nodes[v].op == MG_OP_BATCH_NORM_GRAD_INPUT && m.level[v] + 1 == s)
                    emit_bn_grad_apply(&b, c, v);
            for (int v = nf; v < n; v++) {
                if (!(m.B[v] || m.acc[v]) || m.level[v] != s) continue;
                if (m.bn[v] >= 0) emit_bn_grad_sums(&b, c, v);
                else emit_chunk(&b, c, v, MG_PHASE_BACKWARD);
            }
        }
        for (int v = nf; v < n; v++)
            if (m.acc[v] && m.bn[v] >= 0 && m.level[v] == s) emit_bn_grad_param(&b, v);
    }
    for (int v = nf; v < n; v++)
        if (m.B[v] && m.cat[v]) emit_cat(&b, v, MG_PHASE_BACKWARD);
    for (int v = nf; v < n; v++)
        if (!m.need[v] && !m.B[v] && !m.acc[v]) emit_whole(&b, v, MG_PHASE_BACKWARD);
    /* the graph's lists */
    ng->ninputs = g->ninputs;
    ng->nparams = g->nparams;
    ng->noutputs = g->noutputs;
    ng->inputs = malloc((size_t)(g->ninputs ? g->ninputs : 1) * sizeof *ng->inputs);
    ng->params = malloc((size_t)(g->nparams ? g->nparams : 1) * sizeof *ng->params);
    ng->param_grads = malloc((size_t)(g->nparams ? g->nparams : 1) * sizeof *ng->param_grads);
    ng->outputs = malloc((size_t)(g->noutputs ? g->noutputs : 1) * sizeof *ng->outputs);
    if (!ng->inputs || !ng->params || !ng->param_grads || !ng->outputs) abort();
    for (int i = 0; i < g->ninputs; i++) ng->inputs[i] = b.map[g->inputs[i]];
    for (int i = 0; i < g->nparams; i++) {
        ng->params[i] = b.map[g->params[i]];
        ng->param_grads[i] = g->param_grads[i] < 0 ? -1 : whole(&b, g->param_grads[i]);
    }
    for (int i = 0; i < g->noutputs; i++) {
        ng->outputs[i].name = mg_graph_intern(ng, g->outputs[i].name);
        ng->outputs[i].node = whole(&b, g->outputs[i].node);
    }
    ng->loss = whole(&b, g->loss);
    /* GEMM scratch in proportion: a graph in k parts is made for a budget the whole batch cannot
     * meet, and a GEMM's packing buffers (mlp's x @ w1: 328 KiB of blocks of w1 next to a
     * 128 KiB result) would otherwise stay what the whole batch's need. Each matrix product
     * gets 1/k of its usual scratch (at least 16 KiB) and takes smaller blocks: the same bits */
    for (int v = 0; v < ng->n && !b.failed; v++) {
        mg_node *nd = &ng->nodes[v];
        if (nd->op != MG_OP_MATMUL && nd->op != MG_OP_MATMUL_ACC) continue;
        mg_matmul_geom mm = mg_matmul_geometry(ng, v);
        int64_t full = mgk_gemm_scratch_bytes(mm.M, mm.N, mm.K, (int64_t)mg_dtype_size(nd->type.dtype));
        int64_t cap = full / k < 16384 ? 16384 : full / k;
        if (mm.flat && cap < full && cap <= INT32_MAX) nd->iattr[2] = (int)cap;
    }
    /* Convolutions likewise (iattr[5], mgk_conv2d*_capped: smaller patch and GEMM blocks, the same
     * bits, conv.h): a patch block of up to 1 MiB with its GEMM's packing sat next to nearly every
     * step of resnet18_64's parts (its minimum 6.4 MiB in 16 parts, workspace / peak live 1.16;
     * capped 5.0 MiB, and 25% is met in 4 parts at +17% FLOPs instead of 16 at +57%). A fixed
     * cap of 32 or 64 KiB for every convolution, or 1/(2k), measured no better. */
    for (int v = 0; v < ng->n && !b.failed && cap_convs; v++) {
        mg_node *nd = &ng->nodes[v];
        int kind = conv_kind(nd->op);
        if (kind < 0) continue;
        mgk_conv_geom geom = mg_conv_geom(ng, v);
        int64_t full = mgk_conv_scratch_bytes(kind, &geom, (int64_t)mg_dtype_size(nd->type.dtype));
        int64_t cap = full / k < 16384 ? 16384 : full / k;
        if (cap < full && cap <= INT32_MAX) nd->iattr[5] = (int)cap;
    }
    mg_status st = b.failed ? MG_ERR : mg_graph_verify(ng, d);
    free(b.map);
    free(b.cat);
    free(b.cl);
    free(b.sl);
    free(b.st);
    free(b.gs);
    free(b.gs_part);
    free(b.ord);
    info_free(&m);
    if (st) {
        mg_graph_free(ng);
        return MG_ERR;
    }
    *out = ng;
    return MG_OK;
}

mg_status mg_microbatch(const mg_graph *g, int k, mg_graph **out, mg_diag *d)
{
    return mg_microbatch_ex(g, k, 1, out, d);
}

const mg_node *mg_microbatch_batch_input(const mg_graph *g)
{
    for (int i = 0; i < g->ninputs; i++)
        if (g->nodes[g->inputs[i]].type.shape.rank >= 1) return &g->nodes[g->inputs[i]];
    return NULL;
}

int mg_microbatch_convs_capped(const mg_graph *g)
{
    for (int v = 0; v < g->n; v++)
        if (conv_kind(g->nodes[v].op) >= 0 && g->nodes[v].iattr[5] > 0) return 1;
    return 0;
}
