/* excerpt.c — the source line under a diagnostic, and a caret under its column.
 *
 * Why it exists: every input memgrad reads — a model, a graph JSON, an arena CSV — is named in
 * errors as FILE:LINE:COL, and a user expects to see the line, as cc shows it. Driver code (in
 * the memgrad executable): it prints. */
#include "excerpt.h"

#include <string.h>

/* A UTF-8 continuation byte: no column of its own on a terminal. */
static int utf8_cont(char c) { return ((unsigned char)c & 0xC0) == 0x80; }

/* The bytes of the well-formed UTF-8 character at p (n bytes left, p[0] >= 0x80): 2-4, or 0
 * where it is not one (a binary file named as the model: its bytes went to the terminal raw). */
static size_t utf8_len(const unsigned char *p, size_t n)
{
    size_t len = p[0] >= 0xC2 && p[0] <= 0xDF ? 2 : p[0] >= 0xE0 && p[0] <= 0xEF ? 3 : p[0] >= 0xF0 && p[0] <= 0xF4 ? 4 : 0;
    if (!len || len > n) return 0;
    for (size_t k = 1; k < len; k++)
        if ((p[k] & 0xC0) != 0x80) return 0;
    if ((p[0] == 0xE0 && p[1] < 0xA0) || (p[0] == 0xED && p[1] > 0x9F) || (p[0] == 0xF0 && p[1] < 0x90) ||
        (p[0] == 0xF4 && p[1] > 0x8F))
        return 0; /* (overlong forms, UTF-16 surrogates, past U+10FFFF) */
    return len;
}

/* The source line [p, e) and a caret under column col (a byte count from 1; one past the end
 * for "expected ')'" at the end of a line). A line of up to EXCERPT_WHOLE bytes is printed whole;
 * a longer one (a generated model, a graph JSON on one line) as the EXCERPT_WINDOW bytes around
 * the column, "..." where it is cut, never inside a UTF-8 character: it printed no excerpt at
 * all (review21). The caret line copies the tabs before the column and gives each character one
 * column, so the caret stands under the character the column names; a control byte, and each
 * byte that is not part of a UTF-8 character, is one '?'. */
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
     * cleared the screen under the error that named it), and a NUL ended the line early; so is
     * each byte of what is not UTF-8, one column each, as the caret line counts them */
    const unsigned char *u = (const unsigned char *)p;
    fprintf(out, "  %s", from ? "..." : "");
    for (size_t i = from; i < to; i++) {
        size_t n = u[i] < 0x80 ? 1 : utf8_len(u + i, to - i);
        if (n > 1) fwrite(u + i, 1, n, out), i += n - 1;
        else fputc(!n || (u[i] < 0x20 && u[i] != '\t') || u[i] == 0x7f ? '?' : u[i], out);
    }
    fprintf(out, "%s\n", to < len ? "..." : "");
    if (col <= 0) return; /* (a whole line's error: no column to point at) */
    fprintf(out, "  %s", from ? "   " : "");
    for (size_t i = from; i < at; i++) {
        size_t n = u[i] < 0x80 ? 1 : utf8_len(u + i, to - i);
        fputc(u[i] == '\t' ? '\t' : ' ', out);
        if (n > 1) i += n - 1;
    }
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
