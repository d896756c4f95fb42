/* sched_parts.c — a training step in parts (microbatch.c) scheduled part by part.
 *
 * Why it exists: in a step in parts the whole-step schedulers run the ops in the graph's order,
 * every part's forward pass before any part's backward pass, and recompute each part's
 * activations from what the budget let them keep across the other parts' work. That leaves the
 * first parts with nothing, and no scheduler sees that each part's backward block is one deep
 * chain: mlp_deep at its minimum, 32 parts of a 16-layer chain, recomputed 283.8% more than
 * running every op once, its first part's layers 16 times each and its last part's once or
 * twice, where the parts' own problems proved only 104% (bound_parts.c).
 *
 * The schedule built here runs each part as a block: the schedule of that part's own problem
 * (mg_part_problem: its forward ops and its backward block), solved by the caller under the
 * budget less what the step holds across the block (for a chain, the chain DP's optimum); the
 * other ops once each. Two orders are tried and the cheaper plan kept:
 *   - whole parts: each part's forward and backward ops together in one block, so a part's
 *     forward pass runs only as its own schedule chooses. What other ops read of a part (its
 *     logits, concatenated for the whole-batch loss) is held from its block to them.
 *   - backward blocks: every forward op once in the graph's order, and at each part's backward
 *     block its own schedule, which runs the part's forward pass again as it chooses. This one
 *     applies where the whole parts cannot go one after another (an op outside the parts reads
 *     a part's forward values and a part's backward ops read its result).
 * The units (ops outside the blocks, and blocks) are ordered as the graph orders their first
 * ops, as far as their dependencies allow; where the dependencies between units form a cycle (a
 * batch_norm's statistics over all parts read by every part: resnet18_64) the order has no plan.
 * A block is planned under the budget less what the step holds across it. That cap is safe but
 * can be tighter than needed, as what is held is not all live at the block's peak; where a part
 * has no plan under it, the order is planned again with every block under the budget itself
 * (optimistic), and the placement tells whether the step fits (a perceptron in 2 parts whose
 * plan at 3,025 bytes recomputes nothing in 2,944: at 2,944 this order had no plan, and the
 * step's plan recomputed 41% of a step). A value of an earlier unit that the block reads last
 * (the loss's sum carried in from the part before) is held only until that read: each order is
 * also tried with such values in the block's own problem (border_problem), under the budget less
 * the rest, and the cheaper plan kept; with them held across the whole block, mlp at its minimum
 * (16 parts) recomputed 49.79%, with them in its problem 0.10% (cnn_fmnist 32.09% and 0.003%,
 * unet_small 67.12% and 40.06%), yet neither way is always the cheaper (the transformer in 8
 * parts at 1.1 times its minimum: 80.97% with them held, 85.37% in the blocks).
 * Parts with the same problem and cap are solved once (mg_problem_hash), in every order and
 * pass. The plan is replayed (mg_pb_replay) and placed like any other, and the caller verifies
 * it and keeps it only where it is cheaper than the whole-step solve's; where it misses the
 * budget once placed, the parts' caps are lowered by the miss, and once a plan fits, raised
 * halfway back towards the caps that missed while rounds are left (the whole miss can be more
 * than the arena needs: a perceptron in 2 parts at 2,112 bytes, 128 over once placed, kept
 * 63,349 FLOPs under caps cut by 128, where a cut of 64 gives 60,613 in 2,048). */
#include "place_memo.h"
#include "plan.h"
#include "sched_variants.h"
#include "score_heap.h"

#include <stdlib.h>
#include <string.h>

/* Rounds of fitting a plan to the budget, and the least step by which the caps' cut is halved. */
enum { PARTS_FIT_ROUNDS = 4, PARTS_FIT_STEP = 64 };

typedef enum { WHOLE_PARTS, BACKWARD_BLOCKS } parts_order;

typedef struct part_sub {
    mg_problem *q;
    int *back;     /* q's index -> the step's node */
    uint64_t hash;
    int64_t held;  /* bytes the step holds across its block */
    const int *seq;/* its schedule's compute steps, in q's indices (the memo's: parts_memo) */
    int nseq;
} part_sub;

/* The parts' solves of one mg_parts_schedule, by problem (hash) and cap: the orders and their
 * passes ask the same ones again (cnn_fmnist at 25% in 4 parts: 13 solves, 5 distinct). */
typedef struct part_solved {
    uint64_t hash;
    int64_t cap;
    int *seq, nseq; /* the schedule's compute steps (NULL: no plan) */
} part_solved;

