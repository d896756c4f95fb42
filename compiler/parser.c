/* parser.c — recursive-descent parser for the .mg model format, building the forward graph
 * directly (names resolve to the SSA node they are bound to at that point; rebinding a name
 * makes later uses see the new node). Shape and dtype errors come from IR type inference and
 * are reported at the operator or function that caused them.
 *
 *   program   = { stmt NEWLINE }
 *   stmt      = "model" IDENT
 *             | "const" IDENT "=" iexpr
 *             | "input" IDENT ":" type
 *             | "param" IDENT ":" type [ "=" init ]
 *             | "output" IDENT { "," IDENT }
 *             | "minimize" IDENT
 *             | "repeat" iexpr "{" { stmt NEWLINE } "}"
 *             | "def" IDENT "(" [ IDENT { "," IDENT } ] ")" "{" { stmt NEWLINE } "return" expr "}"
 *             | IDENT "=" expr
 *   type      = ("f32" | "f64" | "i32") "[" [ iexpr { "," iexpr } ] "]"
 *   init      = "zeros" | "ones" | "he" | "xavier" | "normal" "(" NUM ")" | "uniform" "(" NUM ")"
 *   expr      = term { ("+" | "-") term }
 *   term      = unary { ("*" | "/" | "@") unary }
 *   unary     = "-" unary | primary
 *   primary   = NUM | IDENT | IDENT "(" [ arg { "," arg } ] ")" | "(" expr ")"   (a call of an op or a def)
 *   arg       = expr | IDENT "=" (iexpr | "[" iexpr { "," iexpr } "]")     (attributes last)
 *   iexpr     = iterm { ("+" | "-") iterm }          integer arithmetic on constants
 *   iterm     = ifactor { ("*" | "/") ifactor }      ("/" rounds toward zero)
 *   ifactor   = "-" ifactor | INT | CONST | "(" iexpr ")"
 *
 * Named constants (`const D = 256`) are integers usable wherever an integer is (shapes, repeat
 * counts, attributes) and as numbers in expressions. Attributes are validated against the
 * table `attrs` below: their names, integer type and range, defaults and required ones.
 *
 * A `def` block is stored as its token range and parsed anew at each call, in a scope of its
 * own: its arguments (tensors, or integers that act as constants there), the model's constants
 * and what the body binds. Params declared in a body are named after the call — the k-th call
 * of `block` makes `block.k.w` (inside another block's call `stage.0.block.k.w`) — and the
 * value of `return` is the call's value.
 *
 * Bad input is an error at its place, never undefined behaviour, a crash or a quadratic crawl:
 * tensor expressions nest at most 200 levels and integer ones 64, numbers are finite, a tensor
 * (declared, or a reshape's shape) has dimensions up to 10^12 and at most 2^40 elements, and
 * names are looked up in hash indexes (100000 params in a repeat block check in seconds). A
 * model has at most MAX_NODES operations whose tensors add up to at most 2^50 bytes (check_size),
 * and its expansion runs at most MAX_STEPS statements and iterations and MAX_CALLS def calls.
 */
#include "frontend.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <float.h>
#include <math.h>
#include <string.h>

/* The model's limits (see count_bytes and check_size; README, "Limits"). */
enum { MAX_NODES = 1 << 20, MAX_REPEAT_DEPTH = 16, MAX_STEPS = 1 << 24, MAX_CALLS = 1 << 20 };
static const double MAX_MODEL_BYTES = 0x1p50;

/* What bound a name: `NAME = expr`, a declaration, or a def block's tensor argument. */
typedef enum { BOUND_VALUE, BOUND_INPUT, BOUND_PARAM, BOUND_ARG } bound_by;

typedef struct binding {
    const char *name; /* interned in the graph */
    int node;
    mg_loc loc;       /* where it was bound */
    bound_by by;
    int stmt;         /* the token that starts the statement that bound it (-1: an argument) */
} binding;

typedef struct constant {
    const char *name; /* interned in the graph */
    int64_t val;
    mg_loc loc;
} constant;

/* An expression's value: a node, or a numeric literal not yet given a dtype. */
typedef struct ev {
    int node;
    int lit;
    double val;
    mg_loc loc;
} ev;

enum { MAX_DEF_PARAMS = 16, MAX_DEF_DEPTH = 32 };

typedef struct def_block {
    const char *name; /* interned */
    mg_loc loc;
    int nparams;
    const char *params[MAX_DEF_PARAMS];
    mg_loc param_loc[MAX_DEF_PARAMS];
    int body, close; /* token range of the body: (body .. close), close is the '}' */
    int active;      /* being expanded (recursion check) */
} def_block;

typedef struct call_count {
    char *key; /* prefix + def name */
    int n;
} call_count;

/* An open-addressing hash index of names (slots hold entry numbers, -1 empty; the names live
 * in the entries), so that name checks stay linear over `repeat 100000 { ... }`. */
typedef struct name_index {
    int *slot;
    size_t cap, n;
} name_index;

struct parser;
typedef const char *(*name_of_fn)(const struct parser *p, int entry);

typedef struct parser {
    const char *file;
    mg_tokens toks;
    int pos;
    mg_graph *g;
    mg_diag *d;
    binding *syms;
    int nsyms, capsyms;
    constant *consts;  /* the model's constants [0, nglobal), then the current def call's
                          integer arguments [const_base, nconsts) */
    int nconsts, nglobal, const_base;
    def_block *defs;
    int ndefs;
    call_count *calls;
    int ncalls, capcalls;
    char prefix[512];  /* "block.0." prepended to params declared inside def calls */
    int def_depth;
    int returned;      /* the current def body has executed its 'return' */
    ev ret;
    char suffix[256];  /* ".i.j" appended to params declared inside repeat blocks */
    int repeat_depth;
    mg_loc model_loc, minimize_loc;
    name_index decls;  /* the input and param nodes by name */
    int cap_inputs, cap_params; /* allocated length of g->inputs and g->params */
    int expr_depth;    /* nesting of the tensor expression being parsed (parse_unary) */
    name_index call_keys; /* calls[] by key */
    int sized;         /* nodes [0, sized) are counted in bytes */
    double bytes;      /* their sizes' sum (count_bytes) */
    mg_loc repeat_loc; /* the outermost repeat block being expanded */
    int repeat_it;     /* and its iteration */
    int repeat_body, repeat_close; /* and its body's tokens [repeat_body, repeat_close) */
    int steps, ncalled; /* statements and repeat iterations run so far, def calls made (count_step) */
} parser;

