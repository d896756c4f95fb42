/* sched_chain.c — optimal checkpointing for problems whose forward part is a chain of stages,
 * by dynamic programming over segments (Beaumont, Herrmann, Pallez, Shilova 2019, "Optimal
 * checkpointing for heterogeneous chains"; Gruslys et al. 2016), adapted to memgrad's memory
 * model. The eviction scheduler is only good on chains and the exact search only reaches small
 * ones; this is the method `auto` uses to be optimal on deep chains (MLPs, VGG) and on chains of
 * blocks between articulation values.
 *
 * Stages. The forward targets, in order, are cut after every position where exactly one forward
 * value computed so far is still read by a later forward op, and that value was computed in the
 * stage that ends there: stage k computes a_k from a_{k-1}. The backward targets, in order, must
 * fall into blocks B_L, ..., B_1 where B_k reads forward values of stage k and a_{k-1} only;
 * otherwise the problem is not a chain and this method gives no plan.
 *
 * Schedules (Rotor's persistent schedules). To run the backward of stages s..t holding a_{s-1}:
 * either run stage s keeping what B_s reads ("all"), solve s+1..t, then run B_s; or run stages
 * s..s'-1 keeping only a_{s'-1} ("checkpoint"), solve s'..t, drop a_{s'-1}, then solve s..s'-1.
 * Memory is counted in slots (a common divisor of the byte sizes when it is fine enough, else a
 * rounded-up unit): a stage's pass, its backward block and the gradient values crossing between
 * blocks are simulated once to give their peaks, and the DP keeps every step under the cap. The
 * schedule is then replayed with the plan builder; the arena and the verifier check the plan as
 * they do every other. Backward values are computed once; only forward values are recomputed. */
#include "plan.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct mg_chain {
    const mg_problem *pr;
    int L;                 /* stages 1..L */
    int *fv, nf;           /* forward targets in order */
    int *stage_start;      /* stage k is fv[stage_start[k] .. stage_start[k+1]) (k = 1..L) */
    int *a;                /* a[k]: the value stage k hands on (-1 for the last stage); a[0] = -1 */
    int *bv, nb;           /* backward targets in order */
    int *bstage;           /* per backward position: its stage */
    int *bstart;           /* B_k is bv[bstart[k] .. bstart[k-1]) ... stored as [k]: first, [k]: end below */
    int *bend;
    int *stage_of;         /* per node: stage of a forward target (0: none) */
    char *keep;            /* per node: a forward value B of its stage reads (not a[k]) */
    char *need[4];         /* per pass mode and node: recomputed in such a pass */
    int *blast;            /* per node: last backward position reading it (backward values) */
    /* per stage, bytes */
    char *IA;              /* per stage: B_k reads a_{k-1} */
    int64_t *A, *K, *KA, *FDf, *FAf, *FDr, *FAr, *FBr, *FGr, *D, *BP;
    double *ufD, *ufA, *ufB, *ufG; /* recomputation costs of a pass */
    int64_t reserve;       /* forward values kept to the end */
    /* the DP, in slots of `unit` bytes, for caps up to M slots */
    int64_t unit, table_cap;
    int M;
    int64_t *sA, *sK, *sKA, *sFDf, *sFAf, *sFDr, *sFAr, *sFBr, *sFGr, *sD, *sBP;
    float *re, *fst;       /* re[h][g][(s,t)][m] for 1 <= s <= t <= L-1; fst[h][s][m] for t = L */
    int16_t *rech, *fch;   /* choice: 0 none, 1 all, 2 s' (+1: a_{s'-1} kept for B_{s'-1}) checkpoint */
};

/* The DP takes time ~ L^3 M / 6: longer chains are left to the other methods. */
enum { MAX_STAGES = 160 };

static int is_ws(const mg_problem *pr, int v) { return pr->target[v] && pr->home[v].mem == MG_MEM_NONE && pr->bytes[v] > 0; }

/* bytes a value takes in the stage accounting: keep-to-end values are reserved apart */
static int64_t vbytes(const mg_problem *pr, int v) { return is_ws(pr, v) && !pr->keep_to_end[v] ? pr->bytes[v] : 0; }