typedef struct parts_memo {
    part_solved *e;
    int n, room;
} parts_memo;

/* q's schedule under cap (hash: q's) into *seq (the memo's, kept until parts_memo_free; NULL: no
 * plan), *nseq. */
static mg_status part_solve(parts_memo *m, mg_part_solver solve, void *ctx, const mg_problem *q, uint64_t hash,
                            int64_t cap, const int **seq, int *nseq, mg_diag *d)
{
    int i = 0;
    while (i < m->n && !(m->e[i].hash == hash && m->e[i].cap == cap)) i++;
    if (i == m->n) {
        mg_plan *p = NULL;
        mg_status st = solve(ctx, q, cap, &p, d);
        if (st) {
            mg_plan_free(p);
            return st;
        }
        if (m->n == m->room) {
            m->room = m->room ? 2 * m->room : 16;
            part_solved *e = realloc(m->e, (size_t)m->room * sizeof *e);
            if (!e) abort();
            m->e = e;
        }
        part_solved *e = &m->e[m->n++];
        *e = (part_solved){hash, cap, NULL, 0};
        if (p) {
            e->seq = mg_xcalloc((size_t)p->nsteps + 1, sizeof *e->seq);
            e->nseq = mg_plan_compute_steps(p, e->seq);
            mg_plan_free(p);
        }
    }
    *seq = m->e[i].seq;
    *nseq = m->e[i].nseq;
    return MG_OK;
}

static void parts_memo_free(parts_memo *m)
{
    for (int i = 0; i < m->n; i++) free(m->e[i].seq);
    free(m->e);
}

/* The step's order of units: unit[v] the unit of target v (-1: not a target), units 0..nparts-1
 * the parts' blocks, then one unit per other target; order[] the units in turn. */
typedef struct parts_units {
    int *unit, *order, *pos, *first, n; /* first[u]: u's first op in the graph's order (a single op's
                                          unit: that op) */
} parts_units;

/* Whether target v runs in its part's block in this order (block: per part, whether it has one). */
static int in_block(const mg_problem *pr, const char *block, parts_order how, int v)
{
    int c = pr->part[v] - 1;
    return c >= 0 && block[c] && (how == WHOLE_PARTS || v >= pr->nfwd);
}

/* Orders the units: each when every unit it reads is done, the one whose first op comes first
 * in the graph among those ready. 0 where they form a cycle. */
static int order_units(const mg_problem *pr, const char *block, int parts, parts_order how, parts_units *o)
{
    int n = pr->n, nu = parts;
    o->unit = mg_xcalloc((size_t)n, sizeof *o->unit);
    for (int v = 0; v < n; v++)
        o->unit[v] = !pr->target[v] ? -1 : in_block(pr, block, how, v) ? pr->part[v] - 1 : nu++;
    o->n = nu;
    int *key = o->first = mg_xcalloc((size_t)nu, sizeof *key), *indeg = mg_xcalloc((size_t)nu, sizeof *indeg),
        *start = mg_xcalloc((size_t)nu + 1, sizeof *start), *fill = mg_xcalloc((size_t)nu, sizeof *fill);
    for (int u = 0; u < nu; u++) key[u] = n; /* (a part with no block: its unit is never used) */
    for (int v = n - 1; v >= 0; v--)
        if (o->unit[v] >= 0) key[o->unit[v]] = v;
    int nedges = 0;
    for (int v = 0; v < n; v++)
        for (int e = pr->in_start[v]; o->unit[v] >= 0 && e < pr->in_start[v + 1]; e++) {
            int a = o->unit[pr->in[e]], b = o->unit[v];
            if (a >= 0 && a != b) start[a + 1]++, indeg[b]++, nedges++;
        }
    for (int u = 0; u < nu; u++) start[u + 1] += start[u];
    int *to = mg_xcalloc((size_t)nedges, sizeof *to);
    memcpy(fill, start, (size_t)nu * sizeof *fill);
    for (int v = 0; v < n; v++)
        for (int e = pr->in_start[v]; o->unit[v] >= 0 && e < pr->in_start[v + 1]; e++) {
            int a = o->unit[pr->in[e]], b = o->unit[v];
            if (a >= 0 && a != b) to[fill[a]++] = b;
        }
    mg_score_ent *heap = mg_xcalloc((size_t)nu + 1, sizeof *heap); /* (units by their first op: no ties) */
    int nh = 0, done = 0;
    o->order = mg_xcalloc((size_t)nu, sizeof *o->order);
    o->pos = mg_xcalloc((size_t)nu, sizeof *o->pos);
    for (int u = 0; u < nu; u++)
        if (key[u] < n && !indeg[u]) mg_score_push(heap, &nh, (mg_score_ent){key[u], u, 0});
    while (nh) {
        int u = mg_score_pop(heap, &nh).node;
        o->pos[u] = done;
        o->order[done++] = u;
        for (int e = start[u]; e < start[u + 1]; e++)
            if (!--indeg[to[e]]) mg_score_push(heap, &nh, (mg_score_ent){key[to[e]], to[e], 0});
    }
    int units = 0;
    for (int u = 0; u < nu; u++) units += key[u] < n;
    free(indeg);
    free(start);
    free(fill);
    free(heap);
    free(to);
    o->n = done;
    return done == units;
}