static size_t name_hash(const char *s)
{
    size_t h = 1469598103934665603u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

/* The entry named key, or -1. */
static int index_find(const name_index *x, const parser *p, name_of_fn name_of, const char *key)
{
    if (!x->cap) return -1;
    for (size_t i = name_hash(key) & (x->cap - 1);; i = (i + 1) & (x->cap - 1))
        if (x->slot[i] < 0 || !strcmp(name_of(p, x->slot[i]), key)) return x->slot[i];
}

static void index_put(int *slot, size_t cap, const parser *p, name_of_fn name_of, int e)
{
    size_t i = name_hash(name_of(p, e)) & (cap - 1);
    while (slot[i] >= 0) i = (i + 1) & (cap - 1);
    slot[i] = e;
}

/* Adds entry e (its name not yet in x); the table stays at most half full. */
static void index_add(name_index *x, const parser *p, name_of_fn name_of, int e)
{
    if (++x->n * 2 > x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 64;
        int *t = malloc(cap * sizeof *t);
        if (!t) abort();
        for (size_t i = 0; i < cap; i++) t[i] = -1;
        for (size_t i = 0; i < x->cap; i++)
            if (x->slot[i] >= 0) index_put(t, cap, p, name_of, x->slot[i]);
        free(x->slot);
        x->slot = t;
        x->cap = cap;
    }
    index_put(x->slot, x->cap, p, name_of, e);
}

static const char *node_name(const parser *p, int id) { return p->g->nodes[id].name; }
static const char *call_key(const parser *p, int i) { return p->calls[i].key; }

static mg_token *peek(parser *p) { return &p->toks.tok[p->pos]; }
static mg_loc tok_loc(parser *p, const mg_token *t) { return (mg_loc){p->file, t->line, t->col}; }
static mg_loc here(parser *p) { return tok_loc(p, peek(p)); }

static int is_punct(const mg_token *t, char c) { return t->kind == MG_TOK_PUNCT && t->start[0] == c; }
static int is_word(const mg_token *t, const char *w)
{
    return t->kind == MG_TOK_IDENT && (size_t)t->len == strlen(w) && !memcmp(t->start, w, (size_t)t->len);
}

static const char *describe(const mg_token *t, char *buf, size_t n)
{
    switch (t->kind) {
    case MG_TOK_NEWLINE: return "end of line";
    case MG_TOK_EOF: return "end of file";
    default: snprintf(buf, n, "'%.*s'", t->len > 40 ? 40 : t->len, t->start); return buf;
    }
}

static mg_status expect_punct(parser *p, char c, const char *context)
{
    char buf[64];
    if (!is_punct(peek(p), c))
        return mg_diag_set(p->d, here(p), "expected '%c' %s, got %s", c, context,
                           describe(peek(p), buf, sizeof buf));
    p->pos++;
    return MG_OK;
}

static mg_status expect_ident(parser *p, const char *what, char *out, size_t n)
{
    char buf[64];
    mg_token *t = peek(p);
    if (t->kind != MG_TOK_IDENT)
        return mg_diag_set(p->d, here(p), "expected %s, got %s", what, describe(t, buf, sizeof buf));
    if ((size_t)t->len >= n)
        return mg_diag_set(p->d, here(p), "name too long (%d characters; at most %d)", t->len, (int)n - 1);
    memcpy(out, t->start, (size_t)t->len);
    out[t->len] = 0;
    p->pos++;
    return MG_OK;
}

static mg_status expect_end(parser *p)
{
    char buf[64];
    mg_token *t = peek(p);
    if (t->kind == MG_TOK_NEWLINE) {
        p->pos++;
        return MG_OK;
    }
    if (t->kind == MG_TOK_EOF || ((p->repeat_depth || p->def_depth) && is_punct(t, '}'))) return MG_OK;
    return mg_diag_set(p->d, here(p), "expected end of line, got %s", describe(t, buf, sizeof buf));
}

static binding *lookup(parser *p, const char *name)
{
    for (int i = p->nsyms - 1; i >= 0; i--)
        if (!strcmp(p->syms[i].name, name)) return &p->syms[i];
    return NULL;
}

static constant *find_const(parser *p, const char *name)
{
    for (int i = p->nconsts - 1; i >= p->const_base && i >= p->nglobal; i--)
        if (!strcmp(p->consts[i].name, name)) return &p->consts[i];
    for (int i = p->nglobal - 1; i >= 0; i--)
        if (!strcmp(p->consts[i].name, name)) return &p->consts[i];
    return NULL;
}

/* A tensor may not take a constant's name: uses of the name would be ambiguous. */
static mg_status not_const(parser *p, const char *name, mg_loc loc)
{
    constant *c = find_const(p, name);
    if (c) return mg_diag_set(p->d, loc, "'%s' is a constant (defined at line %d); choose another name", name, c->loc.line);
    return MG_OK;
}

static void bind(parser *p, const char *name, int node, mg_loc loc, bound_by by, int stmt)
{
    binding *b = lookup(p, name);
    if (!b) {
        if (p->nsyms == p->capsyms) {
            p->capsyms = p->capsyms ? 2 * p->capsyms : 64;
            binding *s = realloc(p->syms, (size_t)p->capsyms * sizeof *s);
            if (!s) abort();
            p->syms = s;
        }
        b = &p->syms[p->nsyms++];
        b->name = mg_graph_intern(p->g, name);
    }
    b->node = node;
    b->loc = loc;
    b->by = by;
    b->stmt = stmt;
}

/* Edit distance, for "did you mean" hints on misspelt names. */
static int distance(const char *a, const char *b)
{
    int la = (int)strlen(a), lb = (int)strlen(b);
    if (la > 63 || lb > 63) return 99;
    int row[64];
    for (int j = 0; j <= lb; j++) row[j] = j;
    for (int i = 1; i <= la; i++) {
        int prev = row[0];
        row[0] = i;
        for (int j = 1; j <= lb; j++) {
            int cur = row[j];
            int best = prev + (a[i - 1] != b[j - 1]);
            if (row[j] + 1 < best) best = row[j] + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            prev = cur;
        }
    }
    return row[lb];
}

/* " (in iteration K of the repeat block at line L)" when a repeat is being expanded, else "". */
static const char *in_repeat(const parser *p, char *buf, size_t n)
{
    if (!p->repeat_depth) return "";
    snprintf(buf, n, " (in iteration %d of the repeat block at line %d)", p->repeat_it, p->repeat_loc.line);
    return buf;
}

/* Limits that keep every later sum safe and `check` quick: the forward graph's tensors add up
 * to at most 2^50 bytes (1 PiB; each is at most 2^40 elements, 8 TiB) and it has at most
 * MAX_NODES operations (a few seconds to parse and differentiate; the planner takes fewer, and
 * the joint graph's bytes are checked again before planning: driver.c, plannable). Sizes are
 * counted as nodes appear; the error is at the tensor that passes the limit. */
static mg_status count_bytes(parser *p)
{
    char rb[96];
    for (mg_graph *g = p->g; p->sized < g->n; p->sized++) {
        const mg_node *n = &g->nodes[p->sized];
        p->bytes += (double)mg_node_bytes(g, p->sized);
        if (p->bytes > MAX_MODEL_BYTES) {
            char what[200];
            if (n->name) snprintf(what, sizeof what, "'%s'", n->name);
            else snprintf(what, sizeof what, "this '%s'", mg_ops[n->op].name);
            return mg_diag_set(p->d, n->loc, "model too large: with %s the tensors add up to more than 2^50 bytes "
                               "(1 PiB)%s", what, in_repeat(p, rb, sizeof rb));
        }
    }
    return MG_OK;
}

/* Before a statement or a repeat block's iteration (call: a def call) at loc runs: expanding a
 * model runs at most MAX_STEPS of them and MAX_CALLS def calls (a few seconds each), as blocks
 * that make nothing are not stopped by MAX_NODES: `repeat 1000000 { repeat 1000000 { } }`, or
 * 30 defs each calling the one before twice (2^30 calls), ran for hours. */
static mg_status count_step(parser *p, mg_loc loc, int call)
{
    char rb[96];
    if (call ? ++p->ncalled <= MAX_CALLS : ++p->steps <= MAX_STEPS) return MG_OK;
    if (call) return mg_diag_set(p->d, loc, "model too large: more than %d def calls%s", MAX_CALLS, in_repeat(p, rb, sizeof rb));
    return mg_diag_set(p->d, loc, "model too large: expanding it runs more than %d statements and repeat "
                       "iterations%s", MAX_STEPS, in_repeat(p, rb, sizeof rb));
}

/* Before an operation at loc is added. */
static int check_size(parser *p, mg_loc loc)
{
    char rb[96];
    if (count_bytes(p)) return MG_ERR;
    if (p->g->n >= MAX_NODES)
        return mg_diag_set(p->d, loc, "model too large (more than %d operations)%s", MAX_NODES,
                           in_repeat(p, rb, sizeof rb));
    return MG_OK;
}

/* The node of v, a literal made a scalar constant of type dt: -1 (diagnosed) where f32 cannot
 * hold it (1e39 became inf and 1e-50 zero, unsaid: a loss of inf). */
static int materialize(parser *p, ev v, mg_dtype dt)
{
    if (!v.lit) return v.node;
    if (dt == MG_F32 && (fabs(v.val) > FLT_MAX || (v.val != 0 && (float)v.val == 0))) {
        mg_diag_set(p->d, v.loc, "the number %g is out of f32's range (%s)", v.val,
                    fabs(v.val) > FLT_MAX ? "at most 3.4e38" : "it rounds to 0; at least 1.4e-45");
        return -1;
    }
    int id = mg_graph_add(p->g, MG_OP_CONST, 0, NULL, v.loc);
    p->g->nodes[id].fattr = v.val;
    p->g->nodes[id].type.dtype = dt;
    p->g->nodes[id].type.shape.rank = 0;
    return id;
}

/* Integer expressions over literals and named constants. `what` names what is being read,
 * for messages ("a dimension", "attribute 'stride' of 'conv2d'"), and `most` the largest value
 * it takes ("10^12"; NULL: a constant's 2^53), which the caller checks once the value is known.
 * Values stay within 2^53; one beyond is reported with `most`, the limit that applies to what is
 * read (a dimension of 2^60 said "at most 2^53", where dimensions end at 10^12). */
enum { IEXPR_MAX_DEPTH = 64 };
static const double IEXPR_LIMIT = 9007199254740992.0;
static mg_status parse_iexpr(parser *p, int64_t *v, const char *what, const char *most, int depth);

static mg_status irange(parser *p, mg_loc loc, double v, const char *what, const char *most)
{
    if (v > IEXPR_LIMIT || v < -IEXPR_LIMIT)
        return mg_diag_set(p->d, loc, "integer value too large in %s (at most %s)", what, most ? most : "2^53");
    return MG_OK;
}

/* Whether the tokens at p can begin a positive integer expression that ends before `end1` or
 * `end2`: a literal or a '-' that is the whole expression (0, 2.5, -1) is refused as written. */
static int starts_iexpr(parser *p, char end1, char end2)
{
    const mg_token *t = peek(p), *next = t->kind == MG_TOK_EOF ? t : t + 1;
    int alone = is_punct(next, end1) || is_punct(next, end2) || next->kind == MG_TOK_NEWLINE;
    if (t->kind == MG_TOK_NUMBER) return !alone || (t->is_int && t->num >= 1);
    if (is_punct(t, '-')) { /* -1 alone; anything longer by its value */
        const mg_token *after = next->kind == MG_TOK_EOF ? next : next + 1;
        return next->kind != MG_TOK_NUMBER || !(is_punct(after, end1) || is_punct(after, end2));
    }
    return t->kind == MG_TOK_IDENT || is_punct(t, '(');
}

/* ifactor = "-" ifactor | INT | CONST | "(" iexpr ")" */
static mg_status parse_ifactor(parser *p, int64_t *v, const char *what, const char *most, int depth)
{
    char buf[64], name[128];
    mg_token *t = peek(p);
    mg_loc loc = here(p);
    if (depth > IEXPR_MAX_DEPTH) return mg_diag_set(p->d, loc, "integer expression nested too deeply (more than %d levels)", IEXPR_MAX_DEPTH);
    if (is_punct(t, '-')) {
        p->pos++;
        if (parse_ifactor(p, v, what, most, depth + 1)) return MG_ERR;
        *v = -*v;
        return MG_OK;
    }
    if (is_punct(t, '(')) {
        p->pos++;
        if (parse_iexpr(p, v, what, most, depth + 1)) return MG_ERR;
        return expect_punct(p, ')', "to close '('");
    }
    if (t->kind == MG_TOK_NUMBER) {
        if (!t->is_int)
            return mg_diag_set(p->d, loc, "expected an integer for %s, got %s", what, describe(t, buf, sizeof buf));
        if (t->num > IEXPR_LIMIT)
            return mg_diag_set(p->d, loc, "%.*s is too large for %s (at most %s)", t->len > 40 ? 40 : t->len, t->start,
                               what, most ? most : "2^53");
        *v = (int64_t)t->num;
        p->pos++;
        return MG_OK;
    }
    if (t->kind == MG_TOK_IDENT) {
        if (expect_ident(p, "a constant", name, sizeof name)) return MG_ERR;
        constant *c = find_const(p, name);
        if (c) {
            *v = c->val;
            return MG_OK;
        }
        if (lookup(p, name))
            return mg_diag_set(p->d, loc, "expected an integer for %s, got the tensor '%s'", what, name);
        const char *best = NULL;
        int bestd = 3;
        for (int i = 0; i < p->nconsts; i++)
            if ((i < p->nglobal || i >= p->const_base) && distance(name, p->consts[i].name) < bestd) {
                bestd = distance(name, p->consts[i].name);
                best = p->consts[i].name;
            }
        if (best) return mg_diag_set(p->d, loc, "unknown constant '%s' in %s (did you mean '%s'?)", name, what, best);
        return mg_diag_set(p->d, loc, "unknown constant '%s' in %s (define it with 'const %s = ...')", name, what, name);
    }
    return mg_diag_set(p->d, loc, "expected an integer for %s, got %s", what, describe(t, buf, sizeof buf));
}

/* iterm = ifactor { ("*" | "/") ifactor } */
static mg_status parse_iterm(parser *p, int64_t *v, const char *what, const char *most, int depth)
{
    if (parse_ifactor(p, v, what, most, depth)) return MG_ERR;
    while (is_punct(peek(p), '*') || is_punct(peek(p), '/')) {
        char opc = peek(p)->start[0];
        mg_loc loc = here(p);
        int64_t r;
        p->pos++;
        if (parse_ifactor(p, &r, what, most, depth)) return MG_ERR;
        if (opc == '/') {
            if (r == 0) return mg_diag_set(p->d, loc, "division by zero in %s", what);
            *v /= r;
        } else {
            if (irange(p, loc, (double)*v * (double)r, what, most)) return MG_ERR;
            *v *= r;
        }
    }
    return MG_OK;
}

/* iexpr = iterm { ("+" | "-") iterm } */
static mg_status parse_iexpr(parser *p, int64_t *v, const char *what, const char *most, int depth)
{
    if (parse_iterm(p, v, what, most, depth)) return MG_ERR;
    while (is_punct(peek(p), '+') || is_punct(peek(p), '-')) {
        char opc = peek(p)->start[0];
        mg_loc loc = here(p);
        int64_t r;
        p->pos++;
        if (parse_iterm(p, &r, what, most, depth)) return MG_ERR;
        double sum = opc == '+' ? (double)*v + (double)r : (double)*v - (double)r;
        if (irange(p, loc, sum, what, most)) return MG_ERR;
        *v = opc == '+' ? *v + r : *v - r;
    }
    return MG_OK;
}

/* Attributes of the callable ops: name, slot in iattr, range, and a default (required ones
 * have none; `same_as` >= 0 defaults to another attribute's value). */
enum { ATTR_INT, ATTR_SHAPE, ATTR_FLOAT, ATTR_PERM };
typedef struct attr_spec {
    mg_op op;
    const char *name;
    int kind, slot; /* an ATTR_FLOAT goes to the node's fattr, not a slot */
    int lo, hi;
    int required, def, same_as;
    const char *example;
    double fdef, fhi; /* ATTR_FLOAT: default, and the value must lie in (0, fhi] */
    int fhi_open;     /* ATTR_FLOAT: 1 if the value must stay below fhi, (0, fhi) */
} attr_spec;

enum { ATTR_MAX = 1 << 20 };
static const attr_spec attrs[] = {
    {MG_OP_CONV2D, "stride", ATTR_INT, 0, 1, ATTR_MAX, 0, 1, -1, NULL, 0, 0, 0},
    {MG_OP_CONV2D, "pad", ATTR_INT, 1, 0, ATTR_MAX, 0, 0, -1, NULL, 0, 0, 0},
    {MG_OP_CONV2D, "dilation", ATTR_INT, 2, 1, ATTR_MAX, 0, 1, -1, NULL, 0, 0, 0},
    {MG_OP_CONV2D, "groups", ATTR_INT, 3, 1, ATTR_MAX, 0, 1, -1, NULL, 0, 0, 0},
    {MG_OP_MAX_POOL2D, "kernel", ATTR_INT, 0, 1, ATTR_MAX, 1, 0, -1, "max_pool2d(x, kernel=2)", 0, 0, 0},
    {MG_OP_MAX_POOL2D, "stride", ATTR_INT, 1, 1, ATTR_MAX, 0, 0, 0, NULL, 0, 0, 0},
    {MG_OP_MAX_POOL2D, "pad", ATTR_INT, 2, 0, ATTR_MAX, 0, 0, -1, NULL, 0, 0, 0},
    {MG_OP_AVG_POOL2D, "kernel", ATTR_INT, 0, 1, ATTR_MAX, 1, 0, -1, "avg_pool2d(x, kernel=2)", 0, 0, 0},
    {MG_OP_AVG_POOL2D, "stride", ATTR_INT, 1, 1, ATTR_MAX, 0, 0, 0, NULL, 0, 0, 0},
    {MG_OP_AVG_POOL2D, "pad", ATTR_INT, 2, 0, ATTR_MAX, 0, 0, -1, NULL, 0, 0, 0},
    {MG_OP_RESHAPE, "shape", ATTR_SHAPE, 0, 1, 0, 1, 0, -1, "reshape(x, shape=[128, -1])", 0, 0, 0},
    /* axes count from 0 or, negative, from the end; resolved against the operand's rank */
    {MG_OP_SOFTMAX, "axis", ATTR_INT, 0, -MG_MAX_RANK, MG_MAX_RANK - 1, 0, -1, -1, NULL, 0, 0, 0},
    {MG_OP_LOG_SOFTMAX, "axis", ATTR_INT, 0, -MG_MAX_RANK, MG_MAX_RANK - 1, 0, -1, -1, NULL, 0, 0, 0},
    {MG_OP_TRANSPOSE, "perm", ATTR_PERM, 0, -MG_MAX_RANK, MG_MAX_RANK - 1, 1, 0, -1, "transpose(x, perm=[0, 2, 1, 3])", 0, 0, 0},
    {MG_OP_GELU, "approx", ATTR_INT, 0, 0, 1, 0, 0, -1, NULL, 0, 0, 0},
    {MG_OP_LAYER_NORM, "eps", ATTR_FLOAT, 0, 0, 0, 0, 0, -1, NULL, 1e-5, 1.0, 0},
    {MG_OP_CROSS_ENTROPY, "axis", ATTR_INT, 0, -MG_MAX_RANK, MG_MAX_RANK - 1, 0, -1, -1, NULL, 0, 0, 0},
    {MG_OP_CONCAT, "axis", ATTR_INT, 0, -MG_MAX_RANK, MG_MAX_RANK - 1, 0, 0, -1, NULL, 0, 0, 0},
    /* slice: start and end count from the end when negative; end defaults to the axis' length */
    {MG_OP_SLICE, "axis", ATTR_INT, 0, -MG_MAX_RANK, MG_MAX_RANK - 1, 0, 0, -1, NULL, 0, 0, 0},
    {MG_OP_SLICE, "start", ATTR_INT, 1, -INT_MAX, INT_MAX, 0, 0, -1, NULL, 0, 0, 0},
    {MG_OP_SLICE, "end", ATTR_INT, 2, -INT_MAX, INT_MAX, 0, 0, -1, NULL, 0, 0, 0},
    {MG_OP_SLICE, "step", ATTR_INT, 3, 1, ATTR_MAX, 0, 1, -1, NULL, 0, 0, 0},
    {MG_OP_UPSAMPLE_NEAREST, "scale", ATTR_INT, 0, 1, ATTR_MAX, 0, 2, -1, NULL, 0, 0, 0},
    {MG_OP_CONV_TRANSPOSE2D, "stride", ATTR_INT, 0, 1, ATTR_MAX, 0, 1, -1, NULL, 0, 0, 0},
    {MG_OP_CONV_TRANSPOSE2D, "pad", ATTR_INT, 1, 0, ATTR_MAX, 0, 0, -1, NULL, 0, 0, 0},
    {MG_OP_CONV_TRANSPOSE2D, "dilation", ATTR_INT, 2, 1, ATTR_MAX, 0, 1, -1, NULL, 0, 0, 0},
    {MG_OP_CONV_TRANSPOSE2D, "groups", ATTR_INT, 3, 1, ATTR_MAX, 0, 1, -1, NULL, 0, 0, 0},
    {MG_OP_CONV_TRANSPOSE2D, "output_pad", ATTR_INT, 4, 0, ATTR_MAX, 0, 0, -1, NULL, 0, 0, 0},
    /* an ATTR_FLOAT in slot 1 goes to the node's fattr2 */
    {MG_OP_BATCH_NORM, "eps", ATTR_FLOAT, 0, 0, 0, 0, 0, -1, NULL, 1e-5, 1.0, 0},
    {MG_OP_BATCH_NORM, "momentum", ATTR_FLOAT, 1, 0, 0, 0, 0, -1, NULL, 0.1, 1.0, 0},
    {MG_OP_DROPOUT, "p", ATTR_FLOAT, 0, 0, 0, 0, 0, -1, NULL, 0.5, 1.0, 1},
    {MG_OP_DROPOUT, "seed", ATTR_INT, 0, 0, ATTR_MAX, 0, 0, -1, NULL, 0, 0, 0},
};
enum { NATTRS = (int)(sizeof attrs / sizeof attrs[0]) };

/* The row of op's attribute name in attrs, or -1. */
static int attr_index(mg_op op, const char *name)
{
    for (int i = 0; i < NATTRS; i++)
        if (attrs[i].op == op && !strcmp(attrs[i].name, name)) return i;
    return -1;
}

static const char *attr_list(mg_op op, char *buf, size_t n)
{
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; i < NATTRS && k < n; i++)
        if (attrs[i].op == op) k += (size_t)snprintf(buf + k, n - k, "%s%s", k ? ", " : "", attrs[i].name);
    return buf;
}

