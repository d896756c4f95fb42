/* plan.h — memory plans: the schedule of a generated function and where every value lives.
 *
 * A plan is a list of steps (compute a node, copy a value, zero a gradient) and a set of
 * workspace buffers, each live over an inclusive range of steps and placed at a byte offset in
 * the one workspace arena. Values that are not in the workspace live in caller-owned memory:
 * the params blob, the grads blob, an input or output buffer, or a constant in the object. */
#ifndef MG_PLAN_H
#define MG_PLAN_H
#include "budget.h"
#include "conv.h"
#include "ir.h"

enum { MG_ALIGN = 64 }; /* every buffer and parameter starts on a cache line */

typedef enum { MG_MEM_NONE, MG_MEM_WS, MG_MEM_PARAMS, MG_MEM_GRADS, MG_MEM_INPUT, MG_MEM_OUTPUT,
               MG_MEM_CONST } mg_mem;

typedef struct mg_place {
    mg_mem mem;
    int index;      /* MG_MEM_INPUT / MG_MEM_OUTPUT: position; MG_MEM_WS: buffer id */
    int64_t offset; /* byte offset in the params/grads blob (WS offsets live in the buffer) */
} mg_place;

typedef enum { MG_STEP_COMPUTE, MG_STEP_COPY, MG_STEP_ZERO } mg_step_kind;

typedef struct mg_step {
    mg_step_kind kind;
    int node;        /* COMPUTE: the node; COPY: the source node; ZERO: the parameter node */
    mg_place out;    /* where the result is written */
    mg_place in[MG_MAX_INPUTS]; /* COMPUTE: where each input is read; COPY: in[0] is the source */
    int scratch;     /* workspace buffer for kernel scratch (GEMM packing), or -1 */
    int recompute;   /* 1 when this step computes a value that an earlier step computed too */
    int64_t scratch_cap; /* the scratch cap its kernel runs under: 0 its node's (microbatch.c's, or
                            none), > 0 this one, MG_CAP_NONE none (plan_scratch.c: a step with
                            room beside it in the arena takes larger blocks) */
} mg_step;

enum { MG_CAP_NONE = -1 };

typedef struct mg_buffer {
    int64_t bytes;   /* rounded up to MG_ALIGN */
    int first, last; /* steps during which it is live, inclusive */
    int64_t offset;  /* in the workspace; -1 until the arena places it */
    int node;        /* the value it holds, or -1 for scratch */
} mg_buffer;

typedef enum { MG_PLAN_TRAIN, MG_PLAN_FORWARD } mg_plan_kind;

typedef struct mg_plan {
    const mg_graph *g;    /* NULL for plans of imported graphs */
    mg_plan_kind kind;
    mg_step *steps;
    int nsteps;
    mg_buffer *bufs;
    int nbufs;
    int64_t workspace_bytes, peak_live_bytes;
    int result;           /* TRAIN: the loss node, whose value the step returns */
    mg_place result_at;   /* where the result is when the last step has run */
    double flops_once;    /* every needed op once */
    double flops_executed;/* what the steps execute, recomputations included */
} mg_plan;

/* The cap to schedule under again when p, scheduled under cap, was placed `over` bytes above its
 * budget: lowered by the miss, by at most max_step (INT64_MAX: none) and at least MG_ALIGN, and
 * below p's peak (every cap from the peak up gives this very schedule). sched_variants.c's
 * fits, min_search.c's descent and sched_improve.c's start, all aim a schedule that missed this way. */
static inline int64_t mg_cap_after_miss(int64_t cap, const mg_plan *p, int64_t over, int64_t max_step)
{
    int64_t step = over < max_step ? over : max_step;
    cap -= step > MG_ALIGN ? step : MG_ALIGN;
    return cap < p->peak_live_bytes - MG_ALIGN ? cap : p->peak_live_bytes - MG_ALIGN;
}

/* Parameter layout in the params/grads blobs: offsets (aligned) and the total size. */
int64_t mg_param_layout(const mg_graph *g, int64_t *offsets);

/* The model's state blob (layout.c): for every batch_norm of the forward graph, in order, its
 * running mean and running variance ([C] each, the op's dtype), then the i32 step counter that
 * keys dropout masks and counts training steps. A model with neither op has no state (0 entries). */
typedef enum { MG_STATE_RUNNING_MEAN, MG_STATE_RUNNING_VAR, MG_STATE_STEP } mg_state_kind;
typedef struct mg_state_entry {
    mg_state_kind kind;
    int node;        /* the batch_norm node, or -1 for the step counter */
    int64_t offset, bytes;
} mg_state_entry;
/* Fills entries (when not NULL; room for 2 * nodes + 1) and *total (bytes, aligned); returns
 * the number of entries. */
int mg_state_layout(const mg_graph *g, mg_state_entry *entries, int64_t *total);
/* The entry's name in NAME_state_desc: "<scale param>.running_mean", "....running_var", "step";
 * "batch_norm#K.running_mean" for the K-th batch_norm when its scale is an expression or the scale
 * of an earlier batch_norm too, so names never repeat. */
const char *mg_state_name(const mg_graph *g, const mg_state_entry *e, char *buf, size_t len);

/* The planning problem: what the scheduler and the verifier see of a function. Nodes are in
 * a topological order; a node's value takes `bytes` of workspace (0: it lives in caller
 * memory), its step needs `scratch` more while it runs, and costs `cost` (FLOPs for models,
 * the benchmark's unit for imported graphs). Leaves (not targets) are always resident. */
