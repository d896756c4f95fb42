/* plan_cache.c — plans on disk, so an unchanged model never solves twice. An entry is keyed
 * by an xxHash of everything the plan depends on (the model's structural hash, the joint
 * graph's size, the budget, the solver and options, memgrad's version and build (a hash of the file its code runs from) and the layout of the
 * plan structs) and carries its own XXH64 checksum. A loaded entry is trusted only after its
 * checksum matches and the plan verifier accepts both plans against the model at hand; a
 * corrupt, truncated or stale entry is ignored (and replaced by the next store). Entries are
 * written through a temporary file and renamed, so readers never see half an entry. Imported
 * graphs' solutions (plan --graph, sweep --graph: a solve can take CBC's whole time limit) are
 * entries too, of a format and key of their own, through the same writing and checks.
 *
 * The directory is bounded like ccache's: after each store the least recently used entries (a
 * load that serves an entry sets its time to now) are removed until the rest fit the maximum
 * size; `memgrad cache` lists and clears it. Only memgrad's own files are ever removed: names
 * of 16 hex digits and ".plan" (or a writer's "ENTRY.tmp.PID.N") that are regular files and
 * begin with "MGPLAN"; anything else in the directory is left alone. */
#include "microbatch.h"
#include "read_file.h"
#include "write_all.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#ifndef MG_VERSION
#define MG_VERSION "0"
#endif

static const char magic[8] = {'M', 'G', 'P', 'L', 'A', 'N', '0', '4'};

uint64_t mg_plan_cache_key(const mg_graph *g, const mg_plan_request *rq)
{
    XXH64_state_t *st = XXH64_createState();
    if (!st) abort();
    XXH64_reset(st, 0x706c616e63616368ULL);
    uint64_t parts[] = {mg_graph_hash(g), (uint64_t)g->n, (uint64_t)rq->solver, (uint64_t)rq->want_min_feasible,
                        (uint64_t)(rq->budget ? 1 + rq->budget->is_percent : 0), (uint64_t)(rq->budget ? rq->budget->bytes : 0),
                        sizeof(mg_step), sizeof(mg_buffer), sizeof(mg_plan), sizeof(mg_planned),
                        (uint64_t)rq->parts_max_nodes[0], (uint64_t)rq->parts_max_nodes[1]};
    XXH64_update(st, parts, sizeof parts);
    double pct = rq->budget ? rq->budget->percent : 0, limit = rq->solver == MG_SOLVER_EXACT ? rq->time_limit : 0;
    XXH64_update(st, &pct, sizeof pct);
    XXH64_update(st, &limit, sizeof limit); /* an exact search with more time may find more */
    XXH64_update(st, MG_VERSION, strlen(MG_VERSION));
    XXH64_update(st, &rq->build_id, sizeof rq->build_id);
    uint64_t h = XXH64_digest(st);
    XXH64_freeState(st);
    return h;
}

uint64_t mg_plan_cache_build_id(const char *exe)
{
    FILE *f = fopen(exe, "rb");
    if (!f) return 0;
    XXH64_state_t *st = XXH64_createState();
    if (!st) abort();
    XXH64_reset(st, 0);
    char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) XXH64_update(st, buf, n);
    uint64_t h = ferror(f) ? 0 : XXH64_digest(st);
    XXH64_freeState(st);
    fclose(f);
    return h;
}

uint64_t mg_plan_cache_build_id_self(void)
{
    /* The file mapped at this very function's address: /proc/self/exe names the program the
     * kernel started, which for `ld.so ./memgrad` is the loader, so that every build run that
     * way had one id and served another build's plans (review21). */
    uintptr_t at = (uintptr_t)&mg_plan_cache_build_id_self;
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return 0;
    char line[4096 + 256];
    uint64_t id = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        int n = 0;
        if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &n) < 2 || !n || at < lo || at >= hi) continue;
        char *path = line + n;
        path[strcspn(path, "\n")] = 0;
        if (path[0] != '/') break; /* not a file's */
        /* the mapping's own file first: the one running, even if replaced or deleted since */
        char mapped[96];
        snprintf(mapped, sizeof mapped, "/proc/self/map_files/%lx-%lx", lo, hi);
        id = mg_plan_cache_build_id(mapped);
        if (!id) id = mg_plan_cache_build_id(path);
        break;
    }
    fclose(f);
    return id;
}

