/* report_dot.c — the joint graph as Graphviz DOT (`dot -Tsvg`), each node coloured by what the
 * plan decided for its value: kept for the backward pass, recomputed, freed early, a backward
 * value, written to caller memory; parameters, inputs and constants are grey ellipses. Labels
 * carry the name, op, type and the decision; decisions come from mg_report_figures. */
#include "report.h"

void mg_report_dot(FILE *out, const mg_report_figures *f)
{
    static const char *const fill[] = {"#1f5fae", "#e8431c", "#9cc3e8", "#8fd18f", "#f5e27a"};
    static const char *const font[] = {"white", "white", "black", "black", "black"};
    const mg_graph *g = f->g;
    fprintf(out, "digraph \"");
    mg_dot_write_string(out, g->model_name);
    fprintf(out, "\" {\n  // memgrad dot: the joint graph; colours are the plan's decisions\n");
    fprintf(out, "  graph [rankdir=TB, fontname=\"Helvetica\", label=\"");
    mg_dot_write_string(out, g->model_name);
    fprintf(out, ": %d recomputation step%s, recompute overhead %.1f%%", f->recompute_steps, mg_plural(f->recompute_steps),
            100.0 * f->recompute_overhead);
    /* a plan in parts draws the graph split into them: the label says so, as the plan report
     * does, where hundreds of nodes of one model read as if the model were another (review19) */
    if (f->p && f->p->micro_batches > 1) fprintf(out, ", the graph in %d micro-batches", f->p->micro_batches);
    fprintf(out, "\", labelloc=t];\n");
    fprintf(out, "  node [shape=box, style=\"filled,rounded\", fontname=\"Helvetica\", fontsize=10];\n");
    for (int i = 0; i < g->n; i++) {
        const mg_node *n = &g->nodes[i];
        int r = f->row_of_node[i];
        char name[64], shape[80];
        const char *nm = mg_report_tensor_name(g, i, name, sizeof name);
        fprintf(out, "  n%d [label=\"", i);
        mg_dot_write_string(out, nm);
        fprintf(out, "\\n%s %s%s", mg_ops[n->op].name, mg_dtype_name(n->type.dtype), mg_shape_str(&n->type.shape, shape, sizeof shape));
        if (r < 0) {
            fprintf(out, "\", shape=ellipse, fillcolor=\"#dddddd\", fontcolor=black];\n");
            continue;
        }
        const mg_tensor_row *row = &f->rows[r];
        if (row->decision == MG_DECIDE_RECOMPUTED) fprintf(out, "\\nrecomputed x%d", row->computes - 1);
        else fprintf(out, "\\n%s", mg_decision_names[row->decision]);
        fprintf(out, "\", fillcolor=\"%s\", fontcolor=%s];\n", fill[row->decision], font[row->decision]);
    }
    for (int i = 0; i < g->n; i++)
        for (int k = 0; k < g->nodes[i].ninputs; k++) fprintf(out, "  n%d -> n%d;\n", g->nodes[i].in[k], i);
    fprintf(out, "}\n");
}
