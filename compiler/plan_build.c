/* plan_build.c — records a schedule as a plan. A solver decides what runs when and what is
 * dropped; the builder turns those decisions into steps and workspace buffers the same way
 * for every solver: each computation of a workspace value gets its own buffer, live from the
 * step that writes it to the last step that reads it; leaves and values with a home in caller
 * memory are read from there. After the last target come the problem's copies and zero fills.
 * A builder may borrow its arrays from a caller's store (mg_pb_init_in), for callers that build
 * many schedules one after the other. */
#include "plan.h"

#include <stdlib.h>
#include <string.h>

void mg_plan_free(mg_plan *p)
{
    if (!p) return;
    free(p->steps);
    free(p->bufs);
    free(p);
}

int64_t mg_plan_peak_live(const mg_plan *p)
{
    int64_t *delta = mg_xcalloc((size_t)p->nsteps + 1, sizeof *delta), live = 0, peak = 0;
    for (int b = 0; b < p->nbufs; b++) {
        delta[p->bufs[b].first] += p->bufs[b].bytes;
        delta[p->bufs[b].last + 1] -= p->bufs[b].bytes;
    }
    for (int s = 0; s < p->nsteps; s++) {
        live += delta[s];
        if (live > peak) peak = live;
    }
    free(delta);
    return peak;
}

void mg_pb_init(mg_plan_builder *b, const mg_problem *pr)
{
    mg_pb_init_in(b, pr, NULL);
}

void mg_pb_init_in(mg_plan_builder *b, const mg_problem *pr, mg_pb_store *store)
{
    if (store && store->busy) store = NULL; /* (one builder at a time: another gets its own) */
    *b = (mg_plan_builder){.pr = pr, .store = store};
    b->p = mg_xcalloc(1, sizeof *b->p);
    b->p->g = pr->g;
    b->p->kind = pr->kind;
    b->p->result = pr->result;
    if (store) {
        if (store->n < pr->n) {
            free(store->where);
            free(store->last_read);
            store->where = malloc(((size_t)pr->n + 1) * sizeof *store->where);
            store->last_read = malloc(((size_t)pr->n + 1) * sizeof *store->last_read);
            if (!store->where || !store->last_read) abort();
            store->n = pr->n;
        }
        b->where = store->where;
        b->last_read = store->last_read;
        memset(b->where, 0, (size_t)pr->n * sizeof *b->where);
        memset(b->last_read, 0, (size_t)pr->n * sizeof *b->last_read);
        store->busy = 1;
    } else {
        b->where = mg_xcalloc((size_t)pr->n, sizeof *b->where);
        b->last_read = mg_xcalloc((size_t)pr->n, sizeof *b->last_read);
    }
    int ntargets = 0, nbufs = 0;
    for (int v = 0; v < pr->n; v++) {
        if (pr->target[v]) {
            b->p->flops_once += pr->cost[v];
            ntargets++;
            nbufs += (pr->home[v].mem == MG_MEM_NONE) + (pr->scratch[v] > 0);
        } else {
            b->where[v] = pr->home[v];
            if (b->where[v].mem == MG_MEM_NONE) b->where[v].mem = MG_MEM_CONST; /* an always-resident leaf */
        }
    }
    /* room for every target once and a quarter more (recomputations), so that long schedules
     * are not copied over and over as they grow (on a 10k-node graph that was half a schedule's
     * time); in a store, at least what it holds already */
    b->capsteps = ntargets + pr->nfinal + ntargets / 4 + 16;
    b->capbufs = nbufs + nbufs / 4 + 16;
    if (store) {
        if (store->capsteps < b->capsteps) {
            free(store->steps);
            store->steps = malloc((size_t)b->capsteps * sizeof *store->steps);
            store->capsteps = b->capsteps;
        }
        if (store->capbufs < b->capbufs) {
            free(store->bufs);
            store->bufs = malloc((size_t)b->capbufs * sizeof *store->bufs);
            store->capbufs = b->capbufs;
        }
        b->capsteps = store->capsteps;
        b->capbufs = store->capbufs;
        b->p->steps = store->steps;
        b->p->bufs = store->bufs;
    } else {
        b->p->bufs = malloc((size_t)b->capbufs * sizeof *b->p->bufs);
        b->p->steps = malloc((size_t)b->capsteps * sizeof *b->p->steps);
    }
    if (!b->p->bufs || !b->p->steps) abort();
}

void mg_pb_store_free(mg_pb_store *store)
{
    if (!store) return;
    free(store->steps);
    free(store->bufs);
    free(store->where);
    free(store->last_read);
    *store = (mg_pb_store){0};
}

void mg_pb_reserve(mg_plan_builder *b, int64_t nsteps)
{
    b->maxsteps = nsteps > 0 && nsteps <= INT32_MAX / 2 ? nsteps : 0;
}

/* Appends st (NULL: a step the caller fills in); returns its index. */
static int add_step(mg_plan_builder *b, const mg_step *st)
{
    mg_plan *p = b->p;
    if (p->nsteps == b->capsteps) {
        int64_t cap = b->capsteps ? 2 * (int64_t)b->capsteps : 256;
        if (b->maxsteps > b->capsteps && cap > b->maxsteps) cap = b->maxsteps; /* (a longer schedule still grows) */
        if (cap > INT32_MAX / 2) abort();
        b->capsteps = (int)cap;
        p->steps = realloc(p->steps, (size_t)b->capsteps * sizeof *p->steps);
        if (!p->steps) abort();
        if (b->store) {
            b->store->steps = p->steps;
            b->store->capsteps = b->capsteps;
        }
    }
    if (st) p->steps[p->nsteps] = *st;
    return p->nsteps++;
}

