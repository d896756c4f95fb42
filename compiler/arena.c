/* arena.c — static offset assignment for workspace buffers ("greedy by size"): buffers are
 * placed largest first, each at the lowest offset where it overlaps no already-placed buffer
 * whose lifetime intersects its own. Placed buffers are kept sorted by offset so finding that
 * gap is one pass without sorting: O(n^2) simple comparisons in all. Then the workspace is the highest end, and peak live
 * bytes come from a sweep over the steps; their ratio is the allocator's waste. */
#include "plan.h"

#include <stdlib.h>
#include <string.h>

typedef struct order_key {
    int64_t bytes;
    int first, id;
} order_key;

enum { MG_ARENA_GREEDY_MAX = 20000 }; /* buffers; above this the linear scan takes over */

typedef struct slot { /* a placed buffer, copied so the scan below reads memory in order */
    int64_t offset, end;
    int first, last;
} slot;

static int cmp_size(const void *a, const void *b)
{
    const order_key *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
    if (x->first != y->first) return x->first < y->first ? -1 : 1;
    return x->id - y->id;
}

/* For very large plans greedy-by-size's quadratic scan is too slow; this linear scan in
 * schedule order (free holes kept sorted and merged, first fit, the arena grows at the top
 * when nothing fits) is O(n log n + n * holes). */
typedef struct hole {
    int64_t lo, hi;
} hole;

static int cmp_first(const void *a, const void *b)
{
    const order_key *x = a, *y = b;
    if (x->first != y->first) return x->first < y->first ? -1 : 1;
    if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
    return x->id - y->id;
}

static void heap_push(int *h, int *n, const mg_buffer *bufs, int id)
{
    int i = (*n)++;
    h[i] = id;
    while (i > 0 && bufs[h[(i - 1) / 2]].last > bufs[h[i]].last) {
        int t = h[i];
        h[i] = h[(i - 1) / 2];
        h[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

static int heap_pop(int *h, int *n, const mg_buffer *bufs)
{
    int top = h[0], i = 0;
    h[0] = h[--(*n)];
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < *n && bufs[h[l]].last < bufs[h[m]].last) m = l;
        if (r < *n && bufs[h[r]].last < bufs[h[m]].last) m = r;
        if (m == i) break;
        int t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
    return top;
}

static int64_t linear_scan(mg_plan *p, order_key *order)
{
    int n = p->nbufs, nh = 0, na = 0;
    hole *holes = malloc((size_t)(n + 1) * sizeof *holes);
    int *active = malloc((size_t)(n + 1) * sizeof *active);
    if (!holes || !active) abort();
    for (int i = 0; i < n; i++) order[i] = (order_key){p->bufs[i].bytes, p->bufs[i].first, i};
    qsort(order, (size_t)n, sizeof *order, cmp_first);
    int64_t top = 0;
    for (int k = 0; k < n; k++) {
        mg_buffer *b = &p->bufs[order[k].id];
        while (na && p->bufs[active[0]].last < b->first) {
            const mg_buffer *f = &p->bufs[heap_pop(active, &na, p->bufs)];
            int j = 0;
            while (j < nh && holes[j].lo < f->offset) j++;
            memmove(holes + j + 1, holes + j, (size_t)(nh - j) * sizeof *holes);
            holes[j] = (hole){f->offset, f->offset + f->bytes};
            nh++;
            if (j + 1 < nh && holes[j].hi == holes[j + 1].lo) { /* merge with the next */
                holes[j].hi = holes[j + 1].hi;
                memmove(holes + j + 1, holes + j + 2, (size_t)(nh - j - 2) * sizeof *holes);
                nh--;
            }
            if (j > 0 && holes[j - 1].hi == holes[j].lo) { /* and with the previous */
                holes[j - 1].hi = holes[j].hi;
                memmove(holes + j, holes + j + 1, (size_t)(nh - j - 1) * sizeof *holes);
                nh--;
            }
            if (nh && holes[nh - 1].hi == top) top = holes[--nh].lo; /* give the top back */
        }
        int j = 0;
        while (j < nh && holes[j].hi - holes[j].lo < b->bytes) j++;
        if (j < nh) {
            b->offset = holes[j].lo;
            holes[j].lo += b->bytes;
            if (holes[j].lo == holes[j].hi) {
                memmove(holes + j, holes + j + 1, (size_t)(nh - j - 1) * sizeof *holes);
                nh--;
            }
        } else {
            b->offset = top;
            top += b->bytes;
        }
        heap_push(active, &na, p->bufs, order[k].id);
    }
    int64_t high = 0;
    for (int i = 0; i < n; i++)
        if (p->bufs[i].offset + p->bufs[i].bytes > high) high = p->bufs[i].offset + p->bufs[i].bytes;
    free(holes);
    free(active);
    return high;
}

mg_status mg_arena_assign(mg_plan *p, mg_diag *d)
{
    int n = p->nbufs;
    order_key *order = malloc((size_t)(n ? n : 1) * sizeof *order);
    slot *placed = malloc((size_t)(n ? n : 1) * sizeof *placed); /* by offset, ascending */
    if (!order || !placed) abort();
    int64_t top = 0;
    if (n > MG_ARENA_GREEDY_MAX) {
        top = linear_scan(p, order);
        n = 0; /* placed */
    }
    for (int i = 0; i < n; i++) order[i] = (order_key){p->bufs[i].bytes, p->bufs[i].first, i};
    qsort(order, (size_t)n, sizeof *order, cmp_size);
    for (int k = 0; k < n; k++) {
        mg_buffer *b = &p->bufs[order[k].id];
        /* walk the placed buffers in address order; the first gap between those that are
         * live at the same time as b and that is large enough takes it */
        int64_t off = 0;
        int at = k;
        for (int j = 0; j < k; j++) {
            const slot *o = &placed[j];
            if (o->first > b->last || b->first > o->last) continue;
            if (o->offset >= off + b->bytes) {
                at = j;
                break;
            }
            if (o->end > off) off = o->end;
        }
        b->offset = off;
        if (off + b->bytes > top) top = off + b->bytes;
        /* keep `placed` sorted by offset: b goes before the first buffer at a higher offset */
        while (at > 0 && placed[at - 1].offset > off) at--;
        while (at < k && placed[at].offset <= off) at++;
        memmove(placed + at + 1, placed + at, (size_t)(k - at) * sizeof *placed);
        placed[at] = (slot){off, off + b->bytes, b->first, b->last};
    }
    free(order);
    free(placed);
    n = p->nbufs;
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
