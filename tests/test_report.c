/* test_report.c — the reports of `memgrad plan`, `sweep` and `dot`, checked the way a user
 * would check them.
 *
 * Why it exists: every report must show the same plan as `--format json`, so the text report's
 * figures and per-tensor decisions are parsed and compared with the JSON's (cJSON); the JSON's
 * own tensor rows are checked against its schedule; the trace must parse and carry what trace
 * viewers need; the SVGs must be well-formed XML (expat) and must actually draw something: the
 * timeline is opened in headless Chromium and the screenshot decoded (libpng) and looked at —
 * not blank, and showing the recomputation colour exactly when the plan recomputes. Output
 * files go through the driver's safe writing: never over the model, never two flags on one
 * file. Chromium is required (scripts/setup.sh installs it); a missing browser fails the test. */
#include <check.h>
#include <cjson/cJSON.h>
#include <expat.h>
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "autodiff.h"
#include "frontend.h"
#include "report.h"
#include "testutil.h"

static char *dir;

static void setup(void)
{
    dir = tu_tmpdir();
    ck_assert_msg(dir != NULL, "cannot create a temporary directory");
}

static void teardown(void) { tu_dir_free(&dir); }

static const char *path(const char *name) { return tu_path(dir, name); }

static const char *deep(void)
{
    return MG_SOURCE_DIR "/examples/mlp_deep.mg";
}

/* A budget at which deep()'s plan recomputes: 30% of its store-all on the whole batch (in parts,
 * run one after another, 30% recomputes nothing) */
#define LOW "30% --micro-batches 1"

static cJSON *parse_json(const char *text)
{
    cJSON *j = cJSON_Parse(text);
    ck_assert_msg(j != NULL, "not JSON near: %.200s", cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() : text);
    return j;
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    ck_assert_msg(cJSON_IsNumber(v), "no number '%s' in the JSON", key);
    return v->valuedouble;
}

static cJSON *plan_json(const char *model, const char *budget)
{
    char *out;
    int rc = tu_memgrad(&out, "plan '%s' --budget %s --format json", model, budget);
    ck_assert_msg(rc == 0, "plan --format json exited %d:\n%s", rc, out);
    cJSON *j = parse_json(out);
    free(out);
    return j;
}

/* The number after `label` at the start of a summary line ("  workspace  5316736 bytes"). */
static double text_figure(const char *text, const char *label)
{
    char key[64];
    snprintf(key, sizeof key, "\n  %s ", label);
    const char *p = strstr(text, key);
    ck_assert_msg(p != NULL, "no '%s' line in:\n%s", label, text);
    p += strlen(key);
    while (*p == ' ') p++;
    char *end;
    double v = strtod(p, &end);
    ck_assert_msg(end != p, "no number on the '%s' line", label);
    return v;
}

/* The "(N bytes)" figure of a summary line in human units. */
static long long text_paren_bytes(const char *text, const char *label)
{
    char key[64];
    snprintf(key, sizeof key, "\n  %s ", label);
    const char *p = strstr(text, key);
    ck_assert_msg(p != NULL, "no '%s' line in:\n%s", label, text);
    const char *b = strchr(p, '(');
    ck_assert_msg(b && b < strchr(p + 1, '\n'), "no '(N bytes)' on the '%s' line", label);
    return strtoll(b + 1, NULL, 10);
}

/* ------------------------------------------------------------------------------------------ */

/* The text report shows the JSON's figures, and one row per tensor with the JSON's decision. */
START_TEST(test_text_matches_json)
{
    const char *budgets[] = {LOW, "60%", "100%"};
    for (int b = 0; b < 3; b++) {
        cJSON *j = plan_json(deep(), budgets[b]);
        char *txt, *human;
        ck_assert_int_eq(tu_memgrad(&txt, "plan '%s' --budget %s --bytes", deep(), budgets[b]), 0);
        ck_assert_int_eq(tu_memgrad(&human, "plan '%s' --budget %s", deep(), budgets[b]), 0);
        struct { const char *label, *key; } f[] = {
            {"params", "param_bytes"}, {"grads", "grad_bytes"}, {"inputs", "input_bytes"},
            {"budget", "budget_bytes"}, {"workspace", "workspace_bytes"}, {"store-all", "store_all_workspace_bytes"},
            {"minimum feasible", "min_feasible_bytes"}, {"peak live", "peak_live_bytes"}};
        for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
            double want = num(j, f[i].key);
            ck_assert_msg(text_figure(txt, f[i].label) == want, "%s at %s: text %.0f, JSON %.0f", f[i].label, budgets[b],
                          text_figure(txt, f[i].label), want);
            ck_assert_msg((double)text_paren_bytes(human, f[i].label) == want, "%s (human units) at %s", f[i].label,
                          budgets[b]);
        }
        /* FLOPs exact with --bytes; the overhead and the waste as printed, to their 2 decimals */
        const char *fl = strstr(txt, "\n  FLOPs ");
        ck_assert(fl != NULL);
        double once, exec, ovh;
        ck_assert_int_eq(sscanf(fl, "\n  FLOPs %lf once, %lf executed, recompute overhead %lf%%", &once, &exec, &ovh), 3);
        ck_assert(once == num(j, "flops_once") && exec == num(j, "flops_executed"));
        ck_assert_msg(fabs(ovh - 100 * num(j, "recompute_overhead")) < 0.006, "overhead %g vs %g", ovh,
                      100 * num(j, "recompute_overhead"));
        const char *w = strstr(txt, "allocator waste ");
        ck_assert(w != NULL);
        ck_assert(fabs(strtod(w + 16, NULL) - 100 * num(j, "allocator_waste")) < 0.006);
        int rsteps, rtens;
        const char *rc = strstr(txt, "\n  recomputed ");
        ck_assert(rc != NULL);
        ck_assert_int_eq(sscanf(rc, "\n  recomputed %d recomputation steps of %d tensors", &rsteps, &rtens), 2);
        ck_assert_int_eq(rsteps, (int)num(j, "recompute_steps"));
        ck_assert_int_eq(rtens, (int)num(j, "recomputed_tensors"));
        if (!strcmp(budgets[b], "100%")) ck_assert_int_eq(rsteps, 0);
        if (b == 0) ck_assert_msg(rsteps > 0, "30%% of store-all is met without recomputing?");

        /* the rows: same tensors, same order, same first step and decision */
        const cJSON *tensors = cJSON_GetObjectItemCaseSensitive(j, "tensors");
        ck_assert(cJSON_IsArray(tensors));
        const char *row = strstr(txt, "\n step  tensor");
        ck_assert_msg(row != NULL, "no tensor table in:\n%s", txt);
        row = strchr(row + 1, '\n') + 1;
        const cJSON *t;
        cJSON_ArrayForEach(t, tensors)
        {
            int step;
            char name[128], line[16], op[64], type[128], bytes[64], decision[64];
            ck_assert_msg(sscanf(row, "%d %127s %15s %63s %127s %63s %63s", &step, name, line, op, type, bytes, decision) == 7,
                          "row: %.120s", row);
            ck_assert_int_eq(step, (int)num(t, "first_step"));
            const char *want = cJSON_GetObjectItemCaseSensitive(t, "decision")->valuestring;
            ck_assert_msg(!strncmp(want, decision, strlen(decision)), "step %d: text says %s, JSON %s", step, decision, want);
            if (!strcmp(want, "recomputed")) {
                char times[32];
                snprintf(times, sizeof times, "recomputed \xc3\x97%d ", (int)num(t, "computes") - 1);
                ck_assert_msg(strstr(row, times) && strstr(row, times) < strchr(row, '\n'), "row: %.160s", row);
            }
            row = strchr(row, '\n') + 1;
        }
        ck_assert_msg(*row == '\n', "more rows than the JSON's tensors: %.100s", row);
        free(txt);
        free(human);
        cJSON_Delete(j);
    }
}
END_TEST

