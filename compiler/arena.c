/* arena.c — static offset assignment: gives every buffer an offset in one arena so that no two
 * buffers live at the same time share a byte, and the arena (max offset+size) is small.
 *
 * Why it exists: the workspace a generated step needs is this arena; every byte above the peak
 * of live bytes (the lower bound) is waste the user pays for, and under a budget it decides
 * whether a plan fits at all.
 *
 * How, cheapest first:
 *  1. Greedy placements: buffers in some order, each at the lowest offset where it overlaps no
 *     already-placed buffer whose lifetime intersects its own (found on per-buffer overlap
 *     lists, built once by a sweep), or the skyline variant (the buffer whose lowest offset
 *     above the placed ones it overlaps is least goes next). Up to 2000 buffers the best of
 *     eight (four first-fit orders, best fit, three skylines) is kept and then compacted (every
 *     buffer falls to the lowest gap that holds it, the placement is turned upside down and
 *     compacted again); up to 40000 the best of three (compacted too by the `arena` command
 *     where it does not search); above 20000 also a linear scan in time
 *     order (O(n log n)), the better kept, and above 40000 the linear scan alone. (Up to
 *     2026-12-03 the scan alone took over at 20000: mlp_deep's plans in 32 parts have
 *     20,000-25,500 buffers, where the scan wasted 8-31% above the peak of live bytes and the
 *     greedy orders reach the peak on nearly every one, at 5-7 ms against 2-3 ms.)
 *  2. When that misses the target (the capacity asked for, else the lower bound), an exact
 *     depth-first branch and bound in the manner of MiniMalloc (Moffitt, ASPLOS 2023). Time is
 *     cut into "sections" (the maximal sets of buffers live together). Buffers are placed one
 *     at a time, each at its lowest feasible offset (above every placed buffer it overlaps), in
 *     nondecreasing (offset, rank) order: "canonical" solutions, each reached once, and some
 *     optimal solution is among them. Pruning:
 *       - dominance: no placement at or above the lowest top any unplaced buffer could reach
 *         (it would leave a gap that buffer fits in);
 *       - section inference: later placements are at offset o or higher, so every section
 *         still holding t bytes needs o + t <= target; and its unplaced buffers are stacked
 *         above the lowest offset any of them can take (checked where that changed);
 *       - a buffer below the canonical order that nothing unplaced overlaps any more can never
 *         be placed; and when the buffer just tried overlaps nothing unplaced, no other choice
 *         at that node can do better (MiniMalloc's "hatless" rule).
 *     When placed buffers split time into independent parts, each part is solved on its own
 *     (dynamic decomposition), its buffers ranked afresh by the bytes left in their sections.
 *     Three static orders take turns under a node limit that doubles every round (restarts:
 *     the effort one order needs varies by orders of magnitude between instances). Without a
 *     capacity, a failed search at the lower bound is followed by bisection (the command) or
 *     given up (the planner). Every placement the search finds is compacted as the greedy's
 *     are (it stops at the first that meets its target, often with room below the top).
 * The search is bounded by wall-clock time (the `arena` command) or by a deterministic effort
 * count (the planner, so that plans do not depend on the machine's speed).
 * A caller that places plan after plan may keep an mg_arena_scratch (mg_arena_assign_in): each
 * placement's tables are then cut from memory kept from the last, not allocated afresh. */
#include "clock.h"
#include "arena.h"
#include "plan.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
    MG_ARENA_GREEDY_MAX = 40000, /* buffers; above this the linear scan takes over */
    MG_ARENA_SCAN_FROM = 20000,  /* buffers; above this the linear scan runs too, the better kept */
    MG_ARENA_ORDERS_MAX = 2000,  /* buffers; up to this the greedy tries every order */
    MG_ARENA_SEARCH_MAX = 4000,  /* buffers; the search recurses once per placement */
};
static const int64_t search_items_max = 30000000; /* overlap + section entries the search may index */
static const int64_t plan_work_limit = 4000000;
/* Compaction passes on a placement too large for the command's search (compact_large below):
 * over 26 placements of resnet18_64 in 16 parts (4,813-7,591 buffers), 4 passes 7.93 -> 6.44%
 * above the peak of live bytes, 8 passes 6.33% (16: the same), ~30 ms each. */
enum { LARGE_PASSES = 8 };
static const double FIT_SHARE = 1.0;   /* mg_arena_assign's search effort (~30 ms) */

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) abort();
    return p;
}

/* A caller's scratch (mg_arena_assign_in): every table of a placement is cut from one block
 * kept from placement to placement, so the placements a planner makes one after the other work
 * in pages already mapped (freeing and allocating them again had glibc trim the heap top and
 * the kernel map fresh pages each time). What does not fit the block this time is allocated
 * apart, and the block grows to what was asked for when the placement ends. P NULL: malloc. */
struct mg_arena_scratch {
    char *block;
    size_t cap, used, asked;
    void **extra; /* allocated apart this time */
    size_t nextra, capextra;
};

mg_arena_scratch *mg_arena_scratch_new(void)
{
    return mg_xcalloc(1, sizeof(mg_arena_scratch));
}

void mg_arena_scratch_free(mg_arena_scratch *P)
{
    if (!P) return;
    for (size_t i = 0; i < P->nextra; i++) free(P->extra[i]);
    free(P->extra);
    free(P->block);
    free(P);
}

static void *pal(mg_arena_scratch *P, size_t n)
{
    if (!P) return xmalloc(n);
    n = (n + 63) & ~(size_t)63;
    P->asked += n;
    if (n <= P->cap - P->used) {
        void *p = P->block + P->used;
        P->used += n;
        return p;
    }
    if (P->nextra == P->capextra) {
        P->capextra = P->capextra ? 2 * P->capextra : 16;
        P->extra = realloc(P->extra, P->capextra * sizeof *P->extra);
        if (!P->extra) abort();
    }
    return P->extra[P->nextra++] = xmalloc(n);
}

static void *pcal(mg_arena_scratch *P, size_t count, size_t size)
{
    if (!P) return mg_xcalloc(count, size);
    void *p = pal(P, count * size);
    memset(p, 0, count * size);
    return p;
}

static void pfree(mg_arena_scratch *P, void *p)
{
    if (!P) free(p); /* (in a scratch: given back all at once, scratch_reset) */
}

