/* arena_dump.c — the memgrad driver with every arena placement the planner asks for written out
 * as a MiniMalloc CSV (`id,lower,upper,size`, what `memgrad arena FILE.csv` and arena_bench read).
 *
 * Why it exists: the arena's placements of large plans (resnet18_64 and mlp_deep in 16–32
 * micro-batch parts, 2,000–10,000 buffers) decide whether a schedule fits its budget, and they
 * are made deep inside the planner's search; this makes them instances one can place again,
 * time and compare. It is memgrad's own main linked with `--wrap` on the four entry points of
 * arena.c (bench/CMakeLists.txt), so the planner runs exactly as in `memgrad plan`.
 *
 * Usage: run `build/bench/arena_dump plan MODEL.mg --budget B --no-cache` in a directory holding
 * a directory `arena_dump/` (nothing is written without it). Each distinct placement of at least
 * 1,000 buffers becomes arena_dump/NNNN.csv, and a line of arena_dump/index.tsv says: the file,
 * the buffers, the capacity asked for (-1: none), the lower bound (peak of live bytes) and the
 * arena the placement reached. */
#include "plan.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <xxhash.h>

enum { MIN_BUFS = 1000, MAX_SEEN = 100000 };

/* A bench tool's process-wide record of what it wrote (the planner places on two threads). */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t seen[MAX_SEEN];
static int nseen, nfile;

static uint64_t plan_hash(const mg_plan *p)
{
    XXH64_state_t *s = XXH64_createState();
    XXH64_reset(s, 0);
    for (int i = 0; i < p->nbufs; i++) {
        int64_t r[3] = {p->bufs[i].first, p->bufs[i].last, p->bufs[i].bytes};
        XXH64_update(s, r, sizeof r);
    }
    uint64_t h = XXH64_digest(s);
    XXH64_freeState(s);
    return h;
}

static void dump(const mg_plan *p, int64_t capacity)
{
    if (p->nbufs < MIN_BUFS) return;
    uint64_t h = plan_hash(p);
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nseen; i++)
        if (seen[i] == h) {
            pthread_mutex_unlock(&lock);
            return;
        }
    if (nseen < MAX_SEEN) seen[nseen++] = h;
    char name[64];
    snprintf(name, sizeof name, "arena_dump/%04d.csv", nfile);
    FILE *f = fopen(name, "w");
    if (f) {
        nfile++;
        fprintf(f, "id,lower,upper,size\n");
        int k = 0;
        for (int i = 0; i < p->nbufs; i++)
            if (p->bufs[i].bytes > 0) /* (never live otherwise) */
                fprintf(f, "%d,%d,%d,%lld\n", k++, p->bufs[i].first, p->bufs[i].last + 1, (long long)p->bufs[i].bytes);
        fclose(f);
        FILE *ix = fopen("arena_dump/index.tsv", "a");
        if (ix) {
            fprintf(ix, "%s\t%d\t%lld\t%lld\t%lld\n", name, k, (long long)(capacity == INT64_MAX ? -1 : capacity),
                    (long long)p->peak_live_bytes, (long long)p->workspace_bytes);
            fclose(ix);
        }
    }
    pthread_mutex_unlock(&lock);
}

mg_status __real_mg_arena_assign(mg_plan *p, mg_diag *d);
mg_status __real_mg_arena_assign_within(mg_plan *p, int64_t capacity, mg_diag *d);
mg_status __real_mg_arena_assign_in(mg_plan *p, int64_t capacity, mg_arena_scratch *P, mg_diag *d);
mg_status __real_mg_arena_assign_same(mg_plan *p, int64_t capacity, mg_arena_scratch *P, int64_t same[2],
                                      mg_diag *d);

mg_status __real_mg_arena_assign_effort(mg_plan *p, int64_t capacity, double effort, mg_arena_scratch *P,
                                        int64_t same[2], mg_diag *d);

mg_status __wrap_mg_arena_assign(mg_plan *p, mg_diag *d)
{
    mg_status s = __real_mg_arena_assign(p, d);
    dump(p, INT64_MAX);
    return s;
}

mg_status __wrap_mg_arena_assign_within(mg_plan *p, int64_t capacity, mg_diag *d)
{
    mg_status s = __real_mg_arena_assign_within(p, capacity, d);
    dump(p, capacity);
    return s;
}

mg_status __wrap_mg_arena_assign_in(mg_plan *p, int64_t capacity, mg_arena_scratch *P, mg_diag *d)
{
    mg_status s = __real_mg_arena_assign_in(p, capacity, P, d);
    dump(p, capacity);
    return s;
}

mg_status __wrap_mg_arena_assign_same(mg_plan *p, int64_t capacity, mg_arena_scratch *P, int64_t same[2], mg_diag *d)
{
    mg_status s = __real_mg_arena_assign_same(p, capacity, P, same, d);
    dump(p, capacity);
    return s;
}

mg_status __wrap_mg_arena_assign_effort(mg_plan *p, int64_t capacity, double effort, mg_arena_scratch *P,
                                        int64_t same[2], mg_diag *d)
{
    mg_status s = __real_mg_arena_assign_effort(p, capacity, effort, P, same, d);
    dump(p, capacity);
    return s;
}
