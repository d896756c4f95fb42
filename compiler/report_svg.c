/* report_svg.c — pictures of plans as SVG.
 *
 * mg_report_svg draws the training step's memory timeline: schedule steps on x (the forward
 * and the backward pass on differently shaded backgrounds), workspace bytes on y, and every
 * workspace buffer as a block at its arena offset over the steps it is live. Recomputed values
 * are red-orange, the first copies of values the plan drops and recomputes are light orange,
 * kept activations dark blue, values freed before the backward pass light blue, backward
 * values green and kernel scratch grey; a red tick above the plot marks every recomputation
 * step. The budget and the workspace are horizontal lines, the bytes live a black line, and
 * each block has a <title> tooltip (name, shape, bytes, steps, offset).
 * mg_sweep_svg draws a sweep: recompute overhead against the budget, one line per solver,
 * with the minimum feasible budget and store-all marked.
 * Both read only the figures they are given and write to `out`. */
#include "report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { W = 1280, H = 660, ML = 96, MR = 24, MT = 78, MB = 96 };

static const char *const C_KEPT = "#1f5fae", *const C_FREED = "#9cc3e8", *const C_RECOMP = "#e8431c",
                         *const C_DROPPED = "#f6b26b", *const C_BACK = "#4e9a4e", *const C_SCRATCH = "#b8b8b8";

/* A round step for about `n` ticks over [0, max]: 1, 2 or 5 times a power of ten; for bytes,
 * that times a power of 1024 (so ticks read 512 KiB, 1 MiB, 2 MiB rather than 1000.0 KiB). */
static double nice_step(double max, int n, int bytes)
{
    double raw = max / n;
    if (bytes) {
        static const double mult[] = {1, 2, 5, 10, 20, 50, 100, 200, 500};
        for (double base = 1; base < 1e19; base *= 1024)
            for (int i = 0; i < 9; i++)
                if (base * mult[i] >= raw) return base * mult[i];
        return raw;
    }
    double p = pow(10, floor(log10(raw > 0 ? raw : 1)));
    double m = raw / p;
    return p * (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10);
}

static void header(FILE *out, int w, int h)
{
    fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                 "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n", w, h, w, h);
    fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", w, h);
}

static void legend_item(FILE *out, double x, double y, const char *color, const char *label)
{
    fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"14\" fill=\"%s\"/>", x, y - 11, color);
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", x + 19, y, label);
}

