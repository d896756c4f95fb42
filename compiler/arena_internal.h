/* arena_internal.h — what the arena's three files share, and nothing else: the driver (arena.c)
 * places with the greedy placements (arena_greedy.c) and, where they miss the target, the exact
 * search (arena_search.c). Here are the calls of the scratch allocator every table of a
 * placement is cut from, the live buffers and their sections (the sweep all three start from),
 * the candidate key both compaction and the search sort, the sort they share, and the search's
 * state, which the driver keeps on its stack and reads. Only arena*.c include it; arena.h and
 * plan.h are the public interface. What the compiler inlined when the three were one file
 * (pfree, the key's comparison, sort_depth) is static inline here; mg_arena_pal and
 * mg_arena_pcal were not inlined then and are not now. */
#ifndef MG_ARENA_INTERNAL_H
#define MG_ARENA_INTERNAL_H
#include "arena.h"
#include "plan.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------- */
/* The scratch allocator                                                                      */
/* ---------------------------------------------------------------------------------------- */

/* The scratch (struct mg_arena_scratch, arena.c): n bytes, and count * size zeroed, from P
 * (NULL: malloc), given back with pfree. */
void *mg_arena_pal(mg_arena_scratch *P, size_t n);
void *mg_arena_pcal(mg_arena_scratch *P, size_t count, size_t size);

static inline void pfree(mg_arena_scratch *P, void *p)
{
    if (!P) free(p); /* (in a scratch: given back all at once, scratch_reset) */
}

/* ---------------------------------------------------------------------------------------- */
/* Sections: a sweep over time (arena_greedy.c)                                               */
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

/* The live buffers of iv[0, n) and their sections, tables from P (NULL: malloc). */
void mg_arena_live_set_init(live_set *ls, const mg_interval *iv, int n, mg_arena_scratch *P);
void mg_arena_live_set_free(live_set *ls);

/* ---------------------------------------------------------------------------------------- */
/* The sort and the key compaction and the search share                                      */
/* ---------------------------------------------------------------------------------------- */

/* qsort with the comparison inline (the keys sorted are distinct, so any sort gives the same
 * order): a quicksort on the median of three, insertion sort on short runs, and libc's qsort
 * where the pivots keep coming out badly. Sorting is a large share of the placement's time.
 * One definition for every key type (gkey, int and cand in arena_greedy.c; cand and rkey in
 * arena_search.c): each file instantiates it for the keys it sorts. */
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

static inline int sort_depth(int n)
{
    int d = 8;
    while (n > 1) {
        n /= 2;
        d += 2;
    }
    return d;
}

/* ---------------------------------------------------------------------------------------- */
/* The greedy placements and compaction (arena_greedy.c)                                      */
/* ---------------------------------------------------------------------------------------- */

/* The best of the greedy placements; offsets by live_set index in best; returns the arena
 * (INT64_MAX: declined, decline_quadratic). */
int64_t mg_arena_greedy_best(const live_set *ls, int64_t *best, int decline_quadratic, int compact_large);
/* The linear scan in time order, for plans too large for the greedy orders. */
int64_t mg_arena_linear_scan(const live_set *ls, int64_t *off);
/* A placement of arena top (offsets by live_set index in best) compacted; returns the top. */
int64_t mg_arena_compact_placement(const live_set *ls, int64_t *best, int64_t top);

/* ---------------------------------------------------------------------------------------- */
/* The exact search (arena_search.c)                                                          */
/* ---------------------------------------------------------------------------------------- */

enum { FOUND, NOTFOUND, STOPPED /* time or effort spent */, ABORTED /* this order's node limit */ };

typedef struct undo undo;
typedef struct rkey rkey;

/* The search's tables and state. The driver keeps one on its stack and reads cap_hi, work,
 * total_nodes, and a success's offsets (sol, numbered by first section: live[u] is the buffer's
 * live_set index). */
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

/* Builds the search's tables; returns 0 (and builds nothing) when they would be too big. */
int mg_arena_search_init(search *st, const live_set *ls);
void mg_arena_search_free(search *st);
/* One search at target with a share of the time and effort left: FOUND, NOTFOUND or STOPPED. */
int mg_arena_probe(search *s, int64_t target, double share, double end, int64_t work_limit);
/* The arena of the search's last success, checked (-1: two buffers overlap, a bug). */
int64_t mg_arena_search_result(const search *st);
#endif
