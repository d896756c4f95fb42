/* graph_import.c — reads the public planning benchmarks' graphs as planning problems, so the
 * planner can be measured on the inputs the literature used (bench/data/README.md):
 *
 *   Checkmate training graphs (networkx node-link JSON): nodes {id, name, backward, cost_cpu,
 *   cost_ram}, links {source, target}; ids 0..n-1 are a topological order.
 *   Moccasin's layered DAGs: nodes {name, out_cost, duration}, links {"0": src, "1": dst},
 *   graph.order a topological order.
 *
 * Every node is computed at least once and may be recomputed (the benchmarks' memory model);
 * for Checkmate graphs the forward nodes come first, so sqrt checkpoints apply to them. JSON
 * is parsed with cJSON; errors name the file, the line and the column: of the syntax error, or
 * of the node, link or graph.order entry at fault (cJSON keeps no positions: a small scan of
 * the text finds the element, once, on the error path).
 *
 * Limits (README, "Limits"): at most MAX_GRAPH_NODES nodes (as many as a model's training
 * step may have: planning time grows faster than the graph, about a minute at 60,000) and
 * MAX_GRAPH_LINKS links, node sizes adding up to at most 2^50 bytes, so that every int64_t
 * sum of sizes in the planner, its reports and the arena stays below 2^63 with each value
 * counted several thousand times over, and costs of at most 1e18 each (sums stay finite). */
#include "plan.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_GRAPH_NODES = 1 << 16, MAX_GRAPH_LINKS = 1 << 20 };
static const double MAX_GRAPH_BYTES = 0x1p50, MAX_NODE_COST = 1e18;

