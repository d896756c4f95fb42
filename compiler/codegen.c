/* codegen.c — the LLVM backend. Starts from the kernel library (runtime/kernels, compiled to
 * bitcode at build time and embedded in memgrad), adds the model's functions — a straight
 * line of kernel calls on pointers into the caller's buffers at the plan's fixed offsets, with
 * every shape a constant — makes the kernels internal so the optimiser inlines and specialises
 * them and several models can be linked into one program, retargets everything to the chosen
 * CPU, optimises at -O3 and writes an object file. The object needs only libc and libm.
 * Chains of elementwise steps that fuse.c finds become one loop nest each instead. Each kernel
 * call and loop nest sits in a step function shared by every step that computes the same thing
 * on other pointers (see step_fn), so LLVM specialises each distinct step once, and a long plan's
 * steps sit in chunk functions of at most CHUNK_STEPS (emit_steps). */
#include "backend.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

extern const unsigned char mg_kernels_bc[];
extern const size_t mg_kernels_bc_len;

typedef struct cg {
    const mg_program *p;
    const mg_graph *g;
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    LLVMTypeRef i8, i32, i64, f32, f64, ptr, voidt;
    LLVMTypeRef size; /* the target's size_t: the descriptors' offset and bytes */
    LLVMValueRef params, grads, inputs, outputs, ws; /* current function's arguments */
    LLVMValueRef *in_ptr, *out_ptr;                 /* loaded input/output pointers */
    LLVMValueRef *consts;                           /* per node: global for a CONST */
    /* state: the blob argument (or NULL), which function is being emitted, per node the
     * offset of a batch_norm's running mean (running var follows), whether this function has
     * already updated a batch_norm's running statistics, and the step counter's offset */
    LLVMValueRef state;
    enum { CG_TRAIN, CG_EVAL, CG_FORWARD_TRAIN } mode;
    int64_t *bn_state, *bn_var, step_off;
    char *bn_done;
    mg_state_entry *sent;
    int nsent;
    int64_t state_bytes;
    int no_fuse, nfused; /* fusion off; fused loops emitted so far (names their blocks) */
    /* step functions (see step_fn): on while the steps of a plan are emitted; a hash table of
     * the ones made so far, keyed by what they compute */
    int outline;
    struct step_fn *sfn;
    size_t nsfn, capsfn;
    mg_diag *d;
    int failed;
} cg;

static LLVMValueRef ci64(cg *c, int64_t v) { return LLVMConstInt(c->i64, (unsigned long long)v, 1); }
static LLVMValueRef cf64(cg *c, double v) { return LLVMConstReal(c->f64, v); }

static LLVMValueRef byte_ptr(cg *c, LLVMValueRef base, int64_t off)
{
    if (off == 0) return base;
    LLVMValueRef idx = ci64(c, off);
    return LLVMBuildInBoundsGEP2(c->b, c->i8, base, &idx, 1, "");
}

static LLVMValueRef const_global(cg *c, int node)
{
    if (c->consts[node]) return c->consts[node];
    const mg_node *n = &c->g->nodes[node];
    LLVMTypeRef t = n->type.dtype == MG_F64 ? c->f64 : c->f32;
    LLVMValueRef gv = LLVMAddGlobal(c->mod, t, "mg.const");
    LLVMSetInitializer(gv, LLVMConstReal(t, n->fattr));
    LLVMSetGlobalConstant(gv, 1);
    LLVMSetLinkage(gv, LLVMPrivateLinkage);
    LLVMSetUnnamedAddress(gv, LLVMGlobalUnnamedAddr);
    c->consts[node] = gv;
    return gv;
}

static LLVMValueRef place_ptr(cg *c, const mg_plan *pl, const mg_place *p, int node)
{
    switch (p->mem) {
    case MG_MEM_WS: return byte_ptr(c, c->ws, pl->bufs[p->index].offset);
    case MG_MEM_PARAMS: return byte_ptr(c, c->params, p->offset);
    case MG_MEM_GRADS: return byte_ptr(c, c->grads, p->offset);
    case MG_MEM_INPUT: return c->in_ptr[p->index];
    case MG_MEM_OUTPUT: return byte_ptr(c, c->out_ptr[p->index], p->offset);
    case MG_MEM_CONST: return const_global(c, node);
    case MG_MEM_NONE: break;
    }
    c->failed = 1;
    mg_diag_set(c->d, c->g->nodes[node].loc, "internal error: value %%%d has no place", node);
    return LLVMConstNull(c->ptr);
}

/* Step functions. Every kernel call and fused loop of a plan is emitted as a call to an internal,
 * never-inlined function that takes the step's pointers as arguments and has every other operand
 * (shapes, strides, scalars, constant globals) built in; steps that differ only in where their
 * tensors live share one. The kernels are inlined and specialised into these functions, once per
 * distinct step instead of once per step: the parts of a micro-batched graph (microbatch.c), the
 * forward steps that train_step and forward have in common, repeated layers of equal shapes.
 * Without it LLVM specialised every call site on its own, and the loops of small parts (N/k
 * samples) were unrolled fully, k times over: 8 parts of cnn_fmnist took 3x as long to compile
 * as 4, 16 parts 6x. A call per step costs nothing next to a kernel; the bits are the same. */
typedef struct step_fn {
    uint64_t hash;
    size_t len;
    uintptr_t *key; /* what the function computes: kernel or loop, and its built-in operands */
    LLVMValueRef fn;
} step_fn;

static void step_fn_grow(cg *c)
{
    size_t cap = c->capsfn ? 2 * c->capsfn : 256;
    step_fn *t = calloc(cap, sizeof *t);
    if (!t) abort();
    for (size_t i = 0; i < c->capsfn; i++) {
        if (!c->sfn[i].fn) continue;
        size_t j = c->sfn[i].hash & (cap - 1);
        while (t[j].fn) j = (j + 1) & (cap - 1);
        t[j] = c->sfn[i];
    }
    free(c->sfn);
    c->sfn = t;
    c->capsfn = cap;
}

/* The slot of the step function with this key: its fn is NULL when there is none yet, and then
 * the caller fills it in (the key is copied). */
static step_fn *step_fn_slot(cg *c, const uintptr_t *key, size_t len)
{
    if (2 * (c->nsfn + 1) > c->capsfn) step_fn_grow(c);
    uint64_t h = XXH64(key, len * sizeof *key, 0);
    size_t j = h & (c->capsfn - 1);
    for (; c->sfn[j].fn; j = (j + 1) & (c->capsfn - 1))
        if (c->sfn[j].hash == h && c->sfn[j].len == len && !memcmp(c->sfn[j].key, key, len * sizeof *key))
            return &c->sfn[j];
    step_fn *e = &c->sfn[j];
    e->hash = h;
    e->len = len;
    e->key = malloc(len * sizeof *key + 1);
    if (!e->key) abort();
    memcpy(e->key, key, len * sizeof *key);
    c->nsfn++;
    return e;
}

static void step_fns_free(cg *c)
{
    for (size_t i = 0; i < c->capsfn; i++) free(c->sfn[i].key);
    free(c->sfn);
}

/* A new step function taking arguments of these types; the builder is left in its entry block.
 * Named mg.step (a kernel call) or mg.fused (a fused loop nest), LLVM numbering the rest. */
static LLVMValueRef step_fn_begin(cg *c, const char *name, const LLVMTypeRef *types, unsigned n)
{
    LLVMValueRef fn = LLVMAddFunction(c->mod, name, LLVMFunctionType(c->voidt, (LLVMTypeRef *)types, n, 0));
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    const char *attrs[2] = {"noinline", "nounwind"};
    for (int i = 0; i < 2; i++)
        LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                                LLVMCreateEnumAttribute(c->ctx, LLVMGetEnumAttributeKindForName(attrs[i], strlen(attrs[i])), 0));
    LLVMPositionBuilderAtEnd(c->b, LLVMAppendBasicBlockInContext(c->ctx, fn, "entry"));
    return fn;
}

static void call(cg *c, const char *base, mg_dtype dt, LLVMValueRef *args, unsigned nargs)
{
    char name[64];
    if (dt == MG_I32) snprintf(name, sizeof name, "%s", base);
    else snprintf(name, sizeof name, "%s_%s", base, dt == MG_F64 ? "f64" : "f32");
    LLVMValueRef fn = LLVMGetNamedFunction(c->mod, name);
    if (!fn) {
        c->failed = 1;
        mg_diag_set(c->d, (mg_loc){0}, "internal error: kernel %s missing from the kernel library", name);
        return;
    }
    enum { MAX_ARGS = 32 };
    if (!c->outline || nargs > MAX_ARGS) {
        LLVMBuildCall2(c->b, LLVMGlobalGetValueType(fn), fn, args, nargs, "");
        return;
    }
    /* key: 'K', the kernel, then per argument its type and the constant or 0 (an argument of
     * the step function) */
    uintptr_t key[2 + 2 * MAX_ARGS];
    LLVMValueRef pass[MAX_ARGS];
    LLVMTypeRef types[MAX_ARGS];
    unsigned np = 0;
    key[0] = 'K';
    key[1] = (uintptr_t)fn;
    for (unsigned i = 0; i < nargs; i++) {
        int k = LLVMIsConstant(args[i]);
        key[2 + 2 * i] = (uintptr_t)LLVMTypeOf(args[i]);
        key[3 + 2 * i] = k ? (uintptr_t)args[i] : 0;
        if (!k) {
            types[np] = LLVMTypeOf(args[i]);
            pass[np++] = args[i];
        }
    }
    step_fn *e = step_fn_slot(c, key, 2 + 2 * (size_t)nargs);
    if (!e->fn) {
        LLVMBasicBlockRef at = LLVMGetInsertBlock(c->b);
        e->fn = step_fn_begin(c, "mg.step", types, np);
        LLVMValueRef inner[MAX_ARGS];
        for (unsigned i = 0, j = 0; i < nargs; i++) inner[i] = LLVMIsConstant(args[i]) ? args[i] : LLVMGetParam(e->fn, j++);
        LLVMBuildCall2(c->b, LLVMGlobalGetValueType(fn), fn, inner, nargs, "");
        LLVMBuildRetVoid(c->b);
        LLVMPositionBuilderAtEnd(c->b, at);
    }
    LLVMBuildCall2(c->b, LLVMGlobalGetValueType(e->fn), e->fn, pass, np, "");
}

/* A broadcast iteration space collapsed to at most 4 axes. Operand strides are in elements,
 * 0 where the operand is broadcast. */
enum { MAX_ITER_OPS = MG_FUSE_MAX_LEAVES + 1 };
typedef struct iter4 {
    int64_t d[4];
    int64_t s[MAX_ITER_OPS][4];
} iter4;

