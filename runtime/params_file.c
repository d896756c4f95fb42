/* params_file.c — checkpoint files for a model's params blob.
 *
 * Why this exists: a checkpoint is only useful if loading it into the wrong model, or loading a
 * partial or damaged file, fails loudly with a clear message instead of silently producing
 * garbage weights; and if saving one can never destroy the previous good checkpoint.
 *
 * File format, version 1. All integers are little-endian and are written and read byte by
 * byte, so the header does not depend on the host's byte order.
 *
 *   offset   size  field
 *        0      8  magic, the ASCII bytes "MGPARAM1"
 *        8      4  u32 format version = 1
 *       12      4  u32 reserved, must be 0 (a version-1 reader rejects anything else)
 *       16      8  u64 model hash (the generated NAME_MODEL_HASH)
 *       24      8  u64 payload byte count P
 *       32      P  payload: the params blob copied verbatim (tensors in the blob's own layout
 *                  and the host's float representation; every target memgrad supports is
 *                  little-endian IEEE-754)
 *     32+P      8  u64 XXH64, seed 0, of bytes [0, 32+P)
 *
 * A valid file is exactly 40+P bytes long.
 *
 * Saving writes to "<path>.tmp.<pid>.<n>" (created with O_EXCL, so in the same directory and
 * never clobbering anything), fsyncs it, renames it over <path> and then fsyncs the directory
 * (best effort). On any failure the temporary is removed and <path> is left as it was. A
 * symlink to a regular file keeps pointing there: its target is what gets replaced (the
 * temporary goes next to the target). What is not a regular file (/dev/null, a FIFO, a
 * dangling symlink) is opened and written into: renaming over it replaced the device node or
 * the link (as root, saving to /dev/null put a regular file in place of /dev/null). A
 * directory is an error, and nothing is written.
 *
 * Loading checks, in this order, so that each problem gets the most accurate report:
 *   cannot open/read                                             -> MG_RT_ERR_IO
 *   first bytes are not (a prefix of) the magic                  -> MG_RT_ERR_FORMAT
 *   shorter than the 32-byte header (including an empty file)    -> MG_RT_ERR_TRUNCATED
 *   version != 1 (checked before the checksum: the layout of other versions is unknown)
 *                                                                -> MG_RT_ERR_FORMAT
 *   shorter than 40+P                                            -> MG_RT_ERR_TRUNCATED
 *   checksum mismatch (before the model hash, so a damaged hash field or a damaged size field
 *   that leaves extra bytes reports corruption)                  -> MG_RT_ERR_CHECKSUM
 *   bytes after the checksum                                     -> MG_RT_ERR_FORMAT
 *   reserved field nonzero                                       -> MG_RT_ERR_FORMAT
 *   model hash differs from the expected one                     -> MG_RT_ERR_MODEL
 *   P differs from the caller's buffer size                      -> MG_RT_ERR_SIZE
 * The payload is read into a temporary buffer and copied to the destination only when every
 * check has passed, so the destination is untouched on any error.
 */
#define _XOPEN_SOURCE 700 /* POSIX 2008 and XSI: realpath (the file may be built without the project's -D_GNU_SOURCE) */
#include "memgrad_rt.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

enum { HDR_BYTES = 32, SUM_BYTES = 8, FORMAT_VERSION = 1, CHUNK_BYTES = 1 << 16 };
static const unsigned char MAGIC[8] = { 'M', 'G', 'P', 'A', 'R', 'A', 'M', '1' };

typedef unsigned long long ull; /* for printf: uint64_t is not always unsigned long long */

