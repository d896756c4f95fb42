/* testutil.c — see testutil.h. */
#include "testutil.h"
#include "plan.h"

#include <check.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

char *tu_tmpdir(void)
{
    const char *base = getenv("TMPDIR");
    char *t = malloc(4096);
    snprintf(t, 4096, "%s/memgrad-test-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(t)) {
        free(t);
        return NULL;
    }
    return t;
}

void tu_rmtree(const char *dir)
{
    if (!dir || strncmp(dir, "/", 1)) return;
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "warning: could not remove %s\n", dir);
}

int tu_write(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t n = strlen(text);
    int bad = fwrite(text, 1, n, f) != n;
    bad |= fclose(f) != 0;
    return bad ? -1 : 0;
}

char *tu_read(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *s = malloc(cap);
    size_t r;
    while ((r = fread(s + n, 1, cap - n - 1, f)) > 0) {
        n += r;
        if (n + 1 == cap) s = realloc(s, cap *= 2);
    }
    fclose(f);
    s[n] = 0;
    return s;
}

int tu_run(const char *cmd, char **out)
{
    char *full = malloc(strlen(cmd) + 16);
    sprintf(full, "(%s) 2>&1", cmd);
    FILE *p = popen(full, "r");
    free(full);
    if (!p) return -1;
    size_t cap = 4096, n = 0;
    char *s = malloc(cap);
    size_t r;
    while ((r = fread(s + n, 1, cap - n - 1, p)) > 0) {
        n += r;
        if (n + 1 == cap) s = realloc(s, cap *= 2);
    }
    s[n] = 0;
    int st = pclose(p);
    if (out) *out = s;
    else free(s);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

void tu_drop_solve_seconds(char *json)
{
    char *p = strstr(json, "\"solve_seconds\": ");
    ck_assert_msg(p != NULL, "no solve_seconds in %.200s", json);
    char *q = strchr(p, ',');
    ck_assert_msg(q != NULL, "solve_seconds unterminated");
    memmove(p, q, strlen(q) + 1);
}

void *tu_build_model(const char *dir, const char *name, const char *src, const char *options, char **log)
{
    char path[4200], cmd[9000];
    snprintf(path, sizeof path, "%s/%s.mg", dir, name);
    if (log) *log = NULL;
    if (tu_write(path, src)) return NULL;
    snprintf(cmd, sizeof cmd, "'%s' compile '%s/%s.mg' -o '%s/%s.o' --header '%s/%s.h' %s && '%s' -shared -o '%s/%s.so' '%s/%s.o' -lm",
             MG_MEMGRAD, dir, name, dir, name, dir, name, options ? options : "", MG_CC, dir, name, dir, name);
    char *out = NULL;
    int rc = tu_run(cmd, &out);
    if (rc != 0) {
        if (log) *log = out;
        else free(out);
        return NULL;
    }
    free(out);
    snprintf(path, sizeof path, "%s/%s.so", dir, name);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h && log) *log = strdup(dlerror());
    return h;
}

void *tu_sym(void *handle, const char *model, const char *suffix)
{
    char name[512];
    snprintf(name, sizeof name, "%s_%s", model, suffix);
    void *p = dlsym(handle, name);
    ck_assert_msg(p != NULL, "symbol %s missing from the generated object", name);
    return p;
}

int tu_run_suite(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

int tu_vmemgrad(char **out, const char *fmt, va_list ap)
{
    char args[8192], cmd[9000];
    vsnprintf(args, sizeof args, fmt, ap);
    snprintf(cmd, sizeof cmd, "'%s' %s", MG_MEMGRAD, args);
    return tu_run(cmd, out);
}

int tu_memgrad(char **out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = tu_vmemgrad(out, fmt, ap);
    va_end(ap);
    return rc;
}

const char *tu_path(const char *dir, const char *name)
{
    static char bufs[8][4200];
    static int k;
    char *b = bufs[k++ % 8];
    snprintf(b, sizeof bufs[0], "%s/%s", dir, name);
    return b;
}

void tu_dir_free(char **dir)
{
    if (*dir) tu_rmtree(*dir);
    free(*dir);
    *dir = NULL;
}

/* The value of the #define whose name ends in suffix (fails the running test when there is none). */
static const char *header_define(const char *h, const char *suffix)
{
    for (const char *p = strstr(h, "#define "); p; p = strstr(p + 1, "#define ")) {
        const char *name = p + 8, *end = name + strcspn(name, " \n");
        size_t n = strlen(suffix);
        if ((size_t)(end - name) < n || strncmp(end - n, suffix, n)) continue;
        return end + strspn(end, " ");
    }
    ck_abort_msg("no #define ..%s in the header", suffix);
    return NULL;
}

long long tu_header_figure(const char *h, const char *suffix)
{
    const char *v = header_define(h, suffix);
    if (!strncmp(v, "MG_SIZE_BYTES(", 14)) v += 14; /* a size_t figure */
    return strtoll(v, NULL, 10);
}

unsigned long long tu_header_hash(const char *h, const char *suffix)
{
    return strtoull(header_define(h, suffix), NULL, 16);
}

long long tu_json_figure(const char *json, const char *key)
{
    char k[128];
    snprintf(k, sizeof k, "\"%s\": ", key);
    const char *p = strstr(json, k);
    ck_assert_msg(p != NULL, "no %s in the plan JSON", key);
    return strtoll(p + strlen(k), NULL, 10);
}

mg_problem *tu_load_graph(const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/bench/data/%s", MG_SOURCE_DIR, name);
    char *text = tu_read(path);
    ck_assert_msg(text != NULL, "cannot read %s", path);
    mg_problem *pr = NULL;
    mg_diag d = {0};
    ck_assert_msg(mg_problem_from_json(path, text, strlen(text), &pr, &d) == MG_OK, "%s", d.msg);
    free(text);
    return pr;
}

mg_problem *tu_random_problem(uint64_t *seed, int nfwd, int nbwd, int with_scratch)
{
    int n = nfwd + nbwd;
    mg_problem *p = mg_problem_alloc(n, 2 * n);
    p->nfwd = nfwd;
    int e = 0;
    for (int v = 0; v < n; v++) {
        *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
        uint64_t r = *seed >> 20;
        p->in_start[v] = e;
        if (v > 0 && v < nfwd) {
            p->in[e++] = v - 1;
            if (v > 2 && r % 3 == 0) p->in[e++] = (int)(r / 3 % (uint64_t)(v - 1));
        } else if (v >= nfwd) {
            p->in[e++] = v - 1;
            if (v > nfwd) p->in[e++] = (int)(r / 7 % (uint64_t)nfwd);
        }
        p->target[v] = 1;
        p->bytes[v] = 64 * (int64_t)(1 + r / 11 % 8);
        if (with_scratch) p->scratch[v] = r % 5 == 0 ? 64 : 0;
        p->cost[v] = (double)(1 + r / 101 % 50);
        p->evictable[v] = v < nfwd;
    }
    p->in_start[n] = e;
    p->keep_to_end[n - 1] = 1;
    return p;
}