static mg_status fail_at(mg_diag *d, const char *file, const char *text, const char *at, const char *what)
{
    int line = 1, col = 1;
    const char *p = text;
    if (at && at - text >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) p += 3; /* columns count from after a
                                                                          byte order mark, as a model's */
    for (; at && p < at && *p; p++) {
        if (*p == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    return mg_diag_set(d, (mg_loc){file, line, col}, "%s", what);
}

/* Positions for messages, found in the text cJSON has already accepted (so well-formed):
 * whitespace is what cJSON skips, every byte up to a space. */
static const char *skip_ws(const char *p, const char *e)
{
    while (p < e && (unsigned char)*p <= 32) p++;
    return p;
}

static const char *skip_string(const char *p, const char *e) /* p at the opening quote */
{
    for (p++; p < e && *p != '"'; p++)
        if (*p == '\\' && p + 1 < e) p++;
    return p < e ? p + 1 : e;
}

/* The first \u0000 escape in a string of the (well-formed) text from p to e, or NULL: cJSON's
 * strings end at a NUL, so a key or a name holding one would be read cut short ("id\u0000x" as
 * "id"). */
static const char *nul_escape(const char *p, const char *e)
{
    for (; p < e; p++) {
        if (*p != '"') continue;
        for (p++; p < e && *p != '"'; p++) {
            if (*p != '\\' || p + 1 >= e) continue;
            if (p[1] == 'u' && e - p >= 6 && !memcmp(p + 2, "0000", 4)) return p;
            p++;
        }
    }
    return NULL;
}

/* From p towards e over strings, counting the arrays and objects opened in *depth: up to e, or
 * (close_first) just past the bracket that closes the first one opened. */
static const char *walk_nesting(const char *p, const char *e, int *depth, int close_first)
{
    while (p < e) {
        if (*p == '"') {
            p = skip_string(p, e);
            continue;
        }
        if (*p == '{' || *p == '[') ++*depth;
        else if ((*p == '}' || *p == ']') && --*depth == 0 && close_first) return p + 1;
        p++;
    }
    return e;
}

static const char *skip_value(const char *p, const char *e)
{
    int depth = 0;
    if (p < e && *p == '"') return skip_string(p, e);
    if (p < e && (*p == '{' || *p == '[')) return walk_nesting(p, e, &depth, 1);
    while (p < e && (unsigned char)*p > 32 && *p != ',' && *p != '}' && *p != ']') p++;
    return p;
}

/* The arrays and objects open at `at` (p the text's start): cJSON refuses nesting deeper than
 * CJSON_NESTING_LIMIT as a syntax error, at the bracket one level too deep. */
static int nesting_at(const char *p, const char *at)
{
    int depth = 0;
    walk_nesting(p, at, &depth, 0);
    return depth;
}

/* The value of the first member named key of the object at p (as cJSON looks it up), or NULL. */
static const char *json_member(const char *p, const char *e, const char *key)
{
    p = p ? skip_ws(p, e) : e;
    if (p >= e || *p != '{') return NULL;
    size_t k = strlen(key);
    for (p = skip_ws(p + 1, e); p < e && *p == '"'; p = skip_ws(p + 1, e)) {
        const char *ks = p + 1;
        p = skip_string(p, e);
        int match = (size_t)(p - 1 - ks) == k && !memcmp(ks, key, k);
        p = skip_ws(p, e);
        if (p >= e || *p != ':') return NULL;
        p = skip_ws(p + 1, e);
        if (match) return p;
        p = skip_ws(skip_value(p, e), e);
        if (p >= e || *p != ',') return NULL;
    }
    return NULL;
}

/* The idx-th element of the array at p, or NULL. */
static const char *json_element(const char *p, const char *e, int idx)
{
    p = p ? skip_ws(p, e) : e;
    if (p >= e || *p != '[') return NULL;
    for (int i = 0; (p = skip_ws(p + 1, e)) < e && *p != ']'; i++) {
        if (i == idx) return p;
        p = skip_ws(skip_value(p, e), e);
        if (p >= e || *p != ',') return NULL;
    }
    return NULL;
}

/* An error about element idx (idx < 0: the whole array) of the root's member key (of graph's,
 * for "order"): at its line and column when the scan finds it, else at the file. */
static mg_status fail_elem(mg_diag *d, const char *file, const char *text, size_t len, const char *key, int idx,
                           const char *fmt, ...) __attribute__((format(printf, 7, 8)));
static mg_status fail_elem(mg_diag *d, const char *file, const char *text, size_t len, const char *key, int idx,
                           const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *e = text + len, *root = text;
    if (len >= 3 && !memcmp(root, "\xEF\xBB\xBF", 3)) root += 3; /* cJSON skips a byte order mark too */
    const char *arr = !strcmp(key, "order") ? json_member(json_member(root, e, "graph"), e, "order")
                                             : json_member(root, e, key);
    const char *at = idx < 0 ? arr : json_element(arr, e, idx);
    if (!at) return mg_diag_set(d, (mg_loc){file, 0, 0}, "%s", msg);
    return fail_at(d, file, text, at, msg);
}

/* A finite number field (or a node key given as a string of digits): never NaN or infinite
 * (JSON's 1e999 reads as inf, and "nan" as a string), which no later conversion may see. */
static int get_num(const cJSON *o, const char *key, double *out)
{
    const cJSON *v = key ? cJSON_GetObjectItemCaseSensitive(o, key) : o;
    if (cJSON_IsNumber(v)) {
        *out = v->valuedouble;
        return isfinite(*out);
    }
    if (cJSON_IsString(v) && v->valuestring[0]) {
        char *end;
        *out = strtod(v->valuestring, &end);
        return *end == 0 && isfinite(*out);
    }
    return 0;
}

/* An integer in [0, n): a node id or a position. */
static int is_index(double k, int n) { return k >= 0 && k < n && k == floor(k); }

typedef struct node_rec {
    double key, bytes, cost;
    int backward;
    const char *name;
} node_rec;

mg_status mg_problem_from_json(const char *file, const char *text, size_t len, mg_problem **out, mg_diag *d)
{
    *out = NULL;
    mg_loc at_file = {file, 0, 0};
    const char *err_at = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &err_at, 0);
    if (!root) {
        /* (an empty file, as a failed export leaves, is no syntax error at 1:1) */
        const char *b = len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3) ? text + 3 : text;
        if (skip_ws(b, text + len) == text + len)
            return mg_diag_set(d, (mg_loc){file, 0, 0}, "empty file: expected a node-link graph (JSON)");
        if (err_at && err_at < text + len && (*err_at == '[' || *err_at == '{') &&
            nesting_at(text, err_at) >= CJSON_NESTING_LIMIT) { /* (not "malformed": it may be well formed) */
            char what[96];
            snprintf(what, sizeof what, "arrays and objects nested more than %d deep (no graph is)", CJSON_NESTING_LIMIT);
            return fail_at(d, file, text, err_at, what);
        }
        return fail_at(d, file, text, err_at, "malformed JSON");
    }
    /* one JSON value and nothing after it but whitespace: two graphs pasted into one file, or
     * one followed by the rest of a broken write, planned the first as if it were all */
    const char *rest = err_at ? skip_ws(err_at, text + len) : text + len;
    if (rest < text + len) {
        cJSON_Delete(root);
        return fail_at(d, file, text, rest, "text after the graph's JSON value");
    }
    const char *nul = nul_escape(text, text + len);
    if (nul) {
        cJSON_Delete(root);
        return fail_at(d, file, text, nul, "a string holds a NUL character (\\u0000): names and keys cannot hold one");
    }
    mg_status st = MG_OK;
    const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(root, "nodes");
    const cJSON *links = cJSON_GetObjectItemCaseSensitive(root, "links");
    const cJSON *graph = cJSON_GetObjectItemCaseSensitive(root, "graph");
    const cJSON *order = graph ? cJSON_GetObjectItemCaseSensitive(graph, "order") : NULL;
    int n = cJSON_GetArraySize(nodes), m = cJSON_GetArraySize(links);
    node_rec *rec = calloc((size_t)n + 1, sizeof *rec);
    int *pos = NULL; /* node index in the file -> position in the topological order */
    int *src = calloc((size_t)m + 1, sizeof *src), *dst = calloc((size_t)m + 1, sizeof *dst);
    if (!rec || !src || !dst) abort();
    if (!cJSON_IsArray(nodes) || !cJSON_IsArray(links) || n == 0) {
        st = mg_diag_set(d, at_file, "not a node-link graph: expected a non-empty \"nodes\" array and a \"links\" array");
        goto done;
    }
    if (n > MAX_GRAPH_NODES || m > MAX_GRAPH_LINKS) {
        st = n > MAX_GRAPH_NODES
                 ? fail_elem(d, file, text, len, "nodes", MAX_GRAPH_NODES, "more than %d nodes (%d): too large to plan",
                             MAX_GRAPH_NODES, n)
                 : fail_elem(d, file, text, len, "links", MAX_GRAPH_LINKS, "more than %d links (%d): too large to plan",
                             MAX_GRAPH_LINKS, m);
        goto done;
    }
    int layered = 0, i = 0;
    double total_bytes = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, nodes)
    {
        node_rec *r = &rec[i];
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(it, "name");
        r->name = cJSON_IsString(name) ? name->valuestring : NULL;
        if (i == 0) layered = cJSON_GetObjectItemCaseSensitive(it, "out_cost") != NULL;
        int ok = layered ? get_num(it, "name", &r->key) && get_num(it, "out_cost", &r->bytes) &&
                               get_num(it, "duration", &r->cost)
                         : get_num(it, "id", &r->key) && get_num(it, "cost_ram", &r->bytes) &&
                               get_num(it, "cost_cpu", &r->cost);
        if (!ok || r->bytes < 0 || r->cost < 0) {
            st = fail_elem(d, file, text, len, "nodes", i, "node %d: expected %s with finite non-negative numbers", i,
                             layered ? "\"name\", \"out_cost\" and \"duration\"" : "\"id\", \"cost_ram\" and \"cost_cpu\"");
            goto done;
        }
        /* bytes are whole and add up to at most 2^50, so no sum of them overflows later (see the
         * top); a cost of at most 1e18 keeps every sum of costs finite */
        total_bytes += r->bytes;
        if (r->bytes != floor(r->bytes) || total_bytes > MAX_GRAPH_BYTES || r->cost > MAX_NODE_COST) {
            st = fail_elem(d, file, text, len, "nodes", i, "node %d: %s", i,
                           r->bytes != floor(r->bytes) ? "a size in bytes must be a whole number"
                           : r->cost > MAX_NODE_COST   ? "cost above 1e18"
                                                       : "the node sizes add up to more than 2^50 bytes");
            goto done;
        }
        r->backward = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "backward"));
        i++;
    }
    /* node keys -> indices: keys must be 0..n-1 */
    int *index_of = malloc((size_t)n * sizeof *index_of);
    pos = malloc((size_t)n * sizeof *pos);
    if (!index_of || !pos) abort();
    for (i = 0; i < n; i++) index_of[i] = -1;
    for (i = 0; i < n && !st; i++) {
        double k = rec[i].key;
        if (!is_index(k, n) || index_of[(int)k] >= 0)
            st = fail_elem(d, file, text, len, "nodes", i, "node %d: id %.17g is not a distinct integer in 0..%d", i,
                           k, n - 1);
        else index_of[(int)k] = i;
    }
    /* the topological order: graph.order for layered DAGs, ids otherwise */
    for (i = 0; i < n && !st; i++) pos[i] = -1;
    if (!st && layered && order) {
        if (!cJSON_IsArray(order) || cJSON_GetArraySize(order) != n) {
            st = fail_elem(d, file, text, len, "order", -1, "graph.order must list each of the %d nodes once", n);
        } else {
            int p = 0;
            cJSON_ArrayForEach(it, order)
            {
                double k;
                if (!get_num(it, NULL, &k) || !is_index(k, n) || pos[index_of[(int)k]] >= 0) {
                    st = fail_elem(d, file, text, len, "order", p, "graph.order entry %d is not a node id or repeats one",
                                   p);
                    break;
                }
                pos[index_of[(int)k]] = p++;
            }
        }
    } else if (!st) {
        for (i = 0; i < n; i++) pos[index_of[i]] = i;
    }
    i = 0;
    cJSON_ArrayForEach(it, links)
    {
        if (st) break;
        double s, t;
        int ok = layered ? get_num(it, "0", &s) && get_num(it, "1", &t)
                         : get_num(it, "source", &s) && get_num(it, "target", &t);
        if (!ok || !is_index(s, n) || !is_index(t, n)) {
            st = fail_elem(d, file, text, len, "links", i, "link %d: expected %s naming nodes 0..%d", i,
                           layered ? "\"0\" and \"1\"" : "\"source\" and \"target\"", n - 1);
            break;
        }
        src[i] = pos[index_of[(int)s]];
        dst[i] = pos[index_of[(int)t]];
        if (src[i] >= dst[i]) {
            st = fail_elem(d, file, text, len, "links", i,
                           "link %d: %.0f -> %.0f goes against the topological order (a cycle or a misordered graph)", i,
                           s, t);
            break;
        }
        i++;
    }
    free(index_of);
    if (st) goto done;

    mg_problem *pr = mg_problem_alloc(n, m);
    pr->names = calloc((size_t)n, sizeof *pr->names);
    if (!pr->names) abort();
    pr->nfwd = n;
    for (i = 0; i < n; i++) {
        int v = pos[i];
        const node_rec *r = &rec[i];
        pr->bytes[v] = (int64_t)r->bytes;
        pr->cost[v] = r->cost;
        pr->target[v] = 1;
        pr->evictable[v] = 1;
        /* a layered DAG's node is named by its key, a number: the plan's ids are positions in
         * graph.order, so the key is what ties a plan's node to the file's (it was "") */
        char key[32];
        if (!r->name && layered) snprintf(key, sizeof key, "%.17g", r->key);
        pr->names[v] = strdup(r->name ? r->name : layered ? key : "");
        if (!pr->names[v]) abort();
        if (r->backward && v < pr->nfwd) pr->nfwd = v;
    }
    for (int e = 0; e < m; e++) pr->in_start[dst[e] + 1]++;
    for (int v = 0; v < n; v++) pr->in_start[v + 1] += pr->in_start[v];
    int *fill = calloc((size_t)n, sizeof *fill);
    if (!fill) abort();
    for (int e = 0; e < m; e++) pr->in[pr->in_start[dst[e]] + fill[dst[e]]++] = src[e];
    free(fill);
    *out = pr;
done:
    free(rec);
    free(pos);
    free(src);
    free(dst);
    cJSON_Delete(root);
    return st;
}