/* The JSON's tensor rows agree with its own schedule: ranges are the buffers of that node,
 * computes counts its compute steps, and "recomputed" means more than one. */
/* Each tensor's row agrees with the schedule: its computations, its live ranges, and its
 * decision: a forward value computed once is kept exactly when one of its buffers lives across
 * a step of a backward node (mlp in parts at 25%: each part's backward pass runs right after
 * its forward pass, and a later part's value freed within its forward steps was called kept). */
static void check_tensors(cJSON *j)
{
    const cJSON *train = cJSON_GetObjectItemCaseSensitive(j, "train");
    const cJSON *bufs = cJSON_GetObjectItemCaseSensitive(train, "buffers"), *steps = cJSON_GetObjectItemCaseSensitive(train, "steps");
    int nsteps = cJSON_GetArraySize(steps), recomputes = 0, *computes = calloc(100000, sizeof *computes);
    const cJSON *s;
    cJSON_ArrayForEach(s, steps)
    {
        const char *kind = cJSON_GetObjectItemCaseSensitive(s, "kind")->valuestring;
        if (!strcmp(kind, "compute") || !strcmp(kind, "recompute")) computes[(int)num(s, "node")]++;
        recomputes += !strcmp(kind, "recompute");
    }
    ck_assert_int_eq(recomputes, (int)num(j, "recompute_steps"));
    char *backward_node = calloc(100000, 1);
    const cJSON *nd;
    cJSON_ArrayForEach(nd, cJSON_GetObjectItemCaseSensitive(j, "nodes"))
        backward_node[(int)num(nd, "id")] = !strcmp(cJSON_GetObjectItemCaseSensitive(nd, "phase")->valuestring, "backward");
    int *backward_before = calloc((size_t)nsteps + 1, sizeof *backward_before), step = 0; /* (steps 0 .. s-1) */
    cJSON_ArrayForEach(s, steps)
    {
        const char *kind = cJSON_GetObjectItemCaseSensitive(s, "kind")->valuestring;
        int bw = (!strcmp(kind, "compute") || !strcmp(kind, "recompute")) && backward_node[(int)num(s, "node")];
        backward_before[step + 1] = backward_before[step] + bw;
        step++;
    }
    const cJSON *t;
    int nrecomputed = 0, kept = 0, freed = 0;
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(j, "tensors"))
    {
        int node = (int)num(t, "node"), c = (int)num(t, "computes");
        const char *dec = cJSON_GetObjectItemCaseSensitive(t, "decision")->valuestring;
        ck_assert_int_eq(c, computes[node]);
        ck_assert_msg((c > 1) == !strcmp(dec, "recomputed"), "node %d computed %d times is '%s'", node, c, dec);
        nrecomputed += c > 1;
        const cJSON *r;
        int across = 0;
        cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(t, "ranges"))
        {
            int first = (int)num(r, "first"), last = (int)num(r, "last");
            if (first >= 0 && last < nsteps && backward_before[last + 1] > backward_before[first + 1]) across = 1;
            const cJSON *b = cJSON_GetArrayItem(bufs, (int)num(r, "buffer"));
            ck_assert(b != NULL);
            ck_assert_int_eq((int)num(b, "node"), node);
            ck_assert(num(b, "first") == num(r, "first") && num(b, "last") == num(r, "last") &&
                      num(b, "offset") == num(r, "offset"));
            ck_assert(num(r, "last") < nsteps);
        }
        if (!strcmp(dec, "kept") || !strcmp(dec, "freed early")) {
            ck_assert_msg(across == !strcmp(dec, "kept"), "node %d is '%s' but %s across a backward step", node, dec,
                          across ? "lives" : "does not live");
            kept += across;
            freed += !across;
        }
    }
    ck_assert_int_eq(nrecomputed, (int)num(j, "recomputed_tensors"));
    ck_assert_msg(kept > 0 && freed > 0, "%d kept, %d freed early", kept, freed);
    free(backward_before);
    free(backward_node);
    free(computes);
}

START_TEST(test_json_tensors_match_schedule)
{
    cJSON *j = plan_json(deep(), LOW);
    check_tensors(j);
    cJSON_Delete(j);
    char mlp[4200];
    snprintf(mlp, sizeof mlp, "%s/examples/mlp.mg", MG_SOURCE_DIR);
    j = plan_json(mlp, "25%");
    ck_assert_msg(num(j, "micro_batches") > 1, "mlp at 25%% is not in parts");
    check_tensors(j);
    cJSON_Delete(j);
}
END_TEST