typedef struct mg_problem {
    int n;
    int *in_start, *in;    /* CSR: the inputs of v are in[in_start[v] .. in_start[v+1]) */
    int64_t *bytes, *scratch;
    double *cost;
    char *target;          /* computed by the function (every target at least once) */
    char *evictable;       /* may be dropped and recomputed (models: forward values only) */
    char *keep_to_end;     /* read after the last target: never dropped or freed early */
    mg_place *home;        /* fixed place of leaves and of values written into caller memory */
    int nfwd;              /* nodes [0, nfwd) are the forward part (checkpoints apply there) */
    int result;            /* the value the function returns, or -1 */
    mg_step *final;        /* copies and zero fills that run after the last target */
    int nfinal;
    const mg_graph *g;     /* the model graph the problem comes from, or NULL */
    mg_plan_kind kind;
    char **names;          /* node names of imported graphs (owned), or NULL */
    int *part;             /* per node, the part of the batch its value is of, from 1, in a step in
                              parts (mg_node.micro_batch); 0: of no one part. NULL: not in parts */
    struct mg_place_cache *placed; /* the placements made for it, shared by the threads of one solve
                                      (place_memo.c; set on solve_below's copy); NULL: none */
} mg_problem;

/* problem.c: the problem of one generated function of g (the joint graph for TRAIN). */
mg_problem *mg_problem_from_graph(const mg_graph *g, mg_plan_kind kind);
/* problem.c: an empty problem of n nodes with nedges input slots, all arrays zeroed. */
mg_problem *mg_problem_alloc(int n, int nedges);
void mg_problem_free(mg_problem *p);
/* problem.c: node w of `to` takes node v's sizes, cost and flags (not its inputs) from `from`. */
void mg_problem_node_copy(mg_problem *to, int w, const mg_problem *from, int v);
/* problem.c: part c's own problem in a step in parts (the nodes labelled c + 1 in p->part, in
 * order; edges from other nodes dropped: their values are taken as given), and map[v] its index
 * of each node of p (-1: not in it); NULL when the part has no nodes. */
mg_problem *mg_part_problem(const mg_problem *pr, int c, int *map);
/* problem.c: the number of parts of a step in parts (the largest label in p->part; 0 when p is
 * not in parts). */
int mg_part_count(const mg_problem *p);
/* problem.c: in a step in parts, the evictable values of no one part made of two parts' values or
 * more, directly or through another such value (a concatenation of the parts' values, made in
 * steps where there are more parts than an op has inputs): marks them in gathered (when not NULL,
 * n bytes) and returns how many there are (0 when p is not in parts). */
int mg_part_gathers(const mg_problem *p, char *gathered);
/* problem.c: in a step in parts, the checkpoints of the parts' forward passes: a forward value of
 * part c over which no edge between part c's forward values passes (in node order), read later
 * in that pass, evictable and not read by a value gathered from the parts; the values at the same
 * place in every part's order form a class, ranked by the part's forward cost up to it per byte;
 * a class with less than 1% of the part's forward cost between it and a better one is that one
 * over again, and left out. Marks in mark (n bytes) the values of the best `want` classes with
 * their rank (1 the best; 0 elsewhere) and returns how many classes it marked. */
int mg_part_checkpoints(const mg_problem *p, int want, char *mark);
/* problem.c: an xxHash of everything the solvers read of p (the nodes' sizes, scratch, costs,
 * inputs and flags, the places, the final steps, the model's hash where there is one; not the
 * names): the plan cache's key of an imported graph (mg_solution_cache_key). */
uint64_t mg_problem_hash(const mg_problem *p);
/* graph_import.c: a benchmark graph (Checkmate node-link JSON or Moccasin's layered DAGs). */
mg_status mg_problem_from_json(const char *file, const char *text, size_t len, mg_problem **out, mg_diag *d);

/* How the scheduler chooses what to keep. A cap of INT64_MAX never evicts: that is the
 * store-all schedule. */
typedef enum { MG_EVICT_COST_SIZE_DIST, MG_EVICT_SIZE_DIST, MG_EVICT_COST_SIZE, MG_EVICT_COST_SIZE_DIST2,
               MG_EVICT_COST_SIZE_SQRTDIST, MG_EVICT_NPOLICIES } mg_evict_policy;

typedef struct mg_sched_opts {
    int64_t cap;               /* live workspace bytes the schedule may hold at any step */
    mg_evict_policy policy;    /* which resident value to drop when over the cap */
    const char *keep;          /* optional, per node: forward values not marked are dropped as
                                  soon as only the backward pass still needs them (checkpointing) */
    int lazy;                  /* keep a dead value while a droppable value it feeds is still needed,
                                  until memory is short (cheaper recomputation) */
    int rc;                    /* 1: schedule with sched_rc.c (mg_schedule_rc) instead (keep and lazy
                                  unsupported); 2: the same, the cost of dropping a value counting
                                  the ancestors that will be freed before it is read again */
    uint64_t seed;             /* 0, or a restart: each value's eviction score is scaled by a factor
                                  in [1/2, 2) drawn from (seed, value), so restarts explore other
                                  choices where the policy's are poor */
    int fit;                   /* sched_remat.c: when one resident value alone covers what must be
                                  freed and costs less to bring back than the policy's choice,
                                  drop it instead (the policy ranks by cost per byte, which
                                  overpays for the last few bytes) */
    double flops_limit;        /* 0, or a cost the schedule may not exceed: past it the scheduler
                                  gives up (no plan), so hopeless variants stop early */
    const double *weight;      /* sched_remat.c, optional, per node: a factor on its eviction score
                                  (above 1: kept longer; below: dropped sooner), on top of seed's;
                                  sched_improve.c searches these */
    struct mg_sched_store *store; /* sched_remat.c, optional: scratch reused from schedule to
                                  schedule of one problem (mg_sched_store_new); a speed-up only,
                                  the schedule is the same */
    struct mg_rc_store *rc_store; /* sched_rc.c, optional: the same for its schedules (mg_rc_store_new) */
} mg_sched_opts;

/* sched_remat.c, shared with sched_rc.c's store: what every schedule of a problem reads alike,
 * built once per store. mg_sched_index_free frees its arrays. */
