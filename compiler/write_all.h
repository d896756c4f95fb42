/* write_all.h — a buffer written whole to a file descriptor, with the reason when it is not. */
#ifndef MG_WRITE_ALL_H
#define MG_WRITE_ALL_H
#include <stddef.h>

/* Writes the n bytes at buf to fd, through interrupted and partial writes: 0 when all are
 * written, else write(2)'s errno (EIO where it wrote nothing and said nothing). */
int mg_write_all(int fd, const void *buf, size_t n);
#endif