/* 0 when the entry's path does not fit out (nor a path the system would open: PATH_MAX is
 * 4096): a truncated path named another file, and mkdir -p made a directory of a cut name. */
static int entry_path(const char *dir, uint64_t key, char *out, size_t cap)
{
    int n = snprintf(out, cap, "%s/%016llx.plan", dir, (unsigned long long)key);
    return n > 0 && (size_t)n < cap;
}

typedef struct wbuf {
    unsigned char *p;
    size_t n, cap;
} wbuf;

static void wput(wbuf *b, const void *data, size_t n)
{
    if (n == 0) return; /* an empty plan has no step array at all */
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 4096;
        b->p = realloc(b->p, b->cap);
        if (!b->p) abort();
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
}

static void put_plan(wbuf *b, const mg_plan *p)
{
    int32_t head[4] = {(int32_t)p->kind, p->nsteps, p->nbufs, p->result};
    wput(b, head, sizeof head);
    int64_t fig[2] = {p->workspace_bytes, p->peak_live_bytes};
    wput(b, fig, sizeof fig);
    double fl[2] = {p->flops_once, p->flops_executed};
    wput(b, fl, sizeof fl);
    wput(b, &p->result_at, sizeof p->result_at);
    wput(b, p->steps, (size_t)p->nsteps * sizeof *p->steps);
    wput(b, p->bufs, (size_t)p->nbufs * sizeof *p->bufs);
}

/* MG_ERR leaves errno saying why (plan.h's prototype is shared with tests that pass no mg_diag):
 * the driver warns with it, as a cache that cannot be written cached nothing, unsaid. The first
 * directory mkdir -p could not make is the reason, not the ENOENT of the file under it. */
static mg_status write_entry(const char *dir, uint64_t key, wbuf *bp);

mg_status mg_plan_cache_store(const char *dir, uint64_t key, const mg_planned *pl)
{
    if (!pl->train || !pl->forward) {
        errno = EINVAL;
        return MG_ERR;
    }
    wbuf b = {0};
    wput(&b, magic, sizeof magic);
    wput(&b, &key, sizeof key);
    int64_t fig[4] = {pl->workspace_bytes, pl->budget_bytes, pl->store_all_bytes, pl->min_feasible_bytes};
    wput(&b, fig, sizeof fig);
    int32_t opt[6] = {pl->optimal, pl->graph ? pl->micro_batches : 1, pl->graph && pl->convs_uncapped,
                      pl->parts_not_tried, pl->parts_not_tried_ops, pl->parts_max_nodes};
    wput(&b, opt, sizeof opt);
    wput(&b, &pl->solve_seconds, sizeof pl->solve_seconds);
    wput(&b, &pl->flops_lower_bound, sizeof pl->flops_lower_bound);
    put_plan(&b, pl->train);
    put_plan(&b, pl->forward);
    return write_entry(dir, key, &b);
}

/* Writes the entry b holds (its fields after the magic and key; the checksum is added here) as
 * the entry of key in dir, and frees b's bytes. What mg_plan_cache_store returns. */
