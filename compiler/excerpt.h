/* excerpt.h — the source line and a caret under a diagnostic (driver code). */
#ifndef MG_EXCERPT_H
#define MG_EXCERPT_H
#include <stddef.h>
#include <stdio.h>

/* Prints line `line` of text (lines from 1; columns bytes from 1, on line 1 after a UTF-8 byte
 * order mark) indented by two spaces, then a caret under column col (none when col is 0: an
 * error about the whole line); nothing when line is 0 or past the end of text. A line of more than 200 bytes is shown as the 160
 * bytes around the column, "..." on each side that is cut. */
void mg_print_excerpt(FILE *out, const char *text, size_t len, int line, int col);
#endif
