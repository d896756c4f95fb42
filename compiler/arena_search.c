/* arena_search.c — the arena's exact search: a depth-first branch and bound in the manner of
 * MiniMalloc (Moffitt, ASPLOS 2023), which the driver (arena.c) runs where the greedy placements
 * (arena_greedy.c) miss the target (the capacity asked for, else the lower bound). A file of its
 * own because it is a pass of its own: its tables (sections' members, the candidate and undo
 * stacks) and its recursion share nothing with the greedy's but the live buffers and the
 * candidates' key (arena_internal.h).
 *
 * Time is cut into "sections" (the maximal sets of buffers live together). Buffers are placed
 * one at a time, each at its lowest feasible offset (above every placed buffer it overlaps), in
 * nondecreasing (offset, rank) order: "canonical" solutions, each reached once, and some optimal
 * solution is among them. Pruning:
 *   - dominance: no placement at or above the lowest top any unplaced buffer could reach (it
 *     would leave a gap that buffer fits in);
 *   - section inference: later placements are at offset o or higher, so every section still
 *     holding t bytes needs o + t <= target; and its unplaced buffers are stacked above the
 *     lowest offset any of them can take (checked where that changed);
 *   - a buffer below the canonical order that nothing unplaced overlaps any more can never be
 *     placed; and when the buffer just tried overlaps nothing unplaced, no other choice at that
 *     node can do better (MiniMalloc's "hatless" rule).
 * When placed buffers split time into independent parts, each part is solved on its own
 * (dynamic decomposition), its buffers ranked afresh by the bytes left in their sections. Three
 * static orders take turns under a node limit that doubles every round (restarts: the effort
 * one order needs varies by orders of magnitude between instances). The driver sets each
 * search's target and share of the limits (mg_arena_probe), bisects or falls back, and takes
 * the placements it finds (mg_arena_search_result). */
#include "arena_internal.h"
#include "clock.h"

static const int64_t search_items_max = 30000000; /* overlap + section entries the search may index */

struct undo { /* a lowest feasible offset before a placement raised it */
    int64_t old;
    int i;
};

/* A static order: a buffer's keys, compared larger first, then by input position. */
struct rkey {
    double k[3];
    int i, tie;
};

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
MG_ARENA_SORT(sort_cands, cand, cmp_cand)

/* The orders tried round robin, in MiniMalloc's letters: T the bytes still to place in the
 * busiest section the buffer is in, W its lifetime, A its area (bytes x lifetime). */
static const char *const search_orders[] = {"TWA", "TAW", "WAT"};
enum { NSEARCH_ORDERS = sizeof search_orders / sizeof search_orders[0] };

