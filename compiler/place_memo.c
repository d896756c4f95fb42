/* place_memo.c — placements that missed, so that a schedule is not placed twice to miss twice,
 * and every placement made in one solve, so that a schedule is not placed twice at all.
 *
 * Why it exists: near the minimum feasible budget the eviction policies often make the very
 * same schedule, the planner's solve aims a schedule that missed at the budget again, and the
 * minimum search's probes and descent place the same schedules at budgets a few MB apart
 * (planner.c); a placement that misses is the dearest thing the planner does (the arena's
 * search spends its whole effort before it gives up).
 *
 * A placement (arena.c) depends only on the buffers, in order, and on its target: the capacity,
 * or the live peak when the capacity is below it or absent. Every offset and arena top it
 * compares with the target is a sum of buffer sizes, so a multiple of their gcd g: targets in
 * the same class (the same multiple of g, or strictly between the same two) give the very same
 * placement. So does any capacity the arena reports as giving the same placement
 * (mg_arena_assign_effort's `same`: its comparisons with the capacity all come out the same),
 * often a range of many classes: the minimum search's probes place the same schedules again and
 * again at budgets a few MB apart (resnet50 at its minimum: 8 of its 20 placements).
 * Entries are kept by XXH3's 128-bit hash of the buffers (no copy); the oldest makes room when
 * the memo is full.
 *
 * The solves of one problem also place the very same schedules over and over, fitting or not:
 * the rungs near the minimum, the solves with each class of the parts' checkpoints kept
 * (planner.c) and the minimum search make many of the same schedules. A cache of one solve
 * (solve_below's, shared by its threads) keeps each placement with its offsets and its range of
 * capacities, and gives it again to the same buffers placed with the same effort at a capacity
 * in that range: the very placement the arena would make. resnet18_64 at 5.2 MB (16 parts):
 * 1,509 of its 2,386 placements, two thirds of their time. */
#include "place_memo.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

typedef struct miss_key {
    uint64_t h1, h2;
    int64_t cls;
} miss_key;

static XXH128_hash_t buffers_hash(const mg_plan *p)
{
    int64_t *f = malloc(((size_t)p->nbufs * 3 + 1) * sizeof *f);
    if (!f) abort();
    for (int b = 0; b < p->nbufs; b++) {
        f[3 * b] = p->bufs[b].bytes;
        f[3 * b + 1] = p->bufs[b].first;
        f[3 * b + 2] = p->bufs[b].last;
    }
    XXH128_hash_t h = XXH3_128bits(f, (size_t)p->nbufs * 3 * sizeof *f);
    free(f);
    return h;
}

uint64_t mg_plan_buffers_hash(const mg_plan *p)
{
    return buffers_hash(p).low64;
}

/* The key of placing p's buffers within cap (INT64_MAX: no capacity). */
static miss_key placement_key(const mg_plan *p, int64_t cap)
{
    XXH128_hash_t h = buffers_hash(p);
    miss_key k = {h.low64, h.high64, 0};
    uint64_t g = 0;
    int64_t *delta = calloc((size_t)p->nsteps + 2, sizeof *delta), live = 0, peak = 0;
    if (!delta) abort();
    for (int b = 0; b < p->nbufs; b++) {
        const mg_buffer *u = &p->bufs[b];
        if (u->bytes > 0) g = (uint64_t)mg_gcd64((int64_t)g, u->bytes);
        if (u->bytes > 0 && u->last >= u->first && u->first >= 0 && u->last < p->nsteps) {
            delta[u->first] += u->bytes;
            delta[u->last + 1] -= u->bytes;
        }
    }
    for (int s = 0; s < p->nsteps; s++) {
        live += delta[s];
        if (live > peak) peak = live;
    }
    free(delta);
    int64_t t = cap == INT64_MAX || cap < peak ? peak : cap; /* what the arena aims at */
    k.cls = g ? 2 * (t / (int64_t)g) + (t % (int64_t)g != 0) : t;
    return k;
}

/* The entry for key k of a plan of nbufs buffers placed within capacity `within`, or NULL;
 * any_target: for the same buffers at whatever target (the descent's budgets only go down, so
 * what missed one misses the next). */
static const mg_place_missed *missed_find(const mg_place_memo *mm, miss_key k, int nbufs, int64_t within,
                                          int any_target)
{
    for (int i = 0; mm && i < mm->n; i++) {
        const mg_place_missed *e = &mm->e[i];
        if (e->h1 == k.h1 && e->h2 == k.h2 && e->nbufs == nbufs &&
            (any_target || e->cls == k.cls || (e->same_lo <= within && within <= e->same_hi)))
            return e;
    }
    return NULL;
}

static void missed_add(mg_place_memo *mm, const mg_plan *p, miss_key k, const int64_t same[2])
{
    if (!mm) return;
    int i = mm->n < MG_PLACE_MEMO_MAX ? mm->n++ : mm->next++ % MG_PLACE_MEMO_MAX;
    mm->e[i] = (mg_place_missed){k.h1, k.h2, p->nbufs, k.cls, same[0], same[1], p->workspace_bytes, p->peak_live_bytes};
}

/* ---------------------------------------------------------------------------------------- */
/* Every placement of a problem                                                                */
/* ---------------------------------------------------------------------------------------- */

