/* sched_parts.c — a training step in parts (microbatch.c) scheduled part by part.
 *
 * Why it exists: in a step in parts, every part's forward pass runs before any part's backward
 * pass (the loss reads every part's logits), and the whole-step schedulers then recompute each
 * part's activations from what the budget let them keep across the other parts' work. That
 * leaves the first parts with nothing, and no scheduler sees that each part's backward block is
 * one deep chain: mlp_deep at its minimum, 32 parts of a 16-layer chain, recomputed 283.8% more
 * than running every op once, its first part's layers 16 times each and its last part's once
 * or twice, where the parts' own problems proved only 104% (bound_parts.c).
 *
 * The schedule built here: every op outside the parts' backward blocks once, in order (the
 * forward pass keeps nothing of a part past its last forward read); at each part's backward
 * block, the schedule of that part's own problem (mg_part_problem: its forward ops and its
 * backward block) solved by the caller under the budget less what the step holds across the
 * block, so the part's forward pass runs again inside its block as that schedule chooses (for a
 * chain, the chain DP's optimum). That costs one forward pass of each part more than the
 * parts' own optimum, and the caller keeps it only where it is cheaper than the whole-step
 * solve's plan. Parts with the same problem and cap are solved once (mg_problem_hash).
 *
 * It applies where each part's backward ops are contiguous in the step's order; otherwise (a
 * batch_norm's backward statistics interleave the parts: resnet18_64) there is no such plan.
 * The plan is replayed (mg_pb_replay) and placed like any other, and the caller verifies it;
 * where it misses the budget once placed, the parts' caps are lowered by the miss. */
#include "place_memo.h"
#include "plan.h"

#include <stdlib.h>
#include <string.h>

enum { PARTS_FIT_ROUNDS = 4 };

typedef struct part_sub {
    mg_problem *q;
    int *back;     /* q's index -> the step's node */
    uint64_t hash;
    int from;      /* the first and last of its backward ops in the step's order (-1: none) */
    int to;
    int64_t held;  /* bytes the step holds across its block */
    int *seq, nseq;/* its schedule's compute steps, in q's indices */
} part_sub;

/* Where node v runs in the stitched order: its index, or its part's block's first op. */
static int pos_of(const mg_problem *pr, const part_sub *s, int v)
{
    int c = pr->part[v] - 1;
    return c >= 0 && v >= pr->nfwd && s[c].from >= 0 ? s[c].from : v;
}

/* The bytes the stitched schedule holds across each part's block: values computed before it
 * and read after it starts by an op that does not recompute them (a part's forward values
 * are read in its block from the block's own recomputation), and the block's values read after
 * it ends. */
static void held_across(const mg_problem *pr, part_sub *s, int parts)
{
    int *last = malloc((size_t)pr->n * sizeof *last);
    if (!last) abort();
    for (int u = 0; u < pr->n; u++) last[u] = pr->keep_to_end[u] || u == pr->result ? pr->n : -1;
    for (int v = 0; v < pr->n; v++)
        for (int e = pr->in_start[v]; e < pr->in_start[v + 1]; e++) {
            int u = pr->in[e];
            if (pr->part[u] > 0 && pr->part[u] == pr->part[v] && v >= pr->nfwd && s[pr->part[u] - 1].from >= 0)
                continue; /* (read inside its part's block) */
            int p = pos_of(pr, s, v);
            if (p > last[u]) last[u] = p;
        }
    for (int c = 0; c < parts; c++) {
        if (s[c].from < 0) continue;
        for (int u = 0; u < pr->n; u++) {
            if (!pr->bytes[u] || last[u] < s[c].from) continue;
            int in_block = pr->part[u] == c + 1 && u >= pr->nfwd;
            if (in_block ? last[u] > s[c].from : pos_of(pr, s, u) < s[c].from) s[c].held += pr->bytes[u];
        }
    }
    free(last);
}

