/* excerpt.c — the source line under a diagnostic, and a caret under its column.
 *
 * Why it exists: every input memgrad reads — a model, a graph JSON, an arena CSV — is named in
 * errors as FILE:LINE:COL, and a user expects to see the line, as cc shows it. Driver code (in
 * the memgrad executable): it prints. */
#include "excerpt.h"

#include <string.h>

/* A UTF-8 continuation byte: no column of its own on a terminal. */
static int utf8_cont(char c) { return ((unsigned char)c & 0xC0) == 0x80; }

/* The source line [p, e) and a caret under column col (a byte count from 1; one past the end
 * for "expected ')'" at the end of a line). A line of up to EXCERPT_WHOLE bytes is printed whole;
 * a longer one (a generated model, a graph JSON on one line) as the EXCERPT_WINDOW bytes around
 * the column, "..." where it is cut, never inside a UTF-8 character: it printed no excerpt at
 * all (review21). The caret line copies the tabs before the column and skips continuation
 * bytes, so the caret stands under the character the column names; a control byte is one '?'. */
enum { EXCERPT_WHOLE = 200, EXCERPT_WINDOW = 160 };

static void print_window(FILE *out, const char *p, const char *e, int col)
{
    size_t len = (size_t)(e - p), at = col > 1 ? (size_t)col - 1 : 0, from = 0, to = len;
    if (at > len) at = len;
    if (len > EXCERPT_WHOLE) {
        from = at > EXCERPT_WINDOW / 2 ? at - EXCERPT_WINDOW / 2 : 0;
        if (from + EXCERPT_WINDOW > len) from = len - EXCERPT_WINDOW;
        to = from + EXCERPT_WINDOW;
        while (from > 0 && from < at && utf8_cont(p[from])) from++;
        while (to < len && to > at && utf8_cont(p[to])) to--;
    }
    /* control bytes as '?': an ESC in the file sent escape sequences to the terminal (ESC [2J
     * cleared the screen under the error that named it), and a NUL ended the line early */
    fprintf(out, "  %s", from ? "..." : "");
    for (size_t i = from; i < to; i++) {
        unsigned char c = (unsigned char)p[i];
        fputc((c < 0x20 && c != '\t') || c == 0x7f ? '?' : c, out);
    }
    fprintf(out, "%s\n", to < len ? "..." : "");
    if (col <= 0) return; /* (a whole line's error: no column to point at) */
    fprintf(out, "  %s", from ? "   " : "");
    for (size_t i = from; i < at; i++)
        if (!utf8_cont(p[i])) fputc(p[i] == '\t' ? '\t' : ' ', out);
    fprintf(out, "^\n");
}

void mg_print_excerpt(FILE *out, const char *text, size_t len, int line, int col)
{
    if (line <= 0) return;
    const char *p = text, *end = text + len;
    if (len >= 3 && !memcmp(p, "\xEF\xBB\xBF", 3)) p += 3; /* columns on line 1 count from after a BOM */
    for (int l = 1; l < line && p < end; p++)
        if (*p == '\n') l++;
    const char *e = p;
    while (e < end && *e != '\n' && *e != '\r') e++; /* (a CRLF line's CR would print as ^M in a log, and
                                                        a lone CR sends the terminal's cursor back) */
    if (p >= end) return;
    print_window(out, p, e, col);
}