/* The attributes of one call, as parsed: iattr slots and, for reshape, the target shape. */
typedef struct call_attrs {
    int iattr[MG_MAX_IATTR];
    int given[NATTRS];
    mg_shape shape;
    int minus_one; /* index of the -1 in shape, or -1 */
    mg_loc shape_loc;
    mg_loc dim_loc[MG_MAX_RANK]; /* where each entry of the list starts */
    double fattr;            /* the ATTR_FLOAT value (layer_norm's eps), else 1 */
    double fattr2;           /* the ATTR_FLOAT of slot 1 (batch_norm's momentum) */
    mg_loc vloc[NATTRS];     /* where each given attribute's value starts */
} call_attrs;

/* IDENT "=" (iexpr | "[" iexpr { "," iexpr } "]") inside the call of op */
static mg_status parse_attr(parser *p, mg_op op, call_attrs *ca)
{
    char name[128], buf[64], what[192], list[256], most[16];
    const char *opn = mg_ops[op].name;
    mg_loc loc = here(p);
    if (expect_ident(p, "an attribute name", name, sizeof name)) return MG_ERR;
    p->pos++; /* '=' */
    int k = -1;
    for (int i = 0; i < NATTRS; i++)
        if (attrs[i].op == op && !strcmp(attrs[i].name, name)) k = i;
    if (k < 0) {
        if (!attr_list(op, list, sizeof list)[0])
            return mg_diag_set(p->d, loc, "'%s' takes no attributes, got '%s'", opn, name);
        const char *best = NULL;
        int bestd = 3;
        for (int i = 0; i < NATTRS; i++)
            if (attrs[i].op == op && distance(name, attrs[i].name) < bestd) {
                bestd = distance(name, attrs[i].name);
                best = attrs[i].name;
            }
        if (best)
            return mg_diag_set(p->d, loc, "unknown attribute '%s' of '%s' (did you mean '%s'?)", name, opn, best);
        return mg_diag_set(p->d, loc, "unknown attribute '%s' of '%s'; its attributes are %s", name, opn, list);
    }
    const attr_spec *a = &attrs[k];
    if (ca->given[k]) return mg_diag_set(p->d, loc, "attribute '%s' of '%s' given twice", name, opn);
    ca->given[k] = 1;
    snprintf(what, sizeof what, "attribute '%s' of '%s'", name, opn);
    snprintf(most, sizeof most, "%d", a->hi);
    mg_loc vloc = here(p);
    ca->vloc[k] = vloc;
    if (a->kind == ATTR_FLOAT) {
        /* a number literal, like 1e-5 or 0.001 */
        mg_token *t = peek(p);
        int neg = is_punct(t, '-') && p->toks.tok[p->pos + 1].kind == MG_TOK_NUMBER; /* a token follows: the last is EOF */
        if (neg) t = &p->toks.tok[p->pos + 1]; /* -0.1: reported as out of range below, not as a stray '-' */
        if (t->kind != MG_TOK_NUMBER)
            return mg_diag_set(p->d, vloc, "%s must be a number like 1e-5, got %s", what, describe(t, buf, sizeof buf));
        double v = neg ? -t->num : t->num;
        if (!(v > 0) || v > a->fhi || (a->fhi_open && v >= a->fhi))
            return mg_diag_set(p->d, vloc, "%s must be positive and %s %g, got %g", what,
                               a->fhi_open ? "below" : "at most", a->fhi, v);
        *(a->slot ? &ca->fattr2 : &ca->fattr) = v;
        p->pos += 1 + neg;
        return MG_OK;
    }
    if (a->kind == ATTR_SHAPE || a->kind == ATTR_PERM) {
        if (!is_punct(peek(p), '['))
            return mg_diag_set(p->d, vloc, "%s must be a list of integers like %s, got %s", what,
                               a->kind == ATTR_SHAPE ? "[128, -1]" : "[0, 2, 1, 3]", describe(peek(p), buf, sizeof buf));
        p->pos++;
        double numel = 1;
        ca->shape.rank = 0;
        ca->minus_one = -1;
        ca->shape_loc = vloc;
        while (!is_punct(peek(p), ']')) {
            mg_loc dloc = here(p);
            int64_t v;
            if (ca->shape.rank == MG_MAX_RANK)
                return mg_diag_set(p->d, dloc, "%s has more than %d dimensions", what, MG_MAX_RANK);
            if (parse_iexpr(p, &v, what, a->kind == ATTR_PERM ? most : "10^12", 0)) return MG_ERR;
            if (a->kind == ATTR_PERM) {
                if (v < a->lo || v > a->hi)
                    return mg_diag_set(p->d, dloc, "%s lists axes, numbered from 0 to at most %d (or from the end, "
                                       "-1 to -%d), got %lld", what, a->hi, -a->lo, (long long)v);
            } else if (v == -1) {
                if (ca->minus_one >= 0)
                    return mg_diag_set(p->d, dloc, "%s may contain -1 (the inferred dimension) only once", what);
                ca->minus_one = ca->shape.rank;
            } else if (v < 1) {
                return mg_diag_set(p->d, dloc, "%s needs positive dimensions (or one -1), got %lld", what, (long long)v);
            } else {
                /* a declared tensor's limits, so that no product of the dimensions overflows */
                if (v > 1000000000000LL)
                    return mg_diag_set(p->d, dloc, "dimension %lld in %s is too large (at most 10^12)", (long long)v,
                                       what);
                numel *= (double)v;
                if (numel > (double)(1LL << 40))
                    return mg_diag_set(p->d, dloc, "%s has more than 2^40 elements", what);
            }
            ca->dim_loc[ca->shape.rank] = dloc;
            ca->shape.dim[ca->shape.rank++] = v;
            if (is_punct(peek(p), ',')) {
                p->pos++;
                if (is_punct(peek(p), ']'))
                    return mg_diag_set(p->d, here(p), "expected a value after ',' in %s, got ']'", what);
                continue;
            }
            if (!is_punct(peek(p), ']'))
                return mg_diag_set(p->d, here(p), "expected ',' or ']' in %s, got %s", what,
                                   describe(peek(p), buf, sizeof buf));
        }
        p->pos++;
        return MG_OK;
    }
    if (is_punct(peek(p), '['))
        return mg_diag_set(p->d, vloc, "%s must be an integer, got a list", what);
    int64_t v;
    if (parse_iexpr(p, &v, what, most, 0)) return MG_ERR;
    if (v < a->lo) return mg_diag_set(p->d, vloc, "%s must be at least %d, got %lld", what, a->lo, (long long)v);
    if (v > a->hi) return mg_diag_set(p->d, vloc, "%s must be at most %d, got %lld", what, a->hi, (long long)v);
    ca->iattr[a->slot] = (int)v;
    return MG_OK;
}