void mg_report_svg(FILE *out, const mg_report_figures *f)
{
    const mg_graph *g = f->g;
    const mg_plan *t = f->p->train;
    int n = t->nsteps > 0 ? t->nsteps : 1;
    double pw = W - ML - MR, ph = H - MT - MB;
    int64_t ymax = f->workspace_bytes;
    if (f->budget_bytes != INT64_MAX && f->budget_bytes > ymax) ymax = f->budget_bytes;
    double top = (double)(ymax > 0 ? ymax : 1) * 1.08;
#define X(s) (ML + (double)(s) * pw / n)
#define Y(b) (MT + ph - (double)(b) * ph / top)
    char h1[32], h2[32], h3[32];
    header(out, W, H);
    fprintf(out, "<title>");
    mg_xml_write_text(out, g->model_name);
    fprintf(out, ": memory timeline of the training step</title>\n");
    /* title line */
    fprintf(out, "<text x=\"%d\" y=\"24\" font-size=\"17\" font-weight=\"bold\">", ML);
    mg_xml_write_text(out, g->model_name);
    fprintf(out, " \xe2\x80\x94 workspace over the training step</text>\n");
    fprintf(out, "<text x=\"%d\" y=\"44\" font-size=\"13\" fill=\"#333\">", ML);
    if (f->budget_bytes != INT64_MAX) fprintf(out, "budget %s, ", mg_human_bytes(f->budget_bytes, h1, sizeof h1));
    fprintf(out, "workspace %s, store-all %s; %d recomputation step%s of %d tensor%s, recompute overhead %.1f%%</text>\n",
            mg_human_bytes(f->workspace_bytes, h2, sizeof h2), mg_human_bytes(f->store_all_bytes, h3, sizeof h3),
            f->recompute_steps, mg_plural(f->recompute_steps), f->recomputed_tensors,
            mg_plural(f->recomputed_tensors), 100.0 * f->recompute_overhead);
    /* forward and backward backgrounds, one per run of steps of one phase (each step's own, as
     * the trace gives it: in a plan in parts a part's forward steps follow an earlier part's
     * backward ones); the first run of each phase is labelled, and any other as wide as its label */
    int labelled[2] = {0, 0};
    for (int s0 = 0, s1; s0 < t->nsteps; s0 = s1) {
        int back = f->step_backward[s0];
        for (s1 = s0 + 1; s1 < t->nsteps && f->step_backward[s1] == back; s1++) {}
        fprintf(out, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%.0f\" fill=\"%s\"/>\n", X(s0), MT,
                X(s1) - X(s0), ph, back ? "#faf5ea" : "#eef2f8");
        if (!labelled[back]++ || X(s1) - X(s0) >= 100)
            fprintf(out, "<text x=\"%.2f\" y=\"%d\" fill=\"%s\">%s pass</text>\n", X(s0) + 4, MT + 14,
                    back ? "#7a6a4a" : "#56657a", back ? "backward" : "forward");
    }
    int fb = f->first_backward_step;
    /* y grid and labels */
    double ystep = nice_step(top, 6, 1);
    for (double v = 0; v <= top; v += ystep) {
        fprintf(out, "<line x1=\"%d\" x2=\"%.0f\" y1=\"%.2f\" y2=\"%.2f\" stroke=\"#dddddd\" stroke-width=\"0.6\"/>", ML,
                ML + pw, Y(v), Y(v));
        fprintf(out, "<text x=\"%d\" y=\"%.2f\" text-anchor=\"end\" fill=\"#444\">%s</text>\n", ML - 6, Y(v) + 4,
                mg_human_bytes((int64_t)v, h1, sizeof h1));
    }
    /* x ticks */
    double xstep = nice_step(n, 12, 0);
    if (xstep < 1) xstep = 1;
    for (double s = 0; s <= n; s += xstep)
        fprintf(out, "<line x1=\"%.2f\" x2=\"%.2f\" y1=\"%.0f\" y2=\"%.0f\" stroke=\"#666\"/><text x=\"%.2f\" y=\"%.0f\" "
                     "text-anchor=\"middle\" fill=\"#444\">%.0f</text>\n",
                X(s), X(s), MT + ph, MT + ph + 5, X(s), MT + ph + 18, s);
    fprintf(out, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">schedule step</text>\n", ML + pw / 2, MT + ph + 36);
    fprintf(out, "<text x=\"18\" y=\"%.0f\" text-anchor=\"middle\" transform=\"rotate(-90 18 %.0f)\">arena offset "
                 "(bytes)</text>\n", MT + ph / 2, MT + ph / 2);
    /* the buffers */
    fprintf(out, "<g stroke=\"#ffffff\" stroke-width=\"0.4\">\n");
    for (int i = 0; i < t->nbufs; i++) {
        const mg_buffer *b = &t->bufs[i];
        const mg_step *st = &t->steps[b->first];
        const char *color = C_SCRATCH, *what = "kernel scratch";
        char name[64], shape[80] = "";
        const char *nm = "scratch";
        if (b->node >= 0) {
            int r = f->row_of_node[b->node];
            mg_decision dec = r >= 0 ? f->rows[r].decision : MG_DECIDE_BACKWARD;
            nm = mg_report_tensor_name(g, b->node, name, sizeof name);
            snprintf(shape, sizeof shape, " %s", mg_dtype_name(g->nodes[b->node].type.dtype));
            mg_shape_str(&g->nodes[b->node].type.shape, shape + strlen(shape), sizeof shape - strlen(shape));
            int recomputed_here = st->kind == MG_STEP_COMPUTE && st->recompute;
            if (recomputed_here) color = C_RECOMP, what = "recomputed";
            else if (dec == MG_DECIDE_RECOMPUTED) color = C_DROPPED, what = "dropped, recomputed later";
            else if (dec == MG_DECIDE_KEPT) color = C_KEPT, what = "kept for the backward pass";
            else if (dec == MG_DECIDE_FREED) color = C_FREED, what = "freed early";
            else color = C_BACK, what = "backward";
        }
        double x0 = X(b->first), x1 = X(b->last + 1), y0 = Y(b->offset + b->bytes), y1 = Y(b->offset);
        fprintf(out, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"><title>", x0, y0,
                x1 - x0, y1 - y0 > 0.3 ? y1 - y0 : 0.3, color);
        mg_xml_write_text(out, nm);
        fprintf(out, "%s, %s, steps %d-%d, offset %lld: %s</title></rect>\n", shape,
                mg_human_bytes(b->bytes, h1, sizeof h1), b->first, b->last, (long long)b->offset, what);
    }
    fprintf(out, "</g>\n");
    /* the bytes live at each step */
    fprintf(out, "<polyline fill=\"none\" stroke=\"#111111\" stroke-width=\"0.8\" stroke-opacity=\"0.55\" points=\"");
    for (int s = 0; s < t->nsteps; s++) fprintf(out, "%.2f,%.2f %.2f,%.2f ", X(s), Y(f->live_bytes[s]), X(s + 1), Y(f->live_bytes[s]));
    fprintf(out, "\"><title>bytes live at each step</title></polyline>\n");
    /* recomputation ticks above the plot */
    fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" fill=\"%s\" font-size=\"11\">recompute</text>\n", ML - 6,
            MT - 6, C_RECOMP);
    for (int s = 0; s < t->nsteps; s++)
        if (t->steps[s].kind == MG_STEP_COMPUTE && t->steps[s].recompute) {
            char name[64];
            fprintf(out, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"14\" fill=\"%s\"><title>step %d: recompute ",
                    X(s), MT - 18, X(s + 1) - X(s) > 1 ? X(s + 1) - X(s) : 1, C_RECOMP, s);
            mg_xml_write_text(out, mg_report_tensor_name(g, t->steps[s].node, name, sizeof name));
            fprintf(out, "</title></rect>\n");
        }
    /* budget and workspace */
    if (f->budget_bytes != INT64_MAX) {
        fprintf(out, "<line x1=\"%d\" x2=\"%.0f\" y1=\"%.2f\" y2=\"%.2f\" stroke=\"#c00000\" stroke-width=\"1.6\" "
                     "stroke-dasharray=\"8 4\"/>", ML, ML + pw, Y(f->budget_bytes), Y(f->budget_bytes));
        fprintf(out, "<text x=\"%.0f\" y=\"%.2f\" text-anchor=\"end\" fill=\"#c00000\">budget %s</text>\n", ML + pw - 4,
                Y(f->budget_bytes) - 4, mg_human_bytes(f->budget_bytes, h1, sizeof h1));
    }
    fprintf(out, "<line x1=\"%d\" x2=\"%.0f\" y1=\"%.2f\" y2=\"%.2f\" stroke=\"#333\" stroke-width=\"1\" "
                 "stroke-dasharray=\"2 3\"/>", ML, ML + pw, Y(f->workspace_bytes), Y(f->workspace_bytes));
    fprintf(out, "<text x=\"%.0f\" y=\"%.2f\" fill=\"#333\">workspace %s</text>\n", ML + 4 + (X(fb) - X(0)) * 0.5,
            Y(f->workspace_bytes) - 4, mg_human_bytes(f->workspace_bytes, h1, sizeof h1));
    fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"#666\"/>\n", ML, MT, pw, ph);
    /* legend */
    double ly = H - 22, lx = ML;
    legend_item(out, lx, ly, C_KEPT, "kept for backward"), lx += 160;
    legend_item(out, lx, ly, C_FREED, "freed early"), lx += 115;
    legend_item(out, lx, ly, C_DROPPED, "dropped (recomputed later)"), lx += 215;
    legend_item(out, lx, ly, C_RECOMP, "recomputed"), lx += 115;
    legend_item(out, lx, ly, C_BACK, "backward"), lx += 100;
    legend_item(out, lx, ly, C_SCRATCH, "scratch"), lx += 90;
    fprintf(out, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.0f\" y2=\"%.0f\" stroke=\"#111\" stroke-width=\"1.2\"/>"
                 "<text x=\"%.0f\" y=\"%.0f\">live bytes</text>\n", lx, lx + 18, ly - 4, ly - 4, lx + 23, ly);
    fprintf(out, "</svg>\n");
