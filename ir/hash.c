/* hash.c — the structural hash of a model (xxHash64). It covers everything that changes
 * the generated code or the meaning of a parameter file: ops, edges, dtypes, shapes,
 * attributes, initializers and the names of inputs, params and outputs. It leaves out
 * source positions and the model's name, so moving a line or renaming the model keeps it.
 * Fields are fed as fixed-width little-endian integers, so it is the same on every host. */
#include "ir.h"

#include <string.h>
#include <xxhash.h>

static void put_u64(XXH64_state_t *st, uint64_t v)
{
    unsigned char b[8];
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)(v >> (8 * i));
    XXH64_update(st, b, 8);
}

static void put_f64(XXH64_state_t *st, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    put_u64(st, u);
}

static void put_str(XXH64_state_t *st, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    put_u64(st, n);
    if (n) XXH64_update(st, s, n);
}

uint64_t mg_graph_hash(const mg_graph *g)
{
    XXH64_state_t *st = XXH64_createState();
    if (!st) return 0;
    XXH64_reset(st, 0x6d656d67726164ULL); /* "memgrad" */
    int n = g->nforward > 0 ? g->nforward : g->n;
    put_u64(st, (uint64_t)n);
    for (int i = 0; i < n; i++) {
        const mg_node *nd = &g->nodes[i];
        put_u64(st, (uint64_t)nd->op);
        put_u64(st, (uint64_t)nd->ninputs);
        for (int k = 0; k < nd->ninputs; k++) put_u64(st, (uint64_t)nd->in[k]);
        put_u64(st, (uint64_t)nd->type.dtype);
        put_u64(st, (uint64_t)nd->type.shape.rank);
        for (int k = 0; k < nd->type.shape.rank; k++) put_u64(st, (uint64_t)nd->type.shape.dim[k]);
        /* every attribute; slots 2.. only when one is set, so that models without such
         * attributes keep the hash (and parameter files) they had before those slots existed */
        put_u64(st, (uint64_t)(int64_t)nd->iattr[0]);
        put_u64(st, (uint64_t)(int64_t)nd->iattr[1]);
        int more = 0;
        for (int k = 2; k < MG_MAX_IATTR; k++) more |= nd->iattr[k] != 0;
        if (more)
            for (int k = 2; k < MG_MAX_IATTR; k++) put_u64(st, (uint64_t)(int64_t)nd->iattr[k]);
        put_f64(st, nd->fattr);
        if (nd->op == MG_OP_BATCH_NORM) put_f64(st, nd->fattr2); /* only there: other hashes unchanged */
        if (nd->op == MG_OP_INPUT || nd->op == MG_OP_PARAM) {
            put_str(st, nd->name);
            put_u64(st, (uint64_t)nd->index);
        }
        if (nd->op == MG_OP_PARAM) {
            put_u64(st, (uint64_t)nd->init);
            put_f64(st, nd->init_arg);
        }
    }
    put_u64(st, (uint64_t)g->noutputs);
    for (int i = 0; i < g->noutputs; i++) {
        put_str(st, g->outputs[i].name);
        put_u64(st, (uint64_t)g->outputs[i].node);
    }
    put_u64(st, (uint64_t)(int64_t)g->loss);
    uint64_t h = XXH64_digest(st);
    XXH64_freeState(st);
    return h;
}