static int collapse(const mg_shape *space, const mg_shape *const *ops, int nops, iter4 *it)
{
    int64_t d[MG_MAX_RANK], s[MAX_ITER_OPS][MG_MAX_RANK];
    int nd = 0;
    for (int i = 0; i < space->rank; i++) {
        if (space->dim[i] == 1) continue;
        d[nd] = space->dim[i];
        for (int k = 0; k < nops; k++) {
            const mg_shape *o = ops[k];
            int oi = o->rank - space->rank + i;
            int64_t stride = 0; /* broadcast along this axis */
            if (oi >= 0 && o->dim[oi] != 1) {
                stride = 1;
                for (int j = oi + 1; j < o->rank; j++) stride *= o->dim[j];
            }
            s[k][nd] = stride;
        }
        nd++;
    }
    /* merge axis i into i+1 where every operand is contiguous across the pair */
    for (int i = nd - 2; i >= 0; i--) {
        int ok = 1;
        for (int k = 0; k < nops; k++) ok &= s[k][i] == s[k][i + 1] * d[i + 1];
        if (!ok) continue;
        d[i + 1] *= d[i];
        for (int j = i; j + 1 < nd; j++) {
            d[j] = d[j + 1];
            for (int k = 0; k < nops; k++) s[k][j] = s[k][j + 1];
        }
        nd--;
        /* merged axis now at position i; keep scanning leftwards */
    }
    if (nd > 4) return 0;
    int pad = 4 - nd;
    for (int i = 0; i < 4; i++) {
        it->d[i] = i < pad ? 1 : d[i - pad];
        for (int k = 0; k < MAX_ITER_OPS; k++) it->s[k][i] = (i < pad || k >= nops) ? 0 : s[k][i - pad];
    }
    return 1;
}

static int too_complex(cg *c, const mg_node *n)
{
    c->failed = 1;
    mg_diag_set(c->d, n->loc, "broadcast of '%s' needs more than 4 alternating axes; not supported yet",
                mg_ops[n->op].name);
    return 0;
}

/* The accumulating ops (sum_to_acc, conv2d_grad_weight_acc, ...) add into their result: it starts as
 * a copy of the accumulator, input `slot`, unless the plan put both in the same place. */
static void copy_acc(cg *c, const mg_plan *pl, const mg_step *st, int slot)
{
    const mg_place *a = &st->in[slot], *o = &st->out;
    int same = a->mem == o->mem && (a->mem == MG_MEM_WS ? pl->bufs[a->index].offset == pl->bufs[o->index].offset
                                                        : a->index == o->index && a->offset == o->offset);
    if (same) return;
    int acc = c->g->nodes[st->node].in[slot];
    LLVMValueRef args[3] = {ci64(c, (int64_t)mg_node_bytes(c->g, acc)), place_ptr(c, pl, a, acc),
                            place_ptr(c, pl, o, st->node)};
    call(c, "mgk_copy", MG_I32, args, 3);
}