/* At most this many entries and bytes of offsets (resnet18_64 at 5.2 MB in 16 parts: 877
 * distinct placements of about 4,300 buffers, 30 MB) */
enum { PLACE_CACHE_MAX = 1024 };
static const size_t place_cache_bytes = (size_t)32 << 20;

typedef struct place_entry {
    uint64_t h1, h2;
    int nbufs;
    double effort;
    int64_t same_lo, same_hi; /* the capacities that give this placement */
    int64_t workspace, peak;
    int64_t *offset;          /* per buffer */
} place_entry;

struct mg_place_cache {
    pthread_mutex_t mu;
    place_entry e[PLACE_CACHE_MAX];
    int n;        /* entries, oldest first */
    size_t bytes; /* of their offsets */
    int64_t hits;
};

mg_place_cache *mg_place_cache_new(void)
{
    mg_place_cache *pc = calloc(1, sizeof *pc);
    if (!pc || pthread_mutex_init(&pc->mu, NULL)) abort();
    return pc;
}

void mg_place_cache_free(mg_place_cache *pc)
{
    if (!pc) return;
    for (int i = 0; i < pc->n; i++) free(pc->e[i].offset);
    if (pthread_mutex_destroy(&pc->mu)) abort();
    free(pc);
}

int64_t mg_place_cache_hits(mg_place_cache *pc)
{
    if (pthread_mutex_lock(&pc->mu)) abort();
    int64_t h = pc->hits;
    if (pthread_mutex_unlock(&pc->mu)) abort();
    return h;
}

static int cache_matches(const place_entry *e, miss_key k, int nbufs, double effort, int64_t within)
{
    return e->h1 == k.h1 && e->h2 == k.h2 && e->nbufs == nbufs && e->effort == effort && e->same_lo <= within &&
           within <= e->same_hi;
}

/* p placed as in pc, and that placement's range of capacities in same; 0 where pc has none */
static int cache_take(mg_place_cache *pc, miss_key k, mg_plan *p, double effort, int64_t within, int64_t same[2])
{
    if (pthread_mutex_lock(&pc->mu)) abort();
    const place_entry *e = NULL;
    for (int i = 0; i < pc->n && !e; i++)
        if (cache_matches(&pc->e[i], k, p->nbufs, effort, within)) e = &pc->e[i];
    if (e) {
        for (int b = 0; b < p->nbufs; b++) p->bufs[b].offset = e->offset[b];
        p->workspace_bytes = e->workspace;
        p->peak_live_bytes = e->peak;
        same[0] = e->same_lo;
        same[1] = e->same_hi;
        pc->hits++;
    }
    if (pthread_mutex_unlock(&pc->mu)) abort();
    return e != NULL;
}

static void cache_put(mg_place_cache *pc, miss_key k, const mg_plan *p, double effort, const int64_t same[2])
{
    size_t need = (size_t)p->nbufs * sizeof(int64_t);
    if (need > place_cache_bytes / 4) return;
    int64_t *offset = malloc(need + 1);
    if (!offset) abort();
    for (int b = 0; b < p->nbufs; b++) offset[b] = p->bufs[b].offset;
    if (pthread_mutex_lock(&pc->mu)) abort();
    int have = 0; /* (another thread may have placed the same meanwhile) */
    for (int i = 0; i < pc->n && !have; i++) have = cache_matches(&pc->e[i], k, p->nbufs, effort, same[0]);
    while (!have && pc->n > 0 && (pc->n == PLACE_CACHE_MAX || pc->bytes + need > place_cache_bytes)) {
        /* the oldest makes room (entries in order of age) */
        pc->bytes -= (size_t)pc->e[0].nbufs * sizeof(int64_t);
        free(pc->e[0].offset);
        memmove(pc->e, pc->e + 1, (size_t)--pc->n * sizeof *pc->e);
    }
    if (!have) {
        pc->e[pc->n++] = (place_entry){k.h1, k.h2, p->nbufs, effort, same[0], same[1], p->workspace_bytes,
                                       p->peak_live_bytes, offset};
        pc->bytes += need;
        offset = NULL;
    }
    if (pthread_mutex_unlock(&pc->mu)) abort();
    free(offset);
}

mg_status mg_place_memo_place(mg_place_memo *mm, mg_place_cache *pc, mg_plan *p, int64_t budget, int64_t within,
                              int any_target, double effort, mg_diag *d)
{
    miss_key k = mm || pc ? placement_key(p, within) : (miss_key){0, 0, 0};
    const mg_place_missed *e = mm ? missed_find(mm, k, p->nbufs, within, any_target) : NULL;
    if (e && e->workspace > budget) { /* placed before: it missed */
        p->workspace_bytes = e->workspace;
        p->peak_live_bytes = e->peak;
        return MG_OK;
    }
    int64_t same[2];
    if (!pc || !cache_take(pc, k, p, effort, within, same)) {
        if (mg_arena_assign_effort(p, within, effort, NULL, same, d)) return MG_ERR;
        if (pc) cache_put(pc, k, p, effort, same);
    }
    if (p->workspace_bytes > budget) missed_add(mm, p, k, same);
    return MG_OK;
}