void mg_chain_free(mg_chain *c)
{
    if (!c) return;
    void *ps[] = {c->IA, c->fv, c->stage_start, c->a, c->bv, c->bstage, c->bstart, c->bend, c->stage_of, c->keep,
                  c->need[0], c->need[1], c->need[2], c->need[3], c->blast, c->A, c->K, c->KA, c->FDf, c->FAf,
                  c->FDr, c->FAr, c->FBr, c->FGr, c->D, c->BP, c->ufD, c->ufA, c->ufB, c->ufG, c->sA, c->sK, c->sKA,
                  c->sFDf, c->sFAf, c->sFDr, c->sFAr, c->sFBr, c->sFGr, c->sD, c->sBP,
                  c->re, c->fst, c->rech, c->fch};
    for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) free(ps[i]);
    free(c);
}

/* Does stage k's op v read u (u a target in the same stage)? Distinct inputs of v. */
static int reads_once(const mg_problem *pr, int v, int k)
{
    for (int j = pr->in_start[v]; j < k; j++)
        if (pr->in[j] == pr->in[k]) return 0;
    return 1;
}

/* Simulates one forward pass of stage k (all its ops when first, else the needed ones of the
 * mode) and returns its peak above a_{k-1}: what is live in the stage plus the op's output
 * and scratch. The executor frees exactly as this does. */
/* Passes: DROP keeps only a_k (checkpointing), ALL keeps a_k and what B_k reads (the stages
 * after k come next), BASE only what B_k reads (B_k comes next), BASEG the same when a_k is
 * already resident (kept for B_k). Is u kept after the pass? */
enum { DROP, ALL, BASE, BASEG };
static int retained(const mg_chain *c, int k, int u, int mode)
{
    if (u == c->a[k]) return mode == DROP || mode == ALL || c->KA[k] > 0;
    return mode != DROP && c->keep[u];
}

static int64_t pass_peak(const mg_chain *c, int k, int mode, int first, int *cnt)
{
    const mg_problem *pr = c->pr;
    const char *need = c->need[mode];
    int lo = c->stage_start[k], hi = c->stage_start[k + 1];
    for (int i = lo; i < hi; i++) cnt[c->fv[i]] = 0;
    for (int i = lo; i < hi; i++) {
        int v = c->fv[i];
        if (!first && !need[v]) continue;
        for (int j = pr->in_start[v]; j < pr->in_start[v + 1]; j++)
            if (c->stage_of[pr->in[j]] == k && reads_once(pr, v, j)) cnt[pr->in[j]]++;
    }
    int64_t live = 0, peak = 0;
    for (int i = lo; i < hi; i++) {
        int v = c->fv[i];
        if (!first && !need[v]) continue;
        int64_t f = live + vbytes(pr, v) + pr->scratch[v];
        if (f > peak) peak = f;
        live += vbytes(pr, v);
        for (int j = pr->in_start[v]; j < pr->in_start[v + 1]; j++) {
            int u = pr->in[j];
            if (c->stage_of[u] != k || !reads_once(pr, v, j)) continue;
            if (--cnt[u] == 0 && !retained(c, k, u, mode)) live -= vbytes(pr, u);
        }
        if (cnt[v] == 0 && !retained(c, k, v, mode)) live -= vbytes(pr, v);
    }
    return peak;
}

/* Marks the ancestors of v within stage k in need. */
static void mark_need(const mg_chain *c, int k, int v, char *need)
{
    const mg_problem *pr = c->pr;
    if (need[v]) return;
    need[v] = 1;
    for (int j = pr->in_start[v]; j < pr->in_start[v + 1]; j++)
        if (c->stage_of[pr->in[j]] == k) mark_need(c, k, pr->in[j], need);
}

