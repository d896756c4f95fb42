/* cmd_cache.c — the plan cache from the driver's side: where it is (--cache-dir,
 * $XDG_CACHE_HOME/memgrad, ~/.cache/memgrad), how plan, compile and sweep take plans from it and
 * keep theirs in it (a model's plans, and a --graph's solutions), and the `memgrad cache` command
 * that shows and clears it.
 *
 * Why it exists: an unchanged model never solves twice; the entries themselves (keys, format,
 * integrity, pruning) are library code (plan_cache.c), what to warn about and when is the
 * driver's. */
#include "driver.h"

#include "budget.h"
#include "clock.h"
#include "microbatch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The plan cache's directory: --cache-dir, else $XDG_CACHE_HOME/memgrad, else ~/.cache/memgrad
 * into out; 0 when there is no home to put it in, -1 (after a warning) for a path too long to
 * open (it was cut, and mkdir -p made a directory of the cut name). */
static int cache_path(const char *given, char *out, size_t cap)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    if (given) n = snprintf(out, cap, "%s", given);
    else if (xdg && xdg[0] == '/') n = snprintf(out, cap, "%s/memgrad", xdg);
    else if (home && home[0]) n = snprintf(out, cap, "%s/.cache/memgrad", home);
    else return 0;
    if (n < 0 || (size_t)n + 32 > cap) { /* (room for an entry's name; the system opens no longer path) */
        fprintf(stderr, "memgrad: warning: %s '%.60s...' is too long a path (%d bytes): plans are not cached\n",
                given ? "--cache-dir" : "the plan cache", given ? given : xdg && xdg[0] == '/' ? xdg : home, n);
        return -1;
    }
    return 1;
}

/* 1 when the cache directory out names something other than a directory: a file, FILE/sub
 * (under a file) or a dangling symlink, which no mkdir makes. A directory not made yet is fine. */
static int cache_path_unusable(const char *out)
{
    struct stat st, ls;
    int found = stat(out, &st) == 0;
    return (found && !S_ISDIR(st.st_mode)) || (!found && errno == ENOTDIR) || (!found && lstat(out, &ls) == 0);
}

/* The plan cache's directory (cache_path); 0 with --no-cache or when there is no home to put it
 * in. A --cache-dir that names something other than a directory is said to be unusable (a
 * warning: planning goes on uncached), where it silently cached nothing; so is a path too long
 * to open, and the default place (its being a file cached nothing, unsaid). */
static int cache_dir(const mg_drv_options *o, char *out, size_t cap)
{
    if (o->no_cache || cache_path(o->cache_dir, out, cap) <= 0) return 0;
    if (cache_path_unusable(out)) {
        fprintf(stderr, "memgrad: warning: %s '%s' is not a directory: plans are not cached\n",
                o->cache_dir ? "--cache-dir" : "the plan cache", out);
        return 0;
    }
    return 1;
}

/* The bound on the cache directory's bytes: MEMGRAD_CACHE_MAX_SIZE (a size as --capacity takes
 * it, 1GiB; 0 for none), else MG_PLAN_CACHE_MAX_BYTES. A value it cannot read is a warning and
 * the default: a typo must not turn the bound off. */
static int64_t cache_max_bytes(void)
{
    const char *v = getenv("MEMGRAD_CACHE_MAX_SIZE");
    mg_budget b;
    char err[256];
    if (!v || !v[0]) return MG_PLAN_CACHE_MAX_BYTES;
    if (mg_budget_parse(v, &b, err, sizeof err) && !b.is_percent) return b.bytes;
    fprintf(stderr, "memgrad: warning: MEMGRAD_CACHE_MAX_SIZE '%s' is not a size (1GiB, 268435456; 0 for no "
            "bound): the plan cache keeps to %lld MiB\n", v, (long long)(MG_PLAN_CACHE_MAX_BYTES >> 20));
    return MG_PLAN_CACHE_MAX_BYTES;
}