static void emit_compute(cg *c, const mg_plan *pl, const mg_step *st)
{
    const mg_graph *g = c->g;
    const mg_node *n = &g->nodes[st->node];
    mg_dtype dt = n->type.dtype;
    int64_t numel = mg_shape_numel(&n->type.shape);
    LLVMValueRef out = place_ptr(c, pl, &st->out, st->node);
    LLVMValueRef x = n->ninputs > 0 ? place_ptr(c, pl, &st->in[0], n->in[0]) : NULL;
    LLVMValueRef y = n->ninputs > 1 ? place_ptr(c, pl, &st->in[1], n->in[1]) : NULL;
    LLVMValueRef z = n->ninputs > 2 ? place_ptr(c, pl, &st->in[2], n->in[2]) : NULL;
    const mg_shape *s0 = n->ninputs > 0 ? &g->nodes[n->in[0]].type.shape : NULL;
    const mg_shape *s1 = n->ninputs > 1 ? &g->nodes[n->in[1]].type.shape : NULL;
    const char *k = NULL;
    switch (n->op) {
    case MG_OP_ADD: k = "mgk_add"; goto binary;
    case MG_OP_SUB: k = "mgk_sub"; goto binary;
    case MG_OP_MUL: k = "mgk_mul"; goto binary;
    case MG_OP_DIV: k = "mgk_div";
    binary: {
        const mg_shape *ops[3] = {s0, s1, &n->type.shape};
        iter4 it;
        if (!collapse(&n->type.shape, ops, 3, &it)) {
            too_complex(c, n);
            return;
        }
        LLVMValueRef a[15] = {ci64(c, it.d[0]), ci64(c, it.d[1]), ci64(c, it.d[2]), ci64(c, it.d[3]), x,
                              ci64(c, it.s[0][0]), ci64(c, it.s[0][1]), ci64(c, it.s[0][2]), ci64(c, it.s[0][3]), y,
                              ci64(c, it.s[1][0]), ci64(c, it.s[1][1]), ci64(c, it.s[1][2]), ci64(c, it.s[1][3]), out};
        call(c, k, dt, a, 15);
        return;
    }
    case MG_OP_NEG: k = "mgk_neg"; goto unary;
    case MG_OP_RELU: k = "mgk_relu"; goto unary;
    case MG_OP_TANH: k = "mgk_tanh"; goto unary;
    case MG_OP_SIGMOID: k = "mgk_sigmoid"; goto unary;
    case MG_OP_EXP: k = "mgk_exp"; goto unary;
    case MG_OP_LOG: k = "mgk_log";
    unary: {
        LLVMValueRef a[3] = {ci64(c, numel), x, out};
        call(c, k, dt, a, 3);
        return;
    }
    case MG_OP_RELU_GRAD: k = "mgk_relu_grad"; goto grad;
    case MG_OP_TANH_GRAD: k = "mgk_tanh_grad"; goto grad;
    case MG_OP_SIGMOID_GRAD: k = "mgk_sigmoid_grad";
    grad: {
        LLVMValueRef a[4] = {ci64(c, numel), x, y, out};
        call(c, k, dt, a, 4);
        return;
    }
    case MG_OP_MATMUL:
    case MG_OP_MATMUL_ACC: { /* _acc: acc copied to the result (unless in place), then added into */
        mg_matmul_geom m = mg_matmul_geometry(g, st->node);
        LLVMValueRef scratch = st->scratch >= 0 ? byte_ptr(c, c->ws, pl->bufs[st->scratch].offset) : LLVMConstNull(c->ptr);
        LLVMValueRef ta = LLVMConstInt(c->i32, (unsigned)n->iattr[0], 0), tb = LLVMConstInt(c->i32, (unsigned)n->iattr[1], 0);
        if (m.flat) { /* a scratch cap, smaller blocks (mg_step_scratch_cap: the graph's, microbatch.c, or the step's) */
            int64_t cap = mg_step_scratch_cap(g, st);
            LLVMValueRef a[14] = {ci64(c, m.M), ci64(c, m.N), ci64(c, m.K), x, ci64(c, m.lda), ta, y, ci64(c, m.ldb), tb,
                                  out, ci64(c, m.N), LLVMConstInt(c->i32, n->op == MG_OP_MATMUL_ACC, 0), scratch,
                                  ci64(c, cap)};
            if (n->op == MG_OP_MATMUL_ACC) copy_acc(c, pl, st, 2);
            call(c, cap > 0 ? "mgk_gemm_capped" : "mgk_gemm", dt, a, cap > 0 ? 14 : 13);
            return;
        }
        /* a stack of GEMMs: the batch axes collapsed, operand strides scaled to whole matrices */
        mg_shape bo = n->type.shape, ba = *s0, bb = *s1;
        bo.rank -= 2;
        ba.rank -= 2;
        bb.rank -= 2;
        const mg_shape *ops[2] = {&ba, &bb};
        iter4 it;
        if (!collapse(&bo, ops, 2, &it)) {
            too_complex(c, n);
            return;
        }
        int64_t ma = s0->dim[s0->rank - 2] * s0->dim[s0->rank - 1], mb = s1->dim[s1->rank - 2] * s1->dim[s1->rank - 1];
        LLVMValueRef a[23] = {ci64(c, it.d[0]), ci64(c, it.d[1]), ci64(c, it.d[2]), ci64(c, it.d[3]),
                              ci64(c, it.s[0][0] * ma), ci64(c, it.s[0][1] * ma), ci64(c, it.s[0][2] * ma),
                              ci64(c, it.s[0][3] * ma), ci64(c, it.s[1][0] * mb), ci64(c, it.s[1][1] * mb),
                              ci64(c, it.s[1][2] * mb), ci64(c, it.s[1][3] * mb), ci64(c, m.M), ci64(c, m.N),
                              ci64(c, m.K), x, ci64(c, m.lda), ta, y, ci64(c, m.ldb), tb, out, scratch};
        call(c, "mgk_gemm_batched", dt, a, 23);
        return;
    }
    case MG_OP_EMBEDDING:
    case MG_OP_EMBEDDING_GRAD:
    case MG_OP_EMBEDDING_GRAD_ACC: {
        const mg_shape *tab = n->op == MG_OP_EMBEDDING ? s1 : &n->type.shape;
        LLVMValueRef a[6] = {ci64(c, mg_shape_numel(s0)), ci64(c, tab->dim[0]), ci64(c, tab->dim[1]), x, y, out};
        if (n->op == MG_OP_EMBEDDING_GRAD_ACC) copy_acc(c, pl, st, 2);
        call(c, n->op == MG_OP_EMBEDDING ? "mgk_embedding" : n->op == MG_OP_EMBEDDING_GRAD ? "mgk_embedding_grad"
                                                                                        : "mgk_embedding_grad_acc",
             dt, a, 6);
        return;
    }
    case MG_OP_TRANSPOSE: {
        /* output axes (size-1 ones dropped) with the input stride of the axis each comes from;
         * neighbours that stay neighbours in the input merge */
        int64_t d[MG_MAX_RANK], st_[MG_MAX_RANK], instr[MG_MAX_RANK];
        int nd = 0;
        int64_t acc = 1;
        for (int i = s0->rank - 1; i >= 0; i--) {
            instr[i] = acc;
            acc *= s0->dim[i];
        }
        for (int i = 0; i < n->type.shape.rank; i++) {
            if (n->type.shape.dim[i] == 1) continue;
            if (nd > 0 && st_[nd - 1] == instr[n->iattr[i]] * n->type.shape.dim[i]) {
                d[nd - 1] *= n->type.shape.dim[i];
                st_[nd - 1] = instr[n->iattr[i]];
                continue;
            }
            d[nd] = n->type.shape.dim[i];
            st_[nd++] = instr[n->iattr[i]];
        }
        if (nd > 6) {
            c->failed = 1;
            mg_diag_set(c->d, n->loc, "transpose moves more than 6 separate groups of axes; not supported");
            return;
        }
        LLVMValueRef a[15];
        for (int i = 0; i < 6; i++) {
            int j = i - (6 - nd);
            a[i] = ci64(c, j >= 0 ? d[j] : 1);
            a[7 + i] = ci64(c, j >= 0 ? st_[j] : 0);
        }
        a[6] = x;
        a[13] = out;
        call(c, "mgk_transpose", dt, a, 14);
        return;
    }
    case MG_OP_SUM:
    case MG_OP_MEAN: {
        int64_t nx = mg_shape_numel(s0);
        LLVMValueRef a[4] = {ci64(c, nx), x, cf64(c, n->op == MG_OP_MEAN ? 1.0 / (double)nx : 1.0), out};
        call(c, "mgk_sum", dt, a, 4);
        return;
    }
    case MG_OP_SOFTMAX:
    case MG_OP_LOG_SOFTMAX:
    case MG_OP_SOFTMAX_GRAD:
    case MG_OP_LOG_SOFTMAX_GRAD: {
        /* an [outer, n, inner] view around the axis (iattr[0] counts from the last) */
        const mg_shape *s = &n->type.shape;
        int axis = s->rank - 1 - n->iattr[0];
        int64_t inner = 1;
        for (int i = axis + 1; i < s->rank; i++) inner *= s->dim[i];
        int64_t len = s->dim[axis];
        int fwd = n->op == MG_OP_SOFTMAX || n->op == MG_OP_LOG_SOFTMAX;
        LLVMValueRef a[6] = {ci64(c, numel / (len * inner)), ci64(c, len), ci64(c, inner), x, fwd ? out : y, out};
        k = n->op == MG_OP_SOFTMAX ? "mgk_softmax" : n->op == MG_OP_LOG_SOFTMAX ? "mgk_log_softmax"
          : n->op == MG_OP_SOFTMAX_GRAD ? "mgk_softmax_grad" : "mgk_log_softmax_grad";
        call(c, k, dt, a, fwd ? 5 : 6);
        return;
    }
    case MG_OP_GELU: {
        LLVMValueRef a[3] = {ci64(c, numel), x, out};
        call(c, n->iattr[0] ? "mgk_gelu_tanh" : "mgk_gelu", dt, a, 3);
        return;
    }
    case MG_OP_GELU_GRAD: {
        LLVMValueRef a[4] = {ci64(c, numel), x, y, out};
        call(c, n->iattr[0] ? "mgk_gelu_tanh_grad" : "mgk_gelu_grad", dt, a, 4);
        return;
    }
    case MG_OP_LAYER_NORM:
    case MG_OP_LAYER_NORM_GRAD_INPUT: {
        int64_t D = s0->dim[s0->rank - 1];
        LLVMValueRef a[7] = {ci64(c, mg_shape_numel(s0) / D), ci64(c, D), x, y, z, cf64(c, n->fattr), out};
        call(c, n->op == MG_OP_LAYER_NORM ? "mgk_layer_norm" : "mgk_layer_norm_grad_input", dt, a, 7);
        return;
    }
    case MG_OP_LAYER_NORM_GRAD_SCALE:
    case MG_OP_LAYER_NORM_GRAD_SCALE_ACC: {
        int64_t D = s0->dim[s0->rank - 1];
        LLVMValueRef a[6] = {ci64(c, mg_shape_numel(s0) / D), ci64(c, D), x, y, cf64(c, n->fattr), out};
        if (n->op == MG_OP_LAYER_NORM_GRAD_SCALE_ACC) copy_acc(c, pl, st, 2);
        call(c, n->op == MG_OP_LAYER_NORM_GRAD_SCALE ? "mgk_layer_norm_grad_scale" : "mgk_layer_norm_grad_scale_acc", dt,
             a, 6);
        return;
    }
    case MG_OP_CROSS_ENTROPY:
    case MG_OP_XENT_SUM:
    case MG_OP_XENT_SUM_ACC:
    case MG_OP_XENT_GRAD: { /* an [outer, C, inner] view around the class axis (iattr[0] counts from the last) */
        int axis = s0->rank - 1 - n->iattr[0];
        int64_t C = s0->dim[axis], inner = 1;
        for (int i = axis + 1; i < s0->rank; i++) inner *= s0->dim[i];
        int64_t outer = mg_shape_numel(s0) / (C * inner);
        if (n->op == MG_OP_CROSS_ENTROPY) {
            LLVMValueRef a[6] = {ci64(c, outer), ci64(c, C), ci64(c, inner), x, y, out};
            call(c, "mgk_xent", dt, a, 6);
        } else if (n->op != MG_OP_XENT_GRAD) { /* a part's sum, continuing the parts' before (z) */
            LLVMValueRef a[7] = {ci64(c, outer), ci64(c, C), ci64(c, inner), x, y, z ? z : LLVMConstNull(c->ptr), out};
            call(c, "mgk_xent_sum", g->nodes[n->in[0]].type.dtype, a, 7);
        } else { /* (iattr[1]: the whole batch's positions, where x is one part of it) */
            LLVMValueRef a[8] = {ci64(c, outer), ci64(c, C), ci64(c, inner), ci64(c, n->iattr[1] ? n->iattr[1] : outer * inner),
                                 x, y, z, out};
            call(c, "mgk_xent_grad", dt, a, 8);
        }
        return;
    }
    case MG_OP_XENT_MEAN: {
        LLVMValueRef a[3] = {ci64(c, n->iattr[1]), x, out};
        call(c, "mgk_xent_mean", dt, a, 3);
        return;
    }
    case MG_OP_CONCAT:
    case MG_OP_SLICE:
    case MG_OP_SLICE_GRAD: {
        /* [outer, axis, inner] views; byte strides. concat copies each operand into its columns */
        const mg_shape *full = n->op == MG_OP_SLICE ? s0 : &n->type.shape;
        int ax = n->iattr[0];
        int64_t es = (int64_t)mg_dtype_size(dt), outer = 1, inner = es, len = full->dim[ax];
        for (int i = 0; i < ax; i++) outer *= full->dim[i];
        for (int i = ax + 1; i < full->rank; i++) inner *= full->dim[i];
        if (n->op == MG_OP_CONCAT) {
            int64_t off = 0;
            for (int k = 0; k < n->ninputs && !c->failed; k++) {
                int64_t lk = g->nodes[n->in[k]].type.shape.dim[ax];
                const mg_place *pk = &st->in[k], *po = &st->out;
                if (outer == 1 && pk->mem != MG_MEM_WS && pk->mem == po->mem && pk->index == po->index &&
                    pk->offset == po->offset + off * inner) { /* computed in its place (problem.c) */
                    off += lk;
                    continue;
                }
                LLVMValueRef a[11] = {ci64(c, outer), ci64(c, 1), ci64(c, lk * inner), place_ptr(c, pl, &st->in[k], n->in[k]),
                                      ci64(c, lk * inner), ci64(c, 0), out, ci64(c, off * inner), ci64(c, len * inner),
                                      ci64(c, 0), ci64(c, 0)};
                call(c, "mgk_copy_blocks", MG_I32, a, 11);
                off += lk;
            }
            return;
        }
        int64_t L = n->op == MG_OP_SLICE ? n->type.shape.dim[ax] : s0->dim[ax], st1 = n->iattr[3] * inner;
        int64_t at = n->iattr[1] * inner;
        LLVMValueRef a[11] = {ci64(c, outer), ci64(c, L), ci64(c, inner), byte_ptr(c, x, at), ci64(c, len * inner),
                              ci64(c, st1), out, ci64(c, 0), ci64(c, L * inner), ci64(c, inner), ci64(c, 0)};
        if (n->op == MG_OP_SLICE_GRAD) { /* the transposed copy, into zeros */
            a[3] = x, a[4] = ci64(c, L * inner), a[5] = ci64(c, inner);
            a[7] = ci64(c, at), a[8] = ci64(c, len * inner), a[9] = ci64(c, st1), a[10] = ci64(c, numel * es);
        }
        call(c, "mgk_copy_blocks", MG_I32, a, 11);
        return;
    }
    case MG_OP_UPSAMPLE_NEAREST:
    case MG_OP_UPSAMPLE_NEAREST_GRAD: {
        const mg_shape *xs = n->op == MG_OP_UPSAMPLE_NEAREST ? s0 : &n->type.shape;
        LLVMValueRef a[6] = {ci64(c, xs->dim[0] * xs->dim[1]), ci64(c, xs->dim[2]), ci64(c, xs->dim[3]),
                             ci64(c, n->iattr[0]), x, out};
        call(c, n->op == MG_OP_UPSAMPLE_NEAREST ? "mgk_upsample_nearest" : "mgk_upsample_nearest_grad", dt, a, 6);
        return;
    }
    case MG_OP_MSE: {
        LLVMValueRef a[4] = {ci64(c, mg_shape_numel(s0)), x, y, out};
        call(c, "mgk_mse", dt, a, 4);
        return;
    }
    case MG_OP_MSE_GRAD: {
        LLVMValueRef a[6] = {ci64(c, numel), x, y, z, cf64(c, n->iattr[0] < 0 ? -1.0 : 1.0), out};
        call(c, "mgk_mse_grad", dt, a, 6);
        return;
    }
    case MG_OP_BROADCAST: {
        const mg_shape *ops[2] = {&n->type.shape, s0};
        iter4 it;
        if (!collapse(&n->type.shape, ops, 2, &it)) {
            too_complex(c, n);
            return;
        }
        LLVMValueRef a[11] = {ci64(c, it.d[0]), ci64(c, it.d[1]), ci64(c, it.d[2]), ci64(c, it.d[3]), x,
                              ci64(c, it.s[1][0]), ci64(c, it.s[1][1]), ci64(c, it.s[1][2]), ci64(c, it.s[1][3]),
                              cf64(c, n->fattr), out};
        call(c, "mgk_bcast", dt, a, 11);
        return;
    }
    case MG_OP_SUM_TO:
    case MG_OP_SUM_TO_ACC: {
        const mg_shape *ops[2] = {s0, &n->type.shape};
        iter4 it;
        if (!collapse(s0, ops, 2, &it)) {
            too_complex(c, n);
            return;
        }
        LLVMValueRef a[11] = {ci64(c, it.d[0]), ci64(c, it.d[1]), ci64(c, it.d[2]), ci64(c, it.d[3]), x,
                              ci64(c, it.s[1][0]), ci64(c, it.s[1][1]), ci64(c, it.s[1][2]), ci64(c, it.s[1][3]),
                              out, ci64(c, numel)};
        if (n->op == MG_OP_SUM_TO_ACC) copy_acc(c, pl, st, 1);
        call(c, n->op == MG_OP_SUM_TO ? "mgk_sum_to" : "mgk_sum_to_acc", dt, a, 11);
        return;
    }
    case MG_OP_CONV2D:
    case MG_OP_CONV2D_GRAD_INPUT:
    case MG_OP_CONV_TRANSPOSE2D: /* conv2d's input gradient with x as dy (geometry: mg_conv_geom) */
    case MG_OP_CONV2D_GRAD_WEIGHT:
    case MG_OP_CONV2D_GRAD_WEIGHT_ACC: {
        mgk_conv_geom k = mg_conv_geom(g, st->node);
        LLVMValueRef scratch = st->scratch >= 0 ? byte_ptr(c, c->ws, pl->bufs[st->scratch].offset) : LLVMConstNull(c->ptr);
        /* a scratch cap, smaller blocks (mg_step_scratch_cap: the graph's, microbatch.c, or the step's) */
        int64_t cap = mg_step_scratch_cap(g, st);
        int capped = cap > 0;
        LLVMValueRef a[18] = {ci64(c, k.N), ci64(c, k.C), ci64(c, k.H), ci64(c, k.W), ci64(c, k.Co), ci64(c, k.KH),
                              ci64(c, k.KW), ci64(c, k.OH), ci64(c, k.OW), ci64(c, k.stride), ci64(c, k.pad),
                              ci64(c, k.dil), ci64(c, k.groups), x, y, out, scratch, ci64(c, cap)};
        if (n->op == MG_OP_CONV2D_GRAD_WEIGHT_ACC) copy_acc(c, pl, st, 2);
        char name[48];
        snprintf(name, sizeof name, "%s%s",
                 n->op == MG_OP_CONV2D ? "mgk_conv2d" : n->op == MG_OP_CONV2D_GRAD_WEIGHT ? "mgk_conv2d_grad_weight"
                 : n->op == MG_OP_CONV2D_GRAD_WEIGHT_ACC ? "mgk_conv2d_grad_weight_acc" : "mgk_conv2d_grad_input",
                 capped ? "_capped" : "");
        call(c, name, dt, a, capped ? 18 : 17);
        return;
    }
    case MG_OP_MAX_POOL2D:
    case MG_OP_AVG_POOL2D:
    case MG_OP_MAX_POOL2D_GRAD:
    case MG_OP_AVG_POOL2D_GRAD: {
        /* geometry from the forward input: x's shape is in[0] or, for avg_pool2d_grad, the result */
        const mg_shape *xs = n->op == MG_OP_AVG_POOL2D_GRAD ? &n->type.shape : s0;
        int64_t H = xs->dim[2], W = xs->dim[3], K = n->iattr[0];
        int64_t OH = mg_window_out(H, K, n->iattr[1], n->iattr[2], 1), OW = mg_window_out(W, K, n->iattr[1], n->iattr[2], 1);
        LLVMValueRef a[11] = {ci64(c, xs->dim[0] * xs->dim[1]), ci64(c, H), ci64(c, W), ci64(c, OH), ci64(c, OW),
                              ci64(c, K), ci64(c, n->iattr[1]), ci64(c, n->iattr[2]), x, y ? y : out, out};
        const char *kn = n->op == MG_OP_MAX_POOL2D ? "mgk_max_pool2d" : n->op == MG_OP_AVG_POOL2D ? "mgk_avg_pool2d"
                       : n->op == MG_OP_MAX_POOL2D_GRAD ? "mgk_max_pool2d_grad" : "mgk_avg_pool2d_grad";
        call(c, kn, dt, a, n->op == MG_OP_MAX_POOL2D_GRAD ? 11 : 10);
        return;
    }
    case MG_OP_GLOBAL_AVG_POOL: {
        LLVMValueRef a[4] = {ci64(c, s0->dim[0] * s0->dim[1]), ci64(c, s0->dim[2] * s0->dim[3]), x, out};
        call(c, "mgk_row_mean", dt, a, 4);
        return;
    }
    case MG_OP_BATCH_NORM:
    case MG_OP_BATCH_NORM_GRAD_INPUT:
    case MG_OP_BATCH_NORM_GRAD_SCALE:
    case MG_OP_BATCH_NORM_GRAD_SHIFT: {
        int64_t N = s0->dim[0], C = s0->dim[1], S = mg_shape_numel(s0) / (N * C);
        LLVMValueRef nul = LLVMConstNull(c->ptr), rm = nul, rv = nul, eps = cf64(c, n->fattr);
        if (n->op == MG_OP_BATCH_NORM && (c->mode == CG_EVAL || (c->mode == CG_TRAIN && !c->bn_done[st->node]))) {
            /* inference reads the running statistics; in a training step the first computation
             * of the node updates them and a recomputation (a later step) leaves them alone */
            rm = byte_ptr(c, c->state, c->bn_state[st->node]);
            rv = byte_ptr(c, c->state, c->bn_var[st->node]);
            c->bn_done[st->node] = c->mode == CG_TRAIN;
        }
        LLVMValueRef dims[3] = {ci64(c, N), ci64(c, C), ci64(c, S)};
        if (n->op == MG_OP_BATCH_NORM && c->mode == CG_EVAL) {
            LLVMValueRef a[10] = {dims[0], dims[1], dims[2], x, y, z, eps, rm, rv, out};
            call(c, "mgk_batch_norm_eval", dt, a, 10);
        } else if (n->op == MG_OP_BATCH_NORM) {
            LLVMValueRef a[11] = {dims[0], dims[1], dims[2], x, y, z, eps, cf64(c, n->fattr2), rm, rv, out};
            call(c, "mgk_batch_norm", dt, a, 11);
        } else if (n->op == MG_OP_BATCH_NORM_GRAD_INPUT) { /* (x, scale, dy) */
            LLVMValueRef a[8] = {dims[0], dims[1], dims[2], x, y, z, eps, out};
            call(c, "mgk_batch_norm_grad_input", dt, a, 8);
        } else if (n->op == MG_OP_BATCH_NORM_GRAD_SCALE) { /* (x, dy) */
            LLVMValueRef a[7] = {dims[0], dims[1], dims[2], x, y, eps, out};
            call(c, "mgk_batch_norm_grad_scale", dt, a, 7);
        } else {
            LLVMValueRef a[5] = {dims[0], dims[1], dims[2], x, out};
            call(c, "mgk_batch_norm_grad_shift", dt, a, 5);
        }
        return;
    }
    case MG_OP_BN_STATS:
    case MG_OP_BN_STATS_ACC:
    case MG_OP_BN_APPLY:
    case MG_OP_BN_GRAD_SUMS:
    case MG_OP_BN_GRAD_APPLY: { /* batch_norm over a batch in parts (microbatch.c) */
        int64_t N = s0->dim[0], C = s0->dim[1], S = mg_shape_numel(s0) / (N * C);
        mg_dtype xt = g->nodes[n->in[0]].type.dtype;
        LLVMValueRef nul = LLVMConstNull(c->ptr), eps = cf64(c, n->fattr);
        LLVMValueRef w = n->ninputs > 3 ? place_ptr(c, pl, &st->in[3], n->in[3]) : NULL;
        LLVMValueRef dims[4] = {ci64(c, N), ci64(c, C), ci64(c, S), ci64(c, n->iattr[0])};
        if (n->op == MG_OP_BN_STATS || n->op == MG_OP_BN_STATS_ACC) {
            if (c->mode == CG_EVAL) return; /* inference normalises with the running statistics */
            LLVMValueRef a[8] = {dims[0], dims[1], dims[2], dims[3], ci64(c, n->op == MG_OP_BN_STATS ? 0 : n->iattr[1]),
                                 x, y ? y : nul, out};
            call(c, "mgk_bn_stats", xt, a, 8);
        } else if (n->op == MG_OP_BN_APPLY) {
            /* the running statistics: those of the batch_norm (its first part's bn_apply owns the
             * state entries); inference reads them, a training step moves them on the first
             * computation of the first part */
            int owner = -1;
            for (int i = 0; i < g->n && owner < 0; i++)
                if (g->nodes[i].op == MG_OP_BN_APPLY && g->nodes[i].iattr[2] == 0 && g->nodes[i].iattr[1] == n->iattr[1])
                    owner = i;
            LLVMValueRef rm = nul, rv = nul;
            if (owner >= 0 && (c->mode == CG_EVAL || (c->mode == CG_TRAIN && owner == st->node && !c->bn_done[owner]))) {
                rm = byte_ptr(c, c->state, c->bn_state[owner]);
                rv = byte_ptr(c, c->state, c->bn_var[owner]);
                c->bn_done[owner] = c->mode == CG_TRAIN;
            }
            if (c->mode == CG_EVAL) {
                LLVMValueRef a[10] = {dims[0], dims[1], dims[2], x, y, z, eps, rm, rv, out};
                call(c, "mgk_batch_norm_eval", dt, a, 10);
            } else {
                LLVMValueRef a[13] = {dims[0], dims[1], dims[2], dims[3], x, y, z, w, eps, cf64(c, n->fattr2), rm, rv, out};
                call(c, "mgk_bn_apply", dt, a, 13);
            }
        } else if (n->op == MG_OP_BN_GRAD_SUMS) { /* (x, dy, sums): the first part reads the [2,C] statistics */
            int first = g->nodes[n->in[2]].type.shape.dim[0] == 2;
            LLVMValueRef a[10] = {dims[0], dims[1], dims[2], dims[3], ci64(c, first), x, y, z, eps, out};
            call(c, "mgk_bn_grad_sums", xt, a, 10);
        } else { /* (x, scale, dy, sums) */
            LLVMValueRef a[10] = {dims[0], dims[1], dims[2], dims[3], x, y, z, w, eps, out};
            call(c, "mgk_bn_grad_apply", dt, a, 10);
        }
        return;
    }
    case MG_OP_BN_GRAD_PARAM: {
        LLVMValueRef a[4] = {ci64(c, n->type.shape.dim[0]), ci64(c, n->iattr[1]), x, out};
        call(c, "mgk_bn_grad_param", dt, a, 4);
        return;
    }
    case MG_OP_DROPOUT:
    case MG_OP_DROPOUT_GRAD: {
        if (c->mode == CG_EVAL) { /* inference: the identity */
            LLVMValueRef a[3] = {ci64(c, (int64_t)mg_node_bytes(g, st->node)), x, out};
            call(c, "mgk_copy", MG_I32, a, 3);
            return;
        }
        int key = n->op == MG_OP_DROPOUT ? st->node : n->iattr[1];
        LLVMValueRef a[7] = {ci64(c, numel), x, cf64(c, n->fattr), ci64(c, n->iattr[0]),
                             byte_ptr(c, c->state, c->step_off), ci64(c, key), out};
        call(c, "mgk_dropout", dt, a, 7);
        return;
    }
    case MG_OP_RESHAPE:
    case MG_OP_FLATTEN: {
        LLVMValueRef a[3] = {ci64(c, (int64_t)mg_node_bytes(g, st->node)), x, out};
        call(c, "mgk_copy", MG_I32, a, 3);
        return;
    }
    default:
        c->failed = 1;
        mg_diag_set(c->d, n->loc, "internal error: no code generation for '%s'", mg_ops[n->op].name);
    }
}

