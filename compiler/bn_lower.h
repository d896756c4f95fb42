/* bn_lower.h — whole-batch batch_norm lowered to statistics and normalisation (bn_lower.c). */
#ifndef MG_BN_LOWER_H
#define MG_BN_LOWER_H
#include "ir.h"

/* g (a joint graph, whole or in parts) with each batch_norm that is not split into parts made
 * bn_stats, bn_stats_acc and bn_apply, and its gradients bn_grad_sums, then bn_grad_apply and
 * bn_grad_param (the ops of one part, microbatch.c): the same values, bit for bit, with the
 * statistics summed once. The inputs, params, outputs, loss and param_grads correspond to g's,
 * forward nodes first. *out is NULL when g has no batch_norm (g is as lowered as it gets). */
mg_status mg_bn_lower(const mg_graph *g, mg_graph **out, mg_diag *d);
#endif