/* "1 byte", never "1 bytes", in the messages below (a 1-byte file is a real case: a save cut short) */
static const char *bytes_word(unsigned long long n) { return n == 1 ? "byte" : "bytes"; }

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static mg_rt_status fail(char *err, size_t errlen, mg_rt_status s, const char *fmt, ...)
{
    if (err && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return s;
}

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

/* Writes all n bytes; returns 0 or an errno value. */
static int write_all(int fd, const void *buf, size_t n)
{
    const unsigned char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        if (w == 0) return EIO;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Reads up to n bytes, stopping early only at end of file; *got is the count read.
 * Returns 0 or an errno value. */
static int read_full(int fd, void *buf, size_t n, size_t *got)
{
    unsigned char *p = buf;
    *got = 0;
    while (*got < n) {
        ssize_t r = read(fd, p + *got, n - *got);
        if (r < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        if (r == 0) break;
        *got += (size_t)r;
    }
    return 0;
}

/* fsyncs the directory containing path so that a completed rename survives a crash. Failure
 * only weakens durability, never correctness, so errors are ignored. */
static void sync_parent_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir;
    if (!slash) {
        dir = malloc(2);
        if (dir) strcpy(dir, ".");
    } else {
        size_t len = slash == path ? 1 : (size_t)(slash - path);
        dir = malloc(len + 1);
        if (dir) {
            memcpy(dir, path, len);
            dir[len] = '\0';
        }
    }
    if (!dir) return;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    free(dir);
}

const char *mg_rt_status_name(mg_rt_status s)
{
    switch (s) {
    case MG_RT_OK: return "MG_RT_OK";
    case MG_RT_ERR_IO: return "MG_RT_ERR_IO";
    case MG_RT_ERR_FORMAT: return "MG_RT_ERR_FORMAT";
    case MG_RT_ERR_MODEL: return "MG_RT_ERR_MODEL";
    case MG_RT_ERR_CHECKSUM: return "MG_RT_ERR_CHECKSUM";
    case MG_RT_ERR_TRUNCATED: return "MG_RT_ERR_TRUNCATED";
    case MG_RT_ERR_SIZE: return "MG_RT_ERR_SIZE";
    case MG_RT_ERR_ARG: return "MG_RT_ERR_ARG";
    case MG_RT_ERR_CONFIG: return "MG_RT_ERR_CONFIG";
    }
    return "MG_RT_UNKNOWN";
}

mg_rt_status mg_params_save(const char *path, uint64_t model_hash, const void *params,
                            size_t bytes, char *err, size_t errlen)
{
    if (!path || !*path) return fail(err, errlen, MG_RT_ERR_ARG, "mg_params_save: no path given");
    if (!params && bytes > 0)
        return fail(err, errlen, MG_RT_ERR_ARG, "mg_params_save('%s'): params is NULL", path);

    unsigned char hdr[HDR_BYTES], sum[SUM_BYTES];
    memcpy(hdr, MAGIC, sizeof MAGIC);
    put_u32(hdr + 8, FORMAT_VERSION);
    put_u32(hdr + 12, 0);
    put_u64(hdr + 16, model_hash);
    put_u64(hdr + 24, (uint64_t)bytes);

    XXH64_state_t *xs = XXH64_createState();
    size_t tmplen = strlen(path) + 48;
    char *tmp = malloc(tmplen);
    if (!xs || !tmp) {
        XXH64_freeState(xs);
        free(tmp);
        return fail(err, errlen, MG_RT_ERR_IO, "cannot save '%s': out of memory", path);
    }
    XXH64_reset(xs, 0);
    XXH64_update(xs, hdr, sizeof hdr);
    if (bytes > 0) XXH64_update(xs, params, bytes);
    put_u64(sum, XXH64_digest(xs));
    XXH64_freeState(xs);

    /* Where the bytes go (see the top): dest, through a temporary renamed over it, or path
     * itself, written into */
    struct stat ls, st;
    const char *dest = path;
    char *resolved = NULL;
    int direct = 0;
    if (lstat(path, &ls) == 0) {
        if (stat(path, &st) != 0) direct = S_ISLNK(ls.st_mode);
        else if (S_ISDIR(st.st_mode)) {
            free(tmp);
            return fail(err, errlen, MG_RT_ERR_IO, "cannot save '%s': %s", path, strerror(EISDIR));
        } else if (!S_ISREG(st.st_mode)) direct = 1;
        else if (S_ISLNK(ls.st_mode)) {
            resolved = realpath(path, NULL);
            if (resolved) dest = resolved;
            else direct = 1;
        }
    }
    if (direct) {
        free(tmp);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
        if (fd < 0) return fail(err, errlen, MG_RT_ERR_IO, "cannot save '%s': %s", path, strerror(errno));
        int e = write_all(fd, hdr, sizeof hdr);
        if (!e && bytes > 0) e = write_all(fd, params, bytes);
        if (!e) e = write_all(fd, sum, sizeof sum);
        struct stat fs; /* (fsync of a device or a FIFO fails with EINVAL: only a file is synced) */
        if (!e && fstat(fd, &fs) == 0 && S_ISREG(fs.st_mode) && fsync(fd) != 0) e = errno;
        if (close(fd) != 0 && !e) e = errno;
        if (e) return fail(err, errlen, MG_RT_ERR_IO, "cannot save '%s': write failed: %s", path, strerror(e));
        return MG_RT_OK;
    }
    if (resolved) {
        char *t = realloc(tmp, strlen(dest) + 48);
        if (!t) {
            free(tmp);
            free(resolved);
            return fail(err, errlen, MG_RT_ERR_IO, "cannot save '%s': out of memory", path);
        }
        tmp = t;
        tmplen = strlen(dest) + 48;
    }

    /* O_EXCL: never reuse (or follow a symlink at) an existing name; a collision (another
     * thread of this process saving the same path) moves on to the next attempt number. */
    int fd = -1;
    for (int attempt = 0; attempt < 100; attempt++) {
        snprintf(tmp, tmplen, "%s.tmp.%ld.%d", dest, (long)getpid(), attempt);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0 || errno != EEXIST) break;
    }
    if (fd < 0) {
        int e = errno;
        mg_rt_status s = fail(err, errlen, MG_RT_ERR_IO,
                              "cannot save '%s': cannot create temporary file '%s': %s", path,
                              tmp, strerror(e));
        free(tmp);
        free(resolved);
        return s;
    }

    int e = write_all(fd, hdr, sizeof hdr);
    if (!e && bytes > 0) e = write_all(fd, params, bytes);
    if (!e) e = write_all(fd, sum, sizeof sum);
    if (!e && fsync(fd) != 0) e = errno;
    if (close(fd) != 0 && !e) e = errno;
    if (e) {
        unlink(tmp);
        free(tmp);
        free(resolved);
        return fail(err, errlen, MG_RT_ERR_IO, "cannot save '%s': write failed: %s", path,
                    strerror(e));
    }
    if (rename(tmp, dest) != 0) {
        e = errno;
        unlink(tmp);
        free(tmp);
        free(resolved);
        return fail(err, errlen, MG_RT_ERR_IO, "cannot save '%s': rename failed: %s", path,
                    strerror(e));
    }
    free(tmp);
    sync_parent_dir(dest);
    free(resolved);
    return MG_RT_OK;
}

mg_rt_status mg_params_load(const char *path, uint64_t model_hash, void *params, size_t bytes,
                            char *err, size_t errlen)
{
    if (!path || !*path) return fail(err, errlen, MG_RT_ERR_ARG, "mg_params_load: no path given");
    if (!params && bytes > 0)
        return fail(err, errlen, MG_RT_ERR_ARG, "mg_params_load('%s'): params is NULL", path);

    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fail(err, errlen, MG_RT_ERR_IO, "cannot open '%s': %s", path, strerror(errno));

    mg_rt_status s = MG_RT_OK;
    XXH64_state_t *xs = NULL;
    unsigned char *buf = NULL;
    unsigned char hdr[HDR_BYTES], sum[SUM_BYTES], extra;
    size_t got;
    int e;

    if ((e = read_full(fd, hdr, sizeof hdr, &got)) != 0) goto read_error;
    if (memcmp(hdr, MAGIC, got < sizeof MAGIC ? got : sizeof MAGIC) != 0) {
        s = fail(err, errlen, MG_RT_ERR_FORMAT,
                 "'%s' is not a memgrad parameter file (bad magic)", path);
        goto out;
    }
    if (got < sizeof hdr) {
        s = fail(err, errlen, MG_RT_ERR_TRUNCATED,
                 "'%s' is truncated: it has %zu %s, fewer than the %d-byte header", path,
                 got, bytes_word(got), HDR_BYTES);
        goto out;
    }
    uint32_t version = get_u32(hdr + 8);
    uint32_t reserved = get_u32(hdr + 12);
    uint64_t file_hash = get_u64(hdr + 16);
    uint64_t plen = get_u64(hdr + 24);
    if (version != FORMAT_VERSION) {
        s = fail(err, errlen, MG_RT_ERR_FORMAT,
                 "'%s' has unsupported format version %lu (this runtime reads version %d)",
                 path, (unsigned long)version, FORMAT_VERSION);
        goto out;
    }
    if (plen > UINT64_MAX - HDR_BYTES - SUM_BYTES) {
        s = fail(err, errlen, MG_RT_ERR_FORMAT,
                 "'%s' is corrupted: its header declares an impossible payload of %llu bytes",
                 path, (ull)plen);
        goto out;
    }
    uint64_t expect_total = plen + HDR_BYTES + SUM_BYTES;

    /* Keep the payload only if it can be the answer; otherwise just stream it through the
     * hash so that a damaged file still reports corruption rather than a size mismatch. */
    int keep = plen == (uint64_t)bytes;
    size_t bufsize = keep ? (bytes > 0 ? bytes : 1) : CHUNK_BYTES;
    buf = malloc(bufsize);
    xs = XXH64_createState();
    if (!buf || !xs) {
        s = fail(err, errlen, MG_RT_ERR_IO, "cannot load '%s': out of memory (%zu bytes)", path,
                 bufsize);
        goto out;
    }
    XXH64_reset(xs, 0);
    XXH64_update(xs, hdr, sizeof hdr);

    uint64_t have = HDR_BYTES; /* bytes of the file consumed so far */
    if (keep) {
        if ((e = read_full(fd, buf, bytes, &got)) != 0) goto read_error;
        XXH64_update(xs, buf, got);
        have += got;
    } else {
        for (uint64_t left = plen; left > 0;) {
            size_t want = left < CHUNK_BYTES ? (size_t)left : CHUNK_BYTES;
            if ((e = read_full(fd, buf, want, &got)) != 0) goto read_error;
            XXH64_update(xs, buf, got);
            have += got;
            left -= got;
            if (got < want) break;
        }
    }
    if (have == plen + HDR_BYTES) {
        if ((e = read_full(fd, sum, sizeof sum, &got)) != 0) goto read_error;
        have += got;
    }
    if (have < expect_total) {
        s = fail(err, errlen, MG_RT_ERR_TRUNCATED,
                 "'%s' is truncated: it has %llu %s, but its header declares a %llu-byte "
                 "payload, so it should have %llu (%d-byte header + payload + %d-byte checksum)",
                 path, (ull)have, bytes_word(have), (ull)plen, (ull)expect_total, HDR_BYTES, SUM_BYTES);
        goto out;
    }

    if ((e = read_full(fd, &extra, 1, &got)) != 0) goto read_error;
    int trailing = got > 0;

    uint64_t stored = get_u64(sum), computed = XXH64_digest(xs);
    if (stored != computed) {
        s = fail(err, errlen, MG_RT_ERR_CHECKSUM,
                 "'%s' is corrupted: checksum mismatch (stored 0x%016llx, computed 0x%016llx)",
                 path, (ull)stored, (ull)computed);
        goto out;
    }
    if (trailing) {
        struct stat st;
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
            s = fail(err, errlen, MG_RT_ERR_FORMAT,
                     "'%s' has trailing garbage: it has %llu bytes, but its header declares "
                     "%llu (data follows the checksum)",
                     path, (ull)st.st_size, (ull)expect_total);
        else
            s = fail(err, errlen, MG_RT_ERR_FORMAT,
                     "'%s' has trailing garbage: data follows the checksum at byte %llu", path,
                     (ull)expect_total);
        goto out;
    }
    if (reserved != 0) {
        s = fail(err, errlen, MG_RT_ERR_FORMAT,
                 "'%s' is not a valid version-%d parameter file: reserved field is 0x%08lx, "
                 "not 0",
                 path, FORMAT_VERSION, (unsigned long)reserved);
        goto out;
    }
    if (file_hash != model_hash) {
        s = fail(err, errlen, MG_RT_ERR_MODEL,
                 "'%s' was saved for a different model: its model hash is 0x%016llx, "
                 "expected 0x%016llx",
                 path, (ull)file_hash, (ull)model_hash);
        goto out;
    }
    if (!keep) {
        s = fail(err, errlen, MG_RT_ERR_SIZE,
                 "'%s' holds a %llu-byte payload, but the destination is %zu %s", path,
                 (ull)plen, bytes, bytes_word(bytes));
        goto out;
    }
    if (bytes > 0) memcpy(params, buf, bytes);
    goto out;

read_error:
    s = fail(err, errlen, MG_RT_ERR_IO, "error reading '%s': %s", path, strerror(e));
out:
    XXH64_freeState(xs);
    free(buf);
    close(fd);
    return s;
}
