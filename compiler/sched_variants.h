/* sched_variants.h — what the planner's two searches share (sched_variants.c): the schedules
 * `auto` tries at a budget (its variants) and how one is fitted to a budget once placed. The
 * solve at a budget (planner.c) and the minimum search (min_search.c) both build on them. */
#ifndef MG_SCHED_VARIANTS_H
#define MG_SCHED_VARIANTS_H
#include "place_memo.h"
#include "plan.h"

/* The budget-driven schedules auto tries: every eviction policy, with lazy and eager freeing
 * (MG_VARIANTS_BASE); sched_rc.c's scheduler under the policies that do best there (layered
 * DAGs: MG_VARIANTS_RC); the base ones again with mg_sched_opts.fit (MG_VARIANTS_FIT); then, on
 * problems small enough that scheduling is cheap, up to MG_RESTARTS_MAX restarts of the
 * eviction policies with perturbed scores (mg_sched_opts.seed; mg_variants_restarts). */
enum { MG_VARIANTS_RC = 5, MG_VARIANTS_BASE = 2 * MG_EVICT_NPOLICIES, MG_VARIANTS_FIT = MG_VARIANTS_BASE,
       MG_VARIANTS = MG_VARIANTS_BASE + MG_VARIANTS_RC + MG_VARIANTS_FIT, MG_RESTARTS_MAX = 64,
       MG_VARIANTS_MAX = MG_VARIANTS + MG_RESTARTS_MAX };

/* What one solve has learnt from the exact search, so it does not search in vain twice, and the
 * chain DP's analysis and tables. */
typedef struct mg_search_memo {
    int64_t infeasible_cap; /* a finished search found no schedule under this cap (-1: none) */
    int too_big;            /* the search ran out of states: the problem is left to the heuristics */
    int chain_tried;        /* the chain DP (sched_chain.c): analysed yet, */
    mg_chain *chain;        /* its stages and tables (NULL: the problem is not a chain), */
    int64_t chain_table_cap;/* and the largest cap its tables are built for (0: none yet) */
    int64_t store_all;      /* the store-all workspace */
} mg_search_memo;

/* A variant's schedule is kept as its compute steps (mg_pb_replay) until it is placed: a
 * problem's ~25 variants are all scheduled before any is placed, and their plans take over 100
 * bytes a step (a 60-layer perceptron in 32 parts, 13,739 operations: 394 of the 456 MB of heap
 * `plan` peaked at were variants' plans waiting, 4.5 MB each, two threads' worth; now 133 MB). */
typedef struct mg_variant {
    mg_sched_opts o;
    mg_plan *p;     /* its schedule at cap budget (not yet placed), or NULL when it has none; while
                       seq is set, its figures only (no steps nor buffers: mg_variant_take) */
    int *seq, nseq; /* NULL, or p's compute steps */
    uint64_t hash;  /* with seq: p's buffers' hash (mg_plan_buffers_hash) */
} mg_variant;

/* The schedulers' scratch (mg_sched_store, mg_rc_store) of one thread's runs, kept from run to
 * run of one problem: the minimum search's (mg_min_search), ~150-250 runs on the long chains, each
 * of which allocated ~30 arrays of n afresh (and its plan's steps, grown by realloc to the step
 * limit on a failing run: 170,064 steps on the 5,000-step relu chain). NULL fields: none. */
typedef struct mg_sched_scratch {
    mg_sched_store *remat;
    mg_rc_store *rc;
} mg_sched_scratch;

/* What the bisection learns of the variants it runs: each run reports the caps it behaves
 * identically under (mg_schedule_range, mg_schedule_rc_range), so a later probe whose budget
 * falls in such a range where the variant found no schedule skips it. Near the minimum the bisection's probes are
 * closer together than the footprints the scheduler compares with the cap, so most failing runs
 * there would only repeat. (Runs that found a schedule are not kept: a later probe rarely falls
 * in their range, and copying their plans cost more than it saved.) The descent keeps one too
 * for the variants mg_variants_schedule_in runs (restarts included), where the ladder's caps, 1%
 * of the peak apart, fall within one failing run's range: the tanh chain of 1,666 layers, peak
 * 312,448 bytes, 3,124 bytes apart, where the range is about one 8,192-byte value wide, and 24
 * of its 25 variants fail each rung (0.9 s a rung, 4 rungs). A run given up on past its
 * flops_limit fails the same under a lower limit too, so the limit is kept with the range. */
enum { MG_PROBE_FAILS_MAX = 8 };
typedef struct mg_probe_memo {
    /* variant j: no schedule under any cap in [lo, hi), under its flops_limit (0: none) or any
     * lower one */
    int64_t lo[MG_VARIANTS_MAX][MG_PROBE_FAILS_MAX], hi[MG_VARIANTS_MAX][MG_PROBE_FAILS_MAX];
    double limit[MG_VARIANTS_MAX][MG_PROBE_FAILS_MAX];
    int n[MG_VARIANTS_MAX], next[MG_VARIANTS_MAX]; /* ranges kept, and the one replaced next when full */
} mg_probe_memo;

