/* header.c — writes the C header that goes with a generated object: sizes as macros, the
 * tensor descriptor tables, and the prototypes, all named after the user's model. The model's
 * name is the only user name in C identifiers: the parser has made it one that gives no
 * reserved names (no '_' at either end, no "__"); the tensors' names appear only in comments
 * and in the tables' strings. The macros take the name in capitals: the headers of two models
 * whose names differ only in case, which would define the same macros, are an #error together,
 * and so are those of models NAME and NAME_forward (both define NAME_FORWARD_WORKSPACE_BYTES). */
#include "backend.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct out {
    char *s;
    size_t len, cap;
} out;

static void put(out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if (o->len + (size_t)n + 1 > o->cap) {
        o->cap = (o->len + (size_t)n + 1) * 2;
        o->s = realloc(o->s, o->cap);
        if (!o->s) abort();
    }
    va_start(ap, fmt);
    vsnprintf(o->s + o->len, o->cap - o->len, fmt, ap);
    va_end(ap);
    o->len += (size_t)n;
}

static void upper(char *dst, const char *src, size_t n)
{
    size_t i = 0;
    for (; src[i] && i + 1 < n; i++) dst[i] = (char)toupper((unsigned char)src[i]);
    dst[i] = 0;
}

/* unread: NULL, or per entry a note for the ones a function does not read */
static void list(out *o, const mg_graph *g, const char *what, int n, const int *nodes, const char *const *names,
                 const char *const *unread)
{
    char sh[160];
    for (int i = 0; i < n; i++) {
        const mg_node *nd = &g->nodes[nodes[i]];
        put(o, " *   %s[%d]  %-16s %s%s%s\n", what, i, names ? names[i] : nd->name, mg_dtype_name(nd->type.dtype),
            mg_shape_str(&nd->type.shape, sh, sizeof sh), unread && unread[i] ? unread[i] : "");
    }
}

/* Which inputs NAME_forward reads: those its outputs depend on (the forward function computes
 * no more, problem.c), in the model's graph, whose nodes come after their operands. The labels
 * of a loss are not among them, so a program can pass NULL for them at inference instead of
 * a batch of dummy labels; the header said nothing of it (review22). */
static char *forward_reads(const mg_graph *m)
{
    char *need = calloc((size_t)m->n + 1, 1);
    if (!need) abort();
    for (int i = 0; i < m->noutputs; i++) need[m->outputs[i].node] = 1;
    mg_graph_mark_needed(m, m->n, need);
    return need;
}

/* A file's name as the header should spell it: the last component of its path (the header is
 * written for whichever directory the files end up in, and a build directory in it would make
 * the header differ between builds). NULL, "-" or a device (-o - is /dev/stdout, and /dev/null
 * keeps nothing): no file to name. */
static const char *file_base(const char *path)
{
    if (!path || !path[0] || !strcmp(path, "-") || !strncmp(path, "/dev/", 5)) return NULL;
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    return b[0] ? b : NULL;
}

/* The object's name as a shell word, for the link command to work pasted into a shell: as it is
 * when it has only characters no shell treats specially, else in single quotes (a ' in it as
 * '\''), after "./" when it starts with '-'. `-o "my model.o"` said `cc app.c my model.o -lm`,
 * two files that do not exist (review22). */
static char *shell_word(const char *s)
{
    size_t n = strlen(s), plain = strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+-,@%=:");
    char *q = malloc(4 * n + 5), *w = q;
    if (!q) abort();
    if (s[0] == '-') { /* (cc would take "-x.o" for an option) */
        memcpy(w, "./", 2);
        w += 2;
    }
    if (plain == n && n > 0) {
        memcpy(w, s, n + 1);
        return q;
    }
    *w++ = '\'';
    for (; *s; s++) {
        if (*s == '\'') {
            memcpy(w, "'\\''", 4);
            w += 4;
        } else {
            *w++ = *s;
        }
    }
    *w++ = '\'';
    *w = 0;
    return q;
}