typedef struct mg_sched_index {
    int ntargets, nfwd_targets; /* targets, and those among the forward nodes */
    int *targets;               /* the targets in order */
    double *rest;               /* per target position i: the cost of the targets after it, each once */
    int *use_start, *uses;      /* per node: positions of the targets that read it (CSR) */
    int *out_start, *out;       /* per node: its consumers (CSR) */
} mg_sched_index;
void mg_sched_index_init(mg_sched_index *x, const mg_problem *pr);
void mg_sched_index_free(mg_sched_index *x);

/* sched_remat.c: what mg_schedule builds before it simulates (the problem's targets, readers
 * and consumers) and its per-node scratch and plan arrays, kept for the next schedule of the
 * same problem: a caller that schedules it hundreds of times (sched_improve.c's walk) makes one
 * and puts it in mg_sched_opts.store. One schedule at a time; freed by mg_sched_store_free. */
typedef struct mg_sched_store mg_sched_store;
mg_sched_store *mg_sched_store_new(const mg_problem *pr);
void mg_sched_store_free(mg_sched_store *store);
/* sched_rc.c's: the same, for mg_schedule_rc (mg_sched_opts.rc_store); one schedule at a time. */
typedef struct mg_rc_store mg_rc_store;
mg_rc_store *mg_rc_store_new(const mg_problem *pr);
void mg_rc_store_free(mg_rc_store *store);

/* sched_remat.c, shared with sched_rc.c: the cost of bringing v back now (its own cost and,
 * for each dropped input, what bringing it back cost when it was dropped, rc; an estimate that
 * counts shared ancestors more than once, so capped at cap), and the eviction score of a value
 * under policy from that cost, its size and the distance to its next read: the lower, the
 * sooner it is dropped. */
double mg_recompute_cost(const mg_problem *pr, const mg_place *where, const double *rc, double cap, int v);
double mg_evict_score(mg_evict_policy policy, double cost, double size, double dist);

/* plan_build.c: records a schedule as a plan. Every solver drives one of these: compute a
 * target (its inputs must be where the builder says they are), release a workspace value once
 * nothing reads it any more, and finish (the problem's final copies, then everything freed). */
typedef struct mg_plan_builder {
    const mg_problem *pr;
    mg_plan *p;
    int capsteps, capbufs;
    int64_t maxsteps;      /* mg_pb_reserve's figure: the steps grow by doubling up to it (0: no limit) */
    int64_t live;          /* bytes of workspace buffers resident now */
    mg_place *where;       /* per node: where its value is now (mem NONE: not resident) */
    int *last_read;        /* per node: the last step that read the resident instance */
    struct mg_pb_store *store; /* NULL, or the store whose arrays these are (mg_pb_init_in) */
} mg_plan_builder;
void mg_pb_init(mg_plan_builder *b, const mg_problem *pr);
/* A caller-owned store of the builder's arrays (steps, buffers, per-node places), for a caller
 * that builds many schedules of one problem one after the other (sched_improve.c's walk: ~1,300
 * on resnet50 at its minimum): each builder started in it borrows its arrays, grown as needed
 * and kept at their size, and mg_pb_finish copies the plan out at its size, so schedules no
 * longer grow their arrays by realloc (fresh pages each time, glibc trimming the heap top and
 * growing it again). Zero-initialise it; one builder at a time; mg_pb_store_free frees it. */
typedef struct mg_pb_store {
    mg_step *steps;
    mg_buffer *bufs;
    int capsteps, capbufs, n;
    mg_place *where;
    int *last_read;
    int busy; /* a builder holds the arrays */
} mg_pb_store;
void mg_pb_init_in(mg_plan_builder *b, const mg_problem *pr, mg_pb_store *store); /* store NULL: mg_pb_init */
void mg_pb_store_free(mg_pb_store *store);
int mg_pb_compute(mg_plan_builder *b, int v, int recompute); /* returns the step */
int mg_pb_release(mg_plan_builder *b, int v);                /* 1 if v was a resident buffer */
/* A scheduler's step limit: the steps (sized for every target once and a quarter more) grow by
 * doubling as a schedule recomputes, never past nsteps. Nothing is allocated up front: under
 * AddressSanitizer every allocation over 128 KiB is a fresh mapping whose shadow is written
 * when it is freed, so reserving the limit (8 steps a target) cost more than the schedule. */
void mg_pb_reserve(mg_plan_builder *b, int64_t nsteps);
mg_plan *mg_pb_finish(mg_plan_builder *b);                   /* the builder is spent after */
void mg_pb_discard(mg_plan_builder *b);
/* A plan is its compute steps replayed: a node computed again is a recomputation, its earlier
 * instance released there (a buffer ends at its last read wherever the scheduler released it),
 * and the problem's copies come after, as mg_pb_finish adds them. So a schedule can be kept as
 * the nodes it computes, in order (4 bytes a step where its plan takes over 100), and rebuilt.
 * mg_plan_compute_steps writes p's into seq (room for p->nsteps) and returns how many;
 * mg_pb_replay builds the plan of seq[0..n), NULL where a step reads a target not computed
 * before it; seen: scratch of pr->n bytes, or NULL (it allocates its own). The plan is
 * not placed, and its peak live bytes not set. */
int mg_plan_compute_steps(const mg_plan *p, int *seq);
mg_plan *mg_pb_replay(const mg_problem *pr, const int *seq, int n, char *seen);

/* sched_remat.c: simulates the function's targets in order under opts->cap, dropping
 * resident evictable values when over it and recomputing them (recursively, from whatever is
 * resident) before a later step reads them; every value is freed after its last use. Buffers
 * are sized but not yet placed. When the cap cannot be met it returns MG_OK with *out NULL. */
mg_status mg_schedule(const mg_problem *prob, const mg_sched_opts *opts, mg_plan **out, mg_diag *d);
/* The same, and the caps it would do exactly the same under (the same schedule, or no schedule):
 * every cap c with range[0] <= c < range[1], opts->cap among them. */
