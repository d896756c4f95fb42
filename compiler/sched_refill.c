/* sched_refill.c — keeps in the arena's holes the values a placed plan recomputes.
 *
 * Why it exists: where the arena cannot pack a plan's buffers, its workspace is above the peak
 * of live bytes, and the bytes of those holes are paid for but hold nothing (resnet18_64 in 16
 * parts at its minimum: 4,922,432 bytes for a peak of 4,720,704, every placement of its
 * schedules 4-20% above the peak). Meanwhile the schedule drops values and computes them again.
 * A value whose address range stays free from its last read to its recomputation's last read
 * can simply stay there; or, when the range its recomputation was placed in is free from the
 * value's first computation on, its first life can be moved there; or to the lowest range below
 * the workspace's top that is free all that time. Either way the recomputation
 * is not run, nor any recomputation only it read, and the readers of the recomputed instance
 * read the kept one. Every other buffer keeps its offset (lifetimes only shrink, apart from the
 * one extended into free bytes), so the placement stays valid, the workspace does not grow, the
 * plan executes fewer FLOPs and its live bytes rise into the holes.
 *
 * One pass over the steps in order tries each recomputation against the instance before it (as
 * kept so far): first whether the live bytes leave room for it at all, then the ranges. Then
 * the recomputations nobody reads any more are removed, back to front, and the plan is rebuilt
 * by replaying its steps (lifetimes, buffer ids, the places steps read). The rounds repeat while
 * a round keeps something, as removed steps free more bytes (at most REFILL_ROUNDS): first
 * without moving a value to a third range, then with (a value moved early can stand where two
 * later would have stayed: resnet18_64 at 33%, 9.6% recomputed with the third range from the
 * start, 8.95% this way, 10.3% before). Deterministic: it depends on the plan and nothing else.
 * resnet18_64 at its minimum: 130.4% -> 100.0% recomputed, workspace / peak live 1.043 ->
 * 1.0004. */
#include "plan.h"

#include <stdlib.h>
#include <string.h>

/* REFILL_WORK: the buffers the range checks may look at, per buffer of the plan: a bound on the
 * pass's time (deterministic; resnet18_64 at its minimum, 6,937 buffers, takes 16M, ~0.27 s) */
enum { REFILL_ROUNDS = 3, REFILL_WORK = 4096 };

typedef struct refill {
    mg_plan *p;
    int bk, nbk;        /* buckets of bk steps: buffers live in each (a buffer may appear twice) */
    int **bucket, *blen, *bcap;
    char *dead;         /* per buffer: no longer in the plan */
    struct span *spans; /* lowest_free's scratch */
    int cap, stamp;
    int *seen;          /* per buffer: the lowest_free call that last took it */
    int64_t *live;      /* per step: the bytes of the buffers live then (as kept so far) */
} refill;

static void bucket_add(refill *r, int b, int from, int to)
{
    for (int k = from / r->bk; k <= to / r->bk && k < r->nbk; k++) {
        if (r->blen[k] == r->bcap[k]) {
            r->bcap[k] = r->bcap[k] ? 2 * r->bcap[k] : 16;
            r->bucket[k] = realloc(r->bucket[k], (size_t)r->bcap[k] * sizeof **r->bucket);
            if (!r->bucket[k]) abort();
        }
        r->bucket[k][r->blen[k]++] = b;
    }
}

typedef struct span { int64_t lo, hi; } span;
static int span_cmp(const void *a, const void *b)
{
    const span *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo ? 1 : (x->hi > y->hi) - (x->hi < y->hi);
}

/* The lowest offset where `bytes` bytes below top are free at every step of [t0, t1] (no buffer
 * but x and y there), or -1; *work counts the buffers looked at. */