/* s for a line of a C comment, into buf: a control byte as '?', and a '/' right after a '*' as '?'
 * (the comment would end there); at most n - 1 bytes. */
static const char *comment_safe(const char *s, char *buf, size_t n)
{
    size_t k = 0;
    for (; s[k] && k + 1 < n; k++) {
        unsigned char c = (unsigned char)s[k];
        buf[k] = c < 0x20 || c == 0x7f || (c == '/' && k > 0 && s[k - 1] == '*') ? '?' : (char)c;
    }
    buf[k] = 0;
    return buf;
}

/* What the object runs on: its target triple and CPU, as the backend compiled it (the default is
 * this machine's CPU with all its features). A program copied with its object to a machine whose
 * CPU lacks one of them died of SIGILL, and nothing in the header said what the object needs. */
static void target_note(out *o, const mg_emitted *e)
{
    if (!e || !e->triple || !e->cpu) return;
    /* (the triple's vendor and system are the user's words, which LLVM takes whatever they are: a
     * vendor with a '*' and then a '/' in it ended the comment early) */
    char triple[256], cpu[256], features[1024];
    const char *whose = !e->host_cpu ? "" : e->host_features ? " (this machine's, with its features)" : " (this machine's)";
    put(o, " * Compiled for target %s, CPU %s%s%s%s.\n", comment_safe(e->triple, triple, sizeof triple),
        comment_safe(e->cpu, cpu, sizeof cpu), whose, e->features ? " with features " : "",
        e->features ? comment_safe(e->features, features, sizeof features) : "");
    put(o, " * The object runs only on CPUs with %s features: on another it may stop with SIGILL (an\n"
           " * illegal instruction). `memgrad compile --cpu NAME` compiles for another CPU%s.\n",
        e->features ? "these" : "that CPU's",
        /* (not where features were given beside the CPU: RISC-V Linux's generic CPU without them
         * has the soft-float ABI, which the system's libraries refuse to link with) */
        e->features ? "" : " (generic: any\n * CPU of the target)");
}

