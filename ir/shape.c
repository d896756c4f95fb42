/* shape.c — dtypes, shapes, numpy broadcasting and per-op type inference.
 * Inference is the single place where the rules of each op's operands live; the frontend's
 * shape errors and the verifier's re-checks both come from here. */
#include "ir.h"

#include <stdio.h>
#include <string.h>

size_t mg_dtype_size(mg_dtype t) { return t == MG_F64 ? 8 : 4; }

const char *mg_dtype_name(mg_dtype t)
{
    switch (t) {
    case MG_F32: return "f32";
    case MG_F64: return "f64";
    case MG_I32: return "i32";
    }
    return "?";
}

int64_t mg_shape_numel(const mg_shape *s)
{
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++) n *= s->dim[i];
    return n;
}

int mg_shape_eq(const mg_shape *a, const mg_shape *b)
{
    if (a->rank != b->rank) return 0;
    for (int i = 0; i < a->rank; i++)
        if (a->dim[i] != b->dim[i]) return 0;
    return 1;
}

const char *mg_shape_str(const mg_shape *s, char *buf, size_t len)
{
    size_t k = 0;
    k += (size_t)snprintf(buf + k, len - k, "[");
    for (int i = 0; i < s->rank && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%lld", i ? "," : "", (long long)s->dim[i]);
    if (k < len) snprintf(buf + k, len - k, "]");
    return buf;
}

int mg_shape_broadcast(const mg_shape *a, const mg_shape *b, mg_shape *out)
{
    mg_shape r;
    r.rank = a->rank > b->rank ? a->rank : b->rank;
    for (int i = 0; i < r.rank; i++) {
        int ia = a->rank - r.rank + i, ib = b->rank - r.rank + i;
        int64_t da = ia >= 0 ? a->dim[ia] : 1, db = ib >= 0 ? b->dim[ib] : 1;
        if (da != db && da != 1 && db != 1) return 0;
        r.dim[i] = da == 1 ? db : da;
    }
    *out = r;
    return 1;
}

size_t mg_node_bytes(const mg_graph *g, int id)
{
    const mg_type *t = &g->nodes[id].type;
    return (size_t)mg_shape_numel(&t->shape) * mg_dtype_size(t->dtype);
}

static const char *opname(const mg_node *n) { return mg_ops[n->op].name; }

static mg_status need_float(const mg_node *n, const mg_type *t, const char *what, mg_diag *d)
{
    if (t->dtype == MG_I32)
        return mg_diag_set(d, n->loc, "'%s' needs a floating-point %s (f32 or f64), got i32",
                           opname(n), what);
    return MG_OK;
}

static mg_status same_dtype(const mg_node *n, const mg_type *a, const mg_type *b, mg_diag *d)
{
    if (a->dtype != b->dtype)
        return mg_diag_set(d, n->loc, "operands of '%s' have different dtypes %s and %s",
                           opname(n), mg_dtype_name(a->dtype), mg_dtype_name(b->dtype));
    return MG_OK;
}

static mg_status same_shape(const mg_node *n, const mg_type *a, const mg_type *b, mg_diag *d)
{
    char sa[128], sb[128];
    if (!mg_shape_eq(&a->shape, &b->shape))
        return mg_diag_set(d, n->loc, "'%s' needs operands of one shape, got %s and %s",
                           opname(n), mg_shape_str(&a->shape, sa, sizeof sa),
                           mg_shape_str(&b->shape, sb, sizeof sb));
    return MG_OK;
}

int64_t mg_window_out(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dil)
{
    if (stride < 1) return 0;
    int64_t span = dil * (k - 1) + 1, room = in + 2 * pad - span;
    return room < 0 ? 0 : room / stride + 1;
}

/* The result shape of conv2d over input x and weight w (iattr: stride, pad, dilation, groups). */
static mg_status conv_shape(const mg_node *n, const mg_shape *x, const mg_shape *w, mg_shape *out,
                            mg_diag *d)
{
    char sa[128], sb[128];
    int stride = n->iattr[0], pad = n->iattr[1], dil = n->iattr[2], groups = n->iattr[3];
    if (x->rank != 4)
        return mg_diag_set(d, n->loc, "conv2d needs an input of shape [N,C,H,W], got %s",
                           mg_shape_str(x, sa, sizeof sa));
    if (w->rank != 4)
        return mg_diag_set(d, n->loc, "conv2d needs a weight of shape [C_out,C_in/groups,kh,kw], got %s",
                           mg_shape_str(w, sa, sizeof sa));
    if (stride < 1 || pad < 0 || dil < 1 || groups < 1)
        return mg_diag_set(d, n->loc, "conv2d attributes out of range (stride %d, pad %d, dilation %d, groups %d)",
                           stride, pad, dil, groups);
    if (x->dim[1] % groups || w->dim[0] % groups)
        return mg_diag_set(d, n->loc, "conv2d groups=%d must divide the input channels (%lld) and the output "
                           "channels (%lld)", groups, (long long)x->dim[1], (long long)w->dim[0]);
    if (w->dim[1] != x->dim[1] / groups)
        return mg_diag_set(d, n->loc, "conv2d weight %s needs %lld input channels per group (input %s, groups=%d), "
                           "got %lld", mg_shape_str(w, sa, sizeof sa), (long long)(x->dim[1] / groups),
                           mg_shape_str(x, sb, sizeof sb), groups, (long long)w->dim[1]);
    int64_t oh = mg_window_out(x->dim[2], w->dim[2], stride, pad, dil);
    int64_t ow = mg_window_out(x->dim[3], w->dim[3], stride, pad, dil);
    if (oh < 1 || ow < 1)
        return mg_diag_set(d, n->loc, "conv2d kernel %lldx%lld (dilation %d) does not fit the input %s padded by %d",
                           (long long)w->dim[2], (long long)w->dim[3], dil, mg_shape_str(x, sa, sizeof sa), pad);
    *out = (mg_shape){4, {x->dim[0], w->dim[0], oh, ow}};
    return MG_OK;
}

/* The result shape of a pooling op over x (iattr: kernel, stride, pad). */
static mg_status pool_shape(const mg_node *n, const char *op, const mg_shape *x, mg_shape *out, mg_diag *d)
{
    char sa[128];
    int k = n->iattr[0], stride = n->iattr[1], pad = n->iattr[2];
    if (x->rank != 4)
        return mg_diag_set(d, n->loc, "%s needs an input of shape [N,C,H,W], got %s", op,
                           mg_shape_str(x, sa, sizeof sa));
    if (k < 1 || stride < 1 || pad < 0)
        return mg_diag_set(d, n->loc, "%s attributes out of range (kernel %d, stride %d, pad %d)", op, k, stride, pad);
    if (2 * pad > k)
        return mg_diag_set(d, n->loc, "%s pad=%d is more than half the kernel (%d)", op, pad, k);
    int64_t oh = mg_window_out(x->dim[2], k, stride, pad, 1), ow = mg_window_out(x->dim[3], k, stride, pad, 1);
    if (oh < 1 || ow < 1)
        return mg_diag_set(d, n->loc, "%s kernel %d does not fit the input %s padded by %d", op, k,
                           mg_shape_str(x, sa, sizeof sa), pad);
    *out = (mg_shape){4, {x->dim[0], x->dim[1], oh, ow}};
    return MG_OK;
}

/* A gradient op's upstream gradient must have the shape the forward op produced. */
static mg_status grad_matches(const mg_node *n, const mg_shape *want, const mg_shape *dy, mg_diag *d)
{
    char sa[128], sb[128];
    if (!mg_shape_eq(want, dy))
        return mg_diag_set(d, n->loc, "'%s' got an upstream gradient of shape %s, expected %s", opname(n),
                           mg_shape_str(dy, sa, sizeof sa), mg_shape_str(want, sb, sizeof sb));
    return MG_OK;
}

/* The extent of slice [start, end) taken every step along one axis. */
static int64_t slice_len(int64_t start, int64_t end, int64_t step) { return step < 1 || end <= start ? 0 : (end - start + step - 1) / step; }

/* The ops a U-Net adds: concat, slice, upsample_nearest and conv_transpose2d (and the
 * gradients of slice and upsample_nearest). */
static mg_status unet_shape(const mg_node *n, const mg_type **t, mg_type *r, mg_diag *d)
{
    char sa[128], sb[128];
    const mg_shape *xs = &t[0]->shape;
    switch (n->op) {
    case MG_OP_CONCAT: {
        int ax = n->iattr[0];
        if (ax < 0 || ax >= xs->rank)
            return mg_diag_set(d, n->loc, "concat axis %d out of range for %s", ax, mg_shape_str(xs, sa, sizeof sa));
        *r = *t[0];
        for (int k = 0; k < n->ninputs; k++) {
            const mg_shape *s = &t[k]->shape;
            if (need_float(n, t[k], "tensor", d) || same_dtype(n, t[0], t[k], d)) return MG_ERR;
            int ok = s->rank == xs->rank;
            for (int i = 0; ok && i < s->rank; i++) ok = i == ax || s->dim[i] == xs->dim[i];
            if (!ok)
                return mg_diag_set(d, n->loc, "concat along axis %d needs operands that agree on every other axis; "
                                   "operand %d is %s, operand 1 is %s", ax, k + 1, mg_shape_str(s, sa, sizeof sa),
                                   mg_shape_str(xs, sb, sizeof sb));
            if (k) r->shape.dim[ax] += s->dim[ax];
        }
        return MG_OK;
    }
    case MG_OP_SLICE:
    case MG_OP_SLICE_GRAD: {
        /* slice: x -> part; slice_grad: dy -> x's shape (preset) */
        const mg_shape *full = n->op == MG_OP_SLICE ? xs : &n->type.shape;
        int ax = n->iattr[0], start = n->iattr[1], end = n->iattr[2], step = n->iattr[3];
        if (ax < 0 || ax >= full->rank)
            return mg_diag_set(d, n->loc, "slice axis %d out of range for %s", ax, mg_shape_str(full, sa, sizeof sa));
        if (start < 0 || end > full->dim[ax] || step < 1 || slice_len(start, end, step) < 1)
            return mg_diag_set(d, n->loc, "slice [%d:%d:%d] of axis %d is empty or outside %s", start, end, step, ax,
                               mg_shape_str(full, sa, sizeof sa));
        mg_shape part = *full;
        part.dim[ax] = slice_len(start, end, step);
        if (n->op == MG_OP_SLICE_GRAD) {
            if (grad_matches(n, &part, xs, d)) return MG_ERR;
            r->dtype = t[0]->dtype;
            r->shape = *full;
        } else {
            r->dtype = t[0]->dtype;
            r->shape = part;
        }
        return MG_OK;
    }
    case MG_OP_UPSAMPLE_NEAREST:
    case MG_OP_UPSAMPLE_NEAREST_GRAD: {
        int sc = n->iattr[0];
        if (need_float(n, t[0], "input", d)) return MG_ERR;
        if (xs->rank != 4)
            return mg_diag_set(d, n->loc, "%s needs an input of shape [N,C,H,W], got %s", opname(n),
                               mg_shape_str(xs, sa, sizeof sa));
        if (sc < 1) return mg_diag_set(d, n->loc, "%s scale must be at least 1, got %d", opname(n), sc);
        *r = *t[0];
        if (n->op == MG_OP_UPSAMPLE_NEAREST) {
            r->shape.dim[2] *= sc;
            r->shape.dim[3] *= sc;
        } else {
            if (xs->dim[2] % sc || xs->dim[3] % sc)
                return mg_diag_set(d, n->loc, "'%s' got an upstream gradient %s whose height and width are not "
                                   "multiples of %d", opname(n), mg_shape_str(xs, sa, sizeof sa), sc);
            r->shape.dim[2] /= sc;
            r->shape.dim[3] /= sc;
        }
        return MG_OK;
    }
    case MG_OP_CONV_TRANSPOSE2D: {
        const mg_shape *w = &t[1]->shape;
        int stride = n->iattr[0], pad = n->iattr[1], dil = n->iattr[2], groups = n->iattr[3], opad = n->iattr[4];
        if (need_float(n, t[0], "input", d) || need_float(n, t[1], "weight", d) || same_dtype(n, t[0], t[1], d))
            return MG_ERR;
        if (xs->rank != 4)
            return mg_diag_set(d, n->loc, "conv_transpose2d needs an input of shape [N,C,H,W], got %s",
                               mg_shape_str(xs, sa, sizeof sa));
        if (w->rank != 4)
            return mg_diag_set(d, n->loc, "conv_transpose2d needs a weight of shape [C_in,C_out/groups,kh,kw], got %s",
                               mg_shape_str(w, sa, sizeof sa));
        if (stride < 1 || pad < 0 || dil < 1 || groups < 1 || opad < 0)
            return mg_diag_set(d, n->loc, "conv_transpose2d attributes out of range (stride %d, pad %d, dilation %d, "
                               "groups %d, output_pad %d)", stride, pad, dil, groups, opad);
        if (opad >= stride)
            return mg_diag_set(d, n->loc, "conv_transpose2d output_pad=%d must be smaller than stride=%d", opad, stride);
        if (w->dim[0] != xs->dim[1])
            return mg_diag_set(d, n->loc, "conv_transpose2d weight %s needs %lld input channels (its first axis) to "
                               "match the input %s", mg_shape_str(w, sa, sizeof sa), (long long)xs->dim[1],
                               mg_shape_str(xs, sb, sizeof sb));
        if (xs->dim[1] % groups)
            return mg_diag_set(d, n->loc, "conv_transpose2d groups=%d must divide the input channels (%lld)", groups,
                               (long long)xs->dim[1]);
        int64_t oh = (xs->dim[2] - 1) * stride - 2 * (int64_t)pad + (int64_t)dil * (w->dim[2] - 1) + opad + 1;
        int64_t ow = (xs->dim[3] - 1) * stride - 2 * (int64_t)pad + (int64_t)dil * (w->dim[3] - 1) + opad + 1;
        if (oh < 1 || ow < 1)
            return mg_diag_set(d, n->loc, "conv_transpose2d of %s with a %lldx%lld kernel and pad=%d leaves no output",
                               mg_shape_str(xs, sa, sizeof sa), (long long)w->dim[2], (long long)w->dim[3], pad);
        r->dtype = t[0]->dtype;
        r->shape = (mg_shape){4, {xs->dim[0], w->dim[1] * groups, oh, ow}};
        return MG_OK;
    }
    default:
        return mg_diag_set(d, n->loc, "invalid op");
    }
}

/* cross_entropy's operands (logits, labels), as xent_sum and xent_sum_acc take them too. */
static mg_status xent_operands(const mg_node *n, const mg_type *const *t, mg_diag *d)
{
    char sa[128], sb[128], sc[128];
    if (need_float(n, t[0], "logits tensor", d)) return MG_ERR;
    if (t[0]->shape.rank < 2)
        return mg_diag_set(d, n->loc, "%s needs logits of shape [batch, classes] or [batch, ..., classes], got %s",
                           opname(n), mg_shape_str(&t[0]->shape, sa, sizeof sa));
    if (t[1]->dtype != MG_I32)
        return mg_diag_set(d, n->loc, "%s needs i32 class labels, got %s", opname(n), mg_dtype_name(t[1]->dtype));
    if (n->iattr[0] < 0 || n->iattr[0] >= t[0]->shape.rank)
        return mg_diag_set(d, n->loc, "%s class axis %d out of range for logits %s", opname(n), -1 - n->iattr[0],
                           mg_shape_str(&t[0]->shape, sa, sizeof sa));
    /* the labels are the logits' shape without the class axis */
    mg_shape want = t[0]->shape;
    int ax = want.rank - 1 - n->iattr[0];
    for (int i = ax; i + 1 < want.rank; i++) want.dim[i] = want.dim[i + 1];
    want.rank--;
    char on[48] = "";
    if (n->iattr[0]) snprintf(on, sizeof on, " (classes on axis %d)", ax);
    if (!mg_shape_eq(&want, &t[1]->shape))
        return mg_diag_set(d, n->loc, "%s labels must be %s to match logits %s%s, got %s", opname(n),
                           mg_shape_str(&want, sc, sizeof sc), mg_shape_str(&t[0]->shape, sa, sizeof sa), on,
                           mg_shape_str(&t[1]->shape, sb, sizeof sb));
    return MG_OK;
}

/* The ops of batch_norm over a batch in parts (microbatch.c makes them, nothing parses them):
 * x [n,C] or [n,C,H,W] a part of a batch of iattr[0] samples; the sums are f64 [2,C] ([sum x;
 * sum (x-mean)^2]) or [4,C] (those, then [sum dy; sum dy*xhat]). */
static mg_status bn_part_type(const mg_node *n, const mg_type *const *t, mg_type *r, mg_diag *d)
{
    if (n->op == MG_OP_BN_GRAD_PARAM) { /* [C] of the preset dtype, from f64[4,C] */
        const mg_shape *s = &t[0]->shape;
        if (t[0]->dtype != MG_F64 || s->rank != 2 || s->dim[0] != 4 || n->type.shape.rank != 1 ||
            n->type.shape.dim[0] != s->dim[1] || n->type.dtype == MG_I32 || n->iattr[1] < 2 || n->iattr[1] > 3)
            return mg_diag_set(d, n->loc, "'%s' needs f64[4,C] sums and a [C] result", opname(n));
        *r = n->type;
        return MG_OK;
    }
    const mg_type *x = t[0];
    if (need_float(n, x, "input", d)) return MG_ERR;
    if (x->shape.rank != 2 && x->shape.rank != 4)
        return mg_diag_set(d, n->loc, "'%s' needs an input of shape [N,C] or [N,C,H,W]", opname(n));
    int64_t C = x->shape.dim[1], Nt = n->iattr[0];
    if (Nt < x->shape.dim[0] || (Nt * (mg_shape_numel(&x->shape) / (C ? C : 1)) / (x->shape.dim[0] ? x->shape.dim[0] : 1)) < 2)
        return mg_diag_set(d, n->loc, "'%s' needs a batch of at least the part's %lld samples, got %lld", opname(n),
                           (long long)x->shape.dim[0], (long long)Nt);
    mg_shape c = {1, {C}}, s2 = {2, {2, C}}, s4 = {2, {4, C}};
    /* operands after x: 'x' x's type, 'c' [C] of x's dtype, '2' / '4' f64 [2,C] / [4,C], '*' either */
    const char *kinds = n->op == MG_OP_BN_STATS_ACC ? "2" : n->op == MG_OP_BN_APPLY ? "cc2"
                      : n->op == MG_OP_BN_GRAD_SUMS ? "x*" : n->op == MG_OP_BN_GRAD_APPLY ? "cx4" : "";
    for (int i = 1; i < n->ninputs; i++) {
        char k = kinds[i - 1];
        const mg_type *u = t[i];
        int ok = k == 'x'   ? mg_shape_eq(&u->shape, &x->shape) && u->dtype == x->dtype
                 : k == 'c' ? mg_shape_eq(&u->shape, &c) && u->dtype == x->dtype
                 : k == '2' ? mg_shape_eq(&u->shape, &s2) && u->dtype == MG_F64
                 : k == '4' ? mg_shape_eq(&u->shape, &s4) && u->dtype == MG_F64
                            : (mg_shape_eq(&u->shape, &s2) || mg_shape_eq(&u->shape, &s4)) && u->dtype == MG_F64;
        if (!ok) return mg_diag_set(d, n->loc, "'%s' operand %d does not match its input", opname(n), i + 1);
    }
    if (n->op != MG_OP_BN_STATS && n->op != MG_OP_BN_STATS_ACC && !(n->fattr > 0))
        return mg_diag_set(d, n->loc, "'%s' eps must be positive, got %g", opname(n), n->fattr);
    if (n->op == MG_OP_BN_STATS || n->op == MG_OP_BN_STATS_ACC) *r = (mg_type){MG_F64, s2};
    else if (n->op == MG_OP_BN_GRAD_SUMS) *r = (mg_type){MG_F64, s4};
    else *r = *x;
    return MG_OK;
}

/* batch_norm (x, scale, shift) and its gradients: grad_input (x, scale, dy), grad_scale (x, dy)
 * and grad_shift (dy) -> [C]. x is [N,C] or [N,C,H,W]; statistics run over all but axis 1. */
static mg_status bn_type(const mg_node *n, const mg_type *const *t, mg_type *r, mg_diag *d)
{
    char sa[128], sb[128];
    const mg_type *x = t[0];
    if (need_float(n, x, "input", d)) return MG_ERR;
    for (int i = 1; i < n->ninputs; i++)
        if (same_dtype(n, x, t[i], d)) return MG_ERR;
    if (x->shape.rank != 2 && x->shape.rank != 4)
        return mg_diag_set(d, n->loc, "batch_norm needs an input of shape [N,C] or [N,C,H,W], got %s",
                           mg_shape_str(&x->shape, sa, sizeof sa));
    int64_t C = x->shape.dim[1], per = mg_shape_numel(&x->shape) / (C ? C : 1);
    mg_shape c = {1, {C}};
    if (per < 2)
        return mg_diag_set(d, n->loc, "batch_norm needs more than one value per channel in training, got input %s",
                           mg_shape_str(&x->shape, sa, sizeof sa));
    if (n->op == MG_OP_BATCH_NORM || n->op == MG_OP_BATCH_NORM_GRAD_INPUT) {
        for (int i = 1; i <= (n->op == MG_OP_BATCH_NORM ? 2 : 1); i++)
            if (!mg_shape_eq(&t[i]->shape, &c))
                return mg_diag_set(d, n->loc, "batch_norm %s must be [%lld] to match the channels of the input %s, got %s",
                                   i == 1 ? "scale" : "shift", (long long)C, mg_shape_str(&x->shape, sa, sizeof sa),
                                   mg_shape_str(&t[i]->shape, sb, sizeof sb));
    }
    if (n->op == MG_OP_BATCH_NORM_GRAD_INPUT && grad_matches(n, &x->shape, &t[2]->shape, d)) return MG_ERR;
    if (n->op == MG_OP_BATCH_NORM_GRAD_SCALE && grad_matches(n, &x->shape, &t[1]->shape, d)) return MG_ERR;
    if (n->op != MG_OP_BATCH_NORM_GRAD_SHIFT && !(n->fattr > 0))
        return mg_diag_set(d, n->loc, "batch_norm eps must be positive, got %g", n->fattr);
    if (n->op == MG_OP_BATCH_NORM && !(n->fattr2 > 0 && n->fattr2 <= 1))
        return mg_diag_set(d, n->loc, "batch_norm momentum must lie in (0, 1], got %g", n->fattr2);
    r->dtype = x->dtype;
    r->shape = n->op == MG_OP_BATCH_NORM || n->op == MG_OP_BATCH_NORM_GRAD_INPUT ? x->shape : c;
    return MG_OK;
}

/* The limits the parser puts on a declared tensor hold for every result too (upsample_nearest,
 * conv_transpose2d and concat can grow a shape), so byte counts never overflow int64 later. */
static mg_status result_too_large(const mg_node *n, const mg_shape *s, mg_diag *d)
{
    char sa[128];
    const int64_t max_dim = 1000000000000LL, max_numel = (int64_t)1 << 40;
    int64_t numel = 1;
    for (int i = 0; i < s->rank; i++) {
        if (s->dim[i] > max_dim || s->dim[i] > max_numel / numel)
            return mg_diag_set(d, n->loc, "'%s' result %s is too large (more than 2^40 elements or a dimension "
                               "above 10^12)", opname(n), mg_shape_str(s, sa, sizeof sa));
        numel *= s->dim[i];
    }
    return MG_OK;
}

mg_status mg_infer_type(mg_graph *g, int id, mg_diag *d)
{
    mg_node *n = &g->nodes[id];
    const mg_type *t[MG_MAX_INPUTS];
    char sa[128], sb[128];
    for (int i = 0; i < n->ninputs; i++) t[i] = &g->nodes[n->in[i]].type;
    mg_type r = {0};

    switch (n->op) {
    case MG_OP_INPUT:
    case MG_OP_PARAM:
    case MG_OP_CONST:
        return MG_OK; /* leaves are typed by whoever creates them */
    case MG_OP_MATMUL: {
        if (need_float(n, t[0], "left operand", d) || need_float(n, t[1], "right operand", d) ||
            same_dtype(n, t[0], t[1], d))
            return MG_ERR;
        const mg_shape *sa_ = &t[0]->shape, *sb_ = &t[1]->shape;
        if (sa_->rank < 2 || sb_->rank < 2)
            return mg_diag_set(d, n->loc, "matmul needs matrices or stacks of matrices (rank 2 or more), got %s @ %s",
                               mg_shape_str(sa_, sa, sizeof sa), mg_shape_str(sb_, sb, sizeof sb));
        const int64_t *a = sa_->dim + sa_->rank - 2, *b = sb_->dim + sb_->rank - 2;
        int64_t m = n->iattr[0] ? a[1] : a[0], ka = n->iattr[0] ? a[0] : a[1];
        int64_t kb = n->iattr[1] ? b[1] : b[0], nn = n->iattr[1] ? b[0] : b[1];
        if (ka != kb)
            return mg_diag_set(d, n->loc, "matmul shapes %s @ %s do not agree (%lld vs %lld)",
                               mg_shape_str(sa_, sa, sizeof sa), mg_shape_str(sb_, sb, sizeof sb), (long long)ka,
                               (long long)kb);
        mg_shape ba = *sa_, bb = *sb_;
        ba.rank -= 2;
        bb.rank -= 2;
        if (!mg_shape_broadcast(&ba, &bb, &r.shape))
            return mg_diag_set(d, n->loc, "matmul batch axes of %s @ %s do not broadcast",
                               mg_shape_str(sa_, sa, sizeof sa), mg_shape_str(sb_, sb, sizeof sb));
        if (r.shape.rank + 2 > MG_MAX_RANK)
            return mg_diag_set(d, n->loc, "matmul result has more than %d axes", MG_MAX_RANK);
        r.dtype = t[0]->dtype;
        r.shape.dim[r.shape.rank++] = m;
        r.shape.dim[r.shape.rank++] = nn;
        break;
    }
    case MG_OP_MATMUL_ACC: { /* (a, b, acc): matrices, op(a) @ op(b) of acc's shape */
        char sc[128];
        if (need_float(n, t[0], "left operand", d) || same_dtype(n, t[0], t[1], d) || same_dtype(n, t[0], t[2], d))
            return MG_ERR;
        const mg_shape *sa_ = &t[0]->shape, *sb_ = &t[1]->shape, *sc_ = &t[2]->shape;
        if (sa_->rank != 2 || sb_->rank != 2 || sc_->rank != 2)
            return mg_diag_set(d, n->loc, "'%s' needs matrices, got %s @ %s into %s", opname(n),
                               mg_shape_str(sa_, sa, sizeof sa), mg_shape_str(sb_, sb, sizeof sb),
                               mg_shape_str(sc_, sc, sizeof sc));
        int64_t m = sa_->dim[n->iattr[0] ? 1 : 0], ka = sa_->dim[n->iattr[0] ? 0 : 1];
        int64_t kb = sb_->dim[n->iattr[1] ? 1 : 0], nn = sb_->dim[n->iattr[1] ? 0 : 1];
        if (ka != kb || m != sc_->dim[0] || nn != sc_->dim[1])
            return mg_diag_set(d, n->loc, "'%s' shapes %s @ %s do not make %s", opname(n),
                               mg_shape_str(sa_, sa, sizeof sa), mg_shape_str(sb_, sb, sizeof sb),
                               mg_shape_str(sc_, sc, sizeof sc));
        r = *t[2];
        break;
    }
    case MG_OP_EMBEDDING:
    case MG_OP_EMBEDDING_GRAD:
    case MG_OP_EMBEDDING_GRAD_ACC: { /* (ids, table) / (ids, dy) with the table's shape preset / (ids, dy, acc) */
        if (n->op == MG_OP_EMBEDDING_GRAD_ACC) n->type = *t[2];
        const mg_shape *ids = &t[0]->shape, *tab = n->op == MG_OP_EMBEDDING ? &t[1]->shape : &n->type.shape;
        if (t[0]->dtype != MG_I32)
            return mg_diag_set(d, n->loc, "embedding needs i32 ids as its first argument, got %s",
                               mg_dtype_name(t[0]->dtype));
        if (n->op == MG_OP_EMBEDDING && need_float(n, t[1], "table", d)) return MG_ERR;
        if (tab->rank != 2)
            return mg_diag_set(d, n->loc, "embedding needs a table of shape [vocabulary, dim], got %s",
                               mg_shape_str(tab, sa, sizeof sa));
        if (ids->rank + 1 > MG_MAX_RANK)
            return mg_diag_set(d, n->loc, "embedding result would have more than %d axes", MG_MAX_RANK);
        mg_shape y = *ids;
        y.dim[y.rank++] = tab->dim[1];
        if (n->op != MG_OP_EMBEDDING) {
            if (grad_matches(n, &y, &t[1]->shape, d) || (n->ninputs > 2 && same_dtype(n, t[1], t[2], d))) return MG_ERR;
            r.dtype = t[1]->dtype;
            r.shape = *tab;
        } else {
            r.dtype = t[1]->dtype;
            r.shape = y;
        }
        break;
    }
    case MG_OP_TRANSPOSE: {
        const mg_shape *xs = &t[0]->shape;
        int seen[MG_MAX_RANK] = {0};
        for (int i = 0; i < xs->rank; i++) {
            int pi = n->iattr[i];
            if (pi < 0 || pi >= xs->rank || seen[pi])
                return mg_diag_set(d, n->loc, "transpose perm is not a permutation of the %d axes of %s", xs->rank,
                                   mg_shape_str(xs, sa, sizeof sa));
            seen[pi] = 1;
            r.shape.dim[i] = xs->dim[pi];
        }
        for (int i = xs->rank; i < MG_MAX_IATTR; i++)
            if (n->iattr[i]) return mg_diag_set(d, n->loc, "transpose perm is longer than the rank of %s",
                                                mg_shape_str(xs, sa, sizeof sa));
        r.shape.rank = xs->rank;
        r.dtype = t[0]->dtype;
        break;
    }
    case MG_OP_ADD:
    case MG_OP_SUB:
    case MG_OP_MUL:
    case MG_OP_DIV:
        if (need_float(n, t[0], "operand", d) || need_float(n, t[1], "operand", d) ||
            same_dtype(n, t[0], t[1], d))
            return MG_ERR;
        r.dtype = t[0]->dtype;
        if (!mg_shape_broadcast(&t[0]->shape, &t[1]->shape, &r.shape))
            return mg_diag_set(d, n->loc, "shapes %s and %s do not broadcast for '%s'",
                               mg_shape_str(&t[0]->shape, sa, sizeof sa),
                               mg_shape_str(&t[1]->shape, sb, sizeof sb), opname(n));
        break;
    case MG_OP_NEG:
    case MG_OP_RELU:
    case MG_OP_TANH:
    case MG_OP_SIGMOID:
    case MG_OP_EXP:
    case MG_OP_LOG:
        if (need_float(n, t[0], "tensor", d)) return MG_ERR;
        r = *t[0];
        break;
    case MG_OP_SOFTMAX:
    case MG_OP_LOG_SOFTMAX:
        if (need_float(n, t[0], "tensor", d)) return MG_ERR;
        if (t[0]->shape.rank < 1)
            return mg_diag_set(d, n->loc, "%s needs at least one axis, got a scalar", opname(n));
        if (n->iattr[0] < 0 || n->iattr[0] >= t[0]->shape.rank)
            return mg_diag_set(d, n->loc, "%s axis %d out of range for %s", opname(n),
                               -1 - n->iattr[0], mg_shape_str(&t[0]->shape, sa, sizeof sa));
        r = *t[0];
        break;
    case MG_OP_GELU:
        if (need_float(n, t[0], "tensor", d)) return MG_ERR;
        if (n->iattr[0] != 0 && n->iattr[0] != 1)
            return mg_diag_set(d, n->loc, "gelu approx must be 0 (erf) or 1 (tanh), got %d", n->iattr[0]);
        r = *t[0];
        break;
    case MG_OP_LAYER_NORM:
    case MG_OP_LAYER_NORM_GRAD_INPUT: { /* (x, scale, shift) / (x, scale, dy) */
        const mg_shape *xs = &t[0]->shape;
        if (need_float(n, t[0], "input", d) || same_dtype(n, t[0], t[1], d) || same_dtype(n, t[0], t[2], d))
            return MG_ERR;
        if (xs->rank < 1)
            return mg_diag_set(d, n->loc, "%s needs at least one axis, got a scalar", opname(n));
        int64_t D = xs->dim[xs->rank - 1];
        mg_shape want = {1, {D}};
        if (!mg_shape_eq(&t[1]->shape, &want))
            return mg_diag_set(d, n->loc, "layer_norm scale must be [%lld] to match the input's last axis %s, got %s",
                               (long long)D, mg_shape_str(xs, sa, sizeof sa), mg_shape_str(&t[1]->shape, sb, sizeof sb));
        if (n->op == MG_OP_LAYER_NORM && !mg_shape_eq(&t[2]->shape, &want))
            return mg_diag_set(d, n->loc, "layer_norm shift must be [%lld] to match the input's last axis %s, got %s",
                               (long long)D, mg_shape_str(xs, sa, sizeof sa), mg_shape_str(&t[2]->shape, sb, sizeof sb));
        if (n->op == MG_OP_LAYER_NORM_GRAD_INPUT && grad_matches(n, xs, &t[2]->shape, d)) return MG_ERR;
        if (!(n->fattr > 0))
            return mg_diag_set(d, n->loc, "layer_norm eps must be positive, got %g", n->fattr);
        r = *t[0];
        break;
    }
    case MG_OP_LAYER_NORM_GRAD_SCALE:
    case MG_OP_LAYER_NORM_GRAD_SCALE_ACC: { /* (x, dy) -> [D]; (x, dy, acc [D]) */
        if (same_dtype(n, t[0], t[1], d) || grad_matches(n, &t[0]->shape, &t[1]->shape, d)) return MG_ERR;
        if (t[0]->shape.rank < 1 || !(n->fattr > 0))
            return mg_diag_set(d, n->loc, "'%s' needs an input with an axis and a positive eps", opname(n));
        r.dtype = t[0]->dtype;
        r.shape = (mg_shape){1, {t[0]->shape.dim[t[0]->shape.rank - 1]}};
        if (n->op == MG_OP_LAYER_NORM_GRAD_SCALE_ACC && (same_dtype(n, t[0], t[2], d) || grad_matches(n, &r.shape, &t[2]->shape, d)))
            return MG_ERR;
        break;
    }
    case MG_OP_SUM:
    case MG_OP_MEAN:
        if (need_float(n, t[0], "tensor", d)) return MG_ERR;
        r.dtype = t[0]->dtype;
        r.shape.rank = 0;
        break;
    case MG_OP_CROSS_ENTROPY:
    case MG_OP_XENT_SUM:
    case MG_OP_XENT_SUM_ACC:
        if (xent_operands(n, t, d)) return MG_ERR;
        if (n->op == MG_OP_XENT_SUM_ACC && (t[2]->dtype != MG_F64 || t[2]->shape.rank != 0))
            return mg_diag_set(d, n->loc, "'%s' needs the f64 sum so far as its third operand", opname(n));
        r.dtype = n->op == MG_OP_CROSS_ENTROPY ? t[0]->dtype : MG_F64;
        r.shape.rank = 0;
        break;
    case MG_OP_XENT_MEAN:
        if (t[0]->dtype != MG_F64 || t[0]->shape.rank != 0)
            return mg_diag_set(d, n->loc, "'%s' needs an f64 sum", opname(n));
        if (n->iattr[1] < 1) return mg_diag_set(d, n->loc, "'%s' over %d positions", opname(n), n->iattr[1]);
        if (need_float(n, &n->type, "result", d)) return MG_ERR;
        r.dtype = n->type.dtype;
        r.shape.rank = 0;
        break;
    case MG_OP_MSE:
        if (need_float(n, t[0], "prediction", d) || need_float(n, t[1], "target", d) ||
            same_dtype(n, t[0], t[1], d) || same_shape(n, t[0], t[1], d))
            return MG_ERR;
        r.dtype = t[0]->dtype;
        r.shape.rank = 0;
        break;
    case MG_OP_RELU_GRAD:
    case MG_OP_TANH_GRAD:
    case MG_OP_SIGMOID_GRAD:
    case MG_OP_SOFTMAX_GRAD:
    case MG_OP_LOG_SOFTMAX_GRAD:
    case MG_OP_GELU_GRAD:
        if ((n->op == MG_OP_SOFTMAX_GRAD || n->op == MG_OP_LOG_SOFTMAX_GRAD) &&
            (n->iattr[0] < 0 || n->iattr[0] >= t[0]->shape.rank))
            return mg_diag_set(d, n->loc, "'%s' axis out of range", opname(n));
        if (same_dtype(n, t[0], t[1], d) || same_shape(n, t[0], t[1], d)) return MG_ERR;
        r = *t[0];
        break;
    case MG_OP_XENT_GRAD:
    case MG_OP_MSE_GRAD:
        if (n->op == MG_OP_XENT_GRAD && (n->iattr[0] < 0 || n->iattr[0] >= t[0]->shape.rank))
            return mg_diag_set(d, n->loc, "'%s' class axis out of range", opname(n));
        if (n->op == MG_OP_XENT_GRAD && n->iattr[1] != 0 &&
            (int64_t)n->iattr[1] * t[0]->shape.dim[t[0]->shape.rank - 1 - n->iattr[0]] < mg_shape_numel(&t[0]->shape))
            return mg_diag_set(d, n->loc, "'%s' over %d positions, fewer than its logits have", opname(n), n->iattr[1]);
        if (t[2]->shape.rank != 0)
            return mg_diag_set(d, n->loc, "'%s' needs a scalar upstream gradient", opname(n));
        r = *t[0];
        break;
    case MG_OP_BROADCAST:
    case MG_OP_SUM_TO:
    case MG_OP_SUM_TO_ACC: {
        /* the target shape was set by the creator in n->type; check it is compatible */
        if (n->op == MG_OP_SUM_TO_ACC) { /* the accumulator's type is the result's */
            if (same_dtype(n, t[0], t[1], d)) return MG_ERR;
            n->type = *t[1];
        }
        mg_shape big;
        const mg_shape *small = n->op == MG_OP_BROADCAST ? &t[0]->shape : &n->type.shape;
        const mg_shape *large = n->op == MG_OP_BROADCAST ? &n->type.shape : &t[0]->shape;
        if (!mg_shape_broadcast(small, large, &big) || !mg_shape_eq(&big, large))
            return mg_diag_set(d, n->loc, "'%s' cannot map %s to %s", opname(n),
                               mg_shape_str(&t[0]->shape, sa, sizeof sa),
                               mg_shape_str(&n->type.shape, sb, sizeof sb));
        r.dtype = t[0]->dtype;
        r.shape = n->type.shape;
        break;
    }
    case MG_OP_CONV2D:
        if (need_float(n, t[0], "input", d) || need_float(n, t[1], "weight", d) || same_dtype(n, t[0], t[1], d) ||
            conv_shape(n, &t[0]->shape, &t[1]->shape, &r.shape, d))
            return MG_ERR;
        r.dtype = t[0]->dtype;
        break;
    case MG_OP_CONV2D_GRAD_INPUT: { /* (dy, w), x's shape preset */
        mg_shape y;
        if (same_dtype(n, t[0], t[1], d) || conv_shape(n, &n->type.shape, &t[1]->shape, &y, d) ||
            grad_matches(n, &y, &t[0]->shape, d))
            return MG_ERR;
        r.dtype = t[0]->dtype;
        r.shape = n->type.shape;
        break;
    }
    case MG_OP_CONV2D_GRAD_WEIGHT:
    case MG_OP_CONV2D_GRAD_WEIGHT_ACC: { /* (x, dy), w's shape preset; (x, dy, acc): acc's */
        mg_shape y;
        if (n->op == MG_OP_CONV2D_GRAD_WEIGHT_ACC) {
            if (same_dtype(n, t[0], t[2], d)) return MG_ERR;
            n->type.shape = t[2]->shape;
        }
        if (same_dtype(n, t[0], t[1], d) || conv_shape(n, &t[0]->shape, &n->type.shape, &y, d) ||
            grad_matches(n, &y, &t[1]->shape, d))
            return MG_ERR;
        r.dtype = t[0]->dtype;
        r.shape = n->type.shape;
        break;
    }
    case MG_OP_MAX_POOL2D:
    case MG_OP_AVG_POOL2D:
        if (need_float(n, t[0], "input", d) || pool_shape(n, opname(n), &t[0]->shape, &r.shape, d)) return MG_ERR;
        r.dtype = t[0]->dtype;
        break;
    case MG_OP_MAX_POOL2D_GRAD: { /* (x, dy) */
        mg_shape y;
        if (same_dtype(n, t[0], t[1], d) || pool_shape(n, "max_pool2d", &t[0]->shape, &y, d) ||
            grad_matches(n, &y, &t[1]->shape, d))
            return MG_ERR;
        r = *t[0];
        break;
    }
    case MG_OP_AVG_POOL2D_GRAD: { /* dy, x's shape preset */
        mg_shape y;
        if (pool_shape(n, "avg_pool2d", &n->type.shape, &y, d) || grad_matches(n, &y, &t[0]->shape, d))
            return MG_ERR;
        r.dtype = t[0]->dtype;
        r.shape = n->type.shape;
        break;
    }
    case MG_OP_GLOBAL_AVG_POOL:
        if (need_float(n, t[0], "input", d)) return MG_ERR;
        if (t[0]->shape.rank != 4)
            return mg_diag_set(d, n->loc, "global_avg_pool needs an input of shape [N,C,H,W], got %s",
                               mg_shape_str(&t[0]->shape, sa, sizeof sa));
        r.dtype = t[0]->dtype;
        r.shape = (mg_shape){2, {t[0]->shape.dim[0], t[0]->shape.dim[1]}};
        break;
    case MG_OP_RESHAPE:
        if (mg_shape_numel(&n->type.shape) != mg_shape_numel(&t[0]->shape))
            return mg_diag_set(d, n->loc, "cannot reshape %s (%lld elements) to %s (%lld elements)",
                               mg_shape_str(&t[0]->shape, sa, sizeof sa), (long long)mg_shape_numel(&t[0]->shape),
                               mg_shape_str(&n->type.shape, sb, sizeof sb), (long long)mg_shape_numel(&n->type.shape));
        r.dtype = t[0]->dtype;
        r.shape = n->type.shape;
        break;
    case MG_OP_FLATTEN:
        if (t[0]->shape.rank < 2)
            return mg_diag_set(d, n->loc, "flatten needs at least two axes [N, ...], got %s",
                               mg_shape_str(&t[0]->shape, sa, sizeof sa));
        r.dtype = t[0]->dtype;
        r.shape = (mg_shape){2, {t[0]->shape.dim[0], mg_shape_numel(&t[0]->shape) / t[0]->shape.dim[0]}};
        break;
    case MG_OP_CONCAT:
    case MG_OP_SLICE:
    case MG_OP_SLICE_GRAD:
    case MG_OP_UPSAMPLE_NEAREST:
    case MG_OP_UPSAMPLE_NEAREST_GRAD:
    case MG_OP_CONV_TRANSPOSE2D:
        if (unet_shape(n, t, &r, d)) return MG_ERR;
        break;
    case MG_OP_BATCH_NORM:
    case MG_OP_BATCH_NORM_GRAD_INPUT:
    case MG_OP_BATCH_NORM_GRAD_SCALE:
    case MG_OP_BATCH_NORM_GRAD_SHIFT:
        if (bn_type(n, t, &r, d)) return MG_ERR;
        break;
    case MG_OP_BN_STATS:
    case MG_OP_BN_STATS_ACC:
    case MG_OP_BN_APPLY:
    case MG_OP_BN_GRAD_SUMS:
    case MG_OP_BN_GRAD_APPLY:
    case MG_OP_BN_GRAD_PARAM:
        if (bn_part_type(n, t, &r, d)) return MG_ERR;
        break;
    case MG_OP_DROPOUT:
    case MG_OP_DROPOUT_GRAD:
        if (need_float(n, t[0], "tensor", d)) return MG_ERR;
        if (!(n->fattr > 0 && n->fattr < 1))
            return mg_diag_set(d, n->loc, "dropout p must lie in (0, 1), got %g", n->fattr);
        if (n->op == MG_OP_DROPOUT_GRAD && (n->iattr[1] < 0 || n->iattr[1] >= id || g->nodes[n->iattr[1]].op != MG_OP_DROPOUT))
            return mg_diag_set(d, n->loc, "'dropout_grad' must name an earlier dropout node, got %%%d", n->iattr[1]);
        r = *t[0];
        break;
    case MG_OP_COUNT:
        return mg_diag_set(d, n->loc, "invalid op");
    }
    if (result_too_large(n, &r.shape, d)) return MG_ERR;
    n->type = r;
    return MG_OK;
}