mg_chain *mg_chain_analyse(const mg_problem *pr)
{
    int n = pr->n;
    mg_chain *c = mg_xcalloc(1, sizeof *c);
    c->pr = pr;
    c->fv = mg_xcalloc((size_t)n, sizeof *c->fv);
    c->bv = mg_xcalloc((size_t)n, sizeof *c->bv);
    for (int v = 0; v < n; v++) {
        if (!pr->target[v]) continue;
        if (v < pr->nfwd) c->fv[c->nf++] = v;
        else c->bv[c->nb++] = v;
    }
    if (c->nf < 2 || c->nb < 1) goto fail;
    /* a forward value that may not be recomputed must be kept to the end (reserved) */
    for (int i = 0; i < c->nf; i++) {
        int v = c->fv[i];
        if (is_ws(pr, v) && !pr->evictable[v] && !pr->keep_to_end[v]) goto fail;
        if (is_ws(pr, v) && pr->keep_to_end[v]) c->reserve += pr->bytes[v];
    }

    /* cuts: the forward values crossing each position */
    int *fpos = mg_xcalloc((size_t)n, sizeof *fpos), *lastf = mg_xcalloc((size_t)n, sizeof *lastf);
    for (int v = 0; v < n; v++) fpos[v] = lastf[v] = -1;
    for (int i = 0; i < c->nf; i++) fpos[c->fv[i]] = i;
    for (int i = 0; i < c->nf; i++) {
        int v = c->fv[i];
        for (int j = pr->in_start[v]; j < pr->in_start[v + 1]; j++)
            if (fpos[pr->in[j]] >= 0 && i > lastf[pr->in[j]]) lastf[pr->in[j]] = i;
    }
    /* crossing after position p: values u with fpos[u] <= p < lastf[u]; count and id sum */
    int64_t *dcount = mg_xcalloc((size_t)c->nf + 1, sizeof *dcount), *dsum = mg_xcalloc((size_t)c->nf + 1, sizeof *dsum);
    for (int i = 0; i < c->nf; i++) {
        int u = c->fv[i];
        if (lastf[u] > i) {
            dcount[i]++, dsum[i] += u;
            dcount[lastf[u]]--, dsum[lastf[u]] -= u;
        }
    }
    c->stage_start = mg_xcalloc((size_t)c->nf + 2, sizeof *c->stage_start);
    c->a = mg_xcalloc((size_t)c->nf + 2, sizeof *c->a);
    c->a[0] = -1;
    c->stage_start[1] = 0;
    int L = 1;
    int64_t cnt = 0, sum = 0;
    for (int p = 0; p + 1 < c->nf; p++) {
        cnt += dcount[p];
        sum += dsum[p];
        if (cnt == 1 && fpos[sum] >= c->stage_start[L]) { /* cut after p: a_L = sum */
            c->a[L] = (int)sum;
            c->stage_start[++L] = p + 1;
        }
    }
    c->a[L] = -1;
    c->stage_start[L + 1] = c->nf;
    c->L = L;
    free(dcount);
    free(dsum);
    free(lastf);
    c->stage_of = mg_xcalloc((size_t)n, sizeof *c->stage_of);
    for (int k = 1; k <= L; k++)
        for (int i = c->stage_start[k]; i < c->stage_start[k + 1]; i++) c->stage_of[c->fv[i]] = k;
    free(fpos);
    if (L < 2 || L > MAX_STAGES) goto fail;

    /* backward blocks: each backward op in the largest stage i (not above the previous op's)
     * such that it reads forward values of stage i and a_{i-1} only */
    c->bstage = mg_xcalloc((size_t)c->nb + 1, sizeof *c->bstage);
    c->keep = mg_xcalloc((size_t)n, 1);
    int cur = L;
    for (int q = 0; q < c->nb; q++) {
        int b = c->bv[q], hi = 0;
        for (int j = pr->in_start[b]; j < pr->in_start[b + 1]; j++)
            if (c->stage_of[pr->in[j]] > hi) hi = c->stage_of[pr->in[j]];
        int got = 0;
        if (!hi) got = cur;
        for (int i = hi + 1; i >= hi && !got && hi; i--) {
            if (i > cur || i > L || i < 1) continue;
            int ok = 1;
            for (int j = pr->in_start[b]; j < pr->in_start[b + 1] && ok; j++) {
                int u = pr->in[j], su = c->stage_of[u];
                ok = !su || su == i || (su == i - 1 && u == c->a[i - 1]);
            }
            if (ok) got = i;
        }
        if (!got) goto fail;
        cur = got;
        c->bstage[q] = hi ? got : 0;
    }
    /* an op that reads no forward value joins the block of the next op that does (so it runs
     * after that block's recomputations), or the last block */
    for (int q = c->nb - 1, next = 0; q >= 0; q--) {
        if (!c->bstage[q]) c->bstage[q] = next ? next : cur;
        next = c->bstage[q];
    }
    c->bstart = mg_xcalloc((size_t)L + 2, sizeof *c->bstart);
    c->bend = mg_xcalloc((size_t)L + 2, sizeof *c->bend);
    for (int k = 1; k <= L; k++) c->bstart[k] = c->bend[k] = -1;
    for (int q = 0; q < c->nb; q++) {
        int k = c->bstage[q];
        if (c->bstart[k] < 0) c->bstart[k] = q;
        c->bend[k] = q + 1;
    }
    for (int k = 1; k <= L; k++) /* empty blocks: nothing to run */
        if (c->bstart[k] < 0) c->bstart[k] = c->bend[k] = 0;
    c->KA = mg_xcalloc((size_t)L + 2, sizeof *c->KA);
    c->IA = mg_xcalloc((size_t)L + 2, 1);
    for (int q = 0; q < c->nb; q++) {
        int b = c->bv[q], k = c->bstage[q];
        for (int j = pr->in_start[b]; j < pr->in_start[b + 1]; j++) {
            int u = pr->in[j];
            if (k > 1 && u == c->a[k - 1]) c->IA[k] = 1;
            if (c->stage_of[u] != k || !vbytes(pr, u)) continue;
            if (u == c->a[k]) c->KA[k] = pr->bytes[u];
            else c->keep[u] = 1;
        }
    }
    /* what a recomputation pass needs */
    for (int mode = 0; mode < 4; mode++) c->need[mode] = mg_xcalloc((size_t)n, 1);
    for (int k = 1; k <= L; k++) {
        if (c->a[k] >= 0) {
            mark_need(c, k, c->a[k], c->need[DROP]);
            mark_need(c, k, c->a[k], c->need[ALL]);
            if (c->KA[k]) mark_need(c, k, c->a[k], c->need[BASE]);
        }
        for (int i = c->stage_start[k]; i < c->stage_start[k + 1]; i++)
            if (c->keep[c->fv[i]]) {
                mark_need(c, k, c->fv[i], c->need[ALL]);
                mark_need(c, k, c->fv[i], c->need[BASE]);
                mark_need(c, k, c->fv[i], c->need[BASEG]);
            }
        if (c->a[k] >= 0) c->need[BASEG][c->a[k]] = 0; /* resident */
    }
    /* per-stage figures */
    c->A = mg_xcalloc((size_t)L + 2, sizeof *c->A);
    c->K = mg_xcalloc((size_t)L + 2, sizeof *c->K);
    c->FDf = mg_xcalloc((size_t)L + 2, sizeof *c->FDf);
    c->FAf = mg_xcalloc((size_t)L + 2, sizeof *c->FAf);
    c->FDr = mg_xcalloc((size_t)L + 2, sizeof *c->FDr);
    c->FAr = mg_xcalloc((size_t)L + 2, sizeof *c->FAr);
    c->FBr = mg_xcalloc((size_t)L + 2, sizeof *c->FBr);
    c->FGr = mg_xcalloc((size_t)L + 2, sizeof *c->FGr);
    c->ufG = mg_xcalloc((size_t)L + 2, sizeof *c->ufG);
    c->ufB = mg_xcalloc((size_t)L + 2, sizeof *c->ufB);
    c->D = mg_xcalloc((size_t)L + 2, sizeof *c->D);
    c->BP = mg_xcalloc((size_t)L + 2, sizeof *c->BP);
    c->ufD = mg_xcalloc((size_t)L + 2, sizeof *c->ufD);
    c->ufA = mg_xcalloc((size_t)L + 2, sizeof *c->ufA);
    int *tmp = mg_xcalloc((size_t)n, sizeof *tmp);
    for (int k = 1; k <= L; k++) {
        c->A[k] = c->a[k] >= 0 ? vbytes(pr, c->a[k]) : 0;
        for (int i = c->stage_start[k]; i < c->stage_start[k + 1]; i++) {
            int v = c->fv[i];
            if (c->keep[v]) c->K[k] += vbytes(pr, v);
            int recomputed = is_ws(pr, v) && !pr->keep_to_end[v];
            if (recomputed && c->need[DROP][v]) c->ufD[k] += pr->cost[v];
            if (recomputed && c->need[ALL][v]) c->ufA[k] += pr->cost[v];
            if (recomputed && c->need[BASE][v]) c->ufB[k] += pr->cost[v];
            if (recomputed && c->need[BASEG][v]) c->ufG[k] += pr->cost[v];
        }
        c->FDf[k] = pass_peak(c, k, DROP, 1, tmp);
        c->FAf[k] = pass_peak(c, k, ALL, 1, tmp);
        c->FDr[k] = pass_peak(c, k, DROP, 0, tmp);
        c->FAr[k] = pass_peak(c, k, ALL, 0, tmp);
        c->FBr[k] = pass_peak(c, k, BASE, 0, tmp);
        c->FGr[k] = pass_peak(c, k, BASEG, 0, tmp);
    }
    free(tmp);
    /* the backward values: computed once, freed after their last backward read */
    c->blast = mg_xcalloc((size_t)n, sizeof *c->blast);
    for (int v = 0; v < n; v++) c->blast[v] = -1;
    for (int q = 0; q < c->nb; q++) {
        int b = c->bv[q];
        for (int j = pr->in_start[b]; j < pr->in_start[b + 1]; j++)
            if (pr->in[j] >= pr->nfwd) c->blast[pr->in[j]] = q;
    }
    int64_t live = 0;
    for (int k = L; k >= 1; k--) {
        c->D[k] = c->BP[k] = live;
        for (int q = c->bstart[k]; q < c->bend[k]; q++) {
            int b = c->bv[q];
            int64_t f = live + (is_ws(pr, b) ? pr->bytes[b] : 0) + pr->scratch[b];
            if (f > c->BP[k]) c->BP[k] = f;
            if (is_ws(pr, b)) live += pr->bytes[b];
            for (int j = pr->in_start[b]; j < pr->in_start[b + 1]; j++) {
                int u = pr->in[j];
                if (u >= pr->nfwd && is_ws(pr, u) && !pr->keep_to_end[u] && c->blast[u] == q && reads_once(pr, b, j))
                    live -= pr->bytes[u];
            }
            if (is_ws(pr, b) && !pr->keep_to_end[b] && c->blast[b] < 0) live -= pr->bytes[b];
        }
    }
    return c;
fail:
    mg_chain_free(c);
    return NULL;
}

