/* print.c — the textual form of a graph (`memgrad check --print-ir`): one line per node,
 * SSA ids, types, the user's names and source lines, so a human can follow every pass. */
#include "ir.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct strbuf {
    char *s;
    size_t len, cap;
} strbuf;

static void sb_printf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(strbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if (b->len + (size_t)n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + (size_t)n + 1) cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) abort();
        b->s = s;
        b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* v in the fewest digits that read back (strtod) as v: 0.2, not %.17g's 0.20000000000000001;
 * 0.1 + 0.2 still as 0.30000000000000004, which is what the model computes with. */
static const char *num(double v, char s[static 32])
{
    snprintf(s, 32, "%.15g", v);
    for (int prec = 16; prec <= 17 && strtod(s, NULL) != v; prec++) snprintf(s, 32, "%.*g", prec, v);
    return s;
}

static const char *init_name(mg_init i)
{
    static const char *names[] = {"zeros", "ones", "he", "xavier", "normal", "uniform"};
    return names[i];
}

char *mg_graph_print(const mg_graph *g)
{
    strbuf b = {0};
    char sh[160], v1[32], v2[32];
    sb_printf(&b, "model %s  # hash 0x%016llx\n", g->model_name ? g->model_name : "?",
              (unsigned long long)mg_graph_hash(g));
    for (int i = 0; i < g->n; i++) {
        const mg_node *n = &g->nodes[i];
        if (i == g->nforward && g->nforward < g->n) sb_printf(&b, "# backward\n");
        sb_printf(&b, "%%%d = %s", i, mg_ops[n->op].name);
        if (n->op == MG_OP_INPUT || n->op == MG_OP_PARAM) sb_printf(&b, " %s", n->name);
        if (n->op == MG_OP_CONST) sb_printf(&b, " %s", num(n->fattr, v1));
        for (int k = 0; k < n->ninputs; k++) sb_printf(&b, "%s%%%d", k ? ", " : " ", n->in[k]);
        if ((n->op == MG_OP_MATMUL || n->op == MG_OP_MATMUL_ACC) && (n->iattr[0] || n->iattr[1]))
            sb_printf(&b, " transpose=%d,%d", n->iattr[0], n->iattr[1]);
        if ((n->op == MG_OP_MATMUL || n->op == MG_OP_MATMUL_ACC) && n->iattr[2])
            sb_printf(&b, " scratch<=%d", n->iattr[2]);
        if (n->op == MG_OP_CONV2D || n->op == MG_OP_CONV2D_GRAD_INPUT || n->op == MG_OP_CONV2D_GRAD_WEIGHT ||
            n->op == MG_OP_CONV2D_GRAD_WEIGHT_ACC)
            sb_printf(&b, " stride=%d pad=%d dilation=%d groups=%d", n->iattr[0], n->iattr[1], n->iattr[2],
                      n->iattr[3]);
        if ((n->op == MG_OP_CONV2D || n->op == MG_OP_CONV2D_GRAD_INPUT || n->op == MG_OP_CONV2D_GRAD_WEIGHT ||
             n->op == MG_OP_CONV2D_GRAD_WEIGHT_ACC || n->op == MG_OP_CONV_TRANSPOSE2D) && n->iattr[5])
            sb_printf(&b, " scratch<=%d", n->iattr[5]);
        if (n->op == MG_OP_MAX_POOL2D || n->op == MG_OP_AVG_POOL2D || n->op == MG_OP_MAX_POOL2D_GRAD ||
            n->op == MG_OP_AVG_POOL2D_GRAD)
            sb_printf(&b, " kernel=%d stride=%d pad=%d", n->iattr[0], n->iattr[1], n->iattr[2]);
        if ((n->op == MG_OP_SOFTMAX || n->op == MG_OP_LOG_SOFTMAX || n->op == MG_OP_SOFTMAX_GRAD ||
             n->op == MG_OP_LOG_SOFTMAX_GRAD) && n->iattr[0])
            sb_printf(&b, " axis=%d", -1 - n->iattr[0]);
        if ((n->op == MG_OP_XENT_GRAD || n->op == MG_OP_XENT_MEAN) && n->iattr[1]) sb_printf(&b, " positions=%d", n->iattr[1]);
        if ((n->op == MG_OP_GELU || n->op == MG_OP_GELU_GRAD) && n->iattr[0]) sb_printf(&b, " approx=tanh");
        if (n->op == MG_OP_LAYER_NORM || n->op == MG_OP_LAYER_NORM_GRAD_INPUT || n->op == MG_OP_LAYER_NORM_GRAD_SCALE ||
            n->op == MG_OP_LAYER_NORM_GRAD_SCALE_ACC)
            sb_printf(&b, " eps=%s", num(n->fattr, v1));
        if (n->op == MG_OP_BATCH_NORM) sb_printf(&b, " eps=%s momentum=%s", num(n->fattr, v1), num(n->fattr2, v2));
        if (n->op == MG_OP_BATCH_NORM_GRAD_INPUT || n->op == MG_OP_BATCH_NORM_GRAD_SCALE)
            sb_printf(&b, " eps=%s", num(n->fattr, v1));
        if (n->op == MG_OP_DROPOUT || n->op == MG_OP_DROPOUT_GRAD) sb_printf(&b, " p=%s seed=%d", num(n->fattr, v1), n->iattr[0]);
        if (n->op == MG_OP_TRANSPOSE) {
            sb_printf(&b, " perm=[");
            for (int k = 0; k < n->type.shape.rank; k++) sb_printf(&b, "%s%d", k ? "," : "", n->iattr[k]);
            sb_printf(&b, "]");
        }
        if (n->op == MG_OP_CONV_TRANSPOSE2D)
            sb_printf(&b, " stride=%d pad=%d dilation=%d groups=%d output_pad=%d", n->iattr[0], n->iattr[1],
                      n->iattr[2], n->iattr[3], n->iattr[4]);
        if (n->op == MG_OP_CONCAT) sb_printf(&b, " axis=%d", n->iattr[0]);
        if (n->op == MG_OP_SLICE || n->op == MG_OP_SLICE_GRAD)
            sb_printf(&b, " axis=%d start=%d end=%d step=%d", n->iattr[0], n->iattr[1], n->iattr[2], n->iattr[3]);
        if (n->op == MG_OP_UPSAMPLE_NEAREST || n->op == MG_OP_UPSAMPLE_NEAREST_GRAD) sb_printf(&b, " scale=%d", n->iattr[0]);
        if ((n->op == MG_OP_CROSS_ENTROPY || n->op == MG_OP_XENT_GRAD || n->op == MG_OP_XENT_SUM ||
             n->op == MG_OP_XENT_SUM_ACC) && n->iattr[0])
            sb_printf(&b, " axis=%d", -1 - n->iattr[0]);
        if (n->op == MG_OP_MSE_GRAD && n->iattr[0] < 0) sb_printf(&b, " sign=-1");
        if (n->op == MG_OP_BROADCAST && n->fattr != 1.0) sb_printf(&b, " scale=%s", num(n->fattr, v1));
        sb_printf(&b, " : %s%s", mg_dtype_name(n->type.dtype), mg_shape_str(&n->type.shape, sh, sizeof sh));
        if (n->op == MG_OP_PARAM) {
            sb_printf(&b, " = %s", init_name(n->init));
            if (n->init == MG_INIT_NORMAL || n->init == MG_INIT_UNIFORM)
                sb_printf(&b, "(%s)", num(n->init_arg, v1));
        }
        if (n->name && n->op != MG_OP_INPUT && n->op != MG_OP_PARAM) sb_printf(&b, "  # %s", n->name);
        if (n->loc.line) sb_printf(&b, "%s line %d", n->name && n->op != MG_OP_INPUT && n->op != MG_OP_PARAM ? "," : "  #", n->loc.line);
        sb_printf(&b, "\n");
    }
    for (int i = 0; i < g->noutputs; i++)
        sb_printf(&b, "output %s = %%%d\n", g->outputs[i].name, g->outputs[i].node);
    if (g->loss >= 0) sb_printf(&b, "minimize %%%d\n", g->loss);
    for (int i = 0; g->param_grads && i < g->nparams; i++) {
        if (g->param_grads[i] < 0) /* (the loss does not read it: it printed "= %-1") */
            sb_printf(&b, "grad %s = zeros\n", g->nodes[g->params[i]].name);
        else
            sb_printf(&b, "grad %s = %%%d\n", g->nodes[g->params[i]].name, g->param_grads[i]);
    }
    if (!b.s) sb_printf(&b, "%s", "");
    return b.s;
}