/* Doubles a stack's capacity; returns the moved array. */
static void *grow(mg_arena_scratch *P, void *p, size_t *cap, size_t elem)
{
    size_t was = *cap;
    *cap = *cap ? 2 * *cap : 1024;
    if (P) {
        void *q = mg_arena_pal(P, *cap * elem);
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

void mg_arena_search_free(search *st)
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
int mg_arena_search_init(search *st, const live_set *ls)
{
    memset(st, 0, sizeof *st);
    st->P = ls->P;
    int m = ls->m, nsec = ls->nsec;
    /* number the buffers by first section (a counting sort), so that the buffers of a range
     * of sections are a range of numbers */
    int *first = mg_arena_pcal(st->P, (size_t)nsec + 1, sizeof *first);
    for (int i = 0; i < m; i++) first[ls->slo[i] + 1]++;
    for (int s = 0; s < nsec; s++) first[s + 1] += first[s];
    int *live = mg_arena_pal(st->P, (size_t)m * sizeof *live);
    int *fill = mg_arena_pal(st->P, (size_t)(nsec + 1) * sizeof *fill);
    memcpy(fill, first, (size_t)(nsec + 1) * sizeof *fill);
    for (int i = 0; i < m; i++) live[fill[ls->slo[i]]++] = i;
    pfree(st->P, fill);
    /* overlaps: sweeping in that order, everything still live at u's first section overlaps u;
     * first only counted, to refuse problems too big to index */
    int *act = mg_arena_pal(st->P, (size_t)m * sizeof *act);
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
    st->size = mg_arena_pal(st->P, (size_t)m * sizeof *st->size);
    st->slo = mg_arena_pal(st->P, (size_t)m * sizeof *st->slo);
    st->shi = mg_arena_pal(st->P, (size_t)m * sizeof *st->shi);
    st->width = mg_arena_pal(st->P, (size_t)m * sizeof *st->width);
    for (int u = 0; u < m; u++) {
        int i = live[u];
        st->size[u] = ls->size[i];
        st->slo[u] = ls->slo[i];
        st->shi[u] = ls->shi[i];
        st->width[u] = (double)ls->up[i] - (double)ls->lo[i];
    }
    st->adj_start = mg_arena_pcal(st->P, (size_t)m + 1, sizeof *st->adj_start);
    st->adj = mg_arena_pal(st->P, (size_t)nadj * sizeof *st->adj);
    for (int pass = 0; pass < 2; pass++) { /* count, then fill */
        int *pos = pass ? mg_arena_pal(st->P, (size_t)m * sizeof *pos) : NULL;
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
    st->mem_start = mg_arena_pcal(st->P, (size_t)nsec + 1, sizeof *st->mem_start);
    st->mem = mg_arena_pal(st->P, (size_t)nmem * sizeof *st->mem);
    for (int u = 0; u < m; u++)
        for (int s = st->slo[u]; s < st->shi[u]; s++) st->mem_start[s + 1]++;
    for (int s = 0; s < nsec; s++) st->mem_start[s + 1] += st->mem_start[s];
    int *mpos = mg_arena_pal(st->P, (size_t)(nsec + 1) * sizeof *mpos);
    memcpy(mpos, st->mem_start, (size_t)(nsec + 1) * sizeof *mpos);
    st->bnode_start = mg_arena_pal(st->P, (size_t)(m + 1) * sizeof *st->bnode_start);
    st->bnode = mg_arena_pal(st->P, (size_t)nmem * sizeof *st->bnode);
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
    st->witness = mg_arena_pal(st->P, (size_t)(nsec + 1) * sizeof *st->witness);
    for (int s = 0; s < nsec; s++) st->witness[s] = st->mem[st->mem_start[s]];
    st->mnext = mg_arena_pal(st->P, (size_t)(nmem + nsec) * sizeof *st->mnext);
    st->mprev = mg_arena_pal(st->P, (size_t)(nmem + nsec) * sizeof *st->mprev);
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
    st->minoff = mg_arena_pcal(st->P, (size_t)m, sizeof *st->minoff);
    st->off = mg_arena_pal(st->P, (size_t)m * sizeof *st->off);
    st->sol = mg_arena_pal(st->P, (size_t)m * sizeof *st->sol);
    /* in a caller's scratch the stacks start about as large as the plans' searches take them
     * (resnet50 at its minimum: up to ~50 candidates and ~20 log entries a buffer), so they
     * seldom move (a stack that doubled is copied); pages not used are never touched. Without
     * one they grow from nothing: sized up front, every placement of a layered DAG mapped
     * megabytes afresh (layered_n1000 at 0.8 of its peak: 15% more time). */
    if (st->P) {
        st->capcand = (size_t)m * 64 + 1024;
        st->cand = mg_arena_pal(st->P, st->capcand * sizeof *st->cand);
        st->caplog = (size_t)m * 24 + 1024;
        st->log = mg_arena_pal(st->P, st->caplog * sizeof *st->log);
        st->capsaved = (size_t)m * 24 + 1024;
        st->saved = mg_arena_pal(st->P, st->capsaved * sizeof *st->saved);
        st->capkeys = (size_t)m + 1;
        st->keys = mg_arena_pal(st->P, st->capkeys * sizeof *st->keys);
    }
    for (int u = 0; u < m; u++) st->off[u] = st->sol[u] = -1;
    st->unpl = mg_arena_pcal(st->P, (size_t)m / 64 + 1, sizeof *st->unpl);
    for (int u = 0; u < m; u++) st->unpl[u >> 6] |= (uint64_t)1 << (u & 63);
    st->total = mg_arena_pcal(st->P, (size_t)nsec + 1, sizeof *st->total);
    memcpy(st->total, ls->total, (size_t)nsec * sizeof *st->total);
    st->rank = mg_arena_pcal(st->P, (size_t)m, sizeof *st->rank);
    st->nb = mg_arena_pal(st->P, (size_t)m * sizeof *st->nb);
    for (int u = 0; u < m; u++) st->nb[u] = st->adj_start[u + 1] - st->adj_start[u];
    st->cuts = mg_arena_pcal(st->P, (size_t)nsec + 1, sizeof *st->cuts);
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
int64_t mg_arena_search_result(const search *st)
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

/* One search at target with a share of the time and effort left. */
int mg_arena_probe(search *s, int64_t target, double share, double end, int64_t work_limit)
{
    double t = mg_seconds();
    s->deadline = t + (end - t) * share;
    s->work_limit = work_limit == INT64_MAX ? INT64_MAX : s->work + (int64_t)((double)(work_limit - s->work) * share);
    return search_fits(s, target);
}