static int add_buffer(mg_plan_builder *b, int64_t bytes, int step, int node)
{
    mg_plan *p = b->p;
    if (p->nbufs == b->capbufs) {
        b->capbufs = b->capbufs ? 2 * b->capbufs : 256;
        p->bufs = realloc(p->bufs, (size_t)b->capbufs * sizeof *p->bufs);
        if (!p->bufs) abort();
        if (b->store) {
            b->store->bufs = p->bufs;
            b->store->capbufs = b->capbufs;
        }
    }
    p->bufs[p->nbufs] = (mg_buffer){bytes, step, step, -1, node};
    return p->nbufs++;
}

int mg_pb_compute(mg_plan_builder *b, int v, int recompute)
{
    const mg_problem *pr = b->pr;
    /* the step written where it goes (the schedulers' hottest store: built apart and copied, a
     * tenth of a schedule's time) */
    int step = add_step(b, NULL);
    mg_step *sp = &b->p->steps[step];
    sp->kind = MG_STEP_COMPUTE;
    sp->node = v;
    sp->out = pr->home[v];
    int nin = pr->in_start[v + 1] - pr->in_start[v];
    if (nin > MG_MAX_INPUTS) nin = MG_MAX_INPUTS;
    for (int k = 0; k < nin; k++) sp->in[k] = b->where[pr->in[pr->in_start[v] + k]];
    for (int k = nin; k < MG_MAX_INPUTS; k++) sp->in[k] = (mg_place){0};
    sp->scratch = -1;
    sp->recompute = recompute;
    sp->scratch_cap = 0;
    if (pr->scratch[v]) sp->scratch = add_buffer(b, pr->scratch[v], step, -1);
    if (pr->home[v].mem == MG_MEM_NONE) {
        sp->out = (mg_place){MG_MEM_WS, add_buffer(b, pr->bytes[v], step, v), 0};
        b->live += pr->bytes[v];
    }
    b->where[v] = sp->out;
    b->last_read[v] = step;
    for (int k = pr->in_start[v]; k < pr->in_start[v + 1]; k++) b->last_read[pr->in[k]] = step;
    b->p->flops_executed += pr->cost[v];
    return step;
}

int mg_pb_release(mg_plan_builder *b, int v)
{
    mg_place *w = &b->where[v];
    if (w->mem != MG_MEM_WS) return 0;
    mg_buffer *buf = &b->p->bufs[w->index];
    buf->last = b->last_read[v] > buf->first ? b->last_read[v] : buf->first;
    b->live -= buf->bytes;
    w->mem = MG_MEM_NONE;
    return 1;
}

mg_plan *mg_pb_finish(mg_plan_builder *b)
{
    const mg_problem *pr = b->pr;
    mg_plan *p = b->p;
    for (int k = 0; k < pr->nfinal; k++) {
        mg_step st = pr->final[k];
        if (st.kind == MG_STEP_COPY) st.in[0] = b->where[st.node];
        int step = add_step(b, &st);
        if (st.kind == MG_STEP_COPY) b->last_read[st.node] = step;
    }
    if (p->result >= 0) {
        p->result_at = b->where[p->result];
        b->last_read[p->result] = p->nsteps - 1;
    }
    for (int v = 0; v < pr->n; v++) mg_pb_release(b, v);
    if (b->store) { /* the plan gets its own arrays, at its size; the store keeps its own */
        p->steps = malloc(((size_t)p->nsteps + 1) * sizeof *p->steps);
        p->bufs = malloc(((size_t)p->nbufs + 1) * sizeof *p->bufs);
        if (!p->steps || !p->bufs) abort();
        memcpy(p->steps, b->store->steps, (size_t)p->nsteps * sizeof *p->steps);
        memcpy(p->bufs, b->store->bufs, (size_t)p->nbufs * sizeof *p->bufs);
    } else if (p->nsteps < b->capsteps / 2) { /* give back what a reservation did not use */
        mg_step *steps = realloc(p->steps, ((size_t)p->nsteps + 1) * sizeof *p->steps);
        if (steps) p->steps = steps;
    }
    b->p = NULL;
    mg_pb_discard(b);
    return p;
}

int mg_plan_compute_steps(const mg_plan *p, int *seq)
{
    int n = 0;
    for (int s = 0; s < p->nsteps; s++)
        if (p->steps[s].kind == MG_STEP_COMPUTE) seq[n++] = p->steps[s].node;
    return n;
}

mg_plan *mg_pb_replay(const mg_problem *pr, const int *seq, int n, char *seen)
{
    char *own = seen ? NULL : mg_xcalloc((size_t)pr->n + 1, 1);
    if (own) seen = own;
    else memset(seen, 0, (size_t)pr->n);
    mg_plan_builder b;
    mg_pb_init(&b, pr);
    for (int i = 0; i < n; i++) {
        int v = seq[i];
        for (int k = pr->in_start[v]; k < pr->in_start[v + 1]; k++)
            if (!seen[pr->in[k]] && pr->target[pr->in[k]]) { /* (a value no step computes is resident: mg_pb_init) */
                mg_pb_discard(&b);
                free(own);
                return NULL;
            }
        if (seen[v]) mg_pb_release(&b, v);
        mg_pb_compute(&b, v, seen[v]);
        seen[v] = 1;
    }
    free(own);
    return mg_pb_finish(&b);
}

void mg_pb_discard(mg_plan_builder *b)
{
    if (b->store) { /* its arrays stay in the store */
        if (b->p) {
            b->p->steps = NULL;
            b->p->bufs = NULL;
        }
        b->store->busy = 0;
    } else {
        free(b->where);
        free(b->last_read);
    }
    mg_plan_free(b->p);
    *b = (mg_plan_builder){0};
}