/* One loop nest over the collapsed iteration space of a fused chain (fuse.c found it). Leaf
 * operands are read with their broadcast strides, each step's element function (the one its
 * kernel calls) is applied in the chain's order, and only the last value is stored. */
typedef struct fchain {
    const mg_plan *pl;
    int s, len, nleaf;
    int64_t st[MAX_ITER_OPS][4]; /* per operand (0: the result, then the leaves) and axis */
    int64_t d[4];
    LLVMValueRef base[MAX_ITER_OPS];
    LLVMValueRef fn[MG_FUSE_MAX_STEPS];
    int leaf_of[MG_FUSE_MAX_STEPS][3]; /* operand number of each input, -1: the previous step's value */
    LLVMTypeRef t;
} fchain;

static void fused_body(cg *c, fchain *f, LLVMValueRef *off)
{
    LLVMValueRef leaf[MAX_ITER_OPS] = {0}, prev = NULL;
    for (int k = 1; k <= f->nleaf; k++) {
        LLVMValueRef p = LLVMBuildGEP2(c->b, f->t, f->base[k], &off[k], 1, "");
        leaf[k] = LLVMBuildLoad2(c->b, f->t, p, "");
    }
    for (int u = 0; u < f->len; u++) {
        const mg_node *n = &c->g->nodes[f->pl->steps[f->s + u].node];
        LLVMValueRef a[3];
        for (int k = 0; k < n->ninputs; k++) a[k] = f->leaf_of[u][k] < 0 ? prev : leaf[f->leaf_of[u][k]];
        prev = LLVMBuildCall2(c->b, LLVMGlobalGetValueType(f->fn[u]), f->fn[u], a, (unsigned)n->ninputs, "");
    }
    LLVMValueRef p = LLVMBuildGEP2(c->b, f->t, f->base[0], &off[0], 1, "");
    LLVMBuildStore(c->b, prev, p);
}