mg_status mg_schedule_range(const mg_problem *prob, const mg_sched_opts *opts, mg_plan **out, int64_t range[2],
                            mg_diag *d);
/* sched_rc.c: the same contract, but a target's dropped inputs are brought back one at a time
 * (largest recomputation first), locking only the inputs of the nodes being recomputed: it
 * meets tighter caps where one node reads many values from far back. opts->keep is ignored. */
mg_status mg_schedule_rc(const mg_problem *prob, const mg_sched_opts *opts, mg_plan **out, mg_diag *d);
/* The same, and the caps it would do exactly the same under (the same schedule, or no schedule):
 * every cap c with range[0] <= c < range[1] (the scheduler compares its footprint with the cap
 * and with nothing else depending on it), opts->cap among them. */
mg_status mg_schedule_rc_range(const mg_problem *prob, const mg_sched_opts *opts, mg_plan **out, int64_t range[2],
                               mg_diag *d);
void mg_plan_free(mg_plan *p);
/* The most bytes of p's buffers live at one step (each from its first step to its last,
 * inclusive): its peak of live bytes, what no placement goes below. */
int64_t mg_plan_peak_live(const mg_plan *p);

/* arena.c: gives every buffer an offset (no two buffers live at the same step overlap) and
 * sets workspace_bytes and peak_live_bytes. */
mg_status mg_arena_assign(mg_plan *p, mg_diag *d);
/* The same, for a plan that must fit capacity: when the smallest arena the search aims at first
 * (the peak live bytes) is out of its reach and the arena is above capacity, it searches again
 * for one within capacity. */
mg_status mg_arena_assign_within(mg_plan *p, int64_t capacity, mg_diag *d);
/* The same in a caller's scratch: a caller that places plan after plan (the planner's fits,
 * sched_improve.c's walks) keeps one, and each placement's tables are cut from memory already
 * mapped instead of being allocated, freed and mapped afresh (the same placement). */
typedef struct mg_arena_scratch mg_arena_scratch;
mg_arena_scratch *mg_arena_scratch_new(void);
void mg_arena_scratch_free(mg_arena_scratch *scratch);
mg_status mg_arena_assign_in(mg_plan *p, int64_t capacity, mg_arena_scratch *scratch, mg_diag *d);
/* The same, and same[0..1] (inclusive): every capacity in that range gives this very placement
 * (the greedy's and the search's comparisons with the capacity all come out the same; where the
 * search ran, from the capacity up), so a caller that places the same buffers again under
 * another capacity in it may take this one. */
mg_status mg_arena_assign_same(mg_plan *p, int64_t capacity, mg_arena_scratch *scratch, int64_t same[2], mg_diag *d);
/* The same with effort times the search effort of the others (0: the greedy placements alone). */
mg_status mg_arena_assign_effort(mg_plan *p, int64_t capacity, double effort, mg_arena_scratch *scratch,
                                 int64_t same[2], mg_diag *d);
/* The same as mg_arena_assign_within, and a placement of more than MG_ARENA_PLAN_SEARCH_MAX
 * buffers, which the others do not search, compacted as the `arena` command's are (about 0.1-0.3
 * s on 5,000-7,600 buffers, where the others take 0.05 s): the planner's near misses. */
enum { MG_ARENA_PLAN_SEARCH_MAX = 2000 };
mg_status mg_arena_assign_compacted(mg_plan *p, int64_t capacity, mg_diag *d);

/* plan_verify.c: the independent checker; replays the schedule of prob. */
mg_status mg_plan_verify(const mg_plan *p, const mg_problem *prob, mg_diag *d);

/* sched_improve.c: a local search over the score weights of sched_remat.c's schedule under
 * opts (opts->weight is replaced): moves reweight one recomputed value at a time and are kept
 * when the schedule gets cheaper (from a start whose cap is lowered a little when it misses the
 * budget once placed); the last few schedules of the walk are placed, or when they miss, earlier
 * states of the walk found by bisection, and *best (a placed plan within budget, or NULL) is
 * replaced by the cheapest of them that fits budget when that is cheaper. At most max_schedules
 * schedules are made (and a few more, with their placements). */
/* How many schedules a walk of prob gets (0: none, the problem is too large). */
int mg_improve_schedules(const mg_problem *prob);
mg_status mg_improve_schedule(const mg_problem *prob, const mg_sched_opts *opts, int64_t budget, int max_schedules,
                              mg_plan **best, mg_diag *d);
/* The same, at most *schedules schedules; *schedules is then set to how many of them it did not
 * make (a walk that stopped early, or a start that missed: planner.c hands them to the next). */
mg_status mg_improve_schedule_n(const mg_problem *prob, const mg_sched_opts *opts, int64_t budget, int *schedules,
                                mg_plan **best, mg_diag *d);
/* sched_improve.c: edits of *best's schedule itself (a placed plan within budget, or NULL; only
 * plans of compute steps alone): each drops one recomputation and repairs the steps then over
 * budget by recomputing other values; *best is replaced by a cheaper plan that fits budget once
 * placed. At most max_plans schedules are built (and the placements of those that fit). */
mg_status mg_polish_schedule(const mg_problem *prob, int64_t budget, int max_plans, mg_plan **best, mg_diag *d);
/* The first step of the plan of the compute sequence seq[0..T) over cap (-1: none; -2: a step
 * reads a value not yet computed, where no plan exists), without building the plan: the buffers
 * as its plan builder makes them (each computation of a workspace value live from its step to
 * its last read before the value is computed again, or to the end; scratch for its step; the
 * result to the last step). end[s]: the last step of the buffer step s writes (-1: none). inst,
 * last: scratch per node (prob->n); live: T + 1 entries. */
int mg_seq_first_over(const mg_problem *prob, const int *seq, int T, int64_t cap, int *inst, int *last, int64_t *live,
                      int *end);