/* The trace parses and every event has what viewers need; one complete event per step. */
START_TEST(test_trace_events)
{
    char *out;
    int rc = tu_memgrad(&out, "plan '%s' --budget %s --trace '%s' --format json", deep(), LOW, path("t.json"));
    ck_assert_msg(rc == 0, "%s", out);
    cJSON *plan = parse_json(out);
    free(out);
    char *text = tu_read(path("t.json"));
    ck_assert_msg(text != NULL, "no trace written");
    cJSON *tr = parse_json(text);
    free(text);
    const cJSON *ev = cJSON_GetObjectItemCaseSensitive(tr, "traceEvents"), *e;
    ck_assert(cJSON_IsArray(ev));
    int complete = 0, recompute = 0, counters = 0;
    double end = 0;
    cJSON_ArrayForEach(e, ev)
    {
        ck_assert(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "name")));
        const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "ph");
        ck_assert(cJSON_IsString(ph));
        num(e, "pid");
        num(e, "tid");
        num(e, "ts");
        if (!strcmp(ph->valuestring, "X")) {
            double ts = num(e, "ts"), dur = num(e, "dur");
            ck_assert_msg(dur > 0 && ts >= end - 1e-6, "event at %g overlaps the one ending at %g", ts, end);
            end = ts + dur;
            complete++;
            const cJSON *cat = cJSON_GetObjectItemCaseSensitive(e, "cat");
            ck_assert(cJSON_IsString(cat));
            recompute += !strcmp(cat->valuestring, "recompute");
        } else if (!strcmp(ph->valuestring, "C")) {
            counters++;
            ck_assert(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(e, "args")));
        } else {
            ck_assert(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(e, "args")));
        }
    }
    const cJSON *train = cJSON_GetObjectItemCaseSensitive(plan, "train");
    ck_assert_int_eq(complete, cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(train, "steps")));
    ck_assert_int_eq(recompute, (int)num(plan, "recompute_steps"));
    ck_assert_msg(recompute > 0 && counters >= 2 * complete, "%d recomputations, %d counter events", recompute, counters);
    cJSON_Delete(tr);
    cJSON_Delete(plan);
}
END_TEST

/* A param the loss does not read gets its gradient zeroed: that step writes d_u, in the backward
 * phase. The trace named it after the param, "u", in the forward phase. */
START_TEST(test_trace_zero_step_is_the_gradient)
{
    ck_assert_int_eq(tu_write(path("z.mg"), "model z\ninput x: f32[4]\nparam w: f32[4] = ones\n"
                                            "param u: f32[4] = ones\nloss = sum(x * w)\nminimize loss\n"),
                     0);
    char *out;
    int rc = tu_memgrad(&out, "plan '%s' --trace '%s' --no-cache", path("z.mg"), path("z.json"));
    ck_assert_msg(rc == 0, "%s", out);
    free(out);
    char *text = tu_read(path("z.json"));
    ck_assert_msg(text != NULL, "no trace written");
    cJSON *tr = parse_json(text);
    free(text);
    const cJSON *e;
    int zeros = 0;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(tr, "traceEvents"))
    {
        const cJSON *cat = cJSON_GetObjectItemCaseSensitive(e, "cat");
        if (!cJSON_IsString(cat) || strcmp(cat->valuestring, "zero")) continue;
        zeros++;
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
        ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(e, "name")->valuestring, "d_u");
        ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(args, "phase")->valuestring, "backward");
    }
    ck_assert_int_eq(zeros, 1);
    cJSON_Delete(tr);
}
END_TEST

/* expat: well-formed, root <svg>; counts elements and <title>s. */
typedef struct xml_count {
    int depth, elements, titles, rects;
    char root[16];
} xml_count;

static void XMLCALL xml_start(void *ud, const XML_Char *name, const XML_Char **attr)
{
    xml_count *c = ud;
    if (!c->elements++) snprintf(c->root, sizeof c->root, "%s", name);
    c->titles += !strcmp(name, "title");
    c->rects += !strcmp(name, "rect");
    c->depth++;
    (void)attr;
}

static void XMLCALL xml_end(void *ud, const XML_Char *name)
{
    ((xml_count *)ud)->depth--;
    (void)name;
}

static xml_count check_svg(const char *file)
{
    char *text = tu_read(file);
    ck_assert_msg(text != NULL, "no %s written", file);
    XML_Parser p = XML_ParserCreate("UTF-8");
    xml_count c = {0};
    XML_SetUserData(p, &c);
    XML_SetElementHandler(p, xml_start, xml_end);
    int ok = XML_Parse(p, text, (int)strlen(text), 1) == XML_STATUS_OK;
    ck_assert_msg(ok, "%s is not well-formed XML: %s at line %lu", file, XML_ErrorString(XML_GetErrorCode(p)),
                  (unsigned long)XML_GetCurrentLineNumber(p));
    XML_ParserFree(p);
    free(text);
    ck_assert_str_eq(c.root, "svg");
    ck_assert_int_eq(c.depth, 0);
    return c;
}

START_TEST(test_svg_well_formed)
{
    char *out;
    ck_assert_int_eq(tu_memgrad(&out, "plan '%s' --budget %s --svg '%s' --format json", deep(), LOW, path("t.svg")), 0);
    cJSON *plan = parse_json(out);
    free(out);
    xml_count c = check_svg(path("t.svg"));
    /* a block with a tooltip for every buffer of the training step */
    int nbufs = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(plan, "train"), "buffers"));
    ck_assert_msg(c.rects >= nbufs && c.titles >= nbufs, "%d rects, %d titles for %d buffers", c.rects, c.titles, nbufs);
    cJSON_Delete(plan);
    /* the sweep's curve: auto, sqrt and the store-all point, with the ends marked */
    ck_assert_int_eq(tu_memgrad(&out, "sweep '%s' --points 5 --svg '%s'", deep(), path("s.svg")), 0);
    free(out);
    check_svg(path("s.svg"));
    char *s = tu_read(path("s.svg"));
    ck_assert_msg(strstr(s, ">auto<") && strstr(s, ">sqrt<") && strstr(s, ">store-all<") && strstr(s, "minimum feasible"),
                  "sweep SVG lacks a solver or a marker");
    free(s);
    /* and of a benchmark graph; plan --graph has no timeline (no model to name tensors by) */
    const char *graph = MG_SOURCE_DIR "/bench/data/checkmate/vgg19.json";
    ck_assert_int_eq(tu_memgrad(&out, "sweep --graph '%s' --points 3 --svg '%s'", graph, path("g.svg")), 0);
    free(out);
    check_svg(path("g.svg"));
    ck_assert_int_eq(tu_memgrad(&out, "plan --graph '%s' --svg '%s'", graph, path("h.svg")), 2);
    free(out);
}
END_TEST

