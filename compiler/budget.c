/* budget.c — memory budgets as users write them: bytes with binary (KiB, MiB, GiB) or decimal
 * (KB, MB, GB) units, or a percentage of the store-all workspace. */
#include "budget.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int mg_plain_decimal(const char *s, const char *end)
{
    /* (at most: strtod leaves the 'E' of '1EiB' to the unit, which is then named as unknown) */
    return end > s && (size_t)(end - s) <= strspn(s, "0123456789.eE+-");
}

int mg_budget_parse(const char *s, mg_budget *b, char *err, int errlen)
{
    return mg_budget_parse_why(s, b, NULL, err, errlen);
}

/* (the problem in *why, where the caller asked) */
static int refuse(mg_budget_problem *why, mg_budget_problem problem)
{
    if (why) *why = problem;
    return 0;
}

int mg_budget_parse_why(const char *s, mg_budget *b, mg_budget_problem *why, char *err, int errlen)
{
    static const struct { const char *unit; double mult; } units[] = {
        {"", 1}, {"B", 1}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0},
        {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"%", -1}};
    char *end;
    memset(b, 0, sizeof *b);
    double v = strtod(s, &end);
    /* 0 is a budget like any other: met by a step that needs no workspace, else refused with
     * the minimum feasible budget, as 40% of a 0-byte store-all workspace and 1e-9% always were */
    /* a space may stand between the number and its unit ('1 KiB'), but not before the number nor
     * at the end ('10 ' was taken as 10 bytes while ' 10' was refused) */
    size_t gap = strspn(end, " ");
    if (!mg_plain_decimal(s, end) || !isfinite(v) || signbit(v) || (gap && !end[gap])) { /* (signbit: '-0' too, as '-5%') */
        if (mg_plain_decimal(s, end) && v < 0 && isfinite(v))
            snprintf(err, (size_t)errlen, "budget '%s' is negative: a budget is a size (48MiB, 2GB or 40%%)", s);
        else
            snprintf(err, (size_t)errlen, "budget '%s' is not a size (try 48MiB, 2GB or 40%%)", s);
        return refuse(why, MG_BUDGET_NOT_POSITIVE);
    }
    const char *num_end = end;
    end += gap;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(end, units[i].unit)) continue;
        if (units[i].mult < 0) {
            if (v > 100) {
                snprintf(err, (size_t)errlen, "budget '%s' is more than 100%% of the store-all workspace", s);
                return refuse(why, MG_BUDGET_OVER_100);
            }
            b->is_percent = 1;
            b->percent = v;
            return 1;
        }
        if (units[i].mult == 1 && v != floor(v)) { /* '1.5' was taken as 1 byte */
            snprintf(err, (size_t)errlen, "budget '%s' is not a whole number of bytes", s);
            return refuse(why, MG_BUDGET_FRACTION);
        }
        double bytes = v * units[i].mult; /* rounded down: '0.0001KiB' is 0 bytes */
        if (bytes > 9.0e18) {
            snprintf(err, (size_t)errlen, "budget '%s' is out of range (at most 9e18 bytes)", s);
            return refuse(why, MG_BUDGET_RANGE);
        }
        b->bytes = (int64_t)floor(bytes);
        if ((size_t)(num_end - s) == strspn(s, "0123456789")) /* a whole number: exact above 2^53 too */
            b->bytes = (int64_t)strtoll(s, NULL, 10) * (int64_t)units[i].mult;
        return 1;
    }
    snprintf(err, (size_t)errlen, "budget '%s' has an unknown unit '%s' (use B, KiB, MiB, GiB, KB, MB, GB or %%)", s, end);
    return refuse(why, MG_BUDGET_UNIT);
}

int64_t mg_budget_bytes(const mg_budget *b, int64_t store_all)
{
    if (!b->is_percent) return b->bytes;
    return (int64_t)floor((double)store_all * b->percent / 100.0);
}

const char *mg_bytes_word(int64_t n) { return n == 1 || n == -1 ? "byte" : "bytes"; }

const char *mg_plural(long long n) { return n == 1 ? "" : "s"; }

const char *mg_human_bytes(int64_t bytes, char *buf, int len)
{
    static const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int i = 0;
    while (v >= 1024 && i < 4) {
        v /= 1024;
        i++;
    }
    if (i == 0) snprintf(buf, (size_t)len, "%lld B", (long long)bytes);
    else snprintf(buf, (size_t)len, "%.1f %s", v, u[i]);
    return buf;
}