#undef X
#undef Y
}

void mg_sweep_svg(FILE *out, const char *what, int64_t store_all, int64_t min_feasible, const mg_sweep_curve *curves,
                  int ncurves)
{
    static const char *const colors[] = {"#1f5fae", "#e8431c", "#2a9d2a", "#8e44ad"};
    enum { SW = 900, SH = 560 };
    double pw = SW - ML - MR - 120, ph = SH - MT - MB;
    double all = (double)(store_all > 0 ? store_all : 1);
    double x0 = min_feasible > 0 ? 100.0 * (double)min_feasible / all : 0, x1 = 100;
    x0 = floor(x0 / 10) * 10 - 5;
    if (x0 < 0) x0 = 0;
    x1 += 5;
    double ymax = 0;
    for (int k = 0; k < ncurves; k++)
        for (int i = 0; i < curves[k].n; i++)
            if (curves[k].pt[i].fits) {
                double o = 100.0 * mg_recompute_overhead(curves[k].pt[i].once, curves[k].pt[i].executed);
                if (o > ymax) ymax = o;
            }
    double ystep = nice_step(ymax > 0 ? ymax * 1.1 : 10, 6, 0), ytop = ystep * ceil((ymax > 0 ? ymax * 1.1 : 10) / ystep);
#define SX(p) (ML + ((p) - x0) * pw / (x1 - x0))
#define SY(v) (MT + ph - (v) * ph / ytop)
    char h1[32], h2[32];
    if (strrchr(what, '/')) what = strrchr(what, '/') + 1; /* a --graph file: its name is enough */
    header(out, SW, SH);
    fprintf(out, "<title>");
    mg_xml_write_text(out, what);
    fprintf(out, ": recompute overhead against the budget</title>\n<text x=\"%d\" y=\"28\" font-size=\"17\" "
                 "font-weight=\"bold\">", ML);
    mg_xml_write_text(out, what);
    fprintf(out, " \xe2\x80\x94 recompute overhead against the budget</text>\n");
    fprintf(out, "<text x=\"%d\" y=\"48\" font-size=\"13\" fill=\"#333\">store-all workspace %s, minimum feasible %s</text>\n",
            ML, mg_human_bytes(store_all, h1, sizeof h1), mg_human_bytes(min_feasible, h2, sizeof h2));
    for (double v = 0; v <= ytop + 1e-9; v += ystep)
        fprintf(out, "<line x1=\"%d\" x2=\"%.0f\" y1=\"%.2f\" y2=\"%.2f\" stroke=\"#ddd\"/><text x=\"%d\" y=\"%.2f\" "
                     "text-anchor=\"end\" fill=\"#444\">%g%%</text>\n", ML, ML + pw, SY(v), SY(v), ML - 6, SY(v) + 4, v);
    for (double p = ceil(x0 / 10) * 10; p <= x1; p += 10)
        fprintf(out, "<line x1=\"%.2f\" x2=\"%.2f\" y1=\"%d\" y2=\"%.0f\" stroke=\"#eee\"/><text x=\"%.2f\" y=\"%.0f\" "
                     "text-anchor=\"middle\" fill=\"#444\">%g%%</text>\n", SX(p), SX(p), MT, MT + ph, SX(p), MT + ph + 18, p);
    fprintf(out, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">budget (%% of the store-all workspace)</text>\n",
            ML + pw / 2, MT + ph + 40);
    fprintf(out, "<text x=\"22\" y=\"%.0f\" text-anchor=\"middle\" transform=\"rotate(-90 22 %.0f)\">recompute overhead"
                 "</text>\n", MT + ph / 2, MT + ph / 2);
    /* the two ends */
    double pm = 100.0 * (double)min_feasible / all;
    fprintf(out, "<line x1=\"%.2f\" x2=\"%.2f\" y1=\"%d\" y2=\"%.0f\" stroke=\"#c00000\" stroke-dasharray=\"6 4\"/>"
                 "<text x=\"%.2f\" y=\"%d\" fill=\"#c00000\">minimum feasible %s</text>\n",
            SX(pm), SX(pm), MT, MT + ph, SX(pm) + 4, MT + 14, mg_human_bytes(min_feasible, h1, sizeof h1));
    fprintf(out, "<line x1=\"%.2f\" x2=\"%.2f\" y1=\"%d\" y2=\"%.0f\" stroke=\"#333\" stroke-dasharray=\"6 4\"/>"
                 "<text x=\"%.2f\" y=\"%d\" text-anchor=\"end\" fill=\"#333\">store-all %s</text>\n",
            SX(100.0), SX(100.0), MT, MT + ph, SX(100.0) - 4, MT + 30, mg_human_bytes(store_all, h1, sizeof h1));
    for (int k = 0; k < ncurves; k++) {
        const char *c = colors[k % 4];
        fprintf(out, "<g><title>");
        mg_xml_write_text(out, curves[k].solver);
        fprintf(out, "</title>");
        if (curves[k].n > 1) {
            fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", c);
            for (int i = 0; i < curves[k].n; i++) {
                const mg_sweep_point *q = &curves[k].pt[i];
                if (q->fits)
                    fprintf(out, "%.2f,%.2f ", SX(100.0 * (double)q->budget / all),
                            SY(100.0 * mg_recompute_overhead(q->once, q->executed)));
            }
            fprintf(out, "\"/>");
        }
        for (int i = 0; i < curves[k].n; i++) {
            const mg_sweep_point *q = &curves[k].pt[i];
            if (!q->fits) continue;
            double o = 100.0 * mg_recompute_overhead(q->once, q->executed);
            /* filled where the plan is proven optimal at its budget, hollow where that is not known */
            fprintf(out, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"%d\" fill=\"%s\" stroke=\"%s\" stroke-width=\"2\"><title>",
                    SX(100.0 * (double)q->budget / all), SY(o), curves[k].n > 1 ? 4 : 7, q->optimal == 1 ? c : "#fff", c);
            mg_xml_write_text(out, curves[k].solver);
            fprintf(out, ": budget %s, workspace %s, overhead %.2f%%, %s</title></circle>",
                    mg_human_bytes(q->budget, h1, sizeof h1), mg_human_bytes(q->workspace, h2, sizeof h2), o,
                    q->optimal == 1 ? "proven optimal" : "optimality not proven");
        }
        fprintf(out, "</g>\n<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"3\"/>"
                     "<text x=\"%.0f\" y=\"%d\">", ML + pw + 20, ML + pw + 44, MT + 20 + 22 * k, MT + 20 + 22 * k, c,
                ML + pw + 50, MT + 24 + 22 * k);
        mg_xml_write_text(out, curves[k].solver);
        fprintf(out, "</text>\n");
    }
    double ly = MT + 20 + 22 * ncurves + 14; /* the points' key */
    fprintf(out, "<text x=\"%.0f\" y=\"%.0f\">optimality:</text>\n"
                 "<circle cx=\"%.0f\" cy=\"%.0f\" r=\"4\" fill=\"#444\" stroke=\"#444\" stroke-width=\"2\"/>"
                 "<text x=\"%.0f\" y=\"%.0f\">proven</text>\n"
                 "<circle cx=\"%.0f\" cy=\"%.0f\" r=\"4\" fill=\"#fff\" stroke=\"#444\" stroke-width=\"2\"/>"
                 "<text x=\"%.0f\" y=\"%.0f\">not proven</text>\n",
            ML + pw + 20, ly + 4, ML + pw + 32, ly + 22, ML + pw + 50, ly + 26, ML + pw + 32, ly + 44, ML + pw + 50, ly + 48);
    fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"#666\"/>\n</svg>\n", ML, MT,
            pw, ph);
#undef SX
#undef SY
}
