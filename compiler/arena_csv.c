/* arena_csv.c — reads buffer files in MiniMalloc's CSV format (`id,lower,upper,size`, each
 * buffer live on [lower, upper)) for `memgrad arena` and the allocator's tests.
 *
 * Why it exists: published allocation instances come in this format, and a wrong number must
 * be reported with its line rather than silently placed. Validation is strict: the header is
 * required, every row has four integer fields, ids are distinct, upper > lower, size >= 0, and
 * the sizes add up to at most 2^62 bytes.
 * Blank lines are skipped; a CR before the newline is accepted, and so is a UTF-8 byte order
 * mark at the very start of the file (spreadsheet exports write one). An error names its line
 * and, where it is about one field, the field's column (bytes from 1, as a model's). */
#include "arena.h"
#include "read_file.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const field_names[4] = {"id", "lower", "upper", "size"};

/* Sizes add up to at most this, so that no offset+size computed later overflows. */
static const int64_t total_size_max = (int64_t)1 << 62;

typedef struct id_line {
    int64_t id;
    int line, col;
} id_line;

static int cmp_id_line(const void *a, const void *b)
{
    const id_line *x = a, *y = b;
    if (x->id != y->id) return x->id < y->id ? -1 : 1;
    return x->line - y->line;
}

static int is_space(char c) { return c == ' ' || c == '\t'; }

/* A field [s, e) as a decimal integer (optional sign, digits only, no overflow). */
static int parse_int(const char *s, const char *e, int64_t *v)
{
    int neg = 0;
    if (s < e && (*s == '-' || *s == '+')) neg = *s++ == '-';
    if (s == e) return 0;
    uint64_t acc = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; s < e; s++) {
        if (*s < '0' || *s > '9') return 0;
        unsigned dig = (unsigned)(*s - '0');
        if (acc > (lim - dig) / 10) return -1;
        acc = acc * 10 + dig;
    }
    *v = neg ? (acc == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)acc) : (int64_t)acc;
    return 1;
}

/* Prints at most 40 bytes of a field into buf (at least 44 bytes), for a message: every byte,
 * a control byte or a NUL as '?' ("%.*s" stopped at a NUL, so "5\0" read "size '5' is not an
 * integer"). */
static const char *field_text(const char *s, const char *e, char *buf, size_t len)
{
    size_t n = (size_t)(e - s), k = 0;
    for (; k < n && k < 40 && k + 4 < len; k++)
        buf[k] = (unsigned char)s[k] < 0x20 || (unsigned char)s[k] >= 0x7f ? '?' : s[k];
    if (k < n) buf[k++] = '.', buf[k++] = '.', buf[k++] = '.';
    buf[k] = 0;
    return buf;
}

/* Frees what was read so far and fills d. */
static mg_status fail(mg_diag *d, const char *file, int line, int col, mg_arena_csv *out, id_line *ids,
                      const char *fmt, ...) __attribute__((format(printf, 7, 8)));

/* (col: the byte of the line the error is about, from 1, for the driver's caret; 0 for the
 * whole line or file) */
static mg_status fail(mg_diag *d, const char *file, int line, int col, mg_arena_csv *out, id_line *ids,
                      const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    mg_arena_csv_free(out);
    free(ids);
    return mg_diag_set(d, (mg_loc){file, line, col}, "%s", msg);
}