/* sched_refill.c: on a placed plan, each recomputation whose value could have stayed in the
 * workspace until then (its address range free from the last read, or the recomputation's own
 * range, or another below the top, free from the first computation) is removed, with the
 * recomputations only it read; the kept instance is read instead. Offsets of the other buffers are kept: the workspace does not
 * grow, the FLOPs executed drop and the live bytes rise into the arena's holes. */
void mg_plan_refill(mg_plan *p, const mg_problem *pr);

/* sched_search.c: the cheapest schedule under cap (peak live bytes) by best-first search over
 * (next target, resident values), or NULL when none exists or the search would visit more than
 * max_states states (problems with more than 64 workspace values are not searched). *complete
 * says the search finished: the plan is optimal, or no schedule fits the cap. */
mg_status mg_schedule_search(const mg_problem *prob, int64_t cap, int max_states, mg_plan **out, int *complete,
                             mg_diag *d);

/* sched_chain.c: optimal checkpointing of chains (Rotor-style dynamic programming over stages
 * cut at the forward values that alone cross a position). analyse returns NULL when the
 * problem's forward part is not such a chain with backward blocks in reverse stage order (or
 * is too long for the DP). schedule gives the cheapest schedule the DP finds under cap (bytes of
 * peak live workspace, not yet placed), or NULL; the DP's tables are built on the first call,
 * for caps up to table_cap, and reused for every smaller cap. */
typedef struct mg_chain mg_chain;
mg_chain *mg_chain_analyse(const mg_problem *prob);
int mg_chain_stages(const mg_chain *c);
mg_status mg_chain_schedule(mg_chain *c, int64_t cap, int64_t table_cap, mg_plan **out, mg_diag *d);
/* What the DP's schedule under cap recomputes (its cost above every target once), INFINITY
 * when it has none: the schedule's plan costs exactly that much more than flops_once. */
double mg_chain_cost(mg_chain *c, int64_t cap, int64_t table_cap);
void mg_chain_free(mg_chain *c);

/* solve_exact.c: Checkmate's MILP for prob under cap (peak live bytes), solved by CBC within
 * time_limit seconds, looking only for schedules cheaper than cutoff (HUGE_VAL: any). plan is
 * the best schedule found (not yet placed), or NULL; lower_bound is a proven bound on the cost
 * of any schedule in the program's class under cap (-1: none). proven says the search
 * finished: plan is optimal in the class, or (infeasible) no schedule in it that meets the cap
 * costs less than cutoff. */
typedef struct mg_exact_result {
    mg_plan *plan;
    double lower_bound;
    int proven, infeasible;
    int crashed;           /* the solver process died (CBC's own assertions) or overran: no result */
    int timed_out;         /* ... because it overran the time limit and was stopped */
} mg_exact_result;
mg_status mg_solve_exact(const mg_problem *prob, int64_t cap, double time_limit, double cutoff, mg_exact_result *out,
                         mg_diag *d);
/* bound_step.c: a lower bound on the cost any schedule within budget recomputes (beyond running
 * every target once), from single steps: the values that cannot stay resident across a step
 * run twice, and the cheapest bytes that cover what does not fit beside a step (0 with no
 * budget). */
double mg_step_bound(const mg_problem *prob, int64_t budget);
/* mg_step_bound of the schedules that run prob's targets in `order` (each target once, the
 * order its first computations take; NULL: node order, the memory model's). */
double mg_step_bound_in(const mg_problem *prob, int64_t budget, const int *order);
/* bound_step.c: the least workspace any schedule of prob needs: the largest working set of one
 * step (its operands in the workspace, its output and its scratch). */
int64_t mg_working_set_bound(const mg_problem *prob);
/* bound_cut.c: a lower bound on the cost any schedule within budget recomputes (beyond running
 * every target once), from the steps where what is live across does not fit: what the next
 * steps read must then be rebuilt from what fits (a minimum cut per window of steps). */
double mg_cut_bound(const mg_problem *prob, int64_t budget);
/* mg_cut_bound of the schedules that run prob's targets in `order` (as mg_step_bound_in). */
double mg_cut_bound_in(const mg_problem *prob, int64_t budget, const int *order);
/* planner.c: what every plan auto may make within budget recomputes at least (beyond running every
 * target once): the larger of mg_step_bound and mg_cut_bound in each order of the targets its
 * plans may take (the graph's, mg_parts_orders'), the least of those, and at least
 * mg_parts_bound; what `flops_lower_bound` reports (with the relaxed program's under exact). */
double mg_lower_bound(const mg_problem *prob, int64_t budget);
/* bound_parts.c: a lower bound on the cost a training step in parts (microbatch.c) recomputes
 * within budget: the sum over its parts (prob->part) of what each part's own problem must
 * recompute (0 for a step not in parts). It holds for any labelling of the nodes. */
double mg_parts_bound(const mg_problem *prob, int64_t budget);
/* sched_parts.c: a schedule of a step in parts within budget, part by part: each part's backward
 * block replaced by the plan `solve` gives for the part's own problem under the budget less what
 * the step holds across the block (solve: MG_OK with *out NULL when it has none). Placed, not
 * verified; *out NULL where it does not apply (not in parts, the blocks not contiguous) or
 * found nothing within budget. */
typedef mg_status (*mg_part_solver)(void *ctx, const mg_problem *q, int64_t cap, mg_plan **out, mg_diag *d);
mg_status mg_parts_schedule(const mg_problem *pr, int64_t budget, mg_part_solver solve, void *ctx, mg_plan **out,
                            mg_diag *d);
/* sched_parts.c: the orders other than the graph's in which mg_parts_schedule's plans run the
 * targets of pr (their first computations): into orders[0..k), each an array of every target
 * once, which the caller frees; returns k (0 to 2; 0 where pr is not in parts or its blocks
 * cannot run one after another). The bounds of the graph's order (bound_step.c, bound_cut.c,
 * the relaxed program) hold only for plans in that order. */
