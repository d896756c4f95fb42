/* frontend.h — the model format (.mg): lexer and parser producing the forward IR graph. */
#ifndef MG_FRONTEND_H
#define MG_FRONTEND_H
#include "ir.h"

typedef enum { MG_TOK_IDENT, MG_TOK_NUMBER, MG_TOK_PUNCT, MG_TOK_NEWLINE, MG_TOK_EOF } mg_tok_kind;

typedef struct mg_token {
    mg_tok_kind kind;
    const char *start;
    int len;
    int line, col;
    double num;     /* MG_TOK_NUMBER */
    int is_int;     /* the number was written without '.', 'e' */
} mg_token;

typedef struct mg_tokens {
    mg_token *tok;
    int n;
} mg_tokens;

/* lexer.c: splits src into tokens; newlines are tokens except inside () [] (which join lines).
 * On a lexical error fills d (with file) and returns MG_ERR. Caller frees toks->tok. */
mg_status mg_lex(const char *file, const char *src, size_t len, mg_tokens *toks, mg_diag *d);

/* parser.c: parses a whole model. On success *out owns a verified forward graph whose
 * locations point at its own copy of file. On error fills d and leaves *out NULL. */
mg_status mg_parse(const char *file, const char *src, size_t len, mg_graph **out, mg_diag *d);

/* parser.c: whether a model's name (an identifier; `model NAME`, compile --name) would give the
 * generated code reserved C names. The generated C names are NAME_forward, NAME_WORKSPACE_BYTES
 * (NAME in capitals), ...: C reserves names that begin with '_', and C++ (the header declares
 * them extern "C") names that contain "__", which a name ending in '_' makes with the separator. */
int mg_model_name_reserved(const char *name);
#endif
