/* place_memo.h — memos of arena placements: those that missed their budget, and every placement
 * made in one solve (place_memo.c). */
#ifndef MG_PLACE_MEMO_H
#define MG_PLACE_MEMO_H
#include "plan.h"

enum { MG_PLACE_MEMO_MAX = 48 };

typedef struct mg_place_missed {
    uint64_t h1, h2;          /* the buffers (bytes, first, last): XXH3's 128 bits */
    int nbufs;
    int64_t cls;              /* the target's class */
    int64_t same_lo, same_hi; /* the capacities that give the same placement */
    int64_t workspace, peak;  /* what placing them gave */
} mg_place_missed;

/* A fixed array, kept by its user (on the stack of a solve); zero-initialised it is empty. */
typedef struct mg_place_memo {
    mg_place_missed e[MG_PLACE_MEMO_MAX];
    int n, next;
} mg_place_memo;

/* The placements made for one problem, whatever they gave, with their offsets: shared by the
 * threads of a solve (the rungs, the checkpoint classes' solves and the minimum search place the
 * very same schedules again: resnet18_64 at 5.2 MB in 16 parts, 1,509 of its 2,386 placements,
 * two thirds of their time). Bounded (the oldest entries make room); thread-safe. */
typedef struct mg_place_cache mg_place_cache;
mg_place_cache *mg_place_cache_new(void);
void mg_place_cache_free(mg_place_cache *pc);
/* How many placements pc gave again (not placed anew). */
int64_t mg_place_cache_hits(mg_place_cache *pc);

/* Places p within `within` (the budget, or INT64_MAX for the live peak) with `effort` times the
 * arena's usual search effort (mg_arena_assign_effort), unless mm (NULL: no memo) has these
 * buffers missing the budget for the same target (any_target: for any target): then p takes the
 * figures placed then, and its offsets are left as they were. A placement that misses the
 * budget is remembered. Where pc (NULL: none) holds these buffers placed with the same effort at
 * a capacity that gives the same placement, p takes that placement, offsets and all; else what
 * is placed goes into pc. On an error the caller frees p. */
mg_status mg_place_memo_place(mg_place_memo *mm, mg_place_cache *pc, mg_plan *p, int64_t budget, int64_t within,
                              int any_target, double effort, mg_diag *d);

/* A 64-bit hash of p's buffers (bytes, first and last step of each, in order): two schedules
 * with the same hash place alike. */
uint64_t mg_plan_buffers_hash(const mg_plan *p);

#endif