/* After a placement: everything given back; the block grown to hold the next like it. */
static void scratch_reset(mg_arena_scratch *P)
{
    if (!P) return;
    for (size_t i = 0; i < P->nextra; i++) free(P->extra[i]);
    P->nextra = 0;
    if (P->asked > P->cap) {
        free(P->block);
        P->cap = P->asked + P->asked / 4;
        P->block = xmalloc(P->cap);
    }
    P->used = P->asked = 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Sections: a sweep over time                                                               */
/* ---------------------------------------------------------------------------------------- */

/* The live buffers (size > 0, upper > lower), copied out of the caller's intervals. */
typedef struct live_set {
    int m;
    int *idx;              /* index in the caller's array */
    int64_t *lo, *up, *size;
    int *slo, *shi;        /* sections [slo, shi) the buffer is live in */
    int nsec;
    int64_t *total;        /* bytes live in each section */
    int64_t lower_bound;
    mg_arena_scratch *P;   /* where its tables and those built from it come from (NULL: malloc) */
} live_set;

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
static void live_set_init(live_set *ls, const mg_interval *iv, int n, mg_arena_scratch *P)
{
    memset(ls, 0, sizeof *ls);
    ls->P = P;
    int m = 0;
    for (int i = 0; i < n; i++)
        if (iv[i].size > 0 && iv[i].upper > iv[i].lower) m++;
    ls->m = m;
    ls->idx = pal(ls->P, (size_t)m * sizeof *ls->idx);
    ls->lo = pal(ls->P, (size_t)m * sizeof *ls->lo);
    ls->up = pal(ls->P, (size_t)m * sizeof *ls->up);
    ls->size = pal(ls->P, (size_t)m * sizeof *ls->size);
    ls->slo = pal(ls->P, (size_t)m * sizeof *ls->slo);
    ls->shi = pal(ls->P, (size_t)m * sizeof *ls->shi);
    m = 0;
    for (int i = 0; i < n; i++) {
        if (!(iv[i].size > 0 && iv[i].upper > iv[i].lower)) continue;
        ls->idx[m] = i;
        ls->lo[m] = iv[i].lower;
        ls->up[m] = iv[i].upper;
        ls->size[m] = iv[i].size;
        m++;
    }
    event *ev = pal(ls->P, (size_t)2 * (size_t)m * sizeof *ev);
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
        int *at = pcal(ls->P, (size_t)nkey + 1, sizeof *at);
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
    ls->total = pcal(ls->P, (size_t)nsec + 1, sizeof *ls->total);
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

static void live_set_free(live_set *ls)
{
    pfree(ls->P, ls->idx);
    pfree(ls->P, ls->lo);
    pfree(ls->P, ls->up);
    pfree(ls->P, ls->size);
    pfree(ls->P, ls->slo);
    pfree(ls->P, ls->shi);
    pfree(ls->P, ls->total);
}

int64_t mg_arena_lower_bound(const mg_interval *iv, int n)
{
    live_set ls;
    live_set_init(&ls, iv, n, NULL);
    int64_t lb = ls.lower_bound;
    live_set_free(&ls);
    return lb;
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

/* qsort with the comparison inline (the keys sorted are distinct, so any sort gives the same
 * order): a quicksort on the median of three, insertion sort on short runs, and libc's qsort
 * where the pivots keep coming out badly. Sorting is a large share of the placement's time.
 * One definition for the two key types below (gkey, cand). */
#define MG_ARENA_SORT(NAME, T, CMP)                                                                \
    static void NAME(T *a, int n, int depth)                                                       \
    {                                                                                              \
        while (n > 16) {                                                                           \
            if (depth-- <= 0) {                                                                    \
                qsort(a, (size_t)n, sizeof *a, CMP);                                               \
                return;                                                                            \
            }                                                                                      \
            T *x = &a[0], *y = &a[n / 2], *z = &a[n - 1];                                          \
            const T *mid = CMP(x, y) < 0 ? (CMP(y, z) < 0 ? y : CMP(x, z) < 0 ? z : x)             \
                                         : (CMP(x, z) < 0 ? x : CMP(y, z) < 0 ? z : y);            \
            T pivot = *mid;                                                                        \
            int i = 0, j = n - 1;                                                                  \
            for (;;) {                                                                             \
                while (CMP(&a[i], &pivot) < 0) i++;                                                \
                while (CMP(&a[j], &pivot) > 0) j--;                                                \
                if (i >= j) break;                                                                 \
                T t = a[i];                                                                        \
                a[i++] = a[j];                                                                     \
                a[j--] = t;                                                                        \
            }                                                                                      \
            if (j + 1 < n - j - 1) {                                                               \
                NAME(a, j + 1, depth);                                                             \
                a += j + 1;                                                                        \
                n -= j + 1;                                                                        \
            } else {                                                                               \
                NAME(a + j + 1, n - j - 1, depth);                                                 \
                n = j + 1;                                                                         \
            }                                                                                      \
        }                                                                                          \
        for (int x = 1; x < n; x++) {                                                              \
            T t = a[x];                                                                            \
            int y = x;                                                                             \
            for (; y > 0 && CMP(&a[y - 1], &t) > 0; y--) a[y] = a[y - 1];                          \
            a[y] = t;                                                                              \
        }                                                                                          \
    }
MG_ARENA_SORT(sort_gkeys, gkey, cmp_gkey)

/* An offset and a rank, lowest offset first, then lowest rank: the search's candidates (u the
 * buffer), and compaction's order (rank = u: integer keys, half the size of a gkey, compared
 * without doubles; the order of gkeys (-offset, 0, 0, u) where offsets are exact in a double). */
typedef struct cand {
    int64_t off;
    int rank, u;
} cand;

static inline int cmp_cand(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->off != y->off) return x->off < y->off ? -1 : 1;
    return x->rank - y->rank;
}

MG_ARENA_SORT(sort_cands, cand, cmp_cand)

static int sort_depth(int n)
{
    int d = 8;
    while (n > 1) {
        n /= 2;
        d += 2;
    }
    return d;
}

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

static int64_t linear_scan(const live_set *ls, int64_t *off)
{
    int n = ls->m, nh = 0, na = 0;
    gkey *order = pal(ls->P, (size_t)n * sizeof *order);
    hole *holes = pal(ls->P, (size_t)(n + 1) * sizeof *holes);
    int *active = pal(ls->P, (size_t)(n + 1) * sizeof *active);
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
    int64_t *t = pal(ls->P, (size_t)ls->m * sizeof *t);
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
    int *first = pcal(ov->P, (size_t)nsec + 2, sizeof *first);
    for (int i = 0; i < m; i++) first[ls->slo[i] + 1]++;
    for (int s = 0; s < nsec; s++) first[s + 1] += first[s];
    int *byslo = pal(ov->P, (size_t)m * sizeof *byslo);
    for (int i = 0; i < m; i++) byslo[first[ls->slo[i]]++] = i;
    pfree(ov->P, first);
    int *act = pal(ov->P, (size_t)m * sizeof *act);
    int *deg = pcal(ov->P, (size_t)m + 1, sizeof *deg);
    int64_t items = 0;
    {
        /* the counts without a sweep: u overlaps every buffer starting in a section before shi[u]
         * but those ending by slo[u], and itself (half of this function's time was a counting
         * sweep) */
        int *cnt = pcal(ov->P, 2 * ((size_t)nsec + 2), sizeof *cnt), *ends = cnt + nsec + 2;
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
    ov->start = pal(ov->P, (size_t)(m + 1) * sizeof *ov->start);
    memcpy(ov->start, deg, (size_t)(m + 1) * sizeof *deg);
    ov->adj = pal(ov->P, (size_t)(items ? items : 1) * sizeof *ov->adj);
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
    ov->size = pal(ov->P, (size_t)(m ? m : 1) * sizeof *ov->size);
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

/* The skyline placement (the first descent of the exact search below, without going back):
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
 * place_with_limits). On plans of many parts (micro-batching) no one
 * order is good everywhere: over unet_small's placements at 25% the best of these eight is on
 * average 1.04 times the lower bound where the four first-fit orders alone are 1.07; on
 * resnet18_64's large ones the skylines win two times in three. Stops at the lower bound. When
 * the overlap lists would be too big, only first fit by size runs, on a scan of every placed
 * buffer, or (decline_quadratic: a plan so large that this quadratic scan would take long)
 * nothing runs and INT64_MAX is returned. Returns the arena; offsets in best. */
static int64_t greedy_best(const live_set *ls, int64_t *best, int decline_quadratic, int compact_large)
{
    int m = ls->m;
    overlaps ov;
    if (!overlaps_init(&ov, ls, greedy_items_max) && decline_quadratic) return INT64_MAX; /* placed nothing */
    gkey *order = pal(ls->P, (size_t)m * sizeof *order);
    int64_t top = INT64_MAX;
    if (!ov.start) {
        slot *placed = pal(ls->P, (size_t)m * sizeof *placed);
        for (int i = 0; i < m; i++) order[i] = (gkey){(double)ls->size[i], 0, ls->lo[i], i};
        sort_gkeys(order, m, sort_depth(m));
        top = greedy(ls, order, best, placed, INT64_MAX);
        pfree(ls->P, placed);
        pfree(ls->P, order);
        return top;
    }
    int64_t *peak = section_peaks(ls), *minoff = pal(ls->P, (size_t)m * sizeof *minoff);
    int64_t *off = pal(ls->P, (size_t)m * sizeof *off), *bestu = pal(ls->P, (size_t)m * sizeof *bestu);
    int *pos = pal(ls->P, (size_t)m * sizeof *pos);
    span *tmp = pal(ls->P, (size_t)2 * (size_t)m * sizeof *tmp); /* (the second half: splitting's scratch) */
    sky_run *runs = pal(ls->P, (size_t)(m + 1) * sizeof *runs);
    int *cur = pal(ls->P, (size_t)(m + 1) * sizeof *cur), *pool = pal(ls->P, (size_t)ov.start[m] * sizeof *pool + 1);
    uint64_t *bits = pcal(ls->P, (size_t)(m / 64 + 1), sizeof *bits);
    int ngreedy = m <= MG_ARENA_ORDERS_MAX ? NGREEDY : NGREEDY_LARGE;
    /* dense overlaps (each buffer overlapping a large share of the others, as on layered DAGs):
     * sorting a buffer's placed neighbours costs more than scanning every placed buffer in
     * address order, so there first fit scans (the same placements) and the rest is left out */
    int dense = m > 512 && ov.start[m] / m > m / 8; /* on average, over an eighth of the others */
    slot *placed = dense ? pal(ls->P, (size_t)m * sizeof *placed) : NULL;
    gkey *lsorder = dense ? pal(ls->P, (size_t)m * sizeof *lsorder) : NULL;
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
                area = pal(ls->P, (size_t)m * sizeof *area);
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

/* ---------------------------------------------------------------------------------------- */
/* The exact search                                                                           */
/* ---------------------------------------------------------------------------------------- */

enum { FOUND, NOTFOUND, STOPPED /* time or effort spent */, ABORTED /* this order's node limit */ };

typedef struct undo { /* a lowest feasible offset before a placement raised it */
    int64_t old;
    int i;
} undo;


/* A static order: a buffer's keys, compared larger first, then by input position. */
typedef struct rkey {
    double k[3];
    int i, tie;
} rkey;

static inline int cmp_rkey(const void *a, const void *b)
{
    const rkey *x = a, *y = b;
    for (int j = 0; j < 3; j++)
        if (x->k[j] != y->k[j]) return x->k[j] > y->k[j] ? -1 : 1;
    return x->tie - y->tie;
}
/* (every part is ranked afresh at every split: libc's qsort with calls per comparison was a
 * tenth of the search's time; the keys are distinct, tie being the buffer's own index) */
MG_ARENA_SORT(sort_rkeys, rkey, cmp_rkey)

/* The orders tried round robin, in MiniMalloc's letters: T the bytes still to place in the
 * busiest section the buffer is in, W its lifetime, A its area (bytes x lifetime). */
static const char *const search_orders[] = {"TWA", "TAW", "WAT"};
enum { NSEARCH_ORDERS = sizeof search_orders / sizeof search_orders[0] };

typedef struct search {
    int m, nsec;
    int64_t cap, lower_bound;
    /* buffers, numbered by first section */
    int *live;                 /* the live_set index of each */
    int64_t *size;
    int *slo, *shi;
    double *width;
    int *adj_start, *adj;      /* overlaps in time (CSR) */
    int *first;                /* nsec+1: first buffer whose slo >= s */
    int *mem_start, *mem;      /* the buffers of each section (CSR) */
    int *mnext, *mprev;        /* the unplaced ones: circular lists through mem, with node
                                  nmem + s heading section s's (placed ones are unlinked) */
    uint64_t *unpl;            /* bit u: u is unplaced (search_range's scan goes through these
                                  words: testing off[u] for each buffer of the part mispredicted
                                  on placed ones, a quarter of the scan's time) */
    int *witness;              /* per section, a buffer that was low enough last time (a hint) */
    int *bnode_start, *bnode;  /* buffer u's node in section slo[u] + j: bnode[bnode_start[u] + j] */
    /* state, restored on the way back */
    int64_t *minoff, *off, *total;
    int *rank;                 /* static order within the part being searched */
    int *nb;                   /* unplaced buffers each overlaps */
    int *cuts;                 /* nsec: unplaced buffers live in both section s and s+1 */
    int64_t *sol;              /* the offsets of the last success */
    undo *log;
    size_t nlog, caplog;
    cand *cand;                /* the candidates of every node on the current path */
    size_t ncand, capcand;
    const char *order;         /* the static order in use */
    rkey *keys;                /* scratch for ranking a part */
    size_t capkeys;
    int *saved;                /* the ranks parts replaced, restored on the way back */
    size_t nsaved, capsaved;
    /* cap_hi: every comparison with cap made so far comes out the same under any cap in [cap,
     * cap_hi], so the search does exactly what it did (mg_arena_stats). (Only caps above: the
     * least sum compared that came out above cap is one min a comparison; the greatest that came
     * out within it, for caps below, would be one max on every buffer scanned, a fifth of the
     * search's time.) */
    int64_t cap_hi;
    /* limits */
    int64_t nodes, node_limit, total_nodes, work, work_limit;
    double deadline;
    mg_arena_scratch *P;
} search;

/* Doubles a stack's capacity; returns the moved array. */
static void *grow(mg_arena_scratch *P, void *p, size_t *cap, size_t elem)
{
    size_t was = *cap;
    *cap = *cap ? 2 * *cap : 1024;
    if (P) {
        void *q = pal(P, *cap * elem);
        if (was) memcpy(q, p, was * elem);
        return q;
    }
    void *q = realloc(p, *cap * elem);
    if (!q) abort();
    return q;
}

static int solve_range(search *st, int a, int b);
static int search_range(search *st, int a, int b, int64_t min_off, int min_rank, int busiest_at);

/* Places u at its lowest feasible offset, propagates, and searches on; restores everything.
 * The caller has checked the section bound every placement at this offset must meet. */
static int place(search *st, int a, int b, int u, int busiest_at)
{
    int64_t o = st->minoff[u], h = o + st->size[u];
    size_t mark = st->nlog;
    st->off[u] = o;
    st->sol[u] = o;
    st->unpl[u >> 6] &= ~((uint64_t)1 << (u & 63));
    /* everything overlapping u now sits above it (the fields in locals: the stores to the log
     * would otherwise make the compiler read them again for every neighbour) */
    int alo = st->slo[u], ahi = st->shi[u];
    {
        const int *adj = st->adj, *slo = st->slo, *shi = st->shi;
        const int64_t *off = st->off;
        int64_t *minoff = st->minoff;
        int *nb = st->nb;
        undo *log = st->log;
        size_t nlog = st->nlog, caplog = st->caplog;
        for (int k = st->adj_start[u], kend = st->adj_start[u + 1]; k < kend; k++) {
            int v = adj[k];
            nb[v]--;
            if (off[v] >= 0 || minoff[v] >= h) continue;
            if (nlog == caplog) {
                log = st->log = grow(st->P, st->log, &st->caplog, sizeof *st->log);
                caplog = st->caplog;
            }
            log[nlog++] = (undo){minoff[v], v};
            minoff[v] = h;
            if (slo[v] < alo) alo = slo[v];
            if (shi[v] > ahi) ahi = shi[v];
        }
        st->nlog = nlog;
    }
    st->work += st->adj_start[u + 1] - st->adj_start[u];
    for (int s = st->slo[u], *nd = st->bnode + st->bnode_start[u]; s < st->shi[u]; s++, nd++) {
        st->total[s] -= st->size[u];
        st->mnext[st->mprev[*nd]] = st->mnext[*nd];
        st->mprev[st->mnext[*nd]] = st->mprev[*nd];
    }
    /* section inference, the part that depends on u: the unplaced buffers of a section sit
     * above the lowest offset any of them can take, which changed only where offsets were
     * raised or u left; stop at the first buffer low enough */
    int ok = 1;
    if (alo < a) alo = a;
    if (ahi > b) ahi = b;
    /* (minoff + total <= cap, the comparisons with cap: the least sum that came out above it
     * bounds the caps above that give the same search) */
    int64_t gt = INT64_MAX;
    for (int s = alo; s < ahi && ok; s++) {
        int64_t t = st->total[s];
        if (t == 0) continue;
        int64_t room = st->cap - t;
        int w = st->witness[s];
        if (st->off[w] < 0) { /* the one found last time */
            int64_t x = st->minoff[w];
            if (x <= room) continue;
            if (x + t < gt) gt = x + t;
        }
        int head = st->mem_start[st->nsec] + s, k = st->mnext[head], seen = 0;
        int64_t least = INT64_MAX; /* of those above room */
        while (k != head && st->minoff[st->mem[k]] > room) {
            if (st->minoff[st->mem[k]] < least) least = st->minoff[st->mem[k]];
            k = st->mnext[k];
            seen++;
        }
        if (least != INT64_MAX && least + t < gt) gt = least + t;
        st->work += seen;
        ok = k != head;
        if (ok) st->witness[s] = st->mem[k];
    }
    if (gt <= st->cap_hi) st->cap_hi = gt - 1;
    int r = NOTFOUND;
    if (ok) {
        /* once placed, u no longer ties the sections it spans together */
        int split = 0;
        for (int k = st->slo[u]; k < st->shi[u] - 1; k++)
            if (--st->cuts[k] == 0) split = 1;
        /* the busiest section of [a, b) stays the busiest unless u was live in it (the others
         * only lost bytes) */
        int at = busiest_at >= st->slo[u] && busiest_at < st->shi[u] ? -1 : busiest_at;
        r = split ? solve_range(st, a, b) : search_range(st, a, b, o, st->rank[u], at);
        for (int k = st->slo[u]; k < st->shi[u] - 1; k++) st->cuts[k]++;
    }
    for (int s = st->shi[u] - 1, *nd = st->bnode + st->bnode_start[u] + (s - st->slo[u]); s >= st->slo[u]; s--, nd--) {
        st->total[s] += st->size[u];
        st->mnext[st->mprev[*nd]] = *nd;
        st->mprev[st->mnext[*nd]] = *nd;
    }
    {
        const int *adj = st->adj;
        int *nb = st->nb;
        for (int k = st->adj_start[u], kend = st->adj_start[u + 1]; k < kend; k++) nb[adj[k]]++;
    }
    while (st->nlog > mark) {
        const undo *l = &st->log[--st->nlog];
        st->minoff[l->i] = l->old;
    }
    st->off[u] = -1;
    st->unpl[u >> 6] |= (uint64_t)1 << (u & 63);
    return r;
}

/* search_range's comparisons with cap: offsets from minout on came out beyond it (offset +
 * busiest > cap). */
static void cap_seen(search *st, int64_t minout, int64_t busiest)
{
    if (minout != INT64_MAX && minout + busiest <= st->cap_hi) st->cap_hi = minout + busiest - 1;
}

/* Depth-first search over the buffers of sections [a, b) (no unplaced buffer crosses its
 * ends), placing next only buffers after (min_off, min_rank) in the canonical order. */
static int search_range(search *st, int a, int b, int64_t min_off, int min_rank, int busiest_at)
{
    int lo = st->first[a], hi = st->first[b];
    st->nodes++;
    st->total_nodes++;
    st->work += b - a;
    if (st->work > st->work_limit) return STOPPED;
    if ((st->total_nodes & 63) == 0 && mg_seconds() > st->deadline) return STOPPED;
    if (st->nodes > st->node_limit) return ABORTED;
    /* section inference, the part every placement shares: from here on buffers go at offset
     * o or higher, so a section still holding t bytes needs o + t <= cap (a placement at o
     * moves its own bytes below the section's floor, o + size, which comes to the same) */
    const int64_t *tot = st->total;
    int64_t busiest = 0;
    if (busiest_at >= a && busiest_at < b) { /* known from the parent (place) */
        busiest = tot[busiest_at];
    } else { /* four running maxima (no chain of dependent compares), then where the first is */
        int64_t b1 = 0, b2 = 0, b3 = 0;
        int s = a;
        for (; s + 4 <= b; s += 4) {
            busiest = tot[s] > busiest ? tot[s] : busiest;
            b1 = tot[s + 1] > b1 ? tot[s + 1] : b1;
            b2 = tot[s + 2] > b2 ? tot[s + 2] : b2;
            b3 = tot[s + 3] > b3 ? tot[s + 3] : b3;
        }
        for (; s < b; s++) busiest = tot[s] > busiest ? tot[s] : busiest;
        if (b1 > busiest) busiest = b1;
        if (b2 > busiest) busiest = b2;
        if (b3 > busiest) busiest = b3;
        for (busiest_at = a; busiest_at < b && tot[busiest_at] != busiest; busiest_at++) {}
    }
    int64_t max_off = st->cap - busiest;
    int64_t minout = INT64_MAX; /* (the comparisons with cap, as in place: the least offset beyond it) */
    /* one pass over the unplaced buffers of the part, in number order, through the bitmap of
     * unplaced ones (loads that do not wait on the one before, as following a list's links did:
     * resnet50's failing searches at its minimum 18% faster; and no test of every placed buffer
     * in between, whose mispredictions were a quarter of this scan). The candidates, in
     * (offset, rank) order: canonical (after the last placement), at most max_off, and below
     * min_height, since leaving a gap some unplaced buffer fits in is never needed
     * (dominance). They live on a stack shared by the whole search. */
    int64_t min_height = INT64_MAX;
    size_t base = st->ncand;
    int seen = 0;
    {
        /* (the hot loop of the search: the fields in locals, which the stores to the candidate
         * stack would otherwise make the compiler read again for every buffer) */
        const int64_t *minoff = st->minoff, *size = st->size, cap = st->cap;
        const int *rank = st->rank, *nb = st->nb;
        const uint64_t *unpl = st->unpl;
        cand *cs = st->cand;
        size_t nc = base, capc = st->capcand;
        for (int w = lo >> 6, wend = (hi - 1) >> 6; lo < hi && w <= wend; w++) {
          uint64_t y = unpl[w];
          if (w == lo >> 6) y &= ~(uint64_t)0 << (lo & 63);
          if (w == wend && hi - 64 * w < 64) y &= ((uint64_t)1 << (hi - 64 * w)) - 1;
          for (; y; y &= y - 1) {
            int u = 64 * w + __builtin_ctzll(y);
            int64_t mo = minoff[u], hgt = mo + size[u];
            seen++;
            if (hgt > cap) {
                st->ncand = base;
                cap_seen(st, minout, busiest);
                if (hgt <= st->cap_hi) st->cap_hi = hgt - 1;
                return NOTFOUND;
            }
            int before = mo < min_off || (mo == min_off && rank[u] <= min_rank);
            /* below the canonical order and nothing left that could raise it: never placeable */
            if (before && nb[u] == 0) {
                st->ncand = base;
                cap_seen(st, minout, busiest);
                return NOTFOUND;
            }
            if (hgt < min_height) min_height = hgt;
            if (before) continue;
            if (mo > max_off) { /* (mo + busiest > cap) */
                minout = mo < minout ? mo : minout;
                continue;
            }
            if (mo >= min_height) continue; /* (at or above min_height: dropped below) */
            if (nc == capc) {
                st->ncand = nc;
                cs = st->cand = grow(st->P, st->cand, &st->capcand, sizeof *st->cand);
                capc = st->capcand;
            }
            cs[nc++] = (cand){mo, rank[u], u};
          }
        }
        st->ncand = nc;
    }
    cap_seen(st, minout, busiest);
    st->work += seen;
    if (!seen) return FOUND;
    size_t keep = base;
    for (size_t k = base; k < st->ncand; k++)
        if (st->cand[k].off < min_height) st->cand[keep++] = st->cand[k];
    st->ncand = keep;
    size_t end = st->ncand;
    /* a long list is rarely read far (on resnet18_64 at 33%, 59 thousand of 13 million
     * candidates in lists over 24 long were tried; sorting them was a tenth of the search): the
     * first few tries each select the least of the rest, and only a list read further is sorted
     * (the keys are distinct, so the order tried is the same) */
    int sorted = end - base <= 24;
    if (sorted) { /* usually a handful: insertion sort, no calls */
        for (size_t k = base + 1; k < end; k++) {
            cand c = st->cand[k];
            size_t j = k;
            for (; j > base && (st->cand[j - 1].off > c.off ||
                                (st->cand[j - 1].off == c.off && st->cand[j - 1].rank > c.rank)); j--)
                st->cand[j] = st->cand[j - 1];
            st->cand[j] = c;
        }
    }
    int r = NOTFOUND;
    for (size_t k = base; k < end && r == NOTFOUND; k++) {
        if (!sorted && k - base < 4) {
            size_t least = k;
            for (size_t j = k + 1; j < end; j++)
                if (cmp_cand(&st->cand[j], &st->cand[least]) < 0) least = j;
            cand c = st->cand[k];
            st->cand[k] = st->cand[least];
            st->cand[least] = c;
        } else if (!sorted) {
            sort_cands(st->cand + k, (int)(end - k), sort_depth((int)(end - k)));
            sorted = 1;
        }
        int u = st->cand[k].u;
        r = place(st, a, b, u, busiest_at);
        /* u overlaps nothing unplaced: skipping it now would strand it below the canonical
         * order (the check above), so no other choice here can succeed */
        if (st->nb[u] == 0) break;
    }
    st->ncand = base;
    return r;
}

/* The buffer's keys under the order in use; T from the bytes still to place. */
static void order_key(const search *st, int u, rkey *key)
{
    key->i = u;
    key->tie = st->live[u];
    for (int j = 0; j < 3; j++) {
        double v = 0;
        switch (st->order[j]) {
        case 'T':
            for (int s = st->slo[u]; s < st->shi[u]; s++)
                if ((double)st->total[s] > v) v = (double)st->total[s];
            break;
        case 'W': v = st->width[u]; break;
        case 'A': v = st->width[u] * (double)st->size[u]; break;
        default: break;
        }
        key->k[j] = v;
    }
}

/* Solves the sections [a, b) part by part, splitting where no unplaced buffer spans two
 * neighbouring sections. Each part ranks its buffers afresh (as MiniMalloc does), since the
 * bytes left in its sections are not those the whole problem started with. */
static int solve_range(search *st, int a, int b)
{
    int p = a;
    for (int k = a; k < b; k++) {
        if (k + 1 < b && st->cuts[k] != 0) continue;
        int lo = st->first[p], hi = st->first[k + 1], n = 0;
        /* the part's old ranks are kept on a stack shared by the whole search */
        size_t base = st->nsaved;
        while (st->capsaved < base + (size_t)(hi - lo) || st->capkeys < (size_t)(hi - lo)) {
            if (st->capsaved < base + (size_t)(hi - lo)) st->saved = grow(st->P, st->saved, &st->capsaved, sizeof *st->saved);
            if (st->capkeys < (size_t)(hi - lo)) st->keys = grow(st->P, st->keys, &st->capkeys, sizeof *st->keys);
        }
        st->nsaved = base + (size_t)(hi - lo);
        for (int u = lo; u < hi; u++) {
            st->saved[base + (size_t)(u - lo)] = st->rank[u];
            if (st->off[u] < 0) order_key(st, u, &st->keys[n++]);
        }
        if (n > 1) sort_rkeys(st->keys, n, sort_depth(n));
        for (int j = 0; j < n; j++) st->rank[st->keys[j].i] = j;
        int r = n ? search_range(st, p, k + 1, 0, -1, -1) : FOUND;
        for (int u = lo; u < hi; u++) st->rank[u] = st->saved[base + (size_t)(u - lo)];
        st->nsaved = base;
        if (r != FOUND) return r;
        p = k + 1;
    }
    return FOUND;
}

static void search_free(search *st)
{
    pfree(st->P, st->live);
    pfree(st->P, st->size);
    pfree(st->P, st->slo);
    pfree(st->P, st->shi);
    pfree(st->P, st->width);
    pfree(st->P, st->adj_start);
    pfree(st->P, st->adj);
    pfree(st->P, st->first);
    pfree(st->P, st->mem_start);
    pfree(st->P, st->mem);
    pfree(st->P, st->mnext);
    pfree(st->P, st->mprev);
    pfree(st->P, st->bnode_start);
    pfree(st->P, st->bnode);
    pfree(st->P, st->witness);
    pfree(st->P, st->unpl);
    pfree(st->P, st->minoff);
    pfree(st->P, st->off);
    pfree(st->P, st->total);
    pfree(st->P, st->rank);
    pfree(st->P, st->nb);
    pfree(st->P, st->cuts);
    pfree(st->P, st->sol);
    pfree(st->P, st->log);
    pfree(st->P, st->cand);
    pfree(st->P, st->keys);
    pfree(st->P, st->saved);
}

/* Builds the search's tables; returns 0 (and builds nothing) when they would be too big. */
static int search_init(search *st, const live_set *ls)
{
    memset(st, 0, sizeof *st);
    st->P = ls->P;
    int m = ls->m, nsec = ls->nsec;
    /* number the buffers by first section (a counting sort), so that the buffers of a range
     * of sections are a range of numbers */
    int *first = pcal(st->P, (size_t)nsec + 1, sizeof *first);
    for (int i = 0; i < m; i++) first[ls->slo[i] + 1]++;
    for (int s = 0; s < nsec; s++) first[s + 1] += first[s];
    int *live = pal(st->P, (size_t)m * sizeof *live), *fill = pal(st->P, (size_t)(nsec + 1) * sizeof *fill);
    memcpy(fill, first, (size_t)(nsec + 1) * sizeof *fill);
    for (int i = 0; i < m; i++) live[fill[ls->slo[i]]++] = i;
    pfree(st->P, fill);
    /* overlaps: sweeping in that order, everything still live at u's first section overlaps u;
     * first only counted, to refuse problems too big to index */
    int *act = pal(st->P, (size_t)m * sizeof *act);
    int64_t nadj = 0, nmem = 0;
    int na = 0;
    for (int u = 0; u < m; u++) {
        int s = ls->slo[live[u]], k = 0;
        for (int j = 0; j < na; j++)
            if (ls->shi[live[act[j]]] > s) act[k++] = act[j];
        na = k;
        nadj += 2 * (int64_t)na;
        act[na++] = u;
        nmem += ls->shi[live[u]] - ls->slo[live[u]];
    }
    if (nadj + nmem > search_items_max) {
        pfree(st->P, first);
        pfree(st->P, live);
        pfree(st->P, act);
        return 0;
    }
    st->m = m;
    st->nsec = nsec;
    st->lower_bound = ls->lower_bound;
    st->first = first;
    st->live = live;
    st->size = pal(st->P, (size_t)m * sizeof *st->size);
    st->slo = pal(st->P, (size_t)m * sizeof *st->slo);
    st->shi = pal(st->P, (size_t)m * sizeof *st->shi);
    st->width = pal(st->P, (size_t)m * sizeof *st->width);
    for (int u = 0; u < m; u++) {
        int i = live[u];
        st->size[u] = ls->size[i];
        st->slo[u] = ls->slo[i];
        st->shi[u] = ls->shi[i];
        st->width[u] = (double)ls->up[i] - (double)ls->lo[i];
    }
    st->adj_start = pcal(st->P, (size_t)m + 1, sizeof *st->adj_start);
    st->adj = pal(st->P, (size_t)nadj * sizeof *st->adj);
    for (int pass = 0; pass < 2; pass++) { /* count, then fill */
        int *pos = pass ? pal(st->P, (size_t)m * sizeof *pos) : NULL;
        if (pass) memcpy(pos, st->adj_start, (size_t)m * sizeof *pos);
        na = 0;
        for (int u = 0; u < m; u++) {
            int k = 0;
            for (int j = 0; j < na; j++)
                if (st->shi[act[j]] > st->slo[u]) act[k++] = act[j];
            na = k;
            for (int j = 0; j < na; j++) {
                if (pass) {
                    st->adj[pos[act[j]]++] = u;
                    st->adj[pos[u]++] = act[j];
                } else {
                    st->adj_start[act[j] + 1]++;
                    st->adj_start[u + 1]++;
                }
            }
            act[na++] = u;
        }
        if (!pass)
            for (int u = 0; u < m; u++) st->adj_start[u + 1] += st->adj_start[u];
        pfree(st->P, pos);
    }
    pfree(st->P, act);
    /* the members of each section */
    st->mem_start = pcal(st->P, (size_t)nsec + 1, sizeof *st->mem_start);
    st->mem = pal(st->P, (size_t)nmem * sizeof *st->mem);
    for (int u = 0; u < m; u++)
        for (int s = st->slo[u]; s < st->shi[u]; s++) st->mem_start[s + 1]++;
    for (int s = 0; s < nsec; s++) st->mem_start[s + 1] += st->mem_start[s];
    int *mpos = pal(st->P, (size_t)(nsec + 1) * sizeof *mpos);
    memcpy(mpos, st->mem_start, (size_t)(nsec + 1) * sizeof *mpos);
    st->bnode_start = pal(st->P, (size_t)(m + 1) * sizeof *st->bnode_start);
    st->bnode = pal(st->P, (size_t)nmem * sizeof *st->bnode);
    int nb = 0;
    for (int u = 0; u < m; u++) {
        st->bnode_start[u] = nb;
        for (int s = st->slo[u]; s < st->shi[u]; s++) {
            st->bnode[nb++] = mpos[s];
            st->mem[mpos[s]++] = u;
        }
    }
    st->bnode_start[m] = nb;
    pfree(st->P, mpos);
    st->witness = pal(st->P, (size_t)(nsec + 1) * sizeof *st->witness);
    for (int s = 0; s < nsec; s++) st->witness[s] = st->mem[st->mem_start[s]];
    st->mnext = pal(st->P, (size_t)(nmem + nsec) * sizeof *st->mnext);
    st->mprev = pal(st->P, (size_t)(nmem + nsec) * sizeof *st->mprev);
    for (int s = 0; s < nsec; s++) {
        int head = (int)nmem + s, prev = head;
        for (int k = st->mem_start[s]; k < st->mem_start[s + 1]; k++) {
            st->mnext[prev] = k;
            st->mprev[k] = prev;
            prev = k;
        }
        st->mnext[prev] = head;
        st->mprev[head] = prev;
    }
    /* the state: nothing placed */
    st->minoff = pcal(st->P, (size_t)m, sizeof *st->minoff);
    st->off = pal(st->P, (size_t)m * sizeof *st->off);
    st->sol = pal(st->P, (size_t)m * sizeof *st->sol);
    /* in a caller's scratch the stacks start about as large as the plans' searches take them
     * (resnet50 at its minimum: up to ~50 candidates and ~20 log entries a buffer), so they
     * seldom move (a stack that doubled is copied); pages not used are never touched. Without
     * one they grow from nothing: sized up front, every placement of a layered DAG mapped
     * megabytes afresh (layered_n1000 at 0.8 of its peak: 15% more time). */
    if (st->P) {
        st->capcand = (size_t)m * 64 + 1024;
        st->cand = pal(st->P, st->capcand * sizeof *st->cand);
        st->caplog = (size_t)m * 24 + 1024;
        st->log = pal(st->P, st->caplog * sizeof *st->log);
        st->capsaved = (size_t)m * 24 + 1024;
        st->saved = pal(st->P, st->capsaved * sizeof *st->saved);
        st->capkeys = (size_t)m + 1;
        st->keys = pal(st->P, st->capkeys * sizeof *st->keys);
    }
    for (int u = 0; u < m; u++) st->off[u] = st->sol[u] = -1;
    st->unpl = pcal(st->P, (size_t)m / 64 + 1, sizeof *st->unpl);
    for (int u = 0; u < m; u++) st->unpl[u >> 6] |= (uint64_t)1 << (u & 63);
    st->total = pcal(st->P, (size_t)nsec + 1, sizeof *st->total);
    memcpy(st->total, ls->total, (size_t)nsec * sizeof *st->total);
    st->rank = pcal(st->P, (size_t)m, sizeof *st->rank);
    st->nb = pal(st->P, (size_t)m * sizeof *st->nb);
    for (int u = 0; u < m; u++) st->nb[u] = st->adj_start[u + 1] - st->adj_start[u];
    st->cuts = pcal(st->P, (size_t)nsec + 1, sizeof *st->cuts);
    for (int u = 0; u < m; u++) {
        st->cuts[st->slo[u]]++;
        st->cuts[st->shi[u] - 1]--;
    }
    for (int s = 1; s < nsec; s++) st->cuts[s] += st->cuts[s - 1];
    return 1;
}

/* Is there a placement within cap? FOUND (offsets in st->sol), NOTFOUND (proven: none), or
 * STOPPED. The orders take turns under a node limit that doubles every round: the effort one
 * order needs varies by orders of magnitude from instance to instance. */
static int search_fits(search *st, int64_t cap)
{
    st->cap_hi = INT64_MAX;
    if (st->lower_bound > cap) {
        st->cap_hi = st->lower_bound - 1;
        return NOTFOUND;
    }
    st->cap = cap;
    int64_t limit = 8 * (int64_t)st->m + 1; /* doubled before the first round */
    for (;;) {
        limit = limit < INT64_MAX / 2 ? 2 * limit : INT64_MAX;
        for (int h = 0; h < NSEARCH_ORDERS; h++) {
            st->order = search_orders[h];
            st->nodes = 0;
            st->node_limit = limit;
            int r = solve_range(st, 0, st->nsec);
            if (r != ABORTED) return r;
        }
    }
}

/* The arena of the search's last success, after an independent check that no two buffers
 * live at the same time overlap (-1 if they do, which would be a bug). */
static int64_t search_result(const search *st)
{
    int64_t top = 0;
    for (int u = 0; u < st->m; u++) {
        int64_t o = st->sol[u], e = o + st->size[u];
        if (o < 0) return -1;
        if (e > top) top = e;
        for (int k = st->adj_start[u]; k < st->adj_start[u + 1]; k++) {
            int v = st->adj[k];
            if (o < st->sol[v] + st->size[v] && st->sol[v] < e) return -1;
        }
    }
    return top;
}

/* ---------------------------------------------------------------------------------------- */
/* Entry points                                                                              */
/* ---------------------------------------------------------------------------------------- */

/* Compacts a placement (offsets by live_set index in best, arena top): the search's placements
 * are canonical (every buffer as low as the ones placed before it allow), but the search stops
 * at the first that meets its target, and buffers placed late often leave room below the top
 * that compaction takes back. On resnet18_64's plan at 25% (1,018 buffers) the search meets the
 * budget at 1.046 times the lower bound and compaction brings it to 1.029 in a few ms (as low as
 * 20 s of search from the `arena` command); on most placements it moves nothing. Not on dense
 * overlaps (greedy_best's rule: the lists would cost more than the search). Returns the top. */
static int64_t compact_placement(const live_set *ls, int64_t *best, int64_t top)
{
    int m = ls->m;
    overlaps ov;
    if (top <= ls->lower_bound || !overlaps_init(&ov, ls, greedy_items_max)) return top;
    if (!(m > 512 && ov.start[m] / m > m / 8)) {
        int64_t *off = pal(ls->P, (size_t)m * sizeof *off);
        gkey *order = pal(ls->P, (size_t)m * sizeof *order);
        span *tmp = pal(ls->P, (size_t)2 * (size_t)m * sizeof *tmp); /* (the second half: splitting's scratch) */
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

/* Takes the search's last success when it checks out and beats *top, compacted. */
static int try_result(const search *s, const live_set *ls, int64_t *top, int64_t *best)
{
    int64_t t = search_result(s);
    if (t < 0 || t >= *top) return 0;
    for (int u = 0; u < s->m; u++) best[s->live[u]] = s->sol[u];
    *top = compact_placement(ls, best, t);
    return 1;
}

/* One search at target with a share of the time and effort left. */
static int probe(search *s, int64_t target, double share, double end, int64_t work_limit)
{
    double t = mg_seconds();
    s->deadline = t + (end - t) * share;
    s->work_limit = work_limit == INT64_MAX ? INT64_MAX : s->work + (int64_t)((double)(work_limit - s->work) * share);
    return search_fits(s, target);
}

/* bisect: without a capacity, bisect between the lower bound and the best found when the
 * bound is not met (the command); else all the effort goes to the bound (the planner, which
 * calls this many times and mostly has plans that meet it). fallback (the planner's budget;
 * INT64_MAX: none): when the search misses the bound and the arena is still above fallback, a
 * second search with as much effort again aims at fallback, a target often far easier to meet
 * than the bound. */
static int64_t place_with_limits(mg_interval *iv, int n, const mg_arena_opts *opts, int search_max, int bisect,
                                 int compact_large, int64_t fallback, mg_arena_stats *st, mg_arena_scratch *P)
{
    mg_arena_stats stats = {.same_lo = INT64_MIN, .same_hi = INT64_MAX};
    for (int i = 0; i < n; i++) iv[i].offset = 0;
    live_set ls;
    live_set_init(&ls, iv, n, P);
    int m = ls.m;
    int64_t *best = pcal(P, (size_t)m, sizeof *best);
    int64_t top = INT64_MAX;
    /* compact_large: the command compacts a large placement it will not search: resnet18_64's in 16
     * parts, 7.93 -> 6.33% above the peak on average (26 of 4,813-7,591 buffers, up to 11.33 ->
     * 6.28%). Not the planner's: its choices are tuned to these placements, and better ones moved
     * its plans both ways (compacting every large placement, or those within 2% of the budget:
     * resnet18_64 at 1.10 times its minimum 69.76 -> 52.4 / 55.3% recomputed, but at 1.05 times
     * 63.88 -> 96.8 / 80.8%, its minimum search 4,922,432 -> 4,987,968 bytes, +0.7 s CPU at 75%);
     * the planner compacts only the near misses it rescues at the end of a solve (planner.c).
     * Not where the command searches (up to MG_ARENA_SEARCH_MAX): its bisection, started lower,
     * ended higher on bench/data/arena_large's 3,470 buffers (11.90 -> 14.53% in 10 s). */
    if (m <= MG_ARENA_GREEDY_MAX) top = greedy_best(&ls, best, m > MG_ARENA_SCAN_FROM, compact_large && m > search_max);
    if (m > MG_ARENA_SCAN_FROM && top > ls.lower_bound) {
        int64_t *scan = pal(P, (size_t)m * sizeof *scan);
        int64_t t = linear_scan(&ls, scan);
        if (t < top) {
            top = t;
            memcpy(best, scan, (size_t)m * sizeof *best);
        }
        pfree(P, scan);
    }
    stats.lower_bound = ls.lower_bound;
    stats.greedy_bytes = top;
    /* the first target: the capacity, or the lower bound when there is none or the capacity
     * is below it (then the arena is made as small as it goes) */
    int64_t cap = opts->capacity;
    int64_t goal = cap == INT64_MAX || cap < ls.lower_bound ? ls.lower_bound : cap;
    int proven_infeasible_below = 0; /* 1: nothing smaller than top fits */
    if (top > goal && m <= search_max && opts->time_limit > 0 && opts->work_limit > 0) {
        search s;
        if (search_init(&s, &ls)) {
            stats.searched = 1;
            double end = mg_seconds() + opts->time_limit;
            int64_t proven = -1; /* the largest arena proven not to fit */
            int64_t lo = goal;   /* the largest arena that failed or was given up on */
            /* half of the effort for a capacity (what is left goes to coming close when it
             * is out of reach), a quarter for the lower bound, all for the planner */
            int r;
            /* (the comparisons with fallback below and in its search bound the fallbacks that
             * give this very placement, stats.same_lo/hi) */
            int over = top > fallback, above = over && fallback > goal;
            if (!bisect && opts->work_limit != INT64_MAX) {
                if (!over) stats.same_lo = top;
                else if (!above) stats.same_hi = goal < top - 1 ? goal : top - 1;
                else stats.same_lo = goal + 1, stats.same_hi = top - 1;
            }
            if (!bisect && above && opts->work_limit != INT64_MAX) {
                /* the planner, whose budget the greedy missed: first the budget (a target far
                 * easier than the bound, and all the planner needs) with a share of the effort;
                 * only when that succeeds does the rest go to the bound. Most placements that
                 * miss the budget at first miss it whatever the effort (the bound is out of
                 * reach), and these now cost a fraction of what they did. */
                r = probe(&s, fallback, FIT_SHARE, end, opts->work_limit);
                stats.same_lo = fallback; /* (the search's range reaches up only) */
                if (s.cap_hi < stats.same_hi) stats.same_hi = s.cap_hi;
                if (r == FOUND && try_result(&s, &ls, &top, best) && top > goal && mg_seconds() < end &&
                    probe(&s, goal, 1.0, end, opts->work_limit) == FOUND)
                    try_result(&s, &ls, &top, best);
                r = STOPPED;
            } else {
                r = probe(&s, goal, !bisect ? 1.0 : goal == ls.lower_bound ? 0.25 : 0.5, end, opts->work_limit);
                if (r == FOUND) try_result(&s, &ls, &top, best);
                if (r == NOTFOUND) proven = lo;
            }
            /* bisection between what failed and what fits, each probe with half of what is
             * left */
            while (bisect && r != FOUND && top - lo > 1 && mg_seconds() < end && s.work < opts->work_limit) {
                int64_t mid = lo + (top - lo) / 2;
                r = probe(&s, mid, 0.5, end, opts->work_limit);
                if (r == FOUND) {
                    if (!try_result(&s, &ls, &top, best)) break;
                    r = STOPPED; /* go on below */
                } else {
                    lo = mid;
                    if (r == NOTFOUND) proven = mid;
                }
            }
            if (proven >= 0 && top - proven == 1) proven_infeasible_below = 1;
            stats.nodes = s.total_nodes;
            search_free(&s);
        }
    }
    for (int i = 0; i < m; i++) iv[ls.idx[i]].offset = best[i];
    stats.arena_bytes = top;
    stats.optimal = top == ls.lower_bound || proven_infeasible_below;
    pfree(P, best);
    live_set_free(&ls);
    if (st) *st = stats;
    return top;
}

int64_t mg_arena_place_ex(mg_interval *iv, int n, const mg_arena_opts *opts, mg_arena_stats *st)
{
    return place_with_limits(iv, n, opts, MG_ARENA_SEARCH_MAX, 1, 1, INT64_MAX, st, NULL);
}

int64_t mg_arena_place(mg_interval *iv, int n, int64_t capacity, double time_limit_seconds, int *optimal)
{
    mg_arena_opts o = {capacity, time_limit_seconds, INT64_MAX};
    mg_arena_stats st;
    int64_t r = mg_arena_place_ex(iv, n, &o, &st);
    if (optimal) *optimal = st.optimal;
    return r;
}

mg_status mg_arena_assign(mg_plan *p, mg_diag *d)
{
    return mg_arena_assign_within(p, INT64_MAX, d);
}

mg_status mg_arena_assign_within(mg_plan *p, int64_t capacity, mg_diag *d)
{
    return mg_arena_assign_in(p, capacity, NULL, d);
}

mg_status mg_arena_assign_in(mg_plan *p, int64_t capacity, mg_arena_scratch *P, mg_diag *d)
{
    return mg_arena_assign_same(p, capacity, P, NULL, d);
}

mg_status mg_arena_assign_same(mg_plan *p, int64_t capacity, mg_arena_scratch *P, int64_t same[2], mg_diag *d)
{
    return mg_arena_assign_effort(p, capacity, 1.0, P, same, d);
}

/* mg_arena_assign_effort and mg_arena_assign_compacted */
static void assign(mg_plan *p, int64_t capacity, double effort, int compact_large, mg_arena_scratch *P, int64_t same[2])
{
    int n = p->nbufs;
    mg_interval *iv = pal(P, (size_t)n * sizeof *iv);
    for (int i = 0; i < n; i++)
        iv[i] = (mg_interval){p->bufs[i].first, (int64_t)p->bufs[i].last + 1, p->bufs[i].bytes, 0};
    /* the effort limit is what binds (about 30 ms optimised); the clock is only a backstop */
    mg_arena_opts o = {INT64_MAX, 3.0, (int64_t)((double)plan_work_limit * effort)};
    mg_arena_stats st;
    p->workspace_bytes = place_with_limits(iv, n, &o, MG_ARENA_PLAN_SEARCH_MAX, 0, compact_large, capacity, &st, P);
    if (same) {
        same[0] = st.same_lo;
        same[1] = st.same_hi;
    }
    for (int i = 0; i < n; i++) p->bufs[i].offset = iv[i].offset;
    pfree(P, iv);
    scratch_reset(P);
    p->peak_live_bytes = mg_plan_peak_live(p);
}

mg_status mg_arena_assign_effort(mg_plan *p, int64_t capacity, double effort, mg_arena_scratch *P, int64_t same[2],
                                 mg_diag *d)
{
    assign(p, capacity, effort, 0, P, same);
    (void)d;
    return MG_OK;
}

mg_status mg_arena_assign_compacted(mg_plan *p, int64_t capacity, mg_diag *d)
{
    assign(p, capacity, 1.0, 1, NULL, NULL);
    (void)d;
    return MG_OK;
}