/* Fills defaults and reports a missing required attribute at the call. */
static mg_status finish_attrs(parser *p, mg_op op, mg_loc loc, call_attrs *ca)
{
    for (int i = 0; i < NATTRS; i++) {
        const attr_spec *a = &attrs[i];
        if (a->op != op || ca->given[i]) continue;
        if (a->required)
            return mg_diag_set(p->d, loc, "'%s' needs the attribute '%s' (e.g. %s)", mg_ops[op].name, a->name,
                               a->example);
    }
    for (int i = 0; i < NATTRS; i++) {
        const attr_spec *a = &attrs[i];
        if (a->op != op || ca->given[i] || a->same_as >= 0) continue;
        if (a->kind == ATTR_FLOAT) *(a->slot ? &ca->fattr2 : &ca->fattr) = a->fdef;
        else ca->iattr[a->slot] = a->def;
    }
    for (int i = 0; i < NATTRS; i++) {
        const attr_spec *a = &attrs[i];
        if (a->op != op || ca->given[i] || a->same_as < 0) continue;
        ca->iattr[a->slot] = ca->iattr[a->same_as];
    }
    return MG_OK;
}

static mg_status parse_expr(parser *p, ev *out);

static const char *callable_list(char *buf, size_t n)
{
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; i < MG_OP_COUNT && k < n; i++)
        if (mg_ops[i].callable) k += (size_t)snprintf(buf + k, n - k, "%s%s", k ? ", " : "", mg_ops[i].name);
    return buf;
}

static def_block *find_def(parser *p, const char *name)
{
    for (int i = 0; i < p->ndefs; i++)
        if (!strcmp(p->defs[i].name, name)) return &p->defs[i];
    return NULL;
}

static mg_status parse_stmt(parser *p);

/* The number of earlier calls of def `name` under the current prefix (and counts this one). */
static int next_call(parser *p, const char *name)
{
    char key[700];
    snprintf(key, sizeof key, "%s%s", p->prefix, name);
    int i = index_find(&p->call_keys, p, call_key, key);
    if (i >= 0) return p->calls[i].n++;
    if (p->ncalls == p->capcalls) {
        p->capcalls = p->capcalls ? 2 * p->capcalls : 16;
        call_count *c = realloc(p->calls, (size_t)p->capcalls * sizeof *c);
        if (!c) abort();
        p->calls = c;
    }
    p->calls[p->ncalls].key = strdup(key);
    if (!p->calls[p->ncalls].key) abort();
    p->calls[p->ncalls].n = 1;
    index_add(&p->call_keys, p, call_key, p->ncalls++);
    return 0;
}

/* Appends " (in 'block' called at line N)" so an error in a body says which call it came from. */
static mg_status in_call(parser *p, const def_block *db, mg_loc call)
{
    if (p->d) {
        size_t k = strlen(p->d->msg);
        snprintf(p->d->msg + k, sizeof p->d->msg - k, " (in '%s' called at line %d)", db->name, call.line);
    }
    return MG_ERR;
}

/* NAME "(" [ expr { "," expr } ] ")" where NAME is a def: binds the arguments in a new scope,
 * parses the body once more and yields its return value. */
static mg_status call_def(parser *p, def_block *db, mg_loc loc, ev *out)
{
    char buf[64];
    ev args[MAX_DEF_PARAMS];
    int nargs = 0;
    mg_loc aloc[MAX_DEF_PARAMS];
    p->pos++; /* '(' */
    if (!is_punct(peek(p), ')')) {
        for (;;) {
            mg_token *at = peek(p);
            if (at->kind == MG_TOK_IDENT && is_punct(&p->toks.tok[p->pos + 1], '='))
                return mg_diag_set(p->d, here(p), "'%s' is a def block: its arguments are positional, not "
                                   "attributes", db->name);
            if (nargs == MAX_DEF_PARAMS)
                return mg_diag_set(p->d, here(p), "too many arguments to '%s'", db->name);
            aloc[nargs] = here(p);
            if (parse_expr(p, &args[nargs++])) return MG_ERR;
            if (!is_punct(peek(p), ',')) break;
            p->pos++;
        }
    }
    if (expect_punct(p, ')', "to close the argument list")) return MG_ERR;
    if (nargs != db->nparams) {
        char list[512];
        size_t k = 0;
        list[0] = 0;
        for (int i = 0; i < db->nparams && k < sizeof list; i++)
            k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", i ? ", " : "", db->params[i]);
        return mg_diag_set(p->d, loc, "'%s' takes %d argument%s (%s), got %d", db->name, db->nparams,
                           db->nparams == 1 ? "" : "s", list, nargs);
    }
    if (db->active)
        return mg_diag_set(p->d, loc, "recursive call of '%s' (a def block may not call itself, directly or "
                           "through other blocks)", db->name);
    if (p->def_depth == MAX_DEF_DEPTH)
        return mg_diag_set(p->d, loc, "def blocks nested deeper than %d", MAX_DEF_DEPTH);
    if (count_step(p, loc, 1)) return MG_ERR;
    for (int i = 0; i < nargs; i++) {
        /* (the range test first: converting a value beyond int64_t is undefined) */
        if (args[i].lit && !(args[i].val >= -IEXPR_LIMIT && args[i].val <= IEXPR_LIMIT))
            return mg_diag_set(p->d, aloc[i], "argument '%s' of '%s' is out of range (at most 2^53), got %g",
                               db->params[i], db->name, args[i].val);
        if (args[i].lit && args[i].val != (double)(int64_t)args[i].val)
            return mg_diag_set(p->d, aloc[i], "argument '%s' of '%s' must be a tensor or an integer, got %g",
                               db->params[i], db->name, args[i].val);
        constant *c = NULL;
        for (int j = 0; j < p->nglobal; j++)
            if (!strcmp(p->consts[j].name, db->params[i])) c = &p->consts[j];
        if (c)
            return mg_diag_set(p->d, db->param_loc[i], "parameter '%s' of '%s' has the name of the constant "
                               "defined at line %d", db->params[i], db->name, c->loc.line);
    }
    /* the tensors made so far are counted where they were made (count_bytes names the repeat
     * block and the call it happened in), not inside the call */
    if (count_bytes(p)) return MG_ERR;
    /* the new scope: saved state is restored on return */
    int k = next_call(p, db->name);
    binding *saved_syms = p->syms;
    int saved_n = p->nsyms, saved_cap = p->capsyms, saved_nconsts = p->nconsts, saved_pos = p->pos;
    int saved_base = p->const_base;
    int saved_repeat = p->repeat_depth, saved_returned = p->returned;
    int saved_body = p->repeat_body, saved_close = p->repeat_close, saved_it = p->repeat_it;
    mg_loc saved_loc = p->repeat_loc;
    ev saved_ret = p->ret;
    char saved_suffix[sizeof p->suffix], saved_prefix[sizeof p->prefix];
    memcpy(saved_suffix, p->suffix, sizeof saved_suffix);
    memcpy(saved_prefix, p->prefix, sizeof saved_prefix);
    size_t pl = strlen(p->prefix);
    snprintf(p->prefix + pl, sizeof p->prefix - pl, "%s.%d.", db->name, k);
    p->suffix[0] = 0;
    p->syms = NULL;
    p->nsyms = p->capsyms = 0;
    p->repeat_depth = 0;
    p->returned = 0;
    p->const_base = p->nconsts; /* the caller's integer arguments are not visible */
    for (int i = 0; i < nargs; i++) {
        if (args[i].lit) {
            constant *cs = realloc(p->consts, (size_t)(p->nconsts + 1) * sizeof *cs);
            if (!cs) abort();
            p->consts = cs;
            cs[p->nconsts++] = (constant){db->params[i], (int64_t)args[i].val, db->param_loc[i]};
        } else {
            bind(p, db->params[i], args[i].node, db->param_loc[i], BOUND_ARG, -1);
        }
    }
    db->active = 1;
    p->def_depth++;
    mg_status st = MG_OK;
    p->pos = db->body;
    while (st == MG_OK && p->pos < db->close) {
        if (peek(p)->kind == MG_TOK_NEWLINE) {
            p->pos++;
            continue;
        }
        if (p->returned) {
            st = mg_diag_set(p->d, here(p), "statement after 'return' in '%s' (return comes last)", db->name);
            break;
        }
        st = parse_stmt(p);
    }
    if (st == MG_OK && p->pos != db->close)
        st = mg_diag_set(p->d, here(p), "expected '}' to close the def block, got %s", describe(peek(p), buf, sizeof buf));
    if (st == MG_OK && !p->returned)
        st = mg_diag_set(p->d, (mg_loc){p->file, p->toks.tok[db->close].line, p->toks.tok[db->close].col},
                         "'%s' ends without 'return VALUE'", db->name);
    if (st == MG_OK) st = count_bytes(p); /* (the body's tensors, in the body) */
    if (st != MG_OK) in_call(p, db, loc);
    /* out may be the caller's p->ret (`return other_block(...)`), which the restore below resets */
    ev result = p->ret;
    p->def_depth--;
    db->active = 0;
    free(p->syms);
    p->syms = saved_syms;
    p->nsyms = saved_n;
    p->capsyms = saved_cap;
    p->nconsts = saved_nconsts;
    p->const_base = saved_base;
    p->pos = saved_pos;
    p->repeat_depth = saved_repeat;
    p->repeat_body = saved_body;
    p->repeat_close = saved_close;
    p->repeat_it = saved_it;
    p->repeat_loc = saved_loc;
    p->returned = saved_returned;
    p->ret = saved_ret;
    memcpy(p->suffix, saved_suffix, sizeof saved_suffix);
    memcpy(p->prefix, saved_prefix, sizeof saved_prefix);
    *out = result;
    out->loc = loc;
    return st;
}

