/* cmd_arena.c — the `memgrad arena` command: places the buffers of a MiniMalloc-format CSV file
 * in one arena and says how big it is and whether it fits a capacity.
 *
 * Why it exists: the arena allocator is judged on published instances, and users with their
 * own buffer lists can use it without a model. Driver code: it parses options, prints, and
 * chooses exit codes (0 placed — the answer is the output, fits or not; 1 bad input; 2 usage);
 * the reading and the placing are library code (arena_csv.c, arena.c). */
#include "driver.h"

#include "clock.h"
#include "arena.h"
#include "budget.h"
#include "excerpt.h"
#include "read_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int mg_cmd_arena(int argc, char **argv)
{
    const char *file = NULL, *capacity_text = NULL, *format = "text", *time_text = NULL, *cache_dir = NULL;
    int no_cache = 0;
    int operands = 0; /* after "--" every argument is the file, as POSIX utilities take it */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!operands && !strcmp(a, "--")) {
            operands = 1;
            continue;
        }
        if (!operands && a[0] == '-' && a[1]) {
            const char **slot = NULL;
            if (!strcmp(a, "--capacity")) slot = &capacity_text;
            else if (!strcmp(a, "--format")) slot = &format;
            else if (!strcmp(a, "--time-limit")) slot = &time_text;
            else if (!strcmp(a, "--cache-dir")) slot = &cache_dir;
            else if (!strcmp(a, "--no-cache")) { /* accepted as on every command: nothing here is cached */
                no_cache = 1;
                continue;
            }
            else return mg_drv_unknown_option(a, "arena");
            if (mg_drv_needs_value(argc, argv, i)) return 2;
            *slot = argv[++i];
            continue;
        }
        if (file) return mg_drv_usage_error("arena: unexpected argument '%s' (one buffer file at a time)", a);
        file = a;
    }
    if (no_cache && cache_dir) /* (refused as on the commands that plan: one of them goes unused) */
        return mg_drv_usage_error("%s", "arena: --cache-dir has no effect with --no-cache (which neither reads nor "
                                        "writes the plan cache); give one of them");
    if (!file) return mg_drv_usage_error("%s", "arena: no buffer file given (FILE.csv)");
    if (strcmp(format, "text") && strcmp(format, "json"))
        return mg_drv_usage_error("arena: --format wants text or json, got '%s'", format);
    int64_t capacity = INT64_MAX;
    if (capacity_text) {
        mg_budget b;
        char err[256];
        mg_budget_problem problem = MG_BUDGET_FINE;
        if (!mg_budget_parse_why(capacity_text, &b, &problem, err, sizeof err) || b.is_percent) {
            /* why, in a capacity's words: the budget parser's message offers percentages, which
             * need a store-all workspace a buffer list has not ('9223372036854775807' alone read
             * as refused though it is a positive number of bytes) */
            const char *why = b.is_percent || problem == MG_BUDGET_OVER_100
                                  ? " (a percentage needs a store-all workspace, which a buffer list has not)"
                              : problem == MG_BUDGET_RANGE    ? " (at most 9e18 bytes)"
                              : problem == MG_BUDGET_FRACTION ? " (a whole number of bytes)"
                              : problem == MG_BUDGET_UNIT     ? " (units: B, KiB, MiB, GiB, KB, MB, GB)"
                                                                : "";
            char msg[512];
            snprintf(msg, sizeof msg, "arena: --capacity wants a number of bytes (1048576, 1MiB), got '%s'%s",
                     capacity_text, why);
            return mg_drv_usage_error("%s", msg);
        }
        capacity = b.bytes;
    }
    double time_limit = 10;
    if (time_text) {
        char *end;
        time_limit = strtod(time_text, &end);
        if (!mg_plain_decimal(time_text, end) || *end || !(time_limit > 0) || time_limit > 1e6)
            return mg_drv_usage_error("arena: --time-limit wants a number of seconds above 0 and at most 1e6, got '%s'", time_text);
    }

    if (!strcmp(file, "-")) file = "/dev/stdin"; /* as for a model and --graph ("cannot open -"; review19) */
    /* named as a model read from "-" is, and as cc names it: "<stdin>:2: error: ..." (it said
     * /dev/stdin, in errors and atop the report; review21) */
    const char *shown = strcmp(file, "/dev/stdin") ? file : "<stdin>";
    mg_arena_csv csv;
    mg_diag d = {{0}, {0}};
    char *text;
    size_t len;
    if (mg_read_file(file, (size_t)1 << 28, &text, &len, &d)) { /* 256 MiB: some 8 million buffers */
        fprintf(stderr, "memgrad: %s\n", d.msg);
        return 1;
    }
    if (mg_arena_csv_parse(text, len, shown, &csv, &d)) {
        /* FILE:LINE:COL, the row and a caret under the field, as for a model (it named the
         * line alone, so "expected 4 fields, got 3" on line 53,211 showed nothing of it) */
        if (d.loc.line > 0 && d.loc.col > 0)
            fprintf(stderr, "%s:%d:%d: error: %s\n", shown, d.loc.line, d.loc.col, d.msg);
        else if (d.loc.line > 0) fprintf(stderr, "%s:%d: error: %s\n", shown, d.loc.line, d.msg);
        else fprintf(stderr, "memgrad: %s\n", d.msg);
        mg_print_excerpt(stderr, text, len, d.loc.line, d.loc.col);
        free(text);
        return 1;
    }
    free(text);
    mg_arena_opts opts = {capacity, time_limit, INT64_MAX};
    mg_arena_stats st;
    double t0 = mg_seconds();
    mg_arena_place_ex(csv.iv, csv.n, &opts, &st);
    double secs = mg_seconds() - t0;
    int fits = st.arena_bytes <= capacity;

    if (!strcmp(format, "json")) {
        printf("{\"buffers\": %d, \"lower_bound\": %lld, \"arena_bytes\": %lld, ", csv.n,
               (long long)st.lower_bound, (long long)st.arena_bytes);
        if (capacity == INT64_MAX) printf("\"capacity\": null, ");
        else printf("\"capacity\": %lld, ", (long long)capacity);
        printf("\"fits\": %s, \"optimal\": %s, \"solve_seconds\": %.6f, \"offsets\": [", fits ? "true" : "false",
               st.optimal ? "true" : "false", secs);
        for (int i = 0; i < csv.n; i++)
            printf("%s\n  {\"id\": %lld, \"offset\": %lld}", i ? "," : "", (long long)csv.ids[i],
                   (long long)csv.iv[i].offset);
        printf("%s]}\n", csv.n ? "\n" : "");
    } else {
        printf("%s\n", shown);
        printf("  buffers       %d\n", csv.n);
        printf("  lower bound   %lld %s (max live)\n", (long long)st.lower_bound, mg_bytes_word(st.lower_bound));
        printf("  arena         %lld %s", (long long)st.arena_bytes, mg_bytes_word(st.arena_bytes));
        if (st.lower_bound > 0 && st.arena_bytes > st.lower_bound)
            printf(" (+%.2f%% over the lower bound)",
                   100.0 * ((double)st.arena_bytes / (double)st.lower_bound - 1.0));
        printf("\n");
        if (capacity == INT64_MAX) printf("  capacity      none (as small as it goes)\n");
        else printf("  capacity      %lld %s\n", (long long)capacity, mg_bytes_word(capacity));
        if (fits) printf("  result        fits\n");
        else printf("  result        does not fit (%lld %s over)\n", (long long)(st.arena_bytes - capacity),
                    mg_bytes_word(st.arena_bytes - capacity));
        if (st.optimal) printf("  optimal       yes\n");
        else if (!st.searched && csv.n > MG_ARENA_SEARCH_MAX)
            printf("  optimal       not proven (the exact search takes at most %d buffers)\n", MG_ARENA_SEARCH_MAX);
        else printf("  optimal       not proven\n");
        printf("  solve time    %.3f s", secs);
        if (st.searched) printf(" (greedy %lld %s, then %lld search node%s)", (long long)st.greedy_bytes,
                                mg_bytes_word(st.greedy_bytes), (long long)st.nodes, mg_plural(st.nodes));
        printf("\n");
    }
    mg_arena_csv_free(&csv);
    return 0;
}
