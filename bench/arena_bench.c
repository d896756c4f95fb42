/* arena_bench.c — places MiniMalloc CSV files the way the planner places its plans
 * (mg_arena_assign_same: its effort limit, its size limits, a capacity) and prints, per file, the
 * buffers, the lower bound (peak of live bytes), the arena reached, the waste above the bound and
 * the median time of several placements; every placement is checked for overlaps.
 *
 * Why it exists: `memgrad arena` places a file with the command's own rules (bisection, a wall
 * clock); the planner's placements follow other rules, and these are what decide whether a large
 * plan fits its budget. Instances come from bench/arena_dump.c.
 *
 * Usage: arena_bench [-r REPS] [-c CAPACITY] FILE.csv...   (capacity default: none)
 * The last column is an FNV-1a hash of every buffer's offset, in file order: two builds of the
 * arena that should place alike (a speed-up) must print the same hashes, not only the same arenas. */
#include "arena.h"
#include "clock.h"
#include "plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* 1 when no two buffers live at the same step share a byte (quadratic, fine for a bench). */
static int valid(const mg_plan *p)
{
    for (int i = 0; i < p->nbufs; i++)
        for (int j = i + 1; j < p->nbufs; j++) {
            const mg_buffer *a = &p->bufs[i], *b = &p->bufs[j];
            if (a->bytes == 0 || b->bytes == 0 || a->last < b->first || b->last < a->first) continue;
            if (a->offset < b->offset + b->bytes && b->offset < a->offset + a->bytes) return 0;
        }
    return 1;
}

int main(int argc, char **argv)
{
    int reps = 3;
    int64_t capacity = INT64_MAX;
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i += 2) {
        if (i + 1 >= argc) break;
        if (!strcmp(argv[i], "-r")) reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-c")) capacity = atoll(argv[i + 1]);
    }
    if (reps < 1) reps = 1;
    printf("%-28s %7s %12s %12s %8s %9s %-5s %s\n", "file", "buffers", "lower_bound", "arena", "waste%", "ms", "valid",
           "offsets");
    double sum_waste = 0;
    int nfiles = 0;
    for (; i < argc; i++) {
        mg_arena_csv c;
        mg_diag d = {0};
        if (mg_arena_csv_read(argv[i], &c, &d)) {
            fprintf(stderr, "%s: cannot read\n", argv[i]);
            continue;
        }
        mg_plan p = {0};
        p.nbufs = c.n;
        p.bufs = calloc((size_t)c.n + 1, sizeof *p.bufs);
        int64_t tmax = 0;
        for (int k = 0; k < c.n; k++) {
            p.bufs[k] = (mg_buffer){c.iv[k].size, (int)c.iv[k].lower, (int)c.iv[k].upper - 1, -1, -1};
            if (c.iv[k].upper > tmax) tmax = c.iv[k].upper;
        }
        p.nsteps = (int)tmax;
        double *t = calloc((size_t)reps, sizeof *t);
        mg_arena_scratch *P = mg_arena_scratch_new();
        for (int r = 0; r < reps; r++) {
            double t0 = mg_seconds();
            mg_arena_assign_in(&p, capacity, P, &d);
            t[r] = mg_seconds() - t0;
        }
        mg_arena_scratch_free(P);
        qsort(t, (size_t)reps, sizeof *t, cmp_double);
        double waste = 100.0 * (double)(p.workspace_bytes - p.peak_live_bytes) / (double)p.peak_live_bytes;
        const char *base = strrchr(argv[i], '/') ? strrchr(argv[i], '/') + 1 : argv[i];
        uint64_t h = 14695981039346656037ull; /* FNV-1a over the offsets */
        for (int k = 0; k < c.n; k++)
            for (int byte = 0; byte < 8; byte++) h = (h ^ (((uint64_t)p.bufs[k].offset >> (8 * byte)) & 0xff)) * 1099511628211ull;
        printf("%-28s %7d %12lld %12lld %8.2f %9.2f %-5s %016llx\n", base, c.n, (long long)p.peak_live_bytes,
               (long long)p.workspace_bytes, waste, 1000 * t[reps / 2], valid(&p) ? "ok" : "OVERLAP",
               (unsigned long long)h);
        fflush(stdout);
        sum_waste += waste;
        nfiles++;
        free(t);
        free(p.bufs);
        mg_arena_csv_free(&c);
    }
    if (nfiles) printf("mean waste %.2f%% over %d files\n", sum_waste / nfiles, nfiles);
    return 0;
}