static mg_status parse_expr(parser *p, ev *out);

/* The operands of concat must agree on every axis but the joined one (reported at the
 * operand); slice's start and end count from the end when negative and must leave a
 * non-empty part of the axis (reported at the attribute). The axis is resolved already. */
static mg_status unet_args(parser *p, mg_op op, const ev *args, const int *in, int nargs, call_attrs *ca)
{
    char sa[128], sb[128];
    const mg_shape *x = &p->g->nodes[in[0]].type.shape;
    int ax = ca->iattr[0];
    if (op == MG_OP_CONCAT) {
        for (int i = 1; i < nargs; i++) {
            const mg_shape *s = &p->g->nodes[in[i]].type.shape;
            int ok = s->rank == x->rank;
            for (int k = 0; ok && k < s->rank; k++) ok = k == ax || s->dim[k] == x->dim[k];
            if (!ok)
                return mg_diag_set(p->d, args[i].loc, "concat along axis %d: operand %d is %s, which does not match "
                                   "the first operand %s on the other axes", ax, i + 1, mg_shape_str(s, sa, sizeof sa),
                                   mg_shape_str(x, sb, sizeof sb));
        }
        return MG_OK;
    }
    if (x->rank < 1) return MG_OK; /* shape inference reports the scalar */
    int64_t len = x->dim[ax];
    int ks = attr_index(op, "start"), ke = attr_index(op, "end");
    if (len > INT_MAX) /* start and end are int attributes: they cannot name a position past 2^31 - 1 */
        return mg_diag_set(p->d, args[0].loc, "'slice' supports axes of at most %d elements; axis %d of %s has %lld",
                           INT_MAX, ax, mg_shape_str(x, sa, sizeof sa), (long long)len);
    int64_t start = ca->iattr[1], end = ca->given[ke] ? ca->iattr[2] : len;
    if (start < 0) start += len;
    if (end < 0) end += len;
    if (start < 0 || start >= len)
        return mg_diag_set(p->d, ca->given[ks] ? ca->vloc[ks] : args[0].loc, "attribute 'start' of 'slice' is %d, "
                           "outside axis %d of %s (length %lld)", ca->iattr[1], ax, mg_shape_str(x, sa, sizeof sa),
                           (long long)len);
    if (end <= start || end > len)
        return mg_diag_set(p->d, ca->given[ke] ? ca->vloc[ke] : args[0].loc, "attribute 'end' of 'slice' is %d: "
                           "the slice [%lld:%lld] of axis %d of %s (length %lld) %s", ca->iattr[2], (long long)start,
                           (long long)end, ax, mg_shape_str(x, sa, sizeof sa), (long long)len,
                           end > len ? "ends past the axis" : "is empty");
    ca->iattr[1] = (int)start;
    ca->iattr[2] = (int)end;
    return MG_OK;
}

/* The convolution kernels multiply the rows and columns of the patch matrix of a call (its
 * K = C/groups * kh * kw by P = N * OH * OW, the output's positions; those of the input for
 * conv_transpose2d) in int64_t: a convolution whose tensors are within the limits can still
 * make K * P overflow (x of 2^30 channels, 1x1, padded to 2^20 x 2^20: 2^70). At most 2^56,
 * far above any real network's (resnet50's largest, batch 64: about 2^24). */
static mg_status conv_size(parser *p, int id)
{
    const mg_node *n = &p->g->nodes[id];
    const mg_shape *w = &p->g->nodes[n->in[1]].type.shape, *y = &n->type.shape, *x = &p->g->nodes[n->in[0]].type.shape;
    const mg_shape *cs = n->op == MG_OP_CONV2D ? x : y, *ps = n->op == MG_OP_CONV2D ? y : x;
    double k = (double)cs->dim[1] / (double)(n->iattr[3] > 0 ? n->iattr[3] : 1) * (double)w->dim[2] * (double)w->dim[3];
    double pp = (double)ps->dim[0] * (double)ps->dim[2] * (double)ps->dim[3];
    if (k * pp > 0x1p56)
        return mg_diag_set(p->d, n->loc, "'%s' too large for the kernels: its patch matrix has %.3g rows by %.3g "
                           "columns (at most 2^56 elements)", mg_ops[n->op].name, k, pp);
    return MG_OK;
}

/* primary = NUM | IDENT | IDENT "(" [ expr { "," expr } ] ")" | "(" expr ")" */
static mg_status parse_primary(parser *p, ev *out)
{
    char buf[64], name[128];
    mg_token *t = peek(p);
    mg_loc loc = here(p);
    memset(out, 0, sizeof *out);
    out->loc = loc;
    if (t->kind == MG_TOK_NUMBER) {
        out->lit = 1;
        out->val = t->num;
        p->pos++;
        return MG_OK;
    }
    if (is_punct(t, '(')) {
        p->pos++;
        if (parse_expr(p, out)) return MG_ERR;
        return expect_punct(p, ')', "to close '('");
    }
    if (t->kind != MG_TOK_IDENT)
        return mg_diag_set(p->d, loc, "expected an expression, got %s", describe(t, buf, sizeof buf));
    if (expect_ident(p, "a name", name, sizeof name)) return MG_ERR;
    if (is_punct(peek(p), '(')) {
        def_block *db = find_def(p, name);
        if (db) return call_def(p, db, loc, out);
        int op = -1;
        for (int i = 0; i < MG_OP_COUNT; i++)
            if (mg_ops[i].callable && !strcmp(mg_ops[i].name, name)) op = i;
        if (op < 0) {
            char list[512];
            if (lookup(p, name) || find_const(p, name)) /* (it listed every function) */
                return mg_diag_set(p->d, loc, "'%s' is a %s, not a function", name,
                                   lookup(p, name) ? "tensor" : "constant");
            const char *best = NULL;
            int bestd = 3;
            for (int i = 0; i < MG_OP_COUNT; i++)
                if (mg_ops[i].callable && distance(name, mg_ops[i].name) < bestd) {
                    bestd = distance(name, mg_ops[i].name);
                    best = mg_ops[i].name;
                }
            for (int i = 0; i < p->ndefs; i++)
                if (distance(name, p->defs[i].name) < bestd) {
                    bestd = distance(name, p->defs[i].name);
                    best = p->defs[i].name;
                }
            if (best)
                return mg_diag_set(p->d, loc, "unknown function '%s' (did you mean '%s'?)", name, best);
            return mg_diag_set(p->d, loc, "unknown function '%s'; known functions: %s", name,
                               callable_list(list, sizeof list));
        }
        p->pos++;
        /* a variadic op (ninputs -1) takes 2..MAX_CALL_ARGS arguments, chained MG_MAX_INPUTS at a time */
        enum { MAX_CALL_ARGS = 16 };
        int variadic = mg_ops[op].ninputs < 0, maxargs = variadic ? MAX_CALL_ARGS : MG_MAX_INPUTS;
        ev args[MAX_CALL_ARGS];
        int nargs = 0, nattrs = 0;
        call_attrs ca;
        memset(&ca, 0, sizeof ca);
        ca.fattr = 1.0;
        if (!is_punct(peek(p), ')')) {
            for (;;) {
                mg_token *at = peek(p);
                if (at->kind == MG_TOK_IDENT && is_punct(&p->toks.tok[p->pos + 1], '=')) {
                    if (parse_attr(p, (mg_op)op, &ca)) return MG_ERR;
                    nattrs++;
                } else {
                    if (nattrs)
                        return mg_diag_set(p->d, here(p), "positional argument after an attribute in the call "
                                           "of '%s' (attributes come last)", name);
                    if (nargs == maxargs)
                        return mg_diag_set(p->d, here(p), "too many arguments to '%s'%s", name,
                                           variadic ? " (at most 16)" : "");
                    if (parse_expr(p, &args[nargs++])) return MG_ERR;
                }
                if (!is_punct(peek(p), ',')) break;
                p->pos++;
            }
        }
        if (expect_punct(p, ')', "to close the argument list")) return MG_ERR;
        if (variadic && nargs < 2)
            return mg_diag_set(p->d, loc, "'%s' takes at least 2 arguments, got %d", name, nargs);
        if (!variadic && nargs != mg_ops[op].ninputs)
            return mg_diag_set(p->d, loc, "'%s' takes %d argument%s, got %d", name, mg_ops[op].ninputs,
                               mg_ops[op].ninputs == 1 ? "" : "s", nargs);
        if (finish_attrs(p, (mg_op)op, loc, &ca)) return MG_ERR;
        mg_dtype dt = MG_F32;
        for (int i = 0; i < nargs; i++)
            if (!args[i].lit) dt = p->g->nodes[args[i].node].type.dtype == MG_I32 ? dt : p->g->nodes[args[i].node].type.dtype;
        int in[MAX_CALL_ARGS];
        for (int i = 0; i < nargs; i++)
            if ((in[i] = materialize(p, args[i], dt)) < 0) return MG_ERR;
        if (check_size(p, loc)) return MG_ERR;
        if (op == MG_OP_RESHAPE) {
            /* resolve the -1 against the operand's element count */
            char sa[128];
            const mg_shape *xs = &p->g->nodes[in[0]].type.shape;
            int64_t have = mg_shape_numel(xs), known = 1;
            for (int i = 0; i < ca.shape.rank; i++)
                if (i != ca.minus_one) known *= ca.shape.dim[i]; /* at most 2^40: see parse_attr */
            if (ca.minus_one >= 0) {
                if (have % known)
                    return mg_diag_set(p->d, ca.shape_loc, "cannot reshape %s (%lld elements) to a shape with "
                                       "%lld elements per -1 entry: %lld is not a multiple of %lld",
                                       mg_shape_str(xs, sa, sizeof sa), (long long)have, (long long)known,
                                       (long long)have, (long long)known);
                ca.shape.dim[ca.minus_one] = have / known;
            }
            out->node = mg_graph_add_shaped(p->g, MG_OP_RESHAPE, 1, in, NULL, 1.0, &ca.shape, loc, p->d);
            return out->node < 0 ? MG_ERR : MG_OK;
        }
        if ((mg_op)op == MG_OP_TRANSPOSE) {
            /* perm must name every axis of the operand once; a negative entry counts from the end,
             * as every other axis attribute does (and NumPy's and PyTorch's transpose) */
            char sa[128], as[48];
            const mg_shape *xs = &p->g->nodes[in[0]].type.shape;
            int seen[MG_MAX_RANK] = {0};
            if (ca.shape.rank != xs->rank)
                return mg_diag_set(p->d, ca.shape_loc, "transpose perm has %d entries but the operand %s has %d axes",
                                   ca.shape.rank, mg_shape_str(xs, sa, sizeof sa), xs->rank);
            for (int i = 0; i < ca.shape.rank; i++) {
                int given = (int)ca.shape.dim[i], ax = given < 0 ? given + xs->rank : given;
                as[0] = 0;
                if (given < 0 && ax >= 0) snprintf(as, sizeof as, " (that is, axis %d)", ax);
                if (ax < 0 || ax >= xs->rank || seen[ax])
                    return mg_diag_set(p->d, ca.dim_loc[i], "transpose perm must list each axis 0..%d (or -%d..-1) "
                                       "once; axis %d%s %s", xs->rank - 1, xs->rank, given, as,
                                       ax < 0 || ax >= xs->rank ? "does not exist" : "is repeated");
                seen[ax] = 1;
                ca.iattr[i] = ax;
            }
        }
        int k = attr_index((mg_op)op, "axis");
        if (k >= 0) {
            /* softmax, log_softmax and cross_entropy count the axis from the last one in the IR (so
             * the default, the last, is 0); concat and slice from the first */
            int rank = p->g->nodes[in[0]].type.shape.rank, ax = ca.iattr[0];
            int from_last = (mg_op)op == MG_OP_SOFTMAX || (mg_op)op == MG_OP_LOG_SOFTMAX || (mg_op)op == MG_OP_CROSS_ENTROPY;
            if (rank > 0 && (ax < -rank || ax >= rank))
                return mg_diag_set(p->d, ca.given[k] ? ca.vloc[k] : loc, "attribute 'axis' of '%s' is %d, out of "
                                   "range for an operand of rank %d (%d..%d)", name, ax, rank, -rank, rank - 1);
            ax = ax < 0 ? ax + rank : ax;
            ca.iattr[0] = rank > 0 ? (from_last ? rank - 1 - ax : ax) : 0;
        }
        if (((mg_op)op == MG_OP_SLICE || (mg_op)op == MG_OP_CONCAT) && unet_args(p, (mg_op)op, args, in, nargs, &ca))
            return MG_ERR;
        if ((mg_op)op == MG_OP_CONCAT && nargs > MG_MAX_INPUTS) {
            /* more operands than a node holds: concat(concat(a, b, c, d), e, ...) */
            int acc = in[0];
            for (int i = 1; i < nargs;) {
                int m = nargs - i < MG_MAX_INPUTS - 1 ? nargs - i : MG_MAX_INPUTS - 1;
                int part[MG_MAX_INPUTS] = {acc};
                memcpy(part + 1, in + i, (size_t)m * sizeof *in);
                acc = mg_graph_add_op(p->g, MG_OP_CONCAT, m + 1, part, ca.iattr, ca.fattr, loc, p->d);
                if (acc < 0) return MG_ERR;
                i += m;
            }
            out->node = acc;
            return MG_OK;
        }
        if ((mg_op)op == MG_OP_BATCH_NORM) {
            /* two float attributes: set both before inference checks them */
            int id = mg_graph_add(p->g, MG_OP_BATCH_NORM, nargs, in, loc);
            p->g->nodes[id].fattr = ca.fattr;
            p->g->nodes[id].fattr2 = ca.fattr2;
            if (mg_infer_type(p->g, id, p->d)) {
                p->g->n--;
                return MG_ERR;
            }
            out->node = id;
            return MG_OK;
        }
        out->node = mg_graph_add_op(p->g, (mg_op)op, nargs, in, ca.iattr, ca.fattr, loc, p->d);
        if (out->node >= 0 && (op == MG_OP_CONV2D || op == MG_OP_CONV_TRANSPOSE2D)) return conv_size(p, out->node);
        return out->node < 0 ? MG_ERR : MG_OK;
    }
    constant *cst = find_const(p, name);
    if (cst) {
        out->lit = 1;
        out->val = (double)cst->val;
        return MG_OK;
    }
    binding *b = lookup(p, name);
    if (!b) {
        const char *best = NULL;
        int bestd = 3;
        for (int i = 0; i < p->nsyms; i++) {
            int dd = distance(name, p->syms[i].name);
            if (dd < bestd) {
                bestd = dd;
                best = p->syms[i].name;
            }
        }
        if (best) return mg_diag_set(p->d, loc, "unknown name '%s' (did you mean '%s'?)", name, best);
        return mg_diag_set(p->d, loc, "unknown name '%s'", name);
    }
    out->node = b->node;
    return MG_OK;
}