static mg_status write_entry(const char *dir, uint64_t key, wbuf *bp)
{
    wbuf b = *bp;
    *bp = (wbuf){0};
    uint64_t sum = XXH64(b.p, b.n, 0);
    wput(&b, &sum, sizeof sum);

    /* mkdir -p; then write a temporary file of a name no other writer has (created with O_EXCL:
     * a pid alone is not unique among containers or hosts sharing the directory, and two writers
     * of one file interleaved their bytes) and rename it over the entry. (Not mkstemp: its files
     * are 0600, and a cache shared by a group's users would serve nobody else.) */
    char path[4096], tmp[4200];
    if (!entry_path(dir, key, path, sizeof path)) {
        free(b.p);
        errno = ENAMETOOLONG;
        return MG_ERR;
    }
    snprintf(path, sizeof path, "%s", dir);
    int mkdir_err = 0;
    for (char *s = path + 1; *s; s++)
        if (*s == '/') {
            *s = 0;
            if (mkdir(path, 0777) && errno != EEXIST && !mkdir_err) mkdir_err = errno;
            *s = '/';
        }
    if (mkdir(path, 0777) && errno != EEXIST) {
        int err = mkdir_err && errno == ENOENT ? mkdir_err : errno;
        free(b.p);
        errno = err;
        return MG_ERR;
    }
    entry_path(dir, key, path, sizeof path);
    int fd = -1;
    for (unsigned attempt = 0; attempt < 64 && fd < 0; attempt++) {
        snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", path, (long)getpid(), attempt);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    /* not stdio: write(2)'s errno is the reason (ENOSPC, EDQUOT, EFBIG) */
    int err = fd < 0 ? errno : mg_write_all(fd, b.p, b.n);
    if (fd >= 0 && close(fd) != 0 && !err) err = errno;
    if (!err && rename(tmp, path) != 0) err = errno;
    if (err && fd >= 0) remove(tmp);
    free(b.p);
    errno = err;
    return err ? MG_ERR : MG_OK;
}

typedef struct rbuf {
    const unsigned char *p;
    size_t n, at;
    int bad;
} rbuf;

static void rget(rbuf *r, void *out, size_t n)
{
    if (n == 0) return;
    if (r->bad || r->n - r->at < n) {
        r->bad = 1;
        memset(out, 0, n);
        return;
    }
    memcpy(out, r->p + r->at, n);
    r->at += n;
}

/* The entry of key in dir read whole into *data (the caller frees it; NULL: there is none, or
 * none that large: a corrupt one), r over its fields after the magic and the key, and path its
 * name. r is bad unless the entry begins with mark, its checksum matches and it names key.
 * Only a regular file of at most ENTRY_MAX bytes is read: under an entry's name a FIFO blocked
 * `plan` for ever (opening it waits for a writer), and a 20 GB file was read for 3.6 s to its
 * first GiB before it was found too large; `cache` lists regular files alone too. */
enum { ENTRY_MAX = 1 << 30 };

static void read_entry(const char *dir, uint64_t key, const char *mark, char *path, size_t cap,
                       unsigned char **data, rbuf *r)
{
    *data = NULL;
    *r = (rbuf){NULL, 0, 0, 1};
    char *text;
    size_t n;
    mg_diag rd = {0};
    struct stat st;
    if (!entry_path(dir, key, path, cap) || stat(path, &st) || !S_ISREG(st.st_mode) || st.st_size > ENTRY_MAX ||
        mg_read_file(path, ENTRY_MAX, &text, &n, &rd))
        return;
    *data = (unsigned char *)text;
    uint64_t sum = 0, stored_key = 0;
    int ok = n > sizeof magic + 16 && !memcmp(text, mark, sizeof magic);
    if (ok) {
        memcpy(&sum, text + n - sizeof sum, sizeof sum);
        ok = XXH64(text, n - sizeof sum, 0) == sum;
    }
    *r = (rbuf){*data, ok ? n - sizeof sum : 0, sizeof magic, !ok};
    rget(r, &stored_key, sizeof stored_key);
    if (stored_key != key) r->bad = 1;
}

static mg_plan *get_plan(rbuf *r, const mg_graph *g)
{
    int32_t head[4];
    rget(r, head, sizeof head);
    if (r->bad || head[1] < 0 || head[2] < 0 || (size_t)head[1] > r->n / sizeof(mg_step) ||
        (size_t)head[2] > r->n / sizeof(mg_buffer)) {
        r->bad = 1;
        return NULL;
    }
    mg_plan *p = calloc(1, sizeof *p);
    if (!p) abort();
    p->g = g;
    p->kind = head[0] == MG_PLAN_FORWARD ? MG_PLAN_FORWARD : MG_PLAN_TRAIN;
    p->nsteps = head[1];
    p->nbufs = head[2];
    p->result = head[3];
    int64_t fig[2];
    rget(r, fig, sizeof fig);
    p->workspace_bytes = fig[0];
    p->peak_live_bytes = fig[1];
    double fl[2];
    rget(r, fl, sizeof fl);
    p->flops_once = fl[0];
    p->flops_executed = fl[1];
    rget(r, &p->result_at, sizeof p->result_at);
    p->steps = malloc((size_t)p->nsteps * sizeof *p->steps + 1);
    p->bufs = malloc((size_t)p->nbufs * sizeof *p->bufs + 1);
    if (!p->steps || !p->bufs) abort();
    rget(r, p->steps, (size_t)p->nsteps * sizeof *p->steps);
    rget(r, p->bufs, (size_t)p->nbufs * sizeof *p->bufs);
    return p;
}

/* Validates the place fields a verifier indexes with before it runs (of a problem of n nodes;
 * need_result: the plan returns a node's value, as a model's training step does). */
static int plan_shape_ok(const mg_plan *p, int n, int need_result)
{
    for (int s = 0; s < p->nsteps; s++) {
        const mg_step *st = &p->steps[s];
        if ((int)st->kind < 0 || st->kind > MG_STEP_ZERO || st->node < 0 || st->node >= n) return 0;
        if (st->scratch >= p->nbufs || st->scratch < -1) return 0;
    }
    if (p->result >= n || (need_result && p->result < 0)) return 0;
    for (int b = 0; b < p->nbufs; b++)
        if (p->bufs[b].node >= n || p->bufs[b].node < -1) return 0;
    return 1;
}

int mg_plan_cache_load(const char *dir, uint64_t key, const mg_graph *g, mg_planned *out)
{
    memset(out, 0, sizeof *out);
    char path[4096];
    unsigned char *data;
    rbuf r;
    read_entry(dir, key, magic, path, sizeof path, &data, &r);
    if (!data) return 0;
    int64_t fig[4];
    rget(&r, fig, sizeof fig);
    int32_t opt[6];
    rget(&r, opt, sizeof opt);
    rget(&r, &out->solve_seconds, sizeof out->solve_seconds);
    rget(&r, &out->flops_lower_bound, sizeof out->flops_lower_bound);
    /* a plan is of the graph mg_split_graph makes of g in that many parts (the whole batch's
     * too, where it lowers batch_norms) */
    mg_diag md = {0};
    if (!r.bad && (opt[2] < 0 || opt[2] > 1)) r.bad = 1;
    if (!r.bad && opt[1] < 1) r.bad = 1;
    if (!r.bad && mg_split_graph(g, opt[1], !opt[2], &out->graph, &md)) r.bad = 1;
    if (!r.bad && (opt[3] < 0 || opt[4] < 0 || opt[5] < 0)) r.bad = 1;
    out->micro_batches = opt[1];
    out->convs_uncapped = opt[2];
    out->parts_not_tried = opt[3];
    out->parts_not_tried_ops = opt[4];
    out->parts_max_nodes = opt[5];
    g = mg_planned_graph(out, g);
    out->train = get_plan(&r, g);
    out->forward = get_plan(&r, g);
    int ok = !r.bad && r.at == r.n && out->train && out->forward &&
             plan_shape_ok(out->train, g->n, out->train->kind == MG_PLAN_TRAIN) &&
             plan_shape_ok(out->forward, g->n, out->forward->kind == MG_PLAN_TRAIN);
    free(data);
    if (ok) {
        out->workspace_bytes = fig[0];
        out->budget_bytes = fig[1];
        out->store_all_bytes = fig[2];
        out->min_feasible_bytes = fig[3];
        out->optimal = opt[0];
        mg_diag d = {0};
        /* (the figures too: an entry made up with a right checksum named a budget of 1 byte and a
         * store-all workspace of 0 for a 467,008-byte plan) */
        ok = mg_program_verify(g, out, &d) == MG_OK &&
             out->workspace_bytes == (out->train->workspace_bytes > out->forward->workspace_bytes
                                          ? out->train->workspace_bytes
                                          : out->forward->workspace_bytes) &&
             out->budget_bytes >= out->workspace_bytes && out->store_all_bytes >= 0 &&
             (out->store_all_bytes > 0 || out->workspace_bytes == 0) && /* (a store-all workspace of 0
                                                                          bytes beside a plan of some) */
             out->min_feasible_bytes >= -1 && out->optimal >= -1 && out->optimal <= 1 &&
             /* (no bound above a plan's cost, nor NaN: the verifier checked the cost, not the bound) */
             out->flops_lower_bound <= out->train->flops_executed * (1 + 1e-9) + 1;
    }
    /* a used entry is the most recently used: the bound removes the least recently used first
     * (no error if it cannot be touched: a read-only shared cache) */
    if (ok) utimensat(AT_FDCWD, path, NULL, 0);
    if (!ok) {
        mg_planned_free(out);
        memset(out, 0, sizeof *out);
    }
    return ok;
}

/* Entries of imported graphs' solutions (plan --graph, sweep --graph): a format of their own
 * under a mark of their own, which the directory's listing and bound take as memgrad's ("MGPLAN"). */
static const char solution_magic[8] = {'M', 'G', 'P', 'L', 'A', 'N', 'G', '1'};

/* A hash of p's content (its steps, buffers and figures), field by field where a struct has
 * padding: the incumbent a sweep's point was solved from is part of the point's key. */
static uint64_t plan_hash(const mg_plan *p)
{
    XXH64_state_t *st = XXH64_createState();
    if (!st) abort();
    XXH64_reset(st, 0);
    int64_t head[6] = {(int64_t)p->kind, p->nsteps, p->nbufs, p->result, p->workspace_bytes, p->peak_live_bytes};
    XXH64_update(st, head, sizeof head);
    double fl[2] = {p->flops_once, p->flops_executed};
    XXH64_update(st, fl, sizeof fl);
    XXH64_update(st, &p->result_at, sizeof p->result_at);
    XXH64_update(st, p->steps, (size_t)p->nsteps * sizeof *p->steps); /* (no padding: problem.c) */
    for (int b = 0; b < p->nbufs; b++) {
        const mg_buffer *bf = &p->bufs[b];
        int64_t f[5] = {bf->bytes, bf->first, bf->last, bf->offset, bf->node};
        XXH64_update(st, f, sizeof f);
    }
    uint64_t h = XXH64_digest(st);
    XXH64_freeState(st);
    return h;
}

uint64_t mg_solution_cache_key(const mg_problem *pr, const mg_solve_request *rq)
{
    XXH64_state_t *st = XXH64_createState();
    if (!st) abort();
    XXH64_reset(st, 0x736f6c7574696f6eULL); /* (not the model key's seed; and the tag below) */
    const mg_budget *b = rq->budget;
    uint64_t parts[] = {0x67726170682d736fULL, mg_problem_hash(pr), (uint64_t)pr->n, (uint64_t)rq->solver,
                        (uint64_t)rq->want_min, (uint64_t)(b ? 1 + b->is_percent : 0), (uint64_t)(b ? b->bytes : 0),
                        rq->incumbent ? plan_hash(rq->incumbent) : 0, sizeof(mg_step), sizeof(mg_buffer),
                        sizeof(mg_plan), sizeof(mg_solution)};
    XXH64_update(st, parts, sizeof parts);
    double pct = b ? b->percent : 0, limit = rq->solver == MG_SOLVER_EXACT ? rq->time_limit : 0;
    XXH64_update(st, &pct, sizeof pct);
    XXH64_update(st, &limit, sizeof limit);
    XXH64_update(st, solution_magic, sizeof solution_magic); /* (the layout of what is stored) */
    XXH64_update(st, MG_VERSION, strlen(MG_VERSION));
    XXH64_update(st, &rq->build_id, sizeof rq->build_id);
    uint64_t h = XXH64_digest(st);
    XXH64_freeState(st);
    return h;
}

mg_status mg_solution_cache_store(const char *dir, uint64_t key, const mg_solution *s, double seconds)
{
    if (!s->plan) {
        errno = EINVAL;
        return MG_ERR;
    }
    wbuf b = {0};
    wput(&b, solution_magic, sizeof solution_magic);
    wput(&b, &key, sizeof key);
    int64_t fig[2] = {s->store_all_bytes, s->min_feasible_bytes};
    wput(&b, fig, sizeof fig);
    int32_t opt[2] = {s->optimal, s->optimal_in_class};
    wput(&b, opt, sizeof opt);
    double fl[2] = {s->lower_bound, seconds};
    wput(&b, fl, sizeof fl);
    put_plan(&b, s->plan);
    return write_entry(dir, key, &b);
}

int mg_solution_cache_load(const char *dir, uint64_t key, const mg_problem *pr, const mg_budget *budget,
                           mg_solution *out, double *seconds)
{
    *out = (mg_solution){.min_feasible_bytes = -1, .optimal = -1, .lower_bound = -1};
    *seconds = 0;
    char path[4096];
    unsigned char *data;
    rbuf r;
    read_entry(dir, key, solution_magic, path, sizeof path, &data, &r);
    if (!data) return 0;
    int64_t fig[2];
    rget(&r, fig, sizeof fig);
    int32_t opt[2];
    rget(&r, opt, sizeof opt);
    double fl[2];
    rget(&r, fl, sizeof fl);
    mg_plan *p = get_plan(&r, pr->g);
    int ok = !r.bad && r.at == r.n && p && plan_shape_ok(p, pr->n, 0) && p->result == pr->result && p->kind == pr->kind;
    free(data);
    /* the figures too, as a model's, as mg_solve leaves them: the store-all workspace resolves a
     * percentage (and must stay where that cannot overflow) and is no less than the minimum;
     * every op once is what the problem's targets cost (the report's overhead is from it); the
     * bound starts there and is at most what the plan executes, which it is when optimality was
     * proven for every plan */
    if (ok) {
        double once = 0;
        for (int v = 0; v < pr->n; v++)
            if (pr->target[v]) once += pr->cost[v]; /* (mg_pb_init's sum, in its order) */
        ok = fig[0] >= 0 && fig[0] <= (int64_t)1 << 62 && (fig[0] > 0 || p->workspace_bytes == 0) && fig[1] >= -1 &&
             fig[1] <= fig[0] && opt[0] >= -1 && opt[0] <= 1 && (opt[1] == 0 || opt[1] == 1) &&
             p->flops_once == once && fl[0] >= once && fl[0] <= p->flops_executed &&
             (opt[0] != 1 || opt[1] || fl[0] == p->flops_executed) && fl[1] >= 0 && fl[1] <= 1e9;
    }
    mg_diag d = {0};
    ok = ok && p->workspace_bytes <= (budget ? mg_budget_bytes(budget, fig[0]) : INT64_MAX) &&
         mg_plan_verify(p, pr, &d) == MG_OK;
    if (!ok) {
        mg_plan_free(p);
        return 0;
    }
    utimensat(AT_FDCWD, path, NULL, 0); /* (the most recently used now, as a model's entry) */
    out->plan = p;
    out->store_all_bytes = fig[0];
    out->min_feasible_bytes = fig[1];
    out->optimal = opt[0];
    out->optimal_in_class = opt[1];
    out->lower_bound = fl[0];
    *seconds = fl[1];
    return 1;
}

/* 1 when name is one of memgrad's cache files: an entry (16 hex digits, ".plan") or, with tmp
 * set, a writer's temporary ("ENTRY.tmp.PID.N"). */
static int cache_name(const char *name, int *tmp)
{
    for (int i = 0; i < 16; i++)
        if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f'))) return 0;
    if (strncmp(name + 16, ".plan", 5)) return 0;
    *tmp = 0;
    if (!name[21]) return 1;
    if (strncmp(name + 21, ".tmp.", 5)) return 0;
    const char *p = name + 26;
    for (int part = 0; part < 2; part++) {
        if (*p < '0' || *p > '9') return 0;
        while (*p >= '0' && *p <= '9') p++;
        if (part == 0 && *p++ != '.') return 0;
    }
    *tmp = 1;
    return !*p;
}

/* 1 when the regular file name in dir (not a symlink) begins with an entry's magic, of any
 * version ("MGPLAN"), or is an empty temporary: a file the user named like an entry is not
 * memgrad's to remove. */
static int cache_file_ok(int dfd, const char *name, int tmp, const struct stat *st)
{
    if (st->st_size == 0) return tmp; /* a writer's temporary before its first byte */
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) return 0;
    char head[6];
    ssize_t n = read(fd, head, sizeof head);
    close(fd);
    return n == (ssize_t)sizeof head && !memcmp(head, magic, sizeof head);
}