static void fused_nest(cg *c, fchain *f, int axis, LLVMValueRef *off)
{
    if (axis == 4) {
        fused_body(c, f, off);
        return;
    }
    if (f->d[axis] == 1) {
        fused_nest(c, f, axis + 1, off);
        return;
    }
    char name[48];
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(c->b);
    LLVMValueRef fn = LLVMGetBasicBlockParent(pre);
    snprintf(name, sizeof name, "fuse%d.loop%d", c->nfused, axis);
    LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(c->ctx, fn, name);
    snprintf(name, sizeof name, "fuse%d.done%d", c->nfused, axis);
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(c->ctx, fn, name);
    LLVMBuildBr(c->b, head);
    LLVMPositionBuilderAtEnd(c->b, head);
    LLVMValueRef i = LLVMBuildPhi(c->b, c->i64, "");
    LLVMValueRef zero = ci64(c, 0);
    LLVMAddIncoming(i, &zero, &pre, 1);
    LLVMValueRef inner[MAX_ITER_OPS];
    for (int k = 0; k <= f->nleaf; k++)
        inner[k] = f->st[k][axis] == 0 ? off[k]
                 : LLVMBuildNSWAdd(c->b, off[k], LLVMBuildNSWMul(c->b, i, ci64(c, f->st[k][axis]), ""), "");
    fused_nest(c, f, axis + 1, inner);
    LLVMValueRef next = LLVMBuildNSWAdd(c->b, i, ci64(c, 1), "");
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(c->b);
    LLVMAddIncoming(i, &next, &latch, 1);
    LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, next, ci64(c, f->d[axis]), ""), head, done);
    LLVMPositionBuilderAtEnd(c->b, done);
}

/* Emits steps s .. s+len-1 as one loop; returns 0 (emitting nothing) when the broadcast
 * space does not collapse to 4 axes, so the caller emits the steps one by one. */
static int emit_fused(cg *c, const mg_plan *pl, int s, int len)
{
    const mg_graph *g = c->g;
    const mg_step *last = &pl->steps[s + len - 1];
    const mg_node *res = &g->nodes[last->node];
    fchain f = {.pl = pl, .s = s, .len = len};
    const mg_shape *ops[MAX_ITER_OPS] = {&res->type.shape};
    const mg_step *leaf_step[MAX_ITER_OPS] = {0};
    int leaf_in[MAX_ITER_OPS] = {0};
    f.t = res->type.dtype == MG_F64 ? c->f64 : c->f32;
    for (int u = 0; u < len; u++) {
        const mg_step *st = &pl->steps[s + u];
        const mg_node *n = &g->nodes[st->node];
        char name[64];
        snprintf(name, sizeof name, "%s_%s", mg_fuse_elem_fn(g, st->node, NULL), n->type.dtype == MG_F64 ? "f64" : "f32");
        f.fn[u] = LLVMGetNamedFunction(c->mod, name);
        if (!f.fn[u]) {
            c->failed = 1;
            mg_diag_set(c->d, n->loc, "internal error: element function %s missing from the kernel library", name);
            return 1;
        }
        for (int k = 0; k < n->ninputs; k++) {
            if (u > 0 && n->in[k] == pl->steps[s + u - 1].node) {
                f.leaf_of[u][k] = -1;
                continue;
            }
            if (f.nleaf + 1 >= MAX_ITER_OPS) return 0;
            f.leaf_of[u][k] = ++f.nleaf;
            ops[f.nleaf] = &g->nodes[n->in[k]].type.shape;
            leaf_step[f.nleaf] = st;
            leaf_in[f.nleaf] = k;
        }
    }
    iter4 it;
    if (!collapse(&res->type.shape, ops, f.nleaf + 1, &it)) return 0;
    memcpy(f.d, it.d, sizeof f.d);
    memcpy(f.st, it.s, sizeof f.st);
    f.base[0] = place_ptr(c, pl, &last->out, last->node);
    for (int k = 1; k <= f.nleaf; k++) {
        int node = g->nodes[leaf_step[k]->node].in[leaf_in[k]];
        f.base[k] = place_ptr(c, pl, &leaf_step[k]->in[leaf_in[k]], node);
    }
    LLVMValueRef off[MAX_ITER_OPS];
    for (int k = 0; k <= f.nleaf; k++) off[k] = ci64(c, 0);
    if (!c->outline) {
        fused_nest(c, &f, 0, off);
        c->nfused++;
        return 1;
    }
    /* a step function (see step_fn) keyed by 'F', the element type, each step's element
     * function and operands, the loop bounds and strides, and per operand the constant base
     * or 0 (an argument) */
    uintptr_t key[4 + 4 * MG_FUSE_MAX_STEPS + 4 + 5 * MAX_ITER_OPS];
    size_t n = 0;
    LLVMValueRef pass[MAX_ITER_OPS];
    LLVMTypeRef types[MAX_ITER_OPS];
    unsigned np = 0;
    key[n++] = 'F';
    key[n++] = (uintptr_t)f.t;
    key[n++] = (uintptr_t)len;
    key[n++] = (uintptr_t)f.nleaf;
    for (int u = 0; u < len; u++) {
        key[n++] = (uintptr_t)f.fn[u];
        for (int k = 0; k < 3; k++) key[n++] = (uintptr_t)(intptr_t)f.leaf_of[u][k];
    }
    for (int a = 0; a < 4; a++) key[n++] = (uintptr_t)f.d[a];
    for (int k = 0; k <= f.nleaf; k++) {
        for (int a = 0; a < 4; a++) key[n++] = (uintptr_t)f.st[k][a];
        int cst = LLVMIsConstant(f.base[k]);
        key[n++] = cst ? (uintptr_t)f.base[k] : 0;
        if (!cst) {
            types[np] = LLVMTypeOf(f.base[k]);
            pass[np++] = f.base[k];
        }
    }
    step_fn *e = step_fn_slot(c, key, n);
    if (!e->fn) {
        LLVMBasicBlockRef at = LLVMGetInsertBlock(c->b);
        e->fn = step_fn_begin(c, "mg.fused", types, np);
        for (int k = 0, j = 0; k <= f.nleaf; k++)
            if (!LLVMIsConstant(f.base[k])) f.base[k] = LLVMGetParam(e->fn, (unsigned)j++);
        fused_nest(c, &f, 0, off);
        c->nfused++;
        LLVMBuildRetVoid(c->b);
        LLVMPositionBuilderAtEnd(c->b, at);
    }
    LLVMBuildCall2(c->b, LLVMGlobalGetValueType(e->fn), e->fn, pass, np, "");
    return 1;
}

static void load_ptr_array(cg *c, LLVMValueRef arr, int n, LLVMValueRef *out)
{
    for (int i = 0; i < n; i++) {
        LLVMValueRef idx = ci64(c, i);
        LLVMValueRef slot = LLVMBuildInBoundsGEP2(c->b, c->ptr, arr, &idx, 1, "");
        out[i] = LLVMBuildLoad2(c->b, c->ptr, slot, "");
    }
}

/* Steps [from, to) of pl, a fused chain starting before `to` whole; returns the step after the
 * last one emitted. */
static int emit_step_range(cg *c, const mg_plan *pl, int from, int to)
{
    int s = from;
    for (; s < to && !c->failed; s++) {
        const mg_step *st = &pl->steps[s];
        int len = c->no_fuse ? 1 : mg_fuse_chain(pl, c->g, s);
        if (len > 1 && emit_fused(c, pl, s, len)) {
            s += len - 1;
            continue;
        }
        if (st->kind == MG_STEP_COMPUTE) {
            emit_compute(c, pl, st);
        } else {
            int64_t bytes = (int64_t)mg_node_bytes(c->g, st->node);
            LLVMValueRef dst = place_ptr(c, pl, &st->out, st->node);
            if (st->kind == MG_STEP_ZERO) {
                LLVMValueRef a[2] = {ci64(c, bytes), dst};
                call(c, "mgk_zero", MG_I32, a, 2);
            } else {
                LLVMValueRef a[3] = {ci64(c, bytes), place_ptr(c, pl, &st->in[0], st->node), dst};
                call(c, "mgk_copy", MG_I32, a, 3);
            }
        }
    }
    return s;
}

/* A plan of more than CHUNK_STEPS steps is emitted as a call to one internal, never-inlined
 * function per CHUNK_STEPS steps, each taking the current function's pointers: LLVM's time on one
 * function grows faster than its length (a chain of 1,666 matmul layers in 2 parts, 18,340
 * steps: compiled in 29.5 s as one train_step of 16,681 calls, in 14.0 s in chunks, 10 of them
 * planning). The bits are the same, and a call per chunk costs nothing next to its kernels
 * (the transformer at 25%, 1,997 steps: 356.7 ms a step against 355.4 ms unchunked). */
enum { CHUNK_STEPS = 512 };