/* The cheapest schedules whose placements missed the budget by a little (mg_sv_fit keeps them),
 * placed again with compaction at the end of the whole solve (mg_sv_rescue_near_misses). */
enum { MG_NEAR_MISSES = 3 };
typedef struct mg_near_misses {
    mg_plan *p[MG_NEAR_MISSES]; /* cheapest first */
    uint64_t h[MG_NEAR_MISSES]; /* their buffers' hashes (the same buffers place alike) */
    int n;
} mg_near_misses;

/* The waste allowed over a plan's peak live bytes, as a share of them: 0.02, the target of
 * workspace / peak live at most 1.02. */
extern const double mg_waste_target;
/* A plan the arena placed with more waste than `share` of its peak live bytes. */
int mg_plan_wastes(const mg_plan *p, double share);

/* One schedule under cap, not yet placed: the eviction scheduler under opts, or (opts NULL) the
 * exact search (whose findings memo keeps). */
mg_status mg_sv_schedule(const mg_problem *pr, const mg_sched_opts *opts, int64_t cap, mg_search_memo *memo,
                         mg_plan **out, mg_diag *d);
/* Schedules under opts and places the buffers; *out is NULL when the cap cannot be met. */
mg_status mg_sv_build(const mg_problem *pr, const mg_sched_opts *opts, mg_plan **out, mg_diag *d);
/* A plan under opts (NULL: the exact search) whose placed workspace is at most budget; first:
 * the schedule under opts at cap budget, or NULL; aim 0/1/2: how the cap is lowered after a
 * miss (sched_variants.c); mm, nm: the placements that missed and the near misses kept (NULL:
 * none); *at_budget (when not NULL): the plan was scheduled under the budget itself. */
mg_status mg_sv_fit(const mg_problem *pr, const mg_sched_opts *opts, int64_t budget, mg_search_memo *memo,
                    mg_plan *first, int aim, mg_place_memo *mm, mg_near_misses *nm, mg_plan **out, int *at_budget,
                    mg_diag *d);
/* The chain DP's plan within budget, or NULL (none can beat `beat`; probe: caps above the
 * budget are tried for a cheaper plan that still fits). */
mg_status mg_sv_chain_fit(const mg_problem *pr, int64_t budget, mg_search_memo *memo, const mg_plan *beat, int probe,
                          mg_plan **out, mg_diag *d);
/* The chain DP's first table cap for a budget. */
int64_t mg_sv_chain_table_cap(int64_t budget, int64_t store_all);
/* Keeps the better of *best and p (fewer FLOPs, then a smaller workspace); frees the other. */
void mg_sv_keep_better(mg_plan **best, mg_plan *p);
void mg_sv_near_misses_free(mg_near_misses *nm);
/* Of nm's schedules cheaper than `unfilled` (what *out cost before sched_refill.c's refill),
 * those that fit once compacted, refilled; the cheapest of them and *out is kept. Frees nm's
 * plans. */
void mg_sv_rescue_near_misses(mg_near_misses *nm, const mg_problem *pr, int64_t budget, double unfilled,
                              mg_plan **out, mg_diag *d);

/* How many restarts a problem gets (after the MG_VARIANTS others). */
int mg_variants_restarts(const mg_problem *pr);
/* Variant i's options under budget; policy: that of the unperturbed variants of sched_remat.c. */
mg_sched_opts mg_variant_opts(int i, int64_t budget, mg_evict_policy policy);
/* v's schedule as a whole plan, which the caller takes over (v has none after). */
mg_plan *mg_variant_take(const mg_problem *pr, mg_variant *v);
void mg_variant_free(mg_variant *v);
/* Cheapest first, then lowest peak; variants with no schedule last. */
int mg_variant_cmp(const void *a, const void *b);
/* Sets o's scratch to z's (NULL: none). */
void mg_sv_use_scratch(mg_sched_opts *o, const mg_sched_scratch *z);
/* Schedules variant j (0..MG_VARIANTS_MAX-1) under o->cap, unless pm knows it fails there. */
mg_status mg_sv_schedule_memo(const mg_problem *pr, const mg_sched_opts *o, int j, mg_probe_memo *pm, mg_plan **out,
                              mg_diag *d);
/* Schedules nvariants variants at cap budget, not placed, into v (room for nvariants), cheapest
 * first, one of each schedule; returns how many have one. z: scratch for the runs (NULL: none),
 * kept in the variants' opts; fm: the failing runs' memo (NULL: none). */
int mg_variants_schedule_in(const mg_problem *pr, int64_t budget, mg_variant *v, int nvariants,
                            const mg_sched_scratch *z, mg_probe_memo *fm, mg_diag *d);
/* The same with scratch of its own, which the variants' opts leave without. */
int mg_variants_schedule(const mg_problem *pr, int64_t budget, mg_variant *v, int nvariants, mg_diag *d);

#endif