int mg_chain_stages(const mg_chain *c) { return c->L; }

static int64_t slots(const mg_chain *c, int64_t bytes) { return (bytes + c->unit - 1) / c->unit; }

/* Subproblem tables: (s, t) with 1 <= s <= t <= L-1 (recomputations) or t = L (the first
 * pass); h: a_{s-1} must stay resident until the subproblem ends (the caller's B_{s-1} reads
 * it) rather than be dropped once the subproblem no longer needs it; g: a_t is resident at the
 * start (kept for B_t, which reads it) and the subproblem drops it after B_t. */
static size_t re_at(const mg_chain *c, int s, int t, int h, int g)
{
    size_t ntri = (size_t)(c->L - 1) * (size_t)c->L / 2;
    return ((size_t)(2 * g + h) * ntri + (size_t)((t - 1) * t / 2 + s - 1)) * (size_t)(c->M + 1);
}

static size_t fst_at(const mg_chain *c, int s, int h)
{
    return ((size_t)h * (size_t)(c->L + 2) + (size_t)s) * (size_t)(c->M + 1);
}

/* The row of subproblem (s, t, h, g) (first: t = L), indexed by m. */
static const float *row_of(const mg_chain *c, int first, int s, int t, int h, int g)
{
    return first ? c->fst + fst_at(c, s, h) : c->re + re_at(c, s, t, h, g);
}

