/* read_file.c — reads an input file whole (a model, a benchmark graph, a buffer CSV, a plan
 * cache entry), so that every reader gets the same limit and the same messages: no input is
 * read without end, and a failure says why. */
#include "read_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

mg_status mg_read_file(const char *path, size_t max, char **text, size_t *len, mg_diag *d)
{
    *text = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return mg_diag_set(d, (mg_loc){path, 0, 0}, "cannot open %s: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *buf = NULL;
    for (;;) {
        buf = realloc(buf, cap + 1);
        if (!buf) abort();
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap || cap > max) break;
        cap = cap * 2 > max ? max + 1 : cap * 2; /* one byte past max tells a larger file */
    }
    int bad = ferror(f), why = errno;
    fclose(f);
    if (bad || n > max) {
        free(buf);
        if (bad) return mg_diag_set(d, (mg_loc){path, 0, 0}, "cannot read %s: %s", path, strerror(why));
        return mg_diag_set(d, (mg_loc){path, 0, 0}, "cannot read %s: larger than %zu MiB", path, max >> 20);
    }
    buf[n] = 0;
    *text = buf;
    *len = n;
    return MG_OK;
}
