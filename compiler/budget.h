/* budget.h — parsing memory budgets given on the command line. */
#ifndef MG_BUDGET_H
#define MG_BUDGET_H
#include <stdint.h>

/* Why a size was refused (err says it for a budget; a caller that takes bytes only, as
 * `arena --capacity`, words it its own way). */
typedef enum mg_budget_problem {
    MG_BUDGET_FINE = 0,
    MG_BUDGET_NOT_POSITIVE, /* not a number, or below 0 */
    MG_BUDGET_OVER_100,     /* a percentage above 100 */
    MG_BUDGET_FRACTION,     /* a fraction of a byte */
    MG_BUDGET_RANGE,        /* over 9e18 bytes */
    MG_BUDGET_UNIT,         /* an unknown unit */
} mg_budget_problem;

typedef struct mg_budget {
    int is_percent;
    double percent;  /* of the store-all workspace */
    int64_t bytes;
} mg_budget;

/* "48MiB", "1.5GB", "1000000", "1000000B", "40%". Returns 0 and fills err on bad input. */
int mg_budget_parse(const char *s, mg_budget *b, char *err, int errlen);
/* The same; on bad input *why (if not NULL) also says which problem it was. */
int mg_budget_parse_why(const char *s, mg_budget *b, mg_budget_problem *why, char *err, int errlen);
/* 1 when s up to end (where strtod or strtol stopped) is a number in plain decimal: digits, a
 * point, an exponent, a sign; not the hex, "inf", "nan" or leading spaces they also accept. */
int mg_plain_decimal(const char *s, const char *end);
/* Resolves a budget against the store-all workspace. */
int64_t mg_budget_bytes(const mg_budget *b, int64_t store_all);
/* "byte" for 1 (and -1), else "bytes": every "(N bytes)" a report or a message prints says
 * "(1 byte)" when N is 1. */
const char *mg_bytes_word(int64_t n);
/* "s" for a count other than 1, the same rule for every other noun ("1 recomputation step"). */
const char *mg_plural(long long n);
/* "48.0 MiB"-style text for a byte count. */
const char *mg_human_bytes(int64_t bytes, char *buf, int len);
#endif
