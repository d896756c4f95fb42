/* out_files.h — the files the driver writes (compile's object, header and IR; plan's and sweep's
 * reports): checked before any work, written whole or not at all. Driver code (it prints its
 * errors), like main.c, driver.c and the cmd_*.c files. */
#ifndef MG_OUT_FILES_H
#define MG_OUT_FILES_H
#include <limits.h>

typedef struct mg_out_file {
    const char *flag; /* the option that names it ("-o", "--svg"), for messages */
    const char *path; /* as the user gave it; NULL: not asked for */
    char dest[PATH_MAX];      /* what rename() replaces: path, or the regular file a symlink names */
    char tmp[PATH_MAX + 64];  /* where it is written first ("" until mg_out_begin) */
    int direct;               /* not a regular file (/dev/null, a FIFO, /dev/stdout on a pipe): written
                                 through, tmp's bytes copied into it, never replaced; 2: the file
                                 stdout or stderr writes to, appended to */
} mg_out_file;

/* Before any work: an output that would overwrite the model, two outputs naming one file (a
 * character device such as /dev/null may be named twice) and a directory are usage errors (2);
 * a file that cannot be created (no such directory, no permission) is an error (1). Nothing is
 * left behind. Fills each file's dest and direct. */
int mg_out_check(const char *model, mg_out_file *o, int n);
/* The same for an input of another kind, which the refusal to overwrite it names: kind is
 * "model" (mg_out_check), "graph" (--graph FILE.json), ...: "refusing to overwrite the graph
 * file g.json with --svg g.json". */
int mg_out_check_input(const char *input, const char *kind, mg_out_file *o, int n);
/* Whether paths a and b name one file (the same inode, or the same canonical path where either
 * does not exist yet: a.o and ./a.o; a dangling symlink, the file it would create). */
int mg_out_same_file(const char *a, const char *b);
/* Creates the temporary files (next to dest, or in $TMPDIR for a direct output); 1 on error. */
int mg_out_begin(mg_out_file *o, int n);
/* Puts every temporary file in place (rename, or a copy into a direct output); 1 on error. */
int mg_out_commit(mg_out_file *o, int n);
/* Removes what is left of the temporary files. */
void mg_out_end(mg_out_file *o, int n);
#endif
