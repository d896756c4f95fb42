/* autodiff.h — reverse-mode differentiation of the forward graph. */
#ifndef MG_AUTODIFF_H
#define MG_AUTODIFF_H
#include "ir.h"

/* Appends the backward pass to g (which must have g->loss set), turning it into the joint
 * graph, and fills g->param_grads (-1 for a parameter the loss does not depend on).
 * requires: a verified forward graph; maintains: topological order, verified types. */
mg_status mg_autodiff(mg_graph *g, mg_diag *d);
#endif