/* unary = "-" unary | primary */
static mg_status parse_unary_at(parser *p, ev *out);

/* Every nesting of a tensor expression (parentheses, call arguments, unary minus, def calls
 * inside expressions) passes here: a bound on the depth keeps the recursion off the end of the
 * stack ((((... 10000 levels deep crashed). */
enum { EXPR_MAX_DEPTH = 200 };

static mg_status parse_unary(parser *p, ev *out)
{
    if (p->expr_depth == EXPR_MAX_DEPTH)
        return mg_diag_set(p->d, here(p), "expression nested too deeply (more than %d levels)", EXPR_MAX_DEPTH);
    p->expr_depth++;
    mg_status st = parse_unary_at(p, out);
    p->expr_depth--;
    return st;
}

static mg_status parse_unary_at(parser *p, ev *out)
{
    if (is_punct(peek(p), '-')) {
        mg_loc loc = here(p);
        p->pos++;
        if (parse_unary(p, out)) return MG_ERR;
        if (out->lit) {
            out->val = -out->val;
            return MG_OK;
        }
        if (check_size(p, loc)) return MG_ERR;
        out->node = mg_graph_add_op(p->g, MG_OP_NEG, 1, &out->node, NULL, 1.0, loc, p->d);
        out->loc = loc;
        return out->node < 0 ? MG_ERR : MG_OK;
    }
    return parse_primary(p, out);
}

static mg_status binary(parser *p, char opc, mg_loc loc, ev *l, ev r)
{
    if (l->lit && r.lit) {
        double a = l->val;
        switch (opc) {
        case '+': l->val += r.val; break;
        case '-': l->val -= r.val; break;
        case '*': l->val *= r.val; break;
        case '/': l->val /= r.val; break;
        default: return mg_diag_set(p->d, loc, "'@' needs two matrices, got two numbers");
        }
        if (!isfinite(l->val))
            return mg_diag_set(p->d, loc, "%g %c %g is not a finite number", a, opc, r.val);
        return MG_OK;
    }
    mg_op op = opc == '+' ? MG_OP_ADD : opc == '-' ? MG_OP_SUB : opc == '*' ? MG_OP_MUL
             : opc == '/' ? MG_OP_DIV : MG_OP_MATMUL;
    mg_dtype dt = l->lit ? p->g->nodes[r.node].type.dtype : p->g->nodes[l->node].type.dtype;
    if (dt == MG_I32) dt = MG_F32;
    if (check_size(p, loc)) return MG_ERR;
    int in[2] = {materialize(p, *l, dt), materialize(p, r, dt)};
    if (in[0] < 0 || in[1] < 0) return MG_ERR;
    l->node = mg_graph_add_op(p->g, op, 2, in, NULL, 1.0, loc, p->d);
    l->lit = 0;
    return l->node < 0 ? MG_ERR : MG_OK;
}

/* term = unary { ("*" | "/" | "@") unary } */
static mg_status parse_term(parser *p, ev *out)
{
    if (parse_unary(p, out)) return MG_ERR;
    while (is_punct(peek(p), '*') || is_punct(peek(p), '/') || is_punct(peek(p), '@')) {
        char opc = peek(p)->start[0];
        mg_loc loc = here(p);
        ev r;
        p->pos++;
        if (parse_unary(p, &r) || binary(p, opc, loc, out, r)) return MG_ERR;
    }
    return MG_OK;
}

/* expr = term { ("+" | "-") term } */
static mg_status parse_expr(parser *p, ev *out)
{
    if (parse_term(p, out)) return MG_ERR;
    while (is_punct(peek(p), '+') || is_punct(peek(p), '-')) {
        char opc = peek(p)->start[0];
        mg_loc loc = here(p);
        ev r;
        p->pos++;
        if (parse_term(p, &r) || binary(p, opc, loc, out, r)) return MG_ERR;
    }
    return MG_OK;
}

/* type = ("f32" | "f64" | "i32") "[" [ INT { "," INT } ] "]" */
static mg_status parse_type(parser *p, mg_type *t)
{
    char buf[64];
    mg_token *tk = peek(p);
    if (is_word(tk, "f32")) t->dtype = MG_F32;
    else if (is_word(tk, "f64")) t->dtype = MG_F64;
    else if (is_word(tk, "i32")) t->dtype = MG_I32;
    else
        return mg_diag_set(p->d, here(p), "expected a dtype (f32, f64 or i32), got %s",
                           describe(tk, buf, sizeof buf));
    p->pos++;
    if (expect_punct(p, '[', "to start the shape")) return MG_ERR;
    t->shape.rank = 0;
    double numel = 1;
    while (!is_punct(peek(p), ']')) {
        tk = peek(p);
        mg_loc dloc = here(p);
        /* a literal alone is checked as written; an expression by its value (0 + 4 was refused
         * as "got '0'") */
        if (!starts_iexpr(p, ',', ']'))
            return mg_diag_set(p->d, dloc, "expected a positive integer dimension, got %s",
                               describe(tk, buf, sizeof buf));
        int64_t v;
        if (parse_iexpr(p, &v, "a dimension", "10^12", 0)) return MG_ERR;
        if (v < 1)
            return mg_diag_set(p->d, dloc, "expected a positive integer dimension, got %lld", (long long)v);
        if (v > 1000000000000LL)
            return mg_diag_set(p->d, dloc, "dimension %lld is too large (at most 10^12)", (long long)v);
        if (t->shape.rank == MG_MAX_RANK)
            return mg_diag_set(p->d, dloc, "more than %d dimensions", MG_MAX_RANK);
        t->shape.dim[t->shape.rank++] = v;
        numel *= (double)v;
        if (numel > (double)(1LL << 40))
            return mg_diag_set(p->d, dloc, "tensor too large (more than 2^40 elements)");
        if (is_punct(peek(p), ',')) {
            p->pos++;
            if (is_punct(peek(p), ']')) /* (as a call's arguments: no comma before the end) */
                return mg_diag_set(p->d, here(p), "expected a dimension after ',' in the shape, got ']'");
            continue;
        }
        if (!is_punct(peek(p), ']'))
            return mg_diag_set(p->d, here(p), "expected ',' or ']' in the shape, got %s",
                               describe(peek(p), buf, sizeof buf));
    }
    p->pos++;
    return MG_OK;
}