/* The current function's pointers from now on: ptr[0..5] are params, grads, inputs, outputs,
 * workspace and state; the input pointers (and, but in train_step, the output ones) are loaded anew. */
static void use_pointers(cg *c, const LLVMValueRef *ptr)
{
    c->params = ptr[0], c->grads = ptr[1], c->inputs = ptr[2], c->outputs = ptr[3], c->ws = ptr[4], c->state = ptr[5];
    load_ptr_array(c, c->inputs, c->g->ninputs, c->in_ptr);
    if (c->mode != CG_TRAIN) load_ptr_array(c, c->outputs, c->g->noutputs, c->out_ptr);
}

/* pl's steps as calls to chunk functions of CHUNK_STEPS steps each. */
static void emit_chunks(cg *c, const mg_plan *pl)
{
    LLVMValueRef outer[6] = {c->params, c->grads, c->inputs, c->outputs, c->ws, c->state};
    LLVMTypeRef types[6] = {c->ptr, c->ptr, c->ptr, c->ptr, c->ptr, c->ptr};
    LLVMBasicBlockRef at = LLVMGetInsertBlock(c->b);
    for (int s = 0; s < pl->nsteps && !c->failed;) {
        LLVMValueRef fn = step_fn_begin(c, "mg.chunk", types, 6), inner[6];
        for (unsigned i = 0; i < 6; i++) inner[i] = LLVMGetParam(fn, i);
        use_pointers(c, inner);
        s = emit_step_range(c, pl, s, s + CHUNK_STEPS < pl->nsteps ? s + CHUNK_STEPS : pl->nsteps);
        LLVMBuildRetVoid(c->b);
        LLVMPositionBuilderAtEnd(c->b, at);
        LLVMBuildCall2(c->b, LLVMGlobalGetValueType(fn), fn, outer, 6, "");
    }
    use_pointers(c, outer); /* (what the caller emits after the steps reads its own) */
}

static void emit_steps(cg *c, const mg_plan *pl)
{
    c->outline = 1;
    if (pl->nsteps <= CHUNK_STEPS) emit_step_range(c, pl, 0, pl->nsteps);
    else emit_chunks(c, pl);
    c->outline = 0;
}

static LLVMValueRef begin_function(cg *c, const char *name, LLVMTypeRef ret, LLVMTypeRef *args, unsigned n)
{
    char full[300];
    snprintf(full, sizeof full, "%s_%s", c->g->model_name, name);
    LLVMValueRef fn = LLVMAddFunction(c->mod, full, LLVMFunctionType(ret, args, n, 0));
    LLVMAppendBasicBlockInContext(c->ctx, fn, "entry");
    LLVMPositionBuilderAtEnd(c->b, LLVMGetEntryBasicBlock(fn));
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                            LLVMCreateEnumAttribute(c->ctx, LLVMGetEnumAttributeKindForName("nounwind", 8), 0));
    return fn;
}

/* Zero the alignment padding between the tensors of a params or grads blob, so that a blob
 * the generated code filled is fully defined (a saved parameter file does not carry whatever
 * the caller's memory held there, and two runs give byte-identical blobs). */
static void zero_param_padding(cg *c, LLVMValueRef blob)
{
    int np = c->g->nparams;
    int64_t *off = malloc(((size_t)np + 1) * sizeof *off);
    if (!off) abort();
    off[np] = mg_param_layout(c->g, off);
    for (int i = 0; i < np; i++) {
        int64_t end = off[i] + (int64_t)mg_node_bytes(c->g, c->g->params[i]);
        if (end < off[i + 1])
            LLVMBuildMemSet(c->b, byte_ptr(c, blob, end), LLVMConstInt(c->i8, 0, 0), ci64(c, off[i + 1] - end), 1);
    }
    free(off);
}

/* Models with state take the state blob as a last argument (train_step) or after params
 * (forward, forward_train). */
static void emit_train_step(cg *c)
{
    const mg_plan *pl = c->p->train;
    LLVMTypeRef args[5] = {c->ptr, c->ptr, c->ptr, c->ptr, c->ptr};
    LLVMValueRef fn = begin_function(c, "train_step", c->f32, args, c->nsent ? 5 : 4);
    c->params = LLVMGetParam(fn, 0);
    c->grads = LLVMGetParam(fn, 1);
    c->inputs = LLVMGetParam(fn, 2);
    c->ws = LLVMGetParam(fn, 3);
    c->state = c->nsent ? LLVMGetParam(fn, 4) : LLVMConstNull(c->ptr);
    c->outputs = LLVMConstNull(c->ptr);
    c->mode = CG_TRAIN;
    memset(c->bn_done, 0, (size_t)c->g->n);
    zero_param_padding(c, c->grads);
    load_ptr_array(c, c->inputs, c->g->ninputs, c->in_ptr);
    emit_steps(c, pl);
    if (c->failed) return;
    if (c->nsent) {
        LLVMValueRef a[1] = {byte_ptr(c, c->state, c->step_off)};
        call(c, "mgk_step_advance", MG_I32, a, 1);
    }
    const mg_node *L = &c->g->nodes[pl->result];
    LLVMTypeRef lt = L->type.dtype == MG_F64 ? c->f64 : c->f32;
    LLVMValueRef v = LLVMBuildLoad2(c->b, lt, place_ptr(c, pl, &pl->result_at, pl->result), "loss");
    if (L->type.dtype == MG_F64) v = LLVMBuildFPTrunc(c->b, v, c->f32, "");
    LLVMBuildRet(c->b, v);
}

static void emit_forward(cg *c, int training)
{
    LLVMTypeRef args[5] = {c->ptr, c->ptr, c->ptr, c->ptr, c->ptr};
    int st = c->nsent ? 1 : 0;
    LLVMValueRef fn = begin_function(c, training ? "forward_train" : "forward", c->voidt, args, 4 + (unsigned)st);
    c->params = LLVMGetParam(fn, 0);
    c->state = st ? LLVMGetParam(fn, 1) : LLVMConstNull(c->ptr);
    c->inputs = LLVMGetParam(fn, 1 + (unsigned)st);
    c->outputs = LLVMGetParam(fn, 2 + (unsigned)st);
    c->ws = LLVMGetParam(fn, 3 + (unsigned)st);
    c->mode = training ? CG_FORWARD_TRAIN : CG_EVAL;
    c->grads = LLVMConstNull(c->ptr);
    load_ptr_array(c, c->inputs, c->g->ninputs, c->in_ptr);
    load_ptr_array(c, c->outputs, c->g->noutputs, c->out_ptr);
    emit_steps(c, c->p->forward);
    LLVMBuildRetVoid(c->b);
}

/* NAME_init_state: running means 0, running variances 1, the step counter 0 (as PyTorch). */
static void emit_init_state(cg *c)
{
    LLVMTypeRef args[1] = {c->ptr};
    LLVMValueRef fn = begin_function(c, "init_state", c->voidt, args, 1);
    LLVMValueRef state = LLVMGetParam(fn, 0);
    for (int i = 0; i < c->nsent; i++) {
        const mg_state_entry *e = &c->sent[i];
        if (e->kind == MG_STATE_STEP) {
            LLVMValueRef a[2] = {ci64(c, e->bytes), byte_ptr(c, state, e->offset)};
            call(c, "mgk_zero", MG_I32, a, 2);
            continue;
        }
        const mg_node *n = &c->g->nodes[e->node];
        LLVMValueRef a[8] = {ci64(c, mg_shape_numel(&c->g->nodes[n->in[1]].type.shape)),
                             LLVMConstInt(c->i32, e->kind == MG_STATE_RUNNING_VAR ? MG_INIT_ONES : MG_INIT_ZEROS, 0),
                             cf64(c, 0), cf64(c, 1), cf64(c, 1), ci64(c, 0), ci64(c, 0), byte_ptr(c, state, e->offset)};
        call(c, "mgk_init", n->type.dtype, a, 8);
    }
    LLVMBuildRetVoid(c->b);
}

static void fans(const mg_shape *s, double *fan_in, double *fan_out)
{
    if (s->rank == 0) *fan_in = *fan_out = 1;
    else if (s->rank == 1) *fan_in = *fan_out = (double)s->dim[0];
    else if (s->rank == 2) {
        *fan_in = (double)s->dim[0]; /* weights are [in, out]: x @ w */
        *fan_out = (double)s->dim[1];
    } else {
        double rf = 1;
        for (int i = 2; i < s->rank; i++) rf *= (double)s->dim[i];
        *fan_in = (double)s->dim[1] * rf; /* [out, in, k...] */
        *fan_out = (double)s->dim[0] * rf;
    }
}

static void emit_init_params(cg *c)
{
    LLVMTypeRef args[2] = {c->ptr, c->i64};
    LLVMValueRef fn = begin_function(c, "init_params", c->voidt, args, 2);
    LLVMValueRef params = LLVMGetParam(fn, 0), seed = LLVMGetParam(fn, 1);
    zero_param_padding(c, params);
    int64_t *off = malloc(((size_t)c->g->nparams + 1) * sizeof *off);
    if (!off) abort();
    mg_param_layout(c->g, off);
    for (int i = 0; i < c->g->nparams; i++) {
        const mg_node *n = &c->g->nodes[c->g->params[i]];
        double fi, fo;
        fans(&n->type.shape, &fi, &fo);
        /* each parameter's stream is keyed by its name, so adding a parameter elsewhere does
         * not change how the others start */
        uint64_t stream = XXH64(n->name, strlen(n->name), 0);
        LLVMValueRef a[8] = {ci64(c, mg_shape_numel(&n->type.shape)), LLVMConstInt(c->i32, (unsigned)n->init, 0),
                             cf64(c, n->init_arg), cf64(c, fi), cf64(c, fo), seed,
                             LLVMConstInt(c->i64, stream, 0), byte_ptr(c, params, off[i])};
        call(c, "mgk_init", n->type.dtype, a, 8);
        if (c->failed) break;
        /* not inlined: specialising the kernel's loop once per parameter took LLVM most of a
         * large model's compile (1,666 parameters: 25.1 s -> 8.3 s), for a function run once */
        LLVMValueRef site = LLVMGetLastInstruction(LLVMGetInsertBlock(c->b));
        LLVMAddCallSiteAttribute(site, LLVMAttributeFunctionIndex,
                                 LLVMCreateEnumAttribute(c->ctx, LLVMGetEnumAttributeKindForName("noinline", 8), 0));
    }
    free(off);
    LLVMBuildRetVoid(c->b);
}

/* const mg_tensor_desc NAME_KIND_desc[] = { {name, dtype, rank, shape[8], offset, bytes}, ... }
 * offset and bytes are size_t in the header, so they take the target's size_t here: as i64 on a
 * 32-bit target each entry was 8 bytes longer than the caller's struct (92 against 84 on i686),
 * whose program read bytes 0 and the second entry's name from inside the first (review22). */
