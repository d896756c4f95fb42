/* lexer.c — turns .mg source text into tokens.
 * Tokens: identifiers ([A-Za-z_][A-Za-z0-9_]*), numbers (decimal, optional fraction and
 * exponent), one-character punctuation, and NEWLINE, which ends a statement. `#` starts a
 * comment to the end of the line. Inside parentheses and brackets newlines are skipped so
 * long expressions may span lines. A UTF-8 byte order mark at the very start of the file
 * (some editors write one) is skipped; columns on line 1 count from after it. A UTF-16 byte
 * order mark (Windows editors' "Unicode") is an error that says so at line 1 (it was
 * "unexpected byte 0xff"), and so is a UTF-8 one further on (two files joined with cat). */
#include "frontend.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static mg_status push(mg_tokens *t, int *cap, mg_token tok)
{
    if (t->n == *cap) {
        *cap = *cap ? 2 * *cap : 256;
        mg_token *p = realloc(t->tok, (size_t)*cap * sizeof *p);
        if (!p) abort();
        t->tok = p;
    }
    t->tok[t->n++] = tok;
    return MG_OK;
}

/* A carriage return not followed by a newline: lines end with \n or \r\n. */
static int lone_cr(const char *p, const char *end) { return *p == '\r' && !(p + 1 < end && p[1] == '\n'); }

static mg_status cr_error(mg_diag *d, mg_loc loc)
{
    return mg_diag_set(d, loc, "carriage return without a newline: lines end with \\n or \\r\\n (this file may use old "
                       "Mac line endings)");
}

