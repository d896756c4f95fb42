/* arena_greedy.c — the arena's greedy placements and compaction: the first and cheapest pass,
 * which the driver (arena.c) runs on every placement and which alone places most of them; the
 * exact search (arena_search.c) runs only where it misses, and its placements are compacted
 * here too. A file of its own because it is a pass of its own, with tables of its own (the
 * overlap lists, the spans, the skyline's queue) that the search does not share. Also the sweep
 * every pass starts from: the live buffers and their sections (mg_arena_live_set_init).
 *
 * Buffers in some order, each at the lowest offset where it overlaps no already-placed buffer
 * whose lifetime intersects its own (found on per-buffer overlap lists, built once by a sweep),
 * or the skyline variant (the buffer whose lowest offset above the placed ones it overlaps is
 * least goes next). Up to 2000 buffers the best of eight (four first-fit orders, best fit, three
 * skylines) is kept and then compacted (every buffer falls to the lowest gap that holds it, the
 * placement is turned upside down and compacted again); up to 40000 the best of three
 * (compacted too by the `arena` command where it does not search); above 20000 also a linear
 * scan in time order (O(n log n)), the better kept, and above 40000 the linear scan alone (the
 * driver's choice: arena.c, MG_ARENA_SCAN_FROM and MG_ARENA_GREEDY_MAX). */
#include "arena_internal.h"

#include <limits.h>

enum { MG_ARENA_ORDERS_MAX = 2000 }; /* buffers; up to this the greedy tries every order */

/* Compaction passes on a placement too large for the command's search (compact_large below):
 * over 26 placements of resnet18_64 in 16 parts (4,813-7,591 buffers), 4 passes 7.93 -> 6.44%
 * above the peak of live bytes, 8 passes 6.33% (16: the same), ~30 ms each. */
enum { LARGE_PASSES = 8 };

/* ---------------------------------------------------------------------------------------- */
/* Sections: a sweep over time                                                               */
/* ---------------------------------------------------------------------------------------- */

typedef struct event {
    int64_t t;
    int start; /* 0: an end (ends sort first: [a,b) and [b,c) do not overlap), 1: a start */
    int i;
} event;

static int cmp_event(const void *a, const void *b)
{
    const event *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    if (x->start != y->start) return x->start - y->start;
    return x->i - y->i;
}

/* Sections are the maximal sets of buffers live together (maximal cliques of the interval
 * graph): one is closed at an end when some buffer started since the last one was closed. Two
 * buffers overlap in time exactly when their section ranges intersect. */
void mg_arena_live_set_init(live_set *ls, const mg_interval *iv, int n, mg_arena_scratch *P)
{
    memset(ls, 0, sizeof *ls);
    ls->P = P;
    int m = 0;
    for (int i = 0; i < n; i++)
        if (iv[i].size > 0 && iv[i].upper > iv[i].lower) m++;
    ls->m = m;
    ls->idx = mg_arena_pal(ls->P, (size_t)m * sizeof *ls->idx);
    ls->lo = mg_arena_pal(ls->P, (size_t)m * sizeof *ls->lo);
    ls->up = mg_arena_pal(ls->P, (size_t)m * sizeof *ls->up);
    ls->size = mg_arena_pal(ls->P, (size_t)m * sizeof *ls->size);
    ls->slo = mg_arena_pal(ls->P, (size_t)m * sizeof *ls->slo);
    ls->shi = mg_arena_pal(ls->P, (size_t)m * sizeof *ls->shi);
    m = 0;
    for (int i = 0; i < n; i++) {
        if (!(iv[i].size > 0 && iv[i].upper > iv[i].lower)) continue;
        ls->idx[m] = i;
        ls->lo[m] = iv[i].lower;
        ls->up[m] = iv[i].upper;
        ls->size[m] = iv[i].size;
        m++;
    }
    event *ev = mg_arena_pal(ls->P, (size_t)2 * (size_t)m * sizeof *ev);
    int64_t tmin = INT64_MAX, tmax = INT64_MIN;
    for (int i = 0; i < m; i++) {
        if (ls->lo[i] < tmin) tmin = ls->lo[i];
        if (ls->up[i] > tmax) tmax = ls->up[i];
    }
    if (m > 0 && m < (1 << 26) && (uint64_t)tmax - (uint64_t)tmin <= 4 * (uint64_t)m + 64) {
        /* times are a plan's steps, about as many as the buffers: a counting sort on (time,
         * start), stable, so each key's events stay in buffer order (cmp_event's order; qsort
         * was a twentieth of a long chain's planning time) */
        int nkey = (int)(2 * (tmax - tmin) + 2);
        int *at = mg_arena_pcal(ls->P, (size_t)nkey + 1, sizeof *at);
        for (int i = 0; i < m; i++) {
            at[2 * (ls->lo[i] - tmin) + 1 + 1]++;
            at[2 * (ls->up[i] - tmin) + 1]++;
        }
        for (int k = 0; k < nkey; k++) at[k + 1] += at[k];
        for (int i = 0; i < m; i++) {
            ev[at[2 * (ls->lo[i] - tmin) + 1]++] = (event){ls->lo[i], 1, i};
            ev[at[2 * (ls->up[i] - tmin)]++] = (event){ls->up[i], 0, i};
        }
        pfree(ls->P, at);
    } else {
        for (int i = 0; i < m; i++) {
            ev[2 * i] = (event){ls->lo[i], 1, i};
            ev[2 * i + 1] = (event){ls->up[i], 0, i};
        }
        qsort(ev, (size_t)2 * (size_t)m, sizeof *ev, cmp_event);
    }
    int nsec = 0, grown = 0;
    for (int k = 0; k < 2 * m; k++) {
        if (ev[k].start) {
            ls->slo[ev[k].i] = nsec;
            grown = 1;
        } else {
            if (grown) {
                nsec++;
                grown = 0;
            }
            ls->shi[ev[k].i] = nsec;
        }
    }
    pfree(ls->P, ev);
    ls->nsec = nsec;
    ls->total = mg_arena_pcal(ls->P, (size_t)nsec + 1, sizeof *ls->total);
    for (int i = 0; i < m; i++) {
        ls->total[ls->slo[i]] += ls->size[i];
        ls->total[ls->shi[i]] -= ls->size[i];
    }
    int64_t run = 0;
    for (int s = 0; s < nsec; s++) {
        run += ls->total[s];
        ls->total[s] = run;
        if (run > ls->lower_bound) ls->lower_bound = run;
    }
    ls->total[nsec] = 0;
}