/* The best choice for subproblem (s, t, h, g) at every m: first says t = L and the stages'
 * first forward passes (their cost is the same whatever the schedule, so it is not counted).
 * Each option is feasible from some m on; options are tried in a fixed order (all, then each
 * checkpoint s' ascending, dropped then kept) and a later one wins only when strictly cheaper. */
static void solve_one(mg_chain *c, int s, int t, int h, int g, int first)
{
    int64_t M = c->M;
    const int64_t *A = c->sA, *K = c->sK, *KA = c->sKA, *D = c->sD, *BP = c->sBP;
    const int64_t *FA = first ? c->sFAf : c->sFAr, *FD = first ? c->sFDf : c->sFDr;
    float *row = first ? c->fst + fst_at(c, s, h) : c->re + re_at(c, s, t, h, g);
    int16_t *ch = first ? c->fch + fst_at(c, s, h) : c->rech + re_at(c, s, t, h, g);
    int drop_in = !h && !c->IA[s];
    int64_t held = (drop_in ? 0 : A[s - 1]) + K[s], G = g ? A[t] : 0;
    int hs = c->KA[s] > 0;
    int64_t fpass = s < t ? FA[s] : first ? c->sFAf[s] : g ? c->sFGr[s] : c->sFBr[s];
    double fc = first ? 0 : s < t ? c->ufA[s] : g ? c->ufG[s] : c->ufB[s];
    for (int64_t m = 0; m <= M; m++) {
        row[m] = INFINITY;
        ch[m] = 0;
    }
    int64_t from = held + KA[s] + BP[s], f2 = A[s - 1] + D[t] + G + fpass;
    if (f2 > from) from = f2;
    if (s == t) {
        for (int64_t m = from; m <= M; m++) row[m] = (float)fc, ch[m] = 1;
    } else {
        const float *sub = row_of(c, first, s + 1, t, hs, g);
        for (int64_t m = from; m <= M; m++) {
            double x = fc + sub[m - held];
            if (x < row[m]) row[m] = (float)x, ch[m] = 1;
        }
    }
    int64_t fmax = 0;
    double cost = 0;
    for (int sp = s + 1; sp <= t; sp++) {
        int k = sp - 1;
        int64_t f = (k > s ? A[k - 1] : 0) + FD[k];
        if (f > fmax) fmax = f;
        if (!first) cost += c->ufD[k];
        int64_t lo = A[s - 1] + D[t] + G + fmax;
        if (lo > M) break;
        for (int keep = 0; keep <= (c->KA[k] > 0); keep++) { /* keep: a_{sp-1} stays for B_{sp-1} */
            const float *right = row_of(c, first, sp, t, keep, g), *left = row_of(c, 0, s, sp - 1, h, keep);
            int16_t code = (int16_t)(2 * sp + keep);
            for (int64_t m = lo; m <= M; m++) {
                double x = cost + right[m - A[s - 1]] + left[m];
                if (x < row[m]) row[m] = (float)x, ch[m] = code;
            }
        }
    }
}