/* Pixels of a PNG screenshot (RGB), decoded with libpng. */
typedef struct image {
    int w, h;
    unsigned char *rgb;
} image;

static image read_png(const char *file)
{
    image im = {0};
    png_image pi;
    memset(&pi, 0, sizeof pi);
    pi.version = PNG_IMAGE_VERSION;
    ck_assert_msg(png_image_begin_read_from_file(&pi, file), "%s is not a PNG: %s", file, pi.message);
    pi.format = PNG_FORMAT_RGB;
    im.w = (int)pi.width;
    im.h = (int)pi.height;
    im.rgb = malloc(PNG_IMAGE_SIZE(pi));
    ck_assert(png_image_finish_read(&pi, NULL, im.rgb, 0, NULL));
    return im;
}

/* Screenshots file with headless Chromium into png; fails the test when it cannot. */
static void screenshot(const char *svg, const char *png, int w, int h)
{
    char *out;
    ck_assert_msg(tu_run("command -v chromium", &out) == 0,
                  "chromium is not installed (scripts/setup.sh installs it): the SVG cannot be checked");
    free(out);
    char cmd[16000];
    snprintf(cmd, sizeof cmd,
             "profile=$(mktemp -d) && timeout -k 10 120 chromium --headless --no-sandbox --disable-gpu "
             "--no-first-run --hide-scrollbars --user-data-dir=\"$profile\" --screenshot='%s' --window-size=%d,%d "
             "'file://%s'; rc=$?; rm -rf \"$profile\"; exit $rc",
             png, w, h, svg);
    int rc = tu_run(cmd, &out);
    struct stat st;
    ck_assert_msg(rc == 0 && stat(png, &st) == 0 && st.st_size > 0, "chromium exited %d:\n%s", rc, out);
    free(out);
}

/* Pixels within 40 of colour rgb (anti-aliased edges aside, blocks are flat colour). */
static long count_colour(const image *im, int r, int g, int b)
{
    long n = 0;
    for (long i = 0; i < (long)im->w * im->h; i++) {
        const unsigned char *p = im->rgb + 3 * i;
        n += abs(p[0] - r) + abs(p[1] - g) + abs(p[2] - b) < 40;
    }
    return n;
}

START_TEST(test_svg_renders_in_chromium)
{
    const char *budgets[] = {LOW, "100%"};
    for (int k = 0; k < 2; k++) {
        char *out;
        ck_assert_int_eq(tu_memgrad(&out, "plan '%s' --budget %s --svg '%s'", deep(), budgets[k], path("t.svg")), 0);
        free(out);
        screenshot(path("t.svg"), path("t.png"), 1280, 660);
        image im = read_png(path("t.png"));
        ck_assert_msg(im.w >= 640 && im.h >= 330, "screenshot is %dx%d", im.w, im.h);
        /* not blank: many non-white pixels and many distinct colours */
        long ink = 0;
        int ncol = 0;
        static unsigned char seen[1 << 15];
        memset(seen, 0, sizeof seen);
        for (long i = 0; i < (long)im.w * im.h; i++) {
            const unsigned char *p = im.rgb + 3 * i;
            ink += p[0] < 235 || p[1] < 235 || p[2] < 235;
            int key = (p[0] >> 3) << 10 | (p[1] >> 3) << 5 | (p[2] >> 3);
            if (!seen[key]) seen[key] = 1, ncol++;
        }
        ck_assert_msg(ink > (long)im.w * im.h / 5, "the timeline is nearly blank: %ld of %d pixels drawn", ink, im.w * im.h);
        ck_assert_msg(ncol >= 8, "only %d colours in the timeline", ncol);
        /* recomputations are highlighted (red-orange #e8431c) exactly when the plan recomputes */
        long red = count_colour(&im, 0xe8, 0x43, 0x1c);
        /* (the legend's swatch and the "recompute" label are always there: a few hundred pixels) */
        if (k == 0) ck_assert_msg(red > 5000, "at 30%% the recomputations are not visible (%ld pixels)", red);
        else ck_assert_msg(red < 1000, "store-all shows recomputation colour (%ld pixels)", red);
        free(im.rgb);
    }
}
END_TEST

/* Outputs never clobber the model or each other, and a failed plan writes nothing. */
START_TEST(test_outputs_are_safe)
{
    char *src = tu_read(deep()), *out;
    ck_assert(src != NULL);
    ck_assert_int_eq(tu_write(path("m.mg"), src), 0);
    ck_assert_int_eq(tu_memgrad(&out, "plan '%s' --svg '%s'", path("m.mg"), path("m.mg")), 2);
    ck_assert_msg(strstr(out, "refusing to overwrite the model"), "%s", out);
    free(out);
    ck_assert_int_eq(tu_memgrad(&out, "plan '%s' --trace '%s/../%s/m.mg'", path("m.mg"), dir, strrchr(dir, '/') + 1), 2);
    free(out);
    ck_assert_int_eq(tu_memgrad(&out, "sweep '%s' --svg '%s'", path("m.mg"), path("m.mg")), 2);
    free(out);
    char *now = tu_read(path("m.mg"));
    ck_assert_msg(now && !strcmp(now, src), "the model was changed");
    free(now);
    ck_assert_int_eq(tu_memgrad(&out, "plan '%s' --svg '%s' --trace '%s'", path("m.mg"), path("a"), path("a")), 2);
    free(out);
    /* a budget below the minimum: exit 1, no file and no temporary left */
    ck_assert_int_eq(tu_memgrad(&out, "plan '%s' --budget 1KiB --svg '%s'", path("m.mg"), path("x.svg")), 1);
    free(out);
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "ls -A '%s'", dir);
    ck_assert_int_eq(tu_run(cmd, &out), 0);
    ck_assert_msg(!strcmp(out, "m.mg\n"), "files left behind: %s", out);
    free(out);
    /* an existing output is replaced whole */
    ck_assert_int_eq(tu_write(path("x.svg"), "old"), 0);
    ck_assert_int_eq(tu_memgrad(&out, "plan '%s' --budget 50%% --svg '%s'", path("m.mg"), path("x.svg")), 0);
    free(out);
    check_svg(path("x.svg"));
    free(src);
}
END_TEST