static int64_t lowest_free(refill *r, int64_t bytes, int t0, int t1, int x, int y, int64_t top, int64_t *work)
{
    int n = 0;
    r->stamp++;
    for (int k = t0 / r->bk; k <= t1 / r->bk && k < r->nbk; k++)
        for (int i = 0; i < r->blen[k] && ++*work; i++) {
            int b = r->bucket[k][i];
            const mg_buffer *u = &r->p->bufs[b];
            if (r->seen[b] == r->stamp) continue;
            r->seen[b] = r->stamp;
            if (b == x || b == y || r->dead[b] || u->bytes <= 0 || u->first > t1 || u->last < t0) continue;
            if (n == r->cap) {
                r->cap = r->cap ? 2 * r->cap : 256;
                r->spans = realloc(r->spans, (size_t)r->cap * sizeof *r->spans);
                if (!r->spans) abort();
            }
            r->spans[n++] = (span){u->offset, u->offset + u->bytes};
        }
    qsort(r->spans, (size_t)n, sizeof *r->spans, span_cmp);
    int64_t at = 0;
    for (int i = 0; i < n && r->spans[i].lo < at + bytes; i++)
        if (r->spans[i].hi > at) at = r->spans[i].hi;
    return at + bytes <= top ? at : -1;
}

/* 1 when no buffer of the plan but x and y holds a byte of [off, off + bytes) at a step of
 * [t0, t1]. */
static int range_free(const refill *r, int64_t off, int64_t bytes, int t0, int t1, int x, int y, int64_t *work)
{
    for (int k = t0 / r->bk; k <= t1 / r->bk && k < r->nbk; k++)
        for (int i = 0; i < r->blen[k] && ++*work; i++) {
            int b = r->bucket[k][i];
            const mg_buffer *u = &r->p->bufs[b];
            if (b == x || b == y || r->dead[b] || u->bytes <= 0) continue;
            if (u->first <= t1 && u->last >= t0 && u->offset < off + bytes && off < u->offset + u->bytes) return 0;
        }
    return 1;
}

static int ws_value(const mg_problem *pr, int v) { return pr->target[v] && pr->home[v].mem == MG_MEM_NONE; }

/* The inputs of step s as the verifier reads them: the node's inputs for a computation, the
 * copied value for a copy, none for a zero fill. */
static int step_inputs(const mg_problem *pr, const mg_step *sp, int *first)
{
    int v = sp->node;
    *first = pr->in_start[v];
    return sp->kind == MG_STEP_COMPUTE ? pr->in_start[v + 1] - pr->in_start[v] : sp->kind == MG_STEP_COPY ? 1 : 0;
}