mg_status mg_parts_schedule(const mg_problem *pr, int64_t budget, mg_part_solver solve, void *ctx, mg_plan **out,
                            mg_diag *d)
{
    *out = NULL;
    if (!pr->part || budget == INT64_MAX) return MG_OK;
    int parts = 0;
    for (int v = 0; v < pr->n; v++)
        if (pr->part[v] > parts) parts = pr->part[v];
    if (parts < 2) return MG_OK;
    part_sub *s = calloc((size_t)parts, sizeof *s);
    int *map = malloc((size_t)pr->n * sizeof *map);
    if (!s || !map) abort();
    mg_status st = MG_OK;
    int ok = 1, *seq = NULL;
    for (int c = 0; c < parts; c++) s[c].from = s[c].to = -1;
    for (int v = pr->nfwd; v < pr->n; v++) {
        int c = pr->part[v] - 1;
        if (c < 0 || !pr->target[v]) continue;
        if (s[c].from < 0) s[c].from = v;
        s[c].to = v;
    }
    /* each block contiguous: no other target between its first and its last op */
    for (int c = 0; c < parts && ok; c++)
        for (int v = s[c].from; v >= 0 && v <= s[c].to && ok; v++)
            if (pr->target[v] && pr->part[v] != c + 1) ok = 0;
    int blocks = 0;
    for (int c = 0; c < parts && ok; c++) {
        if (s[c].from < 0) continue;
        blocks++;
        s[c].q = mg_part_problem(pr, c, map);
        s[c].back = malloc((size_t)s[c].q->n * sizeof *s[c].back);
        if (!s[c].back) abort();
        for (int v = 0; v < pr->n; v++)
            if (map[v] >= 0) s[c].back[map[v]] = v;
        s[c].hash = mg_problem_hash(s[c].q);
    }
    if (!ok || blocks < 2) goto done;
    held_across(pr, s, parts);
    int64_t lowered = 0; /* what earlier rounds missed the budget by, once placed */
    for (int round = 0; round < PARTS_FIT_ROUNDS && !st; round++) {
        int64_t total = 0;
        for (int c = 0; c < parts && !st; c++) {
            free(s[c].seq);
            s[c].seq = NULL;
            if (!s[c].q) continue;
            int64_t cap = budget - s[c].held - lowered;
            int same = 0;
            while (same < c && !(s[same].q && s[same].seq && s[same].hash == s[c].hash &&
                                 s[same].held == s[c].held))
                same++;
            if (same < c) {
                s[c].seq = malloc((size_t)s[same].nseq * sizeof *s[c].seq);
                if (!s[c].seq) abort();
                memcpy(s[c].seq, s[same].seq, (size_t)s[same].nseq * sizeof *s[c].seq);
                s[c].nseq = s[same].nseq;
            } else {
                mg_plan *p = NULL;
                if (cap <= 0 || (st = solve(ctx, s[c].q, cap, &p, d)) || !p) {
                    mg_plan_free(p);
                    goto done;
                }
                s[c].seq = malloc(((size_t)p->nsteps + 1) * sizeof *s[c].seq);
                if (!s[c].seq) abort();
                s[c].nseq = mg_plan_compute_steps(p, s[c].seq);
                mg_plan_free(p);
            }
            total += s[c].nseq;
        }
        free(seq);
        seq = malloc(((size_t)pr->n + (size_t)total) * sizeof *seq);
        if (!seq) abort();
        int n = 0;
        for (int v = 0; v < pr->n; v++) {
            int c = pr->part[v] - 1;
            if (c >= 0 && v >= pr->nfwd && s[c].q) {
                if (v == s[c].from)
                    for (int i = 0; i < s[c].nseq; i++) seq[n++] = s[c].back[s[c].seq[i]];
                continue;
            }
            if (pr->target[v]) seq[n++] = v;
        }
        mg_plan *p = mg_pb_replay(pr, seq, n, NULL);
        if (!p) break; /* a block reads what runs after it: not a step this applies to */
        if ((st = mg_place_memo_place(NULL, p, budget, budget, 0, 1.0, d))) {
            mg_plan_free(p);
            break;
        }
        if (p->workspace_bytes <= budget) {
            *out = p;
            break;
        }
        lowered += p->workspace_bytes - budget;
        mg_plan_free(p);
    }
done:
    free(seq);
    for (int c = 0; c < parts; c++) {
        mg_problem_free(s[c].q);
        free(s[c].back);
        free(s[c].seq);
    }
    free(s);
    free(map);
    return st;
}