/* Whether s is well-formed UTF-8 (RFC 3629), checked apart from memgrad's own decoder: each
 * sequence decoded, then held to its shortest form, outside the surrogates, up to U+10FFFF. */
static int valid_utf8(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        int len = *p < 0x80 ? 1 : (*p & 0xe0) == 0xc0 ? 2 : (*p & 0xf0) == 0xe0 ? 3 : (*p & 0xf8) == 0xf0 ? 4 : 0;
        if (!len) return 0;
        unsigned long cp = len == 1 ? *p : *p & (0xffu >> (len + 1));
        for (int i = 1; i < len; i++) {
            if ((p[i] & 0xc0) != 0x80) return 0;
            cp = cp << 6 | (p[i] & 0x3f);
        }
        static const unsigned long least[] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < least[len] || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) return 0;
        p += len;
    }
    return 1;
}

/* What an escaper wrote to a FILE, malloc'd. */
static char *written(void (*write)(FILE *, const char *), const char *s)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    ck_assert(f != NULL);
    write(f, s);
    fclose(f);
    return buf;
}

/* Names and paths are bytes, the reports UTF-8 text: the JSON, XML and DOT escapers passed bytes
 * >= 0x80 through as they came, so a path such as "bad\xff<&>.json" made a JSON Python cannot
 * decode and an SVG expat calls not well-formed. Well-formed sequences pass, any other byte is
 * U+FFFD, one per byte (an overlong '/', a surrogate, a code point past U+10FFFF, a cut
 * sequence), and what each format cannot hold is escaped. */
START_TEST(test_escapes_make_valid_utf8)
{
    static const struct {
        const char *in, *json, *xml, *dot;
    } cases[] = {
        {"plain", "\"plain\"", "plain", "plain"},
        {"bad\xff<&>.json", "\"bad\\ufffd<&>.json\"", "bad\xef\xbf\xbd&lt;&amp;&gt;.json", "bad\xef\xbf\xbd<&>.json"},
        {"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"",
         "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"}, /* é € and an emoji */
        {"\xc0\xaf", "\"\\ufffd\\ufffd\"", "\xef\xbf\xbd\xef\xbf\xbd", "\xef\xbf\xbd\xef\xbf\xbd"},
        {"\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
        {"\xf4\x90\x80\x80!", "\"\\ufffd\\ufffd\\ufffd\\ufffd!\"", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd!",
         "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd!"},
        {"x\xe2\x82", "\"x\\ufffd\\ufffd\"", "x\xef\xbf\xbd\xef\xbf\xbd", "x\xef\xbf\xbd\xef\xbf\xbd"},
        {"q\"b\\\x01\t", "\"q\\\"b\\\\\\u0001\\u0009\"", "q&quot;b\\\xef\xbf\xbd\t", "q\\\"b\\\\\xef\xbf\xbd\xef\xbf\xbd"},
        {"\xef\xbf\xbf", "\"\xef\xbf\xbf\"", "\xef\xbf\xbd", "\xef\xbf\xbf"}, /* U+FFFF: no XML character */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[128];
        size_t n = mg_json_escape(buf, sizeof buf, cases[i].in);
        ck_assert_msg(!strcmp(buf, cases[i].json) && n == strlen(buf), "case %zu: JSON %s", i, buf);
        char *j = written(mg_json_write_string, cases[i].in), *x = written(mg_xml_write_text, cases[i].in),
             *d = written(mg_dot_write_string, cases[i].in);
        ck_assert_msg(!strcmp(j, cases[i].json), "case %zu: JSON written %s", i, j);
        ck_assert_msg(!strcmp(x, cases[i].xml), "case %zu: XML %s", i, x);
        ck_assert_msg(!strcmp(d, cases[i].dot), "case %zu: DOT %s", i, d);
        ck_assert_msg(valid_utf8(j) && valid_utf8(x) && valid_utf8(d), "case %zu: not UTF-8", i);
        cJSON *v = cJSON_Parse(j);
        ck_assert_msg(cJSON_IsString(v), "case %zu: %s does not parse", i, j);
        cJSON_Delete(v);
        free(j), free(x), free(d);
    }
    /* as snprintf: cut to the buffer, the whole length returned */
    char small[7];
    ck_assert_int_eq(mg_json_escape(small, sizeof small, "bad\xff"), 11);
    ck_assert_str_eq(small, "\"bad\\u");
    ck_assert_int_eq(mg_json_escape(NULL, 0, NULL), 2);
}
END_TEST

/* End to end: a benchmark graph whose file name and node names are not UTF-8 gets a plan JSON
 * that is UTF-8 (json.load failed on it: UnicodeDecodeError) and a sweep SVG expat reads. */
START_TEST(test_non_utf8_names_in_reports)
{
    char g[4300];
    snprintf(g, sizeof g, "%s", path("bad\xff<&>.json"));
    ck_assert_int_eq(tu_write(g, "{\"nodes\": [{\"id\": 0, \"name\": \"in\xff<&>\", \"cost_cpu\": 1, \"cost_ram\": 8},\n"
                                 " {\"id\": 1, \"name\": \"\xc3\xa9\xed\xa0\x80x\", \"cost_cpu\": 1, \"cost_ram\": 8},\n"
                                 " {\"id\": 2, \"cost_cpu\": 1, \"cost_ram\": 8, \"backward\": true}],\n"
                                 " \"links\": [{\"source\": 0, \"target\": 1}, {\"source\": 1, \"target\": 2}]}\n"),
                     0);
    char *out;
    ck_assert_int_eq(tu_memgrad(&out, "plan --graph '%s' --format json --no-cache 2>/dev/null", g), 0);
    ck_assert_msg(valid_utf8(out), "plan --graph --format json is not UTF-8:\n%.400s", out);
    cJSON *j = parse_json(out);
    free(out);
    const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(j, "nodes");
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(nodes, 0), "name")->valuestring,
                     "in\xef\xbf\xbd<&>");
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(nodes, 1), "name")->valuestring,
                     "\xc3\xa9\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdx");
    cJSON_Delete(j);
    ck_assert_int_eq(tu_memgrad(&out, "sweep --graph '%s' --points 2 --svg '%s' --no-cache", g, path("g.svg")), 0);
    free(out);
    check_svg(path("g.svg"));
    char *svg = tu_read(path("g.svg"));
    ck_assert_msg(strstr(svg, "<title>bad\xef\xbf\xbd&lt;&amp;&gt;.json: "), "the SVG's title:\n%.400s", svg);
    free(svg);
}
END_TEST