mg_status mg_arena_csv_parse(const char *text, size_t len, const char *file, mg_arena_csv *out, mg_diag *d)
{
    memset(out, 0, sizeof *out);
    int cap = 0, line = 0, header = 0;
    id_line *ids = NULL;
    int64_t total = 0;
    const char *p = text, *end = text + len;
    if (len >= 3 && !memcmp(p, "\xEF\xBB\xBF", 3)) p += 3; /* a UTF-8 byte order mark */
#define COL(at) ((int)((at) - bol) + 1) /* (a file is at most 256 MiB: an int) */
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        const char *le = eol;
        if (le > p && le[-1] == '\r') le--;
        line++;
        const char *q = p, *bol = p; /* (line 1's begins after a byte order mark) */
        p = eol < end ? eol + 1 : end;
        while (q < le && is_space(*q)) q++;
        if (q == le) continue; /* blank */
        if (line == INT_MAX)
            return fail(d, file, line, 0, out, ids, "too many lines");
        /* split into fields */
        const char *fs[5], *fe[5];
        int nf = 0;
        for (const char *s = q;;) {
            const char *c = memchr(s, ',', (size_t)(le - s));
            const char *e = c ? c : le;
            const char *a = s, *b = e;
            while (a < b && is_space(*a)) a++;
            while (b > a && is_space(b[-1])) b--;
            if (nf < 5) {
                fs[nf] = a;
                fe[nf] = b;
            }
            nf++;
            if (!c) break;
            s = c + 1;
        }
        if (!header) {
            int ok = nf == 4;
            for (int f = 0; f < 4 && ok; f++)
                ok = (size_t)(fe[f] - fs[f]) == strlen(field_names[f]) &&
                     !memcmp(fs[f], field_names[f], (size_t)(fe[f] - fs[f]));
            if (!ok)
                return fail(d, file, line, COL(q), out, ids, "expected the header 'id,lower,upper,size'");
            header = 1;
            continue;
        }
        if (nf != 4) /* at the first field too many, or at the end of a line of too few */
            return fail(d, file, line, nf > 4 ? COL(fs[4]) : COL(le), out, ids,
                        "expected 4 fields (id,lower,upper,size), got %d", nf);
        int64_t v[4];
        for (int f = 0; f < 4; f++) {
            char buf[64];
            if (fs[f] == fe[f])
                return fail(d, file, line, COL(fs[f]), out, ids, "field '%s' is empty", field_names[f]);
            int r = parse_int(fs[f], fe[f], &v[f]);
            if (r <= 0)
                return fail(d, file, line, COL(fs[f]), out, ids, "%s '%s' %s", field_names[f],
                            field_text(fs[f], fe[f], buf, sizeof buf),
                            r < 0 ? "is out of range" : "is not an integer");
        }
        if (v[2] <= v[1])
            return fail(d, file, line, COL(fs[2]), out, ids, "upper (%lld) must be greater than lower (%lld)", (long long)v[2],
                        (long long)v[1]);
        if (v[3] < 0) return fail(d, file, line, COL(fs[3]), out, ids, "size %lld is negative", (long long)v[3]);
        /* (one size past the limit is said as such: "sizes add up to more than 2^62 bytes" of a
         * file whose one buffer was too large named a sum there was none of) */
        if (v[3] > total_size_max)
            return fail(d, file, line, COL(fs[3]), out, ids,
                        "size %lld is above 2^62 bytes, the most that the sizes may add up to", (long long)v[3]);
        if (v[3] > total_size_max - total)
            return fail(d, file, line, COL(fs[3]), out, ids, "sizes add up to more than 2^62 bytes");
        total += v[3];
        if (out->n == cap) {
            if (cap > INT_MAX / 2) return fail(d, file, line, 0, out, ids, "too many buffers");
            cap = cap ? 2 * cap : 256;
            int64_t *ni = realloc(out->ids, (size_t)cap * sizeof *ni);
            if (ni) out->ids = ni;
            mg_interval *nv = realloc(out->iv, (size_t)cap * sizeof *nv);
            if (nv) out->iv = nv;
            id_line *nl = realloc(ids, (size_t)cap * sizeof *nl);
            if (nl) ids = nl;
            if (!ni || !nv || !nl) return fail(d, file, line, 0, out, ids, "out of memory");
        }
        out->ids[out->n] = v[0];
        out->iv[out->n] = (mg_interval){v[1], v[2], v[3], 0};
        ids[out->n] = (id_line){v[0], line, COL(fs[0])};
        out->n++;
    }
    if (!header) {
        return fail(d, file, 1, 0, out, ids,
                    "empty file: expected the header 'id,lower,upper,size'");
    }
    /* duplicate ids: the first line (in file order) that repeats an earlier id */
    if (out->n > 1) qsort(ids, (size_t)out->n, sizeof *ids, cmp_id_line);
    int dup = -1;
    for (int i = 1; i < out->n; i++)
        if (ids[i].id == ids[i - 1].id && (dup < 0 || ids[i].line < ids[dup].line)) dup = i;
    if (dup >= 0) {
        int at = dup;
        while (at > 0 && ids[at - 1].id == ids[dup].id) at--; /* the first occurrence */
        return fail(d, file, ids[dup].line, ids[dup].col, out, ids, "duplicate id %lld (first on line %d)",
                    (long long)ids[dup].id, ids[at].line);
    }
    free(ids);
    return MG_OK;
#undef COL
}

mg_status mg_arena_csv_read(const char *path, mg_arena_csv *out, mg_diag *d)
{
    memset(out, 0, sizeof *out);
    char *text;
    size_t len;
    if (mg_read_file(path, (size_t)1 << 28, &text, &len, d)) return MG_ERR; /* 256 MiB: some 8 million buffers */
    mg_status s = mg_arena_csv_parse(text, len, path, out, d);
    free(text);
    return s;
}

void mg_arena_csv_free(mg_arena_csv *c)
{
    free(c->ids);
    free(c->iv);
    c->ids = NULL;
    c->iv = NULL;
    c->n = 0;
}