/* A warning at loc, kept in the graph for the driver (once per place: a def body is parsed
 * again at each call). */
static void warn(parser *p, mg_loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void warn(parser *p, mg_loc loc, const char *fmt, ...)
{
    mg_graph *g = p->g;
    for (int i = 0; i < g->nwarnings; i++)
        if (g->warnings[i].loc.line == loc.line && g->warnings[i].loc.col == loc.col) return;
    if (g->nwarnings == MG_MAX_WARNINGS) {
        g->warnings_dropped = 1;
        return;
    }
    mg_diag *w = &g->warnings[g->nwarnings++];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->msg, sizeof w->msg, fmt, ap);
    va_end(ap);
    w->loc = loc;
}

/* A declaration that takes a name in use hides what the name was bound to, with nothing said
 * (`param h` after `h = ...`; a `param w` in a repeat body made the top-level `w` unreachable
 * after the block): a warning that names both places. Rebinding a value with '=' says nothing,
 * and neither does a repeated `param w` taking over the name from the same declaration in the
 * previous iteration: a binding made in the outermost repeat body being expanded, at or after
 * this statement, was made in an earlier iteration. */
static void warn_hiding(parser *p, mg_op op, const char *name, mg_loc loc, int stmt)
{
    static const char *const what[] = {"the value", "the input", "the param", "the argument"};
    const binding *b = lookup(p, name);
    if (!b || (p->repeat_depth && b->stmt >= stmt && b->stmt >= p->repeat_body && b->stmt < p->repeat_close)) return;
    warn(p, loc, "%s '%s' hides %s '%s' %s at %d:%d: from here on '%s' names this %s (rename one of them if that "
         "is not meant)", op == MG_OP_INPUT ? "input" : "param", name, what[b->by], name,
         b->by == BOUND_VALUE ? "bound" : b->by == BOUND_ARG ? "of the def block" : "declared", b->loc.line,
         b->loc.col, name, op == MG_OP_INPUT ? "input" : "param");
}

static mg_status declare(parser *p, mg_op op)
{
    char name[128], full[1024];
    int stmt = p->pos;
    p->pos++;
    mg_loc loc = here(p);
    if (expect_ident(p, op == MG_OP_INPUT ? "an input name" : "a parameter name", name, sizeof name))
        return MG_ERR;
    if (not_const(p, name, loc)) return MG_ERR;
    if (op == MG_OP_PARAM) snprintf(full, sizeof full, "%s%s%s", p->prefix, name, p->suffix);
    else snprintf(full, sizeof full, "%s", name);
    mg_graph *g = p->g;
    int dup = index_find(&p->decls, p, node_name, full);
    if (dup >= 0)
        return mg_diag_set(p->d, loc, "duplicate declaration of '%s' (first declared at line %d)", full,
                           g->nodes[dup].loc.line);
    warn_hiding(p, op, name, loc, stmt);
    if (expect_punct(p, ':', "after the name")) return MG_ERR;
    mg_type t;
    if (parse_type(p, &t)) return MG_ERR;
    mg_init init = t.shape.rank >= 2 ? MG_INIT_HE : MG_INIT_ZEROS;
    double arg = 0;
    if (op == MG_OP_PARAM && t.dtype == MG_I32)
        return mg_diag_set(p->d, loc, "parameter '%s' must be f32 or f64 (it is trained), got i32", name);
    if (op == MG_OP_PARAM && is_punct(peek(p), '=')) {
        char iname[64], buf[64];
        p->pos++;
        mg_loc iloc = here(p);
        if (expect_ident(p, "an initializer", iname, sizeof iname)) return MG_ERR;
        static const char *names[] = {"zeros", "ones", "he", "xavier", "normal", "uniform"};
        int k = -1;
        for (int i = 0; i < 6; i++)
            if (!strcmp(iname, names[i])) k = i;
        if (k < 0)
            return mg_diag_set(p->d, iloc, "unknown initializer '%s'; expected zeros, ones, he, xavier, "
                               "normal(STD) or uniform(A)", iname);
        init = (mg_init)k;
        if (init == MG_INIT_NORMAL || init == MG_INIT_UNIFORM) {
            if (expect_punct(p, '(', init == MG_INIT_NORMAL ? "after 'normal' (normal(STD))"
                                                           : "after 'uniform' (uniform(A))"))
                return MG_ERR;
            mg_token *tk = peek(p);
            if (tk->kind != MG_TOK_NUMBER || !(tk->num > 0))
                return mg_diag_set(p->d, here(p), "expected a positive number, got %s",
                                   describe(tk, buf, sizeof buf));
            /* every value drawn must be finite in the param's dtype: uniform(A) draws within
             * [-A, A], normal(STD) up to 8.6 STD (the Box-Muller draw of 53-bit uniforms ends
             * at sqrt(-2 ln 2^-53) = 8.57); normal(1e39) made f32 params of inf and a NaN loss */
            double most = (t.dtype == MG_F32 ? (double)FLT_MAX : DBL_MAX) / (init == MG_INIT_NORMAL ? 8.6 : 1.0);
            if (tk->num > most)
                return mg_diag_set(p->d, here(p), "%s(%.*s) draws values beyond %s's range: %s is at most %.3g here",
                                   names[k], tk->len > 40 ? 40 : tk->len, tk->start, mg_dtype_name(t.dtype),
                                   init == MG_INIT_NORMAL ? "the standard deviation" : "the bound", most);
            arg = tk->num;
            p->pos++;
            if (expect_punct(p, ')', "to close the initializer")) return MG_ERR;
        }
    }
    if (check_size(p, loc)) return MG_ERR; /* (a declaration is a node too: a repeat of params alone) */
    int id = mg_graph_add(g, op, 0, NULL, loc);
    mg_node *n = &g->nodes[id];
    n->type = t;
    n->name = mg_graph_intern(g, full);
    n->init = init;
    n->init_arg = arg;
    int **list = op == MG_OP_INPUT ? &g->inputs : &g->params;
    int *count = op == MG_OP_INPUT ? &g->ninputs : &g->nparams;
    int *cap = op == MG_OP_INPUT ? &p->cap_inputs : &p->cap_params; /* grown by doubling */
    if (*count == *cap) {
        *cap = *cap ? 2 * *cap : 16;
        int *l = realloc(*list, (size_t)*cap * sizeof *l);
        if (!l) abort();
        *list = l;
    }
    n->index = *count;
    (*list)[(*count)++] = id;
    index_add(&p->decls, p, node_name, id);
    bind(p, name, id, loc, op == MG_OP_INPUT ? BOUND_INPUT : BOUND_PARAM, stmt);
    if (count_bytes(p)) return MG_ERR;
    return expect_end(p);
}

static mg_status parse_stmt(parser *p);

static int blank(const char *s, size_t n)
{
    for (size_t i = n >= 3 && !memcmp(s, "\xEF\xBB\xBF", 3) ? 3 : 0; i < n; i++) /* past a byte order mark */
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n') return 0;
    return 1;
}

/* "repeat" INT "{" { stmt NEWLINE } "}" */
static mg_status parse_repeat(parser *p)
{
    char buf[64];
    mg_loc kw = here(p);
    p->pos++;
    mg_token *tk = peek(p);
    mg_loc cloc = here(p);
    if (!starts_iexpr(p, '{', '{'))
        return mg_diag_set(p->d, cloc, "expected a repeat count (a positive integer), got %s",
                           describe(tk, buf, sizeof buf));
    int64_t cnt;
    if (parse_iexpr(p, &cnt, "a repeat count", "1000000", 0)) return MG_ERR;
    if (cnt < 1)
        return mg_diag_set(p->d, cloc, "expected a repeat count (a positive integer), got %lld", (long long)cnt);
    if (cnt > 1000000)
        return mg_diag_set(p->d, cloc, "repeat count %lld is too large (at most 1000000)", (long long)cnt);
    int count = (int)cnt;
    if (expect_punct(p, '{', "to open the repeated block")) return MG_ERR;
    if (p->repeat_depth == MAX_REPEAT_DEPTH)
        return mg_diag_set(p->d, kw, "repeat blocks nested deeper than %d", MAX_REPEAT_DEPTH);
    int start = p->pos, depth = 1, close = -1;
    for (int i = start; i < p->toks.n && close < 0; i++) {
        if (is_punct(&p->toks.tok[i], '{')) depth++;
        if (is_punct(&p->toks.tok[i], '}') && --depth == 0) close = i;
    }
    if (close < 0) return mg_diag_set(p->d, kw, "'repeat' block is never closed with '}'");
    size_t keep = strlen(p->suffix);
    if (!p->repeat_depth) p->repeat_loc = kw, p->repeat_body = start, p->repeat_close = close;
    p->repeat_depth++;
    for (int it = 0; it < count; it++) {
        if (p->repeat_depth == 1) p->repeat_it = it;
        if (count_step(p, kw, 0)) return MG_ERR;
        snprintf(p->suffix + keep, sizeof p->suffix - keep, ".%d", it);
        p->pos = start;
        while (p->pos < close) {
            if (peek(p)->kind == MG_TOK_NEWLINE) {
                p->pos++;
                continue;
            }
            if (parse_stmt(p)) return MG_ERR;
        }
        if (p->pos != close) return mg_diag_set(p->d, here(p), "expected '}' to close the repeat block");
        if (count_bytes(p)) return MG_ERR; /* (this iteration's tensors, in this iteration) */
    }
    p->repeat_depth--;
    p->suffix[keep] = 0;
    p->pos = close + 1;
    return expect_end(p);
}

/* "const" IDENT "=" iexpr */
static mg_status parse_const(parser *p)
{
    char name[128], what[192];
    p->pos++;
    mg_loc loc = here(p);
    if (expect_ident(p, "a constant name", name, sizeof name)) return MG_ERR;
    constant *c = find_const(p, name);
    if (c) return mg_diag_set(p->d, loc, "constant '%s' is already defined (at line %d)", name, c->loc.line);
    binding *b = lookup(p, name);
    if (b) return mg_diag_set(p->d, loc, "'%s' already names a tensor (bound at line %d)", name, b->loc.line);
    if (expect_punct(p, '=', "after the constant's name")) return MG_ERR;
    snprintf(what, sizeof what, "constant '%s'", name);
    int64_t v;
    if (parse_iexpr(p, &v, what, NULL, 0)) return MG_ERR;
    constant *cs = realloc(p->consts, (size_t)(p->nconsts + 1) * sizeof *cs);
    if (!cs) abort();
    p->consts = cs;
    cs[p->nconsts++] = (constant){mg_graph_intern(p->g, name), v, loc};
    p->nglobal = p->const_base = p->nconsts; /* constants are only defined at the top level */
    return expect_end(p);
}