/* The bytes the stitched schedule holds across each part's block: values computed in a unit
 * before it and read in or after it, and the block's own values read after it (a part's forward
 * values read in its block come from the block's own schedule). With `border`, a value of an
 * earlier unit that no unit after the block reads is left out (ends_in[u] = the block's part;
 * else -1): the block's own problem holds it, until its last read there (border_problem). */
static void held_across(const mg_problem *pr, part_sub *s, int parts, const parts_units *o, int border,
                        int *ends_in)
{
    int64_t *diff = mg_xcalloc((size_t)o->n + 1, sizeof *diff);
    int *last = mg_xcalloc((size_t)pr->n, sizeof *last);
    for (int u = 0; u < pr->n; u++) last[u] = -1;
    for (int v = 0; v < pr->n; v++)
        for (int e = pr->in_start[v]; o->unit[v] >= 0 && e < pr->in_start[v + 1]; e++) {
            int u = pr->in[e], b = o->unit[v];
            if (o->unit[u] < 0 || b == o->unit[u] || (b < parts && pr->part[u] == b + 1)) continue;
            if (o->pos[b] > last[u]) last[u] = o->pos[b];
        }
    for (int u = 0; u < pr->n; u++) {
        ends_in[u] = -1;
        if (o->unit[u] < 0 || !pr->bytes[u]) continue;
        int kept = pr->keep_to_end[u] || u == pr->result, first = o->pos[o->unit[u]], end = kept ? o->n - 1 : last[u];
        if (end <= first) continue;
        if (border && !kept && o->order[end] < parts) ends_in[u] = o->order[end--];
        if (end >= first) diff[first] += pr->bytes[u], diff[end + 1] -= pr->bytes[u];
    }
    int64_t run = 0;
    for (int i = 0; i < o->n; i++) {
        run += diff[i];
        if (o->order[i] < parts) s[o->order[i]].held = run;
    }
    free(diff);
    free(last);
}

/* Part c's problem q (back: q's index -> the step's node) with the values of earlier units that
 * the block reads last (ends_in) as nodes of their own ahead of it: made once (at no cost, as
 * they are made before the block) and resident from its start until their last read, as in the
 * stitched schedule. *back2: the new problem's index -> the step's node, -1 for those. NULL (and
 * *back2 NULL) where there is none: q serves. */
static mg_problem *border_problem(const mg_problem *pr, const mg_problem *q, const int *back, int c,
                                  const int *ends_in, int **back2)
{
    *back2 = NULL;
    int k = 0, nedges = q->in_start[q->n];
    int *ext = mg_xcalloc((size_t)pr->n, sizeof *ext); /* a step's node -> its new node, or -1 */
    for (int u = 0; u < pr->n; u++) ext[u] = ends_in[u] == c ? k++ : -1;
    for (int w = 0; k && w < q->n; w++)
        for (int e = pr->in_start[back[w]]; e < pr->in_start[back[w] + 1]; e++) nedges += ext[pr->in[e]] >= 0;
    if (!k) {
        free(ext);
        return NULL;
    }
    int n = q->n + k, e2 = 0;
    mg_problem *r = mg_problem_alloc(n, nedges);
    *back2 = mg_xcalloc((size_t)n, sizeof **back2);
    for (int u = 0; u < pr->n; u++)
        if (ext[u] >= 0) { /* (no inputs: in_start stays 0) */
            r->bytes[ext[u]] = pr->bytes[u];
            r->target[ext[u]] = 1;
            (*back2)[ext[u]] = -1;
        }
    for (int w = 0; w < q->n; w++) {
        int x = w + k, v = back[w];
        r->in_start[x] = e2;
        for (int e = q->in_start[w]; e < q->in_start[w + 1]; e++) r->in[e2++] = q->in[e] + k;
        for (int e = pr->in_start[v]; e < pr->in_start[v + 1]; e++)
            if (ext[pr->in[e]] >= 0) r->in[e2++] = ext[pr->in[e]];
        mg_problem_node_copy(r, x, q, w);
        (*back2)[x] = v;
    }
    r->in_start[n] = e2;
    r->nfwd = q->nfwd + k;
    r->result = q->result >= 0 ? q->result + k : -1;
    r->kind = q->kind;
    free(ext);
    return r;
}