/* Fills the DP tables for caps up to max_cap bytes (at most about max_entries entries). */
static void solve_tables(mg_chain *c, int64_t max_cap, int64_t max_entries)
{
    int L = c->L;
    int64_t gc = 0;
    int64_t *arrs[] = {c->A, c->K, c->KA, c->FDf, c->FAf, c->FDr, c->FAr, c->FBr, c->FGr, c->D, c->BP};
    for (size_t a = 0; a < sizeof arrs / sizeof *arrs; a++)
        for (int k = 1; k <= L; k++) gc = mg_gcd64(gc, arrs[a][k]);
    if (gc <= 0) gc = 1;
    int64_t cap = max_cap - c->reserve;
    int64_t per = 0; /* the tables solved: h only where B_{s-1} reads a_{s-1}, g where B_t reads a_t */
    for (int t = 1; t <= L; t++)
        for (int s = 1; s <= t; s++) per += (1 + (c->KA[s - 1] > 0)) * (t < L ? 1 + (c->KA[t] > 0) : 1);
    if (per < 1) per = 1;
    int64_t maxM = max_entries / per;
    if (maxM > 2000) maxM = 2000;
    if (maxM < 16) maxM = 16;
    c->unit = gc;
    if (cap / gc > maxM) c->unit = (cap + maxM - 1) / maxM;
    c->M = (int)(cap > 0 ? cap / c->unit : 0);
    int64_t **sl[] = {&c->sA, &c->sK, &c->sKA, &c->sFDf, &c->sFAf, &c->sFDr, &c->sFAr, &c->sFBr, &c->sFGr, &c->sD, &c->sBP};
    for (size_t a = 0; a < sizeof arrs / sizeof *arrs; a++) {
        *sl[a] = mg_xcalloc((size_t)L + 2, sizeof **sl[a]);
        for (int k = 1; k <= L; k++) (*sl[a])[k] = slots(c, arrs[a][k]);
    }
    size_t nre = 4 * (size_t)(L - 1) * (size_t)L / 2 * (size_t)(c->M + 1);
    c->re = mg_xcalloc(nre, sizeof *c->re);
    c->rech = mg_xcalloc(nre, sizeof *c->rech);
    c->fst = mg_xcalloc(2 * (size_t)(L + 2) * (size_t)(c->M + 1), sizeof *c->fst);
    c->fch = mg_xcalloc(2 * (size_t)(L + 2) * (size_t)(c->M + 1), sizeof *c->fch);
    for (size_t i = 0; i < nre; i++) c->re[i] = INFINITY; /* tables never solved offer nothing */
    for (size_t i = 0; i < 2 * (size_t)(L + 2) * (size_t)(c->M + 1); i++) c->fst[i] = INFINITY;
    for (int len = 0; len < L - 1; len++) /* recomputations, shortest first */
        for (int s = 1; s + len <= L - 1; s++)
            for (int h = 0; h < 2; h++)
                for (int g = 0; g < 2; g++)
                    if ((!h || c->KA[s - 1] > 0) && (!g || c->KA[s + len] > 0)) solve_one(c, s, s + len, h, g, 0);
    for (int s = L; s >= 1; s--) /* the first pass */
        for (int h = 0; h < 2; h++)
            if (!h || c->KA[s - 1] > 0) solve_one(c, s, L, h, 0, 1);
}