void mg_arena_live_set_free(live_set *ls)
{
    pfree(ls->P, ls->idx);
    pfree(ls->P, ls->lo);
    pfree(ls->P, ls->up);
    pfree(ls->P, ls->size);
    pfree(ls->P, ls->slo);
    pfree(ls->P, ls->shi);
    pfree(ls->P, ls->total);
}

/* ---------------------------------------------------------------------------------------- */
/* Greedy placements                                                                          */
/* ---------------------------------------------------------------------------------------- */

typedef struct gkey {
    double k1, k2; /* larger first */
    int64_t lo;    /* then earlier first */
    int i;
} gkey;

static inline int cmp_gkey(const void *a, const void *b)
{
    const gkey *x = a, *y = b;
    if (x->k1 != y->k1) return x->k1 > y->k1 ? -1 : 1;
    if (x->k2 != y->k2) return x->k2 > y->k2 ? -1 : 1;
    if (x->lo != y->lo) return x->lo < y->lo ? -1 : 1;
    return x->i - y->i;
}

MG_ARENA_SORT(sort_gkeys, gkey, cmp_gkey)

MG_ARENA_SORT(sort_cands, cand, cmp_cand)

typedef struct slot { /* a placed buffer, copied so the scan below reads memory in order */
    int64_t offset, end;
    int64_t lo, up;
} slot;

/* Places the live buffers in the order given, each at the lowest offset that fits. Stops early
 * once the arena reaches limit (returning it: the caller keeps only a placement below limit). */
static int64_t greedy(const live_set *ls, const gkey *order, int64_t *off, slot *placed, int64_t limit)
{
    int64_t top = 0;
    for (int k = 0; k < ls->m; k++) {
        int i = order[k].i;
        int64_t blo = ls->lo[i], bup = ls->up[i], bsize = ls->size[i];
        /* walk the placed buffers in address order; the first gap between those live at the
         * same time as b that is large enough takes it */
        int64_t o = 0;
        int at = k;
        for (int j = 0; j < k; j++) {
            const slot *p = &placed[j];
            if (p->lo >= bup || blo >= p->up) continue;
            if (p->offset >= o + bsize) {
                at = j;
                break;
            }
            if (p->end > o) o = p->end;
        }
        off[i] = o;
        if (o + bsize > top) top = o + bsize;
        if (top >= limit) return top;
        /* keep `placed` sorted by offset: b goes before the first buffer at a higher offset */
        while (at > 0 && placed[at - 1].offset > o) at--;
        while (at < k && placed[at].offset <= o) at++;
        memmove(placed + at + 1, placed + at, (size_t)(k - at) * sizeof *placed);
        placed[at] = (slot){o, o + bsize, blo, bup};
    }
    return top;
}

/* For very large plans greedy's quadratic scan is too slow; this linear scan in time order
 * (free holes kept sorted and merged, first fit, the arena grows at the top when nothing
 * fits) is O(n log n + n * holes). */
typedef struct hole {
    int64_t lo, hi;
} hole;