/* The SVG timeline's phase backgrounds: [x, x + width) and whether it is the backward one. */
typedef struct phase_rects {
    double x[4096], w[4096];
    int back[4096], n;
} phase_rects;

static void XMLCALL phase_rect_start(void *ud, const XML_Char *name, const XML_Char **attr)
{
    phase_rects *r = ud;
    if (strcmp(name, "rect") || r->n == 4096) return;
    double x = -1, w = -1;
    int back = -1;
    for (int i = 0; attr[i]; i += 2)
        if (!strcmp(attr[i], "x")) x = atof(attr[i + 1]);
        else if (!strcmp(attr[i], "width")) w = atof(attr[i + 1]);
        else if (!strcmp(attr[i], "fill")) back = !strcmp(attr[i + 1], "#faf5ea") ? 1 : !strcmp(attr[i + 1], "#eef2f8") ? 0 : -1;
    if (back < 0) return;
    r->x[r->n] = x, r->w[r->n] = w, r->back[r->n++] = back;
}

/* Was a bug: in a plan split into micro-batches whose parts each run their backward pass after
 * their forward pass, the strip marked every step from the first backward one on B and the SVG
 * shaded only the steps before it as the forward pass, where the trace gives each step its
 * node's phase (unet_small at 30%: f59 b80 f59 b80 ...; the strip read F×20, then B to the end).
 * Every view now says what the trace says, step by step (mlp at 25%: 8 parts, f8 b7 f8 b7 ...). */
START_TEST(test_phases_agree_with_trace)
{
    const char *mlp = MG_SOURCE_DIR "/examples/mlp.mg";
    char *out;
    int rc = tu_memgrad(&out, "plan '%s' --budget 25%% --trace '%s' --svg '%s' --format json", mlp, path("t.json"),
                        path("t.svg"));
    ck_assert_msg(rc == 0, "%s", out);
    cJSON *plan = parse_json(out);
    free(out);
    ck_assert_msg(num(plan, "micro_batches") > 1, "mlp at 25%% is not in parts");
    cJSON_Delete(plan);
    char *text = tu_read(path("t.json"));
    ck_assert(text != NULL);
    cJSON *tr = parse_json(text);
    free(text);
    char phase[4096];
    int n = 0, switches = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(tr, "traceEvents"))
    {
        if (strcmp(cJSON_GetObjectItemCaseSensitive(e, "ph")->valuestring, "X")) continue;
        ck_assert(n < (int)sizeof phase);
        const char *ph = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(e, "args"), "phase")->valuestring;
        phase[n] = !strcmp(ph, "backward") ? 'B' : 'F';
        switches += n > 0 && phase[n] != phase[n - 1];
        n++;
    }
    cJSON_Delete(tr);
    ck_assert_msg(switches >= 4, "the trace's phases switch %d times: not the order this test is about", switches);
    /* the strip, one column a step (12 columns of labels and a space before them) */
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "COLUMNS=%d '%s' plan '%s' --budget 25%%", n + 13, MG_MEMGRAD, mlp);
    ck_assert_int_eq(tu_run(cmd, &out), 0);
    const char *legend = strstr(out, "\n# live - budget");
    const char *tail = out + (strlen(out) > 1200 ? strlen(out) - 1200 : 0); /* (for messages) */
    ck_assert_msg(legend != NULL, "no strip in:\n%s", tail);
    const char *marks = legend - 1;
    while (marks > out && marks[-1] != '\n') marks--;
    marks += 12;
    ck_assert_msg(legend - marks == n, "the strip has %d columns for %d steps:\n%s", (int)(legend - marks), n, tail);
    for (int s = 0; s < n; s++)
        ck_assert_msg(marks[s] == 'R' || marks[s] == phase[s], "step %d: the strip says %c, the trace %c:\n%.*s", s,
                      marks[s], phase[s], n, marks);
    free(out);
    /* the SVG: the background under the middle of each step (x = 96 + s * 1160 / n) */
    check_svg(path("t.svg"));
    char *svg = tu_read(path("t.svg"));
    static phase_rects r;
    r.n = 0;
    XML_Parser p = XML_ParserCreate("UTF-8");
    XML_SetUserData(p, &r);
    XML_SetElementHandler(p, phase_rect_start, xml_end);
    ck_assert(XML_Parse(p, svg, (int)strlen(svg), 1) == XML_STATUS_OK);
    XML_ParserFree(p);
    free(svg);
    for (int s = 0; s < n; s++) {
        double x = 96 + (s + 0.5) * 1160 / n;
        int k = 0;
        while (k < r.n && !(r.x[k] <= x && x < r.x[k] + r.w[k])) k++;
        ck_assert_msg(k < r.n, "step %d: no phase background at x = %.2f", s, x);
        ck_assert_msg((r.back[k] ? 'B' : 'F') == phase[s], "step %d: the SVG shades it %s, the trace says %c", s,
                      r.back[k] ? "backward" : "forward", phase[s]);
    }
}
END_TEST

/* The FLOPs lower bound, like "optimal", holds for the joint graph split into the plan's part
 * count, not for every part count (docs/plan-json.md): the text report said "proven" alone for
 * a plan in parts. It says for how many parts then, and nothing more for a whole batch. */
