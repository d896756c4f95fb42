/* microbatch.h — the micro-batching rewrite of a joint graph (microbatch.c) and the planning
 * driver that uses it when a budget cannot be met on the whole batch (plan_split.c). */
#ifndef MG_MICROBATCH_H
#define MG_MICROBATCH_H
#include "plan.h"

/* The micro-batch counts k >= 2 the rewrite can make of g, ascending, into ks (room for max);
 * returns how many. 0 when g has no per-sample prefix worth splitting, with the reason in why. */
int mg_microbatch_counts(const mg_graph *g, int *ks, int max, mg_diag *why);

/* The joint graph g (after autodiff) with its per-sample prefix (the forward ops from the batch
 * inputs on through which sample n of the result depends only on sample n of the inputs, and
 * the backward ops of the same kind that follow them) run as k copies on N/k samples each. The
 * copies read slices of the batch inputs; values used whole later are concatenated; parameter
 * gradients of the prefix are summed micro-batch after micro-batch in order through the
 * accumulating ops, so every value of the new graph has the bits of the same value of g.
 * Matrix products get 1/k of their usual GEMM scratch (iattr[2]; the same bits).
 * Forward nodes come first; inputs, params, outputs, loss and param_grads correspond to g's.
 * MG_ERR with a diag when k is not one of mg_microbatch_counts. */
mg_status mg_microbatch(const mg_graph *g, int k, mg_graph **out, mg_diag *d);
/* The same; cap_convs 0 leaves the convolutions the whole batch's scratch (their fastest blocks),
 * 1 (mg_microbatch) gives them 1/k of it like the matrix products (iattr[5]). */
mg_status mg_microbatch_ex(const mg_graph *g, int k, int cap_convs, mg_graph **out, mg_diag *d);
/* The input whose axis 0 is the batch: the first input with axes (NULL: none). Every input with
 * the same axis 0 is a batch input. */
const mg_node *mg_microbatch_batch_input(const mg_graph *g);
/* Whether some convolution of g runs with a capped scratch (iattr[5]). */
int mg_microbatch_convs_capped(const mg_graph *g);

/* plan_split.c: mg_plan_program, and when the budget cannot be met on the whole batch (or the
 * minimum feasible budget is asked for) the same on the micro-batched graphs; the cheapest plan
 * that fits wins (the whole batch, then fewer micro-batches, on a tie). out->graph then owns
 * the graph the plans are of (mg_split_graph's; NULL: g), out->micro_batches says into how many
 * parts. Percentages refer to the whole batch's store-all workspace. micro_batches: 0 as just
 * said, 1 never split, k >= 2 exactly k parts (an error when the rewrite cannot make them). */
mg_status mg_plan_split(const mg_graph *g, const mg_plan_request *rq, int micro_batches, mg_planned *out, mg_diag *d);
/* The graph mg_plan_split plans of g in k parts (k = 1: the whole batch): the rewrite's, its
 * batch_norms not split lowered (bn_lower.c; not where that makes more than MG_PLAN_MAX_NODES
 * operations); NULL for k = 1 when that is g itself. cap_convs as mg_microbatch_ex's. */
mg_status mg_split_graph(const mg_graph *g, int k, int cap_convs, mg_graph **out, mg_diag *d);
/* The plan cache key of mg_plan_split's plans (mg_plan_cache_key and the micro-batch option). */
uint64_t mg_plan_split_cache_key(const mg_graph *g, const mg_plan_request *rq, int micro_batches);
#endif