static void heap_push(int *h, int *n, const int64_t *key, int id)
{
    int i = (*n)++;
    h[i] = id;
    while (i > 0 && key[h[(i - 1) / 2]] > key[h[i]]) {
        int t = h[i];
        h[i] = h[(i - 1) / 2];
        h[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

static int heap_pop(int *h, int *n, const int64_t *key)
{
    int top = h[0], i = 0;
    h[0] = h[--(*n)];
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < *n && key[h[l]] < key[h[m]]) m = l;
        if (r < *n && key[h[r]] < key[h[m]]) m = r;
        if (m == i) break;
        int t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
    return top;
}

int64_t mg_arena_linear_scan(const live_set *ls, int64_t *off)
{
    int n = ls->m, nh = 0, na = 0;
    gkey *order = mg_arena_pal(ls->P, (size_t)n * sizeof *order);
    hole *holes = mg_arena_pal(ls->P, (size_t)(n + 1) * sizeof *holes);
    int *active = mg_arena_pal(ls->P, (size_t)(n + 1) * sizeof *active);
    /* by start, larger first among equal starts */
    for (int i = 0; i < n; i++) order[i] = (gkey){-(double)ls->lo[i], (double)ls->size[i], ls->lo[i], i};
    sort_gkeys(order, n, sort_depth(n));
    int64_t top = 0;
    for (int k = 0; k < n; k++) {
        int b = order[k].i;
        while (na && ls->up[active[0]] <= ls->lo[b]) {
            int f = heap_pop(active, &na, ls->up);
            int j = 0;
            while (j < nh && holes[j].lo < off[f]) j++;
            memmove(holes + j + 1, holes + j, (size_t)(nh - j) * sizeof *holes);
            holes[j] = (hole){off[f], off[f] + ls->size[f]};
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
        while (j < nh && holes[j].hi - holes[j].lo < ls->size[b]) j++;
        if (j < nh) {
            off[b] = holes[j].lo;
            holes[j].lo += ls->size[b];
            if (holes[j].lo == holes[j].hi) {
                memmove(holes + j, holes + j + 1, (size_t)(nh - j - 1) * sizeof *holes);
                nh--;
            }
        } else {
            off[b] = top;
            top += ls->size[b];
        }
        heap_push(active, &na, ls->up, b);
    }
    int64_t high = 0;
    for (int i = 0; i < n; i++)
        if (off[i] + ls->size[i] > high) high = off[i] + ls->size[i];
    pfree(ls->P, order);
    pfree(ls->P, holes);
    pfree(ls->P, active);
    return high;
}

/* The busiest section each buffer is live in (MiniMalloc's "total"). */
static int64_t *section_peaks(const live_set *ls)
{
    int64_t *t = mg_arena_pal(ls->P, (size_t)ls->m * sizeof *t);
    for (int i = 0; i < ls->m; i++) {
        t[i] = 0;
        for (int s = ls->slo[i]; s < ls->shi[i]; s++)
            if (ls->total[s] > t[i]) t[i] = ls->total[s];
    }
    return t;
}

/* The overlaps in time of the live buffers, renumbered by first section (so that buffers close
 * in time are close in memory: u is the live_set's perm[u]; its size is size[u]; the buffers it
 * overlaps are adj[start[u] .. start[u+1])), built by a sweep. Returns 0 (and builds nothing)
 * when there would be more than max_items entries. */
typedef struct overlaps {
    int *perm, *start, *adj;
    int64_t *size;
    mg_arena_scratch *P;
} overlaps;

static void overlaps_free(overlaps *ov)
{
    pfree(ov->P, ov->perm);
    pfree(ov->P, ov->start);
    pfree(ov->P, ov->adj);
    pfree(ov->P, ov->size);
}

static int overlaps_init(overlaps *ov, const live_set *ls, int64_t max_items)
{
    int m = ls->m, nsec = ls->nsec;
    memset(ov, 0, sizeof *ov);
    ov->P = ls->P;
    int *first = mg_arena_pcal(ov->P, (size_t)nsec + 2, sizeof *first);
    for (int i = 0; i < m; i++) first[ls->slo[i] + 1]++;
    for (int s = 0; s < nsec; s++) first[s + 1] += first[s];
    int *byslo = mg_arena_pal(ov->P, (size_t)m * sizeof *byslo);
    for (int i = 0; i < m; i++) byslo[first[ls->slo[i]]++] = i;
    pfree(ov->P, first);
    int *act = mg_arena_pal(ov->P, (size_t)m * sizeof *act);
    int *deg = mg_arena_pcal(ov->P, (size_t)m + 1, sizeof *deg);
    int64_t items = 0;
    {
        /* the counts without a sweep: u overlaps every buffer starting in a section before shi[u]
         * but those ending by slo[u], and itself (half of this function's time was a counting
         * sweep) */
        int *cnt = mg_arena_pcal(ov->P, 2 * ((size_t)nsec + 2), sizeof *cnt), *ends = cnt + nsec + 2;
        for (int i = 0; i < m; i++) { /* cnt[s]: buffers with slo < s; ends[s]: with shi <= s */
            cnt[ls->slo[i] + 1]++;
            ends[ls->shi[i]]++;
        }
        for (int s = 0; s <= nsec; s++) {
            cnt[s + 1] += cnt[s];
            ends[s + 1] += ends[s];
        }
        for (int u = 0; u < m; u++) {
            int i = byslo[u], d = cnt[ls->shi[i]] - ends[ls->slo[i]] - 1;
            deg[u + 1] = d;
            items += d;
        }
        pfree(ov->P, cnt);
    }
    if (items > max_items) {
        pfree(ov->P, byslo);
        pfree(ov->P, act);
        pfree(ov->P, deg);
        return 0;
    }
    for (int u = 0; u < m; u++) deg[u + 1] += deg[u];
    ov->start = mg_arena_pal(ov->P, (size_t)(m + 1) * sizeof *ov->start);
    memcpy(ov->start, deg, (size_t)(m + 1) * sizeof *deg);
    ov->adj = mg_arena_pal(ov->P, (size_t)(items ? items : 1) * sizeof *ov->adj);
    int na = 0; /* the fill: a sweep, each buffer against those before it still live */
    for (int u = 0; u < m; u++) {
        int j2 = 0, s = ls->slo[byslo[u]];
        for (int j = 0; j < na; j++)
            if (ls->shi[byslo[act[j]]] > s) act[j2++] = act[j];
        na = j2;
        for (int j = 0; j < na; j++) {
            ov->adj[deg[act[j]]++] = u;
            ov->adj[deg[u]++] = act[j];
        }
        act[na++] = u;
    }
    ov->perm = byslo;
    ov->size = mg_arena_pal(ov->P, (size_t)(m ? m : 1) * sizeof *ov->size);
    for (int u = 0; u < m; u++) ov->size[u] = ls->size[byslo[u]];
    pfree(ov->P, act);
    pfree(ov->P, deg);
    return 1;
}

typedef struct span { /* a placed neighbour's addresses */
    int64_t offset, end;
} span;

/* Splits a[0, n) (n > 16) around a median of three: returns k with every offset in a[0, k)
 * at most every one in a[k, n). */
static int split_spans(span *a, int n)
{
    int64_t x = a[0].offset, y = a[n / 2].offset, z = a[n - 1].offset;
    int64_t pivot = x < y ? (y < z ? y : x < z ? z : x) : (x < z ? x : y < z ? z : y);
    int i = 0, j = n - 1;
    for (;;) {
        while (a[i].offset < pivot) i++;
        while (a[j].offset > pivot) j--;
        if (i >= j) break;
        span t = a[i];
        a[i++] = a[j];
        a[j--] = t;
    }
    return j + 1;
}

/* Sorts by offset (a quicksort with the comparison inline: this is most of the greedy's time;
 * the order among equal offsets does not matter to the gap scan). */
static void sort_spans(span *a, int n)
{
    while (n > 16) {
        int k = split_spans(a, n);
        /* recurse into the smaller side, loop on the larger */
        if (k < n - k) {
            sort_spans(a, k);
            a += k;
            n -= k;
        } else {
            sort_spans(a + k, n - k);
            n = k;
        }
    }
    for (int x = 1; x < n; x++) {
        span t = a[x];
        int y = x;
        for (; y > 0 && a[y - 1].offset > t.offset; y--) a[y] = a[y - 1];
        a[y] = t;
    }
}

/* Splits a[0, n) three ways around a median of three: the spans below the pivot's offset to
 * a[0, k), those at it next (*neq of them), those above it last; returns k. Each span is
 * written to all three places and the counts move instead (no branches: Hoare's loop above
 * mispredicts on about every other span, and splitting was a sixth of the planner's time on
 * resnet18_64 at 33%). scr: n spans of scratch. */
static int split3_spans(span *a, int n, span *scr, int *neq)
{
    int64_t x = a[0].offset, y = a[n / 2].offset, z = a[n - 1].offset;
    int64_t pivot = x < y ? (y < z ? y : x < z ? z : x) : (x < z ? x : y < z ? z : y);
    int nl = 0, ne = 0, ng = 0;
    for (int i = 0; i < n; i++) { /* (scr[nl] and scr[n-1-ng] are never inside the other's run:
                                     nl + ng <= i; a[ne] was read, ne <= i) */
        span t = a[i];
        int lt = t.offset < pivot, gt = t.offset > pivot;
        scr[nl] = t;
        scr[n - 1 - ng] = t;
        a[ne] = t;
        nl += lt;
        ng += gt;
        ne += !(lt | gt);
    }
    /* (loops, not memmove and memcpy: the runs are short, the calls were a third of the cost) */
    for (int i = ne - 1; i >= 0; i--) a[nl + i] = a[i];
    for (int i = 0; i < nl; i++) a[i] = scr[i];
    for (int i = n - ng; i < n; i++) a[i] = scr[i];
    *neq = ne;
    return nl;
}

/* The same order for scans that usually stop early (first fit reads about half of a buffer's
 * neighbours, compaction four fifths): an incremental quicksort. a[0, ready) is in order and
 * no later than the rest; the rest is cut into segments, each no later than the next, that
 * end at ends[0 .. ne) (the nearest last; ~end: a segment of equal offsets, in order already);
 * spans_more sorts only the segment that comes next, splitting it first, so the spans a scan
 * never reads are never sorted among themselves. */
typedef struct lazy_spans {
    span *a, *scr;
    int ready, ne;
    int ends[64];
} lazy_spans;

static void spans_begin(lazy_spans *z, span *a, int n, span *scr)
{
    z->a = a;
    z->scr = scr;
    z->ready = 0;
    z->ne = 0;
    if (n > 0) z->ends[z->ne++] = n;
}

static void spans_more(lazy_spans *z) /* (some segment is left) */
{
    int lo = z->ready, e = z->ends[--z->ne];
    if (e < 0) { /* equal offsets */
        z->ready = ~e;
        return;
    }
    while (e - lo > 16 && z->ne < 62) {
        int neq, k = lo + split3_spans(z->a + lo, e - lo, z->scr, &neq);
        if (k + neq < e) z->ends[z->ne++] = e;
        if (k == lo) { /* the pivot was the least: its equals come next, in order */
            z->ready = lo + neq;
            return;
        }
        z->ends[z->ne++] = ~(k + neq);
        e = k;
    }
    sort_spans(z->a + lo, e - lo);
    z->ready = e;
}

/* greedy on the overlap lists: each buffer, in the order given, looks only at the placed
 * buffers it overlaps in time (sorted by offset). First fit takes the lowest gap that holds it;
 * best fit the smallest one (the room under the arena's top counting as a gap), which keeps
 * large gaps for the large buffers still to come. off: -1 for unplaced. */
static int64_t greedy_ov(const overlaps *ov, int m, const gkey *order, int best_fit, int64_t *off, span *tmp,
                         span *scr, int64_t limit)
{
    for (int i = 0; i < m; i++) off[i] = -1;
    int64_t top = 0;
    for (int k = 0; k < m; k++) {
        int b = order[k].i, c = 0;
        for (int j = ov->start[b]; j < ov->start[b + 1]; j++) { /* (written always, kept if placed) */
            int v = ov->adj[j];
            int64_t o = off[v];
            tmp[c] = (span){o, o + ov->size[v]};
            c += o >= 0;
        }
        lazy_spans z;
        spans_begin(&z, tmp, c, scr);
        int64_t size = ov->size[b], o = 0, at = -1, gap = INT64_MAX;
        for (int j = 0; j < c; j++) {
            if (j == z.ready) spans_more(&z);
            if (tmp[j].offset >= o + size && tmp[j].offset - o < gap) {
                at = o;
                gap = tmp[j].offset - o;
                if (!best_fit) break;
            }
            if (tmp[j].end > o) o = tmp[j].end;
        }
        if (at < 0 || (best_fit && o + size <= top && top - o < gap)) at = o;
        off[b] = at;
        if (at + size > top) top = at + size;
        if (top >= limit) return top; /* (as greedy) */
    }
    return top;
}

/* The skyline's queue, by offset: every placement appends the buffers it raises (all to the same
 * offset, its top) to a pool as one run, and a binary heap holds the runs by offset. When the
 * lowest offset comes up, the runs at it are gathered, entries since raised further or placed
 * dropped, and the rest sorted by rank position; no entry ever goes to the offset being
 * worked through (a raise goes above it), so that list is final. (Until 2026-12-04 a binary
 * heap of every unplaced buffer with a sift per raise: 12 million sifts on resnet18_64 at 33%
 * against 1.3 million placements, a tenth of the planner's time.) */
typedef struct sky_run {
    int64_t off;
    int lo, hi; /* pool[lo, hi) */
} sky_run;

static void run_push(sky_run *h, int *n, sky_run r)
{
    int i = (*n)++;
    while (i > 0 && h[(i - 1) / 2].off > r.off) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = r;
}

static sky_run run_pop(sky_run *h, int *n)
{
    sky_run top = h[0], last = h[--(*n)];
    int i = 0;
    for (;;) {
        int l = 2 * i + 1;
        if (l >= *n) break;
        if (l + 1 < *n && h[l + 1].off < h[l].off) l++;
        if (h[l].off >= last.off) break;
        h[i] = h[l];
        i = l;
    }
    if (*n) h[i] = last;
    return top;
}

static inline int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

MG_ARENA_SORT(sort_ints, int, cmp_int)

/* The skyline placement (the first descent of the exact search, arena_search.c, without going back):
 * every buffer's lowest offset is the top of the highest placed buffer it overlaps; the buffer
 * with the lowest such offset goes next, ties to the first in the order given. No gaps are
 * filled later, so the buffers pack from the bottom up, time range by time range.
 * cur: m ints; pool: as many as the overlap lists hold; runs: m; bits: m bits, all 0 (left so). */
static int64_t skyline(const overlaps *ov, int m, const gkey *order, int64_t *off, int64_t *minoff, int *pos,
                       int *cur, int *pool, sky_run *runs, uint64_t *bits, int64_t limit)
{
    /* everything starts at offset 0, in the order given. A placed buffer's lowest offset becomes
     * INT64_MAX, so that one load per neighbour tells both that it is still unplaced and that it
     * is raised */
    for (int k = 0; k < m; k++) {
        int i = order[k].i;
        pos[i] = k;
        minoff[i] = 0;
        cur[k] = k;
    }
    int ncur = m, nrun = 0, npool = 0;
    int64_t top = 0, x = 0; /* x: the offset being worked through */
    const int *adj = ov->adj, *start = ov->start;
    for (;;) {
        for (int q = 0; q < ncur; q++) {
            int b = order[cur[q]].i;
            if (minoff[b] != x) continue; /* raised since */
            int64_t h = x + ov->size[b];
            off[b] = x;
            minoff[b] = INT64_MAX;
            if (h > top) top = h;
            if (top >= limit) return top; /* (as greedy) */
            int from = npool;
            for (int j = start[b], jend = start[b + 1]; j < jend; j++) {
                int v = adj[j];
                if (minoff[v] < h) {
                    minoff[v] = h;
                    pool[npool++] = v;
                }
            }
            if (npool > from) run_push(runs, &nrun, (sky_run){h, from, npool});
        }
        if (!nrun) break;
        x = runs[0].off;
        ncur = 0;
        int plo = INT_MAX, phi = -1;
        while (nrun && runs[0].off == x) {
            sky_run r = run_pop(runs, &nrun);
            for (int k = r.lo; k < r.hi; k++)
                if (minoff[pool[k]] == x) {
                    int p = pos[pool[k]];
                    cur[ncur++] = p;
                    plo = p < plo ? p : plo;
                    phi = p > phi ? p : phi;
                }
        }
        /* (distinct positions: a short list is sorted, a long one dense enough in its range
         * goes through a bitmap, linear; sorting them all was a tenth of the planner's time) */
        if (ncur > 16 && (phi >> 6) - (plo >> 6) < 4 * ncur) {
            for (int q = 0; q < ncur; q++) bits[cur[q] >> 6] |= (uint64_t)1 << (cur[q] & 63);
            ncur = 0;
            for (int w = plo >> 6; w <= phi >> 6; w++) {
                for (uint64_t y = bits[w]; y; y &= y - 1) cur[ncur++] = 64 * w + __builtin_ctzll(y);
                bits[w] = 0;
            }
        } else if (ncur > 1) {
            sort_ints(cur, ncur, sort_depth(ncur));
        }
    }
    return top;
}

static const int64_t greedy_items_max = 16000000; /* overlap entries the greedy portfolio may index */

/* Compaction (gravity): every buffer, lowest first, moves down to the lowest gap that holds it
 * among the buffers it overlaps in time, where they are now; then the placement is turned
 * upside down (offset -> top - offset - size) and compacted again, so that buffers also fall the
 * other way. The top never rises; where a buffer that held the top up can drop, it falls. Two
 * passes (a final flip restores the orientation) take most of the gain: on resnet18_64's plans
 * of 16 parts the best greedy goes from 1.095 to 1.058 times the lower bound. Returns the top.
 * tmp: 2m spans. */
static int64_t compact(const overlaps *ov, int m, int passes, int64_t *off, gkey *order, span *tmp)
{
    int64_t top = 0;
    for (int u = 0; u < m; u++)
        if (off[u] + ov->size[u] > top) top = off[u] + ov->size[u];
    int flipped = 0, still = 0; /* still: passes in a row that moved nothing */
    cand *ok = (cand *)order; /* (in order's room: half its size) */
    int exact = top <= ((int64_t)1 << 53);
    for (int pass = 0; pass < passes && still < 2; pass++) {
        int moved = 0;
        if (exact) {
            for (int u = 0; u < m; u++) ok[u] = (cand){off[u], u, u};
            sort_cands(ok, m, sort_depth(m));
        } else {
            for (int u = 0; u < m; u++) order[u] = (gkey){-(double)off[u], 0, 0, u};
            sort_gkeys(order, m, sort_depth(m));
        }
        for (int k = 0; k < m; k++) {
            int b = exact ? ok[k].u : order[k].i, c = 0;
            for (int j = ov->start[b]; j < ov->start[b + 1]; j++) { /* those above b cannot matter */
                int v = ov->adj[j];
                if (off[v] < off[b]) tmp[c++] = (span){off[v], off[v] + ov->size[v]};
            }
            if (c == 0) {
                moved |= off[b] != 0;
                off[b] = 0;
                continue;
            }
            lazy_spans z;
            spans_begin(&z, tmp, c, tmp + m);
            int64_t o = 0, size = ov->size[b];
            for (int j = 0; j < c && o < off[b]; j++) {
                if (j == z.ready) spans_more(&z);
                if (tmp[j].offset >= o + size) break;
                if (tmp[j].end > o) o = tmp[j].end;
            }
            if (o < off[b]) {
                off[b] = o;
                moved = 1;
            }
        }
        top = 0;
        for (int u = 0; u < m; u++)
            if (off[u] + ov->size[u] > top) top = off[u] + ov->size[u];
        for (int u = 0; u < m; u++) off[u] = top - off[u] - ov->size[u];
        flipped = !flipped;
        still = moved ? 0 : still + 1;
    }
    if (flipped)
        for (int u = 0; u < m; u++) off[u] = top - off[u] - ov->size[u];
    return top;
}

/* The greedy placements tried, best first on large plans: a key (larger first, then the second
 * key, then the earlier start) and how to place in that order. */
typedef enum { KEY_SIZE, KEY_LIFETIME, KEY_AREA, KEY_BUSIEST, KEY_SIZE_LIFETIME } gkey_kind;
typedef enum { FIRST_FIT, BEST_FIT, SKYLINE } gplace;
static const struct {
    gkey_kind key;
    gplace place;
} greedies[] = {
    {KEY_SIZE, FIRST_FIT},   {KEY_AREA, SKYLINE},    {KEY_BUSIEST, SKYLINE},  {KEY_BUSIEST, FIRST_FIT},
    {KEY_BUSIEST, BEST_FIT}, {KEY_AREA, FIRST_FIT},  {KEY_LIFETIME, FIRST_FIT}, {KEY_SIZE_LIFETIME, SKYLINE},
};
enum { NGREEDY = sizeof greedies / sizeof greedies[0], NGREEDY_LARGE = 3 };

/* The best of the greedy placements (first wins ties), up to MG_ARENA_ORDERS_MAX buffers all
 * of them, above that the first NGREEDY_LARGE. compact_large: compacted above MG_ARENA_ORDERS_MAX
 * too (the `arena` command, on placements too large for its search; not the planner's, see
 * arena.c's place_with_limits). On plans of many parts (micro-batching) no one
 * order is good everywhere: over unet_small's placements at 25% the best of these eight is on
 * average 1.04 times the lower bound where the four first-fit orders alone are 1.07; on
 * resnet18_64's large ones the skylines win two times in three. Stops at the lower bound. When
 * the overlap lists would be too big, only first fit by size runs, on a scan of every placed
 * buffer, or (decline_quadratic: a plan so large that this quadratic scan would take long)
 * nothing runs and INT64_MAX is returned. Returns the arena; offsets in best. */
int64_t mg_arena_greedy_best(const live_set *ls, int64_t *best, int decline_quadratic, int compact_large)
{
    int m = ls->m;
    overlaps ov;
    if (!overlaps_init(&ov, ls, greedy_items_max) && decline_quadratic) return INT64_MAX; /* placed nothing */
    gkey *order = mg_arena_pal(ls->P, (size_t)m * sizeof *order);
    int64_t top = INT64_MAX;
    if (!ov.start) {
        slot *placed = mg_arena_pal(ls->P, (size_t)m * sizeof *placed);
        for (int i = 0; i < m; i++) order[i] = (gkey){(double)ls->size[i], 0, ls->lo[i], i};
        sort_gkeys(order, m, sort_depth(m));
        top = greedy(ls, order, best, placed, INT64_MAX);
        pfree(ls->P, placed);
        pfree(ls->P, order);
        return top;
    }
    int64_t *peak = section_peaks(ls), *minoff = mg_arena_pal(ls->P, (size_t)m * sizeof *minoff);
    int64_t *off = mg_arena_pal(ls->P, (size_t)m * sizeof *off);
    int64_t *bestu = mg_arena_pal(ls->P, (size_t)m * sizeof *bestu);
    int *pos = mg_arena_pal(ls->P, (size_t)m * sizeof *pos);
    span *tmp = mg_arena_pal(ls->P, (size_t)2 * (size_t)m * sizeof *tmp); /* (the second half: splitting's scratch) */
    sky_run *runs = mg_arena_pal(ls->P, (size_t)(m + 1) * sizeof *runs);
    int *cur = mg_arena_pal(ls->P, (size_t)(m + 1) * sizeof *cur);
    int *pool = mg_arena_pal(ls->P, (size_t)ov.start[m] * sizeof *pool + 1);
    uint64_t *bits = mg_arena_pcal(ls->P, (size_t)(m / 64 + 1), sizeof *bits);
    int ngreedy = m <= MG_ARENA_ORDERS_MAX ? NGREEDY : NGREEDY_LARGE;
    /* dense overlaps (each buffer overlapping a large share of the others, as on layered DAGs):
     * sorting a buffer's placed neighbours costs more than scanning every placed buffer in
     * address order, so there first fit scans (the same placements) and the rest is left out */
    int dense = m > 512 && ov.start[m] / m > m / 8; /* on average, over an eighth of the others */
    slot *placed = dense ? mg_arena_pal(ls->P, (size_t)m * sizeof *placed) : NULL;
    gkey *lsorder = dense ? mg_arena_pal(ls->P, (size_t)m * sizeof *lsorder) : NULL;
    gkey *area = NULL; /* the order by area, sorted once for the two placements that take it */
    for (int h = 0; h < ngreedy && top > ls->lower_bound; h++) {
        if (dense && greedies[h].place != FIRST_FIT) continue;
        if (greedies[h].key == KEY_AREA && area && (h == 0 || greedies[h - 1].key != KEY_AREA)) {
            memcpy(order, area, (size_t)m * sizeof *order);
        } else if (h == 0 || greedies[h].key != greedies[h - 1].key) { /* the order (the same key: the same order) */
            for (int u = 0; u < m; u++) { /* u in the overlap lists' numbering: ties go by start */
                int i = ov.perm[u];
                double size = (double)ls->size[i], len = (double)ls->up[i] - (double)ls->lo[i];
                gkey k = {size, 0, ls->lo[i], u};
                switch (greedies[h].key) {
                case KEY_SIZE: break;
                case KEY_LIFETIME: k = (gkey){len, size, ls->lo[i], u}; break;
                case KEY_AREA: k = (gkey){size * len, size, ls->lo[i], u}; break;
                case KEY_BUSIEST: k = (gkey){(double)peak[i], size * len, ls->lo[i], u}; break;
                case KEY_SIZE_LIFETIME: k = (gkey){size, len, ls->lo[i], u}; break;
                }
                order[u] = k;
            }
            sort_gkeys(order, m, sort_depth(m));
            if (greedies[h].key == KEY_AREA) {
                area = mg_arena_pal(ls->P, (size_t)m * sizeof *area);
                memcpy(area, order, (size_t)m * sizeof *area);
            }
        }
        /* (an order is given up as soon as its arena reaches the best so far: only one below it
         * is kept) */
        int64_t t;
        if (greedies[h].place == SKYLINE) {
            t = skyline(&ov, m, order, off, minoff, pos, cur, pool, runs, bits, top);
        } else if (dense) {
            for (int k = 0; k < m; k++) lsorder[k] = (gkey){0, 0, 0, ov.perm[order[k].i]};
            t = greedy(ls, lsorder, minoff, placed, top); /* offsets by live_set index, then ours */
            if (t < top)
                for (int u = 0; u < m; u++) off[u] = minoff[ov.perm[u]];
        } else {
            t = greedy_ov(&ov, m, order, greedies[h].place == BEST_FIT, off, tmp, tmp + m, top);
        }
        if (t < top) {
            top = t;
            memcpy(bestu, off, (size_t)m * sizeof *off);
        }
    }
    if (top > ls->lower_bound && !dense && m <= MG_ARENA_ORDERS_MAX) top = compact(&ov, m, 4, bestu, order, tmp);
    else if (top > ls->lower_bound && !dense && compact_large) top = compact(&ov, m, LARGE_PASSES, bestu, order, tmp);
    pfree(ls->P, placed);
    pfree(ls->P, lsorder);
    pfree(ls->P, area);
    for (int u = 0; u < m; u++) best[ov.perm[u]] = bestu[u];
    pfree(ls->P, bestu);
    overlaps_free(&ov);
    pfree(ls->P, peak);
    pfree(ls->P, minoff);
    pfree(ls->P, off);
    pfree(ls->P, pos);
    pfree(ls->P, tmp);
    pfree(ls->P, runs);
    pfree(ls->P, cur);
    pfree(ls->P, pool);
    pfree(ls->P, bits);
    pfree(ls->P, order);
    return top == INT64_MAX ? 0 : top;
}

/* Compacts a placement (offsets by live_set index in best, arena top): the search's placements
 * (arena_search.c; arena.c's try_result) are canonical (every buffer as low as the ones placed
 * before it allow), but the search stops at the first that meets its target, and buffers placed
 * late often leave room below the top that compaction takes back. On resnet18_64's plan at 25%
 * (1,018 buffers) the search meets the budget at 1.046 times the lower bound and compaction
 * brings it to 1.029 in a few ms (as low as 20 s of search from the `arena` command); on most
 * placements it moves nothing. Not on dense overlaps (mg_arena_greedy_best's rule: the lists
 * would cost more than the search). Returns the top. */
int64_t mg_arena_compact_placement(const live_set *ls, int64_t *best, int64_t top)
{
    int m = ls->m;
    overlaps ov;
    if (top <= ls->lower_bound || !overlaps_init(&ov, ls, greedy_items_max)) return top;
    if (!(m > 512 && ov.start[m] / m > m / 8)) {
        int64_t *off = mg_arena_pal(ls->P, (size_t)m * sizeof *off);
        gkey *order = mg_arena_pal(ls->P, (size_t)m * sizeof *order);
        /* (tmp's second half: splitting's scratch) */
        span *tmp = mg_arena_pal(ls->P, (size_t)2 * (size_t)m * sizeof *tmp);
        for (int u = 0; u < m; u++) off[u] = best[ov.perm[u]];
        int64_t t = compact(&ov, m, 4, off, order, tmp);
        if (t < top) {
            top = t;
            for (int u = 0; u < m; u++) best[ov.perm[u]] = off[u];
        }
        pfree(ls->P, off);
        pfree(ls->P, order);
        pfree(ls->P, tmp);
    }
    overlaps_free(&ov);
    return top;
}