/* ---- replaying a schedule with the plan builder ---------------------------------------- */

typedef struct exec {
    mg_chain *c;
    mg_plan_builder b;
    char *done;     /* per node: computed at least once */
    char *first;    /* per stage: its first pass has run */
    int *cnt;
    int ok;
} exec;

static int resident(const exec *e, int v) { return e->b.where[v].mem != MG_MEM_NONE; }

static void drop(exec *e, int v)
{
    if (v >= 0 && !e->c->pr->keep_to_end[v]) mg_pb_release(&e->b, v);
}

static void compute(exec *e, int v)
{
    const mg_problem *pr = e->c->pr;
    for (int j = pr->in_start[v]; j < pr->in_start[v + 1]; j++)
        if (!resident(e, pr->in[j])) e->ok = 0;
    if (e->done[v] && !pr->evictable[v]) e->ok = 0;
    if (!e->ok) return;
    mg_pb_compute(&e->b, v, e->done[v]);
    e->done[v] = 1;
}

static void fwd_pass(exec *e, int k, int mode)
{
    mg_chain *c = e->c;
    const mg_problem *pr = c->pr;
    int first = !e->first[k];
    e->first[k] = 1;
    const char *need = c->need[mode];
    int lo = c->stage_start[k], hi = c->stage_start[k + 1];
    for (int i = lo; i < hi; i++) e->cnt[c->fv[i]] = 0;
    for (int i = lo; i < hi; i++) {
        int v = c->fv[i];
        if (!first && !need[v]) continue;
        for (int j = pr->in_start[v]; j < pr->in_start[v + 1]; j++)
            if (c->stage_of[pr->in[j]] == k && reads_once(pr, v, j)) e->cnt[pr->in[j]]++;
    }
    for (int i = lo; i < hi && e->ok; i++) {
        int v = c->fv[i];
        if (!first && !need[v]) continue;
        if (!resident(e, v)) compute(e, v);
        for (int j = pr->in_start[v]; j < pr->in_start[v + 1]; j++) {
            int u = pr->in[j];
            if (c->stage_of[u] != k || !reads_once(pr, v, j)) continue;
            if (--e->cnt[u] == 0 && !retained(c, k, u, mode)) drop(e, u);
        }
        if (e->cnt[v] == 0 && !retained(c, k, v, mode)) drop(e, v);
    }
}

