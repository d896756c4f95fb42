/* arena.h — the static arena allocator on plain intervals, and the reader of interval files.
 *
 * Why it exists: placing buffers in one arena is a problem of its own (dynamic storage
 * allocation), used by the planner through mg_arena_assign (plan.h) and on published
 * instances (MiniMalloc's CSV files) by `memgrad arena`. Keeping it on plain intervals lets
 * both use the same code and lets tests check it without building plans. */
#ifndef MG_ARENA_H
#define MG_ARENA_H
#include "ir.h"

#include <stddef.h>
#include <stdint.h>

/* One buffer: live on [lower, upper), `size` bytes (>= 0). An interval with size 0 or
 * upper <= lower is never live and gets offset 0. */
typedef struct mg_interval {
    int64_t lower, upper; /* live on [lower, upper) */
    int64_t size;
    int64_t offset;       /* out */
} mg_interval;

/* Places every interval (no two that overlap in time overlap in address). capacity: the
 * arena size to aim for (INT64_MAX: none, minimise). Returns the arena size reached (max
 * offset+size); fills *optimal (may be NULL): 1 when the result is proven minimal — equal to
 * the max-live lower bound, or the search exhausted every smaller size — else 0.
 * The greedy placements run first; the exact search (MiniMalloc-style branch and bound) runs
 * only when they miss the target, for at most time_limit_seconds (<= 0: no search). */
int64_t mg_arena_place(mg_interval *iv, int n, int64_t capacity, double time_limit_seconds, int *optimal);

/* The same with every knob and figure. */
typedef struct mg_arena_opts {
    int64_t capacity;   /* INT64_MAX: none */
    double time_limit;  /* seconds of search (wall clock); <= 0: no search; INFINITY: no clock */
    int64_t work_limit; /* deterministic cap on search effort (scanned items); INT64_MAX: none.
                           The planner uses this instead of the clock so that plans do not
                           depend on the machine's speed. */
} mg_arena_opts;

/* The exact search (arena_search.c) places at most this many buffers: it recurses once per
 * placement. Above it the greedy placements stand, unproven unless at the lower bound. */
enum { MG_ARENA_SEARCH_MAX = 4000 };

typedef struct mg_arena_stats {
    int64_t lower_bound; /* max over time of the live bytes */
    int64_t arena_bytes; /* max offset+size */
    int64_t greedy_bytes;/* the best greedy placement, before any search */
    int optimal;         /* as for mg_arena_place */
    int searched;        /* 1 when the exact search ran */
    int64_t nodes;       /* search nodes visited */
    /* the planner's placements (a capacity that falls back, plan.h's mg_arena_assign_same): every
     * capacity in [same_lo, same_hi] gives this very placement */
    int64_t same_lo, same_hi;
} mg_arena_stats;

int64_t mg_arena_place_ex(mg_interval *iv, int n, const mg_arena_opts *opts, mg_arena_stats *st);

/* Max over time of the bytes live (the bound no placement can beat). */
int64_t mg_arena_lower_bound(const mg_interval *iv, int n);

/* arena_csv.c: a buffer file `id,lower,upper,size` (header line required; ids any distinct
 * integers; upper > lower; size >= 0). Errors name the line (d->loc.line; d->loc.file is the
 * name given, which the caller keeps alive). */
typedef struct mg_arena_csv {
    int n;
    int64_t *ids;     /* n */
    mg_interval *iv;  /* n, offsets 0 */
} mg_arena_csv;

mg_status mg_arena_csv_parse(const char *text, size_t len, const char *file, mg_arena_csv *out, mg_diag *d);
mg_status mg_arena_csv_read(const char *path, mg_arena_csv *out, mg_diag *d);
void mg_arena_csv_free(mg_arena_csv *c);
#endif