typedef struct cache_file {
    char name[48];
    int64_t bytes;
    struct timespec used;
    int tmp, ours, stale; /* (prune) ours: its first bytes read, one of memgrad's; stale: a temporary left */
} cache_file;

/* Counts f in u (a file; an entry unless a writer's temporary). */
static void usage_add(mg_plan_cache_usage *u, const cache_file *f)
{
    u->files += 1;
    u->bytes += f->bytes;
    if (!f->tmp) u->entries += 1;
}

static int cmp_used(const void *a, const void *b)
{
    const cache_file *x = a, *y = b;
    if (x->used.tv_sec != y->used.tv_sec) return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
    if (x->used.tv_nsec != y->used.tv_nsec) return x->used.tv_nsec < y->used.tv_nsec ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* memgrad's files in dir, least recently used first; *n of them. MG_ERR with d filled when dir
 * cannot be read (a directory that does not exist holds none: MG_OK, *n 0). With look 0 the
 * files' first bytes are not read (the bound after every store: the caller reads those of the
 * files it would remove). */
static mg_status cache_files(const char *dir, int look, int dfd_wanted, cache_file **out, int *n, int *dfd_out,
                             mg_diag *d)
{
    *out = NULL;
    *n = 0;
    *dfd_out = -1;
    DIR *dp = opendir(dir);
    if (!dp) {
        if (errno == ENOENT) return MG_OK;
        return mg_diag_set(d, (mg_loc){0}, "cannot read the plan cache '%s': %s", dir, strerror(errno));
    }
    int dfd = dirfd(dp), cap = 0;
    cache_file *f = NULL;
    struct dirent *e;
    while ((e = readdir(dp))) {
        int tmp;
        struct stat st;
        if (!cache_name(e->d_name, &tmp) || strlen(e->d_name) >= sizeof f->name ||
            fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode) ||
            (look && !cache_file_ok(dfd, e->d_name, tmp, &st)))
            continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 64;
            f = realloc(f, (size_t)cap * sizeof *f);
            if (!f) abort();
        }
        memcpy(f[*n].name, e->d_name, strlen(e->d_name) + 1); /* (shorter than name: above) */
        f[*n].bytes = (int64_t)st.st_size;
        f[*n].used = st.st_mtim;
        f[*n].tmp = tmp;
        (*n)++;
    }
    if (*n > 1) qsort(f, (size_t)*n, sizeof *f, cmp_used);
    *out = f;
    if (dfd_wanted) *dfd_out = dup(dfd);
    closedir(dp);
    return MG_OK;
}