int mg_parts_orders(const mg_problem *pr, int *orders[2]);
/* planner.c: mg_parts_schedule's solver of a part's own problem under cap, as auto uses it:
 * store-all where it fits, else auto's solve at cap (placed, not verified: a part's problem
 * has no graph of its own), its walks stopping at the part's own lower bound. ctx unused. */
mg_status mg_solve_part(void *ctx, const mg_problem *q, int64_t cap, mg_plan **out, mg_diag *d);
/* bound_cut.c: mg_cut_bound over more candidate steps, and its best sum's windows linked by
 * what each keeps live at its start (iters subgradient steps): the larger. Costlier (resnet50
 * at its minimum: ~0.45 s with 100), so only solve_exact.c's relaxed bound runs it. */
double mg_cut_bound_chained(const mg_problem *prob, int64_t budget, int iters);
/* mg_cut_bound_chained, and the steps its chain links (starts, ascending; room for every
 * target of prob; none when it gives no bound: *nstarts = 0). solve_exact.c solves that chain
 * in integers. */
double mg_cut_bound_chain_steps(const mg_problem *prob, int64_t budget, int iters, int *starts, int *nstarts);
/* solve_exact.c: a lower bound on the cost (every target once, plus recomputations) of every
 * schedule of prob whose steps fit cap (peak live bytes), from a relaxation of the memory model
 * solved by CBC within time_limit seconds (proven even when stopped early), or from
 * mg_cut_bound_chained when that is higher; -1 when neither gave any. */
mg_status mg_relaxed_bound(const mg_problem *prob, int64_t cap, double time_limit, double *bound, mg_diag *d);
/* mg_relaxed_bound with cutoff, the cost of a schedule of prob known to fit cap (HUGE_VAL:
 * none): CBC discards what cannot come below it, and the bound is at most cutoff, cutoff
 * itself when CBC proves that nothing in the relaxed program costs less (the schedule is then
 * optimal). */
mg_status mg_relaxed_bound_below(const mg_problem *prob, int64_t cap, double time_limit, double cutoff, double *bound,
                                 mg_diag *d);

/* solve_exact.c: the relaxed program restricted to target positions first .. last (what is
 * resident at first is free: whatever fits cap), solved by CBC within time_limit seconds: a
 * bound on what any schedule under cap recomputes between targets first and last (the gaps
 * first .. last - 1), at most cutoff (HUGE_VAL: none); -1 when none was proven. Windows whose
 * gaps do not overlap bound disjoint parts of a schedule's recomputation, so their bounds add. */
mg_status mg_relaxed_window_bound(const mg_problem *prob, int64_t cap, int first, int last, double time_limit,
                                  double cutoff, double *bound, mg_diag *d);

/* solve_exact.c: mg_cut_bound_chained's chain of windows solved in integers by CBC within
 * time_limit seconds (steps added to it while CBC proves higher figures): a bound on what any
 * schedule under cap recomputes (beyond every op once), at least mg_cut_bound_chained's when
 * CBC finishes. mg_relaxed_bound takes it. */
mg_status mg_chain_milp_bound(const mg_problem *prob, int64_t cap, double time_limit, double *bound, mg_diag *d);

/* The relaxed program's linear relaxation alone, solved by Clp within time_limit seconds: a
 * bound proven from Clp's row multipliers whether or not it finished (-1: none). This is what
 * mg_relaxed_bound_below uses on programs too large for CBC to get through its root. */
mg_status mg_relaxed_lp_bound(const mg_problem *prob, int64_t cap, double time_limit, double *bound, mg_diag *d);

/* planner.c: the solvers. */
typedef enum { MG_SOLVER_AUTO, MG_SOLVER_STORE_ALL, MG_SOLVER_SQRT, MG_SOLVER_EXACT } mg_solver;
extern const char *const mg_solver_names[]; /* "auto", "store-all", "sqrt", "exact" */

typedef struct mg_solution {
    mg_plan *plan;                /* NULL when the budget cannot be met */
    int64_t store_all_bytes;      /* the store-all workspace of this problem */
    int64_t min_feasible_bytes;   /* -1 unless asked for or the budget was not met */
    int min_cut_short;            /* MG_MIN_AS_PLANNED: the search was left out (min_feasible_bytes
                                     -1) or ended early (a plan's workspace, above the minimum) */
    int optimal;                  /* 1 proven optimal, 0 not, -1 unknown */
    int optimal_in_class;         /* optimal == 1 was proven by the MILP: only among the schedules
                                     of its class (solve_exact.c), so it is no bound on the others */
    double lower_bound;           /* a proven lower bound on the cost of every plan (-1: none) */
    const char *note;             /* something the user should know about the search, or NULL */
} mg_solution;

/* Plans one problem under an absolute budget (INT64_MAX: none). Every plan returned has been
 * placed and verified. */
mg_status mg_solve(const mg_problem *prob, mg_solver solver, int64_t budget, int want_min, double time_limit,
                   mg_solution *out, mg_diag *d);

/* mg_solve, then (auto and exact, unless proven optimal) `incumbent` — a placed plan of the same
 * problem, e.g. the plan of the previous, smaller budget of a sweep; NULL: none — is returned in
 * its place, copied and verified again, when it fits the budget and executes fewer FLOPs. The
 * heuristics are not monotone in the budget; a sweep that passes each point's plan on to the
 * next never sees auto's cost rise as the budget rises. */
mg_status mg_solve_from(const mg_problem *prob, mg_solver solver, int64_t budget, int want_min, double time_limit,
                        const mg_plan *incumbent, mg_solution *out, mg_diag *d);

/* The most operations a training step may have to be planned (README, "Limits"): planning time
 * grows faster than the graph, about a minute at 60,000. The driver holds models to it
 * (driver.c, plannable), and mg_plan_split the graph split into the --micro-batches parts asked
 * for. */