mg_status mg_lex(const char *file, const char *src, size_t len, mg_tokens *toks, mg_diag *d)
{
    int cap = 0, line = 1, depth = 0;
    mg_loc open[64];     /* where the open '(' and '[' are (the first 64 levels) */
    char open_ch[64];
    const char *p = src, *end = src + len, *bol = src;
    toks->tok = NULL;
    toks->n = 0;
    if (len >= 2 && (!memcmp(p, "\xFF\xFE", 2) || !memcmp(p, "\xFE\xFF", 2)))
        return mg_diag_set(d, (mg_loc){file, 1, 1}, "the file is UTF-16 (byte-order mark %s at its start); memgrad "
                           "reads UTF-8: convert it (iconv -f UTF-16 -t UTF-8)", p[0] == '\xFF' ? "FF FE" : "FE FF");
    /* UTF-16 without a mark (PowerShell's Out-File, some exports): ASCII text with a 0 byte
     * before or after each character; a model starts with text, never with a 0 byte */
    if (len >= 4 && (!p[0] || !p[1]) && p[0] != p[1] && (!p[2] || !p[3]) && p[2] != p[3] && !p[0] == !p[2])
        return mg_diag_set(d, (mg_loc){file, 1, 1}, "the file looks like UTF-16 %s without a byte-order mark (every "
                           "other byte 0); memgrad reads UTF-8: convert it (iconv -f UTF-16%s -t UTF-8)",
                           p[0] ? "LE" : "BE", p[0] ? "LE" : "BE");
    if (len >= 3 && !memcmp(p, "\xEF\xBB\xBF", 3)) bol = p += 3; /* a UTF-8 byte order mark */
    while (p < end) {
        mg_loc loc = {file, line, (int)(p - bol) + 1};
        mg_token tok = {0};
        tok.start = p;
        tok.line = loc.line;
        tok.col = loc.col;
        if (*p == '#') { /* (a lone carriage return in a comment is an error too: an old Mac file
                            that begins with a comment read as one comment line, "the file has only
                            comments", and some editors show "# a\rmodel b" as two lines) */
            while (p < end && *p != '\n' && !lone_cr(p, end)) p++;
            if (p < end && *p == '\r') return cr_error(d, (mg_loc){file, line, (int)(p - bol) + 1});
            continue;
        }
        if (*p == '\n') {
            if (depth == 0 && toks->n && toks->tok[toks->n - 1].kind != MG_TOK_NEWLINE) {
                tok.kind = MG_TOK_NEWLINE;
                tok.len = 1;
                push(toks, &cap, tok);
            }
            p++;
            line++;
            bol = p;
            continue;
        }
        if (lone_cr(p, end)) return cr_error(d, loc); /* (whitespace, it ran a whole file of CR line
                                                          ends into one line) */
        if (*p == ' ' || *p == '\t' || *p == '\r') {
            p++;
            continue;
        }
        if (isalpha((unsigned char)*p) || *p == '_') {
            while (p < end && (isalnum((unsigned char)*p) || *p == '_')) p++;
            tok.kind = MG_TOK_IDENT;
            tok.len = (int)(p - tok.start);
            push(toks, &cap, tok);
            continue;
        }
        if (isdigit((unsigned char)*p) || (*p == '.' && p + 1 < end && isdigit((unsigned char)p[1]))) {
            char buf[64];
            const char *q = p;
            int is_int = 1;
            while (q < end && isdigit((unsigned char)*q)) q++;
            if (q < end && *q == '.') {
                is_int = 0;
                q++;
                while (q < end && isdigit((unsigned char)*q)) q++;
            }
            if (q < end && (*q == 'e' || *q == 'E')) {
                const char *e = q + 1;
                if (e < end && (*e == '+' || *e == '-')) e++;
                if (e < end && isdigit((unsigned char)*e)) {
                    is_int = 0;
                    q = e;
                    while (q < end && isdigit((unsigned char)*q)) q++;
                }
            }
            if (q < end && (isalpha((unsigned char)*q) || *q == '_'))
                return mg_diag_set(d, loc, "malformed number '%.*s'", (int)(q - p + 1), p);
            if ((size_t)(q - p) >= sizeof buf)
                return mg_diag_set(d, loc, "number too long");
            memcpy(buf, p, (size_t)(q - p));
            buf[q - p] = 0;
            tok.kind = MG_TOK_NUMBER;
            tok.num = strtod(buf, NULL);
            if (!isfinite(tok.num)) /* 1e400: strtod gives inf, which no shape or constant can use */
                return mg_diag_set(d, loc, "number '%s' is out of range", buf);
            if (tok.num == 0 && strcspn(buf, "123456789") < strcspn(buf, "eE")) /* 1e-400: not 0 as written */
                return mg_diag_set(d, loc, "number '%s' is out of range (it rounds to 0)", buf);
            tok.is_int = is_int;
            tok.len = (int)(q - p);
            p = q;
            push(toks, &cap, tok);
            continue;
        }
        if (*p && strchr(":[](){},=@+-*/", *p)) { /* (strchr finds a NUL byte: the terminator) */
            /* no brace belongs inside brackets: one there means a bracket left open, and newlines
             * skipped since then ran the rest of the block into one line ("expected end of
             * line" at the statement after the block, for a ')' missing in a def body) */
            if ((*p == '{' || *p == '}') && depth > 0) {
                int k = depth <= 64 ? depth - 1 : 63;
                return mg_diag_set(d, open[k], "'%c' is never closed (a '%c' follows at line %d)", open_ch[k], *p, line);
            }
            if (*p == '(' || *p == '[') {
                if (depth < 64) open[depth] = loc, open_ch[depth] = *p;
                depth++;
            }
            if ((*p == ')' || *p == ']') && depth > 0) depth--;
            tok.kind = MG_TOK_PUNCT;
            tok.len = 1;
            p++;
            push(toks, &cap, tok);
            continue;
        }
        if (end - p >= 3 && !memcmp(p, "\xEF\xBB\xBF", 3))
            return mg_diag_set(d, loc, "a UTF-8 byte-order mark (EF BB BF) here: it may only begin the file "
                               "(were two files joined?)");
        if ((unsigned char)*p >= 0xC2 && (unsigned char)*p <= 0xF4) /* (a UTF-8 lead byte: é, µ, a Greek letter) */
            return mg_diag_set(d, loc, "unexpected byte 0x%02x, a non-ASCII character: names are ASCII letters, "
                               "digits and '_' (comments may hold any text)", (unsigned char)*p);
        if ((unsigned char)*p < 32 || (unsigned char)*p >= 127)
            return mg_diag_set(d, loc, "unexpected byte 0x%02x", (unsigned char)*p);
        return mg_diag_set(d, loc, "unexpected character '%c'", *p);
    }
    mg_token eof = {0};
    eof.kind = MG_TOK_EOF;
    eof.start = end;
    eof.line = line;
    eof.col = (int)(end - bol) + 1;
    if (toks->n && toks->tok[toks->n - 1].kind != MG_TOK_NEWLINE) {
        mg_token nl = eof;
        nl.kind = MG_TOK_NEWLINE;
        push(toks, &cap, nl);
    }
    push(toks, &cap, eof);
    return MG_OK;
}
