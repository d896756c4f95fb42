/* plan_scratch.c — larger kernel blocks where a placed plan has room for them. A graph split into
 * k parts gives its convolutions and flat matrix products 1/k of their scratch (microbatch.c), so
 * that the smallest budgets can be met; but smaller blocks run slower (resnet18_64's convolutions
 * at a part's batch of 2 under a cap of 1/8: up to 3.8 times the time; its step in 8 parts at 33%
 * of its store-all took 1.31 times the store-all step's time for 4.6% more FLOPs), while at most
 * steps of such a plan the arena has room to spare beside the step's operands. So once the plan
 * is chosen and placed (mg_plan_split), each capped step's scratch grows to the largest cap (none
 * first, then its own times 2^j) whose scratch fits a gap of the arena free during that step, and
 * moves there, keeping the step's live bytes within the plan's peak: neither the workspace nor
 * the peak of live bytes changes, and the step keeps its cap (mg_step.scratch_cap) for the
 * backend. The kernels give the same bits with any blocks (tests/test_conv.c, test_gemm.c), so
 * the results do not change either. (Tried: the whole plan placed again with the larger scratch,
 * as many steps as a bisection over 8 placements fits: 41 more of resnet18_64's 289 capped steps
 * at 33%, the same step time, 0.3 s more planning.) */
#include "plan.h"

#include <stdlib.h>

typedef struct span {
    int64_t lo, hi;
} span;

static int cmp_span(const void *a, const void *b)
{
    const span *x = a, *y = b;
    return (x->lo > y->lo) - (x->lo < y->lo);
}

/* The lowest offset of a gap of at least `bytes` below top among spans sorted by start, or -1. */
static int64_t gap_for(const span *s, int n, int64_t bytes, int64_t top)
{
    int64_t o = 0;
    for (int i = 0; i < n; i++) {
        if (s[i].lo >= o + bytes) return o;
        if (s[i].hi > o) o = s[i].hi;
    }
    return o + bytes <= top ? o : -1;
}

enum { MAX_DOUBLINGS = 6 }; /* caps tried: none, then the node's own times 2^6 ... 2 */

/* The caps a capped step may take instead of its node's own (own > 0), largest blocks first: none,
 * then own * 2^j while that needs less than none does. Returns how many. */
static int larger_caps(const mg_graph *g, int node, int64_t own, int64_t *caps)
{
    int64_t full = mg_node_scratch_bytes_cap(g, node, 0);
    int nc = 0;
    caps[nc++] = MG_CAP_NONE;
    for (int k = MAX_DOUBLINGS; k >= 1; k--)
        if (own <= (INT64_MAX >> k) && mg_node_scratch_bytes_cap(g, node, own << k) < full) caps[nc++] = own << k;
    return nc;
}

/* The cap of step s's node when the step runs a capped kernel with scratch, else 0. */
static int64_t own_cap(const mg_plan *p, const mg_graph *g, int s)
{
    const mg_step *st = &p->steps[s];
    return st->kind == MG_STEP_COMPUTE && st->scratch >= 0 ? mg_node_scratch_cap(g, st->node) : 0;
}

void mg_plan_widen_scratch(mg_plan *p, const mg_graph *g)
{
    if (!p || !g) return;
    int any = 0;
    for (int s = 0; s < p->nsteps && !any; s++) any = own_cap(p, g, s) > 0;
    if (!any) return;
    int nb = p->nbufs, T = p->nsteps;
    /* buffers by first step (a counting sort), and the live bytes of every step */
    int *from = mg_xcalloc((size_t)T + 2, sizeof *from), *byfirst = mg_xcalloc((size_t)nb + 1, sizeof *byfirst);
    int64_t *live = mg_xcalloc((size_t)T + 1, sizeof *live);
    for (int b = 0; b < nb; b++) {
        from[p->bufs[b].first + 1]++;
        live[p->bufs[b].first] += p->bufs[b].bytes;
        live[p->bufs[b].last + 1] -= p->bufs[b].bytes;
    }
    for (int s = 0; s < T; s++) {
        from[s + 1] += from[s];
        live[s + 1] += live[s];
    }
    for (int b = 0; b < nb; b++) byfirst[from[p->bufs[b].first]++] = b; /* (from[s]: now the end of step s's run) */
    int *active = mg_xcalloc((size_t)nb + 1, sizeof *active), na = 0, next = 0;
    span *sp = mg_xcalloc((size_t)nb + 1, sizeof *sp);
    for (int s = 0; s < T; s++) {
        int j2 = 0;
        for (int j = 0; j < na; j++)
            if (p->bufs[active[j]].last >= s) active[j2++] = active[j];
        na = j2;
        while (next < nb && p->bufs[byfirst[next]].first == s) active[na++] = byfirst[next++];
        mg_step *st = &p->steps[s];
        int64_t own = own_cap(p, g, s);
        mg_buffer *sc = own > 0 ? &p->bufs[st->scratch] : NULL;
        if (!sc || sc->offset + sc->bytes == p->workspace_bytes) continue; /* (moved, it could leave the top empty) */
        int64_t caps[MAX_DOUBLINGS + 1];
        int nc = larger_caps(g, st->node, own, caps), n = 0;
        for (int j = 0; j < na; j++) {
            const mg_buffer *o = &p->bufs[active[j]];
            if (active[j] != st->scratch) sp[n++] = (span){o->offset, o->offset + o->bytes};
        }
        qsort(sp, (size_t)n, sizeof *sp, cmp_span);
        for (int c = 0; c < nc; c++) {
            int64_t bytes = mg_node_scratch_bytes_cap(g, st->node, caps[c]); /* (MG_CAP_NONE: whole blocks) */
            if (bytes <= sc->bytes || live[s] - sc->bytes + bytes > p->peak_live_bytes) continue;
            int64_t at = gap_for(sp, n, bytes, p->workspace_bytes);
            if (at < 0) continue;
            sc->offset = at;
            sc->bytes = bytes;
            st->scratch_cap = caps[c];
            break;
        }
    }
    free(from);
    free(byfirst);
    free(live);
    free(active);
    free(sp);
}