mg_status mg_plan_cache_stats(const char *dir, mg_plan_cache_usage *u, mg_diag *d)
{
    memset(u, 0, sizeof *u);
    cache_file *f;
    int n, dfd;
    if (cache_files(dir, 1, 0, &f, &n, &dfd, d)) return MG_ERR;
    for (int i = 0; i < n; i++) usage_add(u, &f[i]);
    free(f);
    return MG_OK;
}

/* A writer's temporary older than this is left by a writer that died: the bound removes it. */
enum { STALE_TMP_SECONDS = 3600 };

mg_status mg_plan_cache_prune(const char *dir, int64_t max_bytes, uint64_t keep, mg_plan_cache_usage *removed,
                              mg_diag *d)
{
    memset(removed, 0, sizeof *removed);
    cache_file *f;
    int n, dfd;
    if (cache_files(dir, 0, 1, &f, &n, &dfd, d)) return MG_ERR;
    int64_t total = 0;
    for (int i = 0; i < n; i++) total += f[i].bytes;
    /* over the bound with every file named like one of memgrad's counted: now only those that
     * are memgrad's (their first bytes read; a file read only then, as the bound is rarely
     * reached), and only these are removed; so are writers' temporaries left an hour */
    time_t now = time(NULL);
    int over_all = max_bytes > 0 && total > max_bytes;
    for (int i = 0; i < n; i++) {
        struct stat st = {.st_size = f[i].bytes};
        f[i].stale = f[i].tmp && now - f[i].used.tv_sec > STALE_TMP_SECONDS;
        f[i].ours = (over_all || f[i].stale) && cache_file_ok(dfd, f[i].name, f[i].tmp, &st);
        if (over_all && !f[i].ours) total -= f[i].bytes;
    }
    char kept[24];
    snprintf(kept, sizeof kept, "%016llx.plan", (unsigned long long)keep);
    for (int i = 0; i < n; i++) {
        int over = max_bytes > 0 && total > max_bytes; /* (a live writer's temporary: never) */
        if (!f[i].stale && (f[i].tmp || !over || (keep && !strcmp(f[i].name, kept)))) continue;
        if (!f[i].ours) continue;
        if (unlinkat(dfd, f[i].name, 0) && errno != ENOENT) continue;
        total -= f[i].bytes;
        usage_add(removed, &f[i]);
    }
    if (dfd >= 0) close(dfd);
    free(f);
    return MG_OK;
}

mg_status mg_plan_cache_clear(const char *dir, mg_plan_cache_usage *removed, mg_diag *d)
{
    memset(removed, 0, sizeof *removed);
    cache_file *f;
    int n, dfd;
    if (cache_files(dir, 1, 1, &f, &n, &dfd, d)) return MG_ERR;
    mg_status st = MG_OK;
    for (int i = 0; i < n; i++) {
        if (unlinkat(dfd, f[i].name, 0)) {
            if (errno == ENOENT) continue;
            if (!st) mg_diag_set(d, (mg_loc){0}, "cannot remove %s/%s: %s", dir, f[i].name, strerror(errno));
            st = MG_ERR;
            continue;
        }
        usage_add(removed, &f[i]);
    }
    if (dfd >= 0) close(dfd);
    free(f);
    return st;
}
