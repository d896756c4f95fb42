/* report_escape.c — names and paths as JSON strings, SVG (XML) text and DOT strings.
 *
 * Why it exists: a name or a path is whatever bytes a file system or a graph file holds
 * ("bad\xff<&>.json"), while JSON, SVG and DOT are UTF-8 text. Bytes >= 0x80 went out as they
 * came, so one byte that is not part of a UTF-8 sequence made a whole plan, trace or SVG
 * unreadable (Python's json.load: UnicodeDecodeError; expat: not well-formed). Every writer of
 * names and paths escapes them here, one function per format: a well-formed UTF-8 sequence
 * passes through, every other byte becomes U+FFFD (in JSON the escape \ufffd), one per byte. */
#include "report.h"

#include <string.h>

/* Where escaped text goes: a FILE, or a buffer of cap bytes (n counts what did not fit too). */
typedef struct sink {
    FILE *f;
    char *buf;
    size_t cap, n;
} sink;

static void emit(sink *k, const char *p, size_t len)
{
    if (k->f) fwrite(p, 1, len, k->f);
    else
        for (size_t i = 0; i < len && k->n + i + 1 < k->cap; i++) k->buf[k->n + i] = p[i];
    k->n += len;
}

/* The length (1-4) of the well-formed UTF-8 sequence at s (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF), 0 where s does not start one (the NUL included); its
 * code point in *cp. */
static int utf8_seq(const unsigned char *s, unsigned *cp)
{
    unsigned c = s[0];
    if (c > 0 && c < 0x80) return *cp = c, 1;
    int len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (!len) return 0;
    /* the second byte's range is narrower after E0, ED, F0 and F4 */
    unsigned lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80, hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;
    if (s[1] < lo || s[1] > hi) return 0;
    unsigned v = c & (0x7f >> len);
    for (int i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        v = v << 6 | (s[i] & 0x3f);
    }
    *cp = v;
    return len;
}

static void json_escape(sink *k, const char *s)
{
    emit(k, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p;) {
        unsigned cp;
        int len = utf8_seq(p, &cp);
        char e[8];
        if (!len) { /* not UTF-8 */
            emit(k, "\\ufffd", 6);
            p++;
        } else if (cp == '"' || cp == '\\') {
            e[0] = '\\', e[1] = (char)cp;
            emit(k, e, 2);
            p++;
        } else if (cp < 0x20) {
            snprintf(e, sizeof e, "\\u%04x", cp);
            emit(k, e, 6);
            p++;
        } else {
            emit(k, (const char *)p, (size_t)len);
            p += len;
        }
    }
    emit(k, "\"", 1);
}

size_t mg_json_escape(char *buf, size_t cap, const char *s)
{
    sink k = {NULL, buf, cap, 0};
    json_escape(&k, s);
    if (cap) buf[k.n < cap ? k.n : cap - 1] = 0;
    return k.n;
}

void mg_json_write_string(FILE *out, const char *s)
{
    sink k = {out, NULL, 0, 0};
    json_escape(&k, s);
}

void mg_xml_write_text(FILE *out, const char *s)
{
    sink k = {out, NULL, 0, 0};
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p;) {
        unsigned cp;
        int len = utf8_seq(p, &cp);
        /* XML 1.0 has no control characters but tab, newline and return, nor U+FFFE and U+FFFF,
         * not even as character references */
        if (!len || (cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r') || cp == 0xfffe || cp == 0xffff)
            emit(&k, "\xef\xbf\xbd", 3), len = len ? len : 1;
        else if (cp == '&') emit(&k, "&amp;", 5);
        else if (cp == '<') emit(&k, "&lt;", 4);
        else if (cp == '>') emit(&k, "&gt;", 4);
        else if (cp == '"') emit(&k, "&quot;", 6);
        else emit(&k, (const char *)p, (size_t)len);
        p += len;
    }
}

void mg_dot_write_string(FILE *out, const char *s)
{
    sink k = {out, NULL, 0, 0};
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p;) {
        unsigned cp;
        int len = utf8_seq(p, &cp);
        /* (a control character is no part of a name a DOT label can show) */
        if (!len || cp < 0x20) emit(&k, "\xef\xbf\xbd", 3), len = len ? len : 1;
        else if (cp == '"' || cp == '\\') emit(&k, "\\", 1), emit(&k, (const char *)p, 1);
        else emit(&k, (const char *)p, (size_t)len);
        p += len;
    }
}