enum { MG_PLAN_MAX_NODES = 1 << 16 };
/* The most operations of a split graph the search over part counts plans by itself (plan_split.c):
 * a bound on its time. MG_PARTS_AUTO_MAX_NODES lets a model of ~10,000 operations be tried in 2
 * parts (a chain of 1,666 matmul layers at 50% of its store-all: 16.94% recomputed whole, 0.05%
 * in 2 parts of 18,340 operations, 3.4 s -> 9.9 s of `plan`; 5,000 until 2026-12-07, which kept it
 * whole); MG_PARTS_UNMET_MAX_NODES where no plan of the whole batch meets the budget, as
 * the alternative is to refuse it or recompute more (that chain under 150,000 bytes: 258%
 * recomputed in 4 parts of 35,010 operations, 36.7 s, against 558% in 2 parts, 15.9 s, and a
 * refusal in 3.4 s with the limits of before); --max-split-ops sets both
 * (mg_plan_request.parts_max_nodes); more parts are planned when asked for
 * (--micro-batches), up to MG_PLAN_MAX_NODES, and the reports say which part count was left out
 * (mg_planned). */
enum { MG_PARTS_AUTO_MAX_NODES = 20000, MG_PARTS_UNMET_MAX_NODES = 40000 };

/* mg_plan_request.want_min_feasible: the minimum search's plans can be cheaper than the solve's at
 * a budget near the minimum (planner.c, solve_below), so a command that emits a plan (compile)
 * searches too, or it could emit a dearer plan than `plan` reports (unet_small at 2,941,320 bytes:
 * 2,917,056 workspace bytes and 1.3% more FLOPs than the 2,883,648 `plan` reported). It needs the
 * searches of the part counts it plans at the budget only, not those of the counts planned only
 * to lower the minimum (plan_split.c), nor any where store-all fits or the plan at the budget
 * runs every op once, and only until it finds a plan far enough below the budget
 * (mg_far_above_min) (planner.c, solve_below); its min_feasible_bytes is then at least the
 * minimum, -1 where it searched nothing (the whole minimum where no plan meets the budget). */
enum { MG_MIN_NO = 0, MG_MIN_YES = 1, MG_MIN_AS_PLANNED = 2 };

typedef struct mg_plan_request {
    mg_solver solver;
    const mg_budget *budget; /* workspace cap (bytes or % of store-all); NULL for none */
    double time_limit;    /* seconds, for solvers that search */
    int want_min_feasible;/* also find the smallest budget the planner can meet; MG_MIN_AS_PLANNED:
                             only as far as the plan needs it (below) */
    uint64_t build_id;    /* plan cache only: the planner's build (mg_plan_cache_build_id_self); the
                             driver caches nothing when it is 0 */
    int64_t min_feasible_below; /* > 0: the minimum search looks only below this many bytes (plan_split.c:
                                   the least minimum of the part counts tried so far); when it finds
                                   nothing there, min_feasible_bytes comes back as this value. 0: no bound.
                                   Not part of the cache key: plan_split.c sets it per part count. */
    double flops_ceiling;       /* > 0: only a training step executing fewer FLOPs is wanted (plan_split.c:
                                   a part count tried for a plan cheaper than the one it has); the solve
                                   at the budget fits no schedule costing that or more, and comes back
                                   without a plan where it has none below it. 0: none. Not part of
                                   the cache key: plan_split.c sets it per part count. */
    int parts_max_nodes[2];     /* the most operations of a split graph the search over part counts
                                   plans by itself (plan_split.c), where the whole batch meets the
                                   budget and where it misses it; 0: MG_PARTS_AUTO_MAX_NODES,
                                   MG_PARTS_UNMET_MAX_NODES (--max-split-ops sets both) */
} mg_plan_request;

typedef struct mg_planned {
    mg_plan *train, *forward;     /* NULL when the budget cannot be met */
    int64_t workspace_bytes;      /* max of the two plans' workspaces */
    int64_t budget_bytes;         /* the budget resolved to bytes (INT64_MAX: none) */
    int64_t store_all_bytes;      /* the store-all workspace (the 100% point) */
    int64_t min_feasible_bytes;   /* -1 unless asked for, or when the budget was not met */
    int optimal;                  /* 1 proven optimal, 0 not, -1 unknown */
    double flops_lower_bound;     /* proven bound on the training step's FLOPs (-1: none) */
    const char *note;             /* the training step's search note (mg_solution), or NULL */
    double solve_seconds;
    mg_graph *graph;              /* the joint graph both plans are of (owned): micro-batched, or with
                                     its batch_norms lowered (mg_split_graph, microbatch.h); NULL:
                                     the model's own */
    int micro_batches;            /* into how many parts graph splits the batch (0 or 1: not split) */
    int convs_uncapped;           /* graph's convolutions keep the whole batch's scratch
                                     (mg_microbatch_ex's cap_convs 0) */
    mg_diag unsplit;              /* plan_split.c, when no plan met the budget and the batch could not
                                     be split at all: why (msg empty otherwise) */
    int parts_not_tried;          /* plan_split.c without --micro-batches: the part count it stopped at
                                     with more parts still wanted (for a lower minimum or a cheaper
                                     plan), as that graph has more than parts_max_nodes operations
                                     (0: none was left out) */
    int parts_not_tried_ops;      /* and that graph's operations */
    int parts_max_nodes;          /* the search's limit then: MG_PARTS_AUTO_MAX_NODES, or
                                     MG_PARTS_UNMET_MAX_NODES where the whole batch missed the budget */
} mg_planned;