static void emit_descs(cg *c, const char *kind, int n, const int *nodes, const char *const *names,
                       const int64_t *offsets)
{
    LLVMTypeRef fields[6] = {c->ptr, c->i32, c->i32, LLVMArrayType2(c->i64, MG_MAX_RANK), c->size, c->size};
    LLVMTypeRef st = LLVMStructTypeInContext(c->ctx, fields, 6, 0);
    LLVMValueRef *elems = malloc(((size_t)n + 1) * sizeof *elems);
    if (!elems) abort();
    for (int i = 0; i < n; i++) {
        /* state entries (nodes NULL) describe a running statistic ([C], the scale's type) or the step */
        const mg_state_entry *se = nodes ? NULL : &c->sent[i];
        mg_node step = {.type = {MG_I32, {1, {1}}}};
        const mg_node *nd = se ? (se->kind == MG_STATE_STEP ? &step : &c->g->nodes[c->g->nodes[se->node].in[1]])
                               : &c->g->nodes[nodes[i]];
        const char *nm = names ? names[i] : nd->name;
        LLVMValueRef str = LLVMConstStringInContext2(c->ctx, nm, strlen(nm), 0);
        LLVMValueRef sg = LLVMAddGlobal(c->mod, LLVMTypeOf(str), "mg.name");
        LLVMSetInitializer(sg, str);
        LLVMSetGlobalConstant(sg, 1);
        LLVMSetLinkage(sg, LLVMPrivateLinkage);
        LLVMSetUnnamedAddress(sg, LLVMGlobalUnnamedAddr);
        LLVMValueRef dims[MG_MAX_RANK];
        for (int k = 0; k < MG_MAX_RANK; k++) dims[k] = ci64(c, k < nd->type.shape.rank ? nd->type.shape.dim[k] : 0);
        int64_t bytes = se ? se->bytes : (int64_t)mg_node_bytes(c->g, nodes[i]);
        LLVMValueRef f[6] = {sg, LLVMConstInt(c->i32, (unsigned)nd->type.dtype, 0),
                             LLVMConstInt(c->i32, (unsigned)nd->type.shape.rank, 0),
                             LLVMConstArray2(c->i64, dims, MG_MAX_RANK),
                             LLVMConstInt(c->size, (unsigned long long)(offsets ? offsets[i] : 0), 0),
                             LLVMConstInt(c->size, (unsigned long long)bytes, 0)};
        elems[i] = LLVMConstStructInContext(c->ctx, f, 6, 0);
    }
    char name[300];
    snprintf(name, sizeof name, "%s_%s_desc", c->g->model_name, kind);
    LLVMValueRef arr = LLVMConstArray2(st, elems, (uint64_t)n);
    LLVMValueRef gv = LLVMAddGlobal(c->mod, LLVMTypeOf(arr), name);
    LLVMSetInitializer(gv, arr);
    LLVMSetGlobalConstant(gv, 1);
    free(elems);
}

static int is_export(const mg_graph *g, const char *name)
{
    size_t k = strlen(g->model_name);
    return !strncmp(name, g->model_name, k) && name[k] == '_' &&
           (!strcmp(name + k + 1, "train_step") || !strcmp(name + k + 1, "forward") ||
            !strcmp(name + k + 1, "init_params") || !strcmp(name + k + 1, "params_desc") ||
            !strcmp(name + k + 1, "inputs_desc") || !strcmp(name + k + 1, "outputs_desc") ||
            !strcmp(name + k + 1, "forward_train") || !strcmp(name + k + 1, "init_state") ||
            !strcmp(name + k + 1, "state_desc") || !strcmp(name + k + 1, "plan_hash"));
}

/* Internal linkage for everything but the model's API; every function retargeted. */
static void finalize_symbols(cg *c, const char *cpu, const char *features)
{
    for (LLVMValueRef f = LLVMGetFirstFunction(c->mod); f; f = LLVMGetNextFunction(f)) {
        if (LLVMIsDeclaration(f)) continue;
        size_t len;
        const char *nm = LLVMGetValueName2(f, &len);
        if (!is_export(c->g, nm)) LLVMSetLinkage(f, LLVMInternalLinkage);
        LLVMRemoveStringAttributeAtIndex(f, LLVMAttributeFunctionIndex, "target-cpu", 10);
        LLVMRemoveStringAttributeAtIndex(f, LLVMAttributeFunctionIndex, "target-features", 15);
        LLVMRemoveStringAttributeAtIndex(f, LLVMAttributeFunctionIndex, "tune-cpu", 8);
        LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                                LLVMCreateStringAttribute(c->ctx, "target-cpu", 10, cpu, (unsigned)strlen(cpu)));
        if (features && *features)
            LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                                    LLVMCreateStringAttribute(c->ctx, "target-features", 15, features,
                                                              (unsigned)strlen(features)));
    }
    for (LLVMValueRef v = LLVMGetFirstGlobal(c->mod); v; v = LLVMGetNextGlobal(v)) {
        if (LLVMIsDeclaration(v)) continue;
        size_t len;
        const char *nm = LLVMGetValueName2(v, &len);
        if (!is_export(c->g, nm) && LLVMGetLinkage(v) != LLVMPrivateLinkage) LLVMSetLinkage(v, LLVMInternalLinkage);
    }
}

typedef struct tmachine {
    LLVMTargetMachineRef tm;
    char *triple, *host_cpu, *host_feat;
    const char *cpu, *features;
} tmachine;

static void tmachine_free(tmachine *m)
{
    if (m->tm) LLVMDisposeTargetMachine(m->tm);
    if (m->triple) LLVMDisposeMessage(m->triple);
    if (m->host_cpu) LLVMDisposeMessage(m->host_cpu);
    if (m->host_feat) LLVMDisposeMessage(m->host_feat);
}

static mg_status tmachine_new(const mg_target *t, tmachine *m, mg_diag *d)
{
    char *err = NULL;
    memset(m, 0, sizeof *m);
    LLVMInitializeAllTargetInfos();
    LLVMInitializeAllTargets();
    LLVMInitializeAllTargetMCs();
    LLVMInitializeAllAsmPrinters();
    m->triple = t->triple ? LLVMNormalizeTargetTriple(t->triple) : LLVMGetDefaultTargetTriple();
    /* "native" is this machine's CPU with its features, as clang's -mcpu=native, also beside a
     * triple; LLVM knows no CPU of that name ("'native' is not a recognized processor") */
    int native = t->cpu && !strcmp(t->cpu, "native");
    if (!t->triple || native) {
        m->host_cpu = LLVMGetHostCPUName();
        m->host_feat = LLVMGetHostCPUFeatures();
    }
    m->cpu = native ? m->host_cpu : t->cpu ? t->cpu : m->host_cpu ? m->host_cpu : "generic";
    m->features = t->features ? t->features : ((!t->cpu || native) && m->host_feat) ? m->host_feat : "";
    /* RISC-V Linux: LLVM's generic CPU is RV64I/RV32I, whose soft-float ABI the system's libraries
     * (RV64GC/RV32GC, double-float ABI, as GCC and clang build for these triples) refuse to
     * link with ("can't link soft-float modules with double-float modules"). The same default
     * as those compilers; --cpu names another. */
    if (t->triple && !t->cpu && !t->features && !strncmp(m->triple, "riscv", 5) && strstr(m->triple, "-linux"))
        m->features = "+m,+a,+f,+d,+c";
    LLVMTargetRef target;
    if (LLVMGetTargetFromTriple(m->triple, &target, &err)) {
        mg_diag_set(d, (mg_loc){0}, "unknown target '%s': %s", t->triple ? t->triple : m->triple, err);
        LLVMDisposeMessage(err);
        return MG_ERR;
    }
    LLVMCodeGenOptLevel lvl = t->opt_level <= 0 ? LLVMCodeGenLevelNone : t->opt_level == 1 ? LLVMCodeGenLevelLess
                            : t->opt_level == 2 ? LLVMCodeGenLevelDefault : LLVMCodeGenLevelAggressive;
    m->tm = LLVMCreateTargetMachine(target, m->triple, m->cpu, m->features, lvl, LLVMRelocPIC, LLVMCodeModelDefault);
    if (!m->tm) return mg_diag_set(d, (mg_loc){0}, "cannot create a code generator for %s (cpu %s)", m->triple, m->cpu);
    return MG_OK;
}

mg_status mg_target_probe(const mg_target *t, mg_diag *d)
{
    tmachine m;
    mg_status st = tmachine_new(t, &m, d);
    if (!st) {
        LLVMContextRef ctx = LLVMContextCreate();
        LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("probe", ctx);
        LLVMSetTarget(mod, m.triple);
        LLVMValueRef fn = LLVMAddFunction(mod, "probe", LLVMFunctionType(LLVMVoidTypeInContext(ctx), NULL, 0, 0));
        LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
        LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, fn, "entry"));
        LLVMBuildRetVoid(b);
        LLVMDisposeBuilder(b);
        LLVMMemoryBufferRef out = NULL;
        char *err = NULL;
        if (LLVMTargetMachineEmitToMemoryBuffer(m.tm, mod, LLVMObjectFile, &err, &out)) {
            st = mg_diag_set(d, (mg_loc){0}, "cannot generate code for %s (cpu %s): %s", m.triple, m.cpu, err);
            LLVMDisposeMessage(err);
        }
        if (out) LLVMDisposeMemoryBuffer(out);
        LLVMDisposeModule(mod);
        LLVMContextDispose(ctx);
    }
    tmachine_free(&m);
    return st;
}

/* On a target with pointers narrower than 64 bits every buffer the caller passes (the
 * workspace, the params, grads and state blobs, each input and output) must be addressable
 * there: one object is at most PTRDIFF_MAX bytes, 2^31 - 1 with 32-bit pointers. A larger one
 * would wrap the header's size_t macros and the code's offsets, and a program allocating
 * NAME_WORKSPACE_BYTES would get a small arena the step then overruns. Refused with the
 * figures, an input or output at its declaration. */
static mg_status too_big_for_pointers(const char *what, const char *name, int64_t bytes, int64_t limit, mg_loc at,
                                      const char *triple, unsigned bits, const char *hint, mg_diag *d)
{
    char h1[32], h2[32];
    return mg_diag_set(d, at, "%s%s%s%s is %s (%lld bytes), more than one buffer can hold on %s with its %u-bit "
                       "pointers (%s, %lld bytes)%s", what, name ? " '" : "", name ? name : "", name ? "'" : "",
                       mg_human_bytes(bytes, h1, sizeof h1), (long long)bytes, triple, bits,
                       mg_human_bytes(limit, h2, sizeof h2), (long long)limit, hint);
}

