/* arena.c — static offset assignment for workspace buffers ("greedy by size"): buffers are
 * placed largest first, each at the lowest offset where it overlaps no already-placed buffer
 * whose lifetime intersects its own. Then the workspace is the highest end, and peak live
 * bytes come from a sweep over the steps; their ratio is the allocator's waste. */
#include "plan.h"

#include <stdlib.h>

typedef struct span {
    int64_t lo, hi;
} span;

typedef struct order_key {
    int64_t bytes;
    int first, id;
} order_key;

static int cmp_size(const void *a, const void *b)
{
    const order_key *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
    if (x->first != y->first) return x->first < y->first ? -1 : 1;
    return x->id - y->id;
}

static int cmp_span(const void *a, const void *b)
{
    const span *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

mg_status mg_arena_assign(mg_plan *p, mg_diag *d)
{
    int n = p->nbufs;
    order_key *order = malloc((size_t)(n ? n : 1) * sizeof *order);
    span *busy = malloc((size_t)(n ? n : 1) * sizeof *busy);
    if (!order || !busy) abort();
    for (int i = 0; i < n; i++) order[i] = (order_key){p->bufs[i].bytes, p->bufs[i].first, i};
    qsort(order, (size_t)n, sizeof *order, cmp_size);
    int64_t top = 0;
    for (int k = 0; k < n; k++) {
        mg_buffer *b = &p->bufs[order[k].id];
        int nb = 0;
        for (int j = 0; j < k; j++) {
            const mg_buffer *o = &p->bufs[order[j].id];
            if (o->first <= b->last && b->first <= o->last) busy[nb++] = (span){o->offset, o->offset + o->bytes};
        }
        qsort(busy, (size_t)nb, sizeof *busy, cmp_span);
        int64_t off = 0;
        for (int j = 0; j < nb; j++) {
            if (busy[j].lo >= off + b->bytes) break;
            if (busy[j].hi > off) off = busy[j].hi;
        }
        b->offset = off;
        if (off + b->bytes > top) top = off + b->bytes;
    }
    free(order);
    free(busy);
    p->workspace_bytes = top;

    /* peak live bytes: sweep over steps */
    int64_t *delta = calloc((size_t)p->nsteps + 1, sizeof *delta);
    if (!delta) abort();
    for (int i = 0; i < n; i++) {
        delta[p->bufs[i].first] += p->bufs[i].bytes;
        delta[p->bufs[i].last + 1] -= p->bufs[i].bytes;
    }
    int64_t live = 0, peak = 0;
    for (int s = 0; s < p->nsteps; s++) {
        live += delta[s];
        if (live > peak) peak = live;
    }
    free(delta);
    p->peak_live_bytes = peak;
    (void)d;
    return MG_OK;
}