/* The greatest common divisor of two non-negative sizes (0 with 0: the other). */
static inline int64_t mg_gcd64(int64_t a, int64_t b)
{
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* The joint graph p's plans are of: p->graph, or the model's g. */
static inline const mg_graph *mg_planned_graph(const mg_planned *p, const mg_graph *g)
{
    return p->graph ? p->graph : g;
}

/* Plans g under rq. A budget no plan meets is not an error here: train and forward come back
 * NULL and min_feasible_bytes is filled, so the caller can say what would fit. */
mg_status mg_plan_program(const mg_graph *g, const mg_plan_request *rq, mg_planned *out, mg_diag *d);
void mg_planned_free(mg_planned *p);
/* plan_scratch.c: the capped kernel steps of a placed plan of g take larger blocks where the arena
 * has room for their scratch during the step, within its workspace and peak of live bytes. */
void mg_plan_widen_scratch(mg_plan *p, const mg_graph *g);
/* The plan verifier on both plans of a program. */
mg_status mg_program_verify(const mg_graph *g, const mg_planned *p, mg_diag *d);

/* plan_cache.c: plans on disk, keyed by everything they depend on. Load returns 1 only for an
 * entry whose checksum matches and whose plans pass the verifier against g; store returns
 * MG_ERR (nothing else) when the entry cannot be written, errno then saying why. */
uint64_t mg_plan_cache_key(const mg_graph *g, const mg_plan_request *rq);
/* A hash of the file at exe, for mg_plan_request.build_id: a rebuilt or upgraded planner may
 * plan better, so it must not be served an older one's plans. 0 when the file cannot be read. */
uint64_t mg_plan_cache_build_id(const char *exe);
/* The same of the file this code runs from (found in /proc/self/maps, whichever program the
 * kernel started: `ld.so ./memgrad` too); 0 when it cannot be read (no /proc), and then nothing
 * may be cached: a build id of 0 would be every such build's. */
uint64_t mg_plan_cache_build_id_self(void);
int mg_plan_cache_load(const char *dir, uint64_t key, const mg_graph *g, mg_planned *out);
mg_status mg_plan_cache_store(const char *dir, uint64_t key, const mg_planned *p);
/* What a cache directory holds of memgrad's files (entries, and writers' temporaries among
 * files), or what a prune or clear removed. Other files in the directory are never counted or
 * removed. */
typedef struct mg_plan_cache_usage {
    int64_t entries, files, bytes;
} mg_plan_cache_usage;
/* The default bound on a cache directory's bytes (MEMGRAD_CACHE_MAX_SIZE overrides it; 0: none). */
#define MG_PLAN_CACHE_MAX_BYTES ((int64_t)256 << 20)
mg_status mg_plan_cache_stats(const char *dir, mg_plan_cache_usage *u, mg_diag *d);
/* Removes the least recently used entries (a load sets an entry's time) until memgrad's files
 * add up to at most max_bytes (0: no bound), never the entry of key keep (just stored), and
 * writers' temporaries left for an hour. */
mg_status mg_plan_cache_prune(const char *dir, int64_t max_bytes, uint64_t keep, mg_plan_cache_usage *removed,
                              mg_diag *d);
/* Removes every entry and temporary of memgrad's; MG_ERR with d at the first it cannot. */
mg_status mg_plan_cache_clear(const char *dir, mg_plan_cache_usage *removed, mg_diag *d);

/* plan_cache.c: the solutions of imported graphs (plan --graph, sweep --graph) in the same
 * directory, as KEY.plan entries of their own format and key (which a model's key never equals):
 * what mg_solve_from(pr, solver, budget, want_min, time_limit, incumbent) returned. */
typedef struct mg_solve_request {
    mg_solver solver;
    const mg_budget *budget;  /* bytes or a percentage of the store-all workspace; NULL: none */
    int want_min;
    double time_limit;        /* keyed for exact only (the others take none) */
    const mg_plan *incumbent; /* mg_solve_from's (keyed by its content); NULL: none */
    uint64_t build_id;        /* as mg_plan_request's */
} mg_solve_request;
uint64_t mg_solution_cache_key(const mg_problem *pr, const mg_solve_request *rq);
/* 1 and *out (its plan the caller's), *seconds (of the solve that made it) for an entry whose
 * checksum matches, whose plan the verifier accepts against pr and whose figures agree with it
 * and with budget (resolved against the entry's store-all workspace); else 0, *out empty. */
int mg_solution_cache_load(const char *dir, uint64_t key, const mg_problem *pr, const mg_budget *budget,
                           mg_solution *out, double *seconds);
/* As mg_plan_cache_store: MG_ERR (errno saying why) when it cannot be written; a solution
 * without a plan is not stored (EINVAL). */
mg_status mg_solution_cache_store(const char *dir, uint64_t key, const mg_solution *s, double seconds);

/* How a matmul node maps onto GEMM calls: one call over M = all rows when B is a matrix and A
 * is not transposed (stacks of A rows are contiguous), else one call per batch entry. */
typedef struct mg_matmul_geom {
    int64_t M, N, K, lda, ldb;
    int flat;
} mg_matmul_geom;
mg_matmul_geom mg_matmul_geometry(const mg_graph *g, int node);
/* The scratch cap a node's kernel runs under in its graph (microbatch.c gives the convolutions
 * and flat matrix products of a graph in parts one: iattr[5], iattr[2]); 0: none. */
int64_t mg_node_scratch_cap(const mg_graph *g, int node);
/* Kernel scratch bytes of any node (GEMM packing, im2col patches) under its own cap, 0 for
 * kernels without; under cap (<= 0, MG_CAP_NONE too: none, the kernel's whole blocks), the
 * kernels' contract. */
int64_t mg_node_scratch_bytes(const mg_graph *g, int node);
int64_t mg_node_scratch_bytes_cap(const mg_graph *g, int node, int64_t cap);
/* The cap a step's kernel runs under (its own, or its node's; 0: none). */
int64_t mg_step_scratch_cap(const mg_graph *g, const mg_step *st);
/* The kernel geometry of a conv2d, conv2d_grad_input or conv2d_grad_weight node. */
mgk_conv_geom mg_conv_geom(const mg_graph *g, int node);
#endif
