/* program_hash.c — the hash an object file and its header share (NAME_PLAN_HASH in the header,
 * NAME_plan_hash in the object).
 *
 * Why it exists: the header's sizes and offsets hold only for the object compiled with it. A
 * stale header (a Makefile that rebuilt the object at another budget and not the header) still
 * compiles and links, and its program writes past the workspace it allocated; the model hash is
 * the same at every budget, so it cannot tell them apart. This hashes what the object does with
 * the caller's memory: the model, the sizes, and both plans' steps and buffers (mg_plan_digest,
 * which `sweep` also tells one plan from another by). */
#include "backend.h"

#include <stdlib.h>
#include <xxhash.h>

static void put_i64(XXH64_state_t *h, int64_t v) { XXH64_update(h, &v, sizeof v); }

static void put_place(XXH64_state_t *h, const mg_place *pl)
{
    put_i64(h, pl->mem);
    put_i64(h, pl->index);
    put_i64(h, pl->offset);
}

uint64_t mg_plan_digest(const mg_plan *p)
{
    XXH64_state_t *h = XXH64_createState();
    if (!h) abort();
    XXH64_reset(h, 0);
    put_i64(h, p ? p->nsteps : -1);
    for (int i = 0; p && i < p->nsteps; i++) { /* field by field: no padding bytes hashed */
        const mg_step *s = &p->steps[i];
        put_i64(h, s->kind);
        put_i64(h, s->node);
        put_place(h, &s->out);
        for (int k = 0; k < MG_MAX_INPUTS; k++) put_place(h, &s->in[k]);
        put_i64(h, s->scratch);
        put_i64(h, s->recompute);
        put_i64(h, s->scratch_cap);
    }
    put_i64(h, p ? p->nbufs : -1);
    for (int i = 0; p && i < p->nbufs; i++) {
        const mg_buffer *b = &p->bufs[i];
        put_i64(h, b->bytes);
        put_i64(h, b->first);
        put_i64(h, b->last);
        put_i64(h, b->offset);
        put_i64(h, b->node);
    }
    put_i64(h, p ? p->workspace_bytes : -1);
    uint64_t v = XXH64_digest(h);
    XXH64_freeState(h);
    return v;
}

uint64_t mg_program_hash(const mg_program *p)
{
    XXH64_state_t *h = XXH64_createState();
    if (!h) abort();
    XXH64_reset(h, 0x6d67706c616eULL); /* "mgplan" */
    put_i64(h, (int64_t)mg_graph_hash(p->model ? p->model : p->g));
    put_i64(h, (int64_t)mg_graph_hash(p->g));
    put_i64(h, p->workspace_bytes);
    put_i64(h, p->param_bytes);
    put_i64(h, p->micro_batches);
    put_i64(h, (int64_t)mg_plan_digest(p->train));
    put_i64(h, (int64_t)mg_plan_digest(p->forward));
    uint64_t v = XXH64_digest(h);
    XXH64_freeState(h);
    return v;
}