/* "def" IDENT "(" [ IDENT { "," IDENT } ] ")" "{" ... "}" — stored, parsed at each call */
static mg_status parse_def(parser *p)
{
    char name[128], pname[128];
    mg_loc kw = here(p);
    p->pos++;
    mg_loc loc = here(p);
    if (expect_ident(p, "the block's name", name, sizeof name)) return MG_ERR;
    for (int i = 0; i < MG_OP_COUNT; i++)
        if (mg_ops[i].callable && !strcmp(mg_ops[i].name, name))
            return mg_diag_set(p->d, loc, "'%s' is a built-in function; choose another name for the block", name);
    def_block *old = find_def(p, name);
    if (old) return mg_diag_set(p->d, loc, "def block '%s' is already defined (at line %d)", name, old->loc.line);
    def_block db;
    memset(&db, 0, sizeof db);
    db.name = mg_graph_intern(p->g, name);
    db.loc = loc;
    if (expect_punct(p, '(', "after the block's name (def NAME(ARGS) { ... })")) return MG_ERR;
    if (!is_punct(peek(p), ')')) {
        for (;;) {
            mg_loc ploc = here(p);
            if (expect_ident(p, "an argument name", pname, sizeof pname)) return MG_ERR;
            for (int i = 0; i < db.nparams; i++)
                if (!strcmp(db.params[i], pname))
                    return mg_diag_set(p->d, ploc, "argument '%s' of '%s' named twice", pname, name);
            if (db.nparams == MAX_DEF_PARAMS)
                return mg_diag_set(p->d, ploc, "more than %d arguments", MAX_DEF_PARAMS);
            db.param_loc[db.nparams] = ploc;
            db.params[db.nparams++] = mg_graph_intern(p->g, pname);
            if (!is_punct(peek(p), ',')) break;
            p->pos++;
        }
    }
    if (expect_punct(p, ')', "to close the argument list") || expect_punct(p, '{', "to open the block's body"))
        return MG_ERR;
    int depth = 1, close = -1;
    for (int i = p->pos; i < p->toks.n && close < 0; i++) {
        if (is_punct(&p->toks.tok[i], '{')) depth++;
        if (is_punct(&p->toks.tok[i], '}') && --depth == 0) close = i;
    }
    if (close < 0) return mg_diag_set(p->d, kw, "'def' block is never closed with '}'");
    db.body = p->pos;
    db.close = close;
    def_block *ds = realloc(p->defs, (size_t)(p->ndefs + 1) * sizeof *ds);
    if (!ds) abort();
    p->defs = ds;
    ds[p->ndefs++] = db;
    p->pos = close + 1;
    return expect_end(p);
}

/* "return" expr — the value of the def call; the body's last statement */
static mg_status parse_return(parser *p)
{
    mg_loc loc = here(p);
    if (!p->def_depth) return mg_diag_set(p->d, loc, "'return' outside a def block");
    if (p->repeat_depth) return mg_diag_set(p->d, loc, "'return' inside a repeat block (return comes last in the def body)");
    p->pos++;
    if (parse_expr(p, &p->ret)) return MG_ERR;
    p->returned = 1;
    return expect_end(p);
}

static mg_status parse_stmt(parser *p)
{
    char buf[64], name[128];
    mg_token *t = peek(p);
    mg_graph *g = p->g;
    mg_loc loc = here(p);
    int in_repeat = p->repeat_depth > 0, stmt = p->pos;
    if (count_step(p, loc, 0)) return MG_ERR;
    if (t->kind == MG_TOK_IDENT && (is_word(t, "model") || is_word(t, "input") || is_word(t, "output") ||
                                    is_word(t, "minimize") || is_word(t, "const")) &&
        in_repeat && !is_punct(&p->toks.tok[p->pos + 1], '='))
        return mg_diag_set(p->d, loc, "'%.*s' is not allowed inside a repeat block", t->len, t->start);
    if (t->kind == MG_TOK_IDENT && (is_word(t, "model") || is_word(t, "input") || is_word(t, "output") ||
                                    is_word(t, "minimize") || is_word(t, "const") || is_word(t, "def")) &&
        p->def_depth && !is_punct(&p->toks.tok[p->pos + 1], '='))
        return mg_diag_set(p->d, loc, "'%.*s' is not allowed inside a def block", t->len, t->start);
    if (is_word(t, "def") && in_repeat && !is_punct(&p->toks.tok[p->pos + 1], '='))
        return mg_diag_set(p->d, loc, "'def' is not allowed inside a repeat block");
    if (!g->model_name && !is_word(t, "model"))
        return mg_diag_set(p->d, loc, "expected 'model NAME' as the first statement, got %s",
                           describe(t, buf, sizeof buf));
    if (t->kind == MG_TOK_IDENT && is_punct(&p->toks.tok[p->pos + 1], '=')) {
        /* IDENT "=" expr */
        if (expect_ident(p, "a name", name, sizeof name) || not_const(p, name, loc)) return MG_ERR;
        p->pos++;
        ev v;
        if (parse_expr(p, &v)) return MG_ERR;
        int id = materialize(p, v, MG_F32);
        if (id < 0) return MG_ERR;
        if (!g->nodes[id].name) g->nodes[id].name = mg_graph_intern(g, name);
        bind(p, name, id, loc, BOUND_VALUE, stmt);
        return expect_end(p);
    }
    if (is_word(t, "model")) {
        if (g->model_name)
            return mg_diag_set(p->d, loc, "second 'model' statement (the model was named at line %d)",
                               p->model_loc.line);
        p->pos++;
        mg_loc nloc = here(p);
        if (expect_ident(p, "the model's name", name, sizeof name)) return MG_ERR;
        if (mg_model_name_reserved(name))
            return mg_diag_set(p->d, nloc, "model name '%s' would give the generated code reserved C names such as "
                               "'%s_forward': a model's name may not begin or end with '_' or contain '__'", name, name);
        g->model_name = mg_graph_intern(g, name);
        p->model_loc = loc;
        return expect_end(p);
    }
    if (is_word(t, "const")) return parse_const(p);
    if (is_word(t, "def")) return parse_def(p);
    if (is_word(t, "return")) return parse_return(p);
    if (is_word(t, "input")) return declare(p, MG_OP_INPUT);
    if (is_word(t, "param")) return declare(p, MG_OP_PARAM);
    if (is_word(t, "repeat")) return parse_repeat(p);
    if (is_word(t, "output")) {
        p->pos++;
        for (;;) {
            mg_loc nloc = here(p);
            if (expect_ident(p, "an output name", name, sizeof name)) return MG_ERR;
            binding *b = lookup(p, name);
            if (!b && is_punct(peek(p), '('))
                return mg_diag_set(p->d, nloc, "output takes names, not expressions: bind the value first "
                                   "(y = %s(...)), then 'output y'", name);
            if (!b) return mg_diag_set(p->d, nloc, "unknown name '%s' in output", name);
            for (int i = 0; i < g->noutputs; i++)
                if (!strcmp(g->outputs[i].name, name))
                    return mg_diag_set(p->d, nloc, "'%s' is already an output", name);
            mg_output *o = realloc(g->outputs, (size_t)(g->noutputs + 1) * sizeof *o);
            if (!o) abort();
            g->outputs = o;
            o[g->noutputs].name = mg_graph_intern(g, name);
            o[g->noutputs++].node = b->node;
            if (!is_punct(peek(p), ',')) break;
            p->pos++;
        }
        return expect_end(p);
    }
    if (is_word(t, "minimize")) {
        if (g->loss >= 0)
            return mg_diag_set(p->d, loc, "second 'minimize' statement (the first is at line %d)",
                               p->minimize_loc.line);
        p->pos++;
        mg_loc nloc = here(p);
        if (expect_ident(p, "the name of the value to minimize", name, sizeof name)) return MG_ERR;
        binding *b = lookup(p, name);
        /* (minimize sum(x) read as "unknown name 'sum'", as if sum were not a function) */
        if (!b && is_punct(peek(p), '('))
            return mg_diag_set(p->d, nloc, "minimize takes a name, not an expression: bind the loss first "
                               "(loss = %s(...)), then 'minimize loss'", name);
        if (!b) return mg_diag_set(p->d, nloc, "unknown name '%s' in minimize", name);
        const mg_type *ty = &g->nodes[b->node].type;
        if (ty->shape.rank != 0) {
            char sh[128];
            return mg_diag_set(p->d, nloc, "minimize needs a scalar, but '%s' has shape %s "
                               "(reduce it with sum() or mean())", name,
                               mg_shape_str(&ty->shape, sh, sizeof sh));
        }
        if (ty->dtype == MG_I32)
            return mg_diag_set(p->d, nloc, "minimize needs a floating-point scalar, '%s' is i32", name);
        g->loss = b->node;
        p->minimize_loc = loc;
        return expect_end(p);
    }
    return mg_diag_set(p->d, loc, "expected a statement (model, const, input, param, output, minimize, "
                       "repeat, def, or NAME = expression), got %s", describe(t, buf, sizeof buf));
}

int mg_model_name_reserved(const char *name)
{
    size_t n = strlen(name);
    return n == 0 || name[0] == '_' || strstr(name, "__") || name[n - 1] == '_';
}

mg_status mg_parse(const char *file, const char *src, size_t len, mg_graph **out, mg_diag *d)
{
    parser p = {0};
    *out = NULL;
    p.g = mg_graph_new();
    p.file = mg_graph_intern(p.g, file);
    p.d = d;
    mg_status st = mg_lex(p.file, src, len, &p.toks, d);
    while (st == MG_OK && peek(&p)->kind != MG_TOK_EOF) {
        if (peek(&p)->kind == MG_TOK_NEWLINE) {
            p.pos++;
            continue;
        }
        if (is_punct(peek(&p), '}')) {
            st = mg_diag_set(d, here(&p), "'}' without a matching 'repeat N {'");
            break;
        }
        st = parse_stmt(&p);
    }
    if (st == MG_OK && !p.g->model_name)
        st = mg_diag_set(d, (mg_loc){p.file, 1, 1}, "missing 'model NAME' statement%s",
                         p.toks.n > 1      ? ""
                         : blank(src, len) ? " (the file is empty)"
                                           : " (the file has only comments)");
    if (st == MG_OK) st = count_bytes(&p);
    if (st == MG_OK && p.g->loss < 0)
        st = mg_diag_set(d, here(&p), "missing 'minimize NAME': name the scalar loss the training step minimizes");
    if (st == MG_OK) {
        p.g->nforward = p.g->n;
        st = mg_graph_verify(p.g, d);
    }
    free(p.toks.tok);
    free(p.syms);
    free(p.decls.slot);
    free(p.call_keys.slot);
    free(p.consts);
    free(p.defs);
    for (int i = 0; i < p.ncalls; i++) free(p.calls[i].key);
    free(p.calls);
    if (st != MG_OK) {
        /* locations in d point into the graph's copy of the file name: keep it valid */
        if (d) d->loc.file = file;
        mg_graph_free(p.g);
        return MG_ERR;
    }
    *out = p.g;
    return MG_OK;
}