void mg_drv_plan_cache_open(const mg_drv_options *o, mg_drv_plan_cache *pc)
{
    pc->build_id = 0;
    pc->unwritable = 0;
    pc->use = cache_dir(o, pc->dir, sizeof pc->dir);
    /* A plan is kept for the very executable that made it; one that cannot read itself (no /proc
     * in a chroot or a container) caches nothing rather than key its plans by a build id of 0,
     * under which two different builds would serve each other theirs (review21). */
    if (pc->use && !(pc->build_id = mg_plan_cache_build_id_self())) {
        fprintf(stderr, "memgrad: warning: cannot read the memgrad executable (through /proc/self/maps) to tell "
                "its build from others: plans are not cached\n");
        pc->use = 0;
    }
}

/* After an entry of key was written (st MG_OK) or could not be (errno saying why): a cache that
 * cannot be written is no error but a warning, said once (it cached nothing, unsaid, and the user
 * took the plans for cached); one written is held to its bound, as ccache keeps its: least
 * recently used entries out (a prune that cannot read the directory is no error either). */
static void stored(mg_drv_plan_cache *pc, uint64_t key, mg_status st)
{
    if (st != MG_OK) {
        fprintf(stderr, "memgrad: warning: cannot write the plan cache in '%s': %s (the plan is not cached)\n", pc->dir,
                strerror(errno));
        pc->unwritable = 1;
        return;
    }
    mg_plan_cache_usage gone;
    mg_diag pd = {0};
    mg_plan_cache_prune(pc->dir, cache_max_bytes(), key, &gone, &pd);
}

/* rq's plans of g in micro_batches parts (--micro-batches): from the cache where it holds them,
 * else planned (mg_plan_split) and kept there; *from_cache says which. MG_ERR (d filled) when
 * planning fails. */
mg_status mg_drv_plan_with_cache(mg_drv_plan_cache *pc, const mg_graph *g, mg_plan_request rq, int micro_batches,
                                 mg_planned *out, int *from_cache, mg_diag *d)
{
    rq.build_id = pc->build_id;
    uint64_t key = mg_plan_split_cache_key(g, &rq, micro_batches);
    /* compile takes the plan that `plan` made under the same budget, solver and options too (the
     * same plan, not planned a second time); `plan` never takes compile's, whose minimum may be
     * partial, nor sweep's points `plan`'s (which may be cheaper, from the minimum search: a
     * sweep then depended on what was planned before it) */
    uint64_t key_min = key;
    if (rq.want_min_feasible == MG_MIN_AS_PLANNED) {
        mg_plan_request with_min = rq;
        with_min.want_min_feasible = MG_MIN_YES;
        key_min = mg_plan_split_cache_key(g, &with_min, micro_batches);
    }
    *from_cache = pc->use && (mg_plan_cache_load(pc->dir, key, g, out) ||
                              (key_min != key && mg_plan_cache_load(pc->dir, key_min, g, out)));
    if (*from_cache) return MG_OK;
    if (mg_plan_split(g, &rq, micro_batches, out, d)) return MG_ERR;
    /* (a plan with a note — CBC failed or was stopped, so exact fell back to auto's plan — is not
     * kept: served from the cache it printed no note, and a later run never gave CBC another
     * chance) */
    if (pc->use && !pc->unwritable && out->train && !out->note) stored(pc, key, mg_plan_cache_store(pc->dir, key, out));
    return MG_OK;
}