/* The plan of the step in parts in order `how`, into *out (NULL where it has none). Each block is
 * planned under the budget less what the step holds across it, or (optimistic) under the budget
 * itself; either way less the cut the rounds make (above). */
static mg_status parts_plan(const mg_problem *pr, int64_t budget, part_sub *s, const char *block, int parts,
                            parts_order how, int border, int optimistic, mg_part_solver solve, void *ctx,
                            parts_memo *solved, mg_plan **out, mg_diag *d)
{
    *out = NULL;
    parts_units o = {0};
    mg_status st = MG_OK;
    int *seq = NULL, *ends_in = mg_xcalloc((size_t)pr->n, sizeof *ends_in);
    mg_problem **bq = mg_xcalloc((size_t)parts, sizeof *bq); /* the blocks' problems (NULL: s[c].q) */
    int **bback = mg_xcalloc((size_t)parts, sizeof *bback);
    uint64_t *bhash = mg_xcalloc((size_t)parts, sizeof *bhash);
    if (!order_units(pr, block, parts, how, &o)) goto done;
    held_across(pr, s, parts, &o, border, ends_in);
    int bordered = 0;
    for (int c = 0; c < parts; c++) {
        bhash[c] = s[c].hash;
        if (!border || !s[c].q) continue; /* (without border, ends_in is all -1: no block has any) */
        bq[c] = border_problem(pr, s[c].q, s[c].back, c, ends_in, &bback[c]);
        if (bq[c]) bhash[c] = mg_problem_hash(bq[c]), bordered++;
    }
    if (border && !bordered) goto done; /* (the same plan as without) */
    /* the caps' cut below the budget: the first rounds add what the placed plan missed it by; once
     * a plan fits, the cut is halved back towards the largest that missed, as the whole miss can
     * be more than the arena needs */
    int64_t lowered = 0, missed = -1, fitted = -1; /* (the largest cut that missed, the least that fitted) */
    for (int round = 0; round < PARTS_FIT_ROUNDS && !st; round++) {
        int64_t total = 0;
        for (int c = 0; c < parts && !st; c++) {
            s[c].seq = NULL;
            if (!s[c].q) continue;
            int64_t cap = budget - (optimistic ? 0 : s[c].held) - lowered;
            if (cap <= 0 || (st = part_solve(solved, solve, ctx, bq[c] ? bq[c] : s[c].q, bhash[c], cap, &s[c].seq,
                                             &s[c].nseq, d)) ||
                !s[c].seq)
                goto done;
            total += s[c].nseq;
        }
        free(seq);
        seq = mg_xcalloc((size_t)pr->n + (size_t)total, sizeof *seq);
        int n = 0;
        for (int i = 0; i < o.n; i++) {
            int u = o.order[i];
            if (u >= parts) seq[n++] = o.first[u];
            else
                for (int k = 0; k < s[u].nseq; k++) {
                    int v = bback[u] ? bback[u][s[u].seq[k]] : s[u].back[s[u].seq[k]];
                    if (v >= 0) seq[n++] = v; /* (-1: made before the block) */
                }
        }
        mg_plan *p = mg_pb_replay(pr, seq, n, NULL);
        if (!p) break; /* (the units are in an order the step allows: not expected) */
        if ((st = mg_place_memo_place(NULL, pr->placed, p, budget, budget, 0, 1.0, d))) {
            mg_plan_free(p);
            break;
        }
        int64_t miss = p->workspace_bytes - budget;
        if (miss <= 0) {
            fitted = lowered;
            mg_sv_keep_better(out, p);
        } else {
            missed = lowered;
            mg_plan_free(p);
        }
        if (fitted < 0) lowered += miss;
        else if (missed >= 0 && fitted - missed >= PARTS_FIT_STEP) lowered = missed + (fitted - missed) / 2;
        else break;
    }
done:
    for (int c = 0; c < parts; c++) {
        mg_problem_free(bq[c]);
        free(bback[c]);
    }
    free(bq);
    free(bback);
    free(bhash);
    free(ends_in);
    free(seq);
    free(o.unit);
    free(o.order);
    free(o.pos);
    free(o.first);
    if (st) { /* (a round after one that fitted can fail) */
        mg_plan_free(*out);
        *out = NULL;
    }
    return st;
}