/* One round; returns how many recomputations it removed. */
static int refill_round(mg_plan *p, const mg_problem *pr, int relocate, int64_t *work, int64_t work_limit)
{
    int ns = p->nsteps, nb = p->nbufs, n = pr->n, removed = 0;
    refill r = {.p = p};
    r.bk = ns / 512 > 32 ? ns / 512 : 32;
    r.nbk = ns / r.bk + 1;
    r.bucket = mg_xcalloc((size_t)r.nbk, sizeof *r.bucket);
    r.blen = mg_xcalloc((size_t)r.nbk, sizeof *r.blen);
    r.bcap = mg_xcalloc((size_t)r.nbk, sizeof *r.bcap);
    r.dead = mg_xcalloc((size_t)nb + 1, 1);
    r.seen = mg_xcalloc((size_t)nb + 1, sizeof *r.seen);
    char *dead_step = mg_xcalloc((size_t)ns + 1, 1);
    int *holder = malloc(((size_t)n + 1) * sizeof *holder), *cur = malloc(((size_t)n + 1) * sizeof *cur);
    int *cnt = mg_xcalloc((size_t)nb + 1, sizeof *cnt), *newid = malloc(((size_t)nb + 1) * sizeof *newid);
    int *rstart = malloc(((size_t)ns + 1) * sizeof *rstart), *reads = NULL, nreads = 0, capreads = 0;
    if (!holder || !cur || !newid || !rstart) abort();
    r.live = mg_xcalloc((size_t)ns + 1, sizeof *r.live);
    for (int b = 0; b < nb; b++)
        if (p->bufs[b].bytes > 0) {
            bucket_add(&r, b, p->bufs[b].first, p->bufs[b].last);
            r.live[p->bufs[b].first] += p->bufs[b].bytes;
            r.live[p->bufs[b].last + 1] -= p->bufs[b].bytes;
        }
    for (int s = 1; s <= ns; s++) r.live[s] += r.live[s - 1];
    for (int v = 0; v < n; v++) holder[v] = -1;

    /* the merges: each recomputation against the instance kept before it */
    for (int s = 0; s < ns; s++) {
        const mg_step *sp = &p->steps[s];
        if (sp->kind != MG_STEP_COMPUTE || sp->out.mem != MG_MEM_WS) continue;
        int v = sp->node, bj = sp->out.index, bi = holder[v];
        holder[v] = bj;
        if (!sp->recompute || bi < 0 || bj < 0 || bj >= nb || *work >= work_limit) continue;
        mg_buffer *x = &p->bufs[bi], *y = &p->bufs[bj];
        if (x->last >= y->first || x->bytes <= 0) continue;
        /* first what the live bytes allow: kept, the value adds its bytes from its last read to
         * the recomputation, and then takes the place of the recomputed instance */
        int fits = 1, t = x->last + 1;
        for (; t <= y->last && fits; t++)
            fits = r.live[t] - (t >= y->first ? y->bytes : 0) + x->bytes <= p->workspace_bytes;
        *work += t - x->last; /* (the steps looked at count as work too) */
        if (!fits) continue;
        int keep = 0;
        if (x->bytes >= y->bytes && range_free(&r, x->offset, x->bytes, x->last + 1, y->last, bi, bj, work)) {
            keep = 1; /* it stays where it is */
        } else if (y->bytes >= x->bytes && range_free(&r, y->offset, x->bytes, x->first, y->last, bi, bj, work)) {
            keep = 1; /* its first life moves to where the recomputation was placed */
            x->offset = y->offset;
        } else if (relocate) { /* or to the lowest range free from its first computation on */
            int64_t at = lowest_free(&r, x->bytes, x->first, y->last, bi, bj, p->workspace_bytes, work);
            if (at >= 0) {
                keep = 1;
                x->offset = at;
            }
        }
        if (!keep) continue;
        bucket_add(&r, bi, x->last + 1, y->last);
        for (int t = x->last + 1; t <= y->last; t++) r.live[t] += x->bytes - (t >= y->first ? y->bytes : 0);
        x->last = y->last;
        r.dead[bj] = 1;
        if (sp->scratch >= 0) {
            r.dead[sp->scratch] = 1;
            r.live[s] -= p->bufs[sp->scratch].bytes;
        }
        dead_step[s] = 1;
        holder[v] = bi;
        removed++;
    }

    if (removed) {
        /* the buffers each remaining step reads (a replay: the instance current at the step) */
        for (int v = 0; v < n; v++) cur[v] = -1;
        for (int s = 0; s < ns; s++) {
            rstart[s] = nreads;
            const mg_step *sp = &p->steps[s];
            if (dead_step[s]) continue;
            int a, nin = step_inputs(pr, sp, &a);
            for (int k = 0; k < nin; k++) {
                int u = sp->kind == MG_STEP_COPY ? sp->node : pr->in[a + k];
                if (!ws_value(pr, u) || cur[u] < 0) continue;
                if (nreads == capreads) {
                    capreads = capreads ? 2 * capreads : 1024;
                    reads = realloc(reads, (size_t)capreads * sizeof *reads);
                    if (!reads) abort();
                }
                reads[nreads++] = cur[u];
                cnt[cur[u]]++;
            }
            if (sp->kind == MG_STEP_COMPUTE && sp->out.mem == MG_MEM_WS) cur[sp->node] = sp->out.index;
        }
        rstart[ns] = nreads;
        int result_buf = p->result >= 0 && p->result_at.mem == MG_MEM_WS ? cur[p->result] : -1;
        /* recomputations nobody reads any more, back to front (a chain goes in one pass) */
        for (int s = ns - 1; s >= 0; s--) {
            const mg_step *sp = &p->steps[s];
            if (dead_step[s] || sp->kind != MG_STEP_COMPUTE || !sp->recompute || sp->out.mem != MG_MEM_WS) continue;
            int b = sp->out.index;
            if (cnt[b] > 0 || b == result_buf) continue;
            dead_step[s] = 1;
            r.dead[b] = 1;
            if (sp->scratch >= 0) r.dead[sp->scratch] = 1;
            for (int i = rstart[s]; i < rstart[s + 1]; i++) cnt[reads[i]]--;
        }
        /* the rebuild: steps and buffers compacted, lifetimes and places from a replay */
        int nb2 = 0, ns2 = 0;
        for (int b = 0; b < nb; b++) newid[b] = r.dead[b] ? -1 : nb2++;
        for (int v = 0; v < n; v++) cur[v] = -1;
        double flops = 0;
        for (int s = 0; s < ns; s++) {
            if (dead_step[s]) continue;
            mg_step st = p->steps[s];
            int t = ns2++, a, nin = step_inputs(pr, &st, &a);
            for (int k = 0; k < nin; k++) {
                int u = st.kind == MG_STEP_COPY ? st.node : pr->in[a + k];
                if (!ws_value(pr, u) || cur[u] < 0) continue;
                p->bufs[cur[u]].last = t;
                if (k < MG_MAX_INPUTS) st.in[k] = (mg_place){MG_MEM_WS, newid[cur[u]], 0};
            }
            if (st.scratch >= 0) {
                p->bufs[st.scratch].first = p->bufs[st.scratch].last = t;
                st.scratch = newid[st.scratch];
            }
            if (st.kind == MG_STEP_COMPUTE) {
                flops += pr->cost[st.node];
                if (st.out.mem == MG_MEM_WS) {
                    int b = st.out.index;
                    p->bufs[b].first = p->bufs[b].last = t;
                    cur[st.node] = b;
                    st.out.index = newid[b];
                }
            }
            p->steps[t] = st;
        }
        if (p->result >= 0 && p->result_at.mem == MG_MEM_WS && cur[p->result] >= 0) {
            p->bufs[cur[p->result]].last = ns2 - 1;
            p->result_at.index = newid[cur[p->result]];
        }
        int64_t top = 0;
        for (int b = 0; b < nb; b++) {
            if (newid[b] < 0) continue;
            mg_buffer u = p->bufs[b];
            p->bufs[newid[b]] = u;
            if (u.offset + u.bytes > top) top = u.offset + u.bytes;
        }
        p->nsteps = ns2;
        p->nbufs = nb2;
        p->flops_executed = flops;
        p->workspace_bytes = top;
        p->peak_live_bytes = mg_plan_peak_live(p);
    }
    for (int k = 0; k < r.nbk; k++) free(r.bucket[k]);
    free(r.bucket);
    free(r.blen);
    free(r.bcap);
    free(r.dead);
    free(r.spans);
    free(r.seen);
    free(r.live);
    free(dead_step);
    free(holder);
    free(cur);
    free(cnt);
    free(newid);
    free(rstart);
    free(reads);
    return removed;
}

void mg_plan_refill(mg_plan *p, const mg_problem *pr)
{
    if (!p || p->flops_executed <= p->flops_once) return; /* nothing recomputed */
    int64_t work = 0, limit = (int64_t)REFILL_WORK * p->nbufs;
    for (int relocate = 0; relocate < 2; relocate++)
        for (int round = 0; round < REFILL_ROUNDS && refill_round(p, pr, relocate, &work, limit) > 0; round++) {
        }
}