mg_status mg_drv_solve_with_cache(mg_drv_plan_cache *pc, const mg_problem *pr, mg_solve_request rq, double started,
                                  mg_solution *out, int64_t *budget, double *seconds, int *from_cache, mg_diag *d)
{
    rq.build_id = pc->build_id;
    uint64_t key = mg_solution_cache_key(pr, &rq);
    *from_cache = pc->use && mg_solution_cache_load(pc->dir, key, pr, rq.budget, out, seconds);
    if (*from_cache) {
        *budget = rq.budget ? mg_budget_bytes(rq.budget, out->store_all_bytes) : INT64_MAX;
        return MG_OK;
    }
    /* a percentage is of the store-all workspace, a solve of its own (only where the cache did
     * not serve the solution: layered_n1000's takes 0.5 s) */
    *budget = INT64_MAX;
    if (rq.budget && rq.budget->is_percent) {
        mg_solution all;
        if (mg_solve(pr, MG_SOLVER_STORE_ALL, INT64_MAX, 0, 0, &all, d)) return MG_ERR;
        mg_plan_free(all.plan);
        *budget = mg_budget_bytes(rq.budget, all.store_all_bytes);
    } else if (rq.budget)
        *budget = rq.budget->bytes;
    if (mg_solve_from(pr, rq.solver, *budget, rq.want_min, rq.time_limit, rq.incumbent, out, d)) return MG_ERR;
    *seconds = mg_seconds() - started;
    if (pc->use && !pc->unwritable && out->plan && !out->note) /* (a note: as a model's plan, above) */
        stored(pc, key, mg_solution_cache_store(pc->dir, key, out, *seconds));
    return MG_OK;
}

/* memgrad cache [--cache-dir DIR] [--clear]: what the plan cache holds and its bound, as
 * `ccache -s`; --clear removes memgrad's entries (and writers' temporaries), nothing else in the
 * directory, as `ccache -C`. */
int mg_cmd_cache(int argc, char **argv)
{
    const char *given = NULL;
    int clear = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--clear")) clear = 1;
        else if (!strcmp(argv[i], "--cache-dir")) {
            if (mg_drv_needs_value(argc, argv, i)) return 2;
            given = argv[++i];
        } else if (!strcmp(argv[i], "--no-cache"))
            return mg_drv_usage_error("%s", "cache: --no-cache turns the cache off for the commands that plan; "
                                     "`memgrad cache` shows (or --clear clears) it");
        else if (argv[i][0] == '-' && argv[i][1]) {
            return mg_drv_unknown_option(argv[i], "cache");
        } else
            return mg_drv_usage_error("cache: unexpected argument '%s' (the directory is given with --cache-dir DIR)", argv[i]);
    }
    char dir[4096];
    int have = cache_path(given, dir, sizeof dir);
    if (have < 0) return 1;
    if (have == 0) {
        fprintf(stderr, "memgrad: cache: no cache directory: neither XDG_CACHE_HOME nor HOME is set (give --cache-dir DIR)\n");
        return 1;
    }
    if (cache_path_unusable(dir)) {
        fprintf(stderr, "memgrad: cache: '%s' is not a directory\n", dir);
        return 1;
    }
    mg_plan_cache_usage u;
    mg_diag d = {0};
    char h[32];
    if (clear) {
        int rc = mg_plan_cache_clear(dir, &u, &d) ? 1 : 0;
        if (!rc || u.files) /* (not "removed 0 entries" above "cannot read the plan cache") */
            printf("plan cache %s: removed %lld entr%s (%s, %lld %s)\n", dir, (long long)u.entries,
                   u.entries == 1 ? "y" : "ies", mg_human_bytes(u.bytes, h, sizeof h), (long long)u.bytes,
                   mg_bytes_word(u.bytes));
        if (rc) fprintf(stderr, "memgrad: %s\n", d.msg);
        return rc;
    }
    if (mg_plan_cache_stats(dir, &u, &d)) {
        fprintf(stderr, "memgrad: %s\n", d.msg);
        return 1;
    }
    int64_t max = cache_max_bytes();
    printf("plan cache %s\n", dir);
    printf("  entries       %lld", (long long)u.entries);
    if (u.files > u.entries)
        printf(" (and %lld being written)", (long long)(u.files - u.entries));
    printf("\n  size          %s (%lld %s)\n", mg_human_bytes(u.bytes, h, sizeof h), (long long)u.bytes,
           mg_bytes_word(u.bytes));
    if (max > 0)
        printf("  maximum size  %s (%lld %s), least recently used entries removed beyond it\n",
               mg_human_bytes(max, h, sizeof h), (long long)max, mg_bytes_word(max));
    else
        printf("  maximum size  none (MEMGRAD_CACHE_MAX_SIZE=0)\n");
    return 0;
}
