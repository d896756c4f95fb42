/* report_trace.c — the training step as Chrome Trace Event JSON, which Perfetto and
 * chrome://tracing open. One complete event ("ph": "X") per executed step on one thread, in
 * the category compute, recompute, copy or zero; counter events ("ph": "C") track the bytes
 * live and the workspace high-water mark. memgrad plans ahead of time, so times are not
 * measured: a step lasts its FLOPs at 1 GFLOP/s (1 µs per kFLOP), at least 1 µs. Everything
 * comes from mg_report_figures; the output is written to `out`. */
#include "report.h"

#include <stdlib.h>
#include <string.h>

void mg_report_trace(FILE *out, const mg_report_figures *f)
{
    const mg_graph *g = f->g;
    const mg_plan *t = f->p->train;
    fprintf(out, "{\"displayTimeUnit\": \"ms\", \"otherData\": {\"model\": ");
    mg_json_write_string(out, g->model_name);
    fprintf(out, ", \"model_hash\": \"0x%016llx\", \"solver\": \"%s\", \"workspace_bytes\": %lld, "
                 "\"recompute_overhead\": %.6f, \"time\": \"FLOPs at 1 GFLOP/s, not measured\"},\n\"traceEvents\": [\n",
            (unsigned long long)f->model_hash, f->solver, (long long)f->workspace_bytes, f->recompute_overhead);
    fprintf(out, "{\"name\": \"process_name\", \"ph\": \"M\", \"ts\": 0, \"pid\": 1, \"tid\": 1, \"args\": {\"name\": ");
    mg_json_write_string(out, g->model_name);
    fprintf(out, "}},\n{\"name\": \"thread_name\", \"ph\": \"M\", \"ts\": 0, \"pid\": 1, \"tid\": 1, \"args\": "
                 "{\"name\": \"train_step\"}}");
    double ts = 0;
    for (int s = 0; s < t->nsteps; s++) {
        const mg_step *st = &t->steps[s];
        const mg_node *n = &g->nodes[st->node];
        const char *cat = st->kind == MG_STEP_ZERO   ? "zero"
                          : st->kind == MG_STEP_COPY ? "copy"
                          : st->recompute            ? "recompute"
                                                     : "compute";
        double flops = st->kind == MG_STEP_COMPUTE ? mg_node_flops(g, st->node) : 0;
        double dur = flops / 1000 > 1 ? flops / 1000 : 1;
        char name[64], shape[80], *zname = NULL;
        const char *nm = mg_report_tensor_name(g, st->node, name, sizeof name);
        if (st->kind == MG_STEP_ZERO) { /* the step is on the param's node but writes its gradient, zeros:
                                          it was named after the param (its phase: step_backward) */
            size_t len = strlen(nm) + 3;
            if ((zname = malloc(len))) snprintf(zname, len, "d_%s", nm);
            nm = zname ? zname : nm;
        }
        fprintf(out, ",\n{\"name\": ");
        mg_json_write_string(out, nm);
        fprintf(out, ", \"cat\": \"%s\", \"ph\": \"X\", \"ts\": %.3f, \"dur\": %.3f, \"pid\": 1, \"tid\": 1, \"args\": "
                     "{\"step\": %d, \"node\": %d, \"op\": \"%s\", \"type\": \"%s%s\", \"flops\": %.0f, \"phase\": \"%s\"",
                cat, ts, dur, s, st->node, mg_ops[n->op].name, mg_dtype_name(n->type.dtype),
                mg_shape_str(&n->type.shape, shape, sizeof shape), flops, f->step_backward[s] ? "backward" : "forward");
        free(zname);
        if (st->out.mem == MG_MEM_WS)
            fprintf(out, ", \"bytes\": %lld, \"offset\": %lld", (long long)t->bufs[st->out.index].bytes,
                    (long long)t->bufs[st->out.index].offset);
        fprintf(out, "}}");
        fprintf(out, ",\n{\"name\": \"live bytes\", \"ph\": \"C\", \"ts\": %.3f, \"pid\": 1, \"tid\": 1, \"args\": "
                     "{\"live\": %lld}}", ts, (long long)f->live_bytes[s]);
        fprintf(out, ",\n{\"name\": \"workspace high-water mark\", \"ph\": \"C\", \"ts\": %.3f, \"pid\": 1, \"tid\": 1, "
                     "\"args\": {\"bytes\": %lld}}", ts, (long long)f->high_water[s]);
        ts += dur;
    }
    fprintf(out, ",\n{\"name\": \"live bytes\", \"ph\": \"C\", \"ts\": %.3f, \"pid\": 1, \"tid\": 1, \"args\": {\"live\": 0}}",
            ts);
    fprintf(out, "\n]}\n");
}
