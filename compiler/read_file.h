/* read_file.h — whole input files read into memory, with a size limit. */
#ifndef MG_READ_FILE_H
#define MG_READ_FILE_H
#include "ir.h"

#include <stddef.h>

/* Reads the file at path whole into *text (NUL-terminated, owned by the caller; *len bytes
 * before the NUL). MG_ERR, with "cannot open PATH: why", "cannot read PATH: why" or "cannot read
 * PATH: larger than MAX" in d, when it cannot: a file above max bytes (a device such as
 * /dev/zero never ends) is refused rather than read on. */
mg_status mg_read_file(const char *path, size_t max, char **text, size_t *len, mg_diag *d);
#endif
