/* write_all.c — a buffer written whole to a file descriptor. Why it exists: stdio keeps only an
 * error flag, so a failed write lost its errno by the fclose that found it, and "cannot write
 * FILE" came without the reason (a full disk, a file size limit); every writer that names the
 * reason (the driver's files and standard output, the plan cache, CBC's model files) writes
 * through this. */
#include "write_all.h"

#include <errno.h>
#include <unistd.h>

int mg_write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return errno;
        if (w == 0) return EIO;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}