/* Which parts of pr have a block (a backward target: a part without one runs its ops one by
 * one) into *block (per part; the caller frees it), the part count into *parts; returns how many
 * do. */
static int part_blocks(const mg_problem *pr, char **block, int *parts)
{
    *parts = mg_part_count(pr);
    *block = mg_xcalloc((size_t)*parts + 1, 1);
    int blocks = 0;
    for (int v = pr->nfwd; v < pr->n; v++) {
        int c = pr->part[v] - 1;
        if (c >= 0 && pr->target[v] && !(*block)[c]) {
            (*block)[c] = 1;
            blocks++;
        }
    }
    return blocks;
}

/* The blocks' problems of pr into *s (s[c].q NULL where part c has none: block). */
static void parts_subs(const mg_problem *pr, const char *block, int parts, part_sub **s)
{
    *s = mg_xcalloc((size_t)parts + 1, sizeof **s);
    int *map = mg_xcalloc((size_t)pr->n, sizeof *map);
    for (int c = 0; c < parts; c++) {
        if (!block[c]) continue;
        part_sub *b = &(*s)[c];
        b->q = mg_part_problem(pr, c, map);
        b->back = mg_xcalloc((size_t)b->q->n, sizeof *b->back);
        for (int v = 0; v < pr->n; v++)
            if (map[v] >= 0) b->back[map[v]] = v;
        b->hash = mg_problem_hash(b->q);
    }
    free(map);
}

static void parts_subs_free(part_sub *s, int parts)
{
    for (int c = 0; c < parts; c++) {
        mg_problem_free(s[c].q);
        free(s[c].back);
    }
    free(s);
}

mg_status mg_parts_schedule(const mg_problem *pr, int64_t budget, mg_part_solver solve, void *ctx, mg_plan **out,
                            mg_diag *d)
{
    *out = NULL;
    if (!pr->part || budget == INT64_MAX) return MG_OK;
    int parts;
    char *block;
    if (part_blocks(pr, &block, &parts) < 2) { /* (nothing to run one block after another) */
        free(block);
        return MG_OK;
    }
    part_sub *s;
    parts_subs(pr, block, parts, &s);
    mg_status st = MG_OK;
    parts_memo solved = {0};
    for (parts_order how = WHOLE_PARTS; how <= BACKWARD_BLOCKS && !st; how++)
        for (int border = 0; border < 2 && !st; border++) {
            if (*out && (*out)->flops_executed <= (*out)->flops_once) break; /* (nothing recomputed) */
            mg_plan *p = NULL;
            for (int optimistic = 0; optimistic < 2 && !st && !p; optimistic++)
                st = parts_plan(pr, budget, s, block, parts, how, border, optimistic, solve, ctx, &solved, &p, d);
            if (!st) mg_sv_keep_better(out, p);
        }
    if (st) {
        mg_plan_free(*out);
        *out = NULL;
    }
    parts_memo_free(&solved);
    parts_subs_free(s, parts);
    free(block);
    return st;
}

/* The targets in the order parts_plan's seq first computes them: the units in turn, a block's
 * targets in its part's own order (the node order: a part's own schedule runs its targets in
 * order, and its forward values computed before the block are not the block's targets). */
int mg_parts_orders(const mg_problem *pr, int *orders[2])
{
    if (!pr->part) return 0;
    int parts, k = 0;
    char *block;
    int blocks = part_blocks(pr, &block, &parts);
    for (parts_order how = WHOLE_PARTS; how <= BACKWARD_BLOCKS && blocks >= 2; how++) {
        parts_units o = {0};
        if (order_units(pr, block, parts, how, &o)) {
            int *ord = orders[k++] = mg_xcalloc((size_t)pr->n + 1, sizeof *ord),
                *at = mg_xcalloc((size_t)o.n + 1, sizeof *at); /* where each place's targets start */
            for (int v = 0; v < pr->n; v++)
                if (o.unit[v] >= 0) at[o.pos[o.unit[v]] + 1]++;
            for (int i = 0; i < o.n; i++) at[i + 1] += at[i];
            for (int v = 0; v < pr->n; v++)
                if (o.unit[v] >= 0) ord[at[o.pos[o.unit[v]]]++] = v;
            free(at);
        }
        free(o.unit);
        free(o.order);
        free(o.pos);
        free(o.first);
    }
    free(block);
    return k;
}