START_TEST(test_lower_bound_names_the_parts)
{
    const char *mlp = MG_SOURCE_DIR "/examples/mlp.mg";
    cJSON *j = plan_json(mlp, "10%");
    int parts = (int)num(j, "micro_batches");
    ck_assert_msg(parts > 1 && num(j, "flops_lower_bound") > num(j, "flops_once"),
                  "mlp at 10%%: %d parts, no lower bound above the FLOPs once: not the plan this test is about", parts);
    cJSON_Delete(j);
    char *out, want[96];
    ck_assert_int_eq(tu_memgrad(&out, "plan '%s' --budget 10%%", mlp), 0);
    snprintf(want, sizeof want, " proven for the batch in %d parts; the plan is within ", parts);
    const char *line = strstr(out, "\n  FLOPs lower bound ");
    ck_assert_msg(line && strstr(line, want) && strstr(line, want) < strchr(line + 1, '\n'), "wanted '%s' in:\n%.1200s",
                  want, out);
    free(out);
    ck_assert_int_eq(tu_memgrad(&out, "plan '%s' --budget %s", deep(), LOW), 0);
    ck_assert_msg(strstr(out, "\n  FLOPs lower bound ") && strstr(out, " proven; the plan is within ") &&
                      !strstr(out, " parts; the plan"),
                  "a whole batch's bound:\n%.1200s", out);
    free(out);
}
END_TEST

/* The report's line on a part count the search left out says how to plan it, and where that
 * count's split graph is past what the planner takes at all (MG_PLAN_MAX_NODES), says that
 * instead: a chain of 10,000 layers (60,003 operations) was told that --micro-batches 2 or
 * --max-split-ops 110014 would plan 2 parts, which both refuse. */
START_TEST(test_untried_parts_line)
{
    const char *path = MG_SOURCE_DIR "/examples/mlp.mg";
    char *src = tu_read(path);
    ck_assert(src != NULL);
    mg_graph *g = NULL;
    mg_diag d = {0};
    ck_assert_msg(mg_parse(path, src, strlen(src), &g, &d) == MG_OK && mg_autodiff(g, &d) == MG_OK, "%s", d.msg);
    mg_plan_request rq = {.solver = MG_SOLVER_AUTO, .time_limit = 10}; /* (store-all: any plan will do) */
    mg_planned p;
    ck_assert_msg(mg_plan_program(g, &rq, &p, &d) == MG_OK && p.train, "%s", d.msg);
    static const struct {
        int ops;
        const char *want;
    } cases[] = {
        {30000, "not tried from 2 parts up (2 parts: 30000 operations, more than the 20000 the search plans by itself; "
                "--micro-batches 2 or --max-split-ops 30000 plans them)\n"},
        {MG_PLAN_MAX_NODES + 1, "not tried from 2 parts up (2 parts: 65537 operations, more than the 65536 the planner "
                                "takes)\n"},
    };
    for (int i = 0; i < 2; i++) {
        p.parts_not_tried = 2, p.parts_not_tried_ops = cases[i].ops, p.parts_max_nodes = 20000;
        mg_plan_report_info info = {"auto", 0, 0};
        mg_report_figures f;
        ck_assert(mg_report_figures_make(g, &p, &info, &f, &d) == MG_OK);
        char *buf = NULL;
        size_t n = 0;
        FILE *out = open_memstream(&buf, &n);
        ck_assert(out != NULL);
        mg_report_text(out, &f, 100, 0);
        fclose(out);
        ck_assert_msg(strstr(buf, cases[i].want), "wanted '%s' in:\n%.1500s", cases[i].want, buf);
        free(buf);
        mg_report_figures_free(&f);
    }
    mg_planned_free(&p);
    mg_graph_free(g);
    free(src);
}
END_TEST

/* A plan a hair above its lower bound and not proven optimal is not "within 0.00%" of it (the
 * transformer at 89,553,883 bytes: 0.0041%): below 0.01% the gap has two significant digits. */
START_TEST(test_small_gap_to_the_bound)
{
    const char *m = MG_SOURCE_DIR "/examples/transformer.mg";
    cJSON *j = plan_json(m, "89553883B");
    double gap = 100 * (num(j, "flops_executed") / num(j, "flops_lower_bound") - 1);
    ck_assert_msg(gap > 0 && gap < 0.01 && !cJSON_IsTrue(cJSON_GetObjectItem(j, "optimal")),
                  "the transformer at 89553883 bytes: %g%% above its bound: not the plan this test is about", gap);
    cJSON_Delete(j);
    char *out, want[64];
    ck_assert_int_eq(tu_memgrad(&out, "plan '%s' --budget 89553883B", m), 0);
    snprintf(want, sizeof want, "; the plan is within %.2g%% of it\n", gap);
    ck_assert_msg(strstr(out, want) && !strstr(out, "within 0.00%"), "wanted '%s' in:\n%.1200s", want, out);
    free(out);
}
END_TEST

/* dot: a node per joint-graph node, an edge per operand, recomputed nodes marked. */
START_TEST(test_dot)
{
    cJSON *j = plan_json(deep(), LOW);
    char *out;
    ck_assert_int_eq(tu_memgrad(&out, "dot '%s' --budget %s", deep(), LOW), 0);
    ck_assert_msg(!strncmp(out, "digraph ", 8) && strstr(out, "\n}\n"), "%.200s", out);
    int nodes = 0, edges = 0;
    for (const char *p = out; (p = strstr(p, "\n  n")); p++) {
        if (p[4] < '0' || p[4] > '9') continue;
        const char *sp = strchr(p + 3, ' ');
        if (sp && sp[1] == '[') nodes++;
        else if (sp && !strncmp(sp, " -> ", 4)) edges++;
    }
    int want_edges = 0;
    const cJSON *n, *t;
    cJSON_ArrayForEach(n, cJSON_GetObjectItemCaseSensitive(j, "nodes")) want_edges += cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(n, "inputs"));
    ck_assert_int_eq(nodes, cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "nodes")));
    ck_assert_int_eq(edges, want_edges);
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(j, "tensors"))
    {
        char key[32];
        snprintf(key, sizeof key, "\n  n%d [", (int)num(t, "node"));
        const char *line = strstr(out, key);
        ck_assert(line != NULL);
        const char *dec = cJSON_GetObjectItemCaseSensitive(t, "decision")->valuestring;
        if (!strcmp(dec, "recomputed")) ck_assert(strstr(line, "recomputed x") < strchr(line + 1, '\n'));
    }
    free(out);
    cJSON_Delete(j);
}
END_TEST