char *mg_header_text(const mg_program *p, const mg_emitted *e, const char *object, const char *header)
{
    const mg_graph *g = p->g;
    const char *m = g->model_name;
    char M[256];
    upper(M, m, sizeof M);
    out o = {0};
    int64_t state_bytes = 0;
    int nstate = mg_state_layout(g, NULL, &state_bytes);
    const char **onames = malloc(((size_t)g->noutputs + 1) * sizeof *onames);
    int *onodes = malloc(((size_t)g->noutputs + 1) * sizeof *onodes);
    if (!onames || !onodes) abort();
    for (int i = 0; i < g->noutputs; i++) {
        onames[i] = g->outputs[i].name;
        onodes[i] = g->outputs[i].node;
    }
    const char *hname = file_base(header), *obj = file_base(object);
    if (hname) put(&o, "/* %s — generated by memgrad for model '%s'. Do not edit.\n *\n", hname, m);
    else put(&o, "/* Generated by memgrad for model '%s'. Do not edit.\n *\n", m);
    if (obj) {
        char *q = shell_word(obj);
        put(&o, " * Link the matching object: cc app.c %s -lm.\n", q);
        free(q);
    }
    else put(&o, " * Link the object memgrad compiled with this header: cc app.c OBJECT.o -lm.\n");
    target_note(&o, e);
    put(&o, " * Every function is reentrant: all state lives in the caller's buffers. The workspace must\n"
            " * hold %s_WORKSPACE_BYTES bytes; params and grads blobs %s_PARAM_BYTES bytes each (see\n"
            " * %s_params_desc for the layout).\n",
        M, M, m);
    /* the README once said the workspace needed no alignment, while the code loads f32 and i32
     * with 4-byte and f64 with 8-byte alignment (the kernels' f64 at 8 also on i686), which
     * strict-alignment targets such as ARMv7 fault on; tensors lie at multiples of 64 bytes from
     * a buffer's start, but nothing relies on more of that start than its elements' size */
    put(&o, " * Every buffer passed must be aligned to 8 bytes (the code assumes each one aligned to its\n"
            " * elements' size, 4 or 8, and no more): malloc's alignment suffices.\n");
    /* it compiles without a warning under -std=c99 and -std=c++11 -Wall -Wextra -pedantic; before
     * those, the ULL constants warn ("use of C99 long long integer constant"), and the header needs
     * C99's <stdint.h> anyway: said, rather than spelled around */
    put(&o, " * This header is C99 or later and C++11 or later (it needs <stdint.h>, and its hashes are\n"
            " * unsigned long long constants).\n *\n");
    /* a model may declare no input or no output: an empty list under a heading would read as if
     * something had been lost, so the header says what that means for the caller instead */
    if (g->ninputs) {
        const mg_graph *model = p->model ? p->model : g;
        char *need = forward_reads(model);
        char note[300];
        snprintf(note, sizeof note, "  (%s_forward does not read it: may be NULL there)", m);
        const char **unread = calloc((size_t)g->ninputs + 1, sizeof *unread);
        if (!unread) abort();
        for (int i = 0; i < g->ninputs && i < model->ninputs; i++) unread[i] = need[model->inputs[i]] ? NULL : note;
        put(&o, " * Inputs (pointers in this order in inputs[]):\n");
        list(&o, g, "inputs", g->ninputs, g->inputs, NULL, unread);
        free(unread);
        free(need);
    } else {
        put(&o, " * Inputs: none (the model declares no `input`; inputs[] is not read and may be NULL).\n");
    }
    if (g->noutputs) {
        put(&o, " * Outputs of %s_forward (pointers in this order in outputs[]):\n", m);
        list(&o, g, "outputs", g->noutputs, onodes, onames, NULL);
    } else {
        put(&o, " * Outputs of %s_forward: none (the model declares no `output`; outputs[] is not\n"
                " *   written and may be NULL).\n", m);
    }
    const mg_plan *t = p->train;
    put(&o, " *\n * Memory plan of %s_train_step (`memgrad plan` with the same options reports it whole):\n"
            " * peak live bytes %lld; FLOPs executed %.0f, every op once %.0f (+%.2f%% recomputed).\n",
        m, (long long)t->peak_live_bytes, t->flops_executed, t->flops_once,
        t->flops_once > 0 ? 100.0 * (t->flops_executed / t->flops_once - 1) : 0.0);
    if (p->micro_batches > 1) put(&o, " * The batch runs in %d micro-batches.\n", p->micro_batches);
    if (nstate)
        put(&o, " *\n * This model has state (batch_norm running statistics, the step counter that keys dropout\n"
                " * masks): a blob of %s_STATE_BYTES bytes the caller owns, set up once by %s_init_state,\n"
                " * updated once per %s_train_step (also when the plan recomputes an op) and read by\n"
                " * %s_forward, which runs in inference mode (running statistics, no dropout).\n",
            M, m, m, m);
    /* the guard takes the name as it is; the macros' prefix in capitals is claimed separately,
     * so that a second model whose name differs only in case is an error, not a silent mix */
    put(&o, " */\n#ifndef MG_MODEL_%s_H\n#define MG_MODEL_%s_H\n\n", m, m);
    put(&o, "#ifdef MG_MODEL_MACROS_%s\n#error \"the header of a model whose name differs from '%s' only in case is "
            "included too: both define %s_WORKSPACE_BYTES and the other %s_ macros\"\n#endif\n"
            "#define MG_MODEL_MACROS_%s 1\n\n#include <stddef.h>\n#include <stdint.h>\n\n", M, m, M, M, M);
    put(&o, "#ifndef MG_TENSOR_DESC_DEFINED\n#define MG_TENSOR_DESC_DEFINED\n"
            "enum { MG_F32 = 0, MG_F64 = 1, MG_I32 = 2 };\n"
            "typedef struct mg_tensor_desc {\n"
            "    const char *name; int dtype; int rank; int64_t shape[8]; size_t offset; size_t bytes;\n"
            "} mg_tensor_desc;\n#endif\n\n");
    /* The sizes are size_t, as sizeof is. A C cast would make every use an error in C++ under
     * -Wold-style-cast -Werror, and static_cast is no C: each language gets its own spelling. */
    put(&o, "#ifndef MG_SIZE_BYTES\n#ifdef __cplusplus\n#define MG_SIZE_BYTES(n) (static_cast<size_t>(n))\n#else\n"
            "#define MG_SIZE_BYTES(n) ((size_t)(n))\n#endif\n#endif\n\n");
    /* NAME_FORWARD_WORKSPACE_BYTES is also the workspace macro of a model named NAME_forward: with
     * both headers in one program the second's would silently replace the first's (a program
     * allocated one model's workspace for the other's call and wrote past it) */
    size_t mlen = strlen(M), flen = strlen("_forward");
    if (mlen > flen && !strcmp(M + mlen - flen, "_FORWARD"))
        put(&o, "#ifdef %s_WORKSPACE_BYTES\n#error \"%s_WORKSPACE_BYTES is defined already: the header of a model named "
                "'%.*s' (in some case) is included too, where it is that model's forward workspace; give one of the two "
                "models another name\"\n#endif\n", M, M, (int)(mlen - flen), m);
    put(&o, "#ifdef %s_FORWARD_WORKSPACE_BYTES\n#error \"%s_FORWARD_WORKSPACE_BYTES is defined already: the header of a "
            "model named '%s_forward' (in some case) is included too, where it is that model's workspace; give one of "
            "the two models another name\"\n#endif\n", M, M, m);
    put(&o, "#define %s_WORKSPACE_BYTES MG_SIZE_BYTES(%lld)  /* the one arena every call below needs */\n", M,
        (long long)p->workspace_bytes);
    /* every buffer of the forward plan lies below its workspace_bytes (the plan verifier checks
     * offset + bytes against it), and the generated code reaches the workspace only through
     * them: an inference-only program needs no more (mlp at 50%: 184,384 of 198,720 bytes, as
     * its forward runs in the step's 4 micro-batches and copies each part's rows of x into the
     * workspace before x @ w1) */
    if (nstate)
        put(&o, "#define %s_FORWARD_WORKSPACE_BYTES MG_SIZE_BYTES(%lld)  /* all %s_forward and %s_forward_train "
                "touch of it: a prefix */\n", M, (long long)p->forward->workspace_bytes, m, m);
    else
        put(&o, "#define %s_FORWARD_WORKSPACE_BYTES MG_SIZE_BYTES(%lld)  /* all %s_forward touches of it: a "
                "prefix */\n", M, (long long)p->forward->workspace_bytes, m);
    put(&o, "#define %s_PARAM_BYTES     MG_SIZE_BYTES(%lld)  /* params and grads blobs have this size */\n", M,
        (long long)p->param_bytes);
    put(&o, "#define %s_MODEL_HASH      0x%016llxULL  /* structural hash of the model */\n", M,
        (unsigned long long)mg_graph_hash(p->model ? p->model : g));
    /* the model hash is the same at every budget: this one is of the plans too (program_hash.c) */
    put(&o, "#define %s_PLAN_HASH       0x%016llxULL  /* the object compiled with this header has %s_plan_hash "
            "equal to it */\n", M, (unsigned long long)mg_program_hash(p), m);
    put(&o, "#define %s_NUM_PARAMS      %d\n#define %s_NUM_INPUTS      %d\n#define %s_NUM_OUTPUTS     %d\n", M,
        g->nparams, M, g->ninputs, M, g->noutputs);
    put(&o, "#define %s_HAS_STATE       %d  /* 1: the functions below take a state blob */\n", M, nstate ? 1 : 0);
    if (nstate)
        put(&o, "#define %s_STATE_BYTES     MG_SIZE_BYTES(%lld)  /* running statistics and the step counter */\n"
                "#define %s_NUM_STATE       %d\n", M, (long long)state_bytes, M, nstate);
    put(&o, "\n");
    put(&o, "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
    put(&o, "extern const mg_tensor_desc %s_params_desc[];   /* offsets into the params/grads blobs */\n", m);
    put(&o, "extern const mg_tensor_desc %s_inputs_desc[];   /* inputs in declaration order */\n", m);
    put(&o, "extern const mg_tensor_desc %s_outputs_desc[];  /* outputs in declaration order */\n", m);
    if (nstate) put(&o, "extern const mg_tensor_desc %s_state_desc[];    /* offsets into the state blob */\n", m);
    put(&o, "/* The object's own %s_PLAN_HASH: a program built with another compile's header (another\n"
            " * budget, solver or model) has sizes and offsets that do not hold for the object. Check it\n"
            " * at startup: if (%s_plan_hash != %s_PLAN_HASH) abort(); */\n"
            "extern const uint64_t %s_plan_hash;\n", M, m, M, m);
    put(&o, "\n");
    put(&o, "/* Fills params with each parameter's initializer; the same seed gives the same values. */\n");
    put(&o, "void  %s_init_params(void *params, uint64_t seed);\n", m);
    /* inputs[] is `const void *const inputs[]`: in C a `void *in[2]` does not convert to it
     * (-Wincompatible-pointer-types, an error from GCC 14 on), so the header shows the spelling
     * that does, with the model's input names where they are C identifiers */
    if (g->ninputs) {
        put(&o, "/* inputs[]: an array of const void *, in the order above (void *[] is an error in C from GCC 14): "
                "const void *inputs[] = {");
        for (int i = 0; i < g->ninputs && i < 4; i++) put(&o, "%s%s", i ? ", " : "", g->nodes[g->inputs[i]].name);
        put(&o, "%s}; */\n", g->ninputs > 4 ? ", ..." : "");
    }
    const mg_node *loss = &(p->train->g ? p->train->g : g)->nodes[p->train->result];
    put(&o, "/* One training step: returns the minimized scalar and overwrites every gradient in grads.%s%s */\n",
        loss->type.dtype == MG_F64 ? "\n * The scalar is f64 and returned rounded to float: an `output` of it gives the full value." : "",
        nstate ? "\n * Batch statistics and the dropout masks of this step; updates the running statistics and\n"
                 " * advances the step counter in state, once" : "");
    if (!nstate) {
        put(&o, "float %s_train_step(const void *params, void *grads, const void *const inputs[], void *workspace);\n", m);
        put(&o, "/* The forward pass: writes each output into outputs[i]. */\n");
        put(&o, "void  %s_forward(const void *params, const void *const inputs[], void *const outputs[], void *workspace);\n\n", m);
    } else {
        put(&o, "float %s_train_step(const void *params, void *grads, const void *const inputs[], void *workspace,\n"
                "%*svoid *state);\n", m, (int)strlen(m) + 18, "");
        put(&o, "/* Running means 0, running variances 1, step 0. */\n");
        put(&o, "void  %s_init_state(void *state);\n", m);
        put(&o, "/* The forward pass in inference mode (running statistics, dropout off), as model.eval(). */\n");
        put(&o, "void  %s_forward(const void *params, const void *state, const void *const inputs[], void *const outputs[],\n"
                "%*svoid *workspace);\n", m, (int)strlen(m) + 15, "");
        put(&o, "/* The forward pass in training mode (batch statistics, the dropout masks of the current step)\n"
                " * without changing state: the outputs train_step would see next, e.g. for gradient checks. */\n");
        put(&o, "void  %s_forward_train(const void *params, const void *state, const void *const inputs[],\n"
                "%*svoid *const outputs[], void *workspace);\n\n", m, (int)strlen(m) + 21, "");
    }
    put(&o, "#ifdef __cplusplus\n}\n#endif\n#endif\n");
    free(onames);
    free(onodes);
    return o.s;
}