static mg_status fits_pointers(const mg_program *p, unsigned ptr_bytes, const char *triple, mg_diag *d)
{
    if (ptr_bytes >= 8) return MG_OK;
    const mg_graph *g = p->model ? p->model : p->g;
    unsigned bits = 8 * ptr_bytes;
    int64_t limit = (int64_t)((UINT64_C(1) << (bits - 1)) - 1), state_bytes = 0;
    for (int i = 0; i < g->ninputs; i++) {
        const mg_node *n = &g->nodes[g->inputs[i]];
        int64_t b = (int64_t)mg_node_bytes(g, g->inputs[i]);
        if (b > limit) return too_big_for_pointers("input", n->name, b, limit, n->loc, triple, bits, "", d);
    }
    for (int i = 0; i < g->noutputs; i++) {
        int64_t b = (int64_t)mg_node_bytes(g, g->outputs[i].node);
        if (b > limit)
            return too_big_for_pointers("output", g->outputs[i].name, b, limit, g->nodes[g->outputs[i].node].loc,
                                        triple, bits, "", d);
    }
    if (p->param_bytes > limit)
        return too_big_for_pointers("the params blob (and the grads blob)", NULL, p->param_bytes, limit, (mg_loc){0},
                                    triple, bits, "", d);
    mg_state_layout(g, NULL, &state_bytes);
    if (state_bytes > limit)
        return too_big_for_pointers("the state blob", NULL, state_bytes, limit, (mg_loc){0}, triple, bits, "", d);
    if (p->workspace_bytes > limit)
        return too_big_for_pointers("the workspace", NULL, p->workspace_bytes, limit, (mg_loc){0}, triple, bits,
                                    "; a --budget below that may give a plan that fits", d);
    return MG_OK;
}

void mg_emitted_free(mg_emitted *e)
{
    free(e->obj);
    free(e->ll);
    free(e->triple);
    free(e->cpu);
    free(e->features);
    *e = (mg_emitted){0};
}

static char *copy(const char *s)
{
    char *c = strdup(s);
    if (!c) abort();
    return c;
}

mg_status mg_emit_object(const mg_program *p, const mg_target *t, int want_ll, mg_emitted *out, mg_diag *d)
{
    *out = (mg_emitted){0};
    mg_loc none = {0};
    const mg_graph *g = p->g;
    cg c = {0};
    c.p = p;
    c.g = g;
    c.d = d;
    c.no_fuse = t->no_fuse;
    char *err = NULL;
    mg_status st = MG_OK;
    tmachine m;
    if (tmachine_new(t, &m, d)) {
        tmachine_free(&m);
        return MG_ERR;
    }
    LLVMTargetMachineRef tm = m.tm;
    const char *triple = m.triple, *cpu = m.cpu, *features = m.features;

    c.ctx = LLVMContextCreate();
    LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRange((const char *)mg_kernels_bc, mg_kernels_bc_len,
                                                                    "kernels.bc", 0);
    int bad = LLVMParseBitcodeInContext2(c.ctx, buf, &c.mod);
    LLVMDisposeMemoryBuffer(buf);
    if (bad) {
        st = mg_diag_set(d, none, "internal error: the embedded kernel library does not load");
        LLVMContextDispose(c.ctx);
        tmachine_free(&m);
        return st;
    }
    LLVMSetModuleIdentifier(c.mod, g->model_name, strlen(g->model_name));
    LLVMSetTarget(c.mod, triple);
    LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
    LLVMSetModuleDataLayout(c.mod, td);
    unsigned ptr_bytes = LLVMPointerSize(td);
    LLVMDisposeTargetData(td);
    if (fits_pointers(p, ptr_bytes, triple, d)) {
        LLVMDisposeModule(c.mod);
        LLVMContextDispose(c.ctx);
        tmachine_free(&m);
        return MG_ERR;
    }
    c.b = LLVMCreateBuilderInContext(c.ctx);
    c.i8 = LLVMInt8TypeInContext(c.ctx);
    c.i32 = LLVMInt32TypeInContext(c.ctx);
    c.i64 = LLVMInt64TypeInContext(c.ctx);
    c.size = LLVMIntTypeInContext(c.ctx, 8 * ptr_bytes); /* fits_pointers: every size fits it */
    c.f32 = LLVMFloatTypeInContext(c.ctx);
    c.f64 = LLVMDoubleTypeInContext(c.ctx);
    c.ptr = LLVMPointerTypeInContext(c.ctx, 0);
    c.voidt = LLVMVoidTypeInContext(c.ctx);
    c.in_ptr = calloc((size_t)g->ninputs + 1, sizeof *c.in_ptr);
    c.out_ptr = calloc((size_t)g->noutputs + 1, sizeof *c.out_ptr);
    c.consts = calloc((size_t)g->n + 1, sizeof *c.consts);
    if (!c.in_ptr || !c.out_ptr || !c.consts) abort();
    c.sent = malloc(((size_t)2 * (size_t)g->n + 1) * sizeof *c.sent);
    c.bn_state = calloc((size_t)g->n + 1, sizeof *c.bn_state);
    c.bn_var = calloc((size_t)g->n + 1, sizeof *c.bn_var);
    c.bn_done = calloc((size_t)g->n + 1, 1);
    if (!c.sent || !c.bn_state || !c.bn_var || !c.bn_done) abort();
    c.nsent = mg_state_layout(g, c.sent, &c.state_bytes);
    char **snames = calloc((size_t)c.nsent + 1, sizeof *snames);
    if (!snames) abort();
    for (int i = 0; i < c.nsent; i++) {
        char nb[400];
        snames[i] = strdup(mg_state_name(g, &c.sent[i], nb, sizeof nb));
        if (!snames[i]) abort();
        if (c.sent[i].kind == MG_STATE_STEP) c.step_off = c.sent[i].offset;
        else (c.sent[i].kind == MG_STATE_RUNNING_MEAN ? c.bn_state : c.bn_var)[c.sent[i].node] = c.sent[i].offset;
    }

    emit_train_step(&c);
    if (!c.failed) emit_forward(&c, 0);
    if (!c.failed && c.nsent) emit_forward(&c, 1);
    if (!c.failed && c.nsent) emit_init_state(&c);
    if (!c.failed) emit_init_params(&c);
    if (!c.failed) {
        int64_t *poff = malloc(((size_t)g->nparams + 1) * sizeof *poff);
        int *onodes = malloc(((size_t)g->noutputs + 1) * sizeof *onodes);
        const char **onames = malloc(((size_t)g->noutputs + 1) * sizeof *onames);
        if (!poff || !onodes || !onames) abort();
        mg_param_layout(g, poff);
        for (int i = 0; i < g->noutputs; i++) {
            onodes[i] = g->outputs[i].node;
            onames[i] = g->outputs[i].name;
        }
        emit_descs(&c, "params", g->nparams, g->params, NULL, poff);
        emit_descs(&c, "inputs", g->ninputs, g->inputs, NULL, NULL);
        emit_descs(&c, "outputs", g->noutputs, onodes, onames, NULL);
        if (c.nsent) {
            int64_t *soff = malloc((size_t)c.nsent * sizeof *soff);
            if (!soff) abort();
            for (int i = 0; i < c.nsent; i++) soff[i] = c.sent[i].offset;
            emit_descs(&c, "state", c.nsent, NULL, (const char *const *)snames, soff);
            free(soff);
        }
        free(poff);
        free(onodes);
        free(onames);
        /* const uint64_t NAME_plan_hash: the header's NAME_PLAN_HASH, for the caller to check
         * that the header it compiled with is this object's (program_hash.c) */
        char name[300];
        snprintf(name, sizeof name, "%s_plan_hash", g->model_name);
        LLVMValueRef hv = LLVMAddGlobal(c.mod, c.i64, name);
        LLVMSetInitializer(hv, LLVMConstInt(c.i64, mg_program_hash(p), 0));
        LLVMSetGlobalConstant(hv, 1);
    }
    if (c.failed) {
        st = MG_ERR;
        goto dispose;
    }
    finalize_symbols(&c, cpu, features);
    if (LLVMVerifyModule(c.mod, LLVMReturnStatusAction, &err)) {
        st = mg_diag_set(d, none, "internal error: generated LLVM IR is invalid: %.800s", err);
        goto dispose;
    }
    LLVMDisposeMessage(err);
    err = NULL;
    {
        char passes[32];
        snprintf(passes, sizeof passes, "default<O%d>", t->opt_level < 0 ? 0 : t->opt_level > 3 ? 3 : t->opt_level);
        LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
        LLVMErrorRef e = LLVMRunPasses(c.mod, passes, tm, po);
        LLVMDisposePassBuilderOptions(po);
        if (e) {
            char *msg = LLVMGetErrorMessage(e);
            st = mg_diag_set(d, none, "internal error: LLVM optimisation failed: %s", msg);
            LLVMDisposeErrorMessage(msg);
            goto dispose;
        }
    }
    if (want_ll) { /* (copied: LLVM's strings are freed with LLVMDisposeMessage) */
        char *ll = LLVMPrintModuleToString(c.mod);
        out->ll_len = strlen(ll);
        out->ll = malloc(out->ll_len + 1);
        if (!out->ll) abort();
        memcpy(out->ll, ll, out->ll_len + 1);
        LLVMDisposeMessage(ll);
    }
    {
        LLVMMemoryBufferRef obj = NULL;
        if (LLVMTargetMachineEmitToMemoryBuffer(tm, c.mod, LLVMObjectFile, &err, &obj)) {
            st = mg_diag_set(d, none, "cannot generate the object: %s", err);
            goto dispose;
        }
        out->obj_len = LLVMGetBufferSize(obj);
        out->obj = malloc(out->obj_len ? out->obj_len : 1);
        if (!out->obj) abort();
        memcpy(out->obj, LLVMGetBufferStart(obj), out->obj_len);
        LLVMDisposeMemoryBuffer(obj);
    }
    /* what the object is for, as compiled, for the header to say: an object copied to a machine
     * whose CPU lacks a feature of this one's dies of SIGILL, with nothing else to tell why */
    out->triple = copy(triple);
    out->cpu = copy(cpu);
    out->host_cpu = m.host_cpu && cpu == m.host_cpu;
    out->host_features = m.host_feat && features == m.host_feat;
    out->features = !out->host_features && features && *features ? copy(features) : NULL;
dispose:
    step_fns_free(&c);
    for (int i = 0; i < c.nsent; i++) free(snames[i]);
    free(snames);
    free(c.sent);
    free(c.bn_state);
    free(c.bn_var);
    free(c.bn_done);
    free(c.in_ptr);
    free(c.out_ptr);
    free(c.consts);
    LLVMDisposeBuilder(c.b);
    LLVMDisposeModule(c.mod);
    LLVMContextDispose(c.ctx);
    if (c.failed) st = MG_ERR;
    if (err) LLVMDisposeMessage(err);
    tmachine_free(&m);
    if (st) mg_emitted_free(out);
    return st;
}