/* The memory strip fits the terminal ($COLUMNS); --help tells the truth about the options. */
START_TEST(test_strip_width_and_help)
{
    const int widths[] = {40, 80, 132};
    for (int k = 0; k < 3; k++) {
        char *out, cmd[4300];
        snprintf(cmd, sizeof cmd, "COLUMNS=%d '%s' plan '%s' --budget %s", widths[k], MG_MEMGRAD, deep(), LOW);
        ck_assert_int_eq(tu_run(cmd, &out), 0);
        const char *strip = strstr(out, "\nlive bytes over the");
        ck_assert_msg(strip != NULL, "no memory strip in:\n%s", out);
        strip = strchr(strip + 1, '\n') + 1;
        int lines = 0;
        for (const char *l = strip; *l; lines++) {
            const char *e = strchr(l, '\n');
            ck_assert_msg(e - l <= widths[k], "strip line %d is %d wide for COLUMNS=%d", lines, (int)(e - l), widths[k]);
            l = e + 1;
        }
        ck_assert_int_ge(lines, 4);
        ck_assert_msg(strstr(strip, "R"), "no recomputation marked in the strip:\n%s", strip);
        free(out);
    }
    char *help;
    ck_assert_int_eq(tu_memgrad(&help, "--help"), 0);
    const char *want[] = {"--svg FILE", "--trace FILE", "--bytes", "dot MODEL.mg"};
    for (int i = 0; i < 4; i++) ck_assert_msg(strstr(help, want[i]), "--help lacks %s", want[i]);
    free(help);
    /* and what it says works: unknown to other commands */
    ck_assert_int_eq(tu_memgrad(&help, "check '%s' --svg x.svg", deep()), 2);
    free(help);
}
END_TEST

/* In process: the figures every report draws agree with the plan they come from, at several
 * budgets of the two example models — the bytes live peak at the plan's peak, the
 * high-water mark climbs to the workspace, every compute step is counted in one row. */
START_TEST(test_figures_agree_with_plan)
{
    const char *models[] = {MG_SOURCE_DIR "/examples/mlp_deep.mg", MG_SOURCE_DIR "/examples/mlp.mg"};
    const double pct[] = {100, 60, 35};
    for (int m = 0; m < 2; m++)
        for (int b = 0; b < 3; b++) {
            char *src = tu_read(models[m]);
            ck_assert(src != NULL);
            mg_graph *g = NULL;
            mg_diag d = {0};
            ck_assert_msg(mg_parse(models[m], src, strlen(src), &g, &d) == MG_OK && mg_autodiff(g, &d) == MG_OK, "%s", d.msg);
            mg_budget bud = {1, pct[b], 0};
            /* (no minimum feasible budget: the figures do not show it, and its search was most of
             * this test's time under ASan; compile plans the same way) */
            mg_plan_request rq = {.solver = MG_SOLVER_AUTO, .budget = &bud, .time_limit = 10, .want_min_feasible = 0};
            mg_planned p;
            ck_assert_msg(mg_plan_program(g, &rq, &p, &d) == MG_OK, "%s", d.msg);
            if (!p.train) { /* below the minimum feasible budget: nothing to report */
                mg_planned_free(&p);
                mg_graph_free(g);
                free(src);
                continue;
            }
            mg_plan_report_info info = {"auto", 0, 0};
            mg_report_figures f;
            ck_assert(mg_report_figures_make(g, &p, &info, &f, &d) == MG_OK);
            const mg_plan *t = p.train;
            int64_t peak = 0;
            int computes = 0, rows_computes = 0, recomputes = 0;
            for (int s = 0; s < t->nsteps; s++) {
                if (f.live_bytes[s] > peak) peak = f.live_bytes[s];
                ck_assert(s == 0 || f.high_water[s] >= f.high_water[s - 1]);
                computes += t->steps[s].kind == MG_STEP_COMPUTE;
                recomputes += t->steps[s].kind == MG_STEP_COMPUTE && t->steps[s].recompute;
            }
            ck_assert_int_eq(peak, t->peak_live_bytes);
            ck_assert_int_eq(f.high_water[t->nsteps - 1], t->workspace_bytes);
            ck_assert_int_eq(recomputes, f.recompute_steps);
            for (int r = 0; r < f.nrows; r++) {
                rows_computes += f.rows[r].computes;
                ck_assert_int_eq(f.row_of_node[f.rows[r].node], r);
                ck_assert(r == 0 || f.rows[r].first_step > f.rows[r - 1].first_step);
            }
            ck_assert_int_eq(rows_computes, computes);
            ck_assert(f.workspace_bytes <= p.budget_bytes);
            ck_assert(fabs(f.recompute_overhead - mg_recompute_overhead(t->flops_once, t->flops_executed)) == 0);
            if (pct[b] == 100) ck_assert_int_eq(f.recompute_steps, 0);
            mg_report_figures_free(&f);
            mg_planned_free(&p);
            mg_graph_free(g);
            free(src);
        }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("report");
    TCase *tc = tcase_create("report");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_text_matches_json);
    tcase_add_test(tc, test_json_tensors_match_schedule);
    tcase_add_test(tc, test_trace_events);
    tcase_add_test(tc, test_trace_zero_step_is_the_gradient);
    tcase_add_test(tc, test_svg_well_formed);
    tcase_add_test(tc, test_svg_renders_in_chromium);
    tcase_add_test(tc, test_outputs_are_safe);
    tcase_add_test(tc, test_escapes_make_valid_utf8);
    tcase_add_test(tc, test_non_utf8_names_in_reports);
    tcase_add_test(tc, test_phases_agree_with_trace);
    tcase_add_test(tc, test_lower_bound_names_the_parts);
    tcase_add_test(tc, test_untried_parts_line);
    tcase_add_test(tc, test_small_gap_to_the_bound);
    tcase_add_test(tc, test_dot);
    tcase_add_test(tc, test_strip_width_and_help);
    tcase_add_test(tc, test_figures_agree_with_plan);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