static void bwd_block(exec *e, int k)
{
    mg_chain *c = e->c;
    const mg_problem *pr = c->pr;
    for (int q = c->bstart[k]; q < c->bend[k] && e->ok; q++) {
        int b = c->bv[q];
        compute(e, b);
        for (int j = pr->in_start[b]; j < pr->in_start[b + 1]; j++) {
            int u = pr->in[j];
            if (u >= pr->nfwd && c->blast[u] == q) drop(e, u);
        }
        if (c->blast[b] < 0) drop(e, b);
    }
    for (int i = c->stage_start[k]; i < c->stage_start[k + 1]; i++)
        if (c->keep[c->fv[i]]) drop(e, c->fv[i]);
    drop(e, c->a[k]);
}

static void run(exec *e, int s, int t, int64_t m, int first, int h, int g)
{
    mg_chain *c = e->c;
    if (!e->ok) return;
    int ch = first ? c->fch[fst_at(c, s, h) + (size_t)m] : c->rech[re_at(c, s, t, h, g) + (size_t)m];
    if (ch == 0) {
        e->ok = 0;
        return;
    }
    if (ch == 1) { /* stage s keeping what B_s reads; the stages after it; then B_s */
        int drop_in = !h && !c->IA[s];
        fwd_pass(e, s, s < t ? ALL : g ? BASEG : BASE);
        if (drop_in) drop(e, c->a[s - 1]);
        if (s < t) run(e, s + 1, t, m - ((drop_in ? 0 : c->sA[s - 1]) + c->sK[s]), first, c->KA[s] > 0, g);
        if (!c->KA[s]) drop(e, c->a[s]);
        bwd_block(e, s);
        return;
    }
    int sp = ch / 2, keep = ch & 1;
    for (int k = s; k < sp && e->ok; k++) { /* stages s..sp-1 keeping only a_{sp-1} */
        fwd_pass(e, k, DROP);
        if (k > s) drop(e, c->a[k - 1]);
    }
    run(e, sp, t, m - c->sA[s - 1], first, keep, g);
    if (!keep) drop(e, c->a[sp - 1]);
    run(e, s, sp - 1, m, 0, h, keep);
}

/* Builds the tables for table_cap (unless they are built for it) and returns the slots of cap,
 * or -1 when no schedule is under it. */
static int64_t prepare(mg_chain *c, int64_t cap, int64_t table_cap)
{
    if (c->re && c->table_cap != table_cap) {
        void *ps[] = {c->sA, c->sK, c->sKA, c->sFDf, c->sFAf, c->sFDr, c->sFAr, c->sFBr, c->sFGr, c->sD, c->sBP,
                      c->re, c->fst, c->rech, c->fch};
        for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) free(ps[i]);
        c->re = NULL;
    }
    if (!c->re) {
        c->table_cap = table_cap;
        solve_tables(c, table_cap, 800000);
    }
    int64_t room = cap - c->reserve;
    if (room < 0) return -1;
    int64_t m = room / c->unit;
    if (m > c->M) m = c->M;
    return isinf(c->fst[fst_at(c, 1, 0) + (size_t)m]) ? -1 : m;
}

double mg_chain_cost(mg_chain *c, int64_t cap, int64_t table_cap)
{
    int64_t m = prepare(c, cap, table_cap);
    return m < 0 ? INFINITY : (double)c->fst[fst_at(c, 1, 0) + (size_t)m];
}

mg_status mg_chain_schedule(mg_chain *c, int64_t cap, int64_t table_cap, mg_plan **out, mg_diag *d)
{
    (void)d;
    *out = NULL;
    int64_t m = prepare(c, cap, table_cap);
    if (m < 0) return MG_OK;
    exec e = {.c = c, .ok = 1};
    mg_pb_init(&e.b, c->pr);
    e.done = mg_xcalloc((size_t)c->pr->n, 1);
    e.first = mg_xcalloc((size_t)c->L + 2, 1);
    e.cnt = mg_xcalloc((size_t)c->pr->n, sizeof *e.cnt);
    run(&e, 1, c->L, m, 1, 0, 0);
    for (int v = 0; v < c->pr->n && e.ok; v++)
        if (c->pr->target[v] && !e.done[v]) e.ok = 0;
    if (e.ok) *out = mg_pb_finish(&e.b);
    else mg_pb_discard(&e.b);
    free(e.done);
    free(e.first);
    free(e.cnt);
    return MG_OK;
}
